/* SPDX-License-Identifier: MIT */
/*
 * wait.c - how a thread waits on a uepoll instance (port_wait).  It takes
 * what is ready from both sides, the ready queue and the kernel epoll
 * (wait__collect), and sleeps in epoll_wait on the kernel epoll only when
 * nothing is (wait__plain); under a batching policy it collects for a window
 * and dozes through ordinary events meanwhile (wait__batch, wait__doze).
 * Before returning it keeps the public fd readable exactly while a wait
 * would return something (wait__settle).  The kernel's events are
 * translated here (wait__kernel): the doorbell's is taken out, a recorded
 * registration's (krec.c) reported with the user's data, or dropped when a
 * nested instance has nothing after all.
 *
 * This is the waiter's half of the wake protocol; its state and the
 * arguments why no wakeup is lost (DOORBELL, DOZE, WATCHED) are bell.c's,
 * and every step of it here is one of bell.h's verbs.
 *
 * LOCKING.  A wait holds no lock while it sleeps, and none of its own: it
 * takes rq->lock inside the ready queue's harvests and prunes (readyq.c),
 * and port->mtx only to move a round-robin registration whose event it
 * took (krec_rr_took, krec_rr_settle), holding nothing else then.  The rest
 * is the protocol's atomics, behind the bell's verbs.
 *
 * FAIRNESS.  The kernel keeps one ready list per epoll and rotates it: with
 * N sources ready, each is reported within N waits of maxevents 1.  An
 * instance that has kernel fds has two lists, the kernel epoll's and the
 * ready queue, and takes whole turns from each as if they were one: the
 * doorbell's event is the ready queue's place in the kernel's list.  A
 * kernel turn takes events from the kernel epoll until it reaches the
 * doorbell (or the kernel has no more); then a user turn takes one round
 * of the ready queue (the items queued when it began: ROUNDS in
 * readyq.h), then the kernel's turn again.  The doorbell must be in the
 * kernel's list while items wait, after the kernel events that are ready:
 * a kernel turn that filled its slots last time rings it first if it is
 * not rung (one eventfd write per round, only on instances with both kinds
 * ready).  The side whose turn it is is a hint shared by the instance's
 * threads (relaxed): it orders events, it never hides one.  One wait never
 * returns a registration twice: the kernel is asked again only if its
 * batch was full and the doorbell (or a stale record) took part of it, and
 * what it then gives again of the level-triggered events it returned first
 * is dropped (wait__dedup, by data: two registrations with the same data
 * count as one); the ready queue's rounds of one wait are one batch, which
 * holds what it delivered until the wait is done (ROUNDS: another thread
 * may splice what it put back into its next round).  t_fairness compares
 * every source's count and worst gap with the kernel's (1+1, 32+32, 4+4,
 * 1+7, 7+1, 3+5 sources; maxevents 1, 2, 4): equal.
 *
 * CANCELLATION.  The sleeps are cancellation points (sys.h).  Each part of
 * a wait that has something to undo registers it around the part that may
 * sleep: a sleeper's or a napper's count (bell_sleep, in bell.c), a doze
 * (wait__doze: the end of the doze), a batching wait's hold list
 * (wait__batch: rq_batch_end); a FIFO line's lead is turn.c's, the call's
 * reference api.c's.  (A plain wait's hold list, in rounds, lives inside
 * wait__collect, which has no cancellation point.)
 */
#include <errno.h>
#include <poll.h>

#include "uepoll.h"

#include "batch.h"
#include "port_impl.h"
#include "krec.h"
#include "port.h"
#include "sys.h"

static const struct timespec wait__zero;

/*
 * What a batching wait needs from wait__kernel: the start of its array
 * (entries before this call's are what it already holds), whether an urgent
 * registration's event came, and how many events were only repeats of
 * entries it holds (merged into them).
 */
struct wait__kctx {
	struct epoll_event *base;
	bool urgent;
	int repeats;
};

/* A batch holds each registration once: a kernel event whose data is that
 * of an entry collected earlier in this wait is or-ed into it.  (The kernel
 * gives back only data, so two registrations with the same data merge.) */
static bool wait__merge(struct wait__kctx *kc, struct epoll_event *at,
			const struct epoll_event *e)
{
	for (struct epoll_event *x = kc->base; x < at; x++)
		if (x->data.u64 == e->data.u64) {
			x->events |= e->events;
			kc->repeats++;
			return true;
		}
	return false;
}

/* One kernel event of a recorded registration, record n (view v): false
 * to drop it (a stale record's, a nested instance with nothing ready, an
 * edge UNPEND already reported), else its data translated and its record
 * told (round robin, one-shot; a batching wait's urgency). */
static bool wait__kernel_rec(struct port *p, struct krec *n,
			     const struct krec_view *v, struct wait__kctx *kc,
			     struct epoll_event *ev)
{
	if (n == KREC_STALE || (v->nested && !krec_nest_ready(n, 0)) ||
	    (!v->nested && krec_unpend_drop(n)))
		return false;
	if (v->rr_events)
		krec_rr_took(p, n);
	if (kc && v->urgent)
		kc->urgent = true;
	if (v->oneshot)
		krec_disarmed(n); /* DEMOTE in port.c */
	ev->data.u64 = v->data;
	return true;
}

/* The r events the kernel put at evs[k]: the doorbell's taken (*db), the
 * records' translated or dropped (*dropped counts them), a batching wait's
 * merged; the rest packed after evs[0..k).  The new count. */
static int wait__kernel_events(struct port *p, struct epoll_event *evs, int k,
			       int r, bool *db, struct wait__kctx *kc,
			       int *dropped)
{
	const uint64_t me = (uint64_t)(uintptr_t)p;
	/* After the call: a record made while it slept is found (DATA in
	 * krec.c). */
	bool recs = atomic_load_explicit(&p->krecs, memory_order_acquire);
	struct krec_view v;
	struct krec *n;

	*dropped = 0;
	for (int i = k, end = k + r; i < end; i++) {
		if (evs[i].data.u64 == me) {
			*db = true;
			bell_took(&p->bell, &p->rq);
			continue;
		}
		if (recs && (n = krec_of(p, evs[i].data.u64, &v)) &&
		    !wait__kernel_rec(p, n, &v, kc, &evs[i])) {
			++*dropped;
			continue;
		}
		if (kc && wait__merge(kc, evs, &evs[i]))
			continue;
		evs[k++] = evs[i];
	}
	return k;
}

/* epoll_wait on the kernel side (timeout == &wait__zero: without sleeping);
 * removes the doorbell's event from evs and translates (or drops, when
 * stale) the events of recorded registrations. */
static int wait__kernel(struct port *p, struct epoll_event *evs, int max,
			const struct timespec *timeout, const sigset_t *sigmask,
			bool *db, struct wait__kctx *kc, bool *full)
{
	int r, k = 0, want = max, dropped;
	/* STALE in krec.c: silent records this look settles. */
	int settle = bell_kernel(&p->bell, BELL_K_LOOK, 0);
	bool retried = false;

	*db = false;
	if (full)
		*full = false;
again:
	if (timeout == &wait__zero)
		r = sys_epoll_poll(p->obj.kfd, evs + k, want);
	else
		r = sys_epoll_sleep(p->obj.kfd, evs + k, want, timeout,
				    sigmask);
	if (unlikely(settle) && r >= 0) {
		bell_kernel(&p->bell, BELL_K_LOOKED, settle);
		settle = 0;
	}
	if (r <= 0)
		return k ? k : r;
	if (full)
		*full = r == want; /* the kernel may have more */
	k = wait__kernel_events(p, evs, k, r, db, kc, &dropped);
	/* Stale events filled the batch: ask again (without sleeping) for
	 * what they displaced.  Only when nothing real came back: a
	 * level-triggered event we returned would be queued again by the
	 * kernel and come twice. */
	if (r == want && k == 0 && dropped && !retried) {
		retried = true;
		want = max - k;
		timeout = &wait__zero;
		goto again;
	}
	return k;
}

enum { WAIT__KERNEL = 0, WAIT__USER = 1 };

/* The r kernel events at evs[n] come from a second look of one wait: drop
 * those whose data an event already in evs[0..n) has (a level-triggered
 * event the first look returned, queued again by the kernel).  As with
 * wait__merge, two registrations with the same data count as one. */
static int wait__dedup(struct epoll_event *evs, int n, int r)
{
	int k = n;

	for (int i = n; i < n + r; i++) {
		bool seen = false;

		for (int j = 0; j < n && !seen; j++)
			seen = evs[j].data.u64 == evs[i].data.u64;
		if (!seen)
			evs[k++] = evs[i];
	}
	return k - n;
}

/* A turn of wait__collect: go on to the next, or stop (slots full, or
 * nothing more for this wait); -errno: the wait's error. */
enum { WAIT__GO = 0, WAIT__STOP = 1 };

/* The ready queue's turn: its rounds go on while they are made of items
 * queued before the wait (rq_pass); at a round's end the kernel's turn
 * comes, unless the kernel has nothing more (kmore false) and the round
 * found nothing. */
static int wait__user_turn(struct port *p, struct epoll_event *evs, int max,
			   struct rq_batch *rb, struct rq_pass *ps, int *n,
			   bool kmore)
{
	int r = rq_harvest_batch(&p->rq, evs + *n, max - *n, rb, ps);

	if (r < 0)
		return r;
	*n += r;
	if (!ps->round_end)
		return WAIT__STOP; /* slots full, the round goes on */
	atomic_store_explicit(&p->side, WAIT__KERNEL, memory_order_relaxed);
	if (!kmore) {
		if (r == 0)
			return WAIT__STOP; /* nothing more for this wait */
		atomic_store_explicit(&p->side, WAIT__USER,
				      memory_order_relaxed);
	}
	return WAIT__GO;
}

/* The kernel's turn: one look without sleeping.  Asked again (a later
 * turn) only if its last batch was full and the doorbell (or a stale
 * record) took some of it (*kmore); what it gives again of this wait's
 * level-triggered events is dropped, as one epoll_wait returns a
 * registration once (wait__dedup). */
static int wait__kernel_turn(struct port *p, struct epoll_event *evs, int max,
			     struct wait__kctx *kc, int *n, int *kcalls,
			     bool *kmore)
{
	int want = max - *n, r;
	bool db, full;

	/* The ready queue's place is behind the kernel events ready now:
	 * ring the doorbell if items wait and it is not rung. */
	if (atomic_load_explicit(&p->kfull, memory_order_relaxed) &&
	    !rq_empty(&p->rq))
		(void)bell_signal(&p->bell, 0, 0, NULL, NULL);
	r = wait__kernel(p, evs + *n, want, &wait__zero, NULL, &db, kc, &full);
	if (r < 0)
		return r;
	if ((*kcalls)++ && !kc)
		r = wait__dedup(evs, *n, r);
	*n += r;
	atomic_store_explicit(&p->kfull, !db && full && r == want,
			      memory_order_relaxed);
	if (!db && full && r == want)
		return WAIT__STOP; /* the kernel's turn goes on */
	/* The doorbell's turn came, or the kernel has no more. */
	*kmore = full;
	atomic_store_explicit(&p->side, WAIT__USER, memory_order_relaxed);
	if (!db && !*kmore && rq_empty(&p->rq))
		return WAIT__STOP;
	return WAIT__GO;
}

static uint32_t wait__gen(struct port *p);

/* Take what is ready now from both sides, without sleeping (FAIRNESS),
 * turn by turn until the slots are full or nothing more is ready for this
 * wait.  rb and kc: a batching wait's (NULL otherwise).  In rounds, a plain
 * wait harvests as a batch of its own too (ROUNDS in readyq.h): its later
 * rounds are made of what the batch holds then, where another thread's
 * splice (a waiter's first harvest, a prune, a compaction) may have put a
 * level-triggered item this wait delivered and put back; held instead, it
 * goes back to the queue when the wait is done, as the kernel's transfer
 * keeps a wait's items under ep->mtx until it ends.  (Nothing here sleeps
 * or is a cancellation point: the batch ends below, however the collect
 * ends.) */
static int wait__collect(struct port *p, struct epoll_event *evs, int max,
			 struct rq_batch *rb, struct wait__kctx *kc)
{
	struct rq_batch own;
	struct rq_pass ps;
	int n = 0, r, kcalls = 0;
	bool kmore = true;

	if (bell_kernel(&p->bell, BELL_K_NONE, 0))
		return rq_harvest_batch(&p->rq, evs, max, rb, NULL);
	/* A holder of one nested instance alone: its ready queues answer
	 * (SOLO in krec.c).  Not in a batch, which merges what it takes. */
	if (!kc && (r = krec_solo(p, evs)) >= 0)
		return r;
	if (!rb) {
		rq_batch_init(&own, wait__gen(p));
		rb = &own;
	}
	/* A doorbell with nothing ready behind it would only take a slot of
	 * the kernel's batch: clear it first (a system call, but this wait
	 * makes one anyway).  Not for NOPOLL (bell_look): the kernel's turn
	 * below takes the stale event itself (bell_took), with no call. */
	(void)bell_look(&p->bell, &p->rq, BELL_LOOK_COLLECT);
	rq_pass_init(&ps);
	for (int pass = 0; pass < 8 && n < max; pass++) {
		if (atomic_load_explicit(&p->side, memory_order_relaxed) ==
		    WAIT__USER)
			r = wait__user_turn(p, evs, max, rb, &ps, &n, kmore);
		else
			r = wait__kernel_turn(p, evs, max, kc, &n, &kcalls,
					      &kmore);
		if (r < 0) {
			if (!n)
				n = r;
			break;
		}
		if (r == WAIT__STOP)
			break;
	}
	if (rb == &own)
		rq_batch_end(&p->rq, &own);
	return n;
}

/*
 * Before returning: keep the public fd readable if items are still queued,
 * and, for a non-blocking wait that found nothing (how an outer event loop
 * learns that the fd's readiness was stale), take the stale doorbell event so
 * the fd is not left readable with nothing to return.  A wait that returned
 * events leaves a stale doorbell alone: a busy loop then makes no system call.
 * A NOPOLL instance has no outer event loop to show it to (bell__exact): its
 * polling loop makes none either, found something or not.
 */
static void wait__settle(struct port *p, bool poll, bool slept)
{
	/* An instance watched by another one keeps its fd exact (unless
	 * LAZY in bell.c: its holders' checks take a stale doorbell); items
	 * left (beyond maxevents, or level-triggered ones put back): a
	 * sleeper or an outside poller must see them; nothing left: a stale
	 * doorbell goes (a poll; an instance a kernel epoll holds
	 * level-triggered, UNSTALE, at every wait). */
	(void)bell_look(&p->bell, &p->rq,
			BELL_LOOK_RETURN | (slept ? BELL_SLEPT : 0) |
				(poll ? BELL_POLL : 0) |
				(atomic_load_explicit(&p->kheld,
						      memory_order_relaxed)
					 ? BELL_KHELD
					 : 0) |
				(port_any_kheld() ? BELL_EXACT : 0));
}

static bool wait__ready(void *p)
{
	return !rq_empty(&((struct port *)p)->rq);
}

/* KERNEL SPIN's poll: the ready queue (unless the instance coalesces its
 * wakeups: a spin must not take a held item at once, SPIN in spin.c), then
 * the kernel epoll's fd, readable while a kernel fd's registration is
 * ready or the doorbell rung.  Non-consuming: the caller collects. */
static bool wait__kready(void *arg)
{
	struct port *p = arg;

	if (!spin_was_deferred(&p->spin) && !rq_empty(&p->rq))
		return true;
	return sys_poll_now(p->obj.kfd, POLLIN) & POLLIN;
}

/*
 * The spin before a sleep (SPIN, KERNEL SPIN in spin.c), until the wait's
 * deadline at most: true if something became ready meanwhile.  With kernel
 * set (a plain wait, no signal mask, none yet in this wait) an instance
 * made with UEPOLL_SPIN_KERNEL that has kernel fds polls its kernel epoll
 * and its ready queue; else an instance with userspace sources polls its
 * ready queue (KERNEL COST), the kernel fds' events waiting for the sleep.
 * A kernel spin needs no signal of its own: a handler that runs during it
 * runs, as far as the caller can tell, before the call; with a signal mask
 * it would run where the mask blocks it, so a wait with one does not make
 * it.  *kspun: a kernel spin was made.
 */
static bool wait__spin(struct port *p, int64_t until, bool kernel,
		       bool *kspun)
{
	if (kernel && !spin_off(&p->kspin) &&
	    !bell_kernel(&p->bell, BELL_K_NONE, 0)) {
		*kspun = true;
		return spin_wait(&p->kspin, wait__kready, p, until);
	}
	return atomic_load_explicit(&p->nuser, memory_order_relaxed) > 0 &&
	       spin_wait(&p->spin, wait__ready, p, until);
}

/* The sleep in the kernel epoll (bell_sleep's kwait). */
struct wait__ksleep {
	struct port *p;
	struct epoll_event *evs;
	int max;
	const struct timespec *timeout;
	const sigset_t *sigmask;
	bool *db;
	struct wait__kctx *kc;
};

static int wait__ksleep(void *arg)
{
	struct wait__ksleep *k = arg;

	return wait__kernel(k->p, k->evs, k->max, k->timeout, k->sigmask,
			    k->db, k->kc, NULL);
}

/*
 * The sleep of a wait: spin a little first (wait__spin; until: the wait's
 * deadline, -1 none; kernel and *kspun: its), then bell_sleep (SLEEP in
 * bell.h: a nap on a futex, or a sleep in the kernel epoll, where the
 * doorbell and kernel fds wake us).  A level-triggered doorbell (a watched
 * instance) would wake us at once: it is cleared first unless something is
 * really ready.  Returns false, without sleeping, if items are queued or
 * the spin saw something ready; else true with the sleep's result in *r (a
 * nap's: 0 or -EINTR, and no doorbell event).
 */
static bool wait__sleep(struct port *p, struct epoll_event *evs, int max,
			int64_t until, const struct timespec *timeout,
			const sigset_t *sigmask, bool *db,
			struct wait__kctx *kc, bool kernel, bool *kspun,
			int *r)
{
	struct wait__ksleep ks = { p, evs, max, timeout, sigmask, db, kc };
	struct timespec left;

	(void)bell_look(&p->bell, &p->rq, BELL_LOOK_SLEEP);
	if (wait__spin(p, until, kernel, kspun))
		return false;
	/* The sleep ends at the wait's deadline, not a spin's length after
	 * it (a clock read, no system call). */
	if (timeout && until >= 0) {
		sys_time_left(until, &left);
		ks.timeout = &left;
	}
	switch (bell_sleep(&p->bell, &p->rq, sigmask != NULL, until,
			   wait__ksleep, &ks, r)) {
	case BELL_AWAKE:
		return false;
	case BELL_NAPPED:
		/* Woken, timed out or interrupted: the caller collects (a
		 * stale wake finds nothing and sleeps again). */
		*db = false;
		return true;
	default:
		return true;
	}
}

/*
 * KERNEL COST.  A blocking wait on an instance with kernel fds costs what
 * the kernel's does: one epoll_wait, whether it finds events or sleeps.
 * When the ready queue is empty there is no user turn to take (FAIRNESS),
 * so the wait goes straight to the blocking epoll_wait on the kernel
 * epoll, which returns at once what is ready there, the doorbell
 * included, instead of polling it first and then sleeping in it.  The
 * exception is an instance that has userspace sources and may spin: its
 * spin must not hold back kernel events that are ready already, so it
 * polls the kernel first as before (two calls when it then sleeps).  A
 * zero-timeout wait makes its one poll either way.  So does an instance
 * whose kernel spin (KERNEL SPIN in spin.c) has a budget: what is ready
 * already costs it the one call, as the kernel's wait, not a spin's poll
 * and a collect after it (a peer on the same CPU answers while the waiter
 * is preempted: sockpp same-cpu); only what is not yet ready is spun for.
 */
static bool wait__direct(struct port *p, int64_t deadline)
{
	if (deadline == 0 ||
	    bell_kernel(&p->bell, BELL_K_NONE, 0) ||
	    !rq_empty(&p->rq) || spin_armed(&p->kspin))
		return false;
	return atomic_load_explicit(&p->nuser, memory_order_relaxed) <= 0 ||
	       spin_off(&p->spin);
}

/* A wait without batching: returns as soon as it has events.  It spins on
 * kernel fds once at most (KERNEL SPIN: a spin that saw the kernel epoll
 * readable and then collected nothing, a stale event, does not make it spin
 * on), and collects without sleeping after a spin that saw something
 * (look). */
static int wait__plain(struct port *p, struct epoll_event *evs, int max,
		       int64_t deadline, const sigset_t *sigmask)
{
	struct timespec ts;
	bool db, kspun = false, look = false;
	int n, r;

	for (;;) {
		if (look || !wait__direct(p, deadline)) {
			n = wait__collect(p, evs, max, NULL, NULL);
			if (n != 0 || deadline == 0) {
				if (n >= 0)
					wait__settle(p, n == 0, false);
				return n;
			}
		}
		if (deadline > 0) {
			sys_time_left(deadline, &ts);
			if (!ts.tv_sec && !ts.tv_nsec)
				return 0;
		}
		look = !wait__sleep(p, evs, max, deadline,
				    deadline > 0 ? &ts : NULL, sigmask, &db,
				    NULL, !sigmask && !kspun, &kspun, &r);
		if (look)
			continue;
		if (r < 0)
			return r;
		if (r > 0 || db) {
			if (r < max) {
				n = rq_harvest(&p->rq, evs + r, max - r);
				if (n > 0)
					r += n;
			}
			if (r > 0) {
				wait__settle(p, false, true);
				return r;
			}
		}
		/* A stale doorbell or a timeout: go round; the deadline check
		 * above ends a timed-out wait (after one more collect unless
		 * it goes direct: the kernel's epoll_wait returns 0 then too). */
	}
}

/* The timeout of a sleep that must end at until (absolute ns). */
static struct timespec *wait__until(int64_t until, struct timespec *ts)
{
	if (until == BATCH_NEVER)
		return NULL;
	sys_time_left(until, ts);
	return ts;
}

/* A generation for a wait's batch (rq_batch.gen), never 0.  (Relaxed: a
 * unique value is all it gives; rq->lock orders the marks made with it.) */
static uint32_t wait__gen(struct port *p)
{
	uint32_t g;

	do
		g = atomic_fetch_add_explicit(&p->bgen, 1,
					      memory_order_relaxed) + 1;
	while (!g);
	return g;
}

/* Urgent kernel registrations a blind doze also polls (beyond: they wake it
 * when the window closes). */
#define WAIT__BLIND_URGENT 32

/* A doze's sleep (bell_doze's callback), with the wait's arguments. */
struct wait__dctx {
	struct port *p;
	struct epoll_event *evs;
	int max;
	int64_t until;
	bool blind;
	const sigset_t *sigmask;
	bool *db;
	struct wait__kctx *kc;
};

/* The sleep of a doze: in the kernel epoll, or, blind, on the doorbell
 * (dbfd) and the urgent kernel registrations (none is held: one would
 * have ended the batch). */
static int wait__dozing(void *arg, int dbfd)
{
	struct wait__dctx *d = arg;
	struct pollfd pfd[1 + WAIT__BLIND_URGENT];
	struct timespec ts;
	struct krec *n;
	int r, npfd = 1;

	if (!d->blind)
		return wait__kernel(d->p, d->evs, d->max,
				    wait__until(d->until, &ts), d->sigmask,
				    d->db, d->kc, NULL);
	pfd[0].fd = dbfd;
	pfd[0].events = POLLIN;
	for (n = atomic_load_explicit(&d->p->krecs, memory_order_acquire);
	     n && npfd < 1 + WAIT__BLIND_URGENT; n = n->next) {
		int fd = atomic_load_explicit(&n->fd, memory_order_acquire);

		if (fd < 0 ||
		    !atomic_load_explicit(&n->urgent, memory_order_relaxed))
			continue;
		/* The epoll bits below are poll's own. */
		pfd[npfd].fd = fd;
		pfd[npfd++].events = (short)(
			atomic_load_explicit(&n->kevents,
					     memory_order_relaxed) &
			(EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP |
			 EPOLLRDNORM | EPOLLRDBAND | EPOLLWRNORM |
			 EPOLLWRBAND));
	}
	r = sys_ppoll(pfd, (nfds_t)npfd, wait__until(d->until, &ts),
		      d->sigmask);
	return r < 0 ? r : 0;
}

/*
 * A batching wait with its window open sleeps through ordinary events until
 * `until` (bell_doze: DOZE in bell.c): a signal neither makes a system call
 * nor wakes anyone, and an urgent item or the event that makes `want`
 * rings anyway.  Kernel fds still wake it (they reach the kernel epoll
 * directly), except in `blind` mode, when a level-triggered kernel fd the
 * batch holds keeps the kernel epoll readable: then it sleeps on the
 * doorbell and the urgent kernel registrations alone (polled for the
 * events they were registered for; a spurious wake only makes it collect
 * and doze again).  Returns the kernel events it took (into evs), 0, or
 * -errno.
 */
static int wait__doze(struct port *p, struct epoll_event *evs, int max,
		      int64_t until, int want, bool blind,
		      const sigset_t *sigmask, bool *db,
		      struct wait__kctx *kc)
{
	struct wait__dctx d = { p, evs, max, until, blind, sigmask, db, kc };

	*db = false;
	return bell_doze(&p->bell, &p->rq, want, blind, wait__dozing, &d);
}

/*
 * A wait under a batching policy (batch.h has the rule; include/uepoll.h
 * states it).  It collects (ready queue, and kernel events with a
 * zero-timeout epoll_wait when the instance has kernel fds) as long as
 * something is there, and sleeps only when nothing is: in the window it
 * dozes, else it sleeps as a plain wait does, woken by the first event
 * (with the ready queue's spin, never the kernel fds': the policy's window
 * is what it asked for instead).
 */
struct wait__bctx {
	struct port *p;
	struct rq_batch *rb;
};

static void wait__batch_end(void *arg)
{
	struct wait__bctx *c = arg;

	rq_batch_end(&c->p->rq, c->rb);
}

static int wait__batch(struct port *p, struct epoll_event *evs, int max,
		       int64_t deadline, const sigset_t *sigmask,
		       const struct uepoll_batch *pol)
{
	struct wait__kctx kc = { .base = evs };
	struct wait__bctx bc;
	struct rq_batch rb;
	struct batch b;
	struct timespec ts;
	int64_t now, until;
	bool slept = false, blind = false, doze, dozed, db, kspun = false;
	int r = 0, got, want;

	rq_batch_init(&rb, wait__gen(p));
	batch_start(&b, pol, max, deadline, (int64_t)sys_now_ns());
	bc.p = p;
	bc.rb = &rb;
	/* The items the batch holds go back to the queue however the wait
	 * ends, a cancellation included. */
	pthread_cleanup_push(wait__batch_end, &bc);
	for (;;) {
		got = wait__collect(p, evs + b.n, max - b.n, &rb, &kc);
		if (got < 0) {
			r = got;
			break;
		}
		now = (int64_t)sys_now_ns();
		batch_add(&b, got, rb.urgent || kc.urgent, now);
		if (batch_due(&b, now, &until, &doze, &want))
			break;
		kc.repeats = 0;
		dozed = doze && !bell_watched(&p->bell);
		if (dozed) {
			got = wait__doze(p, evs + b.n, max - b.n, until, want,
					 blind, sigmask, &db, &kc);
		} else if (!wait__sleep(p, evs + b.n, max - b.n,
				       until == BATCH_NEVER ? -1 : until,
				       wait__until(until, &ts), sigmask, &db,
				       &kc, false, &kspun, &got)) {
			/* As a plain wait sleeps (an instance watched by
			 * another one keeps its doorbell for its holders:
			 * WATCHED); items came meanwhile: collect them. */
			continue;
		}
		slept = true;
		if (got < 0) {
			/* Rule 7: a signal ends the wait with what is there
			 * (as the kernel's ep_poll prefers events to EINTR),
			 * dozing having left some uncollected. */
			r = got;
			if (r == -EINTR) {
				got = wait__collect(p, evs + b.n, max - b.n,
						    &rb, &kc);
				if (got > 0)
					b.n += got;
			}
			break;
		}
		batch_add(&b, got, kc.urgent, (int64_t)sys_now_ns());
		/* Woken only by kernel events the batch holds already: a
		 * level-triggered kernel fd keeps the epoll readable.  A doze
		 * goes on blind; a watched instance (which cannot doze: its
		 * holders see its doorbell) returns rather than spin. */
		if (got == 0 && kc.repeats > 0 && !db) {
			if (!dozed)
				break;
			blind = true;
		}
	}
	pthread_cleanup_pop(1);
	if (b.n > 0) {
		wait__settle(p, false, slept);
		return b.n;
	}
	if (r < 0)
		return r;
	wait__settle(p, !slept, slept);
	return 0;
}

int port_wait(struct port *p, struct epoll_event *evs, int max,
	      int64_t deadline, const sigset_t *sigmask)
{
	struct uepoll_batch pol;
	int n;

	if (!evs) {
		/* The kernel faults only when it has an event to copy. */
		n = rq_harvest(&p->rq, NULL, max);
		return n < 0 || deadline != 0 ? -EFAULT : 0;
	}
	/* RR-ET (krec.c): moves owed to drained edge-triggered round-robin
	 * registrations, before this wait may sleep on them. */
	if (unlikely(atomic_load_explicit(&p->rr_owed, memory_order_relaxed)))
		krec_rr_settle(p);
	/* A timeout of 0 never batches. */
	if (deadline != 0) {
		batch_get(&p->batch, &pol);
		if (batch_active(&pol))
			return wait__batch(p, evs, max, deadline, sigmask, &pol);
	}
	return wait__plain(p, evs, max, deadline, sigmask);
}
