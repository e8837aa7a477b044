/* SPDX-License-Identifier: MIT */
/*
 * wq.c - source wait queues.
 *
 * EXCLUSIVE.  A ueventfd's wait queue holds the non-exclusive items first,
 * then the EPOLLEXCLUSIVE ones in registration order, as the kernel's.
 * Every change (a write: EPOLLIN; a read: EPOLLOUT) walks it with its poll
 * key, where the kernel's eventfd calls its wait queue, so edge-triggered
 * and exclusive semantics come out the same: every non-exclusive item is
 * queued in its instance; exclusive ones are queued one by one until an
 * instance with a thread blocked in a wait is reached (the kernel's rule:
 * busy instances are passed over but still get the item queued).
 *
 * ROUNDROBIN.  With EPOLLROUNDROBIN the instance that took the exclusive
 * wakeup moves its item to the back of the queue, so the next change goes
 * to the next idle instance: N idle instances and N*k events give k each,
 * at no extra cost.  Kernel fds: ROUNDROBIN in krec.c.
 */
#include "uepoll.h"

#include "lock.h"
#include "port.h"
#include "wq.h"

void wq_init(struct wq *q)
{
	lock_init(&q->lock);
	list_init(&q->head);
	atomic_init(&q->n, 0);
	atomic_init(&q->nout, 0);
	atomic_init(&q->narmed, 0);
	q->dead = false;
}

void wq_link(struct wq *q, struct item *it)
{
	if (atomic_load_explicit(&it->events, memory_order_relaxed) &
	    EPOLLEXCLUSIVE)
		list_add_tail(&q->head, &it->wqlink);
	else
		list_add_head(&q->head, &it->wqlink);
	atomic_fetch_add(&q->n, 1);
	wq_count(q, it, atomic_load_explicit(&it->events, memory_order_relaxed));
}

void wq_unlink(struct wq *q, struct item *it)
{
	list_del(&it->wqlink);
	atomic_fetch_sub(&q->n, 1);
	wq_count(q, it, 0);
}

void wq_count(struct wq *q, struct item *it, uint32_t events)
{
	bool armed = events != 0, out = events & EPOLLOUT;

	/* Each flag moves its counter once per flip, whoever flips it. */
	if (atomic_exchange(&it->armed, armed) != armed)
		atomic_fetch_add(&q->narmed, armed ? 1 : (unsigned)-1);
	if (atomic_exchange(&it->out, out) != out)
		atomic_fetch_add(&q->nout, out ? 1 : (unsigned)-1);
}

struct item *wq_find(struct wq *q, const struct port *p, int fd)
{
	struct list *l;

	list_for_each(l, &q->head) {
		struct item *it = container_of(l, struct item, wqlink);

		if (it->port == p && (fd < 0 || it->fd == fd))
			return it;
	}
	return NULL;
}

void wq_unready(struct wq *q)
{
	struct list *l;

	lock_take(&q->lock);
	list_for_each(l, &q->head) {
		struct item *it = container_of(l, struct item, wqlink);

		if (atomic_load_explicit(&it->state, memory_order_relaxed) !=
		    ITEM_IDLE)
			port_revalidate(it->port);
	}
	lock_drop(&q->lock);
}

void wq_kick(struct wq *q)
{
	struct list *l;

	lock_take(&q->lock);
	list_for_each(l, &q->head)
		port_item_kick(container_of(l, struct item, wqlink));
	lock_drop(&q->lock);
}

bool wq_wake(struct wq *q, uint32_t key, bool defer)
{
	bool owed = false;
	struct list *l;

	lock_take(&q->lock);
	list_for_each(l, &q->head) {
		struct item *it = container_of(l, struct item, wqlink);

		if (port_item_signal(it, key, defer ? &owed : NULL)) {
			/* EPOLLROUNDROBIN: the instance that took this
			 * exclusive wakeup goes to the back of the line. */
			if (atomic_load_explicit(&it->events,
						 memory_order_relaxed) &
			    EPOLLROUNDROBIN) {
				list_del(&it->wqlink);
				list_add_tail(&q->head, &it->wqlink);
			}
			break;
		}
	}
	lock_drop(&q->lock);
	return owed;
}
