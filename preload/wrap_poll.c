/* SPDX-License-Identifier: MIT */
/*
 * wrap_poll.c - poll, ppoll, select, pselect (and their _chk forms): the
 * outside pollers.
 *
 * An instance's fd is its kernel epoll, readable while its doorbell is
 * rung: a wait that took the last event may leave it rung (a busy loop of
 * waits then makes no system call).  Before one of these calls looks at an
 * instance, the stale doorbell is taken (uobj_looked: port__looked), so
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

#include "fdtab.h"
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

/* Anything for a look to do?  Any object: an instance's stale doorbell,
 * NOPOLL to end, or a private fd (which only objects have) to hide.  A
 * process with none (a program that never made one) gets libc's call with
 * two loads. */
static bool poll__any(void)
{
	return uobj_live_count(UOBJ_PORT) > 0 ||
	       uobj_live_count(UOBJ_EVENTFD) > 0;
}

/* Every object among pfd becomes exact: with UEPOLL_NOPOLL=1 its option
 * ends; an instance's stale doorbell is taken, whatever the policy (the
 * instance's fd then reads ready only if a wait would return an event).
 * An entry naming one of the library's private fds (PRIVATE) is, for the
 * program, a number it does not have: POLLNVAL at once, as natively; it is
 * noted in *h, its fd set to -1 for the kernel's call (which the caller
 * then makes with no timeout) and given back by poll_unhide.  The array is
 * read with preload_peek: a bad one is the kernel's EFAULT, as is an n
 * above any fd limit its EINVAL, never a fault here. */
void poll_mark_fds(struct pollfd *pfd, nfds_t n, struct poll_hide *h)
{
	static const int minus1 = -1;
	struct pollfd v[64];

	if (h) {
		h->n = 0;
		h->efault = false;
	}
	if (!pfd || !n || n > (1u << 20) || !poll__any())
		return;
	for (nfds_t i = 0; i < n;) {
		nfds_t k = n - i < 64 ? n - i : 64;

		if (!preload_peek(v, pfd + i, k * sizeof(v[0])))
			return;
		for (nfds_t j = 0; j < k; j++) {
			if (v[j].fd < 0)
				continue;
			if (preload_maybe_object(v[j].fd)) {
				if (policy.nopoll ||
				    uobj_live_count(UOBJ_PORT) > 0)
					uobj_looked(v[j].fd);
			} else if (h && fdzone_has(v[j].fd) &&
				   h->n < POLL_HIDE_MAX) {
				/* (A read-only array: the kernel's call would
				 * fail to write revents, EFAULT.) */
				if (!preload_poke(&pfd[i + j].fd, &minus1,
						  sizeof(minus1))) {
					h->efault = true;
					return;
				}
				h->at[h->n] = i + j;
				h->fd[h->n++] = v[j].fd;
			}
		}
		i += k;
	}
}

int poll_unhide(struct pollfd *pfd, const struct poll_hide *h, int r)
{
	for (int i = 0; i < h->n; i++) {
		pfd[h->at[i]].fd = h->fd[i];
		if (r >= 0) {
			pfd[h->at[i]].revents = POLLNVAL;
			r++;
		}
	}
	return r;
}

/* Every object in the first nfds of the sets becomes exact; 0, or -EBADF
 * if a set names one of the library's private fds (a number the program
 * does not have: the kernel's EBADF).  Only the words up to the highest
 * number an object or a private fd may have are read (the kernel itself
 * reads no further than its fd table, which holds it), each with
 * preload_peek; a set larger than FD_SETSIZE is read as the kernel reads
 * it (FD_ISSET would abort under _FORTIFY_SOURCE). */
int poll_mark_sets(int nfds, const fd_set *r, const fd_set *w,
		   const fd_set *x)
{
	const fd_set *sets[3] = { r, w, x };
	const int bits = 8 * (int)sizeof(unsigned long);
	unsigned long v[3][16];
	int end;

	if (nfds <= 0 || !poll__any())
		return 0;
	end = fdtab_high() + 1;
	if (fdzone_next(0) >= end)
		end = fdzone_next(0) + 1 > 1024 ? fdzone_next(0) + 1 : 1024;
	if (end > nfds)
		end = nfds;
	for (int base = 0; base < end; base += 16 * bits) {
		int stop = end - base < 16 * bits ? end - base : 16 * bits;
		size_t words = (size_t)((stop + bits - 1) / bits);

		for (int k = 0; k < 3; k++) {
			const unsigned long *w0 =
				(const unsigned long *)(const void *)sets[k];

			if (sets[k] && !preload_peek(v[k], w0 + base / bits,
						     words * sizeof(v[k][0])))
				return 0;
		}
		for (int i = 0; i < stop; i++) {
			bool on = false;

			for (int k = 0; k < 3; k++)
				on = on || (sets[k] &&
					    (v[k][i / bits] >> (i % bits) & 1));
			if (!on)
				continue;
			if (fdzone_has(base + i))
				return -EBADF;
			if (preload_maybe_object(base + i) &&
			    (policy.nopoll || uobj_live_count(UOBJ_PORT) > 0))
				uobj_looked(base + i);
		}
	}
	return 0;
}

#define POLL__CALL(call, pfd, n, timeout, zero, ...)                          \
	do {                                                                  \
		struct poll_hide h_;                                          \
		int r_;                                                       \
		if (!preload_ready())                                         \
			return call(pfd, n, timeout, ##__VA_ARGS__);          \
		poll_mark_fds(pfd, n, &h_);                                   \
		if (h_.efault) {                                              \
			poll_unhide(pfd, &h_, -1);                            \
			errno = EFAULT;                                       \
			return -1;                                            \
		}                                                             \
		r_ = call(pfd, n, h_.n ? (zero) : (timeout), ##__VA_ARGS__);  \
		return h_.n ? poll_unhide(pfd, &h_, r_) : r_;                 \
	} while (0)

PRELOAD_WRAP int poll(struct pollfd *pfd, nfds_t n, int timeout)
{
	POLL__CALL(REAL(poll), pfd, n, timeout, 0);
}
PRELOAD_ALIAS(__poll, poll);

PRELOAD_WRAP int __poll_chk(struct pollfd *pfd, nfds_t n, int timeout,
			    size_t len)
{
	POLL__CALL(REAL(__poll_chk), pfd, n, timeout, 0, len);
}

static const struct timespec poll__zero;

PRELOAD_WRAP int ppoll(struct pollfd *pfd, nfds_t n,
		       const struct timespec *timeout, const sigset_t *mask)
{
	POLL__CALL(REAL(ppoll), pfd, n, timeout, &poll__zero, mask);
}

PRELOAD_WRAP int __ppoll_chk(struct pollfd *pfd, nfds_t n,
			     const struct timespec *timeout,
			     const sigset_t *mask, size_t len)
{
	POLL__CALL(REAL(__ppoll_chk), pfd, n, timeout, &poll__zero, mask,
		   len);
}

PRELOAD_WRAP int select(int nfds, fd_set *r, fd_set *w, fd_set *x,
			struct timeval *timeout)
{
	if (preload_ready() && poll_mark_sets(nfds, r, w, x) < 0) {
		errno = EBADF;
		return -1;
	}
	return REAL(select)(nfds, r, w, x, timeout);
}
PRELOAD_ALIAS(__select, select);

PRELOAD_WRAP int pselect(int nfds, fd_set *r, fd_set *w, fd_set *x,
			 const struct timespec *timeout, const sigset_t *mask)
{
	if (preload_ready() && poll_mark_sets(nfds, r, w, x) < 0) {
		errno = EBADF;
		return -1;
	}
	return REAL(pselect)(nfds, r, w, x, timeout, mask);
}
