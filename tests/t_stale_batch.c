/*
 * t_stale_batch: a non-blocking wait whose kernel batch comes back full of
 * stale events (nested instances the kernel epoll still reports, that have
 * nothing after all) asks again for what they displaced, so that it returns
 * what the kernel's epoll_wait returns.
 *
 * The stale events: S inner instances, each watching a ueventfd for EPOLLOUT
 * (writable at once: each inner is ready when the outer adds it, in order),
 * then a write fills each counter to its maximum (no longer writable: the
 * inners have nothing, but their fds still read ready to the outer's kernel
 * epoll until a harvest looks at them).  Then a pipe the outer holds directly
 * becomes readable: it is behind the S stale entries in the kernel's ready
 * list.  The same is built with kernel epolls and eventfds, where the outer's
 * epoll_wait(maxevents M, timeout 0) returns the pipe for any S; uepoll's
 * must too.  A second wait with room for everything then compares the rest.
 *
 * S goes up to 8M - 1: each retry of a batch full of stale events doubles
 * what one look at the kernel can skip, and a wait with timeout 0 looks a
 * bounded number of times (from 8M stale entries on, uepoll answers 0 where
 * the kernel answers 1: reported, not tested here).
 */
#include "testlib.h"

#include <fcntl.h>
#include <unistd.h>

#define MAXS 24
#define PIPE_DATA 999u

struct side {
	int outer, in[MAXS], efd[MAXS], pfd[2];
};

static void build(struct side *s, int user, int n)
{
	struct epoll_event ev;
	int (*ctl)(int, int, int, struct epoll_event *) =
		user ? uepoll_ctl : epoll_ctl;

	s->outer = user ? uepoll_create1(0) : epoll_create1(0);
	REQUIRE(s->outer >= 0);
	REQUIRE(pipe2(s->pfd, O_NONBLOCK) == 0);
	for (int i = 0; i < n; i++) {
		s->in[i] = user ? uepoll_create1(0) : epoll_create1(0);
		s->efd[i] = user ? ueventfd(0, EFD_NONBLOCK) :
				   eventfd(0, EFD_NONBLOCK);
		REQUIRE(s->in[i] >= 0 && s->efd[i] >= 0);
		ev.events = EPOLLOUT;
		ev.data.u64 = (uint64_t)i;
		REQUIRE(ctl(s->in[i], EPOLL_CTL_ADD, s->efd[i], &ev) == 0);
		ev.events = EPOLLIN;
		ev.data.u64 = 100u + (uint64_t)i;
		REQUIRE(ctl(s->outer, EPOLL_CTL_ADD, s->in[i], &ev) == 0);
	}
	ev.events = EPOLLIN;
	ev.data.u64 = PIPE_DATA;
	REQUIRE(ctl(s->outer, EPOLL_CTL_ADD, s->pfd[0], &ev) == 0);
}

/* The inners go stale (counters full), then the pipe becomes readable. */
static void make_stale(struct side *s, int user, int n)
{
	uint64_t full = 0xfffffffffffffffeULL;

	for (int i = 0; i < n; i++)
		REQUIRE((user ? uepoll_write(s->efd[i], &full, 8) :
				write(s->efd[i], &full, 8)) == 8);
	REQUIRE(write(s->pfd[1], "x", 1) == 1);
}

static void teardown(struct side *s, int user, int n)
{
	int (*cls)(int) = user ? uepoll_close : close;

	for (int i = 0; i < n; i++) {
		CHECK_EQ(cls(s->in[i]), 0);
		CHECK_EQ(cls(s->efd[i]), 0);
	}
	CHECK_EQ(cls(s->outer), 0);
	close(s->pfd[0]);
	close(s->pfd[1]);
}

static int wait0(int user, int ep, struct epoll_event *ev, int max)
{
	return user ? uepoll_wait(ep, ev, max, 0) : epoll_wait(ep, ev, max, 0);
}

static void one(int n, int m)
{
	struct side k, u;
	struct epoll_event ke[MAXS + 1], ue[MAXS + 1];
	int nk, nu, bad = 0, nk1, nu1;

	build(&k, 0, n);
	build(&u, 1, n);
	make_stale(&k, 0, n);
	make_stale(&u, 1, n);
	memset(ke, 0, sizeof(ke));
	memset(ue, 0, sizeof(ue));
	nk = wait0(0, k.outer, ke, m);
	nu = wait0(1, u.outer, ue, m);
	CHECK_EQ(nk, 1); /* the kernel's answer, as the test assumes it */
	nk1 = nk;
	nu1 = nu;
	if (nk != nu)
		bad = 1;
	for (int i = 0; !bad && i < nk; i++)
		bad = ke[i].events != ue[i].events ||
		      ke[i].data.u64 != ue[i].data.u64;
	/* Then, with room for everything: the pipe again (level-triggered),
	 * and no inner. */
	nk = wait0(0, k.outer, ke, MAXS + 1);
	nu = wait0(1, u.outer, ue, MAXS + 1);
	t_sort_events(ke, nk);
	t_sort_events(ue, nu);
	if (!bad && nk != nu)
		bad = 2;
	for (int i = 0; !bad && i < nk; i++)
		bad = ke[i].events != ue[i].events ||
		      ke[i].data.u64 != ue[i].data.u64 ? 2 : 0;
	if (bad) {
		fprintf(stderr,
			"%d stale inners, maxevents %d: wait %d differs: "
			"kernel %d then %d events, uepoll %d then %d\n",
			n, m, bad, nk1, nk, nu1, nu);
		t_failures++;
	}
	teardown(&k, 0, n);
	teardown(&u, 1, n);
}

int main(void)
{
	t_begin("t_stale_batch");
	t_watchdog(60);
	for (int m = 1; m <= 3; m++)
		for (int n = 0; n < 8 * m && n <= MAXS; n++)
			one(n, m);
	return t_end();
}
