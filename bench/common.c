/* SPDX-License-Identifier: MIT */
/*
 * common.c - the two systems (kernel, uepoll), event sources, parameters,
 * metrics, measurement helpers and the watchdog.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <uepoll.h>

/* ---- systems ------------------------------------------------------------ */

static int k_create(int flags)
{
	return epoll_create1(flags);
}

static int k_wait(int epfd, struct epoll_event *evs, int max, int timeout)
{
	return epoll_wait(epfd, evs, max, timeout);
}

static int k_efd(unsigned int initval, int flags)
{
	return eventfd(initval, flags);
}

static const struct sys systems[SYS_COUNT] = {
	[SYS_KERNEL] = { SYS_KERNEL, "kernel", k_create, NULL, epoll_ctl,
			 k_wait, k_efd, read, write, close },
	[SYS_UEPOLL] = { SYS_UEPOLL, "uepoll", uepoll_create1, uepoll_create2,
			 uepoll_ctl, uepoll_wait, ueventfd, uepoll_read,
			 uepoll_write, uepoll_close },
	/* The floor in pingpong: a bare futex, no fds at all. */
	[SYS_FUTEX] = { SYS_FUTEX, "futex", NULL, NULL, NULL, NULL, NULL, NULL,
			NULL, NULL },
};

const struct sys *sys_get(enum sys_id id)
{
	return &systems[id];
}

int sys_create(const struct sys *s, const struct bcase *c)
{
	int ep;

	if (c->uflags && s->create2)
		ep = s->create2(EPOLL_CLOEXEC, c->uflags);
	else
		ep = s->create(EPOLL_CLOEXEC);
	if (ep < 0)
		die("%s: create (uflags 0x%x): %s", s->name, c->uflags,
		    strerror(errno));
	return ep;
}

/* ---- sources ------------------------------------------------------------ */

const char *src_name(enum src_kind kind)
{
	return kind == SRC_PIPE ? "pipe" : kind == SRC_EFD ? "efd" : "efd-nopoll";
}

void src_open(const struct sys *s, enum src_kind kind, struct src *out)
{
	out->kind = kind;
	if (kind != SRC_PIPE) {
		int fl = EFD_NONBLOCK | EFD_CLOEXEC;

		if (kind == SRC_EFD_NOPOLL && s->id == SYS_UEPOLL)
			fl |= UEVENTFD_NOPOLL;
		out->rfd = out->wfd = s->efd(0, fl);
		if (out->rfd < 0)
			die("%s: eventfd: %s", s->name, strerror(errno));
	} else {
		int p[2];

		if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
			die("pipe2: %s", strerror(errno));
		out->rfd = p[0];
		out->wfd = p[1];
	}
}

void src_close(const struct sys *s, struct src *src)
{
	s->close(src->rfd);
	if (src->wfd != src->rfd)
		s->close(src->wfd);
	src->rfd = src->wfd = -1;
}

void src_signal(const struct sys *s, const struct src *src)
{
	for (;;) {
		ssize_t r;

		if (src->kind != SRC_PIPE) {
			uint64_t one = 1;

			r = s->write(src->wfd, &one, sizeof(one));
			if (r == (ssize_t)sizeof(one))
				return;
		} else {
			uint32_t word = 0x55aa55aa;

			r = s->write(src->wfd, &word, sizeof(word));
			if (r == (ssize_t)sizeof(word))
				return;
		}
		if (r < 0 && errno == EAGAIN) { /* full: let readers drain */
			sleep_us(10);
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		die("%s: write %s: %zd (%s)", s->name, src_name(src->kind), r,
		    r < 0 ? strerror(errno) : "short write");
	}
}

uint64_t src_read_one(const struct sys *s, const struct src *src)
{
	ssize_t r;

	if (src->kind != SRC_PIPE) {
		uint64_t v;

		r = s->read(src->rfd, &v, sizeof(v));
		if (r == (ssize_t)sizeof(v))
			return v;
	} else {
		uint32_t word;

		r = s->read(src->rfd, &word, sizeof(word));
		if (r == (ssize_t)sizeof(word))
			return 1;
	}
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	die("%s: read %s: %zd (%s)", s->name, src_name(src->kind), r,
	    r < 0 ? strerror(errno) : "short read");
}

uint64_t src_drain(const struct sys *s, const struct src *src)
{
	uint64_t total = 0;

	if (src->kind != SRC_PIPE)
		return src_read_one(s, src);
	for (;;) {
		uint32_t buf[64];
		ssize_t r = s->read(src->rfd, buf, sizeof(buf));

		if (r > 0) {
			if (r % 4)
				die("pipe read of %zd bytes (not words)", r);
			total += (uint64_t)r / 4;
			if (r < (ssize_t)sizeof(buf))
				return total;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return total;
		die("%s: read pipe: %zd (%s)", s->name, r,
		    r < 0 ? strerror(errno) : "EOF");
	}
}

/* ---- parameters, metrics ------------------------------------------------ */

void params_set(struct params *p, const char *name, long val)
{
	for (int i = 0; i < p->n; i++) {
		if (!strcmp(p->name[i], name)) {
			p->val[i] = val;
			return;
		}
	}
	if (p->n == MAX_PARAMS)
		die("too many parameters");
	p->name[p->n] = name;
	p->val[p->n++] = val;
}

long params_get(const struct params *p, const char *name)
{
	for (int i = 0; i < p->n; i++)
		if (!strcmp(p->name[i], name))
			return p->val[i];
	die("internal: no parameter %s", name);
}

const struct metric_info metric_info[M_COUNT] = {
	[M_WALL_S] = { "wall_s", 3, true },
	[M_USER_S] = { "user_s", 3, true },
	[M_SYS_S] = { "sys_s", 3, true },
	[M_CTX] = { "ctx_switches", 0, true },
	[M_EVENTS] = { "events", 0, false },
	[M_EVENTS_PER_S] = { "events_per_s", 0, false },
	[M_NS_PER_EVENT] = { "ns_per_event", 1, true },
	[M_WAIT_NS_PER_EVENT] = { "wait_ns_per_event", 1, true },
	[M_WAKEUPS_PER_EVENT] = { "wakeups_per_event", 3, true },
	[M_WAKEUPS_PER_S] = { "wakeups_per_s", 0, true },
	[M_NOHIT] = { "nohit", 0, true },
	[M_JAIN] = { "jain_fairness", 3, false },
	[M_LAT_P50] = { "latency_p50_us", 1, true },
	[M_LAT_P99] = { "latency_p99_us", 1, true },
	[M_LAT_MAX] = { "latency_max_us", 1, true },
	[M_CPU_CONS] = { "cpu_pct_consumer", 1, true },
	[M_CPU_PROD] = { "cpu_pct_producer", 1, true },
	/* The process's CPU time beyond the scenario's own threads (in
	 * pubsub: uepoll's timer thread). */
	[M_CPU_OTHER] = { "cpu_pct_other", 2, true },
	/* Context switches of uepoll's timer thread per second (pubsub). */
	[M_TIMER_CTX_PER_S] = { "timer_ctx_per_s", 0, true },
	[M_WRITES_PER_EVENT] = { "writes_per_event", 1, true },
	[M_OPS_PER_S] = { "ops_per_s", 0, false },
	/* Of the server's processes (all threads), or Node.js's. */
	[M_CPU_US_PER_OP] = { "cpu_us_per_op", 2, true },
	[M_CTX_PER_OP] = { "ctx_per_op", 3, true },
};

void metrics_init(struct metrics *m)
{
	memset(m, 0, sizeof(*m));
	for (int i = 0; i < M_COUNT; i++)
		m->v[i] = NAN;
}

/* ---- measurement -------------------------------------------------------- */

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void spin_ns(long ns)
{
	uint64_t t;

	if (ns <= 0)
		return;
	t = now_ns();
	while (now_ns() - t < (uint64_t)ns)
		;
}

uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

void meas_begin(struct meas *me)
{
	getrusage(RUSAGE_SELF, &me->ru0);
	me->t0 = now_ns();
}

void meas_end(const struct meas *me, struct metrics *m)
{
	struct rusage ru;
	uint64_t t1 = now_ns();

	getrusage(RUSAGE_SELF, &ru);
	m->v[M_WALL_S] = (double)(t1 - me->t0) / 1e9;
	m->v[M_USER_S] = tv_s(ru.ru_utime) - tv_s(me->ru0.ru_utime);
	m->v[M_SYS_S] = tv_s(ru.ru_stime) - tv_s(me->ru0.ru_stime);
	m->v[M_CTX] = (double)(ru.ru_nvcsw - me->ru0.ru_nvcsw) +
		      (double)(ru.ru_nivcsw - me->ru0.ru_nivcsw);
}

void fail(struct metrics *m, const char *fmt, ...)
{
	va_list ap;

	if (m->failed)
		return; /* keep the first failure */
	m->failed = 1;
	va_start(ap, fmt);
	vsnprintf(m->msg, sizeof(m->msg), fmt, ap);
	va_end(ap);
}

int result_fd = -1;

/* Sends a failed rep's metrics with msg (async-signal-safe). */
static void send_failure(const char *msg)
{
	static struct metrics m;
	const char *b = (const char *)&m;
	size_t left = sizeof(m), i;

	if (result_fd < 0)
		return;
	for (i = 0; i < M_COUNT; i++)
		m.v[i] = NAN;
	m.failed = 1;
	for (i = 0; msg[i] && i < sizeof(m.msg) - 1; i++)
		m.msg[i] = msg[i];
	m.msg[i] = 0;
	while (left) {
		ssize_t w = write(result_fd, b, left);

		if (w <= 0)
			return;
		b += w;
		left -= (size_t)w;
	}
	result_fd = -1;
}

void die(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "uepoll-bench: error: %s\n", buf);
	fflush(stderr);
	send_failure(buf);
	if (wd_pgid > 0)
		kill(-wd_pgid, SIGKILL);
	_exit(2);
}

/* ---- watchdog ----------------------------------------------------------- */

_Atomic uint64_t wd_done;
uint64_t wd_target;
pid_t wd_pgid;
const char *wd_what = "";
static unsigned wd_seconds;

static void wd_fire(int sig)
{
	char buf[256];
	int n;

	(void)sig;
	n = snprintf(buf, sizeof(buf),
		     "uepoll-bench: HANG: %s did not finish within %u s "
		     "(progress %llu of %llu); aborting this rep\n",
		     wd_what, wd_seconds,
		     (unsigned long long)atomic_load(&wd_done),
		     (unsigned long long)wd_target);
	if (n >= (int)sizeof(buf))
		n = (int)sizeof(buf) - 1;
	if (n > 0) {
		(void)!write(STDERR_FILENO, buf, (size_t)n);
		buf[n - 1] = 0;
		send_failure(buf + strlen("uepoll-bench: "));
	}
	if (wd_pgid > 0)
		kill(-wd_pgid, SIGKILL);
	_exit(3);
}

void watchdog_arm(unsigned seconds, const char *what)
{
	wd_seconds = seconds;
	wd_what = what;
	signal(SIGALRM, wd_fire);
	alarm(seconds);
}

int thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	int e = pthread_create(t, NULL, fn, arg);

	if (e)
		die("pthread_create: %s", strerror(e));
	return 0;
}

void thread_join(pthread_t t)
{
	int e = pthread_join(t, NULL);

	if (e)
		die("pthread_join: %s", strerror(e));
}

int pin_self(int n)
{
	/* The CPUs the process may use, captured before the first pin (a
	 * thread started after it inherits the pinned mask). */
	static cpu_set_t all;
	static int count = -1;
	cpu_set_t one;
	int k = 0;

	if (count < 0) {
		if (sched_getaffinity(0, sizeof(all), &all) < 0)
			die("sched_getaffinity: %s", strerror(errno));
		count = CPU_COUNT(&all);
	}
	if (count < 1)
		return 0;
	n %= count;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &all))
			continue;
		if (k++ == n) {
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			if (pthread_setaffinity_np(pthread_self(), sizeof(one),
						   &one))
				die("pthread_setaffinity_np failed");
			break;
		}
	}
	return count;
}

/* ---- a client's text output ---------------------------------------------- */

const char *text_next_line(const char *l)
{
	l = strchr(l, '\n');
	return l && l[1] ? l + 1 : NULL;
}

const char *text_field(const char *text, const char *key)
{
	size_t kl = strlen(key);

	for (const char *l = text; l; l = text_next_line(l)) {
		const char *p = l + strspn(l, " \t");

		if (!strncmp(p, key, kl))
			return p + kl + strspn(p + kl, " \t");
	}
	return NULL;
}

double wrk_latency_us(const char *s)
{
	char *e;
	double v = strtod(s, &e);

	if (e == s)
		return NAN;
	if (!strncmp(e, "us", 2))
		return v;
	if (!strncmp(e, "ms", 2))
		return v * 1e3;
	if (*e == 's')
		return v * 1e6;
	if (*e == 'm')
		return v * 60e6;
	return NAN;
}
