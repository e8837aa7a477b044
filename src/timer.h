/* SPDX-License-Identifier: MIT */
/*
 * timer.h - deferred calls at a deadline, run by one process-wide thread.
 *
 * Used by coalesced ueventfd wakeups (eventfd_hold.c): a write that would
 * wake a sleeper arms the ueventfd's timer instead, and the thread delivers
 * the wakeup at the deadline.  The thread is started when a ueventfd is first
 * given a delay (timer_reserve), never by an arm, and sleeps without a
 * timeout while no timer is armed, so nothing runs when nothing is
 * pending.
 */
#ifndef UEPOLL_TIMER_H
#define UEPOLL_TIMER_H

#include "obj.h"

struct timer {
	/* 1 from the arm that queues the timer until the thread takes it off
	 * the heap (or a cancel does), so that writers skip the lock while a
	 * deadline is already pending.  seq_cst: see timer.c (PENDING). */
	_Atomic int pending;
	/* Under the timer lock: heap slot (-1: not queued) and deadline. */
	int idx;
	uint64_t deadline;
	/* Called by the thread, with no lock held, once the deadline passed. */
	void (*fn)(struct timer *t);
	/* Kept alive by a reference while the timer is queued or running. */
	struct uobj *owner;
};

void timer_init(struct timer *t, struct uobj *owner, void (*fn)(struct timer *));
/*
 * Make room for one more timer that may be armed, and start the thread if
 * it is not running (a forked child's, for one).  Not async-signal-safe
 * (it allocates and creates a thread): called when a ueventfd is given a
 * delay, so that timer_arm, which a signal handler's write may reach, does
 * neither.  0 or -errno; unreserve gives the room back.
 */
int timer_reserve(void);
void timer_unreserve(void);
/* Start the thread if room is reserved and it is not running (a forked
 * child's first ueventfd() or ueventfd_coalesce() calls it).  Not
 * async-signal-safe: never called by a read or write. */
void timer_ensure(void);
/*
 * Queue t to run in delay_ns unless it is pending already (then nothing
 * changes: the earlier deadline stands).  The caller holds a reference on
 * the owner; the timer takes its own.  0, or -EAGAIN when there is no room
 * reserved or no thread: the caller then delivers at once.  Allocates
 * nothing and is async-signal-safe for a thread that holds no uepoll lock
 * (lock.h).
 */
int timer_arm(struct timer *t, uint64_t delay_ns);
/* Take t off the heap if it is queued; true if it was (its fn will not run
 * for that arm: the caller delivers what it owed).  A run already in
 * progress is not waited for (it holds its own reference). */
bool timer_cancel(struct timer *t);
/* Wait until no run of t is in progress.  The caller holds a reference on
 * the owner and no lock a timer fn takes.  Closing uses it so that the
 * run's reference is gone, and the owner's kernel fd closed with the last
 * reference, by the time close returns. */
void timer_wait_idle(struct timer *t);
/* In a forked child: was the parent's thread running t at the fork? */
bool timer_was_running(struct timer *t);
/* fork handlers (obj.c calls them after the fork gate, lock.c). */
void timer_fork_prepare(void);
void timer_fork_parent(void);
void timer_fork_child(void);
/* In a forked child, once every object is repaired (no timer of the
 * parent's is queued): start a thread if the parent had one and some room
 * is reserved (not under ThreadSanitizer). */
void timer_fork_child_start(void);

#endif
