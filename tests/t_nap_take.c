/*
 * t_nap_take: a napper takes `napped` (stores 0) before its re-check of the
 * queue (NAP in src/bell.c, bell__nap_begin; models/doorbell.pml,
 * MUTANT_NAP_NO_TAKE).  A ring that saw a napper counted may set `napped`
 * after that napper has already left (its re-check found the item, and its
 * bell__nap_end gave `napped` back): `napped` then says "a napper was woken
 * and will look" with nobody to look, and every later ring for a napper
 * stops at it.  The next napper's take is what clears it.
 *
 * The model's counterexample, forced with two hardware watchpoints
 * (tests/watchpoint.h; the windows have no system call):
 *  1. thread A, a uepoll_wait on an empty UEPOLL_NOPOLL instance (a nap),
 *     traps right after its count in the bell's `nappers` (bell__nap_begin),
 *     before its re-check;
 *  2. the main thread writes a ueventfd the instance watches: the item is
 *     queued, and the ring (bell__kick_slow) traps right after its load of
 *     `nappers`, which saw A;
 *  3. A goes on: its re-check finds the item, its bell__nap_end gives
 *     `napped` back, and its wait returns the event;
 *  4. the ring goes on: it finds `napped` 0, sets it to 1 and wakes nobody;
 *  5. A reads the counter and waits again (a nap, with no trap now), and
 *     the main thread writes again once A sleeps: that ring must wake A.
 * If A's second nap does not take `napped`, the ring finds it 1 and makes
 * no wake: A naps with the event pending, and does not return (a lost
 * wakeup: 10 s).  Skipped (77) where perf breakpoints with sigtrap are not
 * allowed.  Uses the library's private headers for the word's address.
 */
#include "testlib.h"
#include "watchpoint.h"

#include "fdtab.h"
#include "port_impl.h"

#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

static struct port *p;
static int ep, e;
static _Atomic int a_ready, a_tid, a_fired, w_fired, a_first, a_again,
	abandon;
static struct epoll_event aev[2][4];
static int ar[2] = { -2, -2 };

/* A's accesses to `nappers`: the first is its count (bell__nap_begin); A
 * waits there until the write's ring has loaded `nappers`. */
static void a_access(const void *addr)
{
	(void)addr;
	if (atomic_exchange(&a_fired, 1))
		return;
	while (!atomic_load(&w_fired) && !atomic_load(&abandon))
		sched_yield();
}

/* The writer's accesses to `nappers`: its first (a fresh instance's `set`
 * is 0, so bell__would_ring and bell__kick do not load it) is bell__kick_slow's,
 * which saw A counted; it waits there until A's wait has returned. */
static void w_access(const void *addr)
{
	(void)addr;
	if (atomic_exchange(&w_fired, 1))
		return;
	while (!atomic_load(&a_first) && !atomic_load(&abandon))
		sched_yield();
}

/* Wait until the watched thread's handler has run (flag), or the thread is
 * found asleep without it (ThreadSanitizer defers the handler to the
 * thread's next intercepted call, which a nap's futex is not): then the
 * schedule cannot be placed, and the handlers must not wait (abandon).
 * Bounded: 5 s. */
static int placed(_Atomic int *flag, int tid)
{
	for (int k = 0; k < 50 && !atomic_load(flag); k++)
		if (t_blocked_in(tid, 100) >= 0)
			break;
	if (atomic_load(flag))
		return 1;
	atomic_store(&abandon, 1);
	fprintf(stderr, "the watchpoint's handler did not run (deferred?): "
			"the schedule is not placed\n");
	return 0;
}

static void *a_main(void *arg)
{
	uint64_t v;
	int w;

	(void)arg;
	atomic_store(&a_tid, t_gettid());
	w = wp_watch(&p->bell.nappers, 4, a_access);
	atomic_store(&a_ready, w >= 0 ? 1 : w);
	if (w < 0)
		return NULL;
	ar[0] = uepoll_wait(ep, aev[0], 4, -1);
	close(w);
	atomic_store(&a_first, 1);
	/* The counter read, the second wait: once the first ring is over. */
	while (!atomic_load(&a_again))
		sched_yield();
	if (uepoll_read(e, &v, 8) != 8 || v != 1)
		ar[1] = -3;
	else
		ar[1] = uepoll_wait(ep, aev[1], 4, -1);
	return NULL;
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 42 };
	uint64_t one = 1;
	pthread_t a;
	int w, nr, ok;

	t_begin("t_nap_take");
#ifdef T_TSAN
	/* The trap comes inside ThreadSanitizer's atomic RMW of the word,
	 * with its slot lock held: the handler's own atomics deadlock there
	 * (__tsan::SlotLock). */
	T_SKIP("a watchpoint on a word the library RMWs, under TSan");
#endif
	t_watchdog(60);
	ep = uepoll_create2(0, UEPOLL_NOPOLL | UEPOLL_NOSPIN);
	REQUIRE(ep >= 0);
	p = (struct port *)(void *)fdtab_peek(ep);
	REQUIRE(p);
	e = ueventfd(0, EFD_NONBLOCK | UEVENTFD_NOPOLL);
	REQUIRE(e >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
	REQUIRE(atomic_load(&p->bell.set) == 0);

	REQUIRE(pthread_create(&a, NULL, a_main, NULL) == 0);
	while (!atomic_load(&a_ready))
		sched_yield();
	if (atomic_load(&a_ready) < 0) {
		fprintf(stderr, "perf_event_open: %s\n",
			strerror(-atomic_load(&a_ready)));
		pthread_join(a, NULL);
		uepoll_close(e);
		uepoll_close(ep);
		T_SKIP("no perf breakpoint with sigtrap here");
	}

	/* 1, 2: A counted as a napper, the first write's ring in A's window
	 * (3 and 4 happen in the handlers' order). */
	ok = placed(&a_fired, atomic_load(&a_tid));
	w = wp_watch(&p->bell.nappers, 4, w_access);
	REQUIRE(w >= 0);
	CHECK_EQ(uepoll_write(e, &one, 8), 8);
	close(w);
	ok = ok && atomic_load(&w_fired);
	atomic_store(&abandon, 1); /* (a handler deferred till now: go on) */
	/* A's first wait has returned (placed: before the ring went on). */
	while (!atomic_load(&a_first))
		sched_yield();
	CHECK_EQ(ar[0], 1);
	CHECK_EQ(aev[0][0].data.u64, 42);
	/* Placed, the ring came after A's give-back: `napped` says a napper
	 * will look, and none will. */
	if (ok) {
		CHECK_EQ(atomic_load(&p->bell.napped), 1);
		CHECK_EQ(atomic_load(&p->bell.nappers), 0);
	}

	/* 5: A naps again; the second write must wake it. */
	atomic_store(&a_again, 1);
	nr = t_blocked_in(atomic_load(&a_tid), 5000);
	if (nr != SYS_futex)
		fprintf(stderr, "A asleep in %d, not a nap\n", nr);
	CHECK_EQ(uepoll_write(e, &one, 8), 8);
	if (!t_join_within(a, 10000)) {
		fprintf(stderr, "A was not woken by the second write: its nap "
				"did not take `napped`, which the first ring "
				"left at 1\n");
		exit(1);
	}
	CHECK_EQ(ar[1], 1);
	CHECK_EQ(aev[1][0].data.u64, 42);
	/* The watchpoint did place the ring (a deferred handler only under
	 * ThreadSanitizer: then the run is plain). */
#ifndef T_TSAN
	CHECK(ok);
#else
	(void)ok;
#endif

	CHECK_EQ(uepoll_close(e), 0);
	CHECK_EQ(uepoll_close(ep), 0);
	return t_end();
}
