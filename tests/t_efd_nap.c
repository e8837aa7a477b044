/*
 * t_efd_nap: a thread blocked in uepoll_read on a UEVENTFD_NOPOLL ueventfd
 * sleeps on a futex word (NAP in src/eventfd.c, issue 19 item 3), woken by
 * the write's FUTEX_WAKE, and behaves as a thread blocked in read(2) on the
 * kernel's eventfd.  Each case checks where the reader sleeps
 * (/proc/self/task/TID/syscall) and what it gets:
 *  (a) handoff: the reader naps in futex and the write that wakes it makes
 *      one system call, a FUTEX_WAKE; a 200-round ping-pong between two
 *      napping threads makes no read(2) or write(2) at all (futex calls,
 *      and an F_GETFL before each sleep); a default
 *      ueventfd's reader sleeps in read(2) on the kernel fd;
 *  (b) signals, against the kernel's eventfd: a handler with SA_RESTART
 *      leaves the read blocked (a later write ends it with the value),
 *      one without SA_RESTART ends it with EINTR;
 *  (c) cancellation in a nap leaves no napper counted: a later write makes
 *      no system call;
 *  (d) demotion while a thread naps: it goes on in read(2) on the kernel
 *      fd, and a write gives it the value;
 *  (e) a fork while a thread naps (the ueventfd becomes SHARED): a write of
 *      the child's wakes the parent's reader with the child's value;
 *  (f) NOPOLL ended while a thread naps (a kernel epoll watches the fd):
 *      a write wakes it, and the fd is exact from then on;
 *  (g) a coalesced write, and a held one, wake a napper by their timer;
 *  (h) O_NONBLOCK set through uepoll_fcntl, or with a plain fcntl(2):
 *      EAGAIN, no nap; cleared: naps;
 *  (i) stress: three readers napping on a semaphore ueventfd, two writers;
 *      every unit written is read once and the readers end.
 */
#include "testlib.h"
#include "libcwrap.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef T_TSAN
#define IS_TSAN 1
#else
#define IS_TSAN 0
#endif

/* Asleep in the kernel fd's read (the ThreadSanitizer build's read waits in
 * ppoll first: THREADSANITIZER in src/sys.c). */
static bool in_kread(int nr)
{
	return nr == SYS_read || (IS_TSAN && nr == SYS_ppoll);
}

struct reader {
	pthread_t th;
	int fd;
	bool kernel; /* read(2), not uepoll_read */
	_Atomic int tid;
	ssize_t r;
	int err;
	uint64_t v;
};

static void *reader_fn(void *arg)
{
	struct reader *rd = arg;

	atomic_store(&rd->tid, t_gettid());
	errno = 0;
	rd->r = rd->kernel ? read(rd->fd, &rd->v, 8)
			   : uepoll_read(rd->fd, &rd->v, 8);
	rd->err = errno;
	return NULL;
}

/* Start a reader of fd and return the system call it is found asleep in. */
static int reader_start(struct reader *rd, int fd, bool kernel)
{
	rd->fd = fd;
	rd->kernel = kernel;
	rd->v = 0;
	atomic_store(&rd->tid, 0);
	REQUIRE(pthread_create(&rd->th, NULL, reader_fn, rd) == 0);
	while (!atomic_load(&rd->tid))
		sched_yield();
	return t_blocked_in(atomic_load(&rd->tid), 5000);
}

static void reader_join(struct reader *rd)
{
	REQUIRE(t_join_within(rd->th, 5000));
}

/* A NOPOLL ueventfd whose kernel fd already has its stale unit (a first
 * write put it there: MIRROR), so that later writes make no mirror call. */
static int nap_efd(int flags)
{
	int e = ueventfd(1, UEVENTFD_NOPOLL | flags);
	uint64_t v;

	REQUIRE(e >= 0);
	REQUIRE(uepoll_read(e, &v, 8) == 8);
	return e;
}

static void put(int e, uint64_t v)
{
	REQUIRE(uepoll_write(e, &v, 8) == 8);
}

static void case_handoff(void)
{
	struct reader rd;
	int e, calls;

	fprintf(stderr, "-- handoff\n");
	e = nap_efd(0);
	CHECK_EQ(reader_start(&rd, e, false), SYS_futex);
	wrap_arm(0);
	put(e, 5);
	calls = wrap_take_show();
	wrap_disarm();
	CHECK_EQ(calls, 1); /* one FUTEX_WAKE */
	reader_join(&rd);
	CHECK_EQ(rd.r, 8);
	CHECK_EQ(rd.v, 5);
	uepoll_close(e);

	/* A default ueventfd may be polled from outside: its reader sleeps
	 * in read(2) on the kernel fd, which the write's mirror call wakes. */
	e = ueventfd(0, 0);
	REQUIRE(e >= 0);
	CHECK(in_kread(reader_start(&rd, e, false)));
	put(e, 6);
	reader_join(&rd);
	CHECK_EQ(rd.r, 8);
	CHECK_EQ(rd.v, 6);
	uepoll_close(e);
}

/* (a) A ping-pong: each thread blocks in uepoll_read on its own ueventfd
 * and writes the other's. */
#define ROUNDS 200
static int pp[2];

static void *pong(void *arg)
{
	uint64_t v;

	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		REQUIRE(uepoll_read(pp[1], &v, 8) == 8);
		put(pp[0], 1);
	}
	return NULL;
}

static void case_pingpong(void)
{
	pthread_t th;
	uint64_t v;

	fprintf(stderr, "-- pingpong\n");
	pp[0] = nap_efd(0);
	pp[1] = nap_efd(0);
	wrap_arm(1);
	REQUIRE(pthread_create(&th, NULL, pong, NULL) == 0);
	for (int i = 0; i < ROUNDS; i++) {
		put(pp[1], 1);
		REQUIRE(uepoll_read(pp[0], &v, 8) == 8);
		CHECK_EQ(v, 1);
	}
	REQUIRE(t_join_within(th, 20000));
	wrap_disarm();
	/* No mirror call: futex calls (at most a wake and a wait a side a
	 * round) and the F_GETFL before each sleep. */
	CHECK_EQ(wrap_take(WRAP_READ), 0);
	CHECK_EQ(wrap_take(WRAP_WRITE), 0);
	CHECK(wrap_take(WRAP_SYSCALL) <= 2 * ROUNDS);
	CHECK(wrap_take(WRAP_FUTEX) <= 4 * ROUNDS);
	wrap_take(-1);
	uepoll_close(pp[0]);
	uepoll_close(pp[1]);
}

static _Atomic int handled;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

/* (b) The same signal sent to a reader of the kernel's eventfd and to a
 * napper; with SA_RESTART both stay asleep and a write ends the read. */
static void signal_case(bool restart)
{
	struct sigaction sa = { .sa_handler = on_usr1,
				.sa_flags = restart ? SA_RESTART : 0 };
	struct reader k, u;
	int kfd, e;

	fprintf(stderr, "-- signal (%s)\n", restart ? "SA_RESTART" : "no SA_RESTART");
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	atomic_store(&handled, 0);
	kfd = eventfd(0, 0);
	REQUIRE(kfd >= 0);
	e = nap_efd(0);
	CHECK(in_kread(reader_start(&k, kfd, true)));
	CHECK_EQ(reader_start(&u, e, false), SYS_futex);
	pthread_kill(k.th, SIGUSR1);
	pthread_kill(u.th, SIGUSR1);
	/* (Under ThreadSanitizer a handler runs when its thread next enters
	 * an intercepted call: the napper's, once its read returns.) */
	while (!IS_TSAN && atomic_load(&handled) < 2)
		sched_yield();
	if (IS_TSAN)
		t_sleep_ms(50);
	if (restart) {
		/* Asleep again, each where it was. */
		CHECK(in_kread(t_blocked_in(atomic_load(&k.tid), 5000)));
		CHECK_EQ(t_blocked_in(atomic_load(&u.tid), 5000), SYS_futex);
		REQUIRE(eventfd_write(kfd, 3) == 0);
		put(e, 3);
	}
	reader_join(&k);
	reader_join(&u);
	CHECK_EQ(u.r, k.r);
	CHECK_EQ(u.err, k.err);
	CHECK_EQ(u.v, k.v);
	CHECK_EQ(k.r, restart ? 8 : -1);
	if (!restart)
		CHECK_EQ(k.err, EINTR);
	if (!IS_TSAN) /* (the napper's handler runs later there) */
		CHECK_EQ(atomic_load(&handled), 2);
	signal(SIGUSR1, SIG_DFL);
	close(kfd);
	uepoll_close(e);
}

static void case_cancel(void)
{
	struct reader rd;
	uint64_t v;
	int e, calls;

	fprintf(stderr, "-- cancel\n");
	e = nap_efd(0);
	CHECK_EQ(reader_start(&rd, e, false), SYS_futex);
	pthread_cancel(rd.th);
	REQUIRE(t_join_within(rd.th, 5000));
	/* Nobody counted asleep: the write makes no system call. */
	wrap_arm(0);
	put(e, 2);
	calls = wrap_take_show();
	wrap_disarm();
	CHECK_EQ(calls, 0);
	REQUIRE(uepoll_read(e, &v, 8) == 8);
	CHECK_EQ(v, 2);
	/* And a new reader is woken as ever. */
	CHECK_EQ(reader_start(&rd, e, false), SYS_futex);
	put(e, 4);
	reader_join(&rd);
	CHECK_EQ(rd.v, 4);
	uepoll_close(e);
}

static void case_demote(void)
{
	struct reader rd;
	int e;

	fprintf(stderr, "-- demote\n");
	e = nap_efd(0);
	CHECK_EQ(reader_start(&rd, e, false), SYS_futex);
	REQUIRE(uepoll_demote(e) == 0);
	/* It reads the kernel fd now, which has the counter (0). */
	CHECK(in_kread(t_blocked_in(atomic_load(&rd.tid), 5000)));
	put(e, 7);
	reader_join(&rd);
	CHECK_EQ(rd.r, 8);
	CHECK_EQ(rd.v, 7);
	uepoll_close(e);
}

static void case_fork(void)
{
	struct t_child c;
	struct reader rd;
	int e;

	fprintf(stderr, "-- fork\n");
	e = nap_efd(0);
	CHECK_EQ(reader_start(&rd, e, false), SYS_futex);
	if (t_child_fork(&c) == 0) {
		uint64_t v = 9;

		_exit(uepoll_write(e, &v, 8) == 8 ? 0 : 1);
	}
	REQUIRE(t_child_reap(&c, 10000, "writer child") == 0);
	reader_join(&rd);
	CHECK_EQ(rd.r, 8);
	CHECK_EQ(rd.v, 9);
	uepoll_close(e);
}

static bool readable(int f)
{
	struct pollfd p = { .fd = f, .events = POLLIN };

	REQUIRE(poll(&p, 1, 0) >= 0);
	return (p.revents & POLLIN) != 0;
}

static void case_unnopoll(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct reader rd;
	uint64_t v;
	int e, kep;

	fprintf(stderr, "-- unnopoll\n");
	e = nap_efd(0);
	CHECK_EQ(reader_start(&rd, e, false), SYS_futex);
	kep = epoll_create1(0);
	REQUIRE(kep >= 0);
	REQUIRE(uepoll_ctl(kep, EPOLL_CTL_ADD, e, &ev) == 0);
	put(e, 8);
	reader_join(&rd);
	CHECK_EQ(rd.v, 8);
	/* Exact from now on: emptied, so not readable. */
	CHECK(!readable(e));
	put(e, 1);
	CHECK(readable(e));
	REQUIRE(uepoll_read(e, &v, 8) == 8);
	CHECK(!readable(e));
	close(kep);
	uepoll_close(e);
}

static void case_coalesce(bool hold)
{
	struct ueventfd_coalesce co = { .delay_us = 2000 };
	struct reader rd;
	int e;

	fprintf(stderr, "-- coalesce%s\n", hold ? " (held writes)" : "");
	if (hold)
		co.flags = UEVENTFD_HOLD_WRITES;
	e = nap_efd(0);
	REQUIRE(ueventfd_coalesce(e, &co, NULL) == 0);
	CHECK_EQ(reader_start(&rd, e, false), SYS_futex);
	put(e, 1);
	put(e, 2);
	reader_join(&rd);
	CHECK_EQ(rd.r, 8);
	/* The first write's timer may fire between the two writes. */
	CHECK(rd.v == 3 || rd.v == 1);
	if (rd.v == 1) {
		uint64_t v;

		REQUIRE(uepoll_read(e, &v, 8) == 8);
		CHECK_EQ(v, 2);
	}
	uepoll_close(e);
}

/* (h) With O_NONBLOCK set by setfl: EAGAIN, three times, no nap; cleared:
 * a reader naps and a write of v wakes it. */
static void nonblock_round(int e, int fl, int (*setfl)(int, int, ...),
			   uint64_t v)
{
	struct reader rd;
	uint64_t got;

	REQUIRE(setfl(e, F_SETFL, fl | O_NONBLOCK) == 0);
	for (int i = 0; i < 3; i++) {
		errno = 0;
		CHECK_EQ(uepoll_read(e, &got, 8), -1);
		CHECK_EQ(errno, EAGAIN);
	}
	REQUIRE(setfl(e, F_SETFL, fl) == 0);
	CHECK_EQ(reader_start(&rd, e, false), SYS_futex);
	put(e, v);
	reader_join(&rd);
	CHECK_EQ(rd.v, v);
}

static void case_nonblock(void)
{
	int e, fl;

	fprintf(stderr, "-- nonblock\n");
	e = nap_efd(0);
	fl = uepoll_fcntl(e, F_GETFL);
	REQUIRE(fl >= 0);
	nonblock_round(e, fl, uepoll_fcntl, 11);
	/* A plain fcntl(2) that uepoll does not see: still EAGAIN, as the
	 * kernel's read, not a sleep. */
	nonblock_round(e, fl, fcntl, 12);
	uepoll_close(e);
}

/* (i) */
#define NWRITERS 2
#define NREADERS 3

struct stress {
	int e;
	long per_writer;
	_Atomic long taken;
	_Atomic long sum;
};

static void *stress_writer(void *arg)
{
	struct stress *s = arg;

	for (long i = 0; i < s->per_writer; i++) {
		put(s->e, 1);
		if (!(i & 31))
			sched_yield();
	}
	return NULL;
}

/* Reads units until it takes one of the last NREADERS (the stop units). */
static void *stress_reader(void *arg)
{
	struct stress *s = arg;
	long total = NWRITERS * s->per_writer;
	uint64_t v;

	for (;;) {
		REQUIRE(uepoll_read(s->e, &v, 8) == 8);
		atomic_fetch_add(&s->sum, (long)v);
		if (atomic_fetch_add(&s->taken, 1) + 1 > total)
			return NULL;
	}
}

static void case_stress(void)
{
	pthread_t w[NWRITERS], r[NREADERS];
	struct stress s = { .per_writer = (long)(20000 * t_scale()) };
	uint64_t v;

	fprintf(stderr, "-- stress\n");
	s.e = nap_efd(EFD_SEMAPHORE);
	for (int i = 0; i < NREADERS; i++)
		REQUIRE(pthread_create(&r[i], NULL, stress_reader, &s) == 0);
	for (int i = 0; i < NWRITERS; i++)
		REQUIRE(pthread_create(&w[i], NULL, stress_writer, &s) == 0);
	for (int i = 0; i < NWRITERS; i++)
		REQUIRE(t_join_within(w[i], 60000));
	put(s.e, NREADERS); /* the stop units */
	for (int i = 0; i < NREADERS; i++)
		REQUIRE(t_join_within(r[i], 60000));
	CHECK_EQ(atomic_load(&s.sum), NWRITERS * s.per_writer + NREADERS);
	CHECK_EQ(atomic_load(&s.taken), NWRITERS * s.per_writer + NREADERS);
	REQUIRE(uepoll_fcntl(s.e, F_SETFL, O_NONBLOCK) == 0);
	errno = 0;
	CHECK_EQ(uepoll_read(s.e, &v, 8), -1);
	CHECK_EQ(errno, EAGAIN);
	uepoll_close(s.e);
}

int main(void)
{
	t_begin("t_efd_nap");
	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_watchdog(180);
	case_handoff();
	case_pingpong();
	signal_case(true);
	signal_case(false);
	case_cancel();
	case_demote();
	case_fork();
	case_unnopoll();
	case_coalesce(false);
	case_coalesce(true);
	case_nonblock();
	case_stress();
	return t_end();
}
