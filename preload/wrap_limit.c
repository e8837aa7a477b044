/* SPDX-License-Identifier: MIT */
/*
 * wrap_limit.c - getrlimit, setrlimit, prlimit (and their 64 names).
 *
 * To place a private fd above the program's soft RLIMIT_NOFILE, the
 * library raises the limit for one fcntl and puts it back (RLIMIT in
 * src/fdzone.c).  The program's own calls on the limit wait for that
 * window to close, so that they neither read the raised value nor have a
 * new limit of their own overwritten by the put-back.  Other resources,
 * other processes' limits: libc's call as it is.
 */
#include <sys/resource.h>
#include <unistd.h>

#include "fdzone.h"

#include "preload.h"

/* Does this call touch this process's RLIMIT_NOFILE? */
static bool limit__ours(pid_t pid, int res)
{
	return preload_ready() && res == RLIMIT_NOFILE && (pid == 0 ||
							  pid == getpid());
}

#define LIMIT__CALL(cond, call)                                              \
	do {                                                                 \
		bool held_ = (cond) && fdzone_rlimit_begin();                \
		int r_ = (call);                                             \
		if (held_) {                                                 \
			int e_ = errno;                                      \
			fdzone_rlimit_end();                                 \
			errno = e_;                                          \
		}                                                            \
		return r_;                                                   \
	} while (0)

PRELOAD_WRAP int getrlimit(__rlimit_resource_t res, struct rlimit *rl)
{
	LIMIT__CALL(limit__ours(0, res), REAL(getrlimit)(res, rl));
}

PRELOAD_WRAP int setrlimit(__rlimit_resource_t res, const struct rlimit *rl)
{
	LIMIT__CALL(limit__ours(0, res), REAL(setrlimit)(res, rl));
}

PRELOAD_WRAP int prlimit(pid_t pid, __rlimit_resource_t res, const struct rlimit *nl,
			 struct rlimit *ol)
{
	LIMIT__CALL(limit__ours(pid, res), REAL(prlimit)(pid, res, nl, ol));
}

PRELOAD_WRAP int getrlimit64(__rlimit_resource_t res, struct rlimit64 *rl)
{
	LIMIT__CALL(limit__ours(0, res), REAL(getrlimit64)(res, rl));
}

PRELOAD_WRAP int setrlimit64(__rlimit_resource_t res, const struct rlimit64 *rl)
{
	LIMIT__CALL(limit__ours(0, res), REAL(setrlimit64)(res, rl));
}

PRELOAD_WRAP int prlimit64(pid_t pid, __rlimit_resource_t res, const struct rlimit64 *nl,
			   struct rlimit64 *ol)
{
	LIMIT__CALL(limit__ours(pid, res), REAL(prlimit64)(pid, res, nl, ol));
}

/* syscall(2)'s getrlimit, setrlimit and prlimit64 (wrap_syscall.c): the
 * same window around libc's syscall. */
long limit_syscall(long nr, long pid, long res, const long *a)
{
	LIMIT__CALL(limit__ours((pid_t)pid, (int)res),
		    (int)REAL(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]));
}
