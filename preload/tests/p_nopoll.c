/* SPDX-License-Identifier: MIT */
/*
 * p_nopoll - UEPOLL_NOPOLL=1 (uepoll-run --nopoll) must not change what a
 * program sees: every way it looks at an eventfd's or an epoll's readiness
 * through libc (poll, ppoll, select, pselect, their syscall() forms, a
 * nested epoll) sees what the kernel's objects show, although the objects
 * were made without exact readiness, and events made before the first look
 * are not lost.  Blocked waits are woken: epoll_wait on an instance of
 * eventfds only (which naps on a futex) and poll() on an eventfd that was
 * never looked at before.  Compared with the kernel by run_test.sh, with
 * the variable set on both runs.
 */
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ptest.h"

static int in_poll(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	P_REQUIRE(poll(&p, 1, 0) >= 0);
	return (p.revents & POLLIN) != 0;
}

static int in_select(int fd)
{
	fd_set r;
	struct timeval tv = { 0, 0 };

	FD_ZERO(&r);
	FD_SET(fd, &r);
	P_REQUIRE(select(fd + 1, &r, NULL, NULL, &tv) >= 0);
	return FD_ISSET(fd, &r) != 0;
}

static int in_pselect(int fd)
{
	fd_set r;
	struct timespec ts = { 0, 0 };

	FD_ZERO(&r);
	FD_SET(fd, &r);
	P_REQUIRE(pselect(fd + 1, &r, NULL, NULL, &ts, NULL) >= 0);
	return FD_ISSET(fd, &r) != 0;
}

/* select() on a number above FD_SETSIZE (a set allocated for nfds bits,
 * as the kernel reads it): a duplicate of fd at 1500. */
static int in_select_big(int fd)
{
	enum { BIG = 1500, BITS = 8 * sizeof(unsigned long) };
	unsigned long set[BIG / BITS + 1];
	struct timeval tv = { 0, 0 };
	int r;

	P_REQUIRE(dup2(fd, BIG) == BIG);
	memset(set, 0, sizeof(set));
	set[BIG / BITS] |= 1ul << (BIG % BITS);
	P_REQUIRE(select(BIG + 1, (fd_set *)(void *)set, NULL, NULL, &tv) >= 0);
	r = (set[BIG / BITS] >> (BIG % BITS)) & 1;
	close(BIG);
	return r;
}

static int in_ppoll_syscall(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct timespec ts = { 0, 0 };

	P_REQUIRE(syscall(SYS_ppoll, &p, 1, &ts, NULL, (size_t)8) >= 0);
	return (p.revents & POLLIN) != 0;
}

/* An eventfd written while nobody looks, then looked at by `look`. */
static void eventfd_case(const char *name, int (*look)(int))
{
	uint64_t v;
	int e = eventfd(0, EFD_NONBLOCK);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN };

	P_REQUIRE(e >= 0 && ep >= 0);
	/* In an instance too, so that its writes have a watcher. */
	P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
	P_CHECK(eventfd_write(e, 1) == 0);
	printf("%s eventfd: written %d", name, look(e));
	P_CHECK(eventfd_read(e, &v) == 0);
	printf(", read %d", look(e));
	P_CHECK(eventfd_write(e, 2) == 0);
	printf(", written %d\n", look(e));
	close(ep);
	close(e);
}

/* An instance with a queued event, looked at by `look`. */
static void epoll_case(const char *name, int (*look)(int))
{
	struct epoll_event ev = { .events = EPOLLIN }, out[2];
	uint64_t v;
	int e = eventfd(0, EFD_NONBLOCK);
	int ep = epoll_create1(0);

	P_REQUIRE(e >= 0 && ep >= 0);
	P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
	P_CHECK(eventfd_write(e, 1) == 0);
	printf("%s epoll: queued %d", name, look(ep));
	P_CHECK(epoll_wait(ep, out, 2, 0) == 1);
	P_CHECK(eventfd_read(e, &v) == 0);
	/* A wait that finds nothing, then the look (uepoll's fd may read
	 * ready once before it: epoll(7) differences in uepoll(7)). */
	P_CHECK(epoll_wait(ep, out, 2, 0) == 0);
	printf(", drained %d", look(ep));
	P_CHECK(eventfd_write(e, 1) == 0);
	printf(", queued again %d\n", look(ep));
	close(ep);
	close(e);
}

struct blocked {
	int fd;
	int r;
};

static void *poll_thread(void *arg)
{
	struct blocked *b = arg;
	struct pollfd p = { .fd = b->fd, .events = POLLIN };

	b->r = poll(&p, 1, 10000);
	return NULL;
}

static void *wait_thread(void *arg)
{
	struct blocked *b = arg;
	struct epoll_event out[2];

	b->r = epoll_wait(b->fd, out, 2, 10000);
	return NULL;
}

/* A thread blocks (poll on an eventfd, or epoll_wait on an instance of
 * one), then another writes the eventfd: it must be woken. */
static void blocked_case(const char *name, void *(*fn)(void *), int on_ep)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct blocked b;
	pthread_t t;
	int e = eventfd(0, EFD_NONBLOCK);
	int ep = epoll_create1(0);

	P_REQUIRE(e >= 0 && ep >= 0);
	P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
	b.fd = on_ep ? ep : e;
	P_REQUIRE(pthread_create(&t, NULL, fn, &b) == 0);
	usleep(100000);
	P_CHECK(eventfd_write(e, 1) == 0);
	P_REQUIRE(pthread_join(t, NULL) == 0);
	printf("%s: woken with %d\n", name, b.r);
	close(ep);
	close(e);
}

static void nested_case(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[2];
	int e = eventfd(0, EFD_NONBLOCK);
	int inner = epoll_create1(0), outer = epoll_create1(0);

	P_REQUIRE(e >= 0 && inner >= 0 && outer >= 0);
	P_REQUIRE(epoll_ctl(inner, EPOLL_CTL_ADD, e, &ev) == 0);
	P_CHECK(eventfd_write(e, 1) == 0);
	P_REQUIRE(epoll_ctl(outer, EPOLL_CTL_ADD, inner, &ev) == 0);
	printf("nested: queued before the ADD %d", epoll_wait(outer, out, 2, 0));
	P_CHECK(epoll_wait(inner, out, 2, 0) == 1);
	P_CHECK(eventfd_read(e, &(uint64_t){ 0 }) == 0);
	P_CHECK(epoll_wait(inner, out, 2, 0) == 0);
	P_CHECK(eventfd_write(e, 1) == 0);
	printf(", after %d\n", epoll_wait(outer, out, 2, 1000));
	close(outer);
	close(inner);
	close(e);
}

int main(void)
{
	p_begin(60);
	eventfd_case("poll", in_poll);
	eventfd_case("select", in_select);
	eventfd_case("pselect", in_pselect);
	eventfd_case("select above FD_SETSIZE", in_select_big);
	eventfd_case("syscall(ppoll)", in_ppoll_syscall);
	epoll_case("poll", in_poll);
	epoll_case("select", in_select);
	epoll_case("syscall(ppoll)", in_ppoll_syscall);
	blocked_case("poll on an eventfd", poll_thread, 0);
	blocked_case("epoll_wait on eventfds", wait_thread, 1);
	nested_case();
	return p_end();
}
