/*
 * t_nest_kernel_et: a kernel epoll that holds a uepoll instance EPOLLET
 * through uepoll_ctl gets an edge per event, as a kernel epoll holding an
 * epoll does (the kernel wakes an epoll's pollers on every event of what it
 * holds), and sees the instance ready exactly while a wait on it would
 * return something (issue 32, bug 10).
 *
 * The holder is driven as libuv, libevent and nginx drive an edge-triggered
 * fd: after an edge, wait on the instance until a batch comes back less
 * than full, which here is at once (one event in room for eight), so no
 * wait on the instance ever comes back empty.  Before the fix the instance
 * was not counted as held: its doorbell was written only while `set` was 0,
 * and `set` went back to 0 only when a wait on it found nothing, so such a
 * loop got one edge and never another (a lost wakeup; a thread asleep in the
 * holder slept until its timeout).
 *
 * The same script runs on the kernel's epoll and eventfd and on uepoll's
 * (default and NOPOLL instances and ueventfds); the logs must be equal.
 *
 * And its cost (counted through tests/libcwrap.c): while a kernel epoll
 * holds an instance EPOLLET, every watched instance of the process rings
 * per event (the kernel wakes an epoll's pollers through every level: an
 * edge-triggered holder anywhere, bell__nedge), K writes into an instance
 * held level-triggered cost K doorbell writes; once the held instance is
 * closed (its kernel registrations go with its file), 1 again; a ctl the
 * kernel refuses makes no holder (fuzz_diff found one that did: its
 * instance then pruned its queue as a watched one, and reordered events).
 */
#include "testlib.h"
#include "libcwrap.h"
#include "calls.h"

#include <poll.h>
#include <stdatomic.h>

/* NOPOLL instances and ueventfds (calls_uepoll_nopoll): the holder's
 * uepoll_ctl ends the instance's NOPOLL (UNNOPOLL); its sources stay
 * NOPOLL. */

/* poll()'s view of fd: its revents, 0 if not ready. */
static int ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

/* One turn of the event loop: a write; the holder's edge (and no second
 * one); the instance drained until a batch is not full; the event handled
 * (its counter read); then the instance is not ready and no edge is left. */
static void loop_turn(const struct calls *s, struct t_log *l, int k, int in,
		      int e)
{
	struct epoll_event out[8];
	uint64_t v = 1;

	t_log_res(l, s->write(e, &v, 8));
	t_log_events(l, out, epoll_wait(k, out, 8, 0));
	t_log_res(l, epoll_wait(k, out, 8, 0));
	t_log_events(l, out, s->wait(in, out, 8, 0));
	t_log_res(l, s->read(e, &v, 8));
	t_log_put(l, ready(in));
	t_log_res(l, epoll_wait(k, out, 8, 0));
}

/* A thread asleep in the holder, woken by a write (watchdog: 5 s). */
struct sleeper {
	int k, n;
	_Atomic int tid;
	struct epoll_event ev;
};

static void *sleeper_fn(void *arg)
{
	struct sleeper *z = arg;

	atomic_store(&z->tid, t_gettid());
	z->n = epoll_wait(z->k, &z->ev, 1, 5000);
	return NULL;
}

static void asleep_turn(const struct calls *s, struct t_log *l, int k, int in,
			int e)
{
	struct sleeper z = { .k = k };
	struct epoll_event out[8];
	pthread_t th;
	uint64_t v = 1;

	REQUIRE(pthread_create(&th, NULL, sleeper_fn, &z) == 0);
	while (!atomic_load(&z.tid))
		sched_yield();
	/* Asleep before the write (if not, the edge is there when it
	 * looks: the same result). */
	(void)t_wait_sleeping(atomic_load(&z.tid), 5000);
	t_log_res(l, s->write(e, &v, 8));
	pthread_join(th, NULL);
	t_log_put(l, z.n);
	t_log_put(l, z.n == 1 ? (long)z.ev.data.u64 : -1);
	t_log_events(l, out, s->wait(in, out, 8, 0));
	t_log_res(l, s->read(e, &v, 8));
}

static void script(const struct calls *s, struct t_log *l)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[8];
	int in = s->create1(0), k = epoll_create1(0),
	    e1 = s->eventfd(0, EFD_NONBLOCK), e2 = s->eventfd(0, EFD_NONBLOCK);
	uint64_t v = 1;

	REQUIRE(in >= 0 && k >= 0 && e1 >= 0 && e2 >= 0);
	ev.data.u64 = 1;
	t_log_res(l, s->ctl(in, EPOLL_CTL_ADD, e1, &ev));
	ev.data.u64 = 2;
	t_log_res(l, s->ctl(in, EPOLL_CTL_ADD, e2, &ev));
	ev.events = EPOLLIN | EPOLLET;
	ev.data.u64 = 30;
	t_log_res(l, s->ctl(k, EPOLL_CTL_ADD, in, &ev));
	t_log_res(l, epoll_wait(k, out, 8, 0));

	/* The loop's turns: an edge each. */
	for (int i = 0; i < 4; i++)
		loop_turn(s, l, k, in, i & 1 ? e2 : e1);

	/* Writes while the instance holds something already: an edge each
	 * (the kernel wakes the pollers on every event). */
	for (int i = 0; i < 3; i++) {
		t_log_res(l, s->write(i == 2 ? e2 : e1, &v, 8));
		t_log_events(l, out, epoll_wait(k, out, 8, 0));
		t_log_res(l, epoll_wait(k, out, 8, 0));
	}
	t_log_events(l, out, s->wait(in, out, 8, 0));
	t_log_res(l, s->read(e1, &v, 8));
	t_log_res(l, s->read(e2, &v, 8));
	t_log_put(l, ready(in));
	t_log_res(l, epoll_wait(k, out, 8, 0));

	/* Edge-triggered sources in the instance: an edge per write too. */
	ev.events = EPOLLIN | EPOLLET;
	ev.data.u64 = 1;
	t_log_res(l, s->ctl(in, EPOLL_CTL_MOD, e1, &ev));
	for (int i = 0; i < 3; i++) {
		t_log_res(l, s->write(e1, &v, 8));
		t_log_events(l, out, epoll_wait(k, out, 8, 0));
		t_log_res(l, epoll_wait(k, out, 8, 0));
	}
	t_log_events(l, out, s->wait(in, out, 8, 0));
	t_log_res(l, s->read(e1, &v, 8));
	t_log_put(l, ready(in));
	for (int i = 0; i < 3; i++)
		loop_turn(s, l, k, in, e1);

	/* The loop asleep in the holder: each write wakes it. */
	for (int i = 0; i < 3; i++)
		asleep_turn(s, l, k, in, i & 1 ? e1 : e2);
	t_log_put(l, ready(in));

	/* Held level-triggered, then made edge-triggered by a MOD. */
	t_log_res(l, s->ctl(k, EPOLL_CTL_DEL, in, NULL));
	ev.events = EPOLLIN;
	t_log_res(l, s->ctl(k, EPOLL_CTL_ADD, in, &ev));
	t_log_res(l, s->write(e2, &v, 8));
	t_log_events(l, out, epoll_wait(k, out, 8, 0));
	t_log_events(l, out, epoll_wait(k, out, 8, 0));
	t_log_events(l, out, s->wait(in, out, 8, 0));
	t_log_res(l, s->read(e2, &v, 8));
	t_log_res(l, epoll_wait(k, out, 8, 0));
	ev.events = EPOLLIN | EPOLLET;
	t_log_res(l, s->ctl(k, EPOLL_CTL_MOD, in, &ev));
	for (int i = 0; i < 3; i++)
		loop_turn(s, l, k, in, i & 1 ? e1 : e2);

	close(k);
	s->close(e1);
	s->close(e2);
	s->close(in);
}

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

/* Take everything: the holder's event, the inner's K, the counters; the
 * waits that find nothing take the doorbells. */
static void drain(int holder, int in, const int *e)
{
	struct epoll_event ev[K + 1];
	uint64_t v;

	CHECK_EQ(uepoll_wait(holder, ev, K + 1, 0), 1);
	CHECK_EQ(uepoll_wait(in, ev, K + 1, 0), K);
	for (int i = 0; i < K; i++)
		CHECK_EQ(uepoll_read(e[i], &v, 8), 8);
	CHECK_EQ(uepoll_wait(in, ev, K + 1, 0), 0);
	CHECK_EQ(uepoll_wait(holder, ev, K + 1, 0), 0);
}

static void costs(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 100 };
	int mid = uepoll_create1(0), in = uepoll_create1(0), e[K], x, kep;

	REQUIRE(mid >= 0 && in >= 0);
	for (int i = 0; i < K; i++) {
		e[i] = ueventfd(0, EFD_NONBLOCK | UEVENTFD_NOPOLL);
		REQUIRE(e[i] >= 0);
		ev.data.u64 = (uint64_t)i;
		CHECK_EQ(uepoll_ctl(in, EPOLL_CTL_ADD, e[i], &ev), 0);
	}
	ev.data.u64 = 100;
	CHECK_EQ(uepoll_ctl(mid, EPOLL_CTL_ADD, in, &ev), 0);
	/* The first writes of UEVENTFD_NOPOLL ueventfds raise their mirrors
	 * (never drained after): not counted. */
	(void)counted_writes(e);
	drain(mid, in, e);
	CHECK_EQ(counted_writes(e), 1);
	drain(mid, in, e);
	/* A ctl the kernel refuses (the "epoll" is an eventfd) makes no
	 * holder. */
	x = uepoll_create1(0);
	REQUIRE(x >= 0);
	ev.events = EPOLLIN | EPOLLET;
	CHECK_ERR(uepoll_ctl(e[0], EPOLL_CTL_ADD, x, &ev), EINVAL);
	CHECK_EQ(counted_writes(e), 1);
	drain(mid, in, e);
	CHECK_EQ(uepoll_close(x), 0);
	/* Another instance, held EPOLLET by a kernel epoll. */
	x = uepoll_create1(0);
	kep = epoll_create1(0);
	REQUIRE(x >= 0 && kep >= 0);
	CHECK_EQ(uepoll_ctl(kep, EPOLL_CTL_ADD, x, &ev), 0);
	CHECK_EQ(counted_writes(e), K);
	drain(mid, in, e);
	/* Released: the hold is over. */
	CHECK_EQ(uepoll_close(x), 0);
	CHECK_EQ(counted_writes(e), 1);
	drain(mid, in, e);
	close(kep);
	for (int i = 0; i < K; i++)
		uepoll_close(e[i]);
	uepoll_close(in);
	uepoll_close(mid);
}

int main(void)
{
	struct t_log kl = { 0 }, ul = { 0 }, nl = { 0 };

	t_begin("t_nest_kernel_et");
	t_watchdog(120);
	script(&calls_kernel, &kl);
	script(&calls_uepoll, &ul);
	script(&calls_uepoll_nopoll, &nl);
	t_log_same(&kl, &ul, "kernel epoll holding an instance EPOLLET");
	t_log_same(&kl, &nl,
		   "kernel epoll holding a NOPOLL instance EPOLLET");
	costs();
	return t_end();
}
