/*
 * t_wake_quiet: a change of a ueventfd queues its watchers' items as
 * always, but rings an instance's doorbell only if the item's source still
 * shows something (QUIET in src/bell.c): no doorbell write and no wakeup of
 * a thread that would find nothing.  The kernel wakes such a watcher, which
 * finds nothing and sleeps again inside epoll_wait; nothing of it reaches
 * the program.  The item keeps its place in the ready queue, as the
 * kernel's epitem keeps its place in the ready list.
 *  (a) a write of 0 to an empty ueventfd watched (EPOLLIN, level) by four
 *      idle instances: no system call at all (before QUIET: one doorbell
 *      write per instance; the kernel's eventfd: the write itself), and the
 *      instances' fds stay not readable and their waits find nothing, as
 *      with the kernel's epoll and eventfd;
 *  (b) the same write to an instance watching EPOLLIN|EPOLLOUT|EPOLLET: the
 *      kernel reports EPOLLOUT again (a write wakes EPOLLIN watchers, and
 *      the poll then finds the fd writable), and so does uepoll;
 *  (c) the race QUIET is for: W threads, one instance each, all watching
 *      one ueventfd (wake-all, level-triggered); E writes of 1, each read by
 *      whichever woken thread gets there first.  Every value is read
 *      exactly once and nobody hangs (a count, no timing);
 *  (d) the order a wait reports after a write of 0: an instance watches A
 *      and B; a write of 0 to A, then 1 to B, then 1 to A.  The kernel
 *      queued A's epitem at the write of 0, so it reports A first; uepoll
 *      must give the same order (an earlier attempt that did not queue the
 *      item gave B first: tests/fuzz/corpus/ready-order).
 *
 * The count in (a): this program is linked with tests/libcwrap.c, which
 * counts the calls the writing thread makes.
 */
#include "testlib.h"
#include "libcwrap.h"

#include <poll.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define NINST 4

/* One system: kernel (epoll, eventfd) or uepoll. */
struct sys {
	int kernel;
	int efd;
	int ep[NINST];
};

static int s_wait(struct sys *s, int ep, struct epoll_event *ev, int n)
{
	return s->kernel ? epoll_wait(ep, ev, n, 0)
			 : uepoll_wait(ep, ev, n, 0);
}

static ssize_t s_write(struct sys *s, uint64_t v)
{
	return s->kernel ? write(s->efd, &v, sizeof(v))
			 : uepoll_write(s->efd, &v, sizeof(v));
}

static void s_open(struct sys *s, int kernel, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = 7 };

	s->kernel = kernel;
	s->efd = kernel ? eventfd(0, EFD_NONBLOCK) : ueventfd(0, EFD_NONBLOCK);
	REQUIRE(s->efd >= 0);
	for (int i = 0; i < NINST; i++) {
		s->ep[i] = kernel ? epoll_create1(0) : uepoll_create1(0);
		REQUIRE(s->ep[i] >= 0);
		CHECK_EQ(kernel ? epoll_ctl(s->ep[i], EPOLL_CTL_ADD, s->efd, &ev)
				: uepoll_ctl(s->ep[i], EPOLL_CTL_ADD, s->efd,
					     &ev),
			 0);
	}
}

static void s_close(struct sys *s)
{
	for (int i = 0; i < NINST; i++)
		CHECK_EQ(s->kernel ? close(s->ep[i]) : uepoll_close(s->ep[i]),
			 0);
	CHECK_EQ(s->kernel ? close(s->efd) : uepoll_close(s->efd), 0);
}

/* Whether an instance's fd polls readable (outside pollers' view). */
static int readable(int ep)
{
	struct pollfd p = { .fd = ep, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* (a) on one system: the calls of the write of 0 (uepoll), and what the
 * instances show after it. */
static void seq_a(int kernel)
{
	struct epoll_event ev[4];
	struct sys s;
	int calls;

	s_open(&s, kernel, EPOLLIN);
	for (int i = 0; i < NINST; i++)
		CHECK_EQ(s_wait(&s, s.ep[i], ev, 4), 0); /* idle, settled */
	wrap_take(-1);
	wrap_arm(0);
	CHECK_EQ(s_write(&s, 0), (ssize_t)sizeof(uint64_t));
	wrap_disarm();
	calls = wrap_take(-1);
	printf("(a) %s: write of 0, %d idle EPOLLIN watchers: %d calls\n",
	       kernel ? "kernel" : "uepoll", NINST, calls);
	if (kernel)
		CHECK_EQ(calls, 1); /* the measure itself */
	else
		CHECK_EQ(calls, 0);
	for (int i = 0; i < NINST; i++) {
		CHECK(!readable(s.ep[i]));
		CHECK_EQ(s_wait(&s, s.ep[i], ev, 4), 0);
	}
	s_close(&s);
}

/* (b) on one system: the events an EPOLLIN|EPOLLOUT|EPOLLET watcher gets
 * after a write of 0 (its first edge taken before). */
static uint32_t seq_b(int kernel)
{
	struct epoll_event ev[4];
	struct sys s;
	uint32_t got = 0;
	int n;

	s_open(&s, kernel, EPOLLIN | EPOLLOUT | EPOLLET);
	CHECK_EQ(s_wait(&s, s.ep[0], ev, 4), 1); /* the ADD's edge */
	CHECK_EQ(s_wait(&s, s.ep[0], ev, 4), 0);
	CHECK_EQ(s_write(&s, 0), (ssize_t)sizeof(uint64_t));
	n = s_wait(&s, s.ep[0], ev, 4);
	CHECK_EQ(n, 1);
	if (n == 1)
		got = ev[0].events;
	s_close(&s);
	return got;
}

/* (d) on one system: the data of the events one wait reports. */
static void seq_d(int kernel, uint64_t out[2], int *n)
{
	struct epoll_event ev = { .events = EPOLLIN }, got[4];
	uint64_t zero = 0, one = 1;
	int a, b, ep;

	a = kernel ? eventfd(0, EFD_NONBLOCK) : ueventfd(0, EFD_NONBLOCK);
	b = kernel ? eventfd(0, EFD_NONBLOCK) : ueventfd(0, EFD_NONBLOCK);
	ep = kernel ? epoll_create1(0) : uepoll_create1(0);
	REQUIRE(a >= 0 && b >= 0 && ep >= 0);
	ev.data.u64 = 'A';
	CHECK_EQ(kernel ? epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev)
			: uepoll_ctl(ep, EPOLL_CTL_ADD, a, &ev), 0);
	ev.data.u64 = 'B';
	CHECK_EQ(kernel ? epoll_ctl(ep, EPOLL_CTL_ADD, b, &ev)
			: uepoll_ctl(ep, EPOLL_CTL_ADD, b, &ev), 0);
	CHECK_EQ(kernel ? write(a, &zero, 8) : uepoll_write(a, &zero, 8), 8);
	CHECK_EQ(kernel ? write(b, &one, 8) : uepoll_write(b, &one, 8), 8);
	CHECK_EQ(kernel ? write(a, &one, 8) : uepoll_write(a, &one, 8), 8);
	*n = kernel ? epoll_wait(ep, got, 4, 0) : uepoll_wait(ep, got, 4, 0);
	CHECK_EQ(*n, 2);
	for (int i = 0; i < 2 && i < *n; i++)
		out[i] = got[i].data.u64;
	CHECK_EQ(kernel ? close(ep) : uepoll_close(ep), 0);
	CHECK_EQ(kernel ? close(a) : uepoll_close(a), 0);
	CHECK_EQ(kernel ? close(b) : uepoll_close(b), 0);
}

/* (c) */
#define W 8
#define E 3000

static int c_efd, c_stop;
static _Atomic uint64_t c_total;

static void *c_waiter(void *arg)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 }, out[4];
	int ep = uepoll_create1(0);

	(void)arg;
	REQUIRE(ep >= 0);
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, c_efd, &ev), 0);
	ev.data.u64 = 2;
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, c_stop, &ev), 0);
	for (;;) {
		int n = uepoll_wait(ep, out, 4, -1), stop = 0;

		REQUIRE(n > 0);
		for (int i = 0; i < n; i++) {
			uint64_t v;

			if (out[i].data.u64 == 2) {
				stop = 1;
				continue;
			}
			if (uepoll_read(c_efd, &v, sizeof(v)) == sizeof(v))
				atomic_fetch_add(&c_total, v);
		}
		if (stop)
			break;
	}
	CHECK_EQ(uepoll_close(ep), 0);
	return NULL;
}

static void seq_c(void)
{
	pthread_t t[W];
	uint64_t one = 1;
	uint64_t until;

	c_efd = ueventfd(0, EFD_NONBLOCK);
	c_stop = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(c_efd >= 0 && c_stop >= 0);
	for (int i = 0; i < W; i++)
		REQUIRE(pthread_create(&t[i], NULL, c_waiter, NULL) == 0);
	for (int i = 0; i < E; i++) {
		CHECK_EQ(uepoll_write(c_efd, &one, sizeof(one)),
			 (ssize_t)sizeof(one));
		if (i % 64 == 0)
			usleep(50); /* let the herd fall asleep now and then */
	}
	/* Every value is read by a woken waiter; a lost wakeup leaves it in
	 * the counter and this loop to the watchdog. */
	until = t_now_ns() + 30ull * 1000000000ull;
	while (atomic_load(&c_total) < E && t_now_ns() < until)
		usleep(100);
	CHECK_EQ(atomic_load(&c_total), E);
	CHECK_EQ(uepoll_write(c_stop, &one, sizeof(one)), (ssize_t)sizeof(one));
	for (int i = 0; i < W; i++)
		CHECK(t_join_within(t[i], 30000));
	printf("(c) %d waiters, wake-all, %d writes: %llu read\n", W, E,
	       (unsigned long long)atomic_load(&c_total));
	CHECK_EQ(uepoll_close(c_efd), 0);
	CHECK_EQ(uepoll_close(c_stop), 0);
}

int main(void)
{
	uint32_t k, u;

	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_begin("t_wake_quiet");
	t_watchdog(120);

	seq_a(1);
	seq_a(0);

	k = seq_b(1);
	u = seq_b(0);
	printf("(b) EPOLLIN|EPOLLOUT|EPOLLET, write of 0: kernel 0x%x, "
	       "uepoll 0x%x\n", k, u);
	CHECK_EQ(k, (uint32_t)EPOLLOUT);
	CHECK_EQ(u, k);

	seq_c();

	{
		uint64_t ko[2] = { 0, 0 }, uo[2] = { 0, 0 };
		int kn, un;

		seq_d(1, ko, &kn);
		seq_d(0, uo, &un);
		printf("(d) write 0 to A, 1 to B, 1 to A: kernel %c%c, "
		       "uepoll %c%c\n", (char)ko[0], (char)ko[1], (char)uo[0],
		       (char)uo[1]);
		CHECK_EQ(un, kn);
		CHECK_EQ(uo[0], ko[0]);
		CHECK_EQ(uo[1], ko[1]);
	}
	return t_end();
}
