/* SPDX-License-Identifier: MIT */
/*
 * wrap_epoll.c - epoll_create, epoll_create1, epoll_ctl and the waits.
 *
 * Every instance the program creates once the layer is ready is a uepoll
 * instance, made with the policies' options (UEPOLL_NOSPIN, UEPOLL_SPIN_KERNEL,
 * UEPOLL_WAKE_FIFO, UEPOLL_MIN_WAIT_US).  The ctl and the waits are
 * uepoll's, which give any fd that is not an instance (a kernel epoll made
 * before the layer was ready, a socket) the kernel's own answer.
 *
 * Three translations in epoll_ctl, on uepoll instances only (a kernel epoll
 * must keep rejecting what the kernel rejects):
 *  - uepoll's own event bits, EPOLLROUNDROBIN (1 << 26) and EPOLLURGENT
 *    (1 << 25), are to the program bits the kernel does not define: the
 *    kernel ignores them, and refuses them (EINVAL) only with
 *    EPOLLEXCLUSIVE, as any bit outside its EPOLLEXCLUSIVE_OK_BITS (F11 in
 *    docs/reliability.md).  So they are taken out of the program's mask,
 *    and with EPOLLEXCLUSIVE replaced by a bit that neither the kernel nor
 *    the library defines, which the library (or the kernel, for a kernel
 *    fd) then refuses at the kernel's point, after its checks of the fds.
 *    Only the policy below asks the library for them.
 *  - EPOLL_CTL_ADD with EPOLLEXCLUSIVE: the round-robin proposal's bit
 *    1 << 27 becomes EPOLLROUNDROBIN (so its program runs as posted), and
 *    with UEPOLL_ROUNDROBIN=1 every such registration gets it.  The bit is
 *    taken whatever the policy: the kernel answers EINVAL to it, so no
 *    working program passes it for another meaning.
 *  - op 4, the min-wait proposal's EPOLL_CTL_MIN_WAIT, is
 *    UEPOLL_CTL_MIN_WAIT (data.u64 = microseconds, fd ignored).  The kernel
 *    answers op 4 with EINVAL (or EBADF for the proposal's fd -1), so
 *    again no working program depends on the difference.
 */
#include <errno.h>
#include <sys/syscall.h>

#include "uepoll.h"

#include "preload.h"

#define PRELOAD_RR_BIT27 (1u << 27)
/* uepoll's own bits (include/uepoll.h): to the program, undefined ones. */
#define PRELOAD_UEPOLL_BITS (EPOLLROUNDROBIN | EPOLLURGENT)
/* A bit that <sys/epoll.h>, the kernel and uepoll all leave undefined: it
 * stands for the program's PRELOAD_UEPOLL_BITS where only an undefined bit
 * makes a difference (the refusal with EPOLLEXCLUSIVE). */
#define PRELOAD_UNDEFINED_BIT (1u << 24)
#define PRELOAD_EPOLL_CTL_MIN_WAIT 4

/* The policies' options on a new instance.  Where the instance cannot be
 * made with them (no fd or memory left for the library's part), the
 * program gets the kernel's epoll: a call that succeeds natively does not
 * fail under the layer (its options are the user's wish, not the
 * program's). */
static int epoll__create(int flags)
{
	unsigned int uflags = (policy.nospin ? UEPOLL_NOSPIN : 0) |
			      (policy.fifo ? UEPOLL_WAKE_FIFO : 0) |
			      (policy.nopoll ? UEPOLL_NOPOLL : 0) |
			      (policy.spin_kernel ? UEPOLL_SPIN_KERNEL : 0);
	int e = errno;
	int fd = uflags ? uepoll_create2(flags, uflags) : uepoll_create1(flags);

	/* No room for the library's own fds (src/fdzone.c), no memory, a
	 * min-wait that cannot be set: the kernel's epoll, or the kernel's
	 * error (its EINVAL for bad flags too). */
	if (fd < 0)
		goto plain;
	stats_add(STAT_INSTANCES);
	if (policy.min_wait_us) {
		struct uepoll_batch b = { .min_wait_us = policy.min_wait_us };

		if (uepoll_batch(fd, &b, NULL) < 0) {
			uepoll_close(fd);
			goto plain;
		}
	}
	errno = e;
	return preload_made(fd);
plain:
	do {
		errno = e;
		fd = REAL(epoll_create1)(flags);
	} while (fd < 0 && errno == EMFILE && preload_make_room());
	return fd;
}

PRELOAD_WRAP int epoll_create1(int flags)
{
	if (!preload_ready() || preload_plain() || preload_in_vfork_child())
		return REAL(epoll_create1)(flags);
	return epoll__create(flags);
}

PRELOAD_WRAP int epoll_create(int size)
{
	if (!preload_ready() || preload_plain() || preload_in_vfork_child() ||
	    size <= 0)
		return REAL(epoll_create)(size);
	return epoll__create(0);
}

/* The program's ADD or MOD mask on a uepoll instance, in the kernel's
 * meaning, as the library's: event itself if nothing changes, else ev, a
 * copy (the caller's struct is its own: threads may share one, as the
 * round-robin proposal's program does, and the kernel never writes it). */
static struct epoll_event *epoll__ctl_events(int op, struct epoll_event *event,
					     struct epoll_event *ev)
{
	uint32_t m = event->events;

	if (m & PRELOAD_UEPOLL_BITS) {
		m &= ~PRELOAD_UEPOLL_BITS;
		if (m & EPOLLEXCLUSIVE)
			m |= PRELOAD_UNDEFINED_BIT;
	}
	/* The policies' round robin, after the program's bits: a mask the
	 * kernel refuses stays refused. */
	if (op == EPOLL_CTL_ADD && (m & EPOLLEXCLUSIVE) &&
	    (policy.roundrobin || (m & PRELOAD_RR_BIT27)))
		m = (m & ~PRELOAD_RR_BIT27) | EPOLLROUNDROBIN;
	if (m == event->events)
		return event;
	*ev = *event;
	ev->events = m;
	return ev;
}

PRELOAD_WRAP int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	struct epoll_event ev;
	int e = errno;

	if (!preload_ready())
		return REAL(epoll_ctl)(epfd, op, fd, event);
	if (preload_hidden(epfd) || preload_hidden(fd))
		return REAL(epoll_ctl)(preload_hidden(epfd) ? -1 : epfd, op,
				       preload_hidden(fd) ? -1 : fd, event);
	stats_add(STAT_CTLS);
	if (op == PRELOAD_EPOLL_CTL_MIN_WAIT && preload_is_instance(epfd))
		op = UEPOLL_CTL_MIN_WAIT;
	/* Only a mask with one of those bits can change (most have none: no
	 * lookup of epfd). */
	if ((op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD) && event &&
	    (event->events & (PRELOAD_UEPOLL_BITS | EPOLLEXCLUSIVE)) &&
	    preload_is_instance(epfd))
		event = epoll__ctl_events(op, event, &ev);
	return (int)preload_keep_errno(e, uepoll_ctl(epfd, op, fd, event));
}

PRELOAD_WRAP int epoll_wait(int epfd, struct epoll_event *events,
			    int maxevents, int timeout)
{
	if (!preload_ready())
		return REAL(epoll_wait)(epfd, events, maxevents, timeout);
	if (preload_hidden(epfd))
		return REAL(epoll_wait)(-1, events, maxevents, timeout);
	int e = errno;

	stats_add(STAT_WAITS);
	return (int)preload_keep_errno(e, uepoll_wait(epfd, events, maxevents, timeout));
}

PRELOAD_WRAP int epoll_pwait(int epfd, struct epoll_event *events,
			     int maxevents, int timeout, const sigset_t *sigmask)
{
	if (!preload_ready())
		return REAL(epoll_pwait)(epfd, events, maxevents, timeout,
					 sigmask);
	if (preload_hidden(epfd))
		return REAL(epoll_pwait)(-1, events, maxevents, timeout,
					 sigmask);
	int e = errno;

	stats_add(STAT_WAITS);
	return (int)preload_keep_errno(e, uepoll_pwait(epfd, events, maxevents, timeout, sigmask));
}

PRELOAD_WRAP int epoll_pwait2(int epfd, struct epoll_event *events,
			      int maxevents, const struct timespec *timeout,
			      const sigset_t *sigmask)
{
	if (!preload_ready())
		return REAL(epoll_pwait2)(epfd, events, maxevents, timeout,
					  sigmask);
	if (preload_hidden(epfd))
		return REAL(epoll_pwait2)(-1, events, maxevents, timeout,
					  sigmask);
	int e = errno;

	stats_add(STAT_WAITS);
	return (int)preload_keep_errno(e, uepoll_pwait2(epfd, events, maxevents, timeout, sigmask));
}
