/*
 * t_fork_order: after a fork, an instance reports the ueventfds it watches
 * in the order they got ready, as the kernel's epoll does.
 *
 * A fork shares (or, with UEPOLL_FORK_DEMOTE_EVENTFDS=1, demotes) every
 * ueventfd made since the last fork: its watchers become registrations in
 * the instances' kernel epolls, one ADD each, and a kernel epoll reports
 * its ready items in the order they were added to its ready list, so the
 * shares must go oldest first.  Since PREPARED (obj.c) the prepare walked
 * the tail of the live list newest first and shared in that order: after
 * the fork, N ueventfds made and written 0..N-1 came back N-1..0 (found by
 * an outside tester, attack13-t/order.c).
 *
 * Two rounds (the second's objects are the tail of a list that holds the
 * first's): make N ueventfds in order, register them in an instance (level-
 * triggered in P, edge-triggered in Q), write them in order, fork (the
 * child exits), then in the parent take P's events one wait at a time
 * (maxevents 1) and Q's all at once.  Both must come in the order 0..N-1,
 * the kernel's (run first, same script).  ctest also runs it with
 * UEPOLL_FORK_DEMOTE_EVENTFDS=1 and UEPOLL_FORK_DEMOTE_INSTANCES=1.
 */
#include "testlib.h"
#include "calls.h"

#include <sys/wait.h>

enum { N = 6, ROUNDS = 2 };

static void run(const struct calls *s)
{
	int f[ROUNDS][N], p[ROUNDS], q[ROUNDS];

	for (int r = 0; r < ROUNDS; r++) {
		struct epoll_event evs[N];
		pid_t pid;
		int st, n;

		p[r] = s->create1(0);
		q[r] = s->create1(0);
		CHECK(p[r] >= 0 && q[r] >= 0);
		for (int i = 0; i < N; i++) {
			struct epoll_event lt = { .events = EPOLLIN,
						  .data.u32 = (uint32_t)i };
			struct epoll_event et = { .events = EPOLLIN | EPOLLET,
						  .data.u32 = (uint32_t)i };

			f[r][i] = s->eventfd(0, EFD_NONBLOCK);
			CHECK(f[r][i] >= 0);
			CHECK(s->ctl(p[r], EPOLL_CTL_ADD, f[r][i], &lt) == 0);
			CHECK(s->ctl(q[r], EPOLL_CTL_ADD, f[r][i], &et) == 0);
		}
		for (int i = 0; i < N; i++)
			CHECK(s->eventfd_write(f[r][i], 1) == 0);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			_exit(0);
		CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		      WEXITSTATUS(st) == 0);
		/* Level-triggered, one at a time: each wait the oldest. */
		for (int i = 0; i < N; i++) {
			n = s->wait(p[r], evs, 1, 0);
			CHECK_EQ(n, 1);
			if (n == 1)
				CHECK_EQ(evs[0].data.u32, (uint32_t)i);
		}
		/* Edge-triggered, all at once: in the order written. */
		n = s->wait(q[r], evs, N, 0);
		CHECK_EQ(n, N);
		for (int i = 0; i < n; i++)
			CHECK_EQ(evs[i].data.u32, (uint32_t)i);
	}
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < N; i++)
			CHECK(s->close(f[r][i]) == 0);
		CHECK(s->close(p[r]) == 0);
		CHECK(s->close(q[r]) == 0);
	}
}

int main(void)
{
	t_begin("t_fork_order");
	t_watchdog(60);
	run(&calls_kernel);
	run(&calls_uepoll);
	return t_end();
}
