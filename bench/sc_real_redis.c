/* SPDX-License-Identifier: MIT */
/*
 * real-redis - Debian's redis-server (one event-loop thread on epoll)
 * under redis-benchmark: `clients` connections, `requests` SETs or GETs,
 * one at a time per connection or pipelined 16 deep (P16, 10x the
 * requests), natively and under uepoll-run with the policies off and with
 * --min-wait-us 200.
 * Metrics: ops_per_s and latency p50/p99 as redis-benchmark reports them,
 * cpu_us_per_op and ctx_per_op of the server (/proc, around the load).
 * Correctness, every rep: redis-benchmark exits 0 and reports its test;
 * the server's INFO commandstats counts at least `requests` calls of the
 * command; the key holds our value after GETs, the benchmark's after SETs; the
 * server exits 0 on SIGTERM.
 */
#include "real.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const rd_progs[] = { "redis-server", "redis-benchmark",
					NULL };

static void rd_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "clients", 50);
	params_set(p, "requests", quick ? 2000 : 100000);
	*reps = quick ? 1 : 5;
}

static int rd_cases(struct bcase *out, int max)
{
	static const char *const cmd[] = { "set", "get", "set/P16",
					   "get/P16" };
	int n = 0;

	for (int i = 0; i < 4 && n + 3 <= max; i++) {
		char v[48];

		real_case(&out[n++], cmd[i], "", REAL_NATIVE, rd_progs);
		real_case(&out[n++], cmd[i], "", REAL_OFF, rd_progs);
		snprintf(v, sizeof(v), "%s minwait" REAL_MINWAIT_US, cmd[i]);
		real_case(&out[n++], v, cmd[i], REAL_MINWAIT, rd_progs);
	}
	return n;
}

/* The field-th quoted field of a CSV line (0: the test's name). */
static double rd__csv(const char *line, int field)
{
	const char *q = line;

	for (int i = 0; i < 2 * field + 1; i++) {
		q = strchr(q, '"');
		if (!q)
			return NAN;
		q++;
	}
	return strtod(q, NULL);
}

static void rd_run(const struct sys *s, const struct bcase *c,
		   const struct params *p, struct metrics *m)
{
	static char out[16384], reply[65536];
	char dir[256], path[4200], port_s[16], n_s[32], c_s[16];
	bool get = !strncmp(c->variant, "get", 3);
	bool piped = strstr(c->variant, "P16") != NULL;
	long reqs = params_get(p, "requests") * (piped ? 10 : 1);
	const char *test = get ? "\"GET\"" : "\"SET\"", *l, *f;
	unsigned long long calls = 0;
	struct real_usage u0, u1;
	int port = real_port(), st;
	pid_t pid;

	(void)s;
	real_tmpdir(dir, sizeof(dir), "redis");
	snprintf(path, sizeof(path), "%s/out.log", dir);
	snprintf(port_s, sizeof(port_s), "%d", port);
	{
		const char *argv[] = { "redis-server", "--port", port_s,
				       "--bind", "127.0.0.1", "--save", "",
				       "--appendonly", "no", "--dir", dir,
				       "--daemonize", "no", NULL };

		pid = real_start(c, argv, path);
	}
	if (!real_wait_port(port, 10000)) {
		real_cleanup();
		die("redis-server did not listen on port %d within 10 s", port);
	}
	/* The benchmark's requests go to this one key (no -r); its SETs
	 * write a 3-byte value other than ours. */
	if ((real_ask(port, "SET key:__rand_int__ xxx\r\n", "\r\n",
			     reply, sizeof(reply), 5000) < 0 ||
		    strcmp(reply, "+OK\r\n")))
		fail(m, "redis: SET before the run answered \"%.40s\"", reply);

	snprintf(n_s, sizeof(n_s), "%ld", reqs);
	snprintf(c_s, sizeof(c_s), "%ld", params_get(p, "clients"));
	real_usage(pid, &u0);
	{
		const char *argv[] = { "redis-benchmark", "-h", "127.0.0.1",
				       "-p", port_s, "-c", c_s, "-n", n_s,
				       "-t", get ? "get" : "set", "-P",
				       piped ? "16" : "1", "--csv", NULL };

		st = real_client(argv, out, sizeof(out), 120);
	}
	real_usage(pid, &u1);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail(m, "redis-benchmark ended with status 0x%x: %.160s", st,
		     out);
	/* "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
	 * "p95_latency_ms","p99_latency_ms","max_latency_ms" */
	for (l = out; l && strncmp(l, test, strlen(test));
	     l = text_next_line(l))
		;
	if (!l) {
		fail(m, "redis-benchmark reported no %s test: %.160s", test,
		     out);
	} else {
		m->v[M_OPS_PER_S] = rd__csv(l, 1);
		m->v[M_LAT_P50] = rd__csv(l, 4) * 1e3;
		m->v[M_LAT_P99] = rd__csv(l, 6) * 1e3;
	}
	m->v[M_EVENTS] = (double)reqs;
	real_per_op(&u0, &u1, (double)reqs, m);

	/* Every request reached the server, and the data is right. */
	if (real_ask(port, "INFO commandstats\r\n", "\r\n\r\n", reply,
		     sizeof(reply), 5000) < 0)
		fail(m, "redis: INFO commandstats failed");
	f = real_after(reply, get ? "cmdstat_get:calls=" : "cmdstat_set:calls=");
	if (f)
		calls = strtoull(f, NULL, 10);
	if (calls < (unsigned long long)reqs)
		fail(m, "redis counted %llu %s calls, the benchmark sent %ld",
		     calls, get ? "GET" : "SET", reqs);
	/* QUIT's +OK ends the reply (the value may come in two writes). */
	if (real_ask(port, "GET key:__rand_int__\r\nQUIT\r\n", "+OK\r\n",
		     reply, sizeof(reply), 5000) < 0 ||
	    strncmp(reply, "$3\r\n", 4) || strlen(reply) != 14 ||
	    !strncmp(reply, "$3\r\nxxx\r\n", 9) != get)
		fail(m, "redis: GET after the %s run answered \"%.40s\"",
		     get ? "GET" : "SET", reply);

	st = real_stop(pid, SIGTERM, 10000);
	real_cleanup();
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail(m, "redis-server did not exit 0 on SIGTERM (status 0x%x)",
		     st);
	real_rmtree(dir);
}

const struct scenario sc_real_redis = {
	.name = "real-redis",
	.proposal = "real programs (issue 22): redis",
	.what = "redis-server under redis-benchmark (SET/GET, pipelined 16 "
		"or not); op = one request",
	.headline = M_OPS_PER_S,
	.size = rd_size,
	.cases = rd_cases,
	.run = rd_run,
};
