/* SPDX-License-Identifier: MIT */
/*
 * real-seed004 - proposal 004's own program (delayed eventfd wakeup, Yang
 * 2023): a publisher process writes an eventfd in a loop, its forked
 * subscriber poll()s and reads it.  The program is cut from the post
 * (PRELOAD_SEEDS/004_*.txt) and compiled at each rep, never copied into
 * this tree; it runs natively, under uepoll-run, and under uepoll-run
 * --coalesce 5000 (the proposal's 5 ms).  It loops for ever: each rep
 * samples /proc for duration_ms after a short warm-up, then kills it.
 * Metrics, as the proposal measured them (mpstat per CPU): cpu_pct_consumer
 * = the subscriber process (found by its prctl name "subscribe"),
 * cpu_pct_producer = the publisher process (all its threads);
 * wakeups_per_s = the subscriber's context switches per second.  The
 * program prints nothing unless a call fails ("XXX: ..."): a rep fails if
 * it does, or if the program ends by itself.  Its writes are not counted
 * (it does not say): sc_xpubsub measures the same pair with counts.
 */
#include "real.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SEEDS_DIR
#define SEEDS_DIR "../shared/seeds"
#endif
#ifndef SEED_CC
#define SEED_CC "cc"
#endif

/* The post, or "" (the rows are skipped). */
static const char *s4_post(void)
{
	static char path[4096];
	const char *dir = getenv("UEPOLL_SEEDS");
	DIR *d;
	struct dirent *e;

	if (path[0])
		return path;
	d = opendir(dir && *dir ? dir : SEEDS_DIR);
	if (!d)
		return path;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "004_", 4) &&
		    strstr(e->d_name, ".txt")) {
			snprintf(path, sizeof(path), "%s/%s",
				 dir && *dir ? dir : SEEDS_DIR, e->d_name);
			break;
		}
	closedir(d);
	return path;
}

static void s4_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "duration_ms", quick ? 300 : 2000);
	*reps = quick ? 1 : 3;
}

static int s4_cases(struct bcase *out, int max)
{
	static const char *const progs[] = { SEED_CC, "awk", NULL };
	int n = 0;

	if (max < 3)
		return 0;
	real_case(&out[n++], "program-004", "", REAL_NATIVE, progs);
	real_case(&out[n++], "program-004", "", REAL_OFF, progs);
	real_case(&out[n++], "program-004 coalesce5000", "program-004",
		  REAL_COALESCE_5MS, progs);
	for (int i = 0; i < n; i++)
		if (!out[i].skip[0] && !s4_post()[0])
			snprintf(out[i].skip, sizeof(out[i].skip),
				 "no 004_*.txt in %s ($UEPOLL_SEEDS)",
				 SEEDS_DIR);
	return n;
}

/* The child of pid named "subscribe", or 0. */
static pid_t s4_subscriber(pid_t pid)
{
	struct real_usage u;

	real_usage(pid, &u);
	for (int i = 0; i < u.nchild; i++) {
		char path[64], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)u.child[i]);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		if (!strcmp(comm, "subscribe\n"))
			return u.child[i];
	}
	return 0;
}

static void s4_run(const struct sys *s, const struct bcase *c,
		   const struct params *p, struct metrics *m)
{
	/* Cut as preload/tests/seed_test.sh does; stdout line-buffered from
	 * outside, so that an error line is not lost in the buffer. */
	static const char script[] =
		"awk '/^#include <assert.h>/ { on = 1 } /^# taskset/ { on = 0 } "
		"on' \"$1\" >\"$2/p.c\" && "
		"printf '#include <stdio.h>\\nstatic void __attribute__((constructor)) "
		"lb(void) { setvbuf(stdout, NULL, _IOLBF, 0); }\\n' >\"$2/lb.h\" && "
		"\"$3\" -w -O2 -include \"$2/lb.h\" -o \"$2/p\" \"$2/p.c\"";
	static char out[4096];
	char dir[256], prog[300], log[300];
	struct real_usage a_all, b_all, a_sub, b_sub;
	uint64_t t0, t1;
	double wall;
	pid_t pid, sub = 0;
	int st;

	(void)s;
	real_tmpdir(dir, sizeof(dir), "seed004");
	{
		const char *argv[] = { "sh", "-c", script, "sh", s4_post(),
				       dir, SEED_CC, NULL };

		st = real_client(argv, out, sizeof(out), 60);
		if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			die("program 004 does not compile: %.200s", out);
		/* The compiler's group is gone: the program starts a new one
		 * (its subscriber joins it, and goes with it). */
		real_cleanup();
	}
	snprintf(prog, sizeof(prog), "%s/p", dir);
	snprintf(log, sizeof(log), "%s/out.log", dir);
	{
		const char *argv[] = { prog, NULL };

		pid = real_start(c, argv, log);
	}
	for (t0 = now_ns(); !sub && now_ns() - t0 < 3000000000ull;) {
		sleep_us(10000);
		if (waitpid(pid, &st, WNOHANG) == pid)
			die("program 004 ended at its start (status 0x%x)", st);
		sub = s4_subscriber(pid);
	}
	if (!sub)
		die("program 004: no process named \"subscribe\"");
	sleep_us(200000); /* warm-up */
	real_usage(pid, &a_all);
	real_usage(sub, &a_sub);
	t0 = now_ns();
	sleep_us(params_get(p, "duration_ms") * 1000);
	real_usage(pid, &b_all);
	real_usage(sub, &b_sub);
	t1 = now_ns();
	if (waitpid(pid, &st, WNOHANG) == pid)
		fail(m, "program 004 ended by itself (status 0x%x)", st);
	else
		real_stop(pid, SIGKILL, 2000);
	real_cleanup();
	{
		char *text = real_slurp_file(log, NULL);
		const char *x = text ? strstr(text, "XXX:") : NULL;

		if (x)
			fail(m, "program 004 reported an error: %.120s", x);
		free(text);
	}
	real_rmtree(dir);
	wall = (double)(t1 - t0) / 1e9;
	m->v[M_WALL_S] = wall;
	m->v[M_CPU_CONS] = 100.0 * (b_sub.cpu_s - a_sub.cpu_s) / wall;
	m->v[M_CPU_PROD] = 100.0 *
			   ((b_all.cpu_s - b_sub.cpu_s) - (a_all.cpu_s - a_sub.cpu_s)) /
			   wall;
	m->v[M_WAKEUPS_PER_S] = (b_sub.ctx - a_sub.ctx) / wall;
}

const struct scenario sc_real_seed004 = {
	.name = "real-seed004",
	.proposal = "proposal 004's own program (Yang 2023): publisher and "
		    "forked subscriber on one eventfd",
	.what = "the program from the post, natively, under uepoll-run, and "
		"with --coalesce 5000; sampled for duration_ms",
	.headline = M_CPU_CONS,
	.size = s4_size,
	.cases = s4_cases,
	.run = s4_run,
};
