/* SPDX-License-Identifier: MIT */
/*
 * accept - EPOLLROUNDROBIN on a shared listening socket.  The example HTTP
 * server (examples/rr_server.c, built as example_rr_server) runs `workers`
 * threads, each with its own instance, sharing one listener on 127.0.0.1;
 * wrk loads it with `conns` keep-alive connections for `duration_s`.
 * Rows:
 *   kernel  exclusive   the kernel's epoll, EPOLLEXCLUSIVE  (-m kernel)
 *   uepoll  exclusive   uepoll, EPOLLEXCLUSIVE              (-m exclusive)
 *   uepoll  roundrobin  uepoll, EPOLLEXCLUSIVE|EPOLLROUNDROBIN (-m rr),
 *                       compared with the kernel's exclusive row
 *   kernel  reuseport   one SO_REUSEPORT listener per worker (-m reuseport)
 * Metrics: jain_fairness over the workers' accepted connections (the
 * headline: the point of round robin), events = requests wrk completed,
 * events_per_s = wrk's Requests/sec, latency_p50_us/p99_us from wrk
 * --latency, and user_s/sys_s/ctx_switches of the server process (this
 * child only waits).
 * Correctness: the server exits 0 and served at least wrk's completed
 * requests minus one per connection (a request wrk counted was served; the
 * server may have answered some that wrk stopped waiting for).
 * Needs wrk in PATH; without it the scenario has no rows.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef RR_SERVER_PATH
#define RR_SERVER_PATH "example_rr_server"
#endif

#define MAX_WORKERS 64

static void ac_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "workers", 4);
	params_set(p, "wrk_threads", 2);
	params_set(p, "conns", quick ? 16 : 64);
	params_set(p, "duration_s", quick ? 1 : 5);
	*reps = quick ? 1 : 3;
}

/* wrk's path from PATH, as execvp would find it; false when absent. */
static bool find_wrk(char *buf, size_t n)
{
	const char *path = getenv("PATH");

	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");

		if (len && len + 5 < n) {
			memcpy(buf, path, len);
			memcpy(buf + len, "/wrk", 5);
			if (access(buf, X_OK) == 0)
				return true;
		}
		path += len;
		if (*path == ':')
			path++;
	}
	return false;
}

static void ac_case(struct bcase *c, const char *variant, unsigned systems,
		    const char *pair)
{
	snprintf(c->variant, sizeof(c->variant), "%s", variant);
	snprintf(c->pair, sizeof(c->pair), "%s", pair);
	c->src = SRC_PIPE; /* unused: the server makes its own sources */
	c->systems = systems;
}

static int ac_cases(struct bcase *out, int max)
{
	char wrk[4096];

	if (max < 3)
		return 0;
	/* No rows, not a failure: the suite runs where wrk is not
	 * installed. */
	if (!find_wrk(wrk, sizeof(wrk))) {
		fprintf(stderr, "uepoll-bench: accept: wrk is not installed, "
				"skipped\n");
		return 0;
	}
	ac_case(&out[0], "exclusive", SYSM_KU, "");
	ac_case(&out[1], "roundrobin", SYSM(SYS_UEPOLL), "exclusive");
	ac_case(&out[2], "reuseport", SYSM(SYS_KERNEL), "");
	return 3;
}

/* Starts argv[0] with stdout (and stderr too when both) on a pipe; returns
 * the pid, the pipe's read end in *rfd. */
static pid_t spawn(const char *const argv[], int *rfd, bool both)
{
	int pfd[2];
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(pfd[1], STDOUT_FILENO);
		if (both)
			dup2(pfd[1], STDERR_FILENO);
		/* The watchdog's SIGALRM is ours, not the program's. */
		signal(SIGALRM, SIG_DFL);
		/* execv's prototype predates const; it does not write. */
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	*rfd = pfd[0];
	return pid;
}

/* Appends what fd has to buf (NUL-terminated, capacity n) until EOF, or
 * until buf holds a '\n' when line is set, or timeout_ms passed.  Returns
 * false on the timeout. */
static bool slurp(int fd, char *buf, size_t n, bool line, int timeout_ms)
{
	size_t len = strlen(buf);
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;

	while (!(line && strchr(buf, '\n'))) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t t = now_ns();
		ssize_t r;

		if (t >= end)
			return false;
		if (poll(&pfd, 1, (int)((end - t) / 1000000u) + 1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %s", strerror(errno));
		}
		if (!pfd.revents)
			continue;
		if (len + 1 >= n) {
			/* Full: drop the rest (the server's and wrk's
			 * output is small; this only bounds it). */
			char sink[512];

			r = read(fd, sink, sizeof(sink));
		} else {
			r = read(fd, buf + len, n - 1 - len);
			if (r > 0) {
				len += (size_t)r;
				buf[len] = 0;
			}
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
	}
	return true;
}

static void ac_run(const struct sys *s, const struct bcase *c,
		   const struct params *p, struct metrics *m)
{
	static char sout[8192], wout[16384];
	char wrk[4096], nthr[16], dur[32], wthr[16], wconn[16], wdur[32],
		url[64];
	const char *mode, *f;
	long workers = params_get(p, "workers");
	long conns = params_get(p, "conns");
	long secs = params_get(p, "duration_s");
	uint64_t acc[MAX_WORKERS], sreq = 0, wreq = 0;
	int sfd, wfd, port = 0, st, nw = 0;
	pid_t spid, wpid;
	struct rusage ru;
	struct meas me;

	if (!find_wrk(wrk, sizeof(wrk)))
		die("wrk is not installed");
	if (workers < 1 || workers > MAX_WORKERS)
		die("workers must be 1..%d", MAX_WORKERS);
	if (!strcmp(c->variant, "reuseport"))
		mode = "reuseport";
	else if (!strcmp(c->variant, "roundrobin"))
		mode = "rr";
	else
		mode = s->id == SYS_KERNEL ? "kernel" : "exclusive";

	snprintf(nthr, sizeof(nthr), "%ld", workers);
	/* A backstop only: the server is stopped with SIGTERM once wrk is
	 * done. */
	snprintf(dur, sizeof(dur), "%ld", secs + 30);
	{
		const char *argv[] = { RR_SERVER_PATH, "-m", mode, "-t", nthr,
				       "-d", dur, "-p", "0", NULL };

		sout[0] = 0;
		spid = spawn(argv, &sfd, false);
	}
	if (!slurp(sfd, sout, sizeof(sout), true, 10000) ||
	    sscanf(sout, "listening on %d", &port) != 1) {
		kill(spid, SIGKILL);
		waitpid(spid, NULL, 0);
		die("%s did not print its port (got \"%s\")", RR_SERVER_PATH,
		    sout);
	}

	snprintf(wthr, sizeof(wthr), "-t%ld", params_get(p, "wrk_threads"));
	snprintf(wconn, sizeof(wconn), "-c%ld", conns);
	snprintf(wdur, sizeof(wdur), "-d%lds", secs);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
	meas_begin(&me);
	{
		const char *argv[] = { wrk, wthr, wconn, wdur, "--latency",
				       url, NULL };

		wout[0] = 0;
		wpid = spawn(argv, &wfd, true);
	}
	/* wrk ends by itself after duration_s; the bound is generous. */
	if (!slurp(wfd, wout, sizeof(wout), false, (int)(secs + 30) * 1000))
		kill(wpid, SIGKILL);
	close(wfd);
	while (waitpid(wpid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid wrk: %s", strerror(errno));
	meas_end(&me, m);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail(m, "wrk ended with status 0x%x: %.120s", st, wout);

	kill(spid, SIGTERM);
	if (!slurp(sfd, sout, sizeof(sout), false, 10000)) {
		kill(spid, SIGKILL);
		fail(m, "the server did not exit 10 s after SIGTERM");
	}
	close(sfd);
	while (wait4(spid, &st, 0, &ru) < 0)
		if (errno != EINTR)
			die("wait4 server: %s", strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail(m, "the server (-m %s) ended with status 0x%x", mode, st);

	/* The server's own work, not this child's (which only waited). */
	m->v[M_USER_S] = (double)ru.ru_utime.tv_sec +
			 (double)ru.ru_utime.tv_usec / 1e6;
	m->v[M_SYS_S] = (double)ru.ru_stime.tv_sec +
			(double)ru.ru_stime.tv_usec / 1e6;
	m->v[M_CTX] = (double)ru.ru_nvcsw + (double)ru.ru_nivcsw;

	for (const char *l = sout; l; l = text_next_line(l)) {
		unsigned long long a, r;
		int id;

		if (sscanf(l, "worker %d accepted %llu requests %llu", &id, &a,
			   &r) == 3 && nw < MAX_WORKERS)
			acc[nw++] = a;
		else if (sscanf(l, "total accepted %llu requests %llu", &a,
				&r) == 2)
			sreq = r;
	}
	if (nw != workers)
		fail(m, "the server printed %d worker lines, expected %ld", nw,
		     workers);
	m->v[M_JAIN] = stat_jain(acc, nw);

	for (const char *l = wout; l; l = text_next_line(l)) {
		unsigned long long n;

		if (sscanf(l, " %llu requests in", &n) == 1)
			wreq = n;
	}
	if ((f = text_field(wout, "Requests/sec:")))
		m->v[M_EVENTS_PER_S] = strtod(f, NULL);
	if ((f = text_field(wout, "50%")))
		m->v[M_LAT_P50] = wrk_latency_us(f);
	if ((f = text_field(wout, "99%")))
		m->v[M_LAT_P99] = wrk_latency_us(f);
	m->v[M_EVENTS] = (double)wreq;
	if (!wreq)
		fail(m, "wrk completed no request: %.160s", wout);
	if (sreq + (uint64_t)conns < wreq)
		fail(m, "the server served %llu requests, wrk completed %llu "
			"(more than %ld connections' worth apart)",
		     (unsigned long long)sreq, (unsigned long long)wreq, conns);
}

const struct scenario sc_accept = {
	.name = "accept",
	.proposal = "EPOLLROUNDROBIN (include/uepoll.h), shared listener",
	.what = "example_rr_server (workers threads, one instance each, one "
		"shared listener) under wrk",
	.headline = M_JAIN,
	.size = ac_size,
	.cases = ac_cases,
	.run = ac_run,
};
