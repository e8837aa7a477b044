/*
 * t_spin: a blocking wait spins a little before it sleeps (SPIN in spin.c).
 *  - spins: with a long spin allowed (UEPOLL_SPIN_NS), a wait whose event is
 *    written 2 ms after it began returns it without blocking (no voluntary
 *    context switch of the waiting thread), on a default instance; on an
 *    instance created with UEPOLL_NOSPIN the same wait blocks;
 *  - the deadline bounds the spin: a 1 ms wait returns 0 long before the
 *    allowed 200 ms spin is over;
 *  - adapts (in a child process with a 4 ms spin): a first wait with nothing
 *    coming spins; waits that keep finding nothing stop spinning, except for
 *    an occasional probe (after 16 sleeps, then 32, 64...): of the last 32
 *    of 64 such waits, 1 to 4 spin.
 *    Spinning is told from sleeping by the thread's CPU time (a spin of 4 ms
 *    costs milliseconds, a sleep microseconds: the line drawn at 0.5 ms);
 *  - an instance that got a held wakeup (a coalescing ueventfd) stops
 *    spinning: none of its next waits spins;
 *  - UEPOLL_SPIN_NS=0 never spins.
 */
#include "testlib.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 24

struct waiter {
	int ep, efd;
	_Atomic int entered; /* rounds begun */
	_Atomic int done;    /* rounds finished */
	int blocked;	     /* rounds with a voluntary context switch */
	int bad;
};

static long nvcsw(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw;
}

/* An instance (made with uflags) watching a new ueventfd for EPOLLIN. */
static int open_pair(unsigned int uflags, int *efd)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = uepoll_create2(EPOLL_CLOEXEC, uflags);

	*efd = ueventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	REQUIRE(ep >= 0 && *efd >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, *efd, &ev) == 0);
	return ep;
}

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	for (int r = 0; r < ROUNDS; r++) {
		struct epoll_event ev;
		eventfd_t v;
		long before = nvcsw();
		int n;

		atomic_store(&w->entered, r + 1);
		n = uepoll_wait(w->ep, &ev, 1, 5000);
		if (nvcsw() != before)
			w->blocked++;
		if (n != 1 || ueventfd_read(w->efd, &v) != 0 || v != 1)
			w->bad++;
		atomic_store(&w->done, r + 1);
	}
	return NULL;
}

/* ROUNDS waits on an instance made with uflags, each event written 2 ms
 * after the wait began; returns how many rounds the waiter blocked in. */
static int rounds_blocked(unsigned int uflags)
{
	struct waiter w = { 0 };
	pthread_t th;

	w.ep = open_pair(uflags, &w.efd);
	REQUIRE(pthread_create(&th, NULL, waiter_main, &w) == 0);
	for (int r = 1; r <= ROUNDS; r++) {
		while (atomic_load(&w.entered) < r)
			sched_yield();
		t_sleep_ms(2);
		REQUIRE(ueventfd_write(w.efd, 1) == 0);
		while (atomic_load(&w.done) < r)
			sched_yield();
	}
	REQUIRE(t_join_within(th, 10000));
	CHECK_EQ(w.bad, 0);
	uepoll_close(w.efd);
	uepoll_close(w.ep);
	return w.blocked;
}

static void test_spins(void)
{
	int spun = rounds_blocked(0), slept = rounds_blocked(UEPOLL_NOSPIN);

	fprintf(stderr, "blocked in %d of %d rounds spinning, %d of %d with "
			"UEPOLL_NOSPIN\n",
		spun, ROUNDS, slept, ROUNDS);
	CHECK(spun <= ROUNDS / 4);
	CHECK(slept >= ROUNDS / 2);
}

static void test_deadline(void)
{
	struct epoll_event ev;
	int efd, ep = open_pair(0, &efd);
	uint64_t t0 = t_now_ns();

	CHECK_EQ(uepoll_wait(ep, &ev, 1, 1), 0);
	/* The allowed spin is 200 ms; the wait asked for 1 ms. */
	CHECK(t_now_ns() - t0 < 150000000u);
	uepoll_close(efd);
	uepoll_close(ep);
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* n waits of 8 ms on ep, where nothing comes: which ones spun. */
static int waits_spinning_on(int ep, bool *spun, int n)
{
	struct epoll_event ev;
	int count = 0;

	for (int i = 0; i < n; i++) {
		uint64_t c0 = cpu_ns();

		CHECK_EQ(uepoll_wait(ep, &ev, 1, 8), 0);
		spun[i] = cpu_ns() - c0 >= 500000u;
		count += spun[i];
	}
	return count;
}

/* The same on a new instance watching a ueventfd. */
static int waits_spinning(bool *spun, int n)
{
	int efd, ep = open_pair(0, &efd);
	int count = waits_spinning_on(ep, spun, n);

	uepoll_close(efd);
	uepoll_close(ep);
	return count;
}

/* An instance that got a held (coalesced) wakeup never spins again. */
static void held_stops_spinning(void)
{
	struct ueventfd_coalesce co = { .delay_us = 2000 };
	struct epoll_event ev;
	int efd, ep = open_pair(0, &efd);
	bool spun[24];
	eventfd_t v;

	REQUIRE(ueventfd_coalesce(efd, &co, NULL) == 0);
	REQUIRE(ueventfd_write(efd, 1) == 0);
	CHECK_EQ(uepoll_wait(ep, &ev, 1, 1000), 1);
	CHECK(ueventfd_read(efd, &v) == 0 && v == 1);
	/* Without the held wakeup the first of these would spin (4 ms,
	 * 2 ms, ...) and then one in 16. */
	CHECK_EQ(waits_spinning_on(ep, spun, 24), 0);
	uepoll_close(efd);
	uepoll_close(ep);
}

static int child_adapts(void)
{
	bool spun[64];
	int late = 0;

	waits_spinning(spun, 64);
	for (int i = 32; i < 64; i++)
		late += spun[i];
	fprintf(stderr, "adapts: first wait %s, %d of the last 32 spun\n",
		spun[0] ? "spun" : "did not spin", late);
	CHECK(spun[0]);
	CHECK(late >= 1 && late <= 4);
	held_stops_spinning();
	return t_failures ? 1 : 0;
}

static int child_never(void)
{
	bool spun[8];

	CHECK_EQ(waits_spinning(spun, 8), 0);
	return t_failures ? 1 : 0;
}

/* Run this program again with UEPOLL_SPIN_NS=ns and argument what (the
 * setting is read once per process). */
static void run_child(const char *self, const char *ns, const char *what)
{
	char *argv[] = { (char *)self, (char *)what, NULL };
	pid_t pid;
	int st;

	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		setenv("UEPOLL_SPIN_NS", ns, 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "adapts"))
		return child_adapts();
	if (argc > 1 && !strcmp(argv[1], "never"))
		return child_never();
	t_begin("t_spin");
	t_watchdog(120);
	/* Before the first instance: the setting is read once. */
	setenv("UEPOLL_SPIN_NS", "200000000", 1);
	test_spins();
	test_deadline();
	run_child(argv[0], "4000000", "adapts");
	run_child(argv[0], "0", "never");
	return t_end();
}
