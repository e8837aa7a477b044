/* SPDX-License-Identifier: MIT */
/*
 * sys.c - the kernel calls uepoll makes, in one place, with one convention
 * (-errno).
 *
 * Why raw system calls.  libc's read, write, close, ppoll and epoll_pwait2
 * are cancellation points: a thread with a cancel request pending is
 * cancelled inside them.  uepoll makes most of its calls while it holds a
 * lock or is half-way through a protocol step (the doorbell write under a
 * source's wait-queue lock, the close of a private fd in a release), where
 * a cancellation would leave a lock held for ever.  So every call that is
 * not a sleep is made with syscall(2), which is no cancellation point, is
 * async-signal-safe (a ueventfd write from a signal handler comes here) and
 * does not go through a libc symbol that a preloaded library could wrap.
 *
 * The sleeps are the exception: the calls uepoll stands for (epoll_wait,
 * read, write) are cancellation points, and a thread blocked in uepoll must
 * be cancellable as it would be in the kernel.  They are made where no lock
 * is held, through libc's own cancellable wrappers (which ThreadSanitizer
 * also understands as blocking calls), or, for the futex, with asynchronous
 * cancellation enabled only for the duration of the system call (what libc
 * does inside its wrappers).  The callers register cleanup handlers around
 * them (pthread_cleanup_push) that undo what the call had set up.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/kcmp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"
#include "sys.h"

/*
 * THE SEAM.  This file reaches libc only through the table below, so that
 * one switch decides which functions the library's kernel calls go to.  By
 * default they are whatever the process links `syscall`, `read`... to,
 * which is libc's (and, in the sanitizer builds, the sanitizer's
 * interceptors, which must see them).  A preloaded layer that wraps these
 * very names for the program (issue 20's libuepoll-preload.so) calls
 * sys_bind_libc() first, from its constructor, before any thread can use
 * the library: from then on the library's calls go to libc's own
 * definitions (looked up in libc.so.6 itself, not by symbol order), and it
 * never re-enters the wrappers it is called from.
 */
static struct {
	long (*syscall)(long nr, ...);
	ssize_t (*read)(int fd, void *buf, size_t n);
	ssize_t (*write)(int fd, const void *buf, size_t n);
	int (*close)(int fd);
	int (*epoll_pwait)(int epfd, struct epoll_event *evs, int max,
			   int timeout, const sigset_t *sigmask);
	int (*epoll_pwait2)(int epfd, struct epoll_event *evs, int max,
			    const struct timespec *timeout,
			    const sigset_t *sigmask);
	int (*ppoll)(struct pollfd *pfd, nfds_t n,
		     const struct timespec *timeout, const sigset_t *sigmask);
	int (*fcntl)(int fd, int cmd, ...);
} sys__libc = {
	syscall, read, write, close, epoll_pwait, epoll_pwait2, ppoll, fcntl,
};

int sys_bind_libc(void)
{
	void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *f[8];
	static const char *const names[8] = {
		"syscall", "read", "write", "close",
		"epoll_pwait", "epoll_pwait2", "ppoll", "fcntl",
	};

	if (!h)
		return -ENOSYS;
	for (int i = 0; i < 8; i++) {
		f[i] = dlsym(h, names[i]);
		if (!f[i]) {
			dlclose(h);
			return -ENOSYS;
		}
	}
	/* (The handle stays open: libc is never unloaded anyway.) */
	sys__libc.syscall = (long (*)(long, ...))f[0];
	sys__libc.read = (ssize_t (*)(int, void *, size_t))f[1];
	sys__libc.write = (ssize_t (*)(int, const void *, size_t))f[2];
	sys__libc.close = (int (*)(int))f[3];
	sys__libc.epoll_pwait = (int (*)(int, struct epoll_event *, int, int,
					 const sigset_t *))f[4];
	sys__libc.epoll_pwait2 = (int (*)(int, struct epoll_event *, int,
					  const struct timespec *,
					  const sigset_t *))f[5];
	sys__libc.ppoll = (int (*)(struct pollfd *, nfds_t,
				   const struct timespec *,
				   const sigset_t *))f[6];
	sys__libc.fcntl = (int (*)(int, int, ...))f[7];
	return 0;
}

static long sys__ret(long r)
{
	return r < 0 ? -errno : r;
}

int sys_epoll_create1(int flags)
{
	return (int)sys__ret(sys__libc.syscall(SYS_epoll_create1, flags));
}

int sys_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	return (int)sys__ret(sys__libc.syscall(SYS_epoll_ctl, epfd, op, fd, ev));
}

int sys_epoll_poll(int epfd, struct epoll_event *evs, int max)
{
	return (int)sys__ret(sys__libc.syscall(SYS_epoll_pwait, epfd, evs, max,
					       0, NULL, (size_t)(_NSIG / 8)));
}

static int sys__ms(const struct timespec *t)
{
	long long ms;

	if (!t)
		return -1;
	/* Round up: never wake before the deadline. */
	ms = (long long)t->tv_sec * 1000 + (t->tv_nsec + 999999) / 1000000;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/*
 * THREADSANITIZER.  Its runtime runs a signal handler at once only while the
 * thread is inside a blocking call it intercepts (else when the thread next
 * leaves one), and it leaves such a call counted as "in progress" for ever
 * if the thread is cancelled in it (forced unwinding skips its
 * bookkeeping), after which it ignores the thread's locks and reports races
 * that are not there.  So the ThreadSanitizer build (only it) sleeps in raw
 * system calls, with asynchronous cancellation around them, bracketed by
 * pthread_sigmask, which it intercepts: every signal is blocked first (the
 * runtime runs the handlers it had deferred), the sleep unblocks them
 * atomically (its sigmask argument), and the mask is restored after (the
 * runtime runs the handler of the signal that ended the sleep before the
 * call returns EINTR, as the kernel's would).  Timeouts are rounded up to
 * milliseconds there.
 */
#if defined(__SANITIZE_THREAD__)
#define SYS__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SYS__TSAN 1
#endif
#endif

#ifdef SYS__TSAN
/* Before a raw sleep: block every signal; *old: the mask to sleep with and
 * to restore. */
static void sys__tsan_begin(sigset_t *old, int *ct)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, old);
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, ct);
}

static int sys__tsan_end(long r, const sigset_t *old, int ct)
{
	if (r < 0)
		r = -errno;
	pthread_setcanceltype(ct, NULL);
	pthread_sigmask(SIG_SETMASK, old, NULL);
	return (int)r;
}
#endif

/*
 * A robust, process-shared mutex (SHARED's xm in eventfd_shared.c).  The
 * ThreadSanitizer build calls libc's functions directly, past the runtime's
 * interceptors: its record of a mutex is each process's own copy after a
 * fork, so it would report the unlock of a mutex another process locked,
 * or a lock by a thread of the parent's that the child does not have
 * (everything xm protects is atomic: it needs none of the runtime's
 * happens-before).
 */
#ifdef SYS__TSAN
static struct {
	int (*trylock)(pthread_mutex_t *);
	int (*clocklock)(pthread_mutex_t *, clockid_t,
			 const struct timespec *);
	int (*unlock)(pthread_mutex_t *);
	int (*consistent)(pthread_mutex_t *);
} sys__xm;

__attribute__((constructor)) static void sys__xm_bind(void)
{
	sys__xm.trylock = (int (*)(pthread_mutex_t *))dlsym(
		RTLD_NEXT, "pthread_mutex_trylock");
	sys__xm.clocklock = (int (*)(pthread_mutex_t *, clockid_t,
				     const struct timespec *))dlsym(
		RTLD_NEXT, "pthread_mutex_clocklock");
	sys__xm.unlock = (int (*)(pthread_mutex_t *))dlsym(
		RTLD_NEXT, "pthread_mutex_unlock");
	sys__xm.consistent = (int (*)(pthread_mutex_t *))dlsym(
		RTLD_NEXT, "pthread_mutex_consistent");
	if (!sys__xm.trylock || !sys__xm.clocklock || !sys__xm.unlock ||
	    !sys__xm.consistent) {
		sys__xm.trylock = pthread_mutex_trylock;
		sys__xm.clocklock = pthread_mutex_clocklock;
		sys__xm.unlock = pthread_mutex_unlock;
		sys__xm.consistent = pthread_mutex_consistent;
	}
}
#define SYS__XM(f) sys__xm.f
#else
#define SYS__XM(f) pthread_mutex_##f
#endif

int sys_xm_trylock(pthread_mutex_t *m)
{
	return SYS__XM(trylock)(m);
}

int sys_xm_lock_ms(pthread_mutex_t *m, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += (long)ms * 1000000;
	while (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return SYS__XM(clocklock)(m, CLOCK_MONOTONIC, &ts);
}

void sys_xm_unlock(pthread_mutex_t *m)
{
	(void)SYS__XM(unlock)(m);
}

void sys_xm_consistent(pthread_mutex_t *m)
{
	(void)SYS__XM(consistent)(m);
}

int sys_epoll_sleep(int epfd, struct epoll_event *evs, int max,
		    const struct timespec *timeout, const sigset_t *sigmask)
{
	static _Atomic int no_pwait2;
	int r;

#ifdef SYS__TSAN
	sigset_t old;
	int ct;

	sys__tsan_begin(&old, &ct);
	return sys__tsan_end(sys__libc.syscall(SYS_epoll_pwait, epfd, evs, max,
				     sys__ms(timeout), sigmask ? sigmask : &old,
				     (size_t)(_NSIG / 8)),
			     &old, ct);
#endif
	if (!atomic_load_explicit(&no_pwait2, memory_order_relaxed)) {
		r = sys__libc.epoll_pwait2(epfd, evs, max, timeout, sigmask);
		if (r >= 0)
			return r;
		if (errno != ENOSYS)
			return -errno;
		atomic_store_explicit(&no_pwait2, 1, memory_order_relaxed);
	}
	r = sys__libc.epoll_pwait(epfd, evs, max, sys__ms(timeout), sigmask);
	return r < 0 ? -errno : r;
}

int sys_eventfd(unsigned int initval, int flags)
{
	return (int)sys__ret(sys__libc.syscall(SYS_eventfd2, initval, flags));
}

ssize_t sys_read(int fd, void *buf, size_t n)
{
	return sys__ret(sys__libc.syscall(SYS_read, fd, buf, n));
}

ssize_t sys_read_sleep(int fd, void *buf, size_t n)
{
	ssize_t r;

#ifdef SYS__TSAN
	/* THREADSANITIZER: wait until readable, raw, then read (a blocking fd
	 * another reader emptied meanwhile may still block in the read). */
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (!(sys_fcntl_getfl(fd) & O_NONBLOCK)) {
		r = sys_ppoll(&pfd, 1, NULL, NULL);
		if (r < 0)
			return r;
	}
	return sys_read(fd, buf, n);
#endif
	r = sys__libc.read(fd, buf, n);
	return r < 0 ? -errno : r;
}

ssize_t sys_write(int fd, const void *buf, size_t n)
{
	return sys__ret(sys__libc.syscall(SYS_write, fd, buf, n));
}

int sys_close(int fd)
{
	return (int)sys__ret(sys__libc.syscall(SYS_close, fd));
}

int sys_dup3(int oldfd, int newfd, int flags)
{
	return (int)sys__ret(sys__libc.syscall(SYS_dup3, oldfd, newfd, flags));
}

int sys_fcntl(int fd, int cmd, void *arg)
{
	return (int)sys__ret(sys__libc.syscall(SYS_fcntl, fd, cmd, arg));
}

int sys_fcntl_getfl(int fd)
{
	return (int)sys__ret(sys__libc.syscall(SYS_fcntl, fd, F_GETFL));
}

int sys_fcntl_getfd(int fd)
{
	return (int)sys__ret(sys__libc.syscall(SYS_fcntl, fd, F_GETFD));
}

int sys_nofile(const struct rlimit *set, struct rlimit *get)
{
	/* prlimit64's structure is two 64-bit numbers on every ABI. */
	struct {
		uint64_t cur, max;
	} n, o;
	long r;

	if (set) {
		n.cur = set->rlim_cur == RLIM_INFINITY ? UINT64_MAX
						       : set->rlim_cur;
		n.max = set->rlim_max == RLIM_INFINITY ? UINT64_MAX
						       : set->rlim_max;
	}
	r = sys__libc.syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, set ? &n : NULL,
			      get ? &o : NULL);
	if (r < 0)
		return -errno;
	if (get) {
		get->rlim_cur = o.cur > (rlim_t)-1 ? RLIM_INFINITY
						   : (rlim_t)o.cur;
		get->rlim_max = o.max > (rlim_t)-1 ? RLIM_INFINITY
						   : (rlim_t)o.max;
	}
	return 0;
}

void sys_eventfd_signal(int fd)
{
	sys_eventfd_add(fd, 1);
}

void sys_eventfd_add(int fd, uint64_t v)
{
	long r;

	/* The callers never let the counter reach its maximum: no EAGAIN, and
	 * no sleep on a blocking fd (so no EINTR either, but retry anyway). */
	do
		r = sys__libc.syscall(SYS_write, fd, &v, sizeof(v));
	while (r < 0 && errno == EINTR);
}

/* The process id kcmp needs, asked once per process (a forked child's
 * atfork handler forgets it: sys_fork_child). */
static _Atomic long sys__pid;

void sys_fork_child(void)
{
	atomic_store_explicit(&sys__pid, 0, memory_order_relaxed);
}

int sys_same_file(int a, int b)
{
	long pid = atomic_load_explicit(&sys__pid, memory_order_relaxed), r;

	if (!pid) {
		pid = sys__libc.syscall(SYS_getpid);
		atomic_store_explicit(&sys__pid, pid, memory_order_relaxed);
	}
	r = sys__libc.syscall(SYS_kcmp, pid, pid, KCMP_FILE, a, b);
	if (r < 0)
		return errno == EBADF ? 0 : -errno;
	return r == 0;
}

int sys_epoll_target_is(int epfd, int tfd, int toff, int fd)
{
	long pid = atomic_load_explicit(&sys__pid, memory_order_relaxed), r;
	struct kcmp_epoll_slot slot = { .efd = (uint32_t)epfd,
					.tfd = (uint32_t)tfd,
					.toff = (uint32_t)toff };

	if (!pid) {
		pid = sys__libc.syscall(SYS_getpid);
		atomic_store_explicit(&sys__pid, pid, memory_order_relaxed);
	}
	r = sys__libc.syscall(SYS_kcmp, pid, pid, KCMP_EPOLL_TFD, fd,
			      (unsigned long)&slot);
	if (r < 0)
		return errno == EBADF || errno == ENOENT ? 0 : -errno;
	return r == 0;
}

struct sys__keyed {
	int epfd, op, num, file, r;
	struct epoll_event *ev;
};

/* fn(fd, arg) for each number the directory dir (/proc/self/fd,
 * /proc/thread-self/fd) lists, but its own, until fn returns true: that
 * number, or -1.  Raw calls (no wrapper of the preload sees them). */
static int sys__fds_find(const char *dir, bool (*fn)(int, void *), void *arg)
{
	char buf[1024];
	long n;
	int d, r = -1;

	d = (int)sys__libc.syscall(SYS_openat, AT_FDCWD, dir,
				   O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return -1;
	while (r < 0 && (n = sys__libc.syscall(SYS_getdents64, d, buf,
					       sizeof(buf))) > 0) {
		for (long off = 0; off < n && r < 0;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *de = (void *)(buf + off);
			char *p = de->name;
			int fd = 0;

			off += de->reclen;
			if (*p < '0' || *p > '9')
				continue;
			while (*p >= '0' && *p <= '9')
				fd = fd * 10 + (*p++ - '0');
			if (fd != d && fn(fd, arg))
				r = fd;
		}
	}
	sys__libc.syscall(SYS_close, d);
	return r;
}

static bool sys__close_one(int fd, void *closed)
{
	sys__libc.syscall(SYS_close, fd);
	(*(int *)closed)++;
	return false;
}

/* Close every number of this thread's own table (unshared): its copy would
 * otherwise hold every file of the process open until the thread is gone,
 * which pthread_join does not wait for (the kernel wakes the joiner before
 * it drops the table): the program's close of a file's last number would
 * not release it (no EOF for a pipe's reader, EADDRINUSE for a port). */
static void sys__close_own_table(void)
{
	int closed;

	if (sys__libc.syscall(SYS_close_range, 0, ~0u, 0) == 0)
		return;
	/* Before Linux 5.9: each number listed, closed; again until a pass
	 * finds none (a listing read while its numbers close may skip). */
	do {
		closed = 0;
		(void)sys__fds_find("/proc/thread-self/fd", sys__close_one,
				    &closed);
	} while (closed);
}

static void *sys__keyed_fn(void *arg)
{
	struct sys__keyed *k = arg;

	/* This thread's own copy of the table: num made file's here alone
	 * (raw calls: the preload's unshare and dup3 must not see them). */
	k->r = -EAGAIN;
	if (sys__libc.syscall(SYS_unshare, CLONE_FILES) < 0) {
		k->r = 1;
		return NULL;
	}
	if (k->num != k->file &&
	    sys__libc.syscall(SYS_dup3, k->file, k->num, O_CLOEXEC) < 0)
		k->r = 1; /* num at or above the soft limit: not made */
	else
		k->r = (int)sys__ret(sys__libc.syscall(SYS_epoll_ctl, k->epfd,
						       k->op, k->num, k->ev));
	sys__close_own_table();
	return NULL;
}

int sys_epoll_ctl_keyed(int epfd, int op, int num, int file,
			struct epoll_event *ev)
{
	struct sys__keyed k = { epfd, op, num, file, -EAGAIN, ev };
	sigset_t all, old;
	pthread_t t;
	int e;

	/* No signal of the program's runs on the helper thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	e = pthread_create(&t, NULL, sys__keyed_fn, &k);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e)
		return 1;
	pthread_join(t, NULL);
	return k.r;
}

struct sys__target {
	long pid;
	struct kcmp_epoll_slot slot;
};

static bool sys__is_target(int fd, void *arg)
{
	struct sys__target *t = arg;

	return sys__libc.syscall(SYS_kcmp, t->pid, t->pid, KCMP_EPOLL_TFD, fd,
				 (unsigned long)&t->slot) == 0;
}

int sys_epoll_target_find(int epfd, int tfd, int toff)
{
	struct sys__target t = {
		.pid = sys__libc.syscall(SYS_getpid),
		.slot = { .efd = (uint32_t)epfd, .tfd = (uint32_t)tfd,
			  .toff = (uint32_t)toff },
	};

	return sys__fds_find("/proc/self/fd", sys__is_target, &t);
}

/* preadv2(2) with RWF_NOWAIT: the kernel's eventfd read that never sleeps,
 * whatever the file's O_NONBLOCK (which the public number shares). */
int sys_eventfd_take(int fd, uint64_t *v)
{
	struct iovec iov = { .iov_base = v, .iov_len = sizeof(*v) };
	long r;

	r = sys__libc.syscall(SYS_preadv2, fd, &iov, 1, -1L, 0L, RWF_NOWAIT);
	if (r < 0 && errno == EOPNOTSUPP) {
		/* A kernel without RWF_NOWAIT for eventfds (before 5.12?):
		 * look first (a thread blocked in uepoll_read may take the
		 * value between the look and the read on a blocking fd, and
		 * this read then sleeps until the next write: MIRROR in
		 * eventfd.c). */
		if (!(sys_poll_now(fd, POLLIN) & POLLIN))
			return -EAGAIN;
		r = sys__libc.syscall(SYS_read, fd, v, sizeof(*v));
	}
	return r < 0 ? -errno : (int)r;
}

int sys_futex_sleep(_Atomic uint32_t *addr, uint32_t val)
{
	int old;
	long r;

	/* Asynchronous cancellation for the system call only: FUTEX_WAIT has
	 * no side effect to undo, so being cancelled anywhere inside it is
	 * being cancelled before it. */
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
	r = sys__libc.syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
	pthread_setcanceltype(old, NULL);
	return (int)sys__ret(r);
}

int sys_futex_nap(_Atomic uint32_t *addr, uint32_t val, int64_t until_ns)
{
	/* Never NULL: a FUTEX_WAIT without a timeout is restarted after a
	 * handler that has SA_RESTART, and a wait must fail with EINTR as
	 * epoll_wait does (signal(7)); with one, the kernel gives EINTR.  A
	 * time no machine reaches stands for "never" (the kernel saturates
	 * it), so a wait without a timeout makes no periodic wakeups. */
	struct timespec ts = { .tv_sec = (time_t)1 << 40 };
	int old;
	long r;

	if (until_ns >= 0) {
		ts.tv_sec = (time_t)(until_ns / 1000000000);
		ts.tv_nsec = (long)(until_ns % 1000000000);
	}
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
	r = sys__libc.syscall(SYS_futex, addr,
			      FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, val, &ts,
			      NULL, FUTEX_BITSET_MATCH_ANY);
	pthread_setcanceltype(old, NULL);
	return (int)sys__ret(r);
}

void sys_futex_wake(_Atomic uint32_t *addr, int n)
{
	sys__libc.syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

int sys_ppoll(struct pollfd *pfd, nfds_t n, const struct timespec *timeout,
	      const sigset_t *sigmask)
{
	int r;

#ifdef SYS__TSAN
	sigset_t old;
	int ct;

	sys__tsan_begin(&old, &ct);
	return sys__tsan_end(sys__libc.syscall(SYS_ppoll, pfd, n, timeout,
				     sigmask ? sigmask : &old,
				     (size_t)(_NSIG / 8)),
			     &old, ct);
#endif
	r = sys__libc.ppoll(pfd, n, timeout, sigmask);
	return r < 0 ? -errno : r;
}

int sys_ppoll_in(int fd, const struct timespec *timeout,
		 const sigset_t *sigmask)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return sys_ppoll(&pfd, 1, timeout, sigmask);
}

short sys_poll_now(int fd, short events)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	struct timespec zero = { 0, 0 };

	if (sys__libc.syscall(SYS_ppoll, &pfd, 1, &zero, NULL,
			      (size_t)(_NSIG / 8)) <= 0)
		return 0;
	return pfd.revents;
}

ssize_t sys_pass_read(int fd, void *buf, size_t n)
{
	return sys__libc.read(fd, buf, n);
}

ssize_t sys_pass_write(int fd, const void *buf, size_t n)
{
	return sys__libc.write(fd, buf, n);
}

int sys_pass_fcntl(int fd, int cmd, void *arg)
{
	return sys__libc.fcntl(fd, cmd, arg);
}

int sys_pass_close(int fd)
{
	return sys__libc.close(fd);
}

int sys_pass_epoll_pwait(int epfd, struct epoll_event *evs, int max,
			 int timeout, const sigset_t *sigmask)
{
	return sys__libc.epoll_pwait(epfd, evs, max, timeout, sigmask);
}

int sys_pass_epoll_pwait2(int epfd, struct epoll_event *evs, int max,
			  const struct timespec *timeout,
			  const sigset_t *sigmask)
{
	return sys__libc.epoll_pwait2(epfd, evs, max, timeout, sigmask);
}

int sys_membarrier(int cmd)
{
	return (int)sys__ret(sys__libc.syscall(SYS_membarrier, cmd, 0, 0));
}

void sys_futex_wait(_Atomic int *addr, int val)
{
	sys__libc.syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL,
			  0);
}

static struct timespec *sys__rel(struct timespec *ts, int64_t rel_ns)
{
	if (rel_ns < 0)
		return NULL;
	ts->tv_sec = (time_t)(rel_ns / 1000000000);
	ts->tv_nsec = (long)(rel_ns % 1000000000);
	return ts;
}

int sys_futex_xwait(void *addr, uint32_t val, int64_t rel_ns)
{
	struct timespec ts;

	return (int)sys__ret(sys__libc.syscall(SYS_futex, addr, FUTEX_WAIT,
					       val, sys__rel(&ts, rel_ns),
					       NULL, 0));
}

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449 /* the same number on every architecture */
#endif

/* futex_waitv(2) (Linux 5.16) is missing: ENOSYS seen once. */
static _Atomic bool sys__no_waitv;

int sys_futex_xsleep(void *addr, uint32_t val, int64_t rel_ns)
{
	struct futex_waitv w = { .val = val,
				 .uaddr = (uint64_t)(uintptr_t)addr,
				 .flags = FUTEX_32 };
	struct timespec ts;
	bool done = false;
	int old;
	long r = -1;

	/*
	 * A blocked eventfd read(2) or write(2) sleeps until woken, and a
	 * signal handler with SA_RESTART restarts it (-ERESTARTSYS).  A
	 * FUTEX_WAIT with a timeout is restarted by no handler (the kernel's
	 * restart block ends in EINTR), so a sleep that needs a limit is a
	 * futex_waitv with an absolute deadline, which the kernel restarts
	 * under SA_RESTART like read(2), deadline unchanged.  (Before Linux
	 * 5.16: FUTEX_WAIT, and EINTR after any handler.)
	 */
	/* As sys_futex_sleep: nothing to undo if cancelled inside. */
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
	if (rel_ns >= 0 &&
	    !atomic_load_explicit(&sys__no_waitv, memory_order_relaxed)) {
		uint64_t t = sys_now_ns() + (uint64_t)rel_ns;

		ts.tv_sec = (time_t)(t / 1000000000u);
		ts.tv_nsec = (long)(t % 1000000000u);
		r = sys__libc.syscall(SYS_futex_waitv, &w, 1, 0, &ts,
				      CLOCK_MONOTONIC);
		if (r < 0 && errno == ENOSYS)
			atomic_store_explicit(&sys__no_waitv, true,
					      memory_order_relaxed);
		else
			done = true;
	}
	if (!done)
		r = sys__libc.syscall(SYS_futex, addr, FUTEX_WAIT, val,
				      sys__rel(&ts, rel_ns), NULL, 0);
	pthread_setcanceltype(old, NULL);
	return (int)sys__ret(r);
}

void sys_futex_xwake(void *addr, int n)
{
	sys__libc.syscall(SYS_futex, addr, FUTEX_WAKE, n, NULL, NULL, 0);
}

long sys_gettid(void)
{
	return sys__libc.syscall(SYS_gettid);
}

/* Read the file pre<num>post of /proc into buf (NUL-terminated): the
 * bytes read, or -errno.  (No snprintf: a signal handler's caller may come
 * here.) */
static ssize_t sys__proc_read(const char *pre, unsigned int num,
			      const char *post, char *buf, size_t size)
{
	char path[64], d[12];
	size_t i = 0, l = strlen(pre);
	ssize_t n;
	int f;

	memcpy(path, pre, l);
	do
		d[i++] = (char)('0' + num % 10);
	while ((num /= 10) > 0);
	while (i)
		path[l++] = d[--i];
	memcpy(path + l, post, strlen(post) + 1);
	f = (int)sys__libc.syscall(SYS_openat, AT_FDCWD, path,
				   O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return -errno;
	n = sys__libc.syscall(SYS_read, f, buf, size - 1);
	sys__libc.syscall(SYS_close, f);
	if (n <= 0)
		return n < 0 ? -EIO : 0;
	buf[n] = 0;
	return n;
}

ssize_t sys_fdinfo(int fd, char **out)
{
	char path[48] = "/proc/self/fdinfo/", d[12], *buf = NULL, *nb;
	size_t i = 0, l = strlen(path), len = 0, cap = 0;
	unsigned int num = (unsigned int)fd;
	ssize_t n;
	int f;

	do
		d[i++] = (char)('0' + num % 10);
	while ((num /= 10) > 0);
	while (i)
		path[l++] = d[--i];
	path[l] = 0;
	f = (int)sys__libc.syscall(SYS_openat, AT_FDCWD, path,
				   O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return -errno;
	/* An epoll's lists a line per registration: read until the end. */
	for (;;) {
		if (cap - len < 1024) {
			cap = cap ? 2 * cap : 4096;
			nb = realloc(buf, cap);
			if (!nb) {
				n = -ENOMEM;
				break;
			}
			buf = nb;
		}
		n = sys__libc.syscall(SYS_read, f, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			n = n < 0 ? -EIO : 0;
			break;
		}
		len += (size_t)n;
	}
	sys__libc.syscall(SYS_close, f);
	if (n < 0) {
		free(buf);
		return n;
	}
	buf[len] = 0;
	*out = buf;
	return (ssize_t)len;
}

bool sys_thread_stopped(uint32_t t)
{
	char buf[256], *p;

	/* /proc/<tid> names any thread, its process's leader or not; gone:
	 * its robust lock is released. */
	if (sys__proc_read("/proc/", t, "/stat", buf, sizeof(buf)) <= 0)
		return false;
	/* "tid (comm) S ...": the command may hold ')' itself. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
}

int sys_eventfd_value(int fd, uint64_t *v)
{
	char buf[512], *p;
	ssize_t n = sys__proc_read("/proc/self/fdinfo/", (unsigned int)fd, "",
				   buf, sizeof(buf));

	if (n <= 0)
		return n < 0 ? (int)n : -EIO;
	p = strstr(buf, "eventfd-count:");
	if (!p)
		return -ENOSYS;
	for (p += 14; *p == ' ' || *p == '\t'; p++)
		;
	for (*v = 0; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); p++)
		*v = *v * 16 + (uint64_t)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
	return 0;
}

void sys_futex_wake_all(_Atomic int *addr)
{
	sys__libc.syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL,
			  NULL, 0);
}

void sys_yield(void)
{
	sys__libc.syscall(SYS_sched_yield);
}

long sys_preempted(void)
{
	struct rusage ru;

	if (sys__libc.syscall(SYS_getrusage, RUSAGE_THREAD, &ru) < 0)
		return -1;
	return ru.ru_nivcsw;
}

uint64_t sys_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sys_time_left(int64_t deadline, struct timespec *ts)
{
	uint64_t now = sys_now_ns();
	uint64_t left = (uint64_t)deadline > now ? (uint64_t)deadline - now : 0;

	ts->tv_sec = (time_t)(left / 1000000000u);
	ts->tv_nsec = (long)(left % 1000000000u);
}
