/* SPDX-License-Identifier: MIT */
/*
 * real-perf - the kernel's own epoll benchmarks, `perf bench epoll wait`
 * and `perf bench epoll ctl` (linux-perf), natively, under uepoll-run with
 * no option (NOPOLL, the default since issue 35) and with --exact (issue
 * 35: "ctl at kernel speed or better", and wait as its headline).  Both are unmodified perf; under the
 * preload every eventfd they make is a ueventfd and their one epoll
 * instance a uepoll instance.
 *
 *   wait: `threads` waiter threads share one instance (no -m) holding 64
 *         eventfds each (perf's default nfds), level-triggered; perf's
 *         writer thread writes them in turn, each waiter reads what it is
 *         given.  op = one event a waiter took and read.
 *   ctl:  `threads` threads ADD, MOD (EPOLLIN to EPOLLOUT: an eventfd is
 *         writable, so the MOD finds it ready) and DEL each of their 64
 *         eventfds in turn on one shared instance, then nanosleep 250 ns
 *         (perf's loop; timer slack makes that ~50 us).  Nobody waits on
 *         the instance.  op = one ADD, MOD or DEL that succeeded.
 *
 * Both run -r runtime_s seconds; ops/s is perf's own count over that time
 * (wait: the sum of its per-thread ops/sec; ctl: the sum of its per-thread
 * counts over the runtime).  cpu_us_per_op and ctx_per_op are perf's whole
 * process (getrusage of the reaped child).  Correctness, every rep: perf
 * exits 0, prints a line per thread, and (ctl) every thread's ADD, MOD and
 * DEL counts are equal: with one thread per fd set and no -R, an op that
 * failed would leave them unequal.
 */
#include "real.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const pf_progs[] = { "perf", NULL };

static void pf_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "threads", 2);
	params_set(p, "runtime_s", quick ? 1 : 2);
	*reps = quick ? 1 : 5;
}

static int pf_cases(struct bcase *out, int max)
{
	static const char *const bench[] = { "wait", "ctl" };
	int n = 0;

	for (int i = 0; i < 2 && n + 3 <= max; i++) {
		char v[48];

		real_case(&out[n++], bench[i], "", REAL_NATIVE, pf_progs);
		real_case(&out[n++], bench[i], "", REAL_OFF, pf_progs);
		snprintf(v, sizeof(v), "%s exact", bench[i]);
		real_case(&out[n++], v, bench[i], REAL_EXACT, pf_progs);
	}
	return n;
}

static double pf_cpu_s(const struct rusage *r)
{
	return (double)r->ru_utime.tv_sec + (double)r->ru_utime.tv_usec / 1e6 +
	       (double)r->ru_stime.tv_sec + (double)r->ru_stime.tv_usec / 1e6;
}

/* perf's per-thread lines: "[thread  N] fdmap: ... [ X ops/sec ]" (wait),
 * "[thread  N] fdmap: ... [ add: A ops; mod: M ops; del: D ops ]" (ctl).
 * Sums them into *ops; the number of lines, or -1 on a bad one (ctl counts
 * unequal: an op failed). */
static int pf_parse(const char *out, bool ctl, double *ops, char *why,
		    size_t n)
{
	int lines = 0;

	*ops = 0;
	for (const char *l = out; l && *l; l = text_next_line(l)) {
		const char *b;

		if (strncmp(l, "[thread", 7) || !(b = strstr(l, "] fdmap:")) ||
		    !(b = strchr(b + 1, '[')))
			continue;
		if (ctl) {
			unsigned long long a, m, d;

			if (sscanf(b, "[ add: %llu ops; mod: %llu ops; del: %llu",
				   &a, &m, &d) != 3 || a != m || m != d || !a) {
				snprintf(why, n, "perf: %.120s", l);
				return -1;
			}
			*ops += (double)(a + m + d);
		} else {
			unsigned long long x;

			if (sscanf(b, "[ %llu ops/sec", &x) != 1) {
				snprintf(why, n, "perf: %.120s", l);
				return -1;
			}
			*ops += (double)x;
		}
		lines++;
	}
	return lines;
}

static void pf_run(const struct sys *s, const struct bcase *c,
		   const struct params *p, struct metrics *m)
{
	static char out[16384];
	char dir[256], path[4200], t_s[24], r_s[24], why[200] = "";
	bool ctl = !strncmp(c->variant, "ctl", 3);
	long threads = params_get(p, "threads"),
	     runtime = params_get(p, "runtime_s");
	struct rusage r0, r1;
	double ops = 0, cpu;
	int st, lines;
	pid_t pid;

	(void)s;
	if (threads < 1 || runtime < 1)
		die("real-perf: bad parameters");
	real_tmpdir(dir, sizeof(dir), "perf");
	snprintf(path, sizeof(path), "%s/out.log", dir);
	snprintf(t_s, sizeof(t_s), "%ld", threads);
	snprintf(r_s, sizeof(r_s), "%ld", runtime);
	getrusage(RUSAGE_CHILDREN, &r0);
	{
		const char *argv[] = { "perf", "bench", "epoll",
				       ctl ? "ctl" : "wait", "-r", r_s,
				       "-t", t_s, NULL };

		pid = real_start(c, argv, path);
	}
	/* It ends by itself after runtime_s; the bound is generous. */
	st = real_stop(pid, 0, (int)runtime * 1000 + 30000);
	getrusage(RUSAGE_CHILDREN, &r1);
	real_cleanup();
	{
		char *text = real_slurp_file(path, NULL);

		snprintf(out, sizeof(out), "%s", text ? text : "");
		free(text);
	}
	real_rmtree(dir);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fail(m, "perf ended with status 0x%x: %.160s", st, out);
		return;
	}
	lines = pf_parse(out, ctl, &ops, why, sizeof(why));
	if (lines < 0 || lines != threads || ops <= 0) {
		fail(m, "perf: %d thread lines of %ld: %.160s", lines, threads,
		     why[0] ? why : out);
		return;
	}
	/* ctl prints counts over the runtime, wait a rate already. */
	m->v[M_OPS_PER_S] = ctl ? ops / (double)runtime : ops;
	m->v[M_EVENTS] = m->v[M_OPS_PER_S] * (double)runtime;
	cpu = pf_cpu_s(&r1) - pf_cpu_s(&r0);
	m->v[M_CPU_US_PER_OP] = cpu * 1e6 / m->v[M_EVENTS];
	m->v[M_CTX] = (double)(r1.ru_nvcsw + r1.ru_nivcsw - r0.ru_nvcsw -
			       r0.ru_nivcsw);
	m->v[M_CTX_PER_OP] = m->v[M_CTX] / m->v[M_EVENTS];
}

const struct scenario sc_real_perf = {
	.name = "real-perf",
	.proposal = "real programs (issue 35): perf bench epoll wait and ctl",
	.what = "perf bench epoll wait|ctl -t 2 -r runtime_s; op = an event "
		"taken (wait) or an ADD, MOD or DEL (ctl)",
	.headline = M_OPS_PER_S,
	.size = pf_size,
	.cases = pf_cases,
	.run = pf_run,
};
