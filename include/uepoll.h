/* SPDX-License-Identifier: MIT */
/*
 * uepoll.h - epoll(7) and eventfd(2) rebuilt in userspace.
 *
 * Every function mirrors its kernel counterpart (signature, flags, errno):
 * rename epoll_* to uepoll_* and eventfd to ueventfd, and route read, write,
 * close, dup* and fcntl of those fds through uepoll_read/uepoll_write/
 * uepoll_close/uepoll_dup.../uepoll_fcntl.  The
 * types and flags are the kernel's own, from <sys/epoll.h> and
 * <sys/eventfd.h>.  Every function is thread-safe.  Where uepoll differs
 * from the kernel (fds used, fork, signals, cancellation, outside pollers):
 * see uepoll(7).
 */
#ifndef UEPOLL_H
#define UEPOLL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* UEPOLL_VERSION_MAJOR, _MINOR, _PATCH: CMake's project version, generated. */
#include "uepoll_version.h"

/* The running library's "MAJOR.MINOR.PATCH" (the macros give the header's). */
const char *uepoll_version(void);

/* epoll_create1(2): flags is 0 or EPOLL_CLOEXEC.  Uses three kernel fds;
 * close it with uepoll_close().  See uepoll_create1(3). */
int uepoll_create1(int flags);

/*
 * uepoll_create1() with uepoll's own options in uflags (no kernel
 * counterpart): at most one UEPOLL_WAKE_* (which blocked thread a wakeup
 * takes), UEPOLL_NOSPIN or UEPOLL_SPIN_KERNEL, and UEPOLL_NOPOLL.  See
 * uepoll_create2(3).
 */
/* 0x1u and 0x2u are reserved: EINVAL. */
#define UEPOLL_WAKE_LIFO 0x4u	/* the last to block, as the kernel; default */
#define UEPOLL_WAKE_FIFO 0x8u	/* the longest waiting, in turn */
#define UEPOLL_NOSPIN 0x10u	/* block at once, without spinning first */
/* Nothing outside uepoll's calls polls the instance's fd (no poll(),
 * select(), kernel epoll or outer event loop; another uepoll instance may
 * hold it), so its readiness need not be exact: events make no system call
 * while no thread sleeps on it. */
#define UEPOLL_NOPOLL 0x20u
/* A wait that would sleep on kernel fds (sockets, pipes...) first polls
 * them from userspace for up to UEPOLL_SPIN_US microseconds (environment;
 * default 50, 0: never), as long as such spins keep finding something: it
 * trades a CPU's time for the latency of a sleep and a wakeup.  Not for a
 * wait with a timeout of 0 or a signal mask. */
#define UEPOLL_SPIN_KERNEL 0x40u
int uepoll_create2(int flags, unsigned int uflags);
/* epoll_create(2): size must be > 0 and is otherwise ignored.
 * See uepoll_create1(3). */
int uepoll_create(int size);

/*
 * epoll_ctl(2).  fd may be a ueventfd (watched in userspace), another
 * uepoll instance or any kernel fd (kept in the instance's kernel epoll,
 * with every kernel flag and error).  See uepoll_ctl(3).
 */
int uepoll_ctl(int epfd, int op, int fd, struct epoll_event *event);

/*
 * uepoll's event flags: bits <sys/epoll.h> does not use, never passed to
 * the kernel nor reported in events.  See uepoll_ctl(3).
 * EPOLLROUNDROBIN, with EPOLLEXCLUSIVE on EPOLL_CTL_ADD only: a source
 * shared by several instances wakes the idle ones in turn.
 */
#define EPOLLROUNDROBIN (1u << 26)

/* EPOLLURGENT: an event of this registration ends a batching wait at once
 * (see uepoll_batch(3)). */
#define EPOLLURGENT (1u << 25)

/*
 * Min-wait batching (no kernel counterpart): a wait on an instance with a
 * policy collects events for a window, up to a count or until a gap,
 * instead of returning the first one; all zero (the default) is plain
 * epoll_wait.  See uepoll_batch(3).
 */
struct uepoll_batch {
	uint32_t min_wait_us;	 /* the window; 0: none */
	uint32_t min_events;	 /* return at this many; 0: not used */
	uint32_t inter_event_us; /* return after this gap; 0: not used */
	uint32_t flags;		 /* 0 or UEPOLL_BATCH_FROM_FIRST */
};
#define UEPOLL_BATCH_FROM_FIRST 0x1u
/* Set the policy of epfd (unless set is NULL) for waits that start after
 * the call; the previous one goes to *old (unless old is NULL).  0, or -1
 * with errno.  See uepoll_batch(3). */
int uepoll_batch(int epfd, const struct uepoll_batch *set,
		 struct uepoll_batch *old);

/*
 * uepoll_ctl() op of the EPOLL_CTL_MIN_WAIT proposal: set the policy's
 * min_wait_us to ev->data.u64 and return the old value; fd is ignored.
 * See uepoll_ctl(3).
 */
#define UEPOLL_CTL_MIN_WAIT 0x75650001

/* epoll_wait(2), epoll_pwait(2), epoll_pwait2(2); a wait may spin briefly
 * before it blocks (see uepoll_create2(3)).  See uepoll_wait(3). */
int uepoll_wait(int epfd, struct epoll_event *events, int maxevents,
		int timeout);
int uepoll_pwait(int epfd, struct epoll_event *events, int maxevents,
		 int timeout, const sigset_t *sigmask);
int uepoll_pwait2(int epfd, struct epoll_event *events, int maxevents,
		  const struct timespec *timeout, const sigset_t *sigmask);

/* eventfd(2): flags from EFD_SEMAPHORE, EFD_NONBLOCK, EFD_CLOEXEC.  The
 * counter lives in the process: only uepoll_read/uepoll_write reach it;
 * poll()/select() on the fd see its exact readiness.  Uses two kernel fds;
 * close it with uepoll_close().  See ueventfd(3). */
int ueventfd(unsigned int initval, int flags);
/* ueventfd() flag (no kernel counterpart): nothing outside uepoll's calls
 * polls the fd, so its readiness need not be exact (no system call to
 * clear it when a read empties the counter).  See ueventfd(3). */
#define UEVENTFD_NOPOLL 0x10000000

/*
 * read(2), write(2), close(2) that understand uepoll's objects and pass every
 * other fd straight to the kernel.  A plain close() of a ueventfd or an
 * instance leaks it.  uepoll_read/uepoll_write are async-signal-safe.
 * See uepoll_read(3).
 */
ssize_t uepoll_read(int fd, void *buf, size_t count);
ssize_t uepoll_write(int fd, const void *buf, size_t count);
int uepoll_close(int fd);

/*
 * Fold a ueventfd back into the kernel eventfd it stands for, with its exact
 * counter, or an instance into its kernel epoll, with every registration,
 * while other threads use it: from then on fd is a plain kernel object (for
 * another process, an exec'd program, any library); the instances that
 * watch a ueventfd keep watching it.  0, or -1 + errno.  fork() does not:
 * it shares every ueventfd's counter with the child (ueventfd(3)).  See
 * uepoll_demote(3).
 */
int uepoll_demote(int fd);
/* uepoll_demote() of every ueventfd and instance that execve() would keep
 * open (no FD_CLOEXEC): call it before execve.  See uepoll_demote(3). */
int uepoll_demote_exec(void);

/*
 * dup(2), dup2(2), dup3(2) and fcntl(2) that understand uepoll's objects: a
 * new number of a ueventfd or an instance is the same object, as a kernel
 * dup is the same open file (it lives until its last number is closed with
 * uepoll_close; a registration made through one number stays until then).
 * uepoll_fcntl's F_DUPFD and F_DUPFD_CLOEXEC are dups, its F_SETFL's
 * O_NONBLOCK is seen at once; every other fd and command is the kernel's.
 * See uepoll_dup(3).
 */
int uepoll_dup(int oldfd);
int uepoll_dup2(int oldfd, int newfd);
int uepoll_dup3(int oldfd, int newfd, int flags);
int uepoll_fcntl(int fd, int cmd, ... /* arg */);

/* eventfd_read(3)/eventfd_write(3) counterparts: 0 on success, -1 + errno.
 * See ueventfd(3). */
int ueventfd_read(int fd, eventfd_t *value);
int ueventfd_write(int fd, eventfd_t value);

/*
 * Coalesced wakeups (no kernel counterpart): a non-semaphore ueventfd holds
 * a sleeper's wakeup up to delay_us so that later writes ride on it (with
 * UEVENTFD_HOLD_WRITES, the writes too); no write is lost.  Default: the
 * environment variable UEPOLL_EVENTFD_COALESCE.  See ueventfd_coalesce(3).
 */
#define UEVENTFD_COALESCE_MAX_US 100000u
#define UEVENTFD_HOLD_WRITES 0x1u
struct ueventfd_coalesce {
	uint32_t delay_us; /* longest hold, in us; 0: none */
	uint32_t flags;	   /* 0 or UEVENTFD_HOLD_WRITES */
	uint64_t count;	   /* wake at once at this value; 0: never */
};
int ueventfd_coalesce(int fd, const struct ueventfd_coalesce *set,
		      struct ueventfd_coalesce *old);

#ifdef __cplusplus
}
#endif

#endif /* UEPOLL_H */
