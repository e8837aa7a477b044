/* SPDX-License-Identifier: MIT */
/*
 * minwait - proposal 002 (EPOLL_CTL_MIN_WAIT, Axboe 2022) and issue 6's
 * batching policy.  A producer delivers events at a steady rate (1K, 10K, 100K
 * and 300K events/s: it sleeps to each event's scheduled time, absolute, and
 * writes every event that is due), round robin over `sources` eventfds (a
 * server's connections), to a consumer that waits on an instance, takes
 * what is there and does a little work (work_ns of spinning) per event.
 * Rows per rate:
 *   plain        kernel epoll+eventfd, and uepoll+ueventfd with no policy;
 *   sleep200us   kernel epoll with the production hack the proposal
 *                replaced: sleep 200 us before each epoll_wait;
 *   minwait200us uepoll with UEPOLL_CTL_MIN_WAIT = 200 us (compared with
 *                sleep200us in the ratio column);
 *   minev16+1ms  uepoll with min_events 16 under a 1 ms window;
 *   minwait200us/pipe (100K only): uepoll, min-wait, a pipe (kernel fd).
 * The stop event is registered EPOLLURGENT on batching rows (the kernel
 * ignores the bit; uepoll returns at once for it).
 * Metrics: wakeups_per_event = the consumer thread's voluntary context
 * switches (each is a sleep it was woken from: in a wait or in the hack's
 * sleep) per event; ctx_switches = the consumer thread's voluntary and
 * involuntary switches; cpu_pct_consumer = its CPU time / wall time;
 * latency from each event's write to the moment the consumer took it.
 * Correctness: the consumer takes exactly the events written.
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <uepoll.h>

#define RING (1u << 21)
#define TAG_STOP 1u
#define TAG_SRC0 16u
#define MAXEV 64
#define MAXSRC 64

enum mw_mode { MW_PLAIN, MW_SLEEP, MW_MINWAIT, MW_MINEV };

struct mw {
	const struct sys *s;
	const struct bcase *c;
	struct src src[MAXSRC];
	uint64_t taken[MAXSRC]; /* events taken per source */
	int nsrc, stopfd, ep;
	long work_ns;
	_Atomic uint64_t *stamp;
	_Atomic uint64_t pub_n;
	_Atomic int started;
	uint64_t collected, lat_skipped, cpu_ns, vcsw, ivcsw;
	struct hist *h;
};

static void mw_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "duration_ms", quick ? 100 : 1000);
	params_set(p, "work_ns", 1000);
	params_set(p, "sources", 16);
	*reps = quick ? 1 : 3;
}

static const long mw_rates[] = { 1000, 10000, 100000, 300000 };

static int mw_add(struct bcase *out, int n, int max, long rate,
		  enum mw_mode mode, enum src_kind src, unsigned systems,
		  const char *name, const char *pair)
{
	if (n >= max)
		return n;
	snprintf(out[n].variant, sizeof(out[n].variant), "%ldk/%s",
		 rate / 1000, name);
	if (pair)
		snprintf(out[n].pair, sizeof(out[n].pair), "%ldk/%s",
			 rate / 1000, pair);
	out[n].src = src;
	/* flags: the rate in events/s (low 24 bits), the mode above. */
	out[n].flags = (uint32_t)rate | (uint32_t)mode << 24;
	out[n].systems = systems;
	return n + 1;
}

static int mw_cases(struct bcase *out, int max)
{
	int n = 0;

	for (size_t i = 0; i < sizeof(mw_rates) / sizeof(mw_rates[0]); i++) {
		long r = mw_rates[i];

		n = mw_add(out, n, max, r, MW_PLAIN, SRC_EFD, SYSM_KU, "plain",
			   NULL);
		n = mw_add(out, n, max, r, MW_SLEEP, SRC_EFD, SYSM(SYS_KERNEL),
			   "sleep200us", NULL);
		n = mw_add(out, n, max, r, MW_MINWAIT, SRC_EFD,
			   SYSM(SYS_UEPOLL), "minwait200us", "sleep200us");
		n = mw_add(out, n, max, r, MW_MINEV, SRC_EFD, SYSM(SYS_UEPOLL),
			   "minev16+1ms", "sleep200us");
		if (r == 100000)
			n = mw_add(out, n, max, r, MW_MINWAIT, SRC_PIPE,
				   SYSM(SYS_UEPOLL), "minwait200us/pipe",
				   "sleep200us");
	}
	return n;
}

/* v events of source k were taken at t: each one's latency (source k gets
 * events k, k + nsrc, k + 2 nsrc...), then its work. */
static void mw_take(struct mw *mw, int k, uint64_t v, uint64_t t)
{
	uint64_t pub = atomic_load_explicit(&mw->pub_n, memory_order_acquire);

	for (uint64_t i = mw->taken[k]; i < mw->taken[k] + v; i++) {
		uint64_t j = (uint64_t)k + i * (uint64_t)mw->nsrc;

		if (pub > j + RING / 2) {
			mw->lat_skipped++;
			continue;
		}
		hist_add(mw->h, t - atomic_load_explicit(
					    &mw->stamp[j & (RING - 1)],
					    memory_order_relaxed));
	}
	mw->taken[k] += v;
	mw->collected += v;
	for (uint64_t j = 0; j < v; j++)
		spin_ns(mw->work_ns);
}

static void *mw_consumer(void *arg)
{
	struct mw *mw = arg;
	const struct sys *s = mw->s;
	enum mw_mode mode = (enum mw_mode)(mw->c->flags >> 24);
	struct epoll_event evs[MAXEV];
	struct rusage r0, r1;
	uint64_t c0, v;
	bool stop = false;

	pin_self(1);
	getrusage(RUSAGE_THREAD, &r0);
	c0 = thread_cpu_ns();
	atomic_store(&mw->started, 1);
	while (!stop) {
		int n;

		if (mode == MW_SLEEP)
			sleep_us(200);
		n = s->wait(mw->ep, evs, MAXEV, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("%s: wait: %s", s->name, strerror(errno));
		}
		for (int i = 0; i < n; i++) {
			uint64_t d = evs[i].data.u64;

			if (d == TAG_STOP)
				stop = true;
			else if (d >= TAG_SRC0 &&
				 (v = src_drain(s, &mw->src[d - TAG_SRC0])))
				mw_take(mw, (int)(d - TAG_SRC0), v, now_ns());
		}
	}
	for (int k = 0; k < mw->nsrc; k++)
		if ((v = src_drain(s, &mw->src[k])))
			mw_take(mw, k, v, now_ns());
	mw->cpu_ns = thread_cpu_ns() - c0;
	getrusage(RUSAGE_THREAD, &r1);
	mw->vcsw = (uint64_t)(r1.ru_nvcsw - r0.ru_nvcsw);
	mw->ivcsw = (uint64_t)(r1.ru_nivcsw - r0.ru_nivcsw);
	return NULL;
}

static void mw_run(const struct sys *s, const struct bcase *c,
		   const struct params *p, struct metrics *m)
{
	enum mw_mode mode = (enum mw_mode)(c->flags >> 24);
	uint64_t rate = c->flags & 0xffffff, period = 1000000000ull / rate;
	uint32_t urgent = mode >= MW_MINWAIT ? EPOLLURGENT : 0;
	struct mw mw = { 0 };
	struct epoll_event ev;
	struct meas me;
	pthread_t cons;
	uint64_t n = 0, next, end, pc0, prod_cpu, one = 1;

	mw.s = s;
	mw.c = c;
	mw.work_ns = params_get(p, "work_ns");
	mw.stamp = calloc(RING, sizeof(*mw.stamp));
	mw.h = calloc(1, sizeof(*mw.h));
	if (!mw.stamp || !mw.h)
		die("out of memory");
	mw.nsrc = (int)params_get(p, "sources");
	if (mw.nsrc < 1 || mw.nsrc > MAXSRC)
		die("sources must be 1..%d", MAXSRC);
	for (int k = 0; k < mw.nsrc; k++)
		src_open(s, c->src, &mw.src[k]);
	mw.stopfd = s->efd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	mw.ep = s->create(EPOLL_CLOEXEC);
	if (mw.stopfd < 0 || mw.ep < 0)
		die("%s: create: %s", s->name, strerror(errno));
	for (int k = 0; k < mw.nsrc; k++) {
		ev.events = EPOLLIN;
		ev.data.u64 = TAG_SRC0 + (uint64_t)k;
		if (s->ctl(mw.ep, EPOLL_CTL_ADD, mw.src[k].rfd, &ev) < 0)
			die("%s: ctl add: %s", s->name, strerror(errno));
	}
	ev.events = EPOLLIN | urgent;
	ev.data.u64 = TAG_STOP;
	if (s->ctl(mw.ep, EPOLL_CTL_ADD, mw.stopfd, &ev) < 0)
		die("%s: ctl add stop: %s", s->name, strerror(errno));
	if (mode == MW_MINWAIT) {
		ev.data.u64 = 200;
		if (s->ctl(mw.ep, UEPOLL_CTL_MIN_WAIT, -1, &ev) < 0)
			die("%s: min-wait: %s", s->name, strerror(errno));
	} else if (mode == MW_MINEV) {
		struct uepoll_batch b = { .min_wait_us = 1000,
					  .min_events = 16 };

		if (uepoll_batch(mw.ep, &b, NULL) < 0)
			die("%s: uepoll_batch: %s", s->name, strerror(errno));
	}
	/* Sleeps end on time, not 50 us late (the default timer slack). */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	wd_target = 0;

	pin_self(0);
	thread_start(&cons, mw_consumer, &mw);
	while (!atomic_load(&mw.started))
		sleep_us(100);
	sleep_us(10000);

	meas_begin(&me);
	pc0 = thread_cpu_ns();
	next = me.t0;
	end = me.t0 + (uint64_t)params_get(p, "duration_ms") * 1000000ull;
	while (next < end) {
		uint64_t t = now_ns();

		if (t < next) {
			struct timespec ts = { (time_t)(next / 1000000000u),
					       (long)(next % 1000000000u) };

			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
					NULL);
			continue;
		}
		/* Everything due by now, each stamped as it is written. */
		while (next <= t && next < end) {
			atomic_store_explicit(&mw.stamp[n & (RING - 1)],
					      now_ns(), memory_order_relaxed);
			src_signal(s, &mw.src[n % (uint64_t)mw.nsrc]);
			n++;
			atomic_store_explicit(&mw.pub_n, n,
					      memory_order_release);
			next += period;
		}
		atomic_store_explicit(&wd_done, n, memory_order_relaxed);
	}
	prod_cpu = thread_cpu_ns() - pc0;
	if (s->write(mw.stopfd, &one, sizeof(one)) != sizeof(one))
		die("%s: write stop: %s", s->name, strerror(errno));
	thread_join(cons);
	meas_end(&me, m);

	if (mw.collected != n)
		fail(m, "consumer took %llu events, producer wrote %llu (%s)",
		     (unsigned long long)mw.collected, (unsigned long long)n,
		     mw.collected > n ? "duplicated" : "lost");
	m->v[M_EVENTS] = (double)n;
	m->v[M_EVENTS_PER_S] = (double)n / m->v[M_WALL_S];
	m->v[M_CTX] = (double)(mw.vcsw + mw.ivcsw);
	m->v[M_WAKEUPS_PER_EVENT] = n ? (double)mw.vcsw / (double)n : NAN;
	m->v[M_WAKEUPS_PER_S] = (double)mw.vcsw / m->v[M_WALL_S];
	m->v[M_CPU_CONS] = 100.0 * (double)mw.cpu_ns / 1e9 / m->v[M_WALL_S];
	m->v[M_CPU_PROD] = 100.0 * (double)prod_cpu / 1e9 / m->v[M_WALL_S];
	m->v[M_LAT_P50] = hist_pct_us(mw.h, 50);
	m->v[M_LAT_P99] = hist_pct_us(mw.h, 99);

	s->close(mw.ep);
	s->close(mw.stopfd);
	for (int k = 0; k < mw.nsrc; k++)
		src_close(s, &mw.src[k]);
	free(mw.stamp);
	free(mw.h);
}

const struct scenario sc_minwait = {
	.name = "minwait",
	.proposal = "proposal 002, epoll min-wait (Axboe 2022); issue 6",
	.what = "a producer at 10K/100K/300K events/s, a consumer doing "
		"work_ns per event: plain, sleep hack, min-wait, min_events",
	.headline = M_WAKEUPS_PER_EVENT,
	.size = mw_size,
	.cases = mw_cases,
	.run = mw_run,
};
