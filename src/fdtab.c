/* SPDX-License-Identifier: MIT */
/*
 * fdtab.c - a two-level table from fd number to uepoll object.
 *
 * Readers take no lock: fdtab_get() loads the entry (acquire, pairs with the
 * release store in fdtab_set), tries to take a reference (uobj_tryget) and
 * checks that the entry still holds the same object.  That is safe because
 * object memory is type-stable (obj.c): a stale pointer still points at an
 * object of the same type whose refcount is a valid atomic.  If the object
 * was recycled for another fd, the re-check fails and the reference is
 * dropped again.
 *
 * Chunks are allocated on first use and never freed, so a chunk pointer,
 * once seen, stays valid.  They are mapped (mmap), not taken from malloc:
 * a signal handler's dup may need a new one (SIGNALS in api.c), and
 * malloc is not async-signal-safe.  Beside each slot, the link of the
 * number in its object's list of numbers (NUMBERS in obj.c), so that
 * giving an object a number never allocates either.
 */
#include <sys/mman.h>

#include "fdtab.h"

#define FDTAB_CHUNK_SHIFT 12
#define FDTAB_CHUNK (1 << FDTAB_CHUNK_SHIFT)
#define FDTAB_DIRS 1024 /* 4M fds: above the kernel's default nr_open */

typedef _Atomic(struct uobj *) fdtab__slot;

struct fdtab__chunk {
	fdtab__slot slot[FDTAB_CHUNK];
	int link[FDTAB_CHUNK]; /* obj.c's lock (NUMBERS) */
};

static _Atomic(struct fdtab__chunk *) fdtab__dir[FDTAB_DIRS];

static struct fdtab__chunk *fdtab__chunk_of(int fd, bool create)
{
	unsigned d = (unsigned)fd >> FDTAB_CHUNK_SHIFT;
	struct fdtab__chunk *chunk, *expect = NULL;
	void *m;

	if (fd < 0 || d >= FDTAB_DIRS)
		return NULL;
	chunk = atomic_load_explicit(&fdtab__dir[d], memory_order_acquire);
	if (!chunk && create) {
		m = mmap(NULL, sizeof(*chunk), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		chunk = m; /* zero: every slot empty */
		/* Pairs with the acquire load above in other threads. */
		if (!atomic_compare_exchange_strong_explicit(
			    &fdtab__dir[d], &expect, chunk,
			    memory_order_acq_rel, memory_order_acquire)) {
			munmap(m, sizeof(*chunk));
			chunk = expect;
		}
	}
	return chunk;
}

static fdtab__slot *fdtab__slot_of(int fd, bool create)
{
	struct fdtab__chunk *chunk = fdtab__chunk_of(fd, create);

	return chunk ? &chunk->slot[fd & (FDTAB_CHUNK - 1)] : NULL;
}

int *fdtab_link(int fd)
{
	struct fdtab__chunk *chunk = fdtab__chunk_of(fd, false);

	return chunk ? &chunk->link[fd & (FDTAB_CHUNK - 1)] : NULL;
}

struct uobj *fdtab_get(int fd)
{
	fdtab__slot *s = fdtab__slot_of(fd, false);
	struct uobj *o;

	if (!s)
		return NULL;
	for (;;) {
		o = atomic_load_explicit(s, memory_order_acquire);
		if (!o)
			return NULL;
		if (uobj_tryget(o)) {
			if (atomic_load_explicit(s, memory_order_acquire) == o)
				return o;
			uobj_put(o);
		} else if (atomic_load_explicit(s, memory_order_acquire) == o) {
			/* Published but at refcount zero cannot happen: the
			 * table's own reference is dropped only after the
			 * entry is cleared. */
			return NULL;
		}
	}
}

/* The highest number ever published (-1: none): relaxed, a bound for the
 * preload layer's scans of select()'s sets. */
static _Atomic int fdtab__high = -1;

int fdtab_high(void)
{
	return atomic_load_explicit(&fdtab__high, memory_order_relaxed);
}

struct uobj *fdtab_set(int fd, struct uobj *o, bool *ok)
{
	fdtab__slot *s = fdtab__slot_of(fd, true);
	struct uobj *old;
	int h;

	*ok = s != NULL;
	if (!s)
		return NULL;
	h = atomic_load_explicit(&fdtab__high, memory_order_relaxed);
	while (fd > h && !atomic_compare_exchange_weak_explicit(
				 &fdtab__high, &h, fd, memory_order_relaxed,
				 memory_order_relaxed))
		;
	/* Release: the object's initialisation happens-before any reader
	 * that sees it here. */
	old = atomic_exchange_explicit(s, o, memory_order_acq_rel);
	return old;
}

bool fdtab_reserve(int fd)
{
	return fdtab__slot_of(fd, true) != NULL;
}

bool fdtab_clear(int fd, struct uobj *o)
{
	fdtab__slot *s = fdtab__slot_of(fd, false);
	struct uobj *expect = o;

	return s && atomic_compare_exchange_strong_explicit(
			    s, &expect, NULL, memory_order_acq_rel,
			    memory_order_relaxed);
}

struct uobj *fdtab_peek(int fd)
{
	fdtab__slot *s = fdtab__slot_of(fd, false);

	return s ? atomic_load_explicit(s, memory_order_relaxed) : NULL;
}

int fdtab_next(int fd)
{
	/* Chunk by chunk, so an unused range of numbers costs one load per
	 * 4096 numbers: the preload layer's close_range() of everything
	 * above 2 must not walk four million empty slots. */
	if (fd < 0)
		fd = 0;
	for (unsigned d = (unsigned)fd >> FDTAB_CHUNK_SHIFT; d < FDTAB_DIRS;
	     d++, fd = (int)(d << FDTAB_CHUNK_SHIFT)) {
		struct fdtab__chunk *chunk = atomic_load_explicit(
			&fdtab__dir[d], memory_order_acquire);

		if (!chunk)
			continue;
		for (int i = fd & (FDTAB_CHUNK - 1); i < FDTAB_CHUNK; i++)
			if (atomic_load_explicit(&chunk->slot[i],
						 memory_order_relaxed))
				return (int)(d << FDTAB_CHUNK_SHIFT) + i;
	}
	return -1;
}
