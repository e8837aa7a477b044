/* See libcwrap.h. */
#include "libcwrap.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

const char *const wrap_name[WRAP_N] = { "read", "write", "close",
					"epoll_pwait", "epoll_pwait2", "ppoll",
					"syscall", "futex", "xm_wait" };

static _Atomic int wrap__all;
static __thread int wrap__me;
static __thread void (*wrap__hook)(long nr);
static __thread void (*wrap__after)(long nr);
static __thread long wrap__ret;
static _Atomic int wrap__calls[WRAP_N];

void wrap_arm(int all)
{
	if (all)
		atomic_store(&wrap__all, 1);
	wrap__me = 1;
}

void wrap_disarm(void)
{
	atomic_store(&wrap__all, 0);
	wrap__me = 0;
}

void wrap_hook_once(void (*fn)(long nr))
{
	wrap__hook = fn;
}

void wrap_hook_after_once(void (*fn)(long nr))
{
	wrap__after = fn;
}

long wrap_last_result(void)
{
	return wrap__ret;
}

int wrap_take(int name)
{
	int t = 0;

	for (int i = 0; i < WRAP_N; i++)
		if (name < 0 || name == i)
			t += atomic_exchange(&wrap__calls[i], 0);
	return t;
}

int wrap_take_show(void)
{
	int t = 0;

	for (int i = 0; i < WRAP_N; i++) {
		int n = atomic_exchange(&wrap__calls[i], 0);

		if (n)
			printf("  %s: %d\n", wrap_name[i], n);
		t += n;
	}
	return t;
}

static void wrap__count(int c)
{
	if (wrap__me || atomic_load(&wrap__all))
		atomic_fetch_add(&wrap__calls[c], 1);
}

static void *wrap__next(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!f) {
		fprintf(stderr, "libcwrap: no next %s\n", name);
		abort();
	}
	return f;
}

ssize_t read(int fd, void *buf, size_t n)
{
	static ssize_t (*f)(int, void *, size_t);

	wrap__count(WRAP_READ);
	if (!f)
		f = (ssize_t (*)(int, void *, size_t))wrap__next("read");
	return f(fd, buf, n);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	static ssize_t (*f)(int, const void *, size_t);

	wrap__count(WRAP_WRITE);
	if (!f)
		f = (ssize_t (*)(int, const void *, size_t))wrap__next("write");
	return f(fd, buf, n);
}

int close(int fd)
{
	static int (*f)(int);

	wrap__count(WRAP_CLOSE);
	if (!f)
		f = (int (*)(int))wrap__next("close");
	return f(fd);
}

int epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout,
		const sigset_t *sigmask)
{
	static int (*f)(int, struct epoll_event *, int, int, const sigset_t *);

	wrap__count(WRAP_EPOLL_PWAIT);
	if (!f)
		f = (int (*)(int, struct epoll_event *, int, int,
			     const sigset_t *))wrap__next("epoll_pwait");
	return f(epfd, evs, max, timeout, sigmask);
}

int epoll_pwait2(int epfd, struct epoll_event *evs, int max,
		 const struct timespec *timeout, const sigset_t *sigmask)
{
	static int (*f)(int, struct epoll_event *, int, const struct timespec *,
			const sigset_t *);

	wrap__count(WRAP_EPOLL_PWAIT2);
	if (!f)
		f = (int (*)(int, struct epoll_event *, int,
			     const struct timespec *,
			     const sigset_t *))wrap__next("epoll_pwait2");
	return f(epfd, evs, max, timeout, sigmask);
}

int ppoll(struct pollfd *pfd, nfds_t n, const struct timespec *timeout,
	  const sigset_t *sigmask)
{
	static int (*f)(struct pollfd *, nfds_t, const struct timespec *,
			const sigset_t *);

	wrap__count(WRAP_PPOLL);
	if (!f)
		f = (int (*)(struct pollfd *, nfds_t, const struct timespec *,
			     const sigset_t *))wrap__next("ppoll");
	return f(pfd, n, timeout, sigmask);
}

/* Six arguments are read whatever the call passed, as libc's own syscall()
 * does (the unused ones are whatever the caller's stack holds): not a bug
 * ASan should stop on. */
__attribute__((no_sanitize("address"))) long syscall(long nr, ...)
{
	static long (*f)(long, ...);
	long a[6], r;
	va_list ap;
	void (*after)(long) = wrap__after;

	wrap__count(nr == SYS_futex ? WRAP_FUTEX : WRAP_SYSCALL);
	if (wrap__hook) {
		void (*h)(long) = wrap__hook;

		wrap__hook = NULL; /* once, and not for the hook's own calls */
		h(nr);
	}
	if (!f)
		f = (long (*)(long, ...))wrap__next("syscall");
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	/* The after-hook armed before this call (not one its before-hook
	 * armed), once, and not for the hook's own calls; errno kept. */
	if (after)
		wrap__after = NULL;
	r = f(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (after) {
		int e = errno;

		wrap__ret = r;
		after(nr);
		errno = e;
	}
	return r;
}

int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t c,
			    const struct timespec *t)
{
	static int (*f)(pthread_mutex_t *, clockid_t, const struct timespec *);

	wrap__count(WRAP_XM_WAIT);
	if (!f)
		f = (int (*)(pthread_mutex_t *, clockid_t,
			     const struct timespec *))wrap__next("pthread_mutex_clocklock");
	return f(m, c, t);
}
