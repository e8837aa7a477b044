/* SPDX-License-Identifier: MIT */
/*
 * krec.c - the registrations in an instance's kernel epoll that a harvest
 * must recognise (struct krec, krec.h): uepoll instances added to this one
 * (nesting), and kernel fds added with EPOLLROUNDROBIN or EPOLLURGENT.
 *
 * The kernel answers their ctl (errno included); what is ours is the record,
 * registered as the data: a harvest (wait.c) finds it again by address
 * (krec_of), reports the user's data, checks that a nested instance really
 * has something (krec_nest_ready, as the kernel's poll of an epoll does),
 * moves a round-robin registration to the back of the fd's wait queue
 * (krec_rr_rotate), and knows an urgent one.  A nested instance is counted
 * as held (port->watched), which makes it keep its fd exact (port.c).
 *
 * LOCKING.  Records are made, reused and cleared under the holder's
 * port->mtx (ctl, and the round-robin rotation a harvest makes); they are
 * only ever appended to port->krecs (release store) and freed with the port
 * (krec_release), so a harvest walks the list without a lock (acquire loads)
 * and a record it found stays valid memory.  The held instance's watched
 * count and doorbell mode change under its port->wlock (krec__set_watched),
 * nested inside the holder's mtx and outside the held instance's rq->lock.
 * A harvest's check of a nested instance takes no lock of its own (rq->lock
 * through rq_prune).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>

#include "uepoll.h"

#include "fdtab.h"
#include "krec.h"
#include "sys.h"

/* n is a record of this incarnation of inner, not of an earlier object at
 * the same address. */
static bool krec__is(struct krec *n, struct port *inner)
{
	return atomic_load_explicit(&n->inner_gen, memory_order_relaxed) ==
	       atomic_load_explicit(&inner->gen, memory_order_relaxed);
}

static struct krec *krec__find(struct port *p, struct port *inner, int fd)
{
	struct krec *n;

	for (n = atomic_load_explicit(&p->krecs, memory_order_acquire); n;
	     n = n->next)
		if (atomic_load_explicit(&n->inner, memory_order_relaxed) == inner &&
		    atomic_load_explicit(&n->fd, memory_order_relaxed) == fd)
			return n;
	return NULL;
}

/* Instances with watched > 0, process-wide. */
static _Atomic int krec__nwatched;

bool krec_any_watched(void)
{
	return atomic_load_explicit(&krec__nwatched, memory_order_relaxed) > 0;
}

/* Count an instance holding p; switch the doorbell's mode at 0 <-> 1.
 * Under p->wlock, which nests inside the holder's mtx and outside p's
 * ready-queue lock; it never takes an mtx, so no cycle can form even while
 * two instances are being added into each other. */
static void krec__set_watched(struct port *p, int delta)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int w;

	uint64_t v;

	pthread_mutex_lock(&p->wlock);
	w = atomic_fetch_add(&p->watched, delta) + delta;
	if ((delta > 0 && w == 1) || w == 0)
		atomic_fetch_add(&krec__nwatched, w ? 1 : -1);
	if ((delta > 0 && w == 1) || w == 0) {
		ev.events |= w ? 0 : EPOLLET;
		ev.data.u64 = (uint64_t)(uintptr_t)p;
		if (sys_epoll_ctl(p->obj.fd, EPOLL_CTL_MOD, p->dbfd, &ev) == 0)
			atomic_store(&p->db_lt, w != 0);
		if (w) {
			/* An edge-triggered doorbell keeps counting after its
			 * event was taken: start level-triggered from zero,
			 * rung again only if something is ready. */
			sys_read(p->dbfd, &v, sizeof(v));
			atomic_store(&p->db_set, 0);
			if (rq_prune(&p->rq))
				port_kick(p);
		}
	}
	pthread_mutex_unlock(&p->wlock);
}

/* A free record, or a new one appended to the list (mtx held). */
static struct krec *krec__new(struct port *p)
{
	struct krec *n = krec__find(p, NULL, -1);

	if (n)
		return n;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	atomic_init(&n->inner, NULL);
	atomic_init(&n->fd, -1);
	n->next = atomic_load_explicit(&p->krecs, memory_order_relaxed);
	/* release: pairs with the harvest's acquire walk */
	atomic_store_explicit(&p->krecs, n, memory_order_release);
	return n;
}

static void krec__free(struct krec *n)
{
	atomic_store_explicit(&n->rr_events, 0, memory_order_relaxed);
	atomic_store_explicit(&n->urgent, false, memory_order_relaxed);
	atomic_store_explicit(&n->fd, -1, memory_order_relaxed);
	atomic_store_explicit(&n->inner, NULL, memory_order_release);
}

/*
 * A kernel fd while the instance has recorded registrations: the kernel
 * answers, and a registration made with EPOLLROUNDROBIN or EPOLLURGENT gets a
 * record (registered as its data), so that a harvest can move a round-robin
 * registration to the back of the fd's wait queue (krec_rr_rotate) and know
 * an urgent one; neither bit goes to the kernel.  MOD may add or drop
 * EPOLLURGENT (and with it the record).
 */
int krec_ctl_fd(struct port *p, int op, int fd, struct epoll_event *ev)
{
	const uint32_t ours = EPOLLROUNDROBIN | EPOLLURGENT;
	struct epoll_event kev;
	struct krec *n;
	bool rec = op != EPOLL_CTL_DEL && (ev->events & ours);
	int r;

	pthread_mutex_lock(&p->mtx);
	/* The fd's record, or one left by an fd closed without DEL (the
	 * kernel dropped that registration): reused. */
	n = krec__find(p, NULL, fd);
	if (rec) {
		bool fresh = !n;

		if (!n)
			n = krec__new(p);
		if (!n) {
			pthread_mutex_unlock(&p->mtx);
			return -ENOMEM;
		}
		kev = *ev;
		kev.events &= ~ours;
		kev.data.u64 = (uint64_t)(uintptr_t)n;
		r = sys_epoll_ctl(p->obj.fd, op, fd, &kev);
		if (r == 0) {
			atomic_store_explicit(&n->data, ev->data.u64,
					      memory_order_relaxed);
			/* ROUNDROBIN comes only with ADD; MOD of an
			 * exclusive registration fails in the kernel. */
			if (op == EPOLL_CTL_ADD)
				atomic_store_explicit(
					&n->rr_events,
					(ev->events & EPOLLROUNDROBIN)
						? kev.events
						: 0,
					memory_order_relaxed);
			atomic_store_explicit(&n->urgent,
					      (ev->events & EPOLLURGENT) != 0,
					      memory_order_relaxed);
			atomic_store_explicit(&n->kevents, kev.events,
					      memory_order_relaxed);
			atomic_store_explicit(&n->fd, fd, memory_order_release);
			if (fresh)
				atomic_fetch_add(&p->nfdrec, 1);
			if (op == EPOLL_CTL_ADD)
				atomic_fetch_add(&p->nkernel, 1);
		} else if (fresh) {
			krec__free(n);
		}
		pthread_mutex_unlock(&p->mtx);
		return r;
	}
	r = sys_epoll_ctl(p->obj.fd, op, fd, ev);
	if (r == 0 && op == EPOLL_CTL_ADD)
		atomic_fetch_add(&p->nkernel, 1);
	if (r == 0 && op == EPOLL_CTL_DEL)
		atomic_fetch_sub(&p->nkernel, 1);
	/* DEL, or MOD without our bits: the registration has no record now. */
	if (r == 0 && op != EPOLL_CTL_ADD && n) {
		krec__free(n);
		atomic_fetch_sub(&p->nfdrec, 1);
	}
	pthread_mutex_unlock(&p->mtx);
	return r;
}

/*
 * This instance took a wakeup of a round-robin kernel fd: move its
 * registration to the back of the fd's wait queue (the kernel wakes
 * exclusive waiters in queue order), so the next wakeup goes to the next
 * idle instance.  Two system calls per wakeup; the fd stays registered in
 * other instances meanwhile, and ADD re-checks readiness, so no event is
 * lost in between.
 */
void krec_rr_rotate(struct port *p, struct krec *n)
{
	struct epoll_event kev;
	int fd;

	pthread_mutex_lock(&p->mtx);
	fd = atomic_load_explicit(&n->fd, memory_order_relaxed);
	kev.events = atomic_load_explicit(&n->rr_events, memory_order_relaxed);
	if (fd >= 0 && kev.events) {
		kev.data.u64 = (uint64_t)(uintptr_t)n;
		if (sys_epoll_ctl(p->obj.fd, EPOLL_CTL_DEL, fd, NULL) == 0 &&
		    sys_epoll_ctl(p->obj.fd, EPOLL_CTL_ADD, fd, &kev) < 0) {
			/* Closed meanwhile: the registration is gone. */
			krec__free(n);
			atomic_fetch_sub(&p->nfdrec, 1);
			atomic_fetch_sub(&p->nkernel, 1);
		}
	}
	pthread_mutex_unlock(&p->mtx);
}

/* A nested instance: the kernel answers, with our record as the data. */
int krec_ctl_nest(struct port *p, int op, int fd, struct port *inner,
		  struct epoll_event *ev)
{
	struct epoll_event kev;
	uint64_t udata = 0;
	struct krec *n;
	bool fresh = false, urgent = ev && (ev->events & EPOLLURGENT);
	int r;

	/* An unknown op, or the instance itself (the kernel's EINVAL). */
	if ((op != EPOLL_CTL_ADD && op != EPOLL_CTL_MOD && op != EPOLL_CTL_DEL) ||
	    inner == p)
		return sys_epoll_ctl(p->obj.fd, op, fd, ev);
	/* EPOLLEXCLUSIVE on an epoll: the kernel's EINVAL, given before it
	 * polls the target.  Answered before krec__set_watched, whose prune of
	 * the inner's ready queue would otherwise reorder its events. */
	if (op == EPOLL_CTL_ADD && (ev->events & EPOLLEXCLUSIVE))
		return sys_epoll_ctl(p->obj.fd, op, fd, ev);
	pthread_mutex_lock(&p->mtx);
	n = krec__find(p, inner, fd);
	if (n && !krec__is(n, inner)) {
		/* Left by a closed instance whose memory and fd number inner
		 * now has: the kernel dropped that registration.  Reuse the
		 * record as a new one. */
		if (op != EPOLL_CTL_ADD) {
			pthread_mutex_unlock(&p->mtx);
			return sys_epoll_ctl(p->obj.fd, op, fd, ev);
		}
		krec__free(n);
		n = NULL;
	}
	if (!n && op == EPOLL_CTL_ADD) {
		n = krec__new(p);
		if (!n) {
			pthread_mutex_unlock(&p->mtx);
			return -ENOMEM;
		}
		atomic_store_explicit(&n->fd, fd, memory_order_relaxed);
		atomic_store_explicit(&n->inner_gen,
				      atomic_load_explicit(&inner->gen,
							   memory_order_relaxed),
				      memory_order_relaxed);
		atomic_store_explicit(&n->inner, inner, memory_order_release);
		fresh = true;
	}
	if (n && op != EPOLL_CTL_DEL) {
		udata = ev->data.u64;
		kev = *ev;
		kev.events &= ~EPOLLURGENT;
		kev.data.u64 = (uint64_t)(uintptr_t)n;
		ev = &kev;
	}
	/* Watched before the kernel looks at it, so its fd is exact then. */
	if (op == EPOLL_CTL_ADD)
		krec__set_watched(inner, 1);
	r = sys_epoll_ctl(p->obj.fd, op, fd, ev);
	if (r < 0 && op == EPOLL_CTL_ADD)
		krec__set_watched(inner, -1);
	if (r == 0 && op != EPOLL_CTL_DEL) {
		atomic_store_explicit(&n->data, udata, memory_order_relaxed);
		atomic_store_explicit(&n->urgent, urgent,
				      memory_order_relaxed);
		atomic_store_explicit(&n->kevents, EPOLLIN,
				      memory_order_relaxed);
	}
	if (r == 0 && op == EPOLL_CTL_ADD)
		atomic_fetch_add(&p->nkernel, 1);
	if (r == 0 && op == EPOLL_CTL_DEL)
		krec__set_watched(inner, -1);
	if ((r == 0 && op == EPOLL_CTL_DEL) || (r < 0 && fresh))
		krec__free(n);
	if (r == 0 && op == EPOLL_CTL_DEL)
		atomic_fetch_sub(&p->nkernel, 1);
	pthread_mutex_unlock(&p->mtx);
	return r;
}

static bool krec__ready(struct port *p, int depth);

/* The record whose address is this event's data, if any. */
struct krec *krec_of(struct port *p, uint64_t data)
{
	struct krec *n;

	for (n = atomic_load_explicit(&p->krecs, memory_order_acquire); n;
	     n = n->next)
		if ((uint64_t)(uintptr_t)n == data &&
		    atomic_load_explicit(&n->fd, memory_order_acquire) >= 0)
			return n;
	return NULL;
}

/*
 * Is a nested instance ready, as the kernel's poll of an epoll would say?
 * Our kernel epoll saw its fd readable, but that may be a doorbell left from
 * a harvest that already took everything; look, and clear what is stale.
 */
bool krec_nest_ready(struct krec *n, int depth)
{
	struct uobj *o = fdtab_get(atomic_load_explicit(&n->fd,
							memory_order_relaxed));
	/* NULL when a concurrent DEL freed the record meanwhile. */
	struct port *in = atomic_load_explicit(&n->inner, memory_order_relaxed);
	bool ready = true; /* not ours any more: trust the kernel */

	if (o && in && o == &in->obj && krec__is(n, (struct port *)o))
		ready = krec__ready((struct port *)o, depth + 1);
	if (o)
		uobj_put(o);
	return ready;
}

static bool krec__ready(struct port *p, int depth)
{
	struct pollfd pfd = { .fd = p->obj.fd, .events = POLLIN };
	struct krec *n;

	if (port_prune(p))
		return true;
	port_clear_db(p);
	if (!rq_empty(&p->rq))
		return true; /* something came meanwhile */
	/* Clear what is stale in the instances p holds, so that the kernel's
	 * poll below sees their fds exact.  Whether one of them being ready
	 * makes p ready is the kernel's to say: p's registration of it may
	 * not ask for EPOLLIN (an epoll fd reports nothing else) or may be a
	 * disarmed one-shot.  The kernel limits nesting; this bound only
	 * guards the recursion. */
	if (depth < 8) {
		for (n = atomic_load_explicit(&p->krecs, memory_order_acquire);
		     n; n = n->next)
			if (atomic_load_explicit(&n->inner, memory_order_acquire))
				krec_nest_ready(n, depth);
	}
	/* What is left readable is kernel fds, held instances (or a ring
	 * that just came). */
	return poll(&pfd, 1, 0) > 0;
}

/* The instance is being released, its kernel epoll closed: free its records
 * and stop counting it as a holder of the instances it held. */
void krec_release(struct port *p)
{
	while (p->krecs) {
		struct krec *n = p->krecs;
		struct port *in = atomic_load(&n->inner);

		/* The kernel drops our registration in it with our epoll. */
		if (in) {
			struct uobj *io = fdtab_get(atomic_load(&n->fd));

			if (io == &in->obj && krec__is(n, in))
				krec__set_watched(in, -1);
			if (io)
				uobj_put(io);
		}
		p->krecs = n->next;
		free(n);
	}
}
