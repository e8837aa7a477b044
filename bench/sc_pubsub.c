/* SPDX-License-Identifier: MIT */
/*
 * pubsub - proposal 004 (delayed wakeup for non-semaphore eventfd, Yang
 * 2023).  A publisher writes 1 to one eventfd as fast as it can for a fixed
 * time; a subscriber waits on it (epoll/uepoll instance) and reads the
 * counter.  Each write is stamped in a ring indexed by its sequence number;
 * since every write adds 1, the subscriber knows which writes a read
 * collected.  Latency is per write, from the write to the read that collects
 * it: each read samples LAT_SAMPLES of its writes evenly (the oldest always,
 * so the max is exact), each standing for its share of the read's writes.
 * Correctness: after a final drain, the sum read equals the writes.
 *
 * Variants (issue 7): the kernel eventfd; a ueventfd waking at once; and
 * ueventfds with coalesced wakeups (ueventfd_coalesce): 1 ms and 5 ms delay,
 * and a count threshold; and a 5 ms delay that holds the writes too
 * (UEVENTFD_HOLD_WRITES), so that an awake subscriber is not fed a write at
 * a time.  cpu_pct_other is the process's CPU beyond the two
 * threads: uepoll's timer thread, which delivers the held wakeups.
 * wakeups_per_s counts the subscriber's real wakeups (its voluntary context
 * switches: each is a wait that slept), not its wait calls: a wait that
 * finds the counter non-zero returns without sleeping, on both systems.
 */
#include "bench.h"

#include <uepoll.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>

#define RING_BITS 22
#define RING (1u << RING_BITS)

#define LAT_SAMPLES 8u

#define TAG_SRC 1u
#define TAG_STOP 2u

struct ps {
	const struct sys *s;
	struct src src;
	int stopfd, ep;
	_Atomic uint64_t *stamp; /* write seq -> ns */
	_Atomic uint64_t pub_n;  /* writes done */
	_Atomic int go, started;
	uint64_t duration_ns;
	/* subscriber results */
	uint64_t collected, wakeups, lat_skipped, cpu_ns;
	struct hist *h;
};

static void ps_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "duration_ms", quick ? 200 : 2000);
	*reps = quick ? 1 : 5;
}

/* bcase.flags indexes this table. */
static const struct ps_variant {
	const char *name;
	unsigned systems;
	uint32_t delay_us;
	uint64_t count;
	uint32_t flags; /* struct ueventfd_coalesce.flags */
} ps_variants[] = {
	{ "efd", SYSM_KU, 0, 0, 0 },
	/* UEVENTFD_NOPOLL: bench.h, SRC_EFD_NOPOLL. */
	{ "efd-nopoll", SYSM(SYS_UEPOLL), 0, 0, 0 },
	{ "efd-delay1ms", SYSM(SYS_UEPOLL), 1000, 0, 0 },
	{ "efd-delay5ms", SYSM(SYS_UEPOLL), 5000, 0, 0 },
	/* The count ends most holds early: a wakeup per 64k writes. */
	{ "efd-delay5ms-count64k", SYSM(SYS_UEPOLL), 5000, 65536, 0 },
	/* The writes held too: an awake subscriber that drained the counter
	 * does not see the next writes until their batch is shown. */
	{ "efd-hold5ms", SYSM(SYS_UEPOLL), 5000, 0, UEVENTFD_HOLD_WRITES },
};

static int ps_cases(struct bcase *out, int max)
{
	int n = 0;

	for (size_t i = 0; i < sizeof(ps_variants) / sizeof(ps_variants[0]) &&
			   n < max;
	     i++, n++) {
		snprintf(out[n].variant, sizeof(out[n].variant), "%s",
			 ps_variants[i].name);
		out[n].src = strcmp(ps_variants[i].name, "efd-nopoll")
				     ? SRC_EFD
				     : SRC_EFD_NOPOLL;
		out[n].flags = (uint32_t)i;
		out[n].systems = ps_variants[i].systems;
		snprintf(out[n].pair, sizeof(out[n].pair), "efd");
	}
	return n;
}

/*
 * Context switches of uepoll's timer thread ("uepoll-timer") so far; it
 * starts inside this rep's process, so that is all of this rep's.  NaN when
 * the process has none.
 */
static double ps_timer_ctx(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	double n = NAN;

	if (!d)
		return NAN;
	while ((de = readdir(d))) {
		char path[300], line[128];
		long v;
		FILE *f;
		bool timer = false;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		timer = fgets(line, sizeof(line), f) &&
			!strncmp(line, "uepoll-timer", 12);
		fclose(f);
		if (!timer)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status",
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		n = 0;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1 ||
			    sscanf(line, "nonvoluntary_ctxt_switches: %ld",
				   &v) == 1)
				n += (double)v;
		fclose(f);
	}
	closedir(d);
	return n;
}

static void ps_collect(struct ps *ps, uint64_t v)
{
	uint64_t pub = atomic_load_explicit(&ps->pub_n, memory_order_acquire);

	ps->lat_skipped += hist_add_stamps(ps->h, ps->stamp, RING,
					   ps->collected, v, pub, now_ns(),
					   LAT_SAMPLES);
	ps->collected += v;
}

static void *ps_sub(void *arg)
{
	struct ps *ps = arg;
	const struct sys *s = ps->s;
	struct epoll_event evs[4];
	bool stop = false;
	uint64_t c0 = thread_cpu_ns(), v;
	struct rusage ru0, ru1;

	pin_self(1);
	getrusage(RUSAGE_THREAD, &ru0);
	atomic_fetch_add(&ps->started, 1);
	while (!stop) {
		bool got = false;
		int n = s->wait(ps->ep, evs, 4, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("%s: wait: %s", s->name, strerror(errno));
		}
		for (int i = 0; i < n; i++) {
			if (evs[i].data.u64 == TAG_SRC)
				got = true;
			else if (evs[i].data.u64 == TAG_STOP)
				stop = true;
		}
		if (got) {
			v = src_read_one(s, &ps->src);
			if (v)
				ps_collect(ps, v);
		}
	}
	/* The publisher has stopped: collect whatever is left. */
	v = src_read_one(s, &ps->src);
	if (v)
		ps_collect(ps, v);
	ps->cpu_ns = thread_cpu_ns() - c0;
	getrusage(RUSAGE_THREAD, &ru1);
	ps->wakeups = (uint64_t)(ru1.ru_nvcsw - ru0.ru_nvcsw);
	return NULL;
}

static void ps_run(const struct sys *s, const struct bcase *c,
		   const struct params *p, struct metrics *m)
{
	struct ps ps = { 0 };
	struct epoll_event ev;
	struct meas me;
	pthread_t sub;
	uint64_t n = 0, end, pc0, prod_cpu, one = 1;

	ps.s = s;
	ps.duration_ns = (uint64_t)params_get(p, "duration_ms") * 1000000ull;
	ps.stamp = calloc(RING, sizeof(*ps.stamp));
	ps.h = calloc(1, sizeof(*ps.h));
	if (!ps.stamp || !ps.h)
		die("out of memory");
	src_open(s, c->src, &ps.src);
	if (s->id == SYS_UEPOLL) {
		const struct ps_variant *v = &ps_variants[c->flags];
		struct ueventfd_coalesce co = { .delay_us = v->delay_us,
						.flags = v->flags,
						.count = v->count };

		if (ueventfd_coalesce(ps.src.rfd, &co, NULL) < 0)
			die("ueventfd_coalesce: %s", strerror(errno));
	}
	ps.stopfd = s->efd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ps.ep = s->create(EPOLL_CLOEXEC);
	if (ps.stopfd < 0 || ps.ep < 0)
		die("%s: create: %s", s->name, strerror(errno));

	ev.events = EPOLLIN;
	ev.data.u64 = TAG_SRC;
	if (s->ctl(ps.ep, EPOLL_CTL_ADD, ps.src.rfd, &ev) < 0)
		die("%s: ctl add: %s", s->name, strerror(errno));
	ev.data.u64 = TAG_STOP;
	if (s->ctl(ps.ep, EPOLL_CTL_ADD, ps.stopfd, &ev) < 0)
		die("%s: ctl add stop: %s", s->name, strerror(errno));
	wd_target = 0;

	/* As in the proposal (taskset -c 2-3): one CPU each. */
	pin_self(0);
	thread_start(&sub, ps_sub, &ps);
	while (atomic_load(&ps.started) < 1)
		sleep_us(100);
	sleep_us(10000);

	meas_begin(&me);
	pc0 = thread_cpu_ns();
	end = me.t0 + ps.duration_ns;
	for (;;) {
		uint64_t t = now_ns();

		if (t >= end)
			break;
		atomic_store_explicit(&ps.stamp[n & (RING - 1)], t,
				      memory_order_relaxed);
		src_signal(s, &ps.src);
		n++;
		atomic_store_explicit(&ps.pub_n, n, memory_order_release);
		if (!(n & 1023))
			atomic_store_explicit(&wd_done, n,
					      memory_order_relaxed);
	}
	prod_cpu = thread_cpu_ns() - pc0;
	if (s->write(ps.stopfd, &one, sizeof(one)) != sizeof(one))
		die("%s: write stop: %s", s->name, strerror(errno));
	thread_join(sub);
	meas_end(&me, m);
	/* Writes held by UEVENTFD_HOLD_WRITES are shown within the delay
	 * (a generous second here): collect them before judging. */
	for (uint64_t t0 = now_ns();
	     ps.collected < n && now_ns() - t0 < 1000000000ull;) {
		uint64_t v = src_read_one(s, &ps.src);

		if (v)
			ps_collect(&ps, v);
		else
			sleep_us(1000);
	}

	if (ps.collected != n) {
		uint64_t left = src_drain(s, &ps.src);

		fail(m, "subscriber read %llu, publisher wrote %llu, %llu "
			"still in the eventfd after the final drain (%s)",
		     (unsigned long long)ps.collected, (unsigned long long)n,
		     (unsigned long long)left,
		     ps.collected > n ? "duplicated" : "lost");
	}

	m->v[M_EVENTS] = (double)n;
	m->v[M_EVENTS_PER_S] = (double)n / m->v[M_WALL_S];
	m->v[M_WAKEUPS_PER_S] = (double)ps.wakeups / m->v[M_WALL_S];
	m->v[M_WAKEUPS_PER_EVENT] = n ? (double)ps.wakeups / (double)n : NAN;
	m->v[M_CPU_CONS] = 100.0 * (double)ps.cpu_ns / 1e9 / m->v[M_WALL_S];
	m->v[M_CPU_PROD] = 100.0 * (double)prod_cpu / 1e9 / m->v[M_WALL_S];
	m->v[M_LAT_P50] = hist_pct_us(ps.h, 50);
	m->v[M_LAT_P99] = hist_pct_us(ps.h, 99);
	m->v[M_LAT_MAX] = hist_pct_us(ps.h, 100);
	if (s->id == SYS_UEPOLL)
		m->v[M_TIMER_CTX_PER_S] = ps_timer_ctx() / m->v[M_WALL_S];
	m->v[M_CPU_OTHER] = 100.0 * fmax(0.0, (m->v[M_USER_S] + m->v[M_SYS_S]) -
						      ((double)ps.cpu_ns +
						       (double)prod_cpu) / 1e9) /
			    m->v[M_WALL_S];

	s->close(ps.ep);
	s->close(ps.stopfd);
	src_close(s, &ps.src);
	free(ps.stamp);
	free(ps.h);
}

const struct scenario sc_pubsub = {
	.name = "pubsub",
	.proposal = "proposal 004, eventfd delayed wakeup (Yang 2023)",
	.what = "a publisher writes one eventfd as fast as it can for "
		"duration_ms; a subscriber waits and reads",
	.headline = M_CPU_CONS,
	.size = ps_size,
	.cases = ps_cases,
	.run = ps_run,
};
