/* SPDX-License-Identifier: MIT */
/*
 * real-node - Node.js worker_threads messaging (libuv: each event loop's
 * async handle is an eventfd, written on every postMessage that finds the
 * other loop idle): preload/bench/node_workers.js keeps `window` messages
 * in flight between the main thread and each of `workers` workers for
 * duration_ms.  window=1 is a ping-pong (every message wakes a sleeping
 * loop), window=64 a stream.  Natively, under uepoll-run with no option
 * (its default since issue 35: eventfds and instances without exact
 * readiness until something polls them, NOPOLL: no system call per message
 * while the other loop is awake, a futex sleep for a loop whose instance
 * holds only eventfds), with eventfd coalescing (--coalesce 50: a sleeper
 * is woken at most once per 50 us however many writes land), and with
 * --exact (every fd exact from its creation, the default before).
 * Metrics: ops_per_s = messages answered per second, cpu_us_per_op and
 * ctx_per_op of the whole Node.js process, as the script measures them
 * (process.cpuUsage, process.resourceUsage) around the exchange.
 * Correctness, every rep: every message posted is answered and the sum of
 * the answers is right (the script prints "ok"), and node exits 0.
 */
#include "real.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef NODE_BENCH_JS
#define NODE_BENCH_JS "preload/bench/node_workers.js"
#endif

static const char *const nd_progs[] = { "node", NULL };

static void nd_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "workers", 2);
	params_set(p, "duration_ms", quick ? 300 : 3000);
	*reps = quick ? 1 : 5;
}

static int nd_cases(struct bcase *out, int max)
{
	static const char *const shape[] = { "window=1", "window=64" };
	int n = 0;

	for (int i = 0; i < 2 && n + 4 <= max; i++) {
		char v[48];

		real_case(&out[n++], shape[i], "", REAL_NATIVE, nd_progs);
		real_case(&out[n++], shape[i], "", REAL_OFF, nd_progs);
		snprintf(v, sizeof(v), "%s coalesce" REAL_COALESCE_SPEC,
			 shape[i]);
		real_case(&out[n++], v, shape[i], REAL_COALESCE, nd_progs);
		snprintf(v, sizeof(v), "%s exact", shape[i]);
		real_case(&out[n++], v, shape[i], REAL_EXACT, nd_progs);
	}
	/* The script is the bench's own (preload/bench/): not a program. */
	for (int i = 0; i < n; i++)
		if (!out[i].skip[0] && access(NODE_BENCH_JS, R_OK) != 0)
			snprintf(out[i].skip, sizeof(out[i].skip),
				 "no %s", NODE_BENCH_JS);
	return n;
}

static void nd_run(const struct sys *s, const struct bcase *c,
		   const struct params *p, struct metrics *m)
{
	static char out[16384];
	char dir[256], path[4200], w_s[16], win_s[16], d_s[32];
	unsigned long long msgs = 0, cpu = 0, ctx = 0;
	double secs = 0;
	const char *l;
	int st;
	pid_t pid;

	(void)s;
	real_tmpdir(dir, sizeof(dir), "node");
	snprintf(path, sizeof(path), "%s/out.log", dir);
	snprintf(w_s, sizeof(w_s), "%ld", params_get(p, "workers"));
	snprintf(win_s, sizeof(win_s), "%d",
		 !strncmp(c->variant, "window=64", 9) ? 64 : 1);
	snprintf(d_s, sizeof(d_s), "%ld", params_get(p, "duration_ms"));
	{
		const char *argv[] = { "node", NODE_BENCH_JS, w_s, win_s, d_s,
				       NULL };

		pid = real_start(c, argv, path);
	}
	/* It ends by itself; the bound is generous. */
	st = real_stop(pid, 0, (int)params_get(p, "duration_ms") + 30000);
	real_cleanup();
	{
		char *text = real_slurp_file(path, NULL);

		snprintf(out, sizeof(out), "%s", text ? text : "");
		free(text);
	}
	real_rmtree(dir);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail(m, "node ended with status 0x%x: %.160s", st, out);
	for (l = out; l && strncmp(l, "ok ", 3) && strncmp(l, "bad ", 4);
	     l = text_next_line(l))
		;
	if (!l || strncmp(l, "ok ", 3) ||
	    sscanf(l, "ok msgs=%llu secs=%lf cpu_us=%llu ctx=%llu", &msgs,
		   &secs, &cpu, &ctx) != 4 || !msgs || secs <= 0) {
		fail(m, "node_workers.js: %.160s", l ? l : out);
		return;
	}
	m->v[M_EVENTS] = (double)msgs;
	m->v[M_OPS_PER_S] = (double)msgs / secs;
	m->v[M_CPU_US_PER_OP] = (double)cpu / (double)msgs;
	m->v[M_CTX_PER_OP] = (double)ctx / (double)msgs;
	m->v[M_CTX] = (double)ctx;
}

const struct scenario sc_real_node = {
	.name = "real-node",
	.proposal = "real programs (issue 22): Node.js worker_threads",
	.what = "node: main thread <-> 2 worker_threads, window messages in "
		"flight each; op = one message answered",
	.headline = M_OPS_PER_S,
	.size = nd_size,
	.cases = nd_cases,
	.run = nd_run,
};
