/*
 * t_nest_clear_recheck: a watched instance's clear of its doorbell looks at
 * the ready queue after it took the doorbell, and rings again for what is
 * queued (bell__clear in src/bell.c, WATCHED; models/watched.pml, mutant
 * CLEAR_NO_RECHECK).
 *
 * The clear that must look is one with no look of its caller after it: a
 * reader's revalidation of the instances its drained source is queued in
 * (wq_unready, port_revalidate: bell__mirror from outside any wait).  On
 * the wait path wait__settle looks at the queue after bell__mirror and
 * kicks itself; a holder's check (krec__ready) looks too, though only to
 * report the instance, not to ring.
 *
 * Instance `in` holds two ueventfds A and B, and is held level-triggered
 * by instance `out`.  A is written: its item is queued, `in`'s doorbell
 * rung.  The main thread reads A empty: the read revalidates `in` (the
 * prune drops A's item, the clear takes the doorbell).  Thread W writes B
 * from inside that take's read(2), before it is made (a hook at the
 * library's system calls, libcwrap.h; the clear holds the doorbell's
 * dblock there, and A's wq lock, neither of which B's signal needs: it
 * finds the doorbell rung and does not ring), then the read takes the
 * ring that was A's.  B's event is now queued with the doorbell empty:
 * only the clear's look after its store rings for it.  Then, as the
 * kernel's epoll reports a nested epoll that has an event ready: `in`'s
 * fd must poll readable, `out` must report `in`, and `in` must return B.
 * Every check is a zero-timeout look once the steps are over: no timing.
 *
 * (B written from the hook's own thread would not do: a ueventfd write
 * that finds a lock of ours held by its thread leaves its signal as owed
 * work until the lock is dropped, LOCK in lock.h, so the signal would come
 * after the clear.)
 */
#include "testlib.h"
#include "libcwrap.h"

#include "fdtab.h"
#include "port_impl.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>

static int efd_b;
static struct port *pin;
static _Atomic int hooked, w_go, w_done, w_rung;

/* Thread W: B's write, when the hook says. */
static void *w_main(void *arg)
{
	uint64_t one = 1;

	(void)arg;
	while (!atomic_load(&w_go))
		sched_yield();
	CHECK_EQ(uepoll_write(efd_b, &one, 8), 8);
	atomic_store(&w_done, 1);
	return NULL;
}

/* The read's first read(2) is the clear's take of `in`'s doorbell. */
static void hook(long nr)
{
	if (nr != SYS_read) {
		wrap_hook_once(hook);
		return;
	}
	atomic_store(&hooked, 1);
	/* The take of a rung doorbell, under its dblock. */
	atomic_store(&w_rung, bell_rung(&pin->bell));
	atomic_store(&w_go, 1);
	while (!atomic_load(&w_done))
		sched_yield();
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, got[4];
	struct pollfd pfd;
	uint64_t one = 1, v;
	pthread_t w;
	int in, out, a, n;

	t_begin("t_nest_clear_recheck");
	t_watchdog(30);
	in = uepoll_create1(0);
	out = uepoll_create1(0);
	a = ueventfd(0, EFD_NONBLOCK);
	efd_b = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(in >= 0 && out >= 0 && a >= 0 && efd_b >= 0);
	pin = (struct port *)(void *)fdtab_peek(in);
	REQUIRE(pin);
	ev.data.u64 = 'A';
	REQUIRE(uepoll_ctl(in, EPOLL_CTL_ADD, a, &ev) == 0);
	ev.data.u64 = 'B';
	REQUIRE(uepoll_ctl(in, EPOLL_CTL_ADD, efd_b, &ev) == 0);
	ev.data.u64 = 'I'; /* level-triggered holder */
	REQUIRE(uepoll_ctl(out, EPOLL_CTL_ADD, in, &ev) == 0);

	CHECK_EQ(uepoll_write(a, &one, 8), 8);
	REQUIRE(bell_rung(&pin->bell));

	REQUIRE(pthread_create(&w, NULL, w_main, NULL) == 0);
	wrap_hook_once(hook);
	CHECK_EQ(uepoll_read(a, &v, 8), 8);
	wrap_hook_once(NULL);
	atomic_store(&w_go, 1); /* (if the hook never ran) */
	REQUIRE(pthread_join(w, NULL) == 0);
	REQUIRE(atomic_load(&hooked)); /* B's write came in the take */
	CHECK(atomic_load(&w_rung));

	/* B is pending in `in`: its fd and its holder must say so. */
	pfd.fd = in;
	pfd.events = POLLIN;
	pfd.revents = 0;
	CHECK_EQ(poll(&pfd, 1, 0), 1);
	CHECK(pfd.revents & POLLIN);
	n = uepoll_wait(out, got, 4, 0);
	CHECK_EQ(n, 1);
	if (n != 1)
		fprintf(stderr, "`out` does not report `in`, whose B is "
				"pending: the clear did not ring again for it\n");
	else
		CHECK_EQ(got[0].data.u64, 'I');
	CHECK_EQ(uepoll_wait(in, got, 4, 0), 1);
	CHECK_EQ(got[0].data.u64, 'B');

	uepoll_close(out);
	uepoll_close(in);
	uepoll_close(a);
	uepoll_close(efd_b);
	return t_end();
}
