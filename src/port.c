/* SPDX-License-Identifier: MIT */
/*
 * port.c - the uepoll instance: create and release, ctl (of ueventfds here;
 * the rest dispatched), the signal path, removal of a closed source's items.
 * Three parts have their own files: bell.c, the wake protocol; krec.c, the
 * kernel-side registrations a harvest must recognise (nested instances,
 * EPOLLROUNDROBIN and EPOLLURGENT kernel fds); and wait.c, how a thread
 * waits on an instance (port_wait).
 *
 * LAYERS.  A port owns a kernel epoll (its public fd) that holds the kernel
 * fds the user adds, other uepoll instances (their fds are kernel epolls),
 * and a private eventfd, the doorbell (bell.c).  Userspace sources
 * (ueventfds) are items on the sources' wait queues; a source that becomes
 * ready puts the item on the port's ready queue and rings the doorbell if
 * it is not rung already.  Waiters take userspace items from the ready
 * queue and kernel events from the kernel epoll, and sleep in epoll_wait on
 * the kernel epoll, where either kind wakes them.
 *
 * LOCKING (the order: LOCK ORDER in lock.h).  port->mtx serialises ctl on
 * the port (except a ueventfd's MOD, which runs under that source's
 * wq->lock alone: see port__mod_user), removal of a closed source's items
 * and release; it protects port->items and the records (krec.c).  The
 * signal path takes the source's wq->lock only (the ready queue's producers
 * take no lock); harvesting takes rq->lock only (and, apart from it,
 * port->mtx to move a round-robin kernel registration whose event it took:
 * wait.c, krec.c).  An item is retired only with port->mtx held and after
 * it has been unlinked from the wait queue (under wq->lock), so no
 * signaler can still reach it; rq_retire gives it back at once
 * (obj_free_later: freed by the next creation or ADD, since a close may
 * run in a signal handler) or, if it is queued, leaves it to the harvest
 * that dequeues it (readyq.c), which frees it under rq->lock alone.
 *
 * WAKEUPS.  The signaler's half of the wake protocol is here
 * (port_item_signal, port_item_kick: queue the item, then the bell's
 * verbs); the waiter's half is wait.c's; the protocol itself (DOORBELL,
 * DOZE, WATCHED) and its state are bell.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include "uepoll.h"

#include "batch.h"
#include "config.h"
#include "port_impl.h"
#include "eventfd.h"
#include "fdtab.h"
#include "krec.h"
#include "fdzone.h"
#include "lock.h"
#include "port.h"
#include "sys.h"

int port_batch(struct port *p, const struct uepoll_batch *set,
	       struct uepoll_batch *old)
{
	return batch_set(&p->batch, set, old);
}

struct turn *port_turn(struct port *p)
{
	return &p->turn;
}

struct bell *port_bell(struct port *p)
{
	return &p->bell;
}

/* Incarnations of instances (port->gen). */
static _Atomic uint64_t port__gens;

int port_create(int flags, unsigned int uflags)
{
	struct uobj *o;
	struct port *p;
	int fd, r;

	o = uobj_alloc(UOBJ_PORT);
	if (!o)
		return -ENOMEM;
	p = (struct port *)o;
	p->bell.fd = -1;
	fd = sys_epoll_create1(flags);
	if (fd < 0) {
		uobj_free(o);
		return fd;
	}
	o->kfd = fdzone_dup(fd);
	if (o->kfd < 0) {
		r = o->kfd;
		goto err;
	}
	/* Its data is the instance's address: a wait tells the doorbell's
	 * event from the user's by it (wait__kernel). */
	r = bell_init(&p->bell, o->kfd, (uint64_t)(uintptr_t)p,
		      uflags & UEPOLL_NOPOLL);
	if (r < 0)
		goto err;
	/* Locks are never destroyed: the memory is type-stable, and a forked
	 * child may finish a release (FORK in obj.c). */
	lock_init(&p->mtx);
	list_init(&p->items);
	atomic_init(&p->nuser, 0);
	atomic_init(&p->side, 0);
	atomic_init(&p->kfull, false);
	atomic_init(&p->krecs, NULL);
	atomic_init(&p->nfdrec, 0);
	atomic_init(&p->rr_owed, 0);
	atomic_init(&p->demote, PORT_LIVE);
	p->fork_gen = obj_fork_gen();
	atomic_init(&p->kheld, false);
	batch_policy_init(&p->batch);
	atomic_init(&p->bgen, 0);
	atomic_store_explicit(&p->gen, atomic_fetch_add_explicit(
		&port__gens, 1, memory_order_relaxed) + 1, memory_order_relaxed);
	rq_init(&p->rq);
	turn_init(&p->turn, uflags & UEPOLL_WAKE_FIFO);
	spin_init(&p->spin, uflags & UEPOLL_NOSPIN);
	spin_init_kernel(&p->kspin, uflags & UEPOLL_SPIN_KERNEL);
	return uobj_publish(o, fd);

err:
	bell_close(&p->bell);
	if (o->kfd >= 0)
		fdzone_close(o->kfd);
	sys_close(fd);
	uobj_free(o);
	return r;
}

/* QUIET's look (bell_signal): does the item's source still show ev? */
static bool port__item_shows(void *arg)
{
	struct item *it = arg;
	uint32_t ev = atomic_load_explicit(&it->events, memory_order_relaxed);

	return item_poll(it) & ev & ~UEP_PRIVATE_BITS;
}

/* The kernel's rule for EPOLLEXCLUSIVE: a wakeup counts when the instance
 * has a sleeper (bell_signal's BELL_SLEEPER) and the change is one the
 * registration asked for. */
static bool port__exclusive_counts(uint32_t ev, uint32_t key)
{
	switch (key & (EPOLLIN | EPOLLOUT)) {
	case EPOLLIN:
		return ev & EPOLLIN;
	case EPOLLOUT:
		return ev & EPOLLOUT;
	case 0:
		return true;
	default:
		return false;
	}
}

/* A watched instance must not stay readable for an event that did not
 * make the item ready (a write of 0): its holder's kernel epoll polls it,
 * and would otherwise report it (and disarm EPOLLONESHOT). */
static void port__signal_exact(struct port *p, struct item *it, uint32_t ev)
{
	if ((bell_watched(&p->bell) ||
	     atomic_load_explicit(&p->kheld, memory_order_relaxed)) &&
	    !(item_poll(it) & ev & ~UEP_PRIVATE_BITS))
		port_revalidate(p);
}

bool port_item_signal(struct item *it, uint32_t key, bool *deferred)
{
	uint32_t ev = atomic_load_explicit(&it->events, memory_order_relaxed);
	struct port *p = it->port;
	unsigned how, r;

	/* Disarmed by EPOLLONESHOT, or not interested in this change. */
	if (!(ev & ~UEP_PRIVATE_BITS) || (key && !(key & ev)))
		return false;
	/* QUIET (bell.c): a ring that would wake somebody for an item whose
	 * source shows nothing any more (a reader took the counter since this
	 * change's CAS, or a write of 0) is not made; the item stays queued,
	 * in its place.  A deferred signal rings nothing now. */
	how = deferred ? BELL_DEFER : BELL_EDGE | BELL_QUIET;
	if (rq_enqueue(&p->rq, it))
		how |= BELL_QUEUED;
	r = bell_signal(&p->bell, ev, how, port__item_shows, it);
	if (deferred) {
		spin_deferred(&p->spin);
		if (r & BELL_TIMER)
			*deferred = true;
	}
	port__signal_exact(p, it, ev);
	return (r & BELL_SLEEPER) && port__exclusive_counts(ev, key);
}

void port_item_kick(struct item *it)
{
	uint32_t ev = atomic_load_explicit(&it->events, memory_order_relaxed);
	struct port *p = it->port;

	/* seq_cst, pairs with the harvest's store of IDLE: IDLE means a
	 * waiter that was awake took the item after the deferred signal queued
	 * it, so nobody sleeps on it. */
	if (atomic_load(&it->state) != ITEM_QUEUED)
		return;
	(void)bell_signal(&p->bell, 0, BELL_EDGE, NULL, NULL);
	port__signal_exact(p, it, ev);
}

/* The item has left its source's wait queue: drop it from the instance. */
static bool port__free_item(struct port *p, struct item *it)
{
	atomic_fetch_sub_explicit(&p->nuser, 1, memory_order_relaxed);
	list_del(&it->portlink);
	return rq_retire(&p->rq, it);
}

/* ADD and MOD queue the item at once when the source is ready.  The poll
 * comes after the item is visible to signalers (seq_cst wq.n and count: see
 * wq.h), so a concurrent change is seen by one side. */
static void port__queue_if_ready(struct port *p, struct item *it,
				 uint32_t events)
{
	/* Newly queued: an edge (as a signal's); else a ring only if wanted. */
	if (item_poll(it) & events)
		(void)bell_signal(&p->bell, events,
				  rq_enqueue(&p->rq, it) ? BELL_QUEUED | BELL_EDGE
							 : 0,
				  NULL, NULL);
}

/*
 * MOD of a ueventfd's item.  It runs under the source's wq->lock alone, not
 * the instance's mtx: the lock keeps the item alive (it is freed only after
 * being unlinked under that lock) and serialises MODs of the item, so its
 * mask and its armed count change together.  Taking mtx as well made the
 * threads of a work-queue pattern (wait, read, MOD to re-arm) convoy: one
 * MOD waited for a wq->lock held by a signaler while the others queued on
 * mtx behind it.  The signal path does the same under the same lock
 * (enqueue, kick), so nothing here is new to it.
 */
static int port__mod_user(struct port *p, struct wq *q, int fd,
			  uint32_t events, uint64_t data)
{
	struct item *it;

	lock_take(&q->lock);
	it = wq_find(q, p, fd);
	if (!it || (atomic_load_explicit(&it->events, memory_order_relaxed) &
		    EPOLLEXCLUSIVE)) {
		lock_drop(&q->lock);
		return it ? -EINVAL : -ENOENT;
	}
	rq_update(&p->rq, it, events, data);
	/* After the new mask is stored, before the poll below: a signal that
	 * then sees the counts also sees the mask (seq_cst RMW; see wq.h). */
	wq_count(q, it, events);
	port_revalidate(p);
	port__queue_if_ready(p, it, events);
	lock_drop(&q->lock);
	return 0;
}

static int port__add_user(struct port *p, struct wq *q, struct uobj *src,
			  int fd, uint32_t events, uint64_t data)
{
	struct item *it;

	lock_take(&p->mtx);
	if (port_demoting(p)) {
		lock_drop(&p->mtx);
		return -ESTALE;
	}
	lock_take(&q->lock);
	it = wq_find(q, p, fd);
	if (it || q->dead) {
		lock_drop(&q->lock);
		lock_drop(&p->mtx);
		return it ? -EEXIST : -EBADF;
	}
	it = item_alloc();
	if (!it) {
		lock_drop(&q->lock);
		lock_drop(&p->mtx);
		return -ENOMEM;
	}
	atomic_init(&it->events, events);
	it->data = data;
	it->src = src;
	it->port = p;
	it->fd = fd;
	wq_link(q, it);
	list_add_tail(&p->items, &it->portlink);
	atomic_fetch_add_explicit(&p->nuser, 1, memory_order_relaxed);
	lock_drop(&q->lock);
	port__queue_if_ready(p, it, events);
	lock_drop(&p->mtx);
	return 0;
}

static int port__del_user(struct port *p, struct wq *q, int fd)
{
	struct item *it;

	lock_take(&p->mtx);
	lock_take(&q->lock);
	it = wq_find(q, p, fd);
	if (it)
		wq_unlink(q, it);
	lock_drop(&q->lock);
	if (it) {
		port__free_item(p, it);
		port_revalidate(p);
	}
	lock_drop(&p->mtx);
	return it ? 0 : -ENOENT;
}

/* The kernel's checks of a registration's flags (EINVAL), for a ueventfd. */
static bool port__user_flags_ok(int op, uint32_t events)
{
	if ((events & EPOLLEXCLUSIVE) &&
	    (op != EPOLL_CTL_ADD ||
	     (events & ~(UEP_EXCLUSIVE_OK_BITS | EPOLLROUNDROBIN | EPOLLURGENT))))
		return false;
	return !(events & EPOLLROUNDROBIN) ||
	       (op == EPOLL_CTL_ADD && (events & EPOLLEXCLUSIVE));
}

static int port__ctl_user(struct port *p, int op, int fd, struct uobj *obj,
			  struct epoll_event *ev);
static int port__ctl_kernel(struct port *p, int op, int fd,
			    struct epoll_event *ev);
static int port__take_source(struct wq *q, struct uobj *src);

/* A ueventfd's ctl; one that finds it being demoted (its item gone, or no
 * ADD allowed) waits for the end and goes to the kernel fd (DEMOTE). */
static int port__ctl_uefd(struct port *p, int op, int fd, struct uobj *obj,
			  struct epoll_event *ev)
{
	struct uefd *src = uefd_of(obj);
	int r = port__ctl_user(p, op, fd, obj, ev);

	if ((r == -ENOENT || r == -EBADF) && uefd_demoting(src)) {
		uefd_demote_wait(src);
		r = port__ctl_kernel(p, op, fd, ev);
	} else if ((r == -ENOENT || r == -EBADF) && uefd_kwatched(src)) {
		/* SHARED (eventfd_shared.c): its watchers are the kernel's,
		 * which polls its fd: exact before the ADD or MOD looks (NOPOLL
		 * ends in every process). */
		if (op != EPOLL_CTL_DEL && (ev->events & EPOLLET))
			uefd_kedge(src);
		if (op != EPOLL_CTL_DEL)
			uefd_watched_outside(src);
		r = port__ctl_kernel(p, op, fd, ev);
	}
	/* The instance's demotion took the item (a MOD or DEL that found
	 * none): the kernel has it now. */
	if (r == -ENOENT && port_demoting(p))
		r = -ESTALE;
	return r;
}

static int port__ctl_user(struct port *p, int op, int fd, struct uobj *obj,
			  struct epoll_event *ev)
{
	struct uefd *src = uefd_of(obj);
	uint32_t events;

	switch (op) {
	case EPOLL_CTL_DEL:
		return port__del_user(p, uefd_wq(src), fd);
	case EPOLL_CTL_ADD:
	case EPOLL_CTL_MOD:
		if (!port__user_flags_ok(op, ev->events))
			return -EINVAL;
		events = ev->events | EPOLLERR | EPOLLHUP;
		return op == EPOLL_CTL_ADD
			       ? port__add_user(p, uefd_wq(src), obj, fd,
						events, ev->data.u64)
			       : port__mod_user(p, uefd_wq(src), fd, events,
						ev->data.u64);
	default:
		return -EINVAL;
	}
}

/* EPOLLROUNDROBIN on a kernel fd or an instance: only with EPOLLEXCLUSIVE,
 * only on ADD; refused after the kernel's own checks of the fds (EBADF
 * comes first).  0 if not refused. */
static int port__rr_refused(int op, int fd, const struct epoll_event *ev)
{
	if (op == EPOLL_CTL_DEL || !(ev->events & EPOLLROUNDROBIN) ||
	    (op == EPOLL_CTL_ADD && (ev->events & EPOLLEXCLUSIVE)))
		return 0;
	return sys_fcntl_getfl(fd) < 0 ? -EBADF : -EINVAL;
}

/* A kernel fd: the kernel decides everything, errno included; records
 * only when asked for, or when the instance has some (krec.c). */
static int port__ctl_kernel(struct port *p, int op, int fd,
			    struct epoll_event *ev)
{
	int r = port__rr_refused(op, fd, ev);

	if (r)
		return r;
	if ((op != EPOLL_CTL_DEL && (ev->events & (EPOLLROUNDROBIN | EPOLLURGENT))) ||
	    atomic_load_explicit(&p->nfdrec, memory_order_relaxed))
		return krec_ctl_fd(p, op, fd, ev);
	/* Under mtx as every ctl of the kernel epoll: a settle (UNPEND in
	 * unpend.c) gives registrations back the events it read of them. */
	lock_take(&p->mtx);
	r = krec_kctl(p, op, fd, ev);
	lock_drop(&p->mtx);
	return r;
}

/* DEMOTE: until the demotion is over (DEMOTED: 1), or undone (LIVE: 0). */
static int port__demote_wait(struct port *p)
{
	int s;

	/* acquire: pairs with the demotion's release of its end state. */
	while ((s = atomic_load_explicit(&p->demote, memory_order_acquire)) ==
	       PORT_DEMOTING)
		sys_futex_wait(&p->demote, s);
	return s == PORT_DEMOTED;
}

static int port__ctl(struct port *p, int op, int fd, struct epoll_event *ev);

int port_ctl(struct port *p, int op, int fd, struct epoll_event *ev)
{
	int r;

	if (op != EPOLL_CTL_DEL && !ev)
		return -EFAULT;
	/* An ADD may allocate: first free what closes and releases gave back
	 * (obj_free_later: they may run in a signal handler). */
	if (op == EPOLL_CTL_ADD)
		obj_reclaim();
	for (;;) {
		if (likely(!port_demoting(p)) &&
		    (r = port__ctl(p, op, fd, ev)) != -ESTALE)
			return r;
		/* DEMOTE: once it is over, the instance is its kernel epoll
		 * (records and items made kernel registrations). */
		if (port__demote_wait(p))
			return krec_kctl(p, op, fd, ev);
	}
}

/*
 * FORKED (below): this instance's kernel epoll is the parent's too, and
 * what a ctl here makes must be there for the parent's waits, which cannot
 * see this process's items or records (F24 in docs/reliability.md: the
 * child's ueventfd an item that rang the doorbell both share, the child's
 * nesting a record whose address the parent reported as data).  So a
 * uepoll object's registration is made as a kernel epoll's (uepoll_ctl in
 * api.c): the kernel's registration of its fd with the program's data, the
 * fd kept exact for it (a ueventfd's mirror, edges by kedge; an instance
 * watched for good, as if held EPOLLET, so that no stale doorbell is
 * reported).  So is, in any holder, an instance the child got from its
 * parent: its doorbell, and the doorbell's registration in its kernel
 * epoll, are the parent's too, which this process must neither take nor
 * switch to edge-triggered (WATCHED in bell.c) under the parent's
 * instance; nor need it: its copy has no items (the fork made them kernel
 * registrations, and its ctl makes no more), so its fd is exact as it is
 * (port__polled and port__looked leave it alone).  The price: the parent's
 * ring of an item the child's instance does not see (the parent's ctl
 * after the fork) is readiness to the child.  A nesting this instance
 * recorded before the fork becomes
 * such a registration at its first MOD here (the record stays, inert: no
 * event carries its address, and a demotion finds its data gone from the
 * registration, krec_demote), and its DEL here is the record's.
 */
static int port__ctl_forked(struct port *p, int op, int fd, struct uobj *src,
			    struct epoll_event *ev)
{
	struct uobj *held = NULL;
	int r;

	if (op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD)
		held = uobj_polled_ctl(fd, ev->events |
					   (src->type == UOBJ_PORT ? EPOLLET
								   : 0));
	r = port__ctl_kernel(p, op, fd, ev);
	if (held)
		uobj_polled_end(held, r == 0);
	if (r == 0 && op != EPOLL_CTL_DEL)
		uobj_looked(fd);
	return r;
}

static int port__ctl(struct port *p, int op, int fd, struct epoll_event *ev)
{
	struct uobj *src;
	int r;

	if (op == UEPOLL_CTL_MIN_WAIT)
		return batch_set_min_wait(&p->batch, ev->data.u64);
	src = fdtab_get(fd);
	if (src && op == EPOLL_CTL_ADD && sys_same_file(fd, src->kfd) == 0) {
		/* STALE: the number was closed behind our back and now holds
		 * another file; what it holds is the kernel's. */
		uobj_unpublish(fd, src);
		uobj_put(src);
		src = NULL;
	}
	if (!src)
		return port__ctl_kernel(p, op, fd, ev);
	if ((port_forked(p) ||
	     (src->type == UOBJ_PORT && port_forked((struct port *)src))) &&
	    (uefd_of(src) || op != EPOLL_CTL_DEL ||
	     !krec_has_nest(p, (struct port *)src, fd)))
		r = port__ctl_forked(p, op, fd, src, ev);
	else if (uefd_of(src))
		r = port__ctl_uefd(p, op, fd, src, ev);
	else if (!(r = port__rr_refused(op, fd, ev)))
		r = krec_ctl_nest(p, op, fd, (struct port *)src, ev);
	uobj_put(src);
	return r;
}

/* Instances a kernel epoll holds level-triggered (kheld), process-wide:
 * while > 0, a read that empties a ueventfd looks at its items' instances
 * (uefd__was_read). */
static _Atomic int port__nkheld;

bool port_any_kheld(void)
{
	/* seq_cst, after the caller's change of its source (a read's CAS):
	 * against port__polled's count, then the kernel call, then the ctl's
	 * look (port__looked), which makes the chain below exact (LAZY in
	 * bell.c). */
	return atomic_load(&port__nkheld) > 0;
}

void port_revalidate(struct port *p)
{
	(void)bell_look(&p->bell, &p->rq,
			BELL_LOOK_CHANGED |
				(atomic_load_explicit(&p->kheld,
						      memory_order_relaxed)
					 ? BELL_KHELD
					 : 0) |
				(port_any_kheld() ? BELL_EXACT : 0));
}

void port_drop_source(struct wq *q)
{
	(void)port__take_source(q, NULL);
}

/*
 * DEMOTE (eventfd.c): every item of the source (its wq marked dead) becomes
 * a registration of its kernel fd in the item's instance, with the item's
 * mask (a disarmed EPOLLONESHOT one keeps only the flags, as the kernel's
 * does) and data.  The item goes first, then the kernel ADD polls the fd,
 * whose class is the counter's (MIRROR): a readiness of the moment between
 * the two is reported by the ADD.  An edge-triggered item whose event was
 * already reported is registered without the ADD's report (UNPEND in
 * unpend.c: its probe made before it leaves the instance).
 */
int port_demote_source(struct wq *q, struct uobj *src)
{
	return port__take_source(q, src);
}

/* F19: uobj_key_number gave src's private number fd for the item's number
 * num because num holds another file now: the registration is made under
 * num all the same (the kernel's key is (file, number)), so that the
 * program's DEL through num, once num is src's file again, finds it, as
 * natively (pfuzz's seed 820034982).  Not with our own bits (records). */
static bool port__keyed(struct uobj *src, int num, int fd,
			const struct epoll_event *ev)
{
	return num >= 0 && fd == src->kfd && num != fd &&
	       !(ev->events & (EPOLLROUNDROBIN | EPOLLURGENT));
}

static int port__kadd_keyed(struct port *p, int num, struct uobj *src,
			    struct epoll_event *ev)
{
	int r;

	lock_take(&p->mtx);
	r = krec_kadd_keyed(p, num, src->kfd, ev);
	lock_drop(&p->mtx);
	return r;
}

/* Unlink every item of a dead source, one at a time; with src (DEMOTE):
 * register src's file in the instance's kernel epoll in its place, under
 * the item's number, the kernel's key (uobj_key_number: a number the
 * program closed is the file's again for the ADD, if free; never another
 * number of the file, whose DEL would then find it: F19): the
 * registration lives as long as the file (epoll(7)). */
/* A demoted source's item, taken from p (its events ev, through number
 * num; ev0: its events when its probe was made), becomes a registration of
 * the source's fd in p's kernel epoll; the probe is used or closed. */
static int port__source_add(struct port *p, struct uobj *src, int num,
			    struct epoll_event *ev, uint32_t ev0, bool taken,
			    int probe)
{
	bool tmp;
	int fd = uobj_key_number(src, num, &tmp), r;

	/* The ADD would report a ready fd as a new edge: made without that
	 * report (UNPEND in unpend.c).  (Our own bits go as
	 * port__ctl_kernel gives them.)  (Not under the private number,
	 * which the source's demotion closes and the library may take again:
	 * the registration would keep the record's data.) */
	if (port__keyed(src, num, fd, ev)) {
		if (probe >= 0)
			fdzone_close(probe);
		r = port__kadd_keyed(p, num, src, ev);
	} else if (taken && probe >= 0 && ev->events == ev0 &&
		   fd != src->kfd &&
		   !port__rr_refused(EPOLL_CTL_ADD, fd, ev) &&
		   (sys_poll_now(src->kfd, (short)(ev->events & 0xffff)) &
		    (short)(ev->events & 0xffff))) {
		r = krec_add_unpended(p, fd, ev, probe);
	} else {
		if (probe >= 0)
			fdzone_close(probe);
		r = port__ctl_kernel(p, EPOLL_CTL_ADD, fd, ev);
	}
	uobj_key_done(fd, tmp);
	return r;
}

static int port__take_source(struct wq *q, struct uobj *src)
{
	struct epoll_event ev;
	struct item *it;
	struct port *p;
	int r, fd = -1, err = 0, probe;
	uint32_t ev0;
	bool taken = false;

	for (;;) {
		lock_take(&q->lock);
		if (list_empty(&q->head)) {
			lock_drop(&q->lock);
			return err;
		}
		it = container_of(q->head.next, struct item, wqlink);
		p = it->port;
		if (!uobj_tryget(&p->obj)) {
			lock_drop(&q->lock); /* being released: see above */
			sys_yield();
			continue;
		}
		ev0 = atomic_load_explicit(&it->events, memory_order_relaxed);
		lock_drop(&q->lock);
		/* UNPEND: an edge-triggered item's probe before it leaves the
		 * ready queue's sight: an edge from here on is the probe's or
		 * the item's (queued: then not taken). */
		probe = src && (ev0 & EPOLLET) ? unpend_probe(src->kfd, ev0)
					       : -1;

		lock_take(&p->mtx);
		lock_take(&q->lock);
		it = wq_find(q, p, -1);
		if (it) {
			ev.events = atomic_load_explicit(&it->events,
							 memory_order_relaxed);
			ev.data.u64 = it->data;
			fd = it->fd;
			wq_unlink(q, it);
		}
		lock_drop(&q->lock);
		if (it) {
			/* An edge-triggered item off the ready queue: its
			 * edge, if any, was taken (UNPEND). */
			taken = !port__free_item(p, it) &&
				(ev.events & EPOLLET);
			port_revalidate(p);
		}
		lock_drop(&p->mtx);
		if (it && src) {
			r = port__source_add(p, src, fd, &ev, ev0, taken,
					     probe);
			probe = -1;
			if (r < 0 && !err)
				err = r;
		}
		if (probe >= 0)
			fdzone_close(probe);
		uobj_put(&p->obj);
	}
}

/*
 * DEMOTE: the instance becomes the kernel epoll it stands for (its public
 * number), with every registration, while other threads use it.
 *  - PORT_DEMOTING shuts ctl out: a ctl under mtx that sees it (or a MOD
 *    or DEL whose item the demotion took) waits for the end and is then
 *    made on the kernel epoll (port_ctl).
 *  - Under mtx: each item is taken from its source and the instance; every
 *    record's registration gets the user's data and events back (krec.c);
 *    the doorbell leaves the kernel epoll, unless a parent shares it
 *    (FORKED).
 *  - Outside it: each item's source is registered in the kernel epoll,
 *    under the item's number (the kernel's key: uobj_key_number), with
 *    the item's mask (a disarmed one-shot keeps only the
 *    flags, as the kernel's) and data; a ueventfd's fd is made exact
 *    first (UEVENTFD_NOPOLL ends), so the ADD's poll sees its state.
 *  - DEMOTED; every number unpublished: uepoll's calls on them go to the
 *    kernel from then on.
 * A wait in flight meanwhile goes on as a uepoll wait that finds nothing
 * in userspace: it looks at the kernel epoll (nkernel is raised first) and
 * sleeps there, where every registration is, or will be after its ADD,
 * which wakes it; events the kernel gave with a record's old data are
 * dropped as stale (DATA in krec.c), the MOD having queued the
 * registration again.  An edge-triggered registration whose event was
 * reported already is not reported again (UNPEND in unpend.c: probes made
 * before the items leave and before the records' MODs, one settle after)
 * unless such a wait takes the report first.  The ueventfds it watched
 * stay uepoll's (their fds are exact); a nested instance it held stays
 * counted as watched for good (its fd is in a kernel epoll now).  What
 * cannot be carried: that wait's report, a one-shot one that fires during
 * the demotion may fire once more, and the batching policy, FIFO wakeups
 * and round robin end (the kernel's wakeups are LIFO and exclusive).  A
 * record's registration made through a number the program has closed
 * since is reached through a number of its file, and MODded under its own
 * key if the number holds another file now (krec__reach,
 * sys_epoll_ctl_keyed: F19, F21); one whose file is gone is dropped
 * (fdinfo no longer lists it).  An exec's demotion demotes the ueventfds
 * before the instances (obj__demote_all).
 */
struct port__moved {
	struct uobj *src;
	int fd;
	bool taken; /* edge-triggered, its edge taken (UNPEND) */
	bool tmp;   /* fd: a copy of src's file (uobj_key_number) */
	bool moved; /* its item was still the instance's when taken */
	struct item *it; /* identity only, from the first pass */
	int probe;	 /* UNPEND: made before the item left the queue */
	uint32_t pev;	 /* the events the probe was made with */
	struct epoll_event ev;
};

/*
 * FORKED.  An instance a forked child got from its parent shares its kernel
 * epoll, one file, with the parent, whose instance lives on.  Its demotion
 * here, before an exec, would rewrite that file under the parent (the
 * doorbell taken out, userspace sources put in): the parent's waits would
 * no longer be woken by its ueventfds.  So an exec leaves it as it is: the
 * new program gets the file as the parent uses it (its kernel fds, and the
 * ueventfds shared at the fork, registered; the library's doorbell too).
 */
bool port_exec_keeps(struct port *p)
{
	return port_forked(p);
}

void port_carry_begin(struct port *p, int file, struct port_carry *c)
{
	struct unpend_reg *regs = NULL;
	int nregs;
	size_t k = 0;

	lock_take(&p->mtx);
	nregs = unpend_regs(p->obj.kfd, &regs);
	if (nregs > 0 && (c->v = calloc((size_t)nregs, sizeof(*c->v)))) {
		for (int i = 0; i < nregs; i++)
			if ((regs[i].events & EPOLLET) &&
			    !(regs[i].events & EPOLLONESHOT) &&
			    sys_epoll_target_is(p->obj.kfd, regs[i].fd,
						unpend_toff(regs, i), file) == 1)
				c->v[k++] = (struct unpend){ .fd = regs[i].fd,
							     .data = regs[i].data };
		/* Which are queued: their edge stands (no drop below). */
		if (k)
			unpend_settle(p->obj.kfd, c->v, k);
		for (size_t i = 0; i < k; i++)
			if (!c->v[i].seen) {
				c->v[c->n] = c->v[i];
				c->v[c->n++].drop = true;
			}
	}
	lock_drop(&p->mtx);
	free(regs);
}

void port_carry_end(struct port *p, struct port_carry *c)
{
	if (c->n) {
		lock_take(&p->mtx);
		unpend_settle(p->obj.kfd, c->v, c->n);
		lock_drop(&p->mtx);
	}
	free(c->v);
	c->v = NULL;
	c->n = 0;
}

/* A demotion's work (port_demote): what it moves, and UNPEND's
 * registrations to settle (room for a record or an item each). */
struct port__demotion {
	struct port__moved *v;
	size_t n;
	struct unpend *sus;
	_Atomic int *probes;
	int *tmps;
	size_t nsus;
	int r;
};

static void port__demotion_free(struct port__demotion *d)
{
	free(d->v);
	free(d->tmps);
	free(d->sus);
	free(d->probes);
}

/* mtx held: the room (-ENOMEM: none taken). */
static int port__demotion_alloc(struct port *p, struct port__demotion *d)
{
	size_t cap = 0, scap;
	struct list *l;

	list_for_each(l, &p->items)
		cap++;
	scap = cap + krec_count(p);
	if ((cap && !(d->v = malloc(cap * sizeof(*d->v)))) ||
	    !(d->tmps = malloc((scap - cap + 1) * sizeof(*d->tmps))) ||
	    (scap && (!(d->sus = malloc(scap * sizeof(*d->sus))) ||
		      !(d->probes = malloc(scap * sizeof(*d->probes)))))) {
		port__demotion_free(d);
		return -ENOMEM;
	}
	return 0;
}

/* mtx held: what each item is, with a reference to its source (one at no
 * reference is being released: its last number is closed, and its
 * registrations go with it).  Its mask for the probe only: a MOD of a
 * ueventfd's item runs under its source's lock, not mtx, so the mask and
 * data the registration gets are read once it is unlinked. */
static void port__demotion_collect(struct port *p, struct port__demotion *d)
{
	struct list *l;

	list_for_each(l, &p->items) {
		struct item *it = container_of(l, struct item, portlink);

		if (!uobj_tryget(it->src))
			continue;
		d->v[d->n++] = (struct port__moved){
			.src = it->src,
			.fd = it->fd,
			.it = it,
			.probe = -1,
			.pev = atomic_load_explicit(&it->events,
						    memory_order_relaxed) &
			       ~(EPOLLROUNDROBIN | EPOLLURGENT),
		};
	}
}

/* UNPEND: an edge-triggered item's probe before it leaves the ready queue's
 * sight, its source's fd exact and making an edge of every write (kedge)
 * from then on: an edge after it is the probe's or the item's (then
 * queued: not taken).  Outside mtx (a sync takes the source's locks); ctl
 * waits meanwhile (DEMOTING), and a source's close may take its item (then
 * not moved). */
static void port__demotion_probe(struct port__demotion *d)
{
	for (size_t i = 0; i < d->n; i++) {
		if (!(d->v[i].pev & EPOLLET))
			continue;
		uefd_kedge(uefd_of(d->v[i].src));
		uefd_watched_outside(uefd_of(d->v[i].src));
		d->v[i].probe = unpend_probe(d->v[i].src->kfd, d->v[i].pev);
	}
}

/* mtx held: every item leaves the instance; a collected one is moved, with
 * the mask and data it has now (unlinked: no MOD reaches it any more). */
static void port__demotion_take(struct port *p, struct port__demotion *d)
{
	while (!list_empty(&p->items)) {
		struct item *it = container_of(p->items.next, struct item,
					       portlink);
		struct wq *q = uefd_wq(uefd_of(it->src));
		struct port__moved *m = NULL;

		lock_take(&q->lock);
		wq_unlink(q, it);
		lock_drop(&q->lock);
		for (size_t i = 0; i < d->n && !m; i++)
			if (d->v[i].it == it && !d->v[i].moved)
				m = &d->v[i];
		if (!m) {
			port__free_item(p, it);
			continue;
		}
		m->ev.events = atomic_load_explicit(&it->events,
						    memory_order_relaxed) &
			       ~(EPOLLROUNDROBIN | EPOLLURGENT);
		m->ev.data.u64 = it->data;
		m->moved = true;
		m->taken = !port__free_item(p, it) && (m->ev.events & EPOLLET);
	}
}

/* A moved item becomes a registration of its source's fd in the kernel
 * epoll (mtx not held), under the item's number (keyed) if it holds
 * another file now. */
static void port__demotion_add(struct port *p, struct port__demotion *d,
			       struct port__moved *m)
{
	int fd, num, e;
	bool keyed;

	if (!m->moved) {
		if (m->probe >= 0)
			fdzone_close(m->probe);
		uobj_put(m->src);
		return;
	}
	if (uefd_of(m->src)) {
		/* Every write an edge in the kernel from now on, not only for
		 * an edge-triggered registration: a holder of this instance,
		 * now the kernel epoll, may hold it EPOLLET (a nesting, a
		 * kernel epoll, another process that got it over a UNIX
		 * socket: helper-26's scm_et_nested), and gets an edge per
		 * event of each registration, as the kernel's nested wakeups
		 * give. */
		uefd_kedge(uefd_of(m->src));
		uefd_watched_outside(uefd_of(m->src));
	}
	fd = uobj_key_number(m->src, m->fd, &m->tmp);
	keyed = port__keyed(m->src, m->fd, fd, &m->ev);
	num = m->fd;
	m->fd = fd; /* its copy, if tmp, closed after the settle */
	/* UNPEND: its probe before the ADD, which would report the edge
	 * taken again (settled below); not under a number that holds another
	 * file (the settle could not queue it again). */
	if (!keyed && m->taken && m->probe >= 0 && m->ev.events == m->pev &&
	    (sys_poll_now(m->src->kfd, (short)(m->ev.events & 0xffff)) &
	     (short)(m->ev.events & 0xffff))) {
		atomic_store_explicit(&d->probes[d->nsus], m->probe,
				      memory_order_relaxed);
		m->probe = -1;
		d->sus[d->nsus] = (struct unpend){ .fd = fd,
						   .data = m->ev.data.u64,
						   .probe = &d->probes[d->nsus] };
		d->nsus++;
	}
	if (m->probe >= 0)
		fdzone_close(m->probe);
	e = keyed ? krec_kadd_keyed(p, num, fd, &m->ev)
		  : krec_kctl(p, EPOLL_CTL_ADD, fd, &m->ev);
	if (e < 0 && !d->r)
		d->r = e;
	uobj_put(m->src);
}

int port_demote(struct port *p)
{
	struct port__demotion d = { 0 };
	int s = PORT_LIVE;

	if (!atomic_compare_exchange_strong(&p->demote, &s, PORT_DEMOTING))
		return port__demote_wait(p) ? 0 : port_demote(p);
	/* Waits look at the kernel epoll from now on; those asleep on the
	 * futex word go there (NAP). */
	(void)bell_kernel(&p->bell, BELL_K_FOREVER, 0);
	/* The kernel's epoll_wait on it will report the instances it holds
	 * as their fds read, with no check of ours: LAZY (bell.c) ends for
	 * good, and what it left rung is taken (count, then look). */
	bell_exact(1);
	krec_nest_exact(p);
	lock_take(&p->mtx);
	if (port__demotion_alloc(p, &d) < 0) {
		lock_drop(&p->mtx);
		atomic_store_explicit(&p->demote, PORT_LIVE,
				      memory_order_release);
		sys_futex_wake_all(&p->demote);
		return -ENOMEM;
	}
	port__demotion_collect(p, &d);
	lock_drop(&p->mtx);
	port__demotion_probe(&d);
	lock_take(&p->mtx);
	port__demotion_take(p, &d);
	d.nsus = krec_demote(p, d.sus, d.probes, d.tmps);
	/* FORKED: the doorbell is the parent's too, which its waits need
	 * for the items it makes from then on (a child's io_uring must not
	 * stop them). */
	if (!port_forked(p))
		(void)sys_epoll_ctl(p->obj.kfd, EPOLL_CTL_DEL,
				    bell_fd(&p->bell), NULL);
	lock_drop(&p->mtx);
	for (size_t i = 0; i < d.n; i++)
		port__demotion_add(p, &d, &d.v[i]);
	if (d.nsus) {
		/* Every ctl waits (DEMOTING; a plain one for mtx). */
		lock_take(&p->mtx);
		unpend_settle(p->obj.kfd, d.sus, d.nsus);
		lock_drop(&p->mtx);
	}
	/* The copies stood for their numbers until the settle was done with
	 * them (its MODs go through the registration's number). */
	for (size_t i = 0; i < d.n; i++)
		if (d.v[i].moved)
			uobj_key_done(d.v[i].fd, d.v[i].tmp);
	for (size_t i = 0; d.tmps[i] >= 0; i++)
		fdzone_close(d.tmps[i]);
	port__demotion_free(&d);
	atomic_store_explicit(&p->demote, PORT_DEMOTED, memory_order_release);
	sys_futex_wake_all(&p->demote);
	uobj_unpublish_all(&p->obj);
	return d.r;
}

/* The last reference is gone.  Idempotent up to uobj_free (FORK in
 * obj.c): items are unlinked one at a time and the fds closed and
 * forgotten under mtx, so that a forked child finishes what is left. */
static void port__release(struct uobj *o)
{
	struct port *p = (struct port *)o;

	/* A kernel epoll's hold ends with our kernel epoll's file (WATCHED). */
	bell_outside(&p->bell, BELL_OUT_RELEASE, -1, 0, NULL);
	if (atomic_exchange(&p->kheld, false))
		atomic_fetch_sub(&port__nkheld, 1);
	lock_take(&p->mtx);
	while (!list_empty(&p->items)) {
		struct item *it = container_of(p->items.next, struct item,
					       portlink);
		struct wq *q = uefd_wq(uefd_of(it->src));

		lock_take(&q->lock);
		wq_unlink(q, it);
		lock_drop(&q->lock);
		port__free_item(p, it);
	}
	bell_close(&p->bell);
	if (o->kfd >= 0)
		fdzone_close(o->kfd);
	o->kfd = -1;
	lock_drop(&p->mtx);
	rq_destroy(&p->rq); /* frees items retired while queued */
	krec_release(p);
	uobj_free(o);
}

/* An instance needs nothing when it leaves the fd table: its items go with
 * its last reference, as the kernel keeps an epoll alive while a thread
 * still waits on it. */
static void port__close(struct uobj *o)
{
	(void)o;
}

/* FORK (obj.c), in the child: no thread waits, dozes or spins here any
 * more (the counts that say so go to 0, the FIFO line goes, closing the
 * eventfds its followers slept on), and the ready queue is rebuilt from the
 * instance's items, since a producer may have been half-way through linking
 * one, and a batching wait may have held some on its private list. */
/* The kernel epoll is about to be shared with another process, whose ctl
 * this one will not see: nkernel ("never below the true number") never
 * reaches 0 again, in either process, so waits always look at the kernel
 * epoll (a zero-timeout wait makes its one system call). */
static void port__fork_prepare(struct uobj *o)
{
	struct port *p = (struct port *)o;

	/* The other process's ctl cannot end our naps (NAP in bell.c). */
	(void)bell_kernel(&p->bell, BELL_K_FOREVER, 0);
	/* Nor can we see it register this instance edge-triggered anywhere:
	 * watched instances ring on every event from now on (WATCHED). */
	bell_outside(&p->bell, BELL_OUT_SHARED, -1, 0, NULL);
}

static int port__fork_child(struct uobj *o)
{
	struct port *p = (struct port *)o;

	/* FORKED needs no store (port_forked); the repairs below store only
	 * where a value is not already right: a page the child only reads
	 * stays shared with the parent (no copy). */
	bell_fork_child(&p->bell);
	spin_fork_child(&p->spin);
	spin_fork_child(&p->kspin);
	turn_fork_child(&p->turn);
	rq_fork_child(&p->rq, &p->items);
	return 0;
}

static int port__ctl_op(struct uobj *o, int op, int fd,
		       struct epoll_event *ev)
{
	return port_ctl((struct port *)o, op, fd, ev);
}

/* Through the FIFO line when the instance keeps one (turn.c). */
static int port__wait_op(struct uobj *o, struct epoll_event *evs, int max,
			 int64_t deadline, const sigset_t *sigmask)
{
	return turn_wait((struct port *)o, evs, max, deadline, sigmask);
}

/* (read and write: the kernel's answer for an epoll, EINVAL.) */
static bool port__polled(struct uobj *o, uint32_t events)
{
	struct port *p = (struct port *)o;

	/* A kernel epoll holding it edge-triggered: watched by it, as by a
	 * uepoll instance that holds it so (a ring per event, its fd exact:
	 * WATCHED in bell.c), from before the kernel's ADD or MOD, and for
	 * good if the call makes the registration (port__polled_end).  Held
	 * level-triggered, or polled, it needs only the doorbell's level,
	 * which DOORBELL keeps (a stale ring at most: uepoll(7)). */
	if (port_forked(p)) /* FORKED: exact, and its doorbell the parent's */
		return false;
	/* Held level-triggered (UNSTALE), for good: whatever the kernel
	 * answers, a look costs no more than a system call when an item
	 * stops being ready. */
	if (events && !(events & EPOLLET) &&
	    !atomic_exchange(&p->kheld, true))
		atomic_fetch_add(&port__nkheld, 1);
	bell_outside(&p->bell,
		     BELL_OUT_POLLED | (events & EPOLLET ? BELL_OUT_HOLD : 0),
		     p->obj.kfd, (uint64_t)(uintptr_t)p, &p->rq);
	return events & EPOLLET;
}

/* poll()/select() is about to look: items whose source is not ready any
 * more dropped (as the kernel's poll of an epoll drops them), a stale
 * doorbell taken (a loop that polls the fd and then waits with no timeout
 * must not block: issue 33).  Not before a kernel epoll's ctl, which may
 * yet fail without looking. */
static void port__looked(struct uobj *o)
{
	struct port *p = (struct port *)o;

	if (port_forked(p)) /* FORKED: exact, and its doorbell the parent's */
		return;
	(void)bell_look(&p->bell, &p->rq, BELL_LOOK_POLLED);
	/* The instances it holds may have left their doorbells rung (LAZY in
	 * bell.c): the kernel's poll of this fd polls theirs. */
	krec_nest_exact(p);
}

/* FORK's filter for port__looked (obj.c): the look takes a stale ring
 * (the doorbell rung) and drops queued items that are not ready; with the
 * doorbell not rung and nothing queued it does nothing (bell_look's
 * POLLED: the prune of an empty queue is false, the clear of a doorbell
 * not rung returns).  Loads only: no reference, no lock (obj__lock held). */
static bool port__look_due(struct uobj *o)
{
	struct port *p = (struct port *)o;

	return !port_forked(p) &&
	       (bell_rung(&p->bell) || !rq_empty(&p->rq));
}

static void port__polled_end(struct uobj *o, bool made)
{
	struct port *p = (struct port *)o;

	bell_outside(&p->bell, made ? BELL_OUT_HELD : BELL_OUT_REFUSED,
		     p->obj.kfd, (uint64_t)(uintptr_t)p, &p->rq);
}

static int port__demote_op(struct uobj *o)
{
	return port_demote((struct port *)o);
}

/* FORK's policy for an instance: a fork keeps it as a copy (FORK in
 * obj.c), or demotes it with UEPOLL_FORK_DEMOTE_INSTANCES=1; an exec
 * demotes it, unless it is a forked child's (FORKED, port_exec_keeps). */
static enum uobj_fate port__fate(struct uobj *o, bool exec)
{
	if (exec)
		return port_exec_keeps((struct port *)o) ? UOBJ_KEEP
							 : UOBJ_DEMOTE;
	return config_get().fork_demote_instances ? UOBJ_DEMOTE : UOBJ_KEEP;
}

static int port__batch_op(struct uobj *o, const struct uepoll_batch *set,
			  struct uepoll_batch *old)
{
	return port_batch((struct port *)o, set, old);
}

const struct uobj_ops port_ops = {
	.size = sizeof(struct port),
	.ctl = port__ctl_op,
	.wait = port__wait_op,
	.close = port__close,
	.release = port__release,
	.fork_prepare = port__fork_prepare,
	.fork_child = port__fork_child,
	.polled = port__polled,
	.polled_end = port__polled_end,
	.looked = port__looked,
	.look_due = port__look_due,
	.demote = port__demote_op,
	.fate = port__fate,
	.batch = port__batch_op,
};
