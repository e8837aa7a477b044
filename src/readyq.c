/* SPDX-License-Identifier: MIT */
/*
 * readyq.c - the ready queue, on liburcu's wait-free concurrent queue (see
 * readyq.h for the interface and the table of what may run concurrently).
 *
 * ITEM STATE MACHINE:
 *
 *   IDLE --(rq_enqueue: CAS, acq_rel; winner links the item)--> QUEUED
 *   QUEUED --(harvest dequeues it: store IDLE, seq_cst)--> IDLE
 *   QUEUED --(rq_retire, consumer lock held)--> DEAD --(dequeued)--> freed
 *   IDLE --(rq_retire)--> given back at once
 *
 * "Freed": by the harvest that dequeues it; a prune, or rq_destroy, gives
 * it back instead.  "Given back": obj_free_later, freed by the next
 * creation or ctl ADD (obj_reclaim), since a close, and so a retire or a
 * prune, may run in a signal handler (SIGNALS in obj.c).
 *
 * The harvest stores IDLE *before* it polls the source: a source that fires
 * after the poll finds IDLE and re-queues.  Store-then-load on both sides,
 * all seq_cst: the signaler updates its counter (a seq_cst RMW) then loads
 * item->state (rq_enqueue's seq_cst load); the harvest stores IDLE
 * (seq_cst) then loads the counter (uefd_poll, seq_cst).  The single total
 * order of seq_cst operations puts one pair first: one of us sees the other.
 * So a source firing while its item is being delivered is never lost, and an
 * item is never queued twice.  Level-triggered re-queue after delivery is a
 * CAS IDLE->QUEUED like any other: if a source re-queued it meanwhile, the
 * CAS fails and nothing is done.  rq_update and rq_retire hold the consumer
 * lock, so they never overlap a delivery; EPOLLONESHOT disarm happens inside
 * the delivery.  Retire runs after the item left its source's wait queue,
 * so no producer can still touch it; a queued item is left to the harvest
 * that dequeues it (a wait-free queue cannot unlink from the middle).
 *
 * HOLD LISTS (rq_batch: a batching wait's, a wait's in rounds).  A harvest of a batch may move a
 * dequeued item to the batch's private hold list instead of delivering or
 * re-queueing it; the item stays QUEUED there, so the state machine above is
 * unchanged: producers find it queued and do nothing, rq_retire marks it
 * DEAD, and rq_batch_end puts the list back at the queue's tail, all under
 * the consumer lock.
 *
 * MEMORY ORDERING OF THE WAIT-FREE QUEUE.  cds_wfcq_enqueue is wait-free
 * (one xchg of the tail, a full barrier, then a store of the old tail's
 * next); dequeue and splice need mutual exclusion among themselves (our
 * consumer lock) and may find a link not yet stored: we use the
 * non-blocking forms and stop the harvest there (the producer is two
 * instructions from done and rings the doorbell after).  ThreadSanitizer
 * cannot see liburcu's atomics (inline assembly, in an uninstrumented
 * library), so every queue access is kept in the rq__raw_* functions, which
 * tsan.ignore leaves uninstrumented; the hand-off of an item is visible to
 * it through item->state (the enqueuer's CAS, the dequeuer's acquire load).
 *
 * Why one queue.  A locked list (the kernel's design) was kept beside this
 * one until issue 17 as a comparison; the kernel's own rows in every
 * benchmark show that design, and no user needs it (docs/benchmarks.md has
 * the last side-by-side numbers).
 *
 * COMPACT.  An item retired while queued waits in the queue for a harvest;
 * an instance nobody waits on (perf bench epoll ctl: ADD, a MOD that finds
 * the fd ready, DEL, in a loop) would keep every one of them, without
 * bound, where the kernel's DEL takes its epitem off the ready list at
 * once.  So rq_retire counts them (ndead) and, once there are at least
 * RQ__COMPACT_MIN and as many as the live items the last compaction kept
 * (nkept: the walk is then paid by the retires that filled it, O(1) each),
 * unlinks the dead ones from the queue in place, under the consumer lock:
 * it splices the shared queue behind the batch as a harvest does, then
 * walks the batch, which only consumers change, but for the one link a
 * producer may still store: the next of a node whose next is NULL and that
 * is not the batch's tail (its enqueue exchanged the tail before our
 * splice and has not linked yet).  The walk stops there; a node is
 * unlinked only if its next is stored, or if it is the batch's tail
 * (nobody links behind it: producers now link behind the shared queue's
 * head).  The live items keep their order and their state (QUEUED), so
 * producers see nothing; a round (ROUNDS) loses the dead items it counted.
 *
 * LOCKING: q->lock is last in the order (LOCK ORDER in lock.h).  Producers
 * (rq_enqueue) never take it.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <urcu/system.h>

#include "lock.h"
#include "readyq.h"
#include "uepoll.h"

#define RQ__NOINLINE __attribute__((noinline))

/* COMPACT: the fewest dead items a compaction walks for. */
#define RQ__COMPACT_MIN 64

/* --- raw queue operations (not instrumented by TSan: tsan.ignore) --- */

static RQ__NOINLINE void rq__raw_init(struct __cds_wfcq_head *h,
				      struct cds_wfcq_tail *t)
{
	__cds_wfcq_init(h, t);
}

static RQ__NOINLINE void rq__raw_enqueue(struct readyq *q, struct item *it)
{
	cds_wfcq_node_init(&it->qnode);
	cds_wfcq_enqueue(&q->whead, &q->wtail, &it->qnode);
}

static RQ__NOINLINE bool rq__raw_empty(struct __cds_wfcq_head *h,
				       struct cds_wfcq_tail *t)
{
	return cds_wfcq_empty(h, t);
}

/* Move the whole shared queue behind the consumers' batch. */
static RQ__NOINLINE void rq__raw_splice(struct readyq *q)
{
	__cds_wfcq_splice_nonblocking(&q->txhead, &q->txtail, &q->whead,
				      &q->wtail);
}

/* Next item of the batch; NULL when empty or when a link is not stored yet. */
static RQ__NOINLINE struct item *rq__raw_dequeue(struct readyq *q)
{
	struct cds_wfcq_node *n =
		__cds_wfcq_dequeue_nonblocking(&q->txhead, &q->txtail);

	if (!n || n == CDS_WFCQ_WOULDBLOCK)
		return NULL;
	return container_of(n, struct item, qnode);
}

static RQ__NOINLINE void rq__raw_enqueue_to(struct __cds_wfcq_head *h,
					    struct cds_wfcq_tail *t,
					    struct item *it)
{
	cds_wfcq_node_init(&it->qnode);
	cds_wfcq_enqueue(h, t, &it->qnode);
}

static RQ__NOINLINE void rq__raw_splice_to_tx(struct readyq *q,
					      struct __cds_wfcq_head *h,
					      struct cds_wfcq_tail *t)
{
	__cds_wfcq_splice_nonblocking(&q->txhead, &q->txtail, h, t);
}

/* The consumers' batch, walked without taking anything off it (the
 * consumer mutex held): the first node, the next one; NULL at the end,
 * CDS_WFCQ_WOULDBLOCK where a link is not stored yet. */
static RQ__NOINLINE struct cds_wfcq_node *rq__raw_first(struct readyq *q)
{
	return __cds_wfcq_first_nonblocking(&q->txhead, &q->txtail);
}

static RQ__NOINLINE struct cds_wfcq_node *rq__raw_next(struct readyq *q,
						       struct cds_wfcq_node *n)
{
	return __cds_wfcq_next_nonblocking(&q->txhead, &q->txtail, n);
}

/* COMPACT (above): unlink the batch's DEAD items, consumer lock held (after
 * rq__raw_splice).  Returns how many were unlinked (given back); *kept: the
 * live items walked. */
static RQ__NOINLINE unsigned rq__raw_compact(struct readyq *q, unsigned *kept)
{
	struct cds_wfcq_node *prev = &q->txhead.node, *n, *next;
	unsigned round = q->round_left, idx = 0, freed = 0;

	*kept = 0;
	for (n = CMM_LOAD_SHARED(prev->next); n; n = next, idx++) {
		struct item *it = container_of(n, struct item, qnode);
		bool tail = n == q->txtail.p;

		next = CMM_LOAD_SHARED(n->next);
		if (!next && !tail)
			break; /* a producer's link not stored yet */
		/* acquire: pairs with the enqueuer's CAS, as a harvest's. */
		if (atomic_load_explicit(&it->state, memory_order_acquire) !=
		    ITEM_DEAD) {
			prev = n;
			(*kept)++;
			continue;
		}
		CMM_STORE_SHARED(prev->next, next);
		if (tail)
			q->txtail.p = prev;
		if (idx < round)
			q->round_left--;
		/* A close may retire it from a signal handler (SIGNALS in
		 * obj.c). */
		obj_free_later(it);
		freed++;
	}
	return freed;
}

/* A batch's hold list goes back behind the shared queue.  Splicing into the
 * shared queue is enqueue-like (an exchange of its tail): safe against
 * producers; the hold list is ours alone and fully linked. */
static RQ__NOINLINE void rq__raw_unhold(struct readyq *q, struct rq_batch *b)
{
	__cds_wfcq_splice_blocking(&q->whead, &q->wtail, &b->hhead, &b->htail);
}

/* --- common --- */

void rq_init(struct readyq *q)
{
	lock_init(&q->lock);
	atomic_init(&q->txbusy, false);
	q->ndead = 0;
	q->nkept = 0;
	rq__raw_init(&q->txhead, &q->txtail);
	rq__raw_init(&q->whead, &q->wtail);
}

void rq_destroy(struct readyq *q)
{
	struct item *it;

	/* Under the lock only for fork (FORK in obj.c): a child sees the
	 * queue as it was before or after each item's removal. */
	lock_take(&q->lock);
	/* Every item left is DEAD: its owner retired it.  (A release may
	 * run in a signal handler: SIGNALS in obj.c.) */
	do {
		rq__raw_splice(q);
		while ((it = rq__raw_dequeue(q)))
			obj_free_later(it);
	} while (!rq__raw_empty(&q->whead, &q->wtail) ||
		 !rq__raw_empty(&q->txhead, &q->txtail));
	q->ndead = 0;
	lock_drop(&q->lock);
}

static bool rq__claim(struct item *it)
{
	uint32_t s = ITEM_IDLE;

	/* acq_rel: pairs with the dequeuer's acquire load of state. */
	return atomic_compare_exchange_strong_explicit(
		&it->state, &s, ITEM_QUEUED, memory_order_acq_rel,
		memory_order_acquire);
}

/* FORK: free the items retired while queued (DEAD) that a walk of one of
 * the queue's chains reaches.  A link a producer of the parent had not
 * stored yet ends the walk: what lies beyond it leaks, in the child only. */
static void rq__fork_free_dead(struct __cds_wfcq_head *h)
{
	struct cds_wfcq_node *n = CMM_LOAD_SHARED(h->node.next), *next;

	while (n) {
		struct item *it = container_of(n, struct item, qnode);

		next = CMM_LOAD_SHARED(n->next);
		if (atomic_load(&it->state) == ITEM_DEAD)
			free(it);
		n = next;
	}
}

void rq_fork_child(struct readyq *q, struct list *items)
{
	bool queued = false;
	struct list *l;

	/* An instance with nothing queued and an empty queue is left alone,
	 * unwritten (its pages stay shared with the parent). */
	list_for_each(l, items)
		if (atomic_load(&container_of(l, struct item, portlink)->state) ==
		    ITEM_QUEUED)
			queued = true;
	if (!queued && q->round_left == 0 && !atomic_load(&q->txbusy) &&
	    rq__raw_empty(&q->whead, &q->wtail) &&
	    rq__raw_empty(&q->txhead, &q->txtail))
		return;
	q->round_left = 0;
	q->ndead = 0;
	q->nkept = 0;
	rq__fork_free_dead(&q->txhead);
	rq__fork_free_dead(&q->whead);
	rq__raw_init(&q->txhead, &q->txtail);
	rq__raw_init(&q->whead, &q->wtail);
	atomic_store(&q->txbusy, false);
	list_for_each(l, items) {
		struct item *it = container_of(l, struct item, portlink);

		if (atomic_load(&it->state) != ITEM_QUEUED)
			continue;
		rq__raw_enqueue(q, it);
	}
}

bool rq_enqueue(struct readyq *q, struct item *it)
{
	/* Cheap test first: most signals find the item queued.  seq_cst (a
	 * plain load on x86 and arm64's ldar): the second half of the
	 * signaler's store-then-load against the harvest's IDLE store then
	 * poll (STATE MACHINE above); a relaxed load could be satisfied
	 * before the source's counter update is visible. */
	if (atomic_load(&it->state) != ITEM_IDLE)
		return false;
	if (!rq__claim(it))
		return false;
	rq__raw_enqueue(q, it);
	return true;
}

void rq_update(struct readyq *q, struct item *it, uint32_t events,
	       uint64_t data)
{
	lock_take(&q->lock);
	atomic_store_explicit(&it->events, events, memory_order_relaxed);
	it->data = data;
	lock_drop(&q->lock);
}

bool rq_retire(struct readyq *q, struct item *it)
{
	bool now = true;

	lock_take(&q->lock);
	if (atomic_load(&it->state) == ITEM_QUEUED) {
		/* A wait-free queue cannot unlink from the middle: the
		 * harvest (or prune) that dequeues it frees it, or the walk
		 * of a compaction (COMPACT). */
		atomic_store(&it->state, ITEM_DEAD);
		now = false;
		if (++q->ndead >= RQ__COMPACT_MIN && q->ndead >= q->nkept) {
			rq__raw_splice(q);
			q->ndead -= rq__raw_compact(q, &q->nkept);
			atomic_store(&q->txbusy,
				     !rq__raw_empty(&q->txhead, &q->txtail));
		}
	}
	lock_drop(&q->lock);
	/* A close may retire it from a signal handler (SIGNALS in obj.c). */
	if (now)
		obj_free_later(it);
	return !now;
}

bool rq_empty(struct readyq *q)
{
	return !atomic_load(&q->txbusy) && rq__raw_empty(&q->whead, &q->wtail);
}

/*
 * Deliver one dequeued item (state already IDLE).  Returns 1 if an event was
 * written, 0 if the item was dropped, -EFAULT if evs is NULL and an event
 * was due (the item is then queued again by the caller).
 */
static int rq__deliver(struct item *it, struct epoll_event *ev, bool *requeue,
		       struct rq_batch *b)
{
	uint32_t e = atomic_load_explicit(&it->events, memory_order_relaxed);
	uint32_t revents = item_poll(it) & e;

	*requeue = false;
	if (!revents)
		return 0;
	if (!ev) {
		*requeue = true;
		return -EFAULT;
	}
	ev->events = revents;
	ev->data.u64 = it->data;
	if (b) {
		/* Only ever forward (wrapping compare): a batch that began
		 * earlier must not hide that a later one delivered it. */
		if ((int32_t)(b->gen - it->batch) > 0)
			it->batch = b->gen;
		b->ndelivered++;
		b->urgent |= (e & EPOLLURGENT) != 0;
	}
	if (e & EPOLLONESHOT) {
		atomic_store_explicit(&it->events, e & UEP_PRIVATE_BITS,
				      memory_order_relaxed);
		item_disarmed(it);
	}
	else if (!(e & EPOLLET))
		*requeue = true;
	return 1;
}

/* Delivered by this batch or by one that began after it: hold it. */
static bool rq__seen(const struct item *it, const struct rq_batch *b)
{
	return b && (it->batch == b->gen ||
		     (b->ndelivered > 0 && (int32_t)(it->batch - b->gen) > 0));
}

/* A batch made before a fork, in the child (rq_batch.fork_gen): its hold
 * list's items are in the child's queue already (rq_fork_child), so the
 * list is forgotten (a DEAD item on it is then not freed in the child).
 * The batch is its wait's own: no lock needed for it. */
static void rq__batch_forked(struct rq_batch *b)
{
	if (b->fork_gen == obj_fork_gen())
		return;
	b->fork_gen = obj_fork_gen();
	b->nheld = 0;
	rq__raw_init(&b->hhead, &b->htail);
}

/* The consumers' batch, counted up to the first link not stored yet. */
static RQ__NOINLINE unsigned rq__raw_tx_len(struct readyq *q)
{
	struct cds_wfcq_node *n =
		__cds_wfcq_first_nonblocking(&q->txhead, &q->txtail);
	unsigned len = 0;

	while (n && n != CDS_WFCQ_WOULDBLOCK) {
		len++;
		n = __cds_wfcq_next_nonblocking(&q->txhead, &q->txtail, n);
	}
	return len;
}

static int rq__harvest(struct readyq *q, struct epoll_event *evs,
			    int max, struct rq_batch *b, struct rq_pass *ps)
{
	unsigned budget, left;
	struct item *it;
	bool requeue;
	int n = 0, r;

	lock_take(&q->lock);
	if (b)
		rq__batch_forked(b);
	/* The batch is what was queued when we started; level-triggered
	 * re-queues go to the shared queue, behind it, or to b's hold list.
	 * A wait splices once (ROUNDS: other threads may splice between its
	 * harvests, hence b). */
	if (!ps || !ps->started)
		rq__raw_splice(q);
	/* A new round: what the batch holds now (the walk is paid once per
	 * round, by the items it then delivers). */
	if (ps && q->round_left == 0)
		q->round_left = rq__raw_tx_len(q);
	budget = ps ? q->round_left : UINT32_MAX;
	left = budget;
	if (ps)
		ps->started = true;
	/* (A link not stored yet ends the loop with the round's count above
	 * what is reachable: the next harvest goes on.) */
	while (n < max && left > 0 && (it = rq__raw_dequeue(q))) {
		left--;
		/* acquire: pairs with the enqueuer's CAS. */
		if (atomic_load_explicit(&it->state, memory_order_acquire) ==
		    ITEM_DEAD) {
			q->ndead--;
			free(it);
			continue;
		}
		if (rq__seen(it, b)) {
			/* Still QUEUED: a source firing now finds it so. */
			rq__raw_enqueue_to(&b->hhead, &b->htail, it);
			b->nheld++;
			continue;
		}
		atomic_store(&it->state, ITEM_IDLE);
		r = rq__deliver(it, evs ? &evs[n] : NULL, &requeue, b);
		if (requeue && rq__claim(it)) {
			if (b) {
				rq__raw_enqueue_to(&b->hhead, &b->htail, it);
				b->nheld++;
			} else {
				rq__raw_enqueue(q, it);
			}
		}
		if (r < 0) {
			n = r;
			break;
		}
		n += r;
	}
	atomic_store(&q->txbusy, !rq__raw_empty(&q->txhead, &q->txtail));
	if (ps) {
		q->round_left -= budget - left;
		if (!atomic_load_explicit(&q->txbusy, memory_order_relaxed))
			q->round_left = 0; /* nothing left (retired, pruned) */
		ps->round_end = q->round_left == 0;
	} else {
		q->round_left = 0;
	}
	lock_drop(&q->lock);
	return n;
}

static bool rq__is_ready(struct item *it)
{
	uint32_t e = atomic_load_explicit(&it->events, memory_order_relaxed);

	return item_poll(it) & e & ~UEP_PRIVATE_BITS;
}

bool rq_prune(struct readyq *q)
{
	struct __cds_wfcq_head kh;
	struct cds_wfcq_tail kt;
	struct item *it;
	bool any = false;

	if (rq_empty(q))
		return false;
	lock_take(&q->lock);
	/* Keep the ready ones, in order, in a private queue; drop the
	 * others the way a harvest does (IDLE before the poll, so a
	 * source firing now re-queues). */
	rq__raw_init(&kh, &kt);
	rq__raw_splice(q);
	while ((it = rq__raw_dequeue(q))) {
		if (atomic_load_explicit(&it->state,
					 memory_order_acquire) ==
		    ITEM_DEAD) {
			/* A close's revalidation may prune in a signal
			 * handler (SIGNALS in obj.c). */
			q->ndead--;
			obj_free_later(it);
			continue;
		}
		atomic_store(&it->state, ITEM_IDLE);
		if (rq__is_ready(it) && rq__claim(it)) {
			rq__raw_enqueue_to(&kh, &kt, it);
			any = true;
		}
	}
	/* A link not stored yet stopped us: assume the worst. */
	if (!rq__raw_empty(&q->txhead, &q->txtail))
		any = true;
	rq__raw_splice_to_tx(q, &kh, &kt);
	atomic_store(&q->txbusy,
		     !rq__raw_empty(&q->txhead, &q->txtail));
	any = any || !rq__raw_empty(&q->whead, &q->wtail);
	lock_drop(&q->lock);
	return any;
}

bool rq_any_ready(struct readyq *q)
{
	struct cds_wfcq_node *n;
	struct item *it;
	bool any = false;

	if (rq_empty(q))
		return false;
	lock_take(&q->lock);
	rq__raw_splice(q);
	for (n = rq__raw_first(q); n && !any; n = rq__raw_next(q, n)) {
		if (n == CDS_WFCQ_WOULDBLOCK) {
			any = true; /* cannot tell: assume the worst */
			break;
		}
		it = container_of(n, struct item, qnode);
		if (atomic_load_explicit(&it->state, memory_order_acquire) !=
		    ITEM_DEAD)
			any = rq__is_ready(it);
	}
	atomic_store(&q->txbusy, !rq__raw_empty(&q->txhead, &q->txtail));
	lock_drop(&q->lock);
	return any;
}

int rq_harvest(struct readyq *q, struct epoll_event *evs, int max)
{
	return rq_harvest_batch(q, evs, max, NULL, NULL);
}

void rq_pass_init(struct rq_pass *ps)
{
	ps->started = false;
	ps->round_end = true;
}

void rq_batch_init(struct rq_batch *b, uint32_t gen)
{
	b->gen = gen;
	b->urgent = false;
	b->ndelivered = 0;
	b->nheld = 0;
	b->fork_gen = obj_fork_gen();
	rq__raw_init(&b->hhead, &b->htail);
}

int rq_harvest_batch(struct readyq *q, struct epoll_event *evs, int max,
		     struct rq_batch *b, struct rq_pass *ps)
{
	if (ps)
		ps->round_end = true;
	if (rq_empty(q))
		return 0;
	return rq__harvest(q, evs, max, b, ps);
}

void rq_batch_end(struct readyq *q, struct rq_batch *b)
{
	rq__batch_forked(b);
	if (!b->nheld)
		return;
	lock_take(&q->lock);
	rq__raw_unhold(q, b);
	b->nheld = 0;
	lock_drop(&q->lock);
}
