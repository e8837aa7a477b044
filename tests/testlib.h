/* Tiny test harness shared by tests/t_*.c.
 *
 * A test program calls t_begin() first and t_end() last.  CHECK() records a
 * failure with file:line and keeps going; REQUIRE() stops the program
 * (checks.h, shared with the preload tests).  t_end() also fails the test
 * if the program holds more fds than it did at t_begin() (fd leak check)
 * and returns the exit status: 0 pass, 1 fail.  T_SKIP(reason) exits 77,
 * ctest's skip code.
 */
#ifndef UEPOLL_TESTLIB_H
#define UEPOLL_TESTLIB_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "uepoll.h"

/* T_TSAN: built with ThreadSanitizer (which cannot, for one, start threads
 * in the child of a multi-threaded fork: the tests that would skip that). */
#if defined(__SANITIZE_THREAD__)
#define T_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define T_TSAN 1
#endif
#endif

extern int t_failures;

void t_begin(const char *name);
int t_end(void);
/* Monotonic clock in nanoseconds. */
uint64_t t_now_ns(void);
/* Deterministic PRNG (xorshift64*), seeded per test. */
uint64_t t_rand(uint64_t *state);
/* Seed from $UEPOLL_TEST_SEED if set, else the given default; printed. */
uint64_t t_seed(uint64_t dflt);
/* Scale factor for stress loops from $UEPOLL_TEST_SCALE (default 1.0):
 * sanitizer builds run with less. */
double t_scale(void);

/* Sort epoll events by data.u64, then events: for comparing waits as sets. */
struct epoll_event;
void t_sort_events(struct epoll_event *ev, int n);
/*
 * A differential log: one script run on the kernel's objects and on
 * uepoll's appends every result to its log; the two logs must be equal.
 */
#define T_LOG_MAX 1024
struct t_log {
	long v[T_LOG_MAX];
	int n;
};
void t_log_put(struct t_log *l, long v);
/* A call's result: the value, or -errno. */
void t_log_res(struct t_log *l, long r);
/* A wait's result r and its events in ev (sorted: a set). */
void t_log_events(struct t_log *l, struct epoll_event *ev, int r);
/* k (the kernel's) and u (uepoll's) equal?  If not, the first difference
 * is printed (what: which script) and counted as a failure; $T_DUMP=1
 * prints both logs side by side. */
void t_log_same(const struct t_log *k, const struct t_log *u,
		const char *what);
/* Kernel thread id of the caller. */
int t_gettid(void);
/* The library's timer thread ("uepoll-timer"): its tid, 0 if none. */
int t_timer_tid(void);
/*
 * Wait until thread tid has been asleep (state S) for a while, i.e. is most
 * likely blocked in the call it announced.  Returns 1 once it is, 0 if it was
 * not seen asleep within timeout_ms.
 */
int t_wait_sleeping(int tid, int timeout_ms);
/* Wait as t_wait_sleeping, then: the number of the system call thread tid
 * is blocked in (/proc/self/task/TID/syscall), or -1 if it was not seen
 * asleep. */
int t_blocked_in(int tid, int timeout_ms);
/* Sleep for ms milliseconds. */
void t_sleep_ms(int ms);
/*
 * Fail the test (exit 1 with a message) if it is still running after secs
 * seconds: a deadlock or livelock in the library then shows up as a
 * failure naming the test instead of a ctest timeout.
 */
void t_watchdog(unsigned int secs);

/* A forked child that dies with its parent, reaped within a deadline. */
struct t_child {
	int pid;
	int done, status; /* status: exit code, or 128 + signal */
};
/* fork(): 0 in the child (its t_failures reset), the pid in the parent. */
int t_child_fork(struct t_child *c);
/* 1 if the child has ended (its status in c->status). */
int t_child_ended(struct t_child *c);
/* Wait up to ms for the child, else SIGKILL it and fail; its status. */
int t_child_reap(struct t_child *c, int ms, const char *what);
/* Kill the child now and reap it; its status. */
int t_child_kill(struct t_child *c);
/* Join th if it ends within about ms milliseconds (rounded up to whole
 * seconds plus one: a loose bound that catches a hang); 1 if joined. */
int t_join_within(pthread_t th, int ms);
/* The same with the thread's result in *ret. */
int t_join_ret_within(pthread_t th, int ms, void **ret);

#endif
