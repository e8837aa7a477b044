/* SPDX-License-Identifier: MIT */
/*
 * oneshot-mt - proposal 001 (ready list on a wait-free queue, Wong and
 * Desnoyers 2013), like `eponeshotmt -t 4 -w 4 -f 10`.
 *
 * One instance; F eventfds registered EPOLLIN|EPOLLONESHOT.  P producer
 * threads write 1 to the sources round robin, nonstop, until the waiters have
 * handled C events; T waiter threads call wait(maxevents=1), read the source
 * (nonblocking, the whole counter) and re-arm it with EPOLL_CTL_MOD.  After
 * the producers stop, the waiters must collect every write: the sum of the
 * values read equals the number of writes, exactly.
 *
 * As in eponeshotmt, a thread's counts are its own: no atomic shared by the
 * waiters sits in the per-event path (three such counters cost more than
 * uepoll's whole wait+read+MOD on the 2-vCPU reference machine, and would
 * measure the benchmark instead of the library).  Each waiter publishes its
 * progress on a cache line of its own and, every 256 events, sums the
 * waiters' progress and stops the producers once C events were handled.
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <uepoll.h>

struct osm;

struct os_thread {
	struct osm *o;
	pthread_t t;
	int id;
	uint64_t count; /* producer: writes; waiter: events handled */
	uint64_t empty;
	uint64_t cpu_ns;
	/* A waiter's progress, read by the other waiters and the main
	 * thread: events handled and the sum of the values read (relaxed
	 * stores of its own counts). */
	_Alignas(64) _Atomic uint64_t handled, consumed;
	char pad_[64 - 2 * sizeof(uint64_t)];
};

struct osm {
	const struct sys *s;
	int ep, F;
	struct src *src;
	int stopfd;
	uint64_t C;
	long pwork_ns;
	_Atomic int go, stop, started;
	struct os_thread *w; /* the T waiters */
	int T;
};

/* The waiters' totals so far. */
static uint64_t os_sum(struct os_thread *w, int T, bool consumed)
{
	uint64_t n = 0;

	for (int i = 0; i < T; i++)
		n += atomic_load_explicit(consumed ? &w[i].consumed
						   : &w[i].handled,
					  memory_order_relaxed);
	return n;
}

static void os_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "P", 4);
	params_set(p, "T", 4);
	params_set(p, "F", 10);
	params_set(p, "C", quick ? 20000 : 500000);
	/* Work per write (ns of spinning): 0 is eponeshotmt's producers. */
	params_set(p, "pwork_ns", 0);
	*reps = quick ? 1 : 5;
}

/* One line per variant.  The uepoll-only rows pick the ready queue (proposal
 * 001's wait-free queue is uepoll's default; the locked list is the
 * kernel's design) or the waiters' order, and compare with the kernel row. */
static const struct os_variant {
	const char *name;
	uint32_t uflags;
	unsigned systems;
	const char *pair;
	uint32_t pwork_ns; /* 0: the pwork_ns parameter */
} os_variants[] = {
	{ "efd/oneshot", 0, SYSM_KU, "efd/oneshot", 0 },
	/* The waiters in FIFO order (UEPOLL_WAKE_FIFO): its handover cost in
	 * a busy work queue. */
	{ "efd/oneshot/wake=fifo", UEPOLL_WAKE_FIFO, SYSM(SYS_UEPOLL),
	  "efd/oneshot", 0 },
	/* Producers that do 1 us of work per write: the waiters often find
	 * nothing and would sleep; with and without the spin before a sleep
	 * (UEPOLL_NOSPIN). */
	{ "efd/oneshot/work=1us", 0, SYSM_KU, "efd/oneshot/work=1us", 1000 },
	{ "efd/oneshot/work=1us/nospin", UEPOLL_NOSPIN, SYSM(SYS_UEPOLL),
	  "efd/oneshot/work=1us", 1000 },
};

static int os_cases(struct bcase *out, int max)
{
	int n = 0;

	for (size_t i = 0; i < sizeof(os_variants) / sizeof(os_variants[0]) &&
			   n < max;
	     i++, n++) {
		memset(&out[n], 0, sizeof(out[n]));
		snprintf(out[n].variant, sizeof(out[n].variant), "%s",
			 os_variants[i].name);
		out[n].src = SRC_EFD;
		out[n].uflags = os_variants[i].uflags;
		out[n].systems = os_variants[i].systems;
		out[n].flags = os_variants[i].pwork_ns;
		snprintf(out[n].pair, sizeof(out[n].pair), "%s",
			 os_variants[i].pair);
	}
	return n;
}

static void *os_producer(void *arg)
{
	struct os_thread *t = arg;
	struct osm *o = t->o;
	uint64_t c0;
	int i = t->id;
	long work = o->pwork_ns;

	atomic_fetch_add(&o->started, 1);
	while (!atomic_load(&o->go))
		sleep_us(50);
	c0 = thread_cpu_ns();
	while (!atomic_load_explicit(&o->stop, memory_order_relaxed)) {
		spin_ns(work);
		src_signal(o->s, &o->src[i]);
		t->count++;
		if (++i == o->F)
			i = 0;
	}
	t->cpu_ns = thread_cpu_ns() - c0;
	return NULL;
}

static void *os_waiter(void *arg)
{
	struct os_thread *t = arg;
	struct osm *o = t->o;
	const struct sys *s = o->s;
	uint64_t c0 = thread_cpu_ns(), consumed = 0;

	atomic_fetch_add(&o->started, 1);
	for (;;) {
		struct epoll_event ev;
		uint64_t v, idx;
		int n = s->wait(o->ep, &ev, 1, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("%s: wait: %s", s->name, strerror(errno));
		}
		if (n != 1)
			die("%s: wait(-1) returned %d", s->name, n);
		idx = ev.data.u64;
		if (idx == (uint64_t)o->F)
			break; /* stop (level-triggered: everyone sees it) */
		if (idx > (uint64_t)o->F)
			die("%s: wait returned unknown data %llu", s->name,
			    (unsigned long long)idx);
		v = src_read_one(s, &o->src[idx]);
		consumed += v;
		if (!v)
			t->empty++;
		t->count++;
		atomic_store_explicit(&t->consumed, consumed,
				      memory_order_relaxed);
		atomic_store_explicit(&t->handled, t->count,
				      memory_order_relaxed);
		if (!(t->count & 255)) {
			atomic_fetch_add_explicit(&wd_done, 256,
						  memory_order_relaxed);
			if (os_sum(o->w, o->T, false) >= o->C)
				atomic_store(&o->stop, 1);
		}
		ev.events = EPOLLIN | EPOLLONESHOT;
		ev.data.u64 = idx;
		if (s->ctl(o->ep, EPOLL_CTL_MOD, o->src[idx].rfd, &ev) < 0)
			die("%s: ctl mod: %s", s->name, strerror(errno));
	}
	t->cpu_ns = thread_cpu_ns() - c0;
	return NULL;
}

static void os_run(const struct sys *s, const struct bcase *c,
		   const struct params *p, struct metrics *m)
{
	int P = (int)params_get(p, "P"), T = (int)params_get(p, "T");
	struct osm o = { 0 };
	struct os_thread *th;
	struct epoll_event ev;
	struct meas me;
	uint64_t writes = 0, handled = 0, empty = 0, cons_cpu = 0,
		 prod_cpu = 0, consumed, leftover = 0, deadline, one = 1;
	uint64_t *per;

	o.s = s;
	o.F = (int)params_get(p, "F");
	o.C = (uint64_t)params_get(p, "C");
	o.pwork_ns = c->flags ? (long)c->flags : params_get(p, "pwork_ns");
	wd_target = o.C;
	o.src = calloc((size_t)o.F, sizeof(*o.src));
	/* Each thread's progress counters are on their own cache line. */
	th = aligned_alloc(_Alignof(struct os_thread),
			   (size_t)(P + T) * sizeof(*th));
	if (th)
		memset(th, 0, (size_t)(P + T) * sizeof(*th));
	per = calloc((size_t)T, sizeof(*per));
	if (!o.src || !th || !per)
		die("out of memory");
	o.ep = sys_create(s, c);
	for (int i = 0; i < o.F; i++) {
		src_open(s, c->src, &o.src[i]);
		ev.events = EPOLLIN | EPOLLONESHOT;
		ev.data.u64 = (uint64_t)i;
		if (s->ctl(o.ep, EPOLL_CTL_ADD, o.src[i].rfd, &ev) < 0)
			die("%s: ctl add: %s", s->name, strerror(errno));
	}
	o.stopfd = s->efd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (o.stopfd < 0)
		die("%s: eventfd: %s", s->name, strerror(errno));
	ev.events = EPOLLIN;
	ev.data.u64 = (uint64_t)o.F;
	if (s->ctl(o.ep, EPOLL_CTL_ADD, o.stopfd, &ev) < 0)
		die("%s: ctl add stop: %s", s->name, strerror(errno));

	o.w = th + P;
	o.T = T;
	for (int i = 0; i < P + T; i++) {
		th[i].o = &o;
		th[i].id = i < P ? i % o.F : i - P;
		thread_start(&th[i].t, i < P ? os_producer : os_waiter, &th[i]);
	}
	while (atomic_load(&o.started) < P + T)
		sleep_us(100);
	sleep_us(10000);

	meas_begin(&me);
	atomic_store(&o.go, 1);
	for (int i = 0; i < P; i++) {
		thread_join(th[i].t);
		writes += th[i].count;
		prod_cpu += th[i].cpu_ns;
	}
	/* The waiters must now collect every write (generous 5 s). */
	deadline = now_ns() + 5000000000ull;
	while (os_sum(o.w, T, true) < writes && now_ns() < deadline)
		sleep_us(100);
	meas_end(&me, m);
	if (s->write(o.stopfd, &one, sizeof(one)) != sizeof(one))
		die("%s: write stop: %s", s->name, strerror(errno));
	for (int i = P; i < P + T; i++) {
		thread_join(th[i].t);
		handled += th[i].count;
		empty += th[i].empty;
		cons_cpu += th[i].cpu_ns;
		per[i - P] = th[i].count;
	}
	consumed = os_sum(o.w, T, true);
	for (int i = 0; i < o.F; i++)
		leftover += src_drain(s, &o.src[i]);
	if (consumed != writes) {
		if (consumed + leftover == writes)
			fail(m, "%llu of %llu writes were never delivered "
				"(left in the sources 5 s after the producers "
				"stopped: lost wakeups / lost re-arm)",
			     (unsigned long long)leftover,
			     (unsigned long long)writes);
		else
			fail(m, "waiters read %llu, %llu left in the sources, "
				"producers wrote %llu (%s)",
			     (unsigned long long)consumed,
			     (unsigned long long)leftover,
			     (unsigned long long)writes,
			     consumed + leftover > writes ? "duplicated"
							  : "lost");
	}

	m->v[M_EVENTS] = (double)handled;
	m->v[M_EVENTS_PER_S] = (double)handled / m->v[M_WALL_S];
	/* Producer writes per handled event: how hard the producers hit the
	 * counters the waiters read (most writes add to a counter whose item
	 * is already queued or being handled). */
	m->v[M_WRITES_PER_EVENT] = handled ? (double)writes / (double)handled
					   : NAN;
	(void)empty; /* deliveries whose read found nothing: allowed */
	m->v[M_JAIN] = stat_jain(per, T);
	m->v[M_CPU_PROD] = 100.0 * (double)prod_cpu / 1e9 / m->v[M_WALL_S];
	m->v[M_CPU_CONS] = 100.0 * (double)cons_cpu / 1e9 / m->v[M_WALL_S];

	s->close(o.stopfd);
	for (int i = 0; i < o.F; i++)
		src_close(s, &o.src[i]);
	s->close(o.ep);
	free(o.src);
	free(th);
	free(per);
}

const struct scenario sc_oneshot_mt = {
	.name = "oneshot-mt",
	.proposal = "proposal 001, wait-free ready list (Wong/Desnoyers 2013)",
	.what = "P producers write to F EPOLLONESHOT eventfds in one instance; "
		"T threads wait(maxevents=1), read, re-arm; C events",
	.headline = M_EVENTS_PER_S,
	.size = os_size,
	.cases = os_cases,
	.run = os_run,
};
