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
 * always below twice FDZONE__CAP (FD_SETSIZE, 1024: the kernel's fd table
 * grows with the highest open number, and select() reads as many bits as
 * the table has, up to nfds: select(getdtablesize(), ...) with a plain
 * fd_set keeps working as long as the soft limit is at most FD_SETSIZE, or
 * the table within one fd_set),
 *  - ABOVE the soft limit when it is at most the cap (1024, the usual
 *    soft limit, or a program that lowered its own) and the hard limit
 *    leaves room: the soft limit is raised (to at most twice the cap) for
 *    that one fcntl and put back at once (RLIMIT, SPAWN).  The program
 *    can neither get such a number nor dup2 onto it (the kernel refuses
 *    numbers at or above the soft limit), its close loops up to
 *    sysconf(_SC_OPEN_MAX) stop below it, and its EMFILE comes at the
 *    native count;
 *  - else at the TOP: the highest free number below the soft limit and the
 *    cap, the zone growing downwards from there as far as it must.  The
 *    program then meets them only when it gets near 1024 fds (its numbers
 *    then skip the zone, and with a soft limit of 1024 its EMFILE comes
 *    earlier, by the private fds held) or dup2()s onto a number near 1023:
 *    docs/design.md, "Where uepoll differs".  With no number left there
 *    (about a thousand objects), the lowest free one above 1023.
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

/* FD_SETSIZE.  Below it when the private fds take the program's numbers
 * (TOP), so that the kernel's fd table stays within what one fd_set covers
 * (select() reads nfds bits, up to the table's size: select(getdtablesize(),
 * ...) with a plain fd_set must keep working) and a fork copies no more of
 * it; ABOVE goes up to twice it; past about a thousand objects, any number
 * the soft limit allows (PLACES). */
#define FDZONE__CAP 1024

#define FDZONE__WORDS 64 /* 4096 numbers per chunk */
#define FDZONE__DIRS 1024 /* 4M numbers: above the kernel's default nr_open */

/* Chunks are allocated on first use and never freed (as fdtab.c's). */
static _Atomic(_Atomic uint64_t *) fdzone__dir[FDZONE__DIRS];
_Atomic int fdzone__low = INT32_MAX;

static pthread_mutex_t fdzone__lock = PTHREAD_MUTEX_INITIALIZER;
/* TOP found no free number below the cap (relaxed: a hint; written under
 * fdzone__lock, cleared by fdzone_close without it). */
static _Atomic bool fdzone__below_full;

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

/*
 * SPAWN.  A child made by clone() without the fork handlers (posix_spawn,
 * system, popen, vfork) copies the soft limit as it is at that moment: one
 * made inside ABOVE's window would keep the raised one for good.  The
 * preload layer's wrappers of those calls announce them (fdzone_spawn_begin
 * and _end); a placement raises only while none is in progress.  A Dekker
 * pair, both sides seq_cst: the placement stores `raising` then loads
 * `spawns`; a spawn adds to `spawns` then waits until `raising` is 0.  So
 * either the placement sees the spawn (and places at the TOP instead) or
 * the spawn waits for the window to close (two system calls).
 */
static _Atomic int fdzone__spawns;
static _Atomic int fdzone__raising;

static bool fdzone__raise_begin(void)
{
	atomic_store(&fdzone__raising, 1);
	if (atomic_load(&fdzone__spawns) == 0)
		return true;
	atomic_store(&fdzone__raising, 0);
	return false;
}

static void fdzone__raise_end(void)
{
	atomic_store(&fdzone__raising, 0);
}

void fdzone_spawn_begin(void)
{
	atomic_fetch_add(&fdzone__spawns, 1);
	while (atomic_load(&fdzone__raising))
		sys_yield();
}

void fdzone_spawn_end(void)
{
	atomic_fetch_sub(&fdzone__spawns, 1);
}

/* A duplicate of fd at the lowest free number >= base, or -errno. */
static int fdzone__from(int fd, int base)
{
	return sys_fcntl(fd, F_DUPFD_CLOEXEC, (void *)(uintptr_t)base);
}

/* fdzone__lock held.  TOP: a duplicate of fd at the highest free number
 * below top, or -EMFILE.  The numbers are looked at from the top down:
 * ours (the bitmap) are skipped without a call, any other is asked with
 * F_GETFD, which allocates nothing.  A probe by F_DUPFD would: its number
 * could be 1024 or above, and the kernel's fd table never shrinks again
 * (FDZONE__CAP).  A free one is taken with F_DUPFD from it, which gives it
 * unless another thread took it meanwhile (then the next one down). */
static int fdzone__top(int fd, int top)
{
	for (int n = top - 1; n >= 0; n--) {
		int r;

		if (fdzone__has(n) || sys_fcntl(n, F_GETFD, NULL) != -EBADF)
			continue;
		r = fdzone__from(fd, n);
		if (r == n || r < 0)
			return r;
		sys_close(r);
	}
	return -EMFILE;
}

/* fdzone__lock held.  A place for a duplicate of fd (PLACES). */
static int fdzone__place(int fd)
{
	struct rlimit rl;
	int r, cur;

	r = sys_nofile(NULL, &rl);
	if (r < 0)
		return r;
	cur = rl.rlim_cur > INT32_MAX ? INT32_MAX : (int)rl.rlim_cur;
	if (cur <= FDZONE__CAP && rl.rlim_max > (rlim_t)cur &&
	    fdzone__raise_begin()) {
		struct rlimit up = { rl.rlim_max < 2 * FDZONE__CAP
					     ? rl.rlim_max
					     : 2 * FDZONE__CAP,
				     rl.rlim_max };

		/* ABOVE: the put-back cannot fail (lowering is always allowed,
		 * and the hard limit is unchanged). */
		r = -EMFILE;
		if (sys_nofile(&up, NULL) == 0) {
			r = fdzone__from(fd, cur);
			(void)sys_nofile(&rl, NULL);
		}
		fdzone__raise_end();
		if (r >= 0)
			return r;
	}
	/* The scan is skipped once it found nothing, until one of ours below
	 * the cap is closed (the program's own closes are not seen: a number
	 * freed so is only not used again for ours, which is no harm). */
	r = -EMFILE;
	if (!atomic_load_explicit(&fdzone__below_full, memory_order_relaxed)) {
		r = fdzone__top(fd, cur < FDZONE__CAP ? cur : FDZONE__CAP);
		if (r == -EMFILE)
			atomic_store_explicit(&fdzone__below_full, true,
					      memory_order_relaxed);
	}
	/* Not a number left below the cap (a program with a thousand objects):
	 * the lowest free one above it, as far as the soft limit goes (its
	 * table is that large by then anyway). */
	if (r == -EMFILE && cur > FDZONE__CAP)
		r = fdzone__from(fd, FDZONE__CAP);
	return r;
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
	if (r == 0 && rl.rlim_max > rl.rlim_cur && fdzone__raise_begin()) {
		up = (struct rlimit){ rl.rlim_max < 2 * FDZONE__CAP
					      ? rl.rlim_max
					      : 2 * FDZONE__CAP,
				      rl.rlim_max };
		r = -EMFILE;
		if (up.rlim_cur > rl.rlim_cur && sys_nofile(&up, NULL) == 0) {
			r = sys_eventfd(0, flags);
			(void)sys_nofile(&rl, NULL);
		}
		fdzone__raise_end();
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
	if (fd < FDZONE__CAP)
		atomic_store_explicit(&fdzone__below_full, false,
				      memory_order_relaxed);
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
