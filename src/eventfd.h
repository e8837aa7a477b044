/* SPDX-License-Identifier: MIT */
/*
 * eventfd.h - ueventfd: eventfd(2)'s counter kept in userspace.
 */
#ifndef UEPOLL_EVENTFD_H
#define UEPOLL_EVENTFD_H

#include <sys/types.h>

#include "obj.h"
#include "wq.h"

struct uefd {
	struct uobj obj;
	/* The counter.  Every update is a seq_cst CAS: it pairs with the
	 * seq_cst loads of wq.n (signal side) and of `mirror` (reader side). */
	_Atomic uint64_t count;
	/* 1 when the kernel fd has been signalled since a reader last found
	 * it clear (see the MIRROR protocol in eventfd.c). */
	_Atomic int mirror;
	/* Reads in a row that found the counter empty (see uefd_read). */
	_Atomic uint32_t empty_reads;
	bool semaphore;
	/* Last known O_NONBLOCK of the kernel fd. */
	_Atomic bool nonblock;
	/* Writers blocked on a full counter sleep on wseq. */
	_Atomic uint32_t wseq;
	_Atomic int wwaiters;
	struct wq wq;
};

int uefd_create(unsigned int initval, int flags);
ssize_t uefd_read(struct uefd *e, void *buf, size_t n);
ssize_t uefd_write(struct uefd *e, const void *buf, size_t n);
uint32_t uefd_poll(struct uefd *e);
void uefd_close(struct uefd *e);
void uefd_release(struct uobj *o);

#endif
