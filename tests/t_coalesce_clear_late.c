/*
 * t_coalesce_clear_late: a coalesced write that lands while the timer
 * thread delivers the wakeups held before it still wakes the sleeper, by a
 * later run (COALESCE in src/eventfd.c, PENDING in src/timer.c; the model
 * is models/coalesce.pml).
 *
 * A ueventfd with a coalescing delay is watched by an instance,
 * EPOLLIN|EPOLLET.  A write of 1 queues the item and arms the timer; an
 * awake wait (timeout 0) takes the item; then a thread S sleeps in
 * uepoll_wait(-1).  The timer's run finds the item taken (nothing to ring)
 * and brings the fd to the counter: it is held at that system call (the
 * mirror's write(2)) through a hook of the timer thread
 * (libcwrap.h: wrap_hook_tid_once).
 * Meanwhile a second write of 1 queues the item again (an edge), its ring
 * owed to the timer; then the run goes on.  S must return that event
 * within a bound far above the delay: a run that cleared `pending` only
 * after its look would have made the write arm nothing, and S would sleep
 * for good with the event queued (a lost wakeup).  The kernel's epoll, told
 * the same (an eventfd, EPOLLET: write, wait 0, write while a thread
 * sleeps), wakes the thread with one event.  Nothing waits on a clock: the
 * hook yields until the write is done, and a hang ends at the bound.
 */
#include "libcwrap.h"
#include "testlib.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

#define DELAY_US 100000u

static int ep, fd;
static _Atomic int held, go, s_tid;

static void hook(long nr)
{
	if (nr != SYS_write) { /* (held at the write(2) only) */
		wrap_hook_tid_once(gettid(), hook);
		return;
	}
	atomic_store(&held, 1);
	while (!atomic_load(&go))
		sched_yield();
}

struct sleeper {
	int kern, n;
	struct epoll_event ev[4];
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;

	atomic_store(&s_tid, t_gettid());
	s->n = s->kern ? epoll_wait(ep, s->ev, 4, -1)
		       : uepoll_wait(ep, s->ev, 4, -1);
	return NULL;
}

/* One run: kern (the kernel's epoll and eventfd) or uepoll's. */
static void run(int kern)
{
	struct ueventfd_coalesce set = { .delay_us = DELAY_US };
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 7 };
	struct sleeper s = { .kern = kern };
	uint64_t one = 1;
	pthread_t th;
	int tid = 0, n, sc;

	ep = kern ? epoll_create1(0) : uepoll_create1(0);
	fd = kern ? eventfd(0, EFD_NONBLOCK) : ueventfd(0, EFD_NONBLOCK);
	REQUIRE(ep >= 0 && fd >= 0);
	if (!kern) {
		REQUIRE(ueventfd_coalesce(fd, &set, NULL) == 0);
		tid = t_timer_tid();
		if (!tid)
			T_SKIP("no timer thread");
		atomic_store(&held, 0);
		atomic_store(&go, 0);
		wrap_hook_tid_once(tid, hook);
	}
	REQUIRE((kern ? epoll_ctl : uepoll_ctl)(ep, EPOLL_CTL_ADD, fd, &ev) == 0);

	CHECK_EQ(kern ? write(fd, &one, 8) : uepoll_write(fd, &one, 8), 8);
	n = kern ? epoll_wait(ep, &ev, 1, 0) : uepoll_wait(ep, &ev, 1, 0);
	CHECK_EQ(n, 1);
	atomic_store(&s_tid, 0);
	REQUIRE(pthread_create(&th, NULL, sleeper_main, &s) == 0);
	while (!atomic_load(&s_tid))
		sched_yield();
	sc = t_blocked_in(atomic_load(&s_tid), 10000);
	REQUIRE(sc >= 0);
	if (!kern)
		/* The run, held after its look at the item. */
		while (!atomic_load(&held))
			sched_yield();
	CHECK_EQ(kern ? write(fd, &one, 8) : uepoll_write(fd, &one, 8), 8);
	atomic_store(&go, 1);
	if (!t_join_within(th, 5000)) {
		fprintf(stderr, "%s: the sleeper was not woken for a queued event "
			"(lost wakeup)\n", kern ? "kernel" : "uepoll");
		exit(1);
	}
	CHECK_EQ(s.n, 1);
	if (s.n == 1)
		CHECK_EQ(s.ev[0].data.u64, 7);
	CHECK_EQ((kern ? close : uepoll_close)(fd), 0);
	CHECK_EQ((kern ? close : uepoll_close)(ep), 0);
}

int main(void)
{
	t_begin("t_coalesce_clear_late");
	t_watchdog(60);
	run(1);
	run(0);
	return t_end();
}
