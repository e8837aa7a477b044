/* SPDX-License-Identifier: MIT */
/*
 * sys.c - thin wrappers over the kernel calls uepoll uses.  They exist so
 * that every other module sees one convention (-errno) and so that the
 * syscalls uepoll makes can be found in one place.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "sys.h"

int sys_epoll_create1(int flags)
{
	int r = epoll_create1(flags);

	return r < 0 ? -errno : r;
}

int sys_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	return epoll_ctl(epfd, op, fd, ev) < 0 ? -errno : 0;
}

static int sys__ms(const struct timespec *t)
{
	long long ms;

	if (!t)
		return -1;
	/* Round up: never wake before the deadline. */
	ms = (long long)t->tv_sec * 1000 + (t->tv_nsec + 999999) / 1000000;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

int sys_epoll_wait(int epfd, struct epoll_event *evs, int max,
		   const struct timespec *timeout, const sigset_t *sigmask)
{
	static _Atomic int no_pwait2;
	int r;

	if (!atomic_load_explicit(&no_pwait2, memory_order_relaxed)) {
		r = epoll_pwait2(epfd, evs, max, timeout, sigmask);
		if (r >= 0)
			return r;
		if (errno != ENOSYS)
			return -errno;
		atomic_store_explicit(&no_pwait2, 1, memory_order_relaxed);
	}
	r = epoll_pwait(epfd, evs, max, sys__ms(timeout), sigmask);
	return r < 0 ? -errno : r;
}

int sys_eventfd(unsigned int initval, int flags)
{
	int r = eventfd(initval, flags);

	return r < 0 ? -errno : r;
}

ssize_t sys_read(int fd, void *buf, size_t n)
{
	ssize_t r = read(fd, buf, n);

	return r < 0 ? -errno : r;
}

ssize_t sys_write(int fd, const void *buf, size_t n)
{
	ssize_t r = write(fd, buf, n);

	return r < 0 ? -errno : r;
}

int sys_close(int fd)
{
	return close(fd) < 0 ? -errno : 0;
}

int sys_fcntl_getfl(int fd)
{
	int r = fcntl(fd, F_GETFL);

	return r < 0 ? -errno : r;
}

void sys_eventfd_signal(int fd)
{
	uint64_t one = 1;
	ssize_t r;

	/* EAGAIN would need 2^64-2 signals without a read; EINTR cannot happen
	 * on a non-blocking eventfd. */
	do
		r = write(fd, &one, sizeof(one));
	while (r < 0 && errno == EINTR);
}

int sys_futex_wait(_Atomic uint32_t *addr, uint32_t val)
{
	long r = syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);

	return r < 0 ? -errno : 0;
}

void sys_futex_wake(_Atomic uint32_t *addr, int n)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

int sys_ppoll_in(int fd, const struct timespec *timeout,
		 const sigset_t *sigmask)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int r = ppoll(&pfd, 1, timeout, sigmask);

	return r < 0 ? -errno : r;
}

uint64_t sys_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sys_time_left(int64_t deadline, struct timespec *ts)
{
	uint64_t now = sys_now_ns();
	uint64_t left = (uint64_t)deadline > now ? (uint64_t)deadline - now : 0;

	ts->tv_sec = (time_t)(left / 1000000000u);
	ts->tv_nsec = (long)(left % 1000000000u);
}
