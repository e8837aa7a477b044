/*
 * t_xproc_kill: a process that shares a ueventfd is SIGKILLed at any
 * point; the other must never hang and the counter must stay consistent
 * (issue 21).
 *
 * For each kind of ueventfd (plain, EFD_SEMAPHORE, coalesced 1 ms,
 * coalesced 1 ms with UEVENTFD_HOLD_WRITES; the setting made before the
 * first fork), for about half a second each: a child writes, reads and
 * polls the ueventfd in a tight loop (noting in shared memory what it has
 * written and read, and the operation it is in); the parent SIGKILLs it
 * after 0-2 ms and then checks, every step under a deadline:
 *  1. the counter is what the child's completed operations left (give or
 *     take the one it was killed in), within 2 s (held writes may show
 *     late);
 *  2. a write of 1, then poll(POLLIN) reports it readable;
 *  3. a read returns >= 1 (a semaphore's: 1);
 *  4. a non-blocking read then gives EAGAIN and poll() reports not readable
 *     (retried for up to 2 s: the library may need an operation to repair
 *     what the killed process left);
 *  5. every 8th round: a second child blocked in read is woken by a write
 *     of the parent.
 * Then children blocked in read, in poll(), in a uepoll instance made after
 * the fork and in a write on a full counter are killed, with the same
 * checks.  A hang prints the step (xproc.h) and fails.  No timing is
 * asserted.  $UEPOLL_TEST_SEED replays the random delays.
 */
#include "xproc.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/mman.h>

#define MAXV 0xfffffffffffffffeull
#define DEADLINE_MS 2000
#define ROUND_MS 500 /* random kills per kind of ueventfd */
#define MAX_ROUNDS 400

enum { OP_NONE, OP_WRITE, OP_READ };

/* What the child did, in shared memory: it survives the SIGKILL. */
struct shared {
	_Atomic uint64_t written, read; /* completed operations' values */
	_Atomic int op;                 /* the operation in progress */
	_Atomic uint64_t arg;           /* its value (a write's) */
	_Atomic uint64_t ops;
};

static struct shared *sh;

struct kind {
	const char *name;
	int flags;
	uint32_t delay_us, co_flags;
};

static const struct kind KINDS[] = {
	{ "plain", 0, 0, 0 },
	{ "semaphore", EFD_SEMAPHORE, 0, 0 },
	{ "coalesce 1 ms", 0, 1000, 0 },
	{ "coalesce 1 ms + HOLD_WRITES", 0, 1000, UEVENTFD_HOLD_WRITES },
};

static const struct kind *cur;
static int round_no;
static const char *killed_in = "";

static void fail_at(const char *step, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail_at(const char *step, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL: %s, round %d (child killed %s): %s: ",
		cur->name, round_no, killed_in, step);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	t_failures++;
}

/* A read: 0 with the value in *v, or -errno. */
static int rd(int fd, uint64_t *v)
{
	*v = 0;
	return uepoll_read(fd, v, sizeof(*v)) == sizeof(*v) ? 0 : -errno;
}

/* A read of a value that fits a long: the value, or -errno. */
static long rd64(int fd)
{
	uint64_t v;
	int r = rd(fd, &v);

	return r ? r : (long)v;
}

static long wr64(int fd, uint64_t v)
{
	return uepoll_write(fd, &v, sizeof(v)) == sizeof(v) ? 0 : -errno;
}

static void set_nonblock(int fd, int on)
{
	CHECK_EQ(uepoll_fcntl(fd, F_SETFL, on ? O_NONBLOCK : 0), 0);
}

/* ---- the child's loop ----------------------------------------------------- */

static _Noreturn void busy_child(int efd, uint64_t seed)
{
	uint64_t s = seed;

	x_step(cur->name, "the busy child (killed before this)");
	for (;;) {
		unsigned r = (unsigned)(t_rand(&s) % 100);

		if (r < 50) {
			uint64_t v = r < 45 ? 1 : 3;

			atomic_store(&sh->arg, v);
			atomic_store(&sh->op, OP_WRITE);
			if (wr64(efd, v) == 0)
				atomic_fetch_add(&sh->written, v);
			atomic_store(&sh->op, OP_NONE);
		} else if (r < 90) {
			long v;

			atomic_store(&sh->op, OP_READ);
			v = rd64(efd);
			if (v > 0)
				atomic_fetch_add(&sh->read, (uint64_t)v);
			atomic_store(&sh->op, OP_NONE);
		} else {
			x_poll(efd, POLLIN | POLLOUT, 0);
		}
		atomic_fetch_add(&sh->ops, 1);
	}
}

/* ---- the checks after a kill ---------------------------------------------- */

/* Is c a counter the killed child may have left? */
static int counter_ok(uint64_t c)
{
	uint64_t w = atomic_load(&sh->written), r = atomic_load(&sh->read);
	uint64_t base = w - r;
	int op = atomic_load(&sh->op);

	if (c == base)
		return 1;
	if (op == OP_WRITE) /* done or not */
		return c == base + atomic_load(&sh->arg);
	if (op == OP_READ) { /* took 1 (semaphore) or all */
		/* Held writes (HOLD): a read takes what is shown, the rest
		 * is shown later: anything from 0 to base is left. */
		if (cur->co_flags & UEVENTFD_HOLD_WRITES)
			return c <= base;
		return cur->flags & EFD_SEMAPHORE ? c + 1 == base : c == 0;
	}
	return 0;
}

/* 1: the counter after the kill, a write, poll, read, EAGAIN, not
 * readable.  efd is non-blocking. */
static void check_alive(int efd)
{
	uint64_t deadline = t_now_ns() + DEADLINE_MS * 1000000ull, c = 0, u;
	long v;
	int rev, ok = 0, r;

	x_step(cur->name, "drain what the killed child left");
	while (t_now_ns() < deadline) {
		r = rd(efd, &u);
		if (r == 0) {
			c += u;
			continue;
		}
		if (r != -EAGAIN) {
			fail_at("drain", "read: %d", r);
			break;
		}
		if (counter_ok(c)) {
			ok = 1;
			break;
		}
		usleep(1000); /* held writes show within the delay */
	}
	if (!ok)
		fail_at("drain", "counter %" PRIu64 " after the kill; the child wrote %" PRIu64
			", read %" PRIu64 ", was in %s (%" PRIu64 ")",
			c, atomic_load(&sh->written), atomic_load(&sh->read),
			atomic_load(&sh->op) == OP_WRITE  ? "a write"
			: atomic_load(&sh->op) == OP_READ ? "a read"
							  : "nothing",
			atomic_load(&sh->arg));

	x_step(cur->name, "write 1 after the kill");
	v = wr64(efd, 1);
	if (v)
		fail_at("write 1", "%ld", v);
	x_step(cur->name, "poll(POLLIN) after the write");
	rev = x_poll(efd, POLLIN, DEADLINE_MS);
	if (!(rev & POLLIN))
		fail_at("poll after the write", "revents %#x: not readable", rev);
	x_step(cur->name, "read after the write");
	v = rd64(efd);
	if (v < 1 || ((cur->flags & EFD_SEMAPHORE) && v != 1))
		fail_at("read after the write", "%ld", v);

	x_step(cur->name, "EAGAIN and not readable");
	deadline = t_now_ns() + DEADLINE_MS * 1000000ull;
	for (int tries = 0;; tries++) {
		v = rd64(efd);
		rev = x_poll(efd, POLLIN, 0);
		if (v == -EAGAIN && !(rev & POLLIN)) {
			if (tries)
				printf("%s, round %d: empty after %d retries\n",
				       cur->name, round_no, tries);
			break;
		}
		if (v > 0)
			fail_at("EAGAIN", "a value %ld after the counter was drained", v);
		if (t_now_ns() > deadline) {
			fail_at("EAGAIN and not readable",
				"read %ld, poll revents %#x after %d retries", v,
				rev, tries);
			break;
		}
		usleep(1000);
	}
	x_step_end();
}

/* 5: a second child blocked in read, woken by the parent's write. */
static void check_blocked_reader(int efd)
{
	struct t_child c;
	int st;

	set_nonblock(efd, 0);
	if (x_fork(&c) == 0) {
		x_step(cur->name, "the second child's blocked read");
		_exit(rd64(efd) == 1 ? 0 : 1);
	}
	t_wait_sleeping((int)c.pid, 3000);
	x_step(cur->name, "write for the second child");
	CHECK_EQ(wr64(efd, 1), 0);
	x_step_end();
	st = t_child_reap(&c, DEADLINE_MS + 3000, "second child's blocked read");
	if (st)
		fail_at("a blocked read in a second child", "status %d", st);
	set_nonblock(efd, 1);
	if (x_poll(efd, POLLIN, 0) & POLLIN)
		fail_at("after the second child", "still readable");
}

/* ---- the rounds ----------------------------------------------------------- */

static void random_kills(int efd, uint64_t *seed)
{
	uint64_t end = t_now_ns() + ROUND_MS * 1000000ull, ops = 0;
	int n = 0;

	killed_in = "at random";
	for (round_no = 0; round_no < MAX_ROUNDS && t_now_ns() < end;
	     round_no++) {
		struct t_child c;
		uint64_t s = t_rand(seed);

		memset(sh, 0, sizeof(*sh));
		if (x_fork(&c) == 0)
			busy_child(efd, s | 1);
		usleep((useconds_t)(t_rand(seed) % 2001));
		t_child_kill(&c);
		ops += atomic_load(&sh->ops);
		n++;
		check_alive(efd);
		if (round_no % 8 == 7)
			check_blocked_reader(efd);
	}
	check_blocked_reader(efd);
	printf("%s: %d children killed at random (%" PRIu64 " operations in all)\n",
	       cur->name, n, ops);
}

enum blocked { B_READ, B_POLL, B_INSTANCE, B_WRITE, B_N };
static const char *const B_NAME[B_N] = { "blocked in read", "blocked in poll",
					 "blocked in an instance",
					 "blocked in a write (full counter)" };

static void blocked_kills(int efd)
{
	for (int b = 0; b < B_N; b++) {
		struct t_child c;

		/* a full semaphore would take 2^64 reads to drain */
		if (b == B_WRITE && (cur->flags & EFD_SEMAPHORE))
			continue;
		killed_in = B_NAME[b];
		round_no = -1;
		memset(sh, 0, sizeof(*sh));
		if (b == B_WRITE) {
			CHECK_EQ(wr64(efd, MAXV), 0);
			atomic_store(&sh->written, MAXV);
		}
		set_nonblock(efd, 0);
		if (x_fork(&c) == 0) {
			long v = 0;

			x_step(cur->name, B_NAME[b]);
			if (b == B_READ) {
				atomic_store(&sh->op, OP_READ);
				v = rd64(efd);
			} else if (b == B_POLL) {
				v = x_poll(efd, POLLIN, -1);
			} else if (b == B_INSTANCE) {
				int ep = uepoll_create1(0);
				struct epoll_event ev = { .events = EPOLLIN };

				if (ep < 0 || uepoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev))
					_exit(2);
				v = uepoll_wait(ep, &ev, 1, -1);
			} else {
				atomic_store(&sh->arg, 1);
				atomic_store(&sh->op, OP_WRITE);
				v = wr64(efd, 1);
			}
			_exit(v == 0 ? 3 : 4); /* woken: not what is tested */
		}
		if (!t_wait_sleeping((int)c.pid, 3000))
			fprintf(stderr, "%s: %s: the child was not seen asleep\n",
				cur->name, B_NAME[b]);
		t_child_kill(&c);
		if (c.status != 128 + SIGKILL)
			fail_at(B_NAME[b], "the child ended by itself (%d)",
				c.status);
		set_nonblock(efd, 1);
		check_alive(efd);
		check_blocked_reader(efd);
	}
	printf("%s: children killed while blocked: checked\n", cur->name);
}

int main(void)
{
	uint64_t seed;

	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_begin("t_xproc_kill");
	x_init();
	seed = t_seed((uint64_t)t_now_ns());
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(sh != MAP_FAILED);
	for (size_t k = 0; k < sizeof(KINDS) / sizeof(KINDS[0]); k++) {
		int efd = ueventfd(0, EFD_NONBLOCK | KINDS[k].flags);

		cur = &KINDS[k];
		REQUIRE(efd >= 0);
		if (cur->delay_us) {
			struct ueventfd_coalesce co = { .delay_us = cur->delay_us,
							.flags = cur->co_flags };

			CHECK_EQ(ueventfd_coalesce(efd, &co, NULL), 0);
		}
		random_kills(efd, &seed);
		blocked_kills(efd);
		CHECK_EQ(uepoll_close(efd), 0);
	}
	munmap(sh, sizeof(*sh));
	return t_end();
}
