/*
 * t_fork_exit_held: a forked child that exits normally delivers every
 * wakeup it holds, however many (issue 32, bug 9).
 *
 * The parent gives N = 200 ueventfds a 100 ms delay (ueventfd_coalesce)
 * and forks; the child writes 1 to each, so that each write's wakeup is
 * held by the child's timer, and returns from main at once (exit(0)).  A
 * process that exits normally delivers what its timer holds
 * (ueventfd_coalesce(3)): the parent, after reaping the child, finds every
 * fd readable with one zero-timeout poll() and reads 1 from each, as with
 * the kernel's eventfds (the same script runs on them first).  Before the
 * fix the exit delivered 64 at most (a fixed array): the rest stayed
 * unreadable over a non-zero counter, and a parent that poll()s them
 * sleeps for ever.
 *
 * No clock decides: if the child is slower than the delay its timer
 * delivers some of them itself, which only makes this test weaker, never
 * wrong.  Under ThreadSanitizer a forked child has no timer thread (its
 * writes wake at once): the same results.
 */
#include "calls.h"
#include "xproc.h"

#include <sys/resource.h>

#define N 200

static void run(const struct calls *s, struct t_log *L)
{
	static int fd[N];
	static struct pollfd p[N];
	struct t_child c;
	long sum = 0, ready = 0, bad = 0;

	for (int i = 0; i < N; i++) {
		fd[i] = s->eventfd(0, EFD_NONBLOCK);
		REQUIRE(fd[i] >= 0);
		if (s == &calls_uepoll) {
			struct ueventfd_coalesce co = { .delay_us = 100000 };

			REQUIRE(ueventfd_coalesce(fd[i], &co, NULL) == 0);
		}
	}
	if (x_fork(&c) == 0) {
		uint64_t one = 1;
		int b = 0;

		for (int i = 0; i < N; i++)
			b |= s->write(fd[i], &one, sizeof(one)) != sizeof(one);
		exit(b); /* not _exit: what the library does at exit runs */
	}
	t_log_put(L, t_child_reap(&c, 15000, "the child"));
	for (int i = 0; i < N; i++)
		p[i] = (struct pollfd){ .fd = fd[i], .events = POLLIN };
	t_log_put(L, poll(p, N, 0));
	for (int i = 0; i < N; i++) {
		uint64_t v = 0;

		ready += p[i].revents == POLLIN;
		if (s->read(fd[i], &v, sizeof(v)) == sizeof(v))
			sum += (long)v;
		else
			bad++;
		CHECK_EQ(s->close(fd[i]), 0);
	}
	t_log_put(L, ready);
	t_log_put(L, sum);
	t_log_put(L, bad);
	printf("%s: %ld of %d readable after the child's exit, %ld read\n",
	       s->name, ready, N, sum);
}

int main(void)
{
	struct t_log L[2];
	struct rlimit rl;

	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_begin("t_fork_exit_held");
	x_init();
	/* Two fds each (the number and the private one), and the test's. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 2 * N + 64)
		T_SKIP("RLIMIT_NOFILE too low");
	memset(L, 0, sizeof(L));
	run(&calls_kernel, &L[0]);
	run(&calls_uepoll, &L[1]);
	CHECK_EQ(L[0].v[1], N);
	CHECK_EQ(L[0].v[2], N);
	t_log_same(&L[0], &L[1], "a child's exit with every write held");
	return t_end();
}
