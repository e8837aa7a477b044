/* SPDX-License-Identifier: MIT */
/*
 * wrap_poll.c - poll, ppoll, select, pselect (and their _chk forms): the
 * outside pollers.
 *
 * An instance's fd is its kernel epoll, readable while its doorbell is
 * rung: a wait that took the last event may leave it rung (a busy loop of
 * waits then makes no system call).  Before one of these calls looks at an
 * instance, the stale doorbell is taken (uobj_polled: port__polled), so
 * the fd reads ready exactly when a wait would return an event.
 *
 * With UEPOLL_NOPOLL=1 the layer makes every instance with UEPOLL_NOPOLL
 * and every eventfd with UEVENTFD_NOPOLL (wrap_epoll.c, wrap_eventfd.c):
 * their fds' readiness is then not kept exact for pollers outside uepoll's
 * calls, and a ueventfd handoff or a sleeping wait costs the least it can
 * (no doorbell write while nobody sleeps, a futex for a sleeping wait).
 * The layer sees every way a program looks at readiness through libc:
 * these calls, a kernel epoll's epoll_ctl (uepoll_ctl on an fd that is not
 * an instance ends the option itself) and the same numbers through
 * syscall() (wrap_syscall.c).  Before any of them looks at one of our
 * objects, the object's option ends for good (uobj_polled: the fd is exact
 * from then on, and what was ready is made visible first).  A number that
 * is no object costs one load.
 */
#include <poll.h>
#include <sys/select.h>

#include "obj.h"

#include "preload.h"

/* glibc declares poll's and ppoll's array write-only (access attribute): the
 * kernel fills revents.  The wrappers read the fds the caller filled in,
 * which GCC then takes for a read of uninitialised memory. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

/* glibc's _FORTIFY_SOURCE entry points (declared only under fortify). */
int __poll_chk(struct pollfd *pfd, nfds_t n, int timeout, size_t len);
int __ppoll_chk(struct pollfd *pfd, nfds_t n, const struct timespec *timeout,
		const sigset_t *mask, size_t len);

/* Every object among pfd becomes exact: with UEPOLL_NOPOLL=1 its option
 * ends; an instance's stale doorbell is taken, whatever the policy (the
 * instance's fd then reads ready only if a wait would return an event). */
void poll_mark_fds(const struct pollfd *pfd, nfds_t n)
{
	if (!pfd)
		return;
	for (nfds_t i = 0; i < n; i++)
		if (pfd[i].fd >= 0 && preload_maybe_object(pfd[i].fd))
			uobj_polled(pfd[i].fd, 0);
}

/* Bit fd of a set of nfds numbers.  Not FD_ISSET: a program may pass sets
 * larger than FD_SETSIZE (allocated for nfds bits, as the kernel reads
 * them), where fortified FD_ISSET aborts. */
static bool poll__isset(const fd_set *s, int fd)
{
	const unsigned long *b = (const unsigned long *)(const void *)s;
	const unsigned int bits = 8 * sizeof(*b);

	return s && b[(unsigned int)fd / bits] >> ((unsigned int)fd % bits) & 1;
}

/* Every object in the first nfds of the sets becomes exact. */
void poll_mark_sets(int nfds, const fd_set *r, const fd_set *w,
		    const fd_set *x)
{
	for (int fd = 0; fd < nfds; fd++)
		if ((poll__isset(r, fd) || poll__isset(w, fd) ||
		     poll__isset(x, fd)) &&
		    preload_maybe_object(fd))
			uobj_polled(fd, 0);
}

PRELOAD_WRAP int poll(struct pollfd *pfd, nfds_t n, int timeout)
{
	if (preload_ready())
		poll_mark_fds(pfd, n);
	return REAL(poll)(pfd, n, timeout);
}

PRELOAD_WRAP int __poll_chk(struct pollfd *pfd, nfds_t n, int timeout,
			    size_t len)
{
	if (preload_ready())
		poll_mark_fds(pfd, n);
	return REAL(__poll_chk)(pfd, n, timeout, len);
}

PRELOAD_WRAP int ppoll(struct pollfd *pfd, nfds_t n,
		       const struct timespec *timeout, const sigset_t *mask)
{
	if (preload_ready())
		poll_mark_fds(pfd, n);
	return REAL(ppoll)(pfd, n, timeout, mask);
}

PRELOAD_WRAP int __ppoll_chk(struct pollfd *pfd, nfds_t n,
			     const struct timespec *timeout,
			     const sigset_t *mask, size_t len)
{
	if (preload_ready())
		poll_mark_fds(pfd, n);
	return REAL(__ppoll_chk)(pfd, n, timeout, mask, len);
}

PRELOAD_WRAP int select(int nfds, fd_set *r, fd_set *w, fd_set *x,
			struct timeval *timeout)
{
	if (preload_ready())
		poll_mark_sets(nfds, r, w, x);
	return REAL(select)(nfds, r, w, x, timeout);
}

PRELOAD_WRAP int pselect(int nfds, fd_set *r, fd_set *w, fd_set *x,
			 const struct timespec *timeout, const sigset_t *mask)
{
	if (preload_ready())
		poll_mark_sets(nfds, r, w, x);
	return REAL(pselect)(nfds, r, w, x, timeout, mask);
}
