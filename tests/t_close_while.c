/*
 * t_close_while: closing things that are in use.
 *  - uepoll_close() of a ueventfd removes it from every instance watching it
 *    (no more events; ctl on the dead number gives EBADF, as with the kernel)
 *  - closing an instance while another thread is blocked in uepoll_wait() on
 *    it does not crash; that thread returns on its timeout or when woken
 *  - closing an instance nested in another removes it from the outer
 *  - uepoll_close() of a kernel fd closes it; double close gives EBADF
 *  - a plain close() is reclaimed when the number is reused (uepoll.h)
 */
#include "testlib.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

static int add(int (*ctl)(int, int, int, struct epoll_event *), int ep, int fd,
	       uint64_t data)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = data };

	return ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static void test_close_eventfd(void)
{
	struct epoll_event ev[4];
	int ka = epoll_create1(0), kb = epoll_create1(0), kfd = eventfd(1, 0);
	int ua = uepoll_create1(0), ub = uepoll_create1(0), ufd = ueventfd(1, 0);
	int other = ueventfd(1, 0);
	int rk, ru, ek, eu;

	REQUIRE(ka >= 0 && kb >= 0 && kfd >= 0);
	REQUIRE(ua >= 0 && ub >= 0 && ufd >= 0 && other >= 0);
	CHECK_EQ(add(epoll_ctl, ka, kfd, 1), 0);
	CHECK_EQ(add(epoll_ctl, kb, kfd, 1), 0);
	CHECK_EQ(add(uepoll_ctl, ua, ufd, 1), 0);
	CHECK_EQ(add(uepoll_ctl, ub, ufd, 1), 0);
	CHECK_EQ(add(uepoll_ctl, ub, other, 2), 0);
	CHECK_EQ(uepoll_wait(ua, ev, 4, 0), 1);
	CHECK_EQ(uepoll_wait(ub, ev, 4, 0), 2);

	close(kfd);
	CHECK_EQ(uepoll_close(ufd), 0);
	CHECK_EQ(epoll_wait(ka, ev, 4, 0), 0);
	CHECK_EQ(uepoll_wait(ua, ev, 4, 0), 0);
	CHECK_EQ(uepoll_wait(ub, ev, 4, 0), 1);
	CHECK_EQ(ev[0].data.u64, 2);

	/* the number is gone: EBADF like the kernel */
	errno = 0;
	rk = epoll_ctl(ka, EPOLL_CTL_DEL, kfd, NULL);
	ek = errno;
	errno = 0;
	ru = uepoll_ctl(ua, EPOLL_CTL_DEL, ufd, NULL);
	eu = errno;
	CHECK_EQ(ru, rk);
	CHECK_EQ(eu, ek);
	CHECK_EQ(eu, EBADF);
	CHECK_ERR(add(uepoll_ctl, ua, ufd, 1), EBADF);
	CHECK_ERR(ueventfd_write(ufd, 1), EBADF);

	/* a new ueventfd that reuses the number starts with no registration */
	{
		int again = ueventfd(0, 0);

		REQUIRE(again >= 0);
		if (again == ufd) {
			CHECK_EQ(ueventfd_write(again, 1), 0);
			CHECK_EQ(uepoll_wait(ua, ev, 4, 0), 0);
			CHECK_ERR(uepoll_ctl(ua, EPOLL_CTL_DEL, again, NULL), ENOENT);
			CHECK_EQ(add(uepoll_ctl, ua, again, 3), 0);
			CHECK_EQ(uepoll_wait(ua, ev, 4, 0), 1);
			CHECK_EQ(ev[0].data.u64, 3);
		}
		CHECK_EQ(uepoll_close(again), 0);
	}

	close(ka);
	close(kb);
	CHECK_EQ(uepoll_close(ua), 0);
	CHECK_EQ(uepoll_close(ub), 0);
	CHECK_EQ(uepoll_close(other), 0);
}

struct waiter {
	int ep;
	int tid;
	int started;
	int n;
	int err;
};

static void *waiter_main(void *p)
{
	struct waiter *w = p;
	struct epoll_event ev[4];

	w->tid = t_gettid();
	__atomic_store_n(&w->started, 1, __ATOMIC_SEQ_CST);
	errno = 0;
	w->n = uepoll_wait(w->ep, ev, 4, 1000);
	w->err = errno;
	return NULL;
}

static void start_waiter(struct waiter *w, pthread_t *th)
{
	REQUIRE(pthread_create(th, NULL, waiter_main, w) == 0);
	while (!__atomic_load_n(&w->started, __ATOMIC_SEQ_CST))
		t_sleep_ms(1);
	CHECK(t_wait_sleeping(w->tid, 10000));
}

static void test_close_instance_while_waiting(void)
{
	for (int variant = 0; variant < 3; variant++) {
		struct waiter w = { 0 };
		pthread_t th;
		int efd = ueventfd(0, EFD_NONBLOCK), p[2];

		REQUIRE(efd >= 0);
		REQUIRE(pipe(p) == 0);
		w.ep = uepoll_create1(0);
		REQUIRE(w.ep >= 0);
		CHECK_EQ(add(uepoll_ctl, w.ep, efd, 1), 0);
		CHECK_EQ(add(uepoll_ctl, w.ep, p[0], 2), 0);
		start_waiter(&w, &th);
		CHECK_EQ(uepoll_close(w.ep), 0);
		if (variant == 1) {
			/* events on former members must not crash anything */
			CHECK_EQ(ueventfd_write(efd, 1), 0);
			CHECK_EQ(write(p[1], "x", 1), 1);
		} else if (variant == 2) {
			/* the number gets reused by new objects meanwhile */
			int a = uepoll_create1(0), b = ueventfd(1, 0);

			CHECK(a >= 0 && b >= 0);
			CHECK_EQ(ueventfd_write(efd, 1), 0);
			CHECK_EQ(uepoll_close(a), 0);
			CHECK_EQ(uepoll_close(b), 0);
		}
		/* returns within its timeout (+ a loose margin), any result */
		REQUIRE(t_join_within(th, 10000));
		CHECK(w.n >= -1 && w.n <= 2);
		if (w.n < 0)
			CHECK(w.err == EBADF || w.err == EINVAL);
		/* the ueventfd lives on and works */
		{
			uint64_t v;
			int ep2 = uepoll_create1(0);
			struct epoll_event ev[2];

			REQUIRE(ep2 >= 0);
			CHECK_EQ(ueventfd_write(efd, 1), 0);
			CHECK_EQ(ueventfd_read(efd, &v), 0);
			CHECK_EQ(add(uepoll_ctl, ep2, efd, 5), 0);
			CHECK_EQ(ueventfd_write(efd, 1), 0);
			CHECK_EQ(uepoll_wait(ep2, ev, 2, 0), 1);
			CHECK_EQ(uepoll_close(ep2), 0);
		}
		CHECK_EQ(uepoll_close(efd), 0);
		close(p[0]);
		close(p[1]);
	}
}

/* A waiter blocked on an instance whose ueventfd is closed: no event. */
static void test_close_member_while_waiting(void)
{
	struct waiter w = { 0 };
	pthread_t th;
	int efd = ueventfd(0, EFD_NONBLOCK);

	REQUIRE(efd >= 0);
	w.ep = uepoll_create1(0);
	REQUIRE(w.ep >= 0);
	CHECK_EQ(add(uepoll_ctl, w.ep, efd, 1), 0);
	start_waiter(&w, &th);
	CHECK_EQ(uepoll_close(efd), 0);
	REQUIRE(t_join_within(th, 10000));
	CHECK_EQ(w.n, 0);
	CHECK_EQ(uepoll_close(w.ep), 0);
}

static void test_close_nested(void)
{
	struct epoll_event ev[4];
	int outer = uepoll_create1(0), inner = uepoll_create1(0);
	int efd = ueventfd(1, 0);

	REQUIRE(outer >= 0 && inner >= 0 && efd >= 0);
	CHECK_EQ(add(uepoll_ctl, inner, efd, 1), 0);
	CHECK_EQ(add(uepoll_ctl, outer, inner, 2), 0);
	CHECK_EQ(add(uepoll_ctl, outer, efd, 3), 0);
	CHECK_EQ(uepoll_wait(outer, ev, 4, 0), 2);
	CHECK_EQ(uepoll_close(inner), 0);
	CHECK_EQ(uepoll_wait(outer, ev, 4, 0), 1);
	CHECK_EQ(ev[0].data.u64, 3);
	CHECK_EQ(uepoll_close(outer), 0);
	CHECK_EQ(uepoll_close(efd), 0);
}

static void test_close_kernel_and_double(void)
{
	int p[2], ep, efd;

	REQUIRE(pipe(p) == 0);
	CHECK_EQ(uepoll_close(p[0]), 0);
	CHECK(fcntl(p[0], F_GETFD) == -1 && errno == EBADF);
	CHECK_ERR(uepoll_close(p[0]), EBADF);
	CHECK_EQ(uepoll_close(p[1]), 0);

	ep = uepoll_create1(0);
	efd = ueventfd(0, 0);
	REQUIRE(ep >= 0 && efd >= 0);
	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_ERR(uepoll_close(ep), EBADF);
	CHECK_EQ(uepoll_close(efd), 0);
	CHECK_ERR(uepoll_close(efd), EBADF);
	/* the kernel fds behind them are really gone */
	CHECK(fcntl(ep, F_GETFD) == -1 && errno == EBADF);
	CHECK(fcntl(efd, F_GETFD) == -1 && errno == EBADF);
	CHECK_ERR(uepoll_close(-1), EBADF);
	CHECK_ERR(uepoll_close(1 << 20), EBADF);
}

/*
 * uepoll.h: a plain close() of a ueventfd or instance leaks the userspace
 * object until the number is reused by ueventfd()/uepoll_create1(), which
 * reclaims it.  After the reclaim the new object must be fresh, the old one
 * gone from every instance, and nothing leaked (t_end counts fds).
 */
static void test_plain_close_reclaim(void)
{
	struct epoll_event ev[4];
	int ep = uepoll_create1(0), efd = ueventfd(5, 0), again;
	uint64_t v;

	REQUIRE(ep >= 0 && efd >= 0);
	CHECK_EQ(add(uepoll_ctl, ep, efd, 1), 0);
	CHECK_EQ(uepoll_wait(ep, ev, 4, 0), 1);
	CHECK_EQ(close(efd), 0);	/* not uepoll_close */
	again = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(again >= 0);
	if (again == efd) {
		/* fresh counter, and the old registration is gone */
		CHECK_ERR(ueventfd_read(again, &v), EAGAIN);
		CHECK_EQ(uepoll_wait(ep, ev, 4, 0), 0);
		CHECK_ERR(uepoll_ctl(ep, EPOLL_CTL_DEL, again, NULL), ENOENT);
		CHECK_EQ(add(uepoll_ctl, ep, again, 2), 0);
		CHECK_EQ(ueventfd_write(again, 1), 0);
		CHECK_EQ(uepoll_wait(ep, ev, 4, 0), 1);
		CHECK_EQ(ev[0].data.u64, 2);
	} else {
		printf("note: fd number not reused, reclaim not exercised\n");
	}
	CHECK_EQ(uepoll_close(again), 0);

	/* the same for an instance: its doorbell must not leak either */
	{
		int old = uepoll_create1(0), e2 = ueventfd(1, 0), fresh;

		REQUIRE(old >= 0 && e2 >= 0);
		CHECK_EQ(add(uepoll_ctl, old, e2, 3), 0);
		CHECK_EQ(close(old), 0);
		fresh = uepoll_create1(0);
		REQUIRE(fresh >= 0);
		if (fresh == old) {
			CHECK_EQ(uepoll_wait(fresh, ev, 4, 0), 0);
			CHECK_ERR(uepoll_ctl(fresh, EPOLL_CTL_DEL, e2, NULL), ENOENT);
			CHECK_EQ(add(uepoll_ctl, fresh, e2, 4), 0);
			CHECK_EQ(uepoll_wait(fresh, ev, 4, 0), 1);
			CHECK_EQ(ev[0].data.u64, 4);
		} else {
			printf("note: instance fd number not reused, reclaim not exercised\n");
		}
		CHECK_EQ(uepoll_close(fresh), 0);
		/* the ueventfd still works on its own */
		CHECK_EQ(ueventfd_read(e2, &v), 0);
		CHECK_EQ(v, 1);
		CHECK_EQ(uepoll_close(e2), 0);
	}
	CHECK_EQ(uepoll_close(ep), 0);
}

int main(void)
{
	t_begin("t_close_while");
	t_watchdog(120);
	test_close_eventfd();
	test_close_instance_while_waiting();
	test_close_member_while_waiting();
	test_close_nested();
	test_close_kernel_and_double();
	test_plain_close_reclaim();
	return t_end();
}
