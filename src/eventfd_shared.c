/* SPDX-License-Identifier: MIT */
/*
 * eventfd_shared.c - SHARED: a ueventfd's counter shared across fork.
 *
 * SHARED (issue 21; models/xmirror.pml).  A fork shares the ueventfds alive
 * at that moment instead of demoting them (uefd_share): the counter's block
 * is MAP_SHARED memory (shm.h), the kernel fd is the same file in both
 * processes, and every process that holds the ueventfd keeps reading and
 * writing the counter without a system call while its class does not change.
 * The block (SHM_BLOCK, 256 bytes) is the ueventfd's from its creation, so a
 * fork moves nothing: every call pays one load more (uefd->sh), and a
 * process that never forks nothing else.  A fork pays, once per ueventfd
 * alive then and not shared yet, the move of its watchers to kernel
 * registrations and a lock; a shared one costs nothing more at the next
 * fork (the child inherits the mapping).  Proposal 004's experiment, a
 * forked publisher and subscriber on one eventfd, lost every gain when the
 * fork demoted it (before issue 21; UEPOLL_FORK_DEMOTE_EVENTFDS=1 still
 * does: FORK in obj.c).
 * Any process may die at any instruction (SIGKILL), so the lock-free MIRROR,
 * whose kunits would stay wrong for ever after a death between a CAS of
 * kunits and its system call, is replaced by a lock that a survivor takes
 * over, and an order of steps that leaves the kernel fd at worst too ready:
 *  - an operation that keeps the counter's class (a write to a non-zero
 *    counter that does not fill it, a semaphore read that leaves it
 *    non-zero and not full) is one CAS, no lock, no system call;
 *  - one that changes the class takes `xm` and, in this order: makes the
 *    kernel fd readable first if the counter is about to become non-zero
 *    (pre-step; a semaphore counter leaving full lowers it from full
 *    first), CASes the counter, then settles the kernel fd on the
 *    counter's class (drains it after the counter reached 0, fills it
 *    after it became full), keeping `kunits` equal to its value;
 *  - the holder's death, zombie or not, releases xm (the kernel's robust
 *    futex list: ROBUST, at uefd__xrepair); the next one that takes it
 *    reads the kernel fd's true value (fdinfo) into kunits and settles
 *    (before issue 32 the lock was a word of thread ids, and a dead holder
 *    was asked with kill(tid, 0), which a zombie answers: its parent,
 *    about to waitpid, hung);
 *  - a stopped holder is not waited for (BYPASS, at uefd__xcas_bypass);
 *  - under UEVENTFD_NOPOLL, until some process ends it, the lock is taken
 *    but the kernel fd left alone (NOPOLL, at uefd__xnopoll): what follows
 *    holds from the end on.
 * So at every instant a non-zero counter has a readable kernel fd, whoever
 * died where: a poller, a kernel epoll or a blocked reader of any process
 * never misses a write.  (A non-blocking read that empties a full counter
 * has the kernel fd full for a moment over a zero counter: xmirror.pml.)
 * A blocked read sleeps on the shared futex word `rwake` (counted in
 * `xsleepers`), which a write that took the counter from 0 bumps and wakes
 * after its CAS: never in read(2) on the kernel fd, which would take units
 * behind the holder's back, nor in ppoll(2) on it, which the pre-step would
 * wake before the CAS (on one CPU the reader then preempts the writer and
 * yields back: 3 switches a handoff instead of 1, 3.7x the kernel's round
 * trip; on the futex, 1.6x).  It sleeps at most a
 * second (a writer killed or stopped between its CAS and its wake wakes
 * nobody).  Watchers are kernel registrations of the fd in
 * every process (uefd_share moves the userspace ones there; a later ADD goes
 * there too: port.c), whose edge-triggered ones see one edge per class
 * change, as outside pollers always did.  The coalescing setting and `held`
 * are in the block: ueventfd_coalesce in one process is the setting of
 * all, as a file's would be.  A coalesced write defers its
 * pre-step to the timer of its own process (COALESCE); a normal exit
 * delivers what is deferred (obj.c), a killed writer's deferred wakeup waits
 * for the next operation.
 * A signal handler whose own thread holds xm (or any lock of ours) bypasses
 * it as it would a stopped holder: its thread is stopped until it returns.
 * xm's one cost in signal handlers: glibc's robust-list updates are not
 * async-signal-safe, so a handler that writes a shared ueventfd while its
 * thread is inside the program's own robust mutex operations may leave
 * that thread's robust list inconsistent, which matters only if the thread
 * then dies holding the program's mutex.  A normal exit delivers every
 * held wakeup first (obj__exit; t_fork_exit_held, with 200).
 *
 * LOCKING: a change of the counter's class, and kunits, are under xm (a
 * robust, process-shared mutex in the block), a leaf taken only with none
 * of our locks held (at depth 0: a handler never enters it; a caller inside
 * our locks bypasses it, BYPASS) and never held across a sleep.
 *
 * What a read or write does differently here is uefd__shared_steps, at the
 * end of this file (STEPS in eventfd_impl.h); the MIRROR protocol it
 * replaces, and DEMOTE, are in eventfd.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "eventfd_impl.h"
#include "item.h"
#include "lock.h"
#include "port.h"
#include "sys.h"

/* xm's attributes (SHARED): process-shared, since the block is; robust,
 * so that the kernel releases it when its holder dies (ROBUST); error
 * checking, so that a relock by its holder is an error, never a hang. */
static pthread_mutexattr_t uefd__xattr;

__attribute__((constructor)) static void uefd__setup(void)
{
	pthread_mutexattr_init(&uefd__xattr);
	pthread_mutexattr_setpshared(&uefd__xattr, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&uefd__xattr, PTHREAD_MUTEX_ROBUST);
	pthread_mutexattr_settype(&uefd__xattr, PTHREAD_MUTEX_ERRORCHECK);
}

/* At creation: xm, with the block (a fork may share it at any time). */
void uefd__xinit(struct uefd *e)
{
	pthread_mutex_init(&e->sh->xm, &uefd__xattr);
}

/* The kernel fd's true value (the holder's takeover), from fdinfo; if that
 * cannot be read, a guess from its readiness that the settle corrects. */
static uint64_t uefd__kernel_value(struct uefd *e)
{
	uint64_t v;

	if (sys_eventfd_value(e->obj.kfd, &v) == 0)
		return v;
	v = sys_poll_now(e->obj.kfd, POLLIN | POLLOUT);
	return !(v & POLLIN) ? 0 : !(v & POLLOUT) ? UEFD_MAX : 1;
}

/* BYPASS: a change of class was made without xm since the last look
 * (recheck: stored before the bypass's first step and after its last): its
 * units are not in kunits, so the kernel fd's value is read again.  xm
 * held. */
static void uefd__xfresh(struct uefd *e)
{
	if (unlikely(atomic_load_explicit(&e->sh->recheck,
					  memory_order_relaxed)) &&
	    atomic_exchange(&e->sh->recheck, 0))
		atomic_store(&e->sh->kunits, uefd__kernel_value(e));
}

/*
 * NOPOLL (UEVENTFD_NOPOLL; the preload's default): nothing outside uepoll's
 * calls polls the kernel fd, and no kernel epoll in any process holds it (a
 * shared ueventfd's watchers are kernel registrations: uefd_share keeps
 * NOPOLL only when it had none, and a later registration ends it first,
 * port.c).  The flag is in the block, so it is every process's, and it
 * ends once, for good (uefd_watched_outside: a poll, a kernel epoll's ctl,
 * a registration, a demotion), in whichever process.  Until then a change
 * of class is still made under xm but touches the kernel fd neither before
 * nor after its CAS (no pre-step, no settle): the handoff of two processes
 * on blocked reads costs the futex pair and no mirror call (issue 35 item
 * 4, docs/benchmarks.md).  Its end: the store, then a settle under xm
 * (uefd__xexact).  A holder asks after its lock's RMW (the fence: Dekker
 * with the end's store then its look at xm): one that asked before the
 * store still holds xm, and the end waits for it (or repairs its death:
 * ROBUST), then settles on what it did; one that asks after sees the end,
 * and makes its pre-step.  A holder stopped there is bypassed: the end
 * makes the fd readable over a non-zero counter itself, and the holder's
 * own settle, when it runs again, sees the end (asked at each round) and
 * reads the fd's true value (recheck).  models/xnopoll.pml.
 */
static bool uefd__xnopoll(struct uefd *e)
{
	atomic_thread_fence(memory_order_seq_cst);
	return atomic_load(&e->sh->nopoll);
}

/* Bring the kernel fd to the counter's class.  defer: do not make it
 * readable (a coalesced write: its timer will).  xm held.  Whether it
 * wrote to the kernel fd (which woke its pollers). */
static bool uefd__settle(struct uefd *e, bool defer)
{
	bool wrote = false;

	for (;;) {
		uint64_t c, k, v;
		int want, have;

		/* NOPOLL: nobody looks at the kernel fd (uefd__xnopoll).
		 * Asked at each round: its end (uefd__xexact) settles under
		 * xm after its store, so a settle that still sees it set is
		 * one its end's settle comes after.  (No fence: what a stale
		 * look skips, the end's own settle makes, under xm, after this
		 * holder's unlock; the Dekker that needs one is the holder's
		 * decision to skip its pre-step, uefd__xnopoll in xcas.) */
		if (atomic_load(&e->sh->nopoll))
			return wrote;
		/* Each round: a bypass may come while this one works; a
		 * drain decided before it may take its unit, and the next
		 * round, on the true value, writes it again (BYPASS). */
		uefd__xfresh(e);
		c = atomic_load(&e->sh->count);
		k = atomic_load(&e->sh->kunits);
		want = uefd__class(c);
		have = uefd__class(k);

		if (c == UEFD_GONE || want == have)
			return wrote;
		if (want > have) {
			uint64_t to = want == 2 ? UEFD_MAX : 1;

			if (defer && have == 0)
				return wrote;
			if (want == 2) {
				/* FILL (BYPASS): never past the maximum (a
				 * write(2) past it blocks), whatever bypasses
				 * raise meanwhile (uefd__xraise: a unit each,
				 * on a look that found the fd not readable):
				 * none in flight, none begun since before the
				 * value is read.  In two steps: the first
				 * leaves room for UEFD_FILL_MARGIN + 1 raises
				 * that began after that check and looked
				 * before this write; the rest only if still
				 * none began (a raise that begins after the
				 * first step finds the fd readable and writes
				 * nothing).  Else the fill is the bypass's
				 * settle's (too writable meanwhile).  seq_cst
				 * loads of braise: against its RMW before the
				 * raise's look. */
				uint64_t b = atomic_load(&e->sh->braise);
				uint64_t part = UEFD_MAX - 1 - UEFD_FILL_MARGIN;

				if (b & UEFD_BRAISE_NOW)
					return wrote;
				k = uefd__kernel_value(e);
				if (atomic_load(&e->sh->braise) != b)
					continue;
				if (k < part) {
					sys_eventfd_add(e->obj.kfd, part - k);
					k = part;
					wrote = true;
				}
				atomic_store(&e->sh->kunits, k);
				if (atomic_load(&e->sh->braise) != b)
					return wrote;
				/* None began since the value was read: the
				 * fd holds k exactly. */
				sys_eventfd_add(e->obj.kfd, UEFD_MAX - k);
				atomic_store(&e->sh->kunits, UEFD_MAX);
				wrote = true;
				continue;
			}
			/* The write first: a death in between leaves kunits
			 * low, which a takeover reads again. */
			sys_eventfd_add(e->obj.kfd, to - k);
			atomic_store(&e->sh->kunits, to);
			wrote = true;
			continue;
		}
		if (sys_eventfd_take(e->obj.kfd, &v) < 0) {
			/* kunits was wrong (a takeover's guess): it is 0. */
			atomic_store(&e->sh->kunits, 0);
			continue;
		}
		atomic_store(&e->sh->kunits, k >= v ? k - v : 0);
	}
}

enum { UEFD_XLOCKED, UEFD_XBYPASS };

/* SHARED HOLD, xm held: move `moving` into the counter (what does not
 * fit goes back to `held`), then clear it.  The CAS and the clear are
 * adjacent: a holder that dies between them has the move done again by
 * its taker (a value twice), one that dies between the exchange of `held`
 * and the store of `moving` loses it: two windows of one instruction,
 * where the exchange-then-add of one process had a system call between. */
static uint64_t uefd__xmove(struct uefd *e, uint64_t *from)
{
	uint64_t m = atomic_load(&e->sh->moving), c, take = 0;

	c = atomic_load(&e->sh->count);
	while (m && c != UEFD_GONE) {
		take = UEFD_MAX - c < m ? UEFD_MAX - c : m;
		/* Pre-step: readable before the counter leaves 0. */
		if (c == 0 && take && atomic_load(&e->sh->kunits) == 0) {
			sys_eventfd_add(e->obj.kfd, 1);
			atomic_store(&e->sh->kunits, 1);
		}
		/* The clear right after the CAS: the window in which a death
		 * has the batch added twice is these two instructions. */
		if (atomic_compare_exchange_strong(&e->sh->count, &c,
						   c + take)) {
			atomic_store(&e->sh->moving, 0);
			break;
		}
	}
	if (m && c != UEFD_GONE && take < m)
		atomic_fetch_add(&e->sh->held, m - take);
	if (m && c == UEFD_GONE) /* demoted: the kernel fd is the counter */
		(void)sys_write(e->obj.kfd, &m, sizeof(m));
	if (m && c == UEFD_GONE)
		atomic_store(&e->sh->moving, 0);
	*from = c;
	return take;
}

#ifndef FUTEX_TID_MASK
#define FUTEX_TID_MASK 0x3fffffff
#endif

/* The holder of xm, 0 if none: a robust futex's word is its holder's thread
 * id (the kernel's robust-futex ABI, which glibc's robust mutex keeps). */
static uint32_t uefd__xowner(struct uefd *e)
{
	return (uint32_t)__atomic_load_n(&e->sh->xm.__data.__lock,
					 __ATOMIC_SEQ_CST) &
	       FUTEX_TID_MASK;
}

/* Is xm held, or was it released by its holder's death and not yet
 * repaired (FUTEX_OWNER_DIED)?  A settle is owed then (ROBUST). */
static bool uefd__xbusy(struct uefd *e)
{
	return __atomic_load_n(&e->sh->xm.__data.__lock, __ATOMIC_SEQ_CST) != 0;
}

/* Until xm's holder is no longer o (true): a short spin (the holder runs on
 * another CPU), then a few yields (it was preempted on this one, often by
 * the very reader its pre-step woke). */
static bool uefd__xspin(struct uefd *e, uint32_t o)
{
	for (int i = 0; i < 64 + 4; i++) {
		if (uefd__xowner(e) != o)
			return true;
		if (i >= 64)
			sys_yield();
#if defined(__x86_64__) || defined(__i386__)
		else
			__builtin_ia32_pause();
#endif
	}
	return false;
}

/* ROBUST: xm's holder died (the kernel released the lock at its exit,
 * zombie or not, and this locker got EOWNERDEAD): it may have left the
 * kernel fd between two steps, kunits wrong and a held batch half-moved.
 * Repair, then mark the lock consistent. */
static void uefd__xrepair(struct uefd *e)
{
	uint64_t from = 1;
	bool moved;

	atomic_store(&e->sh->kunits, uefd__kernel_value(e));
	moved = uefd__xmove(e, &from) && from == 0;
	if (uefd__settle(e, false) || moved)
		uefd__xwake(e); /* what the dead one owed */
	sys_xm_consistent(&e->sh->xm);
}

/* BYPASS: how long a locker waits for a holder that is not seen stopped
 * before it bypasses it anyway: a holder is between two system calls, so a
 * longer hold means it cannot run (a signal handler of its thread that
 * blocks, a stop that /proc cannot show: another PID namespace, no /proc),
 * or is preempted for long; bypassing a holder that runs is correct too. */
#define UEFD_XWAIT_MS 2
#define UEFD_XWAITS 2

/*
 * Take xm (UEFD_XLOCKED), or answer UEFD_XBYPASS: this thread is inside one
 * of our locks (a signal handler, xm's own holder included: it must not
 * call into the mutex), or, with `bypass`, xm's holder is stopped (asked in
 * /proc once a short spin has passed, then every UEFD_XWAIT_MS) or has not
 * let go within UEFD_XWAITS such waits (BYPASS, below).  A dead holder was
 * released by the kernel (ROBUST).  Without `bypass` (a demotion, a share)
 * the holder is waited for, however long.
 */
static int uefd__xlock(struct uefd *e, bool bypass)
{
	pthread_mutex_t *m = &e->sh->xm;
	bool spun = false;
	int r, waits = 0;
	uint32_t o;

	if (lock_held_here())
		return UEFD_XBYPASS;
	lock_leaf_enter();
	for (;;) {
		r = sys_xm_trylock(m);
		if (r == EBUSY) {
			o = uefd__xowner(e);
			if (!spun && o) {
				spun = true;
				if (uefd__xspin(e, o))
					continue;
			}
			if (bypass && (waits >= UEFD_XWAITS ||
				       (o && sys_thread_stopped(o)))) {
				lock_leaf_leave();
				return UEFD_XBYPASS;
			}
			r = sys_xm_lock_ms(m, UEFD_XWAIT_MS);
			if (r == ETIMEDOUT) {
				waits++;
				continue;
			}
		}
		if (r == EOWNERDEAD) {
			uefd__xrepair(e);
			r = 0;
		}
		if (r == 0)
			return UEFD_XLOCKED;
		/* (ENOTRECOVERABLE cannot be: every EOWNERDEAD is repaired
		 * and made consistent.) */
		lock_leaf_leave();
		return UEFD_XBYPASS;
	}
}

static void uefd__xunlock(struct uefd *e)
{
	sys_xm_unlock(&e->sh->xm);
	lock_leaf_leave();
	/* A change made without the lock while this thread held it (BYPASS):
	 * settle again, on the kernel fd's true value. */
	if (unlikely(atomic_load_explicit(&e->sh->recheck,
					  memory_order_relaxed)) &&
	    uefd__xlock(e, true) == UEFD_XLOCKED) {
		uefd__settle(e, false);
		uefd__xunlock(e);
	}
}

/* (Only a shared ueventfd's timer owes other processes anything: the
 * question is the mode itself, asked once, of a process that is exiting.) */
void uefd_flush_exit(struct uefd *e)
{
	if (uefd__shared(e)) {
		uefd__flush(e);
		/* A run the thread had begun: the exit would stop it half-way
		 * (its settle not made: a non-zero counter over an unreadable
		 * kernel fd, for the other processes). */
		timer_wait_idle(&e->co_timer);
	}
}

bool uefd_shared(struct uefd *e)
{
	return uefd__shared(e);
}

bool uefd_kwatched(struct uefd *e)
{
	uint32_t k;

	while ((k = atomic_load(&e->sh->kwatch)) == 1)
		sys_futex_xwait(&e->sh->kwatch, 1, -1);
	return k == 2;
}

static void uefd__xowe(struct uefd *e);

/*
 * BYPASS: a change of class made without xm, whose holder cannot be waited
 * for: it is stopped (SIGSTOP, job control, a debugger), or it is this very
 * thread, which a signal handler interrupted (the handler runs with the
 * depth raised: lock_held_here).  The kernel never makes one process's
 * eventfd call wait for another, so neither may this.  What the holder may
 * do when it runs again is a step it decided before: a raise (harmless: the
 * kernel fd too ready), or a drain of the kernel fd decided on a counter
 * that was 0, which may take a unit this bypass put there.  So:
 *  - `recheck` is stored first and last: the holder, and every later
 *    settle under xm, read the kernel fd's true value before they trust
 *    kunits (uefd__xfresh), and the holder looks at it before its drain;
 *  - a counter leaving 0 makes the kernel fd readable before the CAS (if a
 *    look finds it not readable), and looks again after the CAS: a drain
 *    that came between took the unit, so it writes one more;
 *  - a semaphore counter leaving full takes a unit first (if the kernel fd
 *    is full), so that it is writable at once;
 *  - a counter that reached 0 has the kernel fd drained after the CAS
 *    (taken until EAGAIN: the true value), then looked at again: a bypass
 *    that made it non-zero meanwhile may have had its unit taken, and it
 *    is written again (if the fd is not readable);
 *  - a counter that became full is left to the next settle under xm (the
 *    fd writable too long meanwhile).
 * What is left, in models/xmirror.pml: a process killed between such a
 * drain and the raise after it, or a stopped holder continued and killed
 * there, leaves the fd not readable over a non-zero counter until the next
 * operation's settle (the next lock repairs a dead holder's: ROBUST).
 * models/xbypass.pml adds a third process stopped in its write, so that two
 * bypasses race.  A stopped holder is asked about by its thread id: a new,
 * stopped thread given the same id in between would be taken for it
 * (harmless: bypassing a running holder is correct too; Linux hands out
 * ids in a cycle, so it needs pid_max threads made in between).
 */
/* BYPASS: make the kernel fd readable if it is not.  Counted in braise
 * from before the look to after the write (FILL in uefd__settle: a holder
 * fills only while none is counted and none began since it read the
 * value); `recheck` stored before the uncount, so that a fill this left
 * undone is owed to the next settle. */
static bool uefd__xraise(struct uefd *e)
{
	bool w = false;

	/* seq_cst RMW before the look: against the holder's loads. */
	atomic_fetch_add(&e->sh->braise, UEFD_BRAISE_ONE);
	if (!(sys_poll_now(e->obj.kfd, POLLIN) & POLLIN)) {
		sys_eventfd_add(e->obj.kfd, 1);
		w = true;
	}
	atomic_store(&e->sh->recheck, 1);
	atomic_fetch_sub(&e->sh->braise, 1);
	return w;
}

/* BYPASS: a semaphore counter that left its maximum makes the kernel fd
 * writable if it is full. */
static void uefd__xunfill(struct uefd *e)
{
	uint64_t v;

	if (!(sys_poll_now(e->obj.kfd, POLLOUT) & POLLOUT))
		(void)sys_eventfd_take(e->obj.kfd, &v);
}

static bool uefd__xcas_bypass(struct uefd *e, uint64_t *c, uint64_t n,
			      bool defer, bool *kw)
{
	bool up = *c == 0 && n > 0 && !defer, unfull, ok;
	uint64_t v;

	unfull = uefd__class(*c) == 2 && n < UEFD_MAX && e->semaphore;
	atomic_store(&e->sh->recheck, 1);
	if (up && uefd__xraise(e))
		*kw = true;
	else if (unfull)
		uefd__xunfill(e);
	ok = atomic_compare_exchange_strong(&e->sh->count, c, n);
	if (ok && unfull)
		uefd__xunfill(e); /* (a holder's fill decided before it) */
	if (ok && n == 0) {
		while (sys_eventfd_take(e->obj.kfd, &v) == sizeof(v))
			;
		/* seq_cst, Dekker with a holder's CAS then its look at
		 * recheck (uefd__xfresh): it reads the kernel fd again, or
		 * this look sees its CAS (the drain may have taken the unit
		 * of its pre-step). */
		atomic_store(&e->sh->recheck, 1);
		up = atomic_load(&e->sh->count) != 0;
	}
	/* seq_cst: the look after the CAS (a drain before it took the unit,
	 * one after it sees the counter non-zero and raises again). */
	if (ok && up && uefd__xraise(e))
		*kw = true;
	if (ok && *c == 0 && n > 0 && !defer)
		uefd__xwake(e);
	uefd__xowe(e);
	return ok;
}

/* SHARED: CAS the counter from *c to n, which changes its class; false
 * (with *c the counter now) if it changed meanwhile.  defer: a coalesced
 * write, whose readiness the timer shows.  *kw: set if the kernel fd was
 * written (its pollers woken). */
static bool uefd__xcas(struct uefd *e, uint64_t *c, uint64_t n, bool defer,
		       bool *kw)
{
	uint64_t v;
	bool ok, from0;

	if (uefd__xlock(e, true) == UEFD_XBYPASS)
		return uefd__xcas_bypass(e, c, n, defer, kw);
	if (atomic_load(&e->sh->count) != *c) {
		*c = atomic_load(&e->sh->count);
		uefd__xunlock(e);
		return false;
	}
	uefd__xfresh(e);
	/* Pre-step: the kernel fd more ready first (not under NOPOLL: nobody
	 * looks at it; asked under xm, uefd__xnopoll). */
	if (uefd__xnopoll(e)) {
		/* (no step: its end settles under xm) */
	} else if (*c == 0 && n > 0 && !defer &&
		   atomic_load(&e->sh->kunits) == 0) {
		sys_eventfd_add(e->obj.kfd, 1);
		atomic_store(&e->sh->kunits, 1);
		*kw = true;
	} else if (uefd__class(*c) == 2 && n < UEFD_MAX && e->semaphore &&
		   uefd__class(atomic_load(&e->sh->kunits)) == 2 &&
		   sys_eventfd_take(e->obj.kfd, &v) == sizeof(v)) {
		atomic_fetch_sub(&e->sh->kunits, v);
	}
	from0 = *c == 0;
	ok = atomic_compare_exchange_strong(&e->sh->count, c, n);
	if (uefd__settle(e, defer))
		*kw = true;
	uefd__xunlock(e);
	/* Blocked readers after the CAS (a coalesced write's, at its
	 * delivery: uefd__xsync). */
	if (ok && from0 && n > 0 && !defer)
		uefd__xwake(e);
	return ok;
}

/* xm held: settle the kernel fd on the counter's class and unlock; a
 * settle that made the fd readable delivered a deferred (coalesced)
 * wakeup, so the blocked readers are woken too. */
static void uefd__xsettle_unlock(struct uefd *e)
{
	bool raised = uefd__settle(e, false);
	uint64_t c;

	uefd__xunlock(e);
	c = atomic_load(&e->sh->count);
	if (raised && c && c != UEFD_GONE)
		uefd__xwake(e);
}

/* SHARED sync: settle under the lock if the classes disagree (a deferred
 * wakeup being delivered, over-readiness a holder left) or a holder is at
 * work (which may be dead). */
void uefd__xsync(struct uefd *e)
{
	uint64_t c = atomic_load(&e->sh->count);

	/* NOPOLL: nothing to settle (seq_cst: its end's own sync, which
	 * comes after its store, is uefd__xexact's). */
	if (c == UEFD_GONE || atomic_load(&e->sh->nopoll) ||
	    (uefd__class(c) == uefd__class(atomic_load(&e->sh->kunits)) &&
	     !uefd__xbusy(e) && !atomic_load(&e->sh->recheck)))
		return;
	if (uefd__xlock(e, true) == UEFD_XBYPASS) {
		/* The holder settles after it (BYPASS). */
		uefd__xowe(e);
		return;
	}
	uefd__xsettle_unlock(e);
}

/* NOPOLL's end (uefd_watched_outside, after its store of `nopoll`): the
 * kernel fd exact for every process before the caller's outsider looks.
 * Under xm: a holder that decided under NOPOLL (uefd__xnopoll) is waited
 * for, or its death repaired (ROBUST), so the settle sees its CAS.  One
 * stopped there is bypassed: its CAS may have taken the counter from 0
 * with no pre-step, so the fd is made readable here if the counter is not
 * 0 (uefd__xraise: counted for a FILL, recheck stored), and the holder
 * settles on the true value when it runs (xunlock; t_xproc_nopoll_end).
 * What is left is BYPASS's window: a holder stopped, continued, then
 * killed between its CAS and its settle. */
void uefd__xexact(struct uefd *e)
{
	uint64_t c;

	if (uefd__xlock(e, true) == UEFD_XBYPASS) {
		c = atomic_load(&e->sh->count);
		if (c && c != UEFD_GONE)
			(void)uefd__xraise(e);
		uefd__xowe(e);
		return;
	}
	uefd__xsettle_unlock(e);
}

/* SHARED HOLD: show the held writes under xm, through `moving`
 * (uefd__xmove), so that a shower killed in the middle loses nothing.
 * false: BYPASS (a stopped holder, or a handler inside one of our locks):
 * the plain way then. */
static bool uefd__xshow(struct uefd *e)
{
	uint64_t h, c, take;

	if (uefd__xlock(e, true) == UEFD_XBYPASS)
		return false;
	if (atomic_load_explicit(&e->sh->due, memory_order_relaxed))
		atomic_store_explicit(&e->sh->due, 0, memory_order_relaxed);
	h = atomic_exchange(&e->sh->held, 0);
	atomic_store(&e->sh->moving, h);
	take = uefd__xmove(e, &c);
	(void)uefd__settle(e, false);
	uefd__xunlock(e);
	if (take && c == 0)
		uefd__xwake(e);
	if (take < h && c != UEFD_GONE)
		(void)uefd__arm(e, uefd__delay_ns(e)); /* the rest: next run */
	if (take)
		uefd__wrote(e, c + take, true);
	return true;
}

/* SHARED HOLD: is a held batch overdue by a whole delay (its writer's
 * process died with the timer, or is stopped)? */
static bool uefd__overdue(struct uefd *e)
{
	uint64_t d = atomic_load_explicit(&e->sh->due, memory_order_relaxed);

	if (!atomic_load(&e->sh->held))
		return false;
	if (!d) {
		/* Held with no deadline: its writer died between its add and
		 * its store of `due`, or a show between its clear of `due` and
		 * its exchange.  From now, then. */
		uint64_t z = 0;

		atomic_compare_exchange_strong(&e->sh->due, &z,
					       sys_now_ns() +
						       uefd__delay_ns(e));
		return false;
	}
	return sys_now_ns() > d + uefd__delay_ns(e) + 1000000;
}

/* SHARED: how long a blocked read may sleep (ns).  A writer killed between
 * its CAS and its wake wakes nobody: a second at most; a held batch, until
 * it is overdue. */
int64_t uefd__xsleep_ns(struct uefd *e)
{
	int64_t now, until;
	uint64_t d;

	(void)uefd__overdue(e); /* (gives a held batch a deadline) */
	now = (int64_t)sys_now_ns();
	until = now + 1000000000;
	d = atomic_load(&e->sh->held)
		    ? atomic_load_explicit(&e->sh->due, memory_order_relaxed)
		    : 0;
	if (d && (int64_t)(d + uefd__delay_ns(e) + 2000000) < until)
		until = (int64_t)(d + uefd__delay_ns(e) + 2000000);
	return until > now ? until - now : 0;
}

/* SHARED: a read found the counter empty.  A holder at work may be about
 * to fill it, its kernel fd made readable first (a poller was told so):
 * let it finish before answering "empty"; a held batch overdue (its
 * writer's process died with the timer that would have shown it) is
 * shown. */
static uint64_t uefd__xempty(struct uefd *e)
{
	if (uefd__xbusy(e))
		uefd__xsync(e);
	if (uefd__overdue(e))
		uefd__show(e);
	return atomic_load(&e->sh->count);
}

/* SHARED HOLD: a write was held (it chose HOLD before uefd_share): the
 * batch gets a deadline, for a reader of another process (uefd__overdue). */
static void uefd__xdue(struct uefd *e)
{
	if (!atomic_load_explicit(&e->sh->due, memory_order_relaxed))
		atomic_store_explicit(&e->sh->due,
				      sys_now_ns() + uefd__delay_ns(e),
				      memory_order_relaxed);
}

/* A shared write wrote the kernel fd iff its locked step did (kw): one
 * that keeps the class is one CAS, no system call. */
static bool uefd__xwrote_kfd(uint64_t from, uint64_t to, bool kw)
{
	return kw;
}

/* BYPASS, after the step: a handler inside one of this thread's locks owes
 * the settle to its thread (which runs it at depth 0, xm free or held by
 * another); a caller that bypassed a stopped holder settles if the lock is
 * free by now, else leaves it to that holder's unlock (recheck). */
static void uefd__xowe(struct uefd *e)
{
	int r;

	/* Last: the holder's unlock, or the next settle, sees it after every
	 * step of this bypass. */
	atomic_store(&e->sh->recheck, 1);
	if (lock_held_here()) {
		lock_owe(&e->owed, UEFD_OWE_SYNC, uefd__owed_hold);
		return;
	}
	lock_leaf_enter();
	r = sys_xm_trylock(&e->sh->xm);
	if (r == EOWNERDEAD) {
		uefd__xrepair(e);
		r = 0;
	}
	if (r == 0) {
		(void)uefd__settle(e, false);
		uefd__xunlock(e);
		return;
	}
	lock_leaf_leave();
}

/* SHARED DEMOTE, xm held, the counter taken (UEFD_GONE, its value in
 * `carry`): the kernel fd gets it, and every process learns. */
static void uefd__xdemote_carry(struct uefd *e)
{
	uint64_t c = atomic_load(&e->sh->carry);

	uefd__carry(e, atomic_load(&e->sh->kunits), c);
	atomic_store(&e->sh->kunits, c);
}

static void uefd__xdemote_done(struct uefd *e)
{
	atomic_store_explicit(&e->sh->demote, UEFD_DEMOTED,
			      memory_order_release);
	sys_futex_xwake(&e->sh->demote, INT_MAX);
	atomic_fetch_add(&e->sh->wseq, 1);
	sys_futex_xwake(&e->sh->wseq, INT_MAX);
	/* Blocked readers look again, and find UEFD_GONE. */
	atomic_fetch_add(&e->sh->rwake, 1);
	sys_futex_xwake(&e->sh->rwake, INT_MAX);
}

static void uefd__xdemote_end(struct uefd *e)
{
	uefd__xdemote_carry(e);
	uefd__xdemote_done(e);
}

/* SHARED DEMOTE: one wait for a demotion in state s.  The demoter may be
 * another process, and die: after 10 ms, a waiter that gets xm finds
 * whether its work was left half-done, and finishes it. */
static void uefd__xdemote_wait(struct uefd *e, int s)
{
	if (sys_futex_xwait(&e->sh->demote, (uint32_t)s, 10 * 1000000) ==
		    -ETIMEDOUT &&
	    uefd__xlock(e, false) == UEFD_XLOCKED) {
		if (atomic_load(&e->sh->demote) != UEFD_DEMOTED &&
		    atomic_load(&e->sh->count) == UEFD_GONE)
			uefd__xdemote_end(e); /* the demoter died */
		uefd__xunlock(e);
	}
}

/* SHARED DEMOTE: under xm (a holder's death is repaired: a waiter in
 * uefd_demote_wait finishes a demoter's work from `carry`), the value is
 * stored in `carry` before the counter is taken, so it is never lost. */
static int uefd__xdemote(struct uefd *e)
{
	struct port_carry *carries = NULL;
	struct uobj **ports = NULL;
	uint64_t c, h;
	size_t np;

	lock_take(&e->wq.lock);
	atomic_store_explicit(&e->sh->co_delay_us, 0, memory_order_relaxed);
	lock_drop(&e->wq.lock);
	uefd__flush(e);
	timer_wait_idle(&e->co_timer);
	/* UNPEND's instances, before xm (obj__lock inside). */
	np = obj_ports(&ports);
	if (np && !(carries = calloc(np, sizeof(*carries))))
		np = 0; /* (the carry's edges then stand) */
	/* A stopped holder is waited for: its pending step would land on the
	 * kernel fd after the counter was carried there. */
	if (uefd__xlock(e, false) == UEFD_XBYPASS) {
		/* A handler inside one of this thread's locks: not now. */
		atomic_store(&e->sh->demote, UEFD_LIVE);
		sys_futex_xwake(&e->sh->demote, INT_MAX);
		for (size_t i = 0; i < np; i++)
			uobj_put(ports[i]);
		free(ports);
		free(carries);
		return -EDEADLK;
	}
	c = atomic_load(&e->sh->count);
	do
		atomic_store(&e->sh->carry, c);
	while (!atomic_compare_exchange_weak(&e->sh->count, &c, UEFD_GONE));
	h = atomic_exchange(&e->sh->held, 0);
	atomic_store(&e->sh->carry, c + (h <= UEFD_MAX - c ? h : UEFD_MAX - c));
	/* UEFD_GONE, xm held: no process moves the kernel fd until DEMOTED
	 * (a read or write waits; a step under xm waits, then finds GONE).
	 * So the carry's write is the only edge until then, and the
	 * edge-triggered registrations it queues (in this process's
	 * instances: a forked child's copies hold the parent's kernel epolls)
	 * get their state back (port_carry_begin/end: UNPEND).  Their mtx
	 * under xm: xm is never taken with a lock of ours held (the BYPASS
	 * of uefd__xlock), so no path waits the other way. */
	for (size_t i = 0; i < np; i++)
		port_carry_begin((struct port *)ports[i], e->obj.kfd,
				 &carries[i]);
	uefd__xdemote_carry(e);
	for (size_t i = 0; i < np; i++)
		port_carry_end((struct port *)ports[i], &carries[i]);
	uefd__xdemote_done(e);
	uefd__xunlock(e);
	for (size_t i = 0; i < np; i++)
		uobj_put(ports[i]);
	free(ports);
	free(carries);
	uobj_unpublish_all(&e->obj);
	return 0;
}

/* SHARED: and the watchers become registrations of it, whose class is the
 * counter's.  0, or the first error of one. */
static int uefd__to_kernel_watchers(struct uefd *e)
{
	/* Kernel registrations poll the fd: NOPOLL ends, if there are any
	 * (the wait queue is dead: no watcher comes meanwhile, a later one is
	 * a kernel registration whose ctl ends it, port.c).  With none it
	 * stands, in every process (NOPOLL, above). */
	if (atomic_load(&e->wq.n)) {
		uefd__exact(e);
	} else {
		uefd__flush(e);
		timer_wait_idle(&e->co_timer);
	}
	return port_demote_source(&e->wq, &e->obj);
}

/*
 * SHARED: before a fork, make e's counter the one both processes will use.
 * Only a fork's prepare calls it, and forks are one at a time from before
 * their walk (FENCE in lock.c): a share is never begun and unfinished at
 * another fork.
 * Its watchers become kernel registrations of the fd (a process cannot walk
 * another's instances), NOPOLL ends if it had any (they poll the fd; with
 * none it stands in every process: NOPOLL, above), and the protocol
 * changes from MIRROR to SHARED while other threads may be reading and
 * writing: with xm held, `shared` is stored,
 * then the MIRROR calls in flight end (a sync that raised `syncing` after
 * the store sees it and settles under the lock instead) and the readers
 * asleep in read(2) on the kernel fd are woken with a unit and come back
 * as SHARED sleepers (Dekker on `shared` against `nsleep`); then kunits is
 * the kernel fd's value, and the holder settles and unlocks.
 */
int uefd_share(struct uefd *e)
{
	int r;

	if (uefd__shared(e) || uefd_demoting(e))
		return 0;
	/* A ctl that finds no item from here waits for the kernel's. */
	atomic_store(&e->sh->kwatch, 1);
	lock_take(&e->wq.lock);
	e->wq.dead = true;
	{
		struct list *l;

		list_for_each(l, &e->wq.head)
			if (atomic_load_explicit(
				    &container_of(l, struct item, wqlink)->events,
				    memory_order_relaxed) & EPOLLET)
				uefd_kedge(e);
	}
	lock_drop(&e->wq.lock);
	r = uefd__to_kernel_watchers(e);
	atomic_store(&e->sh->kwatch, 2);
	sys_futex_xwake(&e->sh->kwatch, INT_MAX);
	/* Nobody else takes it before `shared`; the prepare handler holds
	 * no lock of ours. */
	(void)uefd__xlock(e, false);
	atomic_store(&e->sh->shared, true);
	uefd__mirror_quiesce(e);
	uefd__settle(e, false);
	uefd__xunlock(e);
	return r;
}

/* SHARED's steps of a read or write (STEPS in eventfd_impl.h). */
const struct uefd_steps uefd__shared_steps = {
	.cross = uefd__xcas,
	.sync = uefd__xsync,
	.wrote_kfd = uefd__xwrote_kfd,
	.empty = uefd__xempty,
	/* On rwake (uefd__rsleep), never in read(2) on the kernel fd. */
	.sleep = uefd__rnap,
	.show = uefd__xshow,
	.held = uefd__xdue,
	/* (The child uses the block as it is: the one both processes use.) */
	.fork_child = NULL,
	.demote = uefd__xdemote,
	.demote_wait = uefd__xdemote_wait,
	/* A reader that made room may die before its wake. */
	.room_ns = 100 * 1000000,
	/* The wakeups only are held (a plain delay): moving a held batch
	 * into the counter is two words, and a process killed between them
	 * would lose or double it (t_xproc_kill, TSan). */
	.hold_writes = false,
};
