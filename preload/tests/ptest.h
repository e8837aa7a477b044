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

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int p_failures;
static int p_fds0;

static inline int p_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

/* A hang fails the test with its name instead of a ctest timeout. */
static inline void p_begin(unsigned int watchdog_secs)
{
	p_fds0 = p_count_fds();
	alarm(watchdog_secs);
}

static inline int p_end(void)
{
	int n = p_count_fds();

	if (n != p_fds0) {
		fprintf(stderr, "fd leak: %d fds at start, %d at end\n", p_fds0,
			n);
		p_failures++;
	}
	if (p_failures)
		fprintf(stderr, "%d check(s) failed\n", p_failures);
	return p_failures ? 1 : 0;
}

#define P_CHECK(cond)                                                        \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: CHECK failed: %s (errno=%d %s)\n", \
				__FILE__, __LINE__, #cond, errno,            \
				strerror(errno));                            \
			p_failures++;                                        \
		}                                                            \
	} while (0)

#define P_REQUIRE(cond)                                                      \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: REQUIRE failed: %s (errno=%d %s)\n", \
				__FILE__, __LINE__, #cond, errno,            \
				strerror(errno));                            \
			exit(1);                                             \
		}                                                            \
	} while (0)

#define P_SKIP(reason)                                                       \
	do {                                                                 \
		fprintf(stderr, "SKIP: %s\n", reason);                       \
		exit(77);                                                    \
	} while (0)

#endif
