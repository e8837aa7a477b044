/*
 * t_nest_clear_order: a clear of a watched instance's doorbell reads the
 * eventfd and stores `set` = 0 in one step under dblock (bell__take in
 * src/bell.c, WATCHED; models/watched.pml, mutant CLEAR_STORE_FIRST).
 * Stored first, outside the lock, `set` = 0 lets a signal ring in between
 * (`set` = 1, a write), and the clear's read then takes that write away:
 * the doorbell is left empty with `set` = 1, so no later signal rings
 * either (they find it rung), and the instance's holders are never told.
 *
 * Instance `in` holds ueventfds A (EPOLLET) and B and is held
 * level-triggered by instance `out`.  A is written: its item is queued,
 * `in`'s doorbell rung.  A zero-timeout wait on `in` returns A, finds the
 * queue empty then and clears the doorbell (wait__settle, bell__mirror).
 * The window has no system call, so a hardware watchpoint places B's
 * write in it: the waiting thread traps after each of its accesses to
 * `in`'s `set` (watchpoint.h); the first, in this wait, is the clear's
 * (the harvest and the prune do not touch it): its load in the real code,
 * its exchange that stores 0 in the mutant.  There another thread writes
 * B, and the wait goes on only when that write has returned: B's signal
 * finds `set` 1 (real: the clear's take then reads A's ring, and its look
 * rings for B) or 0 (mutant: B rings, and the clear's read takes B's ring
 * away).  Then B is pending in `in`, and as the kernel's epoll would:
 * `in`'s fd polls readable, `out` reports `in`, `in` returns B
 * (zero-timeout looks once the steps are over: no timing).  The handler
 * never reads `set` itself: its own access would trap again.  Skipped
 * (77) where perf breakpoints with sigtrap are not allowed.
 */
#include "testlib.h"
#include "watchpoint.h"

#include "fdtab.h"
#include "port_impl.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

/* ThreadSanitizer runs a synchronous signal's handler inside the atomic
 * operation that trapped, holding its lock of this thread: the handler's
 * own atomics would deadlock.  No watchpoint there: the steps run one
 * after the other, and only the outcome is checked. */
#ifdef T_TSAN
#define WP_WATCH(addr, len, fn) ((void)(addr), (void)(fn), T_NO_WATCH)
#else
#define WP_WATCH(addr, len, fn) wp_watch(addr, len, fn)
#endif
enum { T_NO_WATCH = -100000 };

static int efd_b;
static struct port *pin;
static _Atomic int armed, fired, w_go, w_done;

static void *w_main(void *arg)
{
	uint64_t one = 1;

	(void)arg;
	while (!atomic_load(&w_go))
		sched_yield();
	CHECK_EQ(uepoll_write(efd_b, &one, 8), 8);
	atomic_store(&w_done, 1);
	return NULL;
}

/* The waiting thread's accesses to `set`: at the first, B's write. */
static void on_set(const void *addr)
{
	(void)addr;
	if (!atomic_load(&armed) || atomic_load(&fired))
		return;
	atomic_store(&fired, 1);
	atomic_store(&w_go, 1);
	while (!atomic_load(&w_done))
		sched_yield();
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, got[4];
	struct pollfd pfd;
	uint64_t one = 1;
	pthread_t w;
	int in, out, a, n, wp;

	t_begin("t_nest_clear_order");
	t_watchdog(30);
	in = uepoll_create1(0);
	out = uepoll_create1(0);
	a = ueventfd(0, EFD_NONBLOCK);
	efd_b = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(in >= 0 && out >= 0 && a >= 0 && efd_b >= 0);
	pin = (struct port *)(void *)fdtab_peek(in);
	REQUIRE(pin);
	ev.events = EPOLLIN | EPOLLET; /* not put back once returned */
	ev.data.u64 = 'A';
	REQUIRE(uepoll_ctl(in, EPOLL_CTL_ADD, a, &ev) == 0);
	ev.events = EPOLLIN;
	ev.data.u64 = 'B';
	REQUIRE(uepoll_ctl(in, EPOLL_CTL_ADD, efd_b, &ev) == 0);
	ev.data.u64 = 'I'; /* level-triggered holder */
	REQUIRE(uepoll_ctl(out, EPOLL_CTL_ADD, in, &ev) == 0);

	CHECK_EQ(uepoll_write(a, &one, 8), 8);
	REQUIRE(bell_rung(&pin->bell));

	wp = WP_WATCH(&pin->bell.set, 4, on_set);
	if (wp < 0 && wp != T_NO_WATCH) {
		fprintf(stderr, "perf_event_open: %s\n", strerror(-wp));
		T_SKIP("no perf breakpoint with sigtrap here");
	}
	REQUIRE(pthread_create(&w, NULL, w_main, NULL) == 0);
	atomic_store(&armed, 1);
	n = uepoll_wait(in, got, 4, 0);
	atomic_store(&armed, 0);
	if (wp >= 0)
		close(wp);
	CHECK_EQ(n, 1);
	CHECK_EQ(got[0].data.u64, 'A');
#ifndef T_TSAN
	CHECK(atomic_load(&fired)); /* the watchpoint placed B's write */
#endif
	atomic_store(&w_go, 1);     /* (if it never fired) */
	REQUIRE(pthread_join(w, NULL) == 0);

	/* B is pending in `in`: its fd and its holder must say so. */
	pfd.fd = in;
	pfd.events = POLLIN;
	pfd.revents = 0;
	CHECK_EQ(poll(&pfd, 1, 0), 1);
	CHECK(pfd.revents & POLLIN);
	n = uepoll_wait(out, got, 4, 0);
	CHECK_EQ(n, 1);
	if (n != 1)
		fprintf(stderr, "`out` does not report `in`, whose B is "
				"pending: B's ring was read away\n");
	else
		CHECK_EQ(got[0].data.u64, 'I');
	CHECK_EQ(uepoll_wait(in, got, 4, 0), 1);
	CHECK_EQ(got[0].data.u64, 'B');

	uepoll_close(out);
	uepoll_close(in);
	uepoll_close(a);
	uepoll_close(efd_b);
	return t_end();
}
