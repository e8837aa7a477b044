/* SPDX-License-Identifier: MIT */
/*
 * p_syscall - numbers closed or replaced through syscall(2), as libuv
 * closes every fd (wrap_syscall.c): SYS_close, SYS_dup2, SYS_dup3 and
 * SYS_close_range, on an eventfd, an epoll instance and pipes beside them.
 * After each, what the program can observe must be the kernel's: a closed
 * number is EBADF for read, write, fcntl, epoll_ctl and epoll_wait, and an
 * instance no longer reports an eventfd closed behind it; a number given
 * again is the new file only (a new eventfd reads its own counter, not the
 * old one's; a pipe dup2'ed over an eventfd reads the pipe); a number an
 * eventfd or an instance was dup'ed onto is that same object; and nothing
 * leaks.  Compared with and without the preload by run_test.sh, so every
 * line printed is a value both runs must agree on (never an fd number:
 * the preload's objects hold private fds that shift the numbers).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

#include "ptest.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* A call's result and errno, as one line of the compared output. */
static long show(const char *what, long r)
{
	if (r < 0)
		printf("%s = -1 %s\n", what, strerrorname_np(errno));
	else
		printf("%s = %ld\n", what, r);
	return r;
}

/* read(2) of 8 bytes: the value, or -1 with errno. */
static long read8(int fd)
{
	uint64_t v = 0;
	ssize_t n = read(fd, &v, sizeof(v));

	if (n < 0)
		return -1;
	return n == 8 ? (long)v : -2 - (long)n;
}

/* Is fd closed (every look at it says EBADF)? */
static int is_closed(int fd)
{
	uint64_t v = 1;
	struct epoll_event ev = { .events = EPOLLIN }, out;

	errno = 0;
	if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
		return 0;
	errno = 0;
	if (read(fd, &v, sizeof(v)) != -1 || errno != EBADF)
		return 0;
	errno = 0;
	if (write(fd, &v, sizeof(v)) != -1 || errno != EBADF)
		return 0;
	errno = 0;
	if (epoll_wait(fd, &out, 1, 0) != -1 || errno != EBADF)
		return 0;
	errno = 0;
	if (epoll_ctl(fd, EPOLL_CTL_ADD, 0, &ev) != -1 || errno != EBADF)
		return 0;
	return 1;
}

/* An eventfd holding v, watched (EPOLLIN) by a new instance *ep. */
static int watched_efd(uint64_t v, int *ep)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd = eventfd((unsigned int)v, EFD_NONBLOCK);

	*ep = epoll_create1(0);
	P_REQUIRE(fd >= 0 && *ep >= 0);
	ev.data.fd = fd;
	P_REQUIRE(epoll_ctl(*ep, EPOLL_CTL_ADD, fd, &ev) == 0);
	return fd;
}

static int nready(int ep)
{
	struct epoll_event out[4];

	return epoll_wait(ep, out, 4, 0);
}

/* A fresh eventfd must take the lowest free number, fd, and be new: its
 * own zero counter, nothing of what was at fd before. */
static void check_fresh_efd(const char *how, int fd)
{
	char what[96];
	int n = eventfd(0, EFD_NONBLOCK);

	P_REQUIRE(n >= 0);
	snprintf(what, sizeof(what), "%s: new eventfd on the number", how);
	P_CHECK(show(what, n == fd) == 1);
	snprintf(what, sizeof(what), "%s: new eventfd reads", how);
	P_CHECK(show(what, read8(n)) == -1 && errno == EAGAIN);
	P_CHECK(eventfd_write(n, 2) == 0);
	snprintf(what, sizeof(what), "%s: new eventfd after a write of 2", how);
	P_CHECK(show(what, read8(n)) == 2);
	P_CHECK(close(n) == 0);
}

/* SYS_close of an eventfd, then of an instance, then of a plain pipe. */
static void t_close(void)
{
	int efd, ep, other, p[2];
	long r;

	efd = watched_efd(9, &ep);
	P_CHECK(show("close efd: syscall", syscall(SYS_close, efd)) == 0);
	P_CHECK(show("close efd: closed", is_closed(efd)) == 1);
	/* The instance forgot the eventfd with its file. */
	P_CHECK(show("close efd: instance ready", nready(ep)) == 0);
	r = syscall(SYS_close, efd);
	P_CHECK(show("close efd: syscall again", r) == -1 && errno == EBADF);
	check_fresh_efd("close efd", efd);
	P_CHECK(show("close efd: instance ready after", nready(ep)) == 0);
	P_CHECK(close(ep) == 0);

	/* The instance, with a ready eventfd in it. */
	efd = watched_efd(5, &ep);
	P_CHECK(show("close ep: ready before", nready(ep)) == 1);
	P_CHECK(show("close ep: syscall", syscall(SYS_close, ep)) == 0);
	P_CHECK(show("close ep: closed", is_closed(ep)) == 1);
	other = epoll_create1(0);
	P_REQUIRE(other >= 0);
	P_CHECK(show("close ep: new instance on the number", other == ep) == 1);
	/* Empty: the old instance's registration is not in it. */
	P_CHECK(show("close ep: new instance ready", nready(other)) == 0);
	P_CHECK(show("close ep: eventfd still reads", read8(efd)) == 5);
	P_CHECK(close(other) == 0);
	P_CHECK(close(efd) == 0);

	/* An ordinary fd: the kernel's close. */
	P_REQUIRE(pipe(p) == 0);
	P_CHECK(show("close pipe: syscall", syscall(SYS_close, p[1])) == 0);
	P_CHECK(show("close pipe: eof", read(p[0], &r, sizeof(r))) == 0);
	P_CHECK(close(p[0]) == 0);
}

/* SYS_dup2 and SYS_dup3: a pipe over an eventfd, an eventfd and an
 * instance over ordinary fds, an eventfd over an instance. */
static void t_dup(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int efd, ep, p[2], q[2], r;
	char buf[8];

	/* A pipe over the eventfd: the number is the pipe, the instance
	 * forgot the eventfd. */
	efd = watched_efd(9, &ep);
	P_REQUIRE(pipe(p) == 0);
	P_REQUIRE(fcntl(p[0], F_SETFL, O_NONBLOCK) == 0);
	P_CHECK(show("dup2 pipe over efd", syscall(SYS_dup2, p[0], efd) == efd) == 1);
	P_CHECK(show("dup2 pipe over efd: instance ready", nready(ep)) == 0);
	errno = 0;
	P_CHECK(show("dup2 pipe over efd: read empty pipe",
		     read(efd, buf, sizeof(buf))) == -1 && errno == EAGAIN);
	P_CHECK(write(p[1], "abcdefgh", 8) == 8);
	memset(buf, 0, sizeof(buf));
	P_CHECK(show("dup2 pipe over efd: read pipe",
		     read(efd, buf, sizeof(buf))) == 8);
	P_CHECK(show("dup2 pipe over efd: bytes", memcmp(buf, "abcdefgh", 8) == 0) == 1);
	P_CHECK(close(efd) == 0);
	P_CHECK(close(p[0]) == 0);
	P_CHECK(close(p[1]) == 0);
	check_fresh_efd("dup2 pipe over efd", efd);
	P_CHECK(close(ep) == 0);

	/* The eventfd over a pipe's write end: that number is the eventfd
	 * (one counter), the pipe's write end is closed. */
	efd = watched_efd(9, &ep);
	P_REQUIRE(pipe(p) == 0);
	r = (int)syscall(SYS_dup2, efd, p[1]);
	P_CHECK(show("dup2 efd over pipe", r == p[1]) == 1);
	P_CHECK(show("dup2 efd over pipe: pipe eof", read(p[0], buf, 1)) == 0);
	P_CHECK(show("dup2 efd over pipe: cloexec", fcntl(p[1], F_GETFD)) == 0);
	P_CHECK(eventfd_write(p[1], 5) == 0);
	P_CHECK(show("dup2 efd over pipe: read through the original",
		     read8(efd)) == 14);
	P_CHECK(eventfd_write(efd, 3) == 0);
	P_CHECK(show("dup2 efd over pipe: read through the copy", read8(p[1])) == 3);
	/* Same number: the kernel's dup2 returns it, changes nothing. */
	P_CHECK(show("dup2 efd onto itself", syscall(SYS_dup2, efd, efd) == efd) == 1);
	P_CHECK(show("dup2 closed onto efd",
		     syscall(SYS_dup2, p[0] + 1000, efd)) == -1 && errno == EBADF);
	/* The eventfd lives while one number does. */
	P_CHECK(close(efd) == 0);
	P_CHECK(eventfd_write(p[1], 4) == 0);
	/* The registration is the file's: it stays while a number does. */
	P_CHECK(show("dup2 efd over pipe: instance ready after closing the original",
		     nready(ep)) == 1);
	P_CHECK(show("dup2 efd over pipe: copy reads", read8(p[1])) == 4);
	P_CHECK(close(p[1]) == 0);
	P_CHECK(close(p[0]) == 0);
	P_CHECK(close(ep) == 0);

	/* dup3 with O_CLOEXEC, and dup3's EINVAL onto itself. */
	efd = watched_efd(1, &ep);
	P_REQUIRE(pipe(p) == 0);
	r = (int)syscall(SYS_dup3, efd, p[0], O_CLOEXEC);
	P_CHECK(show("dup3 efd over pipe", r == p[0]) == 1);
	P_CHECK(show("dup3 efd over pipe: cloexec",
		     fcntl(p[0], F_GETFD) & FD_CLOEXEC) == FD_CLOEXEC);
	P_CHECK(eventfd_write(p[0], 6) == 0);
	P_CHECK(show("dup3 efd over pipe: read through the original", read8(efd)) == 7);
	P_CHECK(show("dup3 efd onto itself",
		     syscall(SYS_dup3, efd, efd, 0)) == -1 && errno == EINVAL);
	P_CHECK(close(p[1]) == 0);
	P_CHECK(close(efd) == 0);
	P_CHECK(eventfd_write(p[0], 8) == 0);
	P_CHECK(show("dup3 efd over pipe: copy reads", read8(p[0])) == 8);
	P_CHECK(close(p[0]) == 0);
	P_CHECK(close(ep) == 0);

	/* The instance over a pipe's read end: a registration made through
	 * one number is the other's. */
	efd = watched_efd(0, &ep);
	P_REQUIRE(pipe(q) == 0);
	r = (int)syscall(SYS_dup2, ep, q[0]);
	P_CHECK(show("dup2 ep over pipe", r == q[0]) == 1);
	P_CHECK(eventfd_write(efd, 1) == 0);
	P_CHECK(show("dup2 ep over pipe: ready through the copy", nready(q[0])) == 1);
	ev.events = EPOLLOUT;
	P_REQUIRE(pipe(p) == 0);
	ev.data.fd = p[1];
	P_CHECK(show("dup2 ep over pipe: ctl through the copy",
		     epoll_ctl(q[0], EPOLL_CTL_ADD, p[1], &ev)) == 0);
	P_CHECK(show("dup2 ep over pipe: ready through the original",
		     nready(ep)) == 2);
	P_CHECK(close(ep) == 0);
	P_CHECK(show("dup2 ep over pipe: copy after closing the original",
		     nready(q[0])) == 2);
	/* And an eventfd over that last number: the instance is gone. */
	r = (int)syscall(SYS_dup3, efd, q[0], 0);
	P_CHECK(show("dup3 efd over ep", r == q[0]) == 1);
	P_CHECK(show("dup3 efd over ep: wait", nready(q[0])) == -1 && errno == EINVAL);
	P_CHECK(show("dup3 efd over ep: read", read8(q[0])) == 1);
	P_CHECK(close(q[0]) == 0);
	P_CHECK(close(q[1]) == 0);
	P_CHECK(close(p[0]) == 0);
	P_CHECK(close(p[1]) == 0);
	P_CHECK(close(efd) == 0);
}

/* The highest fd open now (-1 if /proc cannot tell). */
static int max_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int m = -1, self;

	if (!d)
		return -1;
	self = dirfd(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && atoi(de->d_name) != self &&
		    atoi(de->d_name) > m)
			m = atoi(de->d_name);
	closedir(d);
	return m;
}

/* SYS_close_range over an eventfd, an instance watching it and a pipe,
 * with a pipe above the range left alone; CLOSE_RANGE_CLOEXEC first,
 * which closes nothing. */
static void t_close_range(void)
{
	int *hold, nhold = 0, top, lo, hi, efd, ep, p[2], q[2];
	char c = 0;
	long r;

	/* Every number below the highest open one taken (inherited fds may
	 * leave holes), so that what is made here is all above it: the
	 * range then holds these objects and nothing else. */
	top = max_fd();
	P_REQUIRE(top >= 0);
	if (top > 512)
		P_SKIP("an fd above 512 inherited: no room to fill below it");
	hold = malloc((size_t)(top + 1) * sizeof(*hold));
	P_REQUIRE(hold);
	for (;;) {
		int n = open("/dev/null", O_RDONLY | O_CLOEXEC);

		P_REQUIRE(n >= 0 && nhold <= top);
		if (n > top) {
			close(n);
			break;
		}
		hold[nhold++] = n;
	}
	lo = top + 1;
	efd = watched_efd(3, &ep);
	P_REQUIRE(pipe(p) == 0);
	P_REQUIRE(efd >= lo && ep >= lo && p[0] >= lo);
	/* The highest of these (the preload's private fds are not among the
	 * program's numbers: src/fdzone.c). */
	hi = efd > ep ? efd : ep;
	hi = p[1] > hi ? p[1] : hi;
	P_REQUIRE(pipe(q) == 0);
	P_REQUIRE(q[0] > hi && q[1] > hi);

	r = syscall(SYS_close_range, lo, hi, CLOSE_RANGE_CLOEXEC);
	if (r < 0 && (errno == ENOSYS || errno == EINVAL))
		P_SKIP("close_range(CLOSE_RANGE_CLOEXEC) not supported");
	P_CHECK(show("close_range cloexec", r) == 0);
	P_CHECK(show("close_range cloexec: efd cloexec",
		     fcntl(efd, F_GETFD) & FD_CLOEXEC) == FD_CLOEXEC);
	P_CHECK(show("close_range cloexec: ep cloexec",
		     fcntl(ep, F_GETFD) & FD_CLOEXEC) == FD_CLOEXEC);
	P_CHECK(show("close_range cloexec: pipe cloexec",
		     fcntl(p[0], F_GETFD) & FD_CLOEXEC) == FD_CLOEXEC);
	P_CHECK(show("close_range cloexec: q cloexec",
		     fcntl(q[0], F_GETFD) & FD_CLOEXEC) == 0);
	P_CHECK(show("close_range cloexec: instance ready", nready(ep)) == 1);
	P_CHECK(show("close_range cloexec: efd reads", read8(efd)) == 3);
	P_CHECK(eventfd_write(efd, 4) == 0);

	P_CHECK(show("close_range", syscall(SYS_close_range, lo, hi, 0)) == 0);
	P_CHECK(show("close_range: efd closed", is_closed(efd)) == 1);
	P_CHECK(show("close_range: ep closed", is_closed(ep)) == 1);
	P_CHECK(show("close_range: pipe closed",
		     is_closed(p[0]) && is_closed(p[1])) == 1);
	/* Above the range: untouched. */
	P_CHECK(write(q[1], "x", 1) == 1);
	P_CHECK(show("close_range: pipe above", read(q[0], &c, 1)) == 1 && c == 'x');
	/* The lowest numbers of the range are free for new files, which are
	 * new. */
	check_fresh_efd("close_range", efd);
	P_CHECK(close(q[0]) == 0);
	P_CHECK(close(q[1]) == 0);
	while (nhold)
		P_CHECK(close(hold[--nhold]) == 0);
	free(hold);
}

int main(void)
{
	p_begin(60);
	t_close();
	t_dup();
	t_close_range();
	fflush(stdout);
	return p_end();
}
