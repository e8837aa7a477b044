/* SPDX-License-Identifier: MIT */
/*
 * item.h - one registration of a userspace source (a ueventfd) in an
 * instance: the counterpart of the kernel's epitem.
 *
 * Each field says what protects it.  The item is linked in three places: the
 * instance's ready queue (rdlink), the source's wait queue (wqlink) and the
 * instance's list of items (portlink).  It is freed only after it has been
 * unlinked from all three, with the instance's mtx held (port.c).
 */
#ifndef UEPOLL_ITEM_H
#define UEPOLL_ITEM_H

#include "internal.h"
#include "obj.h"

struct port;

struct item {
	/* --- hot: touched by the signal and delivery paths --- */
	/* Ready-queue link and flag: readyq lock. */
	struct list rdlink;
	bool queued;
	/* Interest mask incl. EPOLLERR|EPOLLHUP and the private bits.  Written
	 * with the readyq lock held (ctl MOD, ONESHOT disarm); read without it
	 * by the signal path (relaxed: a stale mask only makes the signal path
	 * queue an item the harvest then drops, or skip one that MOD queues
	 * itself after writing the new mask). */
	_Atomic uint32_t events;
	/* User data: readyq lock. */
	uint64_t data;
	/* Immutable for the item's life. */
	struct uobj *src;
	struct port *port;
	/* --- cold --- */
	/* Source wait queue link: the source's wq lock. */
	struct list wqlink;
	/* Instance item list: the instance's mtx. */
	struct list portlink;
};

_Static_assert(offsetof(struct item, wqlink) <= UEPOLL_CACHELINE,
	       "hot item fields must fit in the first cache line");

/* Current poll mask of the item's source (EPOLLIN/EPOLLOUT...). */
uint32_t item_poll(const struct item *it);

#endif
