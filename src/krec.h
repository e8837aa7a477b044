/* SPDX-License-Identifier: MIT */
/*
 * krec.h - the kernel-side registrations of an instance that a harvest must
 * recognise (krec.c).
 */
#ifndef UEPOLL_KREC_H
#define UEPOLL_KREC_H

#include "unpend.h"
#include "port.h"

/*
 * A registration in our kernel epoll that a harvest must recognise: a uepoll
 * instance added to this one (inner != NULL), or a kernel fd added with
 * EPOLLROUNDROBIN (rr_events != 0) or EPOLLURGENT (urgent).  It is
 * registered with the record's address and its tag as data (krec__data):
 * a harvest recognises its events, reports the user's data, and checks that
 * a nested instance really has something (as the kernel's poll of an epoll
 * does) or moves the round-robin registration to the back of the fd's wait
 * queue.  Records are only ever appended to port->krecs and freed with the
 * port, so a harvest can walk the list without a lock; a free record
 * (inner == NULL, fd == -1) is reused.  The tag changes whenever the
 * registration a record stands for changes (ADD, MOD, DEL): an event the
 * kernel gave for an earlier one is dropped, never translated with another
 * registration's data (DATA in krec.c).
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
	_Atomic uint32_t tag;	    /* DATA in krec.c; the holder's mtx */
	/* An edge-triggered round-robin registration took an event: its move
	 * to the back of the line waits until the fd is drained (RR-ET). */
	_Atomic bool rr_owed;
	/* The events the kernel registration has (ours taken out), stored
	 * with the other fields; and whether a harvest reported an
	 * EPOLLONESHOT one since (the kernel disarmed it): what a demotion
	 * gives the kernel back with the user's data (DEMOTE in port.c). */
	_Atomic uint32_t kreg;
	_Atomic bool disarmed;
	/* A nested instance registered without EPOLLIN or EPOLLRDNORM
	 * (SILENT in krec.c); the holder's mtx. */
	_Atomic bool silent;
	/* A loud nested instance registered EPOLLET or EPOLLONESHOT: counted
	 * in bell__nedge as an edge-triggered nesting (WATCHED in bell.c; a
	 * one-shot one needs the levels exact too: LAZY); the holder's
	 * mtx. */
	_Atomic bool edge;
	/* A loud nested instance whose holder or inner was not NOPOLL when it
	 * became loud: counted in bell__nexact (LAZY in bell.c); the holder's
	 * mtx (taken by exchange at the release). */
	_Atomic bool exact;
	/* UNPEND (unpend.c): the probe of a registration made for an edge the
	 * program had taken, until the ADD's report is decided; else -1.
	 * Taken by exchange: whoever takes it decides. */
	_Atomic int probe;
};

/* What krec_of found for an event's data. */
#define KREC_STALE ((struct krec *)1)

/* The kernel ctl of a registration in p's kernel epoll, and the bell's
 * nkernel kept with it (KERNEL in bell.c): every kernel-side ADD and DEL of
 * the instance goes through it. */
int krec_kctl(struct port *p, int op, int fd, struct epoll_event *ev);
/* The same ADD of file under number num, which holds another file now
 * (sys_epoll_ctl_keyed: the kernel's key is (file, num)). */
int krec_kadd_keyed(struct port *p, int num, int file, struct epoll_event *ev);
/* ctl of a kernel fd when records are involved (EPOLLROUNDROBIN or
 * EPOLLURGENT asked, or the instance has fd records); the kernel answers. */
int krec_ctl_fd(struct port *p, int op, int fd, struct epoll_event *ev);
/* DEMOTE, SHARED (port.c): register a file in p through fd for an
 * edge-triggered item whose edge the program has taken, without the ADD's
 * report (UNPEND in unpend.c); a record holds it, and probe, the file's
 * probe made before the item left its instance (taken: closed when
 * decided).  0 or -errno. */
int krec_add_unpended(struct port *p, int fd, struct epoll_event *ev,
		      int probe);
/* A harvest got the report of record n: drop it?  (UNPEND: the ADD's
 * report of an edge already taken.) */
bool krec_unpend_drop(struct krec *n);
/* p has a record of inner's registration under fd (FORKED in port.c). */
bool krec_has_nest(struct port *p, struct port *inner, int fd);
/* ctl of a uepoll instance (inner) in p; the kernel answers. */
int krec_ctl_nest(struct port *p, int op, int fd, struct port *inner,
		  struct epoll_event *ev);
/*
 * Translate an event the kernel epoll of p returned (DATA in krec.c):
 * NULL if its data is not a record's (the user's own data: leave it),
 * KREC_STALE if it is a record's but was given for a registration that has
 * changed since (drop the event), else the record, with its user data and
 * flags in *out as they were when the event's registration was made.
 */
struct krec_view {
	uint64_t data;
	bool nested, urgent, oneshot;
	uint32_t rr_events;
};
struct krec *krec_of(struct port *p, uint64_t data, struct krec_view *out);
/* A harvest took an event of a round-robin registration: move it to the
 * back of its fd's line now (level-triggered), or once it is drained
 * (edge-triggered: RR-ET). */
void krec_rr_took(struct port *p, struct krec *n);
/* Owed moves of edge-triggered round-robin registrations whose fds are
 * drained now (a wait calls it first when port->rr_owed says so). */
void krec_rr_settle(struct port *p);
/* Does the nested instance of record n really have something? (depth: of
 * the nesting, bounds the recursion) */
bool krec_nest_ready(struct krec *n, int depth);
/* SOLO (krec.c): a zero-timeout look at p that its kernel epoll need not
 * make: 1 with the one event in *ev, 0 nothing is ready, -1 ask the
 * kernel. */
int krec_solo(struct port *p, struct epoll_event *ev);
/* Make the fds of the instances p holds, at every level, exact: a doorbell
 * left rung with nothing ready behind it (LAZY in bell.c) taken, the
 * queues left in place (poll() through the preload, port__looked).  No lock
 * held. */
void krec_nest_exact(struct port *p);
/* A harvest reported an event of one-shot record n: the kernel disarmed
 * its registration. */
static inline void krec_disarmed(struct krec *n)
{
	atomic_store_explicit(&n->disarmed, true, memory_order_relaxed);
}
/* DEMOTE (port.c; mtx held, ctl shut out): give every recorded
 * registration the user's data and events back in the kernel (a disarmed
 * one-shot stays disarmed) and free the records; a nested instance stays
 * counted as watched for good (its fd, now in a kernel epoll, stays
 * exact).  Fills v (room: krec_count) with the edge-triggered ones whose
 * MOD queued an edge the program had taken, each with its probe in
 * probes[i], for the caller's unpend_settle; returns their count.  tmps
 * (room: krec_count + 1): the copies of files it placed at the records'
 * numbers, -1 after the last, for the caller to close (fdzone_close) after
 * its settle. */
size_t krec_demote(struct port *p, struct unpend *v, _Atomic int *probes,
		   int *tmps);
/* How many records p has (room for krec_demote's v; mtx held). */
size_t krec_count(struct port *p);
/* Free p's records at its release (no thread can reach p any more). */
void krec_release(struct port *p);

#endif
