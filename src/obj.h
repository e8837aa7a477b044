/* SPDX-License-Identifier: MIT */
/*
 * obj.h - the header every uepoll object (ueventfd, instance) starts with,
 * its reference count, its kernel fds and its type-stable allocation.
 *
 * Lifetime: the fd table holds one reference from creation to
 * uepoll_close(); every operation in flight holds one more, taken by
 * fdtab_get().  The object is released (its private kernel fds closed) when
 * the count drops to zero.  Its memory is then returned to a per-type pool
 * and only ever reused for an object of the same type, never given back to
 * malloc: that is what lets fdtab_get() try to take a reference on a
 * pointer it read without a lock (see fdtab.c).
 *
 * Two numbers.  `fd` is the public number, the one the program holds: the
 * kernel object (an epoll, an eventfd) as the kernel created it.  `kfd` is
 * a private duplicate of it (close-on-exec) on which the library makes
 * every call of its own.  uepoll_close() closes the public number at once,
 * as close(2) frees a number at once, even while other threads are inside
 * calls on the object; those calls go on using kfd, which is closed only
 * with the last reference.  So uepoll never makes a call on, nor closes, a
 * number the program may have been given again since (CLOSE in api.c).
 *
 * Fork: every object from the end of its creation to the end of its
 * release is on a list of live objects, which a forked child repairs
 * (FORK in obj.c).
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
	/* The public number (fd table key); -1 before creation ends. */
	int fd;
	/* The private duplicate every call of the library uses; -1 once
	 * closed (by the release, under the object's own lock: FORK). */
	int kfd;
	/* On the live list (obj.c's lock). */
	struct list live;
	bool on_live;
	struct uobj *pool_next;
};

/* What obj.c and the fork handlers need of each type. */
struct uobj_ops {
	size_t size;
	/* The object left the fd table (uepoll_close, or a number reused
	 * behind our back): detach it from others (a closed ueventfd leaves
	 * every instance watching it).  Idempotent. */
	void (*close)(struct uobj *o);
	/* The last reference is gone: close kfd and what else the object
	 * owns, then uobj_free.  Idempotent up to uobj_free (a forked child
	 * finishes a release its parent's thread had begun: FORK). */
	void (*release)(struct uobj *o);
	/* fork, child, all locks free: forget the state of the threads that
	 * did not come along (waiters, spinners, the FIFO line) and repair
	 * what they left half-done.  Returns the references the child still
	 * has besides the fd table's (a queued timer's). */
	int (*fork_child)(struct uobj *o);
};

/* Allocate zeroed memory of the type's size from its pool, refs == 1,
 * fd == kfd == -1. */
struct uobj *uobj_alloc(int type);
/* Creation is over (every field and lock set up): from now on the fork
 * handlers take its locks.  Called just before it is published. */
void uobj_live(struct uobj *o);
/* Take a reference if the count is not zero. */
bool uobj_tryget(struct uobj *o);
void uobj_get(struct uobj *o);
void uobj_put(struct uobj *o);
/* The object left the fd table: its type's close. */
void uobj_close(struct uobj *o);
/* Return the memory to its pool (the end of a release, or of a failed
 * creation). */
void uobj_free(struct uobj *o);

/* In a forked child: set *v to 0 unless it is 0 already (a page the child
 * only reads is not copied). */
static inline void obj_fork_zero(_Atomic int *v)
{
	if (atomic_load_explicit(v, memory_order_relaxed))
		atomic_store_explicit(v, 0, memory_order_relaxed);
}

#endif
