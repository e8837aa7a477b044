/*
 * t_port_nap: the futex floor (issue 19, item 3; NAP in src/bell.c).  A
 * sleeping uepoll_wait on a UEPOLL_NOPOLL instance with no kernel fd, no
 * watcher and no sigmask sleeps on a futex word, and a ueventfd write wakes
 * it with one FUTEX_WAKE; everything that makes that wrong moves the
 * sleeper back into the kernel epoll.  Each case checks where the waiter
 * sleeps (/proc/self/task/TID/syscall) and what it returns:
 *  (a) handoff: the waiter naps in futex; the write that wakes it makes one
 *      system call, a FUTEX_WAKE; a default instance's waiter sleeps in
 *      epoll_pwait(2) and is woken by the doorbell's write;
 *  (b) a wait with a sigmask sleeps in the kernel epoll (the mask must be
 *      applied atomically), and is woken too;
 *  (c) a signal whose handler has SA_RESTART ends a nap with EINTR, as it
 *      ends the kernel's epoll_wait (checked on both);
 *  (d) a nap's timeout: returns 0, not before the time;
 *  (e) a kernel fd added while a thread naps: the napper moves to the
 *      kernel epoll, and the fd's event wakes it;
 *  (f) an outer instance starts holding the napping one: the napper moves,
 *      the outer sees the instance readable, and the napper gets the event;
 *  (g) demotion while a thread naps: it moves, and a write wakes it;
 *  (h) cancellation in a nap leaves no napper counted: a later write with
 *      nobody asleep makes no system call;
 *  (j) a stale doorbell left by NOPOLL does not stop a napper's ring;
 *  (k) naps and sigmask waits in turn on one instance are all woken;
 *  (n) two nappers: a write wakes one, which returns for good; the next
 *      write wakes the other (the first gave `napped` back);
 *  (l) a NOPOLL instance and ueventfd put into a kernel epoll become exact
 *      at once (UNNOPOLL), a napper included;
 *  (m) a fork while a thread naps moves it into the kernel epoll, and a
 *      write after the fork wakes it;
 *  (i) stress: three waiters (one with a sigmask, so naps and epoll sleeps
 *      mix) and two writers on one instance; every unit written is read
 *      and the waiters end.
 */
#include "testlib.h"
#include "libcwrap.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static bool in_epoll(int nr)
{
	return nr == SYS_epoll_pwait || nr == SYS_epoll_wait
#ifdef SYS_epoll_pwait2
	       || nr == SYS_epoll_pwait2
#endif
		;
}

/* Where a napping waiter is found. */
static bool in_nap(int nr)
{
	return nr == SYS_futex;
}

struct waiter {
	pthread_t th;
	int ep;
	int timeout;
	const sigset_t *mask;
	_Atomic int tid;
	int r, err;
	struct epoll_event ev[4];
};

static void *waiter_fn(void *arg)
{
	struct waiter *w = arg;

	atomic_store(&w->tid, t_gettid());
	errno = 0;
	if (w->mask)
		w->r = uepoll_pwait(w->ep, w->ev, 4, w->timeout, w->mask);
	else
		w->r = uepoll_wait(w->ep, w->ev, 4, w->timeout);
	w->err = errno;
	return NULL;
}

/* Start a waiter and return the system call it is found asleep in. */
static int waiter_start(struct waiter *w, int ep, int timeout,
			const sigset_t *mask)
{
	w->ep = ep;
	w->timeout = timeout;
	w->mask = mask;
	atomic_store(&w->tid, 0);
	REQUIRE(pthread_create(&w->th, NULL, waiter_fn, w) == 0);
	while (!atomic_load(&w->tid))
		sched_yield();
	return t_blocked_in(atomic_load(&w->tid), 5000);
}

static void waiter_join(struct waiter *w)
{
	REQUIRE(t_join_within(w->th, 5000));
}

static int nopoll_instance(void)
{
	int ep = uepoll_create2(0, UEPOLL_NOPOLL);

	REQUIRE(ep >= 0);
	return ep;
}

/* A UEVENTFD_NOPOLL ueventfd in ep.  Made with a unit that is read away: a
 * NOPOLL ueventfd leaves the first unit its kernel fd got there for good
 * (MIRROR in eventfd.c), so later writes make no call of their own. */
static int add_efd(int ep, uint64_t data)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = data };
	int e = ueventfd(1, EFD_NONBLOCK | UEVENTFD_NOPOLL);
	uint64_t v;

	REQUIRE(e >= 0);
	REQUIRE(uepoll_read(e, &v, 8) == 8);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
	return e;
}

static void put(int e)
{
	uint64_t one = 1;

	REQUIRE(uepoll_write(e, &one, 8) == 8);
}

static void case_handoff(void)
{
	struct waiter w;
	int ep, e, nr, calls;

	fprintf(stderr, "-- handoff\n");
	ep = nopoll_instance();
	e = add_efd(ep, 7);
	nr = waiter_start(&w, ep, -1, NULL);
	CHECK(in_nap(nr));
	wrap_arm(0);
	put(e);
	calls = wrap_take_show();
	wrap_take(-1);
	wrap_disarm();
	/* The write, then one FUTEX_WAKE; nothing else. */
	CHECK_EQ(calls, 1);
	waiter_join(&w);
	CHECK_EQ(w.r, 1);
	CHECK_EQ(w.ev[0].data.u64, 7);
	uepoll_close(e);
	uepoll_close(ep);

	/* A default instance: its fd may be polled from outside, so the
	 * doorbell rings and the waiter sleeps in the kernel epoll. */
	ep = uepoll_create1(0);
	REQUIRE(ep >= 0);
	e = add_efd(ep, 8);
	nr = waiter_start(&w, ep, -1, NULL);
	CHECK(in_epoll(nr));
	put(e);
	waiter_join(&w);
	CHECK_EQ(w.r, 1);
	CHECK_EQ(w.ev[0].data.u64, 8);
	uepoll_close(e);
	uepoll_close(ep);
}

static void case_sigmask(void)
{
	struct waiter w;
	sigset_t m;
	int ep, e;

	fprintf(stderr, "-- sigmask\n");
	sigemptyset(&m);
	sigaddset(&m, SIGUSR2);
	ep = nopoll_instance();
	e = add_efd(ep, 9);
	CHECK(in_epoll(waiter_start(&w, ep, -1, &m)));
	put(e);
	waiter_join(&w);
	CHECK_EQ(w.r, 1);
	CHECK_EQ(w.ev[0].data.u64, 9);
	uepoll_close(e);
	uepoll_close(ep);
}

static _Atomic int handled;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

/* A thread in the kernel's epoll_wait, for (c)'s comparison. */
static void *kwaiter_fn(void *arg)
{
	struct waiter *w = arg;

	atomic_store(&w->tid, t_gettid());
	errno = 0;
	w->r = epoll_wait(w->ep, w->ev, 4, w->timeout);
	w->err = errno;
	return NULL;
}

static void case_eintr(void)
{
	struct sigaction sa = { .sa_handler = on_usr1,
				.sa_flags = SA_RESTART };
	struct waiter w, k;
	int ep, e, kep;

	fprintf(stderr, "-- eintr\n");
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	ep = nopoll_instance();
	e = add_efd(ep, 1);
	CHECK(in_nap(waiter_start(&w, ep, -1, NULL)));
	pthread_kill(w.th, SIGUSR1);
	waiter_join(&w);

	kep = epoll_create1(0);
	REQUIRE(kep >= 0);
	k.ep = kep;
	k.timeout = -1;
	atomic_store(&k.tid, 0);
	REQUIRE(pthread_create(&k.th, NULL, kwaiter_fn, &k) == 0);
	while (!atomic_load(&k.tid))
		sched_yield();
	CHECK(in_epoll(t_blocked_in(atomic_load(&k.tid), 5000)));
	pthread_kill(k.th, SIGUSR1);
	REQUIRE(t_join_within(k.th, 5000));

	CHECK_EQ(k.r, -1);
	CHECK_EQ(k.err, EINTR);
	CHECK_EQ(w.r, k.r);
	CHECK_EQ(w.err, k.err);
	CHECK_EQ(atomic_load(&handled), 2);
	close(kep);
	signal(SIGUSR1, SIG_DFL);
	uepoll_close(e);
	uepoll_close(ep);
}

static void case_timeout(void)
{
	struct epoll_event ev[2];
	uint64_t t0;
	int ep, e;

	fprintf(stderr, "-- timeout\n");
	ep = nopoll_instance();
	e = add_efd(ep, 1);
	t0 = t_now_ns();
	CHECK_EQ(uepoll_wait(ep, ev, 2, 60), 0);
	/* Never before the time (the kernel rounds up, never down). */
	CHECK(t_now_ns() - t0 >= 60u * 1000000u);
	uepoll_close(e);
	uepoll_close(ep);
}

static void case_kernel_fd(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 42 };
	struct waiter w;
	int ep, e, pfd[2];

	fprintf(stderr, "-- kernel_fd\n");
	REQUIRE(pipe(pfd) == 0);
	ep = nopoll_instance();
	e = add_efd(ep, 1);
	CHECK(in_nap(waiter_start(&w, ep, -1, NULL)));
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &ev) == 0);
	/* The ADD woke the napper into the kernel epoll, before any event. */
	CHECK(in_epoll(t_blocked_in(atomic_load(&w.tid), 5000)));
	REQUIRE(write(pfd[1], "x", 1) == 1);
	waiter_join(&w);
	CHECK_EQ(w.r, 1);
	CHECK_EQ(w.ev[0].data.u64, 42);
	uepoll_close(e);
	uepoll_close(ep);
	close(pfd[0]);
	close(pfd[1]);
}

static void case_watched(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 5 }, out[2];
	struct waiter w;
	int ep, e, outer;

	fprintf(stderr, "-- watched\n");
	ep = nopoll_instance();
	e = add_efd(ep, 1);
	CHECK(in_nap(waiter_start(&w, ep, -1, NULL)));
	outer = uepoll_create1(0);
	REQUIRE(outer >= 0);
	REQUIRE(uepoll_ctl(outer, EPOLL_CTL_ADD, ep, &ev) == 0);
	CHECK(in_epoll(t_blocked_in(atomic_load(&w.tid), 5000)));
	put(e);
	/* The holder sees the instance ready (or the napper took the event
	 * first and the holder finds nothing: both are the kernel's). */
	int r = uepoll_wait(outer, out, 2, 1000);
	CHECK(r == 0 || (r == 1 && out[0].data.u64 == 5));
	waiter_join(&w);
	CHECK_EQ(w.r, 1);
	CHECK_EQ(w.ev[0].data.u64, 1);
	uepoll_close(outer);
	uepoll_close(e);
	uepoll_close(ep);
}

static void case_demote(void)
{
	struct waiter w;
	int ep, e;

	fprintf(stderr, "-- demote\n");
	ep = nopoll_instance();
	e = add_efd(ep, 3);
	CHECK(in_nap(waiter_start(&w, ep, -1, NULL)));
	REQUIRE(uepoll_demote(ep) == 0);
	CHECK(in_epoll(t_blocked_in(atomic_load(&w.tid), 5000)));
	put(e);
	waiter_join(&w);
	CHECK_EQ(w.r, 1);
	CHECK_EQ(w.ev[0].data.u64, 3);
	uepoll_close(e);
	uepoll_close(ep);
}

static void case_cancel(void)
{
	struct epoll_event ev[2];
	struct waiter w;
	void *res;
	uint64_t v;
	int ep, e, calls;

	fprintf(stderr, "-- cancel\n");
	ep = nopoll_instance();
	e = add_efd(ep, 4);
	CHECK(in_nap(waiter_start(&w, ep, -1, NULL)));
	pthread_cancel(w.th);
	REQUIRE(t_join_within(w.th, 5000));
	(void)res;
	/* Nobody sleeps: a write rings nobody (no napper left counted, no
	 * sleeper either), so it makes no system call at all. */
	wrap_arm(0);
	put(e);
	calls = wrap_take_show();
	wrap_disarm();
	CHECK_EQ(calls, 0);
	CHECK_EQ(uepoll_wait(ep, ev, 2, 0), 1);
	REQUIRE(uepoll_read(e, &v, 8) == 8);
	/* And a new waiter is woken as ever. */
	CHECK(in_nap(waiter_start(&w, ep, -1, NULL)));
	put(e);
	waiter_join(&w);
	CHECK_EQ(w.r, 1);
	uepoll_close(e);
	uepoll_close(ep);
}

/* (j) A NOPOLL instance is left with a stale doorbell (`set` still 1: rung
 * while watched, then let go, its event read away by a zero-timeout wait,
 * which a NOPOLL instance does not clear after): a napper's ring goes by
 * `napped`, not `set`, or the next write, seeing the doorbell rung, would
 * ring nobody. */
static void case_stale(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 5 }, out[2];
	struct waiter w;
	uint64_t v;
	int ep, e, outer;

	fprintf(stderr, "-- stale\n");
	ep = nopoll_instance();
	e = add_efd(ep, 6);
	outer = uepoll_create1(0);
	REQUIRE(outer >= 0);
	REQUIRE(uepoll_ctl(outer, EPOLL_CTL_ADD, ep, &ev) == 0);
	put(e); /* watched: rings */
	REQUIRE(uepoll_ctl(outer, EPOLL_CTL_DEL, ep, NULL) == 0);
	REQUIRE(uepoll_read(e, &v, 8) == 8);
	CHECK_EQ(uepoll_wait(ep, out, 2, 0), 0);
	CHECK(in_nap(waiter_start(&w, ep, -1, NULL)));
	put(e);
	waiter_join(&w);
	CHECK_EQ(w.r, 1);
	CHECK_EQ(w.ev[0].data.u64, 6);
	uepoll_close(outer);
	uepoll_close(e);
	uepoll_close(ep);
}

/* (k) Naps and a wait with a sigmask, in turn: a ring that woke a napper
 * (and wrote no doorbell) must leave `set` alone, or the next ring, seeing
 * it 1, skips the doorbell the sigmask wait sleeps on. */
static void case_mixed(void)
{
	struct waiter w;
	sigset_t m;
	uint64_t v;
	int ep, e;

	fprintf(stderr, "-- mixed\n");
	sigemptyset(&m);
	sigaddset(&m, SIGUSR2);
	ep = nopoll_instance();
	e = add_efd(ep, 2);
	for (int round = 0; round < 3; round++) {
		CHECK(in_nap(waiter_start(&w, ep, -1, NULL)));
		put(e);
		waiter_join(&w);
		CHECK_EQ(w.r, 1);
		REQUIRE(uepoll_read(e, &v, 8) == 8);
		CHECK(in_epoll(waiter_start(&w, ep, -1, &m)));
		put(e);
		waiter_join(&w);
		CHECK_EQ(w.r, 1);
		REQUIRE(uepoll_read(e, &v, 8) == 8);
	}
	uepoll_close(e);
	uepoll_close(ep);
}

/* (l) UNNOPOLL: an instance and a ueventfd made with NOPOLL, put into a
 * kernel epoll through uepoll_ctl (which polls them from outside), become
 * exact there and then: what was queued before shows, a napper moves into
 * the kernel epoll, and later events reach the kernel epoll too. */
static void case_polled(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[4];
	struct waiter w;
	uint64_t v;
	int ep, e, e2, kep;

	fprintf(stderr, "-- polled\n");
	ep = nopoll_instance();
	e = add_efd(ep, 11);
	kep = epoll_create1(0);
	REQUIRE(kep >= 0);
	/* An event queued while nobody sleeps rings nobody. */
	put(e);
	CHECK_EQ(epoll_wait(kep, out, 4, 0), 0);
	ev.data.u64 = 100;
	REQUIRE(uepoll_ctl(kep, EPOLL_CTL_ADD, ep, &ev) == 0);
	CHECK_EQ(epoll_wait(kep, out, 4, 0), 1);
	CHECK_EQ(uepoll_wait(ep, out, 4, 0), 1);
	REQUIRE(uepoll_read(e, &v, 8) == 8);
	/* A napper would not wake the kernel epoll: it sleeps there now.
	 * (The kernel epoll is not asked meanwhile: the waiter may take the
	 * event first, as a thread in the kernel's epoll_wait would.) */
	CHECK(in_epoll(waiter_start(&w, ep, -1, NULL)));
	put(e);
	waiter_join(&w);
	CHECK_EQ(w.r, 1);
	REQUIRE(uepoll_read(e, &v, 8) == 8);
	CHECK_EQ(uepoll_wait(ep, out, 4, 0), 0);
	CHECK_EQ(epoll_wait(kep, out, 4, 0), 0);
	/* Events with nobody asleep reach the kernel epoll now. */
	put(e);
	CHECK_EQ(epoll_wait(kep, out, 4, 0), 1);
	CHECK_EQ(out[0].data.u64, 100);
	REQUIRE(uepoll_read(e, &v, 8) == 8);
	CHECK_EQ(uepoll_wait(ep, out, 4, 0), 0);
	CHECK_EQ(epoll_wait(kep, out, 4, 0), 0);

	/* A napper asleep when the kernel epoll takes the instance moves. */
	{
		int ep2 = nopoll_instance(), e3 = add_efd(ep2, 12);

		CHECK(in_nap(waiter_start(&w, ep2, -1, NULL)));
		ev.data.u64 = 300;
		REQUIRE(uepoll_ctl(kep, EPOLL_CTL_ADD, ep2, &ev) == 0);
		CHECK(in_epoll(t_blocked_in(atomic_load(&w.tid), 5000)));
		put(e3);
		waiter_join(&w);
		CHECK_EQ(w.r, 1);
		CHECK_EQ(w.ev[0].data.u64, 12);
		uepoll_close(e3);
		uepoll_close(ep2);
	}

	/* A NOPOLL ueventfd in the kernel epoll: its own fd is exact. */
	e2 = ueventfd(0, EFD_NONBLOCK | UEVENTFD_NOPOLL);
	REQUIRE(e2 >= 0);
	ev.data.u64 = 200;
	REQUIRE(uepoll_write(e2, &(uint64_t){ 1 }, 8) == 8);
	REQUIRE(uepoll_read(e2, &v, 8) == 8);
	REQUIRE(uepoll_ctl(kep, EPOLL_CTL_ADD, e2, &ev) == 0);
	CHECK_EQ(epoll_wait(kep, out, 4, 0), 0);
	REQUIRE(uepoll_write(e2, &(uint64_t){ 1 }, 8) == 8);
	CHECK_EQ(epoll_wait(kep, out, 4, 0), 1);
	CHECK_EQ(out[0].data.u64, 200);
	REQUIRE(uepoll_read(e2, &v, 8) == 8);
	CHECK_EQ(epoll_wait(kep, out, 4, 0), 0);
	close(kep);
	uepoll_close(e2);
	uepoll_close(e);
	uepoll_close(ep);
}

/* (m) fork while a thread naps: the fork shares the instance's kernel epoll
 * with the child (nkernel raised: fork_prepare) and demotes the ueventfd
 * into a kernel registration, so the napper moves into the kernel epoll,
 * and a write after the fork still wakes it. */
static void case_fork(void)
{
	struct waiter w;
	pid_t pid;
	int ep, e, st;

	sigset_t chld, old;

	fprintf(stderr, "-- fork\n");
	/* The child's SIGCHLD is no part of this: blocked in the waiter (it
	 * inherits the mask), since under ThreadSanitizer its delivery runs
	 * the runtime's handler, which ends a nap with EINTR as a program's
	 * handler would. */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, &old);
	ep = nopoll_instance();
	e = add_efd(ep, 13);
	CHECK(in_nap(waiter_start(&w, ep, -1, NULL)));
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(0);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(in_epoll(t_blocked_in(atomic_load(&w.tid), 5000)));
	put(e);
	waiter_join(&w);
	CHECK_EQ(w.r, 1);
	CHECK_EQ(w.ev[0].data.u64, 13);
	uepoll_close(e);
	uepoll_close(ep);
}

/* (n) Two nappers.  A write wakes one (`napped` = 1: later rings for
 * nappers stop there until a napper comes back); the source is
 * edge-triggered, so that one takes the event and leaves nothing queued,
 * and returns for good.  The next write must wake the other: the first
 * gave `napped` back on its way out of the nap. */
static void case_pair(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 3 };
	struct waiter w[2];
	int ep, e, first = -1;
	uint64_t v, t0;

	fprintf(stderr, "-- pair\n");
	ep = nopoll_instance();
	e = ueventfd(0, EFD_NONBLOCK | UEVENTFD_NOPOLL);
	REQUIRE(e >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
	CHECK(in_nap(waiter_start(&w[0], ep, 10000, NULL)));
	CHECK(in_nap(waiter_start(&w[1], ep, 10000, NULL)));
	put(e);
	/* Whichever was woken (a watchdog, not a time that decides). */
	t0 = t_now_ns();
	while (first < 0 && t_now_ns() - t0 < 5000000000ull) {
		for (int i = 0; i < 2 && first < 0; i++)
			if (pthread_tryjoin_np(w[i].th, NULL) == 0)
				first = i;
		if (first < 0)
			sched_yield();
	}
	REQUIRE(first >= 0);
	CHECK_EQ(w[first].r, 1);
	REQUIRE(uepoll_read(e, &v, 8) == 8);
	put(e);
	waiter_join(&w[!first]);
	CHECK_EQ(w[!first].r, 1);
	CHECK_EQ(w[!first].ev[0].data.u64, 3);
	uepoll_close(e);
	uepoll_close(ep);
}

/* (i) */
#define NWRITERS 2
#define NWAITERS 3

struct stress {
	int ep, e;
	long per_writer;
	_Atomic long got;
	_Atomic int writers_done;
	sigset_t mask;
};

static void *stress_writer(void *arg)
{
	struct stress *s = arg;

	for (long i = 0; i < s->per_writer; i++) {
		put(s->e);
		if (!(i & 63))
			sched_yield();
	}
	atomic_fetch_add(&s->writers_done, 1);
	return NULL;
}

struct stress_waiter {
	struct stress *s;
	bool masked;
};

static void *stress_waiter(void *arg)
{
	struct stress_waiter *sw = arg;
	struct stress *s = sw->s;
	const long total = s->per_writer * NWRITERS;
	struct epoll_event ev[4];
	uint64_t v;

	while (atomic_load(&s->got) < total) {
		int r = sw->masked ? uepoll_pwait(s->ep, ev, 4, 20, &s->mask)
				   : uepoll_wait(s->ep, ev, 4, 20);

		CHECK(r >= 0);
		if (r > 0 && uepoll_read(s->e, &v, 8) == 8)
			atomic_fetch_add(&s->got, (long)v);
	}
	return NULL;
}

static void case_stress(void)
{
	struct stress s = { 0 };
	struct stress_waiter sw[NWAITERS];
	pthread_t wr[NWRITERS], wt[NWAITERS];
	uint64_t v;

	fprintf(stderr, "-- stress\n");
	s.per_writer = (long)(20000 * t_scale()) + 100;
	sigemptyset(&s.mask);
	sigaddset(&s.mask, SIGUSR2);
	s.ep = nopoll_instance();
	s.e = add_efd(s.ep, 1);
	for (int i = 0; i < NWAITERS; i++) {
		sw[i].s = &s;
		sw[i].masked = i == 0;
		REQUIRE(pthread_create(&wt[i], NULL, stress_waiter, &sw[i]) ==
			0);
	}
	for (int i = 0; i < NWRITERS; i++)
		REQUIRE(pthread_create(&wr[i], NULL, stress_writer, &s) == 0);
	for (int i = 0; i < NWRITERS; i++)
		REQUIRE(t_join_within(wr[i], 60000));
	for (int i = 0; i < NWAITERS; i++)
		REQUIRE(t_join_within(wt[i], 60000));
	CHECK_EQ(atomic_load(&s.got), s.per_writer * NWRITERS);
	CHECK(uepoll_read(s.e, &v, 8) == -1 && errno == EAGAIN);
	uepoll_close(s.e);
	uepoll_close(s.ep);
}

int main(void)
{
	t_begin("t_port_nap");
	t_watchdog(120);
	case_handoff();
	case_sigmask();
	case_eintr();
	case_timeout();
	case_kernel_fd();
	case_watched();
	case_demote();
	case_cancel();
	case_stale();
	case_mixed();
	case_pair();
	case_polled();
	case_fork();
	case_stress();
	return t_end();
}
