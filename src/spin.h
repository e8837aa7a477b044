/* SPDX-License-Identifier: MIT */
/*
 * spin.h - a wait that finds nothing ready polls for a short, adaptive time
 * before it sleeps in the kernel (SPIN in spin.c).
 */
#ifndef UEPOLL_SPIN_H
#define UEPOLL_SPIN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* One instance's spinning state.  Every field is a hint: the threads of the
 * instance update them with relaxed atomics, and a lost update only makes
 * one spin longer or shorter than the policy says (never a lost event: the
 * spin only decides when the sleep starts). */
struct spin {
	/* How long (ns) the next spin may last; 0: sleep at once. */
	_Atomic uint32_t budget;
	/* Sleeps at budget 0 since the last probe, and how many make a probe
	 * (SPIN_PROBE, doubling after each probe that finds nothing). */
	_Atomic uint32_t idle, period;
	/* Threads spinning now (at most SPIN_SPINNERS). */
	_Atomic int spinners;
	/* The instance got a deferred (coalesced) wakeup: it never spins again
	 * (spin_deferred). */
	_Atomic bool deferred;
	/* The longest spin (ns); 0: this instance never spins.  Set once. */
	uint32_t max;
	/* Polls between two looks at the clock: many when a poll is a load,
	 * one when it is a system call (KERNEL SPIN).  Set once. */
	uint32_t polls;
	/* KERNEL SPIN (spin.c): a hit during which the thread was preempted
	 * counts as a miss (PREEMPTED), and so does a spin the wait's
	 * deadline cut with nothing found (CUT).  Set once. */
	bool kernel;
};

/* off: never spin (UEPOLL_NOSPIN); else the process's UEPOLL_SPIN_NS. */
void spin_init(struct spin *s, bool off);
/* The spin of a wait on kernel fds (KERNEL SPIN in spin.c): on
 * (UEPOLL_SPIN_KERNEL), for the process's UEPOLL_SPIN_US; off, never. */
void spin_init_kernel(struct spin *s, bool on);
/*
 * A signal queued an item but deferred its wakeup (a coalescing ueventfd): the
 * instance's waits stop spinning for good, or a spinner would take every
 * such item at once and undo the coalescing its user asked for.  Called on
 * the signal path: a load, and a store only the first time.
 */
static inline void spin_deferred(struct spin *s)
{
	if (!atomic_load_explicit(&s->deferred, memory_order_relaxed))
		atomic_store_explicit(&s->deferred, true, memory_order_relaxed);
}

/* The instance got a deferred wakeup (spin_deferred): a hint, relaxed. */
static inline bool spin_was_deferred(struct spin *s)
{
	return atomic_load_explicit(&s->deferred, memory_order_relaxed);
}

/* This instance never spins (UEPOLL_NOSPIN, UEPOLL_SPIN_NS=0, or it got a
 * deferred wakeup): a hint, relaxed. */
static inline bool spin_off(struct spin *s)
{
	return !s->max || atomic_load_explicit(&s->deferred, memory_order_relaxed);
}

/* The next spin has a budget (it is not one of the probes of an instance
 * whose spins stopped): a hint, relaxed. */
static inline bool spin_armed(struct spin *s)
{
	return !spin_off(s) &&
	       atomic_load_explicit(&s->budget, memory_order_relaxed) > 0;
}

/*
 * Poll ready(arg) until it is true (returns true), the budget is spent or
 * deadline (CLOCK_MONOTONIC ns; < 0: none) passes (false: sleep).  Adapts
 * the budget: a spin that finds something keeps it (and grows it back to
 * max), one that finds nothing halves it.
 */
bool spin_wait(struct spin *s, bool (*ready)(void *), void *arg,
	       int64_t deadline);
/* In a forked child: nobody spins. */
static inline void spin_fork_child(struct spin *s)
{
	if (atomic_load_explicit(&s->spinners, memory_order_relaxed))
		atomic_store_explicit(&s->spinners, 0, memory_order_relaxed);
}

#endif
