/* SPDX-License-Identifier: MIT */
/*
 * sys.h - the system calls uepoll makes, each returning -errno on failure.
 */
#ifndef UEPOLL_SYS_H
#define UEPOLL_SYS_H

#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/types.h>
#include <time.h>

int sys_epoll_create1(int flags);
int sys_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
/* timeout: NULL blocks; sigmask may be NULL. */
int sys_epoll_wait(int epfd, struct epoll_event *evs, int max,
		   const struct timespec *timeout, const sigset_t *sigmask);
int sys_eventfd(unsigned int initval, int flags);
ssize_t sys_read(int fd, void *buf, size_t n);
ssize_t sys_write(int fd, const void *buf, size_t n);
int sys_close(int fd);
int sys_fcntl_getfl(int fd);
/* Wake an eventfd: add 1 to its counter. */
void sys_eventfd_signal(int fd);
int sys_futex_wait(_Atomic uint32_t *addr, uint32_t val);
void sys_futex_wake(_Atomic uint32_t *addr, int n);
/* Sleep until fd is readable (1), the timeout passes (0, NULL: never) or a
 * signal handler runs (-EINTR); sigmask as ppoll's, applied atomically. */
int sys_ppoll_in(int fd, const struct timespec *timeout,
		 const sigset_t *sigmask);
uint64_t sys_now_ns(void);
/* The time from now to deadline (CLOCK_MONOTONIC ns), 0 once it passed. */
void sys_time_left(int64_t deadline, struct timespec *ts);

#endif
