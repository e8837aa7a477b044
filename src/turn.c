/* SPDX-License-Identifier: MIT */
/*
 * turn.c - FIFO thread order inside one instance (UEPOLL_WAKE_FIFO).
 *
 * The kernel queues the threads blocked in epoll_wait on one epoll so that
 * the last to block is the first woken (LIFO).  That is uepoll's default too:
 * its waiters block in epoll_wait on the instance's kernel epoll.  For FIFO
 * the threads of an instance form a line:
 *  - The leader (at most one thread) runs port_wait as in LIFO mode: it is
 *    the only one that sleeps in the kernel epoll, so every wakeup of the
 *    instance goes to it.
 *  - A thread that arrives while there is a leader joins the tail of the line
 *    and sleeps in ppoll() on an eventfd of its own (created for this wait:
 *    no fd outlives a wait).  ppoll applies the caller's sigmask atomically
 *    and returns EINTR after a signal handler whatever SA_RESTART says, as
 *    epoll_pwait does.
 *  - The leader, when port_wait returns (events, timeout, EINTR or an error),
 *    hands the lead to the head of the line: it marks it promoted and writes
 *    its eventfd.  So the lead, and the next event, always go to the thread
 *    that has waited longest; a thread that comes back after handling its
 *    events goes to the tail.
 *  - A follower whose timeout passes or whose sleep a signal interrupts takes
 *    the lock and leaves the line, unless it was promoted meanwhile, in which
 *    case it leads (after a timeout: one non-blocking look, as a timed-out
 *    kernel waiter also takes what is ready) or hands the lead on (EINTR).
 * Invariant (models/turn.pml): whenever the line is not empty there is a
 * leader, and the leader hands over before it returns; so a ready event never
 * waits while every thread of the instance sleeps on its own eventfd.
 *
 * Cost: a handover is one eventfd write (and the follower's wakeup) per
 * return of a leader that has followers: with several idle threads, each
 * event costs two thread wakeups instead of the kernel's one.
 *
 * LOCKING: turn->lock protects leader, the line, the members and every
 * waiter's promoted flag.  A leaf (LOCK ORDER in lock.h): nothing nests
 * inside it (port_wait runs without it).  The eventfd write of a handover is made
 * under the lock, and a follower closes its eventfd under the lock, after it
 * has left the line (promoted, or removed by itself): so no write can find
 * the eventfd closed, and `members` lists exactly the open ones (a forked
 * child closes them: turn_fork_child).
 *
 * CANCELLATION.  A follower's ppoll and the leader's port_wait are
 * cancellation points.  A cancelled follower leaves the line, or passes on
 * the lead it was just given (turn__cancelled); a cancelled leader hands
 * over (turn__handover as a cleanup handler); models/turn.pml has both.
 *
 * Followers count themselves as the bell's sleepers (bell_follow), so
 * that an exclusive or round-robin wakeup still sees the instance as idle
 * while the lead passes from one thread to the next.  (Counting more
 * sleepers only makes signalers ring the doorbell more often, which never
 * loses a wakeup.)
 */
#include <errno.h>
#include <sys/eventfd.h>

#include "bell.h"
#include "lock.h"
#include "port.h"
#include "sys.h"
#include "turn.h"

struct turn_waiter {
	struct list link;  /* in the line, until promoted or gone */
	struct list mlink; /* in members while efd is open */
	int efd;
	bool promoted; /* under turn->lock */
};

enum { TURN_LEAD = 1 };

void turn_init(struct turn *t, bool fifo)
{
	t->fifo = fifo;
	lock_init(&t->lock);
	t->leader = false;
	list_init(&t->line);
	list_init(&t->members);
}

/* The lead goes to the oldest follower, if any (lock held). */
static void turn__pass(struct turn *t)
{
	struct turn_waiter *w;

	if (list_empty(&t->line)) {
		t->leader = false;
	} else {
		w = container_of(t->line.next, struct turn_waiter, link);
		list_del(&w->link);
		w->promoted = true;
		sys_eventfd_signal(w->efd);
	}
}

/* The leader leaves (returns, or is cancelled: a cleanup handler). */
static void turn__handover(void *arg)
{
	struct turn *t = arg;

	lock_take(&t->lock);
	turn__pass(t);
	lock_drop(&t->lock);
}

/*
 * Sleep in the line.  TURN_LEAD: this thread now leads.  0: the timeout
 * passed; -EINTR: a signal handler ran (either way it has left the line).
 * The ppoll is the only cancellation point: w is then in the line, or
 * promoted (turn__cancelled).
 */
static int turn__follow(struct turn *t, struct turn_waiter *w,
			int64_t deadline, const sigset_t *sigmask)
{
	struct timespec ts;
	int r;

	for (;;) {
		if (deadline > 0)
			sys_time_left(deadline, &ts);
		r = sys_ppoll_in(w->efd, deadline > 0 ? &ts : NULL, sigmask);
		/* A timeout that came early (ppoll rounds to its clock) is
		 * slept again: the deadline is port_wait's. */
		if (r == 0 && deadline > 0 && sys_now_ns() < (uint64_t)deadline)
			continue;
		/* Whatever woke us, the lock tells: promoted is the truth (the
		 * eventfd only says so). */
		lock_take(&t->lock);
		if (w->promoted)
			break;
		if (r <= 0) {
			list_del(&w->link);
			lock_drop(&t->lock);
			return r;
		}
		lock_drop(&t->lock); /* (cannot happen) */
	}
	lock_drop(&t->lock);
	if (r != -EINTR)
		return TURN_LEAD; /* after a timeout: lead for one look */
	turn__handover(t);
	return r;
}

struct turn__ctx {
	struct port *p;
	struct turn_waiter *w;
};

/* A follower is done with its eventfd: it closes it under the lock, after
 * which no handover can write it (the leader writes under the lock too),
 * and a forked child finds every open one among members. */
static void turn__leave(struct turn__ctx *c)
{
	struct turn *t = port_turn(c->p);

	lock_take(&t->lock);
	list_del(&c->w->mlink);
	sys_close(c->w->efd);
	lock_drop(&t->lock);
	bell_follow(port_bell(c->p), -1);
}

/* A follower cancelled in its sleep: out of the line, or, if the lead was
 * just given to it, the lead passed on, as a follower interrupted by a
 * signal does. */
static void turn__cancelled(void *arg)
{
	struct turn__ctx *c = arg;
	struct turn *t = port_turn(c->p);

	lock_take(&t->lock);
	if (c->w->promoted)
		turn__pass(t);
	else
		list_del(&c->w->link);
	lock_drop(&t->lock);
	turn__leave(c);
}

void turn_fork_child(struct turn *t)
{
	struct list *l;

	/* The threads of the line did not come along: close the eventfds
	 * they slept on (the child's copies) and forget them. */
	if (!t->leader && list_empty(&t->members))
		return; /* (and write nothing: COW) */
	list_for_each(l, &t->members)
		sys_close(container_of(l, struct turn_waiter, mlink)->efd);
	list_init(&t->members);
	list_init(&t->line);
	t->leader = false;
}

int turn_wait(struct port *p, struct epoll_event *evs, int max,
	      int64_t deadline, const sigset_t *sigmask)
{
	struct turn *t = port_turn(p);
	struct turn_waiter w;
	struct turn__ctx c = { p, &w };
	int r;

	if (!t->fifo || deadline == 0 || !evs)
		return port_wait(p, evs, max, deadline, sigmask);

	lock_take(&t->lock);
	if (!t->leader) {
		t->leader = true;
		lock_drop(&t->lock);
	} else {
		w.efd = sys_eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (w.efd < 0) {
			/* No fd to sleep on (EMFILE): wait beside the line,
			 * in the kernel's order, rather than fail with an
			 * errno that epoll_wait never returns. */
			lock_drop(&t->lock);
			return port_wait(p, evs, max, deadline, sigmask);
		}
		w.promoted = false;
		list_add_tail(&t->line, &w.link);
		list_add_tail(&t->members, &w.mlink);
		/* Pairs with the exclusive-wakeup check in port_item_signal:
		 * see the comment at the top of this file. */
		bell_follow(port_bell(p), 1);
		lock_drop(&t->lock);
		pthread_cleanup_push(turn__cancelled, &c);
		r = turn__follow(t, &w, deadline, sigmask);
		pthread_cleanup_pop(0);
		turn__leave(&c);
		if (r == 0) /* timed out: one look, as the kernel's waiter */
			return port_wait(p, evs, max, 0, sigmask);
		if (r != TURN_LEAD)
			return r;
	}
	/* The leader hands over when it returns, or if it is cancelled. */
	pthread_cleanup_push(turn__handover, t);
	r = port_wait(p, evs, max, deadline, sigmask);
	pthread_cleanup_pop(1);
	return r;
}
