/*
 * t_spin_limit: at most two threads of one instance spin at once (SPIN in
 * spin.c): a pool of idle threads blocked on an instance does not keep a
 * CPU each busy.
 *
 * N waiters, all pinned to one CPU, start a wait on an idle instance (a
 * ueventfd that is never written) together, with the longest spin allowed
 * (UEPOLL_SPIN_NS of 1 s): two of them may spin for that second, the others
 * must go to sleep at once.  What tells a spinner from a sleeper is counted,
 * not timed: a thread that spins on a CPU shared with another runnable
 * thread is preempted again and again (involuntary context switches, tens
 * per second), while a thread that goes to sleep at once needs the CPU for
 * a few microseconds and is preempted at most once or twice on the way.  So
 * at most two waiters may show SPUN_NIVCSW or more involuntary switches over
 * their wait.  (Each waiter counts its own, getrusage(RUSAGE_THREAD).)  With
 * every waiter allowed to spin, all N would share the CPU for the second and
 * each would be preempted dozens of times.
 *
 * The waits end by their timeout (nothing is ever written), so no wakeup
 * adds switches; the timeout only bounds the test (it is longer than the
 * spin, so that a spin is never cut short by it).
 */
#include "testlib.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#define N 6
#define ROUNDS 2
#define SPUN_NIVCSW 10
#define WAIT_MS 2000

struct waiter {
	int ep;
	pthread_barrier_t *start;
	long nivcsw; /* involuntary switches over the wait */
	int ret;
};

static long nivcsw(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nivcsw;
}

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct epoll_event ev;
	long before;

	pthread_barrier_wait(w->start);
	before = nivcsw();
	w->ret = uepoll_wait(w->ep, &ev, 1, WAIT_MS);
	w->nivcsw = nivcsw() - before;
	return NULL;
}

/* One round on a new instance: how many waiters spun (by the count). */
static int round_spinners(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct waiter w[N];
	pthread_t th[N];
	pthread_barrier_t start;
	int ep = uepoll_create1(0), efd = ueventfd(0, EFD_NONBLOCK), spun = 0;

	REQUIRE(ep >= 0 && efd >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
	REQUIRE(pthread_barrier_init(&start, NULL, N) == 0);
	for (int i = 0; i < N; i++) {
		w[i] = (struct waiter){ .ep = ep, .start = &start };
		REQUIRE(pthread_create(&th[i], NULL, waiter_main, &w[i]) == 0);
	}
	for (int i = 0; i < N; i++)
		REQUIRE(t_join_within(th[i], WAIT_MS + 30000));
	fprintf(stderr, "involuntary switches per waiter:");
	for (int i = 0; i < N; i++) {
		CHECK_EQ(w[i].ret, 0);
		fprintf(stderr, " %ld", w[i].nivcsw);
		spun += w[i].nivcsw >= SPUN_NIVCSW;
	}
	fprintf(stderr, "; %d spun\n", spun);
	pthread_barrier_destroy(&start);
	CHECK_EQ(uepoll_close(efd), 0);
	CHECK_EQ(uepoll_close(ep), 0);
	return spun;
}

int main(void)
{
	cpu_set_t one;
	int cpu;

	t_begin("t_spin_limit");
	t_watchdog(120);
	/* Before the first instance: the setting is read once. */
	setenv("UEPOLL_SPIN_NS", "1000000000", 1);
	/* One CPU for every thread (they inherit it): spinners then always
	 * share it, however many CPUs the machine has. */
	cpu = sched_getcpu();
	REQUIRE(cpu >= 0);
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) != 0)
		T_SKIP("cannot pin the threads to one CPU");
	for (int r = 0; r < ROUNDS; r++)
		CHECK(round_spinners() <= 2);
	return t_end();
}
