/* SPDX-License-Identifier: MIT */
/*
 * api.c - the public entry points.  The only place that sets errno: every
 * internal call returns -errno (as in epoll-shim and liburing).
 *
 * Any fd that is not one of uepoll's objects goes straight to the kernel
 * call of the same name, so the kernel gives its own answer and errno.
 *
 * CANCELLATION.  uepoll_wait, uepoll_pwait, uepoll_pwait2, uepoll_read and
 * uepoll_write are cancellation points, as the kernel calls they stand for
 * are: a request pending on entry acts there (pthread_testcancel), and one
 * that comes while the call sleeps acts in the sleep, after which every
 * layer's cleanup handler undoes what it had set up (turn.c, wait.c,
 * eventfd.c) and this one drops the call's reference.  No other point of
 * theirs is one (sys.h).  As in libc, a cancellation that lands just after
 * the sleep returned events loses them (the kernel's own epoll_wait has
 * the same window).
 *
 * CLOSE.  uepoll_close unpublishes the object and closes the public number
 * at once, as close(2) frees a number at once; calls in flight on the
 * object keep it (and its private fd, obj.h) until they return, as the
 * kernel keeps a file while a call uses it.  From then on uepoll makes no
 * call on that number and never closes it again, whatever it now is.
 *
 * SIGNALS.  uepoll_read and uepoll_write (ueventfd_read, ueventfd_write)
 * of a ueventfd are async-signal-safe (lock.h, eventfd.c); on other fds
 * they are read(2) and write(2), which are too.  So are uepoll_close,
 * uepoll_dup, uepoll_dup2, uepoll_dup3 and uepoll_fcntl, as close(2),
 * dup(2), dup2(2), dup3(2) and fcntl(2) are, whatever the interrupted
 * thread holds (SIGNALS in obj.c): their kernel call and the fd table's
 * change are made at once, and a thread inside one of the library's locks
 * owes the object's close and release to the end of its last lock.  A
 * ueventfd's read and write are so whatever the instances that watch it
 * (wake order, batching) and whatever its coalescing.  The other calls
 * (uepoll_ctl, the waits, creation, uepoll_demote) are not
 * async-signal-safe.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>

#include "uepoll.h"

#include "batch.h"
#include "eventfd.h"
#include "fdtab.h"
#include "port.h"
#include "sys.h"

#define UEPOLL_API __attribute__((visibility("default")))

static long api__ret(long r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

UEPOLL_API int uepoll_create1(int flags)
{
	if (flags & ~EPOLL_CLOEXEC)
		return (int)api__ret(-EINVAL);
	return (int)api__ret(port_create(flags, 0));
}

UEPOLL_API int uepoll_create2(int flags, unsigned int uflags)
{
	const unsigned int w = UEPOLL_WAKE_LIFO | UEPOLL_WAKE_FIFO;

	const unsigned int sp = UEPOLL_NOSPIN | UEPOLL_SPIN_KERNEL;

	/* Two choices of one kind contradict each other. */
	if (flags & ~EPOLL_CLOEXEC ||
	    uflags & ~(w | sp | UEPOLL_NOPOLL) || (uflags & w) == w ||
	    (uflags & sp) == sp)
		return (int)api__ret(-EINVAL);
	return (int)api__ret(port_create(flags, uflags));
}

UEPOLL_API int uepoll_create(int size)
{
	if (size <= 0)
		return (int)api__ret(-EINVAL);
	return uepoll_create1(0);
}

UEPOLL_API int uepoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	struct uobj *o = fdtab_get(epfd);
	int r;

	if (!o || !uobj_ops(o)->ctl) {
		struct uobj *held = NULL;

		if (o)
			uobj_put(o);
		/* A kernel epoll will poll our object's fd: it must be exact
		 * (UEPOLL_NOPOLL and UEVENTFD_NOPOLL end); an instance it
		 * holds EPOLLET is watched from before the call, and stays
		 * so only if the call makes the registration (WATCHED). */
		if (op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD)
			held = uobj_polled_ctl(fd, event ? event->events : 0);
		r = sys_epoll_ctl(epfd, op, fd, event);
		if (held)
			uobj_polled_end(held, r == 0);
		/* The kernel's ADD or MOD polled an instance's fd, which reads
		 * ready while a stale doorbell is left (a demotion took its
		 * last ready ueventfd away, and nobody watches it: pfuzz's
		 * seed 1419): taken now, as poll() would (port__looked), so
		 * that the registration the kernel queued is dropped at the
		 * holder's next look.  After the call, not before: one that
		 * fails must not have looked. */
		if (r == 0 && op != EPOLL_CTL_DEL)
			uobj_looked(fd);
		return (int)api__ret(r);
	}
	r = uobj_ops(o)->ctl(o, op, fd, event);
	uobj_put(o);
	return (int)api__ret(r);
}

/* The call's reference, dropped by a cleanup handler if it is cancelled. */
static void api__put(void *o)
{
	uobj_put(o);
}

/* Like uepoll_ctl: an fd that is not an instance gets the kernel's answer
 * for an epoll operation on it (EBADF if not open, else EINVAL). */
UEPOLL_API int uepoll_batch(int epfd, const struct uepoll_batch *set,
			    struct uepoll_batch *old)
{
	struct uobj *o = fdtab_get(epfd);
	int r;

	if (!o || !uobj_ops(o)->batch) {
		if (o)
			uobj_put(o);
		return (int)api__ret(sys_fcntl_getfl(epfd) < 0 ? -EBADF
							       : -EINVAL);
	}
	r = uobj_ops(o)->batch(o, set, old);
	uobj_put(o);
	return (int)api__ret(r);
}

/* deadline as port_wait wants it, from a relative timeout in ns (< 0: none). */
static int64_t api__deadline(int64_t ns)
{
	if (ns < 0)
		return -1;
	if (ns == 0)
		return 0;
	return (int64_t)sys_now_ns() + ns;
}

/*
 * The kernel checks maxevents before it looks at the fd, so that order is
 * kept here; an fd that is not an instance goes to the kernel call.  The
 * call's reference is dropped however the wait ends (CANCELLATION).
 */
static int api__wait(struct uobj *o, struct epoll_event *events,
		     int maxevents, int64_t timeout_ns, const sigset_t *sigmask)
{
	int r;

	pthread_cleanup_push(api__put, o);
	if (maxevents <= 0 || maxevents > UEP_MAX_EVENTS)
		r = -EINVAL;
	else if (!uobj_ops(o)->wait)
		r = -EINVAL;
	else
		r = uobj_ops(o)->wait(o, events, maxevents,
				      api__deadline(timeout_ns), sigmask);
	pthread_cleanup_pop(1);
	return (int)api__ret(r);
}

UEPOLL_API int uepoll_wait(int epfd, struct epoll_event *events, int maxevents,
			   int timeout)
{
	struct uobj *o;

	pthread_testcancel();
	o = fdtab_get(epfd);
	if (!o)
		return sys_pass_epoll_pwait(epfd, events, maxevents, timeout,
					    NULL);
	return api__wait(o, events, maxevents,
			     timeout < 0 ? -1 : (int64_t)timeout * 1000000,
			     NULL);
}

UEPOLL_API int uepoll_pwait(int epfd, struct epoll_event *events,
			    int maxevents, int timeout, const sigset_t *sigmask)
{
	struct uobj *o;

	pthread_testcancel();
	o = fdtab_get(epfd);
	if (!o)
		return sys_pass_epoll_pwait(epfd, events, maxevents, timeout,
					    sigmask);
	return api__wait(o, events, maxevents,
			     timeout < 0 ? -1 : (int64_t)timeout * 1000000,
			     sigmask);
}

UEPOLL_API int uepoll_pwait2(int epfd, struct epoll_event *events,
			     int maxevents, const struct timespec *timeout,
			     const sigset_t *sigmask)
{
	struct uobj *o;
	int64_t ns = -1;

	if (timeout) {
		/* The kernel checks the timeout before anything else. */
		if (timeout->tv_sec < 0 ||
		    (unsigned long)timeout->tv_nsec >= 1000000000ul)
			return (int)api__ret(-EINVAL);
		ns = timeout->tv_sec > INT64_MAX / 4000000000
			     ? INT64_MAX / 4 /* centuries: never reached */
			     : (int64_t)timeout->tv_sec * 1000000000 +
				       timeout->tv_nsec;
	}
	pthread_testcancel();
	o = fdtab_get(epfd);
	if (!o)
		return sys_pass_epoll_pwait2(epfd, events, maxevents, timeout,
					     sigmask);
	return api__wait(o, events, maxevents, ns, sigmask);
}

UEPOLL_API int ueventfd(unsigned int initval, int flags)
{
	return (int)api__ret(uefd_create(initval, flags));
}

UEPOLL_API ssize_t uepoll_read(int fd, void *buf, size_t count)
{
	struct uobj *o;
	ssize_t r;

	pthread_testcancel();
	o = fdtab_get(fd);
	if (!o || !uobj_ops(o)->read) {
		if (o)
			uobj_put(o);
		return sys_pass_read(fd, buf, count);
	}
	pthread_cleanup_push(api__put, o);
	r = uobj_ops(o)->read(o, buf, count);
	pthread_cleanup_pop(1);
	return api__ret(r);
}

UEPOLL_API ssize_t uepoll_write(int fd, const void *buf, size_t count)
{
	struct uobj *o;
	ssize_t r;

	pthread_testcancel();
	o = fdtab_get(fd);
	if (!o || !uobj_ops(o)->write) {
		if (o)
			uobj_put(o);
		return sys_pass_write(fd, buf, count);
	}
	pthread_cleanup_push(api__put, o);
	r = uobj_ops(o)->write(o, buf, count);
	pthread_cleanup_pop(1);
	return api__ret(r);
}

UEPOLL_API int uepoll_close(int fd)
{
	struct uobj *o = fdtab_get(fd);
	int r;

	if (!o)
		return sys_pass_close(fd);
	/* CLOSE: the number is free once this returns. */
	r = uobj_close_number(fd, o, true);
	uobj_put(o); /* ours */
	/* -ESTALE: another thread closed it first (the kernel answers
	 * EBADF), or a demotion unpublished it: the number is a kernel fd. */
	return r < 0 ? sys_pass_close(fd) : 0;
}

_Static_assert(sizeof(struct ueventfd_coalesce) == 16 &&
		       offsetof(struct ueventfd_coalesce, count) == 8,
	       "struct ueventfd_coalesce is part of the ABI");

UEPOLL_API int ueventfd_coalesce(int fd, const struct ueventfd_coalesce *set,
				 struct ueventfd_coalesce *old)
{
	struct uobj *o = fdtab_get(fd);
	int r;

	if (!o || !uobj_ops(o)->coalesce) {
		if (o)
			uobj_put(o);
		return (int)api__ret(-EBADF);
	}
	r = uobj_ops(o)->coalesce(o, set, old);
	uobj_put(o);
	return (int)api__ret(r);
}

UEPOLL_API int uepoll_demote(int fd)
{
	struct uobj *o = fdtab_get(fd);
	int r;

	if (!o) /* a kernel object already, if open */
		return (int)api__ret(sys_fcntl_getfl(fd) < 0 ? -EBADF : 0);
	r = uobj_demote(o); /* (a fork waits for it: FORK in obj.c) */
	uobj_put(o);
	return (int)api__ret(r);
}

UEPOLL_API int uepoll_demote_exec(void)
{
	return (int)api__ret(obj_demote_inherited());
}

UEPOLL_API int ueventfd_read(int fd, eventfd_t *value)
{
	return uepoll_read(fd, value, sizeof(*value)) == sizeof(*value) ? 0 : -1;
}

UEPOLL_API int ueventfd_write(int fd, eventfd_t value)
{
	return uepoll_write(fd, &value, sizeof(value)) == sizeof(value) ? 0 : -1;
}

/*
 * DUP.  A new number of a uepoll object is made by the kernel from the old
 * one (so flags, limits and errno are the kernel's) and published as the
 * same object (NUMBERS in obj.c); a new number of any other fd is the
 * kernel's, and whatever object the table still had at that number (one
 * that dup3 just replaced, or one closed behind our back) loses it.
 * -ESTALE from uobj_dup: the old number stopped leading to the object
 * meanwhile (closed, demoted): ask again, it is then a kernel fd.
 */
static int api__dup(int oldfd, int newfd, int flags)
{
	struct uobj *o;
	int r;

	for (;;) {
		o = fdtab_get(oldfd);
		if (!o)
			break;
		r = uobj_dup(o, oldfd, newfd, flags);
		uobj_put(o);
		if (r != -ESTALE)
			return (int)api__ret(r);
	}
	r = newfd >= 0 ? sys_dup3(oldfd, newfd, flags)
		       : sys_fcntl(oldfd,
				   flags & O_CLOEXEC ? F_DUPFD_CLOEXEC : F_DUPFD,
				   (void *)(intptr_t)(-newfd - 1));
	if (r >= 0)
		uobj_forget(r);
	return (int)api__ret(r);
}

UEPOLL_API int uepoll_dup3(int oldfd, int newfd, int flags)
{
	/* The kernel's EINVAL (equal numbers, unknown flags) and EBADF (a
	 * negative newfd), without touching anything. */
	if (oldfd == newfd || (flags & ~O_CLOEXEC) || newfd < 0)
		return (int)api__ret(sys_dup3(oldfd, newfd, flags));
	return api__dup(oldfd, newfd, flags);
}

UEPOLL_API int uepoll_dup2(int oldfd, int newfd)
{
	/* dup2(2): the same number is returned as it is, if open. */
	if (oldfd == newfd) {
		int r = sys_fcntl_getfd(oldfd);

		return r < 0 ? (int)api__ret(r) : newfd;
	}
	return uepoll_dup3(oldfd, newfd, 0);
}

UEPOLL_API int uepoll_dup(int oldfd)
{
	return api__dup(oldfd, -1, 0);
}

UEPOLL_API int uepoll_fcntl(int fd, int cmd, ...)
{
	struct uobj *o;
	va_list ap;
	void *arg;
	int r;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	switch (cmd) {
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		/* A minimum out of range: the kernel's EINVAL. */
		if ((intptr_t)arg < 0 || (intptr_t)arg > INT_MAX)
			break;
		return api__dup(fd, -(int)(intptr_t)arg - 1,
				cmd == F_DUPFD_CLOEXEC ? O_CLOEXEC : 0);
	case F_SETFL:
		o = fdtab_get(fd);
		if (!o)
			break;
		r = sys_fcntl(fd, cmd, arg);
		if (r >= 0)
			uobj_flags_set(o, (int)(intptr_t)arg);
		uobj_put(o);
		return (int)api__ret(r);
	}
	return sys_pass_fcntl(fd, cmd, arg);
}
