/*
 * t_wait_syscalls: a uepoll_wait on an instance whose sources are kernel
 * fds makes as many system calls as the kernel's epoll_wait: one, whether
 * it finds events at once, sleeps until one comes, or times out (KERNEL
 * COST in src/wait.c).  Also for an instance that has ueventfds but never
 * spins (UEPOLL_NOSPIN) when none is ready, and for nested instances.
 *
 * The count: this program defines the libc names the library reaches the
 * kernel through (src/sys.c: syscall, read, write, close, epoll_pwait,
 * epoll_pwait2, ppoll), which the static library's references resolve to,
 * and counts the calls the waiting thread makes inside uepoll_wait.  (The
 * kernel's own epoll_wait is one call by definition.)
 */
#include "testlib.h"

#include <dlfcn.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

static __thread int armed;
static __thread int calls;

static void *next(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!f)
		abort();
	return f;
}

#define COUNT() \
	do { \
		if (armed) \
			calls++; \
	} while (0)

ssize_t read(int fd, void *buf, size_t n)
{
	static ssize_t (*f)(int, void *, size_t);

	COUNT();
	if (!f)
		f = (ssize_t (*)(int, void *, size_t))next("read");
	return f(fd, buf, n);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	static ssize_t (*f)(int, const void *, size_t);

	COUNT();
	if (!f)
		f = (ssize_t (*)(int, const void *, size_t))next("write");
	return f(fd, buf, n);
}

int close(int fd)
{
	static int (*f)(int);

	COUNT();
	if (!f)
		f = (int (*)(int))next("close");
	return f(fd);
}

int epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout,
		const sigset_t *sigmask)
{
	static int (*f)(int, struct epoll_event *, int, int, const sigset_t *);

	COUNT();
	if (!f)
		f = (int (*)(int, struct epoll_event *, int, int,
			     const sigset_t *))next("epoll_pwait");
	return f(epfd, evs, max, timeout, sigmask);
}

int epoll_pwait2(int epfd, struct epoll_event *evs, int max,
		 const struct timespec *timeout, const sigset_t *sigmask)
{
	static int (*f)(int, struct epoll_event *, int, const struct timespec *,
			const sigset_t *);

	COUNT();
	if (!f)
		f = (int (*)(int, struct epoll_event *, int,
			     const struct timespec *,
			     const sigset_t *))next("epoll_pwait2");
	return f(epfd, evs, max, timeout, sigmask);
}

int ppoll(struct pollfd *pfd, nfds_t n, const struct timespec *timeout,
	  const sigset_t *sigmask)
{
	static int (*f)(struct pollfd *, nfds_t, const struct timespec *,
			const sigset_t *);

	COUNT();
	if (!f)
		f = (int (*)(struct pollfd *, nfds_t, const struct timespec *,
			     const sigset_t *))next("ppoll");
	return f(pfd, n, timeout, sigmask);
}

/* Six arguments, as libc's syscall() reads them (see t_seam.c). */
__attribute__((no_sanitize("address"))) long syscall(long nr, ...)
{
	static long (*f)(long, ...);
	long a[6];
	va_list ap;

	COUNT();
	if (!f)
		f = (long (*)(long, ...))next("syscall");
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	return f(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* The calls one uepoll_wait makes; *n: its result. */
static int counted_wait(int ep, int timeout, int *n)
{
	struct epoll_event ev[4];

	calls = 0;
	armed = 1;
	*n = uepoll_wait(ep, ev, 4, timeout);
	armed = 0;
	return calls;
}

struct writer {
	int fd, tid;
	int waiter_tid;
};

/* Writes one byte once the waiter sleeps. */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char c = 'x';

	t_wait_sleeping(w->waiter_tid, 2000);
	CHECK_EQ(write(w->fd, &c, 1), 1);
	return NULL;
}

/* Waits on ep three ways; `rfd`/`wfd`: the pipe that makes it ready. */
static void check(const char *what, int ep, int rfd, int wfd)
{
	struct writer w = { .fd = wfd, .waiter_tid = t_gettid() };
	pthread_t th;
	char c = 'x';
	int n, k;

	/* Sleeps until the writer's byte comes. */
	REQUIRE(pthread_create(&th, NULL, writer_main, &w) == 0);
	k = counted_wait(ep, 5000, &n);
	pthread_join(th, NULL);
	printf("%s: woken by a write: %d call(s), %d event(s)\n", what, k, n);
	CHECK_EQ(n, 1);
	CHECK_EQ(k, 1);
	/* Finds the event at once. */
	k = counted_wait(ep, 5000, &n);
	printf("%s: ready at once: %d call(s)\n", what, k);
	CHECK_EQ(n, 1);
	CHECK_EQ(k, 1);
	CHECK_EQ(read(rfd, &c, 1), 1);
	/* Times out. */
	k = counted_wait(ep, 20, &n);
	printf("%s: timeout: %d call(s)\n", what, k);
	CHECK_EQ(n, 0);
	CHECK_EQ(k, 1);
	/* Polls. */
	k = counted_wait(ep, 0, &n);
	printf("%s: zero timeout: %d call(s)\n", what, k);
	CHECK_EQ(n, 0);
	CHECK_EQ(k, 1);
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int p[2], ep, nospin, e, outer, inner;

	t_begin("t_wait_syscalls");
	t_watchdog(60);
	REQUIRE(pipe(p) == 0);

	ep = uepoll_create1(0);
	REQUIRE(ep >= 0);
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
	check("pipe", ep, p[0], p[1]);

	/* ueventfds too, none ready, never spinning. */
	nospin = uepoll_create2(0, UEPOLL_NOSPIN);
	e = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(nospin >= 0 && e >= 0);
	CHECK_EQ(uepoll_ctl(nospin, EPOLL_CTL_ADD, p[0], &ev), 0);
	CHECK_EQ(uepoll_ctl(nospin, EPOLL_CTL_ADD, e, &ev), 0);
	check("pipe + ueventfd, UEPOLL_NOSPIN", nospin, p[0], p[1]);

	/* An outer instance whose one source is an inner instance. */
	outer = uepoll_create1(0);
	inner = uepoll_create1(0);
	REQUIRE(outer >= 0 && inner >= 0);
	CHECK_EQ(uepoll_ctl(inner, EPOLL_CTL_ADD, p[0], &ev), 0);
	CHECK_EQ(uepoll_ctl(outer, EPOLL_CTL_ADD, inner, &ev), 0);
	check("nested", outer, p[0], p[1]);

	CHECK_EQ(uepoll_close(outer), 0);
	CHECK_EQ(uepoll_close(inner), 0);
	CHECK_EQ(uepoll_close(nospin), 0);
	CHECK_EQ(uepoll_close(e), 0);
	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_EQ(close(p[0]), 0);
	CHECK_EQ(close(p[1]), 0);
	return t_end();
}
