/* SPDX-License-Identifier: MIT */
/*
 * ptest.h - the preload tests' harness.  The programs are plain epoll and
 * eventfd programs: they include no uepoll header and link no uepoll, so
 * that they run the same with and without libuepoll-preload.so (the
 * library's own tests/testlib.h includes uepoll.h).
 *
 * P_CHECK records a failure and goes on; p_end() also fails on an fd that
 * was not there at p_begin() (a leak), and returns the exit status: 0 pass,
 * 1 fail.  P_SKIP exits 77.  Output meant to be compared between the runs
 * with and without the preload goes to stdout; diagnostics to stderr.
 */
#ifndef UEPOLL_PTEST_H
#define UEPOLL_PTEST_H

#include <signal.h>
#include <unistd.h>

/* The library's tests' checks (they hold no uepoll): CHECK, REQUIRE,
 * T_SKIP, t_count_fds, counting into t_failures. */
static int t_failures;
#include "../../tests/checks.h"

static int p_fds0;

/* A hang fails the test with its name instead of a ctest timeout. */
static inline void p_begin(unsigned int watchdog_secs)
{
	p_fds0 = t_count_fds();
	alarm(watchdog_secs);
}

static inline int p_end(void)
{
	int n = t_count_fds();

	if (n != p_fds0) {
		fprintf(stderr, "fd leak: %d fds at start, %d at end\n", p_fds0,
			n);
		t_failures++;
	}
	if (t_failures)
		fprintf(stderr, "%d check(s) failed\n", t_failures);
	return t_failures ? 1 : 0;
}

/* Aliases, not wrappers: a macro argument would be expanded before
 * CHECK's #cond prints it. */
#define P_CHECK CHECK
#define P_REQUIRE REQUIRE
#define P_SKIP T_SKIP

#endif
