/* SPDX-License-Identifier: MIT */
#ifndef UEPOLL_BENCH_RUNNER_H
#define UEPOLL_BENCH_RUNNER_H

#include "bench.h"

struct override {
	const char *name;
	long val;
};

struct run_opts {
	bool quick;
	int reps;       /* 0: the scenario's default */
	unsigned timeout_s; /* 0: default watchdog limit per rep */
	int nover;
	struct override over[16];
	/* Only rows whose "system variant" contains one of these (none: all). */
	int nrowsel;
	const char *rowsel[16];
};

/*
 * Runs the scenarios, rows interleaved per rep; appends to rows (capacity
 * max).  Returns the number of rows; *nfail gets the failed reps.
 */
int run_suite(const struct scenario *const *scs, int nsc,
	      const struct run_opts *o, struct row *rows, int max,
	      int *nfail);

#endif
