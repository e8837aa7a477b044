/* SPDX-License-Identifier: MIT */
/*
 * fdzone.c - where the library's own fds live: out of the program's way.
 *
 * The library holds fds of its own: every object's private duplicate
 * (kfd, obj.h) and an instance's doorbell (bell.c).  A program written for
 * the kernel expects every number below its RLIMIT_NOFILE soft limit to be
 * its own: the next number it gets is the lowest free one (after
 * eventfd() = 3, the next open() = 4), it may dup2() onto any number it
 * believes free, close every number in a loop before an exec, and open as
 * many fds as the limit allows.  A private fd among its numbers breaks
 * each of these (issue 33: a child's dup2 of a pipe onto the number of a
 * ueventfd's private fd got the exec handover's bytes).
 *
 * PLACES.  So a private fd is placed, by fcntl(F_DUPFD_CLOEXEC, base),
 *  - ABOVE the soft limit when the hard limit leaves room (systemd's usual
 *    1024/524288): the soft limit is raised to the hard one for that one
 *    fcntl and put back at once (RLIMIT).  The program can neither get such
 *    a number nor dup2 onto it (the kernel refuses numbers at or above the
 *    soft limit), its close loops up to sysconf(_SC_OPEN_MAX) stop below
 *    it, and its EMFILE comes at the native count;
 *  - else at the TOP of the table, below the limit (or below FDZONE__CAP
 *    when the limit is larger: the kernel's table, and the copy a fork
 *    makes of it, grow with the highest open number), the zone growing
 *    downwards from there as far as it must.  The program then meets them
 *    only when it fills its table (EMFILE earlier, by the private fds
 *    held) or dup2()s onto a number near its limit: docs/design.md, "Where
 *    uepoll differs".
 * No place (the zone is full, or no fd is left at all): -EMFILE, and the
 * caller makes no object (the preload layer then gives the program a plain
 * kernel object: a call that succeeds natively does not fail).
 *
 * Every private number is also marked in a bitmap that the preload layer
 * reads without a lock (fdzone_has): the program's close() of such a
 * number answers EBADF, as it would natively, and its close_range() and
 * closefrom() close around them, so that a close loop before an exec
 * leaves what the exec handover needs.
 *
 * RLIMIT.  The raise is a window in which the process's soft limit is not
 * the program's: fdzone__lock makes the placements one at a time, and the
 * preload layer's getrlimit/setrlimit/prlimit wrappers take it too
 * (fdzone_rlimit_begin), so that the program neither reads the raised
 * value nor has its own new limit overwritten by the put-back.  It is a
 * lock of lock.h (a leaf, taken with lock_take), so a fork never comes in
 * the window: the fork gate waits for it.  What is left: a thread of the
 * program whose table is full below the soft limit could be given a number
 * above it inside the window (where natively it would get EMFILE), and
 * another process's prlimit(2) on this one during the window is undone.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "fdzone.h"
#include "lock.h"
#include "sys.h"

/* TOP's highest base: 64Ki numbers, a 512 KiB table. */
#define FDZONE__CAP 65536
/* TOP's first step down when the numbers above the cursor are taken. */
#define FDZONE__STEP 16

#define FDZONE__WORDS 64 /* 4096 numbers per chunk */
#define FDZONE__DIRS 1024 /* 4M numbers: above the kernel's default nr_open */

/* Chunks are allocated on first use and never freed (as fdtab.c's). */
static _Atomic(_Atomic uint64_t *) fdzone__dir[FDZONE__DIRS];
_Atomic int fdzone__low = INT32_MAX;

static pthread_mutex_t fdzone__lock = PTHREAD_MUTEX_INITIALIZER;
/* TOP: where the next search starts (0: not set yet).  fdzone__lock. */
static int fdzone__cursor;

static _Atomic uint64_t *fdzone__word(int fd, bool create)
{
	unsigned d = (unsigned)fd / (FDZONE__WORDS * 64);
	_Atomic uint64_t *c, *expect = NULL;

	if (fd < 0 || d >= FDZONE__DIRS)
		return NULL;
	/* Acquire: pairs with the CAS's release below (the zeroed chunk). */
	c = atomic_load_explicit(&fdzone__dir[d], memory_order_acquire);
	if (!c && create) {
		c = calloc(FDZONE__WORDS, sizeof(*c));
		if (!c)
			return NULL;
		if (!atomic_compare_exchange_strong_explicit(
			    &fdzone__dir[d], &expect, c, memory_order_acq_rel,
			    memory_order_acquire)) {
			free(c);
			c = expect;
		}
	}
	return c ? &c[(unsigned)fd / 64 % FDZONE__WORDS] : NULL;
}

bool fdzone__has(int fd)
{
	_Atomic uint64_t *w = fdzone__word(fd, false);

	/* Relaxed: the bit is set before the number is given to any user
	 * and cleared before it is closed, both by the thread that owns the
	 * fd; a program that closes a number it was never given races with
	 * nothing it could observe. */
	return w && atomic_load_explicit(w, memory_order_relaxed) >>
			    ((unsigned)fd % 64) & 1;
}

/* Mark fd private; false if no memory for its chunk. */
static bool fdzone__mark(int fd)
{
	_Atomic uint64_t *w = fdzone__word(fd, true);
	int low;

	if (!w)
		return false;
	atomic_fetch_or_explicit(w, (uint64_t)1 << ((unsigned)fd % 64),
				 memory_order_relaxed);
	low = atomic_load_explicit(&fdzone__low, memory_order_relaxed);
	while (fd < low && !atomic_compare_exchange_weak_explicit(
				   &fdzone__low, &low, fd,
				   memory_order_relaxed, memory_order_relaxed))
		;
	return true;
}

int fdzone_next(int fd)
{
	if (fd < 0)
		fd = 0;
	if (fd < atomic_load_explicit(&fdzone__low, memory_order_relaxed))
		fd = atomic_load_explicit(&fdzone__low, memory_order_relaxed);
	while ((unsigned)fd / (FDZONE__WORDS * 64) < FDZONE__DIRS) {
		_Atomic uint64_t *w = fdzone__word(fd, false);
		uint64_t bits;

		if (!w) { /* no chunk: the next one */
			fd = (int)(((unsigned)fd / (FDZONE__WORDS * 64) + 1) *
				   (FDZONE__WORDS * 64));
			continue;
		}
		bits = atomic_load_explicit(w, memory_order_relaxed) >>
		       ((unsigned)fd % 64);
		if (bits)
			return fd + __builtin_ctzll(bits);
		fd = (fd | 63) + 1;
	}
	return -1;
}

/* fdzone__lock held.  A place for a duplicate of fd (PLACES). */
static int fdzone__place(int fd)
{
	struct rlimit rl;
	int r, top;

	r = sys_nofile(NULL, &rl);
	if (r < 0)
		return r;
	if (rl.rlim_cur > INT32_MAX)
		rl.rlim_cur = INT32_MAX;
	if (rl.rlim_max > rl.rlim_cur) {
		struct rlimit up = { rl.rlim_max, rl.rlim_max };

		/* ABOVE: the put-back cannot fail (lowering is always allowed,
		 * and the hard limit is unchanged). */
		if (sys_nofile(&up, NULL) == 0) {
			r = sys_fcntl(fd, F_DUPFD_CLOEXEC,
				      (void *)(uintptr_t)rl.rlim_cur);
			(void)sys_nofile(&rl, NULL);
			if (r >= 0)
				return r;
		}
	}
	/* TOP. */
	top = rl.rlim_cur < FDZONE__CAP ? (int)rl.rlim_cur : FDZONE__CAP;
	if (fdzone__cursor <= 0 || fdzone__cursor >= top)
		fdzone__cursor = top - 1;
	for (;;) {
		int step;

		r = sys_fcntl(fd, F_DUPFD_CLOEXEC,
			      (void *)(uintptr_t)fdzone__cursor);
		/* -EINVAL: the limit went below the cursor meanwhile (another
		 * process's prlimit); the next placement starts again. */
		if (r >= 0 || (r != -EMFILE && r != -EINVAL))
			return r;
		if (fdzone__cursor <= 0 || r == -EINVAL) {
			fdzone__cursor = 0; /* the next one starts at the top */
			return -EMFILE;
		}
		/* Twice as far down each time: a dense zone of n costs
		 * log(n) calls once, then the cursor stays there. */
		step = top - fdzone__cursor;
		if (step < FDZONE__STEP)
			step = FDZONE__STEP;
		fdzone__cursor = fdzone__cursor > step ? fdzone__cursor - step
						       : 0;
	}
}

int fdzone_dup(int fd)
{
	int r;

	lock_take(&fdzone__lock);
	r = fdzone__place(fd);
	lock_drop(&fdzone__lock);
	if (r >= 0 && !fdzone__mark(r)) {
		sys_close(r);
		r = -ENOMEM;
	}
	return r;
}

int fdzone_move(int fd)
{
	int r = fdzone_dup(fd);

	/* No other number free (TOP, a full table): it stays where it is,
	 * which is as good a place as any then. */
	if (r == -EMFILE) {
		if (fdzone__mark(fd))
			return fd;
		r = -ENOMEM;
	}
	sys_close(fd);
	return r;
}

int fdzone_eventfd(int flags)
{
	struct rlimit rl, up;
	int r = sys_eventfd(0, flags);

	if (r >= 0)
		return fdzone_move(r);
	if (r != -EMFILE)
		return r;
	/* No number left below the soft limit: made in ABOVE's window, where
	 * the kernel gives the lowest free number, above the soft one. */
	lock_take(&fdzone__lock);
	r = sys_nofile(NULL, &rl);
	if (r == 0 && rl.rlim_max > rl.rlim_cur) {
		up = (struct rlimit){ rl.rlim_max, rl.rlim_max };
		r = sys_nofile(&up, NULL);
		if (r == 0) {
			r = sys_eventfd(0, flags);
			(void)sys_nofile(&rl, NULL);
		}
	} else if (r == 0) {
		r = -EMFILE;
	}
	lock_drop(&fdzone__lock);
	if (r >= 0 && !fdzone__mark(r)) {
		sys_close(r);
		r = -ENOMEM;
	}
	return r;
}

void fdzone_close(int fd)
{
	_Atomic uint64_t *w = fdzone__word(fd, false);

	/* Unmarked first: once closed, the number may be the program's. */
	if (w)
		atomic_fetch_and_explicit(w, ~((uint64_t)1 << ((unsigned)fd % 64)),
					  memory_order_relaxed);
	sys_close(fd);
}

bool fdzone_rlimit_begin(void)
{
	/* A handler whose thread holds a lock of ours (perhaps this one)
	 * must not wait: it reads what is there. */
	if (lock_held_here())
		return false;
	lock_take(&fdzone__lock);
	return true;
}

void fdzone_rlimit_end(void)
{
	lock_drop(&fdzone__lock);
}
