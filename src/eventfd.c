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
 * A semaphore counter taken off its maximum leaves K at the maximum less
 * one; from there it would take 2^64-3 reads to empty it, so the mirror
 * never has to be drained from a large semaphore value.
 *
 * Beside it: coalesced wakeups and held writes (COALESCE, HOLD), in
 * eventfd_hold.c.
 *
 * DEMOTE (uefd_demote): the ueventfd becomes the plain kernel eventfd it
 * stands for, with its exact counter, while other threads use it.  In
 * this order:
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
 * demotion is SHARED DEMOTE (uefd__xdemote), under xm, through `carry`.
 *
 * LOCKING: count, held, kunits, syncing, nsleep, demote, wseq, wwaiters,
 * co_*, owed.bits are atomics (no lock), in the block `sh` (shm.h) but
 * owed.bits.  SHARED: a change of the counter's class, and kunits, are
 * under xm (a robust, process-shared mutex in the block), a leaf taken only
 * with none of our locks held (at depth 0: a handler never enters it; a
 * caller inside our locks bypasses it, BYPASS) and never held across a
 * sleep.  wq.lock protects the list of watching items (its place in
 * the order: LOCK ORDER in lock.h); it also serialises ueventfd_coalesce
 * calls and, at the release, the close of the private fd (obj.c, FORK).  The
 * timer's lock: eventfd_hold.c.  A read or write that a signal handler makes
 * while its thread holds one of these takes none (SIGNALS, below).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
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
	pthread_mutex_init(&e->sh->xm, &uefd__xattr);
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

/*
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
 *  - one that changes the class takes `xm` and, in this order: makes the kernel fd readable first if the counter is
 *    about to become non-zero (pre-step; a semaphore counter leaving full
 *    lowers it from full first), CASes the counter, then settles the kernel
 *    fd on the counter's class (drains it after the counter reached 0, fills
 *    it after it became full), keeping `kunits` equal to its value;
 *  - the holder's death, zombie or not, releases xm (the kernel's robust
 *    futex list: ROBUST, at uefd__xrepair); the next one that takes it
 *    reads the kernel fd's true value (fdinfo) into kunits and settles
 *    (before issue 32 the lock was a word of thread ids, and a dead holder
 *    was asked with kill(tid, 0), which a zombie answers: its parent,
 *    about to waitpid, hung);
 *  - a stopped holder is not waited for (BYPASS, at uefd__xcas_bypass).
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
 */

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

/* Bring the kernel fd to the counter's class.  defer: do not make it
 * readable (a coalesced write: its timer will).  xm held.  Whether it
 * wrote to the kernel fd (which woke its pollers). */
static bool uefd__settle(struct uefd *e, bool defer)
{
	bool wrote = false;

	for (;;) {
		uint64_t c, k, v;
		int want, have;

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

void uefd_kedge(struct uefd *e)
{
	if (!atomic_load_explicit(&e->sh->kedge, memory_order_relaxed))
		atomic_store(&e->sh->kedge, 1);
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
bool uefd__xcas(struct uefd *e, uint64_t *c, uint64_t n, bool defer,
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
	/* Pre-step: the kernel fd more ready first. */
	if (*c == 0 && n > 0 && !defer && atomic_load(&e->sh->kunits) == 0) {
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

/* SHARED sync: settle under the lock if the classes disagree (a deferred
 * wakeup being delivered, over-readiness a holder left) or a holder is at
 * work (which may be dead). */
static void uefd__xsync(struct uefd *e)
{
	uint64_t c = atomic_load(&e->sh->count);
	bool raised;

	if (c == UEFD_GONE ||
	    (uefd__class(c) == uefd__class(atomic_load(&e->sh->kunits)) &&
	     !uefd__xbusy(e) && !atomic_load(&e->sh->recheck)))
		return;
	if (uefd__xlock(e, true) == UEFD_XBYPASS) {
		/* The holder settles after it (BYPASS). */
		uefd__xowe(e);
		return;
	}
	raised = uefd__settle(e, false);
	uefd__xunlock(e);
	/* A deferred wakeup delivered: the blocked readers too. */
	c = atomic_load(&e->sh->count);
	if (raised && c && c != UEFD_GONE)
		uefd__xwake(e);
}

/* MIRROR: bring the kernel fd's class to the counter's.  Lock-free and
 * async-signal-safe; no system call when they agree. */
void uefd__sync(struct uefd *e)
{
	if (unlikely(uefd__shared(e))) {
		uefd__xsync(e);
		return;
	}
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
		 * store then its look at syncing): its protocol, not this. */
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
		/* SHARED: a reader that made room may die before its wake. */
		r = sys_futex_xsleep(&e->sh->wseq, seq,
				     uefd__shared(e) ? 100 * 1000000 : -1);
	pthread_cleanup_pop(1);
	return r == -EINTR ? r : 0;
}

/* SHARED HOLD: show the held writes under xm, through `moving`
 * (uefd__xmove), so that a shower killed in the middle loses nothing.
 * false: BYPASS (a stopped holder, or a handler inside one of our locks):
 * the plain way then. */
bool uefd__xshow(struct uefd *e)
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

/*
 * SIGNALS (lock.h).  A read or write made by a signal handler whose thread
 * holds one of uepoll's locks does what needs none (the counter, the
 * mirror, the futex of blocked writers) and owes the rest: the walk of the
 * watchers (EPOLLIN after a write, EPOLLOUT and "no longer ready" after a
 * read) and, for a held write, the timer.  The interrupted frame runs it
 * when it leaves its last lock, at most a lock's hold time later, which is
 * as if the write had come then.  Several owed writes are delivered by one
 * walk: an edge-triggered watcher may see them as one event.
 */
#define UEFD_OWE_IN 0x1u   /* a write's walk (uefd__wrote) */
#define UEFD_OWE_HELD 0x2u /* a held write's timer (uefd__held) */
#define UEFD_OWE_OUT 0x4u  /* a read's walk (uefd__was_read) */
#define UEFD_OWE_SYNC 0x8u /* SHARED: a settle under xm (BYPASS) */

static void uefd__was_read(struct uefd *e, bool emptied);

static void uefd__owed_hold(struct lock_owed *o)
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

static void uefd__owed_fn(struct lock_owed *o, unsigned bits)
{
	struct uefd *e = container_of(o, struct uefd, owed);

	uefd__owed_work(e, bits);
	uobj_put(&e->obj);
}

ssize_t uefd_write(struct uefd *e, const void *buf, size_t n)
{
	bool hw; /* UEVENTFD_HOLD_WRITES: the write goes to `held` (HOLD) */
	bool kw = false; /* SHARED: the kernel fd was written for it */
	/* SHARED: its locked section settled the kernel fd, and a shared
	 * ueventfd has no userspace watcher: nothing left for uefd__wrote. */
	bool settled = false;
	bool blocked = false; /* this call has begun to wait for room */
	_Atomic uint64_t *to;
	uint64_t v, cur;
	int r;

	if (n < sizeof(v) || (n > sizeof(v) && !uefd__long_write_ok()))
		return -EINVAL;
	if (!buf) /* the kernel's failed copy; other bad pointers fault */
		return -EFAULT;
	memcpy(&v, buf, sizeof(v));
	if (v == UINT64_MAX)
		return -EINVAL;
	/* SHARED: the wakeups only are held (a plain delay): moving a held
	 * batch into the counter is two words, and a process killed between
	 * them would lose or double it (t_xproc_kill, TSan). */
	hw = (atomic_load_explicit(&e->sh->co_delay_us, memory_order_relaxed) &
	      UEFD_HOLD_BIT) &&
	     !uefd__shared(e);
	to = hw ? &e->sh->held : &e->sh->count;
	cur = atomic_load(to);
	for (;;) {
		/* Room is judged on the counter plus what is held.  A plain
		 * write does not look at `held`: it is 0 unless the setting
		 * changed under concurrent writers, and then uefd__show keeps
		 * what does not fit. */
		uint64_t c = hw ? atomic_load(&e->sh->count) : cur;

		if (unlikely(c == UEFD_GONE)) {
			/* DEMOTE: the kernel fd has the counter. */
			uefd_demote_wait(e);
			return sys_write(e->obj.kfd, buf, n);
		}
		if (uefd__room(c, hw ? cur : 0) < v) {
			r = uefd__wait_room(e, v, &blocked);
			if (r < 0)
				return r;
			cur = atomic_load(to);
			continue;
		}
		if (!hw && unlikely(uefd__shared(e)) &&
		    uefd__crosses(cur, cur + v)) {
			/* SHARED: a change of class, under the lock. */
			bool defer = uefd__hold_us(e, cur + v) != 0;

			if (uefd__xcas(e, &cur, cur + v, defer, &kw)) {
				settled = !defer;
				break;
			}
			continue;
		}
		if (atomic_compare_exchange_weak(to, &cur, cur + v))
			break;
	}
	if (unlikely(lock_held_here())) {
		/* A signal handler inside one of our locks: SIGNALS. */
		if (!hw) {
			uefd__sync(e);
			uefd__xwake(e); /* NAP (async-signal-safe) */
		}
		lock_owe(&e->owed, hw ? UEFD_OWE_HELD : UEFD_OWE_IN,
			 uefd__owed_hold);
		return sizeof(v);
	}
	if (!hw && !settled)
		uefd__wrote(e, cur + v, false);
	else if (hw)
		uefd__held(e, cur + v);
	/* An edge per write for edge-triggered kernel watchers (kedge), as
	 * the kernel's: a write that left the kernel fd alone (SHARED: did
	 * not write it; else: kept the class, so its sync wrote nothing)
	 * writes 0 to it, which wakes them.  Not a coalesced write: its
	 * delivery wakes. */
	if (unlikely(atomic_load_explicit(&e->sh->kedge, memory_order_relaxed)) &&
	    !hw && (uefd__shared(e) ? !kw : !uefd__crosses(cur, cur + v)) &&
	    !uefd__hold_us(e, cur + v))
		sys_eventfd_add(e->obj.kfd, 0);
	/* A write that filled the counter ended EPOLLOUT: a watched instance
	 * forgets an item queued for it, as after a read that emptied it
	 * (uefd__was_read), or its holder's kernel epoll would report it. */
	if (unlikely(v && !uefd__room(hw ? atomic_load(&e->sh->count) : cur + v,
				      hw ? cur + v : 0)) &&
	    (bell_any_watched() || port_any_kheld()) &&
	    atomic_load(&e->wq.nout))
		wq_unready(&e->wq);
	return sizeof(v);
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
	if (emptied && (bell_any_watched() || port_any_kheld()) &&
	    atomic_load(&e->wq.n))
		wq_unready(&e->wq);
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

static void uefd__xunsleep(void *arg)
{
	atomic_fetch_sub(&((struct uefd *)arg)->sh->xsleepers, 1);
}

/* SHARED: how long a blocked read may sleep (ns).  A writer killed between
 * its CAS and its wake wakes nobody: a second at most; a held batch, until
 * it is overdue. */
static int64_t uefd__xsleep_ns(struct uefd *e)
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

/*
 * A blocked read of an empty counter sleeps on the futex word rwake,
 * counted in xsleepers, when the kernel fd cannot be its bed:
 *  - SHARED (above): in ppoll on the kernel fd a writer's pre-step, which
 *    makes it readable before the CAS, would wake the sleeper too early
 *    (and, on one CPU, let it preempt the writer);
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
 * round again as SHARED's sleeper.  After a handler with SA_RESTART the
 * kernel restarts the sleep (SHARED's has a limit: sys_futex_xsleep),
 * without it the read fails with EINTR, as read(2) on an eventfd.  A
 * cancellation point that leaves nothing behind.
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

ssize_t uefd_read(struct uefd *e, void *buf, size_t n)
{
	uint64_t c, take;
	bool kw = false;
	/* This call has begun to block: O_NONBLOCK is not looked at again
	 * (the kernel's blocked read never does); nap: the kernel fd is no
	 * longer a bed (it was made non-blocking since), rwake is. */
	bool blocked = false, nap = false, bed;
	ssize_t r;

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
			if (unlikely(uefd__shared(e)) &&
			    uefd__crosses(c, c - take)) {
				/* SHARED: a change of class, under the lock. */
				/* (Its locked section settled the kernel fd.) */
				if (!uefd__xcas(e, &c, c - take, false, &kw))
					continue;
			} else if (!atomic_compare_exchange_weak(&e->sh->count,
								 &c, c - take)) {
				continue;
			} else {
				uefd__sync(e);
			}
			if (atomic_load_explicit(&e->sh->empty_reads,
						 memory_order_relaxed))
				atomic_store_explicit(&e->sh->empty_reads, 0,
						      memory_order_relaxed);
			if (atomic_load(&e->sh->wwaiters) > 0) {
				atomic_fetch_add(&e->sh->wseq, 1);
				sys_futex_xwake(&e->sh->wseq, INT_MAX);
			}
			if (unlikely(lock_held_here()))
				lock_owe(&e->owed, UEFD_OWE_OUT,
					 uefd__owed_hold); /* SIGNALS */
			else
				uefd__was_read(e, c == take);
			/* The kernel, too, has taken the value when its copy to
			 * a NULL buffer fails. */
			if (!buf)
				return -EFAULT;
			memcpy(buf, &take, sizeof(take));
			return sizeof(take);
		}
		/* SHARED: a holder at work may be about to fill the counter,
		 * its kernel fd made readable first (a poller was told so):
		 * let it finish before answering "empty". */
		if (unlikely(uefd__shared(e))) {
			if (uefd__xbusy(e))
				uefd__xsync(e);
			if (uefd__overdue(e))
				uefd__show(e);
			c = atomic_load(&e->sh->count);
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
		/* SHARED, or NAP: asleep on rwake (uefd__rsleep). */
		if (unlikely(uefd__shared(e)) || unlikely(nap) ||
		    atomic_load_explicit(&e->sh->nopoll, memory_order_relaxed)) {
			r = uefd__rsleep(e, &blocked);
			if (r < 0)
				return r;
			c = atomic_load(&e->sh->count);
			continue;
		}
		/* seq_cst: raised before the counter is looked at again
		 * (Dekker against DEMOTE's exchange then load of nsleep, and
		 * against uefd_share's store of `shared` then that load). */
		atomic_fetch_add(&e->sh->nsleep, 1);
		c = atomic_load(&e->sh->count);
		if (c > 0 || c == UEFD_GONE || atomic_load(&e->sh->shared)) {
			atomic_fetch_sub(&e->sh->nsleep, 1);
			continue;
		}
		/* Sleeps here when the fd is blocking, until a writer's sync
		 * puts units in the kernel fd; on a non-blocking fd its EAGAIN
		 * is the answer, and tells that O_NONBLOCK is still set.  It
		 * had to sleep if no unit was there (kunits >= K) on a fd
		 * known to block: then this call has blocked, and an EAGAIN
		 * later means the fd was made non-blocking since. */
		bed = !atomic_load_explicit(&e->sh->nonblock,
					    memory_order_relaxed) &&
		      !atomic_load(&e->sh->kunits);
		r = uefd__sleep(e);
		if (r == -EAGAIN && blocked) {
			nap = true;
			c = atomic_load(&e->sh->count);
			continue;
		}
		atomic_store_explicit(&e->sh->nonblock, r == -EAGAIN,
				      memory_order_relaxed);
		if (r < 0)
			return r;
		if (bed)
			blocked = true;
		c = atomic_load(&e->sh->count);
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

/* FORK (obj.c), in the child: no writer is blocked here any more; owed
 * work queued on a thread that did not come along is done now; a held
 * wakeup (queued, or being delivered by the parent's timer thread) is
 * delivered now, early (the child's timer thread, if it gets one, starts
 * after the repairs: its heap must hold none of the parent's runs). */
static int uefd__fork_child(struct uobj *o)
{
	struct uefd *e = (struct uefd *)o;
	unsigned bits = atomic_load(&e->owed.bits);

	if (!e->sh) /* released up to uobj_free: the child finishes it */
		return 0;
	if (!uefd__shared(e)) {
		/* Not shared (no number led to it at the fork: the child
		 * releases it): a copy of its own, so that the release leaves
		 * the parent's block alone.  Without memory, it stays as it is
		 * (and closing it shows what was held twice at worst). */
		struct uefd_ctr *c = shm_alloc();

		if (c) {
			memcpy(c, e->sh, sizeof(*c));
			shm_free(e->sh);
			e->sh = c;
			/* Stores only where something changes (COW: see
			 * port.c's). */
			obj_fork_zero(&e->sh->wwaiters);
			/* (A thread of the parent asleep: NAP.) */
			if (atomic_load_explicit(&e->sh->xsleepers,
						 memory_order_relaxed))
				atomic_store_explicit(&e->sh->xsleepers, 0,
						      memory_order_relaxed);
		}
	}
	if (bits) {
		atomic_store(&e->owed.bits, 0);
		uefd__owed_work(e, bits);
	}
	if (timer_cancel(&e->co_timer) || timer_was_running(&e->co_timer) ||
	    atomic_load(&e->sh->held))
		uefd__deliver(e);
	return 0;
}

bool uefd_demoting(struct uefd *e)
{
	return atomic_load_explicit(&e->sh->demote, memory_order_relaxed) !=
	       UEFD_LIVE;
}

void uefd_watched_outside(struct uefd *e)
{
	atomic_store(&e->sh->nopoll, false);
	uefd__sync(e);
}

static void uefd__xdemote_end(struct uefd *e);

/* DEMOTE, SHARED: e's wait queue is dead (no new watcher).  What was held
 * is shown and the timer has finished with it; the kernel fd is exact from
 * now on (UEVENTFD_NOPOLL ends). */
static void uefd__exact(struct uefd *e)
{
	uefd__flush(e);
	timer_wait_idle(&e->co_timer);
	atomic_store(&e->sh->nopoll, false);
	uefd__sync(e);
}

/* SHARED: and the watchers become registrations of it, whose class is the
 * counter's.  0, or the first error of one. */
static int uefd__to_kernel_watchers(struct uefd *e)
{
	uefd__exact(e);
	return port_demote_source(&e->wq, &e->obj);
}

void uefd_demote_wait(struct uefd *e)
{
	int s;

	/* acquire: pairs with the demotion's release of UEFD_DEMOTED (the
	 * kernel fd holds the counter from then on). */
	while ((s = atomic_load_explicit(&e->sh->demote, memory_order_acquire)) !=
	       UEFD_DEMOTED) {
		if (!uefd__shared(e)) {
			sys_futex_xwait(&e->sh->demote, (uint32_t)s, -1);
			continue;
		}
		/* SHARED: the demoter may be another process, and die. */
		if (sys_futex_xwait(&e->sh->demote, (uint32_t)s,
				    10 * 1000000) == -ETIMEDOUT &&
		    uefd__xlock(e, false) == UEFD_XLOCKED) {
			if (atomic_load(&e->sh->demote) != UEFD_DEMOTED &&
			    atomic_load(&e->sh->count) == UEFD_GONE)
				uefd__xdemote_end(e); /* the demoter died */
			uefd__xunlock(e);
		}
	}
}

/* DEMOTE, SHARED: after the caller's change (the exchange of the counter,
 * the store of `shared`), wait out the MIRROR calls in flight and wake
 * the readers asleep in read(2) on kfd, with a unit each, until none is
 * left.  Both raised their count before looking at what the caller changed
 * (seq_cst loads here: Dekker). */
static void uefd__mirror_quiesce(struct uefd *e)
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
static void uefd__carry(struct uefd *e, uint64_t k, uint64_t c)
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

int uefd_demote(struct uefd *e)
{
	int s = UEFD_LIVE, r;
	uint64_t c, h, k;

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
	if (uefd__shared(e))
		return uefd__xdemote(e);
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

/*
 * SHARED: before a fork, make e's counter the one both processes will use.
 * Only a fork's prepare calls it, and forks are one at a time from before
 * their walk (FENCE in lock.c): a share is never begun and unfinished at
 * another fork.
 * Its watchers become kernel registrations of the fd (a process cannot walk
 * another's instances), NOPOLL ends (the fd must be exact for every
 * process), and the protocol changes from MIRROR to SHARED while other
 * threads may be reading and writing: with xm held, `shared` is stored,
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
