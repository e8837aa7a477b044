/* SPDX-License-Identifier: MIT */
/*
 * wrap_io.c - read, write, __read_chk, readv, writev, preadv2, pwritev2,
 * and fdopen.
 *
 * A ueventfd's counter lives in the process: a read or write of its number
 * that reached the kernel would see the mirror eventfd (MIRROR in
 * src/eventfd.c), not the counter.  So every read and write goes through
 * uepoll_read/uepoll_write, which pass any other fd to libc at the cost of
 * one lock-free table lookup.  readv/writev are taken over for ueventfds
 * only, with the kernel's eventfd's rules (below); for every other fd
 * they are libc's.
 *
 * Before the constructor ran, or inside this thread's own lookup of libc's
 * functions (real.c), read and write are raw system calls: that is the path
 * a malloc's initialisation can take.
 */
#include <limits.h>
#include <string.h>
#include <sys/syscall.h>

#include "uepoll.h"

#include "preload.h"

static ssize_t io__raw(long nr, int fd, const void *buf, size_t n)
{
	long r = real_syscall_raw(nr, fd, (long)buf, (long)n, 0, 0, 0);

	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* FAST PATH: a number with no object published (every fd of a program
 * that never made one) goes straight to libc's call: the one relaxed load
 * of fdtab_peek is then all the wrapper adds.  That a number becomes an
 * object while this very call is on it is a race the program cannot tell
 * from the call coming first, as with uepoll_read's own lookup. */
PRELOAD_WRAP ssize_t read(int fd, void *buf, size_t count)
{
	int e;

	if (!preload_ready()) {
		ssize_t (*f)(int, void *, size_t) = REAL(read);

		return f ? f(fd, buf, count) : io__raw(SYS_read, fd, buf, count);
	}
	if (!preload_maybe_object(fd))
		return real__fns.read(preload_hidden(fd) ? -1 : fd, buf, count);
	e = errno;
	return preload_keep_errno(e, uepoll_read(fd, buf, count));
}
PRELOAD_ALIAS(__read, read);

PRELOAD_WRAP ssize_t write(int fd, const void *buf, size_t count)
{
	int e;

	if (!preload_ready()) {
		ssize_t (*f)(int, const void *, size_t) = REAL(write);

		return f ? f(fd, buf, count)
			 : io__raw(SYS_write, fd, buf, count);
	}
	if (!preload_maybe_object(fd))
		return real__fns.write(preload_hidden(fd) ? -1 : fd, buf,
				       count);
	e = errno;
	return preload_keep_errno(e, uepoll_write(fd, buf, count));
}
PRELOAD_ALIAS(__write, write);

/* _FORTIFY_SOURCE's read: the same, after its check of the buffer.  (Its
 * prototype is in no header unless fortification is on.) */
ssize_t __read_chk(int fd, void *buf, size_t nbytes, size_t buflen);
PRELOAD_WRAP ssize_t __read_chk(int fd, void *buf, size_t nbytes,
				size_t buflen)
{
	if (nbytes > buflen || !preload_ready())
		return REAL(__read_chk)(fd, buf, nbytes, buflen);
	return read(fd, buf, nbytes);
}

static size_t io__total(const struct iovec *iov, int n)
{
	size_t t = 0;

	for (int i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* The kernel's eventfd reads into an iterator: the whole request must
 * hold 8 bytes, which are then scattered over the vectors. */
PRELOAD_WRAP ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	unsigned char v[8];
	size_t off = 0;
	ssize_t r;
	int e = errno;

	if (preload_ready() && preload_hidden(fd))
		fd = -1; /* PRIVATE: the kernel's answer */

	if (!preload_ready() || iovcnt <= 0 || iovcnt > IOV_MAX ||
	    !preload_is_eventfd(fd))
		return REAL(readv)(fd, iov, iovcnt);
	/* Nothing asked: the kernel's 0 before the file is looked at. */
	if (!io__total(iov, iovcnt))
		return 0;
	r = uepoll_read(fd, v, io__total(iov, iovcnt) < 8 ? 0 : 8);
	if (r < 0)
		return r;
	for (int i = 0; i < iovcnt && off < (size_t)r; i++) {
		size_t k = iov[i].iov_len < (size_t)r - off ? iov[i].iov_len
							    : (size_t)r - off;

		memcpy(iov[i].iov_base, v + off, k);
		off += k;
	}
	return preload_keep_errno(e, r);
}

/* The kernel's eventfd has no write_iter: writev is a write(2) per vector,
 * in order (the empty ones after the first skipped), ending at the first
 * error (then the bytes written before it, if any, are the answer) or at
 * the first vector not taken whole. */
PRELOAD_WRAP ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	ssize_t done = 0, r;
	int e = errno;

	if (preload_ready() && preload_hidden(fd))
		fd = -1; /* PRIVATE: the kernel's answer */

	if (!preload_ready() || iovcnt <= 0 || iovcnt > IOV_MAX ||
	    !preload_is_eventfd(fd))
		return REAL(writev)(fd, iov, iovcnt);
	/* Nothing at all: 0, before any write. */
	if (!io__total(iov, iovcnt))
		return 0;
	for (int i = 0; i < iovcnt; i++) {
		/* The kernel's loop writes the first vector as it is (an empty
		 * one: EINVAL), and after a vector written whole moves on past
		 * any empty ones. */
		if (i && !iov[i].iov_len)
			continue;
		r = uepoll_write(fd, iov[i].iov_base, iov[i].iov_len);
		if (r < 0) {
			if (!done)
				return -1;
			break;
		}
		done += r;
		if ((size_t)r != iov[i].iov_len)
			break;
	}
	errno = e;
	return done;
}

/* preadv2/pwritev2 of a ueventfd.  An offset other than -1 is the
 * kernel's ESPIPE, before it touches anything (so are pread, pwrite,
 * preadv and pwritev: not wrapped).  With flags, the kernel's eventfd
 * first checks them (RWF_NOWAIT, unknown bits: EOPNOTSUPP): a probe of
 * the kernel object with 7 bytes asks it, for it then stops at the length
 * (EINVAL) without reading or writing.  Then they are readv/writev. */
static ssize_t io__rw2(bool wr, int fd, const struct iovec *iov, int iovcnt,
		       off_t off, int flags)
{
	unsigned char probe[7];
	struct iovec p = { probe, sizeof(probe) }, v[IOV_MAX];
	ssize_t r;
	int e = errno;

	/* No vector, an unreadable one (EFAULT), or fewer than 8 bytes in it:
	 * the kernel's answer (0, EFAULT, EINVAL...) touches nothing.
	 * RWF_NOWAIT: the kernel's eventfd honours it (EAGAIN where it would
	 * block), which a ueventfd's blocking path cannot: the object is
	 * demoted first (DEMOTE). */
	if (iovcnt <= 0 || iovcnt > IOV_MAX ||
	    !preload_peek(v, iov, (size_t)iovcnt * sizeof(v[0])) ||
	    io__total(v, iovcnt) < 8 || flags & RWF_NOWAIT) {
		if (flags & RWF_NOWAIT && iovcnt > 0 &&
		    !preload_in_vfork_child() && uepoll_demote(fd) == 0)
			stats_add(STAT_DEMOTES);
		errno = e;
		return wr ? REAL(pwritev2)(fd, iov, iovcnt, off, flags)
			  : REAL(preadv2)(fd, iov, iovcnt, off, flags);
	}
	if (flags) {
		r = wr ? REAL(pwritev2)(fd, &p, 1, off, flags)
		       : REAL(preadv2)(fd, &p, 1, off, flags);
		if (r >= 0 || errno != EINVAL)
			return r;
		errno = e;
	}
	return wr ? writev(fd, v, iovcnt) : readv(fd, v, iovcnt);
}

PRELOAD_WRAP ssize_t preadv2(int fd, const struct iovec *iov, int iovcnt,
			     off_t off, int flags)
{
	if (preload_ready() && preload_hidden(fd))
		fd = -1; /* PRIVATE: the kernel's answer */
	if (!preload_ready() || off != -1 || !preload_is_eventfd(fd))
		return REAL(preadv2)(fd, iov, iovcnt, off, flags);
	return io__rw2(false, fd, iov, iovcnt, off, flags);
}

PRELOAD_WRAP ssize_t pwritev2(int fd, const struct iovec *iov, int iovcnt,
			      off_t off, int flags)
{
	if (preload_ready() && preload_hidden(fd))
		fd = -1; /* PRIVATE: the kernel's answer */
	if (!preload_ready() || off != -1 || !preload_is_eventfd(fd))
		return REAL(pwritev2)(fd, iov, iovcnt, off, flags);
	return io__rw2(true, fd, iov, iovcnt, off, flags);
}

/* The 64-bit-offset names (the same functions on 64-bit targets, but
 * separate symbols a program may be linked to). */
PRELOAD_WRAP ssize_t preadv64v2(int fd, const struct iovec *iov, int iovcnt,
				off64_t off, int flags)
{
	if (!preload_ready() || off != -1 || !preload_is_eventfd(fd))
		return REAL(preadv64v2)(fd, iov, iovcnt, off, flags);
	return io__rw2(false, fd, iov, iovcnt, off, flags);
}

PRELOAD_WRAP ssize_t pwritev64v2(int fd, const struct iovec *iov, int iovcnt,
				 off64_t off, int flags)
{
	if (!preload_ready() || off != -1 || !preload_is_eventfd(fd))
		return REAL(pwritev64v2)(fd, iov, iovcnt, off, flags);
	return io__rw2(true, fd, iov, iovcnt, off, flags);
}

/* stdio reads and writes an fdopen()ed fd with libc's internal read and
 * write, which no wrapper sees: the object is demoted first (its counter,
 * its registrations into the kernel object), and stdio then works on the
 * exact kernel object. */
PRELOAD_WRAP FILE *fdopen(int fd, const char *mode)
{
	if (preload_ready() && preload_hidden(fd))
		fd = -1; /* PRIVATE: the kernel's answer */
	if (preload_ready() && !preload_in_vfork_child() &&
	    preload_is_object(fd)) {
		int e = errno;

		if (uepoll_demote(fd) == 0)
			stats_add(STAT_DEMOTES);
		errno = e;
	}
	return REAL(fdopen)(fd, mode);
}

/* The positioned calls: an eventfd or an epoll answers ESPIPE before
 * anything is touched, so only the library's own numbers need a word
 * (PRIVATE: the kernel's answer for a number not open). */
#define IO__POSITIONED(ret, name, params, args, ...)                          \
	PRELOAD_WRAP ret name params                                          \
	{                                                                     \
		if (preload_ready() && preload_hidden(fd))                    \
			fd = -1;                                              \
		return REAL(name) args;                                       \
	}
IO__POSITIONED(ssize_t, pread, (int fd, void *b, size_t n, off_t o),
	       (fd, b, n, o))
IO__POSITIONED(ssize_t, pwrite, (int fd, const void *b, size_t n, off_t o),
	       (fd, b, n, o))
IO__POSITIONED(ssize_t, pread64, (int fd, void *b, size_t n, off64_t o),
	       (fd, b, n, o))
IO__POSITIONED(ssize_t, pwrite64,
	       (int fd, const void *b, size_t n, off64_t o), (fd, b, n, o))
IO__POSITIONED(ssize_t, preadv,
	       (int fd, const struct iovec *v, int n, off_t o), (fd, v, n, o))
IO__POSITIONED(ssize_t, pwritev,
	       (int fd, const struct iovec *v, int n, off_t o), (fd, v, n, o))
IO__POSITIONED(ssize_t, preadv64,
	       (int fd, const struct iovec *v, int n, off64_t o),
	       (fd, v, n, o))
IO__POSITIONED(ssize_t, pwritev64,
	       (int fd, const struct iovec *v, int n, off64_t o),
	       (fd, v, n, o))
