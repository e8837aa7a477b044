/*
 * t_round_splice: one wait of an instance in round mode (it watches kernel
 * fds: FAIRNESS in src/wait.c, ROUNDS in src/readyq.h) returns a
 * level-triggered registration once, even when another thread moves the
 * shared queue into the consumers' batch between two harvests of the wait.
 *
 * A wait's first harvest delivers a level-triggered item and puts it back
 * behind the round; a later harvest of the same wait begins its next round
 * with what the batch holds.  If the item went back to the shared queue,
 * anything that splices the shared queue into the batch meanwhile (another
 * waiter's harvest, a prune, rq_any_ready, a retire's compaction: COMPACT
 * in src/readyq.c) puts it in that round, and the wait returns it twice,
 * which one kernel epoll_wait never does.
 *
 * The window (between two harvests, q->lock dropped) has no system call, so
 * a hardware watchpoint places the other thread's step in it
 * (tests/watchpoint.h).  The instance holds a readable pipe (kernel fds:
 * round mode), a ready ueventfd X and 64 ready ueventfds Y, all
 * level-triggered.  Thread A waits (timeout 0, room for all): the kernel's
 * turn (the pipe, the doorbell), then the ready queue's (X and the Ys, put
 * back), then, the kernel having no more, the ready queue's again.  A
 * traps on its accesses to the word of the instance's `side`: the first
 * access that finds it at the kernel's turn after the user's is the user
 * turn's store at the end of its round, after the first harvest.  There
 * the handler lets thread B delete the 64 Ys (queued, retired: the 64th
 * retire compacts, splicing the shared queue into the batch) and waits for
 * it.  A's result must hold each registration once: the pipe, X and the 64
 * Ys (their events were taken before the DELs).  A wait after it returns
 * the pipe and X, once each (nothing was lost).  Skipped (77) where perf
 * breakpoints with sigtrap are not allowed, and under ThreadSanitizer
 * (watchpoint.h).  Uses the library's private headers for the word's
 * address.
 */
#include "testlib.h"
#include "watchpoint.h"

#include "fdtab.h"
#include "port_impl.h"

#include <sched.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define NY 64 /* RQ__COMPACT_MIN: the retire that compacts */
#define D_PIPE 7777
#define D_X 1000
#define MAXEV (NY + 8)
#define TRIP 6

static int ep, ys[NY];
static struct port *p;
static _Atomic int a_ready, fired, b_go, b_done;
static struct epoll_event aev[MAXEV];
static int an = -2;

static int count;
static _Atomic int placed;

/*
 * A's accesses to the word of `side`, counted (the handler must not read
 * the word itself: its own access would trap again once it returns).  In
 * order: the kernel turn's load of `side`, load and store of `kfull`,
 * store of `side` = user; the user turn's load of `side`, its first
 * harvest, then its store of `side` = kernel at the round's end: the 6th,
 * TRIP.  Hold A there until B is done.  The placement is checked in A's
 * own array: the first harvest wrote the Ys (behind the pipe and X), the
 * second nothing yet.
 */
static void on_access(const void *addr)
{
	(void)addr;
	if (atomic_load_explicit(&fired, memory_order_relaxed) ||
	    ++count != TRIP)
		return;
	atomic_store_explicit(&placed,
			      aev[NY + 1].data.u64 != 0 &&
				      aev[NY + 2].data.u64 == 0,
			      memory_order_relaxed);
	atomic_store_explicit(&fired, 1, memory_order_relaxed);
	atomic_store_explicit(&b_go, 1, memory_order_relaxed);
	while (!atomic_load_explicit(&b_done, memory_order_relaxed))
		sched_yield();
	atomic_thread_fence(memory_order_seq_cst);
}

static void *a_main(void *arg)
{
	/* The aligned word that holds `side` (a byte). */
	const void *w = (const void *)((uintptr_t)&p->side & ~(uintptr_t)3);
	int fd;

	(void)arg;
	fd = wp_watch(w, 4, on_access);
	atomic_store(&a_ready, fd >= 0 ? 1 : fd);
	if (fd < 0)
		return NULL;
	an = uepoll_wait(ep, aev, MAXEV, 0);
	close(fd);
	return NULL;
}

static void *b_main(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&b_go, memory_order_relaxed))
		sched_yield();
	atomic_thread_fence(memory_order_seq_cst);
	for (int i = 0; i < NY; i++)
		CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_DEL, ys[i], NULL), 0);
	atomic_thread_fence(memory_order_seq_cst);
	atomic_store_explicit(&b_done, 1, memory_order_relaxed);
	return NULL;
}

/* Each data once in ev[0..n): the number of repeats. */
static int repeats(const struct epoll_event *ev, int n)
{
	int r = 0;

	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			if (ev[j].data.u64 == ev[i].data.u64) {
				fprintf(stderr, "data %llu returned twice "
						"(events %d and %d)\n",
					(unsigned long long)ev[i].data.u64, j,
					i);
				r++;
			}
	return r;
}

static int has(const struct epoll_event *ev, int n, uint64_t d)
{
	for (int i = 0; i < n; i++)
		if (ev[i].data.u64 == d)
			return 1;
	return 0;
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, got[MAXEV];
	pthread_t a, b;
	int pfd[2], x, n;

	t_begin("t_round_splice");
#ifdef T_TSAN
	T_SKIP("a watchpoint on a word of the library, under TSan");
#endif
	t_watchdog(60);
	ep = uepoll_create1(0);
	REQUIRE(ep >= 0);
	p = (struct port *)(void *)fdtab_peek(ep);
	REQUIRE(p);
	REQUIRE(pipe(pfd) == 0);
	REQUIRE(write(pfd[1], "x", 1) == 1);
	ev.data.u64 = D_PIPE;
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &ev) == 0);
	/* A kernel fd: the waits collect in rounds. */
	REQUIRE(!bell_kernel(&p->bell, BELL_K_NONE, 0));
	x = ueventfd(1, EFD_NONBLOCK);
	REQUIRE(x >= 0);
	ev.data.u64 = D_X;
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, x, &ev) == 0);
	for (int i = 0; i < NY; i++) {
		ys[i] = ueventfd(1, EFD_NONBLOCK);
		REQUIRE(ys[i] >= 0);
		ev.data.u64 = (uint64_t)i + 1;
		REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, ys[i], &ev) == 0);
	}
	/* The kernel's turn comes first. */
	REQUIRE(atomic_load(&p->side) == 0);

	REQUIRE(pthread_create(&b, NULL, b_main, NULL) == 0);
	REQUIRE(pthread_create(&a, NULL, a_main, NULL) == 0);
	while (!atomic_load(&a_ready))
		sched_yield();
	if (atomic_load(&a_ready) < 0) {
		fprintf(stderr, "perf_event_open: %s\n",
			strerror(-atomic_load(&a_ready)));
		pthread_join(a, NULL);
		atomic_store(&b_go, 1); /* B deletes the Ys: no wait between */
		pthread_join(b, NULL);
		for (int i = 0; i < NY; i++)
			uepoll_close(ys[i]);
		uepoll_close(x);
		close(pfd[0]);
		close(pfd[1]);
		uepoll_close(ep);
		T_SKIP("no perf breakpoint with sigtrap here");
	}
	REQUIRE(t_join_within(a, 10000));
	REQUIRE(t_join_within(b, 10000));
	/* The watchpoint did place B's DELs between A's harvests. */
	CHECK(atomic_load(&fired));
	CHECK(atomic_load(&placed));

	CHECK_EQ(repeats(aev, an > 0 ? an : 0), 0);
	CHECK_EQ(an, NY + 2);
	CHECK(an > 0 && has(aev, an, D_PIPE) && has(aev, an, D_X));

	/* The pipe and X stay ready: the next wait returns them, once. */
	n = uepoll_wait(ep, got, MAXEV, 0);
	CHECK_EQ(n, 2);
	CHECK_EQ(repeats(got, n > 0 ? n : 0), 0);
	CHECK(n > 0 && has(got, n, D_PIPE) && has(got, n, D_X));

	for (int i = 0; i < NY; i++)
		CHECK_EQ(uepoll_close(ys[i]), 0);
	CHECK_EQ(uepoll_close(x), 0);
	close(pfd[0]);
	close(pfd[1]);
	CHECK_EQ(uepoll_close(ep), 0);
	return t_end();
}
