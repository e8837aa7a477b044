/*
 * t_timeout: timeouts of uepoll_wait/pwait/pwait2.
 *  - timeout 0 returns 0 at once when nothing is ready (many times over:
 *    only a loose bound that catches a wait that blocks)
 *  - timeout -1 (and any negative, and a NULL pwait2 timespec) blocks until
 *    an event arrives from another thread; so does a huge timeout
 *  - a positive timeout returns 0 no earlier than asked (lower bound) and
 *    not absurdly late (loose upper bound)
 */
#include "testlib.h"

#include <limits.h>
#include <pthread.h>
#include <unistd.h>

enum call { C_WAIT, C_PWAIT, C_PWAIT2 };

static int do_wait(enum call c, int ep, struct epoll_event *ev, int max,
		   int timeout_ms)
{
	struct timespec ts;

	switch (c) {
	case C_WAIT:
		return uepoll_wait(ep, ev, max, timeout_ms);
	case C_PWAIT:
		return uepoll_pwait(ep, ev, max, timeout_ms, NULL);
	case C_PWAIT2:
		if (timeout_ms < 0)
			return uepoll_pwait2(ep, ev, max, NULL, NULL);
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
		return uepoll_pwait2(ep, ev, max, &ts, NULL);
	}
	return -1;
}

static void test_zero(enum call c)
{
	struct epoll_event ev[2];
	int ep = uepoll_create1(0), efd = ueventfd(0, EFD_NONBLOCK);
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 1 };
	uint64_t t0 = t_now_ns();

	REQUIRE(ep >= 0 && efd >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, efd, &e) == 0);
	for (int i = 0; i < 1000; i++)
		CHECK_EQ(do_wait(c, ep, ev, 2, 0), 0);
	/* 1000 non-blocking calls: far less than 10 s unless they block */
	CHECK(t_now_ns() - t0 < 10000000000ull);
	CHECK_EQ(ueventfd_write(efd, 1), 0);
	CHECK_EQ(do_wait(c, ep, ev, 2, 0), 1);
	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_EQ(uepoll_close(efd), 0);
}

static void test_positive(enum call c, int ms)
{
	struct epoll_event ev[2];
	int ep = uepoll_create1(0), efd = ueventfd(0, EFD_NONBLOCK), p[2];
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 1 };
	uint64_t t0, dt;

	REQUIRE(ep >= 0 && efd >= 0);
	REQUIRE(pipe(p) == 0);
	/* one ueventfd and one kernel fd, neither ready */
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, efd, &e) == 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, p[0], &e) == 0);
	t0 = t_now_ns();
	CHECK_EQ(do_wait(c, ep, ev, 2, ms), 0);
	dt = t_now_ns() - t0;
	if (dt < (uint64_t)ms * 1000000u || dt > 10000000000ull + (uint64_t)ms * 1000000u) {
		fprintf(stderr, "call %d timeout %d ms took %llu ns\n", c, ms,
			(unsigned long long)dt);
		t_failures++;
	}
	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_EQ(uepoll_close(efd), 0);
	close(p[0]);
	close(p[1]);
}

struct waiter {
	enum call call;
	int ep;
	int timeout;
	int tid;
	int started;
	int ret;
	uint64_t data;
};

static void *waiter_main(void *p)
{
	struct waiter *w = p;
	struct epoll_event ev[2];

	w->tid = t_gettid();
	__atomic_store_n(&w->started, 1, __ATOMIC_SEQ_CST);
	w->ret = do_wait(w->call, w->ep, ev, 2, w->timeout);
	if (w->ret > 0)
		w->data = ev[0].data.u64;
	return NULL;
}

/* A blocked waiter (infinite or huge timeout) is woken by an event. */
static void test_blocking(enum call c, int timeout, int kernel_source)
{
	struct waiter w = { .call = c, .timeout = timeout };
	int efd = ueventfd(0, EFD_NONBLOCK), p[2];
	struct epoll_event e = { .events = EPOLLIN };
	pthread_t th;

	w.ep = uepoll_create1(0);
	REQUIRE(w.ep >= 0 && efd >= 0);
	REQUIRE(pipe(p) == 0);
	e.data.u64 = 1;
	REQUIRE(uepoll_ctl(w.ep, EPOLL_CTL_ADD, efd, &e) == 0);
	e.data.u64 = 2;
	REQUIRE(uepoll_ctl(w.ep, EPOLL_CTL_ADD, p[0], &e) == 0);
	REQUIRE(pthread_create(&th, NULL, waiter_main, &w) == 0);
	while (!__atomic_load_n(&w.started, __ATOMIC_SEQ_CST))
		t_sleep_ms(1);
	CHECK(t_wait_sleeping(w.tid, 10000));
	t_sleep_ms(50);
	/* still waiting: negative/huge timeouts are not "return at once" */
	CHECK(t_wait_sleeping(w.tid, 10000));
	if (kernel_source)
		CHECK_EQ(write(p[1], "x", 1), 1);
	else
		CHECK_EQ(ueventfd_write(efd, 1), 0);
	if (!t_join_within(th, 10000)) {
		fprintf(stderr, "call %d timeout %d: waiter not woken within 10 s\n",
			c, timeout);
		t_failures++;
		/* wake it for real so it can be joined */
		ueventfd_write(efd, 1);
		write(p[1], "x", 1);
		pthread_join(th, NULL);
	}
	CHECK_EQ(w.ret, 1);
	CHECK_EQ(w.data, kernel_source ? 2 : 1);
	CHECK_EQ(uepoll_close(w.ep), 0);
	CHECK_EQ(uepoll_close(efd), 0);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	t_begin("t_timeout");
	t_watchdog(120);
	for (enum call c = C_WAIT; c <= C_PWAIT2; c++) {
		test_zero(c);
		test_positive(c, 1);
		test_positive(c, 120);
		test_blocking(c, -1, 0);
		test_blocking(c, -1, 1);
		if (c != C_PWAIT2) {
			test_blocking(c, -7, 0);
			test_blocking(c, INT_MAX, 0);
			test_blocking(c, INT_MAX, 1);
		}
	}
	return t_end();
}
