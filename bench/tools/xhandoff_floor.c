/*
 * xhandoff_floor - what a handoff between two processes costs at the least
 * when the counter lives outside the kernel (issue 35 item 4,
 * docs/benchmarks.md "the shared counter").  A parent and its forked child,
 * both pinned to CPU (argv[2], default 0), hand a token back and forth
 * ROUNDS times, each asleep between its turns, four ways, interleaved rep
 * by rep:
 *   kernel   blocking read(2)/write(2) of two EFD_SEMAPHORE eventfds (the
 *            kernel's efd-fork row);
 *   futex    a word each in MAP_SHARED memory: FUTEX_WAKE and FUTEX_WAIT
 *            (shared, not private: the word is in a shared mapping), no
 *            timeout;
 *   timed    the same with futex_waitv and an absolute CLOCK_MONOTONIC
 *            deadline 1 s ahead, as a shared ueventfd's blocked read sleeps
 *            (its limit for a writer killed between its CAS and its wake);
 *   timed+fl `timed` with an fcntl(F_GETFL) of an eventfd before each
 *            sleep, as the blocked read asks O_NONBLOCK (uefd__rsleep).
 * Prints the p50 round trip of each (us), median over REPS reps, and what
 * one fcntl(F_GETFL) costs alone (the best of REPS loops of 10^6 calls).
 *
 *   xhandoff_floor [ROUNDS [CPU [REPS]]]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef FUTEX_32
#define FUTEX_32 2
#endif

struct waitv {
	uint64_t val;
	uint64_t uaddr;
	uint32_t flags;
	uint32_t reserved;
};

enum { KERNEL, FUTEX, TIMED, TIMED_FL, NWAYS };
static const char *const way_name[NWAYS] = { "kernel eventfd", "shared futex",
					     "shared futex, timed (waitv)",
					     "timed + fcntl(F_GETFL)" };

struct shm {
	_Atomic uint32_t turn; /* 0: A's, 1: B's */
};

static int efd_ab, efd_ba, flfd;

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

/* Sleep while *w == v. */
static void fwait(_Atomic uint32_t *w, uint32_t v, int way)
{
	if (way == TIMED_FL)
		(void)syscall(SYS_fcntl, flfd, F_GETFL);
	if (way == FUTEX) {
		syscall(SYS_futex, w, FUTEX_WAIT, v, NULL, NULL, 0);
	} else {
		struct waitv wv = { .val = v, .uaddr = (uintptr_t)w,
				    .flags = FUTEX_32 };
		int64_t d = now_ns() + 1000000000LL;
		struct timespec ts = { .tv_sec = d / 1000000000LL,
				       .tv_nsec = d % 1000000000LL };

		syscall(SYS_futex_waitv, &wv, 1, 0, &ts, CLOCK_MONOTONIC);
	}
}

static void give(struct shm *s, uint32_t to)
{
	atomic_store(&s->turn, to);
	syscall(SYS_futex, &s->turn, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void take(struct shm *s, uint32_t mine, int way)
{
	uint32_t t;

	while ((t = atomic_load(&s->turn)) != mine)
		fwait(&s->turn, t, way);
}

static void b_loop(struct shm *s, int way, long n)
{
	uint64_t v;

	for (long i = 0; i < n; i++) {
		if (way == KERNEL) {
			if (read(efd_ab, &v, 8) != 8)
				_exit(2);
			v = 1;
			if (write(efd_ba, &v, 8) != 8)
				_exit(2);
		} else {
			take(s, 1, way);
			give(s, 0);
		}
	}
	_exit(0);
}

static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* One rep: the p50 round trip in ns. */
static int64_t rep(struct shm *s, int way, long n, int cpu)
{
	int64_t *lat = calloc((size_t)n, sizeof(*lat)), p50;
	pid_t b;
	uint64_t v;

	atomic_store(&s->turn, 0);
	b = fork();
	if (b == 0) {
		pin(cpu);
		b_loop(s, way, n);
	}
	for (long i = 0; i < n; i++) {
		int64_t t0 = now_ns();

		if (way == KERNEL) {
			v = 1;
			if (write(efd_ab, &v, 8) != 8 ||
			    read(efd_ba, &v, 8) != 8)
				exit(2);
		} else {
			give(s, 1);
			take(s, 0, way);
		}
		lat[i] = now_ns() - t0;
	}
	waitpid(b, NULL, 0);
	qsort(lat, (size_t)n, sizeof(*lat), cmp);
	p50 = lat[n / 2];
	free(lat);
	return p50;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	int cpu = argc > 2 ? atoi(argv[2]) : 0;
	int reps = argc > 3 ? atoi(argv[3]) : 5;
	struct shm *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int64_t r[NWAYS][64];

	if (s == MAP_FAILED || reps < 1 || reps > 64)
		return 2;
	efd_ab = eventfd(0, EFD_SEMAPHORE);
	efd_ba = eventfd(0, EFD_SEMAPHORE);
	flfd = eventfd(0, 0);
	pin(cpu);
	for (int k = 0; k < reps; k++)
		for (int w = 0; w < NWAYS; w++)
			r[w][k] = rep(s, w, n, cpu);
	printf("%ld round trips, both processes on CPU %d, p50 us (median of "
	       "%d reps [min-max]):\n", n, cpu, reps);
	for (int w = 0; w < NWAYS; w++) {
		qsort(r[w], (size_t)reps, sizeof(r[w][0]), cmp);
		printf("  %-28s %6.2f [%.2f-%.2f]\n", way_name[w],
		       r[w][reps / 2] / 1000.0, r[w][0] / 1000.0,
		       r[w][reps - 1] / 1000.0);
	}
	{
		int64_t best = INT64_MAX;

		for (int k = 0; k < reps; k++) {
			int64_t t0 = now_ns();

			for (int i = 0; i < 1000000; i++)
				(void)syscall(SYS_fcntl, flfd, F_GETFL);
			if (now_ns() - t0 < best)
				best = now_ns() - t0;
		}
		printf("  fcntl(F_GETFL) alone: %.0f ns a call\n",
		       best / 1e6);
	}
	return 0;
}
