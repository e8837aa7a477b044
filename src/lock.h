/* SPDX-License-Identifier: MIT */
/*
 * lock.h - every mutex uepoll takes, and what a signal handler may do while
 * its thread holds one (lock.c).
 *
 * A ueventfd's read and write are async-signal-safe, as read(2) and write(2)
 * on an eventfd are: a handler may call them whatever the thread it
 * interrupted was doing, inside uepoll included.  What makes that hard is
 * the locks: a handler that took a lock its own interrupted frame holds
 * would wait for ever.  So every lock goes through lock_take/lock_drop,
 * which count the calling thread's depth (a thread-local counter: the
 * handler runs on the same thread and reads the same counter).  A
 * ueventfd operation that finds depth > 0 does only what needs no lock
 * (the counter's CAS, futex wakes) and leaves the rest (the walk of the
 * watchers, the timer) as owed work on the object, queued on this thread;
 * the interrupted frame does it when it leaves its outermost lock
 * (lock_drop reaching depth 0, then lock__drain).  Depth 0 means the
 * thread holds no lock of ours, so a handler may take them.  The same holds
 * for a handler's close, dup or fcntl (SIGNALS in obj.c): it changes the
 * numbers under obj__lock, which is MASKED (below: no handler ever runs on
 * a thread inside it), and owes the close and the release of an object.
 *
 * The counter goes up before the lock is taken and down after it is
 * released, so a handler that interrupts pthread_mutex_lock/unlock itself
 * also sees depth > 0.  Signal fences keep the compiler from moving the
 * counter's updates across the calls (only this thread and its handlers
 * read it).
 *
 * Owed work (struct lock_owed): `bits` says what is owed (the owner's
 * meaning; nonzero while queued on some thread); the first operation that
 * sets a bit (fetch_or found 0) queues the node on its thread, holding a
 * reference the drain drops.  The drain takes the thread's whole list
 * (exchange), reads each node's next, then takes its bits (exchange to 0)
 * and runs the owner's function: an operation whose fetch_or came before
 * that exchange is covered by this run; one after it queues the node
 * again (possibly on another thread: the node's next was read first).
 * lock.c's LOCKED-WORK argument and models/owed.pml check this.
 *
 * Fork (the FENCE and the GATE in lock.c).  A child must find no lock held
 * and nothing half-changed under one.  The outermost lock_take of a thread
 * (depth 0 -> 1) publishes "inside" in the thread's slot and looks at the
 * fork gate; the fork's prepare handler closes the gate and waits until no
 * other thread is inside.  A thread that finds the gate closed steps out
 * and waits for it to open.  So a fork costs the waits of the threads that
 * are inside then (a lock's hold time), whatever the number of objects.
 * Some operations take and drop several locks and must still be seen by a
 * fork whole, not begun or over: a creation (which a fork must share), a
 * demotion (which only its own thread can finish).  They are spans
 * (lock_span_enter/leave); before its gate, the prepare closes the fence,
 * waits until no span is in flight, and does what it has to do with every
 * object (share them) while new spans wait at the fence.
 *
 * LOCK ORDER (the one statement of it; docs/design.md's LOCKING table says
 * what each lock protects).  A thread that holds a lock of a class may
 * take only locks of the classes below it:
 *
 *   port->mtx        an instance's ctl, item list, records (port.c, krec.c)
 *   bell.wlock       an instance's watched count and doorbell mode (bell.c);
 *                    the only lock taken across instances: a holder's mtx,
 *                    then the inner instance's wlock
 *   wq->lock         a source's watchers (wq.c, eventfd.c)
 *   rq->lock         an instance's ready queue, consumer side (readyq.c)
 *   bell.dblock      an instance's doorbell system call with its `set`
 *                    (bell.c); taken under any of the above but rq->lock
 *                    (the signal path holds wq->lock, bell_watch wlock),
 *                    or alone (waits); takes nothing inside
 *
 * No path holds two locks of one class.  Nothing is taken inside rq->lock.
 * A closing source, which must take port->mtx while it finds items through
 * its wait queue, drops wq->lock first and re-finds the item
 * (port_drop_source).  Leaves, taken with none of the above held and
 * taking nothing inside (but as noted): turn->lock (turn.c), an
 * instance's batching policy's lock (batch.c), the pool locks (obj.c;
 * uobj_free takes obj__lock inside its own), obj__lock (obj.c; MASKED,
 * taken by a signal handler whatever its thread holds, so under any
 * lock; takes nothing, makes dup's system call inside: NUMBERS),
 * fdzone__lock (fdzone.c), the timer's lock (timer.c; its thread takes
 * it directly, outside lock_take).
 */
#ifndef UEPOLL_LOCK_H
#define UEPOLL_LOCK_H

#include <pthread.h>
#include <signal.h>

#include "internal.h"

#define LOCK__TLS __attribute__((tls_model("initial-exec")))

/* Locks this thread holds (and is taking or dropping). */
extern __thread unsigned lock__depth LOCK__TLS;

/* A thread's published state for the fork gate: `inside` is non-zero while
 * the thread holds (or takes) one of our locks.  One cache line each. */
struct lock__slot {
	_Atomic unsigned inside;
	_Atomic int owned;
	char pad_[UEPOLL_CACHELINE - 2 * sizeof(int)];
};
/* This thread's slot (NULL until its first lock), and whether it is the
 * shared one (more threads than slots: inside is then a count). */
extern __thread struct lock__slot *lock__me LOCK__TLS;
extern __thread bool lock__shared LOCK__TLS;
/* Closed (1) while a fork is being prepared. */
extern _Atomic int lock__gate;
/* No membarrier(2): the fast path fences instead. */
extern bool lock__fence;
void lock__enter_slow(void);

struct lock_owed;
/* This thread's owed work (lock.c). */
extern __thread _Atomic(struct lock_owed *) lock__list LOCK__TLS;

struct lock_owed {
	struct lock_owed *next;	/* the owning thread's list */
	_Atomic unsigned bits;	/* owed work; != 0 while queued */
	/* Run by the drain with the bits it took (depth 0, no lock held);
	 * drops the reference that queueing the node took. */
	void (*fn)(struct lock_owed *o, unsigned bits);
};

void lock__drain(void);

/* Does this thread hold (or is it taking or dropping) one of our locks? */
static inline bool lock_held_here(void)
{
	return lock__depth != 0;
}

/* The outermost lock of this thread: publish it, then look at the gate
 * (GATE in lock.c: Dekker against the fork's prepare, whose membarrier(2)
 * stands for this side's fence). */
static inline void lock__enter(void)
{
	struct lock__slot *s = lock__me;

	if (unlikely(!s || lock__shared)) {
		lock__enter_slow();
		return;
	}
	atomic_store_explicit(&s->inside, 1, memory_order_relaxed);
	if (unlikely(lock__fence))
		atomic_thread_fence(memory_order_seq_cst);
	else
		atomic_signal_fence(memory_order_seq_cst);
	if (unlikely(atomic_load_explicit(&lock__gate, memory_order_relaxed)))
		lock__enter_slow();
}

static inline void lock__leave(void)
{
	if (likely(!lock__shared))
		atomic_store_explicit(&lock__me->inside, 0,
				      memory_order_release);
	else
		atomic_fetch_sub_explicit(&lock__me->inside, 1,
					  memory_order_release);
}

static inline void lock_take(pthread_mutex_t *m)
{
	if (lock__depth++ == 0)
		lock__enter();
	atomic_signal_fence(memory_order_seq_cst);
	pthread_mutex_lock(m);
}

/* After a lock's release: the depth goes down, and the owed work queued on
 * this thread meanwhile runs once it holds no lock (not on the way out of
 * a nested one). */
static inline void lock__dropped(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	if (--lock__depth == 0) {
		lock__leave();
		if (unlikely(atomic_load_explicit(&lock__list,
						  memory_order_relaxed)))
			lock__drain();
	}
}

static inline void lock_drop(pthread_mutex_t *m)
{
	pthread_mutex_unlock(m);
	lock__dropped();
}

/*
 * MASKED: a lock a signal handler may take whatever its thread
 * holds.  Its holder blocks every signal from before it takes it to after
 * it has released it, so no handler ever runs on a thread that holds it,
 * or is taking or dropping it; and it is a leaf, taken with nothing inside
 * and never held across a wait for another thread, so its holder finishes
 * whatever the other threads hold.  A handler that waits for it waits for
 * another thread's short section, never for its own frame.  Not the fork
 * gate's business at depth > 0 (a handler's hold while its frame is
 * outside the gate): the fork's prepare takes such a lock itself after
 * the gate (obj.c, FORK).  obj__lock (obj.c, NUMBERS) is the one.  Its
 * price: two rt_sigprocmask(2) around each hold (one pair at a creation,
 * one at a close, one at the release).  *old: the mask to restore.
 */
void lock_take_masked(pthread_mutex_t *m, sigset_t *old);
void lock_drop_masked(pthread_mutex_t *m, const sigset_t *old);

/*
 * A lock that is not ours to take with lock_take (a ueventfd's cross-process
 * lock, SHARED in eventfd_shared.c: a robust, process-shared pthread mutex in
 * shared memory) is held inside these: the depth is raised first, so that a
 * signal handler of this thread never calls into that lock's code while the
 * thread is inside it (it owes its work instead, as for our own locks), and
 * the owed work runs when the depth is 0 again.  Not the fork gate: such a
 * lock protects only shared memory, which the holder releases in its own
 * process whatever a fork does (FORK in obj.c).
 */
static inline void lock_leaf_enter(void)
{
	lock__depth++;
	atomic_signal_fence(memory_order_seq_cst);
}

static inline void lock_leaf_leave(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	if (--lock__depth == 0 &&
	    unlikely(atomic_load_explicit(&lock__list, memory_order_relaxed)))
		lock__drain();
}

/*
 * SPANS (FENCE in lock.c).  An operation that a fork must find not begun or
 * over, never half-way, though it takes and drops locks and may wait
 * between them: a creation (uobj_alloc to its publication), a demotion
 * (obj.c).  Entered with no lock of ours held (a fork being prepared makes
 * it wait there); spans nest.  Not async-signal-safe.
 */
void lock_span_enter(void);
void lock_span_leave(void);
/* Is this thread inside a span (a fork from a signal handler that
 * interrupted one of its own: FENCE)? */
bool lock_span_here(void);

/* fork handlers (obj.c calls them first in prepare, last after):
 * lock_fork_fence first (one fork at a time; the spans in flight end, new
 * ones wait), then the prepare's own work with the objects, then
 * lock_fork_prepare (the gate); parent and child open both. */
void lock_fork_fence(void);
void lock_fork_prepare(void);
void lock_fork_parent(void);
void lock_fork_child(void);

/* pthread_mutex_init with the library's attributes (adaptive, normal). */
void lock_init(pthread_mutex_t *m);

/*
 * Owe work `bits` on o: queue it on this thread unless it is queued already
 * (anywhere).  The caller holds a reference on the object o belongs to;
 * hold, called only when the node is queued here, takes one more for the
 * queue, which o->fn drops.  Async-signal-safe.
 */
void lock_owe(struct lock_owed *o, unsigned bits, void (*hold)(struct lock_owed *));

#endif
