/* SPDX-License-Identifier: MIT */
/*
 * item.h - one registration of a userspace source (a ueventfd) in an
 * instance: the counterpart of the kernel's epitem.
 *
 * Each field says what protects it.  The item is linked in three places: the
 * instance's ready queue (qnode), the source's wait queue (wqlink) and the
 * instance's list of items (portlink).  It is freed only after it has been
 * unlinked from its source's wait queue and the instance's list (with the
 * instance's mtx held: port.c) and is off the ready queue: rq_retire gives
 * an IDLE item back at once (obj_free_later: a close may run in a signal
 * handler); a QUEUED one is marked DEAD and freed by the harvest or prune
 * that dequeues it, under the queue's lock alone.
 */
#ifndef UEPOLL_ITEM_H
#define UEPOLL_ITEM_H

#include <stdlib.h>
#include <string.h>
#include <urcu/wfcqueue.h>

#include "internal.h"
#include "obj.h"

struct port;

/* item->state, the ready-queue state machine (readyq.c). */
enum item_state {
	ITEM_IDLE = 0,   /* not on the ready queue */
	ITEM_QUEUED = 1, /* on the ready queue, at most once */
	ITEM_DEAD = 2,   /* removed while queued: the dequeuer frees it */
};

struct item {
	/* --- hot: touched by the signal and delivery paths --- */
	/* Ready-queue link (readyq.c).  The item has its own cache line(s):
	 * the hot part is one line, shared with nothing. */
	_Alignas(UEPOLL_CACHELINE) struct cds_wfcq_node qnode;
	/* enum item_state.  IDLE->QUEUED by a CAS (whoever wins enqueues);
	 * QUEUED->IDLE by the dequeuer; QUEUED->DEAD by removal. */
	_Atomic uint32_t state;
	/* Interest mask incl. EPOLLERR|EPOLLHUP and the private bits.  Written
	 * with the readyq lock held (ctl MOD, ONESHOT disarm); read without it
	 * by the signal path (relaxed: a stale mask only makes the signal path
	 * queue an item the harvest then drops, or skip one that MOD queues
	 * itself after writing the new mask). */
	_Atomic uint32_t events;
	/* Counted in the source's wq->narmed (not disarmed by EPOLLONESHOT).
	 * Flipped only by exchange, so that the count moves once per flip
	 * whoever (harvest, MOD, unlink) gets there first. */
	_Atomic bool armed;
	/* Counted in the source's wq->nout (registered with EPOLLOUT). */
	_Atomic bool out;
	/* The batch (rq_batch.gen) that last delivered it: a wait that
	 * harvests several times (batching, or in rounds) never returns one
	 * registration twice.  rq->lock. */
	uint32_t batch;
	/* User data: written by ctl with the queue's consumer lock held,
	 * read by harvests under the same lock. */
	uint64_t data;
	/* Immutable for the item's life. */
	struct uobj *src;
	struct port *port;
	/* --- cold --- */
	/* Source wait queue link: the source's wq lock. */
	struct list wqlink;
	/* Instance item list: the instance's mtx. */
	struct list portlink;
	/* The number it was registered through: with the source, its key
	 * (the kernel's epitem is keyed by file and number, so a dup of the
	 * source is another registration).  Immutable. */
	int fd;
};

/* Proposal 003: the signal and delivery paths touch one cache line. */
_Static_assert(offsetof(struct item, wqlink) <= UEPOLL_CACHELINE,
	       "hot item fields must fit in the first cache line");
_Static_assert(offsetof(struct item, port) + sizeof(void *) <= UEPOLL_CACHELINE,
	       "hot item fields must fit in the first cache line");
_Static_assert(_Alignof(struct item) == UEPOLL_CACHELINE,
	       "an item starts a cache line");

/* A zeroed item, aligned as its type asks (free with free(), or
 * obj_free_later where a signal handler may be the caller). */
static inline struct item *item_alloc(void)
{
	struct item *it = aligned_alloc(_Alignof(struct item),
					sizeof(struct item));

	if (it)
		memset(it, 0, sizeof(*it));
	return it;
}

/* Current poll mask of the item's source (EPOLLIN/EPOLLOUT...). */
uint32_t item_poll(const struct item *it);
/* EPOLLONESHOT disarmed the item / MOD armed it again: keep the source's
 * count of armed watchers (which lets a signal skip its walk) true. */
void item_disarmed(struct item *it);

#endif
