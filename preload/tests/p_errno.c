/* SPDX-License-Identifier: MIT */
/*
 * p_errno - errno as the kernel's calls leave it: unchanged by a call that
 * succeeds (the wrappers' library may fail a system call of its own on the
 * way to a success), and the kernel's value for one that fails.  Compared
 * with and without the preload by run_test.sh.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "ptest.h"

#define KEEP(call)                                                           \
	do {                                                                 \
		errno = 4242;                                                \
		long r_ = (long)(call);                                      \
		printf("%-40s %s errno %s\n", #call, r_ < 0 ? "fails" : "ok", \
		       errno == 4242 ? "kept" : strerrorname_np(errno));      \
	} while (0)

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET }, out;
	uint64_t v = 1;
	int efd, bfd, ep, p[2];

	p_begin(60);
	KEEP(efd = eventfd(0, EFD_NONBLOCK));
	KEEP(bfd = eventfd(0, 0));
	KEEP(ep = epoll_create1(0));
	KEEP(pipe(p));
	P_REQUIRE(efd >= 0 && bfd >= 0 && ep >= 0);
	KEEP(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev));
	KEEP(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
	KEEP(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
	KEEP(epoll_ctl(ep, EPOLL_CTL_DEL, p[1], NULL));
	KEEP(read(efd, &v, sizeof(v)));
	KEEP(eventfd_write(efd, 3));
	KEEP(read(efd, &v, sizeof(v)));
	KEEP(read(efd, &v, sizeof(v)));
	KEEP(read(efd, &v, 4));
	KEEP(write(efd, &v, 4));
	KEEP(write(bfd, &v, sizeof(v)));
	KEEP(read(bfd, &v, sizeof(v)));
	KEEP(epoll_wait(ep, &out, 1, 0));
	KEEP(eventfd_write(efd, 1));
	KEEP(epoll_wait(ep, &out, 1, 0));
	KEEP(epoll_wait(ep, &out, 1, 0));
	KEEP(epoll_wait(ep, &out, 0, 0));
	KEEP(epoll_wait(efd, &out, 1, 0));
	KEEP(fcntl(efd, F_GETFL));
	KEEP(fcntl(efd, F_SETFL, O_NONBLOCK));
	KEEP(fcntl(-1, F_GETFL));
	KEEP(eventfd_read(efd, &v));
	KEEP(eventfd_read(efd, &v));
	KEEP(close(ep));
	KEEP(close(efd));
	KEEP(close(bfd));
	KEEP(close(efd));
	KEEP(close(p[0]));
	KEEP(close(p[1]));
	return p_end();
}
