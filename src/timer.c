/* SPDX-License-Identifier: MIT */
/*
 * timer.c - one process-wide thread that runs deferred calls at deadlines.
 *
 * Why a thread (docs/design.md, "Coalesced ueventfd wakeups", has the
 * numbers): a deferred wakeup must be delivered even if its writer never writes
 * again and its sleeper never wakes on its own, so something other than the
 * two must run at the deadline: the sleeper's own timeout cannot know a
 * deadline set after it slept, and a timerfd per ueventfd would cost a
 * kernel fd each and still need a reader.  One thread for the process
 * (all signals blocked), started when
 * a ueventfd is first given a delay (never by an arm: SIGNALS), costs two
 * context switches per delivered batch (woken by the
 * arm, then by its deadline) and nothing while no timer is armed: it then
 * sleeps on its condition variable without a timeout.
 *
 * Timers sit in a binary min-heap by deadline (each knows its slot, so a
 * cancel is O(log n)).  The thread sleeps on `cond` until the earliest
 * deadline; an arm that becomes the new earliest signals it only if it is
 * asleep.
 *
 * LOCKING: timer__g.lock protects the heap, every queued timer's idx and
 * deadline, `sleeping`, `started` and the reserved room.  It is a leaf:
 * nothing is taken inside it, and timer functions run with it released
 * (they take a source's wq lock and port locks).
 *
 * SIGNALS.  A held write made by a signal handler arms a timer: timer_arm
 * allocates nothing and starts no thread (the heap's room is reserved and
 * the thread started by timer_reserve, when a ueventfd is given a delay),
 * takes the lock through lock_take (a handler whose thread holds it never
 * gets here: lock.h), and signals the condition with the lock held.  With
 * no thread it fails and the write wakes at once: no write starts one, in
 * any process (a forked child's first coalesced write did, from a handler
 * that had interrupted malloc: issue 32; t_fork_signal_write raises the
 * signal inside malloc).  So ueventfd() with a default delay and
 * ueventfd_coalesce() may fail with ENOMEM instead.
 *
 * PENDING.  t->pending lets a writer skip the lock while a deadline is
 * already set.  An arm exchanges 0 -> 1 (seq_cst) and only the winner
 * queues.  The thread takes a due timer off the heap and stores pending = 0
 * (seq_cst) *before* it calls fn.  So a writer that found pending == 1 did
 * its own work (queueing items, adding to the counter) before its exchange,
 * which precedes the thread's store, which precedes fn's look at that
 * state: the run that is due delivers what the writer left.  A writer whose
 * exchange comes after the store queues a new run.
 *
 * Lifetime: a queued or running timer holds a reference on its owner
 * (uobj_get at queueing, uobj_put after fn or at cancel), so a closed
 * ueventfd stays valid until its last run is over.  Close waits for a run
 * in progress (timer_wait_idle), so that the run's reference, and with the
 * last reference the ueventfd's kernel fd, are gone when close returns: the
 * fd number is free then, as after close(2).
 *
 * fork: the parent's thread does not come along.  obj.c's fork handlers
 * hold the lock across fork, after the fork gate (the heap is consistent
 * in the child); the child resets the conditions (timer_fork_child), its
 * ueventfds deliver what they held at once and take their timers off the
 * heap (eventfd.c's fork_child), then, if the parent had a thread and some
 * ueventfd still has room reserved, the child starts its own
 * (timer_fork_child_start, the child handler's last step: glibc allows
 * pthread_create there, and no write has to).  So a forked publisher's
 * coalesced writes stay coalesced (proposal 004).  ThreadSanitizer's
 * runtime cannot start a thread in the child of a threaded process: there
 * the child has none until its next ueventfd() or ueventfd_coalesce()
 * (timer_ensure), and its coalesced writes wake at once meanwhile.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>

#include "lock.h"
#include "sys.h"
#include "timer.h"

#if defined(__SANITIZE_THREAD__)
#define TIMER__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TIMER__TSAN 1
#endif
#endif
#ifndef TIMER__TSAN
#define TIMER__TSAN 0
#endif

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct timer **heap;
	/* Timers queued; slots allocated; slots reserved (timer_reserve: at
	 * most one per ueventfd that has a delay, so n <= nres <= cap). */
	int n, cap, nres;
	bool started;  /* a thread exists in this process */
	bool sleeping; /* it waits on cond (signal it for an earlier deadline) */
	/* In a forked child, until its repairs are over: the parent had a
	 * thread (timer_fork_child_start starts one). */
	bool restart;
	/* The timer whose fn is running (written under lock, seq_cst; see
	 * timer_wait_idle), and the condition that signals its end. */
	_Atomic(struct timer *) running;
	pthread_cond_t idle;
	/* In a forked child: the timer the parent's thread was running. */
	struct timer *was_running;
} timer__g = { .lock = PTHREAD_MUTEX_INITIALIZER };


/*
 * AFFINITY.  A new thread inherits the CPU set of the thread that creates
 * it, and the timer thread is created by whichever thread arms first: often
 * a publisher pinned to one CPU that it keeps busy, where the timer thread
 * would then queue behind it for the CPU and deliver late (measured: up to
 * 3.4 ms after the deadline, with a debug print in the thread; a 5 ms
 * delay held up to 9.6 ms in the pubsub benchmark; t_timer_affinity).  The
 * thread serves the whole process, so it takes the CPU set the process had
 * when the library was loaded (what taskset(1) gave it), read here before
 * main() runs.
 */
static cpu_set_t timer__cpus;
static bool timer__cpus_ok;

__attribute__((constructor)) static void timer__load(void)
{
	timer__cpus_ok = sched_getaffinity(0, sizeof(timer__cpus),
					   &timer__cpus) == 0;
}

void timer_init(struct timer *t, struct uobj *owner, void (*fn)(struct timer *))
{
	atomic_init(&t->pending, 0);
	t->idx = -1;
	t->deadline = 0;
	t->fn = fn;
	t->owner = owner;
}

/* ---- the heap (lock held) ---------------------------------------------- */

static void timer__place(struct timer *t, int i)
{
	timer__g.heap[i] = t;
	t->idx = i;
}

static void timer__up(int i)
{
	struct timer *t = timer__g.heap[i];

	while (i > 0) {
		int parent = (i - 1) / 2;

		if (timer__g.heap[parent]->deadline <= t->deadline)
			break;
		timer__place(timer__g.heap[parent], i);
		i = parent;
	}
	timer__place(t, i);
}

static void timer__down(int i)
{
	struct timer *t = timer__g.heap[i];

	for (;;) {
		int c = 2 * i + 1;

		if (c >= timer__g.n)
			break;
		if (c + 1 < timer__g.n &&
		    timer__g.heap[c + 1]->deadline < timer__g.heap[c]->deadline)
			c++;
		if (t->deadline <= timer__g.heap[c]->deadline)
			break;
		timer__place(timer__g.heap[c], i);
		i = c;
	}
	timer__place(t, i);
}

static void timer__remove(struct timer *t)
{
	int i = t->idx;
	struct timer *last = timer__g.heap[--timer__g.n];

	t->idx = -1;
	if (last == t)
		return;
	timer__place(last, i);
	timer__up(i);
	timer__down(last->idx);
}

/* ---- the thread -------------------------------------------------------- */

/* The thread takes its lock directly, outside lock.h: it runs no signal
 * handler (all blocked), and it waits on its condition with the lock
 * released, which the fork gate must not count as holding it (the fork's
 * prepare takes this lock after the gate instead). */
static void *timer__main(void *arg)
{
	pthread_mutex_lock(&timer__g.lock);
	for (;;) {
		struct timer *t;
		struct timespec ts;
		uint64_t now;

		if (timer__g.n == 0) {
			timer__g.sleeping = true;
			pthread_cond_wait(&timer__g.cond, &timer__g.lock);
			timer__g.sleeping = false;
			continue;
		}
		t = timer__g.heap[0];
		now = sys_now_ns();
		if (t->deadline > now) {
			ts.tv_sec = (time_t)(t->deadline / 1000000000u);
			ts.tv_nsec = (long)(t->deadline % 1000000000u);
			timer__g.sleeping = true;
			pthread_cond_timedwait(&timer__g.cond, &timer__g.lock,
					       &ts);
			timer__g.sleeping = false;
			continue;
		}
		timer__remove(t);
		/* running before pending: a closer that sees pending == 0
		 * then sees running == t (timer_wait_idle). */
		atomic_store(&timer__g.running, t);
		/* Before fn looks at anything: see PENDING above. */
		atomic_store(&t->pending, 0);
		pthread_mutex_unlock(&timer__g.lock);
		t->fn(t);
		/* Not the last reference while a closer waits (it holds one). */
		uobj_put(t->owner);
		pthread_mutex_lock(&timer__g.lock);
		atomic_store(&timer__g.running, NULL);
		pthread_cond_broadcast(&timer__g.idle);
	}
	return arg;
}

static void timer__conds(void)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&timer__g.cond, &ca);
	pthread_cond_init(&timer__g.idle, &ca);
	pthread_condattr_destroy(&ca);
}

__attribute__((constructor)) static void timer__setup(void)
{
	timer__conds();
}

void timer_fork_prepare(void)
{
	pthread_mutex_lock(&timer__g.lock);
}

void timer_fork_parent(void)
{
	pthread_mutex_unlock(&timer__g.lock);
}

void timer_fork_child(void)
{
	/* Only this thread exists, and it holds the lock (prepare): fresh
	 * conditions, and no timer thread (the parent's did not come along;
	 * a run it had in progress is redone by its ueventfd's fork_child). */
	timer__conds();
	timer__g.was_running = atomic_load(&timer__g.running);
	atomic_store(&timer__g.running, NULL);
	timer__g.restart = timer__g.started && !TIMER__TSAN;
	timer__g.started = false;
	timer__g.sleeping = false;
	pthread_mutex_unlock(&timer__g.lock);
}

/* Lock held. */
static int timer__start(void)
{
	sigset_t all, old;
	pthread_attr_t a;
	pthread_t th;
	int r;

	/* The thread must never take a signal meant for the application:
	 * it starts with every signal blocked (the mask is inherited). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 256 * 1024); /* ample, sanitizers included */
	if (timer__cpus_ok) /* AFFINITY */
		pthread_attr_setaffinity_np(&a, sizeof(timer__cpus), &timer__cpus);
	r = pthread_create(&th, &a, timer__main, NULL);
	if (r == EINVAL && timer__cpus_ok) {
		/* The load-time CPUs are no longer allowed (cgroup change,
		 * hotplug): inherit the creator's instead. */
		pthread_attr_destroy(&a);
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&a, 256 * 1024);
		r = pthread_create(&th, &a, timer__main, NULL);
	}
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r)
		return -r;
	pthread_setname_np(th, "uepoll-timer");
	timer__g.started = true;
	return 0;
}

int timer_reserve(void)
{
	int r = 0;

	lock_take(&timer__g.lock);
	if (timer__g.nres == timer__g.cap) {
		int cap = timer__g.cap ? 2 * timer__g.cap : 64;
		struct timer **h = realloc(timer__g.heap, sizeof(*h) * (size_t)cap);

		if (h) {
			timer__g.heap = h;
			timer__g.cap = cap;
		} else {
			r = -ENOMEM;
		}
	}
	if (!r && !timer__g.started)
		r = timer__start();
	if (!r)
		timer__g.nres++;
	lock_drop(&timer__g.lock);
	return r;
}

void timer_unreserve(void)
{
	lock_take(&timer__g.lock);
	timer__g.nres--;
	lock_drop(&timer__g.lock);
}

void timer_fork_child_start(void)
{
	lock_take(&timer__g.lock);
	/* (A failure leaves the child without one: its coalesced writes wake
	 * at once, its next ueventfd() or ueventfd_coalesce() tries again.) */
	if (timer__g.restart && !timer__g.started && timer__g.nres)
		(void)timer__start();
	timer__g.restart = false;
	lock_drop(&timer__g.lock);
}

void timer_ensure(void)
{
	lock_take(&timer__g.lock);
	if (!timer__g.started && timer__g.nres)
		(void)timer__start();
	lock_drop(&timer__g.lock);
}

int timer_arm(struct timer *t, uint64_t delay_ns)
{
	/* seq_cst: see PENDING. */
	if (atomic_load(&t->pending) || atomic_exchange(&t->pending, 1))
		return 0;
	lock_take(&timer__g.lock);
	if (!timer__g.started || timer__g.n == timer__g.cap) {
		atomic_store(&t->pending, 0);
		lock_drop(&timer__g.lock);
		return -EAGAIN;
	}
	uobj_get(t->owner);
	t->deadline = sys_now_ns() + delay_ns;
	timer__g.heap[timer__g.n] = t;
	t->idx = timer__g.n++;
	timer__up(t->idx);
	if (t->idx == 0 && timer__g.sleeping)
		pthread_cond_signal(&timer__g.cond);
	lock_drop(&timer__g.lock);
	return 0;
}

bool timer_cancel(struct timer *t)
{
	bool was;

	if (!atomic_load(&t->pending))
		return false;
	lock_take(&timer__g.lock);
	was = t->idx >= 0;
	if (was) {
		/* Removing the earliest leaves the thread to wake at the old
		 * deadline and find a later one (or none): no signal needed. */
		timer__remove(t);
		atomic_store(&t->pending, 0);
	}
	lock_drop(&timer__g.lock);
	if (was)
		uobj_put(t->owner);
	return was;
}

bool timer_was_running(struct timer *t)
{
	return timer__g.was_running == t;
}

void timer_wait_idle(struct timer *t)
{
	sigset_t all, old;
	int cs;

	/* seq_cst, pairs with the thread's store of running before pending:
	 * a run that took t is seen here. */
	if (atomic_load(&timer__g.running) != t)
		return;
	/* Waiting for the run, this thread must neither count as inside the
	 * fork gate (the run may wait at it) nor take a signal whose handler's
	 * held write would take this lock: so the lock is taken directly, with
	 * every signal blocked (a close that finds a run in progress, rare).
	 * pthread_cond_wait is a cancellation point; a close is not cancelled
	 * half-way (it would leave the lock held). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
	pthread_mutex_lock(&timer__g.lock);
	while (atomic_load(&timer__g.running) == t)
		pthread_cond_wait(&timer__g.idle, &timer__g.lock);
	pthread_mutex_unlock(&timer__g.lock);
	pthread_setcancelstate(cs, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}
