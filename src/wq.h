/* SPDX-License-Identifier: MIT */
/*
 * wq.h - a userspace source's wait queue: the instances' items that watch it.
 */
#ifndef UEPOLL_WQ_H
#define UEPOLL_WQ_H

#include <pthread.h>

#include "item.h"

struct wq {
	pthread_mutex_t lock;
	/* Non-exclusive items at the head, exclusive ones at the tail in
	 * registration order, as the kernel orders its wait queues. */
	struct list head;
	/* Number of linked items.  Read without the lock by signalers to skip
	 * the lock when nobody watches: seq_cst, pairs with the seq_cst counter
	 * update of the source (Dekker: either the signaler sees the new item
	 * or the ADD's poll sees the new count). */
	_Atomic unsigned n;
	/* Linked items not disarmed by EPOLLONESHOT: a signal with none to
	 * wake skips the walk and its lock.  seq_cst, like n: either a writer
	 * sees the item armed, or the ADD/MOD that arms it sees the counter. */
	_Atomic unsigned narmed;
	/* Linked items registered with EPOLLOUT (a read, which wakes only
	 * EPOLLOUT watchers, skips the walk without them); seq_cst like narmed. */
	_Atomic unsigned nout;
	/* Set (under lock) when the source is closed: no ADD may link. */
	bool dead;
};

void wq_init(struct wq *q);
/* Caller holds q->lock. */
void wq_link(struct wq *q, struct item *it);
void wq_unlink(struct wq *q, struct item *it);
/* Count the item in the queue's narmed/nout as linked with this mask (0:
 * unlinked).  Called after the mask is stored, before the source is polled. */
void wq_count(struct wq *q, struct item *it, uint32_t events);

/* p's item of the source registered through number fd (the kernel's key:
 * file and number), or any of p's items if fd < 0. */
struct item *wq_find(struct wq *q, const struct port *p, int fd);
/* Deliver a readiness change with poll key `key` to the watchers: every
 * non-exclusive one, and exclusive ones in order until one instance that has
 * a thread blocked in a wait took it.  With `defer` (a coalescing ueventfd's
 * write) the items are queued at once but no doorbell is rung: returns true
 * if one needed ringing, and the caller then owes a wq_kick. */
bool wq_wake(struct wq *q, uint32_t key, bool defer);
/* The deferred rings of earlier wq_wake(defer) calls: ring the instances
 * whose item still waits in their ready queue. */
void wq_kick(struct wq *q);
/* The source stopped being readable: instances watched by other instances
 * re-check their ready queues (port_revalidate). */
void wq_unready(struct wq *q);

#endif
