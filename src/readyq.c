/* SPDX-License-Identifier: MIT */
/*
 * readyq.c - the locked ready queue (see readyq.h for the rules).
 *
 * LOCKING: q->lock protects the list, item->queued, item->data and writes
 * of item->events.  It nests inside the instance's mtx and inside a source's
 * wq lock, and nothing nests inside it.
 */
#include <errno.h>

#include "readyq.h"

void rq_init(struct readyq *q)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&q->lock, &a);
	pthread_mutexattr_destroy(&a);
	list_init(&q->head);
	atomic_init(&q->count, 0);
}

void rq_destroy(struct readyq *q)
{
	pthread_mutex_destroy(&q->lock);
}

static void rq__link(struct readyq *q, struct item *it)
{
	list_add_tail(&q->head, &it->rdlink);
	it->queued = true;
	atomic_fetch_add(&q->count, 1);
}

static void rq__unlink(struct readyq *q, struct item *it)
{
	list_del(&it->rdlink);
	it->queued = false;
	atomic_fetch_sub(&q->count, 1);
}

bool rq_enqueue(struct readyq *q, struct item *it)
{
	bool added = false;

	pthread_mutex_lock(&q->lock);
	if (!it->queued) {
		rq__link(q, it);
		added = true;
	}
	pthread_mutex_unlock(&q->lock);
	return added;
}

void rq_remove(struct readyq *q, struct item *it)
{
	pthread_mutex_lock(&q->lock);
	if (it->queued)
		rq__unlink(q, it);
	pthread_mutex_unlock(&q->lock);
}

void rq_update(struct readyq *q, struct item *it, uint32_t events,
	       uint64_t data)
{
	pthread_mutex_lock(&q->lock);
	atomic_store_explicit(&it->events, events, memory_order_relaxed);
	it->data = data;
	pthread_mutex_unlock(&q->lock);
}

bool rq_empty(struct readyq *q)
{
	return atomic_load(&q->count) == 0;
}

int rq_harvest(struct readyq *q, struct epoll_event *evs, int max)
{
	int n = 0;
	unsigned budget;

	if (rq_empty(q))
		return 0;
	pthread_mutex_lock(&q->lock);
	/* Only the items queued now: level-triggered re-queues go behind
	 * them and wait for the next call, as in the kernel. */
	budget = atomic_load_explicit(&q->count, memory_order_relaxed);
	while (n < max && budget-- > 0) {
		struct item *it = container_of(q->head.next, struct item, rdlink);
		uint32_t ev = atomic_load_explicit(&it->events,
						   memory_order_relaxed);
		uint32_t revents = item_poll(it) & ev;

		if (!revents) {
			rq__unlink(q, it);
			continue;
		}
		if (!evs) {
			n = -EFAULT;
			break;
		}
		rq__unlink(q, it);
		evs[n].events = revents;
		evs[n].data.u64 = it->data;
		n++;
		if (ev & EPOLLONESHOT)
			atomic_store_explicit(&it->events,
					      ev & UEP_PRIVATE_BITS,
					      memory_order_relaxed);
		else if (!(ev & EPOLLET))
			rq__link(q, it);
	}
	pthread_mutex_unlock(&q->lock);
	return n;
}
