/* SPDX-License-Identifier: MIT */
/*
 * eventfd_demote.c - DEMOTE: a ueventfd becomes the kernel eventfd it
 * stands for.
 *
 * uefd_demote makes it so, with the exact counter, while other threads use
 * the ueventfd.  In this order:
 *  1. one CAS of `demote` (LIVE -> DEMOTING) elects the demoter; the
 *     others wait for DEMOTED;
 *  2. the wait queue is marked dead (no new watcher), coalescing is
 *     switched off and what it held is shown (uefd__exact: the timer
 *     idle), UEVENTFD_NOPOLL ends;
 *  3. one exchange takes the counter (and `held`) and leaves UEFD_GONE, a
 *     value a counter never holds: a read, write, held write or sync that
 *     finds it waits until the demotion is over and passes its call to
 *     the kernel fd;
 *  4. it wakes the readers napping on `rwake` (NAP) and waits until no
 *     sync is in flight (a sync raises `syncing` and re-checks the counter
 *     before its system call: Dekker against the exchange) and no reader
 *     is asleep in read(2) on kfd (it wakes them with units of its own: a
 *     sleeper raises `nsleep` before it looks at the counter), so that
 *     K == kunits;
 *  5. it sets K to the counter (uefd__carry: a write, or a read and a
 *     write);
 *  6. only then do the watchers become kernel registrations of the fd in
 *     their instances (port_demote_source): the carry's write is an edge
 *     the program never made, and until DEMOTED no read or write of the
 *     program moves the fd, so each ADD polls exactly what the program's
 *     edges left (an edge-triggered item whose event a wait took: UNPEND
 *     in unpend.c);
 *  7. DEMOTED (release), the waiters and blocked writers woken, every
 *     number unpublished: uepoll's calls on them go to the kernel.
 * A sleeper that wakes after the exchange took units written before the
 * counter was carried over, never part of it.  What cannot be carried: the
 * coalescing setting (a kernel eventfd wakes at once).  A shared ueventfd's
 * demotion is SHARED DEMOTE (uefd__xdemote, eventfd_shared.c), under xm,
 * through `carry`.
 *
 * LOCKING: as in eventfd.c (the atomics of `sh`, wq.lock for `dead` and
 * the coalescing delay); SHARED's demotion under xm (eventfd_shared.c).
 */
#include <limits.h>

#include "eventfd_impl.h"
#include "lock.h"
#include "port.h"
#include "sys.h"

bool uefd_demoting(struct uefd *e)
{
	return atomic_load_explicit(&e->sh->demote, memory_order_relaxed) !=
	       UEFD_LIVE;
}

/* DEMOTE, SHARED: e's wait queue is dead (no new watcher).  What was held
 * is shown and the timer has finished with it; the kernel fd is exact from
 * now on (UEVENTFD_NOPOLL ends). */
void uefd__exact(struct uefd *e)
{
	uefd__flush(e);
	timer_wait_idle(&e->co_timer);
	atomic_store(&e->sh->nopoll, false);
	uefd__sync(e);
}

/* MIRROR: one wait for a demotion in state s (a thread of this process
 * demotes). */
void uefd__mdemote_wait(struct uefd *e, int s)
{
	sys_futex_xwait(&e->sh->demote, (uint32_t)s, -1);
}

void uefd_demote_wait(struct uefd *e)
{
	int s;

	/* acquire: pairs with the demotion's release of UEFD_DEMOTED (the
	 * kernel fd holds the counter from then on).  Each wait is the
	 * protocol's, chosen at each round (SHARED's: uefd__xdemote_wait). */
	while ((s = atomic_load_explicit(&e->sh->demote, memory_order_acquire)) !=
	       UEFD_DEMOTED)
		uefd__steps(e)->demote_wait(e, s);
}

/* DEMOTE, SHARED: after the caller's change (the exchange of the counter,
 * the store of `shared`), wait out the MIRROR calls in flight and wake
 * the readers asleep in read(2) on kfd, with a unit each, until none is
 * left.  Both raised their count before looking at what the caller changed
 * (seq_cst loads here: Dekker). */
void uefd__mirror_quiesce(struct uefd *e)
{
	/* NAP: its readers look again, and find UEFD_GONE or `shared`. */
	uefd__xwake(e);
	while (atomic_load(&e->sh->syncing))
		sys_yield();
	while (atomic_load(&e->sh->nsleep)) {
		if (!(sys_poll_now(e->obj.kfd, POLLIN) & POLLIN)) {
			atomic_fetch_add(&e->sh->kunits, 1);
			sys_eventfd_signal(e->obj.kfd);
		}
		sys_yield();
	}
}

/* Set the kernel fd's value from k (== K: no call in flight) to c. */
void uefd__carry(struct uefd *e, uint64_t k, uint64_t c)
{
	uint64_t v;

	if (k > c) {
		/* Non-semaphore: one read takes it all.  Semaphore: k > c only
		 * after the counter left its maximum (MIRROR), by as many
		 * reads as it has had since. */
		while (k > c && sys_eventfd_take(e->obj.kfd, &v) == sizeof(v))
			k -= v;
	}
	if (c > k)
		sys_eventfd_add(e->obj.kfd, c - k);
}

/* DEMOTE, MIRROR: steps 2 to 7, this thread elected. */
int uefd__mdemote(struct uefd *e)
{
	uint64_t c, h, k;
	int r;

	/* No new watcher, no more held writes or wakeups: what was held is
	 * shown, and the timer has finished with it. */
	lock_take(&e->wq.lock);
	e->wq.dead = true;
	atomic_store_explicit(&e->sh->co_delay_us, 0, memory_order_relaxed);
	lock_drop(&e->wq.lock);
	uefd__exact(e);
	/* The counter, and what a racing held write left (count + held never
	 * exceeds UEFD_MAX). */
	c = atomic_exchange(&e->sh->count, UEFD_GONE);
	h = atomic_exchange(&e->sh->held, 0);
	c += h <= UEFD_MAX - c ? h : UEFD_MAX - c;
	/* seq_cst loads after the exchange: Dekker with sync's and a
	 * sleeper's raise then look (DEMOTE). */
	uefd__mirror_quiesce(e);
	k = atomic_load(&e->sh->kunits);
	uefd__carry(e, k, c);
	atomic_store_explicit(&e->sh->kunits, c, memory_order_relaxed);
	/* The watchers become registrations of the kernel fd only now that
	 * it holds the counter: the carry's write (or read) is an edge for
	 * every registration made of it before, which the program never made
	 * (UNPEND in unpend.c), and until DEMOTED no read or write of the
	 * program moves it (they wait on UEFD_GONE), so an item's ADD polls
	 * exactly what its edges have left. */
	r = port_demote_source(&e->wq, &e->obj);
	atomic_store_explicit(&e->sh->demote, UEFD_DEMOTED, memory_order_release);
	sys_futex_xwake(&e->sh->demote, INT_MAX);
	/* Writers asleep on a full counter look again, and find UEFD_GONE. */
	atomic_fetch_add(&e->sh->wseq, 1);
	sys_futex_xwake(&e->sh->wseq, INT_MAX);
	/* From now on uepoll's calls on its numbers go to the kernel. */
	uobj_unpublish_all(&e->obj);
	return r;
}

int uefd_demote(struct uefd *e)
{
	int s = UEFD_LIVE;

	if (!atomic_compare_exchange_strong(&e->sh->demote, &s, UEFD_DEMOTING)) {
		uefd_demote_wait(e);
		/* Demoted by another thread, or (SHARED) by another process,
		 * whose unpublish was its own: this process's numbers lead to
		 * the kernel eventfd from now on, as after its own demotion
		 * (else a number closed by a path uepoll does not see, stdio's
		 * fclose, would stay published). */
		uobj_unpublish_all(&e->obj); /* this process's numbers */
		return 0;
	}
	/* SHARED DEMOTE: uefd__xdemote. */
	return uefd__steps(e)->demote(e);
}
