/*
 * t_fork_busy: fork() while other threads are inside uepoll; the child must
 * never deadlock.
 *
 * Two busy threads keep the library's locks taken: each loops creating
 * ueventfds and instances (uepoll_create2 with random queue kind, wake order
 * and spinning), uepoll_ctl ADD/MOD/DEL, ueventfd_write, uepoll_wait with
 * timeout 0, nesting one instance in another now and then, and uepoll_close
 * in random order (a ueventfd sometimes closed while still registered).  They
 * also share a UEPOLL_WAKE_FIFO instance watching a ueventfd: one writes the
 * ueventfd (coalescing, ueventfd_coalesce 100 us, except under
 * ThreadSanitizer, whose forked children cannot start the timer thread), both
 * make blocking waits with short timeouts on the instance and read.
 * Meanwhile the main thread forks repeatedly (a few thousand times, scaled,
 * bounded to about ten seconds), with several children in flight.  Checked:
 *  - every child exits 0 within 3 s (else it is killed with SIGKILL and
 *    counted as hung); a child that uses fresh objects of its own creates a
 *    ueventfd and an instance, adds, writes, waits (gets the event), reads
 *    the value, closes both;
 *  - every 4th child instead uses objects it inherited that are still open
 *    in the parent (an instance and a ueventfd created before the busy
 *    threads started, never touched by them): it writes 1 to the ueventfd,
 *    waits on the instance and reads.  The counter is shared by every
 *    process, as a kernel eventfd's is (the fork demoted it), so a sibling
 *    may take the value first: the child reports what it took in its exit
 *    status, and the values balance: what the children took plus what the
 *    parent finds is what they wrote;
 *  - afterwards the parent's objects still work, the busy threads end, and
 *    no fd is leaked.
 */
#include "testlib.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>


#define INHERITED_DATA 0xabcULL
#define CHILD_BOUND_MS 3000
#define IN_FLIGHT 8

static atomic_int stop;
static int shared_ep, shared_efd; /* used by both busy threads */
static int inh_ep, inh_efd;	  /* used by the children only */

/* ---- busy threads ---------------------------------------------------------- */

struct busy {
	pthread_t th;
	uint64_t rng;
	int writer; /* writes shared_efd */
	unsigned long rounds;
	uint64_t got; /* read from shared_efd */
	int err;
};

static unsigned rnd(struct busy *b, unsigned n)
{
	return (unsigned)(t_rand(&b->rng) % n);
}

static void busy_fail(struct busy *b, int line)
{
	if (!b->err)
		b->err = line;
}

#define BUSY_CHECK(b, cond)                                                  \
	do {                                                                 \
		if (!(cond))                                                 \
			busy_fail(b, __LINE__);                              \
	} while (0)

/* One round of object churn. */
static void churn(struct busy *b)
{
	static const unsigned wk[] = { UEPOLL_WAKE_LIFO, UEPOLL_WAKE_FIFO };
	unsigned uflags = wk[rnd(b, 2)] |
			  (rnd(b, 4) == 0 ? UEPOLL_NOSPIN : 0);
	int e = ueventfd(rnd(b, 3), EFD_NONBLOCK), ep = uepoll_create2(0, uflags);
	int outer = -1, excl = rnd(b, 4) == 0;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 5 }, out[4];
	uint64_t v;

	if (e < 0 || ep < 0) {
		busy_fail(b, __LINE__);
		goto out;
	}
	if (excl)
		ev.events |= EPOLLEXCLUSIVE;
	else if (rnd(b, 2))
		ev.events |= EPOLLET;
	BUSY_CHECK(b, uepoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
	BUSY_CHECK(b, ueventfd_write(e, 1) == 0);
	BUSY_CHECK(b, uepoll_wait(ep, out, 4, 0) >= 0);
	if (!excl) {
		ev.events = EPOLLIN | (rnd(b, 2) ? EPOLLONESHOT : 0);
		BUSY_CHECK(b, uepoll_ctl(ep, EPOLL_CTL_MOD, e, &ev) == 0);
		BUSY_CHECK(b, ueventfd_write(e, 2) == 0);
		BUSY_CHECK(b, uepoll_wait(ep, out, 4, 0) >= 0);
	}
	if (rnd(b, 4) == 0) {
		/* Nest the instance in another one. */
		struct epoll_event oev = { .events = EPOLLIN, .data.u64 = 6 };

		outer = uepoll_create1(0);
		BUSY_CHECK(b, outer >= 0);
		if (outer >= 0) {
			BUSY_CHECK(b, uepoll_ctl(outer, EPOLL_CTL_ADD, ep,
						 &oev) == 0);
			BUSY_CHECK(b, ueventfd_write(e, 1) == 0);
			BUSY_CHECK(b, uepoll_wait(outer, out, 4, 0) >= 0);
		}
	}
	(void)ueventfd_read(e, &v);
	switch (rnd(b, 3)) {
	case 0: /* DEL, then close */
		BUSY_CHECK(b, uepoll_ctl(ep, EPOLL_CTL_DEL, e, NULL) == 0);
		break;
	case 1: /* close the ueventfd while it is registered */
		BUSY_CHECK(b, uepoll_close(e) == 0);
		e = -1;
		break;
	default: /* close the instance first */
		break;
	}
out:
	if (outer >= 0 && rnd(b, 2)) {
		BUSY_CHECK(b, uepoll_close(outer) == 0);
		outer = -1;
	}
	if (ep >= 0)
		BUSY_CHECK(b, uepoll_close(ep) == 0);
	if (e >= 0)
		BUSY_CHECK(b, uepoll_close(e) == 0);
	if (outer >= 0)
		BUSY_CHECK(b, uepoll_close(outer) == 0);
}

static void *busy_main(void *arg)
{
	struct busy *b = arg;
	struct epoll_event out[4];
	uint64_t v;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		churn(b);
		if (b->writer) {
			BUSY_CHECK(b, ueventfd_write(shared_efd, 1) == 0);
			/* Now and then a short blocking wait too, so that
			 * both threads stand in the FIFO line at times. */
			if (rnd(b, 8) == 0 &&
			    uepoll_wait(shared_ep, out, 4, 1) > 0 &&
			    ueventfd_read(shared_efd, &v) == 0)
				b->got += v;
		} else {
			int n = uepoll_wait(shared_ep, out, 4, 1 + (int)rnd(b, 3));

			BUSY_CHECK(b, n >= 0 || errno == EINTR);
			if (n > 0 && ueventfd_read(shared_efd, &v) == 0)
				b->got += v;
		}
		b->rounds++;
	}
	return NULL;
}

/* ---- children --------------------------------------------------------------- */

/* A child with fresh objects of its own.  Exit status: the failing step. */
static void child_fresh(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 77 }, out[4];
	int e = ueventfd(0, EFD_NONBLOCK), ep = uepoll_create1(0);
	uint64_t v = 0;

	if (e < 0)
		_exit(2);
	if (ep < 0)
		_exit(3);
	if (uepoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) != 0)
		_exit(4);
	if (ueventfd_write(e, 3) != 0)
		_exit(5);
	if (uepoll_wait(ep, out, 4, 1000) != 1)
		_exit(6);
	if (out[0].data.u64 != 77)
		_exit(7);
	if (ueventfd_read(e, &v) != 0 || v != 3)
		_exit(8);
	if (uepoll_close(e) != 0 || uepoll_close(ep) != 0)
		_exit(9);
	_exit(0);
}

/* A child with the inherited objects (open, and idle, in the parent):
 * exits INH_TOOK + what it read (0 if a sibling took it first). */
#define INH_TOOK 100
static void child_inherited(void)
{
	struct epoll_event out[4];
	uint64_t v = 0;
	int n;

	if (ueventfd_write(inh_efd, 1) != 0)
		_exit(12);
	n = uepoll_wait(inh_ep, out, 4, 0);
	if (n < 0 || n > 1)
		_exit(13);
	if (n == 1 && out[0].data.u64 != INHERITED_DATA)
		_exit(14);
	if (ueventfd_read(inh_efd, &v) != 0) {
		if (errno != EAGAIN)
			_exit(15);
		v = 0;
	}
	if (v > IN_FLIGHT * 4)
		_exit(16);
	_exit(INH_TOOK + (int)v);
}

static unsigned long inh_taken;

/* ---- the fork loop ----------------------------------------------------------- */

struct kid {
	pid_t pid;
	int inherited;
	uint64_t start;
};

static int nforks, ninherited, nhung, nhung_inh, nfailed;
static int fail_codes[256];

static void reaped(struct kid *k, int st)
{
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && !k->inherited)
		return;
	if (WIFEXITED(st) && WEXITSTATUS(st) >= INH_TOOK && k->inherited) {
		inh_taken += (unsigned long)(WEXITSTATUS(st) - INH_TOOK);
		return;
	}
	nfailed++;
	if (WIFEXITED(st))
		fail_codes[WEXITSTATUS(st)]++;
	else
		fail_codes[128 + (WTERMSIG(st) & 127)]++;
}

/* Reap what has ended; kill what has run too long.  Returns how many are
 * still in flight. */
static int reap(struct kid *kids, int n, int block_ms)
{
	uint64_t end = t_now_ns() + (uint64_t)block_ms * 1000000u;

	for (;;) {
		int left = 0;

		for (int i = 0; i < n; i++) {
			int st;
			pid_t w;

			if (!kids[i].pid)
				continue;
			w = waitpid(kids[i].pid, &st, WNOHANG);
			if (w == kids[i].pid) {
				reaped(&kids[i], st);
				kids[i].pid = 0;
				continue;
			}
			if (t_now_ns() - kids[i].start >
			    (uint64_t)CHILD_BOUND_MS * 1000000u) {
				kill(kids[i].pid, SIGKILL);
				REQUIRE(waitpid(kids[i].pid, &st, 0) ==
					kids[i].pid);
				nhung++;
				nhung_inh += kids[i].inherited;
				kids[i].pid = 0;
				continue;
			}
			left++;
		}
		if (left < n || t_now_ns() >= end)
			return left;
		t_sleep_ms(1);
	}
}

static void fork_loop(void)
{
	unsigned long target = (unsigned long)(3000 * t_scale());
	uint64_t t0 = t_now_ns(), cap = 7000000000ull;
	struct kid kids[IN_FLIGHT];

	memset(kids, 0, sizeof(kids));
	if (target < 200)
		target = 200;
	fflush(stdout);
	fflush(stderr);
	while ((unsigned long)nforks < target && t_now_ns() - t0 < cap) {
		int slot = -1;
		pid_t pid;

		/* A free slot (waits, boundedly, while all are in flight). */
		while (slot < 0) {
			for (int i = 0; i < IN_FLIGHT && slot < 0; i++)
				if (!kids[i].pid)
					slot = i;
			if (slot < 0)
				reap(kids, IN_FLIGHT, 50);
		}
		kids[slot].inherited = nforks % 4 == 3;
		kids[slot].start = t_now_ns();
		pid = fork();
		REQUIRE(pid >= 0);
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (kids[slot].inherited)
				child_inherited();
			child_fresh();
		}
		kids[slot].pid = pid;
		nforks++;
		ninherited += kids[slot].inherited;
		reap(kids, IN_FLIGHT, 0);
	}
	while (reap(kids, IN_FLIGHT, 100) > 0)
		;
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = INHERITED_DATA };
	struct epoll_event out[4];
	struct busy b[2];
	uint64_t seed, v;

	t_begin("t_fork_busy");
	t_watchdog(60);
	unsetenv("UEPOLL_EVENTFD_COALESCE");
	seed = t_seed(0x5eed0f0f);

	/* Created before the busy threads, never touched by them. */
	inh_ep = uepoll_create1(0);
	inh_efd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(inh_ep >= 0 && inh_efd >= 0);
	REQUIRE(uepoll_ctl(inh_ep, EPOLL_CTL_ADD, inh_efd, &ev) == 0);

	shared_ep = uepoll_create2(0, UEPOLL_WAKE_FIFO);
	shared_efd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(shared_ep >= 0 && shared_efd >= 0);
#ifndef T_TSAN
	{
		struct ueventfd_coalesce co = { .delay_us = 100 };

		REQUIRE(ueventfd_coalesce(shared_efd, &co, NULL) == 0);
	}
#endif
	ev.data.u64 = 1;
	REQUIRE(uepoll_ctl(shared_ep, EPOLL_CTL_ADD, shared_efd, &ev) == 0);

	for (int i = 0; i < 2; i++) {
		memset(&b[i], 0, sizeof(b[i]));
		b[i].rng = seed + (uint64_t)i * 0x9e3779b97f4a7c15ull;
		b[i].writer = i == 0;
		REQUIRE(pthread_create(&b[i].th, NULL, busy_main, &b[i]) == 0);
	}
	t_sleep_ms(20);

	fork_loop();

	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++) {
		REQUIRE(t_join_within(b[i].th, 5000));
		if (b[i].err) {
			fprintf(stderr, "busy thread %d: check failed at line %d\n",
				i, b[i].err);
			t_failures++;
		}
		CHECK(b[i].rounds > 0);
	}
	printf("%d forks (%d with inherited objects), busy rounds %lu + %lu: "
	       "%d hung (%d of them with inherited objects), %d failed\n",
	       nforks, ninherited, b[0].rounds, b[1].rounds, nhung, nhung_inh,
	       nfailed);
	fflush(stdout);
	for (int i = 0; i < 256; i++)
		if (fail_codes[i])
			fprintf(stderr, "  %d children: %s %d\n", fail_codes[i],
				i < 128 ? "exit" : "signal", i < 128 ? i : i - 128);
	CHECK_EQ(nhung, 0);
	CHECK_EQ(nfailed, 0);

	/* The parent's copies: untouched by the children, still working. */
	/* Every inherited child wrote 1: what they took, and what is left
	 * (a hung child killed between its write and its read: not counted). */
	v = 0;
	if (ueventfd_read(inh_efd, &v) != 0)
		v = 0;
	if (!nhung_inh)
		CHECK_EQ(inh_taken + v, (unsigned long)ninherited);
	CHECK_EQ(uepoll_wait(inh_ep, out, 4, 0), 0);
	CHECK_ERR(ueventfd_read(inh_efd, &v), EAGAIN);
	CHECK_EQ(ueventfd_write(inh_efd, 2), 0);
	CHECK_EQ(uepoll_wait(inh_ep, out, 4, 1000), 1);
	CHECK_EQ(out[0].data.u64, INHERITED_DATA);
	CHECK_EQ(ueventfd_read(inh_efd, &v), 0);
	CHECK_EQ(v, 2);
	/* The shared pair: drain what the busy threads left, then one more. */
	while (ueventfd_read(shared_efd, &v) == 0)
		;
	CHECK_EQ(ueventfd_write(shared_efd, 1), 0);
	CHECK_EQ(uepoll_wait(shared_ep, out, 4, 1000), 1);
	CHECK_EQ(ueventfd_read(shared_efd, &v), 0);
	CHECK_EQ(v, 1);

	CHECK_EQ(uepoll_close(inh_ep), 0);
	CHECK_EQ(uepoll_close(inh_efd), 0);
	CHECK_EQ(uepoll_close(shared_ep), 0);
	CHECK_EQ(uepoll_close(shared_efd), 0);
	return t_end();
}
