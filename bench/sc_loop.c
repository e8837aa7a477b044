/* SPDX-License-Identifier: MIT */
/*
 * loop - the single-threaded event loop of proposals 001/003 (epwbench: the
 * ready-list changes must not make the common case slower).
 *
 * One thread, one instance, N sources.  Each iteration makes K of them ready
 * (a different block of K each time), collects them with one wait
 * (maxevents=64, timeout 0) and drains each.  Every source made ready must
 * come back exactly once per iteration.  With idle=1 a polling loop's look
 * follows each iteration: one more zero-timeout wait, which must find
 * nothing (where an instance's fd kept exact for outside pollers costs a
 * system call per event: UEPOLL_NOPOLL).  Headline: wall time per delivered
 * event (the write, the wait and the read); wait_ns_per_event is the time
 * inside the wait calls alone.
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <uepoll.h>

static void loop_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "N", 1000);
	params_set(p, "K", 10);
	params_set(p, "iters", quick ? 5000 : 200000);
	params_set(p, "idle", 0);
	*reps = quick ? 1 : 5;
}

/* One line per variant (a uepoll-only row names the kernel row it compares
 * with in `pair`). */
static const struct loop_variant {
	const char *name;
	enum src_kind src;
	uint32_t uflags;
	unsigned systems;
	const char *pair;
} loop_variants[] = {
	{ "pipe", SRC_PIPE, 0, SYSM_KU, "" },
	{ "efd", SRC_EFD, 0, SYSM_KU, "" },
	/* Nobody polls the ueventfds from outside: no system call to keep
	 * their fds exact (UEVENTFD_NOPOLL). */
	{ "efd-nopoll", SRC_EFD_NOPOLL, 0, SYSM(SYS_UEPOLL), "efd" },
	/* Nor the instance's (UEPOLL_NOPOLL): no doorbell ring or clear
	 * while nobody sleeps. */
	{ "efd-nopoll-inst", SRC_EFD_NOPOLL, UEPOLL_NOPOLL, SYSM(SYS_UEPOLL),
	  "efd" },
};

static int loop_cases(struct bcase *out, int max)
{
	int n = 0;

	for (size_t i = 0;
	     i < sizeof(loop_variants) / sizeof(loop_variants[0]) && n < max;
	     i++, n++) {
		memset(&out[n], 0, sizeof(out[n]));
		snprintf(out[n].variant, sizeof(out[n].variant), "%s",
			 loop_variants[i].name);
		out[n].src = loop_variants[i].src;
		out[n].uflags = loop_variants[i].uflags;
		out[n].systems = loop_variants[i].systems;
		snprintf(out[n].pair, sizeof(out[n].pair), "%s",
			 loop_variants[i].pair);
	}
	return n;
}

static void loop_run(const struct sys *s, const struct bcase *c,
		     const struct params *p, struct metrics *m)
{
	int N = (int)params_get(p, "N"), K = (int)params_get(p, "K");
	long iters = params_get(p, "iters");
	bool idle = params_get(p, "idle") != 0;
	struct src *src;
	uint32_t *seen; /* iteration + 1 at which source i was collected */
	struct epoll_event ev, evs[64];
	struct meas me;
	uint64_t wait_ns = 0, waits = 0, events = 0, empty = 0;
	int ep;

	if (K < 1 || K > N || K > 64)
		die("loop: need 1 <= K <= min(N, 64)");
	src = calloc((size_t)N, sizeof(*src));
	seen = calloc((size_t)N, sizeof(*seen));
	if (!src || !seen)
		die("out of memory");
	ep = sys_create(s, c);
	for (int i = 0; i < N; i++) {
		src_open(s, c->src, &src[i]);
		ev.events = EPOLLIN;
		ev.data.u64 = (uint64_t)i;
		if (s->ctl(ep, EPOLL_CTL_ADD, src[i].rfd, &ev) < 0)
			die("%s: ctl add %d: %s", s->name, i, strerror(errno));
	}
	wd_target = (uint64_t)iters;

	meas_begin(&me);
	for (long it = 0; it < iters && !m->failed; it++) {
		int base = (int)((it * 7919) % N), got = 0;

		for (int j = 0; j < K; j++)
			src_signal(s, &src[(base + j) % N]);
		while (got < K) {
			/* Everything is ready already: one wait should do;
			 * a second one (up to 1 s) only if it did not. */
			uint64_t t0 = now_ns();
			int n = s->wait(ep, evs, 64, got ? 1000 : 0);

			wait_ns += now_ns() - t0;
			waits++;
			if (n < 0) {
				if (errno == EINTR)
					continue;
				die("%s: wait: %s", s->name, strerror(errno));
			}
			if (n == 0 && got) {
				fail(m, "iteration %ld: %d of %d ready sources "
					"never reported (lost)",
				     it, K - got, K);
				break;
			}
			for (int i = 0; i < n; i++) {
				uint64_t idx = evs[i].data.u64, v;

				if (idx >= (uint64_t)N)
					die("%s: wait returned unknown data "
					    "%llu",
					    s->name, (unsigned long long)idx);
				if (seen[idx] == (uint32_t)it + 1)
					fail(m, "iteration %ld: source %llu "
						"reported twice",
					     it, (unsigned long long)idx);
				seen[idx] = (uint32_t)it + 1;
				v = src_drain(s, &src[idx]);
				if (v != 1) {
					empty += v == 0;
					fail(m, "iteration %ld: source %llu "
						"held %llu events, expected 1",
					     it, (unsigned long long)idx,
					     (unsigned long long)v);
				}
				events += v;
				got++;
			}
		}
		if (idle && !m->failed) {
			uint64_t t0 = now_ns();
			int n = s->wait(ep, evs, 64, 0);

			wait_ns += now_ns() - t0;
			waits++;
			if (n > 0)
				fail(m, "iteration %ld: %d events after every "
					"source was drained",
				     it, n);
			else if (n < 0 && errno != EINTR)
				die("%s: wait: %s", s->name, strerror(errno));
		}
		atomic_fetch_add_explicit(&wd_done, 1, memory_order_relaxed);
	}
	meas_end(&me, m);
	if (!m->failed && events != (uint64_t)iters * (uint64_t)K)
		fail(m, "collected %llu events, made %llu ready",
		     (unsigned long long)events,
		     (unsigned long long)iters * (uint64_t)K);

	m->v[M_EVENTS] = (double)events;
	m->v[M_EVENTS_PER_S] = (double)events / m->v[M_WALL_S];
	m->v[M_NS_PER_EVENT] = m->v[M_WALL_S] * 1e9 / (double)events;
	m->v[M_WAIT_NS_PER_EVENT] = (double)wait_ns / (double)events;
	m->v[M_WAKEUPS_PER_EVENT] = (double)waits / (double)events;
	(void)empty;

	for (int i = 0; i < N; i++)
		src_close(s, &src[i]);
	s->close(ep);
	free(src);
	free(seen);
}

const struct scenario sc_loop = {
	.name = "loop",
	.proposal = "proposals 001/003, epwbench single-threaded loop",
	.what = "one thread, N sources; each iteration makes K ready and "
		"collects them with one wait",
	.headline = M_NS_PER_EVENT,
	.size = loop_size,
	.cases = loop_cases,
	.run = loop_run,
};
