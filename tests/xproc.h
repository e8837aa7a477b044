/*
 * xproc.h - what the cross-process tests (t_xproc*.c, issue 21) share:
 * named steps under a watchdog, bounded children, and a child's results
 * sent back to the parent as a t_log.
 *
 * Every step that may block is named with x_step() first: if it has not
 * ended X_STEP_S seconds later, the process (parent or child) prints
 * "HANG: <impl>: <step>" and exits 1, so that a hang is a failure naming
 * the step, never a CI timeout.  A child dies with its parent
 * (PR_SET_PDEATHSIG), and the parent reaps it within a deadline, killing
 * it (and failing) past it.
 */
#ifndef UEPOLL_TEST_XPROC_H
#define UEPOLL_TEST_XPROC_H

#include "testlib.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define X_STEP_S 10

#if defined(__SANITIZE_ADDRESS__)
#define X_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define X_ASAN 1
#endif
#endif
#ifdef X_ASAN
/* LeakSanitizer's check at the exit() of a child forked from a process
 * with threads cannot suspend the threads it inherited the record of
 * ("Running thread ... was not suspended") and once hung there in CI, after
 * the child had done and reported everything.  These tests exit() their
 * children on purpose (the library's exit handler must run); the fd-leak
 * check stays, and leaks are the other tests' business. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}
#endif

static const char *volatile x_impl = "";
static const char *volatile x_what = "start";
static const char *volatile x_who = "parent";

static void x__hang(int sig)
{
	const char *p[] = { "HANG (", x_who, "): ", x_impl, ": ", x_what,
			    " did not end within its deadline\n" };

	(void)sig;
	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		if (write(2, p[i], strlen(p[i])) < 0)
			break;
	_exit(1);
}

/* Install the step watchdog (once, in main). */
static inline void x_init(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = x__hang;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
}

/* The next step: name it and give it X_STEP_S seconds. */
static inline void x_step(const char *impl, const char *what)
{
	x_impl = impl;
	x_what = what;
	alarm(X_STEP_S);
}

static inline void x_step_end(void)
{
	alarm(0);
}

/* poll() of one fd with a timeout: its revents, 0 on a timeout, -1 on an
 * error. */
static inline int x_poll(int fd, short events, int ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int r;

	do
		r = poll(&p, 1, ms);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -1 : r == 0 ? 0 : p.revents;
}

/* ---- children --------------------------------------------------------- */

/* fork(): 0 in the child (which dies with the parent), the pid in the
 * parent (testlib's t_child_*). */
static inline pid_t x_fork(struct t_child *c)
{
	pid_t p = t_child_fork(c);

	if (p == 0) {
		x_who = "child";
		alarm(0);
	}
	return p;
}

/* A child forked and parked until x_unpark(): the ueventfds made before
 * are shared (SHARED) from the fork on, while it lives. */
struct x_park {
	struct t_child c;
	int fd; /* the pipe's write end: its close lets the child go */
};

static inline void x_park(struct x_park *k)
{
	int pp[2];
	pid_t p;

	REQUIRE(pipe(pp) == 0);
	p = x_fork(&k->c);
	REQUIRE(p >= 0);
	if (p == 0) {
		char b;

		close(pp[1]);
		(void)!read(pp[0], &b, 1);
		_exit(0);
	}
	close(pp[0]);
	k->fd = pp[1];
}

static inline void x_unpark(struct x_park *k)
{
	close(k->fd);
	t_child_reap(&k->c, 10000, "the parked child");
}

/* ---- a child's log, through a pipe ------------------------------------ */

static inline void x_log_send(int fd, const struct t_log *l)
{
	const char *p = (const char *)l;
	size_t len = sizeof(*l);

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(3);
		p += w;
		len -= (size_t)w;
	}
}

/* Append the log the (ended) child sent on fd to l; -1 if none came. */
static inline int x_log_recv(int fd, struct t_log *l)
{
	static struct t_log c;
	char *p = (char *)&c;
	size_t got = 0;

	memset(&c, 0, sizeof(c));
	for (;;) {
		ssize_t n = read(fd, p + got, sizeof(c) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got != sizeof(c) || c.n < 0 || c.n > T_LOG_MAX) {
		t_log_put(l, -12345); /* no log: differs from any run */
		return -1;
	}
	for (int i = 0; i < c.n; i++)
		t_log_put(l, c.v[i]);
	return 0;
}

#endif
