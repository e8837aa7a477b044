/* SPDX-License-Identifier: MIT */
/*
 * nested - what `perf bench epoll wait -N` adds to a wait: the instance
 * waited on holds, besides the sources, a chain of `nest` empty instances
 * registered with EPOLLHUP only (each holding the next), as perf's
 * nest_epollfd builds it.  One thread (perf's threads and writer, on two
 * vCPUs, measured the scheduler more than the waits): each iteration makes
 * K of the sources ready, collects them (a zero-timeout wait first) and
 * drains each; every event must come back once.  Headline: events/s; the
 * nest = 0 rows are the same job without the chain.
 */
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <uepoll.h>

static void nested_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "fds", 64);
	params_set(p, "K", 4);
	params_set(p, "iters", quick ? 5000 : 200000);
	*reps = quick ? 1 : 5;
}

static const struct nested_variant {
	const char *name;
	enum src_kind src;
	int nest;
	uint32_t uflags; /* uepoll_create2() options of every instance */
} nested_variants[] = {
	{ "efd-N0", SRC_EFD, 0, 0 },
	{ "efd-N2", SRC_EFD, 2, 0 },
	{ "pipe-N0", SRC_PIPE, 0, 0 },
	{ "pipe-N2", SRC_PIPE, 2, 0 },
	/* The sources in the innermost instance, the chain registered with
	 * EPOLLIN: every event travels up two levels. */
	{ "efd-deep2", SRC_EFD, 2 | 0x100, 0 },
	{ "pipe-deep2", SRC_PIPE, 2 | 0x100, 0 },
	/* deep2 with nothing outside uepoll polling any fd (UEPOLL_NOPOLL
	 * instances, UEVENTFD_NOPOLL sources; the kernel's row is efd-deep2's
	 * job): uepoll-run's default.  The chain's levels need not be exact
	 * for anybody then (LAZY in src/bell.c). */
	{ "efd-nopoll-deep2", SRC_EFD_NOPOLL, 2 | 0x100, UEPOLL_NOPOLL },
};

static int nested_cases(struct bcase *out, int max)
{
	int n = 0;

	for (size_t i = 0;
	     i < sizeof(nested_variants) / sizeof(nested_variants[0]) &&
	     n < max;
	     i++, n++) {
		memset(&out[n], 0, sizeof(out[n]));
		snprintf(out[n].variant, sizeof(out[n].variant), "%s",
			 nested_variants[i].name);
		out[n].src = nested_variants[i].src;
		out[n].flags = (uint32_t)nested_variants[i].nest;
		out[n].uflags = nested_variants[i].uflags;
		out[n].systems = SYSM_KU;
	}
	return n;
}

static void nested_run(const struct sys *s, const struct bcase *c,
		       const struct params *p, struct metrics *m)
{
	int nfds = (int)params_get(p, "fds"), K = (int)params_get(p, "K"),
	    nest = (int)(c->flags & 0xff), ep, chain[8], prev, home;
	bool deep = c->flags & 0x100;
	long iters = params_get(p, "iters");
	struct epoll_event ev, evs[64];
	uint64_t events = 0, waits = 0;
	struct src *src;
	struct meas me;

	if (nfds < 1 || K < 1 || K > nfds || K > 64 || nest > 8)
		die("nested: bad parameters");
	src = calloc((size_t)nfds, sizeof(*src));
	if (!src)
		die("out of memory");
	ep = sys_create(s, c);
	/* The chain, as perf's nest_epollfd: EPOLLHUP only, never ready;
	 * deep: EPOLLIN, and the sources at its end. */
	prev = ep;
	for (int i = 0; i < nest; i++) {
		chain[i] = sys_create(s, c);
		ev.events = deep ? EPOLLIN : EPOLLHUP;
		ev.data.u64 = (uint64_t)nfds + (uint64_t)i;
		if (s->ctl(prev, EPOLL_CTL_ADD, chain[i], &ev) < 0)
			die("%s: nest: %s", s->name, strerror(errno));
		prev = chain[i];
	}
	home = deep ? prev : ep;
	for (int i = 0; i < nfds; i++) {
		src_open(s, c->src, &src[i]);
		ev.events = EPOLLIN;
		ev.data.u64 = (uint64_t)i;
		if (s->ctl(home, EPOLL_CTL_ADD, src[i].rfd, &ev) < 0)
			die("%s: ctl: %s", s->name, strerror(errno));
	}
	wd_target = (uint64_t)iters;

	meas_begin(&me);
	for (long it = 0; it < iters && !m->failed; it++) {
		int base = (int)((it * 13) % nfds), got = 0;

		for (int j = 0; j < K; j++)
			src_signal(s, &src[(base + j) % nfds]);
		while (got < K) {
			int n = s->wait(ep, evs, 64, got ? 1000 : 0);

			waits++;
			/* deep: the outer instance says the chain has
			 * something; the sources' events are the innermost's. */
			if (deep && n > 0) {
				if (n != 1 || evs[0].data.u64 != (uint64_t)nfds)
					die("%s: deep: %d events, data %llu",
					    s->name, n,
					    (unsigned long long)evs[0].data.u64);
				n = s->wait(home, evs, 64, 0);
				waits++;
			}
			if (n < 0 && errno != EINTR)
				die("%s: wait: %s", s->name, strerror(errno));
			if (n == 0 && got) {
				fail(m, "iteration %ld: %d of %d events lost",
				     it, K - got, K);
				break;
			}
			for (int i = 0; i < n; i++) {
				if (evs[i].data.u64 >= (uint64_t)nfds)
					die("%s: unknown data %llu", s->name,
					    (unsigned long long)evs[i].data.u64);
				events += src_drain(s, &src[evs[i].data.u64]);
				got++;
			}
		}
		atomic_fetch_add_explicit(&wd_done, 1, memory_order_relaxed);
	}
	meas_end(&me, m);
	if (!m->failed && events != (uint64_t)iters * (uint64_t)K)
		fail(m, "read %llu events, made %llu",
		     (unsigned long long)events,
		     (unsigned long long)iters * (uint64_t)K);
	m->v[M_EVENTS] = (double)events;
	m->v[M_EVENTS_PER_S] = (double)events / m->v[M_WALL_S];
	m->v[M_NS_PER_EVENT] = m->v[M_WALL_S] * 1e9 / (double)events;
	m->v[M_WAKEUPS_PER_EVENT] = (double)waits / (double)events;

	for (int i = 0; i < nest; i++)
		s->close(chain[i]);
	for (int i = 0; i < nfds; i++)
		src_close(s, &src[i]);
	s->close(ep);
	free(src);
}

const struct scenario sc_nested = {
	.name = "nested",
	.proposal = "perf bench epoll wait -N (issue 19: nested instances)",
	.what = "one thread makes K of fds sources ready and collects them, on "
		"an instance that also holds a chain of nest empty instances",
	.headline = M_EVENTS_PER_S,
	.size = nested_size,
	.cases = nested_cases,
	.run = nested_run,
};
