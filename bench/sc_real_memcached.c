/* SPDX-License-Identifier: MIT */
/*
 * real-memcached - Debian's memcached (libevent; its listener thread hands
 * each new connection to one of `threads` workers through that worker's
 * eventfd) under many short connections: `clients` threads of this rep
 * each loop for duration_s over connect, set, get, close (text protocol,
 * a key and value of their own).  Natively and under uepoll-run with the
 * policies off and with --min-wait-us 200.
 * Metrics: ops_per_s (two requests per connection), latency p50/p99 of a
 * whole connection (connect to close), cpu_us_per_op and ctx_per_op of the
 * server (/proc, around the load).
 * Correctness, every rep: every reply is exactly what the protocol says
 * for the value the client stored (a wrong or missing answer, or a refused
 * connection, is a FAIL); the server's stats count at least the client's
 * sets and get hits; memcached exits on SIGTERM.
 */
#include "real.h"

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define MC_MAX_CLIENTS 64

static const char *const mc_progs[] = { "memcached", NULL };

static void mc_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "threads", 4);
	params_set(p, "clients", quick ? 4 : 8);
	params_set(p, "duration_ms", quick ? 300 : 5000);
	*reps = quick ? 1 : 5;
}

static int mc_cases(struct bcase *out, int max)
{
	if (max < 4)
		return 0;
	real_case(&out[0], "short-conns", "", REAL_NATIVE, mc_progs);
	real_case(&out[1], "short-conns", "", REAL_OFF, mc_progs);
	real_case(&out[2], "short-conns minwait" REAL_MINWAIT_US,
		  "short-conns", REAL_MINWAIT, mc_progs);
	real_case(&out[3], "short-conns exact", "short-conns", REAL_EXACT,
		  mc_progs);
	return 4;
}

struct mc_client {
	pthread_t t;
	int id, port;
	uint64_t end_ns;
	uint64_t conns, errors;
	char err[160];
	struct hist h;
};

/* Sends all of buf; false on an error. */
static bool mc__send(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t w = write(fd, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		buf += w;
		n -= (size_t)w;
	}
	return true;
}

/* Reads exactly strlen(want) bytes and compares them. */
static bool mc__expect(int fd, const char *want, char *got, size_t cap)
{
	size_t n = strlen(want), len = 0;

	if (n + 1 > cap)
		return false;
	while (len < n) {
		ssize_t r = read(fd, got + len, n - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	got[len] = 0;
	return len == n && !memcmp(got, want, n);
}

/* One connection: connect, set, get, close. */
static bool mc__once(struct mc_client *cl, uint64_t seq)
{
	struct sockaddr_in a;
	struct timeval tv = { .tv_sec = 5 };
	char req[160], want[160], got[160];
	int fd, n;
	bool ok = false;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)cl->port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(cl->err, sizeof(cl->err), "socket: %s",
			 strerror(errno));
		return false;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		snprintf(cl->err, sizeof(cl->err), "connect: %s",
			 strerror(errno));
		goto out;
	}
	n = snprintf(req, sizeof(req), "set k%d 0 0 16\r\n%016llx\r\n", cl->id,
		     (unsigned long long)seq);
	if (!mc__send(fd, req, (size_t)n) ||
	    !mc__expect(fd, "STORED\r\n", got, sizeof(got))) {
		snprintf(cl->err, sizeof(cl->err), "set answered \"%.40s\"",
			 got);
		goto out;
	}
	n = snprintf(req, sizeof(req), "get k%d\r\n", cl->id);
	snprintf(want, sizeof(want), "VALUE k%d 0 16\r\n%016llx\r\nEND\r\n",
		 cl->id, (unsigned long long)seq);
	if (!mc__send(fd, req, (size_t)n) ||
	    !mc__expect(fd, want, got, sizeof(got))) {
		snprintf(cl->err, sizeof(cl->err), "get answered \"%.60s\"",
			 got);
		goto out;
	}
	ok = true;
out:
	close(fd);
	return ok;
}

static void *mc__client(void *arg)
{
	struct mc_client *cl = arg;
	uint64_t seq = 0;

	for (uint64_t t = now_ns(); t < cl->end_ns; seq++) {
		uint64_t t1;

		if (!mc__once(cl, seq)) {
			cl->errors++;
			break;
		}
		t1 = now_ns();
		hist_add(&cl->h, t1 - t);
		t = t1;
		cl->conns++;
		atomic_fetch_add_explicit(&wd_done, 1, memory_order_relaxed);
	}
	return NULL;
}

/* A counter from memcached's "stats" reply. */
static unsigned long long mc__stat(const char *stats, const char *name)
{
	char key[64];
	const char *f;

	snprintf(key, sizeof(key), "STAT %s ", name);
	f = real_after(stats, key);
	return f ? strtoull(f, NULL, 10) : 0;
}

static void mc_run(const struct sys *s, const struct bcase *c,
		   const struct params *p, struct metrics *m)
{
	static struct mc_client cl[MC_MAX_CLIENTS];
	static char stats[16384];
	static struct hist h;
	char dir[256], path[4200], port_s[16], thr_s[16];
	long nc = params_get(p, "clients");
	uint64_t conns = 0, t0;
	struct real_usage u0, u1;
	int port = real_port(), st;
	pid_t pid;

	(void)s;
	if (nc < 1 || nc > MC_MAX_CLIENTS)
		die("clients must be 1..%d", MC_MAX_CLIENTS);
	real_tmpdir(dir, sizeof(dir), "memcached");
	snprintf(path, sizeof(path), "%s/out.log", dir);
	snprintf(port_s, sizeof(port_s), "%d", port);
	snprintf(thr_s, sizeof(thr_s), "%ld", params_get(p, "threads"));
	{
		/* -U 0: no UDP; -u: it refuses to run as root otherwise. */
		const char *argv[] = { "memcached", "-l", "127.0.0.1", "-p",
				       port_s, "-U", "0", "-t", thr_s, "-c",
				       "4096", "-u", "nobody", NULL };

		pid = real_start(c, argv, path);
	}
	if (!real_wait_port(port, 10000)) {
		real_cleanup();
		die("memcached did not listen on port %d within 10 s", port);
	}
	real_usage(pid, &u0);
	t0 = now_ns();
	for (long i = 0; i < nc; i++) {
		memset(&cl[i], 0, sizeof(cl[i]));
		cl[i].id = (int)i;
		cl[i].port = port;
		cl[i].end_ns = t0 + (uint64_t)params_get(p, "duration_ms") *
					    1000000u;
		if (thread_start(&cl[i].t, mc__client, &cl[i]))
			die("pthread_create failed");
	}
	memset(&h, 0, sizeof(h));
	for (long i = 0; i < nc; i++) {
		thread_join(cl[i].t);
		conns += cl[i].conns;
		for (int b = 0; b < HIST_BUCKETS; b++)
			h.b[b] += cl[i].h.b[b];
		h.count += cl[i].h.count;
		if (cl[i].errors)
			fail(m, "client %ld, connection %llu: %s", i,
			     (unsigned long long)cl[i].conns, cl[i].err);
	}
	m->v[M_OPS_PER_S] = 2.0 * (double)conns * 1e9 /
			    (double)(now_ns() - t0);
	real_usage(pid, &u1);
	m->v[M_EVENTS] = 2.0 * (double)conns;
	m->v[M_LAT_P50] = hist_pct_us(&h, 50);
	m->v[M_LAT_P99] = hist_pct_us(&h, 99);
	real_per_op(&u0, &u1, 2.0 * (double)conns, m);

	if (real_ask(port, "stats\r\n", "END\r\n", stats, sizeof(stats),
		     5000) < 0)
		fail(m, "memcached: stats failed");
	else if (mc__stat(stats, "cmd_set") < conns ||
		 mc__stat(stats, "get_hits") < conns)
		fail(m, "memcached counted %llu sets and %llu get hits, the "
			"clients %llu of each",
		     mc__stat(stats, "cmd_set"), mc__stat(stats, "get_hits"),
		     (unsigned long long)conns);
	st = real_stop(pid, SIGTERM, 10000);
	real_cleanup();
	if (st == -1)
		fail(m, "memcached did not exit 10 s after SIGTERM");
	real_rmtree(dir);
}

const struct scenario sc_real_memcached = {
	.name = "real-memcached",
	.proposal = "real programs (issue 22): memcached",
	.what = "memcached (4 threads, an eventfd each) under short "
		"connections (connect, set, get, close); op = one request",
	.headline = M_OPS_PER_S,
	.size = mc_size,
	.cases = mc_cases,
	.run = mc_run,
};
