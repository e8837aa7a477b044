/* SPDX-License-Identifier: MIT */
/*
 * port.c - the uepoll instance: ctl, wait, and the wake protocol.
 *
 * LAYERS.  A port owns a kernel epoll (its public fd) that holds the kernel
 * fds the user adds, other uepoll instances (their fds are kernel epolls),
 * and a private eventfd, the doorbell.  Userspace sources (ueventfds) are
 * items on the sources' wait queues; a source that becomes ready puts the
 * item on the port's ready queue and rings the doorbell if it is not rung
 * already.  Waiters take userspace items from the ready queue and kernel
 * events from the kernel epoll, and sleep in epoll_wait on the kernel epoll,
 * where either kind wakes them.
 *
 * LOCKING (outermost first):
 *   port->mtx      serialises ctl on the port, removal of a closed source's
 *                  items and release; protects port->items.
 *   wq->lock       a source's wait queue (eventfd.c, wq.c).
 *   rq->lock       the ready queue, item->queued/data, writes of
 *                  item->events (readyq.c).
 * The signal path takes wq->lock then rq->lock; harvesting takes rq->lock
 * only.  An item is freed only with port->mtx held and after it has been
 * unlinked from the wait queue (under wq->lock) and the ready queue (under
 * rq->lock), so no signaler or harvester can still reach it.  A closing
 * source, which must take port->mtx while it finds items through its wait
 * queue, drops wq->lock first and re-finds the item (port_drop_source).
 *
 * DOORBELL (no lost wakeup).  db_set == 1 means the doorbell has been rung
 * and its event not yet taken by a waiter.
 *  - Signaler: queue the item (rq count++, seq_cst), then port__kick: if
 *    db_set was 0, set it and write the doorbell.
 *  - Waiter: a wait that took the doorbell's event from the kernel stores
 *    db_set = 0 (seq_cst) before it looks at the ready queue.  Either the
 *    signaler's load of db_set comes first in the seq_cst order (it saw 1
 *    and skipped; then our later look at the queue sees its item) or it
 *    comes after (it saw 0 and rings).
 *  - A waiter about to sleep re-checks the ready queue after counting
 *    itself in `sleepers`; while db_set == 1 the doorbell's event is pending
 *    in the kernel epoll (or was just taken by a waiter that will harvest),
 *    so epoll_wait cannot sleep through a queued item.
 *  - A wait that leaves items queued (maxevents reached, level-triggered
 *    re-queue) kicks again, so the public fd stays readable for poll(),
 *    select() and outer event loops whenever a uepoll_wait would return.
 * When nobody sleeps, db_set stays 1 and signals make no system call.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/eventfd.h>

#include "eventfd.h"
#include "fdtab.h"
#include "port.h"
#include "sys.h"

uint32_t item_poll(const struct item *it)
{
	/* The only userspace source type so far. */
	return uefd_poll((struct uefd *)it->src);
}

static void port__kick(struct port *p)
{
	if (atomic_load(&p->db_set) == 0 && atomic_exchange(&p->db_set, 1) == 0)
		sys_eventfd_signal(p->dbfd);
}

int port_create(int flags)
{
	struct epoll_event dbev = { .events = EPOLLIN | EPOLLET };
	pthread_mutexattr_t a;
	struct uobj *o, *old;
	struct port *p;
	int kfd, r;
	bool ok;

	o = uobj_alloc(UOBJ_PORT);
	if (!o)
		return -ENOMEM;
	p = (struct port *)o;
	kfd = sys_epoll_create1(flags);
	if (kfd < 0) {
		r = kfd;
		goto err_free;
	}
	p->dbfd = sys_eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->dbfd < 0) {
		r = p->dbfd;
		goto err_kfd;
	}
	dbev.data.u64 = (uint64_t)(uintptr_t)p;
	r = sys_epoll_ctl(kfd, EPOLL_CTL_ADD, p->dbfd, &dbev);
	if (r < 0)
		goto err_db;
	o->fd = kfd;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&p->mtx, &a);
	pthread_mutexattr_destroy(&a);
	list_init(&p->items);
	atomic_init(&p->nkernel, 0);
	atomic_init(&p->flip, 0);
	atomic_init(&p->db_set, 0);
	atomic_init(&p->sleepers, 0);
	rq_init(&p->rq);

	old = fdtab_set(kfd, o, &ok);
	if (!ok) {
		rq_destroy(&p->rq);
		pthread_mutex_destroy(&p->mtx);
		r = -ENOMEM;
		goto err_db;
	}
	if (old) {
		uobj_close(old);
		uobj_put(old);
	}
	return kfd;

err_db:
	sys_close(p->dbfd);
err_kfd:
	sys_close(kfd);
err_free:
	uobj_free(o);
	return r;
}

bool port_item_signal(struct item *it, uint32_t key)
{
	uint32_t ev = atomic_load_explicit(&it->events, memory_order_relaxed);
	struct port *p = it->port;
	bool ewake = false;

	/* Disarmed by EPOLLONESHOT, or not interested in this change. */
	if (!(ev & ~UEP_PRIVATE_BITS) || (key && !(key & ev)))
		return false;
	rq_enqueue(&p->rq, it);
	if ((ev & EPOLLEXCLUSIVE) && atomic_load(&p->sleepers) > 0) {
		/* The kernel's rule: an exclusive wakeup counts when the
		 * instance has a sleeper and the change is one it asked for. */
		switch (key & (EPOLLIN | EPOLLOUT)) {
		case EPOLLIN:
			ewake = ev & EPOLLIN;
			break;
		case EPOLLOUT:
			ewake = ev & EPOLLOUT;
			break;
		case 0:
			ewake = true;
			break;
		}
	}
	port__kick(p);
	return ewake;
}

static void port__free_item(struct port *p, struct item *it)
{
	rq_remove(&p->rq, it);
	list_del(&it->portlink);
	free(it);
}

static int port__ctl_user(struct port *p, int op, struct uefd *src,
			  struct epoll_event *ev)
{
	uint32_t events = op != EPOLL_CTL_DEL ? ev->events : 0;
	struct wq *q = &src->wq;
	struct item *it;

	if (op != EPOLL_CTL_DEL && (events & EPOLLEXCLUSIVE)) {
		if (op == EPOLL_CTL_MOD)
			return -EINVAL;
		if (op == EPOLL_CTL_ADD && (events & ~UEP_EXCLUSIVE_OK_BITS))
			return -EINVAL;
	}
	if (op != EPOLL_CTL_ADD && op != EPOLL_CTL_MOD && op != EPOLL_CTL_DEL)
		return -EINVAL;
	events |= EPOLLERR | EPOLLHUP;

	pthread_mutex_lock(&p->mtx);
	pthread_mutex_lock(&q->lock);
	it = wq_find(q, p);
	switch (op) {
	case EPOLL_CTL_ADD:
		if (it || q->dead) {
			pthread_mutex_unlock(&q->lock);
			pthread_mutex_unlock(&p->mtx);
			return it ? -EEXIST : -EBADF;
		}
		it = calloc(1, sizeof(*it));
		if (!it) {
			pthread_mutex_unlock(&q->lock);
			pthread_mutex_unlock(&p->mtx);
			return -ENOMEM;
		}
		list_init(&it->rdlink);
		atomic_init(&it->events, events);
		it->data = ev->data.u64;
		it->src = &src->obj;
		it->port = p;
		wq_link(q, it);
		list_add_tail(&p->items, &it->portlink);
		pthread_mutex_unlock(&q->lock);
		break;
	case EPOLL_CTL_MOD:
		pthread_mutex_unlock(&q->lock);
		if (!it) {
			pthread_mutex_unlock(&p->mtx);
			return -ENOENT;
		}
		if (atomic_load_explicit(&it->events, memory_order_relaxed) &
		    EPOLLEXCLUSIVE) {
			pthread_mutex_unlock(&p->mtx);
			return -EINVAL;
		}
		rq_update(&p->rq, it, events, ev->data.u64);
		break;
	default: /* EPOLL_CTL_DEL */
		if (it)
			wq_unlink(q, it);
		pthread_mutex_unlock(&q->lock);
		if (!it) {
			pthread_mutex_unlock(&p->mtx);
			return -ENOENT;
		}
		port__free_item(p, it);
		pthread_mutex_unlock(&p->mtx);
		return 0;
	}
	/* ADD and MOD queue the item at once when the source is ready.  The
	 * poll comes after the item is visible to signalers (seq_cst wq.n and
	 * count: see wq.h), so a concurrent change is seen by one side. */
	if (item_poll(it) & events) {
		rq_enqueue(&p->rq, it);
		port__kick(p);
	}
	pthread_mutex_unlock(&p->mtx);
	return 0;
}

int port_ctl(struct port *p, int op, int fd, struct epoll_event *ev)
{
	struct uobj *src;
	int r;

	if (op != EPOLL_CTL_DEL && !ev)
		return -EFAULT;
	src = fdtab_get(fd);
	if (src && src->type == UOBJ_EVENTFD) {
		r = port__ctl_user(p, op, (struct uefd *)src, ev);
		uobj_put(src);
		return r;
	}
	if (src)
		uobj_put(src); /* an instance: its fd is a kernel epoll */
	/* Kernel fds: the kernel decides everything, errno included. */
	r = sys_epoll_ctl(p->obj.fd, op, fd, ev);
	if (r == 0 && op == EPOLL_CTL_ADD)
		atomic_fetch_add(&p->nkernel, 1);
	else if (r == 0 && op == EPOLL_CTL_DEL)
		atomic_fetch_sub(&p->nkernel, 1);
	return r;
}

/* epoll_wait on the kernel side; removes the doorbell's event from evs. */
static int port__kernel(struct port *p, struct epoll_event *evs, int max,
			const struct timespec *timeout, const sigset_t *sigmask,
			bool *db)
{
	const uint64_t me = (uint64_t)(uintptr_t)p;
	int r, i, k;

	r = sys_epoll_wait(p->obj.fd, evs, max, timeout, sigmask);
	*db = false;
	if (r <= 0)
		return r;
	for (i = k = 0; i < r; i++) {
		if (evs[i].data.u64 == me) {
			*db = true;
			continue;
		}
		evs[k++] = evs[i];
	}
	if (*db)
		atomic_store(&p->db_set, 0);
	return k;
}

static const struct timespec port__zero;

/* Take what is ready now from both sides, without sleeping. */
static int port__collect(struct port *p, struct epoll_event *evs, int max)
{
	bool kernel = atomic_load_explicit(&p->nkernel, memory_order_relaxed) > 0;
	bool kfirst, db;
	int n = 0, r;

	/* Alternate which side goes first so neither starves the other. */
	kfirst = kernel && (atomic_fetch_add_explicit(&p->flip, 1,
						      memory_order_relaxed) & 1);
	if (kfirst) {
		n = port__kernel(p, evs, max, &port__zero, NULL, &db);
		if (n < 0)
			return n;
	}
	if (n < max) {
		r = rq_harvest(&p->rq, evs + n, max - n);
		if (r < 0)
			return r;
		n += r;
	}
	if (kernel && !kfirst && n < max) {
		r = port__kernel(p, evs + n, max - n, &port__zero, NULL, &db);
		if (r < 0)
			return n ? n : r;
		n += r;
	}
	return n;
}

/*
 * Before returning: keep the public fd readable if items are still queued,
 * and, for a non-blocking wait that found nothing (how an outer event loop
 * learns that the fd's readiness was stale), take the stale doorbell event so
 * the fd is not left readable with nothing to return.  A wait that returned
 * events leaves a stale doorbell alone: a busy loop then makes no system call.
 */
static void port__settle(struct port *p, bool poll)
{
	struct epoll_event ev;
	bool db;

	if (!rq_empty(&p->rq)) {
		port__kick(p);
		return;
	}
	/* Only safe with no kernel fds: with them, this epoll_wait could take
	 * an edge-triggered kernel event we have no room to return. */
	if (poll && atomic_load(&p->db_set) &&
	    atomic_load_explicit(&p->nkernel, memory_order_relaxed) == 0) {
		port__kernel(p, &ev, 1, &port__zero, NULL, &db);
		if (!rq_empty(&p->rq))
			port__kick(p);
	}
}

static void port__remaining(int64_t deadline, struct timespec *ts)
{
	uint64_t now = sys_now_ns();
	uint64_t left = (uint64_t)deadline > now ? (uint64_t)deadline - now : 0;

	ts->tv_sec = (time_t)(left / 1000000000u);
	ts->tv_nsec = (long)(left % 1000000000u);
}

int port_wait(struct port *p, struct epoll_event *evs, int max,
	      int64_t deadline, const sigset_t *sigmask)
{
	struct timespec ts;
	bool db;
	int n, r;

	if (!evs) {
		/* The kernel faults only when it has an event to copy. */
		n = rq_harvest(&p->rq, NULL, max);
		return n < 0 || deadline != 0 ? -EFAULT : 0;
	}
	for (;;) {
		n = port__collect(p, evs, max);
		if (n != 0 || deadline == 0) {
			if (n >= 0)
				port__settle(p, n == 0);
			return n;
		}
		if (deadline > 0) {
			port__remaining(deadline, &ts);
			if (!ts.tv_sec && !ts.tv_nsec)
				return 0;
		}
		atomic_fetch_add(&p->sleepers, 1);
		if (!rq_empty(&p->rq)) {
			atomic_fetch_sub(&p->sleepers, 1);
			continue;
		}
		r = port__kernel(p, evs, max, deadline > 0 ? &ts : NULL,
				 sigmask, &db);
		atomic_fetch_sub(&p->sleepers, 1);
		if (r < 0)
			return r;
		if (r > 0 || db) {
			if (r < max) {
				n = rq_harvest(&p->rq, evs + r, max - r);
				if (n > 0)
					r += n;
			}
			if (r > 0) {
				port__settle(p, false);
				return r;
			}
		}
		/* A stale doorbell or a timeout: go round; the deadline check
		 * above ends a timed-out wait after one more collect. */
	}
}

void port_drop_source(struct wq *q)
{
	struct item *it;
	struct port *p;

	for (;;) {
		pthread_mutex_lock(&q->lock);
		if (list_empty(&q->head)) {
			pthread_mutex_unlock(&q->lock);
			return;
		}
		it = container_of(q->head.next, struct item, wqlink);
		p = it->port;
		if (!uobj_tryget(&p->obj)) {
			/* The port is being released; its release unlinks
			 * this item under q->lock. */
			pthread_mutex_unlock(&q->lock);
			sched_yield();
			continue;
		}
		pthread_mutex_unlock(&q->lock);

		pthread_mutex_lock(&p->mtx);
		pthread_mutex_lock(&q->lock);
		it = wq_find(q, p);
		if (it)
			wq_unlink(q, it);
		pthread_mutex_unlock(&q->lock);
		if (it)
			port__free_item(p, it);
		pthread_mutex_unlock(&p->mtx);
		uobj_put(&p->obj);
	}
}

void port_close(struct port *p)
{
	/* Nothing to detach: the items go with the last reference, as the
	 * kernel keeps an epoll alive while a thread still waits on it. */
	(void)p;
}

void port_release(struct uobj *o)
{
	struct port *p = (struct port *)o;

	pthread_mutex_lock(&p->mtx);
	while (!list_empty(&p->items)) {
		struct item *it = container_of(p->items.next, struct item,
					       portlink);
		struct wq *q = &((struct uefd *)it->src)->wq;

		pthread_mutex_lock(&q->lock);
		wq_unlink(q, it);
		pthread_mutex_unlock(&q->lock);
		port__free_item(p, it);
	}
	pthread_mutex_unlock(&p->mtx);
	sys_close(p->dbfd);
	if (!atomic_load_explicit(&o->fd_lost, memory_order_relaxed))
		sys_close(o->fd);
	rq_destroy(&p->rq);
	pthread_mutex_destroy(&p->mtx);
	uobj_free(o);
}
