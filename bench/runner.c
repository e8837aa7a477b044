/* SPDX-License-Identifier: MIT */
/*
 * runner.c - runs every rep of every row in a forked child.
 *
 * Order: for each scenario, for each rep, every row (variant x system) in
 * turn, kernel and uepoll rows of a variant next to each other; the order
 * flips on every other rep.  So machine noise hits all systems alike.  The child arms a watchdog, runs the
 * row once, and sends its metrics back through a pipe; the exit status says
 * whether the rep passed its correctness checks.
 */
#include "runner.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void child(int wfd, const struct scenario *sc, const struct sys *s,
		  const struct bcase *c, const struct params *p,
		  unsigned timeout_s)
{
	static char what[160];
	struct metrics m;
	const char *b;
	size_t left;

	snprintf(what, sizeof(what), "%s %s %s", sc->name, s->name,
		 c->variant);
	signal(SIGPIPE, SIG_IGN);
	result_fd = wfd;
	watchdog_arm(timeout_s, what);
	metrics_init(&m);
	sc->run(s, c, p, &m);
	alarm(0);
	result_fd = -1;
	b = (const char *)&m;
	left = sizeof(m);
	while (left) {
		ssize_t w = write(wfd, b, left);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(2);
		b += w;
		left -= (size_t)w;
	}
	_exit(m.failed ? 1 : 0);
}

/* Returns 0 on a passed rep, else -1 with the reason in m->msg. */
static int run_rep(const struct scenario *sc, const struct sys *s,
		   const struct bcase *c, const struct params *p,
		   unsigned timeout_s, struct metrics *m)
{
	int pfd[2], st;
	pid_t pid;
	size_t got = 0;
	char *b = (char *)m;

	metrics_init(m);
	if (pipe(pfd) < 0)
		die("pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(pfd[0]);
		child(pfd[1], sc, s, c, p, timeout_s);
	}
	close(pfd[1]);
	while (got < sizeof(*m)) {
		ssize_t r = read(pfd[0], b + got, sizeof(*m) - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(pfd[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid: %s", strerror(errno));
	if (got != sizeof(*m)) {
		metrics_init(m);
		m->failed = 1;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
			snprintf(m->msg, sizeof(m->msg),
				 "hang: the watchdog aborted the rep after "
				 "%u s", timeout_s);
		else if (WIFEXITED(st))
			snprintf(m->msg, sizeof(m->msg),
				 "the rep exited with status %d",
				 WEXITSTATUS(st));
		else if (WIFSIGNALED(st))
			snprintf(m->msg, sizeof(m->msg),
				 "the rep was killed by signal %d (%s)",
				 WTERMSIG(st), strsignal(WTERMSIG(st)));
		return -1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || m->failed) {
		if (!m->failed) {
			m->failed = 1;
			snprintf(m->msg, sizeof(m->msg),
				 "the rep ended with status 0x%x", st);
		}
		return -1;
	}
	return 0;
}

static void fmt_metric(char *buf, size_t n, enum metric h, double v)
{
	if (isnan(v))
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.*f", metric_info[h].decimals, v);
}

/* --rows: "system variant" contains one of the patterns (or none given). */
static bool run__row_selected(const struct run_opts *o, const struct sys *s,
			      const struct bcase *c)
{
	char name[160];

	if (!o->nrowsel)
		return true;
	snprintf(name, sizeof(name), "%.31s %.127s", s->name, c->variant);
	for (int i = 0; i < o->nrowsel; i++)
		if (strstr(name, o->rowsel[i]))
			return true;
	return false;
}

int run_suite(const struct scenario *const *scs, int nsc,
	      const struct run_opts *o, struct row *rows, int max,
	      int *nfail)
{
	int nrows = 0;

	*nfail = 0;
	for (int si = 0; si < nsc; si++) {
		const struct scenario *sc = scs[si];
		struct bcase cases[MAX_CASES];
		struct params p = { 0 };
		int reps = 1, ncases, first = nrows;
		unsigned timeout_s;

		sc->size(o->quick, &p, &reps);
		for (int i = 0; i < o->nover; i++)
			for (int k = 0; k < p.n; k++)
				if (!strcmp(p.name[k], o->over[i].name))
					p.val[k] = o->over[i].val;
		if (o->reps > 0)
			reps = o->reps;
		if (reps > MAX_REPS)
			reps = MAX_REPS;
		timeout_s = o->timeout_s ? o->timeout_s : o->quick ? 60 : 120;
		memset(cases, 0, sizeof(cases));
		ncases = sc->cases(cases, MAX_CASES);

		/* One row per (variant, system). */
		for (int ci = 0; ci < ncases; ci++) {
			for (int sy = 0; sy < SYS_COUNT; sy++) {
				struct row *r;

				if (!(cases[ci].systems & SYSM(sy)) ||
				    !run__row_selected(o, sys_get((enum sys_id)sy),
						       &cases[ci]))
					continue;
				if (nrows == max)
					die("too many rows");
				r = &rows[nrows++];
				memset(r, 0, sizeof(*r));
				r->sc = sc;
				r->sys = sys_get((enum sys_id)sy);
				r->c = cases[ci];
				r->p = p;
				r->skipped = cases[ci].skip[0] != 0;
				if (r->skipped)
					fprintf(stderr,
						"uepoll-bench: %s %s %s: SKIPPED: "
						"%s\n",
						sc->name, r->sys->name,
						r->c.variant, r->c.skip);
			}
		}

		/* Rep by rep, every row of the scenario in turn; the order
		 * flips on every other rep (kernel, uepoll / uepoll, kernel). */
		for (int rep = 0; rep < reps; rep++) {
			int nr = nrows - first;

			for (int k = 0; k < nr; k++) {
				struct row *r = &rows[first +
						      (rep % 2 ? nr - 1 - k : k)];
				struct metrics m;
				uint64_t t0 = now_ns();
				char hv[32];
				int ok;

				if (r->skipped)
					continue;
				fprintf(stderr,
					"[%s rep %d/%d, row %d/%d] %-26s %-7s ...",
					sc->name, rep + 1, reps, k + 1, nr,
					r->c.variant, r->sys->name);
				fflush(stderr);
				ok = run_rep(sc, r->sys, &r->c, &r->p, timeout_s,
					     &m) == 0;
				for (int mm = 0; mm < M_COUNT; mm++)
					r->rep[r->nreps][mm] = m.v[mm];
				r->nreps++;
				fmt_metric(hv, sizeof(hv), sc->headline,
					   m.v[sc->headline]);
				if (ok) {
					fprintf(stderr, " %s=%s (%.2f s)\n",
						metric_info[sc->headline].name,
						hv,
						(double)(now_ns() - t0) / 1e9);
				} else {
					r->failed = 1;
					(*nfail)++;
					fprintf(stderr,
						" FAILED\nuepoll-bench: FAIL: %s %s "
						"%s rep %d: %s\n",
						sc->name, r->sys->name,
						r->c.variant, rep + 1, m.msg);
				}
			}
		}
		for (int i = first; i < nrows; i++)
			row_summarize(&rows[i]);
	}
	return nrows;
}
