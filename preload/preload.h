/* SPDX-License-Identifier: MIT */
/*
 * preload.h - what the files of libuepoll-preload.so share.
 *
 * The preload layer makes an unmodified program's epoll and eventfd calls
 * uepoll's: each wrapper (wrap_*.c) defines a libc name, and once the
 * layer is initialised (init.c) maps it to the public uepoll_* call that
 * stands for it.  Before that, and for anything uepoll does not own, the
 * call goes to libc's own definition (real.c), so the program sees the
 * kernel's answer.  Only the wrapped libc names are exported
 * (preload.map); the library linked in stays hidden.
 */
#ifndef UEPOLL_PRELOAD_H
#define UEPOLL_PRELOAD_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "fdzone.h"
#include "fns.h"

/* A wrapper: exported from the .so (everything else is hidden). */
#define PRELOAD_WRAP __attribute__((visibility("default")))
/* An exported alias of a wrapper (PRELOAD_ALIASES in fns.h), after its
 * definition in the same file: the same address under a second global
 * name, made by the assembler (glibc's headers already declare some of
 * these names, with attributes a C alias declaration would clash with). */
#define PRELOAD_ALIAS(alias, name)                                            \
	__asm__(".globl " #alias "\n\t.type " #alias ", @function\n\t.set " \
		#alias ", " #name)

/* ---- init.c ------------------------------------------------------------ */

/* True once the constructor has bound the library's system calls to libc
 * (sys_bind_libc) and read the policies: from then on the wrappers route
 * through uepoll.  Before it, every wrapper is libc's call. */
extern atomic_bool preload__ready;
static inline bool preload_ready(void)
{
	return atomic_load_explicit(&preload__ready, memory_order_acquire);
}
/* PLAIN (init.c): after the process's first io_uring ring (wrap_aio.c)
 * nothing is accelerated any more: the creation wrappers make kernel
 * objects.  preload_go_plain() demotes every object there is; a creation
 * that began before it ends with preload_made(), which demotes the new
 * object if it came too late for the walk. */
extern atomic_bool preload__plain;
static inline bool preload_plain(void)
{
	return atomic_load_explicit(&preload__plain, memory_order_relaxed);
}
void preload_go_plain(void);
/* Demote every object published now (errno kept). */
void preload_demote_all(void);
int preload_made(int fd);
/* Is this a vfork child (VFORK in wrap_exec.c)?  It shares the memory of
 * the parent's thread, thread-local variables included, but not its fd
 * table: its wrappers that make, close or replace numbers are libc's. */
extern __thread bool preload__vforked __attribute__((tls_model("initial-exec")));
static inline bool preload_in_vfork_child(void)
{
	return preload__vforked;
}
/* A creation failed with EMFILE where the kernel would have had a number
 * had the library's own fds not taken some (TOP in src/fdzone.c): demote
 * one object, which gives its private fds back.  true if one was (the
 * caller tries again), false if that cannot help. */
bool preload_make_room(void);
/* The value a uepoll call returned, with the caller's errno e put back on
 * success: the library may leave errno changed by an internal system call
 * that failed on the way to a success (a kernel call never does). */
static inline long preload_keep_errno(int e, long r)
{
	if (r >= 0)
		errno = e;
	return r;
}
/* Is fd one of the library's own private fds (src/fdzone.c)?  For the
 * program it is a free number: a wrapper then makes libc's call with -1 in
 * its place, so that the kernel answers as natively, its other checks (the
 * flags, maxevents...) in their order and EBADF for the number (one relaxed
 * load for the numbers a program normally uses). */
static inline bool preload_hidden(int fd)
{
	return __builtin_expect(fdzone_has(fd), 0);
}
/* Could fd be one of uepoll's objects?  false: certainly not now (nothing
 * published under the number); one relaxed load, for the wrappers' fast
 * path (wrap_io.c, FAST PATH).  Once ready, every real__fns entry the fast
 * paths call is set (the constructor filled the table first). */
bool preload_maybe_object(int fd);
/* Is fd (now) one of uepoll's instances / ueventfds? */
bool preload_is_object(int fd);
bool preload_is_instance(int fd);
bool preload_is_eventfd(int fd);

/* ---- wrap_mem.c: the program's memory ---------------------------------- */

/* Copy n bytes of the program's memory at src into dst without faulting:
 * false if src is not readable (the kernel's call then answers EFAULT).
 * One process_vm_readv(2), or none for a range read whole before and
 * unchanged since (SEEN); where that is refused, a plain copy. */
bool preload_peek(void *dst, const void *src, size_t n);
/* Write n bytes at dst without faulting: false if dst is not writable. */
bool preload_poke(void *dst, const void *src, size_t n);
/* Does ioctl request req make or register a userfaultfd (SEEN ends)? */
bool mem_uffd_request(unsigned long req);
/* What the program could read may become unreadable: a call that may
 * unmap runs between mem_begin and mem_end_r(its answer), which returns
 * the answer (IN FLIGHT in wrap_mem.c).  mem_forget_all: SEEN ends for good
 * (PLAIN, pkeys, a userfaultfd).  mem_map_check: before mmap(flags, fd),
 * ends SEEN for a file mapping; true if the call may replace one
 * (MAP_FIXED). */
void mem_begin(void);
long mem_end_r(long r);
void mem_forget_all(void);
bool mem_map_check(int flags, int fd);
/* May madvise(advice) leave a readable page unreadable? */
bool mem_advice_may_unmap(int advice);

/* ---- real.c: libc's own definitions ------------------------------------ */

/* Each returns libc's function, found on first use without malloc; NULL
 * only while this very thread is finding one (a malloc that the lookup
 * started called back into a wrapper): the callers then use
 * real_syscall_raw. */
struct real_fns {
#define PRELOAD__FIELD(ret, name, params) ret(*name) params;
	PRELOAD_LIBC(PRELOAD__FIELD)
#undef PRELOAD__FIELD
};
/* The table, filled entry by entry on first use. */
extern struct real_fns real__fns;
void *real__get(void **slot, const char *name);
#define REAL(name)                                                           \
	((__typeof__(real__fns.name))real__get((void **)&real__fns.name,     \
					       #name))
/* A system call without libc (-errno on failure): for a wrapper entered
 * from inside the lookup itself, where libc's function is not known yet. */
long real_syscall_raw(long nr, long a, long b, long c, long d, long e,
		      long f);
/* Fill the whole table now (the constructor: later calls then never look
 * anything up). */
void real_resolve_all(void);

/* ---- policy.c: the environment, read once ------------------------------ */

struct policy {
	bool roundrobin;      /* UEPOLL_ROUNDROBIN=1 */
	bool nospin;	      /* UEPOLL_NOSPIN=1 */
	bool fifo;	      /* UEPOLL_WAKE_FIFO=1 */
	bool stats;	      /* UEPOLL_STATS=1 */
	uint32_t min_wait_us; /* UEPOLL_MIN_WAIT_US=N */
	bool nopoll;	      /* UEPOLL_NOPOLL=1 (wrap_poll.c) */
	bool no_iouring;      /* UEPOLL_NO_IOURING=1 (wrap_aio.c) */
	bool spin_kernel;     /* UEPOLL_SPIN_US=N, N > 0, no UEPOLL_NOSPIN */
};
extern struct policy policy;
void policy_load(void);

/* ---- wrap_poll.c: outside pollers (UEPOLL_NOPOLL=1) --------------------- */

/* The objects polled through pfd, or through the sets' first nfds, made
 * exact before the poll (NOPOLL ended, a stale doorbell taken); entries
 * naming the library's private fds hidden in *h (if h) for the call and
 * given back as POLLNVAL by poll_unhide; a set naming one: -EBADF. */
#define POLL_HIDE_MAX 64
struct poll_hide {
	int n;
	bool efault; /* the array is not writable: the kernel's EFAULT */
	nfds_t at[POLL_HIDE_MAX];
	int fd[POLL_HIDE_MAX];
};
void poll_mark_fds(struct pollfd *pfd, nfds_t n, struct poll_hide *h);
int poll_unhide(struct pollfd *pfd, const struct poll_hide *h, int r);
int poll_mark_sets(int nfds, const fd_set *r, const fd_set *w,
		   const fd_set *x);

/* ---- stats.c: counters printed at exit with UEPOLL_STATS=1 ------------- */

enum stat_id {
	STAT_INSTANCES,
	STAT_EVENTFDS,
	STAT_CTLS,
	STAT_WAITS,
	STAT_READS,
	STAT_WRITES,
	STAT_CLOSES,
	STAT_DUPS,
	STAT_DEMOTES,
	STAT_FORGETS,
	STAT_PEEKS, /* process_vm_readv calls (wrap_mem.c: SEEN missed) */
	STAT__N,
};
extern _Atomic uint64_t stats__v[STAT__N];
/* Counted only with UEPOLL_STATS=1: a shared counter on every wait, read
 * and write would be a cache line the program's threads fight over. */
static inline void stats_add(enum stat_id id)
{
	if (policy.stats)
		atomic_fetch_add_explicit(&stats__v[id], 1,
					  memory_order_relaxed);
}
void stats_setup(void);

/* ---- wrap_fd.c --------------------------------------------------------- */

/* Numbers first..last were closed behind uepoll's back: forget the
 * objects published there. */
void fd_forget_range(unsigned int first, unsigned int last);
int fd_close(int fd);
int fd_dup3(int oldfd, int newfd, int flags, bool is_dup2);
int fd_close_range(unsigned int first, unsigned int last, int flags,
		   bool via_syscall);
/* This thread is about to get an fd table of its own (SPLIT). */
void fd_table_split(void);

/* ---- wrap_aio.c, wrap_limit.c: syscall(2)'s routes to them -------------- */

void aio_demote_named(long nr, void *const *iocbs);
long aio_uring_setup(long entries, long params);
long limit_syscall(long nr, long pid, long res, const long *a);

/* ---- wrap_exec.c ------------------------------------------------------- */

/* Before a new program replaces this one: demote what it inherits. */
void exec_prepare(void);

#endif
