/*
 * twosys.h - the same script on two systems: the kernel's epoll and
 * eventfd, and uepoll's (tests that compare them call through a struct
 * sys), and a thread blocked in a wait on one of them.
 */
#ifndef UEPOLL_TESTS_TWOSYS_H
#define UEPOLL_TESTS_TWOSYS_H

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "uepoll.h"

struct sys {
	int (*epc)(int);
	int (*ctl)(int, int, int, struct epoll_event *);
	int (*wait)(int, struct epoll_event *, int, int);
	int (*efd)(unsigned int, int);
	ssize_t (*wr)(int, const void *, size_t);
	ssize_t (*rd)(int, void *, size_t);
	int (*cl)(int);
};

static const struct sys kern = { epoll_create1, epoll_ctl, epoll_wait,
				 eventfd, write, read, close };
static const struct sys uep = { uepoll_create1, uepoll_ctl, uepoll_wait,
				ueventfd, uepoll_write, uepoll_read,
				uepoll_close };

/* A thread blocked in s->wait(ep, ..., 1, 5000): n and ev when it ends. */
struct blocked {
	const struct sys *s;
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
