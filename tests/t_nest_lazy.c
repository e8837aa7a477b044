/*
 * t_nest_lazy: a chain of UEPOLL_NOPOLL instances (out holds mid holds in,
 * level-triggered, as `perf bench epoll wait -N` nests them; UEVENTFD_NOPOLL
 * ueventfds in `in`) leaves the inner instances' doorbells rung when the
 * reads empty them (LAZY in src/bell.c): the holders' checks take a stale
 * level; and a zero-timeout wait on `out`, whose one registration is a
 * nested instance held level-triggered, answers from the ready queues
 * below it without the kernel's epoll_wait (SOLO in src/krec.c).  So a
 * busy loop of K writes, a wait on `out`, a wait on `in` and the K reads
 * makes no system call at all, where the kernel makes 2K + 2; an exact
 * chain (no NOPOLL) makes the kernel's 2K + 2: the K writes and K reads of
 * the ueventfds' kernel fds (MIRROR), the doorbell's ring when `in` becomes
 * ready and its clear when the reads empty it (the chain's fds exact for
 * poll() and kernel epolls) where the kernel's two epoll_waits were
 * (counted through tests/libcwrap.c: no timing).  And every answer is the
 * kernel's (a log compared with the kernel epoll's and eventfd's, the same
 * script on both):
 *  - the loop's waits; after the reads a wait on each level finds nothing
 *    (the stale level is a holder's check's to take, never an event);
 *  - a thread blocked on `out` over a stale level wakes for the next write
 *    (no lost wakeup) and returns it;
 *  - a one-shot holder added over a stale level (its kernel epoll would be
 *    disarmed by a report our check then drops: the ctl makes the chain
 *    exact first, krec__exact_hold; models/lazy.pml, mutant
 *    EXACT_NO_LOOK) reports the next write, once;
 *  - an edge-triggered holder added over a stale level gets an edge for the
 *    next write, and none for the stale level;
 *  - a pipe in `in`, which only the kernel knows ready (SOLO asks it);
 *  - a kernel epoll that comes to hold `out` through uepoll_ctl (NOPOLL
 *    ends for good: bell__nexact) and poll() see it exact: not ready over
 *    the stale level, ready for a write, not ready after its read.
 */
#include "testlib.h"
#include "libcwrap.h"
#include "calls.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define K 4
#define NSRC 8

struct chain {
	int out, mid, in, e[NSRC];
};

static bool is_u(const struct calls *c)
{
	return c == &calls_uepoll;
}

static int mk(const struct calls *c, bool nopoll)
{
	return is_u(c) ? uepoll_create2(0, nopoll ? UEPOLL_NOPOLL : 0)
		       : epoll_create1(0);
}

static void chain_open(const struct calls *c, struct chain *ch, bool nopoll)
{
	struct epoll_event ev = { .events = EPOLLIN };

	ch->out = mk(c, nopoll);
	ch->mid = mk(c, nopoll);
	ch->in = mk(c, nopoll);
	REQUIRE(ch->out >= 0 && ch->mid >= 0 && ch->in >= 0);
	ev.data.u64 = 1;
	REQUIRE(c->ctl(ch->out, EPOLL_CTL_ADD, ch->mid, &ev) == 0);
	ev.data.u64 = 2;
	REQUIRE(c->ctl(ch->mid, EPOLL_CTL_ADD, ch->in, &ev) == 0);
	for (int i = 0; i < NSRC; i++) {
		ch->e[i] = is_u(c) ? ueventfd(0, EFD_NONBLOCK |
						      (nopoll ? UEVENTFD_NOPOLL
							      : 0))
				   : eventfd(0, EFD_NONBLOCK);
		REQUIRE(ch->e[i] >= 0);
		ev.data.u64 = 10 + (uint64_t)i;
		REQUIRE(c->ctl(ch->in, EPOLL_CTL_ADD, ch->e[i], &ev) == 0);
	}
}

static void chain_close(const struct calls *c, struct chain *ch)
{
	for (int i = 0; i < NSRC; i++)
		CHECK_EQ(c->close(ch->e[i]), 0);
	CHECK_EQ(c->close(ch->in), 0);
	CHECK_EQ(c->close(ch->mid), 0);
	CHECK_EQ(c->close(ch->out), 0);
}

static void put(const struct calls *c, int fd)
{
	uint64_t v = 1;

	CHECK_EQ(c->write(fd, &v, 8), 8);
}

static void take(const struct calls *c, int fd)
{
	uint64_t v;

	CHECK_EQ(c->read(fd, &v, 8), 8);
}

static void logwait(const struct calls *c, struct t_log *l, int ep)
{
	struct epoll_event ev[NSRC + 1];
	int r = c->wait(ep, ev, NSRC + 1, 0);

	t_log_events(l, ev, r < 0 ? -errno : r);
}

/* One iteration of the benchmark's loop (bench/sc_nested.c, deep2). */
static void iteration(const struct calls *c, struct chain *ch, int base,
		      struct t_log *l)
{
	for (int j = 0; j < K; j++)
		put(c, ch->e[(base + j) % NSRC]);
	logwait(c, l, ch->out);
	logwait(c, l, ch->in);
	for (int j = 0; j < K; j++)
		take(c, ch->e[(base + j) % NSRC]);
}

/* The system calls of n iterations after a first round. */
static int counted(bool nopoll, int n)
{
	struct t_log l = { .n = 0 };
	struct chain ch;
	int calls;

	chain_open(&calls_uepoll, &ch, nopoll);
	/* Every source once first (a NOPOLL ueventfd's first event raises its
	 * kernel fd once, for good: MIRROR in src/eventfd.c). */
	for (int b = 0; b < NSRC; b += K) {
		l.n = 0;
		iteration(&calls_uepoll, &ch, b, &l);
	}
	wrap_take(-1);
	wrap_arm(0);
	for (int i = 1; i <= n; i++) {
		l.n = 0;
		iteration(&calls_uepoll, &ch, i * 3, &l);
	}
	wrap_disarm();
	calls = getenv("T_SHOW") ? wrap_take_show() : wrap_take(-1);
	chain_close(&calls_uepoll, &ch);
	return calls;
}

struct sleeper {
	const struct calls *c;
	int ep, r;
	uint64_t data;
};

static void *sleeper_run(void *arg)
{
	struct sleeper *s = arg;
	struct epoll_event ev;

	s->r = s->c->wait(s->ep, &ev, 1, 10000); /* bounded: a hang detector */
	s->data = s->r == 1 ? ev.data.u64 : 0;
	return NULL;
}

static void script(const struct calls *c, struct t_log *l)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT,
				  .data.u64 = 5 };
	struct sleeper s = { .c = c };
	struct chain ch;
	pthread_t th;
	int x, kep, pp[2];
	char buf[1];

	chain_open(c, &ch, true);
	for (int i = 0; i < 3; i++) {
		iteration(c, &ch, i * 5, l);
		/* Stale in uepoll now: no level has anything. */
		logwait(c, l, ch.out);
		logwait(c, l, ch.mid);
		logwait(c, l, ch.in);
	}
	/* Stale again (the reads left it), then a sleeper on out. */
	iteration(c, &ch, 1, l);
	s.ep = ch.out;
	REQUIRE(pthread_create(&th, NULL, sleeper_run, &s) == 0);
	put(c, ch.e[2]);
	REQUIRE(t_join_within(th, 15000));
	t_log_put(l, s.r);
	t_log_put(l, (long)s.data);
	logwait(c, l, ch.in);
	take(c, ch.e[2]);

	/* A one-shot holder over a stale level. */
	iteration(c, &ch, 2, l);
	x = mk(c, true);
	REQUIRE(x >= 0);
	t_log_res(l, c->ctl(x, EPOLL_CTL_ADD, ch.out, &ev));
	logwait(c, l, x);
	put(c, ch.e[3]);
	logwait(c, l, x);
	logwait(c, l, x); /* disarmed */
	logwait(c, l, ch.in);
	take(c, ch.e[3]);
	t_log_res(l, c->ctl(x, EPOLL_CTL_DEL, ch.out, NULL));

	/* An edge-triggered holder over a stale level. */
	iteration(c, &ch, 3, l);
	ev.events = EPOLLIN | EPOLLET;
	t_log_res(l, c->ctl(x, EPOLL_CTL_ADD, ch.out, &ev));
	logwait(c, l, x);
	put(c, ch.e[4]);
	logwait(c, l, x);
	logwait(c, l, x); /* one edge */
	logwait(c, l, ch.in);
	take(c, ch.e[4]);
	t_log_res(l, c->ctl(x, EPOLL_CTL_DEL, ch.out, NULL));
	CHECK_EQ(c->close(x), 0);

	/* A kernel fd in `in`: only the kernel knows it is ready (SOLO asks
	 * it). */
	iteration(c, &ch, 5, l);
	REQUIRE(pipe2(pp, O_NONBLOCK) == 0);
	ev.events = EPOLLIN;
	ev.data.u64 = 9;
	t_log_res(l, c->ctl(ch.in, EPOLL_CTL_ADD, pp[0], &ev));
	logwait(c, l, ch.out);
	CHECK_EQ(write(pp[1], "x", 1), 1);
	logwait(c, l, ch.out);
	logwait(c, l, ch.in);
	CHECK_EQ(read(pp[0], buf, 1), 1);
	logwait(c, l, ch.out);
	t_log_res(l, c->ctl(ch.in, EPOLL_CTL_DEL, pp[0], NULL));
	CHECK_EQ(close(pp[0]), 0);
	CHECK_EQ(close(pp[1]), 0);

	/* A kernel epoll comes to hold out (through uepoll_ctl), over a
	 * stale level; and poll(). */
	iteration(c, &ch, 4, l);
	kep = epoll_create1(0);
	REQUIRE(kep >= 0);
	ev.events = EPOLLIN;
	t_log_res(l, c->ctl(kep, EPOLL_CTL_ADD, ch.out, &ev));
	logwait(&calls_kernel, l, kep);
	t_log_put(l, poll(&(struct pollfd){ .fd = ch.out, .events = POLLIN },
			  1, 0));
	put(c, ch.e[5]);
	logwait(&calls_kernel, l, kep);
	t_log_put(l, poll(&(struct pollfd){ .fd = ch.out, .events = POLLIN },
			  1, 0));
	take(c, ch.e[5]);
	logwait(&calls_kernel, l, kep);
	t_log_put(l, poll(&(struct pollfd){ .fd = ch.out, .events = POLLIN },
			  1, 0));
	CHECK_EQ(close(kep), 0);
	chain_close(c, &ch);
}

int main(void)
{
	struct t_log k = { .n = 0 }, u = { .n = 0 };
	int n = 200, lazy, exact;

	t_begin("t_nest_lazy");
	t_watchdog(120);
	/* Counted first: the script's kernel epoll ends LAZY for good. */
	lazy = counted(true, n);
	exact = counted(false, n);
	printf("per iteration of %d events: NOPOLL chain %d calls in %d "
	       "iterations, exact chain %d (the kernel: %d)\n",
	       K, lazy, n, exact, n * (2 * K + 2));
	CHECK_EQ(lazy, 0);
	CHECK_EQ(exact, n * (2 * K + 2));
	script(&calls_kernel, &k);
	script(&calls_uepoll, &u);
	t_log_same(&k, &u, "lazy chain");
	return t_end();
}
