/*
 * fork_split - where a fork of the `fork` scenario's process goes: the
 * scenario's loop (bench/sc_fork.c; OBJS objects, half instances, half
 * eventfds each watched by one instance; each child writes one eventfd,
 * waits on its instance with timeout 0 and _exits; the parent waitpid()s),
 * with clock_gettime probes in fork handlers of its own placed around the
 * library's: pthread_atfork runs prepare handlers in the reverse order of
 * their registration and parent/child handlers in that order, so a handler
 * registered before the library's (a constructor of priority 101, ahead of
 * the library's default one) sees the last prepare step and the first
 * step after the system call, one registered in main() the first and the
 * last.  Per fork, medians over FORKS:
 *
 *   prepare    the library's prepare handler (the parent)
 *   fork       the system call: prepare's end to the parent's return
 *   parent     the library's parent handler
 *   kchild     prepare's end to the child's first handler
 *   child      the library's child handler
 *   work       the child's write and zero-timeout wait
 *   exit       the child's _exit to the parent's waitpid() return
 *   total      fork() called to waitpid() returned
 *   minflt     the child's minor page faults (getrusage, a count), of
 *              which in the library's child handler, the parent's per
 *              fork
 * and the mean CPU time (getrusage: user + system, the scheduler's exact
 * runtime, which waiting for a CPU on a loaded machine does not inflate)
 * per fork of the parent and of a child, its exit included.
 *
 * The kernel's objects with what uepoll's hold besides, to price them
 * alone in the kernel's fork and exit: `+bells` an eventfd per epoll,
 * registered in it (an instance's doorbell), `+dups` a dup() of each
 * object's fd (the private duplicate of each: with +bells the process
 * holds the uepoll one's fds, 10 005 at 4000 objects), `+mem=KB` that much
 * touched private memory (the pools), `+shm=KB` that much touched
 * MAP_SHARED memory in 64 kB mappings (the shared counters).
 *
 *   fork_split kernel[+bells][+dups][+mem=KB][+shm=KB]|uepoll [OBJS FORKS]
 *
 * docs/benchmarks.md, "Issue 35, item 4 (fork): the breakdown".
 */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "uepoll.h"

enum { T_PREP_B, T_PREP_A, T_PAR_A, T_PAR_B, T_CHILD_A, T_CHILD_B, T_WORK, T_N };

struct probe {
	long long t[T_N];
	long minflt_child;
	long minflt_handler; /* of which in the library's child handler */
};

static struct probe *pr; /* MAP_SHARED: the child's probes too */

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static long long cpu_us(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL +
	       ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static void prep_a(void) { if (pr) pr->t[T_PREP_A] = now_ns(); }
static void par_a(void) { if (pr) pr->t[T_PAR_A] = now_ns(); }
static void child_a(void)
{
	if (pr) {
		pr->t[T_CHILD_A] = now_ns();
		pr->minflt_child = minflt();
	}
}
static void prep_b(void) { if (pr) pr->t[T_PREP_B] = now_ns(); }
static void par_b(void) { if (pr) pr->t[T_PAR_B] = now_ns(); }
static void child_b(void)
{
	if (pr) {
		pr->t[T_CHILD_B] = now_ns();
		pr->minflt_handler = minflt() - pr->minflt_child;
	}
}

/* Before the library's constructor: its handlers run inside these. */
__attribute__((constructor(101))) static void early(void)
{
	pthread_atfork(prep_a, par_a, child_a);
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

static double med(long long *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_ll);
	return (double)v[n / 2] / 1e3;
}

enum { S_PREP, S_FORK, S_PARENT, S_KCHILD, S_CHILD, S_WORK, S_EXIT, S_TOTAL, S_CFLT,
       S_HFLT, S_PFLT, S_N };
static const char *const s_name[S_N] = {
	"prepare", "fork", "parent", "kchild", "child", "work", "exit", "total",
	"minflt_child", "minflt_handler", "minflt_parent",
};

int main(int argc, char **argv)
{
	int objs = 4000, forks = 100, half, kernel, dups, bells, *ep, *efd;
	long mem_kb = 0, shm_kb = 0;
	long long *s[S_N];
	struct rlimit rl;
	const char *m;

	if (argc < 2) {
		fprintf(stderr, "usage: fork_split kernel[+bells][+dups]"
				"[+mem=KB][+shm=KB]|uepoll [OBJS FORKS]\n");
		return 2;
	}
	if (argc == 4) {
		objs = atoi(argv[2]);
		forks = atoi(argv[3]);
	}
	if (objs < 0 || forks <= 0)
		return 2;
	kernel = !strncmp(argv[1], "kernel", 6);
	dups = strstr(argv[1], "+dups") != NULL;
	bells = strstr(argv[1], "+bells") != NULL;
	if ((m = strstr(argv[1], "+mem=")))
		mem_kb = atol(m + 5);
	if ((m = strstr(argv[1], "+shm=")))
		shm_kb = atol(m + 5);
	half = objs / 2;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur < (rlim_t)(5 * half + 64)) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)(5 * half + 64)
				      ? rl.rlim_max
				      : (rlim_t)(5 * half + 64);
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	pr = mmap(NULL, sizeof(*pr), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ep = calloc((size_t)half + 1, sizeof(*ep));
	efd = calloc((size_t)half + 1, sizeof(*efd));
	for (int i = 0; i < S_N; i++)
		s[i] = calloc((size_t)forks, sizeof(long long));
	if (pr == MAP_FAILED || !ep || !efd || !s[S_N - 1])
		return 1;
	pthread_atfork(prep_b, par_b, child_b);
	for (int i = 0; i < half; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };

		ep[i] = kernel ? epoll_create1(EPOLL_CLOEXEC)
			       : uepoll_create1(EPOLL_CLOEXEC);
		efd[i] = kernel ? eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)
				: ueventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (ep[i] < 0 || efd[i] < 0 ||
		    (kernel ? epoll_ctl(ep[i], EPOLL_CTL_ADD, efd[i], &ev)
			    : uepoll_ctl(ep[i], EPOLL_CTL_ADD, efd[i], &ev)) < 0 ||
		    (dups && (dup(ep[i]) < 0 || dup(efd[i]) < 0))) {
			perror("fork_split: making the objects");
			return 1;
		}
		if (bells) {
			struct epoll_event bev = { .events = EPOLLIN | EPOLLET };
			int b = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

			if (b >= 0 &&
			    epoll_ctl(ep[i], EPOLL_CTL_ADD, b, &bev) == 0)
				continue;
			perror("fork_split: making the objects");
			return 1;
		}
	}
	for (long k = 0; k < shm_kb; k += 64) {
		char *p = mmap(NULL, 64 * 1024, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return 1;
		memset(p, 1, 64 * 1024);
	}
	if (mem_kb > 0) {
		char *p = malloc((size_t)mem_kb * 1024);

		if (!p)
			return 1;
		memset(p, 1, (size_t)mem_kb * 1024);
	}
	if (getenv("FORK_SPLIT_SHOW")) { /* what a fork copies */
		char cmd[256];

		snprintf(cmd, sizeof(cmd),
			 "cd /proc/%d && ls fd | wc -l && wc -l < maps && "
			 "grep -E 'Rss|Anon|Shmem' smaps_rollup",
			 (int)getpid());
		if (system(cmd) != 0)
			return 1;
	}
	long long cpu_self = cpu_us(RUSAGE_SELF);
	long long cpu_kids = cpu_us(RUSAGE_CHILDREN);

	for (int f = 0; f < forks; f++) {
		long long t0 = now_ns(), t1;
		long pf0 = minflt();
		pid_t pid = fork();
		int st;

		if (pid < 0) {
			perror("fork_split: fork");
			return 1;
		}
		if (pid == 0) {
			struct epoll_event ev;
			uint64_t one = 1;
			int ok = 1;

			if (half > 0) {
				int i = f % half;

				ok = (kernel ? write(efd[i], &one, 8)
					     : uepoll_write(efd[i], &one, 8)) == 8 &&
				     (kernel ? epoll_wait(ep[i], &ev, 1, 0)
					     : uepoll_wait(ep[i], &ev, 1, 0)) == 1 &&
				     ev.data.u64 == 7;
			}
			pr->minflt_child = minflt() - pr->minflt_child;
			pr->t[T_WORK] = now_ns();
			_exit(ok ? 0 : 1);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			fprintf(stderr, "fork_split: fork %d: the child failed\n",
				f);
			return 1;
		}
		t1 = now_ns();
		s[S_PREP][f] = pr->t[T_PREP_A] - pr->t[T_PREP_B];
		s[S_FORK][f] = pr->t[T_PAR_A] - pr->t[T_PREP_A];
		s[S_PARENT][f] = pr->t[T_PAR_B] - pr->t[T_PAR_A];
		s[S_KCHILD][f] = pr->t[T_CHILD_A] - pr->t[T_PREP_A];
		s[S_CHILD][f] = pr->t[T_CHILD_B] - pr->t[T_CHILD_A];
		s[S_WORK][f] = pr->t[T_WORK] - pr->t[T_CHILD_B];
		s[S_EXIT][f] = t1 - pr->t[T_WORK];
		s[S_TOTAL][f] = t1 - t0;
		s[S_CFLT][f] = pr->minflt_child * 1000;
		s[S_HFLT][f] = pr->minflt_handler * 1000;
		s[S_PFLT][f] = (minflt() - pf0) * 1000;
	}
	printf("%s objs=%d forks=%d (medians, us; faults a count):", argv[1],
	       2 * half, forks);
	for (int i = 0; i < S_N; i++)
		printf(" %s=%.1f", s_name[i], med(s[i], forks));
	printf(" cpu_parent=%.1f cpu_child=%.1f\n",
	       (double)(cpu_us(RUSAGE_SELF) - cpu_self) / forks,
	       (double)(cpu_us(RUSAGE_CHILDREN) - cpu_kids) / forks);
	return 0;
}
