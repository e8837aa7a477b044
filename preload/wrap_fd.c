/* SPDX-License-Identifier: MIT */
/*
 * wrap_fd.c - every way to close or replace a number: close, close_range,
 * closefrom, dup2, dup3, fcntl's F_DUPFD*, and dup and fcntl themselves;
 * and ioctl's FIONBIO, fcntl's F_SETFL by another name.
 *
 * A uepoll object is published under its number in the library's fd table.
 * A number closed by the kernel without the library knowing would leave a
 * stale entry (a later read() of the number, now some socket, would go to
 * the dead object), and the object would leak.  close() of an object is
 * uepoll_close; the calls that close many numbers, or replace one, go to
 * the kernel and then drop what was published under the numbers they
 * closed.
 *
 * RACE.  Between the kernel's close and the drop, another thread may be
 * given the same number for a new object: so what was published before
 * the call is noted first (with a reference), and afterwards only that
 * object is dropped, if the number still leads to it (uobj_unpublish).
 *
 * PRIVATE.  The library's own fds (its objects' private duplicates, an
 * instance's doorbell: src/fdzone.c) sit where the program does not look,
 * but a close loop or a closefrom() before an exec reaches them: for the
 * program they are free numbers, so close() of one answers EBADF, as it
 * would natively, and close_range() and closefrom() close around them.
 * The exec handover (wrap_exec.c) needs them after such a loop.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "uepoll.h"

#include "fdtab.h"
#include "fdzone.h"

#include "preload.h"

int fd_close(int fd)
{
	int e = errno;

	if (preload_in_vfork_child())
		return REAL(close)(fd);

	stats_add(STAT_CLOSES);
	return (int)preload_keep_errno(e, uepoll_close(fd));
}

PRELOAD_WRAP int close(int fd)
{
	if (!preload_ready()) {
		int (*f)(int) = REAL(close);
		long r;

		if (f)
			return f(fd);
		r = real_syscall_raw(SYS_close, fd, 0, 0, 0, 0, 0);
		if (r < 0) {
			errno = (int)-r;
			return -1;
		}
		return 0;
	}
	/* FAST PATH in wrap_io.c.  A vfork child closes in its own table. */
	if (!preload_maybe_object(fd) || preload_in_vfork_child()) {
		if (fdzone_has(fd)) {
			errno = EBADF; /* the library's own (PRIVATE) */
			return -1;
		}
		return real__fns.close(fd);
	}
	return fd_close(fd);
}
PRELOAD_ALIAS(__close, close);

/* What was published in a range before the kernel closes it (RACE). */
struct fd__snap {
	int fd;
	struct uobj *o;
};

/* The objects published in [first, last], each with a reference, in a
 * malloc'ed array (*n of them); NULL if there are none, or if no memory
 * (then *n is -1 and the caller drops by number afterwards). */
static struct fd__snap *fd__snapshot(unsigned int first, unsigned int last,
				     long *n)
{
	struct fd__snap *v = NULL, *w;
	long cap = 0;
	int fd = first > INT32_MAX ? -1 : fdtab_next((int)first);

	*n = 0;
	for (; fd >= 0 && (unsigned int)fd <= last; fd = fdtab_next(fd + 1)) {
		struct uobj *o = fdtab_get(fd);

		if (!o)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			w = realloc(v, (size_t)cap * sizeof(*v));
			if (!w) {
				uobj_put(o);
				for (long i = 0; i < *n; i++)
					uobj_put(v[i].o);
				free(v);
				*n = -1;
				return NULL;
			}
			v = w;
		}
		v[*n].fd = fd;
		v[(*n)++].o = o;
		if (fd == INT32_MAX)
			break;
	}
	return v;
}

/* After the kernel closed the range: drop what the snapshot saw there. */
static void fd__drop(struct fd__snap *v, long n, unsigned int first,
		     unsigned int last)
{
	if (n < 0) {
		fd_forget_range(first, last);
		return;
	}
	for (long i = 0; i < n; i++) {
		uobj_unpublish(v[i].fd, v[i].o);
		uobj_put(v[i].o);
		stats_add(STAT_FORGETS);
	}
	free(v);
}

void fd_forget_range(unsigned int first, unsigned int last)
{
	int fd = first > INT32_MAX ? -1 : fdtab_next((int)first);

	for (; fd >= 0 && (unsigned int)fd <= last; fd = fdtab_next(fd + 1)) {
		uobj_forget(fd);
		stats_add(STAT_FORGETS);
		if (fd == INT32_MAX)
			break;
	}
}

/* close_range(2) of [first, last] around the library's private numbers
 * (PRIVATE): one call per stretch between them, the first one carrying
 * CLOSE_RANGE_UNSHARE (the others act on the table it made).  libc's
 * close_range or, for syscall(2)'s wrapper, the system call. */
static int fd__close_around(unsigned int first, unsigned int last, int flags,
			    bool via_syscall)
{
	int r = 0, p;

	for (;;) {
		p = first > INT32_MAX ? -1 : fdzone_next((int)first);
		unsigned int end = p < 0 || (unsigned int)p > last
					   ? last
					   : (unsigned int)p - 1;

		if (p != (int)first) {
			if (via_syscall)
				r = (int)REAL(syscall)(SYS_close_range, first,
						       end, flags);
			else if (REAL(close_range))
				r = REAL(close_range)(first, end, flags);
			else {
				errno = ENOSYS;
				r = -1;
			}
			if (r < 0)
				return r;
			flags &= ~CLOSE_RANGE_UNSHARE;
		}
		if (p < 0 || (unsigned int)p >= last)
			return r;
		first = (unsigned int)p + 1;
	}
}

/*
 * SPLIT.  unshare(CLONE_FILES), and close_range's CLOSE_RANGE_UNSHARE, give
 * the calling thread an fd table of its own: from then on a number may be
 * open in one thread's table and closed in another's, which the library's
 * one table per process cannot say.  If other threads share this table
 * (the usual case: a forked child that closes before exec is alone), the
 * acceleration ends first, as for io_uring (PLAIN in init.c): every object
 * is demoted, and each table then holds exact kernel objects.
 */
static int fd__threads(void)
{
	char buf[512], *p;
	int fd, n = 0;
	ssize_t r;

	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 2; /* cannot tell: assume others */
	r = real__fns.read(fd, buf, sizeof(buf) - 1);
	real__fns.close(fd);
	if (r <= 0)
		return 2;
	buf[r] = 0;
	/* Field 20, num_threads, counted after the command's ')'. */
	p = strrchr(buf, ')');
	for (int f = 2; p && f < 20; f++)
		p = strchr(p + 1, ' ');
	if (p)
		n = atoi(p + 1);
	return n > 0 ? n : 2;
}

void fd_table_split(void)
{
	if (preload_ready() && !preload_plain() && !preload_in_vfork_child() &&
	    fd__threads() > 1)
		preload_go_plain();
}

PRELOAD_WRAP int unshare(int flags)
{
	if (flags & CLONE_FILES)
		fd_table_split();
	return REAL(unshare)(flags);
}

/* close_range through libc, or the system call for syscall(2)'s wrapper. */
int fd_close_range(unsigned int first, unsigned int last, int flags,
		   bool via_syscall)
{
	struct fd__snap *v = NULL;
	long n = 0;
	int r, e = errno;

	if (flags & CLOSE_RANGE_UNSHARE && !preload_in_vfork_child())
		fd_table_split();

	/* CLOSE_RANGE_CLOEXEC closes nothing; a vfork child closes in its
	 * own table (the library's memory is its parent's). */
	bool closes = preload_ready() && !preload_in_vfork_child() &&
		      !(flags & CLOSE_RANGE_CLOEXEC);

	if (closes)
		v = fd__snapshot(first, last, &n);
	/* Flags the kernel refuses: its EINVAL, nothing closed. */
	if (preload_ready() && first <= last &&
	    !(flags & ~(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC)))
		r = fd__close_around(first, last, flags, via_syscall);
	else if (via_syscall)
		r = (int)REAL(syscall)(SYS_close_range, first, last, flags);
	else if (REAL(close_range))
		r = REAL(close_range)(first, last, flags);
	else {
		errno = ENOSYS;
		r = -1;
	}
	if (r == 0 && closes) {
		fd__drop(v, n, first, last);
		errno = e; /* (the library's own calls on the way) */
	} else {
		for (long i = 0; i < n; i++)
			uobj_put(v[i].o);
		free(v);
	}
	return r;
}

PRELOAD_WRAP int close_range(unsigned int first, unsigned int last, int flags)
{
	return fd_close_range(first, last, flags, false);
}

/* closefrom's fallback: every listed number >= lowfd but the private
 * ones, listed first and closed after (closing while reading the
 * directory would skip entries). */
static void fd__close_listed(int lowfd)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int *v = NULL, n = 0, cap = 0, self;

	if (!d)
		return;
	self = dirfd(d);
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);

		if (de->d_name[0] == '.' || fd < lowfd || fd == self ||
		    fdzone_has(fd))
			continue;
		if (n == cap) {
			int *w = realloc(v, (size_t)(cap = cap ? 2 * cap : 64) *
						    sizeof(*v));

			if (!w)
				break;
			v = w;
		}
		v[n++] = fd;
	}
	closedir(d);
	for (int i = 0; i < n; i++)
		real__fns.close(v[i]);
	free(v);
}

PRELOAD_WRAP void closefrom(int lowfd)
{
	struct fd__snap *v = NULL;
	long n = 0;
	int e = errno;

	if (!REAL(closefrom))
		return;
	if (!preload_ready() || lowfd < 0 || preload_in_vfork_child()) {
		REAL(closefrom)(lowfd);
		return;
	}
	v = fd__snapshot((unsigned int)lowfd, ~0u, &n);
	/* Around the private numbers; libc's closefrom only without them.
	 * Where close_range(2) is missing (before Linux 5.9, or refused by a
	 * seccomp filter), the numbers /proc/self/fd lists, as libc's own
	 * fallback walks them, but the private ones. */
	if (fdzone_next(lowfd) < 0)
		REAL(closefrom)(lowfd);
	else if (fd__close_around((unsigned int)lowfd, ~0u, 0, false) < 0)
		fd__close_listed(lowfd);
	fd__drop(v, n, (unsigned int)lowfd, ~0u);
	errno = e;
}

/* uepoll_dup2/uepoll_dup3 make a new number of an object the same object,
 * and take a number they replace from the object it led to (NUMBERS in
 * src/obj.c), whatever the old number is. */
int fd_dup3(int oldfd, int newfd, int flags, bool is_dup2)
{
	int e = errno, r;

	if (preload_in_vfork_child())
		return is_dup2 ? REAL(dup2)(oldfd, newfd)
			       : REAL(dup3)(oldfd, newfd, flags);
	/* PRIVATE: the kernel's answer for a number not open (its flags and
	 * same-number checks first). */
	if (preload_hidden(oldfd)) {
		if (oldfd == newfd) {
			if (is_dup2) {
				errno = EBADF;
				return -1;
			}
			return REAL(dup3)(-1, -1, flags);
		}
		/* A number never open (above any fd limit) that is not newfd. */
		oldfd = newfd == INT32_MAX ? INT32_MAX - 1 : INT32_MAX;
		return is_dup2 ? REAL(dup2)(oldfd, newfd)
			       : REAL(dup3)(oldfd, newfd, flags);
	}
	r = is_dup2 ? uepoll_dup2(oldfd, newfd) : uepoll_dup3(oldfd, newfd, flags);
	if (r >= 0)
		stats_add(STAT_DUPS);
	return (int)preload_keep_errno(e, r);
}

PRELOAD_WRAP int dup(int oldfd)
{
	int e = errno, r;

	if (!preload_ready() || preload_in_vfork_child())
		return REAL(dup)(oldfd);
	if (preload_hidden(oldfd))
		return REAL(dup)(-1);
	r = uepoll_dup(oldfd);
	if (r >= 0)
		stats_add(STAT_DUPS);
	return (int)preload_keep_errno(e, r);
}

PRELOAD_WRAP int dup2(int oldfd, int newfd)
{
	if (!preload_ready() || preload_in_vfork_child())
		return REAL(dup2)(oldfd, newfd);
	return fd_dup3(oldfd, newfd, 0, true);
}
PRELOAD_ALIAS(__dup2, dup2);

PRELOAD_WRAP int dup3(int oldfd, int newfd, int flags)
{
	if (!preload_ready() || preload_in_vfork_child())
		return REAL(dup3)(oldfd, newfd, flags);
	return fd_dup3(oldfd, newfd, flags, false);
}

/* An object's number: uepoll_fcntl (F_DUPFD* are dups, F_SETFL's
 * O_NONBLOCK is seen at once).  Any other fd: libc's own fcntl, which keeps
 * its cancellation point for F_SETLKW and its lock-structure handling. */
static int fd__fcntl(int (*real)(int, int, ...), int fd, int cmd, void *arg)
{
	bool dup = cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC;
	int e = errno, r;

	if (preload_ready() && preload_hidden(fd))
		return real(-1, cmd, arg);

	/* A dup of any fd may land on a number the table still has: the
	 * library's F_DUPFD drops what was there. */
	if (!preload_ready() || (!dup && !preload_is_object(fd)) ||
	    (dup && preload_in_vfork_child()))
		return real(fd, cmd, arg);
	r = uepoll_fcntl(fd, cmd, arg);
	if (r >= 0 && dup)
		stats_add(STAT_DUPS);
	return (int)preload_keep_errno(e, r);
}

/* The argument, whatever its type (int, long or a pointer), is read as a
 * pointer, as glibc's own fcntl reads it. */
PRELOAD_WRAP int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fd__fcntl(REAL(fcntl), fd, cmd, arg);
}
PRELOAD_ALIAS(__fcntl, fcntl);

PRELOAD_WRAP int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fd__fcntl(REAL(fcntl64) ? REAL(fcntl64) : REAL(fcntl), fd, cmd,
			 arg);
}

/* ioctl(FIONBIO) sets or clears O_NONBLOCK, as F_SETFL does (CPython's
 * os.set_blocking uses it): on an object's number it is that F_SETFL, so
 * the object sees it at once.  Every other request, and every other fd:
 * libc's ioctl (the kernel object answers, ENOTTY for most). */
PRELOAD_WRAP int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;
	int e = errno, fl, r;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (mem_uffd_request(req))
		mem_forget_all(); /* SEEN in wrap_mem.c */
	if (preload_ready() && preload_hidden(fd))
		return REAL(ioctl)(-1, req, arg);
	if (req != FIONBIO || !preload_ready() || !preload_is_object(fd))
		return REAL(ioctl)(fd, req, arg);
	/* The kernel reads the argument (EFAULT is its) and sets the flag on
	 * the file; the object then takes the file's flags. */
	r = REAL(ioctl)(fd, req, arg);
	if (r < 0)
		return r;
	fl = uepoll_fcntl(fd, F_GETFL);
	if (fl >= 0)
		(void)uepoll_fcntl(fd, F_SETFL, fl);
	errno = e;
	return r;
}
