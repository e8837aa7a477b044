/* SPDX-License-Identifier: MIT */
/*
 * fork - what a fork() costs a process that holds epolls and eventfds.
 *
 * uepoll's fork handlers take and drop every lock of every live object
 * (obj.c, FORK), so that the child may use uepoll whatever the parent's
 * other threads were doing, and repair each object in the child; the
 * kernel's objects cost the fork nothing beyond their fd table entries.
 * A process holds `objs` objects (half instances, half eventfds, each
 * eventfd watched by one instance), then forks `forks` times; each child
 * writes one eventfd and checks that a zero-timeout wait on its instance
 * reports it (the objects work in the child), then exits.  Headline: wall
 * time per fork, from the fork() call to the parent's waitpid() return.
 */
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uepoll.h>

static void fork_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "forks", quick ? 20 : 300);
	*reps = quick ? 1 : 5;
}

static const unsigned fork_objs[] = { 0, 100, 1000, 4000 };

static int fork_cases(struct bcase *out, int max)
{
	int n = 0;

	for (size_t i = 0; i < sizeof(fork_objs) / sizeof(fork_objs[0]) &&
			   n < max;
	     i++, n++) {
		memset(&out[n], 0, sizeof(out[n]));
		snprintf(out[n].variant, sizeof(out[n].variant), "objs=%u",
			 fork_objs[i]);
		out[n].src = SRC_EFD;
		out[n].flags = fork_objs[i];
		out[n].systems = SYSM_KU;
	}
	return n;
}

static void fork_run(const struct sys *s, const struct bcase *c,
		     const struct params *p, struct metrics *m)
{
	int half = (int)c->flags / 2, forks = (int)params_get(p, "forks");
	int *ep = calloc((size_t)half + 1, sizeof(int));
	int *efd = calloc((size_t)half + 1, sizeof(int));
	struct hist h;
	struct meas me;
	struct rlimit rl;

	if (!ep || !efd)
		die("out of memory");
	/* An instance holds up to three fds, a ueventfd two. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur < (rlim_t)(5 * half + 64)) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)(5 * half + 64)
				      ? rl.rlim_max
				      : (rlim_t)(5 * half + 64);
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (int i = 0; i < half; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };

		ep[i] = sys_create(s, c);
		efd[i] = s->efd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (ep[i] < 0 || efd[i] < 0)
			die("%s: %d objects: %s", s->name, 2 * i, strerror(errno));
		if (s->ctl(ep[i], EPOLL_CTL_ADD, efd[i], &ev) < 0)
			die("%s: ctl: %s", s->name, strerror(errno));
	}
	memset(&h, 0, sizeof(h));
	wd_target = (uint64_t)forks;
	meas_begin(&me);
	for (int f = 0; f < forks && !m->failed; f++) {
		uint64_t t0 = now_ns();
		pid_t pid = fork();
		int st;

		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0) {
			struct epoll_event ev;
			uint64_t one = 1;
			int ok = 1;

			if (half > 0) {
				int i = f % half;

				ok = s->write(efd[i], &one, sizeof(one)) == 8 &&
				     s->wait(ep[i], &ev, 1, 0) == 1 &&
				     ev.data.u64 == 7;
			}
			_exit(ok ? 0 : 1);
		}
		if (waitpid(pid, &st, 0) != pid)
			die("waitpid: %s", strerror(errno));
		hist_add(&h, now_ns() - t0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fail(m, "fork %d: the child's objects did not work "
				"(status %#x)", f, st);
		atomic_fetch_add_explicit(&wd_done, 1, memory_order_relaxed);
	}
	meas_end(&me, m);
	m->v[M_EVENTS] = (double)forks;
	m->v[M_NS_PER_EVENT] = m->v[M_WALL_S] * 1e9 / (double)forks;
	m->v[M_LAT_P50] = hist_pct_us(&h, 50);
	m->v[M_LAT_P99] = hist_pct_us(&h, 99);
	for (int i = 0; i < half; i++) {
		s->close(efd[i]);
		s->close(ep[i]);
	}
	free(ep);
	free(efd);
}

const struct scenario sc_fork = {
	.name = "fork",
	.proposal = "fork safety (issue 15): the cost of the fork handlers",
	.what = "a process with objs epolls+eventfds forks; each child checks "
		"one and exits",
	.headline = M_LAT_P50,
	.size = fork_size,
	.cases = fork_cases,
	.run = fork_run,
};
