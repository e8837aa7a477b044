/*
 * t_efd_blocked: a ueventfd read or write that has begun to block behaves as
 * a blocked read(2) or write(2) on the kernel's eventfd (issue 32, bugs 5
 * and 6), for every way a ueventfd sleeps: a default one (read(2) on its
 * kernel fd), a UEVENTFD_NOPOLL one (a futex nap), a SHARED one (after a
 * fork: a futex sleep with a limit), plain and EFD_SEMAPHORE.  Each case
 * runs the same sequence on the kernel's eventfd and on the ueventfd and
 * checks both against what eventfd(2) and signal(7) say:
 *  (a) O_NONBLOCK set (fcntl(2)) while two readers are blocked: a write of
 *      1 ends one read; the other is still blocked (it does not answer
 *      EAGAIN), and the next write ends it;
 *  (b) the same for two writers of 2 blocked on a semaphore counter with
 *      room for 1: a read of 1 lets one through; the other is still
 *      blocked, and two more reads let it through;
 *  (c) a signal whose handler has SA_RESTART leaves a blocked read, and a
 *      blocked write, blocked (the next write, read, ends it); without
 *      SA_RESTART it ends with EINTR.
 * Every step that waits has a watchdog; no timing is asserted.
 */
#include "testlib.h"

#include <sys/syscall.h>

#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef T_TSAN
#define IS_TSAN 1
#else
#define IS_TSAN 0
#endif

#define FULL 0xfffffffffffffffeull

enum kind { K_DEFAULT, K_NOPOLL, K_SHARED };
static const char *const KIND[] = { "default", "NOPOLL", "SHARED" };

struct sys {
	const char *name;
	bool kernel;
};

static ssize_t s_read(const struct sys *s, int fd, uint64_t *v)
{
	return s->kernel ? read(fd, v, 8) : uepoll_read(fd, v, 8);
}

static ssize_t s_write(const struct sys *s, int fd, uint64_t v)
{
	return s->kernel ? write(fd, &v, 8) : uepoll_write(fd, &v, 8);
}

static int s_close(const struct sys *s, int fd)
{
	return s->kernel ? close(fd) : uepoll_close(fd);
}

/* The kind of the last eventfd made (the case's): where op_start's
 * operations sleep. */
static enum kind op_kind;

/* A blocking eventfd of the kind, holding init. */
static int make(const struct sys *s, enum kind k, uint64_t init, int sem)
{
	int fd, st;
	pid_t p;

	op_kind = k;
	fd = s->kernel ? eventfd(0, sem)
		       : ueventfd(0, sem | (k == K_NOPOLL ? UEVENTFD_NOPOLL : 0));
	REQUIRE(fd >= 0);
	if (init)
		REQUIRE(s_write(s, fd, init) == 8);
	if (k == K_SHARED) {
		/* A fork shares it (for good: SHARED in src/eventfd.c). */
		p = fork();
		REQUIRE(p >= 0);
		if (p == 0)
			_exit(0);
		REQUIRE(waitpid(p, &st, 0) == p && st == 0);
	}
	return fd;
}

struct op {
	const struct sys *s;
	pthread_t th;
	int fd;
	bool write;
	uint64_t v;
	_Atomic int tid;
	_Atomic bool done;
	ssize_t r;
	int err;
	int expect; /* the system call it sleeps in (-2: any but a futex's,
		     * -1: any): op_start */
};

static void *op_fn(void *arg)
{
	struct op *o = arg;

	atomic_store(&o->tid, t_gettid());
	errno = 0;
	o->r = o->write ? s_write(o->s, o->fd, o->v) : s_read(o->s, o->fd, &o->v);
	o->err = errno;
	atomic_store(&o->done, true);
	return NULL;
}

/* Start an operation and wait until it sleeps. */
static void op_start(struct op *o, const struct sys *s, int fd, bool write,
		     uint64_t v)
{
	memset(o, 0, sizeof(*o));
	/* The kernel's eventfd sleeps in the call itself; a default
	 * ueventfd's read in a system call on its kernel fd (read(2), or
	 * ppoll(2) under ThreadSanitizer), not a futex (-2); the others sleep
	 * on a futex, which this cannot tell from any other (-1). */
	o->expect = s->kernel ? (write ? SYS_write : SYS_read)
		    : !write && op_kind == K_DEFAULT ? -2
						      : -1;
	o->s = s;
	o->fd = fd;
	o->write = write;
	o->v = v;
	REQUIRE(pthread_create(&o->th, NULL, op_fn, o) == 0);
	while (!atomic_load(&o->tid))
		sched_yield();
	REQUIRE(t_wait_sleeping(atomic_load(&o->tid), 10000));
	/* Asleep is not yet blocked in the call (a busy machine, or
	 * ThreadSanitizer's own locks, can show the thread asleep before it
	 * got there, and O_NONBLOCK set then is seen at its entry, natively
	 * too): where the sleep is a read(2) or write(2) of the fd, wait for
	 * that system call. */
	if (o->expect != -1) {
		uint64_t until = t_now_ns() + 10000000000ull;
		int nr;

		while ((nr = t_blocked_in(atomic_load(&o->tid), 10000)) < 0 ||
		       (o->expect >= 0 ? nr != o->expect : nr == SYS_futex)) {
			REQUIRE(t_now_ns() < until);
			sched_yield();
		}
	}
}

static void op_join(struct op *o)
{
	REQUIRE(t_join_within(o->th, 10000));
}

/* Wait until one of two operations has ended; its index. */
static int one_done(struct op *a, struct op *b)
{
	uint64_t until = t_now_ns() + 10000000000ull;

	while (!atomic_load(&a->done) && !atomic_load(&b->done)) {
		REQUIRE(t_now_ns() < until);
		sched_yield();
	}
	return atomic_load(&a->done) ? 0 : 1;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	REQUIRE(fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0);
}

/* (a) Two blocked readers, then O_NONBLOCK: each write ends one read. */
static void case_readers(const struct sys *s, enum kind k)
{
	struct op o[2];
	int fd = make(s, k, 0, 0), first;

	fprintf(stderr, "-- %s %s: readers, O_NONBLOCK set while blocked\n",
		s->name, KIND[k]);
	op_start(&o[0], s, fd, false, 0);
	op_start(&o[1], s, fd, false, 0);
	set_nonblock(fd);
	REQUIRE(s_write(s, fd, 1) == 8);
	first = one_done(&o[0], &o[1]);
	op_join(&o[first]);
	CHECK_EQ(o[first].r, 8);
	CHECK_EQ(o[first].v, 1);
	/* The other one sleeps on, as in read(2): not EAGAIN. */
	CHECK(t_wait_sleeping(atomic_load(&o[!first].tid), 10000));
	CHECK(!atomic_load(&o[!first].done));
	REQUIRE(s_write(s, fd, 2) == 8);
	op_join(&o[!first]);
	CHECK_EQ(o[!first].r, 8);
	CHECK_EQ(o[!first].v, 2);
	CHECK_EQ(s_close(s, fd), 0);
}

/* (b) Two writers of 2 blocked on a semaphore counter with room for 1, then
 * O_NONBLOCK: each read of 1 lets one through. */
static void case_writers(const struct sys *s, enum kind k)
{
	struct op o[2];
	int fd = make(s, k, FULL - 1, EFD_SEMAPHORE), first;
	uint64_t v;

	fprintf(stderr, "-- %s %s: writers, O_NONBLOCK set while blocked\n",
		s->name, KIND[k]);
	op_start(&o[0], s, fd, true, 2);
	op_start(&o[1], s, fd, true, 2);
	set_nonblock(fd);
	REQUIRE(s_read(s, fd, &v) == 8);
	first = one_done(&o[0], &o[1]);
	op_join(&o[first]);
	CHECK_EQ(o[first].r, 8);
	CHECK(t_wait_sleeping(atomic_load(&o[!first].tid), 10000));
	CHECK(!atomic_load(&o[!first].done));
	/* The first took the room (full now): two units make room for 2. */
	REQUIRE(s_read(s, fd, &v) == 8);
	REQUIRE(s_read(s, fd, &v) == 8);
	op_join(&o[!first]);
	CHECK_EQ(o[!first].r, 8);
	CHECK_EQ(s_close(s, fd), 0);
}

static _Atomic int handled;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

/* (c) A signal in a blocked read or write, with or without SA_RESTART. */
static void case_signal(const struct sys *s, enum kind k, bool write,
			bool restart)
{
	struct sigaction sa = { .sa_handler = on_usr1,
				.sa_flags = restart ? SA_RESTART : 0 };
	int fd = make(s, k, write ? FULL : 0, 0);
	struct op o;
	uint64_t v;

	fprintf(stderr, "-- %s %s: signal in a blocked %s, %s\n", s->name,
		KIND[k], write ? "write" : "read",
		restart ? "SA_RESTART" : "no SA_RESTART");
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	atomic_store(&handled, 0);
	op_start(&o, s, fd, write, 1);
	pthread_kill(o.th, SIGUSR1);
	/* (Under ThreadSanitizer a handler runs when its thread next enters
	 * an intercepted call.) */
	while (!IS_TSAN && !atomic_load(&handled))
		sched_yield();
	if (restart) {
		CHECK(t_wait_sleeping(atomic_load(&o.tid), 10000));
		CHECK(!atomic_load(&o.done));
		if (write)
			REQUIRE(s_read(s, fd, &v) == 8);
		else
			REQUIRE(s_write(s, fd, 3) == 8);
	}
	op_join(&o);
	if (restart || !IS_TSAN) {
		CHECK_EQ(o.r, restart ? 8 : -1);
		if (!restart)
			CHECK_EQ(o.err, EINTR);
		if (restart && !write)
			CHECK_EQ(o.v, 3);
	}
	signal(SIGUSR1, SIG_DFL);
	CHECK_EQ(s_close(s, fd), 0);
}

int main(void)
{
	static const struct sys SYS[] = { { "kernel", true },
					  { "uepoll", false } };

	t_begin("t_efd_blocked");
	t_watchdog(240);
	for (int i = 0; i < 2; i++)
		for (int k = K_DEFAULT; k <= K_SHARED; k++) {
			/* (The kernel's eventfd has one kind.) */
			if (SYS[i].kernel && k != K_DEFAULT)
				continue;
			case_readers(&SYS[i], k);
			case_writers(&SYS[i], k);
			for (int w = 0; w < 2; w++)
				for (int rs = 0; rs < 2; rs++) {
					/* (ThreadSanitizer delays the
					 * handler past the call's end; and
					 * a default ueventfd's reader waits
					 * in ppoll there, which no handler
					 * restarts: THREADSANITIZER in
					 * src/sys.c.) */
					if (IS_TSAN && (!rs ||
							(!SYS[i].kernel &&
							 k == K_DEFAULT &&
							 !w)))
						continue;
					case_signal(&SYS[i], k, w, rs);
				}
		}
	return t_end();
}
