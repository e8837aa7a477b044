/*
 * t_hold_blocked_write: a held write (UEVENTFD_HOLD_WRITES) that blocked for
 * room is shown once it fits, however long it waited (HOLD in
 * src/eventfd.c: a write adds to `held`, then arms the timer; the model is
 * models/hold.pml).
 *
 * A blocking ueventfd holds writes for DELAY_US.  A write of the maximum
 * (0xfffffffffffffffe) is shown: the counter is full.  A thread W writes 1
 * and blocks for room.  Then a run of the timer passes: a second ueventfd,
 * holding for longer, is written and read (a blocking read returns once
 * its run showed it, after any run armed before with a shorter delay).
 * Then a read of the maximum wakes W, whose 1 goes to `held`; a blocking
 * read must return it within a bound far above DELAY_US (the kernel's
 * eventfd gives the same: the maximum, then 1).  A write that armed the
 * timer before it added to `held` (before it blocked) would have had that
 * run show nothing, and its 1 would stay held for good.  Nothing waits on
 * a clock: each step waits for the one before, and a hang ends at the
 * bound.
 */
#include "testlib.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

#define DELAY_US 1000u
#define FULL 0xfffffffffffffffeull

static int fd;
static _Atomic int w_tid;
static ssize_t w_ret;

static void *writer(void *arg)
{
	uint64_t one = 1;

	(void)arg;
	atomic_store(&w_tid, t_gettid());
	w_ret = uepoll_write(fd, &one, 8);
	return NULL;
}

static uint64_t r_val;

static void *reader(void *arg)
{
	(void)arg;
	if (uepoll_read(fd, &r_val, 8) != 8)
		r_val = 0;
	return NULL;
}

int main(void)
{
	struct ueventfd_coalesce set = { .delay_us = DELAY_US,
					 .flags = UEVENTFD_HOLD_WRITES };
	struct pollfd p;
	uint64_t v = FULL;
	pthread_t w, r;
	int fd2;

	t_begin("t_hold_blocked_write");
	t_watchdog(60);

	fd = ueventfd(0, EFD_CLOEXEC);
	REQUIRE(fd >= 0);
	REQUIRE(ueventfd_coalesce(fd, &set, NULL) == 0);
	CHECK_EQ(uepoll_write(fd, &v, 8), 8);
	/* Shown: the fd readable, not writable. */
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	REQUIRE(poll(&p, 1, -1) == 1);
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	CHECK_EQ(poll(&p, 1, 0), 0);

	REQUIRE(pthread_create(&w, NULL, writer, NULL) == 0);
	while (!atomic_load(&w_tid))
		sched_yield();
	CHECK_EQ(t_blocked_in(atomic_load(&w_tid), 10000), SYS_futex);

	/* A run of the timer passes. */
	set.delay_us = 2 * DELAY_US;
	fd2 = ueventfd(0, EFD_CLOEXEC);
	REQUIRE(fd2 >= 0);
	REQUIRE(ueventfd_coalesce(fd2, &set, NULL) == 0);
	v = 1;
	CHECK_EQ(uepoll_write(fd2, &v, 8), 8);
	CHECK_EQ(uepoll_read(fd2, &v, 8), 8);
	CHECK_EQ(v, 1);
	CHECK_EQ(uepoll_close(fd2), 0);

	/* Room: W's write goes to `held`. */
	CHECK_EQ(uepoll_read(fd, &v, 8), 8);
	CHECK(v == FULL);
	REQUIRE(t_join_within(w, 10000));
	CHECK_EQ(w_ret, 8);
	REQUIRE(pthread_create(&r, NULL, reader, NULL) == 0);
	if (!t_join_within(r, 5000)) {
		fprintf(stderr, "the write that blocked for room was never "
			"shown (held for good)\n");
		exit(1);
	}
	CHECK_EQ(r_val, 1);
	CHECK_EQ(uepoll_close(fd), 0);
	return t_end();
}
