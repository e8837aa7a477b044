/* SPDX-License-Identifier: MIT */
/*
 * p_early - threads started, and calls made, before the preload
 * initialised (p_early_lib.c's constructor): every answer right, nothing
 * leaked; the program's own calls after it are uepoll's (the stats line).
 */
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "ptest.h"

int p_early_failures(void);
void p_early_join(void);

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	uint64_t v = 0;
	int efd, ep;

	/* The early thread's fds come and go: count after it ends. */
	p_early_join();
	p_begin(60);
	P_CHECK(p_early_failures() == 0);
	efd = eventfd(1, EFD_NONBLOCK);
	ep = epoll_create1(0);
	P_REQUIRE(efd >= 0 && ep >= 0);
	P_CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
	P_CHECK(epoll_wait(ep, &out, 1, 0) == 1);
	P_CHECK(eventfd_read(efd, &v) == 0 && v == 1);
	P_CHECK(close(ep) == 0);
	P_CHECK(close(efd) == 0);
	printf("early failures %d\n", p_early_failures());
	return p_end();
}
