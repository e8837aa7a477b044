/*
 * t_nopoll_count_first: a thread about to sleep in the kernel epoll counts
 * itself in the bell's `sleepers` before it re-checks the ready queue
 * (bell__sleep_begin; NOPOLL in src/bell.c; models/doorbell.pml,
 * MUTANT_NOPOLL_COUNT_LATE).  A signal of a UEPOLL_NOPOLL instance rings
 * only for a sleeper it sees: with the look first, an item queued between
 * the look and the count is neither seen nor rung for.
 *
 * The window has no system call, so a hardware watchpoint places the write
 * in it (tests/watchpoint.h): thread S waits with a sigmask (so it sleeps in
 * the kernel epoll, not in a nap) on an empty instance, and traps after
 * each of its loads of the queue's tail.  Its last look before it sleeps
 * (bell__sleep_begin's) is found first: S waits twice, each woken by a
 * write once it sleeps, and the number of S's accesses to the tail before
 * its sleep is read while it sleeps (the same both times: the path to the
 * sleep is the same, no spin: UEPOLL_NOSPIN).  Then S waits a third time
 * and traps right after that look; there the main thread writes.  Counted
 * first (the code's order), the write sees S and rings the doorbell, and
 * S returns the event; counted after the look, nobody rings, and S sleeps
 * with the event pending (a lost wakeup: 10 s).  Skipped (77) where perf
 * breakpoints with sigtrap are not allowed.  Uses the library's private
 * headers for the word's address.
 */
#include "testlib.h"
#include "watchpoint.h"

#include "fdtab.h"
#include "port_impl.h"

#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

static struct port *p;
static int ep;
static _Atomic int s_ready, s_tid, round_go, round_done, accesses, target,
	fired, w_done;
static struct epoll_event sev[3][4];
static int sr[3] = { -2, -2, -2 };

/* S's loads of the tail: counted; at the target one, held until the
 * write is over. */
static void on_access(const void *addr)
{
	(void)addr;
	if (atomic_fetch_add(&accesses, 1) + 1 != atomic_load(&target))
		return;
	atomic_store(&fired, 1);
	while (!atomic_load(&w_done))
		sched_yield();
}

static void *s_main(void *arg)
{
	sigset_t mask;
	int w;

	(void)arg;
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR2);
	atomic_store(&s_tid, t_gettid());
	w = wp_watch(&p->rq.wtail.p, sizeof(p->rq.wtail.p), on_access);
	atomic_store(&s_ready, w >= 0 ? 1 : w);
	if (w < 0)
		return NULL;
	for (int k = 0; k < 3; k++) {
		while (atomic_load(&round_go) <= k)
			sched_yield();
		atomic_store(&accesses, 0);
		sr[k] = uepoll_pwait(ep, sev[k], 4, -1, &mask);
		atomic_store(&round_done, k + 1);
	}
	close(w);
	return NULL;
}

static bool in_epoll(int nr)
{
	return nr == SYS_epoll_pwait || nr == SYS_epoll_wait
#ifdef SYS_epoll_pwait2
	       || nr == SYS_epoll_pwait2
#endif
		;
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 42 };
	uint64_t one = 1, v;
	int n[2];
	pthread_t s;
	int e;

	t_begin("t_nopoll_count_first");
	t_watchdog(60);
	ep = uepoll_create2(0, UEPOLL_NOPOLL | UEPOLL_NOSPIN);
	REQUIRE(ep >= 0);
	p = (struct port *)(void *)fdtab_peek(ep);
	REQUIRE(p);
	e = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(e >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);

	REQUIRE(pthread_create(&s, NULL, s_main, NULL) == 0);
	while (!atomic_load(&s_ready))
		sched_yield();
	if (atomic_load(&s_ready) < 0) {
		fprintf(stderr, "perf_event_open: %s\n",
			strerror(-atomic_load(&s_ready)));
		pthread_join(s, NULL);
		uepoll_close(e);
		uepoll_close(ep);
		T_SKIP("no perf breakpoint with sigtrap here");
	}

	/* Two waits that sleep: S's loads of the tail before its sleep. */
	for (int k = 0; k < 2; k++) {
		atomic_store(&round_go, k + 1);
		REQUIRE(in_epoll(t_blocked_in(atomic_load(&s_tid), 5000)));
		n[k] = atomic_load(&accesses);
		CHECK_EQ(uepoll_write(e, &one, 8), 8);
		while (atomic_load(&round_done) <= k)
			sched_yield();
		CHECK_EQ(sr[k], 1);
		CHECK_EQ(sev[k][0].data.u64, 42);
		CHECK_EQ(uepoll_read(e, &v, 8), 8);
	}
	CHECK(n[0] > 0);
	CHECK_EQ(n[0], n[1]);

	/* The third: S held right after its last look before the sleep. */
	atomic_store(&target, n[1]);
	atomic_store(&round_go, 3);
	while (!atomic_load(&fired))
		sched_yield();
	CHECK_EQ(uepoll_write(e, &one, 8), 8);
	atomic_store(&w_done, 1);
	if (!t_join_within(s, 10000)) {
		fprintf(stderr, "S was not woken by the write: it counted "
				"itself a sleeper after its look at the "
				"queue\n");
		exit(1);
	}
	CHECK_EQ(sr[2], 1);
	CHECK_EQ(sev[2][0].data.u64, 42);
	CHECK_EQ(sev[2][0].events, EPOLLIN);
	CHECK(atomic_load(&fired)); /* the watchpoint did place the write */

	CHECK_EQ(uepoll_close(e), 0);
	CHECK_EQ(uepoll_close(ep), 0);
	return t_end();
}
