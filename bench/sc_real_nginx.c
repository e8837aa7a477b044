/* SPDX-License-Identifier: MIT */
/*
 * real-nginx, real-nginx-rate - Debian's nginx (nginx-light), `workers`
 * worker processes sharing one listener on 127.0.0.1, natively and under
 * uepoll-run, in two load shapes:
 *   real-nginx       saturated: wrk, `conns` keep-alive connections for
 *                    duration_s (headline: requests/s);
 *   real-nginx-rate  a fixed rate well below saturation, one request per
 *                    connection: h2load --h1 --rate (open loop: a slow
 *                    server does not slow the arrivals) (headline: the
 *                    server's CPU per request).
 * Rows:
 *   kernel exclusive   nginx's default: accept_mutex off, so every worker
 *                      registers the listener with EPOLLEXCLUSIVE
 *   kernel reuseport   `listen ... reuseport`: one listener per worker
 *   uepoll off         uepoll-run, no policy
 *   uepoll roundrobin  uepoll-run --roundrobin (EPOLLEXCLUSIVE wakes the
 *                      workers in turn)
 *   uepoll minwait200  uepoll-run --min-wait-us 200 (proposal 002's
 *                      production case: fewer wakeups per request)
 * uepoll rows compare with the kernel's exclusive row.
 * Metrics: ops_per_s = requests/s the client got answered, latency p50/p99
 * (wrk's, or from h2load's per-request log), cpu_us_per_op and ctx_per_op
 * of the server (master and workers, all threads, /proc before and after
 * the load), jain_fairness over the requests each worker served (the
 * access log holds each request's worker pid).
 * Correctness, every rep: the client saw no error and only 200s; the
 * access log holds at least every request the client completed, all 200;
 * nginx exits 0 on SIGQUIT.
 */
#include "real.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NG_MAX_WORKERS 16

static const char *const ng_sat_progs[] = { "nginx", "wrk", NULL };
static const char *const ng_rate_progs[] = { "nginx", "h2load", NULL };

static void ng_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "workers", 2);
	params_set(p, "conns", quick ? 16 : 64);
	params_set(p, "duration_s", quick ? 1 : 5);
	*reps = quick ? 1 : 5;
}

static void ng_rate_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "workers", 2);
	/* Requests (and connections) per second: h2load opens rate/1000
	 * connections every millisecond. */
	params_set(p, "rate", quick ? 1000 : 2000);
	params_set(p, "requests", quick ? 300 : 10000);
	*reps = quick ? 1 : 5;
}

static int ng__cases(struct bcase *out, int max, const char *const *progs)
{
	if (max < 5)
		return 0;
	real_case(&out[0], "exclusive", "", REAL_NATIVE, progs);
	real_case(&out[1], "reuseport", "", REAL_NATIVE, progs);
	real_case(&out[2], "off", "exclusive", REAL_OFF, progs);
	real_case(&out[3], "roundrobin", "exclusive", REAL_RR, progs);
	real_case(&out[4], "minwait" REAL_MINWAIT_US, "exclusive",
		  REAL_MINWAIT, progs);
	return 5;
}

static int ng_cases(struct bcase *out, int max)
{
	return ng__cases(out, max, ng_sat_progs);
}

static int ng_rate_cases(struct bcase *out, int max)
{
	return ng__cases(out, max, ng_rate_progs);
}

static void ng__conf(const char *dir, int port, long workers, bool reuseport)
{
	char path[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/nginx.conf", dir);
	f = fopen(path, "w");
	if (!f)
		die("%s: %s", path, strerror(errno));
	fprintf(f,
		"worker_processes %ld;\n"
		"daemon off;\n"
		"pid %s/nginx.pid;\n"
		"error_log %s/error.log;\n"
		"events { worker_connections 4096; }\n"
		"http {\n"
		"  log_format byworker '$pid $status';\n"
		"  access_log %s/access.log byworker buffer=64k;\n"
		"  client_body_temp_path %s; proxy_temp_path %s;\n"
		"  fastcgi_temp_path %s; uwsgi_temp_path %s; scgi_temp_path %s;\n"
		"  server {\n"
		"    listen 127.0.0.1:%d%s;\n"
		"    location / { return 200 \"hello\\n\"; }\n"
		"  }\n"
		"}\n",
		workers, dir, dir, dir, dir, dir, dir, dir, dir, port,
		reuseport ? " reuseport" : "");
	fclose(f);
}

/* wrk's run: fills the metrics; returns the requests it completed. */
static uint64_t ng__wrk(int port, const struct params *p, struct metrics *m)
{
	static char out[16384];
	char conn[32], dur[32], url[64];
	const char *f;
	unsigned long long req = 0;
	long secs = params_get(p, "duration_s");
	int st;

	snprintf(conn, sizeof(conn), "-c%ld", params_get(p, "conns"));
	snprintf(dur, sizeof(dur), "-d%lds", secs);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
	{
		const char *argv[] = { "wrk", "-t2", conn, dur, "--latency",
				       url, NULL };

		st = real_client(argv, out, sizeof(out), (unsigned)secs + 30);
	}
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fail(m, "wrk ended with status 0x%x: %.160s", st, out);
		return 0;
	}
	/* "  123456 requests in 5.00s, ..." (%n: the whole pattern matched,
	 * not just the number of "  2 threads and 64 connections"). */
	for (const char *l = out; l; l = text_next_line(l)) {
		int end = 0;

		if (sscanf(l, " %llu requests in%n", &req, &end) == 1 && end)
			break;
		req = 0;
	}
	if ((f = real_after(out, "Requests/sec:")))
		m->v[M_OPS_PER_S] = strtod(f, NULL);
	if ((f = text_field(out, "50%")))
		m->v[M_LAT_P50] = wrk_latency_us(f);
	if ((f = text_field(out, "99%")))
		m->v[M_LAT_P99] = wrk_latency_us(f);
	/* Any error wrk saw is a FAIL: a server that drops, resets or
	 * answers wrongly is not faster. */
	if ((f = real_after(out, "Non-2xx or 3xx responses:")))
		fail(m, "wrk: non-2xx or 3xx responses:%.40s", f);
	if ((f = real_after(out, "Socket errors:")))
		fail(m, "wrk: socket errors:%.80s", f);
	if (!req)
		fail(m, "wrk completed no request: %.160s", out);
	return req;
}

/* h2load's open-loop run: fills the metrics; returns the requests that
 * succeeded. */
static uint64_t ng__h2load(int port, const char *dir, const struct params *p,
			   struct metrics *m)
{
	static char out[16384];
	char n[32], r[32], url[64], log[4200];
	unsigned long long tot = 0, started = 0, done = 0, ok = 0, failed = 0,
			   errored = 0, tmo = 0;
	long rate = params_get(p, "rate"), reqs = params_get(p, "requests");
	const char *f;
	struct hist h;
	char *text;
	int st;

	if (rate < 1000 || rate % 1000)
		die("rate must be a multiple of 1000");
	snprintf(n, sizeof(n), "%ld", reqs);
	snprintf(r, sizeof(r), "%ld", rate / 1000);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
	snprintf(log, sizeof(log), "%s/h2load.log", dir);
	{
		/* -c = -n: every connection carries one request. */
		const char *argv[] = { "h2load", "--h1", "-t1", "-c", n, "-n",
				       n, "-r", r, "--rate-period", "1ms",
				       "-T", "10", "--log-file", log, url,
				       NULL };

		st = real_client(argv, out, sizeof(out),
				 (unsigned)(reqs / rate) + 30);
	}
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fail(m, "h2load ended with status 0x%x: %.160s", st, out);
		return 0;
	}
	f = real_after(out, "requests: ");
	if (!f || sscanf(f,
			 "%llu total, %llu started, %llu done, %llu "
			 "succeeded, %llu failed, %llu errored, %llu timeout",
			 &tot, &started, &done, &ok, &failed, &errored,
			 &tmo) != 7) {
		fail(m, "h2load: no requests line: %.160s", out);
		return 0;
	}
	if (ok != (unsigned long long)reqs || failed || errored || tmo)
		fail(m, "h2load: %llu of %ld requests succeeded (%llu failed, "
			"%llu errored, %llu timed out)",
		     ok, reqs, failed, errored, tmo);
	if ((f = real_after(out, "finished in ")) && (f = strchr(f, ',')))
		m->v[M_OPS_PER_S] = strtod(f + 1, NULL);
	/* Per request: start (us since the epoch), status, us to the end of
	 * the response. */
	memset(&h, 0, sizeof(h));
	text = real_slurp_file(log, NULL);
	if (!text) {
		fail(m, "h2load wrote no log");
		return ok;
	}
	for (const char *l = text; l; l = text_next_line(l)) {
		long long v[3]; /* start, status, us */

		if (real_nums(l, v, 3) != 3)
			continue;
		if (v[1] != 200)
			fail(m, "h2load: a request got status %lld", v[1]);
		hist_add(&h, (uint64_t)(v[2] > 0 ? v[2] : 0) * 1000u);
	}
	free(text);
	if (h.count != ok)
		fail(m, "h2load's log holds %llu requests, it counted %llu",
		     (unsigned long long)h.count, ok);
	m->v[M_LAT_P50] = hist_pct_us(&h, 50);
	m->v[M_LAT_P99] = hist_pct_us(&h, 99);
	return ok;
}

static void ng__run(const struct bcase *c, const struct params *p,
		    struct metrics *m, bool rate)
{
	char dir[256], path[4200];
	long workers = params_get(p, "workers");
	struct real_usage u0, u1;
	uint64_t served[NG_MAX_WORKERS] = { 0 }, total = 0, got;
	int port = real_port(), st;
	pid_t pid;
	char *text;

	if (workers < 1 || workers > NG_MAX_WORKERS)
		die("workers must be 1..%d", NG_MAX_WORKERS);
	real_tmpdir(dir, sizeof(dir), "nginx");
	ng__conf(dir, port, workers, !strcmp(c->variant, "reuseport"));
	snprintf(path, sizeof(path), "%s/out.log", dir);
	{
		char conf[4200], elog[4200];
		const char *argv[] = { "nginx", "-p", dir, "-c", conf, "-e",
				       elog, NULL };

		snprintf(conf, sizeof(conf), "%s/nginx.conf", dir);
		snprintf(elog, sizeof(elog), "%s/error.log", dir);
		pid = real_start(c, argv, path);
	}
	if (!real_wait_port(port, 10000)) {
		real_cleanup();
		die("nginx did not listen on port %d within 10 s", port);
	}
	/* The workers are up once the master has forked them all. */
	for (int i = 0; i < 200; i++) {
		real_usage(pid, &u0);
		if (u0.nchild >= workers)
			break;
		sleep_us(10000);
	}
	if (u0.nchild != workers)
		fail(m, "nginx has %d workers, expected %ld", u0.nchild,
		     workers);
	got = rate ? ng__h2load(port, dir, p, m) : ng__wrk(port, p, m);
	real_usage(pid, &u1);
	real_per_op(&u0, &u1, (double)got, m);
	m->v[M_EVENTS] = (double)got;

	/* SIGQUIT: a graceful stop, which flushes the access log. */
	st = real_stop(pid, SIGQUIT, 10000);
	real_cleanup();
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail(m, "nginx did not exit 0 on SIGQUIT (status 0x%x)", st);

	snprintf(path, sizeof(path), "%s/access.log", dir);
	text = real_slurp_file(path, NULL);
	if (!text)
		fail(m, "nginx wrote no access log");
	for (const char *l = text; l; l = text_next_line(l)) {
		long long v[2]; /* the worker's pid, the status */
		int k;

		if (real_nums(l, v, 2) != 2)
			continue;
		total++;
		if (v[1] != 200) {
			fail(m, "nginx answered a request with %lld", v[1]);
			continue;
		}
		for (k = 0; k < u0.nchild && u0.child[k] != v[0]; k++)
			;
		if (k < u0.nchild)
			served[k]++;
		else
			fail(m, "a request served by pid %lld, not a worker",
			     v[0]);
	}
	free(text);
	real_rmtree(dir);
	if (total < got)
		fail(m, "nginx logged %llu requests, the client completed "
			"%llu",
		     (unsigned long long)total, (unsigned long long)got);
	if (u0.nchild > 1)
		m->v[M_JAIN] = stat_jain(served, u0.nchild);
}

static void ng_run(const struct sys *s, const struct bcase *c,
		   const struct params *p, struct metrics *m)
{
	(void)s;
	ng__run(c, p, m, false);
}

static void ng_rate_run(const struct sys *s, const struct bcase *c,
			const struct params *p, struct metrics *m)
{
	(void)s;
	ng__run(c, p, m, true);
}

const struct scenario sc_real_nginx = {
	.name = "real-nginx",
	.proposal = "real programs (issue 22): nginx, saturated",
	.what = "nginx (2 workers, one listener) under wrk, keep-alive; "
		"op = one request",
	.headline = M_OPS_PER_S,
	.size = ng_size,
	.cases = ng_cases,
	.run = ng_run,
};

const struct scenario sc_real_nginx_rate = {
	.name = "real-nginx-rate",
	.proposal = "real programs (issue 22): nginx at a fixed rate; "
		    "min-wait is proposal 002",
	.what = "nginx (2 workers, one listener) under h2load --rate, one "
		"request per connection; op = one request",
	.headline = M_CPU_US_PER_OP,
	.size = ng_rate_size,
	.cases = ng_rate_cases,
	.run = ng_rate_run,
};
