/* SPDX-License-Identifier: MIT */
/*
 * xpubsub - pubsub (proposal 004) as the proposal ran it: publisher and
 * subscriber are two processes, sharing one eventfd made before the fork
 * (issue 21).  The rep's process makes the eventfd (and, on uepoll, sets
 * its coalescing before the fork), forks the subscriber, and writes 1 as
 * fast as it can for duration_ms; the subscriber makes its own instance
 * after the fork, waits on it and reads.  Each write is stamped in a ring
 * in shared memory (MAP_SHARED), which also carries the write count and
 * the subscriber's results back; latency as in pubsub.
 *
 * Rows: the kernel eventfd; a ueventfd waking at once; coalesced 1 ms and
 * 5 ms; 5 ms with UEVENTFD_HOLD_WRITES.  fork() shares the ueventfd's
 * counter (and its coalescing setting) with the child (SHARED in
 * src/eventfd.c).
 *
 * Metrics: events_per_s = the publisher's writes per second;
 * cpu_pct_consumer = the subscriber process's CPU (getrusage in it, all
 * its threads); wakeups_per_s = the subscriber's voluntary context
 * switches per second (each a wait that slept); cpu_pct_producer = the
 * publisher thread; cpu_pct_other = the publisher's process beyond that
 * thread (uepoll's timer thread).  Correctness: the subscriber's sum, and
 * what a final drain finds, add up to the writes.
 */
#include "bench.h"

#include <uepoll.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define XPS_RING_BITS 21
#define XPS_RING (1u << XPS_RING_BITS)
#define XPS_LAT_SAMPLES 8u

#define TAG_SRC 1u
#define TAG_STOP 2u

/* Shared between the two processes. */
struct xps_shm {
	_Atomic uint64_t pub_n; /* writes done */
	_Atomic int started, ended;
	/* the subscriber's results */
	uint64_t collected, wakeups, lat_skipped;
	double cpu_s, wall_s;
	int failed;
	char msg[160];
	struct hist h;
	_Atomic uint64_t stamp[XPS_RING]; /* write seq -> ns */
};

static void xps_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "duration_ms", quick ? 200 : 2000);
	*reps = quick ? 1 : 3;
}

static const struct xps_variant {
	const char *name;
	unsigned systems;
	uint32_t delay_us, flags;
} xps_variants[] = {
	{ "efd", SYSM_KU, 0, 0 },
	{ "efd-delay1ms", SYSM(SYS_UEPOLL), 1000, 0 },
	{ "efd-delay5ms", SYSM(SYS_UEPOLL), 5000, 0 },
	{ "efd-hold5ms", SYSM(SYS_UEPOLL), 5000, UEVENTFD_HOLD_WRITES },
};

static int xps_cases(struct bcase *out, int max)
{
	int n = 0;

	for (size_t i = 0; i < sizeof(xps_variants) / sizeof(xps_variants[0]) &&
			   n < max;
	     i++, n++) {
		memset(&out[n], 0, sizeof(out[n]));
		snprintf(out[n].variant, sizeof(out[n].variant), "%s",
			 xps_variants[i].name);
		out[n].src = SRC_EFD;
		out[n].flags = (uint32_t)i;
		out[n].systems = xps_variants[i].systems;
		snprintf(out[n].pair, sizeof(out[n].pair), "efd");
	}
	return n;
}

static double ru_cpu_s(const struct rusage *ru)
{
	return (double)ru->ru_utime.tv_sec + (double)ru->ru_utime.tv_usec / 1e6 +
	       (double)ru->ru_stime.tv_sec + (double)ru->ru_stime.tv_usec / 1e6;
}

/* A read of v writes, from the write seq `first` on: latency samples. */
static void xps_collect(struct xps_shm *sh, uint64_t v)
{
	uint64_t pub = atomic_load_explicit(&sh->pub_n, memory_order_acquire);

	sh->lat_skipped += hist_add_stamps(&sh->h, sh->stamp, XPS_RING,
					   sh->collected, v, pub, now_ns(),
					   XPS_LAT_SAMPLES);
	sh->collected += v;
}

static _Noreturn void xps_sub_fail(struct xps_shm *sh, const char *what)
{
	snprintf(sh->msg, sizeof(sh->msg), "subscriber: %s: %s", what,
		 strerror(errno));
	sh->failed = 1;
	_exit(2);
}

/* The subscriber process: its own instance, made after the fork. */
static _Noreturn void xps_sub(const struct sys *s, struct xps_shm *sh,
			      const struct src *src, int stop_rfd)
{
	struct epoll_event ev = { .events = EPOLLIN }, evs[4];
	struct rusage ru0, ru1, rt0, rt1;
	uint64_t t0, v;
	bool stop = false;
	int ep;

	result_fd = -1; /* the rep's result is the publisher's to send */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	pin_self(1);
	ep = s->create(EPOLL_CLOEXEC);
	if (ep < 0)
		xps_sub_fail(sh, "create");
	ev.data.u64 = TAG_SRC;
	if (s->ctl(ep, EPOLL_CTL_ADD, src->rfd, &ev) < 0)
		xps_sub_fail(sh, "ctl add");
	ev.data.u64 = TAG_STOP;
	if (s->ctl(ep, EPOLL_CTL_ADD, stop_rfd, &ev) < 0)
		xps_sub_fail(sh, "ctl add stop");
	t0 = now_ns();
	getrusage(RUSAGE_SELF, &ru0);
	getrusage(RUSAGE_THREAD, &rt0);
	atomic_store(&sh->started, 1);
	while (!stop) {
		bool got = false;
		int n = s->wait(ep, evs, 4, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			xps_sub_fail(sh, "wait");
		}
		for (int i = 0; i < n; i++) {
			if (evs[i].data.u64 == TAG_SRC)
				got = true;
			else if (evs[i].data.u64 == TAG_STOP)
				stop = true;
		}
		if (got && (v = src_read_one(s, src)))
			xps_collect(sh, v);
	}
	/* The publisher has stopped: what it wrote is shown within the
	 * delay (held writes too); a generous second. */
	for (uint64_t t = now_ns();
	     sh->collected < atomic_load(&sh->pub_n) &&
	     now_ns() - t < 1000000000ull;) {
		if ((v = src_read_one(s, src)))
			xps_collect(sh, v);
		else
			sleep_us(1000);
	}
	getrusage(RUSAGE_THREAD, &rt1);
	getrusage(RUSAGE_SELF, &ru1);
	sh->wall_s = (double)(now_ns() - t0) / 1e9;
	sh->cpu_s = ru_cpu_s(&ru1) - ru_cpu_s(&ru0);
	sh->wakeups = (uint64_t)(rt1.ru_nvcsw - rt0.ru_nvcsw);
	s->close(ep);
	_exit(0);
}

static void xps_run(const struct sys *s, const struct bcase *c,
		    const struct params *p, struct metrics *m)
{
	const struct xps_variant *xv = &xps_variants[c->flags];
	uint64_t dur = (uint64_t)params_get(p, "duration_ms") * 1000000ull;
	uint64_t n = 0, end, pc0, prod_cpu, deadline;
	struct xps_shm *sh;
	struct src src;
	struct meas me;
	int stop[2], st = 0;
	pid_t pid;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	src_open(s, c->src, &src);
	if (s->id == SYS_UEPOLL && xv->delay_us) {
		struct ueventfd_coalesce co = { .delay_us = xv->delay_us,
						.flags = xv->flags };

		if (ueventfd_coalesce(src.rfd, &co, NULL) < 0)
			die("ueventfd_coalesce: %s", strerror(errno));
	}
	if (pipe2(stop, O_CLOEXEC) < 0)
		die("pipe2: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(stop[1]);
		xps_sub(s, sh, &src, stop[0]);
	}
	close(stop[0]);
	wd_target = 0;
	pin_self(0);
	while (!atomic_load(&sh->started)) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			die("the subscriber ended at its start: %s",
			    sh->msg[0] ? sh->msg : "?");
		sleep_us(100);
	}
	sleep_us(10000);

	meas_begin(&me);
	pc0 = thread_cpu_ns();
	end = me.t0 + dur;
	for (;;) {
		uint64_t t = now_ns();

		if (t >= end)
			break;
		atomic_store_explicit(&sh->stamp[n & (XPS_RING - 1)], t,
				      memory_order_relaxed);
		src_signal(s, &src);
		n++;
		atomic_store_explicit(&sh->pub_n, n, memory_order_release);
		if (!(n & 1023))
			atomic_store_explicit(&wd_done, n,
					      memory_order_relaxed);
	}
	prod_cpu = thread_cpu_ns() - pc0;
	if (write(stop[1], "s", 1) != 1)
		die("write stop: %s", strerror(errno));
	/* The subscriber ends within its second of draining; 5 s is a hang. */
	deadline = now_ns() + 5000000000ull;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			break;
		if (now_ns() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail(m, "the subscriber hung after the publisher stopped "
				"(read %llu of %llu)",
			     (unsigned long long)sh->collected,
			     (unsigned long long)n);
			break;
		}
		sleep_us(1000);
	}
	meas_end(&me, m);
	close(stop[1]);
	if (sh->failed)
		fail(m, "%s", sh->msg);
	else if (!WIFEXITED(st) || WEXITSTATUS(st))
		fail(m, "the subscriber ended with status 0x%x", st);
	if (sh->collected != n) {
		uint64_t left = src_drain(s, &src);

		fail(m, "subscriber read %llu, publisher wrote %llu, %llu "
			"still in the eventfd after the final drain (%s)",
		     (unsigned long long)sh->collected, (unsigned long long)n,
		     (unsigned long long)left,
		     sh->collected + left == n ? "stranded"
		     : sh->collected + left > n ? "duplicated" : "lost");
	}

	m->v[M_EVENTS] = (double)n;
	m->v[M_EVENTS_PER_S] = (double)n / m->v[M_WALL_S];
	if (sh->wall_s > 0) {
		m->v[M_WAKEUPS_PER_S] = (double)sh->wakeups / sh->wall_s;
		m->v[M_CPU_CONS] = 100.0 * sh->cpu_s / sh->wall_s;
	}
	m->v[M_WAKEUPS_PER_EVENT] = n ? (double)sh->wakeups / (double)n : NAN;
	m->v[M_CPU_PROD] = 100.0 * (double)prod_cpu / 1e9 / m->v[M_WALL_S];
	m->v[M_CPU_OTHER] = 100.0 *
			    fmax(0.0, m->v[M_USER_S] + m->v[M_SYS_S] -
					      (double)prod_cpu / 1e9) /
			    m->v[M_WALL_S];
	m->v[M_LAT_P50] = hist_pct_us(&sh->h, 50);
	m->v[M_LAT_P99] = hist_pct_us(&sh->h, 99);
	m->v[M_LAT_MAX] = hist_pct_us(&sh->h, 100);
	src_close(s, &src);
	munmap(sh, sizeof(*sh));
}

const struct scenario sc_xpubsub = {
	.name = "xpubsub",
	.proposal = "proposal 004, eventfd delayed wakeup (Yang 2023), "
		    "publisher and subscriber in two processes (issue 21)",
	.what = "a publisher writes one eventfd as fast as it can for "
		"duration_ms; a forked subscriber waits and reads",
	.headline = M_CPU_CONS,
	.size = xps_size,
	.cases = xps_cases,
	.run = xps_run,
};
