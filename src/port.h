/* SPDX-License-Identifier: MIT */
/*
 * port.h - a uepoll instance.
 */
#ifndef UEPOLL_PORT_H
#define UEPOLL_PORT_H

#include <pthread.h>
#include <signal.h>

#include "obj.h"
#include "readyq.h"
#include "spin.h"
#include "sys.h"
#include "turn.h"
#include "wq.h"

struct krec; /* krec.h */

struct port {
	/* obj.fd: the instance's kernel epoll, its public number; obj.kfd
	 * the private duplicate every call of the library uses (obj.h). */
	struct uobj obj;
	/* Private eventfd in the kernel epoll (EPOLLIN|EPOLLET, data = the
	 * port's address): written to wake the instance's sleepers and make
	 * the public fd readable when userspace items are ready. */
	int dbfd;
	/* Serialises ctl, source removal and release; protects `items`. */
	pthread_mutex_t mtx;
	struct list items;
	/* Kernel fds registered (never below the true number). */
	_Atomic int nkernel;
	/* How many of our instances hold this one (nest records).  While
	 * watched, every signal rings the doorbell, as the kernel wakes an
	 * epoll's pollers on every event: an edge-triggered outer instance
	 * must see each one. */
	_Atomic int watched;
	/* The doorbell's mode in the kernel epoll.  Edge-triggered (default):
	 * a waiter that takes its event has consumed it.  Level-triggered
	 * while watched: the doorbell stays readable until the instance has
	 * nothing ready (port_clear_db), so the fd stays readable without a
	 * new wake, exactly as an epoll with queued items does.  Changed under
	 * wlock (krec__set_watched). */
	_Atomic bool db_lt;
	pthread_mutex_t wlock; /* watched/db_lt transitions */
	/* Kernel fd registrations with a record among krecs (round-robin or
	 * urgent): while > 0, ctl of kernel fds looks for their records. */
	_Atomic int nfdrec;
	/* Edge-triggered round-robin registrations whose move to the back of
	 * their fd's wait queue is owed (krec_rr_settle). */
	_Atomic int rr_owed;
	/* Incarnation, unique per process (see krec.inner_gen); relaxed: read
	 * by a holder that found this object through its fd and address. */
	_Atomic uint64_t gen;
	/* Nested instances and round-robin kernel fds (append-only list, see
	 * struct krec). */
	_Atomic(struct krec *) krecs;
	/* Whose turn it is, the kernel epoll's or the ready queue's, and
	 * whether the kernel's last turn filled its slots (FAIRNESS in
	 * wait.c; hints, relaxed). */
	_Atomic unsigned char side;
	_Atomic bool kfull;
	/* Which of the instance's waiting threads takes a wakeup (turn.c). */
	struct turn turn;
	/* The batching policy (struct uepoll_batch, batch.c), written under
	 * mtx; bseq is its sequence lock (odd while a write is in progress):
	 * a wait reads the four fields as one. */
	_Atomic uint32_t bseq;
	_Atomic uint32_t b_min_wait_us, b_min_events, b_inter_us, b_flags;
	/* Generation of batching waits (rq_batch.gen). */
	_Atomic uint32_t bgen;

	/* Producer side: written by signalers. */
	_Alignas(UEPOLL_CACHELINE) _Atomic int db_set;
	/* Threads inside the sleep section of port_wait. */
	_Atomic int sleepers;
	/* Batching waits sleeping through ordinary events (wait__doze): while
	 * > 0, a signal rings the doorbell itself for an EPOLLURGENT item, or
	 * when it brings bwant down to 0 (enough events for min_events or
	 * maxevents).  seq_cst: pairs with the dozer's re-check of the ready
	 * queue, as db_set does. */
	_Atomic int dozers;
	_Atomic int bwant;

	_Alignas(UEPOLL_CACHELINE) struct readyq rq;
	/* Spinning before a sleep (spin.c): written by waiters that find
	 * nothing, on a line of its own. */
	_Alignas(UEPOLL_CACHELINE) struct spin spin;
};

/* flags: EPOLL_CLOEXEC; uflags: UEPOLL_WAKE_*, UEPOLL_NOSPIN */
/* Signalers write db_set; waiters write the ready queue's consumer side: the
 * two sides of the instance never share a cache line. */
_Static_assert(offsetof(struct port, db_set) % UEPOLL_CACHELINE == 0 &&
		       offsetof(struct port, rq) - offsetof(struct port, db_set) >=
			       UEPOLL_CACHELINE,
	       "producer and consumer fields of an instance on separate lines");

int port_create(int flags, unsigned int uflags);
int port_ctl(struct port *p, int op, int fd, struct epoll_event *ev);
/* deadline: -1 blocks, 0 polls, else an absolute CLOCK_MONOTONIC time in ns. */
int port_wait(struct port *p, struct epoll_event *evs, int max,
	      int64_t deadline, const sigset_t *sigmask);
/* Called by wq_wake with the source's wq lock held.  Returns true when an
 * exclusive wakeup was consumed (stop walking).  held == NULL: ring the
 * doorbell now; else queue the item only and set *held if a ring was
 * needed (the doorbell was not rung, or the instance is held by another). */
bool port_item_signal(struct item *it, uint32_t key, bool *held);
/* A held ring comes due (wq_kick, wq lock held): ring if the item is still
 * queued, i.e. no waiter took it since. */
void port_item_kick(struct item *it);
/* For an instance held by another one: forget queued items that are not
 * ready and, if none is left, make its fd not readable, as the kernel's
 * poll of an epoll would see it.  No-op for an instance nobody holds. */
void port_revalidate(struct port *p);
/* Forget a stale doorbell (zero the eventfd), ringing again if items are
 * queued: the kernel epoll is then readable only for what is really there. */
void port_clear_db(struct port *p);
/* rq_prune, ringing when items are kept (a concurrent port_clear_db may have
 * seen the queue empty meanwhile); true when items are kept. */
bool port_prune(struct port *p);
/* Remove every item of a closed source (its wq is marked dead). */
void port_drop_source(struct wq *q);
extern const struct uobj_ops port_ops;
/* The batching policy (UEPOLL_CTL_MIN_WAIT, uepoll_batch): set (if set) and
 * return the old one in *old (if old); -EINVAL for bad values. */
struct uepoll_batch;
int port_batch(struct port *p, const struct uepoll_batch *set,
	       struct uepoll_batch *old);

/* Ring the doorbell unless it is rung already (DOORBELL in port.c).  Inline:
 * the signal path and every wait that leaves items queued come here. */
static inline void port_kick(struct port *p)
{
	if (atomic_load(&p->db_set) == 0 && atomic_exchange(&p->db_set, 1) == 0)
		sys_eventfd_signal(p->dbfd);
}

#endif
