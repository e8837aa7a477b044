/*
 * t_hold_writes: ueventfd_coalesce() with UEVENTFD_HOLD_WRITES (uepoll.h):
 * the writes themselves are held and shown as one batch.
 *  - errno: an unknown flag, the flag without a delay, the flag on a
 *    semaphore ueventfd are EINVAL; `old` reports the flag.
 *  - Held writes are not visible before they are shown: a non-blocking
 *    read answers EAGAIN and a wait with timeout 0 finds nothing.  (Only
 *    checked when the check itself came within the delay of the write; the
 *    delay is the maximum, 100 ms, so that practically always holds.)
 *  - The write that brings the pending value to `count` shows it at once
 *    (no clock involved).
 *  - A sleeper blocked in uepoll_read, in uepoll_wait on an instance, or in
 *    poll() on the fd gets the whole batch in one wakeup, and the last write
 *    of a burst is shown (bounds are loose: seconds).
 *  - A subscriber that drains the counter while a publisher writes nonstop
 *    gets at most one batch per delay: its successful reads are bounded by
 *    the shows the timer can make (one per delay after the first, a bound
 *    that a slow machine only makes smaller), and every write is read.
 *  - Room counts held writes: a non-blocking write that would take the
 *    counter plus the pending value past the maximum fails with EAGAIN.
 *  - A change of setting and close show the pending value at once.
 */
#include "testlib.h"

#include <poll.h>
#include <stdatomic.h>
#include <unistd.h>

#define MAXV UINT64_C(0xfffffffffffffffe)

static int set_hold(int fd, uint32_t delay_us, uint64_t count)
{
	struct ueventfd_coalesce c = { .delay_us = delay_us,
				       .flags = UEVENTFD_HOLD_WRITES,
				       .count = count };

	return ueventfd_coalesce(fd, &c, NULL);
}

static void test_errors(void)
{
	struct ueventfd_coalesce c = { .delay_us = 1000 }, old;
	int u = ueventfd(0, 0), sem = ueventfd(0, EFD_SEMAPHORE);

	REQUIRE(u >= 0 && sem >= 0);
	c.flags = 0x2;
	CHECK_ERR(ueventfd_coalesce(u, &c, NULL), EINVAL);
	c.flags = UEVENTFD_HOLD_WRITES | 0x2;
	CHECK_ERR(ueventfd_coalesce(u, &c, NULL), EINVAL);
	c.flags = UEVENTFD_HOLD_WRITES;
	c.delay_us = 0;
	CHECK_ERR(ueventfd_coalesce(u, &c, NULL), EINVAL);
	c.delay_us = 1000;
	CHECK_ERR(ueventfd_coalesce(sem, &c, NULL), EINVAL);
	/* Refused settings changed nothing. */
	CHECK_EQ(ueventfd_coalesce(u, NULL, &old), 0);
	CHECK(old.delay_us == 0 && old.flags == 0 && old.count == 0);

	c.count = 7;
	CHECK_EQ(ueventfd_coalesce(u, &c, NULL), 0);
	memset(&old, 0, sizeof(old));
	CHECK_EQ(ueventfd_coalesce(u, NULL, &old), 0);
	CHECK(old.delay_us == 1000 && old.flags == UEVENTFD_HOLD_WRITES &&
	      old.count == 7);
	/* Back to plain: the flag goes with the setting. */
	c = (struct ueventfd_coalesce){ 0 };
	CHECK_EQ(ueventfd_coalesce(u, &c, &old), 0);
	CHECK(old.flags == UEVENTFD_HOLD_WRITES);
	CHECK_EQ(ueventfd_coalesce(u, NULL, &old), 0);
	CHECK(old.flags == 0 && old.delay_us == 0);
	CHECK_EQ(uepoll_close(u), 0);
	CHECK_EQ(uepoll_close(sem), 0);
}

/* Held: invisible until shown (checked only within the delay). */
static void test_not_visible(void)
{
	int u = ueventfd(0, EFD_NONBLOCK), ep = uepoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct pollfd p;
	eventfd_t v = 0;
	uint64_t t0, elapsed;
	int r1, r2, r3;

	REQUIRE(u >= 0 && ep >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, u, &ev) == 0);
	REQUIRE(set_hold(u, UEVENTFD_COALESCE_MAX_US, 0) == 0);
	t0 = t_now_ns();
	CHECK_EQ(ueventfd_write(u, 2), 0);
	CHECK_EQ(ueventfd_write(u, 3), 0);
	r1 = ueventfd_read(u, &v);
	r2 = uepoll_wait(ep, &out, 1, 0);
	p = (struct pollfd){ .fd = u, .events = POLLIN };
	r3 = poll(&p, 1, 0);
	elapsed = t_now_ns() - t0;
	if (elapsed < (uint64_t)UEVENTFD_COALESCE_MAX_US * 1000u) {
		CHECK_EQ(r1, -1);
		CHECK_EQ(r2, 0);
		CHECK_EQ(r3, 0);
	} else {
		fprintf(stderr, "t_hold_writes: %.0f ms between the write and "
				"the checks: visibility not judged\n",
			(double)elapsed / 1e6);
	}
	/* The batch comes whole, to a blocking wait. */
	CHECK_EQ(uepoll_wait(ep, &out, 1, 10000), 1);
	CHECK_EQ(ueventfd_read(u, &v), 0);
	CHECK_EQ(v, 5);
	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_EQ(uepoll_close(u), 0);
}

/* The write that reaches `count` shows the batch itself. */
static void test_count(void)
{
	int u = ueventfd(0, EFD_NONBLOCK);
	eventfd_t v = 0;

	REQUIRE(u >= 0);
	REQUIRE(set_hold(u, UEVENTFD_COALESCE_MAX_US, 10) == 0);
	CHECK_EQ(ueventfd_write(u, 4), 0);
	CHECK_EQ(ueventfd_write(u, 5), 0);
	CHECK_EQ(ueventfd_write(u, 1), 0); /* 10: shown now */
	CHECK_EQ(ueventfd_read(u, &v), 0);
	CHECK_EQ(v, 10);
	CHECK_EQ(uepoll_close(u), 0);
}

struct sleeper {
	int fd, ep, kind, tid, r;
	uint64_t got;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;
	struct epoll_event ev;
	struct pollfd p = { .fd = s->fd, .events = POLLIN };

	__atomic_store_n(&s->tid, t_gettid(), __ATOMIC_RELEASE);
	switch (s->kind) {
	case 0: /* blocked in uepoll_read */
		s->r = (int)uepoll_read(s->fd, &s->got, sizeof(s->got));
		break;
	case 1: /* blocked in uepoll_wait, then reads what it was told of */
		s->r = uepoll_wait(s->ep, &ev, 1, 10000);
		if (s->r == 1 && ueventfd_read(s->fd, &s->got) != 0)
			s->r = -1;
		break;
	default: /* poll() on the fd, then reads */
		s->r = poll(&p, 1, 10000);
		if (s->r == 1 && ueventfd_read(s->fd, &s->got) != 0)
			s->r = -1;
		break;
	}
	return NULL;
}

/* Each kind of sleeper gets a burst of writes as one batch, the last
 * write included. */
static void test_sleepers(void)
{
	for (int kind = 0; kind < 3; kind++) {
		struct sleeper s = { .kind = kind };
		struct epoll_event ev = { .events = EPOLLIN };
		pthread_t th;

		s.fd = ueventfd(0, 0);
		s.ep = uepoll_create1(0);
		REQUIRE(s.fd >= 0 && s.ep >= 0);
		REQUIRE(uepoll_ctl(s.ep, EPOLL_CTL_ADD, s.fd, &ev) == 0);
		REQUIRE(set_hold(s.fd, 20000, 0) == 0);
		REQUIRE(pthread_create(&th, NULL, sleeper_main, &s) == 0);
		while (!__atomic_load_n(&s.tid, __ATOMIC_ACQUIRE))
			t_sleep_ms(1);
		REQUIRE(t_wait_sleeping(s.tid, 5000));
		for (int i = 0; i < 100; i++)
			CHECK_EQ(ueventfd_write(s.fd, 1), 0);
		CHECK(t_join_within(th, 10000));
		CHECK_EQ(s.r, kind == 0 ? 8 : 1);
		CHECK_EQ(s.got, 100);
		CHECK_EQ(uepoll_close(s.ep), 0);
		CHECK_EQ(uepoll_close(s.fd), 0);
	}
}

struct pub {
	int fd;
	_Atomic int stop;
	uint64_t writes;
};

static void *publisher(void *arg)
{
	struct pub *p = arg;

	while (!atomic_load_explicit(&p->stop, memory_order_relaxed)) {
		if (ueventfd_write(p->fd, 1) != 0)
			break;
		p->writes++;
	}
	return NULL;
}

/* A subscriber draining against a nonstop publisher gets at most one batch
 * per delay. */
static void test_subscriber(void)
{
	const uint32_t delay_us = 20000;
	struct pub p = { 0 };
	struct epoll_event ev = { .events = EPOLLIN }, out;
	int ep = uepoll_create1(0);
	uint64_t got = 0, reads = 0, t0, ms;
	eventfd_t v;
	pthread_t th;

	p.fd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(p.fd >= 0 && ep >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, p.fd, &ev) == 0);
	REQUIRE(set_hold(p.fd, delay_us, 0) == 0);
	t0 = t_now_ns();
	REQUIRE(pthread_create(&th, NULL, publisher, &p) == 0);
	while (t_now_ns() - t0 < (uint64_t)(300e6 * t_scale())) {
		if (uepoll_wait(ep, &out, 1, 100) != 1)
			continue;
		/* Drain, as a subscriber does: read until EAGAIN. */
		while (ueventfd_read(p.fd, &v) == 0) {
			got += v;
			reads++;
		}
	}
	atomic_store(&p.stop, 1);
	CHECK(t_join_within(th, 5000));
	ms = (t_now_ns() - t0) / 1000000u;
	/* One show per delay at most, after the first. */
	CHECK(reads <= ms / (delay_us / 1000u) + 2);
	CHECK(reads >= 1);
	/* Every write is shown: the last batch within the delay. */
	for (int i = 0; i < 100 && got < p.writes; i++) {
		if (uepoll_wait(ep, &out, 1, 100) == 1)
			while (ueventfd_read(p.fd, &v) == 0)
				got += v;
	}
	CHECK_EQ(got, p.writes);
	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_EQ(uepoll_close(p.fd), 0);
}

/* Room is judged with the pending value. */
static void test_room(void)
{
	int u = ueventfd(0, EFD_NONBLOCK);
	struct ueventfd_coalesce plain = { 0 };
	eventfd_t v = 0;

	REQUIRE(u >= 0);
	REQUIRE(set_hold(u, UEVENTFD_COALESCE_MAX_US, 0) == 0);
	CHECK_EQ(ueventfd_write(u, MAXV - 1), 0);
	CHECK_EQ(ueventfd_write(u, 1), 0); /* exactly full */
	CHECK_ERR(ueventfd_write(u, 1), EAGAIN);
	/* A change of setting shows the pending value at once. */
	CHECK_EQ(ueventfd_coalesce(u, &plain, NULL), 0);
	CHECK_EQ(ueventfd_read(u, &v), 0);
	CHECK_EQ(v, MAXV);
	CHECK_EQ(uepoll_close(u), 0);
}

/* Close with a pending value: nothing leaks, nothing runs on after. */
static void test_close_pending(void)
{
	for (int i = 0; i < 50; i++) {
		int u = ueventfd(0, EFD_NONBLOCK);

		REQUIRE(u >= 0);
		REQUIRE(set_hold(u, 1000 + 1000 * (i % 3), 0) == 0);
		CHECK_EQ(ueventfd_write(u, 1), 0);
		if (i % 2)
			t_sleep_ms(1);
		CHECK_EQ(uepoll_close(u), 0);
	}
}

int main(void)
{
	t_begin("t_hold_writes");
	t_watchdog(120);
	unsetenv("UEPOLL_EVENTFD_COALESCE");
	test_errors();
	test_not_visible();
	test_count();
	test_sleepers();
	test_subscriber();
	test_room();
	test_close_pending();
	return t_end();
}
