/* SPDX-License-Identifier: MIT */
/*
 * init.c - the preload layer's constructor, and the questions the wrappers
 * ask the library about a number.
 *
 * Order matters: sys_bind_libc() first, so that from then on the library's
 * own system calls (it makes them through `syscall`, `read`, `close`...,
 * names this layer defines) go to libc's definitions and never re-enter a
 * wrapper; then the policies; only then are the wrappers switched to
 * uepoll.  The constructor runs early (priority 101) but other libraries'
 * constructors, and threads they start, may call a wrapper before it: the
 * wrappers then pass to libc, and since no uepoll object exists yet, that
 * is exactly right.  A number created before the switch stays a kernel
 * object for good, which uepoll's calls pass straight to the kernel.
 */
#include <errno.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include "uepoll.h"

#include "fdtab.h"
#include "fdzone.h"
#include "sys.h"

#include "preload.h"

atomic_bool preload__ready;

__attribute__((constructor(101))) static void preload__init(void)
{
	int e = errno;

	real_resolve_all();
	/* -ENOSYS: no libc.so.6 to bind to; the wrappers stay libc's. */
	if (sys_bind_libc() == 0) {
		policy_load();
		stats_setup();
		atomic_store_explicit(&preload__ready, true,
				      memory_order_release);
	}
	errno = e;
}

/* What the object at fd can do (its ops: no type is named here), 0 if
 * fd is no object. */
enum { PRELOAD__OBJ = 1, PRELOAD__WAITS = 2, PRELOAD__READS = 4 };

static int preload__can(int fd)
{
	struct uobj *o = fdtab_get(fd);
	int c = 0;

	if (o) {
		c = PRELOAD__OBJ | (uobj_ops(o)->wait ? PRELOAD__WAITS : 0) |
		    (uobj_ops(o)->read ? PRELOAD__READS : 0);
		uobj_put(o);
	}
	return c;
}

/* An instance: the object that waits. */
bool preload_is_instance(int fd)
{
	return preload__can(fd) & PRELOAD__WAITS;
}

bool preload_maybe_object(int fd)
{
	return fdtab_peek(fd) != NULL;
}

bool preload_is_object(int fd)
{
	return preload__can(fd) != 0;
}

/* A ueventfd: the object read(2) reads (its counter). */
bool preload_is_eventfd(int fd)
{
	return preload__can(fd) & PRELOAD__READS;
}

atomic_bool preload__plain;

void preload_demote_all(void)
{
	int e = errno;

	for (int fd = fdtab_next(0); fd >= 0; fd = fdtab_next(fd + 1)) {
		if (uepoll_demote(fd) == 0)
			stats_add(STAT_DEMOTES);
		if (fd == INT32_MAX)
			break;
	}
	errno = e;
}

void preload_go_plain(void)
{
	/* seq_cst, then the walk: pairs with preload_made's fence and load
	 * (a creation either is seen by the walk or sees the flag). */
	if (preload_in_vfork_child() || atomic_exchange(&preload__plain, true))
		return;
	mem_forget_all();
	preload_demote_all();
}

int preload_made(int fd)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (fd >= 0 && atomic_load_explicit(&preload__plain,
					    memory_order_relaxed)) {
		int e = errno;

		if (uepoll_demote(fd) == 0)
			stats_add(STAT_DEMOTES);
		errno = e;
	}
	return fd;
}

bool preload_make_room(void)
{
	struct rlimit rl;
	int e = errno, p = fdzone_next(0);

	/* Only private fds below the soft limit take the program's numbers
	 * (TOP in src/fdzone.c); above it (ABOVE) they take none. */
	if (p < 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0 || (rlim_t)p >= rl.rlim_cur)
		return false;
	for (int fd = fdtab_next(0); fd >= 0; fd = fdtab_next(fd + 1)) {
		if (uepoll_demote(fd) == 0) {
			stats_add(STAT_DEMOTES);
			errno = e;
			return true;
		}
		if (fd == INT32_MAX)
			break;
	}
	errno = e;
	return false;
}
