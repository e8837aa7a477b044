/*
 * t_external_poll: the fd of a uepoll instance, watched by poll(), select()
 * and a kernel epoll, is readable when uepoll_wait() would return events and
 * not readable once a uepoll_wait(timeout 0) found or consumed everything;
 * the fd of a ueventfd is readable while its counter is non-zero and not
 * readable after it was drained and one more uepoll_read() found it empty
 * (the header's documented lazy clearing).
 */
#include "testlib.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/select.h>
#include <unistd.h>

/* Readability of fd seen by poll(), select() and a kernel epoll (LT). */
static int by_poll(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, 0);

	REQUIRE(n >= 0);
	return n == 1 && (p.revents & POLLIN);
}

static int by_select(int fd)
{
	struct timeval tv = { 0, 0 };
	fd_set r;
	int n;

	REQUIRE(fd < FD_SETSIZE);
	FD_ZERO(&r);
	FD_SET(fd, &r);
	n = select(fd + 1, &r, NULL, NULL, &tv);
	REQUIRE(n >= 0);
	return n == 1 && FD_ISSET(fd, &r);
}

static int by_epoll(int fd)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int kep = epoll_create1(0), n;

	REQUIRE(kep >= 0);
	REQUIRE(epoll_ctl(kep, EPOLL_CTL_ADD, fd, &ev) == 0);
	n = epoll_wait(kep, &ev, 1, 0);
	close(kep);
	REQUIRE(n >= 0);
	return n == 1 && (ev.events & EPOLLIN);
}

/* A long-lived kernel epoll watching the fd too (LT). */
static int kep_long;

static int by_long_epoll(void)
{
	struct epoll_event ev;
	int n = epoll_wait(kep_long, &ev, 1, 0);

	REQUIRE(n >= 0);
	return n == 1;
}

static void expect_readable(int fd, int want, int line)
{
	int p = by_poll(fd), s = by_select(fd), e = by_epoll(fd);
	int l = by_long_epoll();

	if (p != want || s != want || e != want || l != want) {
		fprintf(stderr, "line %d: fd readable: poll %d select %d epoll %d long-lived epoll %d, want %d\n",
			line, p, s, e, l, want);
		t_failures++;
	}
}

#define READABLE(fd, want) expect_readable(fd, want, __LINE__)

static void watch(int fd)
{
	struct epoll_event ev = { .events = EPOLLIN };

	kep_long = epoll_create1(0);
	REQUIRE(kep_long >= 0);
	REQUIRE(epoll_ctl(kep_long, EPOLL_CTL_ADD, fd, &ev) == 0);
}

static void unwatch(void)
{
	close(kep_long);
}

static void test_instance(uint32_t flags, int use_pipe)
{
	struct epoll_event ev[4];
	int ep = uepoll_create1(0), efd = ueventfd(0, EFD_NONBLOCK), p[2];
	int src;
	uint64_t v;
	char c;

	REQUIRE(ep >= 0 && efd >= 0);
	REQUIRE(pipe2(p, O_NONBLOCK) == 0);
	src = use_pipe ? p[0] : efd;
	ev[0].events = EPOLLIN | flags;
	ev[0].data.u64 = 1;
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, src, &ev[0]) == 0);
	watch(ep);
	READABLE(ep, 0);
	CHECK_EQ(uepoll_wait(ep, ev, 4, 0), 0);
	READABLE(ep, 0);

	for (int round = 0; round < 3; round++) {
		if (use_pipe)
			CHECK_EQ(write(p[1], "x", 1), 1);
		else
			CHECK_EQ(ueventfd_write(efd, 1), 0);
		READABLE(ep, 1);
		READABLE(ep, 1); /* looking does not consume */
		if (flags & (EPOLLET | EPOLLONESHOT)) {
			/* the wait consumes the only event; the fd may stay
			 * readable until a wait finds nothing (uepoll.h) */
			CHECK_EQ(uepoll_wait(ep, ev, 4, 0), 1);
			CHECK_EQ(uepoll_wait(ep, ev, 4, 0), 0);
			READABLE(ep, 0);
			if (flags & EPOLLONESHOT) {
				ev[0].events = EPOLLIN | flags;
				ev[0].data.u64 = 1;
				/* re-armed while still readable: ready again */
				CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_MOD, src, &ev[0]), 0);
				READABLE(ep, 1);
				CHECK_EQ(uepoll_wait(ep, ev, 4, 0), 1);
			}
		} else {
			/* LT: stays readable across waits until drained */
			CHECK_EQ(uepoll_wait(ep, ev, 4, 0), 1);
			READABLE(ep, 1);
		}
		if (use_pipe)
			CHECK_EQ(read(p[0], &c, 1), 1);
		else
			CHECK_EQ(ueventfd_read(efd, &v), 0);
		CHECK_EQ(uepoll_wait(ep, ev, 4, 0), 0);
		READABLE(ep, 0);
		if (flags & EPOLLONESHOT) {
			ev[0].events = EPOLLIN | flags;
			ev[0].data.u64 = 1;
			CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_MOD, src, &ev[0]), 0);
			READABLE(ep, 0);
		}
	}

	/* DEL of a ready source: no longer readable after a wait(0) */
	if (use_pipe)
		CHECK_EQ(write(p[1], "x", 1), 1);
	else
		CHECK_EQ(ueventfd_write(efd, 1), 0);
	if (!(flags & EPOLLONESHOT))
		READABLE(ep, 1);
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_DEL, src, NULL), 0);
	CHECK_EQ(uepoll_wait(ep, ev, 4, 0), 0);
	READABLE(ep, 0);

	unwatch();
	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_EQ(uepoll_close(efd), 0);
	close(p[0]);
	close(p[1]);
}

/* POLLOUT of a ueventfd below its maximum. */
static int writable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLOUT);
}

static void test_eventfd_fd(int flags)
{
	int efd = ueventfd(0, EFD_NONBLOCK | flags);
	uint64_t v;

	REQUIRE(efd >= 0);
	watch(efd);
	READABLE(efd, 0);
	CHECK(writable(efd));
	for (int round = 0; round < 3; round++) {
		CHECK_EQ(ueventfd_write(efd, 2), 0);
		READABLE(efd, 1);
		CHECK(writable(efd));
		CHECK_EQ(ueventfd_read(efd, &v), 0);
		CHECK_EQ(v, (flags & EFD_SEMAPHORE) ? 1 : 2);
		if (flags & EFD_SEMAPHORE) {
			/* one left: must still be readable */
			READABLE(efd, 1);
			CHECK_EQ(ueventfd_read(efd, &v), 0);
		}
		/* counter is 0; may be readable until the second read in a
		 * row finds it empty (uepoll.h: keeps drain loops free of
		 * system calls) */
		CHECK_ERR(ueventfd_read(efd, &v), EAGAIN);
		CHECK_ERR(ueventfd_read(efd, &v), EAGAIN);
		READABLE(efd, 0);
		CHECK(writable(efd));
	}
	/* a ueventfd created non-zero is readable from the start */
	unwatch();
	CHECK_EQ(uepoll_close(efd), 0);

	efd = ueventfd(3, EFD_NONBLOCK | flags);
	REQUIRE(efd >= 0);
	watch(efd);
	READABLE(efd, 1);
	unwatch();
	CHECK_EQ(uepoll_close(efd), 0);
}

int main(void)
{
	t_begin("t_external_poll");
	t_watchdog(120);
	test_instance(0, 0);
	test_instance(EPOLLET, 0);
	test_instance(EPOLLONESHOT, 0);
	test_instance(0, 1);
	test_instance(EPOLLET, 1);
	test_instance(EPOLLONESHOT, 1);
	test_eventfd_fd(0);
	test_eventfd_fd(EFD_SEMAPHORE);
	return t_end();
}
