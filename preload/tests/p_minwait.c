/* SPDX-License-Identifier: MIT */
/*
 * p_minwait - UEPOLL_MIN_WAIT_US (uepoll-run --min-wait-us) gives every
 * instance a min-wait: two events a few milliseconds apart come back from
 * one epoll_wait.  The program uses no min-wait call of its own; the test
 * runs it with a window (200 ms) twenty times the gap (10 ms), as proposal
 * 002's program does.  (Not also without the policy: that one event comes
 * alone would depend on the scheduler.)  Prints the count; run by the test
 * in CMakeLists.txt.
 */
#include <pthread.h>
#include <sys/epoll.h>

#include "ptest.h"

static int p1[2], p2[2];

static void *writer(void *arg)
{
	usleep(10000);
	P_CHECK(write(p1[1], "a", 1) == 1);
	usleep(10000);
	P_CHECK(write(p2[1], "b", 1) == 1);
	return arg;
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[2];
	pthread_t th;
	int ep, n;

	p_begin(60);
	ep = epoll_create1(0);
	P_REQUIRE(ep >= 0 && pipe(p1) == 0 && pipe(p2) == 0);
	/* Distinct data: a batching wait merges registrations whose data is
	 * the same (docs/design.md, Fairness). */
	ev.data.fd = p1[0];
	P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, p1[0], &ev) == 0);
	ev.data.fd = p2[0];
	P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, p2[0], &ev) == 0);
	P_REQUIRE(pthread_create(&th, NULL, writer, NULL) == 0);
	n = epoll_wait(ep, out, 2, -1);
	printf("epoll_wait=%d\n", n);
	P_REQUIRE(pthread_join(th, NULL) == 0);
	close(ep);
	for (int i = 0; i < 2; i++) {
		close(p1[i]);
		close(p2[i]);
	}
	return p_end();
}
