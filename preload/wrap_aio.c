/* SPDX-License-Identifier: MIT */
/*
 * wrap_aio.c - the kernel acting on an fd for the process, after one call
 * that named it: io_submit's completion eventfd, and io_uring.
 *
 * Kernel AIO signals a completion by adding 1 to the eventfd an iocb names
 * with IOCB_FLAG_RESFD, in the kernel, where a ueventfd's counter is not:
 * each such eventfd is demoted before the submission (LTP's eventfd06).
 * An iocb whose aio_fildes is one of our objects makes the kernel act on
 * that fd itself (IOCB_CMD_POLL looks at its readiness, which a NOPOLL
 * object does not keep exact; PREAD/PWRITE reach the kernel eventfd, not
 * the counter): the object is demoted before the submission too (the
 * kernel's answer, exactly; helper-37's F3).
 * libaio's io_submit is wrapped, and so is syscall(SYS_io_submit)
 * (wrap_syscall.c).  The iocbs are read with preload_peek, so that a bad
 * pointer is the kernel's EFAULT afterwards and never a fault here.
 *
 * io_uring: once the process has a ring, the kernel can act on any number
 * its submissions name (a read of an eventfd, a poll of an instance, an
 * IORING_OP_EPOLL_CTL into one) with no call the layer could see.  So the
 * first io_uring_setup through syscall(2) ends the acceleration: every
 * object is demoted, and objects made from then on are the kernel's
 * (preload_plain, init.c).  UEPOLL_NO_IOURING=1 (uepoll-run --no-io-uring)
 * makes io_uring_setup fail with ENOSYS instead, as libuv then falls back
 * to epoll, which stays accelerated.  liburing's own inline system calls are
 * not seen (docs: uepoll-run(1), LIMITS).
 */
#include <linux/aio_abi.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "uepoll.h"

#include "fdtab.h"

#include "preload.h"

void aio_demote_named(long nr, void *const *iocbs)
{
	int e = errno;

	if (!preload_ready() || nr <= 0 || fdtab_next(0) < 0)
		return;
	for (long i = 0; i < nr; i++) {
		struct iocb cb;
		void *p;

		if (!preload_peek(&p, &iocbs[i], sizeof(p)) ||
		    !preload_peek(&cb, p, sizeof(cb)))
			break; /* the kernel's EFAULT, at or before i */
		if (cb.aio_flags & IOCB_FLAG_RESFD &&
		    preload_is_eventfd((int)cb.aio_resfd) &&
		    uepoll_demote((int)cb.aio_resfd) == 0)
			stats_add(STAT_DEMOTES);
		if (preload_is_object((int)cb.aio_fildes) &&
		    uepoll_demote((int)cb.aio_fildes) == 0)
			stats_add(STAT_DEMOTES);
	}
	errno = e;
}

/* libaio's io_submit (it returns -errno).  Without libaio in the process,
 * only a program's own function of that name would be called, and that
 * one wins over this (the executable comes first). */
int io_submit(unsigned long ctx, long nr, void **iocbs); /* libaio.h's */
PRELOAD_WRAP int io_submit(unsigned long ctx, long nr, void **iocbs)
{
	long r;

	aio_demote_named(nr, iocbs);
	if (REAL(io_submit))
		return REAL(io_submit)(ctx, nr, iocbs);
	r = real_syscall_raw(SYS_io_submit, (long)ctx, nr, (long)iocbs, 0, 0,
			     0);
	return (int)r;
}

long aio_uring_setup(long entries, long params)
{
	if (preload_ready()) {
		if (policy.no_iouring) {
			errno = ENOSYS;
			return -1;
		}
		preload_go_plain();
	}
	return REAL(syscall)(SYS_io_uring_setup, entries, params);
}
