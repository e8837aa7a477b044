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
 * This is the waiter's half of the wake protocol: DOORBELL and DOZE in
 * port.c state it together with the signaler's half, and why no wakeup is
 * lost between them.
 *
 * LOCKING.  A wait holds no lock while it sleeps, and none of its own: it
 * takes rq->lock inside the ready queue's harvests and prunes (readyq.c),
 * and port->mtx only to rotate a round-robin registration whose event it
 * took (krec_rr_rotate), holding nothing else then.  The rest is the
 * protocol's seq_cst atomics: db_set, sleepers, dozers, bwant.
 */
#include <errno.h>
#include <poll.h>

#include "uepoll.h"

#include "batch.h"
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

/* epoll_wait on the kernel side; removes the doorbell's event from evs and
 * translates (or drops, when stale) the events of recorded registrations. */
static int wait__kernel(struct port *p, struct epoll_event *evs, int max,
			const struct timespec *timeout, const sigset_t *sigmask,
			bool *db, struct wait__kctx *kc)
{
	const uint64_t me = (uint64_t)(uintptr_t)p;
	bool recs = atomic_load_explicit(&p->krecs, memory_order_relaxed);
	struct krec *n;
	int r, i, end, k = 0, want = max;
	bool retried = false;

	*db = false;
again:
	r = sys_epoll_wait(p->obj.fd, evs + k, want, timeout, sigmask);
	if (r <= 0)
		return k ? k : r;
	for (i = k, end = k + r; i < end; i++) {
		if (evs[i].data.u64 == me) {
			/* An edge-triggered doorbell's event is consumed by
			 * being taken (store before anything else can return:
			 * a stale db_set == 1 would strand every sleeper); a
			 * level-triggered one stays until port_clear_db. */
			*db = true;
			if (!atomic_load(&p->db_lt))
				atomic_store(&p->db_set, 0);
			continue;
		}
		if (recs && (n = krec_of(p, evs[i].data.u64))) {
			if (atomic_load_explicit(&n->inner,
						 memory_order_relaxed)) {
				if (!krec_nest_ready(n, 0))
					continue;
			} else if (atomic_load_explicit(&n->rr_events,
							memory_order_relaxed)) {
				krec_rr_rotate(p, n);
			}
			if (kc && atomic_load_explicit(&n->urgent,
						       memory_order_relaxed))
				kc->urgent = true;
			evs[i].data.u64 = atomic_load_explicit(
				&n->data, memory_order_relaxed);
		}
		if (kc && wait__merge(kc, evs, &evs[i]))
			continue;
		evs[k++] = evs[i];
	}
	/* The doorbell or a stale nested instance filled the batch: ask again
	 * (without sleeping) for what they displaced.  Only when nothing real
	 * came back: a level-triggered event we returned would be queued
	 * again by the kernel and come twice. */
	if (r == want && k == 0 && !retried &&
	    atomic_load_explicit(&p->nkernel, memory_order_relaxed)) {
		retried = true;
		want = max - k;
		timeout = &wait__zero;
		goto again;
	}
	return k;
}

/* Take what is ready now from both sides, without sleeping.  rb and kc:
 * a batching wait's (NULL otherwise). */
static int wait__collect(struct port *p, struct epoll_event *evs, int max,
			 struct rq_batch *rb, struct wait__kctx *kc)
{
	bool kernel = atomic_load_explicit(&p->nkernel, memory_order_relaxed) > 0;
	bool kfirst, db;
	int n = 0, r;

	/* Alternate which side goes first so neither starves the other; but
	 * while the doorbell may be pending in the kernel epoll, the kernel
	 * goes first with the whole batch, so that the slot the doorbell takes
	 * is one the ready queue can fill instead of a displaced kernel event. */
	/* A doorbell with nothing ready behind it would only take a slot of
	 * the kernel's batch: clear it first (a system call, but this wait
	 * makes one anyway). */
	if (kernel && atomic_load(&p->db_set) && !rq_prune(&p->rq))
		port_clear_db(p);
	kfirst = kernel && (atomic_load(&p->db_set) ||
			    (atomic_fetch_add_explicit(&p->flip, 1,
						       memory_order_relaxed) & 1));
	if (kfirst) {
		n = wait__kernel(p, evs, max, &wait__zero, NULL, &db, kc);
		if (n < 0)
			return n;
	}
	if (n < max) {
		r = rq_harvest_batch(&p->rq, evs + n, max - n, rb);
		if (r < 0)
			return r;
		n += r;
	}
	if (kernel && !kfirst && n < max) {
		r = wait__kernel(p, evs + n, max - n, &wait__zero, NULL, &db,
				 kc);
		if (r < 0)
			return n ? n : r;
		n += r;
	}
	return n;
}

/*
 * Before returning: keep the public fd readable if items are still queued,
 * and, for a non-blocking wait that found nothing (how an outer event loop
 * learns that the fd's readiness was stale), take the stale doorbell event so
 * the fd is not left readable with nothing to return.  A wait that returned
 * events leaves a stale doorbell alone: a busy loop then makes no system call.
 */
static void wait__settle(struct port *p, bool poll, bool slept)
{
	/* An instance held by another one keeps its fd exact. */
	port_revalidate(p);
	if (!rq_empty(&p->rq)) {
		/*
		 * Items left (beyond maxevents, or level-triggered ones put
		 * back).  Ring, so that a sleeper or an outside poller sees
		 * them.  Except after a blocking wait that slept, when no other
		 * thread sleeps here: then the ring would only make this
		 * thread's next wait return at once (a write and an epoll_wait
		 * per event, in every ping-pong); the caller's next wait finds
		 * the items itself.  (seq_cst: a thread that starts sleeping
		 * counts itself, then looks at the queue.)
		 */
		if (!slept || atomic_load(&p->sleepers) > 0 ||
		    atomic_load_explicit(&p->watched, memory_order_relaxed))
			port_kick(p);
		return;
	}
	if (poll)
		port_clear_db(p);
}

static bool wait__ready(void *p)
{
	return !rq_empty(&((struct port *)p)->rq);
}

/*
 * The sleep of a wait (DOORBELL in port.c): spin a little first (SPIN in
 * spin.c; until: the wait's deadline, -1 none), count ourselves in sleepers,
 * re-check the ready queue, then sleep in the kernel epoll, where the
 * doorbell and kernel fds wake us.  A level-triggered doorbell (a held
 * instance) would wake us at once: it is cleared first unless something is
 * really ready.  Returns false, without sleeping, if items are queued;
 * else true with wait__kernel's result in *r.
 */
static bool wait__sleep(struct port *p, struct epoll_event *evs, int max,
			int64_t until, const struct timespec *timeout,
			const sigset_t *sigmask, bool *db,
			struct wait__kctx *kc, int *r)
{
	if (atomic_load(&p->db_lt))
		port_revalidate(p);
	if (spin_wait(&p->spin, wait__ready, p, until))
		return false;
	atomic_fetch_add(&p->sleepers, 1);
	if (!rq_empty(&p->rq)) {
		atomic_fetch_sub(&p->sleepers, 1);
		return false;
	}
	*r = wait__kernel(p, evs, max, timeout, sigmask, db, kc);
	atomic_fetch_sub(&p->sleepers, 1);
	return true;
}

/* A wait without batching: returns as soon as it has events. */
static int wait__plain(struct port *p, struct epoll_event *evs, int max,
		       int64_t deadline, const sigset_t *sigmask)
{
	struct timespec ts;
	bool db;
	int n, r;

	for (;;) {
		n = wait__collect(p, evs, max, NULL, NULL);
		if (n != 0 || deadline == 0) {
			if (n >= 0)
				wait__settle(p, n == 0, false);
			return n;
		}
		if (deadline > 0) {
			sys_time_left(deadline, &ts);
			if (!ts.tv_sec && !ts.tv_nsec)
				return 0;
		}
		if (!wait__sleep(p, evs, max, deadline, deadline > 0 ? &ts : NULL,
				 sigmask, &db, NULL, &r))
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
		 * above ends a timed-out wait after one more collect. */
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

/* A generation for a batching wait (rq_batch.gen), never 0. */
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

/*
 * A batching wait with its window open sleeps through ordinary events until
 * `until`: it holds db_set at 1, so that a signal neither makes a system call
 * nor wakes anyone, and counts itself in dozers, so that an urgent item or
 * the event that makes `want` rings anyway (port__wake_dozer).  Kernel fds
 * still wake it (they reach the kernel epoll directly), except in `blind`
 * mode, when a level-triggered kernel fd the batch holds keeps the kernel
 * epoll readable: then it sleeps on the doorbell and the urgent kernel
 * registrations alone (polled for the events they were registered for; a
 * spurious wake only makes it collect and doze again).  Like any sleep it
 * counts itself in sleepers and re-checks the ready queue first.  Returns
 * the kernel events it took (into evs), 0, or -errno.
 */
static int wait__doze(struct port *p, struct epoll_event *evs, int max,
		      int64_t until, int want, bool blind,
		      const sigset_t *sigmask, bool *db,
		      struct wait__kctx *kc)
{
	struct pollfd pfd[1 + WAIT__BLIND_URGENT];
	struct timespec ts;
	struct krec *n;
	uint64_t v;
	int r = 0, npfd = 1;

	*db = false;
	/* seq_cst, before the queue is re-checked: pairs with the signal
	 * path's load of dozers after its enqueue (port__wake_dozer). */
	atomic_fetch_add(&p->dozers, 1);
	atomic_store(&p->bwant, want);
	/* An event pending behind db_set == 1 wakes the sleep below at once
	 * (or, blind, is cleared: the re-check below finds its item). */
	atomic_store(&p->db_set, 1);
	atomic_fetch_add(&p->sleepers, 1);
	if (blind)
		sys_read(p->dbfd, &v, sizeof(v));
	if (rq_empty(&p->rq)) {
		if (blind) {
			/* The doorbell, and the urgent kernel registrations
			 * (none is held: one would have ended the batch). */
			pfd[0].fd = p->dbfd;
			pfd[0].events = POLLIN;
			for (n = atomic_load_explicit(&p->krecs,
						      memory_order_acquire);
			     n && npfd < 1 + WAIT__BLIND_URGENT; n = n->next) {
				int fd = atomic_load_explicit(
					&n->fd, memory_order_acquire);

				if (fd < 0 || !atomic_load_explicit(
						      &n->urgent,
						      memory_order_relaxed))
					continue;
				/* The epoll bits below are poll's own. */
				pfd[npfd].fd = fd;
				pfd[npfd++].events = (short)(
					atomic_load_explicit(
						&n->kevents,
						memory_order_relaxed) &
					(EPOLLIN | EPOLLOUT | EPOLLPRI |
					 EPOLLRDHUP | EPOLLRDNORM |
					 EPOLLRDBAND | EPOLLWRNORM |
					 EPOLLWRBAND));
			}
			r = ppoll(pfd, (nfds_t)npfd, wait__until(until, &ts),
				  sigmask);
			r = r < 0 ? -errno : 0;
		} else {
			r = wait__kernel(p, evs, max, wait__until(until, &ts),
					 sigmask, db, kc);
		}
	}
	atomic_fetch_sub(&p->sleepers, 1);
	atomic_store(&p->bwant, 0);
	atomic_fetch_sub(&p->dozers, 1);
	/* Give the doorbell back: db_set == 1 with no event behind it would
	 * strand other sleepers.  Items queued meanwhile are this wait's to
	 * collect, unless someone else sleeps (seq_cst: a thread that starts
	 * sleeping counts itself, then looks at the queue). */
	atomic_store(&p->db_set, 0);
	if (!rq_empty(&p->rq) && atomic_load(&p->sleepers) > 0)
		port_kick(p);
	return r;
}

/*
 * A wait under a batching policy (batch.h has the rule; include/uepoll.h
 * states it).  It collects (ready queue, and kernel events with a
 * zero-timeout epoll_wait when the instance has kernel fds) as long as
 * something is there, and sleeps only when nothing is: in the window it
 * dozes, else it sleeps as a plain wait does, woken by the first event.
 */
static int wait__batch(struct port *p, struct epoll_event *evs, int max,
		       int64_t deadline, const sigset_t *sigmask,
		       const struct uepoll_batch *pol)
{
	struct wait__kctx kc = { .base = evs };
	struct rq_batch rb;
	struct batch b;
	struct timespec ts;
	int64_t now, until;
	bool slept = false, blind = false, doze, dozed, db;
	int r = 0, got, want;

	rq_batch_init(&rb, wait__gen(p));
	batch_start(&b, pol, max, deadline, (int64_t)sys_now_ns());
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
		dozed = doze && !atomic_load_explicit(&p->watched,
						      memory_order_relaxed);
		if (dozed) {
			got = wait__doze(p, evs + b.n, max - b.n, until, want,
					 blind, sigmask, &db, &kc);
		} else if (!wait__sleep(p, evs + b.n, max - b.n,
				       until == BATCH_NEVER ? -1 : until,
				       wait__until(until, &ts), sigmask, &db,
				       &kc, &got)) {
			/* As a plain wait sleeps (an instance held by
			 * another one rings on every event anyway); items
			 * came meanwhile: collect them. */
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
		 * goes on blind; a held instance (which cannot doze: it rings
		 * on every event) returns rather than spin. */
		if (got == 0 && kc.repeats > 0 && !db) {
			if (!dozed)
				break;
			blind = true;
		}
	}
	rq_batch_end(&p->rq, &rb);
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
	/* A timeout of 0 never batches. */
	if (deadline != 0) {
		batch_get(p, &pol);
		if (batch_active(&pol))
			return wait__batch(p, evs, max, deadline, sigmask, &pol);
	}
	return wait__plain(p, evs, max, deadline, sigmask);
}
