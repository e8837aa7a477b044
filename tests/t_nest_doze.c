/*
 * t_nest_doze: another instance (or a kernel epoll, EPOLLET through
 * uepoll_ctl) starts holding an instance while a batching wait on it dozes;
 * the event that ends the batch rings the doorbell for the holder too.  When
 * the wait has taken everything, the instance must not be left ready: the
 * holder reports nothing, poll() sees nothing (issue 32, bug 11).
 *
 * Before the fix the doze held the bell's `set` at 1 and, ending, stored 0
 * over the ring that came meanwhile, whose eventfd count nobody then read:
 * the level-triggered doorbell kept the instance readable for good, and its
 * holder reported the empty instance on every wait (a busy loop).
 *
 * The same script on the kernel (a thread blocked in epoll_wait instead of
 * a batching wait: the kernel has no batching) and on uepoll (the instance
 * under uepoll_batch with min_events 1, so the one event ends the batch);
 * the logs must be equal.  The source is registered EPOLLET, so the wait
 * that takes its event leaves the instance's ready queue empty.
 */
#include "testlib.h"
#include "calls.h"

#include <poll.h>
#include <stdatomic.h>

static int ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

/* A thread blocked in a wait on the instance (watchdog: 20 s; uepoll's
 * batch window is longer, so only the event ends it). */
struct waiter {
	const struct calls *s;
	int ep, n;
	_Atomic int tid;
	struct epoll_event ev[4];
};

static void *waiter_fn(void *arg)
{
	struct waiter *w = arg;

	atomic_store(&w->tid, t_gettid());
	w->n = w->s->wait(w->ep, w->ev, 4, 20000);
	return NULL;
}

/* holder: 0 another instance of s, level-triggered; 1 a kernel epoll,
 * EPOLLET, through s->ctl. */
static void script(const struct calls *s, struct t_log *l, int holder)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 1 },
			   out[4];
	int in = s->create1(0), e = s->eventfd(0, EFD_NONBLOCK),
	    out_ep = holder ? epoll_create1(0) : s->create1(0);
	int (*hwait)(int, struct epoll_event *, int, int) =
		holder ? epoll_wait : s->wait;
	struct waiter w = { .s = s };
	pthread_t th;
	uint64_t v = 1;

	REQUIRE(in >= 0 && e >= 0 && out_ep >= 0);
	t_log_res(l, s->ctl(in, EPOLL_CTL_ADD, e, &ev));
	if (s != &calls_kernel) {
		struct uepoll_batch b = { .min_wait_us = 60u * 1000 * 1000,
					  .min_events = 1 };

		REQUIRE(uepoll_batch(in, &b, NULL) == 0);
	}
	for (int round = 0; round < 3; round++) {
		w.ep = in;
		atomic_store(&w.tid, 0);
		REQUIRE(pthread_create(&th, NULL, waiter_fn, &w) == 0);
		while (!atomic_load(&w.tid))
			sched_yield();
		/* Dozing (uepoll) or asleep (kernel) before the holder
		 * comes; if not, the result is the same. */
		(void)t_wait_sleeping(atomic_load(&w.tid), 5000);
		ev.events = holder ? EPOLLIN | EPOLLET : EPOLLIN;
		ev.data.u64 = 10;
		t_log_res(l, s->ctl(out_ep, EPOLL_CTL_ADD, in, &ev));
		t_log_res(l, s->write(e, &v, 8));
		pthread_join(th, NULL);
		t_log_events(l, w.ev, w.n);
		t_log_res(l, s->read(e, &v, 8));
		/* Taken and read: nothing is ready, whoever looks. */
		t_log_events(l, out, hwait(out_ep, out, 4, 0));
		t_log_events(l, out, hwait(out_ep, out, 4, 0));
		t_log_put(l, ready(in));
		t_log_put(l, ready(out_ep));
		t_log_res(l, s->wait(in, out, 4, 0));
		/* And the next event still reaches the holder. */
		t_log_res(l, s->write(e, &v, 8));
		t_log_events(l, out, hwait(out_ep, out, 4, 0));
		t_log_events(l, out, s->wait(in, out, 4, 0));
		t_log_res(l, s->read(e, &v, 8));
		t_log_events(l, out, hwait(out_ep, out, 4, 0));
		t_log_put(l, ready(in));
		t_log_res(l, s->ctl(out_ep, EPOLL_CTL_DEL, in, NULL));
	}
	if (holder)
		close(out_ep);
	else
		s->close(out_ep);
	s->close(e);
	s->close(in);
}

int main(void)
{
	t_begin("t_nest_doze");
	t_watchdog(240);
	for (int holder = 0; holder < 2; holder++) {
		struct t_log kl = { 0 }, ul = { 0 };

		script(&calls_kernel, &kl, holder);
		script(&calls_uepoll, &ul, holder);
		t_log_same(&kl, &ul, holder ? "kernel epoll (EPOLLET) arrives"
					    : "instance arrives");
	}
	return t_end();
}
