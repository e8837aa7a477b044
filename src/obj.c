/* SPDX-License-Identifier: MIT */
/*
 * obj.c - reference counts and type-stable pools for uepoll objects.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "eventfd.h"
#include "obj.h"
#include "port.h"

struct obj__pool {
	pthread_mutex_t lock;
	struct uobj *free;
	size_t size;
	void (*release)(struct uobj *o);
};

static struct obj__pool obj__pools[3] = {
	[UOBJ_EVENTFD] = { PTHREAD_MUTEX_INITIALIZER, NULL,
			   sizeof(struct uefd), uefd_release },
	[UOBJ_PORT] = { PTHREAD_MUTEX_INITIALIZER, NULL, sizeof(struct port),
			port_release },
};

struct uobj *uobj_alloc(int type)
{
	struct obj__pool *p = &obj__pools[type];
	struct uobj *o;

	pthread_mutex_lock(&p->lock);
	o = p->free;
	if (o)
		p->free = o->pool_next;
	pthread_mutex_unlock(&p->lock);

	if (!o) {
		o = aligned_alloc(UEPOLL_CACHELINE,
				  (p->size + UEPOLL_CACHELINE - 1) &
					  ~(size_t)(UEPOLL_CACHELINE - 1));
		if (!o)
			return NULL;
		memset(o, 0, p->size);
		o->type = type;
	} else {
		/* Everything but the header fields a racy fdtab_get() may read
		 * (refs, type) is reset; refs is 0 here and stays so until the
		 * release store below publishes the new incarnation. */
		memset((char *)o + sizeof(struct uobj), 0,
		       p->size - sizeof(struct uobj));
	}
	o->fd = -1;
	atomic_store_explicit(&o->fd_lost, false, memory_order_relaxed);
	o->pool_next = NULL;
	atomic_store_explicit(&o->refs, 1, memory_order_release);
	return o;
}

bool uobj_tryget(struct uobj *o)
{
	int r = atomic_load_explicit(&o->refs, memory_order_relaxed);

	do {
		if (r <= 0)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(
		&o->refs, &r, r + 1, memory_order_acquire,
		memory_order_relaxed));
	return true;
}

void uobj_get(struct uobj *o)
{
	atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
}

void uobj_put(struct uobj *o)
{
	if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1)
		obj__pools[o->type].release(o);
}

void uobj_free(struct uobj *o)
{
	struct obj__pool *p = &obj__pools[o->type];

	/* An object freed before it was ever published still has refs == 1. */
	atomic_store_explicit(&o->refs, 0, memory_order_release);
	pthread_mutex_lock(&p->lock);
	o->pool_next = p->free;
	p->free = o;
	pthread_mutex_unlock(&p->lock);
}

void uobj_close(struct uobj *o)
{
	/* A closed ueventfd leaves every instance watching it.  An instance
	 * needs nothing: its items go with its last reference, as the kernel
	 * keeps an epoll alive while a thread still waits on it. */
	if (o->type == UOBJ_EVENTFD)
		uefd_close((struct uefd *)o);
}
