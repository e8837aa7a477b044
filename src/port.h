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
#include "turn.h"
#include "wq.h"

/*
 * A registration in our kernel epoll that a harvest must recognise: a uepoll
 * instance added to this one (inner != NULL), or a kernel fd added with
 * EPOLLROUNDROBIN (rr_events != 0) or EPOLLURGENT (urgent).  It is registered with this record's
 * address as data: a harvest recognises its events, reports the user's
 * data, and checks that a nested instance really has something (as the
 * kernel's poll of an epoll does) or moves the round-robin registration to
 * the back of the fd's wait queue.  Records are only ever appended to
 * port->krecs and freed with the port, so a harvest can walk the list
 * without a lock; a free record (inner == NULL, fd == -1) is reused.
 */
struct krec {
	struct krec *next; /* immutable once published */
	_Atomic(struct port *) inner;
	_Atomic int fd;
	_Atomic uint64_t data;
	_Atomic uint32_t rr_events; /* as registered, without EPOLLROUNDROBIN */
	/* inner->gen when it was added: a closed inner's memory and fd number
	 * may both be reused by a new instance, which this record must not
	 * be taken for (its registration went with the old one's fd). */
	_Atomic uint64_t inner_gen;
	_Atomic bool urgent;	    /* registered with EPOLLURGENT */
	_Atomic uint32_t kevents;   /* a kernel fd's events, as the kernel has
				     * them (for poll() in a blind doze) */
};

struct port {
	struct uobj obj; /* obj.fd: the instance's kernel epoll, its public fd */
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
	 * nothing ready (port__clear_db), so the fd stays readable without a
	 * new wake, exactly as an epoll with queued items does.  Changed under
	 * mtx (port__set_watched). */
	_Atomic bool db_lt;
	pthread_mutex_t wlock; /* watched/db_lt transitions */
	/* Kernel fd registrations with a record among krecs (round-robin or
	 * urgent): while > 0, ctl of kernel fds looks for their records. */
	_Atomic int nfdrec;
	/* Incarnation, unique per process (see krec.inner_gen); relaxed: read
	 * by a holder that found this object through its fd and address. */
	_Atomic uint64_t gen;
	/* Nested instances and round-robin kernel fds (append-only list, see
	 * struct krec). */
	_Atomic(struct krec *) krecs;
	/* Fairness toggle between the userspace and the kernel ready lists. */
	_Atomic unsigned flip;
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
	/* Batching waits sleeping through ordinary events (port__doze): while
	 * > 0, a signal rings the doorbell itself for an EPOLLURGENT item, or
	 * when it brings bwant down to 0 (enough events for min_events or
	 * maxevents).  seq_cst: pairs with the dozer's re-check of the ready
	 * queue, as db_set does. */
	_Atomic int dozers;
	_Atomic int bwant;

	_Alignas(UEPOLL_CACHELINE) struct readyq rq;
};

/* flags: EPOLL_CLOEXEC; uflags: UEPOLL_READYQ_*, UEPOLL_WAKE_* */
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
/* Is any instance held by another one?  (Lets the hot paths skip the work
 * only held instances need.) */
bool port_any_watched(void);
/* Remove every item of a closed source (its wq is marked dead). */
void port_drop_source(struct wq *q);
void port_release(struct uobj *o);
/* The batching policy (UEPOLL_CTL_MIN_WAIT, uepoll_batch): set (if set) and
 * return the old one in *old (if old); -EINVAL for bad values. */
struct uepoll_batch;
int port_batch(struct port *p, const struct uepoll_batch *set,
	       struct uepoll_batch *old);

#endif
