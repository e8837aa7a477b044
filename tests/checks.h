/*
 * checks.h - the checks of a test program, with no uepoll in them: the
 * library's tests (testlib.h) and the preload tests (preload/tests/ptest.h,
 * plain epoll programs that include no uepoll header) share them, so that a
 * failure reads the same in both.  The includer declares the failure count,
 * int t_failures.
 *
 * CHECK() records a failure with file:line and keeps going; REQUIRE() stops
 * the program; T_SKIP(reason) exits 77, ctest's skip code.
 */
#ifndef UEPOLL_TESTS_CHECKS_H
#define UEPOLL_TESTS_CHECKS_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fds the process holds (for the leak check at the end). */
static inline int t_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	struct dirent *e;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the DIR's own fd */
}

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: CHECK failed: %s (errno=%d %s)\n", \
				__FILE__, __LINE__, #cond, errno,            \
				strerror(errno));                            \
			t_failures++;                                        \
		}                                                            \
	} while (0)

#define REQUIRE(cond)                                                        \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: REQUIRE failed: %s (errno=%d %s)\n", \
				__FILE__, __LINE__, #cond, errno,            \
				strerror(errno));                            \
			exit(1);                                             \
		}                                                            \
	} while (0)

#define CHECK_EQ(a, b)                                                       \
	do {                                                                 \
		long long _a = (long long)(a), _b = (long long)(b);          \
		if (_a != _b) {                                              \
			fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", \
				__FILE__, __LINE__, #a, _a, #b, _b);         \
			t_failures++;                                        \
		}                                                            \
	} while (0)

/* Call returns -1 with errno e. */
#define CHECK_ERR(call, e)                                                   \
	do {                                                                 \
		errno = 0;                                                   \
		long long _r = (long long)(call);                            \
		int _e = errno;                                              \
		if (_r != -1 || _e != (e)) {                                 \
			fprintf(stderr, "%s:%d: %s: got %lld errno %d (%s), want -1 errno %d (%s)\n", \
				__FILE__, __LINE__, #call, _r, _e, strerror(_e), \
				(e), strerror(e));                           \
			t_failures++;                                        \
		}                                                            \
	} while (0)

#define T_SKIP(reason)                                                       \
	do {                                                                 \
		fprintf(stderr, "SKIP: %s\n", reason);                       \
		exit(77);                                                    \
	} while (0)

#endif
