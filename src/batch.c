/* SPDX-License-Identifier: MIT */
/*
 * batch.c - the batching policy of an instance and the rule of a batching
 * wait (see include/uepoll.h and man 3 uepoll_batch for the rule as the
 * user sees it; each numbered case there is marked below).
 */
#include <errno.h>

#include "batch.h"
#include "lock.h"
#include "sys.h"

#define BATCH__MAX_US INT32_MAX

void batch_policy_init(struct batch_policy *b)
{
	/* Never destroyed: the memory is type-stable (obj.h). */
	lock_init(&b->lock);
	atomic_init(&b->seq, 0);
	atomic_init(&b->min_wait_us, 0);
	atomic_init(&b->min_events, 0);
	atomic_init(&b->inter_us, 0);
	atomic_init(&b->flags, 0);
}

static void batch__store(struct batch_policy *b, const struct uepoll_batch *v)
{
	/* A sequence lock (writers serialised by b->lock): odd while writing.
	 * The release fence orders the odd count before the fields, the
	 * release store the fields before the even count; pairs with the
	 * reader's acquire load and fence in batch_get. */
	uint32_t s = atomic_load_explicit(&b->seq, memory_order_relaxed);

	atomic_store_explicit(&b->seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&b->min_wait_us, v->min_wait_us,
			      memory_order_relaxed);
	atomic_store_explicit(&b->min_events, v->min_events,
			      memory_order_relaxed);
	atomic_store_explicit(&b->inter_us, v->inter_event_us,
			      memory_order_relaxed);
	atomic_store_explicit(&b->flags, v->flags, memory_order_relaxed);
	atomic_store_explicit(&b->seq, s + 2, memory_order_release);
}

void batch_get(struct batch_policy *b, struct uepoll_batch *out)
{
	uint32_t s0, s1;

	for (;;) {
		/* acquire: pairs with the writer's final release store. */
		s0 = atomic_load_explicit(&b->seq, memory_order_acquire);
		if (s0 & 1) {
			sys_yield();
			continue;
		}
		out->min_wait_us = atomic_load_explicit(&b->min_wait_us,
							memory_order_relaxed);
		out->min_events = atomic_load_explicit(&b->min_events,
						       memory_order_relaxed);
		out->inter_event_us = atomic_load_explicit(
			&b->inter_us, memory_order_relaxed);
		out->flags = atomic_load_explicit(&b->flags,
						  memory_order_relaxed);
		/* acquire fence: the field loads come before the re-check
		 * (pairs with the writer's release fence). */
		atomic_thread_fence(memory_order_acquire);
		s1 = atomic_load_explicit(&b->seq, memory_order_relaxed);
		if (s0 == s1)
			return;
	}
}

bool batch_active(const struct uepoll_batch *pol)
{
	return pol->min_wait_us || pol->min_events || pol->inter_event_us;
}

int batch_set(struct batch_policy *b, const struct uepoll_batch *set,
	      struct uepoll_batch *old)
{
	struct uepoll_batch o;

	if (set && (set->flags & ~UEPOLL_BATCH_FROM_FIRST ||
		    set->min_wait_us > BATCH__MAX_US ||
		    set->inter_event_us > BATCH__MAX_US))
		return -EINVAL;
	lock_take(&b->lock);
	batch_get(b, &o);
	if (set)
		batch__store(b, set);
	lock_drop(&b->lock);
	if (old)
		*old = o;
	return 0;
}

int batch_set_min_wait(struct batch_policy *b, uint64_t us)
{
	struct uepoll_batch o;

	if (us > BATCH__MAX_US)
		return -EINVAL;
	lock_take(&b->lock);
	batch_get(b, &o);
	if (o.min_wait_us != us) {
		struct uepoll_batch v = o;

		v.min_wait_us = (uint32_t)us;
		batch__store(b, &v);
	}
	lock_drop(&b->lock);
	return (int)o.min_wait_us;
}

void batch_start(struct batch *b, const struct uepoll_batch *pol, int max,
		 int64_t deadline, int64_t now)
{
	b->pol = *pol;
	b->max = max;
	b->n = 0;
	b->urgent = false;
	b->deadline = deadline < 0 ? BATCH_NEVER : deadline;
	b->last = now;
	if (pol->min_wait_us == 0)
		/* Counting or gap rules only: open until the timeout. */
		b->wend = BATCH_NEVER;
	else if (pol->flags & UEPOLL_BATCH_FROM_FIRST)
		b->wend = BATCH_NEVER; /* set at the first event */
	else
		b->wend = now + (int64_t)pol->min_wait_us * 1000;
}

void batch_add(struct batch *b, int nnew, bool urgent, int64_t now)
{
	b->urgent |= urgent;
	if (nnew <= 0)
		return;
	if (b->n == 0 && b->pol.min_wait_us &&
	    (b->pol.flags & UEPOLL_BATCH_FROM_FIRST))
		b->wend = now + (int64_t)b->pol.min_wait_us * 1000;
	b->n += nnew;
	b->last = now;
}

static int64_t batch__min(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

bool batch_due(const struct batch *b, int64_t now, int64_t *until,
	       bool *doze, int *want)
{
	const struct uepoll_batch *pol = &b->pol;
	int64_t t = b->deadline;
	bool open = now < b->wend;

	if (b->n >= b->max)					/* 1 */
		return true;
	if (pol->min_events && (uint32_t)b->n >= pol->min_events)	/* 2 */
		return true;
	if (b->urgent)						/* 3 */
		return true;
	if (b->n > 0 && !open)					/* 4 */
		return true;
	if (b->n > 0 && pol->inter_event_us &&			/* 5 */
	    now - b->last >= (int64_t)pol->inter_event_us * 1000)
		return true;
	if (now >= b->deadline)					/* 6 */
		return true;
	/*
	 * Not yet.  With the window open, a new event alone does not end the
	 * wait: sleep through events until the window closes, the gap timer
	 * fires or the timeout, unless enough of them come (min_events or
	 * maxevents).  With nothing collected and a window that has no end yet
	 * (FROM_FIRST, or only the gap or count rules), the first event must
	 * wake the wait: it starts the window or the gap timer.
	 */
	*doze = open && (b->n > 0 || b->wend != BATCH_NEVER);
	if (*doze) {
		t = batch__min(t, b->wend);
		if (b->n > 0 && pol->inter_event_us)
			t = batch__min(t, b->last +
					       (int64_t)pol->inter_event_us *
						       1000);
	}
	*want = b->max - b->n;
	if (pol->min_events && (int)pol->min_events - b->n < *want)
		*want = (int)pol->min_events - b->n;
	*until = t;
	return false;
}
