/* SPDX-License-Identifier: MIT */
/*
 * port.h - a uepoll instance.
 */
#ifndef UEPOLL_PORT_H
#define UEPOLL_PORT_H

#include <pthread.h>
#include <signal.h>

#include "obj.h"
#include "readyq.h"
#include "wq.h"

struct port {
	struct uobj obj; /* obj.fd: the instance's kernel epoll, its public fd */
	/* Private eventfd in the kernel epoll (EPOLLIN|EPOLLET, data = the
	 * port's address): written to wake the instance's sleepers and make
	 * the public fd readable when userspace items are ready. */
	int dbfd;
	/* Serialises ctl, source removal and release; protects `items`. */
	pthread_mutex_t mtx;
	struct list items;
	/* Kernel fds registered (never below the true number). */
	_Atomic int nkernel;
	/* Fairness toggle between the userspace and the kernel ready lists. */
	_Atomic unsigned flip;

	/* Producer side: written by signalers. */
	_Alignas(UEPOLL_CACHELINE) _Atomic int db_set;
	/* Threads inside the sleep section of port_wait. */
	_Atomic int sleepers;

	_Alignas(UEPOLL_CACHELINE) struct readyq rq;
};

int port_create(int flags);
int port_ctl(struct port *p, int op, int fd, struct epoll_event *ev);
/* deadline: -1 blocks, 0 polls, else an absolute CLOCK_MONOTONIC time in ns. */
int port_wait(struct port *p, struct epoll_event *evs, int max,
	      int64_t deadline, const sigset_t *sigmask);
/* Called by wq_wake with the source's wq lock held.  Returns true when an
 * exclusive wakeup was consumed (stop walking). */
bool port_item_signal(struct item *it, uint32_t key);
/* Remove every item of a closed source (its wq is marked dead). */
void port_drop_source(struct wq *q);
void port_close(struct port *p);
void port_release(struct uobj *o);

#endif
