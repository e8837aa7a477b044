/* SPDX-License-Identifier: MIT */
/*
 * turn.h - the order in which the threads of one instance take wakeups.
 *
 * Default (UEPOLL_WAKE_LIFO, the kernel's order): every waiting thread sleeps
 * in epoll_wait on the instance's kernel epoll, and the kernel wakes the one
 * that blocked last.  UEPOLL_WAKE_FIFO: the threads form a line; only its
 * head (the leader) sleeps in the kernel, the others sleep on an eventfd of
 * their own, and a leader that leaves hands the lead to the next in line.  So
 * the thread that has waited longest takes the next wakeup.
 */
#ifndef UEPOLL_TURN_H
#define UEPOLL_TURN_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "internal.h"

struct port;

struct turn {
	bool fifo;            /* immutable after creation */
	pthread_mutex_t lock; /* protects leader and line */
	bool leader;          /* some thread holds the lead */
	struct list line;     /* struct turn_waiter, oldest first */
	struct list members;  /* every follower whose eventfd is open */
};

void turn_init(struct turn *t, bool fifo);
/* port_wait in the instance's thread order (deadline as port_wait's). */
int turn_wait(struct port *p, struct epoll_event *evs, int max,
	      int64_t deadline, const sigset_t *sigmask);
/* In a forked child: no thread waits (their eventfds are closed). */
void turn_fork_child(struct turn *t);

#endif
