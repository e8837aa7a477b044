/* SPDX-License-Identifier: MIT */
/*
 * main.c - uepoll-bench command line.
 *
 *   uepoll-bench list
 *   uepoll-bench run [SCENARIO...] [--quick] [--json FILE] [--report DIR]
 *                    [--reps N] [--set NAME=VALUE]... [--timeout S]
 */
#include "runner.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* The scenario table: adding a scenario is one line here. */
static const struct scenario *const scenarios[] = {
	&sc_herd, &sc_oneshot_mt, &sc_loop, &sc_pingpong, &sc_sockpp, &sc_pubsub,
	&sc_xpubsub, &sc_accept, &sc_minwait, &sc_fork, &sc_nested,
	/* The "real" group: unmodified programs, native vs uepoll-run. */
	&sc_real_nginx, &sc_real_nginx_rate, &sc_real_redis,
	&sc_real_memcached, &sc_real_node, &sc_real_seed004, &sc_real_perf,
};
#define NSCEN (int)(sizeof(scenarios) / sizeof(scenarios[0]))

static void usage(FILE *f)
{
	fputs("usage: uepoll-bench list\n"
	      "       uepoll-bench run [SCENARIO...] [--quick] [--json FILE] "
	      "[--report DIR]\n"
	      "                        [--reps N] [--set NAME=VALUE]... "
	      "[--timeout SECONDS]\n"
	      "                        [--rows PATTERN]...\n"
	      "\n"
	      "Runs each scenario on the kernel (epoll, eventfd, pipes) and on "
	      "uepoll,\n"
	      "interleaved rep by rep; prints one table per scenario (medians, "
	      "[min-max]).\n"
	      "  --quick       small sizes (a few seconds in total; a smoke "
	      "test)\n"
	      "  --json FILE   write machine info and every row as JSON\n"
	      "  --report DIR  write DIR/report.md and one gnuplot PNG per "
	      "scenario\n"
	      "  --reps N      repetitions per row (default: per scenario)\n"
	      "  --rows PAT    only the rows whose \"system variant\" contains "
	      "PAT\n"
	      "                (e.g. --rows 'uepoll efd/oneshot/wake')\n"
	      "  --set K=V     override a scenario parameter (e.g. --set "
	      "W=50)\n"
	      "  --timeout S   watchdog limit per rep (default 120, quick 60)\n"
	      "SCENARIO \"real\" is the group of real-* scenarios: unmodified "
	      "programs\n"
	      "(nginx, redis, memcached, Node.js, perf bench) natively and under "
	      "uepoll-run; a row\n"
	      "whose programs are missing is SKIPPED.\n"
	      "Exit status: 0 all correct, 1 a rep lost/duplicated events or "
	      "hung, 2 usage.\n",
	      f);
}

static void list(void)
{
	for (int i = 0; i < NSCEN; i++) {
		struct params p = { 0 }, q = { 0 };
		int reps, qreps;

		scenarios[i]->size(false, &p, &reps);
		scenarios[i]->size(true, &q, &qreps);
		printf("%-11s %s\n            reproduces: %s; headline: %s\n"
		       "            full:",
		       scenarios[i]->name, scenarios[i]->what,
		       scenarios[i]->proposal,
		       metric_info[scenarios[i]->headline].name);
		for (int k = 0; k < p.n; k++)
			printf(" %s=%ld", p.name[k], p.val[k]);
		printf(" reps=%d; quick:", reps);
		for (int k = 0; k < q.n; k++)
			printf(" %s=%ld", q.name[k], q.val[k]);
		printf(" reps=%d\n", qreps);
	}
}

static const struct scenario *find(const char *name)
{
	for (int i = 0; i < NSCEN; i++)
		if (!strcmp(scenarios[i]->name, name))
			return scenarios[i];
	return NULL;
}

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(int argc, char **argv)
{
	static struct row rows[256];
	const struct scenario *sel[NSCEN];
	struct run_opts o = { 0 };
	const char *json = NULL, *report = NULL;
	char cmdline[1024] = "uepoll-bench";
	struct machine mc;
	int nsel = 0, nrows, nfail;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "list")) {
		list();
		return 0;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "run")) {
		fprintf(stderr, "uepoll-bench: unknown command '%s'\n",
			argv[1]);
		usage(stderr);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		size_t l = strlen(cmdline);

		snprintf(cmdline + l, sizeof(cmdline) - l, " %s", argv[i]);
	}
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--quick")) {
			o.quick = true;
		} else if (!strcmp(a, "--json") && i + 1 < argc) {
			json = argv[++i];
		} else if (!strcmp(a, "--report") && i + 1 < argc) {
			report = argv[++i];
		} else if (!strcmp(a, "--reps") && i + 1 < argc) {
			o.reps = atoi(argv[++i]);
			if (o.reps < 1 || o.reps > MAX_REPS) {
				fprintf(stderr, "uepoll-bench: --reps 1..%d\n",
					MAX_REPS);
				return 2;
			}
		} else if (!strcmp(a, "--rows") && i + 1 < argc) {
			if (o.nrowsel == 16) {
				fprintf(stderr, "uepoll-bench: at most 16 --rows\n");
				return 2;
			}
			o.rowsel[o.nrowsel++] = argv[++i];
		} else if (!strcmp(a, "--timeout") && i + 1 < argc) {
			o.timeout_s = (unsigned)atoi(argv[++i]);
		} else if (!strcmp(a, "--set") && i + 1 < argc) {
			char *eq = strchr(argv[++i], '=');

			if (!eq || o.nover == 16) {
				fprintf(stderr, "uepoll-bench: --set NAME=VALUE\n");
				return 2;
			}
			*eq = 0;
			o.over[o.nover].name = argv[i];
			o.over[o.nover++].val = strtol(eq + 1, NULL, 0);
		} else if (a[0] == '-') {
			fprintf(stderr, "uepoll-bench: unknown option '%s'\n",
				a);
			usage(stderr);
			return 2;
		} else if (!strcmp(a, "real")) {
			/* The group: every real-* scenario. */
			for (int k = 0; k < NSCEN; k++)
				if (!strncmp(scenarios[k]->name, "real-", 5) &&
				    nsel < NSCEN)
					sel[nsel++] = scenarios[k];
		} else {
			const struct scenario *sc = find(a);

			if (!sc) {
				fprintf(stderr,
					"uepoll-bench: no scenario '%s' (see "
					"'uepoll-bench list')\n",
					a);
				return 2;
			}
			if (nsel < NSCEN)
				sel[nsel++] = sc;
		}
	}
	if (!nsel)
		for (int i = 0; i < NSCEN; i++)
			sel[nsel++] = scenarios[i];

	for (int i = 0; i < o.nover; i++) {
		bool known = false;

		for (int k = 0; k < nsel && !known; k++) {
			struct params p = { 0 };
			int reps;

			sel[k]->size(o.quick, &p, &reps);
			for (int j = 0; j < p.n; j++)
				if (!strcmp(p.name[j], o.over[i].name))
					known = true;
		}
		if (!known) {
			fprintf(stderr, "uepoll-bench: --set %s: no selected "
					"scenario has that parameter\n",
				o.over[i].name);
			return 2;
		}
	}
	raise_nofile();
	machine_get(&mc);
	fprintf(stderr, "uepoll-bench: %s suite, %d scenario(s); %s, %s, "
			"%d cpu(s)\n",
		o.quick ? "quick" : "full", nsel, mc.kernel, mc.cpu, mc.nproc);
	nrows = run_suite(sel, nsel, &o, rows, 256, &nfail);

	printf("# uepoll-bench (%s suite) %s\n\nmachine: %s; %s; nproc %d\n\n",
	       o.quick ? "quick" : "full", mc.date, mc.kernel, mc.cpu,
	       mc.nproc);
	for (int i = 0; i < nsel; i++)
		report_table(stdout, sel[i], rows, nrows);
	fflush(stdout);

	if (report && report_dir(report, &mc, sel, nsel, rows, nrows, o.quick,
				 cmdline) == 0)
		fprintf(stderr, "uepoll-bench: wrote %s/report.md\n", report);
	if (json && report_json(json, &mc, rows, nrows, o.quick) == 0)
		fprintf(stderr, "uepoll-bench: wrote %s\n", json);

	if (nfail) {
		fprintf(stderr, "uepoll-bench: %d rep(s) FAILED their "
				"correctness checks:\n",
			nfail);
		for (int i = 0; i < nrows; i++)
			if (rows[i].failed)
				fprintf(stderr, "  %s %s %s\n", rows[i].sc->name,
					rows[i].sys->name, rows[i].c.variant);
		return 1;
	}
	return 0;
}
