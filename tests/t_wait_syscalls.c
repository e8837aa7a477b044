/*
 * t_wait_syscalls: a uepoll_wait on an instance whose sources are kernel
 * fds makes as many system calls as the kernel's epoll_wait: one, whether
 * it finds events at once, sleeps until one comes, or times out (KERNEL
 * COST in src/wait.c).  Also for an instance that has ueventfds but never
 * spins (UEPOLL_NOSPIN) when none is ready, and for nested instances.
 *
 * The count: this program is linked with tests/libcwrap.c, which defines
 * the libc names the library reaches the kernel through (src/sys.c), and
 * counts the calls the waiting thread makes inside uepoll_wait.  (The
 * kernel's own epoll_wait is one call by definition.)
 */
#include "testlib.h"
#include "libcwrap.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* The calls one uepoll_wait makes; *n: its result. */
static int counted_wait(int ep, int timeout, int *n)
{
	struct epoll_event ev[4];

	wrap_take(-1);
	wrap_arm(0); /* this thread only: not the writer's write */
	*n = uepoll_wait(ep, ev, 4, timeout);
	wrap_disarm();
	return wrap_take(-1);
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
