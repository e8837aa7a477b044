/*
 * t_multiwait: many threads blocked in uepoll_wait() on one instance.
 * Ueventfds registered EPOLLONESHOT (re-armed by the consumer after reading)
 * or EPOLLET are written by producer threads; every event must be consumed
 * exactly once (a oneshot item never reaches two threads before it is
 * re-armed) and the sum of values read must equal the sum written.  Waiters
 * block with a long timeout: a lost wakeup leaves values unread, which the
 * final drain (bounded at 10 s) detects.
 */
#include "testlib.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#define NFD 8
#define NWAIT 6
#define NPROD 2

static int ep, stopfd;
static int fds[NFD];
static int busy[NFD];		/* oneshot item currently held by a consumer */
static uint64_t produced, consumed;
static int errors;

static int is_oneshot(int i)
{
	return i % 2 == 0;
}

static uint32_t mode(int i)
{
	return EPOLLIN | (is_oneshot(i) ? EPOLLONESHOT : EPOLLET);
}

static void *waiter_main(void *arg)
{
	uint64_t rng = (uint64_t)(uintptr_t)arg * 7919 + 17;
	struct epoll_event ev[4];

	for (;;) {
		int max = 1 + (int)(t_rand(&rng) % 4), n;

		n = uepoll_wait(ep, ev, max, 15000);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			__atomic_add_fetch(&errors, 1, __ATOMIC_SEQ_CST);
			return NULL;
		}
		if (n == 0)
			/* 15 s without an event: other waiters took them all
			 * (on a loaded machine), or a lost wakeup, which the
			 * final count tells; not a clock's verdict. */
			continue;
		for (int k = 0; k < n; k++) {
			uint64_t i = ev[k].data.u64, v;

			if (i == NFD)
				return NULL; /* stop signal (LT, never read) */
			if (is_oneshot((int)i) &&
			    __atomic_exchange_n(&busy[i], 1, __ATOMIC_SEQ_CST)) {
				fprintf(stderr, "oneshot fd %llu delivered twice\n",
					(unsigned long long)i);
				__atomic_add_fetch(&errors, 1, __ATOMIC_SEQ_CST);
			}
			if (ueventfd_read(fds[i], &v) == 0)
				__atomic_add_fetch(&consumed, v, __ATOMIC_SEQ_CST);
			else if (errno != EAGAIN)
				__atomic_add_fetch(&errors, 1, __ATOMIC_SEQ_CST);
			if (is_oneshot((int)i)) {
				struct epoll_event e = { .events = mode((int)i),
							 .data.u64 = i };

				__atomic_store_n(&busy[i], 0, __ATOMIC_SEQ_CST);
				if (uepoll_ctl(ep, EPOLL_CTL_MOD, fds[i], &e))
					__atomic_add_fetch(&errors, 1,
							   __ATOMIC_SEQ_CST);
			}
		}
	}
}

static int nwrites;

static void *producer_main(void *arg)
{
	uint64_t rng = (uint64_t)(uintptr_t)arg * 104729 + 3;

	for (int k = 0; k < nwrites; k++) {
		int i = (int)(t_rand(&rng) % NFD);
		uint64_t v = 1 + t_rand(&rng) % 3;

		if (ueventfd_write(fds[i], v) == 0)
			__atomic_add_fetch(&produced, v, __ATOMIC_SEQ_CST);
		else
			__atomic_add_fetch(&errors, 1, __ATOMIC_SEQ_CST);
		if (t_rand(&rng) % 8 == 0)
			sched_yield();
	}
	return NULL;
}

int main(void)
{
	pthread_t w[NWAIT], p[NPROD];
	uint64_t deadline;
	struct epoll_event e;

	t_begin("t_multiwait");
	t_watchdog(120);
	nwrites = (int)(60000 * t_scale());
	if (nwrites < 500)
		nwrites = 500;
	ep = uepoll_create1(0);
	stopfd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(ep >= 0 && stopfd >= 0);
	for (int i = 0; i < NFD; i++) {
		fds[i] = ueventfd(0, EFD_NONBLOCK);
		REQUIRE(fds[i] >= 0);
		e.events = mode(i);
		e.data.u64 = (uint64_t)i;
		REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &e) == 0);
	}
	e.events = EPOLLIN;
	e.data.u64 = NFD;
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, stopfd, &e) == 0);

	for (int i = 0; i < NWAIT; i++)
		REQUIRE(pthread_create(&w[i], NULL, waiter_main,
				       (void *)(uintptr_t)(i + 1)) == 0);
	for (int i = 0; i < NPROD; i++)
		REQUIRE(pthread_create(&p[i], NULL, producer_main,
				       (void *)(uintptr_t)(i + 1)) == 0);
	for (int i = 0; i < NPROD; i++)
		pthread_join(p[i], NULL);

	/* everything produced must get consumed by the blocked waiters */
	deadline = t_now_ns() + 10000000000ull;
	while (__atomic_load_n(&consumed, __ATOMIC_SEQ_CST) !=
	       __atomic_load_n(&produced, __ATOMIC_SEQ_CST) &&
	       t_now_ns() < deadline)
		t_sleep_ms(2);
	if (__atomic_load_n(&consumed, __ATOMIC_SEQ_CST) !=
	    __atomic_load_n(&produced, __ATOMIC_SEQ_CST)) {
		fprintf(stderr, "produced %llu consumed %llu: events left unconsumed\n",
			(unsigned long long)__atomic_load_n(&produced, __ATOMIC_SEQ_CST),
			(unsigned long long)__atomic_load_n(&consumed, __ATOMIC_SEQ_CST));
		for (int i = 0; i < NFD; i++) {
			uint64_t v = 0;

			if (ueventfd_read(fds[i], &v) == 0)
				fprintf(stderr, "  fd %d still held %llu\n", i,
					(unsigned long long)v);
		}
		t_failures++;
	}

	CHECK_EQ(ueventfd_write(stopfd, 1), 0);
	for (int i = 0; i < NWAIT; i++)
		pthread_join(w[i], NULL);
	CHECK_EQ(errors, 0);
	printf("produced %llu consumed %llu\n", (unsigned long long)produced,
	       (unsigned long long)consumed);

	for (int i = 0; i < NFD; i++)
		CHECK_EQ(uepoll_close(fds[i]), 0);
	CHECK_EQ(uepoll_close(stopfd), 0);
	CHECK_EQ(uepoll_close(ep), 0);
	return t_end();
}
