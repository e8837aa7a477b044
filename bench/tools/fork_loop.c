/*
 * fork_loop - the `fork` scenario's loop alone, for a profiler (perf,
 * callgrind with --trace-children=yes) and for a per-process split: a
 * process makes OBJS objects (half instances, half eventfds, each eventfd
 * watched by one instance), then forks FORKS times; each child writes one
 * eventfd, checks that a zero-timeout wait on its instance reports it, and
 * _exits; the parent waits for it.  Prints the mean time fork() took to
 * return in the parent (its prepare, the kernel's fork, its parent
 * handler) and from fork() to waitpid()'s return.
 *
 *   fork_loop kernel|uepoll [OBJS FORKS]
 *
 * docs/benchmarks.md, "Issue 35, item 4", has the split it gave.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "uepoll.h"

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
	int objs = 4000, forks = 100, half, kernel, *ep, *efd;
	long long in_fork = 0, total = 0;
	struct rlimit rl;

	if (argc < 2) {
		fprintf(stderr, "usage: fork_loop kernel|uepoll [OBJS FORKS]\n");
		return 2;
	}
	if (argc == 4) {
		objs = atoi(argv[2]);
		forks = atoi(argv[3]);
	}
	if (objs < 0 || forks <= 0)
		return 2;
	kernel = !strcmp(argv[1], "kernel");
	half = objs / 2;
	/* An instance holds three fds, a ueventfd two. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur < (rlim_t)(5 * half + 64)) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)(5 * half + 64)
				      ? rl.rlim_max
				      : (rlim_t)(5 * half + 64);
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	ep = calloc((size_t)half + 1, sizeof(*ep));
	efd = calloc((size_t)half + 1, sizeof(*efd));
	if (!ep || !efd)
		return 1;
	for (int i = 0; i < half; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };

		ep[i] = kernel ? epoll_create1(EPOLL_CLOEXEC)
			       : uepoll_create1(EPOLL_CLOEXEC);
		efd[i] = kernel ? eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)
				: ueventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (ep[i] < 0 || efd[i] < 0 ||
		    (kernel ? epoll_ctl(ep[i], EPOLL_CTL_ADD, efd[i], &ev)
			    : uepoll_ctl(ep[i], EPOLL_CTL_ADD, efd[i], &ev)) < 0) {
			perror("fork_loop: making the objects");
			return 1;
		}
	}
	for (int f = 0; f < forks; f++) {
		long long t0 = now_ns(), t1;
		pid_t pid = fork();
		int st;

		if (pid < 0) {
			perror("fork_loop: fork");
			return 1;
		}
		if (pid == 0) {
			struct epoll_event ev;
			uint64_t one = 1;
			int ok = 1;

			if (half > 0) {
				int i = f % half;

				ok = (kernel ? write(efd[i], &one, 8)
					     : uepoll_write(efd[i], &one, 8)) == 8 &&
				     (kernel ? epoll_wait(ep[i], &ev, 1, 0)
					     : uepoll_wait(ep[i], &ev, 1, 0)) == 1 &&
				     ev.data.u64 == 7;
			}
			_exit(ok ? 0 : 1);
		}
		t1 = now_ns();
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			fprintf(stderr, "fork_loop: fork %d: the child failed\n", f);
			return 1;
		}
		in_fork += t1 - t0;
		total += now_ns() - t0;
	}
	printf("%s objs=%d forks=%d: fork() returned in the parent after %.1f us, "
	       "waitpid() after %.1f us\n",
	       kernel ? "kernel" : "uepoll", 2 * half, forks,
	       (double)in_fork / 1e3 / forks, (double)total / 1e3 / forks);
	return 0;
}
