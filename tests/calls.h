/*
 * calls.h - the same script on two systems: the kernel's epoll and eventfd
 * (calls_kernel) and uepoll's (calls_uepoll), as one table of calls.  A
 * differential test runs its script once through each and compares what
 * it saw, so every call such a test makes is here, once (issue 34: each
 * test wrote its own table).  What a test adds to it (its objects, a flag
 * only uepoll accepts) stays in the test, next to a pointer to the table.
 * Also: a thread blocked in a wait through a table (struct blocked).
 */
#ifndef UEPOLL_TESTS_CALLS_H
#define UEPOLL_TESTS_CALLS_H

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "uepoll.h"

struct calls {
	const char *name; /* "kernel", "uepoll" */
	int (*create1)(int flags);
	int (*create)(int size);
	int (*ctl)(int epfd, int op, int fd, struct epoll_event *ev);
	int (*wait)(int epfd, struct epoll_event *ev, int max, int timeout);
	int (*pwait)(int epfd, struct epoll_event *ev, int max, int timeout,
		     const sigset_t *mask);
	int (*pwait2)(int epfd, struct epoll_event *ev, int max,
		      const struct timespec *timeout, const sigset_t *mask);
	int (*eventfd)(unsigned int init, int flags);
	ssize_t (*read)(int fd, void *buf, size_t n);
	ssize_t (*write)(int fd, const void *buf, size_t n);
	int (*close)(int fd);
	int (*eventfd_read)(int fd, eventfd_t *v);
	int (*eventfd_write)(int fd, eventfd_t v);
	int (*dup)(int fd);
	int (*dup2)(int fd, int to);
	int (*dup3)(int fd, int to, int flags);
	int (*fcntl)(int fd, int cmd, ...);
	int (*demote)(int fd);
};

/* uepoll_demote() makes an object the kernel's: the kernel's objects are
 * already, so its step of a script does nothing. */
static int calls_k_demote(int fd)
{
	(void)fd;
	return 0;
}

static const struct calls calls_kernel = {
	.name = "kernel",
	.create1 = epoll_create1,
	.create = epoll_create,
	.ctl = epoll_ctl,
	.wait = epoll_wait,
	.pwait = epoll_pwait,
	.pwait2 = epoll_pwait2,
	.eventfd = eventfd,
	.read = read,
	.write = write,
	.close = close,
	.eventfd_read = eventfd_read,
	.eventfd_write = eventfd_write,
	.dup = dup,
	.dup2 = dup2,
	.dup3 = dup3,
	.fcntl = fcntl,
	.demote = calls_k_demote,
};

static const struct calls calls_uepoll = {
	.name = "uepoll",
	.create1 = uepoll_create1,
	.create = uepoll_create,
	.ctl = uepoll_ctl,
	.wait = uepoll_wait,
	.pwait = uepoll_pwait,
	.pwait2 = uepoll_pwait2,
	.eventfd = ueventfd,
	.read = uepoll_read,
	.write = uepoll_write,
	.close = uepoll_close,
	.eventfd_read = ueventfd_read,
	.eventfd_write = ueventfd_write,
	.dup = uepoll_dup,
	.dup2 = uepoll_dup2,
	.dup3 = uepoll_dup3,
	.fcntl = uepoll_fcntl,
	.demote = uepoll_demote,
};

static int calls_np_create1(int flags)
{
	return uepoll_create2(flags, UEPOLL_NOPOLL);
}

static int calls_np_eventfd(unsigned int init, int flags)
{
	return ueventfd(init, flags | UEVENTFD_NOPOLL);
}

/* calls_uepoll with NOPOLL objects (UEPOLL_NOPOLL, UEVENTFD_NOPOLL): the
 * calls of a script of epolls and eventfds. */
static const struct calls calls_uepoll_nopoll = {
	.name = "uepoll",
	.create1 = calls_np_create1,
	.ctl = uepoll_ctl,
	.wait = uepoll_wait,
	.eventfd = calls_np_eventfd,
	.read = uepoll_read,
	.write = uepoll_write,
	.close = uepoll_close,
};

/* A thread blocked in s->wait(ep, ..., 1, 5000): n and ev when it ends. */
struct blocked {
	const struct calls *s;
	int ep, n;
	struct epoll_event ev;
};

static inline void *blocked_wait(void *arg)
{
	struct blocked *b = arg;

	b->n = b->s->wait(b->ep, &b->ev, 1, 5000);
	return NULL;
}

#endif
