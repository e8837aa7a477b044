/*
 * t_nap_nopoll_check: a napper looks at `nopoll` after it has counted
 * itself (NAP and UNNOPOLL in src/bell.c, bell__nap_begin;
 * models/doorbell.pml, MUTANT_NAP_NO_NOPOLL_CHECK), so that NOPOLL ended
 * between its first look (wait__may_nap's hint) and its count moves it into
 * the kernel epoll, where the doorbell rings from then on.
 *
 * The window has no system call, so a hardware watchpoint places the end
 * of NOPOLL in it (tests/watchpoint.h): thread S, a uepoll_wait on an empty
 * UEPOLL_NOPOLL instance without kernel fds (a nap), traps right after its
 * count in the bell's `sleepers` (bell__nap_begin), before its count in
 * `nappers`; there the main thread puts the instance into a kernel epoll
 * level-triggered (uepoll_ctl: bell__polled_outside stores nopoll = 0, then
 * bell__unnap sees no napper and wakes nobody).  Once S sleeps, a write to a
 * ueventfd the instance watches rings the doorbell (NOPOLL over, no napper
 * ring), and S must get its event: its look at `nopoll` after the count
 * sent it to the kernel epoll.  A napper that does not look naps on the
 * futex word, which that ring never touches, and S does not return (a lost
 * wakeup: 10 s).  Skipped (77) where perf breakpoints with sigtrap are not
 * allowed.  Uses the library's private headers for the word's address.
 */
#include "testlib.h"
#include "watchpoint.h"

#include "fdtab.h"
#include "port_impl.h"

#include <sched.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

static struct port *p;
static int ep;
static _Atomic int s_ready, s_tid, fired, go, abandon;
static struct epoll_event sev[4];
static int sr = -2;

/* S's accesses to `sleepers`: the first that finds it counted (S alone
 * sleeps here) is its count in bell__nap_begin; hold S there until NOPOLL
 * has ended. */
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
	struct epoll_event kev = { .events = EPOLLIN, .data.u64 = 1 };
	uint64_t one = 1;
	pthread_t s;
	int e, kep, nr, ok;

	t_begin("t_nap_nopoll_check");
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
	e = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(e >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
	kep = epoll_create1(EPOLL_CLOEXEC);
	REQUIRE(kep >= 0);

	REQUIRE(pthread_create(&s, NULL, s_main, NULL) == 0);
	while (!atomic_load(&s_ready))
		sched_yield();
	if (atomic_load(&s_ready) < 0) {
		fprintf(stderr, "perf_event_open: %s\n",
			strerror(-atomic_load(&s_ready)));
		pthread_join(s, NULL);
		close(kep);
		uepoll_close(e);
		uepoll_close(ep);
		T_SKIP("no perf breakpoint with sigtrap here");
	}

	/* S counted as a sleeper, not yet as a napper: NOPOLL ends (a kernel
	 * epoll holds the instance, level-triggered: no watcher). */
	ok = placed(&fired, atomic_load(&s_tid));
	CHECK_EQ(uepoll_ctl(kep, EPOLL_CTL_ADD, ep, &kev), 0);
	CHECK(!atomic_load(&p->bell.nopoll));
	CHECK_EQ(atomic_load(&p->bell.watched), 0);
	atomic_store(&go, 1);

	/* Once S sleeps (in the kernel epoll; in a nap if it did not look),
	 * the write: it rings the doorbell. */
	nr = t_blocked_in(atomic_load(&s_tid), 5000);
	if (nr != SYS_epoll_pwait && nr != SYS_epoll_wait
#ifdef SYS_epoll_pwait2
	    && nr != SYS_epoll_pwait2
#endif
	)
		fprintf(stderr, "S asleep in %d, not in the kernel epoll\n", nr);
	CHECK_EQ(uepoll_write(e, &one, 8), 8);

	if (!t_join_within(s, 10000)) {
		fprintf(stderr, "S was not woken by the write: it napped after "
				"NOPOLL ended (no look at nopoll after its "
				"count)\n");
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

	close(kep);
	CHECK_EQ(uepoll_close(e), 0);
	CHECK_EQ(uepoll_close(ep), 0);
	return t_end();
}
