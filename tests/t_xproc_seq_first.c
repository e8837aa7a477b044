/*
 * t_xproc_seq_first: a blocked reader of a shared ueventfd reads the futex
 * word before it looks at the counter, so that a write between its look
 * and its sleep is never missed (issue 36: the C twin of
 * models/xmirror.pml's SEQ_AFTER).  Read after the look, the word already
 * holds that write's wake: the reader sleeps on it and nothing wakes it
 * but its sleep's one-second limit.
 *
 * The window has no system call, so a hardware watchpoint places the
 * write in it: thread R, about to sleep in a read of the empty counter,
 * gets a synchronous SIGTRAP (perf_event_open's sigtrap, on R's own
 * accesses to the counter's word) once it is counted as a sleeper and
 * has looked at the counter; its handler lets the main thread write 1 and
 * waits for that write to end.  R must then not sleep until its limit: its
 * futex sleep returns at once (the word changed) or is not made, never
 * ETIMEDOUT.  Skipped (77) where perf breakpoints with sigtrap are not
 * allowed (perf_event_paranoid, a seccomp filter, a kernel before 5.13).
 * Uses the library's private headers for the counter's address.
 */
#include "libcwrap.h"
#include "watchpoint.h"
#include "xproc.h"

#include "eventfd.h"
#include "fdtab.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

static int fd;
static struct uefd_ctr *ctr;
static _Atomic int r_ready, fired, w_go, w_done, timed_out;

/* R's accesses to the counter: once R is a counted sleeper (and so has
 * looked at the counter: the watchpoint traps after the access), the
 * write comes, and R goes on only when it has ended. */
static void on_access(const void *addr)
{
	(void)addr;
	if (atomic_load(&fired) || !atomic_load(&ctr->xsleepers))
		return;
	atomic_store(&fired, 1);
	atomic_store(&w_go, 1);
	while (!atomic_load(&w_done))
		sched_yield();
}

static void r_after(long nr)
{
	if (nr == SYS_futex_waitv && wrap_last_result() < 0 &&
	    errno == ETIMEDOUT)
		atomic_store(&timed_out, 1);
	wrap_hook_after_once(r_after);
}

static void *r_main(void *arg)
{
	uint64_t v = 0;
	ssize_t r;
	int w;

	(void)arg;
	w = wp_watch(&ctr->count, 8, on_access);
	atomic_store(&r_ready, w >= 0 ? 1 : w);
	if (w < 0)
		return (void *)(intptr_t)-2;
	wrap_hook_after_once(r_after);
	r = uepoll_read(fd, &v, 8);
	wrap_hook_after_once(NULL);
	close(w);
	return (void *)(intptr_t)(r == 8 ? (intptr_t)v : -1);
}

int main(void)
{
	struct t_child c;
	pthread_t r;
	int park[2];
	uint64_t v = 1;
	void *ret;

	t_begin("t_xproc_seq_first");
	x_init();

	fd = ueventfd(0, EFD_CLOEXEC);
	REQUIRE(fd >= 0);
	ctr = ((struct uefd *)(void *)fdtab_peek(fd))->sh;
	REQUIRE(pipe(park) == 0);
	pid_t p = x_fork(&c);
	REQUIRE(p >= 0);
	if (p == 0) {
		char b;

		close(park[1]);
		(void)!read(park[0], &b, 1);
		_exit(0);
	}
	close(park[0]);

	x_step("uepoll", "R watches the counter and reads");
	REQUIRE(pthread_create(&r, NULL, r_main, NULL) == 0);
	while (!atomic_load(&r_ready))
		sched_yield();
	x_step_end();
	if (atomic_load(&r_ready) < 0) {
		fprintf(stderr, "perf_event_open: %s: skip\n",
			strerror(-atomic_load(&r_ready)));
		pthread_join(r, NULL);
		close(park[1]);
		t_child_reap(&c, 10000, "the parked child");
		uepoll_close(fd);
		T_SKIP("no perf breakpoint with sigtrap here");
	}

	x_step("uepoll", "R, a counted sleeper, has looked at the counter");
	while (!atomic_load(&w_go))
		sched_yield();
	x_step_end();
	x_step("uepoll", "the write in R's window");
	CHECK_EQ(uepoll_write(fd, &v, 8), 8);
	atomic_store(&w_done, 1);
	x_step_end();

	x_step("uepoll", "R returns");
	REQUIRE(pthread_join(r, &ret) == 0);
	x_step_end();
	CHECK_EQ((intptr_t)ret, 1);
	CHECK(atomic_load(&fired)); /* the watchpoint did place the write */
	if (atomic_load(&timed_out))
		fprintf(stderr, "R slept until its limit: it read the futex word "
				"after its look at the counter\n");
	CHECK(!atomic_load(&timed_out));

	close(park[1]);
	t_child_reap(&c, 10000, "the parked child");
	CHECK_EQ(uepoll_close(fd), 0);
	return t_end();
}
