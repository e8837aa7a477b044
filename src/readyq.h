/* SPDX-License-Identifier: MIT */
/*
 * readyq.h - an instance's ready queue: the items whose source may be ready.
 *
 * This is the one interface the rest of uepoll uses, so the implementation
 * can be replaced (a wait-free queue is planned).  The present one is a list
 * under a mutex.  Rules, whatever the implementation:
 *  - an item is queued at most once (item->queued);
 *  - rq_enqueue may run concurrently with everything below;
 *  - rq_harvest runs concurrently with rq_enqueue and with other harvests;
 *  - rq_remove and rq_update are called with the instance's mtx held.
 */
#ifndef UEPOLL_READYQ_H
#define UEPOLL_READYQ_H

#include <pthread.h>

#include "item.h"

struct readyq {
	pthread_mutex_t lock;
	struct list head;
	/* Number of queued items.  Written under lock, read without it by
	 * rq_empty (seq_cst: pairs with the sleeper protocol in port.c). */
	_Atomic unsigned count;
};

void rq_init(struct readyq *q);
void rq_destroy(struct readyq *q);
/* Queue it at the tail unless it is queued already; true if it was not. */
bool rq_enqueue(struct readyq *q, struct item *it);
void rq_remove(struct readyq *q, struct item *it);
/* Change an item's mask and data as one step against harvests. */
void rq_update(struct readyq *q, struct item *it, uint32_t events,
	       uint64_t data);
bool rq_empty(struct readyq *q);
/*
 * Deliver up to max events, in queue order, the kernel's way: an item whose
 * source is not ready (for its mask) is dropped; EPOLLONESHOT disarms;
 * level-triggered items go back to the tail; edge-triggered ones leave.
 * Items beyond max stay at the head.  evs == NULL: returns -EFAULT if an
 * event would be delivered (consuming nothing), else 0.
 */
int rq_harvest(struct readyq *q, struct epoll_event *evs, int max);

#endif
