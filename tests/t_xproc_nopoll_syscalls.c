/*
 * t_xproc_nopoll_syscalls: a forked pair taking turns on two shared
 * UEVENTFD_NOPOLL ueventfds (blocking semaphore reads, as `pingpong`
 * efd-fork-nopoll) makes no call on their kernel fds: nothing polls them,
 * so a change of the counter's class neither arms (write(2)) nor drains
 * (preadv2) the mirror (NOPOLL in src/eventfd_shared.c; issue 35 item 4).
 * A handoff is then at most the writer's FUTEX_WAKE and the reader's
 * F_GETFL and futex sleep; the same exchange on exact ueventfds (the
 * control, and the measure's proof) adds a write(2) and a preadv2 per
 * handoff, and the kernel's eventfds make a write(2) and a read(2).
 *
 * Each process counts its own thread's system calls by number (the
 * library's calls all go through syscall(): tests/libcwrap.c's
 * wrap_hook_all), over N round trips after a few uncounted ones; the
 * child sends its counts back through a pipe.  Counts, not timings: how
 * often a reader finds the counter already non-zero (no sleep, no wake)
 * depends on the scheduler, so the futex and fcntl counts are bounds.
 */
#include "libcwrap.h"
#include "xproc.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

#define N 1000
#define WARM 20

enum { C_WRITE, C_READ, C_PREADV2, C_FCNTL, C_FUTEX, C_WAITV, C_OTHER, C_N };
static const char *const c_name[C_N] = { "write", "read", "preadv2",
					 "fcntl", "futex", "futex_waitv",
					 "other" };

static __thread int counting;
static _Atomic int counts[C_N];

static void on_syscall(long nr, const long *a)
{
	int k;

	(void)a;
	if (!counting)
		return;
	k = nr == SYS_write	    ? C_WRITE
	    : nr == SYS_read	    ? C_READ
	    : nr == SYS_preadv2	    ? C_PREADV2
	    : nr == SYS_fcntl	    ? C_FCNTL
	    : nr == SYS_futex	    ? C_FUTEX
	    : nr == SYS_futex_waitv ? C_WAITV
				    : C_OTHER;
	atomic_fetch_add_explicit(&counts[k], 1, memory_order_relaxed);
}

static void count_start(void)
{
	for (int i = 0; i < C_N; i++)
		atomic_store(&counts[i], 0);
	counting = 1;
}

static void count_stop(int *out)
{
	counting = 0;
	for (int i = 0; i < C_N; i++)
		out[i] = atomic_load(&counts[i]);
}

/* A: write out, then read in (blocking). */
static int turn(int out, int in)
{
	uint64_t one = 1, v = 0;

	if (uepoll_write(out, &one, 8) != 8)
		return 1;
	return uepoll_read(in, &v, 8) != 8 || v != 1;
}

static void show(const char *who, const int *c)
{
	printf("  %s:", who);
	for (int i = 0; i < C_N; i++)
		printf(" %s %d", c_name[i], c[i]);
	printf(" (%d round trips)\n", N);
}

/* One run: the pair on two ueventfds made with flags; the counts of both
 * processes (p: the parent's, c: the child's). */
static void pair_run(int flags, int *p, int *c)
{
	int a2b = ueventfd(0, EFD_SEMAPHORE | flags);
	int b2a = ueventfd(0, EFD_SEMAPHORE | flags);
	int res[2], bad = 0;
	struct t_child ch;

	REQUIRE(a2b >= 0 && b2a >= 0 && pipe(res) == 0);
	if (x_fork(&ch) == 0) {
		int out[C_N + 1];

		close(res[0]);
		/* B: read a2b, then write b2a */
		for (int i = 0; i < WARM + N; i++) {
			uint64_t v = 0, one = 1;

			if (i == WARM)
				count_start();
			bad += uepoll_read(a2b, &v, 8) != 8 || v != 1;
			bad += uepoll_write(b2a, &one, 8) != 8;
		}
		count_stop(out);
		out[C_N] = bad;
		if (write(res[1], out, sizeof(out)) != sizeof(out))
			_exit(3);
		_exit(uepoll_close(a2b) || uepoll_close(b2a));
	}
	close(res[1]);
	x_step("uepoll", "the round trips");
	for (int i = 0; i < WARM; i++)
		bad += turn(a2b, b2a);
	count_start();
	for (int i = 0; i < N; i++)
		bad += turn(a2b, b2a);
	count_stop(p);
	x_step_end();
	CHECK_EQ(bad, 0);
	CHECK_EQ(t_child_reap(&ch, 10000, "B"), 0);
	{
		int got[C_N + 1];

		if (read(res[0], got, sizeof(got)) != sizeof(got)) {
			CHECK(!"B's counts");
			memset(got, 0, sizeof(got));
		}
		memcpy(c, got, sizeof(int) * C_N);
		CHECK_EQ(got[C_N], 0);
	}
	close(res[0]);
	CHECK_EQ(uepoll_close(a2b), 0);
	CHECK_EQ(uepoll_close(b2a), 0);
}

static int total(const int *c)
{
	int t = 0;

	for (int i = 0; i < C_N; i++)
		t += c[i];
	return t;
}

int main(void)
{
	int p[C_N], c[C_N];

	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_begin("t_xproc_nopoll_syscalls");
	x_init();
	wrap_hook_all(on_syscall, NULL);

	printf("UEVENTFD_NOPOLL, shared by the fork:\n");
	pair_run(UEVENTFD_NOPOLL, p, c);
	show("A (parent)", p);
	show("B (child)", c);
	for (int i = 0; i < 2; i++) {
		const int *x = i ? c : p;

		/* The mirror is never touched. */
		CHECK_EQ(x[C_WRITE], 0);
		CHECK_EQ(x[C_READ], 0);
		CHECK_EQ(x[C_PREADV2], 0);
		CHECK_EQ(x[C_OTHER], 0);
		/* At most a wake, a look at O_NONBLOCK and a sleep a
		 * handoff: 3 a round trip in each process (the kernel's: 2). */
		CHECK(x[C_FUTEX] <= N + 2);
		CHECK(x[C_FCNTL] <= N + 2);
		CHECK(x[C_WAITV] + x[C_FUTEX] + x[C_FCNTL] <= 3 * N + 6);
		CHECK(total(x) <= 3 * N + 6);
	}

	printf("exact ueventfds (the control), shared by the fork:\n");
	pair_run(0, p, c);
	show("A (parent)", p);
	show("B (child)", c);
	/* Every handoff takes a counter from 0 and back: the pre-step's
	 * write(2) and the settle's preadv2, in each process once a round
	 * trip (the measure works after a fork). */
	CHECK(p[C_WRITE] >= N && c[C_WRITE] >= N);
	CHECK(p[C_PREADV2] >= N && c[C_PREADV2] >= N);
	return t_end();
}
