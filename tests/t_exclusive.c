/*
 * t_exclusive: EPOLLEXCLUSIVE wake-one.  N instances each have one thread
 * blocked in uepoll_wait(); one ueventfd is in all of them with
 * EPOLLEXCLUSIVE.  Each write must wake exactly one more waiter (the others
 * stay blocked); without EPOLLEXCLUSIVE one write wakes them all.  Wakeups
 * are counted; the only sleeps are a grace period that gives a wrongly woken
 * waiter the chance to show up.
 */
#include "testlib.h"

#include <pthread.h>
#include <unistd.h>

#define N 4

struct waiter {
	int ep;
	int tid;
	int started;
	int done;
	int n;
	uint64_t data;
};

static int woke;

static void *waiter_main(void *p)
{
	struct waiter *w = p;
	struct epoll_event ev[4];

	w->tid = t_gettid();
	__atomic_store_n(&w->started, 1, __ATOMIC_SEQ_CST);
	/* 15 s: far beyond any legitimate wakeup, catches a lost one */
	w->n = uepoll_wait(w->ep, ev, 4, 15000);
	if (w->n > 0)
		w->data = ev[0].data.u64;
	__atomic_store_n(&w->done, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&woke, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static int load(int *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

/* Wait until at least n waiters woke; 0 if that takes more than 10 s. */
static int wait_woke(int n)
{
	uint64_t deadline = t_now_ns() + 10000000000ull;

	while (load(&woke) < n)
		if (t_now_ns() > deadline)
			return 0;
		else
			t_sleep_ms(1);
	return 1;
}

static void run(int exclusive)
{
	struct waiter w[N];
	pthread_t th[N];
	int efd = ueventfd(0, EFD_NONBLOCK);

	REQUIRE(efd >= 0);
	__atomic_store_n(&woke, 0, __ATOMIC_SEQ_CST);
	memset(w, 0, sizeof(w));
	for (int i = 0; i < N; i++) {
		struct epoll_event ev = {
			.events = EPOLLIN | (exclusive ? EPOLLEXCLUSIVE : 0),
			.data.u64 = (uint64_t)i + 1,
		};

		w[i].ep = uepoll_create1(0);
		REQUIRE(w[i].ep >= 0);
		REQUIRE(uepoll_ctl(w[i].ep, EPOLL_CTL_ADD, efd, &ev) == 0);
	}
	for (int i = 0; i < N; i++)
		REQUIRE(pthread_create(&th[i], NULL, waiter_main, &w[i]) == 0);
	for (int i = 0; i < N; i++) {
		while (!load(&w[i].started))
			t_sleep_ms(1);
		CHECK(t_wait_sleeping(w[i].tid, 10000));
	}
	CHECK_EQ(load(&woke), 0);

	if (exclusive) {
		for (int k = 1; k <= N; k++) {
			CHECK_EQ(ueventfd_write(efd, 1), 0);
			CHECK(wait_woke(k));
			/* grace period for a wrong extra wakeup to show */
			t_sleep_ms(150);
			if (load(&woke) != k) {
				fprintf(stderr, "exclusive: after %d writes %d waiters woke\n",
					k, load(&woke));
				t_failures++;
			}
			/* the ones still waiting are still asleep */
			for (int i = 0; i < N; i++)
				if (!load(&w[i].done))
					CHECK(t_wait_sleeping(w[i].tid, 10000));
		}
	} else {
		CHECK_EQ(ueventfd_write(efd, 1), 0);
		CHECK(wait_woke(N));
	}
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(w[i].n, 1);
		CHECK_EQ(w[i].data, (uint64_t)i + 1);
		CHECK_EQ(uepoll_close(w[i].ep), 0);
	}
	CHECK_EQ(load(&woke), N);
	CHECK_EQ(uepoll_close(efd), 0);
}

/*
 * Exclusive wakeup with no one blocked: the item is queued in every
 * instance, so each of them reports it (as the kernel does).
 */
static void no_waiters(void)
{
	struct epoll_event ev[2];
	int ep[N], efd = ueventfd(0, EFD_NONBLOCK);

	REQUIRE(efd >= 0);
	for (int i = 0; i < N; i++) {
		struct epoll_event e = { .events = EPOLLIN | EPOLLEXCLUSIVE | EPOLLET,
					 .data.u64 = (uint64_t)i };

		ep[i] = uepoll_create1(0);
		REQUIRE(ep[i] >= 0);
		REQUIRE(uepoll_ctl(ep[i], EPOLL_CTL_ADD, efd, &e) == 0);
	}
	CHECK_EQ(ueventfd_write(efd, 1), 0);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(uepoll_wait(ep[i], ev, 2, 0), 1);
		CHECK_EQ(uepoll_close(ep[i]), 0);
	}
	CHECK_EQ(uepoll_close(efd), 0);
}

int main(void)
{
	t_begin("t_exclusive");
	t_watchdog(120);
	no_waiters();
	run(1);
	run(0);
	return t_end();
}
