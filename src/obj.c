/* SPDX-License-Identifier: MIT */
/*
 * obj.c - reference counts, type-stable pools and fork for uepoll objects.
 *
 * LIVE LIST.  An object is on its type's obj__live from the end of its
 * creation (uobj_publish, when it is published) to the end of its release
 * (uobj_free), under obj__lock: a forked child repairs what is on it (FORK).
 * Its locks are initialised before it joins and never destroyed (the memory
 * is type-stable), so that a child may finish its release.
 *
 * FORK.  A child has only the thread that called fork(), and a copy of
 * memory as the other threads left it: a lock one of them held stays held
 * for ever in the child, a structure one of them was changing under a lock
 * is half-changed.  So the prepare handler, in this order:
 *  - closes the fork fence (lock.c, FENCE): one fork at a time; the
 *    creations and demotions in flight (spans: uobj_alloc to publication,
 *    uobj_demote, obj_demote_inherited) end, new ones wait until the fork
 *    is over.  So every ueventfd a number leads to is whole when the
 *    prepare walks them, whatever the other threads do;
 *  - shares every published ueventfd that is not shared yet (SHARED in
 *    eventfd_shared.c; obj__demote_all), so that parent and child use one
 *    counter, as a kernel eventfd is one file in both;
 *  - closes the fork gate (lock.c, GATE) and waits until no other thread
 *    holds, or is taking, any lock of the library; then it takes obj__lock
 *    (a signal handler may take it outside the gate: SIGNALS) and the
 *    timer's lock (its thread takes it outside the gate).
 * The forking thread blocks its signals meanwhile (a handler of its own
 * would wait at the gate it closed).  The parent and child handlers open
 * the gate and the fence again and give obj__lock back.  What
 * the other threads were doing *without* a lock is repaired in the child
 * (each type's fork_child): an item a producer was linking into a
 * wait-free ready queue, waiters counted as sleeping, a FIFO line of
 * threads that do not exist, owed work queued on their lists, a timer run
 * in progress.  Then every object's count is recomputed: the fd table's
 * reference and what fork_child reports, since every other reference was
 * held by a call of a thread that is gone.  Objects left with none (closed
 * while a call was in flight, or being released at that moment) are
 * closed and released in the child, which closes their private fds there.
 * Last, the child starts its timer thread if the parent had one (timer.c),
 * so that its coalesced writes stay coalesced and no write has to start
 * it.  The child writes only where a value changes (obj_fork_zero; an
 * instance is FORKED by the process's generation, obj_fork_gen, not by a
 * flag stored in it), so the pages of idle objects stay shared with the
 * parent; the parent's prepare writes only to the instances whose look
 * has something to do (obj__looked_all).  The parent pays the fence and
 * the gate (the spans and lock hold times of the threads in them then),
 * reads every live instance once (the look), and shares and prepares only
 * the objects made since the last fork (PREPARED, below); the child reads
 * every live object once, one type's list after the other (LIVE LIST).
 * docs/benchmarks.md, issue 35 item 4, has what a fork with 4000 objects
 * costs, part by part: the child's walk, the look, and the kernel's own
 * copy (and, at the child's exit, close) of the library's fds and pages.
 * Instances are not demoted: the child has a copy of their userspace state
 * (FORKED in port.c).  UEPOLL_FORK_DEMOTE_INSTANCES=1 demotes them, so that
 * processes which share an instance made before the fork (both waiting on
 * it) get the kernel's semantics exactly, at the price of its acceleration
 * (t_fork_share_demoted).  UEPOLL_FORK_DEMOTE_EVENTFDS=1 demotes the
 * ueventfds instead of sharing them (as before issue 21): the kernel's
 * costs, for a program whose threads take turns on blocked reads of
 * ueventfds alive at its forks, where a shared one costs more
 * (docs/benchmarks.md).  Both are read at the first call (config.c, ONCE).
 *
 * SIGNALS.  close(2), dup(2), dup2(2), dup3(2) and fcntl(2) are
 * async-signal-safe, so uepoll_close, uepoll_dup*, uepoll_fcntl are too
 * (api.c; issue 33: before, a handler's close took the instances'
 * port->mtx and the source's wq->lock, its dup obj__lock, which the
 * interrupted frame could hold: a deadlock).  A signal handler may call
 * them whatever its thread was doing in the library, holding a lock of it
 * included (port->mtx in a ctl, a source's wq->lock in a walk, obj__lock
 * in a dup...).  Their kernel call is made at once, with the kernel's
 * answer.  What they change here:
 *  - the numbers (the fd table and the lists, NUMBERS) at once too, under
 *    obj__lock, which is MASKED (lock.h): every hold of it blocks the
 *    thread's signals, so no handler runs on a thread that holds it (is
 *    taking or dropping it), and it is a leaf that waits for nobody (the
 *    pool lock is taken around it, not inside; a number's link lives in
 *    the table's chunk, which fdtab maps, so nothing under it allocates),
 *    so a handler that waits for it waits for another thread's short
 *    section, never for its own frame;
 *  - the type's close (a ueventfd leaves its instances: their port->mtx,
 *    its wq->lock, the timer) and the release of the last reference take
 *    other locks: a thread inside one of the library's locks
 *    (lock_held_here: the handler's frame holds one, or is taking or
 *    dropping it, or is in a leaf lock's section) owes them instead, on
 *    the object's `owed` node (lock.h's owed work), and the frame does
 *    them when it leaves its last lock, a lock's hold time later, as if
 *    the close had come then.  The close is owed with a reference (the
 *    queue's, dropped after it: its release then, if it was the last);
 *    the release is owed by the put that left none, and its object stays
 *    at zero (no fdtab_get can take it: it is unpublished) and is queued
 *    nowhere else (a queued close holds a reference), so one node carries
 *    either, never both.
 * So a handler never waits for a lock its own thread holds; the number is
 * closed (or replaced) and unpublished when its call returns (a new
 * eventfd() may get it, uepoll's calls on it go to the kernel; a replaced
 * one leads to its new file; F_SETFL's O_NONBLOCK is seen by the next
 * read); nothing is
 * lost (the drain does the close and the release) and nothing leaks.  A
 * handler whose thread holds no lock does it all at once, as any call;
 * then it may have interrupted malloc(3), so a close and a release free
 * nothing either: what they give back (an instance's items and records)
 * is kept by obj_free_later and freed by the next creation or ADD.
 * FORK: a handler takes obj__lock at depth > 0, where the gate does not
 * see it (its frame waiting at the gate, or in a leaf lock), so the
 * prepare takes obj__lock itself after the gate; a child forgets the
 * owed closes and releases of the threads that did not come along (its
 * count of references is made again: an object left with none is closed
 * and released there).  models/sigclose.pml checks this, with a handler
 * at every step of its thread and a fork; t_signal_close, t_signal_dup2,
 * t_signal_dup3, t_signal_fcntl and t_fork_signal_dup run the handler's
 * calls at every kind of hold and compare the results with the kernel's.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "eventfd.h"
#include "fdtab.h"
#include "shm.h"
#include "sys.h"
#include "lock.h"
#include "obj.h"
#include "port.h"
#include "timer.h"

#define OBJ__NTYPES 3

const struct uobj_ops *const uobj__ops[OBJ__NTYPES] = {
	[UOBJ_EVENTFD] = &uefd_ops,
	[UOBJ_PORT] = &port_ops,
};

struct obj__pool {
	pthread_mutex_t lock;
	struct uobj *free;
};

static struct obj__pool obj__pools[OBJ__NTYPES] = {
	[UOBJ_EVENTFD] = { PTHREAD_MUTEX_INITIALIZER, NULL },
	[UOBJ_PORT] = { PTHREAD_MUTEX_INITIALIZER, NULL },
};

/* MASKED (lock.h): taken with every signal of the thread blocked, and a
 * leaf (SIGNALS). */
static pthread_mutex_t obj__lock = PTHREAD_MUTEX_INITIALIZER;
/* One live list per type (LIVE LIST): a walk that wants one type (the
 * child's repair, instances first) hops over that type's objects only, each
 * hop a cache miss in a child whose caches are cold (docs/benchmarks.md,
 * issue 35 item 4). */
#define OBJ__LIVE_INIT(t) [t] = { &obj__live[t], &obj__live[t] }
static struct list obj__live[OBJ__NTYPES] = {
	OBJ__LIVE_INIT(0),
	OBJ__LIVE_INIT(UOBJ_EVENTFD),
	OBJ__LIVE_INIT(UOBJ_PORT),
};

static void obj__take(sigset_t *old)
{
	lock_take_masked(&obj__lock, old);
}

static void obj__drop(const sigset_t *old)
{
	lock_drop_masked(&obj__lock, old);
}

static void obj__owed_fn(struct lock_owed *n, unsigned bits);
/* What an object's `owed` node may carry (SIGNALS). */
#define OBJ__OWE_CLOSE 0x1u   /* its type's close; the queue holds a ref */
#define OBJ__OWE_RELEASE 0x2u /* its release; no reference is left */

/* SIGNALS: what the close and release paths gave back, a stack linked
 * through each block's first word.  Pushed by CAS (release: the link is
 * stored before), taken whole by exchange (acquire), so no ABA. */
static _Atomic(void *) obj__later;

void obj_free_later(void *p)
{
	void *head = atomic_load_explicit(&obj__later, memory_order_relaxed);

	do
		*(void **)p = head;
	while (!atomic_compare_exchange_weak_explicit(&obj__later, &head, p,
						      memory_order_release,
						      memory_order_relaxed));
}

void obj_reclaim(void)
{
	void *p, *next;

	if (!atomic_load_explicit(&obj__later, memory_order_relaxed))
		return;
	for (p = atomic_exchange_explicit(&obj__later, NULL,
					  memory_order_acquire);
	     p; p = next) {
		next = *(void **)p;
		free(p);
	}
}

struct uobj *uobj_alloc(int type)
{
	struct obj__pool *p = &obj__pools[type];
	size_t size = uobj__ops[type]->size;
	struct uobj *o;

	obj_reclaim(); /* not a signal handler's: a creation */
	/* The creation's span (FORK): it ends in uobj_publish (or, if the
	 * creation fails before, in uobj_free). */
	lock_span_enter();
	lock_take(&p->lock);
	o = p->free;
	if (o)
		p->free = o->pool_next;
	lock_drop(&p->lock);

	if (!o) {
		o = aligned_alloc(UEPOLL_CACHELINE,
				  (size + UEPOLL_CACHELINE - 1) &
					  ~(size_t)(UEPOLL_CACHELINE - 1));
		if (!o) {
			lock_span_leave();
			return NULL;
		}
		memset(o, 0, size);
		o->type = type;
	} else {
		/* Everything but the header fields a racy fdtab_get() may read
		 * (refs, type) is reset; refs is 0 here and stays so until the
		 * release store below publishes the new incarnation. */
		memset((char *)o + sizeof(struct uobj), 0,
		       size - sizeof(struct uobj));
	}
	o->fd = -1;
	o->kfd = -1;
	o->on_live = false;
	o->creating = true;
	o->pool_next = NULL;
	/* Not queued anywhere (SIGNALS: its drain took the bits before the
	 * release that freed it). */
	o->owed.next = NULL;
	atomic_store_explicit(&o->owed.bits, 0, memory_order_relaxed);
	o->owed.fn = obj__owed_fn;
	atomic_store_explicit(&o->refs, 1, memory_order_release);
	return o;
}

/* o's creation failed before its publication (uobj_free): its span ends.
 * Only its creator has it then; a published o has `creating` false
 * (uobj_publish). */
static void obj__unmade(struct uobj *o)
{
	if (o->creating) {
		o->creating = false;
		lock_span_leave();
	}
}

/* Objects on the live list, by type: written under obj__lock, read
 * relaxed by uobj_live_count (a hint). */
static _Atomic int obj__nlive[OBJ__NTYPES];

int uobj_live_count(int type)
{
	return atomic_load_explicit(&obj__nlive[type], memory_order_relaxed);
}

/* Joins to the live list so far (obj__lock): each list is in the order of
 * live_seq, oldest first, since a join appends (and so does the child's
 * return of an orphan, with a new number: obj__child). */
static unsigned obj__joins;

/* obj__lock held. */
static void obj__join(struct uobj *o)
{
	o->live_seq = obj__joins++;
	list_add_tail(&obj__live[o->type], &o->live);
	o->on_live = true;
	atomic_fetch_add_explicit(&obj__nlive[o->type], 1,
				  memory_order_relaxed);
}

void uobj_live(struct uobj *o)
{
	sigset_t m;

	obj__take(&m);
	obj__join(o);
	obj__drop(&m);
}

/* An object the table had at a number that the kernel just gave again
 * (closed behind our back, or replaced by a dup3): that number is no
 * longer its.  obj__lock held; true if it was its last (the caller then
 * closes it, and drops the table's reference in any case). */
static bool obj__lose_number(struct uobj *o, int fd);
/* fd, just published for o, joins its list (obj__lock held; after the
 * number's former object lost it: the link is the number's own). */
static void obj__add_number(struct uobj *o, int fd);

int uobj_publish(struct uobj *o, int fd)
{
	struct uobj *old;
	bool ok, last = false, made;
	sigset_t m;

	/* Live and published in one hold of the lock.  `creating` is cleared
	 * before the table publishes o: from then on another thread may close
	 * and free it (uobj_free reads the flag). */
	obj__take(&m);
	made = o->creating;
	o->creating = false;
	obj__join(o);
	old = fdtab_set(fd, o, &ok);
	if (ok) {
		if (old)
			last = obj__lose_number(old, fd);
		obj__add_number(o, fd);
	}
	obj__drop(&m);
	if (!ok) {
		sys_close(fd);
		uobj_ops(o)->release(o);
	}
	/* On the live list and published (or released): the creation's span
	 * ends, and a fork shares it (FORK). */
	if (made)
		lock_span_leave();
	if (!ok)
		return -ENOMEM;
	if (old) {
		if (last)
			uobj_close(old);
		uobj_put(old);
	}
	return fd;
}

bool uobj_tryget(struct uobj *o)
{
	int r = atomic_load_explicit(&o->refs, memory_order_relaxed);

	do {
		if (r <= 0)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(
		&o->refs, &r, r + 1, memory_order_acquire,
		memory_order_relaxed));
	return true;
}

void uobj_get(struct uobj *o)
{
	atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
}

/* SIGNALS: the release owed by a put that left no reference, which the
 * queue does not hold (hold: nothing); the close owed with one. */
static void obj__owed_nohold(struct lock_owed *n)
{
	(void)n;
}

static void obj__owed_hold(struct lock_owed *n)
{
	uobj_get(container_of(n, struct uobj, owed));
}

void uobj_put(struct uobj *o)
{
	if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) != 1)
		return;
	/* The release takes the object's locks: inside one of ours (a signal
	 * handler's frame may hold them), it is owed (SIGNALS).  Not queued
	 * anywhere now: an owed close holds a reference until it has run. */
	if (unlikely(lock_held_here()))
		lock_owe(&o->owed, OBJ__OWE_RELEASE, obj__owed_nohold);
	else
		uobj__ops[o->type]->release(o);
}

void uobj_free(struct uobj *o)
{
	struct obj__pool *p = &obj__pools[o->type];
	sigset_t m;

	obj__unmade(o); /* a creation that failed */
	/* An object freed before it was ever published still has refs == 1. */
	atomic_store_explicit(&o->refs, 0, memory_order_release);
	/* Off the live list and into the pool as one step for fork: the pool
	 * lock is held around obj__lock (which takes nothing inside: MASKED). */
	lock_take(&p->lock);
	obj__take(&m);
	if (o->on_live) {
		list_del(&o->live);
		o->on_live = false;
		atomic_fetch_sub_explicit(&obj__nlive[o->type], 1,
					  memory_order_relaxed);
	}
	obj__drop(&m);
	o->pool_next = p->free;
	p->free = o;
	lock_drop(&p->lock);
}

/* ---- NUMBERS ----------------------------------------------------------- */

/*
 * An object's numbers are a list: o->fd, then each number's link in the fd
 * table (fdtab_link), to -1; each is published in the table with one
 * reference.  Every change of the table and of the lists is made under
 * obj__lock, together, so that for every object the list is exactly the
 * numbers the table leads to it from (a forked child counts the table's
 * references from it: FORK).  fdtab_get stays lock-free.  A kernel call
 * that makes a number (uobj_dup) is made under the lock too: the number it
 * is made from cannot be unpublished (and so not closed by uepoll_close,
 * which closes after unpublishing) meanwhile.  Nothing here allocates: a
 * number's link is in the table's chunk, which fdtab maps (SIGNALS).  The
 * object leaves (its type's close) with its last number, as a file is
 * released with its last descriptor.
 *
 * Registrations follow the kernel's key, file and number: an item records
 * the number it was ADDed through (item->fd) and ctl finds it by both
 * (wq_find), so a second ADD through a dup is a second registration, a MOD
 * through another number is ENOENT, and after one number is closed the
 * item stays (reported as before) until the object's last number goes.  A
 * demotion, or a fork's share, registers it in the kernel under that
 * number (uobj_key_number; F19 in docs/reliability.md).
 *
 * STALE.  A number closed behind uepoll's back (plain close(2), a dup2
 * onto it) still leads to the object in the table.  It is found when the
 * kernel gives the number to a new uepoll object (uobj_publish), or when
 * uepoll_ctl ADDs it: an ADD that finds an object asks kcmp(2) whether the
 * number still holds the object's file (one system call, on ADD only, as
 * the kernel's ADD makes one), and if not drops the object and registers
 * what the number holds now (port.c).  Reads, writes and waits do not
 * check (a system call each).  uobj_forget is the hook for a layer that
 * sees every close (the preload's wrappers): it drops the object at a
 * number without touching the number; calls in flight finish on the
 * private fd.
 */
#define obj__numbers(n, o) for ((n) = (o)->fd; (n) >= 0; (n) = *fdtab_link(n))

static bool obj__has_number(const struct uobj *o, int fd)
{
	int n;

	obj__numbers(n, o)
		if (n == fd)
			return true;
	return false;
}

static void obj__add_number(struct uobj *o, int fd)
{
	*fdtab_link(fd) = o->fd;
	o->fd = fd;
}

static bool obj__lose_number(struct uobj *o, int fd)
{
	for (int *l = &o->fd; *l >= 0; l = fdtab_link(*l))
		if (*l == fd) {
			*l = *fdtab_link(fd);
			break;
		}
	return o->fd < 0;
}

/* No slot in the table for number fd (beyond the numbers it can hold, or
 * no memory): the kernel's EBADF if fd is beyond the process's fd limit
 * (dup2(fd, INT_MAX)), else ENOMEM. */
static int obj__no_slot(int fd)
{
	struct rlimit rl;

	if (sys_nofile(NULL, &rl) == 0 && (rlim_t)fd >= rl.rlim_cur)
		return -EBADF;
	return -ENOMEM;
}

int uobj_dup(struct uobj *o, int oldfd, int newfd, int flags)
{
	struct uobj *old = NULL;
	bool ok, last = false;
	sigset_t m;
	int r = 0;

	obj__take(&m);
	if (fdtab_peek(oldfd) != o || !obj__has_number(o, oldfd)) {
		obj__drop(&m);
		return -ESTALE;
	}
	/* The table's slot for the new number must exist before the kernel
	 * makes it (a dup that then found no room could not be undone). */
	if (newfd >= 0 && !fdtab_reserve(newfd))
		r = obj__no_slot(newfd);
	if (!r)
		r = newfd >= 0 ? sys_dup3(oldfd, newfd, flags)
			       : sys_fcntl(oldfd,
					   flags & O_CLOEXEC ? F_DUPFD_CLOEXEC
							     : F_DUPFD,
					   (void *)(intptr_t)(-newfd - 1));
	if (r >= 0) {
		old = fdtab_set(r, o, &ok);
		if (!ok) { /* F_DUPFD above every number the table has had */
			sys_close(r);
			obj__drop(&m);
			return -ENOMEM;
		}
		if (old == o) {
			/* dup3 onto one of o's own numbers: it stays one. */
			old = NULL;
		} else {
			uobj_get(o); /* the table's, for the new number */
			if (old)
				last = obj__lose_number(old, r);
			obj__add_number(o, r);
		}
	}
	obj__drop(&m);
	if (old) {
		if (last)
			uobj_close(old);
		uobj_put(old);
	}
	return r;
}

/* Unpublish fd from o under the lock; true if this call did it, *last if
 * it was o's last number. */
static bool obj__unpublish(int fd, struct uobj *o, bool *last)
{
	bool done;
	sigset_t m;

	obj__take(&m);
	done = fdtab_clear(fd, o);
	*last = done && obj__lose_number(o, fd);
	obj__drop(&m);
	return done;
}

int uobj_close_number(int fd, struct uobj *o, bool kclose)
{
	bool last;

	if (!obj__unpublish(fd, o, &last))
		return -ESTALE;
	if (kclose)
		sys_close(fd);
	if (last)
		uobj_close(o);
	uobj_put(o); /* the table's reference */
	return 0;
}

void uobj_unpublish(int fd, struct uobj *o)
{
	(void)uobj_close_number(fd, o, false);
}

void uobj_unpublish_all(struct uobj *o)
{
	sigset_t m;
	int n = 0;

	obj__take(&m);
	while (o->fd >= 0) {
		if (fdtab_clear(o->fd, o))
			n++;
		(void)obj__lose_number(o, o->fd);
	}
	obj__drop(&m);
	while (n--)
		uobj_put(o);
}

int uobj_key_number(struct uobj *o, int fd, bool *tmp)
{
	bool has;
	sigset_t m;
	int x;

	*tmp = false;
	obj__take(&m);
	has = fd >= 0 && obj__has_number(o, fd);
	obj__drop(&m);
	/* Outside the lock (a system call): a number closed behind our back
	 * may hold another file now. */
	if (has && sys_same_file(fd, o->kfd) != 0) /* < 0: cannot tell */
		return fd;
	/* The program closed fd (F19 in docs/reliability.md): the kernel's
	 * registration lives on under it, keyed (file, fd), so that a DEL
	 * through another number of the file is ENOENT and one through fd,
	 * once fd is the file's again, succeeds.  fd free: a copy of the
	 * file placed there for the caller's ctl (F_DUPFD takes fd only if
	 * it is free, atomically: a number the program opened meanwhile is
	 * never replaced).  Close-on-exec: a concurrent exec must not hand
	 * it over. */
	if (fd >= 0 && !has) {
		x = sys_fcntl(o->kfd, F_DUPFD_CLOEXEC, (void *)(intptr_t)fd);
		if (x == fd) {
			*tmp = true;
			return fd;
		}
		if (x >= 0)
			(void)sys_close(x);
	}
	/* fd holds another file: the key (file, fd) cannot be made; the
	 * private number's is one the program cannot name either (as it
	 * could not name the kernel's while fd holds that other file). */
	return o->kfd;
}

void uobj_key_done(int fd, bool tmp)
{
	if (tmp)
		(void)sys_close(fd);
}

void uobj_forget(int fd)
{
	struct uobj *o = fdtab_get(fd);

	if (o) {
		uobj_unpublish(fd, o);
		uobj_put(o);
	}
}

struct uobj *uobj_polled_ctl(int fd, uint32_t events)
{
	struct uobj *o = fdtab_get(fd);

	if (o && uobj__ops[o->type]->polled &&
	    uobj__ops[o->type]->polled(o, events))
		return o; /* the call's reference goes to polled_end */
	if (o)
		uobj_put(o);
	return NULL;
}

void uobj_polled_end(struct uobj *o, bool made)
{
	uobj__ops[o->type]->polled_end(o, made);
	uobj_put(o);
}

void uobj_polled(int fd, uint32_t events)
{
	struct uobj *o = uobj_polled_ctl(fd, events);

	/* No kernel call follows: a hold (none begins without EPOLLET)
	 * stands. */
	if (o)
		uobj_polled_end(o, true);
}

void uobj_looked(int fd)
{
	struct uobj *o = fdtab_get(fd);
	const struct uobj_ops *ops;

	if (!o)
		return;
	/* uobj_polled's step, then the look, on one reference: under the
	 * preload's NOPOLL default every object a poll() names comes here. */
	ops = uobj__ops[o->type];
	if (ops->polled && ops->polled(o, 0))
		ops->polled_end(o, true); /* (no kernel call follows) */
	if (ops->looked)
		ops->looked(o);
	uobj_put(o);
}

void uobj_flags_set(struct uobj *o, int fl)
{
	if (uobj__ops[o->type]->flags_set)
		uobj__ops[o->type]->flags_set(o, fl);
}

void uobj_close(struct uobj *o)
{
	/* It takes the locks of the instances that watch o: inside one of
	 * ours (a signal handler's frame may hold them), it is owed, with a
	 * reference (SIGNALS). */
	if (unlikely(lock_held_here()))
		lock_owe(&o->owed, OBJ__OWE_CLOSE, obj__owed_hold);
	else
		uobj__ops[o->type]->close(o);
}

/* SIGNALS: the drain (no lock held) does what was owed.  bits 0: a forked
 * child took them (FORK), with the reference, from a node queued on its
 * own thread's list. */
static void obj__owed_fn(struct lock_owed *n, unsigned bits)
{
	struct uobj *o = container_of(n, struct uobj, owed);

	/* Never both: a queued close holds a reference, so no put leaves
	 * none until it has run. */
	if (bits & OBJ__OWE_CLOSE) {
		uobj__ops[o->type]->close(o);
		uobj_put(o); /* the queue's (its release, if the last, now) */
	} else if (bits & OBJ__OWE_RELEASE) {
		uobj__ops[o->type]->release(o);
	}
}

/* ---- FORK -------------------------------------------------------------- */

/* Type t's live objects that joined at or after join number `since`,
 * newest first: the tail of its list (obj__joins), where a walk stops at
 * the first older one. */
#define obj__each_since(t, since, o, l) \
	for ((l) = obj__live[t].prev; \
	     (l) != &obj__live[t] && \
	     ((o) = container_of((l), struct uobj, live)) && \
	     (int)((o)->live_seq - (since)) >= 0; \
	     (l) = (l)->prev)
/* Every live object of type t, oldest first. */
#define obj__each_of(t, o, l) \
	for ((l) = obj__live[t].next; \
	     (l) != &obj__live[t] && \
	     ((o) = container_of((l), struct uobj, live)); \
	     (l) = (l)->next)

/*
 * A forked child shares every fd with its parent, and a kernel eventfd's
 * counter with it: so before the fork every published ueventfd is shared
 * (SHARED in eventfd_shared.c: its counter is in MAP_SHARED memory) and both
 * processes then use the same counter; before an exec it is demoted (DEMOTE
 * in eventfd.c), since the new program cannot map it.  The objects are
 * collected under obj__lock, with a reference each, and shared or demoted
 * outside it (both take instances' locks).  exec_only: only those whose
 * number an execve() would keep (no FD_CLOEXEC), and instances too (a fork
 * keeps them as copies, unless UEPOLL_FORK_DEMOTE_INSTANCES: FORK above,
 * FORKED in port.c).  Returns the first error (-ENOMEM if the list could not be
 * made).
 */
/* Would an execve() keep o open: has it a number without FD_CLOEXEC?
 * obj__lock held (a system call per number: exec is rare). */
static bool obj__inherited(const struct uobj *o)
{
	int n, fl;

	obj__numbers(n, o) {
		fl = sys_fcntl_getfd(n);
		if (fl >= 0 && !(fl & FD_CLOEXEC))
			return true;
	}
	return false;
}

/* obj__collect's walk of type t's list, from n taken so far into v[cap]:
 * the count so far (beyond cap: the room is too small, nothing taken past
 * it). */
/* PREPARED: the objects the last fork's prepare walked (each once, in its
 * share's walk: obj__each_since), for a test to count (obj_fork_visits).
 * The prepare's (one fork at a time); counted again by each pass of the
 * walk (obj__collect's). */
static unsigned obj__visits;

unsigned obj_fork_visits(void)
{
	return obj__visits;
}

static size_t obj__take_one(struct uobj *o, struct uobj **v, size_t cap,
			    size_t n)
{
	if (n >= cap)
		return n + 1; /* counted only */
	if (!uobj_tryget(o))
		return n; /* being released: not one to take */
	v[n] = o;
	return n + 1;
}

static size_t obj__collect_of(int t, const unsigned *since,
			      bool (*want)(const struct uobj *, const void *),
			      const void *arg, struct uobj **v, size_t cap,
			      size_t n)
{
	struct uobj *o;
	struct list *l;
	size_t n0 = n, end;

	if (since) {
		obj__each_since(t, *since, o, l) {
			obj__visits++;
			if (want(o, arg))
				n = obj__take_one(o, v, cap, n);
		}
		/* Taken newest first: given oldest first, as the walk of the
		 * whole list gives them, so that what a share or a demotion
		 * makes in the kernel keeps the objects' order (a kernel epoll
		 * reports in the order its items got ready: the watchers'
		 * registrations, t_fork_order). */
		end = n < cap ? n : cap;
		for (size_t i = n0, j = end; i + 1 < j; i++, j--) {
			o = v[i];
			v[i] = v[j - 1];
			v[j - 1] = o;
		}
	} else {
		obj__each_of(t, o, l)
			if (want(o, arg))
				n = obj__take_one(o, v, cap, n);
	}
	return n;
}

/* The live objects want() takes, each with a reference (put them and free
 * *out; want runs under obj__lock), among the types type_ok() takes (NULL:
 * every type; a type it refuses is not walked) and, with `since`, among
 * those that joined at or after *since (obj__each_since): the count, or
 * -ENOMEM (none taken). */
static ssize_t obj__collect(bool (*type_ok)(int), const unsigned *since,
			    bool (*want)(const struct uobj *, const void *),
			    const void *arg, struct uobj ***out)
{
	struct uobj **v = NULL;
	size_t n = 0, cap = 0;
	sigset_t m;
	int t;

	for (;;) {
		obj__take(&m);
		n = 0;
		if (since)
			obj__visits = 0;
		for (t = 0; t < OBJ__NTYPES; t++)
			if (!type_ok || type_ok(t))
				n = obj__collect_of(t, since, want, arg, v,
						    cap, n);
		obj__drop(&m);
		if (n <= cap)
			break;
		/* Too many for the room: give the references back, grow. */
		for (size_t i = 0; i < cap; i++)
			uobj_put(v[i]);
		free(v);
		cap = n + n / 2 + 8;
		v = malloc(cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	*out = v;
	return (ssize_t)n;
}

/* obj__demote_all's choice: the objects a fork shares or demotes, or an
 * exec demotes (*exec: only those a new program inherits). */
static bool obj__to_demote(const struct uobj *o, const void *arg)
{
	bool exec = *(const bool *)arg;

	if (o->fd < 0 || uobj_ops(o)->fate((struct uobj *)o, exec) == UOBJ_KEEP)
		return false;
	return !exec || obj__inherited(o);
}

static int obj__demote_all(bool exec, const unsigned *since)
{
	struct uobj **v = NULL;
	ssize_t n = obj__collect(NULL, since, obj__to_demote, &exec, &v);
	int r = 0, e;

	if (n < 0)
		return (int)n; /* they stay as they are */
	/* In the order of the types: the ueventfds first (a demotion writes
	 * the counter into the kernel fd, an edge for every registration made
	 * of it before), the instances' demotions after them register them
	 * without one (UNPEND in unpend.c).  Each one's fate again, outside
	 * obj__lock: what changed meanwhile (a demotion another thread began
	 * and the fork waits for) is left alone. */
	for (int t = 0; t < OBJ__NTYPES; t++)
		for (ssize_t i = 0; i < n; i++) {
			const struct uobj_ops *ops = uobj_ops(v[i]);

			if (v[i]->type != t)
				continue;
			switch (ops->fate(v[i], exec)) {
			case UOBJ_DEMOTE:
				e = ops->demote(v[i]);
				break;
			case UOBJ_SHARE:
				e = ops->share(v[i]);
				break;
			default:
				e = 0;
				break;
			}
			if (e < 0 && !r)
				r = e;
			uobj_put(v[i]);
		}
	free(v);
	return r;
}

/* The types whose objects have the op (obj__collect walks no other). */
static bool obj__type_waits(int t)
{
	return uobj__ops[t] && uobj__ops[t]->wait;
}

static bool obj__type_looks(int t)
{
	return uobj__ops[t] && uobj__ops[t]->looked;
}

/* An instance: the type that waits. */
static bool obj__is_port(const struct uobj *o, const void *arg)
{
	(void)arg;
	return uobj_ops(o)->wait && o->fd >= 0;
}

size_t obj_ports(struct uobj ***out)
{
	ssize_t n = obj__collect(obj__type_waits, NULL, obj__is_port, NULL,
				 out);

	return n > 0 ? (size_t)n : 0;
}

/* A demotion is a span (FORK): a fork waits for it, so that the child
 * never has an object DEMOTING for want of the thread that demotes it. */
int obj_demote_inherited(void)
{
	int r;

	lock_span_enter();
	r = obj__demote_all(true, NULL);
	lock_span_leave();
	return r;
}

int uobj_demote(struct uobj *o)
{
	int r;

	lock_span_enter();
	r = uobj_ops(o)->demote(o);
	lock_span_leave();
	return r;
}

/* Before a fork, every instance's stale doorbell is taken (its `looked`
 * op, as before a poll): the doorbell is one kernel eventfd for both
 * processes and the child starts with `set` 0 (bell_fork_child), so a ring
 * nothing is queued for (a wait took the queue without the kernel) would
 * make the child's instance read ready for ever (its poll, an outside
 * epoll) where the kernel's has nothing (F18's end).  Each with a
 * reference (not one being released), no lock of ours held (the op takes
 * the queue's and the doorbell's). */
/* Only the instances whose look has something to do are taken, each with
 * a reference: the others are left unwritten (the reference itself is a
 * write, and a page the parent writes after a fork faults, or is copied
 * while the child lives: with 2000 instances that was most of the
 * parent's prepare).  An instance skipped had nothing stale when the walk
 * read it, which is the state a look at that moment would have left; the
 * other threads run until the gate, as they do after any look. */
static bool obj__to_look(const struct uobj *o, const void *arg)
{
	const struct uobj_ops *ops = uobj_ops(o);

	(void)arg;
	return ops->looked && o->fd >= 0 &&
	       (!ops->look_due || ops->look_due((struct uobj *)o));
}

static void obj__looked_all(void)
{
	struct uobj **v = NULL;
	ssize_t n = obj__collect(obj__type_looks, NULL, obj__to_look, NULL,
				 &v);

	for (ssize_t i = 0; i < n; i++) {
		uobj__ops[v[i]->type]->looked(v[i]);
		uobj_put(v[i]);
	}
	free(v);
}

/* The forking thread's signal mask, from the prepare to the parent's or
 * the child's handler (one fork at a time: lock.c's fork mutex). */
static sigset_t obj__fork_sigs;

/* PREPARED: every object that joined the live list before this join
 * number (obj__joins) has been shared (or demoted) and fork-prepared by a
 * fork's prepare, whose effects stay for good: a shared ueventfd stays
 * shared (its fate is then UOBJ_KEEP), an instance's fork_prepare counts
 * its kernel epoll for good and marks it held edge-triggered outside for
 * good (bell.c), and what an object's fate is depends on nothing else that
 * changes (the configuration is read once; a demotion in flight, which
 * the fence waits for, ends with the object unpublished).  So a fork's
 * prepare shares and prepares only the objects that joined since: none in
 * a process that forks again and again with the same objects (the
 * `fork` scenario: two walks of every object less per fork).  Written by
 * the prepare only (one fork at a time: lock.c's fork mutex); a child
 * inherits it with objects as prepared as the parent's. */
static unsigned obj__prepared;

/* obj_fork_gen: written only by the child handler, while the child has
 * one thread and its signals blocked (obj.h). */
static unsigned obj__fork_gen;

unsigned obj_fork_gen(void)
{
	return obj__fork_gen;
}

/* The fence (lock.c) first: one fork at a time, and no creation or
 * demotion in flight while the ueventfds are shared; then the gate keeps
 * every other thread out of the library's locks; then obj__lock, which a
 * signal handler takes whatever its thread holds, outside the gate too
 * (SIGNALS: a handler whose frame waits at the gate, or holds a leaf lock
 * without it), and the timer's lock, which its thread takes outside the
 * gate.  This thread's signals are blocked throughout: a handler of its
 * own would wait at the gate it closed, or for obj__lock. */
static void obj__prepare(void)
{
	unsigned since, mark;
	struct list *l;
	struct uobj *o;
	sigset_t all, m;
	int r, t;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &obj__fork_sigs);
	lock_fork_fence();
	since = obj__prepared; /* the fork mutex's, taken by the fence */
	obj__take(&m);
	mark = obj__joins; /* no creation joins until the fork is over */
	obj__drop(&m);
	r = obj__demote_all(false, &since); /* see uepoll_demote(3), ENOMEM */
	obj__looked_all();
	obj__take(&m);
	for (t = 0; t < OBJ__NTYPES; t++)
		if (uobj__ops[t] && uobj__ops[t]->fork_prepare)
			obj__each_since(t, since, o, l)
				uobj__ops[t]->fork_prepare(o);
	obj__drop(&m);
	/* Every object that joined before `mark` is shared and prepared now,
	 * unless a share or demotion failed (each is tried again at the next
	 * fork) or this fork comes from a signal handler that interrupted a
	 * span of its own thread (a demotion that may yet fail and leave its
	 * ueventfd as it was: the next fork walks it again). */
	if (!r && !lock_span_here())
		obj__prepared = mark;
	lock_fork_prepare();
	/* Inside the gate: only a signal handler's short section may hold
	 * it now (MASKED in lock.h), and nobody is carving a shared block
	 * (shm.h).  Taken as a raw mutex: the gate is closed. */
	pthread_mutex_lock(&obj__lock);
	shm_fork_prepare();
	timer_fork_prepare();
}

static void obj__parent(void)
{
	pthread_mutex_unlock(&obj__lock);
	shm_fork_done();
	timer_fork_parent();
	lock_fork_parent();
	pthread_sigmask(SIG_SETMASK, &obj__fork_sigs, NULL);
}

/* The number of o's numbers (the table's references: NUMBERS). */
static int obj__count_numbers(const struct uobj *o)
{
	int n, c = 0;

	obj__numbers(n, o)
		c++;
	return c;
}

/* The child's walk stalls on each object's header, the line the hop to
 * the next object lands on (in a cold child, most of the walk's own time:
 * perf annotate): so it asks for the next object's header (the object is
 * cache-line aligned; the header spans two lines) while it repairs this
 * one (hints: no access, no fault), and the misses overlap: 8-10% of the
 * child's handler (docs/benchmarks.md, issue 35 item 4; all of an
 * instance's 14 lines gained nothing more). */
static void obj__prefetch(const struct uobj *o)
{
	__builtin_prefetch(o);
	__builtin_prefetch((const char *)o + UEPOLL_CACHELINE);
}

static void obj__child(void)
{
	struct list *l, *next, dead;
	struct uobj *o;
	bool orphans = false;

	pthread_mutex_unlock(&obj__lock);
	sys_fork_child();
	/* Before the repairs, which may ask: every object alive now is a
	 * copy from the parent (FORKED in port.c reads it). */
	obj__fork_gen++;
	shm_fork_done();
	timer_fork_child();
	lock_fork_child();
	/* The child's references: the table's, and what the types report.
	 * Instances first: a ueventfd's repair may ring them.  The close or
	 * release owed on a thread that did not come along is forgotten
	 * with its reference: the count is made again, and an object left
	 * with none is closed and released below (SIGNALS). */
	for (int t = UOBJ_PORT; t >= UOBJ_EVENTFD; t--)
		obj__each_of(t, o, l) {
			if (l->next != &obj__live[t])
				obj__prefetch(container_of(l->next, struct uobj,
							   live));
			if (atomic_load_explicit(&o->owed.bits,
						 memory_order_relaxed))
				atomic_store_explicit(&o->owed.bits, 0,
						      memory_order_relaxed);
			/* One per number (NUMBERS). */
			int refs = uobj__ops[t]->fork_child(o) +
				   obj__count_numbers(o);

			if (atomic_load_explicit(&o->refs,
						 memory_order_relaxed) != refs)
				atomic_store_explicit(&o->refs, refs,
						      memory_order_relaxed);
			orphans |= refs == 0;
		}
	/* Close, then release, the ones no number leads to any more: what a
	 * thread of the parent was using after its close, or releasing.
	 * Instances first: their release unlinks their items from every
	 * ueventfd, so that a ueventfd's close then finds only the items of
	 * instances that live on.  Only if the count above left one with
	 * none (rare: a close or release in flight at the fork): a walk
	 * less over every object of the child otherwise. */
	for (int t = UOBJ_PORT; orphans && t >= UOBJ_EVENTFD; t--) {
		list_init(&dead);
		for (l = obj__live[t].next; l != &obj__live[t]; l = next) {
			next = l->next;
			o = container_of(l, struct uobj, live);
			if (atomic_load_explicit(&o->refs, memory_order_relaxed))
				continue;
			list_del(&o->live);
			list_add_tail(&dead, &o->live);
		}
		while (!list_empty(&dead)) {
			o = container_of(dead.next, struct uobj, live);
			list_del(&o->live);
			/* Back on the live list, as a join (its order:
			 * obj__joins): uobj_free unlinks it. */
			o->live_seq = obj__joins++;
			list_add_tail(&obj__live[t], &o->live);
			uobj__ops[t]->close(o);
			uobj__ops[t]->release(o);
		}
	}
	/* Repaired: the parent's timers are off the heap (each ueventfd's
	 * fork_child delivered them), so a thread may run it again. */
	timer_fork_child_start();
	pthread_sigmask(SIG_SETMASK, &obj__fork_sigs, NULL);
}

/* SHARED (eventfd_shared.c): a process that exits normally delivers the
 * wakeups its timer holds for shared ueventfds, every one (another process
 * may be waiting for them: issue 32 found a fixed room of 64 leaving the
 * rest unreadable over a non-zero counter); its timer thread dies with it.
 * In batches of a fixed room, without allocating: each batch is collected
 * under obj__lock with a reference each, delivered outside it (a delivery
 * takes instances' locks), and the next walk goes on from the batch's
 * last object, whose reference keeps it on the live list (only uobj_free
 * takes an object off, and only at no reference) until that walk has
 * left it.  Objects made meanwhile join the tail and are delivered too. */
static void obj__exit_type(int t)
{
	struct uobj *v[64], *o, *from = NULL;
	struct list *l;
	sigset_t m;
	size_t n;

	do {
		n = 0;
		obj__take(&m);
		for (l = from ? from->live.next : obj__live[t].next;
		     l != &obj__live[t] && n < sizeof(v) / sizeof(v[0]);
		     l = l->next) {
			o = container_of(l, struct uobj, live);
			if (o->fd >= 0 && uobj_tryget(o))
				v[n++] = o;
		}
		obj__drop(&m);
		if (from)
			uobj_put(from);
		from = NULL;
		for (size_t i = 0; i < n; i++) {
			uobj__ops[t]->exit_flush(v[i]);
			if (i + 1 < n || l == &obj__live[t])
				uobj_put(v[i]);
			else
				from = v[i]; /* the next walk starts after it */
		}
	} while (from);
}

__attribute__((destructor)) static void obj__exit(void)
{
	for (int t = 0; t < OBJ__NTYPES; t++)
		if (uobj__ops[t] && uobj__ops[t]->exit_flush)
			obj__exit_type(t);
}

__attribute__((constructor)) static void obj__setup(void)
{
	pthread_atfork(obj__prepare, obj__parent, obj__child);
}
