/*
 * t_krec_data: an event carries the data the program registered, and
 * nothing else, for the registrations uepoll keeps a record of in its
 * kernel epoll (a kernel fd with EPOLLURGENT, a kernel fd with
 * EPOLLEXCLUSIVE|EPOLLROUNDROBIN, a nested uepoll instance).
 *  - first: a thread is blocked in uepoll_wait(-1) on an instance with no
 *    such registration yet; another thread adds the instance's first one,
 *    already ready (a pipe holding a byte; an inner instance holding a
 *    ueventfd with counter 1), with data 42: the waiter returns it with
 *    data 42.  The same sequence on kernel epolls (without uepoll's bits,
 *    an inner kernel epoll holding an eventfd) is the reference.
 *  - churn: one thread loops EPOLL_CTL_DEL / EPOLL_CTL_ADD (data 42) of
 *    always-ready sources of each kind, NSRC of them in one instance (a
 *    wait then returns several and translates them one after the other;
 *    nested: inners holding a ready ueventfd, and inners holding a ready
 *    pipe, whose check costs system calls), while two threads wait with a
 *    10 ms timeout, for about a second (scaled): every ctl succeeds, events
 *    come (> 0), and every event has data 42 (bad == 0).  Also on the
 *    kernel.
 */
#include "testlib.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#define DATA 42
/* Sources churned together in one instance. */
#define NSRC 4

enum kind { K_URGENT, K_RR, K_NESTED, K_NESTED_PIPE };
static const char *kind_name[] = { "EPOLLURGENT pipe",
				   "EPOLLEXCLUSIVE|EPOLLROUNDROBIN pipe",
				   "nested instance (ready ueventfd inside)",
				   "nested instance (ready pipe inside)" };

/* The source: a pipe with a byte in it, or an inner instance holding a
 * ready eventfd.  kern: kernel objects and flags only. */
struct src {
	int kern;
	enum kind kind;
	int fd;			/* what is added */
	uint32_t events;
	int p[2], inner, ifd;
};

static void src_open(struct src *s, int kern, enum kind kind)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 };

	memset(s, 0, sizeof(*s));
	s->kern = kern;
	s->kind = kind;
	s->p[0] = s->p[1] = s->inner = s->ifd = -1;
	switch (kind) {
	case K_URGENT:
	case K_RR:
		REQUIRE(pipe2(s->p, O_NONBLOCK) == 0);
		REQUIRE(write(s->p[1], "x", 1) == 1);
		s->fd = s->p[0];
		s->events = EPOLLIN;
		if (kind == K_URGENT && !kern)
			s->events |= EPOLLURGENT;
		if (kind == K_RR)
			s->events |= EPOLLEXCLUSIVE | (kern ? 0 : EPOLLROUNDROBIN);
		break;
	case K_NESTED:
	case K_NESTED_PIPE:
		s->inner = kern ? epoll_create1(0) : uepoll_create1(0);
		if (kind == K_NESTED_PIPE) {
			REQUIRE(pipe2(s->p, O_NONBLOCK) == 0);
			REQUIRE(write(s->p[1], "x", 1) == 1);
			s->ifd = s->p[0];
		} else {
			s->ifd = kern ? eventfd(1, EFD_NONBLOCK)
				      : ueventfd(1, EFD_NONBLOCK);
		}
		REQUIRE(s->inner >= 0 && s->ifd >= 0);
		REQUIRE((kern ? epoll_ctl : uepoll_ctl)(s->inner, EPOLL_CTL_ADD,
							s->ifd, &ev) == 0);
		s->fd = s->inner;
		s->events = EPOLLIN;
		break;
	}
}

static void src_close(struct src *s)
{
	int (*cl)(int) = s->kern ? close : uepoll_close;

	if (s->p[0] >= 0) {
		close(s->p[0]);
		close(s->p[1]);
	}
	if (s->inner >= 0) {
		CHECK_EQ(cl(s->inner), 0);
		if (s->kind == K_NESTED)
			CHECK_EQ(cl(s->ifd), 0);
	}
}

static int src_ctl(struct src *s, int ep, int op)
{
	struct epoll_event ev = { .events = s->events, .data.u64 = DATA };

	return (s->kern ? epoll_ctl : uepoll_ctl)(ep, op, s->fd,
						   op == EPOLL_CTL_DEL ? NULL : &ev);
}

static int x_wait(int kern, int ep, struct epoll_event *ev, int max, int ms)
{
	return kern ? epoll_wait(ep, ev, max, ms) : uepoll_wait(ep, ev, max, ms);
}

/* ---- first: added while a thread is blocked ---- */

struct waiter {
	int kern, ep;
	_Atomic int tid;
	int n;
	struct epoll_event ev[8];
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	atomic_store(&w->tid, t_gettid());
	w->n = x_wait(w->kern, w->ep, w->ev, 8, -1);
	return NULL;
}

static void first1(int kern, enum kind kind)
{
	struct waiter w = { .kern = kern };
	struct src s;
	pthread_t th;
	int bad = 0;

	w.ep = kern ? epoll_create1(0) : uepoll_create1(0);
	REQUIRE(w.ep >= 0);
	src_open(&s, kern, kind);
	REQUIRE(pthread_create(&th, NULL, waiter_main, &w) == 0);
	while (!atomic_load(&w.tid))
		t_sleep_ms(1);
	CHECK(t_wait_sleeping(atomic_load(&w.tid), 10000));
	CHECK_EQ(src_ctl(&s, w.ep, EPOLL_CTL_ADD), 0);
	if (!t_join_within(th, 5000)) {
		fprintf(stderr, "%s first %s: waiter not woken\n",
			kern ? "kernel" : "uepoll", kind_name[kind]);
		exit(1);
	}
	CHECK_EQ(w.n, 1);
	for (int i = 0; i < w.n; i++)
		if (w.ev[i].data.u64 != DATA) {
			bad++;
			fprintf(stderr, "%s first %s: event data %#llx, want %d\n",
				kern ? "kernel" : "uepoll", kind_name[kind],
				(unsigned long long)w.ev[i].data.u64, DATA);
		}
	CHECK_EQ(bad, 0);
	/* And a wait now (the registration is in place) says the same. */
	{
		struct epoll_event ev[8];
		int n = x_wait(kern, w.ep, ev, 8, 0);

		CHECK_EQ(n, 1);
		if (n == 1)
			CHECK_EQ(ev[0].data.u64, DATA);
	}
	CHECK_EQ((kern ? close : uepoll_close)(w.ep), 0);
	src_close(&s);
}

static void test_first(void)
{
	for (int k = K_URGENT; k <= K_NESTED; k++) {
		first1(1, (enum kind)k);
		first1(0, (enum kind)k);
	}
}

/* ---- churn: DEL/ADD in a loop under two waiters ---- */

struct churn {
	int kern, ep;
	struct src *s; /* NSRC of them */
	_Atomic int stop;
	_Atomic long events, bad, ctlfail, cycles;
	_Atomic uint64_t firstbad;
};

static void *churn_waiter(void *arg)
{
	struct churn *c = arg;
	struct epoll_event ev[8];

	while (!atomic_load(&c->stop)) {
		int n = x_wait(c->kern, c->ep, ev, 8, 10);

		for (int i = 0; i < n; i++) {
			atomic_fetch_add(&c->events, 1);
			if (ev[i].data.u64 != DATA) {
				uint64_t zero = 0;

				atomic_fetch_add(&c->bad, 1);
				atomic_compare_exchange_strong(&c->firstbad,
							       &zero,
							       ev[i].data.u64);
			}
		}
	}
	return NULL;
}

static void *churn_ctl(void *arg)
{
	struct churn *c = arg;

	for (int i = 0; !atomic_load(&c->stop); i = (i + 1) % NSRC) {
		if (src_ctl(&c->s[i], c->ep, EPOLL_CTL_DEL) != 0)
			atomic_fetch_add(&c->ctlfail, 1);
		if (src_ctl(&c->s[i], c->ep, EPOLL_CTL_ADD) != 0)
			atomic_fetch_add(&c->ctlfail, 1);
		atomic_fetch_add(&c->cycles, 1);
	}
	return NULL;
}

static void churn1(int kern, enum kind kind, int ms)
{
	struct churn c = { .kern = kern };
	struct src s[NSRC];
	pthread_t w[2], ctl;

	c.ep = kern ? epoll_create1(0) : uepoll_create1(0);
	REQUIRE(c.ep >= 0);
	for (int i = 0; i < NSRC; i++) {
		src_open(&s[i], kern, kind);
		CHECK_EQ(src_ctl(&s[i], c.ep, EPOLL_CTL_ADD), 0);
	}
	c.s = s;
	for (int i = 0; i < 2; i++)
		REQUIRE(pthread_create(&w[i], NULL, churn_waiter, &c) == 0);
	REQUIRE(pthread_create(&ctl, NULL, churn_ctl, &c) == 0);
	t_sleep_ms(ms);
	atomic_store(&c.stop, 1);
	for (int i = 0; i < 2; i++)
		REQUIRE(t_join_within(w[i], 5000));
	REQUIRE(t_join_within(ctl, 5000));
	printf("  %s churn %s: %ld DEL+ADD, %ld events, %ld with other data (first %#llx), %ld ctl failures\n",
	       kern ? "kernel" : "uepoll", kind_name[kind],
	       atomic_load(&c.cycles), atomic_load(&c.events),
	       atomic_load(&c.bad),
	       (unsigned long long)atomic_load(&c.firstbad),
	       atomic_load(&c.ctlfail));
	CHECK(atomic_load(&c.events) > 0);
	CHECK_EQ(atomic_load(&c.bad), 0);
	CHECK_EQ(atomic_load(&c.ctlfail), 0);
	CHECK_EQ((kern ? close : uepoll_close)(c.ep), 0);
	for (int i = 0; i < NSRC; i++)
		src_close(&s[i]);
}

static void test_churn(void)
{
	int ms = (int)(1000 * t_scale());

	if (ms < 200)
		ms = 200;
	for (int k = K_URGENT; k <= K_NESTED_PIPE; k++) {
		churn1(1, (enum kind)k, ms / 4);
		churn1(0, (enum kind)k, ms);
	}
}

int main(void)
{
	t_begin("t_krec_data");
	t_watchdog(60);
	test_first();
	test_churn();
	return t_end();
}
