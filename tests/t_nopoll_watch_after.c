/*
 * t_nopoll_watch_after: a new watcher of a UEPOLL_NOPOLL instance counts
 * itself in `watched` before it looks at the instance's queue (NOPOLL in
 * src/bell.c, bell_watch: count, then prune and kick if items are left;
 * models/doorbell.pml, MUTANT_NOPOLL_WATCH_LATE).  A signal of a NOPOLL
 * instance with no sleeper rings only for a watcher it sees: looked at
 * before the count, an item queued between the look and the count is
 * neither rung for by its signal nor seen by the watch.
 *
 * The window has no system call, so a hardware watchpoint places the
 * signal in it (tests/watchpoint.h): thread C adds NOPOLL instance I to
 * instance O (uepoll_ctl: krec__nest_add, bell_watch) and traps right
 * after its first look at I's ready queue (the load of its tail: rq_prune's
 * rq_empty); there the main thread writes a ueventfd I watches.  Counted
 * first (the code's order), the write sees the watcher and rings I's
 * doorbell, and a wait on O returns I; looked first, nobody rings, and the
 * wait on O sleeps with I's event pending until its timeout (a lost
 * wakeup: 10 s, then 0 events).  Skipped (77) where perf breakpoints with
 * sigtrap are not allowed.  Uses the library's private headers for the
 * word's address.
 */
#include "testlib.h"
#include "watchpoint.h"

#include "fdtab.h"
#include "port_impl.h"

#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

static struct port *pi;
static int o, i;
static _Atomic int c_ready, fired, go;
static int cr = -2;

/* C's first access to I's queue's tail: hold it there until the write is
 * over. */
static void on_access(const void *addr)
{
	(void)addr;
	if (atomic_exchange(&fired, 1))
		return;
	while (!atomic_load(&go))
		sched_yield();
}

static void *c_main(void *arg)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };
	int w;

	(void)arg;
	w = wp_watch(&pi->rq.wtail.p, sizeof(pi->rq.wtail.p), on_access);
	atomic_store(&c_ready, w >= 0 ? 1 : w);
	if (w < 0)
		return NULL;
	cr = uepoll_ctl(o, EPOLL_CTL_ADD, i, &ev);
	close(w);
	return NULL;
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 42 };
	struct epoll_event oev[4];
	uint64_t one = 1;
	pthread_t c;
	int e, n;

	t_begin("t_nopoll_watch_after");
	t_watchdog(60);
	o = uepoll_create1(0);
	REQUIRE(o >= 0);
	i = uepoll_create2(0, UEPOLL_NOPOLL | UEPOLL_NOSPIN);
	REQUIRE(i >= 0);
	pi = (struct port *)(void *)fdtab_peek(i);
	REQUIRE(pi);
	e = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(e >= 0);
	REQUIRE(uepoll_ctl(i, EPOLL_CTL_ADD, e, &ev) == 0);

	REQUIRE(pthread_create(&c, NULL, c_main, NULL) == 0);
	while (!atomic_load(&c_ready))
		sched_yield();
	if (atomic_load(&c_ready) < 0) {
		fprintf(stderr, "perf_event_open: %s\n",
			strerror(-atomic_load(&c_ready)));
		pthread_join(c, NULL);
		uepoll_close(e);
		uepoll_close(i);
		uepoll_close(o);
		T_SKIP("no perf breakpoint with sigtrap here");
	}

	/* C has looked at I's queue (empty): the write comes. */
	while (!atomic_load(&fired))
		sched_yield();
	CHECK_EQ(uepoll_write(e, &one, 8), 8);
	atomic_store(&go, 1);
	REQUIRE(t_join_within(c, 10000));
	CHECK_EQ(cr, 0);
	CHECK(atomic_load(&fired)); /* the watchpoint did place the write */

	/* O must see I ready: I has an event queued. */
	n = uepoll_wait(o, oev, 4, 10000);
	if (n == 0)
		fprintf(stderr, "O's wait timed out: the write's ring was lost "
				"(the watch looked at I's queue before it "
				"counted itself)\n");
	CHECK_EQ(n, 1);
	if (n == 1) {
		CHECK_EQ(oev[0].data.u64, 7);
		CHECK_EQ(oev[0].events, EPOLLIN);
	}
	n = uepoll_wait(i, oev, 4, 0);
	CHECK_EQ(n, 1);
	CHECK_EQ(oev[0].data.u64, 42);

	CHECK_EQ(uepoll_close(e), 0);
	CHECK_EQ(uepoll_close(i), 0);
	CHECK_EQ(uepoll_close(o), 0);
	return t_end();
}
