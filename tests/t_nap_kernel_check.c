/*
 * t_nap_kernel_check: a napper looks at nkernel after it has counted itself
 * (NAP in src/bell.c, wait__nap in src/wait.c; models/doorbell.pml,
 * MUTANT_NAP_KERNEL_FIRST), so that a kernel fd added between its first
 * look (wait__may_nap's relaxed hint) and its count moves it into the
 * kernel epoll, where that fd's events reach it.
 *
 * The window has no system call, so a hardware watchpoint places the ctl
 * in it (tests/watchpoint.h): thread S, a uepoll_wait on an empty
 * UEPOLL_NOPOLL instance without kernel fds (a nap), traps right after its
 * count in the bell's `sleepers` (bell__nap_begin), before its count in
 * `nappers`; there the main thread adds a pipe (krec_kctl: nkernel raised,
 * then bell__unnap, which sees no napper and wakes nobody) and makes it
 * readable.  S must then not nap: its look at nkernel after the count sends
 * it to the kernel epoll, which returns the pipe's event.  A napper that
 * looked only before its count naps with the event pending, and S does not
 * return (a lost wakeup: 10 s).  Skipped (77) where perf breakpoints with
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

static struct port *p;
static int ep;
static _Atomic int s_ready, s_tid, fired, go, abandon;
static struct epoll_event sev[4];
static int sr = -2;

/* S's accesses to `sleepers`: the first that finds it counted (S alone
 * sleeps here) is its count in bell__nap_begin; hold S there until the
 * ctl is done. */
static void on_access(const void *addr)
{
	(void)addr;
	if (atomic_load(&fired) || atomic_load(&p->bell.sleepers) <= 0)
		return;
	atomic_store(&fired, 1);
	while (!atomic_load(&go) && !atomic_load(&abandon))
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

static void *s_main(void *arg)
{
	int w;

	(void)arg;
	atomic_store(&s_tid, t_gettid());
	w = wp_watch(&p->bell.sleepers, 4, on_access);
	atomic_store(&s_ready, w >= 0 ? 1 : w);
	if (w < 0)
		return NULL;
	sr = uepoll_wait(ep, sev, 4, -1);
	close(w);
	return NULL;
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 42 };
	pthread_t s;
	int pfd[2], ok;

	t_begin("t_nap_kernel_check");
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
	REQUIRE(pipe(pfd) == 0);

	REQUIRE(pthread_create(&s, NULL, s_main, NULL) == 0);
	while (!atomic_load(&s_ready))
		sched_yield();
	if (atomic_load(&s_ready) < 0) {
		fprintf(stderr, "perf_event_open: %s\n",
			strerror(-atomic_load(&s_ready)));
		pthread_join(s, NULL);
		close(pfd[0]);
		close(pfd[1]);
		uepoll_close(ep);
		T_SKIP("no perf breakpoint with sigtrap here");
	}

	/* S counted as a sleeper, not yet as a napper: the kernel fd comes,
	 * readable at once. */
	ok = placed(&fired, atomic_load(&s_tid));
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &ev), 0);
	CHECK_EQ(write(pfd[1], "x", 1), 1);
	atomic_store(&go, 1);

	if (!t_join_within(s, 10000)) {
		fprintf(stderr, "S was not woken by the kernel fd's event: it "
				"napped after the fd was added (no look at "
				"nkernel after its count)\n");
		exit(1);
	}
	CHECK_EQ(sr, 1);
	CHECK_EQ(sev[0].data.u64, 42);
	CHECK_EQ(sev[0].events, EPOLLIN);
	/* The watchpoint did place the step (a deferred handler only under
	 * ThreadSanitizer: then the run is plain). */
#ifndef T_TSAN
	CHECK(ok);
#else
	(void)ok;
#endif

	close(pfd[0]);
	close(pfd[1]);
	CHECK_EQ(uepoll_close(ep), 0);
	return t_end();
}
