/*
 * t_batch_rules: each case of the rule for when a batching wait returns
 * (include/uepoll.h, man 3 uepoll_batch), on ueventfds (the ready queue)
 * and kernel fds.  Exact by construction: a producer sends the next event
 * only once the waiter is seen asleep in its wait, and the windows are long
 * (30 s) where a case must end the wait without them, so an implementation
 * that waits for the window instead fails the loose upper bound (which only
 * catches a hang).  Lower bounds are the rule's own (a wait must not return
 * before its window closes), never a threshold.
 *   1. maxevents filled ends the wait at once (events ready at the call, or
 *      arriving one by one while it sleeps).
 *   2. min_events collected ends it (with and without a window).
 *   4. at least one event and the window closed: the wait returns no
 *      earlier than min_wait after it began; UEPOLL_BATCH_FROM_FIRST: after
 *      the first event.
 *   4'. nothing during the window: the first event after it is returned.
 *   5. inter_event_us: events closer than the gap are batched; the wait
 *      returns no earlier than the gap after the last one.
 *   6. the timeout wins over a longer window (with and without events).
 *   7. a signal while the wait holds an event returns the event; with none,
 *      EINTR.
 *   timeout 0 never batches.
 *   each registration at most once per wait: a level-triggered ueventfd or
 *   pipe that stays ready is returned once, and by the next wait again; an
 *   edge-triggered ueventfd written again during the window is returned by
 *   the next wait (not lost, not twice).
 *   a source closed (or removed) while a dozing wait holds it.
 */
#include "testlib.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#define LONG_US 30000000u /* a window no case may wait for */
#define HANG_NS 20000000000ull

struct w {
	int ep, max, timeout;
	_Atomic int tid;
	_Atomic int done;
	int ret, err;
	uint64_t t0, t1;
	struct epoll_event out[16];
};

static void *w_main(void *arg)
{
	struct w *w = arg;

	w->t0 = t_now_ns();
	atomic_store(&w->tid, t_gettid());
	w->ret = uepoll_wait(w->ep, w->out, w->max, w->timeout);
	w->err = errno;
	w->t1 = t_now_ns();
	atomic_store(&w->done, 1);
	return NULL;
}

static void w_start(struct w *w, pthread_t *th, int ep, int max, int timeout)
{
	memset(w, 0, sizeof(*w));
	w->ep = ep;
	w->max = max;
	w->timeout = timeout;
	REQUIRE(pthread_create(th, NULL, w_main, w) == 0);
	while (!atomic_load(&w->tid))
		t_sleep_ms(1);
}

/* The waiter is blocked in its wait (and has not returned). */
static void w_asleep(struct w *w)
{
	CHECK(t_wait_sleeping(atomic_load(&w->tid), 10000));
	CHECK(!atomic_load(&w->done));
}

static void w_join(struct w *w, pthread_t th)
{
	if (!t_join_within(th, 20000)) {
		fprintf(stderr, "waiter did not return within 20 s\n");
		exit(1);
	}
	CHECK(w->t1 - w->t0 < HANG_NS);
}

static int new_ep(uint32_t min_wait_us, uint32_t min_events,
		  uint32_t inter_us, uint32_t flags)
{
	struct uepoll_batch b = { min_wait_us, min_events, inter_us, flags };
	int ep = uepoll_create1(0);

	REQUIRE(ep >= 0);
	REQUIRE(uepoll_batch(ep, &b, NULL) == 0);
	return ep;
}

static int add_efd(int ep, uint64_t data, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };
	int fd = ueventfd(0, EFD_NONBLOCK);

	REQUIRE(fd >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0);
	return fd;
}

static void rule1_maxevents(void)
{
	int ep = new_ep(LONG_US, 0, 0, 0), fd[3];
	struct w w;
	pthread_t th;

	for (int i = 0; i < 3; i++)
		fd[i] = add_efd(ep, 10 + (uint64_t)i, EPOLLIN);
	/* Ready at the call: returns a full array at once. */
	for (int i = 0; i < 3; i++)
		CHECK_EQ(ueventfd_write(fd[i], 1), 0);
	w_start(&w, &th, ep, 2, -1);
	w_join(&w, th);
	CHECK_EQ(w.ret, 2);
	CHECK_EQ(w.out[0].data.u64, 10);
	CHECK_EQ(w.out[1].data.u64, 11);
	for (int i = 0; i < 3; i++) {
		eventfd_t v;

		CHECK_EQ(ueventfd_read(fd[i], &v), 0);
	}
	/* Arriving one by one while it dozes: the third fills it. */
	w_start(&w, &th, ep, 3, -1);
	for (int i = 0; i < 3; i++) {
		w_asleep(&w);
		CHECK_EQ(ueventfd_write(fd[i], 1), 0);
	}
	w_join(&w, th);
	CHECK_EQ(w.ret, 3);
	for (int i = 0; i < 3 && i < w.ret; i++)
		CHECK_EQ(w.out[i].data.u64, 10 + (uint64_t)i);
	for (int i = 0; i < 3; i++)
		uepoll_close(fd[i]);
	uepoll_close(ep);
}

static void rule2_min_events(uint32_t min_wait_us)
{
	int ep = new_ep(min_wait_us, 2, 0, 0), fd[3];
	struct w w;
	pthread_t th;

	for (int i = 0; i < 3; i++)
		fd[i] = add_efd(ep, 10 + (uint64_t)i, EPOLLIN | EPOLLET);
	w_start(&w, &th, ep, 8, -1);
	w_asleep(&w);
	CHECK_EQ(ueventfd_write(fd[0], 1), 0);
	w_asleep(&w); /* one is not enough */
	CHECK_EQ(ueventfd_write(fd[1], 1), 0);
	w_join(&w, th);
	CHECK_EQ(w.ret, 2);
	CHECK_EQ(w.out[0].data.u64, 10);
	CHECK_EQ(w.out[1].data.u64, 11);
	for (int i = 0; i < 3; i++)
		uepoll_close(fd[i]);
	uepoll_close(ep);
}

/* 4: one event, the window closes: not before it; FROM_FIRST: not before
 * min_wait after the event. */
static void rule4_window(uint32_t flags, int kernel)
{
	const uint32_t us = 300000;
	int ep = new_ep(us, 0, 0, flags), fd = -1, p[2] = { -1, -1 };
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };
	struct w w;
	pthread_t th;
	uint64_t tev;

	if (kernel) {
		REQUIRE(pipe(p) == 0);
		REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0);
	} else {
		fd = add_efd(ep, 7, EPOLLIN);
	}
	w_start(&w, &th, ep, 8, -1);
	w_asleep(&w);
	tev = t_now_ns();
	if (kernel)
		CHECK_EQ(write(p[1], "x", 1), 1);
	else
		CHECK_EQ(ueventfd_write(fd, 1), 0);
	w_join(&w, th);
	CHECK_EQ(w.ret, 1);
	CHECK_EQ(w.out[0].data.u64, 7);
	CHECK(w.t1 - w.t0 >= (uint64_t)us * 1000);
	if (flags & UEPOLL_BATCH_FROM_FIRST)
		CHECK(w.t1 - tev >= (uint64_t)us * 1000);
	if (kernel) {
		close(p[0]);
		close(p[1]);
	} else {
		uepoll_close(fd);
	}
	uepoll_close(ep);
}

/* 4': nothing during the window: the first event after it ends the wait,
 * which returns it (the second event is sent only after the wait returned,
 * so it must not be in it). */
static void rule4_nothing_in_window(void)
{
	int ep = new_ep(50000, 0, 0, 0), fd[2];
	struct w w;
	pthread_t th;

	fd[0] = add_efd(ep, 1, EPOLLIN | EPOLLET);
	fd[1] = add_efd(ep, 2, EPOLLIN | EPOLLET);
	w_start(&w, &th, ep, 8, -1);
	t_sleep_ms(200); /* past the window (the waiter dozes, then sleeps) */
	w_asleep(&w);
	CHECK_EQ(ueventfd_write(fd[0], 1), 0);
	while (!atomic_load(&w.done) && t_now_ns() - w.t0 < HANG_NS)
		t_sleep_ms(1);
	CHECK_EQ(ueventfd_write(fd[1], 1), 0);
	w_join(&w, th);
	CHECK_EQ(w.ret, 1);
	CHECK_EQ(w.out[0].data.u64, 1);
	uepoll_close(fd[0]);
	uepoll_close(fd[1]);
	uepoll_close(ep);
}

/* 5: events 10 ms apart under a 2 s gap timer all come in one wait, which
 * returns no earlier than the gap after the last. */
static void rule5_inter_event(void)
{
	const uint32_t gap = 2000000;
	int ep = new_ep(0, 0, gap, 0), fd[4];
	struct w w;
	pthread_t th;
	uint64_t tlast;

	for (int i = 0; i < 4; i++)
		fd[i] = add_efd(ep, 20 + (uint64_t)i, EPOLLIN | EPOLLET);
	w_start(&w, &th, ep, 8, -1);
	w_asleep(&w);
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(ueventfd_write(fd[i], 1), 0);
		t_sleep_ms(10);
	}
	tlast = t_now_ns();
	w_join(&w, th);
	CHECK_EQ(w.ret, 4);
	for (int i = 0; i < 4 && i < w.ret; i++)
		CHECK_EQ(w.out[i].data.u64, 20 + (uint64_t)i);
	CHECK(w.t1 - tlast + 10000000 >= (uint64_t)gap * 1000);
	for (int i = 0; i < 4; i++)
		uepoll_close(fd[i]);
	uepoll_close(ep);
}

/* 6: a 200 ms timeout under a 30 s window: returns at the timeout, with
 * the event it holds, or with none. */
static void rule6_timeout(int with_event)
{
	int ep = new_ep(LONG_US, 0, 0, 0), fd;
	struct w w;
	pthread_t th;

	fd = add_efd(ep, 5, EPOLLIN);
	if (with_event)
		CHECK_EQ(ueventfd_write(fd, 1), 0);
	w_start(&w, &th, ep, 8, 200);
	w_join(&w, th);
	CHECK_EQ(w.ret, with_event ? 1 : 0);
	CHECK(w.t1 - w.t0 >= 200000000ull);
	uepoll_close(fd);
	uepoll_close(ep);
}

static void on_sig(int sig)
{
	(void)sig;
}

/* 7: a signal while dozing with an event: the event; with none: EINTR. */
static void rule7_signal(int with_event)
{
	int ep = new_ep(LONG_US, 0, 0, 0), fd;
	struct sigaction sa;
	struct w w;
	pthread_t th;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	fd = add_efd(ep, 6, EPOLLIN | EPOLLET);
	w_start(&w, &th, ep, 8, -1);
	w_asleep(&w);
	if (with_event) {
		CHECK_EQ(ueventfd_write(fd, 1), 0);
		w_asleep(&w);
	}
	CHECK_EQ(pthread_kill(th, SIGUSR1), 0);
	w_join(&w, th);
	if (with_event) {
		CHECK_EQ(w.ret, 1);
		CHECK_EQ(w.out[0].data.u64, 6);
	} else {
		CHECK_EQ(w.ret, -1);
		CHECK_EQ(w.err, EINTR);
	}
	uepoll_close(fd);
	uepoll_close(ep);
}

static void timeout_zero(void)
{
	int ep = new_ep(LONG_US, 5, 0, 0), fd;
	struct epoll_event out[8];
	uint64_t t0 = t_now_ns();

	fd = add_efd(ep, 3, EPOLLIN);
	CHECK_EQ(uepoll_wait(ep, out, 8, 0), 0);
	CHECK_EQ(ueventfd_write(fd, 1), 0);
	CHECK_EQ(uepoll_wait(ep, out, 8, 0), 1);
	CHECK(t_now_ns() - t0 < HANG_NS);
	uepoll_close(fd);
	uepoll_close(ep);
}

/* Each registration once per wait, and the next wait sees it again. */
static void once_per_wait(void)
{
	int ep = new_ep(200000, 0, 0, 0), lt, et, p[2];
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 3 }, out[8];
	int n;

	lt = add_efd(ep, 1, EPOLLIN);
	et = add_efd(ep, 2, EPOLLIN | EPOLLET);
	REQUIRE(pipe(p) == 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0);
	CHECK_EQ(ueventfd_write(lt, 1), 0);
	CHECK_EQ(ueventfd_write(et, 1), 0);
	CHECK_EQ(write(p[1], "x", 1), 1);
	n = uepoll_wait(ep, out, 8, -1);
	CHECK_EQ(n, 3);
	t_sort_events(out, n > 0 ? n : 0);
	for (int i = 0; i < 3 && i < n; i++)
		CHECK_EQ(out[i].data.u64, (uint64_t)i + 1);
	/* A new edge on the ET source during the next window, from this
	 * thread: the LT sources again, the ET one once. */
	CHECK_EQ(ueventfd_write(et, 1), 0);
	n = uepoll_wait(ep, out, 8, -1);
	CHECK_EQ(n, 3);
	t_sort_events(out, n > 0 ? n : 0);
	for (int i = 0; i < 3 && i < n; i++)
		CHECK_EQ(out[i].data.u64, (uint64_t)i + 1);
	/* Nothing new on the ET source: the LT ones only. */
	n = uepoll_wait(ep, out, 8, -1);
	CHECK_EQ(n, 2);
	t_sort_events(out, n > 0 ? n : 0);
	CHECK_EQ(out[0].data.u64, 1);
	CHECK_EQ(out[1].data.u64, 3);
	uepoll_close(lt);
	uepoll_close(et);
	close(p[0]);
	close(p[1]);
	uepoll_close(ep);
}

/* An ET source written again while the window is open (by another thread,
 * after the wait took its first edge): returned once by this wait and again
 * by the next; nothing lost. */
static void et_refire(void)
{
	int ep = new_ep(300000, 0, 0, 0), et;
	struct epoll_event out[8];
	struct w w;
	pthread_t th;
	eventfd_t v;

	et = add_efd(ep, 9, EPOLLIN | EPOLLET);
	CHECK_EQ(ueventfd_write(et, 1), 0);
	w_start(&w, &th, ep, 8, -1);
	w_asleep(&w); /* it holds the first edge and dozes */
	CHECK_EQ(ueventfd_write(et, 1), 0);
	w_join(&w, th);
	CHECK_EQ(w.ret, 1);
	CHECK_EQ(w.out[0].data.u64, 9);
	CHECK_EQ(uepoll_wait(ep, out, 8, 0), 1);
	CHECK_EQ(ueventfd_read(et, &v), 0);
	CHECK_EQ(v, 2);
	uepoll_close(et);
	uepoll_close(ep);
}

/* A level-triggered ueventfd a dozing wait holds (off the ready queue) is
 * closed and its registration removed meanwhile: the wait returns what it
 * collected, nothing is touched after being freed (ASan), and the next wait
 * sees the other source only. */
static void close_while_held(void)
{
	int ep = new_ep(300000, 0, 0, 0), a, b;
	struct epoll_event out[8];
	struct w w;
	pthread_t th;

	a = add_efd(ep, 1, EPOLLIN);
	b = add_efd(ep, 2, EPOLLIN);
	CHECK_EQ(ueventfd_write(a, 1), 0);
	CHECK_EQ(ueventfd_write(b, 1), 0);
	w_start(&w, &th, ep, 8, -1);
	w_asleep(&w); /* it holds both and dozes */
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_DEL, b, NULL), 0);
	CHECK_EQ(uepoll_close(a), 0);
	w_join(&w, th);
	CHECK_EQ(w.ret, 2);
	CHECK_EQ(uepoll_wait(ep, out, 8, 0), 0);
	CHECK_EQ(ueventfd_write(b, 1), 0);
	CHECK_EQ(uepoll_wait(ep, out, 8, 0), 0); /* b was removed */
	uepoll_close(b);
	uepoll_close(ep);
}

int main(void)
{
	t_begin("t_batch_rules");
	t_watchdog(200);
	rule1_maxevents();
	rule2_min_events(LONG_US);
	rule2_min_events(0);
	rule4_window(0, 0);
	rule4_window(0, 1);
	rule4_window(UEPOLL_BATCH_FROM_FIRST, 0);
	rule4_window(UEPOLL_BATCH_FROM_FIRST, 1);
	rule4_nothing_in_window();
	rule5_inter_event();
	rule6_timeout(1);
	rule6_timeout(0);
	rule7_signal(1);
	rule7_signal(0);
	timeout_zero();
	once_per_wait();
	et_refire();
	close_while_held();
	return t_end();
}
