/*
 * t_quiet_queued: a write that finds its item queued already still wakes
 * the sleeper (QUIET in src/bell.c; models/quiet.pml,
 * MUTANT_QUIET_SKIP_QUEUED).
 *
 * A thread sleeps in a wait on an instance that watches an empty eventfd
 * (EPOLLIN, level-triggered).  A write of 0 queues the watcher's item, as
 * the kernel queues its epitem, but rings nobody: the source shows nothing
 * (QUIET).  The next write, of 1, finds the item queued: its signal queues
 * nothing, and must ring all the same (no enqueuer rang for that item), or
 * the thread sleeps on with the event pending.  The kernel's waiter, woken
 * by the write of 0, finds nothing, sleeps again, and the write of 1 wakes
 * it.  The same script on both; a lost wakeup shows as a wait (without
 * timeout) that has not returned 10 s after the write.  (A wait with a
 * timeout would not do: timed out, it collects once more and finds the
 * item.)
 */
#include "testlib.h"
#include "calls.h"

#include <stdatomic.h>

struct sleeper {
	const struct calls *s;
	int ep, n;
	_Atomic int tid;
	struct epoll_event ev;
};

static void *sleeper_fn(void *arg)
{
	struct sleeper *w = arg;

	atomic_store(&w->tid, t_gettid());
	w->n = w->s->wait(w->ep, &w->ev, 1, -1);
	return NULL;
}

static void script(const struct calls *s, struct t_log *log)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 };
	uint64_t zero = 0, one = 1, v = 0;
	struct sleeper w = { .s = s };
	pthread_t th;
	int ep, e;

	ep = s->create1(0);
	e = s->eventfd(0, EFD_NONBLOCK);
	REQUIRE(ep >= 0 && e >= 0);
	REQUIRE(s->ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
	w.ep = ep;
	REQUIRE(pthread_create(&th, NULL, sleeper_fn, &w) == 0);
	while (!atomic_load(&w.tid))
		sched_yield();
	CHECK(t_wait_sleeping(atomic_load(&w.tid), 5000));
	t_log_res(log, s->write(e, &zero, 8));
	/* Asleep again (the kernel's waiter woke for the write of 0). */
	CHECK(t_wait_sleeping(atomic_load(&w.tid), 5000));
	t_log_res(log, s->write(e, &one, 8));
	if (!t_join_within(th, 10000)) {
		fprintf(stderr, "the write of 1 woke nobody (a lost wakeup)\n");
		exit(1);
	}
	t_log_events(log, &w.ev, w.n);
	t_log_res(log, s->read(e, &v, 8));
	t_log_put(log, (long)v);
	s->close(e);
	s->close(ep);
}

int main(void)
{
	static struct t_log k, u;

	t_begin("t_quiet_queued");
	t_watchdog(60);
	script(&calls_kernel, &k);
	script(&calls_uepoll, &u);
	t_log_same(&k, &u, "write 0, then 1, to a sleeper's eventfd");
	return t_end();
}
