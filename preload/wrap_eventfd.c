/* SPDX-License-Identifier: MIT */
/*
 * wrap_eventfd.c - eventfd, eventfd_read, eventfd_write.
 *
 * glibc's eventfd_read/eventfd_write call its internal read/write, not the
 * exported names, so wrapping read and write does not cover them: they
 * are wrapped themselves.  A flag the kernel does not know (uepoll's own
 * UEVENTFD_NOPOLL among them) goes to the kernel, for its EINVAL.
 * UEPOLL_EVENTFD_COALESCE applies by itself: the library reads it for
 * every ueventfd.
 */
#include <sys/eventfd.h>

#include "uepoll.h"

#include "preload.h"

PRELOAD_WRAP int eventfd(unsigned int initval, int flags)
{
	int e = errno, fd;

	if (!preload_ready() || preload_plain() || preload_in_vfork_child() ||
	    flags & ~(EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC))
		return REAL(eventfd)(initval, flags);
	/* UEPOLL_NOPOLL=1: exact only once something polls it (wrap_poll.c). */
	fd = ueventfd(initval, flags | (policy.nopoll ? UEVENTFD_NOPOLL : 0));
	/* No room for the library's own fds (src/fdzone.c), no memory: the
	 * kernel's eventfd, or the kernel's error. */
	if (fd < 0) {
		do {
			errno = e;
			fd = REAL(eventfd)(initval, flags);
		} while (fd < 0 && errno == EMFILE && preload_make_room());
		return fd;
	}
	stats_add(STAT_EVENTFDS);
	errno = e;
	return preload_made(fd);
}

PRELOAD_WRAP int eventfd_read(int fd, eventfd_t *value)
{
	int e = errno;

	if (!preload_ready())
		return REAL(eventfd_read)(fd, value);
	if (preload_hidden(fd))
		return REAL(eventfd_read)(-1, value);
	stats_add(STAT_READS);
	return (int)preload_keep_errno(e, ueventfd_read(fd, value));
}

PRELOAD_WRAP int eventfd_write(int fd, eventfd_t value)
{
	int e = errno;

	if (!preload_ready())
		return REAL(eventfd_write)(fd, value);
	if (preload_hidden(fd))
		return REAL(eventfd_write)(-1, value);
	stats_add(STAT_WRITES);
	return (int)preload_keep_errno(e, ueventfd_write(fd, value));
}
