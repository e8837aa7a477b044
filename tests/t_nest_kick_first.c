/*
 * t_nest_kick_first: a signal queues its item before it looks at the
 * doorbell (port_item_signal in src/port.c: rq_enqueue, then
 * bell__kick_edge; WATCHED in src/bell.c; models/watched.pml, mutant
 * KICK_FIRST).  Kicked first, a signal that finds the doorbell rung does
 * not ring; a clear that takes the doorbell then and looks at the queue
 * before the item is queued does not ring either: the item is left queued
 * with the doorbell empty, and the instance's holders are never told.
 *
 * Instance `in` holds ueventfds A and B and is held level-triggered by
 * instance `out`.  A is written: its item is queued, `in`'s doorbell rung.
 * Thread W writes B, with a hardware watchpoint on its own accesses to
 * `in`'s `set` (watchpoint.h): at the first (the kick's look), W waits
 * while the main thread reads A empty, which revalidates `in` (wq_unready,
 * port_revalidate: the prune drops A's item; if nothing is left, the clear
 * takes the doorbell and looks at the queue).  Queued first, B's item is
 * kept by that prune, and the doorbell stays rung for it; kicked first,
 * the clear finds the queue empty and the doorbell stays empty after B's
 * item is queued.  (W holds B's wq lock there, the read A's: neither needs
 * the other's.)  Then, as the kernel's epoll would for B: `in`'s fd polls
 * readable, `out` reports `in`, `in` returns B (zero-timeout looks once
 * the steps are over: no timing).  Skipped (77) where perf breakpoints
 * with sigtrap are not allowed.
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
static _Atomic int w_ready, fired, m_go, m_done;

/* W's accesses to `set` during B's write: at the first, the check. */
static void on_set(const void *addr)
{
	(void)addr;
	if (atomic_load(&fired))
		return;
	atomic_store(&fired, 1);
	atomic_store(&m_go, 1);
	while (!atomic_load(&m_done))
		sched_yield();
}

static void *w_main(void *arg)
{
	uint64_t one = 1;
	int wp;

	(void)arg;
	wp = WP_WATCH(&pin->bell.set, 4, on_set);
	atomic_store(&w_ready, wp >= 0 || wp == T_NO_WATCH ? 1 : wp);
	if (wp < 0 && wp != T_NO_WATCH)
		return NULL;
	CHECK_EQ(uepoll_write(efd_b, &one, 8), 8);
	if (wp >= 0)
		close(wp);
	atomic_store(&m_go, 1); /* (if the watchpoint never fired) */
	return NULL;
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, got[4];
	struct pollfd pfd;
	uint64_t one = 1, v;
	pthread_t w;
	int in, out, a, n;

	t_begin("t_nest_kick_first");
	t_watchdog(30);
	in = uepoll_create1(0);
	out = uepoll_create1(0);
	a = ueventfd(0, EFD_NONBLOCK);
	efd_b = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(in >= 0 && out >= 0 && a >= 0 && efd_b >= 0);
	pin = (struct port *)(void *)fdtab_peek(in);
	REQUIRE(pin);
	ev.data.u64 = 'A';
	REQUIRE(uepoll_ctl(in, EPOLL_CTL_ADD, a, &ev) == 0);
	ev.data.u64 = 'B';
	REQUIRE(uepoll_ctl(in, EPOLL_CTL_ADD, efd_b, &ev) == 0);
	ev.data.u64 = 'I'; /* level-triggered holder */
	REQUIRE(uepoll_ctl(out, EPOLL_CTL_ADD, in, &ev) == 0);

	CHECK_EQ(uepoll_write(a, &one, 8), 8);
	REQUIRE(bell_rung(&pin->bell));

	REQUIRE(pthread_create(&w, NULL, w_main, NULL) == 0);
	while (!atomic_load(&w_ready))
		sched_yield();
	if (atomic_load(&w_ready) < 0) {
		REQUIRE(pthread_join(w, NULL) == 0);
		fprintf(stderr, "perf_event_open: %s\n",
			strerror(-atomic_load(&w_ready)));
		T_SKIP("no perf breakpoint with sigtrap here");
	}
	/* In W's window: A read empty, `in` revalidated. */
	while (!atomic_load(&m_go))
		sched_yield();
	CHECK_EQ(uepoll_read(a, &v, 8), 8);
	atomic_store(&m_done, 1);
	REQUIRE(pthread_join(w, NULL) == 0);
#ifndef T_TSAN
	CHECK(atomic_load(&fired)); /* the watchpoint placed the read */
#endif

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
				"pending: B's kick came before its item\n");
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
