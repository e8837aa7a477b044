/* SPDX-License-Identifier: MIT */
/*
 * wrap_syscall.c - syscall(2) for the numbers that close or replace an fd.
 *
 * libuv closes every fd with syscall(SYS_close, fd) (it must not be a
 * cancellation point), so a close that bypassed close() would leave a
 * ueventfd or an instance published under a number the kernel reuses
 * (wrap_fd.c).  Those numbers go to the same code as close, close_range,
 * dup2 and dup3; every other number is libc's syscall().
 *
 * io_uring_setup fails with ENOSYS: a ring can act on an fd without any
 * call of the process (IORING_OP_EPOLL_CTL into an instance's kernel epoll,
 * an eventfd registered for completions written by the kernel), bypassing
 * uepoll.  libuv, which sets its rings up with syscall(), then falls back to
 * epoll_ctl.  A program with its own inline system calls (liburing) is not
 * seen: docs/design.md, "Preload layer".
 *
 * poll, ppoll, select, pselect6 and epoll_ctl go to libc's syscall() too,
 * after UEPOLL_NOPOLL=1's look at their fds (wrap_poll.c).
 */
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"


PRELOAD_WRAP long syscall(long nr, ...)
{
	va_list ap;
	long a[6];
	long (*f)(long, ...);

	/* Six arguments, whatever the call takes: what the system call ABI
	 * passes, as libc's syscall() itself reads them. */
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (preload_ready()) {
		switch (nr) {
		case SYS_close:
			/* Any other fd: libc's syscall, no cancellation point
			 * (why libuv closes this way), not uepoll_close's
			 * close(2). */
			if (!preload_is_object((int)a[0]))
				break;
			return fd_close((int)a[0]);
		case SYS_close_range:
			return fd_close_range((unsigned int)a[0],
					      (unsigned int)a[1], (int)a[2],
					      true);
		case SYS_dup3:
			return fd_dup3((int)a[0], (int)a[1], (int)a[2], false);
#ifdef SYS_dup2
		case SYS_dup2:
			return fd_dup3((int)a[0], (int)a[1], 0, true);
#endif
		/* UEPOLL_NOPOLL=1: outside pollers (wrap_poll.c); then
		 * libc's syscall. */
#ifdef SYS_poll
		case SYS_poll:
#endif
		case SYS_ppoll:
			poll_mark_fds((const struct pollfd *)a[0],
				      (nfds_t)a[1]);
			break;
#ifdef SYS_select
		case SYS_select:
#endif
		case SYS_pselect6:
			poll_mark_sets((int)a[0], (const fd_set *)a[1],
				       (const fd_set *)a[2],
				       (const fd_set *)a[3]);
			break;
		case SYS_epoll_ctl:
			if (policy.nopoll && (a[1] == EPOLL_CTL_ADD ||
					      a[1] == EPOLL_CTL_MOD))
				poll_mark_fds(&(struct pollfd){ .fd = (int)a[2] },
					      1);
			break;
#ifdef SYS_io_uring_setup
		case SYS_io_uring_setup:
			errno = ENOSYS;
			return -1;
#endif
		default:
			break;
		}
	}
	f = REAL(syscall);
	if (!f) {
		long r = real_syscall_raw(nr, a[0], a[1], a[2], a[3], a[4],
					  a[5]);

		if (r < 0 && r > -4096) {
			errno = (int)-r;
			return -1;
		}
		return r;
	}
	return f(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
