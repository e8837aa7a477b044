/* SPDX-License-Identifier: MIT */
/*
 * herd - the thundering herd of proposal 000 (EPOLLEXCLUSIVE, Baron 2015).
 *
 * W waiter threads, each with its own epoll/uepoll instance, watch one shared
 * source (level-triggered, EPOLLIN plus the mode's flags).  The producer
 * signals it E times, `interval_us` apart.  A woken waiter reads the source
 * once, nonblocking (pipe: 4 bytes, eventfd: 8 bytes) and counts what it got.
 * At the end every event must have been read exactly once: the sum over the
 * waiters equals E.  The waiters stop on a second, non-exclusive source (a
 * "stop" eventfd) that every instance also watches.
 */
#include "bench.h"
#include "uepoll.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * The wakeup modes, one line each (a variant per source per mode).  The
 * epoll flags go on the shared source's EPOLL_CTL_ADD.
 */
static const struct herd_mode {
	const char *name;
	uint32_t flags;
	unsigned systems;
	const char *pair; /* kernel mode to compare with; NULL: the same */
} herd_modes[] = {
	{ "wake-all", 0, SYSM_KU, NULL },
	{ "exclusive", EPOLLEXCLUSIVE, SYSM_KU, NULL },
	/* uepoll only, compared with the kernel's exclusive mode */
	{ "exclusive+roundrobin", EPOLLEXCLUSIVE | EPOLLROUNDROBIN,
	  SYSM(SYS_UEPOLL), "exclusive" },
};

static const enum src_kind herd_srcs[] = { SRC_PIPE, SRC_EFD };

#define TAG_SRC 1u
#define TAG_STOP 2u

struct herd;

struct waiter {
	struct herd *h;
	pthread_t t;
	uint64_t events, wakeups, empty, cpu_ns;
};

struct herd {
	const struct sys *s;
	struct src src;
	int stopfd;
	uint32_t flags;
	_Atomic uint64_t total;
	_Atomic int started;
	struct waiter *w;
};

static void herd_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "W", quick ? 8 : 100);
	params_set(p, "E", quick ? 500 : 20000);
	params_set(p, "interval_us", 100);
	*reps = quick ? 1 : 3;
}

static int herd_cases(struct bcase *out, int max)
{
	int n = 0;

	for (size_t s = 0; s < sizeof(herd_srcs) / sizeof(herd_srcs[0]); s++) {
		for (size_t m = 0;
		     m < sizeof(herd_modes) / sizeof(herd_modes[0]); m++) {
			if (n == max)
				return n;
			snprintf(out[n].variant, sizeof(out[n].variant),
				 "%s/%s", src_name(herd_srcs[s]),
				 herd_modes[m].name);
			out[n].src = herd_srcs[s];
			out[n].flags = herd_modes[m].flags;
			out[n].systems = herd_modes[m].systems;
			if (herd_modes[m].pair)
				snprintf(out[n].pair, sizeof(out[n].pair),
					 "%s/%s", src_name(herd_srcs[s]),
					 herd_modes[m].pair);
			n++;
		}
	}
	return n;
}

static void *herd_waiter(void *arg)
{
	struct waiter *w = arg;
	struct herd *h = w->h;
	const struct sys *s = h->s;
	struct epoll_event ev, evs[8];
	uint64_t c0;
	int ep = s->create(EPOLL_CLOEXEC);

	if (ep < 0)
		die("%s: create: %s", s->name, strerror(errno));
	ev.events = EPOLLIN | h->flags;
	ev.data.u64 = TAG_SRC;
	if (s->ctl(ep, EPOLL_CTL_ADD, h->src.rfd, &ev) < 0)
		die("%s: ctl add source (flags 0x%x): %s", s->name, h->flags,
		    strerror(errno));
	ev.events = EPOLLIN;
	ev.data.u64 = TAG_STOP;
	if (s->ctl(ep, EPOLL_CTL_ADD, h->stopfd, &ev) < 0)
		die("%s: ctl add stop: %s", s->name, strerror(errno));
	atomic_fetch_add(&h->started, 1);
	c0 = thread_cpu_ns();

	for (;;) {
		bool got = false, stop = false;
		int n = s->wait(ep, evs, 8, -1);

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
			else
				die("%s: wait returned unknown data %llu",
				    s->name,
				    (unsigned long long)evs[i].data.u64);
		}
		if (got) {
			uint64_t v = src_read_one(s, &h->src);

			w->wakeups++;
			if (v) {
				w->events += v;
				atomic_fetch_add(&h->total, v);
				atomic_fetch_add_explicit(&wd_done, v,
							  memory_order_relaxed);
			} else {
				w->empty++;
			}
		}
		if (stop)
			break;
	}
	w->cpu_ns = thread_cpu_ns() - c0;
	s->close(ep);
	return NULL;
}

static void herd_run(const struct sys *s, const struct bcase *c,
		     const struct params *p, struct metrics *m)
{
	int W = (int)params_get(p, "W");
	uint64_t E = (uint64_t)params_get(p, "E");
	long interval = params_get(p, "interval_us");
	struct herd h = { 0 };
	struct meas me;
	uint64_t pc0, prod_cpu, total, wakeups = 0, empty = 0, cons_cpu = 0,
						 leftover, deadline, one = 1;
	uint64_t *per;
	int nohit = 0;

	h.s = s;
	h.flags = c->flags;
	h.w = calloc((size_t)W, sizeof(*h.w));
	per = calloc((size_t)W, sizeof(*per));
	if (!h.w || !per)
		die("out of memory");
	src_open(s, c->src, &h.src);
	h.stopfd = s->efd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (h.stopfd < 0)
		die("%s: eventfd: %s", s->name, strerror(errno));
	wd_target = E;

	for (int i = 0; i < W; i++) {
		h.w[i].h = &h;
		thread_start(&h.w[i].t, herd_waiter, &h.w[i]);
	}
	while (atomic_load(&h.started) < W)
		sleep_us(100);
	sleep_us(10000); /* let every waiter block in its wait */

	meas_begin(&me);
	pc0 = thread_cpu_ns();
	for (uint64_t e = 0; e < E; e++) {
		src_signal(s, &h.src);
		sleep_us(interval);
	}
	prod_cpu = thread_cpu_ns() - pc0;
	/* Every event must be read; allow the waiters a generous 5 s. */
	deadline = now_ns() + 5000000000ull;
	while (atomic_load(&h.total) < E && now_ns() < deadline)
		sleep_us(100);
	if (s->write(h.stopfd, &one, sizeof(one)) != sizeof(one))
		die("%s: write stop: %s", s->name, strerror(errno));
	for (int i = 0; i < W; i++)
		thread_join(h.w[i].t);
	meas_end(&me, m);

	total = atomic_load(&h.total);
	leftover = src_drain(s, &h.src);
	for (int i = 0; i < W; i++) {
		per[i] = h.w[i].events;
		wakeups += h.w[i].wakeups;
		empty += h.w[i].empty;
		cons_cpu += h.w[i].cpu_ns;
		if (!h.w[i].events)
			nohit++;
	}
	if (total != E) {
		if (total + leftover == E)
			fail(m, "%llu of %llu events were never delivered to "
				"any waiter (still in the source after 5 s: "
				"lost wakeups)",
			     (unsigned long long)leftover,
			     (unsigned long long)E);
		else
			fail(m, "waiters read %llu events, %llu left in the "
				"source, producer wrote %llu (%s)",
			     (unsigned long long)total,
			     (unsigned long long)leftover,
			     (unsigned long long)E,
			     total + leftover > E ? "duplicated" : "lost");
	}

	m->v[M_EVENTS] = (double)E;
	m->v[M_WAKEUPS_PER_EVENT] = (double)wakeups / (double)E;
	m->v[M_NOHIT] = nohit;
	m->v[M_JAIN] = stat_jain(per, W);
	m->v[M_CPU_PROD] = 100.0 * (double)prod_cpu / 1e9 / m->v[M_WALL_S];
	m->v[M_CPU_CONS] = 100.0 * (double)cons_cpu / 1e9 / m->v[M_WALL_S];
	(void)empty;

	s->close(h.stopfd);
	src_close(s, &h.src);
	free(h.w);
	free(per);
}

const struct scenario sc_herd = {
	.name = "herd",
	.proposal = "proposal 000, EPOLLEXCLUSIVE (Baron 2015)",
	.what = "W waiters, one instance each, share one source signalled E "
		"times interval_us apart",
	.headline = M_CTX,
	.size = herd_size,
	.cases = herd_cases,
	.run = herd_run,
};
