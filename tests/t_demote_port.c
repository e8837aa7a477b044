/*
 * t_demote_port: uepoll_demote() of an instance makes it the kernel epoll
 * it stands for, with every registration, while other threads use it.
 *  - Differential: one script on kernel objects and on uepoll's (the
 *    instance demoted half-way; on the kernel side that step does
 *    nothing): ueventfds (level, edge drained before, a disarmed one-shot,
 *    two registrations of one ueventfd through a dup), a pipe, a pipe
 *    registered EPOLLEXCLUSIVE (EPOLLROUNDROBIN on uepoll's side: a
 *    record), one with EPOLLURGENT (a record), a nested instance holding a
 *    ueventfd.  After every step the results, errno, the events of a
 *    zero-timeout wait (through uepoll_wait, then through the kernel's
 *    epoll_wait on the same number) and poll() of the instance's fd are
 *    logged; the logs must be equal.  After the demotion the one-shot stays
 *    disarmed until MOD, DEL/MOD through the numbers are the kernel's, and
 *    a ueventfd write (the ueventfds stay uepoll's) wakes the kernel epoll,
 *    directly or through the nested instance.
 *  - Concurrency: two threads blocked in uepoll_wait, a writer, and a
 *    thread doing MOD on another registration keep going while the main
 *    thread demotes: every write is read once (the sum balances), no MOD
 *    fails, and the waiters see the events after the demotion.
 */
#include "testlib.h"
#include "calls.h"

#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <unistd.h>

/* A side of the script: its calls, and the flags only uepoll has. */
struct be {
	const struct calls *c;
	uint32_t rr, urgent; /* uepoll's bits, 0 on the kernel */
};

static const struct be kern = { &calls_kernel, 0, 0 };
static const struct be uep = { &calls_uepoll, EPOLLROUNDROBIN, EPOLLURGENT };

/* A zero-timeout wait through the backend, then poll() of the fd. */
static void look(struct t_log *l, const struct be *b, int ep)
{
	struct epoll_event ev[16];
	struct pollfd p = { .fd = ep, .events = POLLIN };

	t_log_events(l, ev, b->c->wait(ep, ev, 16, 0));
	t_log_res(l, poll(&p, 1, 0));
	t_log_put(l, p.revents);
}

/* The kernel's own epoll_wait on the number (after the demotion). */
static void klook(struct t_log *l, int ep)
{
	struct epoll_event ev[16];

	t_log_events(l, ev, epoll_wait(ep, ev, 16, 0));
}

static int reg(const struct be *b, int ep, int op, int fd, uint32_t e,
	       uint64_t data)
{
	struct epoll_event ev = { .events = e, .data.u64 = data };

	return b->c->ctl(ep, op, fd, &ev);
}

static void wrv(struct t_log *l, const struct be *b, int fd, uint64_t v)
{
	t_log_res(l, b->c->write(fd, &v, 8));
}

static void rdv(struct t_log *l, const struct be *b, int fd)
{
	uint64_t v = 0;
	ssize_t r = b->c->read(fd, &v, 8);

	t_log_res(l, r);
	t_log_put(l, r == 8 ? (long)v : -1);
}

static void script(const struct be *b, struct t_log *l)
{
	int ep = b->c->create1(0), in = b->c->create1(0);
	int lt = b->c->eventfd(1, EFD_NONBLOCK),
	    et = b->c->eventfd(1, EFD_NONBLOCK),
	    os = b->c->eventfd(1, EFD_NONBLOCK),
	    nst = b->c->eventfd(0, EFD_NONBLOCK), two;
	int p[2], x[2], u[2], o[2];
	uint64_t v = 1;

	REQUIRE(ep >= 0 && in >= 0 && lt >= 0 && et >= 0 && os >= 0 &&
		nst >= 0);
	REQUIRE(pipe2(p, O_NONBLOCK) == 0 && pipe2(x, O_NONBLOCK) == 0 &&
		pipe2(u, O_NONBLOCK) == 0 && pipe2(o, O_NONBLOCK) == 0);
	two = b->c->dup(lt);
	REQUIRE(two >= 0);
	t_log_res(l, reg(b, ep, EPOLL_CTL_ADD, lt, EPOLLIN, 1));
	t_log_res(l, reg(b, ep, EPOLL_CTL_ADD, two, EPOLLIN | EPOLLOUT, 11));
	t_log_res(l, reg(b, ep, EPOLL_CTL_ADD, et, EPOLLIN | EPOLLET, 2));
	t_log_res(l, reg(b, ep, EPOLL_CTL_ADD, os, EPOLLIN | EPOLLONESHOT, 3));
	t_log_res(l, reg(b, ep, EPOLL_CTL_ADD, p[0], EPOLLIN, 4));
	t_log_res(l, reg(b, ep, EPOLL_CTL_ADD, x[0],
		   EPOLLIN | EPOLLEXCLUSIVE | b->rr, 5));
	t_log_res(l, reg(b, ep, EPOLL_CTL_ADD, u[0], EPOLLIN | b->urgent, 6));
	/* A one-shot record (urgent), ready: the first look disarms it. */
	t_log_res(l, reg(b, ep, EPOLL_CTL_ADD, o[0],
		   EPOLLIN | EPOLLONESHOT | b->urgent, 8));
	t_log_res(l, write(o[1], "o", 1));
	t_log_res(l, reg(b, in, EPOLL_CTL_ADD, nst, EPOLLIN, 70));
	t_log_res(l, reg(b, ep, EPOLL_CTL_ADD, in, EPOLLIN, 7));
	look(l, b, ep); /* fires the one-shot, the edge */
	rdv(l, b, et);	/* drained: no edge owed */
	t_log_res(l, write(x[1], "x", 1));
	look(l, b, ep);
	/* The demotion, with the exclusive pipe ready and the one-shot
	 * disarmed. */
	t_log_res(l, b->c->demote(ep));
	look(l, b, ep);
	klook(l, ep);
	t_log_res(l, read(x[0], &v, 1));
	wrv(l, b, et, 3); /* a new edge */
	klook(l, ep);
	klook(l, ep);
	wrv(l, b, nst, 1); /* through the nested instance */
	look(l, b, ep);
	t_log_res(l, write(u[1], "u", 1));
	look(l, b, ep);
	t_log_res(l, reg(b, ep, EPOLL_CTL_MOD, os, EPOLLIN, 33)); /* re-armed */
	klook(l, ep);
	t_log_res(l, reg(b, ep, EPOLL_CTL_MOD, o[0], EPOLLIN, 88)); /* re-armed */
	klook(l, ep);
	t_log_res(l, reg(b, ep, EPOLL_CTL_MOD, two, EPOLLIN, 12));
	rdv(l, b, lt);
	t_log_res(l, write(p[1], "p", 1));
	klook(l, ep);
	t_log_res(l, reg(b, ep, EPOLL_CTL_DEL, lt, 0, 0));
	t_log_res(l, reg(b, ep, EPOLL_CTL_DEL, lt, 0, 0)); /* ENOENT */
	t_log_res(l, reg(b, ep, EPOLL_CTL_MOD, x[0], EPOLLIN, 5)); /* EINVAL */
	t_log_res(l, b->c->close(two));
	look(l, b, ep);
	t_log_res(l, b->c->close(lt));
	t_log_res(l, b->c->close(et));
	t_log_res(l, b->c->close(os));
	t_log_res(l, b->c->close(nst));
	t_log_res(l, b->c->close(in));
	look(l, b, ep);
	t_log_res(l, b->c->close(ep));
	for (int i = 0; i < 2; i++) {
		close(p[i]);
		close(x[i]);
		close(u[i]);
		close(o[i]);
	}
}

static void differential(void)
{
	static struct t_log k, u;

	script(&kern, &k);
	script(&uep, &u);
	t_log_same(&k, &u, "script");
}

/* ---- concurrency -------------------------------------------------------- */

#define NWRITES 20000
static int c_ep, c_efd, c_other;
static _Atomic uint64_t c_read;
static _Atomic int c_stop, c_mod_fail;

static void *c_waiter(void *arg)
{
	struct epoll_event ev;
	uint64_t v;

	while (!atomic_load(&c_stop)) {
		int n = uepoll_wait(c_ep, &ev, 1, 50);

		if (n == 1 && ev.data.u64 == 1 && uepoll_read(c_efd, &v, 8) == 8)
			atomic_fetch_add(&c_read, v);
	}
	return arg;
}

static void *c_writer(void *arg)
{
	for (int i = 0; i < NWRITES; i++) {
		if (ueventfd_write(c_efd, 1) < 0) {
			t_failures++;
			break;
		}
		if (i % 64 == 0)
			sched_yield();
	}
	return arg;
}

static void *c_modder(void *arg)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 2 };

	while (!atomic_load(&c_stop)) {
		ev.events ^= EPOLLOUT;
		if (uepoll_ctl(c_ep, EPOLL_CTL_MOD, c_other, &ev) < 0)
			atomic_fetch_add(&c_mod_fail, 1);
	}
	return arg;
}

static void concurrency(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 };
	pthread_t w[2], wr, md;
	uint64_t v;
	int i;

	c_ep = uepoll_create1(0);
	c_efd = ueventfd(0, EFD_NONBLOCK);
	c_other = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(c_ep >= 0 && c_efd >= 0 && c_other >= 0);
	REQUIRE(uepoll_ctl(c_ep, EPOLL_CTL_ADD, c_efd, &ev) == 0);
	ev.data.u64 = 2;
	REQUIRE(uepoll_ctl(c_ep, EPOLL_CTL_ADD, c_other, &ev) == 0);
	for (i = 0; i < 2; i++)
		REQUIRE(pthread_create(&w[i], NULL, c_waiter, NULL) == 0);
	REQUIRE(pthread_create(&md, NULL, c_modder, NULL) == 0);
	REQUIRE(pthread_create(&wr, NULL, c_writer, NULL) == 0);
	t_sleep_ms(20);
	CHECK_EQ(uepoll_demote(c_ep), 0);
	pthread_join(wr, NULL);
	/* The waiters take what is left (the writer is done). */
	for (i = 0; i < 400 && atomic_load(&c_read) < NWRITES; i++)
		t_sleep_ms(25);
	atomic_store(&c_stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	pthread_join(md, NULL);
	if (uepoll_read(c_efd, &v, 8) == 8)
		atomic_fetch_add(&c_read, v);
	CHECK_EQ(atomic_load(&c_read), (uint64_t)NWRITES);
	CHECK_EQ(atomic_load(&c_mod_fail), 0);
	CHECK_EQ(uepoll_close(c_ep), 0);
	CHECK_EQ(uepoll_close(c_efd), 0);
	CHECK_EQ(uepoll_close(c_other), 0);
}

int main(void)
{
	t_begin("t_demote_port");
	t_watchdog(120);
	differential();
	concurrency();
	return t_end();
}
