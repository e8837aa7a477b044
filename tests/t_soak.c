/*
 * t_soak: a bounded random concurrent workload.  Threads add, modify,
 * delete, nest and un-nest, close and re-create, write, read and wait at
 * once on one set of instances and ueventfds, for UEPOLL_SOAK_SECONDS
 * (default 2 s, times t_scale()); scripts/soak.sh runs it for longer.
 *
 * fd numbers are reused after a close, so every object sits in a slot with
 * a rwlock: a thread using an fd holds the slot's read lock, the thread
 * that closes and re-creates it the write lock (locks are always taken in
 * slot order).  Closing a ueventfd therefore races with waits and harvests
 * on every instance watching it, and closing an instance with the waits of
 * the instances holding it, which is what is tested.  Chaos ueventfds are
 * made plain, coalescing (a delay of 1-300 us, some with a count) or
 * holding their writes (UEVENTFD_HOLD_WRITES), at random per incarnation:
 * held wakeups and held writes race with everything too (a ueventfd is set
 * plain before it is drained, which shows what it held).
 *
 * What must hold:
 *  - ctl answers as the model says: ADD gives 0, or EEXIST iff the pair is
 *    registered (ELOOP/EINVAL are accepted for nesting only, when not
 *    registered: loops and depth depend on other pairs); MOD and DEL give
 *    0, or ENOENT iff not registered; MOD of an exclusive one EINVAL.  Each
 *    pair's ctl calls are serialised by the pair's mutex, so the model is
 *    exact even with everything else running.
 *  - Balance: for every incarnation of every ueventfd, the total written
 *    equals the total read by all threads plus what the closing thread (or
 *    the final check) drains from it.  Checked at every close and at the
 *    end.
 *  - No lost wakeup: a ping-pong pair of threads runs through it all (one
 *    writes "ping" and blocks in uepoll_wait until "pong"; the other blocks
 *    until "ping" and answers; a ping of 2 ends it), its instance nested in
 *    a chaos instance; a wait that does not return within 10 s (a loose
 *    bound: a hang) fails.
 *  - Every ready source is reported at quiescence: after the threads are
 *    joined, each registration is made level-triggered again (MOD; DEL+ADD
 *    for exclusive ones), 1 is written to every ueventfd, and a wait on each
 *    instance must return exactly its registered ueventfds and the nested
 *    instances that are ready (by the model, recursively), nothing else.
 */
#include "testlib.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#define NI 4		/* chaos instances */
#define NE 6		/* chaos ueventfds */
#define NCHAOS 3
#define NWAIT 2

#define K_EFD 1ull
#define K_INST 2ull
#define K_PING 3ull
#define DATA(k, gen, idx) ((k) << 56 | (uint64_t)(gen) << 16 | (uint64_t)(idx))
#define D_KIND(d) ((d) >> 56)
#define D_GEN(d) ((uint32_t)((d) >> 16) & 0xffffffffu)
#define D_IDX(d) ((int)((d) & 0xffff))

struct slot {
	pthread_rwlock_t lock;
	int fd;
	uint32_t gen; /* incarnation, in event data */
	/* ueventfds: totals of this incarnation */
	_Atomic uint64_t written, read;
};

static struct slot inst[NI], efd[NE];
/* model, per pair, under the pair's mutex */
static pthread_mutex_t pair_mtx[NI][NE], nest_mtx[NI][NI];
static bool reg[NI][NE], excl[NI][NE], nest[NI][NI];

static _Atomic bool stop;
static _Atomic unsigned long n_ops, n_writes, n_reads, n_ctl, n_nest,
	n_closes, n_events, n_pings, n_bad;

#define BAD(...)                                                             \
	do {                                                                 \
		fprintf(stderr, __VA_ARGS__);                                \
		atomic_fetch_add(&n_bad, 1);                                 \
	} while (0)

static void slot_init(struct slot *s)
{
	pthread_rwlockattr_t a;

	pthread_rwlockattr_init(&a);
	/* a closer must not starve behind a stream of waiters */
	pthread_rwlockattr_setkind_np(&a,
		PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&s->lock, &a);
	pthread_rwlockattr_destroy(&a);
}

static int new_efd(void)
{
	int fd = ueventfd(0, EFD_NONBLOCK);

	REQUIRE(fd >= 0);
	return fd;
}

/* A chaos ueventfd: plain, coalescing, or holding its writes. */
static uint32_t rnd(uint64_t *st, uint32_t n);
static int new_chaos_efd(uint64_t *st)
{
	int fd = new_efd();
	uint32_t kind = rnd(st, 3);
	struct ueventfd_coalesce co = {
		.delay_us = kind ? 1 + rnd(st, 300) : 0,
		.flags = kind == 2 ? UEVENTFD_HOLD_WRITES : 0,
		.count = rnd(st, 4) ? 0 : 1 + rnd(st, 8),
	};

	REQUIRE(ueventfd_coalesce(fd, &co, NULL) == 0);
	return fd;
}

/* Plain again: what a coalescing ueventfd holds is shown (and woken). */
static void efd_plain(int fd)
{
	static const struct ueventfd_coalesce plain;

	if (ueventfd_coalesce(fd, &plain, NULL) != 0)
		BAD("ueventfd_coalesce plain: errno %d\n", errno);
}

static int new_inst(void)
{
	int fd = uepoll_create1(0);

	REQUIRE(fd >= 0);
	return fd;
}

/* Read a ueventfd until EAGAIN; the total read. */
static uint64_t drain(int fd)
{
	uint64_t v, sum = 0;
	ssize_t r;

	while ((r = uepoll_read(fd, &v, sizeof(v))) == 8)
		sum += v;
	if (!(r < 0 && errno == EAGAIN))
		BAD("drain: read returned %zd errno %d\n", r, errno);
	return sum;
}

/* Closing: the incarnation must balance. */
static void efd_retire(int e)
{
	struct slot *s = &efd[e];
	uint64_t w, r;

	efd_plain(s->fd);
	atomic_fetch_add(&s->read, drain(s->fd));
	w = atomic_load(&s->written);
	r = atomic_load(&s->read);
	if (w != r)
		BAD("efd %d gen %u: written %llu, read %llu\n", e, s->gen,
		    (unsigned long long)w, (unsigned long long)r);
}

static uint32_t rnd(uint64_t *st, uint32_t n)
{
	return (uint32_t)(t_rand(st) % n);
}

/* ---- chaos ops ---- */

static void op_write(uint64_t *st)
{
	int e = (int)rnd(st, NE);
	uint64_t v = 1 + rnd(st, 3);

	pthread_rwlock_rdlock(&efd[e].lock);
	if (ueventfd_write(efd[e].fd, v) == 0)
		atomic_fetch_add(&efd[e].written, v);
	else
		BAD("write efd %d: errno %d\n", e, errno);
	pthread_rwlock_unlock(&efd[e].lock);
	atomic_fetch_add(&n_writes, 1);
}

static void op_read(uint64_t *st)
{
	int e = (int)rnd(st, NE);
	uint64_t v;

	pthread_rwlock_rdlock(&efd[e].lock);
	if (uepoll_read(efd[e].fd, &v, sizeof(v)) == 8)
		atomic_fetch_add(&efd[e].read, v);
	else if (errno != EAGAIN)
		BAD("read efd %d: errno %d\n", e, errno);
	pthread_rwlock_unlock(&efd[e].lock);
	atomic_fetch_add(&n_reads, 1);
}

static uint32_t rnd_events(uint64_t *st, bool *is_excl)
{
	static const uint32_t evs[] = {
		EPOLLIN, EPOLLIN, EPOLLIN | EPOLLET, EPOLLIN | EPOLLONESHOT,
		EPOLLIN | EPOLLET | EPOLLONESHOT, EPOLLIN | EPOLLOUT,
		EPOLLIN | EPOLLEXCLUSIVE,
		EPOLLIN | EPOLLEXCLUSIVE | EPOLLROUNDROBIN,
	};
	uint32_t ev = evs[rnd(st, 8)];

	*is_excl = ev & EPOLLEXCLUSIVE;
	return ev;
}

static void op_ctl(uint64_t *st)
{
	int i = (int)rnd(st, NI), e = (int)rnd(st, NE), op = 1 + (int)rnd(st, 3);
	struct epoll_event ev;
	bool x;
	int r, want;

	ev.events = rnd_events(st, &x);
	if (op != EPOLL_CTL_ADD) {
		/* exclusive only on ADD; MOD with it is the kernel's EINVAL
		 * anyway, which the model does not need to cover */
		ev.events &= ~(uint32_t)(EPOLLEXCLUSIVE | EPOLLROUNDROBIN);
		x = false;
	}
	pthread_rwlock_rdlock(&inst[i].lock);
	pthread_rwlock_rdlock(&efd[e].lock);
	pthread_mutex_lock(&pair_mtx[i][e]);
	ev.data.u64 = DATA(K_EFD, efd[e].gen, e);
	errno = 0;
	r = uepoll_ctl(inst[i].fd, op, efd[e].fd, &ev);
	if (op == EPOLL_CTL_ADD)
		want = reg[i][e] ? EEXIST : 0;
	else if (!reg[i][e])
		want = ENOENT;
	else
		want = op == EPOLL_CTL_MOD && excl[i][e] ? EINVAL : 0;
	if ((r == 0 ? 0 : errno) != want)
		BAD("ctl(inst %d, %d, efd %d, %#x): %d errno %d, model says %d\n",
		    i, op, e, ev.events, r, errno, want);
	if (r == 0 && op == EPOLL_CTL_ADD) {
		reg[i][e] = true;
		excl[i][e] = x;
	} else if (r == 0 && op == EPOLL_CTL_DEL) {
		reg[i][e] = false;
	}
	pthread_mutex_unlock(&pair_mtx[i][e]);
	pthread_rwlock_unlock(&efd[e].lock);
	pthread_rwlock_unlock(&inst[i].lock);
	atomic_fetch_add(&n_ctl, 1);
}

static void op_nest(uint64_t *st)
{
	int i = (int)rnd(st, NI), j = (int)rnd(st, NI);
	bool add = rnd(st, 2);
	struct epoll_event ev = { .events = EPOLLIN };
	int r, e, lo = i < j ? i : j, hi = i < j ? j : i;

	if (i == j)
		return;
	if (rnd(st, 3) == 0)
		ev.events |= EPOLLET;
	pthread_rwlock_rdlock(&inst[lo].lock);
	pthread_rwlock_rdlock(&inst[hi].lock);
	pthread_mutex_lock(&nest_mtx[i][j]);
	ev.data.u64 = DATA(K_INST, inst[j].gen, j);
	errno = 0;
	r = uepoll_ctl(inst[i].fd, add ? EPOLL_CTL_ADD : EPOLL_CTL_DEL,
		       inst[j].fd, &ev);
	e = r == 0 ? 0 : errno;
	if (add && !(nest[i][j] ? e == EEXIST :
		     e == 0 || e == ELOOP || e == EINVAL))
		BAD("nest ADD %d into %d: errno %d, registered %d\n", j, i, e,
		    nest[i][j]);
	if (!add && e != (nest[i][j] ? 0 : ENOENT))
		BAD("nest DEL %d from %d: errno %d, registered %d\n", j, i, e,
		    nest[i][j]);
	if (r == 0)
		nest[i][j] = add;
	pthread_mutex_unlock(&nest_mtx[i][j]);
	pthread_rwlock_unlock(&inst[hi].lock);
	pthread_rwlock_unlock(&inst[lo].lock);
	atomic_fetch_add(&n_nest, 1);
}

/* Close and re-create a ueventfd (its registrations go with it). */
static void op_close_efd(uint64_t *st)
{
	int e = (int)rnd(st, NE);
	struct slot *s = &efd[e];

	pthread_rwlock_wrlock(&s->lock);
	efd_retire(e);
	if (uepoll_close(s->fd) != 0)
		BAD("close efd %d: errno %d\n", e, errno);
	/* every user of efd e is locked out; an instance's closer may clear
	 * the same cells */
	for (int i = 0; i < NI; i++) {
		pthread_mutex_lock(&pair_mtx[i][e]);
		reg[i][e] = false;
		pthread_mutex_unlock(&pair_mtx[i][e]);
	}
	s->fd = new_chaos_efd(st);
	s->gen++;
	atomic_store(&s->written, 0);
	atomic_store(&s->read, 0);
	pthread_rwlock_unlock(&s->lock);
	atomic_fetch_add(&n_closes, 1);
}

/* Close and re-create an instance (not I0, which holds the ping one). */
static void op_close_inst(uint64_t *st)
{
	int i = 1 + (int)rnd(st, NI - 1);
	struct slot *s = &inst[i];

	pthread_rwlock_wrlock(&s->lock);
	if (uepoll_close(s->fd) != 0)
		BAD("close instance %d: errno %d\n", i, errno);
	/* (the closer of the other side may clear the same cells) */
	for (int k = 0; k < NI; k++) {
		pthread_mutex_lock(&nest_mtx[i][k]);
		nest[i][k] = false;
		pthread_mutex_unlock(&nest_mtx[i][k]);
		pthread_mutex_lock(&nest_mtx[k][i]);
		nest[k][i] = false;
		pthread_mutex_unlock(&nest_mtx[k][i]);
	}
	for (int e = 0; e < NE; e++) {
		pthread_mutex_lock(&pair_mtx[i][e]);
		reg[i][e] = false;
		pthread_mutex_unlock(&pair_mtx[i][e]);
	}
	s->fd = new_inst();
	s->gen++;
	pthread_rwlock_unlock(&s->lock);
	atomic_fetch_add(&n_closes, 1);
}

/* Take what an event says is there: read the ueventfd if it still is the
 * incarnation the event came from. */
static void consume(uint64_t d, uint32_t events)
{
	int e = D_IDX(d);
	uint64_t v;

	if (D_KIND(d) != K_EFD || !(events & EPOLLIN) || e >= NE)
		return;
	pthread_rwlock_rdlock(&efd[e].lock);
	if (efd[e].gen == D_GEN(d) &&
	    uepoll_read(efd[e].fd, &v, sizeof(v)) == 8)
		atomic_fetch_add(&efd[e].read, v);
	pthread_rwlock_unlock(&efd[e].lock);
}

static void op_wait(uint64_t *st)
{
	struct epoll_event ev[8], ev2[8];
	int i = (int)rnd(st, NI), n, n2;

	pthread_rwlock_rdlock(&inst[i].lock);
	n = uepoll_wait(inst[i].fd, ev, 1 + (int)rnd(st, 8), (int)rnd(st, 3));
	pthread_rwlock_unlock(&inst[i].lock);
	if (n < 0)
		BAD("wait instance %d: errno %d\n", i, errno);
	for (int k = 0; k < n; k++) {
		uint64_t d = ev[k].data.u64;
		int j = D_IDX(d);

		atomic_fetch_add(&n_events, 1);
		if (D_KIND(d) != K_INST) {
			consume(d, ev[k].events);
			continue;
		}
		/* a nested instance: look inside */
		if (j >= NI)
			continue;
		pthread_rwlock_rdlock(&inst[j].lock);
		n2 = inst[j].gen == D_GEN(d) ?
			     uepoll_wait(inst[j].fd, ev2, 8, 0) : 0;
		pthread_rwlock_unlock(&inst[j].lock);
		for (int m = 0; m < n2; m++)
			consume(ev2[m].data.u64, ev2[m].events);
	}
}

struct worker {
	pthread_t th;
	uint64_t seed;
	bool waiter;
};

static void *chaos_main(void *arg)
{
	struct worker *w = arg;
	uint64_t st = w->seed;

	while (!atomic_load(&stop)) {
		uint32_t r = rnd(&st, 100);

		if (w->waiter || r < 20)
			op_wait(&st);
		else if (r < 45)
			op_write(&st);
		else if (r < 55)
			op_read(&st);
		else if (r < 83)
			op_ctl(&st);
		else if (r < 93)
			op_nest(&st);
		else if (r < 98)
			op_close_efd(&st);
		else
			op_close_inst(&st);
		atomic_fetch_add(&n_ops, 1);
	}
	return NULL;
}

/* ---- ping-pong: no lost wakeup ---- */

static int P, Q, ping, pong;

/* On a failure: what the kernel epoll behind an instance holds. */
static void dump_fdinfo(int fd)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		fprintf(stderr, "  fdinfo %d: %s", fd, line);
	fclose(f);
}

/* Wait for fd's event on ep and read it: the value, or 0 on a failure. */
static uint64_t wait_for(int ep, int fd)
{
	struct epoll_event ev[4];
	uint64_t v = 0;
	int n = uepoll_wait(ep, ev, 4, 10000);

	if (n == 0) {
		/* tell a lost wakeup (the event is there) from a lost event */
		n = uepoll_wait(ep, ev, 4, 0);
		fprintf(stderr, "ping-pong: after 10 s a wait on %s finds %d event(s)\n",
			ep == P ? "P (nested)" : "Q", n);
		dump_fdinfo(ep);
		n = 0;
	}
	if (n != 1) {
		BAD("ping-pong: wait on %s returned %d (errno %d): a lost wakeup?\n",
		    ep == P ? "P (nested)" : "Q", n, errno);
		atomic_store(&stop, true);
		return 0;
	}
	if (ueventfd_read(fd, &v) != 0) {
		BAD("ping-pong: read errno %d\n", errno);
		return 0;
	}
	return v;
}

/* Writes 1 to ping and waits for pong, until stop; then 2 to ping: quit. */
static void *pinger(void *arg)
{
	uint64_t v;

	(void)arg;
	while (!atomic_load(&stop)) {
		REQUIRE(ueventfd_write(ping, 1) == 0);
		v = wait_for(Q, pong);
		if (v != 1) {
			if (v)
				BAD("ping-pong: pong %llu\n", (unsigned long long)v);
			break;
		}
		atomic_fetch_add(&n_pings, 1);
	}
	REQUIRE(ueventfd_write(ping, 2) == 0);
	return NULL;
}

/* Answers each ping of 1 with a pong, until it reads more (the quit). */
static void *ponger(void *arg)
{
	uint64_t v;

	(void)arg;
	while ((v = wait_for(P, ping)) == 1)
		REQUIRE(ueventfd_write(pong, 1) == 0);
	/* 2: the pinger is done; 3: a ping was not answered in time (the
	 * pinger said so) */
	if (v != 2 && v != 3)
		BAD("ping-pong: ping %llu\n", (unsigned long long)v);
	return NULL;
}

/* ---- quiescence ---- */

static bool inst_ready(int i, int depth)
{
	if (depth > 8)
		return false;
	for (int e = 0; e < NE; e++)
		if (reg[i][e])
			return true;
	for (int j = 0; j < NI; j++)
		if (nest[i][j] && inst_ready(j, depth + 1))
			return true;
	return false;
}

static void final_check(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[64];

	/* level-triggered again, every pair as registered */
	for (int i = 0; i < NI; i++) {
		for (int e = 0; e < NE; e++) {
			if (!reg[i][e])
				continue;
			ev.events = EPOLLIN;
			ev.data.u64 = DATA(K_EFD, efd[e].gen, e);
			if (excl[i][e])
				CHECK_EQ(uepoll_ctl(inst[i].fd, EPOLL_CTL_DEL,
						    efd[e].fd, NULL), 0);
			CHECK_EQ(uepoll_ctl(inst[i].fd, excl[i][e] ?
						EPOLL_CTL_ADD : EPOLL_CTL_MOD,
					    efd[e].fd, &ev), 0);
		}
		for (int j = 0; j < NI; j++) {
			if (!nest[i][j])
				continue;
			ev.events = EPOLLIN;
			ev.data.u64 = DATA(K_INST, inst[j].gen, j);
			CHECK_EQ(uepoll_ctl(inst[i].fd, EPOLL_CTL_MOD,
					    inst[j].fd, &ev), 0);
		}
	}
	for (int e = 0; e < NE; e++) {
		/* visible at once, as the final waits expect */
		efd_plain(efd[e].fd);
		CHECK_EQ(ueventfd_write(efd[e].fd, 1), 0);
		atomic_fetch_add(&efd[e].written, 1);
	}
	for (int i = 0; i < NI; i++) {
		bool want_e[NE] = { 0 }, want_j[NI] = { 0 };
		int nwant = 0, n;

		for (int e = 0; e < NE; e++)
			nwant += want_e[e] = reg[i][e];
		for (int j = 0; j < NI; j++)
			nwant += want_j[j] = nest[i][j] && inst_ready(j, 0);
		/* blocking, with a bound that only catches a hang */
		n = uepoll_wait(inst[i].fd, out, 64, nwant ? 10000 : 0);
		if (n != nwant)
			BAD("final wait on instance %d: %d events, want %d\n",
			    i, n, nwant);
		for (int k = 0; k < n; k++) {
			uint64_t d = out[k].data.u64;
			int x = D_IDX(d);

			if (D_KIND(d) == K_EFD && x < NE && want_e[x] &&
			    D_GEN(d) == efd[x].gen)
				want_e[x] = false;
			else if (D_KIND(d) == K_INST && x < NI && want_j[x])
				want_j[x] = false;
			else
				BAD("final wait on instance %d: unexpected %#llx\n",
				    i, (unsigned long long)d);
		}
	}
	for (int e = 0; e < NE; e++)
		efd_retire(e);
}

int main(void)
{
	const char *env = getenv("UEPOLL_SOAK_SECONDS");
	double secs = env ? atof(env) : 2.0 * t_scale();
	uint64_t seed = t_seed(0x50a4), t0;
	struct worker w[NCHAOS + NWAIT];
	struct epoll_event ev = { .events = EPOLLIN };
	pthread_t tp, tq;

	t_begin("t_soak");
	t_watchdog((unsigned)secs + 120);
	for (int i = 0; i < NI; i++) {
		slot_init(&inst[i]);
		inst[i].fd = new_inst();
		for (int j = 0; j < NI; j++)
			pthread_mutex_init(&nest_mtx[i][j], NULL);
		for (int e = 0; e < NE; e++)
			pthread_mutex_init(&pair_mtx[i][e], NULL);
	}
	for (int e = 0; e < NE; e++) {
		uint64_t st = seed + (uint64_t)e;

		slot_init(&efd[e]);
		efd[e].fd = new_chaos_efd(&st);
	}
	P = new_inst();
	Q = new_inst();
	ping = new_efd();
	pong = new_efd();
	ev.data.u64 = DATA(K_PING, 0, 0);
	REQUIRE(uepoll_ctl(P, EPOLL_CTL_ADD, ping, &ev) == 0);
	REQUIRE(uepoll_ctl(Q, EPOLL_CTL_ADD, pong, &ev) == 0);
	/* P's readiness also reaches chaos instance 0 (never closed) */
	REQUIRE(uepoll_ctl(inst[0].fd, EPOLL_CTL_ADD, P, &ev) == 0);

	t0 = t_now_ns();
	REQUIRE(pthread_create(&tp, NULL, pinger, NULL) == 0);
	REQUIRE(pthread_create(&tq, NULL, ponger, NULL) == 0);
	for (int k = 0; k < NCHAOS + NWAIT; k++) {
		w[k].seed = seed * (k + 1) + 1;
		w[k].waiter = k >= NCHAOS;
		REQUIRE(pthread_create(&w[k].th, NULL, chaos_main, &w[k]) == 0);
	}
	while (!atomic_load(&stop) &&
	       (double)(t_now_ns() - t0) < secs * 1e9)
		t_sleep_ms(10);
	atomic_store(&stop, true);
	for (int k = 0; k < NCHAOS + NWAIT; k++)
		REQUIRE(t_join_within(w[k].th, 30000));
	REQUIRE(t_join_within(tp, 30000));
	REQUIRE(t_join_within(tq, 30000));
	/* nothing may be left in them */
	CHECK_EQ(drain(ping), 0);
	CHECK_EQ(drain(pong), 0);

	final_check();
	printf("%.1f s: %lu ops (%lu writes, %lu reads, %lu ctl, %lu nest ctl, %lu closes), %lu events, %lu ping-pongs\n",
	       secs, atomic_load(&n_ops), atomic_load(&n_writes),
	       atomic_load(&n_reads), atomic_load(&n_ctl),
	       atomic_load(&n_nest), atomic_load(&n_closes),
	       atomic_load(&n_events), atomic_load(&n_pings));
	CHECK_EQ(atomic_load(&n_bad), 0);
	CHECK(atomic_load(&n_pings) > 0);
	for (int i = 0; i < NI; i++)
		CHECK_EQ(uepoll_close(inst[i].fd), 0);
	for (int e = 0; e < NE; e++)
		CHECK_EQ(uepoll_close(efd[e].fd), 0);
	CHECK_EQ(uepoll_close(P), 0);
	CHECK_EQ(uepoll_close(Q), 0);
	CHECK_EQ(uepoll_close(ping), 0);
	CHECK_EQ(uepoll_close(pong), 0);
	return t_end();
}
