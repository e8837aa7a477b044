/*
 * t_port_nopoll: UEPOLL_NOPOLL, an instance whose fd nobody polls from
 * outside uepoll's calls (issue 19, item 4: no system call per event while
 * nobody sleeps).
 *  (a) counts: 100k rounds of {ueventfd write (UEVENTFD_NOPOLL); uepoll_wait
 *      with timeout 0; read} make fewer than 1000 system calls in all, and
 *      so do 100k rounds that add an idle look (a zero-timeout wait that
 *      finds nothing: a polling loop), level- and edge-triggered; with a
 *      kernel fd in the instance too, the doorbell is never cleared: at
 *      most 4 calls a round (the default's 5).  The
 *      default instance's counts are printed beside them;
 *  (b) the default stays exact: poll() of a default instance's fd sees it
 *      readable while an event waits and not after an idle look;
 *  (c) no lost wakeup: threads blocked in uepoll_wait on a NOPOLL instance
 *      (spinning first or not, LIFO or FIFO) are woken by writes that come
 *      while they sleep, over many rounds, and every write is collected;
 *  (d) nesting: a NOPOLL instance held by another instance wakes a thread
 *      asleep on the holder, keeps its fd exact while held (WATCHED), and
 *      after EPOLL_CTL_DEL still wakes its own sleepers;
 *  (e) a kernel fd and a ueventfd that both stay ready are reported in
 *      turns (the doorbell still holds the ready queue's place in the
 *      kernel's list of an instance with kernel fds: FAIRNESS);
 *  (f) UEPOLL_NOPOLL combines with the other options; unknown bits EINVAL;
 *  (g) stress: two writers, two waiters that block, poll (zero timeout:
 *      the looks a default instance would clear after) and time out (a
 *      ring racing a timeout leaves a stale doorbell), with and without
 *      UEPOLL_NOSPIN: every write is collected and the waiters end.
 *
 * The count: this program is linked with tests/libcwrap.c, which counts
 * the calls the library makes through libc on the calling thread (as
 * t_efd_syscalls does).  Counts, not timings.
 */
#include "testlib.h"
#include "libcwrap.h"

#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#define ROUNDS 100000
#define WAKE_ROUNDS 300

static int readable(int f)
{
	struct pollfd p = { .fd = f, .events = POLLIN };

	REQUIRE(poll(&p, 1, 0) >= 0);
	return (p.revents & POLLIN) != 0;
}

/* The calls of `rounds` rounds of {write; wait(0); read}, and, with idle,
 * a second wait(0) that finds nothing; kfd: a kernel fd (never ready) to
 * put in the instance too, or -1. */
static int loop_calls(unsigned int uflags, uint32_t et, int kfd, int rounds,
		      int idle)
{
	struct epoll_event ev = { .events = EPOLLIN | et }, out[4];
	uint64_t v;
	int ep, e, calls;

	ep = uepoll_create2(0, uflags);
	e = ueventfd(0, UEVENTFD_NOPOLL | EFD_NONBLOCK);
	REQUIRE(ep >= 0 && e >= 0);
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, e, &ev), 0);
	if (kfd >= 0)
		CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, kfd, &ev), 0);
	wrap_take(-1);
	wrap_arm(0);
	for (int i = 0; i < rounds; i++) {
		CHECK_EQ(ueventfd_write(e, 1), 0);
		CHECK_EQ(uepoll_wait(ep, out, 4, 0), 1);
		CHECK_EQ(ueventfd_read(e, &v), 0);
		CHECK_EQ(v, 1u);
		if (idle)
			CHECK_EQ(uepoll_wait(ep, out, 4, 0), 0);
	}
	wrap_disarm();
	calls = wrap_take(-1);
	CHECK_EQ(uepoll_close(e), 0);
	CHECK_EQ(uepoll_close(ep), 0);
	return calls;
}

static void test_counts(void)
{
	int p[2], k, d;

	for (int et = 0; et < 2; et++)
		for (int idle = 0; idle < 2; idle++) {
			uint32_t f = et ? EPOLLET : 0;

			k = loop_calls(UEPOLL_NOPOLL, f, -1, ROUNDS, idle);
			d = loop_calls(0, f, -1, ROUNDS, idle);
			printf("%d rounds {write; wait(0); read%s}%s: "
			       "UEPOLL_NOPOLL %d calls, default %d\n",
			       ROUNDS, idle ? "; idle wait(0)" : "",
			       et ? ", EPOLLET" : "", k, d);
			CHECK(k < 1000);
		}
	/* With a kernel fd: each wait polls the kernel epoll (one call, as
	 * the kernel's epoll_wait), nothing more. */
	REQUIRE(pipe(p) == 0);
	k = loop_calls(UEPOLL_NOPOLL, 0, p[0], ROUNDS / 10, 1);
	d = loop_calls(0, 0, p[0], ROUNDS / 10, 1);
	printf("%d rounds {write; wait(0); read; idle wait(0)} with a kernel "
	       "fd: UEPOLL_NOPOLL %d calls, default %d\n",
	       ROUNDS / 10, k, d);
	/* A round: the two waits' epoll_waits and, since the doorbell still
	 * holds the ready queue's place in the kernel's list (FAIRNESS), up
	 * to two rings; never the default's clearing read. */
	CHECK(k <= 4 * (ROUNDS / 10) + 10);
	CHECK(k < d);
	CHECK_EQ(close(p[0]), 0);
	CHECK_EQ(close(p[1]), 0);
}

/* (b) The default instance's fd is exact for an outside poller. */
static void test_default_exact(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[4];
	uint64_t v;
	int ep, e;

	ep = uepoll_create1(0);
	e = ueventfd(0, UEVENTFD_NOPOLL | EFD_NONBLOCK);
	REQUIRE(ep >= 0 && e >= 0);
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, e, &ev), 0);
	for (int i = 0; i < 100; i++) {
		CHECK_EQ(readable(ep), 0);
		CHECK_EQ(ueventfd_write(e, 1), 0);
		CHECK_EQ(readable(ep), 1);
		CHECK_EQ(uepoll_wait(ep, out, 4, 0), 1);
		CHECK_EQ(ueventfd_read(e, &v), 0);
		/* The idle look an outer loop makes clears the readiness. */
		CHECK_EQ(uepoll_wait(ep, out, 4, 0), 0);
	}
	CHECK_EQ(readable(ep), 0);
	CHECK_EQ(uepoll_close(e), 0);
	CHECK_EQ(uepoll_close(ep), 0);
}

/* (c) Waiters asleep on a NOPOLL instance. */
struct wctx {
	int ep, e, stop;
	atomic_int tid[2];
	atomic_long sum;
	atomic_bool done;
};

struct warg {
	struct wctx *c;
	int me;
};

static void *waiter(void *arg)
{
	struct wctx *c = ((struct warg *)arg)->c;
	struct epoll_event out[2];
	uint64_t v;

	atomic_store(&c->tid[((struct warg *)arg)->me], t_gettid());
	while (!atomic_load(&c->done)) {
		int n = uepoll_wait(c->ep, out, 2, -1);

		if (n < 0) {
			CHECK_EQ(errno, EINTR);
			continue;
		}
		for (int i = 0; i < n; i++)
			if (out[i].data.fd == c->e &&
			    ueventfd_read(c->e, &v) == 0)
				atomic_fetch_add(&c->sum, (long)v);
	}
	return NULL;
}

static void test_wakeups(unsigned int uflags, const char *what)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct wctx c = { 0 };
	struct warg a[2] = { { &c, 0 }, { &c, 1 } };
	pthread_t th[2];

	c.ep = uepoll_create2(0, UEPOLL_NOPOLL | uflags);
	c.e = ueventfd(0, UEVENTFD_NOPOLL | EFD_NONBLOCK);
	c.stop = ueventfd(0, UEVENTFD_NOPOLL | EFD_NONBLOCK);
	REQUIRE(c.ep >= 0 && c.e >= 0 && c.stop >= 0);
	ev.data.fd = c.e;
	CHECK_EQ(uepoll_ctl(c.ep, EPOLL_CTL_ADD, c.e, &ev), 0);
	ev.data.fd = c.stop;
	CHECK_EQ(uepoll_ctl(c.ep, EPOLL_CTL_ADD, c.stop, &ev), 0);
	for (int i = 0; i < 2; i++)
		REQUIRE(pthread_create(&th[i], NULL, waiter, &a[i]) == 0);
	while (!atomic_load(&c.tid[0]) || !atomic_load(&c.tid[1]))
		sched_yield();
	for (int i = 0; i < WAKE_ROUNDS; i++) {
		/* Every 3rd round, write only once a waiter sleeps, and
		 * wait until the write is collected: that sleep must end. */
		int sync = i % 3 == 0;

		if (sync)
			CHECK(t_wait_sleeping(atomic_load(&c.tid[i % 2]),
					      5000));
		CHECK_EQ(ueventfd_write(c.e, 1), 0);
		if (sync)
			while (atomic_load(&c.sum) <= i)
				sched_yield();
	}
	while (atomic_load(&c.sum) < WAKE_ROUNDS)
		sched_yield();
	CHECK_EQ(atomic_load(&c.sum), WAKE_ROUNDS);
	atomic_store(&c.done, true);
	/* Level-triggered and never read: wakes every waiter. */
	CHECK_EQ(ueventfd_write(c.stop, 1), 0);
	for (int i = 0; i < 2; i++)
		CHECK(t_join_within(th[i], 20000));
	printf("%s: %d writes to sleeping waiters collected\n", what,
	       WAKE_ROUNDS);
	CHECK_EQ(uepoll_close(c.stop), 0);
	CHECK_EQ(uepoll_close(c.e), 0);
	CHECK_EQ(uepoll_close(c.ep), 0);
}

/* (d) A NOPOLL instance nested in another one. */
struct nctx {
	int outer, inner, e;
	atomic_int tid, got;
	int rounds;
};

static void *outer_waiter(void *arg)
{
	struct nctx *c = arg;
	struct epoll_event out[2];
	uint64_t v;

	atomic_store(&c->tid, t_gettid());
	while (atomic_load(&c->got) < c->rounds) {
		int n = uepoll_wait(c->outer, out, 2, -1);

		if (n < 0) {
			CHECK_EQ(errno, EINTR);
			continue;
		}
		CHECK_EQ(n, 1);
		CHECK_EQ(out[0].data.fd, c->inner);
		/* The inner instance has the event; take it there. */
		if (uepoll_wait(c->inner, out, 2, 0) == 1 &&
		    ueventfd_read(c->e, &v) == 0)
			atomic_fetch_add(&c->got, (int)v);
	}
	return NULL;
}

static void test_nested(unsigned int outer_flags)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[2];
	struct nctx c = { .rounds = 100 };
	pthread_t th;
	uint64_t v;

	c.outer = uepoll_create2(0, outer_flags);
	c.inner = uepoll_create2(0, UEPOLL_NOPOLL | UEPOLL_NOSPIN);
	c.e = ueventfd(0, UEVENTFD_NOPOLL | EFD_NONBLOCK);
	REQUIRE(c.outer >= 0 && c.inner >= 0 && c.e >= 0);
	ev.data.fd = c.e;
	CHECK_EQ(uepoll_ctl(c.inner, EPOLL_CTL_ADD, c.e, &ev), 0);
	/* An event queued before the inner is held: the hold sees it. */
	CHECK_EQ(ueventfd_write(c.e, 1), 0);
	ev.data.fd = c.inner;
	CHECK_EQ(uepoll_ctl(c.outer, EPOLL_CTL_ADD, c.inner, &ev), 0);
	CHECK_EQ(uepoll_wait(c.outer, out, 2, 0), 1);
	CHECK_EQ(readable(c.inner), 1);
	CHECK_EQ(uepoll_wait(c.inner, out, 2, 0), 1);
	CHECK_EQ(ueventfd_read(c.e, &v), 0);
	/* Held, the inner's fd is exact (WATCHED). */
	CHECK_EQ(uepoll_wait(c.inner, out, 2, 0), 0);
	CHECK_EQ(readable(c.inner), 0);
	CHECK_EQ(uepoll_wait(c.outer, out, 2, 0), 0);

	REQUIRE(pthread_create(&th, NULL, outer_waiter, &c) == 0);
	while (!atomic_load(&c.tid))
		sched_yield();
	for (int i = 0; i < c.rounds; i++) {
		CHECK(t_wait_sleeping(atomic_load(&c.tid), 5000));
		CHECK_EQ(ueventfd_write(c.e, 1), 0);
		while (atomic_load(&c.got) <= i)
			sched_yield();
	}
	CHECK(t_join_within(th, 20000));
	CHECK_EQ(atomic_load(&c.got), c.rounds);
	printf("nested in a %s instance: %d wakeups through the inner\n",
	       outer_flags & UEPOLL_NOPOLL ? "NOPOLL" : "default", c.rounds);

	/* No longer held: a NOPOLL instance again, whose own sleeper a
	 * write still wakes. */
	CHECK_EQ(uepoll_ctl(c.outer, EPOLL_CTL_DEL, c.inner, NULL), 0);
	{
		struct wctx w = { 0 };
		struct warg a = { &w, 0 };
		pthread_t t2;

		w.ep = c.inner;
		w.e = c.e;
		w.stop = -1;
		REQUIRE(pthread_create(&t2, NULL, waiter, &a) == 0);
		while (!atomic_load(&w.tid[0]))
			sched_yield();
		CHECK(t_wait_sleeping(atomic_load(&w.tid[0]), 5000));
		CHECK_EQ(ueventfd_write(c.e, 1), 0);
		while (atomic_load(&w.sum) < 1)
			sched_yield();
		atomic_store(&w.done, true);
		CHECK_EQ(ueventfd_write(c.e, 1), 0);
		CHECK(t_join_within(t2, 20000));
	}
	CHECK_EQ(uepoll_close(c.outer), 0);
	CHECK_EQ(uepoll_close(c.inner), 0);
	CHECK_EQ(uepoll_close(c.e), 0);
}

/* (e) Both kinds stay ready: both are reported, one wait after the other. */
static void test_both_kinds(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[1];
	int p[2], ep, e, seen_k = 0, seen_u = 0;

	REQUIRE(pipe(p) == 0);
	ep = uepoll_create2(0, UEPOLL_NOPOLL);
	e = ueventfd(1, UEVENTFD_NOPOLL | EFD_NONBLOCK);
	REQUIRE(ep >= 0 && e >= 0);
	ev.data.fd = e;
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, e, &ev), 0);
	ev.data.fd = p[0];
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
	CHECK_EQ(write(p[1], "x", 1), 1);
	for (int i = 0; i < 40; i++) {
		CHECK_EQ(uepoll_wait(ep, out, 1, 0), 1);
		seen_k += out[0].data.fd == p[0];
		seen_u += out[0].data.fd == e;
	}
	printf("both kinds ready, 40 waits of one event: kernel fd %d, "
	       "ueventfd %d\n",
	       seen_k, seen_u);
	/* In turns, as the kernel's list (the default instance's 20/20),
	 * but for the start: the first event was queued without a ring. */
	CHECK(seen_k >= 19 && seen_k <= 21 && seen_u >= 19 && seen_u <= 21);
	CHECK_EQ(uepoll_close(e), 0);
	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_EQ(close(p[0]), 0);
	CHECK_EQ(close(p[1]), 0);
}

/* (g) */
#define STRESS_WRITES 20000

static uint64_t seed;

struct sctx {
	int ep, e;
	atomic_long sum;
	atomic_int writers_done;
};

static void *stress_writer(void *arg)
{
	struct sctx *c = arg;
	uint64_t r = seed ^ (uint64_t)t_gettid();

	for (int i = 0; i < STRESS_WRITES; i++) {
		CHECK_EQ(ueventfd_write(c->e, 1), 0);
		if (t_rand(&r) % 8 == 0)
			sched_yield();
	}
	atomic_fetch_add(&c->writers_done, 1);
	return NULL;
}

static void *stress_waiter(void *arg)
{
	struct sctx *c = arg;
	struct epoll_event out[2];
	uint64_t r = seed ^ (uint64_t)t_gettid() << 1, v;
	static const int timeouts[] = { -1, 0, 0, 1 };

	while (atomic_load(&c->sum) < 2 * STRESS_WRITES) {
		int n = uepoll_wait(c->ep, out, 2,
				    timeouts[t_rand(&r) % 4]);

		if (n < 0) {
			CHECK_EQ(errno, EINTR);
			continue;
		}
		if (n > 0 && ueventfd_read(c->e, &v) == 0)
			atomic_fetch_add(&c->sum, (long)v);
	}
	/* Wake the other waiter, which may be blocked for good now. */
	CHECK_EQ(ueventfd_write(c->e, 1), 0);
	return NULL;
}

static void test_stress(unsigned int uflags)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct sctx c = { 0 };
	pthread_t w[2], r[2];

	c.ep = uepoll_create2(0, UEPOLL_NOPOLL | uflags);
	c.e = ueventfd(0, UEVENTFD_NOPOLL | EFD_NONBLOCK);
	REQUIRE(c.ep >= 0 && c.e >= 0);
	CHECK_EQ(uepoll_ctl(c.ep, EPOLL_CTL_ADD, c.e, &ev), 0);
	for (int i = 0; i < 2; i++) {
		REQUIRE(pthread_create(&r[i], NULL, stress_waiter, &c) == 0);
		REQUIRE(pthread_create(&w[i], NULL, stress_writer, &c) == 0);
	}
	for (int i = 0; i < 2; i++)
		CHECK(t_join_within(w[i], 60000));
	for (int i = 0; i < 2; i++)
		CHECK(t_join_within(r[i], 60000));
	/* The waiters' closing writes may be read or not. */
	CHECK(atomic_load(&c.sum) >= 2 * STRESS_WRITES &&
	      atomic_load(&c.sum) <= 2 * STRESS_WRITES + 2);
	printf("stress%s: %ld collected\n",
	       uflags & UEPOLL_NOSPIN ? " (NOSPIN)" : "", atomic_load(&c.sum));
	CHECK_EQ(uepoll_close(c.e), 0);
	CHECK_EQ(uepoll_close(c.ep), 0);
}

int main(void)
{
	int ep;

	t_begin("t_port_nopoll");
	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_watchdog(240);
	test_counts();
	test_default_exact();
	test_wakeups(0, "NOPOLL");
	test_wakeups(UEPOLL_NOSPIN, "NOPOLL|NOSPIN");
	test_wakeups(UEPOLL_WAKE_FIFO, "NOPOLL|WAKE_FIFO");
	test_nested(0);
	test_nested(UEPOLL_NOPOLL);
	test_both_kinds();
	seed = t_seed(0x5eed);
	test_stress(0);
	test_stress(UEPOLL_NOSPIN);

	ep = uepoll_create2(EPOLL_CLOEXEC, UEPOLL_NOPOLL | UEPOLL_NOSPIN |
						   UEPOLL_WAKE_FIFO);
	CHECK(ep >= 0);
	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_ERR(uepoll_create2(0, UEPOLL_NOPOLL | 0x80), EINVAL);
	return t_end();
}
