/* SPDX-License-Identifier: MIT */
/*
 * eventfd.c - ueventfd.
 *
 * The counter lives in userspace; the fd the user gets is a kernel eventfd
 * (the "mirror") that is only written when someone may be asleep on it.
 *
 * MIRROR protocol.  Invariant for external pollers: if count > 0 then the
 * kernel fd is readable, or a uefd_read() caller is about to re-check count.
 *  - A writer, after adding to count, arms the mirror: if `mirror` was 0 it
 *    sets it to 1 and writes 1 to the kernel fd.  With mirror already 1 a
 *    write makes no system call at all.
 *  - A reader that finds count == 0 stores mirror = 0 and re-checks count
 *    before it sleeps in read(2) on the kernel fd (which also drains a stale
 *    signal).  seq_cst on both sides (Dekker): either the writer sees
 *    mirror == 0 and signals, or the reader's re-check sees the new count.
 *  - A reader that consumed the kernel fd's signal stores mirror = 0 again,
 *    and any reader that leaves count > 0 re-arms, so the invariant holds
 *    for the next reader and for poll()/select()/kernel epoll on the fd.
 *  - A non-blocking read that finds the counter empty right after a
 *    successful read answers EAGAIN without touching the mirror; the next
 *    empty read clears it.  The usual drain loop ("read until EAGAIN")
 *    thus costs no system call, while an outer event loop that polls the
 *    fd and reads gets at most one spurious readiness after the counter
 *    empties.
 * The kernel fd may therefore stay readable after the counter was emptied,
 * until the second read in a row that finds it empty.
 *
 * LOCKING: count, mirror, wseq, wwaiters are atomics (no lock).  wq.lock
 * protects the list of watching items and nests outside every instance's
 * readyq lock (wq_wake -> port_item_signal -> rq_enqueue).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/eventfd.h>

#include "eventfd.h"
#include "fdtab.h"
#include "port.h"
#include "sys.h"

int uefd_create(unsigned int initval, int flags)
{
	struct uobj *o, *old;
	struct uefd *e;
	bool ok;
	int kfd;

	if (flags & ~(EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC))
		return -EINVAL;
	o = uobj_alloc(UOBJ_EVENTFD);
	if (!o)
		return -ENOMEM;
	e = (struct uefd *)o;
	kfd = sys_eventfd(initval ? 1 : 0, flags & (EFD_NONBLOCK | EFD_CLOEXEC));
	if (kfd < 0) {
		uobj_free(o);
		return kfd;
	}
	o->fd = kfd;
	atomic_init(&e->count, initval);
	atomic_init(&e->mirror, initval ? 1 : 0);
	e->semaphore = flags & EFD_SEMAPHORE;
	atomic_init(&e->nonblock, (flags & EFD_NONBLOCK) != 0);
	atomic_init(&e->wseq, 0);
	atomic_init(&e->wwaiters, 0);
	atomic_init(&e->empty_reads, 1); /* no successful read yet */
	wq_init(&e->wq);

	old = fdtab_set(kfd, o, &ok);
	if (!ok) {
		wq_destroy(&e->wq);
		sys_close(kfd);
		uobj_free(o);
		return -ENOMEM;
	}
	if (old) {
		uobj_close(old);
		uobj_put(old);
	}
	return kfd;
}

uint32_t uefd_poll(struct uefd *e)
{
	uint64_t c = atomic_load(&e->count);
	uint32_t m = 0;

	if (c > 0)
		m |= EPOLLIN;
	if (c < UEFD_MAX)
		m |= EPOLLOUT;
	return m;
}

static void uefd__arm(struct uefd *e)
{
	if (atomic_load(&e->mirror) == 0 && atomic_exchange(&e->mirror, 1) == 0)
		sys_eventfd_signal(e->obj.fd);
}

/* Wait until the counter may have room: futex on wseq, bumped by readers. */
static int uefd__wait_room(struct uefd *e, uint64_t v)
{
	uint32_t seq;
	int r, fl;

	fl = sys_fcntl_getfl(e->obj.fd);
	if (fl < 0)
		return fl;
	if (fl & O_NONBLOCK)
		return -EAGAIN;
	atomic_fetch_add(&e->wwaiters, 1);
	/* seq_cst: pairs with the reader's CAS on count then load of wwaiters. */
	seq = atomic_load(&e->wseq);
	r = 0;
	if (UEFD_MAX - atomic_load(&e->count) < v)
		r = sys_futex_wait(&e->wseq, seq);
	atomic_fetch_sub(&e->wwaiters, 1);
	return r == -EINTR ? r : 0;
}

/*
 * eventfd(2) documents EINVAL for a write buffer shorter than 8 bytes; recent
 * kernels also refuse longer ones.  Ask the running kernel once, so that
 * ueventfd answers as its eventfd would.
 */
static bool uefd__long_write_ok(void)
{
	static _Atomic int known; /* 0 unknown, 1 accepted, 2 refused */
	int k = atomic_load_explicit(&known, memory_order_relaxed);

	if (!k) {
		uint64_t probe[2] = { 0, 0 };
		int fd = sys_eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

		if (fd < 0)
			return true; /* cannot tell: follow the man page */
		k = sys_write(fd, probe, sizeof(probe)) == -EINVAL ? 2 : 1;
		sys_close(fd);
		atomic_store_explicit(&known, k, memory_order_relaxed);
	}
	return k == 1;
}

ssize_t uefd_write(struct uefd *e, const void *buf, size_t n)
{
	uint64_t v, c;
	int r;

	if (n < sizeof(v) || (n > sizeof(v) && !uefd__long_write_ok()))
		return -EINVAL;
	if (!buf) /* the kernel's failed copy; other bad pointers fault */
		return -EFAULT;
	memcpy(&v, buf, sizeof(v));
	if (v == UINT64_MAX)
		return -EINVAL;
	c = atomic_load(&e->count);
	for (;;) {
		if (UEFD_MAX - c < v) {
			r = uefd__wait_room(e, v);
			if (r < 0)
				return r;
			c = atomic_load(&e->count);
			continue;
		}
		if (atomic_compare_exchange_weak(&e->count, &c, c + v))
			break;
	}
	/* The kernel wakes EPOLLIN watchers on every write, even of 0: an
	 * edge-triggered watcher sees one event per write. */
	if (atomic_load(&e->wq.narmed))
		wq_wake(&e->wq, EPOLLIN);
	if (c + v > 0)
		uefd__arm(e);
	return sizeof(v);
}

ssize_t uefd_read(struct uefd *e, void *buf, size_t n)
{
	uint64_t c, take, sig;
	ssize_t r;

	if (n < sizeof(c))
		return -EINVAL;
	c = atomic_load(&e->count);
	for (;;) {
		if (c > 0) {
			take = e->semaphore ? 1 : c;
			if (!atomic_compare_exchange_weak(&e->count, &c, c - take))
				continue;
			if (c - take > 0)
				uefd__arm(e);
			if (atomic_load_explicit(&e->empty_reads,
						 memory_order_relaxed))
				atomic_store_explicit(&e->empty_reads, 0,
						      memory_order_relaxed);
			if (atomic_load(&e->wwaiters) > 0) {
				atomic_fetch_add(&e->wseq, 1);
				sys_futex_wake(&e->wseq, INT_MAX);
			}
			/* The kernel wakes EPOLLOUT watchers on every read. */
			if (atomic_load(&e->wq.nout))
				wq_wake(&e->wq, EPOLLOUT);
			if (c == take && port_any_watched() &&
			    atomic_load(&e->wq.n))
				wq_unready(&e->wq);
			/* The kernel, too, has taken the value when its copy to
			 * a NULL buffer fails. */
			if (!buf)
				return -EFAULT;
			memcpy(buf, &take, sizeof(take));
			return sizeof(take);
		}
		/* Empty.  The first empty read after a successful one (the
		 * end of a drain loop) on a kernel fd known to be non-blocking
		 * answers without a system call.  Any other goes to the
		 * kernel fd, which also tells whether O_NONBLOCK changed. */
		if (atomic_load_explicit(&e->nonblock, memory_order_relaxed) &&
		    atomic_fetch_add_explicit(&e->empty_reads, 1,
					      memory_order_relaxed) == 0)
			return -EAGAIN;
		atomic_store(&e->mirror, 0);
		c = atomic_load(&e->count);
		if (c > 0)
			continue;
		/* Sleeps here when the fd is blocking, until a writer arms. */
		r = sys_read(e->obj.fd, &sig, sizeof(sig));
		atomic_store_explicit(&e->nonblock, r == -EAGAIN,
				      memory_order_relaxed);
		if (r == -EAGAIN)
			return r;
		if (r < 0)
			return r;
		/* We consumed the kernel fd's signal: it is clear again. */
		atomic_store(&e->mirror, 0);
		c = atomic_load(&e->count);
	}
}

void uefd_close(struct uefd *e)
{
	pthread_mutex_lock(&e->wq.lock);
	e->wq.dead = true;
	pthread_mutex_unlock(&e->wq.lock);
	port_drop_source(&e->wq);
}

void uefd_release(struct uobj *o)
{
	struct uefd *e = (struct uefd *)o;

	wq_destroy(&e->wq);
	if (!atomic_load_explicit(&o->fd_lost, memory_order_relaxed))
		sys_close(o->fd);
	uobj_free(o);
}
