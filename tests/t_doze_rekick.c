/*
 * t_doze_rekick: an event that came while a batching wait dozed (its kick
 * held by the doze) wakes the instance's other sleeper when the doze ends
 * without collecting it (DOZE in src/bell.c, bell__doze_end: uncount, then
 * look and ring; models/doze.pml, mutants LOOK_FIRST and NO_REKICK).
 *
 * Thread D waits on the instance under a batching policy with a 10 s window
 * from the wait's start: it dozes at once.  The policy is set back to plain,
 * and thread S waits on the same instance: it sleeps in the kernel epoll,
 * counted as a sleeper.  A ueventfd is written: its item is queued, the
 * kick is held (D dozes), and one event is not enough to end D's batch, so
 * nothing rings and S sleeps on.  D is cancelled in its doze: its end is
 * the last chance to ring for the item, and S must then return it (within
 * 5 s; a held ring never made leaves S asleep with the event pending).
 * Nothing is decided by time otherwise.
 */
#include "testlib.h"

#include <stdatomic.h>
#include <unistd.h>

struct waiter {
	int ep;
	_Atomic int tid;
	int n;
	struct epoll_event ev[8];
};

static void *wait_main(void *arg)
{
	struct waiter *w = arg;

	atomic_store(&w->tid, t_gettid());
	w->n = uepoll_wait(w->ep, w->ev, 8, 20000);
	return NULL;
}

static int start(pthread_t *th, struct waiter *w)
{
	REQUIRE(pthread_create(th, NULL, wait_main, w) == 0);
	while (!atomic_load(&w->tid))
		t_sleep_ms(1);
	return t_wait_sleeping(atomic_load(&w->tid), 5000);
}

int main(void)
{
	struct uepoll_batch pol = { .min_wait_us = 10 * 1000 * 1000 },
			    none = { 0 };
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 7 };
	struct waiter d = { 0 }, s = { 0 };
	pthread_t dth, sth;
	uint64_t one = 1;
	void *res;
	int ep, e;

	t_begin("t_doze_rekick");
	t_watchdog(60);
	ep = uepoll_create2(0, UEPOLL_NOSPIN);
	e = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(ep >= 0 && e >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
	d.ep = s.ep = ep;

	REQUIRE(uepoll_batch(ep, &pol, NULL) == 0);
	REQUIRE(start(&dth, &d)); /* dozes: the window is 10 s */
	REQUIRE(uepoll_batch(ep, &none, NULL) == 0);
	REQUIRE(start(&sth, &s)); /* a plain sleep */

	CHECK_EQ(uepoll_write(e, &one, 8), 8);
	/* Held: D's batch wants more, S is not rung.  (Not asserted: that
	 * S still sleeps is the case this test is about, not a rule.) */
	REQUIRE(pthread_cancel(dth) == 0);
	REQUIRE(pthread_join(dth, &res) == 0);
	CHECK(res == PTHREAD_CANCELED);

	/* D's doze ended without collecting: S must get the event. */
	if (!t_join_within(sth, 5000)) {
		fprintf(stderr, "S still asleep 5 s after the doze ended, "
				"with the event pending\n");
		t_failures++;
		CHECK_EQ(uepoll_write(e, &one, 8), 8); /* let it go */
		REQUIRE(t_join_within(sth, 5000));
	} else {
		CHECK_EQ(s.n, 1);
		CHECK_EQ(s.ev[0].data.u64, 7);
	}
	uepoll_close(e);
	uepoll_close(ep);
	return t_end();
}
