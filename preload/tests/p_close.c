/* SPDX-License-Identifier: MIT */
/*
 * p_close - numbers closed by other ways than close(): close_range,
 * closefrom (in a child), syscall(SYS_close) (libuv's way), dup2 over an eventfd.  The
 * number, given again to a new eventfd, an instance or a pipe, must behave
 * as the new file (nothing of the old object left behind), and nothing
 * leaks.  Compared with and without the preload by run_test.sh.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "ptest.h"

/* A fresh eventfd at number fd (the lowest free one) must read as new. */
static void check_fresh(const char *how, int fd)
{
	uint64_t v = 0;
	int n = eventfd(4, EFD_NONBLOCK);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN }, out;

	printf("%s: same number %d\n", how, n == fd);
	P_CHECK(n >= 0 && ep >= 0);
	P_CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, n, &ev) == 0);
	P_CHECK(epoll_wait(ep, &out, 1, 0) == 1);
	P_CHECK(read(n, &v, sizeof(v)) == 8 && v == 4);
	printf("%s: value %llu\n", how, (unsigned long long)v);
	P_CHECK(epoll_wait(ep, &out, 1, 0) == 0);
	P_CHECK(close(n) == 0);
	P_CHECK(close(ep) == 0);
}

static int watched_efd(int *ep)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd = eventfd(9, EFD_NONBLOCK);

	*ep = epoll_create1(0);
	P_REQUIRE(fd >= 0 && *ep >= 0);
	P_REQUIRE(epoll_ctl(*ep, EPOLL_CTL_ADD, fd, &ev) == 0);
	return fd;
}

int main(void)
{
	struct epoll_event out;
	int fd, ep, p[2], st;
	uint64_t v;
	pid_t pid;
	long r;

	p_begin(60);
	fd = watched_efd(&ep);
	printf("close_range = %d\n", close_range((unsigned)fd, (unsigned)fd, 0));
	/* The instance no longer reports the closed eventfd. */
	printf("wait after close_range = %d\n", epoll_wait(ep, &out, 1, 0));
	check_fresh("close_range", fd);
	close(ep);

	fd = watched_efd(&ep);
	printf("syscall close = %ld\n", syscall(SYS_close, fd));
	r = syscall(SYS_close, fd);
	printf("syscall close again = %ld %s\n", r, strerrorname_np(errno));
	check_fresh("syscall", fd);
	close(ep);

	fd = watched_efd(&ep);
	P_REQUIRE(pipe(p) == 0);
	printf("dup2 over = %d\n", dup2(p[0], fd) == fd);
	/* The number is the pipe now: a read is the pipe's. */
	P_REQUIRE(fcntl(fd, F_SETFL, O_NONBLOCK) == 0);
	r = read(fd, &v, sizeof(v));
	printf("read pipe = %ld %s\n", r, strerrorname_np(errno));
	P_CHECK(write(p[1], "abc", 3) == 3);
	printf("read pipe = %zd\n", read(fd, &v, sizeof(v)));
	close(fd);
	close(p[0]);
	close(p[1]);
	check_fresh("dup2", fd);
	close(ep);

	/* closefrom(3) in a child, as a daemon or a spawner does: the
	 * objects it inherited go, new ones work at the same numbers. */
	fd = watched_efd(&ep);
	fflush(stdout);
	pid = fork();
	P_REQUIRE(pid >= 0);
	if (pid == 0) {
		closefrom(3);
		int bad = fcntl(fd, F_GETFD) >= 0 || fcntl(ep, F_GETFD) >= 0;
		int n = eventfd(4, EFD_NONBLOCK), e = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN };

		bad |= n != 3 || e < 0 ||
		       epoll_ctl(e, EPOLL_CTL_ADD, n, &ev) != 0 ||
		       epoll_wait(e, &out, 1, 0) != 1 ||
		       read(n, &v, sizeof(v)) != 8 || v != 4 ||
		       epoll_wait(e, &out, 1, 0) != 0;
		_exit(bad ? 3 : 0);
	}
	P_REQUIRE(waitpid(pid, &st, 0) == pid);
	printf("closefrom: child status %d\n",
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	P_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(fd);
	close(ep);
	return p_end();
}
