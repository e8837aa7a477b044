/* SPDX-License-Identifier: MIT */
/*
 * eventfd.h - ueventfd: eventfd(2)'s counter kept in userspace.
 */
#ifndef UEPOLL_EVENTFD_H
#define UEPOLL_EVENTFD_H

#include <sys/types.h>

#include "uepoll.h"

#include "obj.h"

struct uefd;
struct wq;

int uefd_create(unsigned int initval, int flags);
ssize_t uefd_read(struct uefd *e, void *buf, size_t n);
ssize_t uefd_write(struct uefd *e, const void *buf, size_t n);
uint32_t uefd_poll(struct uefd *e);
/* The ueventfd o is, or NULL if o is another type. */
struct uefd *uefd_of(struct uobj *o);
/* Its wait queue: the items of the instances that watch it (wq.h). */
struct wq *uefd_wq(struct uefd *e);
/* DEMOTE: make e's fd a plain kernel eventfd holding its exact counter
 * (the instances that watch it watch that fd in their kernel epoll), and
 * unpublish e.  Safe while other threads use e.  0, or the first error of
 * a watcher that could not be carried (the demotion is done anyway). */
int uefd_demote(struct uefd *e);
/* SHARED (eventfd_shared.c), at a fork's prepare: the counter becomes the
 * one the child and the parent share.  0, or the first error of a watcher
 * that could not be made a kernel registration. */
int uefd_share(struct uefd *e);
/* Are e's watchers the kernel's (SHARED)?  Waits while uefd_share is
 * making them so. */
bool uefd_kwatched(struct uefd *e);
/* Is e shared (uefd_share is over; no wait)? */
bool uefd_shared(struct uefd *e);
/* SHARED: at a normal exit, deliver what this process's timer holds (a
 * run of it in progress is waited for). */
void uefd_flush_exit(struct uefd *e);
/* SHARED: an edge-triggered kernel registration of the fd is made. */
void uefd_kedge(struct uefd *e);
/* Has a demotion begun? (relaxed) */
bool uefd_demoting(struct uefd *e);
/* Something outside uepoll (a demoted instance's kernel epoll) watches the
 * fd from now on: UEVENTFD_NOPOLL ends, and the fd is made exact. */
void uefd_watched_outside(struct uefd *e);
/* Wait until a demotion that has begun is over. */
void uefd_demote_wait(struct uefd *e);
/* ueventfd_coalesce(): set may be NULL (read only), old may be NULL. */
int uefd_coalesce(struct uefd *e, const struct ueventfd_coalesce *set,
		  struct ueventfd_coalesce *old);
extern const struct uobj_ops uefd_ops;

#endif
