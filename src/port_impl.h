/* SPDX-License-Identifier: MIT */
/*
 * port_impl.h - the layout of a uepoll instance, private to the instance's
 * own files: port.c (create, ctl, signal path, release), wait.c (port_wait)
 * and krec.c (kernel-side registrations).
 * Every other module goes through port.h.
 */
#ifndef UEPOLL_PORT_IMPL_H
#define UEPOLL_PORT_IMPL_H

#include <pthread.h>

#include "batch.h"
#include "bell.h"
#include "port.h"
#include "readyq.h"
#include "spin.h"
#include "turn.h"

struct krec; /* krec.h */

struct port {
	/* obj.fd: the instance's kernel epoll, its public number; obj.kfd
	 * the private duplicate every call of the library uses (obj.h). */
	struct uobj obj;
	/* Serialises ctl, source removal and release; protects `items`. */
	pthread_mutex_t mtx;
	struct list items;
	/* Userspace sources registered: the items on `items` (written under
	 * mtx, read relaxed by waits: a hint of which path to take, KERNEL
	 * COST in wait.c). */
	_Atomic int nuser;
	/* Kernel fd registrations with a record among krecs (round-robin or
	 * urgent): while > 0, ctl of kernel fds looks for their records. */
	_Atomic int nfdrec;
	/* Edge-triggered round-robin registrations whose move to the back of
	 * their fd's wait queue is owed (krec_rr_settle). */
	_Atomic int rr_owed;
	/* DEMOTE (port.c): PORT_LIVE, PORT_DEMOTING, PORT_DEMOTED; a futex
	 * word (release/acquire: the demotion's changes before DEMOTED). */
	_Atomic int demote;
	/* The process's fork generation when the instance was made
	 * (obj_fork_gen): another one now means this process got the
	 * instance from its parent by fork, and its kernel epoll is a file
	 * both share (FORKED in port.c, port_forked).  Written once, at the
	 * creation (a fork waits for it: FENCE), so that a child writes
	 * nothing here. */
	unsigned fork_gen;
	/* A kernel epoll holds it level-triggered (uepoll_ctl's ADD or MOD
	 * into one): its fd is kept from reading ready for items that are
	 * not (UNSTALE in bell.c), for good. */
	_Atomic bool kheld;
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
	/* The batching policy (batch.c). */
	struct batch_policy batch;
	/* Generation of the waits' batches (rq_batch.gen: batching waits,
	 * waits in rounds). */
	_Atomic uint32_t bgen;

	/* The wake protocol (bell.c): its signalers' line comes first. */
	struct bell bell;

	_Alignas(UEPOLL_CACHELINE) struct readyq rq;
	/* Spinning before a sleep (spin.c): written by waiters that find
	 * nothing, on a line of its own. */
	_Alignas(UEPOLL_CACHELINE) struct spin spin;
	/* The spin of a wait on kernel fds (KERNEL SPIN in spin.c; off
	 * unless UEPOLL_SPIN_KERNEL), written by the same waiters. */
	struct spin kspin;
};

enum { PORT_LIVE = 0, PORT_DEMOTING = 1, PORT_DEMOTED = 2 };

/* A demotion has begun (DEMOTE in port.c): ctl, under mtx, leaves it to
 * the kernel (-ESTALE: port_ctl asks the kernel once it is over). */
static inline bool port_demoting(struct port *p)
{
	return atomic_load_explicit(&p->demote, memory_order_relaxed) !=
	       PORT_LIVE;
}

/* FORKED (port.c): this process got the instance from its parent by
 * fork.  A child's copy is one from before its fork, which the child
 * tells by the generation alone (nothing to write in its handler). */
static inline bool port_forked(const struct port *p)
{
	return p->fork_gen != obj_fork_gen();
}

/* flags: EPOLL_CLOEXEC; uflags: UEPOLL_WAKE_*, UEPOLL_NOSPIN,
 * UEPOLL_SPIN_KERNEL, UEPOLL_NOPOLL */
/* Signalers write the doorbell's line; waiters write the ready queue's
 * consumer side: the two sides of the instance never share a cache line. */
_Static_assert(offsetof(struct port, bell.set) % UEPOLL_CACHELINE == 0 &&
		       offsetof(struct port, rq) - offsetof(struct port, bell.set) >=
			       UEPOLL_CACHELINE,
	       "producer and consumer fields of an instance on separate lines");

#endif
