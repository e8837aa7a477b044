/* SPDX-License-Identifier: MIT */
/*
 * timer.h - deferred calls at a deadline, run by one process-wide thread.
 *
 * Used by coalesced ueventfd wakeups (eventfd.c): a write that would wake a
 * sleeper arms the ueventfd's timer instead, and the thread delivers the
 * wakeup at the deadline.  The thread is started on the first arm and sleeps
 * without a timeout while no timer is armed, so nothing runs when nothing is
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
 * Queue t to run in delay_ns unless it is pending already (then nothing
 * changes: the earlier deadline stands).  The caller holds a reference on
 * the owner; the timer takes its own.  0, or -ENOMEM / -EAGAIN when the
 * heap or the thread cannot be had: the caller then delivers at once.
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

#endif
