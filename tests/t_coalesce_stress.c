/*
 * t_coalesce_stress: coalesced ueventfds under concurrency.
 *  - Many writers, one coalescing ueventfd, sleepers of each kind (blocked
 *    uepoll_read; instances' waiters, plain and EPOLLEXCLUSIVE; with and
 *    without a count threshold): the sum read equals the sum written, and
 *    the last writes arrive although nobody writes after them.
 *  - Close racing with held wakeups and with the timer delivering them,
 *    while an instance watches: no use after free (ASan/TSan), no fd left
 *    behind once the last delivery is over.
 *  - The same with UEVENTFD_HOLD_WRITES (the writes held too, shown by the
 *    timer thread or by the write that reaches the count).
 * Bounded by a watchdog; counts are checked, not durations.
 */
#include "testlib.h"

#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#define WRITERS 4

struct run {
	int fd;
	int eps[2];
	int neps;
	long per_writer;
	_Atomic uint64_t sum;
	_Atomic int done;
	_Atomic uint64_t wakeups;
};

static void *writer(void *arg)
{
	struct run *r = arg;

	for (long i = 0; i < r->per_writer; i++) {
		REQUIRE(ueventfd_write(r->fd, 1) == 0);
		if ((i & 255) == 0)
			sched_yield();
	}
	return NULL;
}

static uint64_t total(const struct run *r)
{
	return (uint64_t)WRITERS * (uint64_t)r->per_writer;
}

/* Blocking reads until everything written has been read. */
static void *blocking_reader(void *arg)
{
	struct run *r = arg;
	uint64_t v;

	while (atomic_load(&r->sum) < total(r)) {
		REQUIRE(uepoll_read(r->fd, &v, sizeof(v)) == sizeof(v));
		atomic_fetch_add(&r->sum, v);
		atomic_fetch_add(&r->wakeups, 1);
	}
	return NULL;
}

struct waiter_arg {
	struct run *r;
	int ep;
};

/* An instance's waiter: sleeps in uepoll_wait, drains without blocking. */
static void *instance_waiter(void *arg)
{
	struct waiter_arg *w = arg;
	struct run *r = w->r;
	struct epoll_event ev[2];
	uint64_t v;

	while (!atomic_load(&r->done)) {
		int n = uepoll_wait(w->ep, ev, 2, 50);

		REQUIRE(n >= 0);
		if (n == 0)
			continue;
		atomic_fetch_add(&r->wakeups, 1);
		while (uepoll_read(r->fd, &v, sizeof(v)) == sizeof(v))
			if (atomic_fetch_add(&r->sum, v) + v == total(r))
				atomic_store(&r->done, 1);
		REQUIRE(errno == EAGAIN);
	}
	return NULL;
}

/*
 * kind 0: a blocked uepoll_read; 1: one instance; 2: two instances with
 * EPOLLEXCLUSIVE (one waiter each).
 */
static void run_writers(int kind, uint32_t delay_us, uint64_t count,
			uint32_t flags, long per_writer)
{
	struct ueventfd_coalesce co = { .delay_us = delay_us,
					.flags = flags,
					.count = count };
	struct run r = { .per_writer = per_writer };
	struct waiter_arg wa[2];
	pthread_t w[WRITERS], rd[2];
	int nrd = 0;

	r.fd = ueventfd(0, kind == 0 ? 0 : EFD_NONBLOCK);
	REQUIRE(r.fd >= 0);
	REQUIRE(ueventfd_coalesce(r.fd, &co, NULL) == 0);
	if (kind == 0) {
		REQUIRE(pthread_create(&rd[nrd++], NULL, blocking_reader, &r) == 0);
	} else {
		r.neps = kind == 1 ? 1 : 2;
		for (int i = 0; i < r.neps; i++) {
			struct epoll_event ev = {
				.events = EPOLLIN | (kind == 2 ? EPOLLEXCLUSIVE : 0),
			};

			r.eps[i] = uepoll_create1(0);
			REQUIRE(r.eps[i] >= 0);
			REQUIRE(uepoll_ctl(r.eps[i], EPOLL_CTL_ADD, r.fd, &ev) == 0);
			wa[i] = (struct waiter_arg){ &r, r.eps[i] };
			REQUIRE(pthread_create(&rd[nrd++], NULL, instance_waiter,
					       &wa[i]) == 0);
		}
	}
	for (int i = 0; i < WRITERS; i++)
		REQUIRE(pthread_create(&w[i], NULL, writer, &r) == 0);
	for (int i = 0; i < WRITERS; i++)
		REQUIRE(pthread_join(w[i], NULL) == 0);
	/* Nobody writes any more: the held wakeup must still come. */
	for (int i = 0; i < nrd; i++)
		CHECK(t_join_within(rd[i], 10000));
	CHECK_EQ(atomic_load(&r.sum), total(&r));
	CHECK(atomic_load(&r.wakeups) >= 1);
	printf("kind %d delay %u count %llu flags %u: %llu writes, %llu "
	       "wakeups\n",
	       kind, delay_us, (unsigned long long)count, flags,
	       (unsigned long long)total(&r),
	       (unsigned long long)atomic_load(&r.wakeups));
	for (int i = 0; i < r.neps; i++)
		CHECK_EQ(uepoll_close(r.eps[i]), 0);
	CHECK_EQ(uepoll_close(r.fd), 0);
}

/* Close races with held wakeups and their delivery by the timer thread. */
static void run_close_race(long iters)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	uint64_t seed = t_seed(7);
	int ep = uepoll_create1(0);

	REQUIRE(ep >= 0);
	for (long i = 0; i < iters; i++) {
		struct ueventfd_coalesce co = {
			.delay_us = 1 + (uint32_t)(t_rand(&seed) % 300),
			.flags = (i & 2) ? UEVENTFD_HOLD_WRITES : 0,
		};
		int u = ueventfd(0, EFD_NONBLOCK);
		long spin = (long)(t_rand(&seed) % 400);
		uint64_t t0;

		REQUIRE(u >= 0);
		REQUIRE(ueventfd_coalesce(u, &co, NULL) == 0);
		if (i & 1)
			REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, u, &ev) == 0);
		/* Clears the mirror: the next write holds its arming. */
		CHECK_ERR(ueventfd_read(u, &(eventfd_t){ 0 }), EAGAIN);
		CHECK_ERR(ueventfd_read(u, &(eventfd_t){ 0 }), EAGAIN);
		CHECK_EQ(ueventfd_write(u, 1), 0);
		/* Close before, during or after the delivery. */
		t0 = t_now_ns();
		while (t_now_ns() - t0 < (uint64_t)spin * 1000u)
			;
		CHECK_EQ(uepoll_close(u), 0);
		if ((i & 63) == 0) {
			struct epoll_event out[4];

			while (uepoll_wait(ep, out, 4, 0) > 0)
				;
		}
	}
	CHECK_EQ(uepoll_close(ep), 0);
}

int main(void)
{
	double s = t_scale();
	long n = (long)(100000 * s) + 1;
	int fds0;
	uint64_t t0;

	t_begin("t_coalesce_stress");
	t_watchdog(240);
	fds0 = t_count_fds();
	run_writers(0, 1000, 0, 0, n);
	run_writers(1, 1000, 0, 0, n);
	run_writers(1, UEVENTFD_COALESCE_MAX_US, 64, 0, n);
	run_writers(2, 500, 0, 0, n);
	run_writers(0, 200, 16, 0, n);
	run_writers(0, 1000, 0, UEVENTFD_HOLD_WRITES, n);
	run_writers(1, 500, 0, UEVENTFD_HOLD_WRITES, n);
	run_writers(1, UEVENTFD_COALESCE_MAX_US, 64, UEVENTFD_HOLD_WRITES, n);
	run_writers(2, 300, 0, UEVENTFD_HOLD_WRITES, n);
	run_close_race((long)(3000 * s) + 1);
	/* A delivery in progress holds its ueventfd (and its kernel fd) until
	 * it is over: give the last one time to finish (loose bound). */
	t0 = t_now_ns();
	while (t_count_fds() != fds0 && t_now_ns() - t0 < 5000000000u)
		t_sleep_ms(10);
	return t_end();
}
