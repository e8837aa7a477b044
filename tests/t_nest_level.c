/*
 * t_nest_level: a watched instance (held by another uepoll instance) rings
 * its doorbell on every event only for an edge-triggered holder (WATCHED in
 * src/bell.c); held level-triggered only, it rings once per idle -> ready
 * change, as an unwatched instance does.  Counted through tests/libcwrap.c,
 * with UEVENTFD_NOPOLL sources (whose writes make no call of their own while
 * nobody sleeps in uepoll_read): 4 writes into the inner instance cost 1
 * write(2) when its holders hold it level-triggered, 4 when one holds it
 * edge-triggered (EPOLLET, by ADD or MOD, a uepoll instance or a kernel epoll
 * through uepoll_ctl), 1 again after a MOD back to level-triggered or a DEL.
 * And the holders see what the kernel's would (a log compared with the
 * kernel's): a level-triggered holder reports the inner while it has
 * something, an edge-triggered one once per event, a kernel epoll holding it
 * edge-triggered beside a level-triggered uepoll holder once per event, and
 * a thread asleep on a level-triggered holder wakes for the event that makes
 * the inner ready, again after the inner was drained (no lost wakeup).
 */
#include "testlib.h"
#include "libcwrap.h"
#include "calls.h"

#include <sys/wait.h>
#include <unistd.h>

#define K 4

/* The system calls of K writes, one to each source. */
static int counted_writes(const int *e)
{
	uint64_t v = 1;
	int bad = 0;

	wrap_take(-1);
	wrap_arm(0);
	for (int i = 0; i < K; i++)
		bad += uepoll_write(e[i], &v, 8) != 8;
	wrap_disarm();
	CHECK_EQ(bad, 0);
	return getenv("T_SHOW") ? wrap_take_show() : wrap_take(-1);
}

/* Take everything: the holder's event, then the inner's K, then read. */
static void drain(int holder, int in, const int *e, int want_holder)
{
	struct epoll_event ev[K + 1];
	uint64_t v;

	CHECK_EQ(uepoll_wait(holder, ev, K + 1, 0), want_holder);
	CHECK_EQ(uepoll_wait(in, ev, K + 1, 0), K);
	for (int i = 0; i < K; i++)
		CHECK_EQ(uepoll_read(e[i], &v, 8), 8);
	CHECK_EQ(uepoll_wait(in, ev, K + 1, 0), 0); /* clears the doorbell */
	CHECK_EQ(uepoll_wait(holder, ev, K + 1, 0), 0);
}

/* holder's registration of target made edge-triggered: K rings for K
 * writes; level-triggered again: 1.  (The drains take out's event.) */
static void edge_then_level(int out, int holder, int target, int in,
			    const int *e)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 100 };

	CHECK_EQ(uepoll_ctl(holder, EPOLL_CTL_MOD, target, &ev), 0);
	CHECK_EQ(counted_writes(e), K);
	drain(out, in, e, 1);
	ev.events = EPOLLIN;
	CHECK_EQ(uepoll_ctl(holder, EPOLL_CTL_MOD, target, &ev), 0);
	CHECK_EQ(counted_writes(e), 1);
	drain(out, in, e, 1);
}

static void costs(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 100 };
	int out = uepoll_create1(0), mid = uepoll_create1(0),
	    in = uepoll_create1(0), kep = epoll_create1(0), e[K];

	REQUIRE(out >= 0 && mid >= 0 && in >= 0 && kep >= 0);
	for (int i = 0; i < K; i++) {
		e[i] = ueventfd(0, EFD_NONBLOCK | UEVENTFD_NOPOLL);
		REQUIRE(e[i] >= 0);
		ev.data.u64 = (uint64_t)i;
		CHECK_EQ(uepoll_ctl(in, EPOLL_CTL_ADD, e[i], &ev), 0);
	}
	/* out -> mid -> in, level-triggered, as `nested deep2`. */
	ev.data.u64 = 100;
	CHECK_EQ(uepoll_ctl(out, EPOLL_CTL_ADD, mid, &ev), 0);
	CHECK_EQ(uepoll_ctl(mid, EPOLL_CTL_ADD, in, &ev), 0);
	/* The first writes of UEVENTFD_NOPOLL ueventfds raise their mirrors
	 * (never drained after): not counted. */
	(void)counted_writes(e);
	drain(out, in, e, 1);
	for (int round = 0; round < 3; round++) {
		CHECK_EQ(counted_writes(e), 1);
		drain(out, in, e, 1);
	}
	/* mid holds in edge-triggered: a ring per event; then
	 * level-triggered again. */
	edge_then_level(out, mid, in, in, e);
	/* out holds mid edge-triggered, mid holds in level-triggered: the
	 * kernel wakes out through mid for each event of in, so a ring per
	 * event (an edge-triggered holder anywhere: bell__nedge). */
	edge_then_level(out, out, mid, in, e);
	/* A second holder, added edge-triggered, then removed. */
	ev.events = EPOLLIN | EPOLLET;
	CHECK_EQ(uepoll_ctl(out, EPOLL_CTL_ADD, in, &ev), 0);
	CHECK_EQ(counted_writes(e), K);
	drain(mid, in, e, 1);
	CHECK_EQ(uepoll_ctl(out, EPOLL_CTL_DEL, in, NULL), 0);
	CHECK_EQ(counted_writes(e), 1);
	drain(mid, in, e, 1);
	/* A kernel epoll holding it edge-triggered: a ring per event from
	 * then on, until in is released (a DEL or a close of the kernel epoll
	 * is not seen; t_nest_kernel_et counts the release). */
	CHECK_EQ(uepoll_ctl(kep, EPOLL_CTL_ADD, in, &ev), 0);
	CHECK_EQ(counted_writes(e), K);
	drain(mid, in, e, 1);
	CHECK_EQ(uepoll_ctl(kep, EPOLL_CTL_DEL, in, NULL), 0);
	close(kep);
	for (int i = 0; i < K; i++)
		uepoll_close(e[i]);
	uepoll_close(out);
	uepoll_close(mid);
	uepoll_close(in);
}

/* A write while a thread sleeps on a level-triggered holder of in. */
static void wake_round(const struct calls *s, int lt, int e, struct t_log *l)
{
	struct blocked b = { .s = s, .ep = lt };
	pthread_t th;
	uint64_t v = 1;

	REQUIRE(pthread_create(&th, NULL, blocked_wait, &b) == 0);
	t_sleep_ms(30);
	s->write(e, &v, 8);
	pthread_join(th, NULL);
	t_log_put(l, b.n);
	t_log_put(l, b.n == 1 ? (long)b.ev.data.u64 : -1);
}

/* et holds target edge-triggered (data): what it reports around writes of
 * e1 and e2 (and the level-triggered lt beside it), then the sources are
 * drained and the registration removed. */
static void et_round(const struct calls *s, struct t_log *l, int et,
		     int target, uint64_t data, int lt, int in, int e1, int e2)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET,
				  .data.u64 = data }, out[4];
	uint64_t v = 1;

	t_log_res(l, s->ctl(et, EPOLL_CTL_ADD, target, &ev));
	t_log_res(l, s->wait(et, out, 4, 0));
	s->write(e1, &v, 8);
	t_log_res(l, s->wait(et, out, 4, 0));
	t_log_res(l, s->wait(et, out, 4, 0));
	s->write(e2, &v, 8);
	t_log_res(l, s->wait(et, out, 4, 0));
	s->write(e1, &v, 8);
	t_log_res(l, s->wait(et, out, 4, 0));
	t_log_res(l, s->wait(et, out, 4, 0));
	t_log_res(l, s->wait(lt, out, 4, 0));
	s->read(e1, &v, 8);
	s->read(e2, &v, 8);
	t_log_res(l, s->wait(in, out, 4, 0));
	t_log_res(l, s->wait(lt, out, 4, 0));
	t_log_res(l, s->ctl(et, EPOLL_CTL_DEL, target, NULL));
}

static void script(const struct calls *s, struct t_log *l)
{
	int in = s->create1(0), lt = s->create1(0), et = s->create1(0),
	    kep = epoll_create1(0), e1 = s->eventfd(0, EFD_NONBLOCK),
	    e2 = s->eventfd(0, EFD_NONBLOCK);
	struct epoll_event ev = { .events = EPOLLIN }, out[4];
	uint64_t v = 1;

	REQUIRE(in >= 0 && lt >= 0 && et >= 0 && kep >= 0 && e1 >= 0 &&
		e2 >= 0);
	ev.data.u64 = 1;
	t_log_res(l, s->ctl(in, EPOLL_CTL_ADD, e1, &ev));
	ev.data.u64 = 2;
	t_log_res(l, s->ctl(in, EPOLL_CTL_ADD, e2, &ev));
	ev.data.u64 = 10;
	t_log_res(l, s->ctl(lt, EPOLL_CTL_ADD, in, &ev));
	/* Level-triggered holder: ready while in has something. */
	s->write(e1, &v, 8);
	t_log_res(l, s->wait(lt, out, 4, 0));
	s->write(e2, &v, 8);
	t_log_res(l, s->wait(lt, out, 4, 0));
	t_log_res(l, s->wait(lt, out, 4, 0));
	s->read(e1, &v, 8);
	t_log_res(l, s->wait(lt, out, 4, 0));
	s->read(e2, &v, 8);
	t_log_res(l, s->wait(in, out, 4, 0));
	t_log_res(l, s->wait(lt, out, 4, 0));
	/* An edge-triggered holder beside it: one event per write. */
	et_round(s, l, et, in, 20, lt, in, e1, e2);
	/* An edge-triggered holder two levels up (et holds lt, which holds
	 * in level-triggered): one event per write, through lt. */
	et_round(s, l, et, lt, 40, lt, in, e1, e2);
	ev.events = EPOLLIN | EPOLLET;
	/* A kernel epoll holding it edge-triggered beside the
	 * level-triggered holder: one event per write. */
	ev.data.u64 = 30;
	t_log_res(l, s->ctl(kep, EPOLL_CTL_ADD, in, &ev));
	t_log_res(l, epoll_wait(kep, out, 4, 0));
	s->write(e1, &v, 8);
	t_log_res(l, epoll_wait(kep, out, 4, 0));
	t_log_res(l, epoll_wait(kep, out, 4, 0));
	s->write(e2, &v, 8);
	t_log_res(l, epoll_wait(kep, out, 4, 0));
	s->write(e2, &v, 8);
	t_log_res(l, epoll_wait(kep, out, 4, 0));
	t_log_res(l, epoll_wait(kep, out, 4, 0));
	s->read(e1, &v, 8);
	s->read(e2, &v, 8);
	t_log_res(l, s->wait(in, out, 4, 0));
	t_log_res(l, s->wait(lt, out, 4, 0));
	/* Sleepers on the level-triggered holder: woken by the write that
	 * makes in ready, each time (in drained between). */
	for (int round = 0; round < 3; round++) {
		wake_round(s, lt, round & 1 ? e2 : e1, l);
		s->read(round & 1 ? e2 : e1, &v, 8);
		t_log_res(l, s->wait(in, out, 4, 0));
	}
	close(kep);
	s->close(e1);
	s->close(e2);
	s->close(et);
	s->close(lt);
	s->close(in);
}

/*
 * Instances alive at a fork: the other process may register them
 * edge-triggered, which this one does not see (WATCHED in bell.c).  out ->
 * mid -> in, level-triggered; after the fork the child holds mid
 * edge-triggered in a kernel epoll, and the parent writes K times to a
 * source of in made after the fork, each once the child took the edge
 * before.  The kernel gives the child an edge per write; so must uepoll.  Returns the edges the child saw.
 */
static int fork_edges(const struct calls *s)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 }, got[4];
	int out = s->create1(0), mid = s->create1(0), in = s->create1(0);
	int p2c[2], c2p[2];
	int e, st = 0;
	uint64_t v = 1;
	pid_t pid;
	char c = 0;

	REQUIRE(out >= 0 && mid >= 0 && in >= 0);
	REQUIRE(pipe(p2c) == 0 && pipe(c2p) == 0);
	CHECK_EQ(s->ctl(out, EPOLL_CTL_ADD, mid, &ev), 0);
	CHECK_EQ(s->ctl(mid, EPOLL_CTL_ADD, in, &ev), 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		int x = epoll_create1(0), n = 0;

		ev.events = EPOLLIN | EPOLLET;
		if (x < 0 || s->ctl(x, EPOLL_CTL_ADD, mid, &ev) < 0)
			_exit(100);
		if (write(c2p[1], "r", 1) != 1)
			_exit(101);
		for (int i = 0; i < K; i++) {
			if (read(p2c[0], &c, 1) != 1)
				_exit(102);
			n += epoll_wait(x, got, 4, 1000) == 1;
			if (write(c2p[1], "a", 1) != 1)
				_exit(103);
		}
		_exit(n);
	}
	CHECK_EQ(read(c2p[0], &c, 1), 1);
	/* Made after the fork: a source of this process only. */
	e = s->eventfd(0, EFD_NONBLOCK);
	REQUIRE(e >= 0);
	CHECK_EQ(s->ctl(in, EPOLL_CTL_ADD, e, &ev), 0);
	for (int i = 0; i < K; i++) {
		CHECK_EQ(s->write(e, &v, 8), 8);
		CHECK_EQ(write(p2c[1], "w", 1), 1);
		/* Lockstep: the child has taken this write's edge. */
		CHECK_EQ(read(c2p[0], &c, 1), 1);
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	s->close(e);
	s->close(in);
	s->close(mid);
	s->close(out);
	close(p2c[0]);
	close(p2c[1]);
	close(c2p[0]);
	close(c2p[1]);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void differential(void)
{
	struct t_log k = { 0 }, u = { 0 };

	script(&calls_kernel, &k);
	script(&calls_uepoll, &u);
	t_log_same(&k, &u, "nest level/edge");
}

/* In a process of its own: the fork leaves its instances ringing on every
 * event for good, which costs() must not inherit. */
static void forked(void)
{
	pid_t pid = fork();
	int st = 0;

	REQUIRE(pid >= 0);
	if (pid == 0) {
		int k = fork_edges(&calls_kernel);
		int u = fork_edges(&calls_uepoll);

		printf("fork: edges seen by the other process: kernel %d, "
		       "uepoll %d\n", k, u);
		CHECK_EQ(k, K);
		CHECK_EQ(u, k);
		_exit(t_end());
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	t_begin("t_nest_level");
	t_watchdog(60);
	forked();
	costs();
	differential();
	return t_end();
}
