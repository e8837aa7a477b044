/* SPDX-License-Identifier: MIT */
/*
 * bell.c - an instance's wake protocol (bell.h has the verbs and who calls
 * them).  A waiter sleeps in epoll_wait on the instance's kernel epoll,
 * where kernel fds wake it directly; userspace sources (ueventfds) wake it
 * through the doorbell, a private eventfd in that epoll.  The doorbell also
 * makes the instance's public fd (the kernel epoll) readable for poll(),
 * select() and outer event loops while items are queued.
 *
 * DOORBELL (no lost wakeup).  `set` == 1 means the doorbell has been rung
 * and its event not yet taken by a waiter; it stands for the doorbell and
 * nothing else (a doze and a nap keep their own words: DOZE, NAP).
 *  - Signaler (port_item_signal, then bell__kick): enqueue the item, then
 *    load `set` (seq_cst); if it is 0, exchange it to 1 and write the
 *    eventfd.  The enqueue ends with liburcu's cds_wfcq_enqueue, an
 *    exchange of the queue's tail between full barriers (uatomic_xchg), so
 *    the load of `set` cannot be satisfied before the new tail is visible.
 *  - A write of the doorbell and its `set` = 1, and a read of it (a take:
 *    bell__clear, bell_watch, a blind doze) and its `set` = 0, are each
 *    made under dblock, so they never interleave: a take that read the
 *    eventfd before a ring's write landed and stored 0 after the ring's
 *    store of 1 would leave the eventfd counting with `set` 0, which no
 *    later take reads (bell__clear stops at `set` 0): an instance ready for
 *    ever with nothing queued, its holders and outside pollers woken on
 *    every look (t_nest_race: 20 to 500 trials in 20000 stuck so before
 *    dblock).  Only those paths take the lock, and each
 *    makes a system call anyway; the steady state (`set` 1, no call) and a
 *    take of an edge-triggered doorbell's event (bell_took: a write is
 *    never on its way then, see there) take none.
 *  - Waiter: a wait that took the doorbell's event stores `set` = 0
 *    (bell_took, seq_cst) before it looks at the ready queue (rq_empty: a
 *    seq_cst load of txbusy, which orders the loads of the queue's head
 *    and tail after it).  Either the signaler's load of `set` comes first
 *    (it saw 1 and skipped: its tail exchange, before that load, is then
 *    before our store, which is before our look, so we see the item), or
 *    it comes after (it saw 0 and rings).  There is no seq_cst counter of
 *    queued items: the queue's tail, published by a fully fenced
 *    exchange, is what both sides order against.
 *  - A waiter about to sleep counts itself in `sleepers`, then re-checks
 *    the queue (bell__sleep_begin); while `set` == 1 the doorbell's event is
 *    pending in the kernel epoll (or was just taken by a waiter that will
 *    harvest), so epoll_wait cannot sleep through a queued item.
 *  - A wait that leaves items queued (maxevents reached, level-triggered
 *    re-queue) kicks again (bell__settle), so the public fd stays readable
 *    whenever a uepoll_wait would return something.
 * When nobody sleeps, `set` stays 1 and signals make no system call.
 * Model: models/doorbell.pml (signal = rq_enqueue + bell__kick; take =
 * bell_took; sleep = bell__sleep_begin + epoll_wait).
 *
 * DOZE (min-wait batching; wait.c's wait__doze).  While a batching wait's
 * window is open, `dozers` > 0 holds an unwatched instance's kicks
 * (bell__kick_slow returns at once), so that signals neither write the doorbell
 * nor wake anyone until the window closes.  The doze never writes `set`:
 * it once held `set` at 1 and stored 0 on its way out, over any ring made
 * meanwhile for a holder that arrived during the doze, which left that
 * ring in the eventfd with nobody to read it (issue 32).  It is bounded
 * (the doze ends at the window's end or the timeout) and repaired on the
 * way out (bell__doze_end): the dozer uncounts itself (seq_cst), then, if
 * items are queued and another thread sleeps, kicks (a signal that saw
 * the count held its kick after its enqueue, so the look sees its item; a
 * thread that starts sleeping counts itself in sleepers, then looks at the
 * queue: one of the two sees the other).  What must wake a dozer rings
 * the doorbell unless it is rung (bell__dozer_event, bell__ring_idle: a
 * rung doorbell's event is pending, so the dozer wakes, or another sleeper
 * took it and harvests what it rang for): an urgent item, or the event
 * that brings `want` to 0.  Its seq_cst load of `dozers` comes after the
 * enqueue, as bell__kick's load of `set` does; the dozer counts itself in
 * `dozers` before it re-checks the queue.  The loads are on the line the
 * signaler already has (next to `set`).  A watched instance is not held:
 * its holders look at the doorbell (a doze begun before the watch is woken
 * by the level-triggered doorbell and ends).  Kernel fds reach the kernel
 * epoll directly and wake a dozer as they wake any sleeper.  A blind doze
 * (it polls the doorbell's eventfd alone) takes the doorbell first, under
 * dblock.  Model: models/doze.pml; a holder arriving during a doze:
 * models/arrive.pml.
 *
 * WATCHED (an instance held by another instance: nesting; or by a kernel
 * epoll edge-triggered through uepoll_ctl, which counts as a holder that
 * never lets go until the instance's release: bell__hold_begin).  The
 * kernel wakes an epoll's pollers on every event of a source it holds, and
 * its poll of an epoll reports only registrations whose source is ready.
 * So a watched instance's doorbell is level-triggered (it stays readable, without
 * a new wake, while something is ready), every change that may have made it
 * not ready prunes the queue and clears the doorbell if nothing is left
 * (bell__mirror), and while any instance of the process holds another one
 * edge-triggered (bell__nedge > 0), every watched instance rings on every
 * event (bell__kick_edge).  Not only its own holders: the kernel wakes an
 * epoll's pollers on each event of what it holds, whatever the mode of that
 * registration, so an edge-triggered holder two levels up (A holds B
 * EPOLLET, B holds C level-triggered) gets an edge for each event of C,
 * through the wakeups of every level; which instances are above which is not
 * tracked, so the count is the process's.  With no edge-triggered holder
 * anywhere, a watched instance rings only when the doorbell is not rung
 * (bell__kick_db), one write per idle -> ready change instead of one
 * per event: a level-triggered holder's kernel epoll reports the fd while
 * the eventfd is non-zero, whatever wakes it, and `set` == 1 says that it
 * is, or that the ring's write is being made (under dblock).  So `set`
 * must say exactly that: `set` == 0 with the eventfd counting would leave
 * the instance ready for ever (bell__clear reads only a rung doorbell, its
 * holders report it on every look: a busy loop), `set` == 1 with the
 * eventfd empty would ring its level-triggered holders no more (a lost
 * wakeup).  What keeps it so:
 *  - `set` goes back to 0 only with the read that zeroes the eventfd, both
 *    under dblock (bell__clear, bell_watch), and the take then looks at the
 *    queue and kicks: a signal that saw `set` == 1 before that store had
 *    queued its item before the look (the DOORBELL pair again);
 *  - every write is made with `set` = 1 under dblock (bell__ring,
 *    bell__ring_idle), a watched instance never rings a napper instead
 *    (bell__kick_slow), and neither a doze nor a nap writes `set` (DOZE, NAP):
 *    their holds were the `set` == 0 over a ring, and the `set` == 1
 *    without one, of a holder that arrived while they lasted (issue 32);
 *  - bell_took, the one store of `set` without dblock (an edge-triggered
 *    doorbell's event, taken by epoll_wait), looks at lt after its store:
 *    a watch whose store of lt it missed takes the doorbell after it
 *    (bell_watch: lt, then the take), and one whose store it sees is
 *    taken again (bell__retake).
 * An edge-triggered
 * registration is counted in bell__nedge before the kernel call that makes
 * it (and before `watched`, for a new holder), and uncounted after the one
 * that ends it: a signal whose seq_cst load (after its enqueue) missed the
 * count came before that kernel call, whose poll (through every level: the
 * kernel polls a nested epoll's ready items) reports the instance if the
 * doorbell is rung, or the ring's write comes after the registration exists
 * and wakes it.  A kernel epoll that holds the instance edge-triggered
 * through uepoll_ctl counts once, as a watcher and in bell__nedge, from
 * before the kernel call (as a holder's count; bell__hold_begin), until the
 * instance's release if the call made the registration, else until the
 * call has failed (bell__hold_end: a refused ctl leaves no holder, and a
 * watched instance's ways differ from an unwatched one's, its events'
 * order after a source's read and write among them); the queue is pruned
 * only once the call made it (the kernel's ADD polls the instance, a
 * refused call does not: a prune reorders; fuzz_diff found both orders).
 * It is a watcher whether or not a uepoll instance holds the instance too:
 * before issue 32 it was counted only in bell__nedge, so an instance held
 * by a kernel epoll alone rang only while `set` was 0, and an event loop
 * that never makes a wait come back empty got one edge (t_nest_kernel_et).
 * An instance alive at
 * a fork, whose kernel epoll the other process may then register anywhere
 * without our seeing it, counts in bell__nedge for good
 * (bell__held_edge_outside).  Models: models/watched.pml, and
 * models/arrive.pml for a holder (an instance, or a kernel epoll through
 * uepoll_ctl) that arrives during a doze or a nap (t_nest_doze,
 * t_nest_nap).  What stays: a wait that takes an event between its
 * source's enqueue and the ring made for it leaves the doorbell rung with
 * nothing behind it until the next look (a holder's check, a wait that
 * finds nothing), so a kernel epoll or poll() may see the instance ready
 * once then (uepoll(7)).  A prune holds the
 * queue's items in a private queue for a moment, so a concurrent bell__clear may see the queue
 * empty and not ring again: a prune that kept items kicks (bell__prune;
 * seq_cst: either it sees `set` == 0 or the clear's later look sees the
 * items back).
 *
 * LAZY (a watched instance's clear, left to its holders).  While no
 * edge-triggered or one-shot nesting exists in the process (bell__nedge ==
 * 0) and no kernel epoll holds an instance level-triggered through
 * uepoll_ctl (port_any_kheld, told as BELL_EXACT), a watched instance
 * whose last ready item goes (a read that empties its source, a wait that
 * takes it) leaves its doorbell rung (bell_look's CHANGED and RETURN skip
 * bell__mirror; a read does not even walk its watchers: bell_any_exact),
 * as an unwatched instance does.  Every level-triggered holder that the
 * stale level reaches is a uepoll instance, which checks what the kernel
 * reports before it returns it (krec__ready, krec.c: BELL_LOOK_NESTED on
 * every level, which prunes and takes a stale doorbell), so no wait
 * returns a nested instance that has nothing; a holder asleep in its
 * kernel epoll is woken by the stale level once, takes it in its check and
 * sleeps again.  What it saves is the pair a busy nesting paid per
 * iteration: the clear when the reads empty the instance, and so the ring
 * when the next event comes (`set` is still 1: DOORBELL's invariant holds,
 * the eventfd counts).  Nothing here can lose a wakeup: only takes are
 * skipped, never a ring, and a take that is made is bell__clear's.  What
 * needs the level exact is counted before it can look:
 *  - an edge-triggered holder (an edge per event, not per level) and a
 *    one-shot one (its kernel epoll reports the stale level and disarms
 *    the registration; our check then drops the event, which the kernel
 *    would have kept for a real one) count in bell__nedge before their
 *    kernel call, and the chain below is then made exact
 *    (krec_nest_exact, krec.c: every level's LOOK_NESTED), so the call
 *    polls exact fds; a read that emptied its source before that count
 *    is seen by the look (seq_cst: the read's CAS, then its load of
 *    bell__nedge; the count, then the look's poll of the source);
 *  - a kernel epoll that holds an instance level-triggered (kheld) is
 *    counted before its call (port__polled), and the ctl's look after it
 *    (port__looked) makes the chain below exact; from then on reads look
 *    (BELL_EXACT), so UNSTALE's exactness holds for it;
 *  - poll() and select() through the preload look first (port__looked:
 *    the instance and every level below it).
 * What stays: a kernel epoll or poll() that uepoll does not see (no
 * preload) reads a watched instance, and its holders, ready after their
 * last event was taken, until a look, as for an unwatched instance
 * (uepoll(7)); one such held EPOLLET gets an edge only when the doorbell
 * was taken since.  models/watched.pml: the holder's check that finds
 * nothing is the only clear of config 0 (MUTANT_LAZY_NO_CHECK_CLEAR).
 *
 * NOPOLL (UEPOLL_NOPOLL: nothing outside uepoll's calls polls the
 * instance's fd).  Then the doorbell is only for threads of ours: a signal
 * rings only while a thread is counted in `sleepers` or the instance is
 * watched (bell__wanted), and a stale doorbell is not cleared unless
 * watched (bell__exact), so a polling loop (write, zero-timeout wait, read)
 * makes no system call at all.  An instance with kernel fds (nkernel > 0,
 * KERNEL) still rings for its queued items (the doorbell is the ready
 * queue's place in the kernel's list, FAIRNESS in wait.c); it only skips
 * the clears.  No
 * wakeup is lost, by a second Dekker pair beside DOORBELL's:
 *  - Signaler: enqueue (the fenced exchange of the tail), then load
 *    `sleepers` and `watched` (seq_cst); ring (bell__kick) if either is
 *    non-zero.
 *  - Sleeper: count itself in `sleepers` (seq_cst RMW), then re-check the
 *    queue (bell__sleep_begin; a doze and a FIFO follower count themselves
 *    the same way before they look).  Either the signaler's load comes
 *    after the count (it rings, and DOORBELL takes over) or the re-check
 *    comes after the enqueue (the sleeper does not sleep).
 *  - Watcher: bell_watch counts itself in `watched` (seq_cst RMW), then
 *    prunes the queue and kicks if items are left: either the signaler
 *    sees `watched` or the prune sees its item.  From then on the
 *    instance is WATCHED as any other.
 * What is skipped is only ever a ring for nobody, and a skipped clear
 * leaves `set` == 1 with the doorbell's event pending (the invariant
 * DOORBELL needs): a thread that sleeps later is woken by it at once,
 * takes it and sleeps again.  A waiter's own rings that order the two
 * lists (FAIRNESS in wait.c) stay unconditional.  Model:
 * models/doorbell.pml (nopoll chosen either way at its start).
 *
 * NAP (the futex floor).  A sleeping wait on a NOPOLL instance needs the
 * kernel epoll only for what reaches it there: kernel fds, a watcher's view
 * of the doorbell, a signal mask applied atomically.  Without any of those
 * (nkernel == 0, watched == 0, no sigmask) it naps: it sleeps on the futex
 * word `nap`, and the ring that would have written the doorbell wakes it
 * with one FUTEX_WAKE instead (a bare futex handoff, without the epoll's
 * callbacks, ready list and copy-out).  Nobody outside uepoll polls a NOPOLL
 * instance's fd, so nothing else needs the doorbell's count.
 *  - Rings for nappers have their own word, `napped`, as the doorbell's
 *    have `set`: a ring (bell__kick_slow) that sees a napper counted (a seq_cst
 *    load of `nappers` after its enqueue) exchanges `napped` 0 -> 1 and, if
 *    it was 0, raises `nap` and wakes one napper; whatever `set` says (a
 *    NOPOLL instance leaves its doorbell rung: a stale `set` does not stop
 *    a napper's ring).  The nap never writes `set`: when it did (a napper
 *    took a stale doorbell by storing 0, and stored 0 on its way out to
 *    undo a ring that woke it), a store could land over a doorbell ring made
 *    meanwhile for a holder that arrived during the nap, leaving that ring
 *    in the eventfd for good (issue 32).
 *  - Napper (bell__nap_begin): read `nap`, count itself in `sleepers` then
 *    `nappers` (seq_cst RMWs), give up if watched, store `napped` = 0,
 *    give up if nkernel > 0 (KERNEL), re-check the queue, then FUTEX_WAIT
 *    on `nap` with the value read first.  Either the signal's
 *    load of `nappers` sees the napper (it rings, or finds `napped` 1 and
 *    skips: see below) or the napper's count came after it, and so did its
 *    re-check, which sees the item.  A napper not yet in FUTEX_WAIT when it
 *    is rung finds the word changed.
 *  - `napped` == 1 means "a napper was woken and will look"; every napper
 *    on its way out (bell__nap_end) uncounts itself and then stores `napped`
 *    = 0 before it looks at the queue (its wait goes round and harvests,
 *    or re-checks before its epoll sleep): a signal that found `napped` 1
 *    queued its item before that load, and some napper's store of 0 (its
 *    begin's, or the end's of the one that ring woke) comes after the load
 *    and before that napper's look, which sees the item.
 *  - A ring that sees a napper wakes one napper and writes nothing, even
 *    if threads sleep in the kernel epoll beside it (a wait with a
 *    sigmask, a dozer): one thread per event, as the kernel's.  Every
 *    napper it may have been meant for collects: woken, timed out or
 *    finding the word changed, the wait goes round and harvests; giving up
 *    the nap, it re-checks the queue before its epoll sleep.  Only a nap
 *    that ends the wait without collecting (EINTR, cancellation) passes
 *    the ring on: after its reset of `napped` it kicks if items are queued
 *    and anyone still sleeps (as bell__doze_end).
 *  - A watched instance's rings are the doorbell's (its holders look at
 *    the doorbell): bell__kick_slow rings a napper only while the instance is
 *    not watched (seq_cst load), and a watch wakes the nappers (below).
 *  - What makes a nap wrong ends it: a kernel fd's ADD, a nested record
 *    made loud and a demotion raise nkernel, and a watcher raises
 *    `watched`, each by a seq_cst RMW, then call bell__unnap, which loads
 *    `nappers` and wakes them all if any: either it sees the napper or the
 *    napper's check (after its count) sees the change.  Woken, they go
 *    round and sleep in the kernel epoll.
 *  - A nap always carries a timeout (sys_futex_nap): a signal handler then
 *    ends it with EINTR as it ends epoll_wait.  Cancelled in the nap, the
 *    wait runs bell__nap_end.
 * Model: models/doorbell.pml (waiters nap or sleep in epoll, chosen each
 * time; a kernel fd added, or NOPOLL ended, while they nap); a holder that
 * arrives during a nap: models/arrive.pml.  t_port_nap counts the wake, and
 * checks the give-back of `napped`.
 *
 * QUIET (a ring for nothing is not made; port_item_signal).  The kernel
 * queues an epitem on every wakeup of its source, even one that leaves
 * nothing ready (a write of 0, or a counter another thread read between the
 * write and the wakeup), wakes the epoll's waiter, which polls the item,
 * finds nothing and sleeps again; and its poll of the epoll's fd reports
 * nothing for such an item.  A signaler here queues the item as always (its
 * place in the queue decides the order a wait reports, as the epitem's
 * does), and when its kick would make a system call (bell__would_ring: not
 * watched, wanted, `set` 0 or a napper counted) it first polls the item's source, after the
 * enqueue, and makes no ring if it shows nothing the item asks for.  In a
 * wake-all herd that is what spares a write(2) per instance after the first
 * woken waiter took the counter.  So a queued item no longer means that its
 * enqueuer rang.  No wakeup is lost:
 *  - the source's walks are serialised by its wq lock, and every change that
 *    may make the item ready (a write, for EPOLLOUT a read) walks after its
 *    own CAS: the last such change either sees the value it made (or a
 *    later one) and rings, or sees nothing because a reader took it since;
 *  - a signal whose item is queued already still kicks (bell__kick_edge is
 *    called whether or not rq_enqueue queued it), so an item left queued
 *    without a ring is rung for by the next change that finds it ready;
 *  - a waiter that finds the item queued harvests it, polls it and drops
 *    it, as before; a sleeper does not wake for it.
 * Exactness improves: the instance's fd is not made readable for an item
 * whose source shows nothing, as the kernel's poll of an epoll reports
 * nothing for it.  A watched instance does not look: its rings follow
 * WATCHED (and a signal then revalidates it when the item is not ready).  Model: models/quiet.pml (a write of 0 and a reader that
 * drains between a write and its walk; mutants: the look before the CAS, a
 * signal that skips the kick when its item was queued already).
 * t_wake_quiet: a write of 0 to a ueventfd four idle instances watch makes
 * no system call (one doorbell write each before), and a wait's events
 * come out in the kernel's order.
 *
 * UNNOPOLL.  NOPOLL may end while the instance is in use: the preload layer
 * creates instances with it when asked (UEPOLL_NOPOLL=1) and ends it when it
 * sees the fd polled from outside (poll(), select(), a kernel epoll:
 * uobj_polled; uepoll_ctl into a kernel epoll ends it too, port__polled).
 * bell__polled_outside stores nopoll = 0 (seq_cst), wakes the nappers
 * (bell__unnap: they re-check nopoll after their count and sleep in the
 * kernel epoll instead) and kicks if items are queued: a signal loads
 * nopoll after its enqueue (bell__wanted, seq_cst), so either it saw 0 and
 * rang, or its item is seen by the look.  From then on the instance is
 * exact, as if made without the flag (a stale doorbell may make the fd
 * read ready once, as a default instance's may).  A ueventfd ends
 * UEVENTFD_NOPOLL the same way (uefd_watched_outside in eventfd.c).
 *
 * LOCKING.  wlock, for watched/lt transitions (bell_watch), and dblock, a
 * leaf, around each system call on the doorbell with its change of `set`
 * (DOORBELL); their places: LOCK ORDER in lock.h.  Everything else here is
 * the atomics above.
 */
#include <errno.h>
#include <limits.h>
#include <sys/eventfd.h>

#include "uepoll.h"

#include "bell.h"
#include "fdzone.h"
#include "lock.h"

int bell_init(struct bell *b, int epfd, uint64_t data, bool nopoll)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET,
				  .data.u64 = data };
	int r;

	/* Out of the program's way (fdzone.c). */
	b->fd = fdzone_eventfd(EFD_NONBLOCK | EFD_CLOEXEC);
	if (b->fd < 0)
		return b->fd;
	r = sys_epoll_ctl(epfd, EPOLL_CTL_ADD, b->fd, &ev);
	if (r < 0) {
		fdzone_close(b->fd);
		b->fd = -1;
		return r;
	}
	/* Never destroyed: the memory is type-stable, and a forked child may
	 * finish a release (FORK in obj.c). */
	lock_init(&b->wlock);
	lock_init(&b->dblock);
	atomic_init(&b->nkernel, 0);
	atomic_init(&b->ksettle, 0);
	atomic_init(&b->set, 0);
	atomic_init(&b->sleepers, 0);
	atomic_init(&b->nappers, 0);
	atomic_init(&b->nap, 0);
	atomic_init(&b->napped, 0);
	atomic_init(&b->dozers, 0);
	atomic_init(&b->want, 0);
	atomic_init(&b->watched, 0);
	atomic_init(&b->xedge, false);
	b->xheld = false;
	b->xholds = 0;
	atomic_init(&b->lt, false);
	atomic_init(&b->nopoll, nopoll);
	return 0;
}

void bell_close(struct bell *b)
{
	if (b->fd >= 0)
		fdzone_close(b->fd);
	b->fd = -1;
}

void bell_fork_child(struct bell *b)
{
	/* Each store only where the value is not already right: a page the
	 * child only reads stays shared with the parent (no copy). */
	obj_fork_zero(&b->sleepers);
	obj_fork_zero(&b->nappers);
	obj_fork_zero(&b->napped);
	obj_fork_zero(&b->dozers);
	obj_fork_zero(&b->want);
	obj_fork_zero(&b->set);
}

/* DOORBELL: write the doorbell with `set` = 1, one step for every take
 * (dblock). */
void bell__ring(struct bell *b)
{
	lock_take(&b->dblock);
	atomic_store(&b->set, 1);
	sys_eventfd_signal(b->fd);
	lock_drop(&b->dblock);
}

void bell__ring_idle(struct bell *b)
{
	lock_take(&b->dblock);
	/* seq_cst: only the exchange that finds 0 writes (one write per
	 * ring, whoever races). */
	if (atomic_exchange(&b->set, 1) == 0)
		sys_eventfd_signal(b->fd);
	lock_drop(&b->dblock);
}

/* Read the doorbell empty and store `set` = 0, in one step for every ring
 * (dblock); always: even if `set` is 0 (an edge-triggered doorbell's
 * eventfd keeps counting after bell_took, and bell_took's store may have
 * hidden a ring: bell__retake). */
static void bell__take(struct bell *b, bool always)
{
	uint64_t v;

	lock_take(&b->dblock);
	/* Zeroing the eventfd makes the doorbell's queued event (if any)
	 * vanish: the kernel re-polls an item before reporting it. */
	if (always || atomic_load(&b->set)) {
		sys_read(b->fd, &v, sizeof(v));
		atomic_store(&b->set, 0);
	}
	lock_drop(&b->dblock);
}

/* NAP: one napper, as the kernel wakes one epoll_wait per event; a thread
 * asleep in the kernel epoll beside it is left asleep (the napper collects,
 * or passes the ring on: bell__nap_end).  `napped`: one wake until a napper
 * comes back. */
static void bell__nap_ring(struct bell *b)
{
	/* seq_cst, after the caller's load of nappers: against a napper's
	 * store of napped = 0 then look. */
	if (atomic_load(&b->napped) == 0 &&
	    atomic_exchange(&b->napped, 1) == 0) {
		atomic_fetch_add(&b->nap, 1);
		sys_futex_wake(&b->nap, 1);
	}
}

void bell__kick_slow(struct bell *b)
{
	/* seq_cst loads after the caller's enqueue (and its load of `set`
	 * or `nappers`): against bell_watch's count then prune, a dozer's
	 * uncount then look (DOZE), a napper's count then look (NAP). */
	bool watched = atomic_load(&b->watched) != 0;

	if (!watched && atomic_load(&b->dozers) > 0)
		return; /* DOZE: held; bell__doze_end looks */
	if (!watched && atomic_load(&b->nappers) > 0 &&
	    atomic_load(&b->nopoll)) {
		bell__nap_ring(b);
		return;
	}
	if (atomic_load(&b->set) == 0)
		bell__ring_idle(b);
}

/* NAP's eligibility (relaxed hints: bell__nap_begin checks again after it
 * counts): a NOPOLL instance, not watched, no kernel fd, no signal mask to
 * apply. */
static bool bell__may_nap(struct bell *b, bool sigmask)
{
	return !sigmask &&
	       atomic_load_explicit(&b->nopoll, memory_order_relaxed) &&
	       !atomic_load_explicit(&b->watched, memory_order_relaxed) &&
	       atomic_load_explicit(&b->nkernel, memory_order_relaxed) <= 0;
}

static void bell__nap_end(struct bell *b, struct readyq *q, bool pass);

/* Count the caller as a sleeper and a napper, take `napped` (never `set`)
 * and re-check the queue: 1 it may nap (*seq: the word's value to nap on;
 * then bell__nap_end after it; pass: it leaves without collecting, EINTR
 * or cancelled), 0 items are queued, -1 it must sleep in the kernel epoll
 * (watched, NOPOLL ended, or a kernel fd counted); not counted then. */
static int bell__nap_begin(struct bell *b, struct readyq *q, uint32_t *seq)
{
	/* Read before the count: a wake after it changes the word. */
	*seq = atomic_load(&b->nap);
	atomic_fetch_add(&b->sleepers, 1);
	atomic_fetch_add(&b->nappers, 1);
	/* After the count (seq_cst): against bell_watch's,
	 * bell__polled_outside's and bell__kernel_add's (or _forever's) change
	 * then bell__unnap. */
	if (atomic_load(&b->watched) || !atomic_load(&b->nopoll) ||
	    atomic_load(&b->nkernel) > 0) {
		bell__nap_end(b, q, false);
		return -1;
	}
	/* Take `napped` (a ring that woke a napper that has not come back
	 * yet), then look (NAP).  Never `set`: the doorbell is not ours. */
	atomic_store(&b->napped, 0);
	if (!rq_empty(q)) {
		bell__nap_end(b, q, false);
		return 0;
	}
	return 1;
}

/* sys_futex_nap's results. */
static int bell__nap(struct bell *b, uint32_t seq, int64_t until_ns)
{
	return sys_futex_nap(&b->nap, seq, until_ns);
}

static void bell__nap_end(struct bell *b, struct readyq *q, bool pass)
{
	/* Uncounted first, then `napped` given back, then (the caller's wait,
	 * or below) a look (NAP): a ring that saw us counted exchanged
	 * `napped` before this store. */
	atomic_fetch_sub(&b->sleepers, 1);
	atomic_fetch_sub(&b->nappers, 1);
	atomic_store(&b->napped, 0);
	/* Leaving without collecting (a signal, a cancellation): a ring that
	 * woke nobody else may have been meant for us; pass it on to whoever
	 * still sleeps (seq_cst: a sleeper counts itself, then looks). */
	if (pass && !rq_empty(q) && atomic_load(&b->sleepers) > 0)
		bell__kick(b);
}

/* nkernel's bias for bell__kernel_forever: a wait always looks at the
 * kernel epoll. */
#define BELL__FOREVER (1 << 24)

void bell__kernel_add(struct bell *b)
{
	/* seq_cst RMW, then bell__unnap's load of nappers: against a napper's
	 * count then look at nkernel (bell__nap_begin, NAP). */
	atomic_fetch_add(&b->nkernel, 1);
	bell__unnap(b);
}

void bell__kernel_del(struct bell *b)
{
	atomic_fetch_sub(&b->nkernel, 1);
}

void bell__kernel_stale(struct bell *b)
{
	/* Counted again before the record's uncount (bell__kernel_del): no
	 * wait sees nkernel drop in between. */
	atomic_fetch_add(&b->nkernel, 1);
	atomic_fetch_add(&b->ksettle, 1);
}

void bell__kernel_forever(struct bell *b)
{
	if (atomic_load_explicit(&b->nkernel, memory_order_relaxed) <
	    BELL__FOREVER / 2)
		atomic_fetch_add(&b->nkernel, BELL__FOREVER);
	/* The naps end (NAP). */
	bell__unnap(b);
}

int bell__kernel_look_begin(struct bell *b)
{
	return atomic_load(&b->ksettle);
}

void bell__kernel_looked(struct bell *b, int stale)
{
	/* The call scanned the kernel's ready list after those MODs: their
	 * records are off it (STALE in krec.c). */
	if (stale) {
		atomic_fetch_sub(&b->ksettle, stale);
		atomic_fetch_sub(&b->nkernel, stale);
	}
}

void bell__unnap(struct bell *b)
{
	/* seq_cst load after the caller's RMW (NAP). */
	if (atomic_load(&b->nappers) > 0) {
		atomic_fetch_add(&b->nap, 1);
		sys_futex_wake(&b->nap, INT_MAX);
	}
}

/* DOZE: ring for an urgent item, or for the event that makes enough: the
 * doorbell unless it is rung (its event then pending, or taken by a sleeper
 * that harvests), never a napper's futex (the dozer sleeps in the kernel
 * epoll, or polls the doorbell). */
void bell__dozer_event(struct bell *b, uint32_t ev, bool queued)
{
	bool end = (ev & EPOLLURGENT) ||
		   (queued && atomic_load(&b->want) > 0 &&
		    atomic_fetch_sub(&b->want, 1) == 1);

	/* A watched instance's signal rings its level-triggered doorbell
	 * next (bell__kick_edge), which wakes the dozer too; a second write
	 * could land after the dozer took the event and the doorbell, and
	 * leave the instance ready with nothing in it for its holders.
	 * (Relaxed: bell__kick_edge's later load of `watched` sees it too.) */
	if (end && !atomic_load_explicit(&b->watched, memory_order_relaxed))
		bell__ring_idle(b);
}

void bell__clear(struct bell *b, struct readyq *q)
{
	if (!atomic_load(&b->set))
		return;
	bell__take(b, false);
	if (!rq_empty(q))
		bell__kick(b);
}

void bell__unstale(struct bell *b, struct readyq *q)
{
	if (!atomic_load(&b->set) || atomic_load(&b->dozers))
		return;
	bell__take(b, false);
	/* seq_cst: the take's store of set, then the sources' loads (item_poll
	 * in rq_any_ready); pairs with a signal's change of its source then
	 * its load of set (bell__kick_slow): an event before the take is seen
	 * ready here, one after it rings (models/unstale.pml). */
	atomic_thread_fence(memory_order_seq_cst);
	if (rq_any_ready(q))
		bell__kick(b);
}

void bell__retake(struct bell *b, struct readyq *q)
{
	bell__take(b, true);
	if (!rq_empty(q))
		bell__kick(b);
}

bool bell__prune(struct bell *b, struct readyq *q)
{
	if (!rq_prune(q))
		return false;
	bell__kick(b);
	return true;
}

void bell__mirror(struct bell *b, struct readyq *q)
{
	if (!atomic_load_explicit(&b->watched, memory_order_relaxed))
		return;
	if (!bell__prune(b, q))
		bell__clear(b, q);
}

/* Count the caller as a sleeper, then re-check the queue: false (not
 * counted) if items are queued, else the caller may sleep in the kernel
 * epoll, then bell__sleep_end (DOORBELL). */
static bool bell__sleep_begin(struct bell *b, struct readyq *q)
{
	/* seq_cst RMW then the queue's look: against the signaler's enqueue
	 * then load of `set` (DOORBELL). */
	atomic_fetch_add(&b->sleepers, 1);
	if (!rq_empty(q)) {
		atomic_fetch_sub(&b->sleepers, 1);
		return false;
	}
	return true;
}

static void bell__sleep_end(struct bell *b)
{
	atomic_fetch_sub(&b->sleepers, 1);
}

/* A napper or a sleeper cancelled in its sleep is not one any more. */
struct bell__sleeper {
	struct bell *b;
	struct readyq *q;
};

static void bell__nap_cancelled(void *arg)
{
	struct bell__sleeper *s = arg;

	bell__nap_end(s->b, s->q, true);
}

static void bell__unsleep(void *arg)
{
	bell__sleep_end(arg);
}

/* The nap: as bell_sleep's answer, or -1 (it must sleep in the kernel
 * epoll after all). */
static int bell__nap_sleep(struct bell *b, struct readyq *q, int64_t until_ns,
			   int *r)
{
	struct bell__sleeper s = { b, q };
	uint32_t seq;
	int k = bell__nap_begin(b, q, &seq);

	if (k <= 0)
		return k < 0 ? -1 : BELL_AWAKE;
	pthread_cleanup_push(bell__nap_cancelled, &s);
	k = bell__nap(b, seq, until_ns);
	pthread_cleanup_pop(0);
	/* EINTR: the wait returns without collecting. */
	bell__nap_end(b, q, k == -EINTR);
	*r = k == -EINTR ? -EINTR : 0;
	return BELL_NAPPED;
}

enum bell_slept bell_sleep(struct bell *b, struct readyq *q, bool sigmask,
			   int64_t until_ns, int (*kwait)(void *), void *arg,
			   int *r)
{
	if (bell__may_nap(b, sigmask)) {
		int k = bell__nap_sleep(b, q, until_ns, r);

		if (k >= 0)
			return (enum bell_slept)k;
	}
	if (!bell__sleep_begin(b, q))
		return BELL_AWAKE;
	pthread_cleanup_push(bell__unsleep, b);
	*r = kwait(arg);
	pthread_cleanup_pop(1);
	return BELL_SLEPT;
}

static void bell__doze_begin(struct bell *b, int want, bool blind)
{
	/* seq_cst, before the queue is re-checked: pairs with the signal
	 * path's load of dozers after its enqueue (bell__dozer_event, and
	 * bell__kick_slow's hold). */
	atomic_fetch_add(&b->dozers, 1);
	atomic_store(&b->want, want);
	atomic_fetch_add(&b->sleepers, 1);
	/* An event pending behind set == 1 wakes the sleep at once (or,
	 * blind, is taken: the caller's re-check finds its item). */
	if (blind)
		bell__take(b, true);
}

static void bell__doze_end(struct bell *b, struct readyq *q)
{
	atomic_fetch_sub(&b->sleepers, 1);
	atomic_store(&b->want, 0);
	/* The hold ends (seq_cst), then the look: a kick held after its
	 * enqueue saw the count before this, so the look sees its item.
	 * Items queued meanwhile are the dozer's to collect, unless someone
	 * else sleeps (seq_cst: a thread that starts sleeping counts itself,
	 * then looks at the queue).  `set` is left as the rings made it
	 * (DOZE). */
	atomic_fetch_sub(&b->dozers, 1);
	if (!rq_empty(q) && atomic_load(&b->sleepers) > 0)
		bell__kick(b);
}

struct bell__dozer {
	struct bell *b;
	struct readyq *q;
};

/* The doze's end, or its cleanup when the wait is cancelled in it. */
static void bell__undoze(void *arg)
{
	struct bell__dozer *d = arg;

	bell__doze_end(d->b, d->q);
}

int bell_doze(struct bell *b, struct readyq *q, int want, bool blind,
	      int (*doze)(void *arg, int dbfd), void *arg)
{
	struct bell__dozer d = { b, q };
	int r = 0;

	bell__doze_begin(b, want, blind);
	pthread_cleanup_push(bell__undoze, &d);
	/* The re-check after counting ourselves (DOZE). */
	if (rq_empty(q))
		r = doze(arg, b->fd);
	pthread_cleanup_pop(1);
	return r;
}

void bell__settle(struct bell *b, bool slept)
{
	/* After a blocking wait that slept, when no other thread sleeps
	 * here, a ring would only make this thread's next wait return at
	 * once (a write and an epoll_wait per event, in every ping-pong).
	 * (seq_cst: a thread that starts sleeping counts itself, then looks
	 * at the queue.)  NOPOLL: there is no outside poller to show them to
	 * either, only the kernel's list to hold their place in. */
	if ((!slept && (!bell__nopoll(b) || !bell__kernel_none(b))) ||
	    atomic_load(&b->sleepers) > 0 ||
	    atomic_load_explicit(&b->watched, memory_order_relaxed))
		bell__kick(b);
}

void bell__polled_outside(struct bell *b, struct readyq *q)
{
	if (!atomic_load(&b->nopoll))
		return;
	/* LAZY: whatever it holds or is held by must stay exact from now on,
	 * for good (counted before the caller's look: port__looked). */
	bell_exact(1);
	/* UNNOPOLL: the store, then the nappers (they must sleep where the
	 * doorbell wakes them), then the queue: a signal that loaded nopoll
	 * before the store skipped its ring, after queueing its item, so the
	 * look sees the item and rings for the new poller. */
	atomic_store(&b->nopoll, false);
	bell__unnap(b);
	if (!rq_empty(q))
		bell__kick(b);
}

/* Instances with watched > 0, process-wide. */
static _Atomic int bell__nwatched;
_Atomic int bell__nedge;
_Atomic int bell__nexact;

bool bell_any_watched(void)
{
	return atomic_load_explicit(&bell__nwatched, memory_order_relaxed) > 0;
}

bool bell_any_exact(void)
{
	/* seq_cst, after the caller's change of its source: against
	 * krec_nest_exact's count then look (LAZY). */
	return (atomic_load(&bell__nedge) > 0 ||
		atomic_load(&bell__nexact) > 0) &&
	       bell_any_watched();
}

/* bell_watch, wlock held; prune: a new watch drops the queue's items that
 * are not ready (as the kernel's ADD polls the epoll it registers: a
 * holder's is made), else only looks (a kernel epoll's hold, whose call
 * may yet be refused: bell__hold_end prunes once it is made). */
static void bell__watch(struct bell *b, int epfd, uint64_t data,
			struct readyq *q, int delta, bool edge, bool prune)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = data };
	int w;

	/* An edge-triggered holder is counted in bell__nedge before
	 * `watched` and uncounted after it: a signal that sees it watched
	 * rings for it (WATCHED). */
	if (edge && delta > 0)
		bell__watch_edge(1);
	w = atomic_fetch_add(&b->watched, delta) + delta;
	if (edge && delta < 0)
		bell__watch_edge(-1);
	/* A watched instance's sleepers must be in the kernel epoll, where
	 * the doorbell wakes them (NAP). */
	if (delta > 0)
		bell__unnap(b);
	if ((delta > 0 && w == 1) || w == 0)
		atomic_fetch_add(&bell__nwatched, w ? 1 : -1);
	if (((delta > 0 && w == 1) || w == 0) && epfd >= 0) {
		ev.events |= w ? 0 : EPOLLET;
		/* seq_cst store of lt before the take: against bell_took's
		 * store of `set` then load of lt (WATCHED). */
		if (sys_epoll_ctl(epfd, EPOLL_CTL_MOD, b->fd, &ev) == 0)
			atomic_store(&b->lt, w != 0);
		if (w) {
			/* An edge-triggered doorbell keeps counting after its
			 * event was taken: start level-triggered from zero,
			 * rung again only if something is ready. */
			bell__take(b, true);
			if (prune ? rq_prune(q) : !rq_empty(q))
				bell__kick(b);
		}
	}
}

void bell_watch(struct bell *b, int epfd, uint64_t data, struct readyq *q,
		int delta, bool edge)
{
	if (!delta) { /* only the holder's mode changes: no wlock */
		bell__watch_edge(edge ? 1 : -1);
		return;
	}
	lock_take(&b->wlock);
	bell__watch(b, epfd, data, q, delta, edge, true);
	lock_drop(&b->wlock);
}

void bell__hold_begin(struct bell *b, int epfd, uint64_t data,
		     struct readyq *q)
{
	/* Counted before the kernel's call, as a holder's registration is
	 * (WATCHED): once, whatever the number of such holds. */
	lock_take(&b->wlock);
	if (b->xholds++ == 0 && !b->xheld)
		bell__watch(b, epfd, data, q, 1, true, false);
	lock_drop(&b->wlock);
}

void bell__hold_end(struct bell *b, int epfd, uint64_t data, struct readyq *q,
		   bool made)
{
	/* Made: for good, as its DEL or the close of the kernel epoll may
	 * not be seen, until the release; and the kernel's poll of the
	 * instance dropped what is not ready from its list: so do we
	 * (bell__mirror: prune, or take the doorbell), which also ends a
	 * ring bell__hold_begin made for items that were not.  Refused (the
	 * epoll fd is not an epoll, the instance is there already...): no
	 * holder after all, unless another call made one, and no prune (the
	 * kernel did not poll; a prune would reorder the queue). */
	lock_take(&b->wlock);
	if (made)
		b->xheld = true;
	if (--b->xholds == 0 && !b->xheld)
		bell__watch(b, epfd, data, q, -1, true, false);
	else if (made)
		bell__mirror(b, q);
	lock_drop(&b->wlock);
}

void bell__unhold(struct bell *b)
{
	/* Idempotent (a forked child may finish a release: FORK in obj.c);
	 * no ctl is in flight (each holds a reference).  No mode switch: the
	 * kernel epoll is being closed. */
	lock_take(&b->wlock);
	if (b->xheld) {
		b->xheld = false;
		bell__watch(b, -1, 0, NULL, -1, true, false);
	}
	lock_drop(&b->wlock);
}
