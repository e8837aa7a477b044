/* SPDX-License-Identifier: MIT */
/*
 * readyq.h - an instance's ready queue: the items whose source may be ready.
 *
 * liburcu's wait-free concurrent queue: a source that becomes ready enqueues
 * its item without any lock of the instance (proposal 001); waiters dequeue
 * under the queue's consumer mutex.
 *
 * Which operations may run at the same time on one queue:
 *
 *                   enqueue  harvest  update  retire  empty
 *   rq_enqueue        yes      yes     yes     yes     yes
 *   rq_harvest        yes      yes*    yes*    yes*    yes
 *   rq_update         yes      yes*    no      no      yes
 *   rq_retire         yes      yes*    no      no      yes
 *   rq_empty          yes      yes     yes     yes     yes
 *   rq_prune          yes      yes*    yes*    yes*    yes
 *   rq_any_ready      yes      yes*    yes*    yes*    yes
 *   (rq_harvest_batch and rq_batch_end are harvests in this table.)
 *   (* serialised inside by the consumer mutex; "no": the caller must hold
 *    the instance's mtx, as ctl does.)
 *
 * An item is queued at most once (item->state, a CAS IDLE->QUEUED).
 */
#ifndef UEPOLL_READYQ_H
#define UEPOLL_READYQ_H

#include <pthread.h>

#include "item.h"

struct readyq {
	/* --- consumer side --- */
	/* Serialises dequeuers (liburcu requires mutual exclusion between
	 * dequeue/splice callers) and ctl's update/retire. */
	pthread_mutex_t lock;
	/* Items left in the current round (ROUNDS, below). */
	unsigned round_left;
	/* Items retired while queued (DEAD) and not freed yet, and the live
	 * ones the last compaction kept: COMPACT in readyq.c. */
	unsigned ndead, nkept;
	/* The consumers' private batch (leftovers of the last
	 * harvest come first, as in the kernel), and whether it is non-empty
	 * (seq_cst, read by rq_empty without the lock). */
	struct __cds_wfcq_head txhead;
	struct cds_wfcq_tail txtail;
	_Atomic bool txbusy;
	/* The shared queue: consumers take from the head... */
	_Alignas(UEPOLL_CACHELINE) struct __cds_wfcq_head whead;
	/* ...producers exchange the tail, on a line of its own. */
	_Alignas(UEPOLL_CACHELINE) struct cds_wfcq_tail wtail;
	char pad_[UEPOLL_CACHELINE - sizeof(struct cds_wfcq_tail)];
};

/* Producers exchange the tail, consumers take the head: never one line. */
_Static_assert(offsetof(struct readyq, wtail) - offsetof(struct readyq, whead) >=
		       UEPOLL_CACHELINE,
	       "queue head and tail must sit on separate cache lines");
_Static_assert(offsetof(struct readyq, whead) - offsetof(struct readyq, txbusy) >=
		       sizeof(bool),
	       "consumer-private fields come before the shared head");

void rq_init(struct readyq *q);
/* Gives back the items still queued (all are ITEM_DEAD by then:
 * obj_free_later). */
void rq_destroy(struct readyq *q);
/* In a forked child (alone, lock free): rebuild the queue from the
 * instance's items (portlink) that are ITEM_QUEUED, in list order. */
void rq_fork_child(struct readyq *q, struct list *items);
/* Queue it at the tail unless it is queued already; true if it was not. */
bool rq_enqueue(struct readyq *q, struct item *it);
/* Change an item's mask and data as one step against harvests. */
void rq_update(struct readyq *q, struct item *it, uint32_t events,
	       uint64_t data);
/* The item is unlinked from its source: give it back now (obj_free_later),
 * or mark it so that the harvest that dequeues it frees it, or a
 * compaction once enough are waiting (COMPACT in readyq.c).  True if it
 * was queued (its event not taken yet: a demotion hands that to the
 * kernel, UNPEND). */
bool rq_retire(struct readyq *q, struct item *it);
/* Nothing queued (items on a batching waiter's hold list do not count). */
bool rq_empty(struct readyq *q);
/*
 * Deliver up to max events, in queue order, the kernel's way: an item whose
 * source is not ready (for its mask) is dropped; EPOLLONESHOT disarms;
 * level-triggered items go back to the tail; edge-triggered ones leave.
 * Items beyond max stay first in line.  evs == NULL: returns -EFAULT if an
 * event would be delivered, else 0.
 */
int rq_harvest(struct readyq *q, struct epoll_event *evs, int max);

/*
 * A batching wait (wait.c, min-wait), and any wait of an instance in rounds
 * (ROUNDS below), harvests several times and must return each
 * registration at most once, as one kernel epoll_wait does.  Its
 * harvests mark what they deliver with gen (a mark only moves forward, so
 * an item delivered by batch g carries g or a later one) and, instead of re-queueing a
 * level-triggered item at the tail, keep it on the batch's hold list; an
 * item met again that this batch delivered (a new edge meanwhile) is held
 * too, and so is one a later batch delivered, once this one has delivered
 * anything (the mark then no longer says whether this one did; it may have,
 * and its own end is bounded by then).  Held items stay ITEM_QUEUED (a
 * source firing finds them queued: nothing is lost, the next harvest after
 * rq_batch_end polls them) but are out of the queue, so rq_empty() says
 * only whether something new came.  rq_batch_end puts them back at the
 * tail, in order; every batch must end before its wait returns.
 */
struct rq_batch {
	uint32_t gen;	/* from the instance's counter, never 0 */
	bool urgent;	/* an EPOLLURGENT item was delivered */
	int ndelivered;
	int nheld;
	struct __cds_wfcq_head hhead; /* the hold list */
	struct cds_wfcq_tail htail;
	/* obj_fork_gen() when made.  A wait that a signal handler's fork()
	 * interrupted goes on in the child with its batch: its hold list is
	 * then the parent's, whose items rq_fork_child queued again in the
	 * child, so it is forgotten there (rq__batch_forked), never spliced
	 * into the queue a second time. */
	unsigned fork_gen;
};

void rq_batch_init(struct rq_batch *b, uint32_t gen);
/*
 * ROUNDS.  An instance that also watches kernel fds alternates whole rounds
 * of its ready queue with the kernel's ready list (wait.c, FAIRNESS), as
 * the kernel rotates one list.  A round is the items queued when it began;
 * level-triggered items put back, and items queued since, wait for the
 * next one.  A wait's harvests in round mode share an rq_pass: they take
 * what is left of the round, and set round_end when it is used up; only
 * the first splices, and a later harvest of the same wait begins the next
 * round with what the consumers' batch holds then.  That is not only what
 * was queued before the wait's first harvest: another thread's splice (a
 * waiter's first harvest, a prune, rq_any_ready, a compaction) may move
 * the shared queue there between two harvests, with whatever this wait
 * delivered and that is queued again (put back level-triggered, or a new
 * edge).  So every harvest in round mode has an rq_batch (a plain wait's
 * own, wait.c's wait__collect): what it puts back waits on the hold list,
 * out of every queue, and what comes back by a new edge is held when met
 * (one registration is returned once per wait, as by the kernel, whose
 * transfer keeps ep->mtx until it ends).  Without an rq_pass a harvest
 * takes as many as max of what is queued.  b: the wait's batch (NULL: a
 * single harvest).
 */
struct rq_pass {
	bool started;	/* this wait has harvested (and made its snapshot) */
	bool round_end;	/* out: the round is used up */
};
void rq_pass_init(struct rq_pass *ps);
int rq_harvest_batch(struct readyq *q, struct epoll_event *evs, int max,
		     struct rq_batch *b, struct rq_pass *ps);
void rq_batch_end(struct readyq *q, struct rq_batch *b);
/* Would a harvest return an event now?  Drops queued items whose source is
 * not ready (as a harvest would) but delivers nothing: the kernel's poll of
 * an epoll, for an instance nested in another one. */
bool rq_prune(struct readyq *q);
/* Is a queued item ready (its source shows an event it asked for)?  A look
 * that leaves every item where it is (the kernel keeps a stale entry in
 * place until it scans the list: STALE in bell.c's unstale); true when it
 * cannot tell (a link not stored yet). */
bool rq_any_ready(struct readyq *q);

#endif
