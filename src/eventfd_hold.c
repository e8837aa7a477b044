/* SPDX-License-Identifier: MIT */
/*
 * eventfd_hold.c - a ueventfd's coalesced wakeups (COALESCE) and held
 * writes (HOLD), delivered by its timer.
 *
 * COALESCE (ueventfd_coalesce, non-semaphore only).  A non-semaphore eventfd
 * sums its writes, so a sleeper woken once collects them all; waking it on
 * every write, the kernel's rule, keeps a busy publisher's subscriber busy
 * doing nothing useful (26% of a CPU in proposal 004, 92% in our pubsub).
 * So a ueventfd may have a delay (at most UEVENTFD_COALESCE_MAX_US, 100 ms)
 * and a count; UEPOLL_EVENTFD_COALESCE="delay_us[,count]" is the process's
 * default (config.c).  A write with a delay
 * set, whose new counter value is below the count threshold, does all of a
 * write's work except the system calls that wake: it adds to the counter,
 * queues the watching items (wq_wake with hold), and notes whether an
 * instance's doorbell was not rung or the mirror was clear.  If so it arms
 * the ueventfd's timer (timer.c), unless it is armed already; at the
 * deadline the timer thread rings what is still owed (uefd__deliver):
 * doorbells of instances whose item is still queued (wq_kick), and the
 * mirror if the counter is still non-zero.  So readers that are awake see
 * every write at once (the counter and the ready queues are up to date);
 * only sleepers wait, at most `delay`.  No lost wakeup: a deferred ring is
 * decided after the item is queued and the counter updated, exactly where
 * the write would have rung (DOORBELL in bell.c, MIRROR in eventfd.c), and
 * the timer looks again after it cleared `pending` (PENDING in timer.c; the
 * held walk and the kick both hold wq.lock, which orders a write's queueing
 * before or after the kick's look: models/coalesce.pml).  A write that
 * reaches the count, a change of the setting and a close deliver at once.
 *
 * HOLD (UEVENTFD_HOLD_WRITES, on top of a delay).  Holding only the wakeup
 * does not help a reader that is awake: it sees each write at once, and
 * against a publisher that never pauses it finds the counter non-zero after
 * every read and loops without sleeping (pubsub's 5 ms row: 8-30% of a CPU,
 * depending on how often the publisher stalls; held, 0.2-0.3%).  So the
 * writes themselves are held: a write adds to `held` instead of `count`
 * and touches nothing else (no walk, no lock of the source, no system
 * call), then arms the timer (one load while it is pending; the first
 * write of a batch takes the timer's lock).  The delivery moves `held` into
 * `count` with one exchange and from there is an ordinary write (uefd__show:
 * walk, doorbells, mirror), so readiness, reads and the DOORBELL and MIRROR
 * arguments see nothing new: an awake reader sees a batch when it is shown,
 * and a subscriber that drains the counter sleeps until the next one, however
 * fast the publisher writes.  No value is stranded: a writer adds (seq_cst
 * CAS) then loads `pending` in timer_arm; the thread clears `pending`
 * (seq_cst) before the run's exchange of `held`; so either the run takes the
 * value or the writer arms a new run (PENDING in timer.c;
 * models/hold.pml).  The mode is a bit of co_delay_us (UEFD_HOLD_BIT), on
 * the counter's line: a plain write reads no second line.  A write that
 * brings `held` to the count threshold shows it at once.  Held writes keep
 * count + held <= UEFD_MAX; a value that would not fit (plain writes racing
 * with a change of setting, which do not look at `held`) stays held and is
 * shown by the next run.
 *
 * The add itself is the write's (uefd__add_held in eventfd.c, which then
 * calls uefd__held).  What SHARED does differently (a shared ueventfd holds
 * its wakeups, never its values) comes from its steps (STEPS in
 * eventfd_impl.h).
 *
 * LOCKING (eventfd.c): the timer's lock is a leaf taken with no other lock
 * held.
 */
#include <errno.h>

#include "eventfd_impl.h"
#include "config.h"
#include "lock.h"
#include "sys.h"

/* The process default: UEPOLL_EVENTFD_COALESCE (config.c). */
static void uefd__default(struct ueventfd_coalesce *d)
{
	struct config c = config_get();

	d->delay_us = c.coalesce_us;
	d->flags = 0;
	d->count = c.coalesce_count;
}

/* A ueventfd made with the environment's delay (not published yet, no
 * lock): reserve its timer's room, so that a write never has to (timer.h);
 * none can be had: no delay. */
static void uefd__default_delay(struct uefd *e, uint32_t delay_us)
{
	if (delay_us && timer_reserve() == 0)
		e->co_reserved = true;
	else
		delay_us = 0;
	atomic_init(&e->sh->co_delay_us, delay_us);
}

static void uefd__timer_fn(struct timer *t);

/* At creation (not published yet, no lock): the process default, which a
 * semaphore ueventfd does not take, and the timer. */
void uefd__coalesce_init(struct uefd *e)
{
	struct ueventfd_coalesce dflt;

	uefd__default(&dflt);
	if (e->semaphore)
		dflt = (struct ueventfd_coalesce){ 0 }; /* wakes at once */
	uefd__default_delay(e, dflt.delay_us);
	atomic_init(&e->sh->co_count, dflt.count);
	atomic_init(&e->sh->held, 0);
	timer_init(&e->co_timer, &e->obj, uefd__timer_fn);
	timer_ensure();
}

/* The wakeups held by earlier writes (COALESCE), and their values (HOLD):
 * show them and ring what is still owed. */
void uefd__deliver(struct uefd *e)
{
	uefd__show(e);
	if (atomic_load(&e->wq.n))
		wq_kick(&e->wq);
	/* kfd is ours whatever became of the public number. */
	uefd__sync(e);
	if (atomic_load(&e->sh->count))
		uefd__xwake(e); /* NAP */
}

/* Deliver now what the timer would have: the deferred wakeups if a run was
 * pending (cancelled here), else any writes a racing writer held after the
 * last run (HOLD).  Close and a change of setting call it. */
void uefd__flush(struct uefd *e)
{
	if (timer_cancel(&e->co_timer))
		uefd__deliver(e);
	else
		uefd__show(e);
}

static void uefd__timer_fn(struct timer *t)
{
	uefd__deliver(container_of(t, struct uefd, co_timer));
}

/* Show the held writes (HOLD): move them into the counter and wake as one
 * write of their sum that is due now.  The timer thread, a write that
 * reaches the count, a change of setting and close call it. */
void uefd__show(struct uefd *e)
{
	const struct uefd_steps *s;
	uint64_t h, c, take;
	bool kw = false;

	if (!atomic_load(&e->sh->held))
		return;
	/* SHARED: under xm (uefd__xshow), unless it bypasses. */
	s = uefd__steps(e);
	if (unlikely(s->show) && s->show(e))
		return;
	if (atomic_load_explicit(&e->sh->due, memory_order_relaxed))
		atomic_store_explicit(&e->sh->due, 0, memory_order_relaxed);
	h = atomic_exchange(&e->sh->held, 0);
	if (!h)
		return;
	c = atomic_load(&e->sh->count);
	if (c == UEFD_GONE) {
		/* A held write that raced with a demotion: the kernel fd has
		 * the counter now (DEMOTE). */
		uefd_demote_wait(e);
		(void)sys_write(e->obj.kfd, &h, sizeof(h));
		return;
	}
	do {
		take = UEFD_MAX - c < h ? UEFD_MAX - c : h;
		s = uefd__steps(e);
	} while (s->cross && uefd__crosses(c, c + take)
			 ? !s->cross(e, &c, c + take, false, &kw)
			 : !atomic_compare_exchange_weak(&e->sh->count, &c,
							 c + take));
	if (take < h) {
		/* It did not fit (HOLD): the rest waits for the next run.  If
		 * none can be armed, the next write, change or close shows
		 * it. */
		atomic_fetch_add(&e->sh->held, h - take);
		(void)uefd__arm(e, uefd__delay_ns(e));
	}
	uefd__wrote(e, c + take, true);
}

/* HOLD: the timer shows the held writes, or this write does if it brought
 * them to the count (or if no timer can be had).  held_now: `held` after
 * the write. */
void uefd__held(struct uefd *e, uint64_t held_now)
{
	uint64_t cnt = atomic_load_explicit(&e->sh->co_count, memory_order_relaxed);
	const struct uefd_steps *s = uefd__steps(e);

	/* SHARED: a deadline, for the other processes (uefd__xdue). */
	if (unlikely(s->held))
		s->held(e);
	if ((cnt && held_now >= cnt) ||
	    uefd__arm(e, uefd__delay_ns(e)) < 0)
		uefd__show(e);
}

int uefd_coalesce(struct uefd *e, const struct ueventfd_coalesce *set,
		  struct ueventfd_coalesce *old)
{
	struct ueventfd_coalesce o;
	bool reserved = false;
	uint32_t d;
	int r;

	if (set && ((set->flags & ~UEVENTFD_HOLD_WRITES) ||
		    set->delay_us > UEVENTFD_COALESCE_MAX_US ||
		    ((set->flags & UEVENTFD_HOLD_WRITES) && !set->delay_us)))
		return -EINVAL;
	/* A semaphore ueventfd wakes at once: only "no delay" is accepted. */
	if (set && e->semaphore && set->delay_us)
		return -EINVAL;
	timer_ensure();
	/* A delay needs room in the timer's heap, reserved before the lock
	 * (the timer's lock nests with none of ours); the first one is kept,
	 * a second given back. */
	if (set && set->delay_us) {
		r = timer_reserve();
		if (r < 0)
			return r;
		reserved = true;
	}
	lock_take(&e->wq.lock);
	d = atomic_load_explicit(&e->sh->co_delay_us, memory_order_relaxed);
	o.delay_us = d & ~UEFD_HOLD_BIT;
	o.flags = d & UEFD_HOLD_BIT ? UEVENTFD_HOLD_WRITES : 0;
	o.count = atomic_load_explicit(&e->sh->co_count, memory_order_relaxed);
	if (set) {
		if (reserved && !e->co_reserved) {
			e->co_reserved = true;
			reserved = false;
		}
		atomic_store_explicit(&e->sh->co_count, set->count,
				      memory_order_relaxed);
		atomic_store_explicit(&e->sh->co_delay_us,
				      set->delay_us |
					      (set->flags & UEVENTFD_HOLD_WRITES
						       ? UEFD_HOLD_BIT
						       : 0),
				      memory_order_relaxed);
	}
	lock_drop(&e->wq.lock);
	if (reserved)
		timer_unreserve();
	/* A new setting ends the wakeup held under the old one (early is
	 * always within the bound), and shows the writes it held.  A run of
	 * the timer already in progress may have taken them out of `held`
	 * and not yet added them to the counter (uefd__show): wait for it,
	 * so that every write held before this call is in the counter when
	 * it returns (t_soak drains right after setting a ueventfd plain). */
	if (set) {
		uefd__flush(e);
		timer_wait_idle(&e->co_timer);
	}
	if (old)
		*old = o;
	return 0;
}
