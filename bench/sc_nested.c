/* SPDX-License-Identifier: MIT */
/*
 * nested - the shape of the kernel's `perf bench epoll wait -N`: worker
 * threads block in a wait (maxevents 1) on one shared instance that holds
 * the sources and, registered with EPOLLHUP only, a chain of `nest` empty
 * instances (each holding the next); a writer thread writes the sources in
 * turn, keeping at most `window` writes outstanding so the counters stay
 * small.  Each worker reads the source it was given.  Every write must be
 * read once (the sums balance).  Headline: events/s; with nest = 0 the
 * same job without nesting, as the baseline for the cost of the chain.
 */
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void nested_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "threads", 2);
	params_set(p, "fds", 64);
	params_set(p, "window", 16);
	params_set(p, "events", quick ? 20000 : 400000);
	*reps = quick ? 1 : 5;
}

static const struct nested_variant {
	const char *name;
	enum src_kind src;
	int nest;
} nested_variants[] = {
	{ "efd-N0", SRC_EFD, 0 },
	{ "efd-N2", SRC_EFD, 2 },
	{ "pipe-N0", SRC_PIPE, 0 },
	{ "pipe-N2", SRC_PIPE, 2 },
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
		out[n].systems = SYSM_KU;
	}
	return n;
}

struct nested_ctx {
	const struct sys *s;
	int ep, nfds;
	struct src *src;
	long events;
	_Atomic long done;     /* events read */
	_Atomic long written;  /* writes made */
	_Atomic int stop;
	struct metrics *m;
};

static void *nested_worker(void *arg)
{
	struct nested_ctx *x = arg;
	struct epoll_event ev;

	while (!atomic_load_explicit(&x->stop, memory_order_relaxed)) {
		int n = x->s->wait(x->ep, &ev, 1, 100);
		uint64_t v;

		if (n < 0 && errno != EINTR)
			die("%s: wait: %s", x->s->name, strerror(errno));
		if (n <= 0)
			continue;
		if (ev.data.u64 >= (uint64_t)x->nfds)
			die("%s: unknown data %llu", x->s->name,
			    (unsigned long long)ev.data.u64);
		v = src_drain(x->s, &x->src[ev.data.u64]);
		if (v)
			atomic_fetch_add(&x->done, (long)v);
		atomic_fetch_add_explicit(&wd_done, v, memory_order_relaxed);
	}
	return NULL;
}

static void nested_run(const struct sys *s, const struct bcase *c,
		       const struct params *p, struct metrics *m)
{
	int threads = (int)params_get(p, "threads"),
	    nfds = (int)params_get(p, "fds"),
	    window = (int)params_get(p, "window"), nest = (int)c->flags;
	struct nested_ctx x = { .s = s, .nfds = nfds, .m = m };
	struct epoll_event ev;
	pthread_t *th;
	int chain[8], prev;
	struct meas me;

	x.events = params_get(p, "events");
	if (threads < 1 || nfds < 1 || window < 1 || nest > 8)
		die("nested: bad parameters");
	x.src = calloc((size_t)nfds, sizeof(*x.src));
	th = calloc((size_t)threads, sizeof(*th));
	if (!x.src || !th)
		die("out of memory");
	x.ep = sys_create(s, c);
	for (int i = 0; i < nfds; i++) {
		src_open(s, c->src, &x.src[i]);
		ev.events = EPOLLIN;
		ev.data.u64 = (uint64_t)i;
		if (s->ctl(x.ep, EPOLL_CTL_ADD, x.src[i].rfd, &ev) < 0)
			die("%s: ctl: %s", s->name, strerror(errno));
	}
	/* The chain, as perf's nest_epollfd: EPOLLHUP only, never ready. */
	prev = x.ep;
	for (int i = 0; i < nest; i++) {
		chain[i] = sys_create(s, c);
		ev.events = EPOLLHUP;
		ev.data.u64 = (uint64_t)nfds + (uint64_t)i;
		if (s->ctl(prev, EPOLL_CTL_ADD, chain[i], &ev) < 0)
			die("%s: nest: %s", s->name, strerror(errno));
		prev = chain[i];
	}
	wd_target = (uint64_t)x.events;

	meas_begin(&me);
	for (int i = 0; i < threads; i++)
		thread_start(&th[i], nested_worker, &x);
	for (long w = 0; w < x.events; w++) {
		/* At most `window` writes not read yet. */
		while (w - atomic_load_explicit(&x.done, memory_order_relaxed) >=
		       window)
			sched_yield();
		src_signal(s, &x.src[w % nfds]);
	}
	/* Measured to the last read (the workers then leave within their
	 * wait's timeout, unmeasured). */
	while (atomic_load(&x.done) < x.events && !atomic_load(&x.stop))
		sched_yield();
	meas_end(&me, m);
	atomic_store(&x.stop, 1);
	for (int i = 0; i < threads; i++)
		thread_join(th[i]);
	if (atomic_load(&x.done) != x.events)
		fail(m, "read %ld events, wrote %ld", atomic_load(&x.done),
		     x.events);
	m->v[M_EVENTS] = (double)x.events;
	m->v[M_EVENTS_PER_S] = (double)x.events / m->v[M_WALL_S];
	m->v[M_NS_PER_EVENT] = m->v[M_WALL_S] * 1e9 / (double)x.events;
	m->v[M_WAKEUPS_PER_EVENT] = m->v[M_CTX] / (double)x.events;

	for (int i = 0; i < nest; i++)
		s->close(chain[i]);
	for (int i = 0; i < nfds; i++)
		src_close(s, &x.src[i]);
	s->close(x.ep);
	free(x.src);
	free(th);
}

const struct scenario sc_nested = {
	.name = "nested",
	.proposal = "perf bench epoll wait -N (issue 19: nested instances)",
	.what = "threads wait (maxevents 1) on one instance holding the "
		"sources and a chain of nest empty instances; a writer writes "
		"the sources in turn",
	.headline = M_EVENTS_PER_S,
	.size = nested_size,
	.cases = nested_cases,
	.run = nested_run,
};
