/*
 * t_krec_data_race: an event of a recorded registration (here a kernel fd
 * with EPOLLURGENT) carries the data of the registration the kernel gave
 * it for, when a ctl and a wait's translation meet at a chosen step (DATA
 * in src/krec.c; the model is models/data.pml).  Each step is a system
 * call of one thread, held through a hook at the library's system calls
 * (libcwrap.h) while the other thread acts; no clock decides anything.
 *  - new: a thread naps in uepoll_wait(-1) on a UEPOLL_NOPOLL instance with
 *    no kernel fd; another adds a pipe that holds a byte (EPOLLURGENT, data
 *    42) and is held at its wake of the napper (after the kernel's ADD:
 *    the kernel gives the event from then on).  A wait (timeout 0) then
 *    must return it with data 42: the fields a harvest reads are stored
 *    before the kernel call.  Then the napper returns it too.
 *  - mod: an instance holds, in this order, an inner instance (data 1; a
 *    ready pipe in it, and a ueventfd, so that the harvest asks the kernel
 *    whether it is ready) and a ready pipe (EPOLLURGENT, data 2).  A wait
 *    (timeout 0) is held at its first system call after the kernel's
 *    epoll_wait (the inner's check, which comes first in the kernel's
 *    list), while the main thread MODs the pipe to EPOLLOUT|EPOLLURGENT
 *    with data 3: a pipe's read end is never writable, so no event may
 *    carry data 3 (the kernel's epoll, made the same, never gives one);
 *    the pipe's event taken before the MOD is dropped or keeps data 2.
 */
#include "libcwrap.h"
#include "testlib.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic int held, go, seen;

/* (held and go are reset by the main thread before it starts the thread
 * to hold.) */
static void hold_reset(void)
{
	atomic_store(&held, 0);
	atomic_store(&go, 0);
}

/* Held at the first call after one numbered `after` (and of number `at`,
 * if at >= 0). */
static long after, at;

static void hook(long nr)
{
	if (!atomic_load(&seen) || (at >= 0 && nr != at)) {
		if (nr == after)
			atomic_store(&seen, 1);
		wrap_hook_once(hook);
		return;
	}
	atomic_store(&held, 1);
	while (!atomic_load(&go))
		sched_yield();
}

static void hook_arm(long a, long b)
{
	after = a;
	at = b;
	atomic_store(&seen, 0);
	wrap_hook_once(hook);
}

/* ---- new ---- */

static int ep, p[2];
static _Atomic int napper_tid, ctl_done;
static int napper_n;

static void *napper(void *arg)
{
	struct epoll_event *ev = arg;

	atomic_store(&napper_tid, t_gettid());
	napper_n = uepoll_wait(ep, ev, 1, -1);
	return NULL;
}

static void *adder(void *arg)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLURGENT,
				  .data.u64 = 42 };

	(void)arg;
	hook_arm(SYS_epoll_ctl, SYS_futex);
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
	wrap_hook_once(NULL);
	atomic_store(&ctl_done, 1);
	return NULL;
}

static void test_new(void)
{
	struct epoll_event nev, ev[4];
	pthread_t nth, ath;
	int n;

	ep = uepoll_create2(0, UEPOLL_NOPOLL);
	REQUIRE(ep >= 0);
	REQUIRE(pipe2(p, O_NONBLOCK) == 0);
	REQUIRE(write(p[1], "x", 1) == 1);
	REQUIRE(pthread_create(&nth, NULL, napper, &nev) == 0);
	while (!atomic_load(&napper_tid))
		sched_yield();
	REQUIRE(t_wait_sleeping(atomic_load(&napper_tid), 10000));
	hold_reset();
	REQUIRE(pthread_create(&ath, NULL, adder, NULL) == 0);
	while (!atomic_load(&held) && !atomic_load(&ctl_done))
		sched_yield();
	if (!atomic_load(&held)) {
		/* The add made no futex call after its epoll_ctl: nobody
		 * napped, the scenario did not happen. */
		fprintf(stderr, "new: the add woke no napper\n");
		t_failures++;
	}
	n = uepoll_wait(ep, ev, 4, 0);
	CHECK_EQ(n, 1);
	for (int i = 0; i < n; i++)
		if (ev[i].data.u64 != 42) {
			fprintf(stderr, "new: an event with data %#llx, want 42\n",
				(unsigned long long)ev[i].data.u64);
			t_failures++;
		}
	atomic_store(&go, 1);
	REQUIRE(t_join_within(ath, 10000));
	REQUIRE(t_join_within(nth, 10000));
	CHECK_EQ(napper_n, 1);
	if (napper_n == 1)
		CHECK_EQ(nev.data.u64, 42);
	CHECK_EQ(uepoll_close(ep), 0);
	close(p[0]);
	close(p[1]);
}

/* ---- mod ---- */

struct mod_wait {
	int kern, ep, n;
	struct epoll_event ev[8];
};

static void *mod_waiter(void *arg)
{
	struct mod_wait *w = arg;

	if (!w->kern)
		hook_arm(SYS_epoll_pwait, -1);
	w->n = w->kern ? epoll_wait(w->ep, w->ev, 8, 0)
		       : uepoll_wait(w->ep, w->ev, 8, 0);
	wrap_hook_once(NULL);
	return NULL;
}

static void mod1(int kern)
{
	int (*ctl)(int, int, int, struct epoll_event *) =
		kern ? epoll_ctl : uepoll_ctl;
	int (*cl)(int) = kern ? close : uepoll_close;
	struct epoll_event ev = { .events = EPOLLIN };
	struct mod_wait w = { .kern = kern };
	int inner, efd, ip[2], pp[2];
	pthread_t th;

	w.ep = kern ? epoll_create1(0) : uepoll_create1(0);
	inner = kern ? epoll_create1(0) : uepoll_create1(0);
	efd = kern ? eventfd(0, EFD_NONBLOCK) : ueventfd(0, EFD_NONBLOCK);
	REQUIRE(w.ep >= 0 && inner >= 0 && efd >= 0);
	REQUIRE(pipe2(ip, O_NONBLOCK) == 0 && pipe2(pp, O_NONBLOCK) == 0);
	REQUIRE(write(ip[1], "x", 1) == 1 && write(pp[1], "x", 1) == 1);
	ev.data.u64 = 10;
	REQUIRE(ctl(inner, EPOLL_CTL_ADD, ip[0], &ev) == 0);
	ev.data.u64 = 11;
	REQUIRE(ctl(inner, EPOLL_CTL_ADD, efd, &ev) == 0);
	ev.data.u64 = 1;
	REQUIRE(ctl(w.ep, EPOLL_CTL_ADD, inner, &ev) == 0);
	ev.events = EPOLLIN | (kern ? 0 : EPOLLURGENT);
	ev.data.u64 = 2;
	REQUIRE(ctl(w.ep, EPOLL_CTL_ADD, pp[0], &ev) == 0);

	hold_reset();
	REQUIRE(pthread_create(&th, NULL, mod_waiter, &w) == 0);
	if (!kern)
		while (!atomic_load(&held))
			sched_yield();
	else
		REQUIRE(t_join_within(th, 10000));
	ev.events = EPOLLOUT | (kern ? 0 : EPOLLURGENT);
	ev.data.u64 = 3;
	CHECK_EQ(ctl(w.ep, EPOLL_CTL_MOD, pp[0], &ev), 0);
	atomic_store(&go, 1);
	if (!kern)
		REQUIRE(t_join_within(th, 10000));
	CHECK(w.n >= 1);
	for (int i = 0; i < w.n; i++) {
		if (w.ev[i].data.u64 == 3 || w.ev[i].data.u64 > 3) {
			fprintf(stderr, "%s mod: an event %#x with data %llu, "
				"given before the MOD to data 3\n",
				kern ? "kernel" : "uepoll", w.ev[i].events,
				(unsigned long long)w.ev[i].data.u64);
			t_failures++;
		}
	}
	/* And after it: the inner instance only. */
	w.n = kern ? epoll_wait(w.ep, w.ev, 8, 0) : uepoll_wait(w.ep, w.ev, 8, 0);
	CHECK_EQ(w.n, 1);
	if (w.n == 1)
		CHECK_EQ(w.ev[0].data.u64, 1);
	CHECK_EQ(cl(w.ep), 0);
	CHECK_EQ(cl(inner), 0);
	CHECK_EQ(cl(efd), 0);
	close(ip[0]);
	close(ip[1]);
	close(pp[0]);
	close(pp[1]);
}

int main(void)
{
	t_begin("t_krec_data_race");
	t_watchdog(60);
	test_new();
	mod1(1);
	mod1(0);
	return t_end();
}
