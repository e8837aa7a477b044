/*
 * t_xproc_steps: a process sharing a ueventfd is killed, or stopped, at
 * every system call of one operation, before it or after it, and the
 * other process's view stays the kernel's (issue 36: the C twins of
 * models/xmirror.pml's mutants RAISE_AFTER, DRAIN_BEFORE, LOWER_FIRST,
 * NO_REPAIR, NO_FRESH, WAIT_STOPPED).
 *
 * For each operation (a write from 0, a fill, a read that empties, of a
 * plain and a semaphore counter, from several starting values) and each
 * step k (the child's k-th system call in the operation, hooked through
 * libcwrap.h, before or after it), a child forked after the counter was
 * set (the ueventfd is shared from that fork) does the operation:
 *  - KILL: the child SIGKILLs itself there.  Then, before any other
 *    operation, poll(2) on the fd (the kernel fd: what every other program
 *    sees) must say readable if a read finds a value (models/xmirror.pml:
 *    count > 0 => K > 0 at every step; RAISE_AFTER, DRAIN_BEFORE and
 *    LOWER_FIRST break it); after that read (which takes the lock and
 *    repairs what the dead holder left: NO_REPAIR) the fd's readiness is
 *    exactly the counter's.
 *  - STOP: the child SIGSTOPs itself there (it may hold the cross-process
 *    lock).  The parent makes its own operations (each a bypass if the
 *    child holds the lock), which must never wait for the stopped child
 *    (no timed wait for the lock: WAIT_STOPPED), with the same check before
 *    each read; then it continues the child, whose operation ends, and the
 *    fd's readiness must be exactly the counter's, the values balanced
 *    (NO_FRESH: a holder that trusts its belief of the kernel fd after a
 *    bypass leaves it not readable over a counter).
 * A hang prints its step (xproc.h).  No timing is asserted: a stopped
 * child is seen stopped by waitpid, and the lock waits are counted.
 */
#include "libcwrap.h"
#include "xproc.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#define FULL 0xfffffffffffffffeull
#define MAXSTEPS 24

enum how { KILL, STOP, SIGNAL };

struct op {
	const char *name;
	int sem;
	uint64_t init;
	uint64_t write; /* 0: the child reads */
};

static const struct op OPS[] = {
	{ "write 1 to 0", 0, 0, 1 },
	{ "write 1 to 0, semaphore", 1, 0, 1 },
	{ "fill from 0", 0, 0, FULL },
	{ "fill from 1", 0, 1, FULL - 1 },
	{ "read of 1", 0, 1, 0 },
	{ "read of 3", 0, 3, 0 },
	{ "read of 1, semaphore", 1, 1, 0 },
	{ "read of the maximum", 0, FULL, 0 },
	{ "read of the maximum, semaphore", 1, FULL, 0 },
};

/* What the parent does while the child is stopped: W a write of 1, R a
 * non-blocking read. */
static const char *const SEQS[] = { "R", "W", "WR", "RW", "WRW" };

/* The child's report, in shared memory (it survives a kill). */
struct report {
	_Atomic int done;     /* the operation returned */
	_Atomic int64_t res;  /* its result */
	_Atomic uint64_t got; /* a read's value */
	_Atomic int reached;  /* step k reached */
	_Atomic int64_t hres; /* SIGNAL: the handler's write's result */
};

static struct report *rep;
static int child_fd;
static int step_k, step_after, step_n;
static enum how step_how;

static void on_step(long nr);

static void arm(void)
{
	if (step_after)
		wrap_hook_after_once(on_step);
	else
		wrap_hook_once(on_step);
}

/* At each of the child's system calls in its operation: the k-th is where
 * it dies or stops; the others arm the hook again. */
static void on_step(long nr)
{
	(void)nr;
	if (++step_n < step_k) {
		arm();
		return;
	}
	atomic_store(&rep->reached, 1);
	raise(step_how == KILL ? SIGKILL : step_how == STOP ? SIGSTOP : SIGUSR1);
}

/* SIGNAL: a handler writes 1 to the ueventfd, inside whatever the
 * operation holds at that step (the cross-process lock included). */
static void on_usr1(int sig)
{
	uint64_t one = 1;
	int e = errno;
	ssize_t r = uepoll_write(child_fd, &one, 8);

	(void)sig;
	atomic_store(&rep->hres, r < 0 ? -errno : r);
	errno = e;
}

static _Noreturn void child(int fd, const struct op *o)
{
	uint64_t v = o->write;
	ssize_t r;

	child_fd = fd;
	signal(SIGUSR1, on_usr1);
	step_n = 0;
	arm();
	if (o->write)
		r = uepoll_write(fd, &v, 8);
	else
		r = uepoll_read(fd, &v, 8);
	wrap_hook_once(NULL);
	wrap_hook_after_once(NULL);
	atomic_store(&rep->res, r < 0 ? -errno : r);
	atomic_store(&rep->got, v);
	atomic_store(&rep->done, 1);
	_exit(0);
}

static int failures_before;

#define STEP_FAIL(...)                                                       \
	do {                                                                 \
		fprintf(stderr, "FAIL %s, %s %s step %d: ", o->name,         \
			how == KILL ? "killed" : how == STOP ? "stopped" : "signalled",                  \
			step_after ? "after" : "before", step_k);            \
		fprintf(stderr, __VA_ARGS__);                                \
		fprintf(stderr, "\n");                                       \
		t_failures++;                                              \
	} while (0)

/* A non-blocking read, checked against what poll(2) said just before: a
 * value read means the fd was readable.  *count: the counter (known), or
 * what it may be at most. */
static int64_t read_checked(int fd, const struct op *o, enum how how,
			    uint64_t *count, int known)
{
	uint64_t v;
	int ev = x_poll(fd, POLLIN, 0);
	ssize_t r = uepoll_read(fd, &v, 8);

	if (r == 8) {
		if (!(ev & POLLIN))
			STEP_FAIL("a read found %" PRIu64
				  " but poll(2) said not readable",
				  v);
		if (v > *count)
			STEP_FAIL("a read found %" PRIu64 " of %" PRIu64, v,
				  *count);
		*count -= v;
		return (int64_t)v;
	}
	if (r < 0 && (errno != EAGAIN || (known && *count)))
		STEP_FAIL("a read found nothing of %" PRIu64, *count);
	return 0;
}

/* The fd's readiness is exactly the counter's (too writable allowed over
 * a full counter: a bypass leaves the fill to the next settle). */
static void exact(int fd, const struct op *o, enum how how, uint64_t count,
		  const char *when)
{
	int ev = x_poll(fd, POLLIN | POLLOUT, 0);
	int want = (count ? POLLIN : 0) | (count < FULL ? POLLOUT : 0);

	if (count == FULL)
		ev &= ~POLLOUT;
	if (ev != want)
		STEP_FAIL("%s: poll(2) says %#x over a counter of %" PRIu64
			  " (the kernel's: %#x)",
			  when, ev, count, want);
}

/* One round: the op, the step, the way; 0 if the child's operation ended
 * before step k (no more steps). */
static int round1(const struct op *o, enum how how, const char *seq)
{
	struct t_child c;
	uint64_t v, count;
	(void)count;
	int fd, st;
	pid_t p;

	fd = ueventfd(0, EFD_NONBLOCK | (o->sem ? EFD_SEMAPHORE : 0));
	REQUIRE(fd >= 0);
	if (o->init) {
		v = o->init;
		REQUIRE(uepoll_write(fd, &v, 8) == 8);
	}
	memset(rep, 0, sizeof(*rep));
	step_how = how;
	p = x_fork(&c);
	REQUIRE(p >= 0);
	if (p == 0)
		child(fd, o);
	count = o->init;
	x_step("uepoll", "the child reaches its step or ends");
	REQUIRE(waitpid(p, &st, WUNTRACED) == p);
	x_step_end();
	if (!atomic_load(&rep->reached)) {
		/* The operation had fewer steps: it ended normally. */
		c.pid = 0;
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		CHECK_EQ(uepoll_close(fd), 0);
		return 0;
	}
	if (how == KILL) {
		/* Its operation happened or not: the counter is one of two. */
		uint64_t with = o->write ? o->init + o->write
				: o->sem     ? o->init - 1
					     : 0;
		int ev = x_poll(fd, POLLIN, 0);
		ssize_t r;

		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		x_step("uepoll", "a read after the kill");
		r = uepoll_read(fd, &v, 8);
		x_step_end();
		if (r == 8 && !(ev & POLLIN))
			STEP_FAIL("a read found %" PRIu64
				  " but poll(2) said not readable",
				  v);
		if (r == 8 && !o->sem && v != o->init && v != with)
			STEP_FAIL("read %" PRIu64 ", neither %" PRIu64
				  " nor %" PRIu64,
				  v, o->init, with);
		if (r == 8 && o->sem && v != 1)
			STEP_FAIL("a semaphore read %" PRIu64, v);
		if (r != 8 && (errno != EAGAIN || (o->init && with)))
			STEP_FAIL("a read failed (%d) over %" PRIu64
				  " or %" PRIu64,
				  errno, o->init, with);
		/* A plain read takes all: the counter is 0, and the fd must
		 * say so now that a locked operation came after the death. */
		if (!o->sem)
			exact(fd, o, how, 0, "after the read");
	} else if (how == SIGNAL) {
		int64_t r = atomic_load(&rep->res), hr = atomic_load(&rep->hres);
		uint64_t cw = 0, cr = 0, left;

		c.pid = 0;
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		CHECK(atomic_load(&rep->done));
		if (o->write && r == 8)
			cw = o->write;
		if (!o->write && r == 8)
			cr = atomic_load(&rep->got);
		if (hr != 8 && hr != -EAGAIN)
			STEP_FAIL("the handler's write: %" PRId64, hr);
		count = o->init + cw - cr + (hr == 8);
		exact(fd, o, how, count, "after the handler's write");
		left = count;
		if (!o->sem || count < 4) {
			while (read_checked(fd, o, how, &left, 1) && left)
				;
			if (left)
				STEP_FAIL("%" PRIu64 " left unread", left);
		}
	} else {
		CHECK(WIFSTOPPED(st));
		/* The child's operation has happened or not: the parent
		 * learns which when it ends; meanwhile the parent's reads
		 * take at most what is there. */
		uint64_t wrote = 0, took = 0, maxc = o->init + o->write;

		wrap_take(WRAP_XM_WAIT);
		wrap_arm(0);
		for (const char *s = seq; *s; s++) {
			x_step("uepoll", *s == 'W' ? "a write beside the stopped child"
						  : "a read beside the stopped child");
			if (*s == 'W') {
				v = 1;
				if (uepoll_write(fd, &v, 8) == 8) {
					wrote++;
					maxc++;
				}
			} else {
				took += (uint64_t)read_checked(fd, o, how, &maxc, 0);
			}
			x_step_end();
		}
		wrap_disarm();
		if (wrap_take(WRAP_XM_WAIT))
			STEP_FAIL("waited for the lock of a stopped process");
		x_step("uepoll", "the continued child ends its operation");
		REQUIRE(kill(p, SIGCONT) == 0);
		t_child_reap(&c, 10000, "the continued child");
		x_step_end();
		if (!atomic_load(&rep->done)) {
			STEP_FAIL("the child's operation did not end");
		} else {
			int64_t r = atomic_load(&rep->res);
			uint64_t cw = 0, cr = 0;

			if (o->write && r == 8)
				cw = o->write;
			if (!o->write && r == 8)
				cr = atomic_load(&rep->got);
			count = o->init + cw + wrote - cr - took;
			exact(fd, o, how, count, "at rest");
			if (!o->sem || count < 4) {
				uint64_t left = count;

				while (read_checked(fd, o, how, &left, 1) && left)
					;
				if (left)
					STEP_FAIL("%" PRIu64 " left unread", left);
				count = 0;
				exact(fd, o, how, 0, "emptied");
			}
		}
	}
	CHECK_EQ(uepoll_close(fd), 0);
	return 1;
}

int main(void)
{
	t_begin("t_xproc_steps");
	x_init();
	rep = mmap(NULL, sizeof(*rep), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(rep != MAP_FAILED);
	for (size_t i = 0; i < sizeof(OPS) / sizeof(OPS[0]); i++) {
		const struct op *o = &OPS[i];
		int steps[2];

		failures_before = t_failures;
		for (step_after = 0; step_after < 2; step_after++) {
			for (step_k = 1; step_k < MAXSTEPS; step_k++) {
				if (!round1(o, KILL, ""))
					break;
				round1(o, SIGNAL, "");
				for (size_t s = 0; s < sizeof(SEQS) / sizeof(SEQS[0]); s++)
					round1(o, STOP, SEQS[s]);
			}
			CHECK(step_k < MAXSTEPS);
			steps[step_after] = step_k - 1;
		}
		/* Each operation has a system call to be caught at. */
		CHECK(steps[0] > 0 && steps[1] > 0);
		printf("  %s: %d steps: %s\n", o->name, steps[0],
		       t_failures == failures_before ? "ok" : "FAILED");
	}
	munmap(rep, sizeof(*rep));
	return t_end();
}
