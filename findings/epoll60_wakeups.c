/*
 * epoll60_wakeups.c - what the kernel selftest epoll60 (epoll_wakeup_test.c,
 * "Lost wakeup!") measures, written again with timings: 10 threads wait in
 * epoll_pwait() (2 s timeout) on one epoll instance that holds 10
 * edge-triggered eventfds; the main thread writes all 10 at once; each
 * thread must come back with one of them.  Per round: how long until all
 * 10 came back, and how many waits ran out their 2 s with events pending
 * (a lost wakeup).  epoll60 gives a round 1 s, and the harness 30 s to the
 * whole 300 rounds.
 *
 *   busy   (default) as epoll60: between rounds the 10 threads and the
 *          main thread busy-wait on shared counters, so 11 threads spin on
 *          the machine's CPUs (2 here);
 *   block  the same rounds with barriers: nothing spins but epoll itself.
 *
 * Plain epoll and eventfd: run it natively and under uepoll-run (and
 * uepoll-run --nospin).  Not part of the build.
 *
 * Why it is here: the kernel selftest's epoll60 fails now and then on the
 * 2-CPU machine, by the harness's 30 s limit or by its 1 s round, under
 * uepoll-run and natively alike.  Runs taken in turn (native, preloaded,
 * native, ...): 5 of 13 ok natively, 5 of 13 preloaded (--nospin: 0 of
 * 5); the 6 first full runs: 4 of 6 natively, 6 of 6 preloaded.  (One
 * batch of 10 preloaded runs alone had 2 ok, the 3 native runs after it 2
 * ok: runs not taken in turn say little, the machine's speed changes.)
 * This program shows why: 3 runs of each, in turn, busy:
 *
 *   native   300 rounds in 22-39 s, median round 63-103 ms, slowest 111-357 ms
 *   uepoll   300 rounds in 27-39 s, median round 79-104 ms, slowest 143-291 ms
 *   --nospin 300 rounds in 27-38 s, median round 79-99 ms, slowest 139-370 ms
 *
 * no lost wakeup on either side (no wait ran out its 2 s), and in block
 * mode every round ends within 0.2 ms on both.  The round time is the
 * scheduling of 11 spinning threads on 2 CPUs, so the whole test lands
 * on either side of the harness's 30 s by chance, with or without the
 * preload: not a difference of the preload, and not compared
 * (kselftest.sh: unstable natively; its quick mode leaves it out).
 *
 *   cc -O0 -pthread -o epoll60_wakeups epoll60_wakeups.c
 *   ./epoll60_wakeups [busy|block] [ROUNDS]     (300 rounds by default)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define N 10

static int ep, busy = 1;
static volatile int stop;
static int ready, waiting, timeouts;
static pthread_barrier_t start, done;

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static void *waiter(void *arg)
{
	struct epoll_event e;
	uint64_t v;

	(void)arg;
	for (;;) {
		if (busy) {
			__atomic_fetch_add(&ready, 1, __ATOMIC_SEQ_CST);
			while (__atomic_load_n(&ready, __ATOMIC_SEQ_CST) && !stop)
				;
		} else {
			pthread_barrier_wait(&start);
		}
		if (stop)
			break;
		__atomic_fetch_add(&waiting, 1, __ATOMIC_SEQ_CST);
		if (epoll_pwait(ep, &e, 1, 2000, NULL) == 1) {
			if (read(e.data.fd, &v, sizeof(v)) != sizeof(v))
				perror("read");
		} else {
			__atomic_fetch_add(&timeouts, 1, __ATOMIC_SEQ_CST);
		}
		__atomic_fetch_sub(&waiting, 1, __ATOMIC_SEQ_CST);
		if (!busy)
			pthread_barrier_wait(&done);
	}
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int rounds = 300, efd[N], over1s = 0;
	long long worst = 0, t0 = now_us(), *lat;
	pthread_t t[N];

	if (argc > 1)
		busy = strcmp(argv[1], "block") != 0;
	if (argc > 2)
		rounds = atoi(argv[2]);
	lat = calloc((size_t)rounds, sizeof(*lat));
	ep = epoll_create1(0);
	for (int i = 0; i < N; i++) {
		struct epoll_event e = { .events = EPOLLIN | EPOLLET };

		efd[i] = eventfd(0, EFD_NONBLOCK);
		e.data.fd = efd[i];
		if (efd[i] < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, efd[i], &e) < 0)
			return perror("setup"), 2;
	}
	pthread_barrier_init(&start, NULL, N + 1);
	pthread_barrier_init(&done, NULL, N + 1);
	for (int i = 0; i < N; i++)
		pthread_create(&t[i], NULL, waiter, NULL);

	for (int r = 0; r < rounds; r++) {
		uint64_t one = 1;
		long long w;

		if (busy) {
			while (__atomic_load_n(&ready, __ATOMIC_SEQ_CST) != N)
				;
			__atomic_fetch_sub(&ready, N, __ATOMIC_SEQ_CST);
		} else {
			pthread_barrier_wait(&start);
		}
		while (__atomic_load_n(&waiting, __ATOMIC_SEQ_CST) != N)
			;
		usleep(1000); /* as epoll60: 1 ms to go to sleep */
		w = now_us();
		for (int i = 0; i < N; i++)
			if (write(efd[i], &one, sizeof(one)) != sizeof(one))
				return perror("write"), 2;
		if (busy)
			while (__atomic_load_n(&waiting, __ATOMIC_SEQ_CST))
				; /* epoll60 gives up (fails) after 1 s */
		else
			pthread_barrier_wait(&done);
		w = now_us() - w;
		lat[r] = w;
		worst = w > worst ? w : worst;
		if (w > 1000000) {
			over1s++;
			printf("round %d: all 10 back after %lld ms (epoll60 fails here)\n",
			       r, w / 1000);
		}
	}
	stop = 1;
	if (!busy)
		pthread_barrier_wait(&start);
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	qsort(lat, (size_t)rounds, sizeof(*lat), cmp);
	printf("%s: %d rounds in %lld ms; write-to-all-back median %lld us, "
	       "90%% %lld us, slowest %lld us; %d over 1 s; %d wait(s) timed "
	       "out with events pending\n",
	       busy ? "busy" : "block", rounds, (now_us() - t0) / 1000,
	       lat[rounds / 2], lat[rounds * 9 / 10], worst, over1s, timeouts);
	return over1s || timeouts;
}
