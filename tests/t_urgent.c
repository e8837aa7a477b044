/*
 * t_urgent: EPOLLURGENT registrations end a batching wait at once.
 *  - The value is a bit no <sys/epoll.h> flag uses, and it is never
 *    reported back in returned events.
 *  - Bypass, for each kind of source (ueventfd, ueventfd with
 *    EPOLLEXCLUSIVE, pipe, pipe made urgent by MOD, another uepoll
 *    instance): a waiter under a 30 s window holds an ordinary event and
 *    dozes; the urgent source fires; the wait returns both at once (a
 *    loose bound catches a wait that sat out the window).  Exact without
 *    timing: a second ordinary event is sent only after the producer saw
 *    the wait return, and must not be in it.  Also with the ordinary event
 *    from a level-triggered pipe left unread (the kernel epoll stays
 *    readable, so the wait sleeps on the doorbell and urgent fds alone).
 *  - MOD without EPOLLURGENT (ueventfd, pipe) and DEL + ADD (pipe) drop the
 *    urgency: the wait then returns no earlier than its window closes.
 *  - Without a batching policy the flag changes nothing.
 */
#include "testlib.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#define LONG_US 30000000u
#define HANG_NS 20000000000ull

enum ukind { U_EFD, U_EFD_EXCL, U_PIPE, U_PIPE_MOD, U_NESTED };

struct w {
	int ep;
	_Atomic int tid, done;
	int ret;
	uint64_t t0, t1;
	struct epoll_event out[16];
};

static void *w_main(void *arg)
{
	struct w *w = arg;

	w->t0 = t_now_ns();
	atomic_store(&w->tid, t_gettid());
	w->ret = uepoll_wait(w->ep, w->out, 16, -1);
	w->t1 = t_now_ns();
	atomic_store(&w->done, 1);
	return NULL;
}

static void w_start(struct w *w, pthread_t *th, int ep)
{
	memset(w, 0, sizeof(*w));
	w->ep = ep;
	REQUIRE(pthread_create(th, NULL, w_main, w) == 0);
	while (!atomic_load(&w->tid))
		t_sleep_ms(1);
	CHECK(t_wait_sleeping(atomic_load(&w->tid), 10000));
}

static void w_join(struct w *w, pthread_t th)
{
	if (!t_join_within(th, 20000)) {
		fprintf(stderr, "waiter did not return within 20 s\n");
		exit(1);
	}
	CHECK(w->t1 - w->t0 < HANG_NS);
}

static int set_window(int ep, uint32_t us)
{
	struct uepoll_batch b = { .min_wait_us = us };

	return uepoll_batch(ep, &b, NULL);
}

/* The urgent source: fire() makes it ready. */
struct usrc {
	enum ukind kind;
	int fd, wfd, inner, innerfd;
};

static void usrc_add(int ep, struct usrc *u, enum ukind kind, uint32_t urgent)
{
	struct epoll_event ev = { .events = EPOLLIN | urgent, .data.u64 = 99 };
	int p[2];

	memset(u, 0, sizeof(*u));
	u->kind = kind;
	u->inner = u->innerfd = -1;
	switch (kind) {
	case U_EFD:
	case U_EFD_EXCL:
		u->fd = u->wfd = ueventfd(0, EFD_NONBLOCK);
		REQUIRE(u->fd >= 0);
		if (kind == U_EFD_EXCL)
			ev.events |= EPOLLEXCLUSIVE;
		break;
	case U_PIPE:
	case U_PIPE_MOD:
		REQUIRE(pipe(p) == 0);
		u->fd = p[0];
		u->wfd = p[1];
		if (kind == U_PIPE_MOD)
			ev.events &= ~EPOLLURGENT;
		break;
	case U_NESTED:
		u->inner = uepoll_create1(0);
		u->innerfd = ueventfd(0, EFD_NONBLOCK);
		REQUIRE(u->inner >= 0 && u->innerfd >= 0);
		{
			struct epoll_event iev = { .events = EPOLLIN };

			REQUIRE(uepoll_ctl(u->inner, EPOLL_CTL_ADD, u->innerfd,
					   &iev) == 0);
		}
		u->fd = u->inner;
		u->wfd = u->innerfd;
		break;
	}
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, u->fd, &ev) == 0);
	if (kind == U_PIPE_MOD) {
		ev.events |= urgent;
		REQUIRE(uepoll_ctl(ep, EPOLL_CTL_MOD, u->fd, &ev) == 0);
	}
}

static void usrc_fire(struct usrc *u)
{
	if (u->kind == U_PIPE || u->kind == U_PIPE_MOD)
		CHECK_EQ(write(u->wfd, "u", 1), 1);
	else
		CHECK_EQ(ueventfd_write(u->wfd, 1), 0);
}

static void usrc_close(struct usrc *u)
{
	if (u->kind == U_PIPE || u->kind == U_PIPE_MOD) {
		close(u->fd);
		close(u->wfd);
	} else if (u->kind == U_NESTED) {
		uepoll_close(u->innerfd);
		uepoll_close(u->inner);
	} else {
		uepoll_close(u->fd);
	}
}

/* lt_pipe: the ordinary first event is a level-triggered pipe left unread,
 * which keeps the kernel epoll readable (the wait then sleeps on the
 * doorbell and the urgent kernel fds alone). */
static void bypass(enum ukind kind, int lt_pipe)
{
	int ep = uepoll_create1(0), n1, n2, p[2] = { -1, -1 };
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	struct usrc u;
	struct w w;
	pthread_t th;
	int found = 0;

	REQUIRE(ep >= 0 && set_window(ep, LONG_US) == 0);
	n1 = ueventfd(0, EFD_NONBLOCK);
	n2 = ueventfd(0, EFD_NONBLOCK);
	ev.data.u64 = 1;
	if (lt_pipe) {
		struct epoll_event pev = { .events = EPOLLIN, .data.u64 = 1 };

		REQUIRE(pipe(p) == 0);
		REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, p[0], &pev) == 0);
	} else {
		REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, n1, &ev) == 0);
	}
	ev.data.u64 = 2;
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, n2, &ev) == 0);
	usrc_add(ep, &u, kind, EPOLLURGENT);

	w_start(&w, &th, ep);
	if (lt_pipe)
		CHECK_EQ(write(p[1], "x", 1), 1);
	else
		CHECK_EQ(ueventfd_write(n1, 1), 0);
	CHECK(t_wait_sleeping(atomic_load(&w.tid), 10000));
	CHECK(!atomic_load(&w.done));
	usrc_fire(&u);
	while (!atomic_load(&w.done) && t_now_ns() - w.t0 < HANG_NS)
		t_sleep_ms(1);
	CHECK_EQ(ueventfd_write(n2, 1), 0); /* after: never in this wait */
	w_join(&w, th);
	CHECK_EQ(w.ret, 2);
	for (int i = 0; i < w.ret; i++) {
		CHECK(w.out[i].data.u64 != 2);
		CHECK(!(w.out[i].events & EPOLLURGENT));
		found |= w.out[i].data.u64 == 99;
	}
	CHECK(found);
	/* Both were taken by the same collect (the doze did not look at
	 * n1): no order between them, as in one plain wait. */
	uepoll_close(n1);
	uepoll_close(n2);
	if (lt_pipe) {
		close(p[0]);
		close(p[1]);
	}
	usrc_close(&u);
	uepoll_close(ep);
}

/* Urgency dropped by MOD (or DEL + ADD): the window is sat out. */
static void dropped(enum ukind kind, int del)
{
	const uint32_t us = 300000;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 99 };
	int ep = uepoll_create1(0);
	struct usrc u;
	struct w w;
	pthread_t th;

	REQUIRE(ep >= 0 && set_window(ep, us) == 0);
	usrc_add(ep, &u, kind, EPOLLURGENT);
	if (del) {
		REQUIRE(uepoll_ctl(ep, EPOLL_CTL_DEL, u.fd, NULL) == 0);
		REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, u.fd, &ev) == 0);
	} else {
		REQUIRE(uepoll_ctl(ep, EPOLL_CTL_MOD, u.fd, &ev) == 0);
	}
	w_start(&w, &th, ep);
	usrc_fire(&u);
	w_join(&w, th);
	CHECK_EQ(w.ret, 1);
	CHECK_EQ(w.out[0].data.u64, 99);
	CHECK(w.t1 - w.t0 >= (uint64_t)us * 1000);
	usrc_close(&u);
	uepoll_close(ep);
}

/* No policy: an urgent source is an ordinary one. */
static void no_policy(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLURGENT,
				  .data.u64 = 4 },
			   out[4];
	int ep = uepoll_create1(0), fd = ueventfd(0, EFD_NONBLOCK);

	REQUIRE(ep >= 0 && fd >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0);
	CHECK_EQ(uepoll_wait(ep, out, 4, 0), 0);
	CHECK_EQ(ueventfd_write(fd, 1), 0);
	CHECK_EQ(uepoll_wait(ep, out, 4, -1), 1);
	CHECK_EQ(out[0].data.u64, 4);
	CHECK_EQ(out[0].events, EPOLLIN);
	uepoll_close(fd);
	uepoll_close(ep);
}

int main(void)
{
	const uint32_t known = EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDNORM |
			       EPOLLRDBAND | EPOLLWRNORM | EPOLLWRBAND |
			       EPOLLMSG | EPOLLERR | EPOLLHUP | EPOLLRDHUP |
			       EPOLLEXCLUSIVE | EPOLLWAKEUP | EPOLLONESHOT |
			       EPOLLET | EPOLLROUNDROBIN;

	t_begin("t_urgent");
	t_watchdog(200);
	CHECK_EQ(EPOLLURGENT, 1u << 25);
	CHECK(!(EPOLLURGENT & known));
	for (enum ukind k = U_EFD; k <= U_NESTED; k++) {
		bypass(k, 0);
		bypass(k, 1);
	}
	dropped(U_EFD, 0);
	dropped(U_PIPE, 0);
	dropped(U_PIPE, 1);
	no_policy();
	return t_end();
}
