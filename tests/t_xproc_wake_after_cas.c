/*
 * t_xproc_wake_after_cas: a write that takes a shared ueventfd's counter
 * from 0 wakes the blocked readers after its CAS, never before (issue 36:
 * the C twin of models/xmirror.pml's WAKE_BEFORE_CAS).  A reader woken
 * before the CAS finds the counter still 0 and sleeps again, and nobody
 * wakes it: it returns only at its sleep's one-second limit.
 *
 * One shared ueventfd (a child forked and parked keeps it shared),
 * blocking.  Thread R blocks in a read (asleep on the futex word).  The
 * main thread writes 1; the test holds it right after its wake (a hook
 * after the library's FUTEX_WAKE, libcwrap.h) until R has either returned
 * or gone to sleep again.  With the wake after the CAS, R returns with the
 * value; a sleep of R that begins after the wake is the lost wakeup.  No
 * timing is asserted: the order is forced by the hooks.
 */
#include "libcwrap.h"
#include "xproc.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

static int fd;
static _Atomic int woke, r_tid, r_back, r_slept, slept_after;

/* R's system calls (wrap_hook_all: R's thread only): a futex sleep
 * (futex_waitv, or FUTEX_WAIT*) after the writer's wake is noted. */
static void on_syscall(long nr, const long *a)
{
	int op = nr == SYS_futex ? (int)(a[1] & FUTEX_CMD_MASK) : -1;

	if (gettid() != atomic_load(&r_tid)) /* (not t_gettid: syscall()) */
		return;
	if (nr == SYS_futex_waitv || op == FUTEX_WAIT ||
	    op == FUTEX_WAIT_BITSET) {
		if (atomic_load(&woke))
			atomic_store(&slept_after, 1);
		atomic_store(&r_slept, 1);
	}
}

static void *r_main(void *arg)
{
	uint64_t v = 0;
	ssize_t r;

	(void)arg;
	atomic_store(&r_tid, t_gettid());
	r = uepoll_read(fd, &v, 8);
	atomic_store(&r_back, 1);
	return (void *)(intptr_t)(r == 8 ? (intptr_t)v : -1);
}

/* The writer, after its FUTEX_WAKE: hold until R has returned or slept. */
static void w_after(long nr)
{
	if (nr != SYS_futex) {
		wrap_hook_after_once(w_after);
		return;
	}
	atomic_store(&woke, 1);
	while (!atomic_load(&r_back) && !atomic_load(&slept_after))
		sched_yield();
}

int main(void)
{
	pthread_t r;
	struct x_park park;
	uint64_t v = 1;
	void *ret;

	t_begin("t_xproc_wake_after_cas");
	x_init();
	wrap_hook_all(on_syscall, NULL);
	fd = ueventfd(0, EFD_CLOEXEC);
	REQUIRE(fd >= 0);
	x_park(&park); /* the fd shared from here on */

	x_step("uepoll", "R blocks in its read");
	REQUIRE(pthread_create(&r, NULL, r_main, NULL) == 0);
	while (!atomic_load(&r_slept))
		sched_yield();
	REQUIRE(t_wait_sleeping(atomic_load(&r_tid), X_STEP_S * 1000));
	x_step_end();

	x_step("uepoll", "the write, held after its wake until R returns or sleeps");
	wrap_hook_after_once(w_after);
	CHECK_EQ(uepoll_write(fd, &v, 8), 8);
	wrap_hook_after_once(NULL);
	x_step_end();

	x_step("uepoll", "R returns");
	REQUIRE(pthread_join(r, &ret) == 0);
	x_step_end();
	CHECK_EQ((intptr_t)ret, 1);
	CHECK(atomic_load(&woke));
	if (atomic_load(&slept_after))
		fprintf(stderr, "R slept again after the writer's wake: the wake "
				"came before the CAS\n");
	CHECK(!atomic_load(&slept_after));

	x_unpark(&park);
	CHECK_EQ(uepoll_close(fd), 0);
	return t_end();
}
