/* SPDX-License-Identifier: MIT */
/*
 * p_early_lib - a library whose constructor runs before the preload's (the
 * program needs it, so the loader initialises it first) and starts a
 * thread that uses eventfds and epoll all through the preload's start:
 * its calls go to the kernel before, to uepoll after, and each answer must
 * be right either way.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

int p_early_failures(void);
void p_early_join(void);

static pthread_t early_th;
static int early_started;
static _Atomic int early_bad;

static void early_round(int i)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	uint64_t v = 0;
	int efd = eventfd((unsigned int)i, EFD_NONBLOCK);
	int ep = epoll_create1(0);

	if (efd < 0 || ep < 0 || eventfd_write(efd, 2) != 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) != 0 ||
	    epoll_wait(ep, &out, 1, 0) != 1 || eventfd_read(efd, &v) != 0 ||
	    v != (uint64_t)i + 2 || epoll_wait(ep, &out, 1, 0) != 0 ||
	    read(efd, &v, sizeof(v)) != -1)
		early_bad++;
	if (close(ep) != 0 || close(efd) != 0)
		early_bad++;
}

static _Atomic int early_rounds;

static void *early_loop(void *arg)
{
	for (int i = 0; i < 3000; i++) {
		early_round(i);
		early_rounds++;
	}
	return arg;
}

__attribute__((constructor)) static void early_init(void)
{
	early_round(7); /* from a constructor, before the preload's */
	early_started = pthread_create(&early_th, NULL, early_loop, NULL) == 0;
	if (!early_started)
		early_bad++;
	/* Some rounds before the preload starts, the rest through and
	 * after its start (the stats line then counts fewer than all). */
	while (early_started && early_rounds < 100)
		sched_yield();
}

__attribute__((visibility("default"))) void p_early_join(void)
{
	if (early_started)
		pthread_join(early_th, NULL);
	early_started = 0;
}

__attribute__((visibility("default"))) int p_early_failures(void)
{
	return early_bad;
}
