/* SPDX-License-Identifier: MIT */
/*
 * port.h - a uepoll instance.
 */
#ifndef UEPOLL_PORT_H
#define UEPOLL_PORT_H

#include "unpend.h"
#include <pthread.h>
#include <signal.h>

#include "obj.h"
#include "sys.h"
#include "wq.h"

/*
 * struct port is opaque outside the instance's own three files (port.c,
 * wait.c, krec.c), which include port_impl.h for its layout.
 * Everyone else uses the functions below; an instance is a uobj
 * (port_obj) and its first member is one, so obj.c's casts hold.
 */
struct port;
struct turn;
struct bell;

int port_create(int flags, unsigned int uflags);
/* For turn.c, which orders an instance's threads: the instance's line and
 * its bell (FIFO followers count as sleepers). */
struct turn *port_turn(struct port *p);
struct bell *port_bell(struct port *p);
int port_ctl(struct port *p, int op, int fd, struct epoll_event *ev);
/* deadline: -1 blocks, 0 polls, else an absolute CLOCK_MONOTONIC time in ns. */
int port_wait(struct port *p, struct epoll_event *evs, int max,
	      int64_t deadline, const sigset_t *sigmask);
/* Called by wq_wake with the source's wq lock held.  Returns true when an
 * exclusive wakeup was consumed (stop walking).  deferred == NULL: ring the
 * doorbell now; else (a coalescing source) queue the item only and set
 * *deferred if a ring is needed (the doorbell was not rung, or the
 * instance is watched): the source's timer rings later (port_item_kick). */
bool port_item_signal(struct item *it, uint32_t key, bool *deferred);
/* A deferred ring comes due (wq_kick, wq lock held): ring if the item is
 * still queued, i.e. no waiter took it since. */
void port_item_kick(struct item *it);
/* bell_look (LOOK, WATCHED in bell.c): for an instance another one watches,
 * forget queued items that are not ready and, if none is left, make its fd
 * not readable.  No-op for an instance nobody watches. */
void port_revalidate(struct port *p);
/* Does a kernel epoll hold some instance level-triggered (UNSTALE)? */
bool port_any_kheld(void);
/* Remove every item of a closed source (its wq is marked dead). */
void port_drop_source(struct wq *q);
/* A demoted source (DEMOTE in eventfd.c, its wq marked dead): each item
 * becomes a registration of the source's file in its instance's kernel
 * epoll, through the item's own number.  0, or the first error of an ADD
 * that failed. */
int port_demote_source(struct wq *q, struct uobj *src);
/* DEMOTE: make p the plain kernel epoll it stands for, with every
 * registration, while other threads use it; 0 or -errno (the first failed
 * kernel ADD of a ueventfd's registration). */
int port_demote(struct port *p);
/* An exec's demotion leaves p alone: it came from the parent by fork
 * (FORKED in port.c). */
bool port_exec_keeps(struct port *p);
/*
 * UNPEND for a shared ueventfd's demotion (uefd__xdemote): the carry of its
 * counter into its kernel fd (file) is an edge for every edge-triggered
 * registration of that file, which the program never made.  Between the
 * counter's UEFD_GONE and DEMOTED no process moves the fd, so:
 * port_carry_begin notes the edge-triggered registrations of file in p's
 * kernel epoll that are not queued (one harvest, everything given back);
 * after the carry, port_carry_end drops their reports.  c: zeroed first;
 * port_carry_end frees it.
 */
struct port_carry {
	struct unpend *v;
	size_t n;
};
void port_carry_begin(struct port *p, int file, struct port_carry *c);
void port_carry_end(struct port *p, struct port_carry *c);
extern const struct uobj_ops port_ops;
/* The batching policy (UEPOLL_CTL_MIN_WAIT, uepoll_batch): set (if set) and
 * return the old one in *old (if old); -EINVAL for bad values. */
struct uepoll_batch;
int port_batch(struct port *p, const struct uepoll_batch *set,
	       struct uepoll_batch *old);

#endif
