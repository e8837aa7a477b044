/*
 * t_nest_lazy_rdnorm: a UEPOLL_NOPOLL instance held by another with
 * EPOLLRDNORM and not EPOLLIN.  The kernel's nested wakeup carries EPOLLIN
 * only, so such a holder's epoll never requeues the item on an event
 * (ep_poll_callback's key check): once a wait has found the inner empty,
 * a later event of the inner is never reported.  LAZY (src/bell.c) left
 * the inner's doorbell rung when a read emptied it; the holder's kernel
 * wait reported the stale level, which our check dropped, but the kernel
 * kept the item queued (level-triggered), and the next event was reported
 * where the kernel reports nothing.  Such a registration now keeps the
 * chain exact (krec__exacting).  The same script on the kernel's epoll and
 * eventfd and on uepoll's, NOPOLL and not, the answers compared.
 */
#include "testlib.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct answers {
	int after_read, after_write, again, after_in;
};

static void script(int u, int np, struct answers *a)
{
	int fl = EFD_NONBLOCK | (u && np ? UEVENTFD_NOPOLL : 0);
	int e0 = u ? ueventfd(0, fl) : eventfd(0, fl);
	int e1 = u ? ueventfd(0, fl) : eventfd(0, fl);
	int in = u ? uepoll_create2(0, np ? UEPOLL_NOPOLL : 0) : epoll_create1(0);
	int out = u ? uepoll_create2(0, np ? UEPOLL_NOPOLL : 0) : epoll_create1(0);
	int (*ctl)(int, int, int, struct epoll_event *) = u ? uepoll_ctl : epoll_ctl;
	int (*wt)(int, struct epoll_event *, int, int) = u ? uepoll_wait : epoll_wait;
	ssize_t (*wr)(int, const void *, size_t) = u ? uepoll_write : write;
	ssize_t (*rd)(int, void *, size_t) = u ? uepoll_read : read;
	int (*cl)(int) = u ? uepoll_close : close;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 }, o[4];
	uint64_t v = 1;

	REQUIRE(e0 >= 0 && e1 >= 0 && in >= 0 && out >= 0);
	CHECK(ctl(in, EPOLL_CTL_ADD, e0, &ev) == 0);
	ev.events = EPOLLIN | EPOLLET;
	CHECK(ctl(in, EPOLL_CTL_ADD, e1, &ev) == 0);
	CHECK(wr(e0, &v, 8) == 8);
	/* in ready: the ADD queues it in out */
	ev.events = EPOLLRDNORM;
	ev.data.u64 = 6;
	CHECK(ctl(out, EPOLL_CTL_ADD, in, &ev) == 0);
	CHECK(rd(e0, &v, 8) == 8); /* in empty */
	a->after_read = wt(out, o, 4, 0);
	v = 3;
	CHECK(wr(e1, &v, 8) == 8); /* in ready again: a wakeup keyed EPOLLIN */
	a->after_write = wt(out, o, 4, 0);
	a->again = wt(out, o, 4, 0);
	/* MOD to EPOLLIN: the ctl polls it, ready */
	ev.events = EPOLLIN;
	CHECK(ctl(out, EPOLL_CTL_MOD, in, &ev) == 0);
	a->after_in = wt(out, o, 4, 0);
	cl(out);
	cl(in);
	cl(e1);
	cl(e0);
}

int main(void)
{
	struct answers k, u;

	t_begin("t_nest_lazy_rdnorm");
	script(0, 0, &k);
	CHECK(k.after_read == 0 && k.after_write == 0 && k.again == 0 &&
	      k.after_in == 1);
	for (int np = 0; np < 2; np++) {
		script(1, np, &u);
		CHECK_EQ(u.after_read, k.after_read);
		CHECK_EQ(u.after_write, k.after_write);
		CHECK_EQ(u.again, k.again);
		CHECK_EQ(u.after_in, k.after_in);
	}
	return t_end();
}
