/*
 * t_fork_share: after fork() parent and child share each eventfd's counter,
 * as with kernel eventfds (issue 18 item 3, then issue 21: fork shares
 * every ueventfd's counter in shared memory, with its semaphore mode and
 * O_NONBLOCK; the instances that watch it watch the kernel fd, whose
 * fdinfo shows the counter's class).
 *
 * A differential test: each scenario runs once with kernel objects
 * (eventfd, epoll_create1, read/write/close) and once with uepoll's
 * (ueventfd, uepoll_create1, uepoll_read/uepoll_write/uepoll_close), and
 * what both processes observe must be the same.  The child reports through
 * a pipe (a record of int64s) and its exit status; every wait for it is
 * bounded (WNOHANG + deadline, then SIGKILL), and it dies with the parent
 * (PR_SET_PDEATHSIG).
 *  1. publisher/subscriber: the child writes 1 N times, the parent reads
 *     until it has N, woken by poll(), an instance, or a nested instance;
 *     the child closes its copies of the instances first;
 *  2. semaphore ping-pong between the processes, blocking reads;
 *  3. a script of steps (write, read, poll, waits on level, edge, oneshot
 *     and nested instances, fdinfo's counter) taken in turn by parent and
 *     child, plain and semaphore, with the edge and oneshot events taken
 *     before the fork or not;
 *  4. an edge-triggered registration made before the fork: one event per
 *     write of the child, a blocking wait woken by the child;
 *  5. ueventfds made after the fork are per process; a second fork
 *     demotes them (the grandchild shares them with the child);
 *  6. a post-fork ueventfd of the child in an instance made before the
 *     fork, while the parent waits on its copy: the child's wait should be
 *     woken at once, but the kernel epoll's wakeup may go to the parent's
 *     sleep in the shared kernel epoll (docs/design.md: an instance's
 *     userspace state is per process; use it in one process): a known
 *     difference;
 *  7. registrations with EPOLLEXCLUSIVE, EPOLLROUNDROBIN, EPOLLURGENT,
 *     EPOLLOUT, EPOLLRDHUP|EPOLLPRI survive the demotion (events, MOD);
 *  8. a registration the child adds to a pre-fork instance is the
 *     parent's too (one kernel epoll), after the parent deletes its own.
 * Known, documented differences (docs/design.md): an edge already taken
 * before the fork is reported once more after it (by the edge-triggered
 * registration, or an edge-triggered holder of a nested instance); and
 * (6): reported, not failed, unless $UEPOLL_TEST_STRICT=1.
 * $UEPOLL_TEST_VERBOSE=1 prints every step of (3); an argument (pubsub,
 * pingpong, steps, et, after, flags, ctl, shared) runs one scenario.
 */
#include "testlib.h"
#include "calls.h"

#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* $UEPOLL_TEST_STRICT=1: the documented differences fail too. */
static int t_strict;
/* $UEPOLL_TEST_VERBOSE=1: print every step of both runs. */
static int t_verbose;

/* ---- the two implementations -------------------------------------------- */

static const struct calls *const IMPLS[2] = { &calls_kernel, &calls_uepoll };

static int add(const struct calls *I, int ep, int fd, uint32_t events,
	       uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return I->ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static int wr64(const struct calls *I, int fd, uint64_t v)
{
	ssize_t r = I->write(fd, &v, sizeof(v));

	return r == sizeof(v) ? 0 : -1;
}

static short poll_now(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };
	int r = poll(&p, 1, 0);

	return r < 0 ? -1 : r == 0 ? 0 : p.revents;
}

/* ---- records: what a process saw, as int64s ----------------------------- */

#define REC_MAX 512
struct rec {
	int64_t n;
	int64_t v[REC_MAX];
};

static void rec_put(struct rec *r, int64_t x)
{
	if (r->n < REC_MAX)
		r->v[r->n++] = x;
}

/* Write all of buf (a pipe, in the child). */
static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

static void rec_send(int fd, const struct rec *r)
{
	size_t len = sizeof(r->n) + (size_t)r->n * sizeof(r->v[0]);

	if (write_all(fd, r, len))
		_exit(3);
}

/* Read the child's record from a pipe whose write end is closed here and
 * whose writer is gone: no wait. */
static int rec_recv(int fd, struct rec *r)
{
	char *p = (char *)r;
	size_t got = 0;

	memset(r, 0, sizeof(*r));
	for (;;) {
		ssize_t n = read(fd, p + got, sizeof(*r) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got < sizeof(r->n) || r->n < 0 || r->n > REC_MAX ||
	    got != sizeof(r->n) + (size_t)r->n * sizeof(r->v[0])) {
		fprintf(stderr, "bad record from the child (%zu bytes)\n", got);
		r->n = 0;
		return -1;
	}
	return 0;
}

/* ---- children: bounded -------------------------------------------------- */

#define CHILD_WATCHDOG 20 /* s */

static void child_start(struct t_child *c)
{
	if (t_child_fork(c) == 0)
		t_watchdog(CHILD_WATCHDOG);
}

/* Turn tokens between the processes: one byte through a pipe. */
static void tok_give(int fd)
{
	while (write(fd, "t", 1) != 1 && errno == EINTR)
		;
}

static int tok_take(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t deadline = t_now_ns() + (uint64_t)ms * 1000000u;
	char c;

	for (;;) {
		int left = (int)((int64_t)(deadline - t_now_ns()) / 1000000);
		int r = poll(&p, 1, left > 0 ? left : 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (read(fd, &c, 1) == 1)
			return 0;
		return -1;
	}
}

/* ---- 1. publisher / subscriber ------------------------------------------ */

enum { SUB_POLL, SUB_INSTANCE, SUB_NESTED };
static const char *const SUB_NAME[] = { "poll", "instance", "nested" };

struct pubsub {
	int64_t sum, bad, eagain, timeouts, child;
	int64_t fin_in, fin_inout, fin_read, fin_errno, fin_wait;
};

static void pubsub_run(const struct calls *I, int mode, int64_t n,
		       struct pubsub *o)
{
	int efd, ep = -1, inner = -1;
	struct t_child c;
	uint64_t one = 1, v, deadline;
	struct epoll_event ev[4];

	memset(o, 0, sizeof(*o));
	efd = I->eventfd(0, EFD_NONBLOCK);
	REQUIRE(efd >= 0);
	if (mode == SUB_INSTANCE) {
		ep = I->create1(0);
		REQUIRE(ep >= 0);
		CHECK_EQ(add(I, ep, efd, EPOLLIN, 0x5ab), 0);
	} else if (mode == SUB_NESTED) {
		ep = I->create1(0);
		inner = I->create1(0);
		REQUIRE(ep >= 0 && inner >= 0);
		CHECK_EQ(add(I, inner, efd, EPOLLIN, 0x1e), 0);
		CHECK_EQ(add(I, ep, inner, EPOLLIN, 0x5ab), 0);
	}
	child_start(&c);
	if (c.pid == 0) {
		uint64_t s = 0x9e3779b97f4a7c15ULL ^ (uint64_t)mode;
		int bad = 0;

		/* The child's copies of the instances go first: the parent's
		 * registrations live on (one epoll, referenced twice). */
		if (inner >= 0)
			bad |= I->close(inner) != 0;
		if (ep >= 0)
			bad |= I->close(ep) != 0;
		for (int64_t i = 0; i < n; i++) {
			if (I->write(efd, &one, sizeof(one)) != sizeof(one))
				bad = 1;
			if (t_rand(&s) % 1024 == 0)
				usleep(50 + (useconds_t)(t_rand(&s) % 200));
		}
		bad |= I->close(efd) != 0;
		_exit(bad ? 1 : 0);
	}
	deadline = t_now_ns() + 8000000000ull;
	while (o->sum < n) {
		int r;

		if (mode == SUB_POLL) {
			struct pollfd p = { .fd = efd, .events = POLLIN };

			r = poll(&p, 1, 1000);
			if (r < 0 && errno == EINTR)
				continue;
			if (r == 1 && p.revents != POLLIN)
				o->bad++;
		} else {
			r = I->wait(ep, ev, 4, 1000);
			if (r < 0 && errno == EINTR)
				continue;
			if (r > 0 && (r != 1 || ev[0].events != EPOLLIN ||
				      ev[0].data.u64 != 0x5ab))
				o->bad++;
		}
		if (r < 0) {
			o->bad++;
			break;
		}
		if (r == 0) {
			o->timeouts++;
			/* The child is gone and nothing is readable, or
			 * it is all taking too long: what was read stays. */
			if ((t_child_ended(&c) && !(poll_now(efd, POLLIN) & POLLIN)) ||
			    t_now_ns() > deadline)
				break;
			continue;
		}
		r = (int)I->read(efd, &v, sizeof(v));
		if (r == sizeof(v))
			o->sum += (int64_t)v;
		else if (errno == EAGAIN)
			o->eagain++;
		else
			o->bad++;
		if (t_now_ns() > deadline)
			break;
	}
	o->child = t_child_reap(&c, 5000, "pubsub");
	o->fin_in = poll_now(efd, POLLIN);
	o->fin_inout = poll_now(efd, POLLIN | POLLOUT);
	errno = 0;
	o->fin_read = I->read(efd, &v, sizeof(v));
	o->fin_errno = errno;
	if (ep >= 0)
		o->fin_wait = I->wait(ep, ev, 4, 0);
	if (inner >= 0)
		CHECK_EQ(I->close(inner), 0);
	if (ep >= 0)
		CHECK_EQ(I->close(ep), 0);
	CHECK_EQ(I->close(efd), 0);
}

static void test_pubsub(void)
{
	int64_t n = (int64_t)(20000 * t_scale());

	if (n < 1000)
		n = 1000;
	for (int mode = SUB_POLL; mode <= SUB_NESTED; mode++) {
		struct pubsub o[2];

		for (int k = 0; k < 2; k++) {
			pubsub_run(IMPLS[k], mode, n, &o[k]);
			printf("pubsub %s %s: sum %" PRId64 "/%" PRId64
			       " eagain %" PRId64 " timeouts %" PRId64
			       " bad %" PRId64 "\n",
			       SUB_NAME[mode], IMPLS[k]->name, o[k].sum, n,
			       o[k].eagain, o[k].timeouts, o[k].bad);
			CHECK_EQ(o[k].sum, n);
			CHECK_EQ(o[k].bad, 0);
			CHECK_EQ(o[k].eagain, 0);
			CHECK_EQ(o[k].child, 0);
			CHECK_EQ(o[k].fin_in, 0);
			CHECK_EQ(o[k].fin_inout, POLLOUT);
			CHECK_EQ(o[k].fin_read, -1);
			CHECK_EQ(o[k].fin_errno, EAGAIN);
			CHECK_EQ(o[k].fin_wait, 0);
		}
		/* what must be identical (the number of reads and timeouts
		 * depends on timing) */
		CHECK_EQ(o[1].sum, o[0].sum);
		CHECK_EQ(o[1].eagain, o[0].eagain);
		CHECK_EQ(o[1].fin_in, o[0].fin_in);
		CHECK_EQ(o[1].fin_inout, o[0].fin_inout);
		CHECK_EQ(o[1].fin_read, o[0].fin_read);
		CHECK_EQ(o[1].fin_errno, o[0].fin_errno);
		CHECK_EQ(o[1].fin_wait, o[0].fin_wait);
	}
}

/* ---- 2. semaphore ping-pong --------------------------------------------- */

struct pingpong {
	int64_t bad, child_bad, child, fin_a, fin_b;
};

static void pingpong_run(const struct calls *I, int64_t rounds,
			 struct pingpong *o)
{
	int a = I->eventfd(0, EFD_SEMAPHORE), b = I->eventfd(0, EFD_SEMAPHORE);
	int res[2];
	struct t_child c;
	uint64_t v;
	struct rec r;

	memset(o, 0, sizeof(*o));
	REQUIRE(a >= 0 && b >= 0);
	REQUIRE(pipe(res) == 0);
	child_start(&c);
	if (c.pid == 0) {
		int64_t bad = 0;

		close(res[0]);
		for (int64_t i = 0; i < rounds; i++) {
			v = 0;
			if (I->read(a, &v, sizeof(v)) != sizeof(v) || v != 1)
				bad++;
			if (wr64(I, b, 1))
				bad++;
		}
		r.n = 0;
		rec_put(&r, bad);
		rec_send(res[1], &r);
		bad += I->close(a) != 0;
		bad += I->close(b) != 0;
		_exit(bad ? 1 : 0);
	}
	close(res[1]);
	/* A hang shows as the watchdog (main's, the child's own). */
	for (int64_t i = 0; i < rounds; i++) {
		if (wr64(I, a, 1))
			o->bad++;
		v = 0;
		if (I->read(b, &v, sizeof(v)) != sizeof(v) || v != 1)
			o->bad++;
	}
	o->child = t_child_reap(&c, 5000, "pingpong");
	if (rec_recv(res[0], &r) == 0 && r.n == 1)
		o->child_bad = r.v[0];
	else
		o->child_bad = -1;
	close(res[0]);
	o->fin_a = poll_now(a, POLLIN | POLLOUT);
	o->fin_b = poll_now(b, POLLIN | POLLOUT);
	CHECK_EQ(I->close(a), 0);
	CHECK_EQ(I->close(b), 0);
}

static void test_pingpong(void)
{
	int64_t rounds = (int64_t)(2000 * t_scale());
	struct pingpong o[2];

	if (rounds < 200)
		rounds = 200;
	for (int k = 0; k < 2; k++) {
		uint64_t t0 = t_now_ns();

		pingpong_run(IMPLS[k], rounds, &o[k]);
		printf("pingpong %s: %" PRId64 " rounds in %.1f ms\n",
		       IMPLS[k]->name, rounds, (t_now_ns() - t0) / 1e6);
		CHECK_EQ(o[k].bad, 0);
		CHECK_EQ(o[k].child_bad, 0);
		CHECK_EQ(o[k].child, 0);
		CHECK_EQ(o[k].fin_a, POLLOUT);
		CHECK_EQ(o[k].fin_b, POLLOUT);
	}
	CHECK(!memcmp(&o[0], &o[1], sizeof(o[0])));
}

/* ---- 3. step by step ---------------------------------------------------- */

enum op {
	OP_W,	 /* write arg */
	OP_R,	 /* read 8 bytes */
	OP_R4,	 /* read 4 bytes: EINVAL */
	OP_W4,	 /* write 4 bytes: EINVAL */
	OP_P,	 /* poll POLLIN|POLLOUT, now */
	OP_WL,	 /* wait(0) on the level-triggered instance */
	OP_WE,	 /* ... edge-triggered */
	OP_WO,	 /* ... oneshot */
	OP_WN,	 /* ... the outer of a nested pair */
	OP_FI,	 /* fdinfo: eventfd-count, eventfd-semaphore; O_NONBLOCK */
	OP_CL,	 /* close the eventfd (the last step of its process) */
	OP_MO,	 /* MOD the oneshot registration: armed again, data 0x34 */
	OP_DL,	 /* DEL the eventfd from the level-triggered instance */
	OP_AL,	 /* ADD it there again (EEXIST if it is there) */
	OP_MX,	 /* MOD in the level-triggered instance with EPOLLEXCLUSIVE */
};
static const char *const OP_NAME[] = { "write", "read", "read4", "write4",
				       "poll", "wait-lt", "wait-et",
				       "wait-oneshot", "wait-nested", "fdinfo",
				       "close", "mod-oneshot", "del-lt",
				       "add-lt", "mod-exclusive" };

struct step {
	char who; /* 'P' parent, 'C' child; pre-fork steps are the parent's */
	enum op op;
	uint64_t arg;
};

#define S(w, o) { w, o, 0 }
#define SW(w, v) { w, OP_W, v }

/* Taken before the fork in the "taken" variant: the edge-triggered and
 * oneshot registrations' first events, and a read. */
static const struct step PRE_TAKEN[] = {
	S('P', OP_WE), S('P', OP_WO), S('P', OP_WN), S('P', OP_P),
};
static const struct step PRE_NONE[] = { S('P', OP_P) };

static const struct step SCRIPT[] = {
	S('C', OP_FI), S('P', OP_FI), S('C', OP_P), S('P', OP_WL),
	S('C', OP_WE), S('P', OP_WO), S('C', OP_WN), S('P', OP_WE),
	S('C', OP_WO), S('P', OP_WN),
	S('C', OP_R), S('P', OP_P), S('P', OP_WL), SW('C', 5), S('P', OP_WE),
	S('C', OP_WE), S('P', OP_FI), S('P', OP_R), S('C', OP_R),
	S('C', OP_FI), S('P', OP_P), SW('C', 1), S('P', OP_WN), S('C', OP_WN),
	S('P', OP_WE), SW('P', 0xfffffffffffffffeull), S('C', OP_R4),
	SW('P', 0xffffffffffffffffull), S('C', OP_W4), SW('C', 0),
	S('P', OP_WE), S('C', OP_WE), S('P', OP_FI), S('C', OP_FI),
	S('C', OP_R), S('P', OP_R), S('C', OP_R), S('P', OP_R), S('C', OP_R),
	S('P', OP_R), S('C', OP_R), S('P', OP_P), S('C', OP_P), S('C', OP_WL),
	S('P', OP_WL), S('C', OP_WE), S('P', OP_WE), S('C', OP_WN),
	S('P', OP_AL), S('C', OP_MX), S('C', OP_MO), S('P', OP_WO),
	S('C', OP_WO), S('P', OP_DL), S('C', OP_WL), S('P', OP_AL),
	S('P', OP_WL), S('C', OP_AL), S('P', OP_DL), S('C', OP_DL),
	S('P', OP_AL),
	SW('P', 0xfffffffffffffffdull), S('C', OP_P), S('P', OP_WE),
	S('C', OP_FI), SW('C', 1), S('P', OP_P), S('C', OP_R),
	S('P', OP_R), SW('C', 7), S('C', OP_CL), S('P', OP_WL), S('P', OP_WE),
	S('P', OP_R), S('P', OP_FI), SW('P', 2), S('P', OP_WE),
	S('P', OP_WL), S('P', OP_WN), S('P', OP_R), S('P', OP_P),
};
#define NSCRIPT (sizeof(SCRIPT) / sizeof(SCRIPT[0]))
#define NV 4 /* values per step */

struct objs3 {
	int efd, lt, et, os, inner, outer;
};

static void fdinfo(int fd, int64_t *count, int64_t *sem)
{
	char path[64], line[256];
	FILE *f;

	*count = -1;
	*sem = -1;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "eventfd-count:", 14))
			*count = (int64_t)strtoull(line + 14, NULL, 16);
		else if (!strncmp(line, "eventfd-semaphore:", 18))
			*sem = strtoll(line + 18, NULL, 10);
	}
	fclose(f);
}

/* Do one step; its NV values. */
static void step_do(const struct calls *I, const struct objs3 *o,
		    const struct step *s, int64_t out[NV])
{
	struct epoll_event ev[4];
	uint64_t v = 0;
	uint32_t v4 = 1;
	int ep = -1;
	int64_t r;

	memset(out, 0, NV * sizeof(out[0]));
	out[0] = s->op;
	errno = 0;
	switch (s->op) {
	case OP_W:
		v = s->arg;
		r = I->write(o->efd, &v, sizeof(v));
		out[1] = r;
		out[2] = r < 0 ? errno : 0;
		return;
	case OP_R:
		r = I->read(o->efd, &v, sizeof(v));
		out[1] = r;
		out[2] = r < 0 ? errno : 0;
		out[3] = r < 0 ? 0 : (int64_t)v;
		return;
	case OP_R4:
		r = I->read(o->efd, &v4, sizeof(v4));
		out[1] = r;
		out[2] = r < 0 ? errno : 0;
		return;
	case OP_W4:
		r = I->write(o->efd, &v4, sizeof(v4));
		out[1] = r;
		out[2] = r < 0 ? errno : 0;
		return;
	case OP_P:
		out[1] = poll_now(o->efd, POLLIN | POLLOUT);
		return;
	case OP_WL:
		ep = o->lt;
		break;
	case OP_WE:
		ep = o->et;
		break;
	case OP_WO:
		ep = o->os;
		break;
	case OP_WN:
		ep = o->outer;
		break;
	case OP_FI:
		/* The counter's class (0, some, full): a ueventfd's kernel fd
		 * holds its class, not its value (MIRROR, SHARED). */
		fdinfo(o->efd, &out[1], &out[2]);
		if (out[1] != -1) { /* (-1: not found) */
			uint64_t u = (uint64_t)out[1];

			out[1] = u == 0 ? 0 : u >= 0xfffffffffffffffeULL ? 2 : 1;
		}
		out[3] = (fcntl(o->efd, F_GETFL) & O_NONBLOCK) != 0;
		return;
	case OP_CL:
		out[1] = I->close(o->efd);
		return;
	case OP_MO:
	case OP_DL:
	case OP_AL:
	case OP_MX: {
		static const struct {
			int ep_off, op;
			uint32_t events;
			uint64_t data;
		} c[] = {
			[OP_MO - OP_MO] = { 2, EPOLL_CTL_MOD,
					    EPOLLIN | EPOLLONESHOT, 0x34 },
			[OP_DL - OP_MO] = { 0, EPOLL_CTL_DEL, 0, 0 },
			[OP_AL - OP_MO] = { 0, EPOLL_CTL_ADD, EPOLLIN, 0x12 },
			[OP_MX - OP_MO] = { 0, EPOLL_CTL_MOD,
					    EPOLLIN | EPOLLEXCLUSIVE, 0x13 },
		};
		int eps[] = { o->lt, o->et, o->os };
		struct epoll_event e = { .events = c[s->op - OP_MO].events,
					 .data.u64 = c[s->op - OP_MO].data };

		r = I->ctl(eps[c[s->op - OP_MO].ep_off], c[s->op - OP_MO].op,
			   o->efd, &e);
		out[1] = r;
		out[2] = r < 0 ? errno : 0;
		return;
	}
	}
	r = I->wait(ep, ev, 4, 0);
	out[1] = r;
	if (r > 0) {
		out[2] = ev[0].events;
		out[3] = (int64_t)ev[0].data.u64;
	} else if (r < 0) {
		out[2] = errno;
	}
}

static void step_print(const char *tag, const struct step *s,
		       const int64_t v[NV])
{
	fprintf(stderr, "  %s %c %s", tag, s->who, OP_NAME[s->op]);
	if (s->op == OP_W)
		fprintf(stderr, " %#" PRIx64, s->arg);
	fprintf(stderr, ": %" PRId64 " %" PRId64 " %#" PRIx64 "\n", v[1], v[2],
		(uint64_t)v[3]);
}

/* The run's record: pre-fork steps, then the script's (the child's values
 * from its record), then the child's exit status. */
static void steps_run(const struct calls *I, unsigned initval, int flags,
		      const struct step *pre, size_t npre, int64_t *out)
{
	struct objs3 o;
	int pc[2], cp[2], res[2];
	struct t_child c;
	struct rec r;
	size_t i;

	o.efd = I->eventfd(initval, flags | EFD_NONBLOCK);
	o.lt = I->create1(0);
	o.et = I->create1(0);
	o.os = I->create1(0);
	o.inner = I->create1(0);
	o.outer = I->create1(0);
	REQUIRE(o.efd >= 0 && o.lt >= 0 && o.et >= 0 && o.os >= 0 &&
		o.inner >= 0 && o.outer >= 0);
	CHECK_EQ(add(I, o.lt, o.efd, EPOLLIN, 0x11), 0);
	CHECK_EQ(add(I, o.et, o.efd, EPOLLIN | EPOLLET, 0x22), 0);
	CHECK_EQ(add(I, o.os, o.efd, EPOLLIN | EPOLLONESHOT, 0x33), 0);
	CHECK_EQ(add(I, o.inner, o.efd, EPOLLIN, 0x44), 0);
	CHECK_EQ(add(I, o.outer, o.inner, EPOLLIN | EPOLLET, 0x55), 0);
	REQUIRE(pipe(pc) == 0 && pipe(cp) == 0 && pipe(res) == 0);
	for (i = 0; i < npre; i++)
		step_do(I, &o, &pre[i], out + i * NV);
	out += npre * NV;
	memset(out, 0, (NSCRIPT + 1) * NV * sizeof(*out));

	child_start(&c);
	if (c.pid == 0) {
		int closed = 0;

		close(pc[1]);
		close(cp[0]);
		close(res[0]);
		r.n = 0;
		for (i = 0; i < NSCRIPT; i++) {
			int64_t v[NV];

			if (SCRIPT[i].who != 'C') {
				if (tok_take(pc[0], 3000))
					_exit(2);
				continue;
			}
			step_do(I, &o, &SCRIPT[i], v);
			closed |= SCRIPT[i].op == OP_CL;
			for (int j = 0; j < NV; j++)
				rec_put(&r, v[j]);
			tok_give(cp[1]);
		}
		rec_send(res[1], &r);
		if (!closed)
			I->close(o.efd);
		I->close(o.outer);
		I->close(o.inner);
		I->close(o.os);
		I->close(o.et);
		I->close(o.lt);
		_exit(0);
	}
	close(pc[0]);
	close(cp[1]);
	close(res[1]);
	for (i = 0; i < NSCRIPT; i++) {
		if (SCRIPT[i].who != 'P') {
			if (tok_take(cp[0], 3000)) {
				fprintf(stderr, "steps %s: no turn back from the child at step %zu\n",
					I->name, i);
				t_failures++;
				break;
			}
			continue;
		}
		step_do(I, &o, &SCRIPT[i], out + i * NV);
		tok_give(pc[1]);
	}
	out[NSCRIPT * NV] = t_child_reap(&c, 5000, "steps");
	if (rec_recv(res[0], &r) == 0) {
		size_t k = 0;

		for (i = 0; i < NSCRIPT; i++)
			if (SCRIPT[i].who == 'C' && k + NV <= (size_t)r.n) {
				memcpy(out + i * NV, r.v + k,
				       NV * sizeof(*out));
				k += NV;
			}
	}
	close(pc[1]);
	close(cp[0]);
	close(res[0]);
	CHECK_EQ(I->close(o.outer), 0);
	CHECK_EQ(I->close(o.inner), 0);
	CHECK_EQ(I->close(o.os), 0);
	CHECK_EQ(I->close(o.et), 0);
	CHECK_EQ(I->close(o.lt), 0);
	CHECK_EQ(I->close(o.efd), 0);
}

static void test_steps(void)
{
	static int64_t rec[2][(sizeof(PRE_TAKEN) / sizeof(PRE_TAKEN[0]) +
			       NSCRIPT + 1) * NV];
	static const struct {
		const char *name;
		const struct step *pre;
		size_t npre;
	} pres[] = {
		{ "events taken before fork", PRE_TAKEN,
		  sizeof(PRE_TAKEN) / sizeof(PRE_TAKEN[0]) },
		{ "events pending at fork", PRE_NONE,
		  sizeof(PRE_NONE) / sizeof(PRE_NONE[0]) },
	};

	for (int sem = 0; sem < 2; sem++)
		for (size_t p = 0; p < 2; p++) {
			size_t npre = pres[p].npre, nrec = npre + NSCRIPT + 1;
			int bad = 0, known = 0, seen_we = 0, seen_wn = 0;

			for (int k = 0; k < 2; k++)
				steps_run(IMPLS[k], 3, sem ? EFD_SEMAPHORE : 0,
					  pres[p].pre, npre, rec[k]);
			for (size_t i = 0; i < nrec; i++) {
				const struct step *s =
					i < npre ? &pres[p].pre[i]
						 : &SCRIPT[i - npre];
				const int64_t *kv = rec[0] + i * NV;
				const int64_t *uv = rec[1] + i * NV;
				int first_edge = 0;

				if (i >= npre && i < nrec - 1) {
					if (s->op == OP_WE)
						first_edge = !seen_we++;
					if (s->op == OP_WN)
						first_edge = !seen_wn++;
				}
				if (t_verbose) {
					fprintf(stderr, "  step %zu:\n", i);
					if (i < nrec - 1) {
						step_print("kernel", s, kv);
						step_print("uepoll", s, uv);
					}
				}
				if (!memcmp(kv, uv, NV * sizeof(int64_t)))
					continue;
				/* Documented (port_demote_source): the demotion
				 * adds the kernel registration again, and an
				 * edge already taken comes once more; through
				 * a nested instance too. */
				if (first_edge && pres[p].pre == PRE_TAKEN &&
				    kv[1] == 0 && uv[1] == 1 && !t_strict) {
					fprintf(stderr, "steps (%s, %s): known difference: step %zu, %c %s after fork: kernel no event, uepoll one (the edge taken before fork, again)\n",
						sem ? "semaphore" : "plain",
						pres[p].name, i, s->who,
						OP_NAME[s->op]);
					known++;
					continue;
				}
				if (!bad++)
					fprintf(stderr, "steps (%s, %s): uepoll differs from the kernel:\n",
						sem ? "semaphore" : "plain",
						pres[p].name);
				if (i == nrec - 1) {
					fprintf(stderr, "  child status: kernel %" PRId64 ", uepoll %" PRId64 "\n",
						kv[0], uv[0]);
					continue;
				}
				fprintf(stderr, "  step %zu%s:\n", i,
					i < npre ? " (before fork)" : "");
				step_print("kernel", s, kv);
				step_print("uepoll", s, uv);
			}
			CHECK_EQ(bad, 0);
			CHECK_EQ(rec[0][(nrec - 1) * NV], 0);
			printf("steps %s, %s: %zu steps, %s%s\n",
			       sem ? "semaphore" : "plain", pres[p].name, nrec - 1,
			       bad ? "DIFFER" : "same",
			       known ? " but for the known extra edge" : "");
		}
}

/* ---- 4. edge-triggered registration across the fork --------------------- */

#define ET_NV 16

static void et_run(const struct calls *I, int taken, int64_t out[ET_NV])
{
	int efd = I->eventfd(2, EFD_NONBLOCK), ep = I->create1(0);
	int pc[2], cp[2];
	struct epoll_event ev[4];
	struct t_child c;
	uint64_t v = 0, t0;
	int k = 0;

	memset(out, 0, ET_NV * sizeof(out[0]));
	REQUIRE(efd >= 0 && ep >= 0);
	REQUIRE(pipe(pc) == 0 && pipe(cp) == 0);
	CHECK_EQ(add(I, ep, efd, EPOLLIN | EPOLLET, 0xe7e7), 0);
	if (taken)
		CHECK_EQ(I->wait(ep, ev, 4, 0), 1);
	child_start(&c);
	if (c.pid == 0) {
		int bad = 0;

		close(pc[1]);
		close(cp[0]);
		bad |= I->close(ep) != 0; /* the parent's registration stays */
		bad |= tok_take(pc[0], 3000);
		bad |= wr64(I, efd, 1);
		tok_give(cp[1]);
		bad |= tok_take(pc[0], 3000);
		bad |= wr64(I, efd, 1);
		tok_give(cp[1]);
		bad |= tok_take(pc[0], 3000);
		usleep(30000); /* the parent is asleep in its wait by now */
		bad |= wr64(I, efd, 1);
		bad |= I->close(efd) != 0;
		_exit(bad ? 1 : 0);
	}
	close(pc[0]);
	close(cp[1]);
	/* right after the fork: pending only if not taken before */
	out[k++] = I->wait(ep, ev, 4, 0);
	tok_give(pc[1]);
	CHECK_EQ(tok_take(cp[0], 3000), 0);
	out[k++] = I->wait(ep, ev, 4, 1000);
	out[k++] = ev[0].events;
	out[k++] = (int64_t)ev[0].data.u64;
	out[k++] = I->wait(ep, ev, 4, 0); /* one event per write */
	tok_give(pc[1]);
	CHECK_EQ(tok_take(cp[0], 3000), 0);
	memset(ev, 0, sizeof(ev));
	out[k++] = I->wait(ep, ev, 4, 1000);
	out[k++] = ev[0].events;
	out[k++] = (int64_t)ev[0].data.u64;
	out[k++] = I->wait(ep, ev, 4, 0);
	/* a blocking wait, woken by the child's write */
	tok_give(pc[1]);
	memset(ev, 0, sizeof(ev));
	t0 = t_now_ns();
	out[k++] = I->wait(ep, ev, 4, 3000);
	out[k++] = t_now_ns() - t0 < 2000000000ull; /* not the timeout */
	out[k++] = (int64_t)ev[0].data.u64;
	out[k++] = I->read(efd, &v, sizeof(v));
	out[k++] = (int64_t)v;
	out[k++] = I->wait(ep, ev, 4, 0);
	out[k++] = t_child_reap(&c, 5000, "et");
	close(pc[1]);
	close(cp[0]);
	CHECK_EQ(I->close(ep), 0);
	CHECK_EQ(I->close(efd), 0);
}

static void test_et(void)
{
	for (int taken = 1; taken >= 0; taken--) {
		int64_t o[2][ET_NV];

		et_run(&calls_kernel, taken, o[0]);
		et_run(&calls_uepoll, taken, o[1]);
		for (int i = 0; i < ET_NV; i++)
			if (i == 0 && taken && o[0][0] == 0 && o[1][0] == 1 &&
			    !t_strict) {
				fprintf(stderr, "et: known difference: the edge taken before fork comes again right after it (kernel: no event)\n");
			} else if (o[0][i] != o[1][i]) {
				fprintf(stderr, "et (initial edge %s before fork): value %d: kernel %" PRId64 ", uepoll %" PRId64 "\n",
					taken ? "taken" : "not taken", i,
					o[0][i], o[1][i]);
				t_failures++;
			}
		/* the kernel's: what the test means */
		CHECK_EQ(o[0][0], !taken);
		CHECK_EQ(o[0][1], 1);
		CHECK_EQ(o[0][3], 0xe7e7);
		CHECK_EQ(o[0][4], 0);
		CHECK_EQ(o[0][5], 1);
		CHECK_EQ(o[0][8], 0);
		CHECK_EQ(o[0][9], 1);
		CHECK_EQ(o[0][10], 1);
		CHECK_EQ(o[0][12], 8);
		CHECK_EQ(o[0][13], 5);
		CHECK_EQ(o[0][14], 0);
		CHECK_EQ(o[0][15], 0);
		printf("et (initial edge %s before fork): done\n",
		       taken ? "taken" : "not taken");
	}
}

/* ---- 5. objects made after the fork ------------------------------------- */

static void test_after_fork(void)
{
	int res[2], tok[2];
	struct t_child c;
	uint64_t v = 0;
	int u;

	REQUIRE(pipe(res) == 0 && pipe(tok) == 0);
	child_start(&c);
	if (c.pid == 0) {
		int bad = 0, ep, u2;
		struct epoll_event ev[2];
		struct t_child g;

		close(res[0]);
		close(tok[0]);
		u = ueventfd(0, EFD_NONBLOCK);
		ep = uepoll_create1(0);
		bad |= (u < 0 || ep < 0) << 0;
		bad |= (add(&calls_uepoll, ep, u, EPOLLIN, 0xc1) != 0) << 1;
		bad |= (ueventfd_write(u, 7) != 0) << 2;
		bad |= (uepoll_wait(ep, ev, 2, 1000) != 1 ||
			ev[0].data.u64 != 0xc1) << 3;
		bad |= ((poll_now(u, POLLIN) & POLLIN) == 0) << 4;
		tok_give(tok[1]); /* the parent writes its own now */
		usleep(20000);
		bad |= (ueventfd_read(u, &v) != 0 || v != 7) << 5;
		bad |= (ueventfd_read(u, &v) != -1 || errno != EAGAIN) << 6;
		bad |= (uepoll_wait(ep, ev, 2, 0) != 0) << 7;
		/* A second fork shares it with the grandchild too. */
		u2 = ueventfd(4, EFD_NONBLOCK | EFD_SEMAPHORE);
		bad |= (u2 < 0) << 8;
		bad |= (add(&calls_uepoll, ep, u2, EPOLLIN, 0xc2) != 0) << 9;
		child_start(&g);
		if (g.pid == 0) {
			int gb = 0;

			gb |= ueventfd_read(u2, &v) != 0 || v != 1;
			gb |= ueventfd_write(u, 3) != 0;
			gb |= uepoll_close(u2) != 0 || uepoll_close(u) != 0;
			gb |= uepoll_close(ep) != 0;
			_exit(gb);
		}
		bad |= (t_child_reap(&g, 5000, "grandchild") != 0) << 10;
		/* what the grandchild took and wrote, here */
		bad |= (uepoll_wait(ep, ev, 2, 0) != 2) << 11;
		bad |= (ueventfd_read(u, &v) != 0 || v != 3) << 12;
		for (int i = 0; i < 3; i++)
			bad |= (ueventfd_read(u2, &v) != 0 || v != 1) << 13;
		bad |= (ueventfd_read(u2, &v) != -1 || errno != EAGAIN) << 14;
		bad |= (uepoll_close(u2) != 0) << 15;
		bad |= (uepoll_close(u) != 0) << 16;
		bad |= (uepoll_close(ep) != 0) << 17;
		if (write_all(res[1], &bad, sizeof(bad)))
			_exit(3);
		_exit(bad ? 1 : 0);
	}
	close(res[1]);
	close(tok[1]);
	u = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(u >= 0);
	CHECK_EQ(tok_take(tok[0], 3000), 0);
	CHECK_EQ(ueventfd_write(u, 11), 0);
	CHECK_EQ(ueventfd_read(u, &v), 0);
	CHECK_EQ(v, 11); /* not the child's 7 */
	CHECK_EQ(t_child_reap(&c, 5000, "after fork"), 0);
	{
		int bad = -1;

		if (read(res[0], &bad, sizeof(bad)) != sizeof(bad))
			bad = -1;
		if (bad)
			fprintf(stderr, "after fork: child's failed checks %#x\n",
				bad);
		CHECK_EQ(bad, 0);
	}
	CHECK_ERR(ueventfd_read(u, &v), EAGAIN);
	CHECK_EQ(uepoll_close(u), 0);
	close(res[0]);
	close(tok[0]);
	printf("after fork: done\n");
}

/* ---- 6. a post-fork ueventfd in a pre-fork instance, both waiting ------- */

/*
 * The instance's kernel epoll and doorbell are shared after the fork, its
 * userspace state is not.  The child adds a ueventfd of its own to its copy
 * and waits; the parent then waits on its copy, so that it is the last to
 * sleep in the shared kernel epoll (which wakes the last exclusive waiter
 * first); a thread of the child writes the ueventfd.  The child's wait must
 * return at once, not at its timeout.  (With kernel objects both would see
 * the child's eventfd: one epoll.)
 */
struct s6 {
	int u, tid;
};

static void *s6_writer(void *arg)
{
	struct s6 *s = arg;

	t_wait_sleeping(s->tid, 2000);	/* the child's wait */
	usleep(60000); /* the parent saw the child asleep, */
	t_wait_sleeping((int)getppid(), 2000); /* and sleeps in its wait */
	CHECK_EQ(ueventfd_write(s->u, 1), 0);
	return NULL;
}

static void test_shared_instance(void)
{
	int ep = uepoll_create1(0), res[2], tok[2];
	struct epoll_event ev[2];
	struct t_child c;
	int64_t parent_events = 0, waits = 0;
	uint64_t deadline;

	REQUIRE(ep >= 0);
	REQUIRE(pipe(res) == 0 && pipe(tok) == 0);
	child_start(&c);
	if (c.pid == 0) {
		struct s6 s;
		pthread_t th;
		int64_t out[3] = { -1, -1, -1 };
		uint64_t t0;

		close(res[0]);
		close(tok[0]);
		s.u = ueventfd(0, EFD_NONBLOCK);
		s.tid = t_gettid();
		if (s.u < 0 || add(&calls_uepoll, ep, s.u, EPOLLIN, 0x66))
			_exit(2);
		if (pthread_create(&th, NULL, s6_writer, &s))
			_exit(2);
		tok_give(tok[1]);
		t0 = t_now_ns();
		out[0] = uepoll_wait(ep, ev, 2, 3000);
		out[1] = (int64_t)((t_now_ns() - t0) / 1000000);
		out[2] = out[0] > 0 ? (int64_t)ev[0].data.u64 : 0;
		if (!t_join_within(th, 3000))
			_exit(2);
		if (write_all(res[1], out, sizeof(out)))
			_exit(3);
		uepoll_close(s.u);
		uepoll_close(ep);
		_exit(t_failures ? 1 : 0);
	}
	close(res[1]);
	close(tok[1]);
	CHECK_EQ(tok_take(tok[0], 3000), 0);
	t_wait_sleeping((int)c.pid, 2000); /* the child is in its wait */
	deadline = t_now_ns() + 6000000000ull;
	while (!t_child_ended(&c) && t_now_ns() < deadline) {
		int n = uepoll_wait(ep, ev, 2, 300);

		waits++;
		if (n > 0)
			parent_events += n;
	}
	CHECK_EQ(t_child_reap(&c, 5000, "shared instance"), 0);
	{
		int64_t out[3] = { -1, -1, -1 };

		if (read(res[0], out, sizeof(out)) != sizeof(out))
			out[0] = -2;
		printf("shared instance: child's wait %" PRId64 " event(s) in %" PRId64
		       " ms (data %#" PRIx64 "); parent: %" PRId64
		       " event(s) in %" PRId64 " waits (kernel: the child's eventfd too)\n",
		       out[0], out[1], (uint64_t)out[2], parent_events, waits);
		CHECK_EQ(out[0], 1);
		CHECK_EQ(out[2], 0x66);
		if (out[1] > 1000) {
			fprintf(stderr, "shared instance: known difference: the child's wait returned after %" PRId64
				" ms, not at the write: its wakeup went to the parent's wait on the shared doorbell\n",
				out[1]);
			if (t_strict)
				t_failures++;
		}
	}
	close(res[0]);
	close(tok[0]);
	CHECK_EQ(uepoll_close(ep), 0);
}

/* ---- 7. registration flags across the demotion -------------------------- */

#define NFLAG 5
static const struct {
	const char *name;
	uint32_t u, k; /* uepoll's registration, the kernel's */
} FLAGS[NFLAG] = {
	{ "exclusive", EPOLLIN | EPOLLEXCLUSIVE, EPOLLIN | EPOLLEXCLUSIVE },
	{ "roundrobin", EPOLLIN | EPOLLEXCLUSIVE | EPOLLROUNDROBIN,
	  EPOLLIN | EPOLLEXCLUSIVE },
	{ "urgent", EPOLLIN | EPOLLURGENT, EPOLLIN },
	{ "in|out|rdhup|pri", EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI,
	  EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI },
	{ "out", EPOLLOUT, EPOLLOUT },
};
#define FL_NV (NFLAG * 3 * 4 + 3)

static void flags_run(const struct calls *I, int64_t out[FL_NV])
{
	int efd = I->eventfd(0, EFD_NONBLOCK), ep[NFLAG], pc[2], cp[2], k = 0;
	struct epoll_event ev[4];
	struct t_child c;
	uint64_t v = 0;

	memset(out, 0, FL_NV * sizeof(out[0]));
	REQUIRE(efd >= 0);
	REQUIRE(pipe(pc) == 0 && pipe(cp) == 0);
	for (int i = 0; i < NFLAG; i++) {
		ep[i] = I->create1(0);
		REQUIRE(ep[i] >= 0);
		CHECK_EQ(add(I, ep[i], efd,
			     I == &calls_uepoll ? FLAGS[i].u : FLAGS[i].k,
			     0xa0 + (uint64_t)i), 0);
	}
	child_start(&c);
	if (c.pid == 0) {
		int bad = 0;

		close(pc[1]);
		close(cp[0]);
		for (int i = 0; i < NFLAG; i++)
			bad |= I->close(ep[i]) != 0;
		bad |= tok_take(pc[0], 3000);
		bad |= wr64(I, efd, 1);
		tok_give(cp[1]);
		bad |= I->close(efd) != 0;
		_exit(bad);
	}
	close(pc[0]);
	close(cp[1]);
	/* wait before the write, after it, MOD (to EPOLLIN) then wait */
	for (int round = 0; round < 3; round++) {
		if (round == 1) {
			tok_give(pc[1]);
			CHECK_EQ(tok_take(cp[0], 3000), 0);
		}
		for (int i = 0; i < NFLAG; i++) {
			int r;

			if (round == 2) {
				struct epoll_event e = { .events = EPOLLIN,
							 .data.u64 = 0xb0 + (uint64_t)i };

				errno = 0;
				r = I->ctl(ep[i], EPOLL_CTL_MOD, efd, &e);
				out[k++] = r < 0 ? -errno : r;
			} else {
				k++;
			}
			memset(ev, 0, sizeof(ev));
			out[k++] = I->wait(ep[i], ev, 4, 0);
			out[k++] = ev[0].events;
			out[k++] = (int64_t)ev[0].data.u64;
		}
	}
	out[k++] = I->read(efd, &v, sizeof(v));
	out[k++] = (int64_t)v;
	out[k++] = t_child_reap(&c, 5000, "flags");
	close(pc[1]);
	close(cp[0]);
	for (int i = 0; i < NFLAG; i++)
		CHECK_EQ(I->close(ep[i]), 0);
	CHECK_EQ(I->close(efd), 0);
}

static void test_flags(void)
{
	int64_t o[2][FL_NV];
	int bad = 0;

	flags_run(&calls_kernel, o[0]);
	flags_run(&calls_uepoll, o[1]);
	for (int i = 0; i < FL_NV; i++) {
		if (o[0][i] == o[1][i])
			continue;
		bad++;
		if (i < NFLAG * 3 * 4)
			fprintf(stderr, "flags: %s, round %d (%s), %s: kernel %" PRId64 ", uepoll %" PRId64 "\n",
				FLAGS[(i / 4) % NFLAG].name, i / (4 * NFLAG),
				i / (4 * NFLAG) == 0 ? "before the write"
				: i / (4 * NFLAG) == 1 ? "after it" : "after MOD",
				(const char *[]){ "mod", "wait n", "events",
						  "data" }[i % 4],
				o[0][i], o[1][i]);
		else
			fprintf(stderr, "flags: value %d: kernel %" PRId64 ", uepoll %" PRId64 "\n",
				i, o[0][i], o[1][i]);
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(o[0][FL_NV - 1], 0);
	printf("flags: %s\n", bad ? "DIFFER" : "same");
}

/* ---- 8. ctl on the shared instance from the other process -------------- */

/*
 * An instance made before the fork is one kernel epoll in both processes:
 * a registration the child adds is the parent's too.  The parent then
 * deletes the registration it had (the demoted eventfd's), so that the
 * child's is the only one: a zero-timeout wait must still report it, and
 * so must a blocking one.
 */
#define CX_NV 8

static void ctlx_run(const struct calls *I, int64_t out[CX_NV])
{
	int efd = I->eventfd(1, EFD_NONBLOCK), ep = I->create1(0), p[2], k = 0;
	struct epoll_event ev[4];
	struct t_child c;

	memset(out, 0, CX_NV * sizeof(out[0]));
	REQUIRE(efd >= 0 && ep >= 0);
	REQUIRE(pipe(p) == 0);
	CHECK_EQ(add(I, ep, efd, EPOLLIN, 1), 0);
	child_start(&c);
	if (c.pid == 0) {
		int bad = 0;

		bad |= add(I, ep, p[0], EPOLLIN, 3) != 0;
		bad |= write(p[1], "x", 1) != 1;
		bad |= I->close(ep) != 0;
		bad |= I->close(efd) != 0;
		_exit(bad);
	}
	out[k++] = t_child_reap(&c, 5000, "ctl from the child");
	errno = 0;
	out[k++] = I->ctl(ep, EPOLL_CTL_DEL, efd, NULL) ? -errno : 0;
	memset(ev, 0, sizeof(ev));
	out[k++] = I->wait(ep, ev, 4, 0);
	out[k++] = (int64_t)ev[0].data.u64;
	memset(ev, 0, sizeof(ev));
	out[k++] = I->wait(ep, ev, 4, 100);
	out[k++] = (int64_t)ev[0].data.u64;
	errno = 0;
	out[k++] = I->ctl(ep, EPOLL_CTL_DEL, p[0], NULL) ? -errno : 0;
	out[k++] = I->wait(ep, ev, 4, 0);
	close(p[0]);
	close(p[1]);
	CHECK_EQ(I->close(ep), 0);
	CHECK_EQ(I->close(efd), 0);
}

static void test_ctl_other(void)
{
	static const char *const what[CX_NV] = {
		"child status", "parent's DEL of the eventfd",
		"wait(0): events", "wait(0): data", "wait(100): events",
		"wait(100): data", "DEL of the child's pipe", "wait(0) after"
	};
	int64_t o[2][CX_NV];
	int bad = 0;

	ctlx_run(&calls_kernel, o[0]);
	ctlx_run(&calls_uepoll, o[1]);
	for (int i = 0; i < CX_NV; i++)
		if (o[0][i] != o[1][i]) {
			fprintf(stderr, "ctl from the child: %s: kernel %" PRId64 ", uepoll %" PRId64 "\n",
				what[i], o[0][i], o[1][i]);
			bad++;
		}
	CHECK_EQ(bad, 0);
	CHECK_EQ(o[0][2], 1);
	CHECK_EQ(o[0][3], 3);
	printf("ctl from the child: %s\n", bad ? "DIFFER" : "same");
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;

	t_begin("t_fork_share");
	t_watchdog(60);
	t_strict = getenv("UEPOLL_TEST_STRICT") &&
		   atoi(getenv("UEPOLL_TEST_STRICT")) > 0;
	t_verbose = getenv("UEPOLL_TEST_VERBOSE") &&
		    atoi(getenv("UEPOLL_TEST_VERBOSE")) > 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!only || !strcmp(only, "pubsub"))
		test_pubsub();
	if (!only || !strcmp(only, "pingpong"))
		test_pingpong();
	if (!only || !strcmp(only, "steps"))
		test_steps();
	if (!only || !strcmp(only, "et"))
		test_et();
	if (!only || !strcmp(only, "after"))
		test_after_fork();
	if (!only || !strcmp(only, "flags"))
		test_flags();
	if (!only || !strcmp(only, "ctl"))
		test_ctl_other();
	if (!only || !strcmp(only, "shared"))
		test_shared_instance();
	return t_end();
}
