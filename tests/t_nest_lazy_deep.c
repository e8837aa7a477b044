/*
 * t_nest_lazy_deep: a UEPOLL_NOPOLL instance in1, held level-triggered by
 * in3, also holds an instance in0 of kernel fds only (a pipe).  A DEL
 * empties in1: LAZY (src/bell.c) leaves its doorbell rung for in3's check
 * (krec__ready), which looks at the levels below; in0, reported by
 * nobody, was trusted as if the kernel had said it ready (the shortcut
 * for an instance of kernel fds only is for the one the kernel reported),
 * so in3's wait returned in1 with nothing in it.  Now the kernel's poll
 * of in0 says.  The same script on the kernel's epoll and eventfd and on
 * uepoll's (NOPOLL and not), the answers compared: with the pipe empty
 * (in1 not ready) and with a byte in it (in0, so in1, ready).
 */
#include "testlib.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct answers {
	int n1, d0, d1, in1, n2;
};

static void script(int u, int np, int full, struct answers *a)
{
	int (*ctl)(int, int, int, struct epoll_event *) = u ? uepoll_ctl : epoll_ctl;
	int (*wt)(int, struct epoll_event *, int, int) = u ? uepoll_wait : epoll_wait;
	int (*cl)(int) = u ? uepoll_close : close;
	int fl = EFD_NONBLOCK | (u && np ? UEVENTFD_NOPOLL : 0);
	int e2 = u ? ueventfd(0, fl) : eventfd(0, fl), pp[2];
	int in0 = u ? uepoll_create2(0, np ? UEPOLL_NOPOLL : 0) : epoll_create1(0);
	int in1 = u ? uepoll_create2(0, np ? UEPOLL_NOPOLL : 0) : epoll_create1(0);
	int in3 = u ? uepoll_create2(0, np ? UEPOLL_NOPOLL : 0) : epoll_create1(0);
	struct epoll_event ev, o[8];

	REQUIRE(e2 >= 0 && in0 >= 0 && in1 >= 0 && in3 >= 0);
	REQUIRE(pipe2(pp, O_NONBLOCK) == 0);
	if (full)
		REQUIRE(write(pp[1], "x", 1) == 1);
	ev.events = EPOLLIN;
	ev.data.u64 = 8;
	CHECK(ctl(in0, EPOLL_CTL_ADD, pp[0], &ev) == 0);
	ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
	ev.data.u64 = 2;
	CHECK(ctl(in1, EPOLL_CTL_ADD, e2, &ev) == 0); /* in1 ready: OUT */
	ev.events = EPOLLIN;
	ev.data.u64 = 6;
	CHECK(ctl(in3, EPOLL_CTL_ADD, in1, &ev) == 0);
	ev.data.u64 = 5;
	CHECK(ctl(in1, EPOLL_CTL_ADD, in0, &ev) == 0);
	CHECK(ctl(in1, EPOLL_CTL_DEL, e2, &ev) == 0); /* in1 holds in0 only */
	ev.events = EPOLLOUT | EPOLLET;
	ev.data.u64 = 2;
	CHECK(ctl(in3, EPOLL_CTL_ADD, e2, &ev) == 0);
	a->n1 = wt(in3, o, 8, 0);
	a->d0 = a->d1 = 0;
	for (int i = 0; i < a->n1; i++) {
		if (i)
			a->d1 += (int)o[i].data.u64;
		else
			a->d0 += (int)o[i].data.u64;
	}
	a->in1 = wt(in1, o, 8, 0);
	a->n2 = wt(in3, o, 8, 0);
	cl(in3);
	cl(in1);
	cl(in0);
	cl(e2);
	close(pp[0]);
	close(pp[1]);
}

int main(void)
{
	struct answers k, u;

	t_begin("t_nest_lazy_deep");
	for (int full = 0; full < 2; full++) {
		script(0, 0, full, &k);
		CHECK_EQ(k.n1, 1 + full);
		for (int np = 0; np < 2; np++) {
			script(1, np, full, &u);
			CHECK_EQ(u.n1, k.n1);
			/* (the order is not compared: design.md) */
			CHECK_EQ(u.d0 + u.d1, k.d0 + k.d1);
			CHECK_EQ(u.in1, k.in1);
			CHECK_EQ(u.n2, k.n2);
		}
	}
	return t_end();
}
