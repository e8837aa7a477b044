/* SPDX-License-Identifier: MIT */
/*
 * shm.c - blocks of MAP_SHARED memory for state that a fork shares (shm.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lock.h"
#include "shm.h"

/* 64 kB: the kernel's fault-around window (fault_around_bytes), so that a
 * forked child, whose page tables have none of a MAP_SHARED mapping's
 * pages, maps a whole region's touched pages at its first fault in it,
 * and a fork copies one mapping per 256 counters.  (With 16 kB regions a
 * child's repair of 2000 ueventfds faulted 32 times, one per region, and a
 * fork copied 32 mappings: docs/benchmarks.md, issue 35 item 4.)  Only
 * the pages touched take memory; a retired region keeps those of its
 * freed blocks until its last one is freed. */
#define SHM_REGION (64 * 1024)
#define SHM_PER (SHM_REGION / SHM_BLOCK)

/* One region, as this process sees it (private memory: a fork copies it,
 * and each process goes on with its own). */
struct shm__region {
	char *base;	  /* NULL: slot unused */
	uint64_t used[SHM_PER / 64]; /* blocks this process has live */
	unsigned live;
	bool retired;	  /* a fork came: no more carving here */
};

static pthread_mutex_t shm__lock = PTHREAD_MUTEX_INITIALIZER;
static struct shm__region *shm__regions;
static unsigned shm__n, shm__cap;
static unsigned shm__hint; /* a region with room, probably */

static int shm__find(const void *p)
{
	for (unsigned i = 0; i < shm__n; i++) {
		const char *b = shm__regions[i].base;

		if (b && (const char *)p >= b && (const char *)p < b + SHM_REGION)
			return (int)i;
	}
	return -1;
}

/* A region with room that is not retired: the hint, another, or a new one
 * (shm__lock held).  -1: no memory. */
static int shm__region_with_room(void)
{
	struct shm__region *r;
	unsigned i, slot = shm__n;
	void *m;

	if (shm__hint < shm__n) {
		r = &shm__regions[shm__hint];
		if (r->base && !r->retired && r->live < SHM_PER)
			return (int)shm__hint;
	}
	for (i = 0; i < shm__n; i++) {
		r = &shm__regions[i];
		if (r->base && !r->retired && r->live < SHM_PER)
			return (int)(shm__hint = i);
		if (!r->base && slot == shm__n)
			slot = i;
	}
	if (slot == shm__cap) {
		unsigned cap = shm__cap ? shm__cap * 2 : 8;
		struct shm__region *v = realloc(shm__regions, cap * sizeof(*v));

		if (!v)
			return -1;
		shm__regions = v;
		shm__cap = cap;
	}
	m = mmap(NULL, SHM_REGION, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	if (slot == shm__n)
		shm__n++;
	r = &shm__regions[slot];
	memset(r, 0, sizeof(*r));
	r->base = m;
	return (int)(shm__hint = slot);
}

void *shm_alloc(void)
{
	struct shm__region *r;
	void *p = NULL;
	int i;

	lock_take(&shm__lock);
	i = shm__region_with_room();
	if (i >= 0) {
		r = &shm__regions[i];
		for (unsigned w = 0; w < SHM_PER / 64; w++) {
			unsigned b;

			if (r->used[w] == ~0ull)
				continue;
			b = (unsigned)__builtin_ctzll(~r->used[w]);
			r->used[w] |= 1ull << b;
			r->live++;
			p = r->base + ((size_t)w * 64 + b) * SHM_BLOCK;
			break;
		}
	}
	lock_drop(&shm__lock);
	if (p) /* fresh memory is zero; a block used before may not be */
		memset(p, 0, SHM_BLOCK);
	return p;
}

void shm_free(void *p)
{
	struct shm__region *r;
	char *unmap = NULL;
	unsigned b;
	int i;

	if (!p)
		return;
	lock_take(&shm__lock);
	i = shm__find(p);
	if (i >= 0) {
		r = &shm__regions[i];
		b = (unsigned)(((char *)p - r->base) / SHM_BLOCK);
		r->used[b / 64] &= ~(1ull << (b % 64));
		/* A retired region is unmapped with its last block here; a
		 * live one is kept for the next carving. */
		if (--r->live == 0 && r->retired) {
			unmap = r->base;
			r->base = NULL;
		}
	}
	lock_drop(&shm__lock);
	if (unmap)
		munmap(unmap, SHM_REGION);
}

void shm_fork_prepare(void)
{
	/* Inside the gate: no other thread is in shm__lock, taken at once
	 * (directly: the gate is closed) and held across the fork, which
	 * says so to ThreadSanitizer too.  Every region is retired, empty
	 * ones too (the child's copy would map the same pages): those are
	 * unmapped now. */
	pthread_mutex_lock(&shm__lock);
	for (unsigned i = 0; i < shm__n; i++) {
		struct shm__region *r = &shm__regions[i];

		if (!r->base)
			continue;
		r->retired = true;
		if (r->live == 0) {
			munmap(r->base, SHM_REGION);
			r->base = NULL;
		}
	}
}

void shm_fork_done(void)
{
	pthread_mutex_unlock(&shm__lock);
}
