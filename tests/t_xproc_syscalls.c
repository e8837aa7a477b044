/*
 * t_xproc_syscalls: a ueventfd shared by two processes after fork() keeps
 * its acceleration (issue 21): reads and writes that do not change the
 * counter's class (0 / non-zero / full) make no system call, in the child
 * as in the parent.
 *  (a) in the child: 1000 writes of 1 while the counter is non-zero: 0
 *      calls (a kernel eventfd's: 1000, measured the same way, in the
 *      same child: the count works after a fork);
 *  (b) in the child: 1000 reads of a semaphore ueventfd holding more than
 *      1000: 0 calls;
 *  (c) in the parent, after the child is gone: 1000 writes of 1 on the
 *      non-zero counter: 0 calls;
 *  (d) the values: the parent reads what both processes wrote, and the
 *      semaphore holds what the child left.
 * One operation of each kind comes first, uncounted: the first use after
 * a fork may set things up.  Linked with tests/libcwrap.c, as
 * t_efd_syscalls; counts, not timings.
 *
 * (It failed while fork() demoted every ueventfd to a kernel eventfd: each
 * write was then a write(2).)
 */
#include "xproc.h"
#include "libcwrap.h"

#define N 1000

static void count_start(void)
{
	wrap_take(-1);
	wrap_arm(0);
}

static int count_stop(void)
{
	wrap_disarm();
	return wrap_take_show();
}

static int write_n(int fd, int kernel)
{
	uint64_t one = 1;
	int bad = 0;

	for (int i = 0; i < N; i++)
		bad += (kernel ? write(fd, &one, 8) : uepoll_write(fd, &one, 8)) != 8;
	return bad;
}

int main(void)
{
	int efd, sem, kfd, res[2];
	int got[4] = { -1, -1, -1, -1 };
	uint64_t v = 0, one = 1;
	struct t_child c;
	int calls;

	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_begin("t_xproc_syscalls");
	x_init();
	efd = ueventfd(1, EFD_NONBLOCK);
	sem = ueventfd(N + 2, EFD_NONBLOCK | EFD_SEMAPHORE);
	kfd = eventfd(1, EFD_NONBLOCK);
	REQUIRE(efd >= 0 && sem >= 0 && kfd >= 0 && pipe(res) == 0);
	if (x_fork(&c) == 0) {
		int out[4], bad = 0;

		close(res[0]);
		x_step("uepoll", "the child's writes and reads");
		/* uncounted first uses */
		bad += uepoll_write(efd, &one, 8) != 8;
		bad += uepoll_read(sem, &v, 8) != 8 || v != 1;

		printf("child: %d writes of 1 to a kernel eventfd:\n", N);
		count_start();
		bad += write_n(kfd, 1);
		out[0] = count_stop();

		printf("child: %d writes of 1 to the non-zero ueventfd:\n", N);
		count_start();
		bad += write_n(efd, 0);
		out[1] = count_stop();

		printf("child: %d reads of the semaphore ueventfd (holds %d):\n",
		       N, N + 1);
		count_start();
		for (int i = 0; i < N; i++)
			bad += uepoll_read(sem, &v, 8) != 8 || v != 1;
		out[2] = count_stop();
		out[3] = bad;
		x_step_end();
		if (write(res[1], out, sizeof(out)) != sizeof(out))
			_exit(3);
		_exit(uepoll_close(efd) || uepoll_close(sem) || close(kfd));
	}
	close(res[1]);
	CHECK_EQ(t_child_reap(&c, 10000, "the child"), 0);
	if (read(res[0], got, sizeof(got)) != sizeof(got))
		CHECK(!"the child's counts");
	close(res[0]);
	printf("(a) the child's %d writes of 1: kernel eventfd %d calls, "
	       "ueventfd %d\n", N, got[0], got[1]);
	printf("(b) the child's %d semaphore reads: %d calls\n", N, got[2]);
	CHECK_EQ(got[0], N); /* the measure itself */
	CHECK_EQ(got[1], 0);
	CHECK_EQ(got[2], 0);
	CHECK_EQ(got[3], 0);

	x_step("uepoll", "the parent's writes");
	CHECK_EQ(uepoll_write(efd, &one, 8), 8); /* uncounted */
	printf("parent: %d writes of 1 to the non-zero ueventfd:\n", N);
	count_start();
	CHECK_EQ(write_n(efd, 0), 0);
	calls = count_stop();
	printf("(c) the parent's %d writes of 1 after the fork: %d calls\n", N,
	       calls);
	CHECK_EQ(calls, 0);

	/* (d) 1 + the child's 1 + N, the parent's 1 + N */
	CHECK_EQ(uepoll_read(efd, &v, 8), 8);
	CHECK_EQ(v, 2 * N + 3);
	CHECK_ERR(uepoll_read(efd, &v, 8), EAGAIN);
	/* N + 2, less the child's 1 + N */
	CHECK_EQ(uepoll_read(sem, &v, 8), 8);
	CHECK_ERR(uepoll_read(sem, &v, 8), EAGAIN);
	x_step_end();
	CHECK_EQ(uepoll_close(efd), 0);
	CHECK_EQ(uepoll_close(sem), 0);
	CHECK_EQ(close(kfd), 0);
	return t_end();
}
