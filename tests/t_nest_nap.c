/*
 * t_nest_nap: another instance (or a kernel epoll, EPOLLET through
 * uepoll_ctl) starts holding a NOPOLL instance while a wait on it naps on
 * its futex word (NAP in src/bell.c), and an event comes before the napper
 * has left its nap.  The event must reach the holder, and once the event is
 * taken the instance must not be left ready (issue 32, bug 11: the same root
 * as the doze's).
 *
 * The napper is held between its futex call and the end of its nap by a
 * signal handler that blocks (on a pipe) until the test has added the holder
 * and written the event; released, the nap ends with EINTR (a handler always
 * ends a nap, as it ends epoll_wait).  Before the fix the nap's end stored
 * the bell's `set` = 0 over the doorbell's ring made meanwhile for the
 * holder, so the level-triggered doorbell was never read again: the holder
 * reported the empty instance on every wait, poll() saw it ready.
 *
 * The same script on the kernel (a thread in epoll_wait, interrupted the
 * same way) and on uepoll; the logs must be equal.
 */
#include "testlib.h"
#include "calls.h"

#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>


static int ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

static int gate[2];
static _Atomic int in_handler;

/* Holds the interrupted thread until the test writes to the gate. */
static void on_usr1(int sig)
{
	char c;

	(void)sig;
	atomic_store(&in_handler, 1);
	while (read(gate[0], &c, 1) < 0 && errno == EINTR)
		;
}

struct waiter {
	const struct calls *s;
	int ep, n, err;
	_Atomic int tid;
	struct epoll_event ev[4];
};

static void *waiter_fn(void *arg)
{
	struct waiter *w = arg;

	atomic_store(&w->tid, t_gettid());
	errno = 0;
	w->n = w->s->wait(w->ep, w->ev, 4, 20000);
	w->err = errno;
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
	struct waiter w = { .s = s, .ep = in };
	pthread_t th;
	uint64_t v = 1;

	REQUIRE(in >= 0 && e >= 0 && out_ep >= 0);
	t_log_res(l, s->ctl(in, EPOLL_CTL_ADD, e, &ev));
	atomic_store(&in_handler, 0);
	REQUIRE(pthread_create(&th, NULL, waiter_fn, &w) == 0);
	while (!atomic_load(&w.tid))
		sched_yield();
	/* Napping (uepoll: on the futex word) or asleep in epoll_wait. */
	if (s == &calls_kernel)
		REQUIRE(t_wait_sleeping(atomic_load(&w.tid), 5000));
	else
		CHECK_EQ(t_blocked_in(atomic_load(&w.tid), 5000), SYS_futex);
	pthread_kill(th, SIGUSR1);
	while (!atomic_load(&in_handler))
		sched_yield();
	/* The napper is out of its futex call, still counted a napper. */
	ev.events = holder ? EPOLLIN | EPOLLET : EPOLLIN;
	ev.data.u64 = 10;
	t_log_res(l, s->ctl(out_ep, EPOLL_CTL_ADD, in, &ev));
	t_log_res(l, s->write(e, &v, 8));
	t_log_events(l, out, hwait(out_ep, out, 4, 0));
	REQUIRE(write(gate[1], "g", 1) == 1);
	pthread_join(th, NULL);
	t_log_put(l, w.n);
	t_log_put(l, w.n < 0 ? w.err : 0);
	/* The event is still there: taken, then read. */
	t_log_events(l, out, s->wait(in, out, 4, 0));
	t_log_res(l, s->read(e, &v, 8));
	t_log_events(l, out, hwait(out_ep, out, 4, 0));
	t_log_events(l, out, hwait(out_ep, out, 4, 0));
	t_log_put(l, ready(in));
	t_log_put(l, ready(out_ep));
	/* The next events reach the holder, once each. */
	for (int i = 0; i < 2; i++) {
		t_log_res(l, s->write(e, &v, 8));
		t_log_events(l, out, hwait(out_ep, out, 4, 0));
		t_log_events(l, out, s->wait(in, out, 4, 0));
		t_log_res(l, s->read(e, &v, 8));
		t_log_events(l, out, hwait(out_ep, out, 4, 0));
		t_log_put(l, ready(in));
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
	struct sigaction sa = { .sa_handler = on_usr1 };

	t_begin("t_nest_nap");
	t_watchdog(120);
	REQUIRE(pipe(gate) == 0);
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	for (int holder = 0; holder < 2; holder++) {
		struct t_log kl = { 0 }, ul = { 0 };

		script(&calls_kernel, &kl, holder);
		script(&calls_uepoll_nopoll, &ul, holder);
		t_log_same(&kl, &ul, holder ? "kernel epoll (EPOLLET) arrives"
					    : "instance arrives");
	}
	signal(SIGUSR1, SIG_DFL);
	close(gate[0]);
	close(gate[1]);
	return t_end();
}
