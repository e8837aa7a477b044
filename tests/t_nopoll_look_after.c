/*
 * t_nopoll_look_after: on a UEPOLL_NOPOLL instance a signal decides whether
 * to ring (bell__wanted: a sleeper counted, or a watcher) only after it has
 * queued its item (NOPOLL in src/bell.c, port_item_signal;
 * models/doorbell.pml, MUTANT_NOPOLL_LOOK_FIRST).  Decided before, it may
 * see no sleeper while a thread counts itself, re-checks the still empty
 * queue and sleeps: the item then comes with no ring.
 *
 * The window has no system call, so a hardware watchpoint places the sleep
 * in it (tests/watchpoint.h): writer thread W traps right after its first
 * load of the bell's `sleepers` (bell__wanted), which finds none; there
 * thread S starts a uepoll_wait (a nap: no kernel fd, no sigmask), and W
 * goes on only once S sleeps or has returned.  After the enqueue (the
 * code's order) S finds the item at once; loaded before it, W queues the
 * item with no ring after S is asleep, and S does not return (a lost
 * wakeup: 10 s).  Skipped (77) where perf breakpoints with sigtrap are not
 * allowed.  Uses the library's private headers for the word's address.
 */
#include "testlib.h"
#include "watchpoint.h"

#include "fdtab.h"
#include "port_impl.h"

#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

static struct port *p;
static int ep, e;
static _Atomic int w_ready, fired, go, s_tid, s_done;
static struct epoll_event sev[4];
static int sr = -2;
static ssize_t wr = -2;

/* W's first access to `sleepers`: hold it there until S has had its turn. */
static void on_access(const void *addr)
{
	(void)addr;
	if (atomic_exchange(&fired, 1))
		return;
	while (!atomic_load(&go))
		sched_yield();
}

static void *w_main(void *arg)
{
	uint64_t one = 1;
	int w;

	(void)arg;
	w = wp_watch(&p->bell.sleepers, 4, on_access);
	atomic_store(&w_ready, w >= 0 ? 1 : w);
	if (w < 0)
		return NULL;
	wr = uepoll_write(e, &one, 8);
	close(w);
	return NULL;
}

static void *s_main(void *arg)
{
	(void)arg;
	atomic_store(&s_tid, t_gettid());
	sr = uepoll_wait(ep, sev, 4, -1);
	atomic_store(&s_done, 1);
	return NULL;
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 42 };
	pthread_t w, s;

	t_begin("t_nopoll_look_after");
	t_watchdog(60);
	ep = uepoll_create2(0, UEPOLL_NOPOLL | UEPOLL_NOSPIN);
	REQUIRE(ep >= 0);
	p = (struct port *)(void *)fdtab_peek(ep);
	REQUIRE(p);
	e = ueventfd(0, EFD_NONBLOCK | UEVENTFD_NOPOLL);
	REQUIRE(e >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);

	REQUIRE(pthread_create(&w, NULL, w_main, NULL) == 0);
	while (!atomic_load(&w_ready))
		sched_yield();
	if (atomic_load(&w_ready) < 0) {
		fprintf(stderr, "perf_event_open: %s\n",
			strerror(-atomic_load(&w_ready)));
		pthread_join(w, NULL);
		uepoll_close(e);
		uepoll_close(ep);
		T_SKIP("no perf breakpoint with sigtrap here");
	}

	/* W has loaded `sleepers` (0): S waits, until it sleeps or returns
	 * (a bound: 5 s, then W goes on anyway). */
	while (!atomic_load(&fired))
		sched_yield();
	REQUIRE(pthread_create(&s, NULL, s_main, NULL) == 0);
	while (!atomic_load(&s_tid))
		sched_yield();
	for (int i = 0; i < 50 && !atomic_load(&s_done); i++)
		if (t_blocked_in(atomic_load(&s_tid), 100) >= 0)
			break;
	atomic_store(&go, 1);
	REQUIRE(t_join_within(w, 10000));
	CHECK_EQ(wr, 8);

	if (!t_join_within(s, 10000)) {
		fprintf(stderr, "S was not woken by the write: its signal "
				"looked for sleepers before it queued the "
				"item\n");
		exit(1);
	}
	CHECK_EQ(sr, 1);
	CHECK_EQ(sev[0].data.u64, 42);
	CHECK_EQ(sev[0].events, EPOLLIN);
	CHECK(atomic_load(&fired)); /* the watchpoint did place the wait */

	CHECK_EQ(uepoll_close(e), 0);
	CHECK_EQ(uepoll_close(ep), 0);
	return t_end();
}
