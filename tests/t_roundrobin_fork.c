/*
 * t_roundrobin_fork: EPOLLROUNDROBIN on a kernel fd shared by instances in
 * different processes (forked workers, the nginx shape).  The parent makes
 * a pipe and forks N workers; each creates its own instance after the fork,
 * adds the pipe's read end with EPOLLEXCLUSIVE|EPOLLROUNDROBIN and reads one
 * byte per wakeup.  The parent writes N*K bytes, one at a time, each once
 * every worker is asleep.  Every byte must be read exactly once, and each
 * worker must get its turn: exactly K each (with plain EPOLLEXCLUSIVE the
 * first worker would get all of them).
 */
#include "testlib.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 3
#define K 6

/* Runs in the child: count bytes until the stop byte '.'; report on out. */
static int worker(int rfd, int out)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE |
					    EPOLLROUNDROBIN };
	int ep = uepoll_create1(0), got = 0;
	char c;

	if (ep < 0 || uepoll_ctl(ep, EPOLL_CTL_ADD, rfd, &ev) < 0)
		return 2;
	for (;;) {
		int n = uepoll_wait(ep, &ev, 1, 30000);

		if (n == 0)
			return 3; /* nothing for 30 s: the parent is gone */
		if (n < 0)
			continue;
		if (read(rfd, &c, 1) != 1)
			continue; /* woken for a byte another took: counted
				   * by the parent as a lost turn */
		if (c == '.')
			break;
		got++;
	}
	if (write(out, &got, sizeof(got)) != sizeof(got))
		return 4;
	uepoll_close(ep);
	return 0;
}

int main(void)
{
	int p[2], res[2], got[N], total = 0, st[N], done[N] = { 0 };
	pid_t pid[N];

	t_begin("t_roundrobin_fork");
	t_watchdog(120);
	REQUIRE(pipe2(p, O_NONBLOCK) == 0);
	REQUIRE(pipe(res) == 0);
	for (int i = 0; i < N; i++) {
		pid[i] = fork();
		REQUIRE(pid[i] >= 0);
		if (pid[i] == 0) {
			close(p[1]);
			close(res[0]);
			_exit(worker(p[0], res[1]));
		}
	}
	for (int e = 0; e < N * K; e++) {
		for (int i = 0; i < N; i++)
			REQUIRE(t_wait_sleeping(pid[i], 10000));
		CHECK_EQ(write(p[1], "x", 1), 1);
		/* the byte is taken before the next one is sent */
		for (int t = 0; t < 10000; t++) {
			int avail = 1;

			if (ioctl(p[0], FIONREAD, &avail) == 0 && !avail)
				break;
			t_sleep_ms(1);
		}
	}
	/* stop: one '.' per worker, each once the live ones are asleep */
	for (int i = 0; i < N; i++) {
		for (int j = 0; j < N; j++)
			if (!done[j] && waitpid(pid[j], &st[j], WNOHANG) == pid[j])
				done[j] = 1;
		for (int j = 0; j < N; j++)
			if (!done[j])
				t_wait_sleeping(pid[j], 10000);
		CHECK_EQ(write(p[1], ".", 1), 1);
		t_sleep_ms(20);
	}
	for (int i = 0; i < N; i++) {
		if (!done[i])
			REQUIRE(waitpid(pid[i], &st[i], 0) == pid[i]);
		CHECK(WIFEXITED(st[i]) && WEXITSTATUS(st[i]) == 0);
	}
	for (int i = 0; i < N; i++) {
		REQUIRE(read(res[0], &got[i], sizeof(got[i])) == sizeof(got[i]));
		printf("worker: %d bytes\n", got[i]);
		total += got[i];
		CHECK_EQ(got[i], K);
	}
	CHECK_EQ(total, N * K);
	close(p[0]);
	close(p[1]);
	close(res[0]);
	close(res[1]);
	return t_end();
}
