/* SPDX-License-Identifier: MIT */
/*
 * lock.c - the lock depth and owed work of lock.h.
 *
 * LOCKED-WORK (no owed work is lost or run twice).  A node is on at most
 * one thread's list at a time: only the operation whose fetch_or of `bits`
 * found 0 queues it, and the bits go back to 0 only in a drain, after the
 * drain has taken the node off its list (the list exchange) and read its
 * next.  Every bit set is covered by exactly one fn run: the fetch_or and
 * the drain's exchange are RMWs of one atomic, so they are ordered; a bit
 * set before the exchange is in the bits it returns, one set after it
 * finds 0 and queues the node again.  The work itself (the walk of a
 * ueventfd's watchers) reads the object's current state, which includes
 * the counter update that came before the fetch_or (seq_cst), so the run
 * that takes the bit sees the write it stands for.  models/owed.pml checks
 * this with a handler that may interrupt the lock holder at any step.
 *
 * Thread-local state only: a thread's list is pushed by the thread and by
 * its signal handlers (CAS, which a handler may interrupt and which then
 * retries) and emptied by the thread with one exchange.
 *
 * GATE (fork).  Each thread that takes our locks owns a slot (claimed at its
 * first lock by CAS, no allocation: a signal handler may be the first; given
 * back by a thread-specific destructor when it exits).  Its outermost
 * lock_take stores inside = 1 then loads the gate; the prepare handler
 * stores gate = 1, runs membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (a full
 * barrier on every running thread of the process, standing for the fence
 * the fast path does not make), then waits until every other slot's inside
 * is 0.  Either the thread's load sees the gate closed (it then stores
 * inside = 0 and sleeps on the gate's futex until the parent or child
 * handler opens it), or prepare's load sees inside = 1 and waits for the
 * thread's lock_drop to store 0 (release: everything the thread did under
 * its locks comes before).  A thread that waits at the gate holds no lock
 * (its depth was 0), and no lock is held across a wait for another thread
 * that might wait at the gate (the one such wait, timer_wait_idle, takes
 * the timer's lock, which prepare takes separately), so prepare ends.  The
 * forking thread's own slot is skipped: if fork() is called from a signal
 * handler inside a lock, the child resumes the interrupted frame, which
 * releases it.  Without membarrier(2) (before Linux 4.14) the fast path
 * makes a full fence instead.  With more threads than slots the rest share
 * one slot whose inside is a count (an atomic add per outermost lock).
 *
 * FENCE (fork, before the gate).  The gate sees locks, not operations: a
 * creation publishes its object between two locks, a demotion marks its
 * object DEMOTING before its first lock and ends after its last.  A fork
 * between two such steps gave the child a ueventfd published after the
 * prepare's walk (a private copy, not shared: issue 32) or one stuck
 * DEMOTING for want of the thread that was demoting it (t_fork_create,
 * t_fork_demote; and t_fork_twice for two forks at once, below).  So such an
 * operation is a span: lock_span_enter adds to `spans` then loads the
 * fence (seq_cst both); lock_fork_fence (the prepare's first step) takes
 * lock__fork, stores fence = 1, then loads `spans` (seq_cst both) and
 * waits until it is down to the forking thread's own.  Dekker: either the
 * span sees the fence closed (it takes its add back and sleeps on the
 * fence until the parent or child handler opens it), or the prepare sees
 * the span counted and waits for its lock_span_leave.  A span waits for
 * nothing a fork holds (it began with no lock of ours, and the gate is
 * not closed while the fence waits), so the prepare ends; after it, no
 * span is in flight until the fork is over, and what the prepare does with
 * the objects (obj.c: share every ueventfd) sees each one whole.  Taking
 * lock__fork first also makes forks one at a time from their first step:
 * two forks whose prepares overlapped (glibc runs prepare handlers without
 * its own lock) had the second fork before the first had finished sharing
 * a ueventfd.  A fork from a signal handler skips its own thread's span,
 * as the gate skips its locks (the child resumes it); if another thread
 * forks meanwhile, the two wait for each other: a fork from a handler that
 * interrupted ueventfd() or uepoll_demote(), neither async-signal-safe.
 * models/gate.pml checks the fence with the gate.
 */
#include <errno.h>
#include <limits.h>
#include <linux/membarrier.h>
#include <signal.h>

#include "lock.h"
#include "sys.h"

__thread unsigned lock__depth LOCK__TLS;
__thread _Atomic(struct lock_owed *) lock__list LOCK__TLS;
static __thread bool lock__draining LOCK__TLS;
__thread struct lock__slot *lock__me LOCK__TLS;
__thread bool lock__shared LOCK__TLS;
_Atomic int lock__gate;
bool lock__fence;

#define LOCK__SLOTS 1024
/* Slots; the last one is shared by the threads beyond the others. */
static struct lock__slot lock__slots[LOCK__SLOTS];
/* Slots ever claimed (prepare looks at these). */
static _Atomic int lock__nslots;
static pthread_key_t lock__key;
static bool lock__key_ok;
/* Serialises forks (a raw mutex: not one of the locks the gate covers). */
static pthread_mutex_t lock__fork = PTHREAD_MUTEX_INITIALIZER;
/* FENCE: outermost spans in flight (futex word: the prepare waits on it);
 * this thread's depth of spans; the fence: 0 open, 1 closed, 2 closed with
 * spans waiting (futex word: the opener wakes them). */
static _Atomic int lock__spans;
static __thread unsigned lock__span_depth LOCK__TLS;
static _Atomic int lock__fenced;

void lock_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
}

void lock_owe(struct lock_owed *o, unsigned bits,
	      void (*hold)(struct lock_owed *))
{
	struct lock_owed *head;

	/* seq_cst: after the caller's update of the object (LOCKED-WORK). */
	if (atomic_fetch_or(&o->bits, bits) != 0)
		return;
	hold(o);
	head = atomic_load_explicit(&lock__list, memory_order_relaxed);
	do
		o->next = head;
	while (!atomic_compare_exchange_weak_explicit(&lock__list, &head, o,
						      memory_order_relaxed,
						      memory_order_relaxed));
}

void lock__drain(void)
{
	struct lock_owed *o, *next;

	if (lock__draining)
		return; /* an outer drain of this thread takes it */
	lock__draining = true;
	atomic_signal_fence(memory_order_seq_cst);
	while ((o = atomic_exchange_explicit(&lock__list, NULL,
					     memory_order_relaxed))) {
		for (; o; o = next) {
			next = o->next; /* before the bits: LOCKED-WORK */
			atomic_signal_fence(memory_order_seq_cst);
			o->fn(o, atomic_exchange(&o->bits, 0));
		}
	}
	atomic_signal_fence(memory_order_seq_cst);
	lock__draining = false;
}

/* ---- MASKED (lock.h) ---------------------------------------------------- */

void lock_take_masked(pthread_mutex_t *m, sigset_t *old)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, old);
	/* No handler of this thread from here: the depth and the lock are
	 * taken as any other's (a frame's outermost one passes the gate). */
	atomic_signal_fence(memory_order_seq_cst);
	lock_take(m);
}

void lock_drop_masked(pthread_mutex_t *m, const sigset_t *old)
{
	pthread_mutex_unlock(m);
	atomic_signal_fence(memory_order_seq_cst);
	/* The depth is still counted: a handler that runs at once sees it
	 * (and owes what it must), and the owed work runs after, unmasked. */
	pthread_sigmask(SIG_SETMASK, old, NULL);
	lock__dropped();
}

/* ---- GATE ------------------------------------------------------------- */

/* A thread exits: its slot is free again. */
static void lock__exit(void *arg)
{
	struct lock__slot *s = arg;

	if (s && s != &lock__slots[LOCK__SLOTS - 1])
		atomic_store_explicit(&s->owned, 0, memory_order_release);
}

__attribute__((constructor)) static void lock__setup(void)
{
	lock__key_ok = pthread_key_create(&lock__key, lock__exit) == 0;
	if (sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0)
		lock__fence = true;
}

/* This thread's first lock: claim a slot (async-signal-safe: a CAS per
 * slot; the key's value is in the thread's own table). */
static void lock__claim(void)
{
	int n = atomic_load_explicit(&lock__nslots, memory_order_acquire);

	for (int i = 0; i < LOCK__SLOTS - 1; i++) {
		int free = 0;

		if (atomic_compare_exchange_strong(&lock__slots[i].owned, &free,
						   1)) {
			while (n <= i &&
			       !atomic_compare_exchange_weak(&lock__nslots, &n,
							     i + 1))
				;
			if (lock__key_ok)
				pthread_setspecific(lock__key, &lock__slots[i]);
			lock__me = &lock__slots[i];
			return;
		}
	}
	lock__shared = true;
	lock__me = &lock__slots[LOCK__SLOTS - 1];
	atomic_store(&lock__nslots, LOCK__SLOTS);
}

void lock__enter_slow(void)
{
	if (!lock__me)
		lock__claim();
	for (;;) {
		if (lock__shared)
			atomic_fetch_add(&lock__me->inside, 1);
		else
			atomic_store(&lock__me->inside, 1);
		atomic_thread_fence(memory_order_seq_cst);
		if (!atomic_load(&lock__gate))
			return;
		/* A fork is being prepared: step out until it is done. */
		lock__leave();
		while (atomic_load(&lock__gate))
			sys_futex_wait(&lock__gate, 1);
	}
}

/* ---- FENCE ------------------------------------------------------------ */

static void lock__span_out(void)
{
	/* seq_cst, then the fence (seq_cst): a prepare that closed it waits
	 * on the count, which this changed. */
	atomic_fetch_sub(&lock__spans, 1);
	if (atomic_load(&lock__fenced))
		sys_futex_wake_all(&lock__spans);
}

void lock_span_enter(void)
{
	int f;

	if (lock__span_depth++)
		return;
	for (;;) {
		/* seq_cst both: Dekker with lock_fork_fence (FENCE). */
		atomic_fetch_add(&lock__spans, 1);
		if (!atomic_load(&lock__fenced))
			return;
		/* A fork is being prepared: out, until it is over. */
		lock__span_out();
		while ((f = atomic_load(&lock__fenced)) != 0) {
			if (f == 1 && !atomic_compare_exchange_strong(
					      &lock__fenced, &f, 2))
				continue;
			sys_futex_wait(&lock__fenced, 2);
		}
	}
}

bool lock_span_here(void)
{
	return lock__span_depth != 0;
}

void lock_span_leave(void)
{
	if (--lock__span_depth == 0)
		lock__span_out();
}

void lock_fork_fence(void)
{
	/* This thread's own span (a fork from a signal handler): its frame
	 * goes on in the child. */
	int mine = lock__span_depth ? 1 : 0, n;

	pthread_mutex_lock(&lock__fork);
	/* seq_cst both: Dekker with lock_span_enter (FENCE). */
	atomic_store(&lock__fenced, 1);
	while ((n = atomic_load(&lock__spans)) > mine)
		sys_futex_wait(&lock__spans, n);
}

static void lock__unfence(void)
{
	if (atomic_exchange(&lock__fenced, 0) == 2)
		sys_futex_wake_all(&lock__fenced);
}

/* ---- the gate, inside the fence ----------------------------------------- */

void lock_fork_prepare(void)
{
	int n;

	atomic_store(&lock__gate, 1);
	if (!lock__fence)
		sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
	n = atomic_load(&lock__nslots);
	for (int i = 0; i < n; i++) {
		struct lock__slot *s = &lock__slots[i];
		/* This thread's own count in the shared slot. */
		unsigned mine = s == lock__me && lock__depth ? 1 : 0;

		if (s == lock__me && !lock__shared)
			continue;
		while (atomic_load_explicit(&s->inside, memory_order_acquire) >
		       mine)
			sys_yield();
	}
}

static void lock__open(void)
{
	atomic_store(&lock__gate, 0);
	sys_futex_wake_all(&lock__gate);
	lock__unfence();
	pthread_mutex_unlock(&lock__fork);
}

void lock_fork_parent(void)
{
	lock__open();
}

void lock_fork_child(void)
{
	int n = atomic_load(&lock__nslots);

	/* Only this thread exists: every other slot is free. */
	for (int i = 0; i < n; i++) {
		struct lock__slot *s = &lock__slots[i];

		if (s == lock__me)
			continue;
		atomic_store(&s->owned, 0);
		atomic_store(&s->inside, 0);
	}
	if (lock__shared)
		atomic_store(&lock__me->inside, lock__depth ? 1 : 0);
	/* The spans of the threads that did not come along (and the adds of
	 * those that were stepping out at the fence). */
	atomic_store(&lock__spans, lock__span_depth ? 1 : 0);
	lock__open();
}
