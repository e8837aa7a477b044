/* SPDX-License-Identifier: MIT */
/*
 * obj.h - the header every uepoll object (ueventfd, instance) starts with,
 * its reference count and its type-stable allocation.
 *
 * Lifetime: the fd table holds one reference from creation to
 * uepoll_close(); every operation in flight holds one more, taken by
 * fdtab_get().  The object is released (kernel fds closed) when the count
 * drops to zero.  Its memory is then returned to a per-type pool and only
 * ever reused for an object of the same type, never given back to malloc:
 * that is what lets fdtab_get() try to take a reference on a pointer it read
 * without a lock (see fdtab.c).
 */
#ifndef UEPOLL_OBJ_H
#define UEPOLL_OBJ_H

#include "internal.h"

enum uobj_type {
	UOBJ_EVENTFD = 1,
	UOBJ_PORT = 2,
};

struct uobj {
	/* Pairs: uobj_tryget's CAS (acquire) with uobj_put's decrement
	 * (release); the final decrement is acq_rel so the release sees every
	 * earlier user's writes. */
	_Atomic int refs;
	/* Written once when the memory is first carved; the pool never changes
	 * it, so a racy reader of a recycled object still sees the right type. */
	int type;
	/* The object's kernel fd, which is also its public fd number. */
	int fd;
	/* The user closed the kernel fd with close() behind our back: the
	 * release must not close the number again (it may be reused). */
	_Atomic bool fd_lost;
	struct uobj *pool_next;
};

struct uobj_ops {
	size_t size;
	/* Called when the last reference is dropped. */
	void (*release)(struct uobj *o);
};

/* Allocate zeroed memory of ops->size from the type's pool, refs == 1. */
struct uobj *uobj_alloc(int type);
/* Take a reference if the count is not zero. */
bool uobj_tryget(struct uobj *o);
void uobj_get(struct uobj *o);
void uobj_put(struct uobj *o);
/* Detach an object that was just unpublished from the fd table: a closed
 * ueventfd leaves every instance watching it.  The caller then drops the
 * table's reference. */
void uobj_close(struct uobj *o);
/* Return the memory to its pool (from a release function). */
void uobj_free(struct uobj *o);

#endif
