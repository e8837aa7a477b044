/* SPDX-License-Identifier: MIT */
/*
 * p_dup - a dup'ed number of an eventfd or an epoll instance is the same
 * object, as a kernel dup is the same open file: a write through one
 * number is read through the other, a registration made through one
 * instance number is seen through the other, and the object lives until
 * its last number is closed.  dup, dup2, dup3, F_DUPFD, F_DUPFD_CLOEXEC.
 * Compared with the kernel by run_test.sh.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "ptest.h"

static int dup_ok(int r)
{
	P_REQUIRE(r >= 0);
	return r;
}

int main(int argc, char *argv[])
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	uint64_t v = 0;
	int efd, e2, e3, ep, ep2, spare;

	(void)argc;
	(void)argv;
	p_begin(60);
	efd = eventfd(0, EFD_NONBLOCK);
	ep = epoll_create1(0);
	spare = eventfd(0, 0);
	P_REQUIRE(efd >= 0 && ep >= 0 && spare >= 0);

	e2 = dup_ok(dup(efd));
	P_CHECK(eventfd_write(efd, 3) == 0);
	P_CHECK(eventfd_read(e2, &v) == 0 && v == 3);
	printf("dup: read through the copy %llu\n", (unsigned long long)v);

	/* dup2 over another eventfd: that one is gone, this one shared. */
	e3 = dup_ok(dup2(efd, spare));
	P_CHECK(e3 == spare);
	P_CHECK(eventfd_write(e3, 4) == 0);
	P_CHECK(eventfd_read(efd, &v) == 0 && v == 4);
	printf("dup2: read through the original %llu\n", (unsigned long long)v);

	/* The instance through a second number. */
	ep2 = dup_ok(fcntl(ep, F_DUPFD_CLOEXEC, 0));
	P_CHECK(fcntl(ep2, F_GETFD) & FD_CLOEXEC);
	P_CHECK(epoll_ctl(ep2, EPOLL_CTL_ADD, e2, &ev) == 0);
	/* The interest list is the instance's, whichever number: e2 is in
	 * it through ep too (another number of the eventfd is another key,
	 * as in the kernel). */
	P_CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, e2, &ev) == -1 && errno == EEXIST);
	P_CHECK(eventfd_write(efd, 1) == 0);
	printf("instance copy: wait %d\n", epoll_wait(ep, &out, 1, 0));

	/* Closing the first numbers keeps the objects. */
	P_CHECK(close(efd) == 0);
	P_CHECK(close(ep) == 0);
	P_CHECK(eventfd_write(e3, 1) == 0);
	printf("after closing the originals: wait %d\n",
	       epoll_wait(ep2, &out, 1, 0));
	P_CHECK(eventfd_read(e2, &v) == 0 && v == 2);
	printf("value %llu\n", (unsigned long long)v);

	/* dup3 with O_CLOEXEC. */
	efd = dup_ok(dup3(e2, 100, O_CLOEXEC));
	P_CHECK(efd == 100 && (fcntl(efd, F_GETFD) & FD_CLOEXEC));
	P_CHECK(eventfd_write(efd, 5) == 0 && eventfd_read(e3, &v) == 0 &&
		v == 5);
	printf("dup3: value %llu\n", (unsigned long long)v);
	close(efd);
	close(e2);
	close(e3);
	close(ep2);
	return p_end();
}
