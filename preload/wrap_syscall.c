/* SPDX-License-Identifier: MIT */
/*
 * wrap_syscall.c - syscall(2): every system call that reaches an fd goes
 * where its libc name goes.
 *
 * A program may make any call through libc's syscall() (libuv closes every
 * fd with syscall(SYS_close) because it must not be a cancellation point;
 * libuv sets up io_uring with it; test suites read and write eventfds and
 * make epoll calls with it).  A call that bypassed the wrapper of its libc
 * name would see the kernel object's stand-in instead of the object (the
 * mirror of a ueventfd's counter, the doorbell's event in an instance's
 * kernel epoll), or leave an object published under a number the kernel
 * reused.  So PRELOAD_SYSCALLS routes each such number to the wrapper of
 * its name, with the same arguments: the table is the list of every system
 * call that takes, makes, closes or replaces an fd the layer owns, or acts
 * on one (a kernel AIO completion, an io_uring ring, an exec, the limit
 * the private fds live under).  A call on an fd that is no object goes to
 * libc's syscall() as it is (no cancellation point is added); so does
 * every number not in the table.  What is not seen at all: a program's own
 * system call instructions (liburing, Go's runtime, static binaries):
 * uepoll-run(1), LIMITS.
 *
 * poll, ppoll, select and pselect6 are looked at first (wrap_poll.c: an
 * instance's stale doorbell taken, whatever the policy; with
 * UEPOLL_NOPOLL=1 the object's option ended) and then go to libc's
 * syscall(); a private fd is not hidden from them.
 */
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fdzone.h"

#include "preload.h"

/* Numbers this target does not have (aarch64 has no dup2, poll, select,
 * epoll_wait, epoll_create, eventfd, getrlimit...): a case that never
 * matches. */
#ifndef SYS_dup2
#define SYS_dup2 (-1001)
#endif
#ifndef SYS_epoll_create
#define SYS_epoll_create (-1002)
#endif
#ifndef SYS_epoll_wait
#define SYS_epoll_wait (-1003)
#endif
#ifndef SYS_eventfd
#define SYS_eventfd (-1004)
#endif
#ifndef SYS_poll
#define SYS_poll (-1005)
#endif
#ifndef SYS_select
#define SYS_select (-1006)
#endif
#ifndef SYS_fork
#define SYS_fork (-1009)
#endif
#ifndef SYS_getrlimit
#define SYS_getrlimit (-1007)
#endif
#ifndef SYS_setrlimit
#define SYS_setrlimit (-1008)
#endif

/* Argument i as the type the call takes. */
#define A(i) (a[i])
#define I(i) ((int)a[i])
#define U(i) ((unsigned int)a[i])
#define P(i) ((void *)a[i])
/* A signal mask in argument m has the size in argument z the kernel
 * takes (or there is none). */
#define SIGSZ(m, z) (!P(m) || A(z) == 8)
/* Is the fd in argument i the layer's (an object, or a private number)? */
#define OURS(i) (preload_maybe_object(I(i)) || fdzone_has(I(i)))

/*
 * THE TABLE: X(name, when, call): syscall(SYS_name, ...) is `call` when
 * `when` holds, else libc's syscall.  Each call is the wrapper of the name
 * (or the function behind it), so the answer, errno included, is what the
 * libc name gives.
 */
#define PRELOAD_SYSCALLS(X)                                                   \
	X(read, OURS(0), read(I(0), P(1), (size_t)A(2)))                      \
	X(write, OURS(0), write(I(0), P(1), (size_t)A(2)))                    \
	X(readv, OURS(0), readv(I(0), P(1), I(2)))                            \
	X(writev, OURS(0), writev(I(0), P(1), I(2)))                          \
	/* (fd, iov, n, pos_l, pos_h, flags): the offset is one long on      \
	 * 64-bit targets. */                                                 \
	X(preadv2, OURS(0), preadv2(I(0), P(1), I(2), (off_t)A(3), I(5)))     \
	X(pwritev2, OURS(0), pwritev2(I(0), P(1), I(2), (off_t)A(3), I(5)))   \
	X(close, OURS(0), close(I(0)))                                        \
	X(close_range, 1, fd_close_range(U(0), U(1), I(2), true))             \
	X(unshare, A(0) & CLONE_FILES, (fd_table_split(), SYSCALL__LIBC))      \
	X(dup, OURS(0), dup(I(0)))                                            \
	X(dup2, 1, fd_dup3(I(0), I(1), 0, true))                              \
	X(dup3, 1, fd_dup3(I(0), I(1), I(2), false))                          \
	/* F_DUPFD of any fd may land on a number an object had; any other   \
	 * command on a kernel fd is the raw call (F_GETOWN's -pgid...). */   \
	X(fcntl, OURS(0) || I(1) == F_DUPFD || I(1) == F_DUPFD_CLOEXEC,       \
	  fcntl(I(0), I(1), P(2)))                                            \
	X(ioctl, OURS(0) || mem_uffd_request((unsigned long)A(1)),            \
	  ioctl(I(0), (unsigned long)A(1), P(2)))                             \
	X(eventfd2, 1, eventfd(U(0), I(1)))                                   \
	X(eventfd, 1, eventfd(U(0), 0))                                       \
	X(epoll_create1, 1, epoll_create1(I(0)))                              \
	X(epoll_create, 1, epoll_create(I(0)))                                \
	/* A kernel epoll's ctl of an object ends its NOPOLL (wrap_poll.c). */ \
	X(epoll_ctl, OURS(0) || OURS(2), epoll_ctl(I(0), I(1), I(2), P(3)))   \
	X(epoll_wait, OURS(0), epoll_wait(I(0), P(1), I(2), I(3)))            \
	/* A signal mask of the wrong size: the kernel's EINVAL, first. */     \
	X(epoll_pwait, OURS(0) && SIGSZ(4, 5),                                \
	  epoll_pwait(I(0), P(1), I(2), I(3), P(4)))                          \
	X(epoll_pwait2, OURS(0) && SIGSZ(4, 5),                               \
	  epoll_pwait2(I(0), P(1), I(2), P(3), P(4)))                         \
	X(sendmsg, 1, sendmsg(I(0), P(1), I(2)))                              \
	X(sendmmsg, 1, sendmmsg(I(0), P(1), U(2), I(3)))                      \
	X(execve, 1, execve(P(0), P(1), P(2)))                                \
	X(execveat, 1, execveat(I(0), P(1), P(2), P(3), I(4)))                \
	/* (io_submit's own answer is the system call's: -1 and errno.) */    \
	X(io_submit, 1, (aio_demote_named(A(1), P(2)), SYSCALL__LIBC))       \
	X(io_uring_setup, 1, aio_uring_setup(A(0), A(1)))                     \
	X(getrlimit, 1, limit_syscall(nr, 0, A(0), a))                        \
	X(setrlimit, 1, limit_syscall(nr, 0, A(0), a))                        \
	X(prlimit64, 1, limit_syscall(nr, A(0), A(1), a))                     \
	/* What may leave readable memory unreadable (SEEN in wrap_mem.c),  \
	 * between mem_begin and mem_end_r (IN FLIGHT). */                      \
	X(munmap, 1, MEM_AROUND)                                              \
	X(mremap, 1, MEM_AROUND)                                              \
	X(mprotect, !(I(2) & PROT_READ), MEM_AROUND)                          \
	X(pkey_mprotect, 1, MEM_AROUND)                                       \
	X(pkey_alloc, 1, (mem_forget_all(), SYSCALL__LIBC))                   \
	/* (A file mapping ends SEEN: mem_map_check.) */                      \
	X(mmap, mem_map_check(I(3), I(4)), MEM_AROUND)                        \
	X(madvise, mem_advice_may_unmap(I(2)), MEM_AROUND)                    \
	X(process_madvise, mem_advice_may_unmap(I(3)), MEM_AROUND)            \
	X(shmat, 1, MEM_AROUND)                                               \
	X(shmdt, 1, MEM_AROUND)                                               \
	X(brk, 1, MEM_AROUND)                                                 \
	X(io_destroy, 1, MEM_AROUND)                                          \
	/* A copy of the process (the child moves its own generation on its  \
	 * way back: MADV_DONTFORK), and a userfaultfd (SEEN ends). */        \
	X(fork, 1, MEM_AROUND)                                                \
	X(clone, !(A(0) & CLONE_VM), MEM_AROUND)                              \
	X(clone3, 1, MEM_AROUND)                                              \
	X(userfaultfd, 1, (mem_forget_all(), SYSCALL__LIBC))                  \
	/* (A private fd is not hidden from these.) */                       \
	X(poll, 1, (poll_mark_fds(P(0), (nfds_t)A(1), NULL), SYSCALL__LIBC))  \
	X(ppoll, 1, (poll_mark_fds(P(0), (nfds_t)A(1), NULL), SYSCALL__LIBC)) \
	X(select, 1, (poll_mark_sets(I(0), P(1), P(2), P(3)), SYSCALL__LIBC)) \
	X(pselect6, 1,                                                        \
	  (poll_mark_sets(I(0), P(1), P(2), P(3)), SYSCALL__LIBC))

/* libc's syscall() with the six arguments, or the raw instruction while
 * this thread is looking libc's up (real.c). */
static long syscall__libc(long nr, const long *a)
{
	long (*f)(long, ...) = REAL(syscall);

	if (!f) {
		long r = real_syscall_raw(nr, a[0], a[1], a[2], a[3], a[4],
					  a[5]);

		if (r < 0 && r > -4096) {
			errno = (int)-r;
			return -1;
		}
		return r;
	}
	return f(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
#define SYSCALL__LIBC syscall__libc(nr, a)

/* A call that may unmap, IN FLIGHT (wrap_mem.c). */
#define MEM_AROUND (mem_begin(), mem_end_r(SYSCALL__LIBC))

PRELOAD_WRAP long syscall(long nr, ...)
{
	va_list ap;
	long a[6];

	/* Six arguments, whatever the call takes: what the system call ABI
	 * passes, as libc's syscall() itself reads them. */
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (preload_ready()) {
		switch (nr) {
#define SYSCALL__ROUTE(name, when, call)                                      \
	case SYS_##name:                                                      \
		if (when)                                                     \
			return (long)(call);                                  \
		break;
			PRELOAD_SYSCALLS(SYSCALL__ROUTE)
#undef SYSCALL__ROUTE
		default:
			break;
		}
	}
	return syscall__libc(nr, a);
}
