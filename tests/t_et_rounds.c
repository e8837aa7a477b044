/*
 * t_et_rounds: the pattern of the kernel's own lost-wakeup regressions
 * (many edge-triggered sources, as many waiters, one instance).  Each round
 * writes 1 to every source once; the waiters (maxevents=1) read what they
 * get.  A round must complete, every edge delivered exactly once, within a
 * generous deadline: it catches a lost wakeup, not slowness.
 */
#include "testlib.h"

#include <pthread.h>
#include <unistd.h>

#define NSRC 16
#define NWAIT 16

static int ep, src[NSRC + 1]; /* src[NSRC]: the stop source (level) */
static unsigned got_round[NSRC];
static _Atomic unsigned delivered, empty, errors;
static _Atomic int round_no;

static void *waiter_main(void *arg)
{
	struct epoll_event ev;
	uint64_t v;

	(void)arg;
	for (;;) {
		int n = uepoll_wait(ep, &ev, 1, -1);

		if (n < 0) {
			if (errno != EINTR)
				errors++;
			continue;
		}
		if (n != 1) {
			errors++;
			continue;
		}
		if (ev.data.u64 == NSRC)
			return NULL;
		if (ueventfd_read(src[ev.data.u64], &v) == 0 && v == 1) {
			/* each source fires once per round */
			if (__atomic_exchange_n(&got_round[ev.data.u64],
						(unsigned)round_no,
						__ATOMIC_SEQ_CST) == (unsigned)round_no)
				errors++;
			delivered++;
		} else {
			empty++; /* an edge delivered twice */
		}
	}
}

int main(void)
{
	int rounds = (int)(400 * t_scale());
	pthread_t w[NWAIT];
	struct epoll_event ev;
	int late = 0;

	t_begin("t_et_rounds");
	t_watchdog(200);
	if (rounds < 50)
		rounds = 50;
	ep = uepoll_create1(0);
	REQUIRE(ep >= 0);
	for (int i = 0; i <= NSRC; i++) {
		src[i] = ueventfd(0, EFD_NONBLOCK);
		REQUIRE(src[i] >= 0);
		ev.events = EPOLLIN | (i < NSRC ? EPOLLET : 0);
		ev.data.u64 = (uint64_t)i;
		REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, src[i], &ev) == 0);
	}
	for (int i = 0; i < NWAIT; i++)
		REQUIRE(pthread_create(&w[i], NULL, waiter_main, NULL) == 0);

	for (int r = 1; r <= rounds && !late; r++) {
		uint64_t deadline = t_now_ns() + 10000000000ull;
		unsigned want = (unsigned)r * NSRC;

		round_no = r;
		for (int i = 0; i < NSRC; i++)
			CHECK_EQ(ueventfd_write(src[i], 1), 0);
		while (delivered < want) {
			if (t_now_ns() > deadline) {
				fprintf(stderr, "round %d: %u of %d events after 10 s: lost wakeup\n",
					r, delivered - (want - NSRC), NSRC);
				late = 1;
				break;
			}
			sched_yield();
		}
	}
	CHECK_EQ(late, 0);
	CHECK_EQ(ueventfd_write(src[NSRC], 1), 0);
	for (int i = 0; i < NWAIT; i++)
		pthread_join(w[i], NULL);
	CHECK_EQ(delivered, (unsigned)rounds * NSRC);
	CHECK_EQ(empty, 0);
	CHECK_EQ(errors, 0);
	printf("%d rounds, %u events\n", rounds, (unsigned)delivered);
	for (int i = 0; i <= NSRC; i++)
		CHECK_EQ(uepoll_close(src[i]), 0);
	CHECK_EQ(uepoll_close(ep), 0);
	return t_end();
}
