/* SPDX-License-Identifier: MIT */
/*
 * bell.h - an instance's wake protocol: the doorbell, who sleeps, who dozes,
 * and how the instance's fd stays exact for an outside poller (bell.c).
 *
 * Every wakeup of a thread waiting on an instance goes through this module.
 * Its state is private to it: no other file reads or writes a field of
 * struct bell; they call the verbs below.  The arguments for why no wakeup
 * is lost (DOORBELL, DOZE, WATCHED, QUIET) are in bell.c, beside the
 * stores they rest on, and models/doorbell.pml, models/doze.pml,
 * models/watched.pml, models/arrive.pml and models/quiet.pml check them
 * (each model step names the verb it stands for).
 *
 * The verbs, by who calls them (every other name here is a step of one):
 *   the instance's life (port.c)  bell_init, bell_close, bell_fork_child
 *   signalers (port.c)            bell_signal (SIGNAL: every decision of the
 *                                 signal side)
 *   waiters (wait.c)              bell_sleep (SLEEP: nap or kernel epoll),
 *                                 bell_doze (DOZE), bell_took
 *   whoever looks at the queue    bell_look (LOOK: every decision of the
 *     (wait.c, port.c, krec.c)    doorbell's level: prune, clear, mirror,
 *                                 unstale, the ring a wait leaves)
 *   kernel fds (krec.c, wait.c,   bell_kernel (KERNEL: the count of kernel
 *     port.c)                     registrations, one owner)
 *   nesting (krec.c)              bell_watch
 *   FIFO followers (turn.c)       bell_follow
 *   a kernel epoll or a poller    bell_outside (held from outside, polled
 *     outside uepoll (port.c)     from outside, shared by a fork)
 *   queries                       bell_rung, bell_watched, bell_fd,
 *                                 bell_any_watched
 *
 * An instance made with UEPOLL_NOPOLL (NOPOLL in bell.c) rings only for a
 * sleeper or a watcher, and never clears a stale doorbell unless watched:
 * bell_signal and bell_look say so.  A name bell__x is a
 * step of a verb, for bell.c and this header only.
 */
#ifndef UEPOLL_BELL_H
#define UEPOLL_BELL_H

#include <pthread.h>
#include <sys/epoll.h>

#include "readyq.h"
#include "sys.h"

struct bell {
	/* Serialises changes of `watched` and of the doorbell's mode (the
	 * kernel epoll's registration of fd): bell_watch. */
	pthread_mutex_t wlock;
	/* Makes each system call on the doorbell one step with its change of
	 * `set`: a ring's write with `set` = 1, a take's read with `set` = 0
	 * (DOORBELL in bell.c).  A leaf; taken only where such a call is made. */
	pthread_mutex_t dblock;
	/* A kernel epoll holds it edge-triggered through uepoll_ctl (xheld),
	 * and such ctls in flight (xholds): while either, counted once in
	 * `watched` and bell__nedge; xheld until the instance's release
	 * (bell__hold_begin/end, bell__unhold).  Under wlock; never read by
	 * signalers, so off their line. */
	bool xheld;
	int xholds;
	/* KERNEL (bell.c): the instance's kernel registrations that may fire,
	 * never below the true number (a wait skips the kernel epoll at 0, a
	 * NOPOLL instance naps); and the nested records a MOD made silent,
	 * still counted in nkernel until a wait looks at the kernel epoll
	 * (STALE in krec.c).  Read by waits, and by a NOPOLL instance's
	 * signalers only (bell__wanted): off their line. */
	_Atomic int nkernel;
	_Atomic int ksettle;

	/* --- touched by signalers: one line, shared with nothing else --- */
	/* 1: the doorbell has been rung (written, or being written under
	 * dblock) and its event not yet taken by a waiter.  Nothing else:
	 * neither a doze nor a nap holds it (DOZE, NAP).  seq_cst
	 * everywhere. */
	_Alignas(UEPOLL_CACHELINE) _Atomic int set;
	/* Threads inside a sleep (bell__sleep_begin..end, a doze, a FIFO
	 * follower).  seq_cst. */
	_Atomic int sleepers;
	/* Sleepers asleep on the futex word `nap` rather than in the kernel
	 * epoll (NAP; counted in `sleepers` too).  seq_cst. */
	_Atomic int nappers;
	/* NAP's futex word: raised by every wake of a napper. */
	_Atomic uint32_t nap;
	/* 1: a ring woke a napper and no napper has come back since: rings
	 * for nappers stop here, as rings of the doorbell stop at `set`
	 * (NAP).  seq_cst. */
	_Atomic int napped;
	/* Batching waits dozing (DOZE: while > 0, an unwatched instance's
	 * kicks ring nobody), and how many more events end their doze (0:
	 * none is counted). */
	_Atomic int dozers;
	_Atomic int want;
	/* How many of our instances hold this one (WATCHED).  Relaxed: read
	 * on every signal (seq_cst where NOPOLL decides not to ring). */
	_Atomic int watched;
	/* A kernel epoll may hold it edge-triggered without our seeing it (a
	 * fork shared its kernel epoll): counted once in bell__nedge, for
	 * good (bell__held_edge_outside). */
	_Atomic bool xedge;
	/* The doorbell is level-triggered in the kernel epoll (while
	 * watched).  Written under wlock. */
	_Atomic bool lt;
	/* The doorbell: a private eventfd in the instance's kernel epoll,
	 * registered with the instance's address as data.  Immutable from
	 * bell_init to bell_close. */
	int fd;
	/* UEPOLL_NOPOLL: nothing outside uepoll's calls polls the instance's
	 * fd (NOPOLL in bell.c).  Only ever cleared (bell__polled_outside);
	 * read on every signal, so on the signalers' line. */
	_Atomic bool nopoll;
};

/* Set up the doorbell in the kernel epoll epfd (data: what a wait reads back
 * for its event); nopoll: UEPOLL_NOPOLL.  Returns 0 or -errno (nothing to
 * undo then). */
int bell_init(struct bell *b, int epfd, uint64_t data, bool nopoll);
/* Close the doorbell's eventfd (idempotent; under the instance's mtx). */
void bell_close(struct bell *b);
/* fork, child: nobody sleeps or dozes any more. */
void bell_fork_child(struct bell *b);

/* --- signalers --- */

/* Kick's slow half (bell.c): the doorbell is not rung, or a napper may want
 * the ring. */
void bell__kick_slow(struct bell *b);
/* Ring the doorbell unless it is rung already (DOORBELL), or wake a napper
 * instead (NAP), or nobody while a batching wait dozes (DOZE).  Inline: the
 * signal path and every wait that leaves items queued come here, and
 * while the doorbell is rung (the steady state of a busy instance) this is
 * two loads. */
static inline void bell__kick(struct bell *b)
{
	/* seq_cst loads after the caller's enqueue: against a waiter's store
	 * of `set` = 0 then look (DOORBELL), a napper's count then look
	 * (NAP). */
	if (atomic_load(&b->set) == 0 || atomic_load(&b->nappers) > 0)
		bell__kick_slow(b);
}

/* Write the doorbell whatever `set` says, with `set` = 1 (a watched
 * instance's ring per event: WATCHED).  Takes dblock. */
void bell__ring(struct bell *b);
/* Write the doorbell unless it is rung already (with `set` 0 -> 1); never
 * a napper's futex instead, whoever dozes (a watched instance's holders
 * and a dozer's wakeup look at the doorbell).  Takes dblock when it
 * writes. */
void bell__ring_idle(struct bell *b);

/* Does a source's event need the doorbell?  Always, unless the instance is
 * NOPOLL: then only while a thread sleeps (or dozes, or follows in a FIFO
 * line) or another instance watches it, or when the instance has kernel
 * fds, in whose kernel list the doorbell holds the ready queue's place
 * (FAIRNESS in wait.c; a hint, read relaxed: a missed ring there only
 * reorders, the kernel turn's own kick keeps the queue from starving).
 * Called after the enqueue. */
static inline bool bell__wanted(struct bell *b)
{
	/* seq_cst loads after the enqueue's fenced exchange of the queue's
	 * tail, against a sleeper's count then re-check of the queue
	 * (bell__sleep_begin, bell__doze_begin, bell_follow) and against
	 * bell_watch's count then prune (NOPOLL in bell.c). */
	return !atomic_load(&b->nopoll) ||
	       atomic_load_explicit(&b->nkernel, memory_order_relaxed) > 0 ||
	       atomic_load(&b->sleepers) > 0 ||
	       atomic_load(&b->watched) > 0;
}

/* Edge-triggered registrations of instances held by instances, anywhere in
 * the process (WATCHED in bell.c): while there is one, every watched
 * instance rings on every event.  seq_cst. */
extern _Atomic int bell__nedge;
/* Nestings whose levels something outside uepoll may poll, anywhere in the
 * process (LAZY in bell.c): while there is one, every watched instance keeps
 * its doorbell's level exact.  seq_cst; only through bell_exact. */
extern _Atomic int bell__nexact;

/* LAZY: count (delta 1) or uncount (-1) a nesting that needs every watched
 * instance's level exact: a loud nested record whose holder or inner is
 * not NOPOLL, a ctl of one in flight (krec.c), an instance polled from
 * outside or demoted (for good: port.c).  Counted before the look that
 * makes the levels exact, uncounted after the call that ends it. */
static inline void bell_exact(int delta)
{
	atomic_fetch_add(&bell__nexact, delta);
}

/* Write the doorbell unless it is rung already (a watched instance's
 * holders look at the doorbell, never at a napper's futex). */
static inline void bell__kick_db(struct bell *b)
{
	/* seq_cst, after the enqueue: against a take's store of `set` = 0
	 * then look (bell__clear). */
	if (atomic_load(&b->set) == 0)
		bell__ring_idle(b);
}

/* A source's event reached the instance: ring unless rung; while watched
 * and an edge-triggered holder exists anywhere, every time (WATCHED);
 * NOPOLL: only if wanted. */
static inline void bell__kick_edge(struct bell *b)
{
	if (atomic_load_explicit(&b->watched, memory_order_relaxed)) {
		/* seq_cst load after the enqueue: a level-triggered holder
		 * needs the fd readable, which a rung doorbell keeps it
		 * (WATCHED: `set` == 1 only while its write is in the
		 * eventfd, or being made); an edge-triggered one a write per
		 * event. */
		if (atomic_load(&bell__nedge))
			bell__ring(b);
		else
			bell__kick_db(b);
	} else if (bell__wanted(b))
		bell__kick(b);
}

/* QUIET: would bell__kick_edge make a system call now (the instance not
 * watched, the ring wanted, the doorbell not rung or a napper there)?
 * Then the signaler first looks at its item's source, and rings only if
 * it shows something (QUIET in bell.c).  seq_cst loads after the enqueue,
 * as bell__kick's. */
static inline bool bell__would_ring(struct bell *b)
{
	return !atomic_load_explicit(&b->watched, memory_order_relaxed) &&
	       bell__wanted(b) &&
	       (atomic_load(&b->set) == 0 || atomic_load(&b->nappers) > 0);
}

/* An item with events ev was (queued: newly) put on the ready queue, and
 * a batching wait dozes: wake it if this event concerns it (DOZE).  After
 * the enqueue. */
void bell__dozer_event(struct bell *b, uint32_t ev, bool queued);

/* A coalescing source queued an item without ringing (its ring is deferred
 * to a timer, wq.h): must the timer ring?  (After the enqueue; a napper is
 * woken whatever `set` says, as bell__kick.) */
static inline bool bell__defer(struct bell *b)
{
	return atomic_load_explicit(&b->watched, memory_order_relaxed) ||
	       ((atomic_load(&b->set) == 0 ||
		 atomic_load(&b->nappers) > 0) &&
		bell__wanted(b));
}

/*
 * SIGNAL: an item with events ev is on the instance's ready queue (the
 * caller enqueued it: every load here comes after that enqueue, as DOORBELL,
 * DOZE, NAP and QUIET in bell.c need).  The one verb of the signal side:
 *  - a batching wait dozing is woken if the event concerns it (DOZE);
 *  - the answer has BELL_SLEEPER if ev has EPOLLEXCLUSIVE and a thread
 *    sleeps in the instance: the kernel's rule, under which such a wakeup
 *    counts (ends the walk of the source's watchers);
 *  - BELL_DEFER (a coalescing source: its ring is deferred to a timer,
 *    wq.h): nothing is rung; the answer has BELL_TIMER if the timer must
 *    ring (a watched instance, or a ring wanted and the doorbell not rung
 *    or a napper there);
 *  - BELL_EDGE (a source's event): bell__kick_edge, which rings for every
 *    event while a watched instance has an edge-triggered holder
 *    (WATCHED); with BELL_QUIET, a ring that would cost a system call is
 *    made only if look(arg) says the source still shows the event (QUIET:
 *    a reader took it since, or a write of 0);
 *  - neither (an ADD or MOD found its item ready, already queued): a
 *    ring only if wanted (NOPOLL), as bell__kick.
 * BELL_QUEUED: this call's enqueue put the item on the queue (a dozer
 * counts it).
 */
#define BELL_QUEUED 0x1u
#define BELL_EDGE 0x2u
#define BELL_QUIET 0x4u
#define BELL_DEFER 0x8u
#define BELL_SLEEPER 0x1u
#define BELL_TIMER 0x2u
static inline unsigned bell_signal(struct bell *b, uint32_t ev, unsigned how,
				   bool (*look)(void *), void *arg)
{
	unsigned r = 0;

	if (unlikely(atomic_load(&b->dozers)))
		bell__dozer_event(b, ev, how & BELL_QUEUED);
	/* seq_cst, before this signal's ring (which may end the sleep). */
	if ((ev & EPOLLEXCLUSIVE) && atomic_load(&b->sleepers) > 0)
		r |= BELL_SLEEPER;
	if (how & BELL_DEFER)
		return r | (bell__defer(b) ? BELL_TIMER : 0);
	if (!(how & BELL_EDGE)) {
		if (bell__wanted(b))
			bell__kick(b);
	} else if (!(how & BELL_QUIET) || !bell__would_ring(b) || look(arg)) {
		bell__kick_edge(b);
	}
	return r;
}

static inline bool bell__nopoll(struct bell *b)
{
	return atomic_load_explicit(&b->nopoll, memory_order_relaxed);
}

/* UEPOLL_NOPOLL still on (a relaxed hint: LAZY's counts decide). */
static inline bool bell_nopoll(struct bell *b)
{
	return bell__nopoll(b);
}

static inline bool bell_watched(struct bell *b)
{
	return atomic_load_explicit(&b->watched, memory_order_relaxed) != 0;
}

/* WATCHED: for a watched instance, forget queued items that are not ready
 * and, if none is left, make the fd not readable (as the kernel's poll of
 * an epoll sees it).  No-op for an instance nobody holds. */
void bell__mirror(struct bell *b, struct readyq *q);
/* rq_prune, ringing when items are kept; true when items are kept. */
bool bell__prune(struct bell *b, struct readyq *q);

/* --- waiters --- */

/* Rung and not yet taken (or a dozer holds it). */
static inline bool bell_rung(struct bell *b)
{
	return atomic_load(&b->set) != 0;
}

static inline bool bell__lt(struct bell *b)
{
	return atomic_load(&b->lt);
}

static inline int bell_fd(const struct bell *b)
{
	return b->fd;
}

/* Must a stale doorbell be cleared, so that the instance's fd reads as
 * ready only while a wait would return something?  Not for a NOPOLL
 * instance nobody watches (a sleeper that finds the stale event takes it
 * and sleeps again).  Relaxed: pairs with nothing; a clear skipped or made
 * never loses a wakeup, and a watch that starts clears and re-rings by
 * itself (bell_watch). */
static inline bool bell__exact(struct bell *b)
{
	return !atomic_load_explicit(&b->nopoll, memory_order_relaxed) ||
	       atomic_load_explicit(&b->watched, memory_order_relaxed);
}

void bell__retake(struct bell *b, struct readyq *q);
/* A wait took the doorbell's event from the kernel epoll (DOORBELL); q: the
 * instance's ready queue, which the caller harvests next. */
static inline void bell_took(struct bell *b, struct readyq *q)
{
	/* An edge-triggered doorbell's event is consumed by being taken
	 * (stored before anything else can return: a stale set == 1 would
	 * strand every sleeper); a level-triggered one stays until
	 * bell__clear.  No write can be on its way (a ring writes only from
	 * `set` 0, whose event this is), so no dblock. */
	if (!atomic_load(&b->lt)) {
		atomic_store(&b->set, 0);
		/* seq_cst, after the store: against bell_watch's store of lt
		 * then take.  Turned level-triggered since the first load,
		 * the store may have hidden a ring made for a holder: take
		 * the doorbell properly (WATCHED). */
		if (unlikely(atomic_load(&b->lt)))
			bell__retake(b, q);
	}
}

/* Forget a stale doorbell (zero the eventfd, under dblock), ringing again
 * if items are queued: the kernel epoll is then readable only for what is
 * there.  No system call when the doorbell is not rung. */
void bell__clear(struct bell *b, struct readyq *q);
/* UNSTALE: an instance held level-triggered by a kernel epoll (port.c,
 * kheld) after one of its items stopped being ready: the doorbell taken if
 * no queued item is ready, the queue left as it is (the kernel's poll of an
 * epoll sees it not ready; its list keeps the stale entries in place until
 * it scans them, so a prune would reorder).  Rings again if one is, or
 * becomes, ready (the signal's kick after the take rings: DOORBELL).  Not
 * while a batch holds items (dozers). */
void bell__unstale(struct bell *b, struct readyq *q);
/*
 * SLEEP: a wait with nothing to collect sleeps (the caller spun already).
 * The one verb of the sleep side: a NOPOLL instance with no kernel fd, no
 * watcher and no signal mask to apply naps on its futex word (NAP) until
 * until_ns (CLOCK_MONOTONIC, < 0 none); any other counts the caller as a
 * sleeper, re-checks the queue, and sleeps in its kernel epoll through
 * kwait(arg), the caller's epoll_wait (with its timeout and signal mask),
 * whose result goes to *r (DOORBELL).  A nap that finds it must not nap
 * after all (a watcher or a kernel fd counted meanwhile) sleeps in the
 * kernel epoll instead.  Answers BELL_AWAKE without sleeping if items are
 * queued; BELL_NAPPED after a nap (*r: 0, or -EINTR: the wait returns
 * without collecting, a ring meant for it passed on); BELL_SLEPT after
 * kwait.  A cancellation point: cancelled, the caller is not counted any
 * more.
 */
enum bell_slept { BELL_AWAKE, BELL_NAPPED, BELL_SLEPT };
enum bell_slept bell_sleep(struct bell *b, struct readyq *q, bool sigmask,
			   int64_t until_ns, int (*kwait)(void *), void *arg,
			   int *r);
/*
 * DOZE: a batching wait sleeps until `want` more events (or an urgent one,
 * or its window ends): counted in `dozers`, which holds an unwatched
 * instance's kicks (`set` is not touched), and in `sleepers`; blind: the
 * doorbell is taken first, read empty under dblock (the sleep polls it
 * alone, its fd given to doze as dbfd).  The queue is re-checked after the
 * count: doze(arg, dbfd), the caller's sleep, runs only if it is empty.
 * The doze then ends (a kick if items are queued and another thread
 * sleeps), cancelled in doze too.  Returns doze's answer, or 0.
 */
int bell_doze(struct bell *b, struct readyq *q, int want, bool blind,
	      int (*doze)(void *arg, int dbfd), void *arg);
/* A wait is about to return with items still queued: ring so that a sleeper
 * or an outside poller sees them, unless the caller slept (or the instance
 * is NOPOLL without kernel fds, as bell__wanted's) and nobody else sleeps
 * or watches (its next wait finds them itself). */
void bell__settle(struct bell *b, bool slept);

/* NAP (bell_sleep): bell__unnap wakes every napper (after a seq_cst RMW
 * that makes naps wrong: a kernel fd counted in nkernel, a watcher counted,
 * a demotion begun). */
void bell__unnap(struct bell *b);

/*
 * KERNEL: the count of the instance's kernel registrations that may fire
 * (nkernel), one owner.  ctl (krec.c) counts an ADD (bell__kernel_add: then
 * naps end, NAP) and a DEL (bell__kernel_del); a nested record a MOD makes
 * silent stays counted until a wait has looked at the kernel epoll
 * (bell__kernel_stale; the wait: bell__kernel_look_begin before its call,
 * bell__kernel_looked after it); a kernel epoll whose registrations this
 * process does not all see (a fork shares it) or that is becoming the
 * whole instance (a demotion) is counted for good (bell__kernel_forever).
 * bell__kernel_none: a relaxed hint for a wait's choice of path (a wait that
 * skips the kernel epoll wrongly only looks later: never below the true
 * number).
 */
void bell__kernel_add(struct bell *b);
void bell__kernel_del(struct bell *b);
void bell__kernel_stale(struct bell *b);
void bell__kernel_forever(struct bell *b);
int bell__kernel_look_begin(struct bell *b);
void bell__kernel_looked(struct bell *b, int stale);
static inline bool bell__kernel_none(struct bell *b)
{
	return atomic_load_explicit(&b->nkernel, memory_order_relaxed) <= 0;
}
static inline int bell__kernel_count(struct bell *b)
{
	if (atomic_load_explicit(&b->ksettle, memory_order_relaxed))
		return -1;
	return atomic_load_explicit(&b->nkernel, memory_order_relaxed);
}

/* --- nesting (krec.c) --- */

/* Another instance starts (delta 1) or stops (-1) holding this one; epfd:
 * this instance's kernel epoll (-1 once closed); edge: it holds it
 * edge-triggered (counted in bell__nedge too).  Switches the doorbell's mode at
 * 0 <-> 1 (WATCHED).  Takes wlock: nests inside the holder's mtx, outside
 * q's lock.  delta 0: a holder's registration becomes (edge) or stops
 * being (!edge) edge-triggered, its count unchanged (bell__watch_edge). */
void bell_watch(struct bell *b, int epfd, uint64_t data, struct readyq *q,
		int delta, bool edge);
/* A holder's registration becomes (delta 1) or stops being (-1)
 * edge-triggered, its `watched` count unchanged: counted before the kernel
 * call that makes it edge-triggered, uncounted after the one that makes it
 * level-triggered (WATCHED). */
static inline void bell__watch_edge(int delta)
{
	atomic_fetch_add(&bell__nedge, delta);
}
/* A kernel epoll is to hold the instance edge-triggered (a uepoll_ctl into
 * a kernel epoll, before the kernel call: port__polled): the instance is
 * watched, edge-triggered, from now on, as if a uepoll instance held it so
 * (its fd exact, a ring per event: WATCHED); bell__hold_end, after the
 * call, keeps it so until bell__unhold if the call made the registration
 * (made), else ends it (unless another such hold stands).  epfd, data, q:
 * as bell_watch's. */
void bell__hold_begin(struct bell *b, int epfd, uint64_t data,
		     struct readyq *q);
void bell__hold_end(struct bell *b, int epfd, uint64_t data, struct readyq *q,
		   bool made);
/* The instance is being released (its kernel epoll closed, and with it
 * every kernel registration of it): a kernel epoll's hold ends. */
void bell__unhold(struct bell *b);
/* A kernel epoll may hold the instance edge-triggered from now on without
 * our seeing it (its kernel epoll is about to be shared by a fork):
 * watched instances ring on every event, from now on (WATCHED). */
static inline void bell__held_edge_outside(struct bell *b)
{
	if (!atomic_load_explicit(&b->xedge, memory_order_relaxed) &&
	    !atomic_exchange(&b->xedge, true))
		atomic_fetch_add(&bell__nedge, 1);
}
/* Something outside uepoll's calls polls the instance's fd after all (the
 * preload saw poll(), select() or a kernel epoll take it): NOPOLL ends for
 * good (UNNOPOLL in bell.c). */
void bell__polled_outside(struct bell *b, struct readyq *q);
/* Is any instance of the process watched?  (Lets hot paths skip the work
 * only watched instances need.) */
bool bell_any_watched(void);
/* Is any instance of the process watched and kept exact (not LAZY: an
 * edge-triggered, one-shot or outside-polled nesting exists)?  Then a read
 * that empties a source must look at its watched instances.  seq_cst loads
 * of the counts, after the caller's change of its source (LAZY in
 * bell.c). */
bool bell_any_exact(void);


/*
 * LOOK: someone looks at the instance's readiness, or is about to; the
 * doorbell's level is made right for it.  The one verb of the doorbell's
 * level, each decision here (exact: bell__exact; WATCHED's mirror, UNSTALE,
 * DOORBELL's clear, the ring a wait leaves for what it did not take):
 *  - BELL_LOOK_POLLED: poll()/select() is about to look at the fd (an exact
 *    instance: items not ready any more dropped, a stale doorbell taken);
 *  - BELL_LOOK_COLLECT: a wait is about to poll the kernel epoll (an exact
 *    instance's rung doorbell with nothing ready behind it is taken, so it
 *    does not take a slot of the kernel's batch);
 *  - BELL_LOOK_SLEEP: a wait is about to sleep (a level-triggered doorbell,
 *    watched, is mirrored first: it would wake the sleep at once);
 *  - BELL_LOOK_CHANGED: an item stopped being ready outside any wait (a
 *    watched instance mirrored unless LAZY, BELL_EXACT telling it a kernel
 *    epoll holds some instance level-triggered; one a kernel epoll holds
 *    level-triggered, BELL_KHELD, made not ready if nothing queued is:
 *    UNSTALE);
 *  - BELL_LOOK_RETURN: a wait returns (mirrored if watched and not LAZY,
 *    as CHANGED; items left:
 *    rung for a sleeper or an outside poller, unless BELL_SLEPT and nobody
 *    else sleeps or watches; none left: a stale doorbell taken for a
 *    BELL_POLL wait, one that does not block, or a BELL_KHELD instance, if
 *    exact);
 *  - BELL_LOOK_NESTED: a kernel poll of the instance's fd (nesting) is
 *    about to look: items not ready dropped (the doorbell rung again if
 *    some are kept), else the doorbell taken.  True if items are queued;
 *  - BELL_LOOK_EXACT: a holder that needs the level exact is about to
 *    register (or poll() is about to look at a holder of the instance):
 *    a doorbell left rung with nothing ready behind it taken (LAZY), the
 *    queue left in place (UNSTALE's look: a refused ctl polls nothing);
 *    a rung doorbell with something ready is left alone (no wakeup).
 * Under no lock of the instance but the caller's (mtx for NESTED and
 * CHANGED through port_revalidate); each step takes dblock where it calls.
 */
enum bell_look {
	BELL_LOOK_POLLED,
	BELL_LOOK_COLLECT,
	BELL_LOOK_SLEEP,
	BELL_LOOK_CHANGED,
	BELL_LOOK_RETURN,
	BELL_LOOK_NESTED,
	BELL_LOOK_EXACT,
};
#define BELL_SLEPT 0x100u
#define BELL_POLL 0x200u
#define BELL_KHELD 0x400u
#define BELL_EXACT 0x800u
/* LAZY (bell.c): may a watched instance leave its doorbell rung after its
 * last ready item went, for its holders' checks to take?  Not while an
 * edge-triggered or one-shot nesting exists in the process (bell__nedge),
 * or a nesting that something outside uepoll may poll (bell__nexact), nor
 * when the caller says BELL_EXACT (a kernel epoll holds some instance
 * level-triggered through uepoll_ctl: port_any_kheld).  seq_cst: after the
 * change that made the item not ready (a read's CAS of the counter),
 * against a count then look (krec.c's hold, port__looked). */
static inline bool bell__lazy(unsigned how)
{
	return !(how & BELL_EXACT) && atomic_load(&bell__nedge) == 0 &&
	       atomic_load(&bell__nexact) == 0;
}
static inline bool bell_look(struct bell *b, struct readyq *q, unsigned how)
{
	switch ((enum bell_look)(how & 0xffu)) {
	case BELL_LOOK_POLLED:
		if (bell__exact(b) && !bell__prune(b, q))
			bell__clear(b, q);
		break;
	case BELL_LOOK_COLLECT:
		if (bell__exact(b) && bell_rung(b) && !rq_prune(q))
			bell__clear(b, q);
		break;
	case BELL_LOOK_SLEEP:
		if (bell__lt(b))
			bell__mirror(b, q);
		break;
	case BELL_LOOK_CHANGED:
		if (bell_watched(b)) {
			if (!bell__lazy(how))
				bell__mirror(b, q);
		} else if (how & BELL_KHELD) {
			bell__unstale(b, q);
		}
		break;
	case BELL_LOOK_RETURN:
		if (!bell__lazy(how))
			bell__mirror(b, q);
		if (!rq_empty(q))
			bell__settle(b, how & BELL_SLEPT);
		else if ((how & (BELL_POLL | BELL_KHELD)) && bell__exact(b))
			bell__clear(b, q);
		break;
	case BELL_LOOK_NESTED:
		if (bell__prune(b, q))
			return true;
		bell__clear(b, q);
		break;
	case BELL_LOOK_EXACT:
		/* Only a level with nothing ready behind it: a take and a
		 * ring again would be a wakeup, an edge for an edge-triggered
		 * holder that the kernel does not give. */
		if (bell_rung(b) && !rq_any_ready(q))
			bell__unstale(b, q);
		break;
	}
	return !rq_empty(q);
}

/*
 * KERNEL (bell_kernel): the count of the instance's kernel registrations
 * that may fire, nkernel, one owner.  op:
 *  - BELL_K_ADD, BELL_K_DEL: ctl (krec.c) counts an ADD (naps end: NAP) or
 *    a DEL;
 *  - BELL_K_STALE: a nested record a MOD made silent stays counted until
 *    a wait has looked at the kernel epoll: BELL_K_LOOK before its call
 *    answers what that look settles, BELL_K_LOOKED(arg: that answer) after
 *    it;
 *  - BELL_K_FOREVER: a kernel epoll whose registrations this process does
 *    not all see (a fork shares it) or that is becoming the whole instance
 *    (a demotion) is counted for good;
 *  - BELL_K_NONE: 1 if none (a relaxed hint for a wait's choice of path:
 *    a wait that skips the kernel epoll wrongly only looks later; never
 *    below the true number);
 *  - BELL_K_COUNT: the count, or -1 while a MOD's look is owed (STALE) (a
 *    relaxed hint: SOLO in krec.c compares it with the records it sees).
 * Returns 0 but for BELL_K_LOOK and BELL_K_NONE.
 */
enum bell_kop {
	BELL_K_ADD,
	BELL_K_DEL,
	BELL_K_STALE,
	BELL_K_FOREVER,
	BELL_K_LOOK,
	BELL_K_LOOKED,
	BELL_K_NONE,
	BELL_K_COUNT,
};
static inline int bell_kernel(struct bell *b, enum bell_kop op, int arg)
{
	switch (op) {
	case BELL_K_ADD:
		bell__kernel_add(b);
		break;
	case BELL_K_DEL:
		bell__kernel_del(b);
		break;
	case BELL_K_STALE:
		bell__kernel_stale(b);
		break;
	case BELL_K_FOREVER:
		bell__kernel_forever(b);
		break;
	case BELL_K_LOOK:
		return bell__kernel_look_begin(b);
	case BELL_K_LOOKED:
		bell__kernel_looked(b, arg);
		break;
	case BELL_K_NONE:
		return bell__kernel_none(b);
	case BELL_K_COUNT:
		return bell__kernel_count(b);
	}
	return 0;
}

/* A FIFO follower (turn.c) starts (delta 1) or stops (-1) waiting in line:
 * it counts as a sleeper (seq_cst, against a signal's load of sleepers for
 * EPOLLEXCLUSIVE: turn.c). */
static inline void bell_follow(struct bell *b, int delta)
{
	atomic_fetch_add(&b->sleepers, delta);
}

/*
 * OUTSIDE: the instance meets a kernel epoll or a poller outside uepoll's
 * calls (port.c).  how:
 *  - BELL_OUT_POLLED: something outside uepoll polls its fd after all (the
 *    preload saw poll(), select() or a kernel epoll take it): NOPOLL ends
 *    for good (UNNOPOLL in bell.c); with BELL_OUT_HOLD as well, a kernel
 *    epoll is about to hold it edge-triggered (a uepoll_ctl into a kernel
 *    epoll, before the kernel's call): watched, edge-triggered, from now
 *    on, as if a uepoll instance held it so (WATCHED);
 *  - BELL_OUT_HELD, BELL_OUT_REFUSED: after that call, which made the
 *    registration (kept until BELL_OUT_RELEASE) or did not (the hold ends,
 *    unless another such hold stands);
 *  - BELL_OUT_RELEASE: the instance is being released (its kernel epoll
 *    closed, and with it every kernel registration of it);
 *  - BELL_OUT_SHARED: its kernel epoll is about to be shared by a fork: a
 *    kernel epoll may hold it edge-triggered without our seeing it, so
 *    watched instances ring on every event from now on (WATCHED).
 * epfd, data, q: as bell_watch's (unused by RELEASE and SHARED).
 */
#define BELL_OUT_POLLED 0x1u
#define BELL_OUT_HOLD 0x2u
#define BELL_OUT_HELD 0x4u
#define BELL_OUT_REFUSED 0x8u
#define BELL_OUT_RELEASE 0x10u
#define BELL_OUT_SHARED 0x20u
static inline void bell_outside(struct bell *b, unsigned how, int epfd,
				uint64_t data, struct readyq *q)
{
	if (how & BELL_OUT_HOLD)
		bell__hold_begin(b, epfd, data, q);
	if (how & BELL_OUT_POLLED)
		bell__polled_outside(b, q);
	if (how & (BELL_OUT_HELD | BELL_OUT_REFUSED))
		bell__hold_end(b, epfd, data, q, how & BELL_OUT_HELD);
	if (how & BELL_OUT_RELEASE)
		bell__unhold(b);
	if (how & BELL_OUT_SHARED)
		bell__held_edge_outside(b);
}

#endif
