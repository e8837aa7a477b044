/*
 * t_hold_clear_late: a write held (UEVENTFD_HOLD_WRITES) while the timer
 * thread is showing the writes held before it is shown by a later run, not
 * stranded (HOLD in src/eventfd.c, PENDING in src/timer.c; the model is
 * models/hold.pml).
 *
 * A blocking ueventfd holds writes for DELAY_US.  One write of 1 arms the
 * timer; its run takes the held value (the exchange) and makes it
 * readable, and is held at that system call (the mirror's write(2)) through
 * a hook of the timer thread (libcwrap.h: wrap_hook_tid_once).  Meanwhile a
 * second write of 1 is held; then the run goes on.  A reader must get both (blocking reads
 * until it has 2) within a bound far above DELAY_US: a run that cleared
 * `pending` only after its show would have made the second write arm
 * nothing, and its value would stay held for good.  The kernel's eventfd
 * (two writes of 1, then reads) gives 2.  Nothing waits on a clock: the
 * hook yields until the write is done, and a hang ends at the bound.
 */
#include "libcwrap.h"
#include "testlib.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sched.h>
#include <sys/eventfd.h>

#define DELAY_US 10000u

static int fd;
static _Atomic int held, go;

static void hook(long nr)
{
	if (nr != SYS_write) { /* (held at the write(2) only) */
		wrap_hook_tid_once(gettid(), hook);
		return;
	}
	atomic_store(&held, 1);
	while (!atomic_load(&go))
		sched_yield();
}

static _Atomic uint64_t got;

static void *reader(void *arg)
{
	(void)arg;
	while (atomic_load(&got) < 2) {
		uint64_t v;

		if (uepoll_read(fd, &v, 8) != 8)
			break;
		atomic_fetch_add(&got, v);
	}
	return NULL;
}

int main(void)
{
	struct ueventfd_coalesce set = { .delay_us = DELAY_US,
					 .flags = UEVENTFD_HOLD_WRITES };
	uint64_t one = 1, v, ksum = 0;
	pthread_t r;
	int k, tid;

	t_begin("t_hold_clear_late");
	t_watchdog(60);

	/* The kernel's eventfd after the same writes. */
	k = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	REQUIRE(k >= 0);
	REQUIRE(write(k, &one, 8) == 8 && write(k, &one, 8) == 8);
	while (read(k, &v, 8) == 8)
		ksum += v;
	close(k);

	fd = ueventfd(0, EFD_CLOEXEC);
	REQUIRE(fd >= 0);
	REQUIRE(ueventfd_coalesce(fd, &set, NULL) == 0);
	tid = t_timer_tid();
	if (!tid)
		T_SKIP("no timer thread");
	wrap_hook_tid_once(tid, hook);

	CHECK_EQ(uepoll_write(fd, &one, 8), 8);
	/* The run that shows it, held after its exchange of `held`. */
	while (!atomic_load(&held))
		sched_yield();
	CHECK_EQ(uepoll_write(fd, &one, 8), 8);
	atomic_store(&go, 1);

	REQUIRE(pthread_create(&r, NULL, reader, NULL) == 0);
	if (!t_join_within(r, 5000)) {
		fprintf(stderr, "the reader got %llu of %llu within the bound: "
			"a held write was stranded\n",
			(unsigned long long)atomic_load(&got),
			(unsigned long long)ksum);
		exit(1);
	}
	CHECK_EQ(atomic_load(&got), ksum);
	CHECK_EQ(uepoll_close(fd), 0);
	return t_end();
}
