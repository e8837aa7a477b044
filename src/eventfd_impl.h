/* SPDX-License-Identifier: MIT */
/*
 * eventfd_impl.h - a ueventfd's layout, and what its files share: private
 * to them (eventfd.c: the counter, MIRROR, DEMOTE; eventfd_shared.c:
 * SHARED; eventfd_hold.c: COALESCE, HOLD; and tests that watch a word of
 * it), as port_impl.h is to the instance's.  Everything else reaches a
 * ueventfd through eventfd.h.
 */
#ifndef UEPOLL_EVENTFD_IMPL_H
#define UEPOLL_EVENTFD_IMPL_H

#include "eventfd.h"

#include "lock.h"
#include "obj.h"
#include "shm.h"
#include "timer.h"
#include "wq.h"

/* In co_delay_us (at most 100000): the writes are held too.  One field, on
 * the counter's cache line, so that a plain write reads no other line to
 * know its mode. */
#define UEFD_HOLD_BIT (1u << 31)

/* DEMOTE (eventfd.c): the counter's value once it has been carried over to
 * the kernel fd (a counter never holds it: its maximum is UEFD_MAX). */
#define UEFD_GONE UINT64_MAX
/* In uefd_ctr.braise: one raise begun and in flight; those in flight. */
#define UEFD_BRAISE_ONE ((UINT64_C(1) << 32) | 1)
#define UEFD_BRAISE_NOW UINT64_C(0xffffffff)
/* FILL (uefd__settle in eventfd_shared.c): its first step leaves room for
 * one raise and this many more that looked at the kernel fd before it
 * wrote (more would pass the maximum, and the write(2) past it would block
 * until a read).  More than can ever be in flight: a raise per thread
 * (PID_MAX_LIMIT is 2^22), times the signal handlers nested in it. */
#define UEFD_FILL_MARGIN (UINT64_C(1) << 40)
enum { UEFD_LIVE, UEFD_DEMOTING, UEFD_DEMOTED };

/*
 * The counter and what its protocols share: in a block of MAP_SHARED memory
 * (shm.h), so that after a fork both processes use the same one (SHARED in
 * eventfd_shared.c).  Every futex word here is waited on and woken with the
 * shared (not private) futex operations.  Line 0 is what a read or write
 * touches; line 1 the rest; lines 2-3 the lock of a change of class.
 */
struct uefd_ctr {
	/* The counter.  Every update is a seq_cst CAS: it pairs with the
	 * seq_cst loads of wq.n (signal side) and of `mirror` (reader side). */
	_Atomic uint64_t count;
	/* Units the library put in the kernel fd and has not taken back,
	 * those being written included (MIRROR in eventfd.c): never below the
	 * kernel fd's value, equal to it when no system call is in flight.
	 * SHARED: the xm holder's knowledge of the kernel fd's value. */
	_Atomic uint64_t kunits;
	/* UEVENTFD_HOLD_WRITES: written but not yet shown in `count` (HOLD in
	 * eventfd_hold.c).  count + held never exceeds UEFD_MAX. */
	_Atomic uint64_t held;
	/* Coalescing (ueventfd_coalesce; COALESCE in eventfd_hold.c).
	 * Relaxed: a write racing with a change uses the old or the new
	 * setting, both valid.  delay_us 0: wake at once. */
	_Atomic uint32_t co_delay_us; /* | UEFD_HOLD_BIT: UEVENTFD_HOLD_WRITES */
	/* Reads in a row that found the counter empty (see uefd_read). */
	_Atomic uint32_t empty_reads;
	/* MIRROR calls on kfd in progress, and threads asleep in read(2) on
	 * kfd: a demotion waits for both (DEMOTE in eventfd.c). */
	_Atomic int syncing;
	_Atomic int nsleep;
	/* SHARED: blocked readers of every process, asleep on the futex word
	 * rwake, which a write that takes the counter from 0 bumps. */
	_Atomic uint32_t xsleepers;
	_Atomic uint32_t rwake;
	/* Last known O_NONBLOCK of the kernel fd. */
	_Atomic bool nonblock;
	/* UEVENTFD_NOPOLL: the mirror is only raised for sleepers (MIRROR). */
	_Atomic bool nopoll;
	/* SHARED mode (eventfd_shared.c): set once, before the fork that
	 * shares the block, never cleared (STEPS, below). */
	_Atomic bool shared;
	char pad0_[64 - 3 * 8 - 6 * 4 - 3];

	/* UEFD_LIVE, UEFD_DEMOTING, UEFD_DEMOTED (futex word: DEMOTE). */
	_Atomic int demote;
	/* Writers blocked on a full counter sleep on wseq. */
	_Atomic uint32_t wseq;
	_Atomic int wwaiters;
	/* SHARED: a change of the counter's class made without `xm` (its
	 * holder stopped, or a signal handler inside this thread's hold):
	 * the next settle under `xm` reads the kernel fd's true value first
	 * (BYPASS in eventfd_shared.c). */
	_Atomic uint32_t recheck;
	uint32_t pad1_;
	/* SHARED: 1 while uefd_share makes the watchers kernel registrations,
	 * 2 once they are (futex word: a ctl waits for 2). */
	_Atomic uint32_t kwatch;
	/* Some kernel registration of the fd is edge-triggered (set for
	 * good; SHARED's, or one made through uepoll_ctl or an instance's
	 * demotion): a write that leaves the class as it was writes 0 to the
	 * kernel fd, whose wakeup gives that watcher its edge per write. */
	_Atomic uint32_t kedge;
	/* SHARED HOLD: when the held batch is due (CLOCK_MONOTONIC ns, 0:
	 * none), for a reader of another process to show it if its writer's
	 * process died with the timer that would have. */
	_Atomic uint64_t due;
	/* Coalescing's count threshold (0: none). */
	_Atomic uint64_t co_count;
	/* SHARED DEMOTE: the counter carried over to the kernel fd. */
	_Atomic uint64_t carry;
	/* SHARED HOLD: held writes an xm holder is moving into the counter
	 * (0: none); a takeover finishes the move. */
	_Atomic uint64_t moving;
	/* (8 words of 4 bytes and 4 of 8: line 1 is full.) */

	/* SHARED: the lock of a change of the counter's class and of kunits
	 * (eventfd_shared.c): a robust, process-shared mutex, so that the
	 * kernel releases it when its holder dies (zombie or not) and the next
	 * locker repairs what it left.  Its word is the holder's thread id
	 * (the kernel's robust-futex ABI): whether that thread is stopped is
	 * asked in /proc (BYPASS). */
	pthread_mutex_t xm;
	/* SHARED BYPASS: raises of the kernel fd by bypasses: in flight (the
	 * low half, UEFD_BRAISE_NOW) and ever begun (the high half), for a
	 * holder's FILL (eventfd_shared.c). */
	_Atomic uint64_t braise;
	char pad2_[128 - sizeof(pthread_mutex_t) - 8];
};
_Static_assert(sizeof(struct uefd_ctr) == SHM_BLOCK, "four cache lines");
_Static_assert(offsetof(struct uefd_ctr, xm) == 128, "hot lines first");

struct uefd {
	struct uobj obj;
	/* The counter's block (shm_alloc; SHARED in eventfd_shared.c). */
	struct uefd_ctr *sh;
	bool semaphore;
	/* Room for co_timer is reserved in the timer's heap (timer_reserve):
	 * set with the first delay, under wq.lock. */
	bool co_reserved;
	/* Delivers deferred wakeups at the deadline (timer.c; COALESCE in
	 * eventfd_hold.c). */
	struct timer co_timer;
	/* Work a signal handler's read or write left to its thread (SIGNALS
	 * in eventfd.c). */
	struct lock_owed owed;
	struct wq wq;
};

/* The class of a counter or of the kernel fd's value: 0, some, full. */
static inline int uefd__class(uint64_t v)
{
	return v == 0 ? 0 : v >= UEFD_MAX ? 2 : 1;
}

/* Does going from c to n change the class (MIRROR: the kernel fd follows;
 * SHARED: under the lock)? */
static inline bool uefd__crosses(uint64_t c, uint64_t n)
{
	return uefd__class(c) != uefd__class(n);
}

/* Room left for writes when the counter is c with h still held (HOLD). */
static inline uint64_t uefd__room(uint64_t c, uint64_t h)
{
	return c > UEFD_MAX || h > UEFD_MAX - c ? 0 : UEFD_MAX - c - h;
}

/* The coalescing delay in ns (the HOLD bit masked off). */
static inline uint64_t uefd__delay_ns(struct uefd *e)
{
	return (uint64_t)(atomic_load_explicit(&e->sh->co_delay_us,
					       memory_order_relaxed) &
			  ~UEFD_HOLD_BIT) *
	       1000u;
}

/* Hold this write's wakeups (COALESCE)?  `now` is the counter after the
 * write. */
static inline uint32_t uefd__hold_us(struct uefd *e, uint64_t now)
{
	uint32_t d = atomic_load_explicit(&e->sh->co_delay_us,
					  memory_order_relaxed) &
		     ~UEFD_HOLD_BIT;
	uint64_t cnt;

	if (!d)
		return 0;
	cnt = atomic_load_explicit(&e->sh->co_count, memory_order_relaxed);
	return cnt && now >= cnt ? 0 : d;
}

/* Arm e's timer: 0, or < 0 when there is no thread or no room (the caller
 * then delivers at once).  Never starts the thread: a write, which may come
 * from a signal handler that interrupted malloc, must not (SIGNALS in
 * timer.c; issue 32).  A forked child has one from the fork if its parent
 * had one (timer_fork_child_start), else from its next ueventfd() or
 * ueventfd_coalesce(). */
static inline int uefd__arm(struct uefd *e, uint64_t ns)
{
	return timer_arm(&e->co_timer, ns);
}

/*
 * STEPS: what a ueventfd's calls do differently under its two protocols, a
 * table each: MIRROR's, process-private (eventfd.c), and SHARED's, the
 * counter shared across fork (eventfd_shared.c).  The mode is `shared`,
 * which uefd_share stores once (seq_cst, under xm) while other threads read
 * and write, and never clears.  uefd__steps chooses the table from a load
 * of it, relaxed, exactly where a test of `shared` decided before there
 * was a table: one load per decision, never kept across a later one (a
 * loop chooses again at each round).  That load pairs with nothing: `true`
 * is never stale, and a stale `false` leads to MIRROR's step, as the test
 * it stands for did.  What makes that step safe is MIRROR's own seq_cst
 * looks at `shared`, each one side of a Dekker pair with uefd_share's
 * store then uefd__mirror_quiesce (which waits for `syncing` and `nsleep`
 * to fall to 0, and wakes rwake): the gate of the sync, after its raise of
 * `syncing` (uefd__msync); a sleeper's look after its raise of `nsleep`
 * (uefd__msleep); a napper's after its count in `xsleepers`, compared with
 * the mode it prepared for (uefd__rsleep).  Those stay loads of `shared`
 * where they are: a choice of table stands for a relaxed test, not for one
 * side of a Dekker pair.
 */
struct uefd_steps {
	/* A change of the counter's class from *c to n, with the kernel fd
	 * settled (SHARED: under xm, uefd__xcas): false, with *c the counter
	 * now, if it changed meanwhile.  defer: a coalesced write, whose
	 * readiness its timer shows; *kw set if the kernel fd was written
	 * (its pollers woken).  NULL (MIRROR): the plain CAS, as for any
	 * change, and the sync after it. */
	bool (*cross)(struct uefd *e, uint64_t *c, uint64_t n, bool defer,
		      bool *kw);
	/* Bring the kernel fd's class to the counter's (uefd__sync). */
	void (*sync)(struct uefd *e);
	/* Did a write that took the counter from `from` to `to` write the
	 * kernel fd, which woke its edge-triggered watchers?  kw: as the
	 * cross step left it. */
	bool (*wrote_kfd)(uint64_t from, uint64_t to, bool kw);
	/* A read found the counter empty: look again before it answers or
	 * sleeps (SHARED: a holder at work may be about to fill it), and
	 * return the counter now.  NULL: nothing to look at. */
	uint64_t (*empty)(struct uefd *e);
	/* A blocked read of an empty counter sleeps: 0, with *c the counter
	 * to look at again, or < 0, the read's answer.  *blocked, *nap:
	 * uefd_read's. */
	int (*sleep)(struct uefd *e, uint64_t *c, bool *blocked, bool *nap);
	/* HOLD: show the held writes (true), or leave it to the plain way
	 * (false; NULL: always). */
	bool (*show)(struct uefd *e);
	/* HOLD: a write was held (NULL: nothing more). */
	void (*held)(struct uefd *e);
	/* FORK, in the child: NULL, or what the child's copy needs. */
	void (*fork_child)(struct uefd *e);
	/* DEMOTE: once this thread has begun the demotion (uefd_demote); one
	 * wait, while another's, in state s, is not over (uefd_demote_wait). */
	int (*demote)(struct uefd *e);
	void (*demote_wait)(struct uefd *e, int s);
	/* How long a write blocked on a full counter sleeps at most (ns; -1:
	 * until woken). */
	int64_t room_ns;
	/* UEVENTFD_HOLD_WRITES holds the values too (HOLD), not only their
	 * wakeups. */
	bool hold_writes;
};

/* What the eventfd files share is hidden: never interposed, so that each
 * file's compiler inlines its own helpers (as when they were static, in one
 * file) and the calls between the files are direct. */
#pragma GCC visibility push(hidden)

extern const struct uefd_steps uefd__mirror_steps; /* eventfd.c */
extern const struct uefd_steps uefd__shared_steps; /* eventfd_shared.c */

/* SHARED (relaxed; STEPS). */
static inline bool uefd__shared(struct uefd *e)
{
	return atomic_load_explicit(&e->sh->shared, memory_order_relaxed);
}

/* The steps of e's protocol, as `shared` is now (STEPS). */
static inline const struct uefd_steps *uefd__steps(struct uefd *e)
{
	return unlikely(uefd__shared(e)) ? &uefd__shared_steps
					 : &uefd__mirror_steps;
}

/* MIRROR: bring the kernel fd's class to the counter's.  Lock-free and
 * async-signal-safe; no system call when they agree.  SHARED: the same
 * under xm, when needed (uefd__xsync). */
static inline void uefd__sync(struct uefd *e)
{
	uefd__steps(e)->sync(e);
}

/* SIGNALS (eventfd.c): work a handler's read or write owes its thread. */
#define UEFD_OWE_IN 0x1u   /* a write's walk (uefd__wrote) */
#define UEFD_OWE_HELD 0x2u /* a held write's timer (uefd__held) */
#define UEFD_OWE_OUT 0x4u  /* a read's walk (uefd__was_read) */
#define UEFD_OWE_SYNC 0x8u /* SHARED: a settle under xm (BYPASS) */

/* eventfd.c */
void uefd__owed_hold(struct lock_owed *o);
void uefd__xwake(struct uefd *e);
void uefd__wrote(struct uefd *e, uint64_t now_count, bool due);
int uefd__rnap(struct uefd *e, uint64_t *c, bool *blocked, bool *nap);

/* eventfd_demote.c */
void uefd__exact(struct uefd *e);
void uefd__mirror_quiesce(struct uefd *e);
void uefd__carry(struct uefd *e, uint64_t k, uint64_t c);
int uefd__mdemote(struct uefd *e);
void uefd__mdemote_wait(struct uefd *e, int s);

/* eventfd_shared.c */
void uefd__xinit(struct uefd *e);
void uefd__xsync(struct uefd *e);
void uefd__xexact(struct uefd *e);
int64_t uefd__xsleep_ns(struct uefd *e);

/* eventfd_hold.c */
void uefd__coalesce_init(struct uefd *e);
void uefd__deliver(struct uefd *e);
void uefd__flush(struct uefd *e);
void uefd__show(struct uefd *e);
void uefd__held(struct uefd *e, uint64_t held_now);

#pragma GCC visibility pop

#endif
