/*
 * t_xproc: one eventfd used by two processes after fork() (issue 21).
 *
 * A differential test: each scenario runs once on the kernel's eventfd
 * (eventfd, read, write, poll, epoll) and once on a ueventfd (ueventfd,
 * uepoll_read, uepoll_write, uepoll instances), and what both processes
 * observe (values and sums read, return values, errno, poll revents, the
 * children's exit status) must be the same: a fork keeps the ueventfd
 * accelerated in shared memory (issue 21, SHARED), with the kernel's
 * semantics.
 *  a. pubsub: a child writes N values, the parent poll()s then reads
 *     until it has their sum;
 *  b. pingpong: K rounds between the processes on two EFD_SEMAPHORE
 *     eventfds, blocking reads;
 *  c. many: 3 writer processes, readers in two processes (plain and
 *     semaphore): the sums read make the sums written;
 *  d. wake: a child blocked in read, poll(), select(), a kernel epoll or a
 *     uepoll instance it made after the fork is woken by the parent's
 *     write; the parent blocked in read, or in an instance it made before
 *     the fork, by the child's;
 *  e. full: a writer blocked on a full counter in one process, freed by a
 *     read in the other (both ways);
 *  f. coalesce (ueventfd_coalesce set before the fork, delay 2 ms, with
 *     and without UEVENTFD_HOLD_WRITES; the kernel's run has none): a
 *     child blocked in read or poll() gets all the parent's writes; a
 *     child's burst of writes followed by exit(0) is all seen by the
 *     parent, also while it is blocked reading.
 * No timing is asserted: every blocking step has a deadline (xproc.h)
 * and a hang fails naming the step.  $T_DUMP=1 prints both logs of a
 * scenario; an argument (pubsub, pingpong, many, wake, full, coalesce)
 * runs one scenario.
 */
#include "xproc.h"

#include <fcntl.h>
#include <inttypes.h>
#include <sys/select.h>

struct impl {
	const char *name;
	int kernel;
	int (*efd)(unsigned int, int);
	int (*ep)(int);
	int (*ctl)(int, int, int, struct epoll_event *);
	int (*wait)(int, struct epoll_event *, int, int);
	ssize_t (*rd)(int, void *, size_t);
	ssize_t (*wr)(int, const void *, size_t);
	int (*cl)(int);
};

static const struct impl KERN = { "kernel", 1, eventfd, epoll_create1,
				  epoll_ctl, epoll_wait, read, write, close };
static const struct impl UEP = { "uepoll", 0, ueventfd, uepoll_create1,
				 uepoll_ctl, uepoll_wait, uepoll_read,
				 uepoll_write, uepoll_close };
static const struct impl *const IMPLS[2] = { &KERN, &UEP };

#define MAXV 0xfffffffffffffffeull

/* A write of v: 0, or -errno. */
static long wr64(const struct impl *I, int fd, uint64_t v)
{
	return I->wr(fd, &v, sizeof(v)) == sizeof(v) ? 0 : -errno;
}

/* A read: the value, or -errno. */
static long rd64(const struct impl *I, int fd)
{
	uint64_t v = 0;

	return I->rd(fd, &v, sizeof(v)) == sizeof(v) ? (long)v : -errno;
}

static int add(const struct impl *I, int ep, int fd, uint64_t data)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = data };

	return I->ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static void coalesce(const struct impl *I, int fd, uint32_t delay_us,
		     uint32_t flags)
{
	struct ueventfd_coalesce co = { .delay_us = delay_us,
					.flags = flags };

	if (!I->kernel)
		CHECK_EQ(ueventfd_coalesce(fd, &co, NULL), 0);
}

/* Compare, print, check the scenario's expected values on both. */
static void same(const struct t_log *k, const struct t_log *u,
		 const char *what)
{
	int before = t_failures;

	t_log_same(k, u, what);
	printf("%s: %d values, %s\n", what, u->n,
	       t_failures == before ? "same" : "DIFFER");
}

/* Wait until the process pid sleeps (in the call it announced); a child
 * that never sleeps is not an error here (it may have been woken). */
static void sleeping(pid_t pid)
{
	t_wait_sleeping((int)pid, 3000);
}

/* ---- a. publisher child, subscriber parent ------------------------------ */

static uint64_t pub_value(int64_t i)
{
	return (uint64_t)(i % 7) + 1;
}

static void pubsub_run(const struct impl *I, int64_t n, struct t_log *L)
{
	int efd = I->efd(0, EFD_NONBLOCK);
	int64_t total = 0, sum = 0, bad = 0, eagain = 0;
	uint64_t deadline;
	struct t_child c;

	REQUIRE(efd >= 0);
	for (int64_t i = 0; i < n; i++)
		total += (int64_t)pub_value(i);
	if (x_fork(&c) == 0) {
		uint64_t s = 42;
		int b = 0;

		x_step(I->name, "pubsub: the child's writes");
		for (int64_t i = 0; i < n; i++) {
			b |= wr64(I, efd, pub_value(i)) != 0;
			if (t_rand(&s) % 512 == 0)
				usleep(20 + (useconds_t)(t_rand(&s) % 100));
		}
		b |= I->cl(efd) != 0;
		_exit(b);
	}
	x_step(I->name, "pubsub: the parent's poll and read loop");
	deadline = t_now_ns() + 8000000000ull;
	while (sum < total && t_now_ns() < deadline) {
		int rev = x_poll(efd, POLLIN, 1000);
		long v;

		if (rev == 0)
			continue;
		if (rev != POLLIN) {
			bad++;
			continue;
		}
		v = rd64(I, efd);
		if (v > 0)
			sum += v;
		else if (v == -EAGAIN)
			eagain++;
		else
			bad++;
	}
	x_step_end();
	t_log_put(L, sum);
	t_log_put(L, bad);
	t_log_put(L, eagain); /* one reader: a POLLIN is never stale */
	t_log_put(L, t_child_reap(&c, 5000, "pubsub"));
	t_log_put(L, x_poll(efd, POLLIN | POLLOUT, 0));
	t_log_put(L, rd64(I, efd));
	CHECK_EQ(sum, total);
	CHECK_EQ(I->cl(efd), 0);
}

static void test_pubsub(void)
{
	int64_t n = (int64_t)(20000 * t_scale());
	struct t_log L[2];

	if (n < 1000)
		n = 1000;
	for (int k = 0; k < 2; k++) {
		memset(&L[k], 0, sizeof(L[k]));
		pubsub_run(IMPLS[k], n, &L[k]);
	}
	CHECK_EQ(L[0].v[3], 0);
	CHECK_EQ(L[0].v[4], POLLOUT);
	CHECK_EQ(L[0].v[5], -EAGAIN);
	same(&L[0], &L[1], "a. pubsub");
}

/* ---- b. semaphore ping-pong ---------------------------------------------- */

static void pingpong_run(const struct impl *I, int64_t rounds, struct t_log *L)
{
	int a = I->efd(0, EFD_SEMAPHORE), b = I->efd(0, EFD_SEMAPHORE);
	int res[2];
	int64_t bad = 0;
	struct t_child c;

	REQUIRE(a >= 0 && b >= 0 && pipe(res) == 0);
	if (x_fork(&c) == 0) {
		struct t_log cl = { .n = 0 };
		int64_t cb = 0;

		close(res[0]);
		for (int64_t i = 0; i < rounds; i++) {
			x_step(I->name, "pingpong: the child's read of a");
			cb += rd64(I, a) != 1;
			cb += wr64(I, b, 1) != 0;
		}
		x_step_end();
		t_log_put(&cl, cb);
		t_log_put(&cl, x_poll(a, POLLIN | POLLOUT, 0));
		x_log_send(res[1], &cl);
		_exit(I->cl(a) || I->cl(b));
	}
	close(res[1]);
	for (int64_t i = 0; i < rounds; i++) {
		bad += wr64(I, a, 1) != 0;
		x_step(I->name, "pingpong: the parent's read of b");
		bad += rd64(I, b) != 1;
	}
	x_step_end();
	t_log_put(L, bad);
	t_log_put(L, t_child_reap(&c, 5000, "pingpong"));
	x_log_recv(res[0], L);
	close(res[0]);
	t_log_put(L, x_poll(a, POLLIN | POLLOUT, 0));
	t_log_put(L, x_poll(b, POLLIN | POLLOUT, 0));
	/* a semaphore holding 3: three reads of 1, then empty */
	CHECK_EQ(wr64(I, b, 3), 0);
	if (x_fork(&c) == 0) {
		x_step(I->name, "pingpong: the child's reads of 3");
		_exit(rd64(I, b) != 1 || rd64(I, b) != 1 || rd64(I, b) != 1);
	}
	t_log_put(L, t_child_reap(&c, 5000, "pingpong 3"));
	t_log_put(L, x_poll(b, POLLIN | POLLOUT, 0));
	CHECK_EQ(I->cl(a), 0);
	CHECK_EQ(I->cl(b), 0);
}

static void test_pingpong(void)
{
	int64_t rounds = (int64_t)(2000 * t_scale());
	struct t_log L[2];

	if (rounds < 200)
		rounds = 200;
	for (int k = 0; k < 2; k++) {
		uint64_t t0 = t_now_ns();

		memset(&L[k], 0, sizeof(L[k]));
		pingpong_run(IMPLS[k], rounds, &L[k]);
		printf("b. pingpong %s: %" PRId64 " rounds in %.1f ms\n",
		       IMPLS[k]->name, rounds, (t_now_ns() - t0) / 1e6);
	}
	/* bad, status, the child's bad, its poll of a, a, b, the second
	 * child's status, b */
	for (int i = 0; i < 8; i++)
		CHECK_EQ(L[0].v[i], i == 3 || i == 4 || i == 5 || i == 7 ? POLLOUT : 0);
	same(&L[0], &L[1], "b. pingpong");
}

/* ---- c. three writers, readers in two processes -------------------------- */

#define NWRITERS 3

static uint64_t many_value(int w, int64_t i)
{
	return (uint64_t)((i + w) % 5) + 1;
}

static void many_run(const struct impl *I, int sem, int64_t m, struct t_log *L)
{
	int efd = I->efd(0, EFD_NONBLOCK | (sem ? EFD_SEMAPHORE : 0));
	int stop[2], res[2];
	struct t_child w[NWRITERS], r;
	int64_t total = 0, sum = 0, bad = 0;
	uint64_t deadline;

	REQUIRE(efd >= 0 && pipe(stop) == 0 && pipe(res) == 0);
	for (int k = 0; k < NWRITERS; k++)
		for (int64_t i = 0; i < m; i++)
			total += (int64_t)many_value(k, i);
	/* the second reader */
	if (x_fork(&r) == 0) {
		struct pollfd p[2] = { { .fd = efd, .events = POLLIN },
				       { .fd = stop[0], .events = POLLIN } };
		struct t_log cl = { .n = 0 };
		int64_t csum = 0, cbad = 0;
		long v;

		close(stop[1]);
		close(res[0]);
		x_step(I->name, "many: the reader child");
		for (;;) {
			if (poll(p, 2, 1000) < 0 && errno != EINTR)
				cbad++;
			if (p[0].revents & POLLIN) {
				v = rd64(I, efd);
				if (v > 0)
					csum += v;
				else if (v != -EAGAIN) /* the other reader's */
					cbad++;
			}
			if (p[1].revents)
				break;
		}
		while ((v = rd64(I, efd)) > 0)
			csum += v;
		cbad += v != -EAGAIN;
		x_step_end();
		t_log_put(&cl, csum);
		t_log_put(&cl, cbad);
		x_log_send(res[1], &cl);
		_exit(I->cl(efd) != 0);
	}
	close(stop[0]);
	close(res[1]);
	for (int k = 0; k < NWRITERS; k++)
		if (x_fork(&w[k]) == 0) {
			int b = 0;

			close(stop[1]);
			close(res[0]);
			x_step(I->name, "many: a writer child");
			for (int64_t i = 0; i < m; i++)
				b |= wr64(I, efd, many_value(k, i)) != 0;
			_exit(b | (I->cl(efd) != 0));
		}
	x_step(I->name, "many: the parent's reads");
	deadline = t_now_ns() + 8000000000ull;
	for (;;) {
		int ended = 0, rev = x_poll(efd, POLLIN, 100);
		long v;

		if (rev & POLLIN) {
			v = rd64(I, efd);
			if (v > 0)
				sum += v;
			else if (v != -EAGAIN)
				bad++;
			continue;
		}
		for (int k = 0; k < NWRITERS; k++)
			ended += t_child_ended(&w[k]);
		if ((ended == NWRITERS && rev == 0) || t_now_ns() > deadline)
			break;
	}
	x_step_end();
	for (int k = 0; k < NWRITERS; k++)
		t_log_put(L, t_child_reap(&w[k], 5000, "many: writer"));
	if (write(stop[1], "s", 1) != 1)
		bad++;
	t_log_put(L, t_child_reap(&r, 5000, "many: reader"));
	{
		struct t_log cl = { .n = 0 };

		x_log_recv(res[0], &cl);
		if (cl.n == 2) {
			printf("c. many %s %s: parent read %" PRId64
			       ", child %ld, of %" PRId64 "\n",
			       I->name, sem ? "semaphore" : "plain", sum,
			       cl.v[0], total);
			sum += cl.v[0];
			bad += cl.v[1];
		} else {
			bad++;
		}
	}
	t_log_put(L, sum);
	t_log_put(L, bad);
	t_log_put(L, x_poll(efd, POLLIN | POLLOUT, 0));
	t_log_put(L, rd64(I, efd));
	CHECK_EQ(sum, total);
	close(stop[1]);
	close(res[0]);
	CHECK_EQ(I->cl(efd), 0);
}

static void test_many(void)
{
	int64_t m = (int64_t)(5000 * t_scale());

	if (m < 500)
		m = 500;
	for (int sem = 0; sem < 2; sem++) {
		struct t_log L[2];

		for (int k = 0; k < 2; k++) {
			memset(&L[k], 0, sizeof(L[k]));
			many_run(IMPLS[k], sem, m, &L[k]);
		}
		for (int i = 0; i < NWRITERS + 1; i++)
			CHECK_EQ(L[0].v[i], 0);
		CHECK_EQ(L[0].v[NWRITERS + 2], 0);
		CHECK_EQ(L[0].v[NWRITERS + 3], POLLOUT);
		CHECK_EQ(L[0].v[NWRITERS + 4], -EAGAIN);
		same(&L[0], &L[1], sem ? "c. many, semaphore" : "c. many, plain");
	}
}

/* ---- d. a sleeper in one process, the write in the other ----------------- */

enum wake_mode {
	W_READ,     /* the child blocked in read */
	W_POLL,     /* ... in poll() */
	W_SELECT,   /* ... in select() */
	W_KEPOLL,   /* ... in a kernel epoll (epoll_wait) */
	W_INSTANCE, /* ... in an instance it made after the fork */
	W_PREAD,    /* the parent blocked in read, the child writes */
	W_PINST,    /* the parent in an instance made before the fork */
	W_N
};
static const char *const WAKE_NAME[W_N] = {
	"child in read", "child in poll", "child in select",
	"child in kernel epoll", "child in post-fork instance",
	"parent in read", "parent in pre-fork instance"
};

static void wake_run(const struct impl *I, enum wake_mode mode, struct t_log *L)
{
	int efd = I->efd(0, 0), ep = -1, res[2];
	struct epoll_event ev[2];
	struct t_child c;

	REQUIRE(efd >= 0 && pipe(res) == 0);
	if (mode == W_PINST) {
		ep = I->ep(0);
		REQUIRE(ep >= 0);
		CHECK_EQ(add(I, ep, efd, 0xd6), 0);
	}
	if (x_fork(&c) == 0) {
		struct t_log cl = { .n = 0 };
		int r;

		close(res[0]);
		if (mode == W_PREAD || mode == W_PINST) {
			/* the parent's instance is the parent's to use */
			if (ep >= 0)
				t_log_put(&cl, I->cl(ep));
			sleeping(getppid());
			t_log_put(&cl, wr64(I, efd, 9));
			x_log_send(res[1], &cl);
			_exit(I->cl(efd) != 0);
		}
		x_step(I->name, WAKE_NAME[mode]);
		switch (mode) {
		case W_READ:
			break;
		case W_POLL:
			t_log_put(&cl, x_poll(efd, POLLIN, 8000));
			break;
		case W_SELECT: {
			fd_set rs;
			struct timeval tv = { 8, 0 };

			FD_ZERO(&rs);
			FD_SET(efd, &rs);
			r = select(efd + 1, &rs, NULL, NULL, &tv);
			t_log_put(&cl, r);
			t_log_put(&cl, FD_ISSET(efd, &rs) != 0);
			break;
		}
		case W_KEPOLL:
		case W_INSTANCE: {
			const struct impl *E = mode == W_KEPOLL ? &KERN : I;
			int cep = E->ep(0);

			t_log_put(&cl, cep >= 0);
			t_log_put(&cl, add(E, cep, efd, 0xd4));
			memset(ev, 0, sizeof(ev));
			r = E->wait(cep, ev, 2, 8000);
			t_log_put(&cl, r);
			t_log_put(&cl, ev[0].events);
			t_log_put(&cl, (long)ev[0].data.u64);
			t_log_put(&cl, E->cl(cep));
			break;
		}
		default:
			break;
		}
		/* the write's value, all of it */
		t_log_put(&cl, rd64(I, efd));
		x_step_end();
		t_log_put(&cl, x_poll(efd, POLLIN | POLLOUT, 0));
		x_log_send(res[1], &cl);
		_exit(I->cl(efd) != 0);
	}
	close(res[1]);
	if (mode == W_PREAD) {
		x_step(I->name, WAKE_NAME[mode]);
		t_log_put(L, rd64(I, efd));
	} else if (mode == W_PINST) {
		x_step(I->name, WAKE_NAME[mode]);
		memset(ev, 0, sizeof(ev));
		t_log_put(L, I->wait(ep, ev, 2, 8000));
		t_log_put(L, ev[0].events);
		t_log_put(L, (long)ev[0].data.u64);
		t_log_put(L, rd64(I, efd));
		t_log_put(L, I->wait(ep, ev, 2, 0));
		CHECK_EQ(I->cl(ep), 0);
	} else {
		sleeping(c.pid);
		t_log_put(L, wr64(I, efd, 5));
	}
	x_step_end();
	t_log_put(L, t_child_reap(&c, 10000, WAKE_NAME[mode]));
	x_log_recv(res[0], L);
	close(res[0]);
	t_log_put(L, x_poll(efd, POLLIN | POLLOUT, 0));
	CHECK_EQ(I->cl(efd), 0);
}

static void test_wake(void)
{
	for (int mode = 0; mode < W_N; mode++) {
		struct t_log L[2];
		char what[80];

		for (int k = 0; k < 2; k++) {
			memset(&L[k], 0, sizeof(L[k]));
			wake_run(IMPLS[k], (enum wake_mode)mode, &L[k]);
		}
		/* the kernel's: the value written is read, nothing is left */
		CHECK_EQ(L[0].v[L[0].n - 1], POLLOUT);
		snprintf(what, sizeof(what), "d. wake, %s", WAKE_NAME[mode]);
		same(&L[0], &L[1], what);
	}
}

/* ---- e. a full counter --------------------------------------------------- */

/* child_writes: the child blocks in its write, the parent reads; else the
 * other way round. */
static void full_run(const struct impl *I, int child_writes, struct t_log *L)
{
	int efd = I->efd(0, 0), res[2];
	struct t_child c;

	REQUIRE(efd >= 0 && pipe(res) == 0);
	CHECK_EQ(wr64(I, efd, MAXV), 0);
	t_log_put(L, x_poll(efd, POLLIN | POLLOUT, 0));
	if (x_fork(&c) == 0) {
		struct t_log cl = { .n = 0 };

		close(res[0]);
		if (child_writes) {
			x_step(I->name, "full: the child's blocked write");
			t_log_put(&cl, wr64(I, efd, 1));
		} else {
			sleeping(getppid());
			t_log_put(&cl, x_poll(efd, POLLIN | POLLOUT, 0));
			x_step(I->name, "full: the child's read");
			t_log_put(&cl, rd64(I, efd) == (long)MAXV);
		}
		x_step_end();
		x_log_send(res[1], &cl);
		_exit(I->cl(efd) != 0);
	}
	close(res[1]);
	if (child_writes) {
		sleeping(c.pid);
		t_log_put(L, x_poll(efd, POLLIN | POLLOUT, 0));
		x_step(I->name, "full: the parent's read");
		t_log_put(L, rd64(I, efd) == (long)MAXV);
	} else {
		x_step(I->name, "full: the parent's blocked write");
		t_log_put(L, wr64(I, efd, 1));
	}
	x_step_end();
	t_log_put(L, t_child_reap(&c, 10000, "full"));
	x_log_recv(res[0], L);
	close(res[0]);
	/* the blocked write's 1 is there now */
	t_log_put(L, x_poll(efd, POLLIN | POLLOUT, 0));
	x_step(I->name, "full: the last read");
	t_log_put(L, rd64(I, efd));
	x_step_end();
	t_log_put(L, x_poll(efd, POLLIN | POLLOUT, 0));
	CHECK_EQ(I->cl(efd), 0);
}

static void test_full(void)
{
	for (int cw = 1; cw >= 0; cw--) {
		struct t_log L[2];

		for (int k = 0; k < 2; k++) {
			memset(&L[k], 0, sizeof(L[k]));
			full_run(IMPLS[k], cw, &L[k]);
		}
		CHECK_EQ(L[0].v[0], POLLIN);
		CHECK_EQ(L[0].v[L[0].n - 2], 1);
		CHECK_EQ(L[0].v[L[0].n - 1], POLLOUT);
		same(&L[0], &L[1], cw ? "e. full, the child's write blocks"
				      : "e. full, the parent's write blocks");
	}
}

/* ---- f. coalescing across the fork --------------------------------------- */

#define BURST 100

/* Read (poll first if use_poll) until the sum is want or the deadline
 * passes; the sum. */
static long read_sum(const struct impl *I, int efd, long want, int use_poll,
		     int ms)
{
	uint64_t deadline = t_now_ns() + (uint64_t)ms * 1000000u;
	long sum = 0;

	while (sum < want && t_now_ns() < deadline) {
		long v;

		if (use_poll && !(x_poll(efd, POLLIN, 500) & POLLIN))
			continue;
		v = rd64(I, efd);
		if (v > 0)
			sum += v;
		else if (v != -EAGAIN)
			return -1000 + v;
	}
	return sum;
}

enum co_mode {
	CO_CHILD_READS, /* parent writes 10, the child blocked in read */
	CO_CHILD_POLLS, /* ... the child blocked in poll() */
	CO_CHILD_EXITS, /* the child writes a burst and exits, then the
			   parent reads */
	CO_PARENT_READS, /* ... while the parent is blocked reading */
	CO_N
};
static const char *const CO_NAME[CO_N] = {
	"the child blocked in read", "the child blocked in poll",
	"the child's burst, then exit(0)",
	"the child's burst, the parent blocked in read"
};

static void co_run(const struct impl *I, uint32_t flags, enum co_mode mode,
		   struct t_log *L)
{
	int nb = mode == CO_CHILD_POLLS || mode == CO_CHILD_EXITS;
	int efd = I->efd(0, nb ? EFD_NONBLOCK : 0), res[2];
	struct t_child c;

	REQUIRE(efd >= 0 && pipe(res) == 0);
	coalesce(I, efd, 2000, flags);
	if (x_fork(&c) == 0) {
		struct t_log cl = { .n = 0 };

		close(res[0]);
		x_step(I->name, CO_NAME[mode]);
		if (mode == CO_CHILD_READS || mode == CO_CHILD_POLLS) {
			t_log_put(&cl, read_sum(I, efd, 10, nb, 8000));
		} else {
			if (mode == CO_PARENT_READS)
				sleeping(getppid());
			for (int i = 0; i < BURST; i++)
				t_log_put(&cl, wr64(I, efd, 1));
		}
		x_step_end();
		x_log_send(res[1], &cl);
		CHECK_EQ(I->cl(efd), 0);
		/* exit, not _exit: whatever the library does at exit runs */
		exit(t_failures != 0);
	}
	close(res[1]);
	x_step(I->name, CO_NAME[mode]);
	if (mode == CO_CHILD_READS || mode == CO_CHILD_POLLS) {
		sleeping(c.pid);
		for (int i = 0; i < 10; i++)
			t_log_put(L, wr64(I, efd, 1));
	} else if (mode == CO_CHILD_EXITS) {
		t_log_put(L, t_child_reap(&c, 10000, CO_NAME[mode]));
		t_log_put(L, read_sum(I, efd, BURST, 1, 8000));
	} else {
		t_log_put(L, read_sum(I, efd, BURST, 0, 8000));
	}
	x_step_end();
	if (mode != CO_CHILD_EXITS)
		t_log_put(L, t_child_reap(&c, 10000, CO_NAME[mode]));
	x_log_recv(res[0], L);
	close(res[0]);
	/* nothing held is left behind */
	t_log_put(L, x_poll(efd, POLLIN | POLLOUT, 0));
	CHECK_EQ(I->cl(efd), 0);
}

static void test_coalesce(void)
{
	for (int hold = 0; hold < 2; hold++)
		for (int mode = 0; mode < CO_N; mode++) {
			struct t_log L[2];
			char what[120];

			for (int k = 0; k < 2; k++) {
				memset(&L[k], 0, sizeof(L[k]));
				co_run(IMPLS[k], hold ? UEVENTFD_HOLD_WRITES : 0,
				       (enum co_mode)mode, &L[k]);
			}
			CHECK_EQ(L[0].v[L[0].n - 1], POLLOUT);
			snprintf(what, sizeof(what), "f. coalesce 2 ms%s, %s",
				 hold ? " + HOLD_WRITES" : "", CO_NAME[mode]);
			same(&L[0], &L[1], what);
		}
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;

	/* the coalescing settings are the test's own */
	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_begin("t_xproc");
	x_init();
	if (!only || !strcmp(only, "pubsub"))
		test_pubsub();
	if (!only || !strcmp(only, "pingpong"))
		test_pingpong();
	if (!only || !strcmp(only, "many"))
		test_many();
	if (!only || !strcmp(only, "wake"))
		test_wake();
	if (!only || !strcmp(only, "full"))
		test_full();
	if (!only || !strcmp(only, "coalesce"))
		test_coalesce();
	return t_end();
}
