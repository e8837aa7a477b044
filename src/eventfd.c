/* SPDX-License-Identifier: MIT */
/*
 * eventfd.c - ueventfd.
 *
 * The counter lives in userspace; the fd the user gets is a kernel eventfd
 * (the "mirror", made with the ueventfd's own EFD_SEMAPHORE) whose value
 * only stands for the counter's class: 0 when the counter is 0, the
 * maximum (0xfffffffffffffffe) when it is full, something in between
 * otherwise.  So poll(), select(), a kernel epoll or any event loop see
 * exactly the readiness the kernel's eventfd would have (readable iff the
 * counter is non-zero, writable iff a write of 1 would not block), while
 * the system calls are made only when the class changes.
 *
 * MIRROR protocol (models/mirror.pml).  `kunits` counts the units the
 * library put in the kernel fd and has not taken back: it is raised (CAS)
 * before the write(2) that adds them and lowered after the read(2) that
 * took them, so it is never below the kernel's value K and equals it when
 * no such call is in flight.  Whoever changes the counter then calls
 * uefd__sync, which loops: load count, load kunits (seq_cst both); done if
 * their classes agree; else one step:
 *  - too few units: CAS kunits up to 1 (or to the maximum when the counter
 *    is full) and write the difference;
 *  - too many: take the kernel's value with a read that never sleeps
 *    (RWF_NOWAIT) and subtract what it took; if it finds K == 0, the units
 *    are in flight: whoever raised kunits, or the sleeper that took them,
 *    syncs after its own call (which is ordered after this read by the
 *    kernel's lock on the eventfd), so this one may stop.
 * A reader with nothing to take sleeps in read(2) on the kernel fd, which
 * takes the units a writer's sync wrote; it subtracts them and loops (takes
 * the counter, syncs: a semaphore read that leaves the counter non-zero
 * writes a unit back).  The invariant at every moment no call is in
 * flight: kunits == K, and K's class is the counter's.  Costs: a write
 * that makes the counter non-zero, and a read that empties it, make one
 * system call each, as the kernel's do; any other write or read none.  A
 * non-blocking read that finds the counter empty right after a successful
 * one answers EAGAIN without a system call (the drain loop's last read).
 * So no sequence costs more system calls than on the kernel's eventfd
 * (t_efd_syscalls counts them).  models/mirror.pml checks, plain and
 * semaphore, with two writers, a reader and a sleeper, that at quiescence
 * the classes agree and kunits == K, that no sleeper is stranded while the
 * counter is non-zero, and that every value is read once.  On a kernel
 * without RWF_NOWAIT for eventfds the drain looks first (sys_eventfd_take),
 * and a sleeper may take the value between the look and the read, which
 * then sleeps until the next write.
 * UEVENTFD_NOPOLL (nobody polls the fd from outside uepoll): a sync only
 * raises kunits from 0 for a non-zero counter, so that a sleeper wakes; it
 * never drains, so a write or read makes a system call only when a reader
 * slept: the kernel fd stays readable after the counter was emptied.  A
 * reader about to sleep does not sleep on the kernel fd but naps on a futex
 * word (NAP, at uefd__rsleep), and leaves the stale unit where it is.
 * Shared by a fork, it stays NOPOLL in every process (NOPOLL in
 * eventfd_shared.c: not even the raise), until one of them ends it.
 * A semaphore counter taken off its maximum leaves K at the maximum less
 * one; from there it would take 2^64-3 reads to empty it, so the mirror
 * never has to be drained from a large semaphore value.
 *
 * Beside it: the counter shared across fork (SHARED), in eventfd_shared.c;
 * coalesced wakeups and held writes (COALESCE, HOLD), in eventfd_hold.c.
 * A read or write does what differs between MIRROR and SHARED through the
 * steps of its protocol (STEPS in eventfd_impl.h), chosen where it
 * decides: uefd__mirror_steps, at the end of this file, and
 * uefd__shared_steps.
 *
 * DEMOTE (uefd_demote: the ueventfd becomes the plain kernel eventfd it
 * stands for, with its exact counter) is in eventfd_demote.c.
 *
 * LOCKING: count, held, kunits, syncing, nsleep, demote, wseq, wwaiters,
 * co_*, owed.bits are atomics (no lock), in the block `sh` (shm.h) but
 * owed.bits.  SHARED: a change of the counter's class, and kunits, are
 * under xm (LOCKING in eventfd_shared.c).  wq.lock protects the list of
 * watching items (its place in the order: LOCK ORDER in lock.h); it also
 * serialises ueventfd_coalesce calls and, at the release, the close of the
 * private fd (obj.c, FORK).  The timer's lock: eventfd_hold.c.  A read or
 * write that a signal handler makes while its thread holds one of these
 * takes none (SIGNALS, below).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/eventfd.h>

#include "eventfd_impl.h"
#include "fdtab.h"
#include "bell.h"
#include "fdzone.h"
#include "item.h"
#include "config.h"
#include "lock.h"
#include "port.h"
#include "sys.h"

/*
 * eventfd(2) documents EINVAL for a write buffer shorter than 8 bytes; recent
 * kernels also refuse longer ones.  uepoll answers as the running kernel's
 * eventfd would: the first ueventfd() asks it, with a write of 0 (which
 * changes nothing) in 16 bytes to the kernel eventfd it has just made, so
 * that the answer never needs an fd of its own (a write under RLIMIT_NOFILE
 * exhaustion must still get it right).
 */
static _Atomic int uefd__long_writes; /* 0 unknown, 1 accepted, 2 refused */

static void uefd__probe_long_write(int kfd)
{
	uint64_t probe[2] = { 0, 0 };

	if (atomic_load_explicit(&uefd__long_writes, memory_order_relaxed))
		return;
	atomic_store_explicit(&uefd__long_writes,
			      sys_write(kfd, probe, sizeof(probe)) == -EINVAL
				      ? 2
				      : 1,
			      memory_order_relaxed);
}

static bool uefd__long_write_ok(void)
{
	/* Known: a ueventfd exists, so its creation asked. */
	return atomic_load_explicit(&uefd__long_writes,
				    memory_order_relaxed) == 1;
}

static void uefd__owed_fn(struct lock_owed *o, unsigned bits);

int uefd_create(unsigned int initval, int flags)
{
	struct uobj *o;
	struct uefd *e;
	int fd, r;

	if (flags & ~(EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC |
		      UEVENTFD_NOPOLL))
		return -EINVAL;
	o = uobj_alloc(UOBJ_EVENTFD);
	if (!o)
		return -ENOMEM;
	e = (struct uefd *)o;
	e->sh = shm_alloc();
	if (!e->sh) {
		uobj_free(o);
		return -ENOMEM;
	}
	fd = sys_eventfd(initval ? 1 : 0, flags & ~UEVENTFD_NOPOLL);
	if (fd < 0) {
		shm_free(e->sh);
		uobj_free(o);
		return fd;
	}
	o->kfd = fdzone_dup(fd);
	if (o->kfd < 0) {
		r = o->kfd;
		goto err_fd;
	}
	uefd__probe_long_write(o->kfd);
	uefd__xinit(e);
	atomic_init(&e->sh->count, initval);
	atomic_init(&e->sh->kunits, initval ? 1 : 0);
	e->semaphore = flags & EFD_SEMAPHORE;
	atomic_init(&e->sh->nonblock, (flags & EFD_NONBLOCK) != 0);
	atomic_init(&e->sh->nopoll, (flags & UEVENTFD_NOPOLL) != 0);
	atomic_init(&e->sh->wseq, 0);
	atomic_init(&e->sh->wwaiters, 0);
	atomic_init(&e->sh->empty_reads, 1); /* no successful read yet */
	atomic_init(&e->owed.bits, 0);
	e->owed.fn = uefd__owed_fn;
	uefd__coalesce_init(e);
	wq_init(&e->wq);
	return uobj_publish(o, fd);

err_fd:
	sys_close(fd);
	if (o->kfd >= 0 || e->co_reserved) {
		o->fd = -1;
		uefd_ops.release(o);
	} else {
		shm_free(e->sh);
		uobj_free(o);
	}
	return r;
}

struct uefd *uefd_of(struct uobj *o)
{
	return o->type == UOBJ_EVENTFD ? (struct uefd *)o : NULL;
}

struct wq *uefd_wq(struct uefd *e)
{
	return &e->wq;
}

/* An item's source is a ueventfd, the only userspace source type (item.h). */
uint32_t item_poll(const struct item *it)
{
	return uefd_poll((struct uefd *)it->src);
}

void item_disarmed(struct item *it)
{
	if (atomic_exchange(&it->armed, false))
		atomic_fetch_sub(&((struct uefd *)it->src)->wq.narmed, 1);
}

uint32_t uefd_poll(struct uefd *e)
{
	uint64_t c = atomic_load(&e->sh->count);
	uint32_t m = 0;

	if (c == UEFD_GONE) /* DEMOTE: the kernel fd is the counter */
		return (uint32_t)sys_poll_now(e->obj.kfd, POLLIN | POLLOUT) &
		       (EPOLLIN | EPOLLOUT);

	if (c > 0)
		m |= EPOLLIN;
	/* Room counts held writes too: they are the counter's, not yet
	 * shown. */
	if (uefd__room(c, atomic_load_explicit(&e->sh->held,
					       memory_order_relaxed)))
		m |= EPOLLOUT;
	return m;
}

/* One step of MIRROR towards the counter's class `want` from kunits k: 0
 * to go on, -EAGAIN when units are in flight (stop).  Inside the gate. */
static int uefd__sync_step(struct uefd *e, int want, uint64_t k)
{
	uint64_t to, v;

	if (want > uefd__class(k)) {
		to = want == 2 ? UEFD_MAX : 1;
		/* seq_cst: raised before the write (kunits >= K). */
		if (atomic_compare_exchange_strong(&e->sh->kunits, &k, to))
			sys_eventfd_add(e->obj.kfd, to - k);
		return 0;
	}
	if (sys_eventfd_take(e->obj.kfd, &v) < 0)
		return -EAGAIN;
	/* Lowered after the read (kunits >= K). */
	atomic_fetch_sub(&e->sh->kunits, v);
	return 0;
}

/* The counter left 0 (its CAS is done): wake the blocked readers asleep
 * on rwake, counted in xsleepers: SHARED's of every process, NAP's of this
 * one (seq_cst load after the CAS: Dekker with uefd__rsleep). */
void uefd__xwake(struct uefd *e)
{
	if (atomic_load(&e->sh->xsleepers)) {
		atomic_fetch_add(&e->sh->rwake, 1);
		sys_futex_xwake(&e->sh->rwake, INT_MAX);
	}
}

void uefd_kedge(struct uefd *e)
{
	if (!atomic_load_explicit(&e->sh->kedge, memory_order_relaxed))
		atomic_store(&e->sh->kedge, 1);
}

/* MIRROR's sync (uefd__sync): step until the classes agree. */
static void uefd__msync(struct uefd *e)
{
	for (;;) {
		/* seq_cst: pairs with the counter's CAS in every writer and
		 * reader, and with kunits' updates (MIRROR). */
		uint64_t c = atomic_load(&e->sh->count);
		uint64_t k = atomic_load(&e->sh->kunits);
		int r;

		if (c == UEFD_GONE || uefd__class(c) == uefd__class(k))
			return;
		/* UEVENTFD_NOPOLL: units only for a sleeper (a counter that
		 * became non-zero with none there); a stale unit is taken by
		 * the next reader that would sleep.  seq_cst (a plain load on
		 * x86): Dekker with the store that ends NOPOLL then syncs
		 * (DEMOTE, uefd_watched_outside) against this caller's CAS of
		 * the counter then this load. */
		if (atomic_load(&e->sh->nopoll) &&
		    (c == 0 || k != 0))
			return;
		/* DEMOTE's gate: raised, then the counter looked at again
		 * (seq_cst, Dekker against the demotion's exchange). */
		atomic_fetch_add(&e->sh->syncing, 1);
		/* SHARED began meanwhile (seq_cst: Dekker with uefd_share's
		 * store then its look at syncing; STEPS): its protocol, not
		 * this. */
		if (unlikely(atomic_load(&e->sh->shared))) {
			atomic_fetch_sub(&e->sh->syncing, 1);
			uefd__xsync(e);
			return;
		}
		c = atomic_load(&e->sh->count);
		/* (A writer may have raised it meanwhile: look again.) */
		r = c == UEFD_GONE ? -EAGAIN
		    : uefd__class(c) == uefd__class(k)
			    ? 0
			    : uefd__sync_step(e, uefd__class(c), k);
		atomic_fetch_sub(&e->sh->syncing, 1);
		if (r < 0)
			return;
	}
}

static void uefd__unwait(void *arg)
{
	atomic_fetch_sub(&((struct uefd *)arg)->sh->wwaiters, 1);
}

/*
 * Wait until the counter may have room: futex on wseq, bumped by readers.
 * A cancellation point, as the kernel's blocking write(2) is: cancelled,
 * it leaves the count of waiters as it found it.  O_NONBLOCK is looked at
 * once per call, before its first wait (`blocked`: a wait has begun): the
 * kernel's blocked write never looks at the flags again.  A handler with
 * SA_RESTART restarts the wait, without it the write fails with EINTR, as
 * write(2) (sys_futex_xsleep).
 */
static int uefd__wait_room(struct uefd *e, uint64_t v, bool *blocked)
{
	uint64_t c;
	uint32_t seq;
	int r, fl;

	if (!*blocked) {
		fl = sys_fcntl_getfl(e->obj.kfd);
		if (fl < 0)
			return fl;
		if (fl & O_NONBLOCK)
			return -EAGAIN;
		*blocked = true;
	}
	atomic_fetch_add(&e->sh->wwaiters, 1);
	pthread_cleanup_push(uefd__unwait, e);
	/* seq_cst: pairs with the reader's CAS on count then load of wwaiters. */
	seq = atomic_load(&e->sh->wseq);
	r = 0;
	c = atomic_load(&e->sh->count);
	/* UEFD_GONE: the caller passes the write to the kernel fd (DEMOTE:
	 * the demotion may have bumped wseq before the load above). */
	if (c != UEFD_GONE && uefd__room(c, atomic_load(&e->sh->held)) < v)
		r = sys_futex_xsleep(&e->sh->wseq, seq,
				     uefd__steps(e)->room_ns);
	pthread_cleanup_pop(1);
	return r == -EINTR ? r : 0;
}

/*
 * The rest of a write that left the counter at now_count: wake (or hold
 * the wakeups of) the watchers and the kernel fd.  due: the held writes
 * being shown (uefd__show), whose wakeup is due now.
 */
void uefd__wrote(struct uefd *e, uint64_t now_count, bool due)
{
	uint32_t hold = due ? 0 : uefd__hold_us(e, now_count);
	bool held = false;

	/* The kernel wakes EPOLLIN watchers on every write, even of 0: an
	 * edge-triggered watcher sees one event per write. */
	if (atomic_load(&e->wq.narmed))
		held = wq_wake(&e->wq, EPOLLIN, hold != 0);
	if (!hold) {
		uefd__sync(e);
		uefd__xwake(e); /* NAP */
	} else if (uefd__class(atomic_load(&e->sh->kunits)) !=
			   uefd__class(now_count) ||
		   atomic_load(&e->sh->xsleepers)) {
		/* The timer's delivery syncs (MIRROR) and wakes the nappers
		 * (NAP: seq_cst load after the CAS, as in uefd__xwake). */
		held = true;
	}
	/* COALESCE: a sleeper is owed a wakeup; the timer delivers it, or we
	 * do now if it cannot be armed. */
	if (held && uefd__arm(e, (uint64_t)hold * 1000u) < 0)
		uefd__deliver(e);
}

/* The watchers' part of a read: the kernel wakes EPOLLOUT watchers on every
 * read; an instance held by another one forgets an item that is no longer
 * ready (emptied: the read took the counter to 0). */
static void uefd__was_read(struct uefd *e, bool emptied)
{
	if (atomic_load(&e->wq.nout))
		wq_wake(&e->wq, EPOLLOUT, false);
	if (emptied && (bell_any_exact() || port_any_kheld()) &&
	    atomic_load(&e->wq.n))
		wq_unready(&e->wq);
}

/*
 * SIGNALS (lock.h).  A read or write made by a signal handler whose thread
 * holds one of uepoll's locks does what needs none (the counter, the
 * mirror, the futex of blocked writers) and owes the rest: the walk of the
 * watchers (EPOLLIN after a write, EPOLLOUT and "no longer ready" after a
 * read) and, for a held write, the timer.  The interrupted frame runs it
 * when it leaves its last lock, at most a lock's hold time later, which is
 * as if the write had come then.  Several owed writes are delivered by one
 * walk: an edge-triggered watcher may see them as one event.  What is owed:
 * UEFD_OWE_* (eventfd_impl.h).
 */
void uefd__owed_hold(struct lock_owed *o)
{
	uobj_get(&container_of(o, struct uefd, owed)->obj);
}

/* The owed work (bits) of e, done by a thread that holds no lock. */
static void uefd__owed_work(struct uefd *e, unsigned bits)
{
	if (bits & UEFD_OWE_IN)
		uefd__wrote(e, atomic_load(&e->sh->count), false);
	if (bits & UEFD_OWE_HELD)
		uefd__held(e, atomic_load(&e->sh->held));
	if (bits & UEFD_OWE_OUT)
		uefd__was_read(e, atomic_load(&e->sh->count) == 0);
	if (bits & UEFD_OWE_SYNC)
		uefd__sync(e);
}

static void uefd__owed_fn(struct lock_owed *o, unsigned bits)
{
	struct uefd *e = container_of(o, struct uefd, owed);

	uefd__owed_work(e, bits);
	uobj_put(&e->obj);
}

/* A write filled the counter: EPOLLOUT ended.  A watched instance forgets
 * an item queued for it, as after a read that emptied it (uefd__was_read),
 * or its holder's kernel epoll would report it. */
static void uefd__full(struct uefd *e)
{
	if ((bell_any_exact() || port_any_kheld()) &&
	    atomic_load(&e->wq.nout))
		wq_unready(&e->wq);
}

/* The rest of a write that took the counter from cur to cur + v.  settled:
 * its cross step settled the kernel fd, and left nothing for uefd__wrote
 * (SHARED: a shared ueventfd has no userspace watcher); kw: the cross step
 * wrote the kernel fd. */
static void uefd__added(struct uefd *e, uint64_t cur, uint64_t v,
			bool settled, bool kw)
{
	if (unlikely(lock_held_here())) {
		/* A signal handler inside one of our locks: SIGNALS. */
		uefd__sync(e);
		uefd__xwake(e); /* NAP (async-signal-safe) */
		lock_owe(&e->owed, UEFD_OWE_IN, uefd__owed_hold);
		return;
	}
	if (!settled)
		uefd__wrote(e, cur + v, false);
	/* An edge per write for edge-triggered kernel watchers (kedge), as
	 * the kernel's: a write that left the kernel fd alone (SHARED: did
	 * not write it; else: kept the class, so its sync wrote nothing)
	 * writes 0 to it, which wakes them.  Not a coalesced write: its
	 * delivery wakes. */
	if (unlikely(atomic_load_explicit(&e->sh->kedge, memory_order_relaxed)) &&
	    !uefd__steps(e)->wrote_kfd(cur, cur + v, kw) &&
	    !uefd__hold_us(e, cur + v))
		sys_eventfd_add(e->obj.kfd, 0);
	if (unlikely(v && !uefd__room(cur + v, 0)))
		uefd__full(e);
}

/* A write of v held (HOLD in eventfd_hold.c): added to `held`, touching
 * nothing else but the timer (uefd__held).  Room is judged on the counter
 * plus what is held. */
static ssize_t uefd__add_held(struct uefd *e, const void *buf, size_t n,
			      uint64_t v)
{
	bool blocked = false; /* this call has begun to wait for room */
	uint64_t c, cur;
	int r;

	cur = atomic_load(&e->sh->held);
	for (;;) {
		c = atomic_load(&e->sh->count);
		if (unlikely(c == UEFD_GONE)) {
			/* DEMOTE: the kernel fd has the counter. */
			uefd_demote_wait(e);
			return sys_write(e->obj.kfd, buf, n);
		}
		if (uefd__room(c, cur) < v) {
			r = uefd__wait_room(e, v, &blocked);
			if (r < 0)
				return r;
			cur = atomic_load(&e->sh->held);
			continue;
		}
		if (atomic_compare_exchange_weak(&e->sh->held, &cur, cur + v))
			break;
	}
	if (unlikely(lock_held_here())) {
		/* A signal handler inside one of our locks: SIGNALS. */
		lock_owe(&e->owed, UEFD_OWE_HELD, uefd__owed_hold);
		return sizeof(v);
	}
	uefd__held(e, cur + v);
	/* No edge of its own for the kernel's watchers (kedge): its delivery
	 * wakes. */
	if (unlikely(v && !uefd__room(atomic_load(&e->sh->count), cur + v)))
		uefd__full(e);
	return sizeof(v);
}

/* A write of v to the counter. */
static ssize_t uefd__add(struct uefd *e, const void *buf, size_t n,
			 uint64_t v)
{
	const struct uefd_steps *s;
	bool kw = false; /* SHARED: the kernel fd was written for it */
	bool settled = false; /* its cross step settled the kernel fd */
	bool blocked = false; /* this call has begun to wait for room */
	uint64_t cur;
	int r;

	cur = atomic_load(&e->sh->count);
	for (;;) {
		/* Room is judged on the counter.  A plain write does not look
		 * at `held`: it is 0 unless the setting changed under
		 * concurrent writers, and then uefd__show keeps what does not
		 * fit. */
		if (unlikely(cur == UEFD_GONE)) {
			/* DEMOTE: the kernel fd has the counter. */
			uefd_demote_wait(e);
			return sys_write(e->obj.kfd, buf, n);
		}
		if (uefd__room(cur, 0) < v) {
			r = uefd__wait_room(e, v, &blocked);
			if (r < 0)
				return r;
			cur = atomic_load(&e->sh->count);
			continue;
		}
		/* A change of class with a step of its own (SHARED: under the
		 * lock), the protocol chosen here, at each try (STEPS). */
		s = uefd__steps(e);
		if (s->cross && uefd__crosses(cur, cur + v)) {
			bool defer = uefd__hold_us(e, cur + v) != 0;

			if (s->cross(e, &cur, cur + v, defer, &kw)) {
				settled = !defer;
				break;
			}
			continue;
		}
		if (atomic_compare_exchange_weak(&e->sh->count, &cur, cur + v))
			break;
	}
	uefd__added(e, cur, v, settled, kw);
	return sizeof(v);
}

ssize_t uefd_write(struct uefd *e, const void *buf, size_t n)
{
	uint64_t v;

	if (n < sizeof(v) || (n > sizeof(v) && !uefd__long_write_ok()))
		return -EINVAL;
	if (!buf) /* the kernel's failed copy; other bad pointers fault */
		return -EFAULT;
	memcpy(&v, buf, sizeof(v));
	if (v == UINT64_MAX)
		return -EINVAL;
	/* UEVENTFD_HOLD_WRITES: the write goes to `held` (HOLD), where its
	 * protocol holds values (uefd_steps.hold_writes). */
	if ((atomic_load_explicit(&e->sh->co_delay_us, memory_order_relaxed) &
	     UEFD_HOLD_BIT) &&
	    uefd__steps(e)->hold_writes)
		return uefd__add_held(e, buf, n, v);
	return uefd__add(e, buf, n, v);
}

/* The rest of a read that took `take` from the counter c. */
static ssize_t uefd__took(struct uefd *e, void *buf, uint64_t c,
			  uint64_t take)
{
	if (atomic_load_explicit(&e->sh->empty_reads, memory_order_relaxed))
		atomic_store_explicit(&e->sh->empty_reads, 0,
				      memory_order_relaxed);
	if (atomic_load(&e->sh->wwaiters) > 0) {
		atomic_fetch_add(&e->sh->wseq, 1);
		sys_futex_xwake(&e->sh->wseq, INT_MAX);
	}
	if (unlikely(lock_held_here()))
		lock_owe(&e->owed, UEFD_OWE_OUT, uefd__owed_hold); /* SIGNALS */
	else
		uefd__was_read(e, c == take);
	/* The kernel, too, has taken the value when its copy to a NULL buffer
	 * fails. */
	if (!buf)
		return -EFAULT;
	memcpy(buf, &take, sizeof(take));
	return sizeof(take);
}

static void uefd__unsleep(void *arg)
{
	atomic_fetch_sub(&((struct uefd *)arg)->sh->nsleep, 1);
}

/* Asleep in read(2) on kfd until a writer's sync puts units in it (MIRROR;
 * counted for DEMOTE).  A cancellation point that leaves nothing behind. */
static ssize_t uefd__sleep(struct uefd *e)
{
	uint64_t units;
	ssize_t r;

	pthread_cleanup_push(uefd__unsleep, e);
	r = sys_read_sleep(e->obj.kfd, &units, sizeof(units));
	if (r == sizeof(units))
		atomic_fetch_sub(&e->sh->kunits, units); /* after the read: MIRROR */
	pthread_cleanup_pop(1);
	return r;
}

static void uefd__xunsleep(void *arg)
{
	atomic_fetch_sub(&((struct uefd *)arg)->sh->xsleepers, 1);
}

/*
 * A blocked read of an empty counter sleeps on the futex word rwake,
 * counted in xsleepers, when the kernel fd cannot be its bed:
 *  - SHARED (eventfd_shared.c): in ppoll on the kernel fd a writer's
 *    pre-step, which makes it readable before the CAS, would wake the
 *    sleeper too early (and, on one CPU, let it preempt the writer);
 *  - NAP (issue 19): a UEVENTFD_NOPOLL ueventfd, whose kernel fd nobody
 *    polls from outside: a write wakes the sleeper (uefd__xwake, after its
 *    CAS and sync) and nobody takes the kernel fd's stale unit, so a
 *    handoff costs a FUTEX_WAKE and a FUTEX_WAIT and no mirror call.
 *  - a read that has begun to block (`blocked`) on a kernel fd made
 *    non-blocking since (a plain fcntl(2), maybe by another process):
 *    read(2) there would answer EAGAIN, where the kernel's blocked read
 *    never looks at the flags again.
 * SHARED first settles over-readiness a holder left (dead or at work), so
 * that neither this loop nor a poll loop of the program spins on it.
 * O_NONBLOCK, set or cleared with uepoll_fcntl or a plain fcntl(2), is the
 * kernel fd's: one F_GETFL asks it (EAGAIN), once per call, before the
 * call first sleeps (*blocked is set then).  Then the word is read, the
 * reader counted, and the counter and `shared` looked at (seq_cst: Dekker
 * with a writer's CAS then load of xsleepers; with DEMOTE's exchange and
 * uefd_share's store of `shared`, each followed by uefd__mirror_quiesce's
 * wake; a coalesced write that sees a sleeper arms its timer, whose
 * delivery wakes: models/rnap.pml).  A napper that finds `shared` goes
 * round again as SHARED's sleeper (so `sh` is a load of `shared`, not a
 * choice of STEPS: the seq_cst look is compared with it).  After a handler
 * with SA_RESTART the kernel restarts the sleep (SHARED's has a limit:
 * sys_futex_xsleep), without it the read fails with EINTR, as read(2) on
 * an eventfd.  A cancellation point that leaves nothing behind.
 */
static int uefd__rsleep(struct uefd *e, bool *blocked)
{
	bool sh = uefd__shared(e);
	uint32_t seq;
	int fl, r = 0;

	if (sh)
		uefd__xsync(e);
	if (!*blocked) {
		fl = sys_fcntl_getfl(e->obj.kfd);
		if (fl < 0)
			return fl;
		atomic_store_explicit(&e->sh->nonblock,
				      (fl & O_NONBLOCK) != 0,
				      memory_order_relaxed);
		if (fl & O_NONBLOCK)
			return -EAGAIN;
		*blocked = true;
	}
	seq = atomic_load(&e->sh->rwake);
	atomic_fetch_add(&e->sh->xsleepers, 1);
	pthread_cleanup_push(uefd__xunsleep, e);
	if (!atomic_load(&e->sh->count) && atomic_load(&e->sh->shared) == sh)
		r = sys_futex_xsleep(&e->sh->rwake, seq,
				     sh ? uefd__xsleep_ns(e) : -1);
	pthread_cleanup_pop(1);
	return r == -EINTR ? r : 0;
}

/* A blocked read's sleep on rwake (uefd__rsleep): SHARED's, and MIRROR's
 * when the kernel fd is no bed (NAP).  0, with *c the counter now, or the
 * read's error. */
int uefd__rnap(struct uefd *e, uint64_t *c, bool *blocked, bool *nap)
{
	int r = uefd__rsleep(e, blocked);

	if (r < 0)
		return r;
	*c = atomic_load(&e->sh->count);
	return 0;
}

/* MIRROR: a blocked read's sleep: in read(2) on the kernel fd, or, with
 * UEVENTFD_NOPOLL or once the fd was made non-blocking (*nap), on rwake
 * (NAP).  0, with *c the counter to look at again, or the read's error. */
static int uefd__msleep(struct uefd *e, uint64_t *c, bool *blocked,
			bool *nap)
{
	ssize_t r;
	bool bed;

	if (unlikely(*nap) ||
	    atomic_load_explicit(&e->sh->nopoll, memory_order_relaxed))
		return uefd__rnap(e, c, blocked, nap);
	/* seq_cst: raised before the counter is looked at again (Dekker
	 * against DEMOTE's exchange then load of nsleep, and against
	 * uefd_share's store of `shared` then that load: STEPS). */
	atomic_fetch_add(&e->sh->nsleep, 1);
	*c = atomic_load(&e->sh->count);
	if (*c > 0 || *c == UEFD_GONE || atomic_load(&e->sh->shared)) {
		atomic_fetch_sub(&e->sh->nsleep, 1);
		return 0;
	}
	/* Sleeps here when the fd is blocking, until a writer's sync puts
	 * units in the kernel fd; on a non-blocking fd its EAGAIN is the
	 * answer, and tells that O_NONBLOCK is still set.  It had to sleep if
	 * no unit was there (kunits >= K) on a fd known to block: then this
	 * call has blocked, and an EAGAIN later means the fd was made
	 * non-blocking since. */
	bed = !atomic_load_explicit(&e->sh->nonblock, memory_order_relaxed) &&
	      !atomic_load(&e->sh->kunits);
	r = uefd__sleep(e);
	if (r == -EAGAIN && *blocked) {
		*nap = true;
		*c = atomic_load(&e->sh->count);
		return 0;
	}
	atomic_store_explicit(&e->sh->nonblock, r == -EAGAIN,
			      memory_order_relaxed);
	if (r < 0)
		return (int)r;
	if (bed)
		*blocked = true;
	*c = atomic_load(&e->sh->count);
	return 0;
}

ssize_t uefd_read(struct uefd *e, void *buf, size_t n)
{
	const struct uefd_steps *s;
	uint64_t c, take;
	bool kw = false;
	/* This call has begun to block: O_NONBLOCK is not looked at again
	 * (the kernel's blocked read never does); nap: the kernel fd is no
	 * longer a bed (it was made non-blocking since), rwake is. */
	bool blocked = false, nap = false;
	int r;

	if (n < sizeof(c))
		return -EINVAL;
	c = atomic_load(&e->sh->count);
	for (;;) {
		if (unlikely(c == UEFD_GONE)) {
			/* DEMOTE: the kernel fd has the counter. */
			uefd_demote_wait(e);
			return sys_read_sleep(e->obj.kfd, buf, n);
		}
		if (c > 0) {
			take = e->semaphore ? 1 : c;
			/* The protocol chosen here, at each try (STEPS). */
			s = uefd__steps(e);
			if (s->cross && uefd__crosses(c, c - take)) {
				/* SHARED: a change of class, under the lock. */
				/* (Its locked section settled the kernel fd.) */
				if (!s->cross(e, &c, c - take, false, &kw))
					continue;
			} else if (!atomic_compare_exchange_weak(&e->sh->count,
								 &c, c - take)) {
				continue;
			} else {
				uefd__sync(e);
			}
			return uefd__took(e, buf, c, take);
		}
		/* SHARED looks again first (uefd__xempty). */
		s = uefd__steps(e);
		if (unlikely(s->empty)) {
			c = s->empty(e);
			if (c)
				continue;
		}
		/* Empty.  The first empty read after a successful one (the
		 * end of a drain loop) on a kernel fd known to be non-blocking
		 * answers without a system call.  Any other goes to the
		 * kernel fd, which also tells whether O_NONBLOCK changed. */
		if (!blocked &&
		    atomic_load_explicit(&e->sh->nonblock, memory_order_relaxed) &&
		    atomic_fetch_add_explicit(&e->sh->empty_reads, 1,
					      memory_order_relaxed) == 0)
			return -EAGAIN;
		/* Asleep: MIRROR's in read(2) on the kernel fd (uefd__msleep),
		 * NAP's and SHARED's on rwake (uefd__rnap). */
		r = uefd__steps(e)->sleep(e, &c, &blocked, &nap);
		if (r < 0)
			return r;
	}
}

static void uefd__close(struct uobj *o)
{
	struct uefd *e = (struct uefd *)o;

	if (!e->sh) /* a child finishing a release (FORK) */
		return;
	lock_take(&e->wq.lock);
	e->wq.dead = true;
	lock_drop(&e->wq.lock);
	port_drop_source(&e->wq);
	/* A deferred wakeup is delivered now rather than dropped (a thread still
	 * blocked in uepoll_read gets the mirror it was owed), and held writes
	 * are shown (a writer may have raced with this close). */
	uefd__flush(e);
	/* A run already in progress keeps a reference: let it end, so that
	 * its reference, and with the last one the private fd, are gone when
	 * uepoll_close returns if no other call is in flight. */
	timer_wait_idle(&e->co_timer);
}

/* Idempotent up to uobj_free (FORK in obj.c): the private fd is closed and
 * forgotten under wq.lock, so that a forked child sees it open or gone. */
static void uefd__release(struct uobj *o)
{
	struct uefd *e = (struct uefd *)o;
	bool reserved;

	lock_take(&e->wq.lock);
	if (o->kfd >= 0)
		fdzone_close(o->kfd);
	o->kfd = -1;
	/* The counter's block too (a child sees it freed here or not). */
	shm_free(e->sh);
	e->sh = NULL;
	reserved = e->co_reserved;
	e->co_reserved = false;
	lock_drop(&e->wq.lock);
	if (reserved)
		timer_unreserve();
	uobj_free(o);
}

/* FORK, in the child, of a ueventfd not shared (no number led to it at the
 * fork: the child releases it): a copy of its own, so that the release
 * leaves the parent's block alone.  Without memory, it stays as it is (and
 * closing it shows what was held twice at worst). */
static void uefd__mfork_child(struct uefd *e)
{
	struct uefd_ctr *c = shm_alloc();

	if (!c)
		return;
	memcpy(c, e->sh, sizeof(*c));
	shm_free(e->sh);
	e->sh = c;
	/* Stores only where something changes (COW: see port.c's). */
	obj_fork_zero(&e->sh->wwaiters);
	/* (A thread of the parent asleep: NAP.) */
	if (atomic_load_explicit(&e->sh->xsleepers, memory_order_relaxed))
		atomic_store_explicit(&e->sh->xsleepers, 0,
				      memory_order_relaxed);
}

/* FORK (obj.c), in the child: no writer is blocked here any more; owed
 * work queued on a thread that did not come along is done now; a held
 * wakeup (queued, or being delivered by the parent's timer thread) is
 * delivered now, early (the child's timer thread, if it gets one, starts
 * after the repairs: its heap must hold none of the parent's runs). */
static int uefd__fork_child(struct uobj *o)
{
	struct uefd *e = (struct uefd *)o;
	unsigned bits = atomic_load(&e->owed.bits);
	const struct uefd_steps *s;

	if (!e->sh) /* released up to uobj_free: the child finishes it */
		return 0;
	s = uefd__steps(e);
	if (s->fork_child)
		s->fork_child(e);
	if (bits) {
		atomic_store(&e->owed.bits, 0);
		uefd__owed_work(e, bits);
	}
	if (timer_cancel(&e->co_timer) || timer_was_running(&e->co_timer) ||
	    atomic_load(&e->sh->held))
		uefd__deliver(e);
	return 0;
}

/* NOPOLL ends, for good, in every process that shares e (the flag is in
 * the block): the kernel fd exact from the store's sync on.  SHARED's end
 * settles under xm whatever the classes look like (uefd__xexact: a holder
 * that decided under NOPOLL may be at work); the mode from a seq_cst load
 * (not a choice of STEPS: a stale `false` would leave a stopped SHARED
 * holder's CAS unraised; MIRROR's sync itself turns to SHARED's settle if
 * the share comes meanwhile). */
void uefd_watched_outside(struct uefd *e)
{
	atomic_store(&e->sh->nopoll, false);
	if (atomic_load(&e->sh->shared))
		uefd__xexact(e);
	else
		uefd__sync(e);
}

static ssize_t uefd__read_op(struct uobj *o, void *buf, size_t n)
{
	return uefd_read((struct uefd *)o, buf, n);
}

static ssize_t uefd__write_op(struct uobj *o, const void *buf, size_t n)
{
	return uefd_write((struct uefd *)o, buf, n);
}

/* O_NONBLOCK changed through uepoll_fcntl: the empty read that answers
 * without a system call (uefd_read) must know at once. */
static void uefd__flags_set(struct uobj *o, int fl)
{
	atomic_store_explicit(&((struct uefd *)o)->sh->nonblock,
			      (fl & O_NONBLOCK) != 0, memory_order_relaxed);
}

/* (ctl and wait: the kernel's answer for an eventfd, EINVAL.) */
static bool uefd__polled(struct uobj *o, uint32_t events)
{
	/* Sticky whatever the kernel answers: a failed call costs only the
	 * edges' writes of 0 (kedge). */
	if (events & EPOLLET)
		uefd_kedge((struct uefd *)o);
	/* Only while NOPOLL still stands: an exact ueventfd's mirror follows
	 * its protocol (a coalesced write's arm waits for its timer), and a
	 * sync at every look would arm it at once: proposal 004's coalesced
	 * subscriber in poll() then never slept (30-40% of a CPU against 0.1%
	 * under the preload's NOPOLL default; docs/benchmarks.md, issue 35).
	 * Relaxed: a look that finds it ended while the thread that ended it
	 * has not synced yet is a look just before that sync, which wakes the
	 * poller. */
	if (atomic_load_explicit(&((struct uefd *)o)->sh->nopoll,
				 memory_order_relaxed))
		uefd_watched_outside((struct uefd *)o);
	return false;
}

static int uefd__demote_op(struct uobj *o)
{
	return uefd_demote((struct uefd *)o);
}

/* FORK's policy for a ueventfd: an exec demotes it (the new program gets
 * the kernel eventfd with the counter); a fork shares it (SHARED), or,
 * with UEPOLL_FORK_DEMOTE_EVENTFDS=1, demotes it, for a program that forks
 * but never uses a ueventfd in two processes and would rather have the
 * kernel's costs for the ones alive at its forks.  One being demoted, or
 * shared already, is left as it is. */
static enum uobj_fate uefd__fate(struct uobj *o, bool exec)
{
	struct uefd *e = (struct uefd *)o;

	if (uefd_demoting(e))
		return UOBJ_KEEP;
	if (exec || config_get().fork_demote_eventfds)
		return UOBJ_DEMOTE;
	return uefd_shared(e) ? UOBJ_KEEP : UOBJ_SHARE;
}

static int uefd__share_op(struct uobj *o)
{
	return uefd_share((struct uefd *)o);
}

static void uefd__exit_flush(struct uobj *o)
{
	uefd_flush_exit((struct uefd *)o);
}

static int uefd__coalesce_op(struct uobj *o,
			     const struct ueventfd_coalesce *set,
			     struct ueventfd_coalesce *old)
{
	return uefd_coalesce((struct uefd *)o, set, old);
}

/* A write wrote the kernel fd iff it changed the class: its sync wrote
 * then, and only then. */
static bool uefd__mwrote_kfd(uint64_t from, uint64_t to, bool kw)
{
	return uefd__crosses(from, to);
}

/* MIRROR's steps of a read or write (STEPS in eventfd_impl.h). */
const struct uefd_steps uefd__mirror_steps = {
	/* A change of class is a CAS as any other; the sync follows. */
	.cross = NULL,
	.sync = uefd__msync,
	.wrote_kfd = uefd__mwrote_kfd,
	.empty = NULL,
	.sleep = uefd__msleep,
	.show = NULL,
	.held = NULL,
	.fork_child = uefd__mfork_child,
	.demote = uefd__mdemote,
	.demote_wait = uefd__mdemote_wait,
	.room_ns = -1,
	.hold_writes = true,
};

const struct uobj_ops uefd_ops = {
	.size = sizeof(struct uefd),
	.read = uefd__read_op,
	.write = uefd__write_op,
	.close = uefd__close,
	.release = uefd__release,
	.flags_set = uefd__flags_set,
	.fork_child = uefd__fork_child,
	.polled = uefd__polled,
	.demote = uefd__demote_op,
	.fate = uefd__fate,
	.share = uefd__share_op,
	.exit_flush = uefd__exit_flush,
	.coalesce = uefd__coalesce_op,
};
