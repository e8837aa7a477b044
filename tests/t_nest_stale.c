/*
 * t_nest_stale: a nested registration made silent by a MOD and loud again
 * (STALE in src/krec.c).  A holds B edge-triggered, B holds C, C holds a
 * ready eventfd.  After A has taken B's edge, B's registration of C is
 * modified to no events, then back to EPOLLIN.  The kernel gives A a new
 * edge when a wait on B came between the two MODs (that wait took C's entry
 * off B's ready list, so the second MOD queues it again and wakes B's
 * pollers), and none without it (the entry was still queued).  uepoll must
 * do the same in both cases; before STALE its wait on B made no system call
 * (B had no loud kernel registration left), so A missed the edge (found by
 * fuzz_diff: tests/fuzz/corpus/silent-stale).
 */
#include "testlib.h"
#include "calls.h"

/* One system: returns what the last wait on A reports (its count). */
static int run(const struct calls *s, int wait_between)
{
	struct epoll_event ev = { .events = EPOLLIN }, got[4];
	int a = s->create1(0), b = s->create1(0), c = s->create1(0);
	int e = s->eventfd(1, EFD_NONBLOCK);
	int (*ctl)(int, int, int, struct epoll_event *) = s->ctl;
	int (*wt)(int, struct epoll_event *, int, int) = s->wait;
	int n;

	REQUIRE(a >= 0 && b >= 0 && c >= 0 && e >= 0);
	ev.events = EPOLLIN | EPOLLET;
	ev.data.u64 = 1;
	CHECK_EQ(ctl(c, EPOLL_CTL_ADD, e, &ev), 0);
	ev.data.u64 = 2;
	CHECK_EQ(ctl(a, EPOLL_CTL_ADD, b, &ev), 0);
	ev.events = EPOLLIN;
	ev.data.u64 = 3;
	CHECK_EQ(ctl(b, EPOLL_CTL_ADD, c, &ev), 0);
	CHECK_EQ(wt(a, got, 4, 0), 1); /* B's edge */
	ev.events = 0;
	CHECK_EQ(ctl(b, EPOLL_CTL_MOD, c, &ev), 0);
	if (wait_between)
		CHECK_EQ(wt(b, got, 4, 0), 0);
	ev.events = EPOLLIN;
	CHECK_EQ(ctl(b, EPOLL_CTL_MOD, c, &ev), 0);
	n = wt(a, got, 4, 0);
	s->close(e);
	s->close(c);
	s->close(b);
	s->close(a);
	return n;
}

int main(void)
{
	t_begin("t_nest_stale");
	t_watchdog(30);
	for (int between = 0; between < 2; between++) {
		int k = run(&calls_kernel, between);
		int u = run(&calls_uepoll, between);

		printf("wait on B between the MODs: %s; A reports: kernel %d, "
		       "uepoll %d\n", between ? "yes" : "no", k, u);
		CHECK_EQ(u, k);
	}
	return t_end();
}
