/*
 * t_cancel: pthread_cancel() of a thread blocked in a uepoll call.
 * glibc makes epoll_wait/epoll_pwait/epoll_pwait2, read and write
 * cancellation points, so uepoll_wait/uepoll_pwait/uepoll_pwait2,
 * uepoll_read and uepoll_write are too, and a cancelled call must leave
 * everything as if it had returned.  Each case: the thread blocks (seen
 * asleep), is cancelled, joins with PTHREAD_CANCELED, then:
 *  - lifo: uepoll_wait(-1) cancelled; the instance still wakes a new
 *    waiter; after uepoll_close no fd is left open.  (Also on the kernel.)
 *  - calls: the same for uepoll_pwait (sigmask, -1) and uepoll_pwait2 (a
 *    10 s timeout).  (Also on the kernel.)
 *  - exclusive: a ueventfd with EPOLLIN|EPOLLEXCLUSIVE in instances A and
 *    B, one thread blocked in each; A's is cancelled; a write wakes B's
 *    thread with the event.  (Also on the kernel.)
 *  - batch-doze: a batching wait (2 s window) dozing is cancelled; with the
 *    policy back to zeros a plain blocked waiter is woken by a write.
 *  - batch-hold: a batching wait that already collected a level-triggered
 *    ueventfd event (held on its private list) is cancelled; later waits
 *    still return the event, and new writes too.
 *  - fifo-leader: UEPOLL_WAKE_FIFO, two waiters, the leader (first to
 *    block) is cancelled; a write wakes the other.
 *  - fifo-follower: the follower is cancelled; a write wakes the leader;
 *    a thread that waits afterwards is woken by the next write; no fd left
 *    after close (the follower's eventfd included).
 *  - read: uepoll_read() blocked on an empty blocking ueventfd, cancelled;
 *    the counter still works; no fd left after close.  (Also on the kernel.)
 *  - write: counter at 0xfffffffffffffffe, a blocking uepoll_write() of 1
 *    blocks; it is cancelled (joins with PTHREAD_CANCELED); the counter is
 *    still 0xfffffffffffffffe; no fd left after close.  (Also on the kernel.)
 *  - pending: a cancel pending at entry acts at the call, as at epoll_wait:
 *    nothing ready with -1, something ready with -1, nothing ready with 0;
 *    compared with the kernel's answer for the same sequence.
 * A thread that stays blocked when it should not is released with SIGUSR1
 * (a handler without SA_RESTART: the wait fails with EINTR) after the
 * failure is recorded, so that every case runs.  One case can be run alone:
 * t_cancel <name>.
 */
#include "testlib.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#define BIG 0xfffffffffffffffeULL
/* How long a thread that should end (cancelled, or woken by an event) is
 * given before it counts as hung: generous, it takes microseconds. */
#define HANG_MS 1500

enum op { OP_WAIT, OP_PWAIT, OP_PWAIT2, OP_READ, OP_WRITE };

/* One blocking call made by a thread.  kern: the kernel's call, else
 * uepoll's. */
struct job {
	int kern;
	enum op op;
	int fd;
	int timeout_ms;		/* OP_WAIT/OP_PWAIT; OP_PWAIT2: timeout in ms */
	uint64_t val;		/* OP_WRITE: the value */
	int pending;		/* cancel self before the call */
	_Atomic int tid;
	_Atomic int returned;	/* the call returned */
	long ret;
	int err;
	uint64_t rval;		/* OP_READ: the value read */
	struct epoll_event ev[4];
};

static void on_usr1(int sig)
{
	(void)sig;
}

static long job_call(struct job *j)
{
	sigset_t none;
	struct timespec ts;

	switch (j->op) {
	case OP_WAIT:
		return j->kern ? epoll_wait(j->fd, j->ev, 4, j->timeout_ms)
			       : uepoll_wait(j->fd, j->ev, 4, j->timeout_ms);
	case OP_PWAIT:
		sigemptyset(&none);
		return j->kern ? epoll_pwait(j->fd, j->ev, 4, j->timeout_ms, &none)
			       : uepoll_pwait(j->fd, j->ev, 4, j->timeout_ms,
					      &none);
	case OP_PWAIT2:
		ts.tv_sec = j->timeout_ms / 1000;
		ts.tv_nsec = (long)(j->timeout_ms % 1000) * 1000000L;
		return j->kern ? epoll_pwait2(j->fd, j->ev, 4, &ts, NULL)
			       : uepoll_pwait2(j->fd, j->ev, 4, &ts, NULL);
	case OP_READ:
		return j->kern ? read(j->fd, &j->rval, 8)
			       : uepoll_read(j->fd, &j->rval, 8);
	case OP_WRITE:
		return j->kern ? write(j->fd, &j->val, 8)
			       : uepoll_write(j->fd, &j->val, 8);
	}
	return -1;
}

static void *job_main(void *arg)
{
	struct job *j = arg;
	int old;

	atomic_store(&j->tid, t_gettid());
	if (j->pending) {
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
		pthread_cancel(pthread_self());
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	}
	errno = 0;
	j->ret = job_call(j);
	j->err = errno;
	atomic_store(&j->returned, 1);
	return NULL;
}

static void job_start(struct job *j, pthread_t *th)
{
	REQUIRE(pthread_create(th, NULL, job_main, j) == 0);
	while (!atomic_load(&j->tid))
		t_sleep_ms(1);
}

/* Start j and wait until it is blocked in its call. */
static void job_block(struct job *j, pthread_t *th)
{
	job_start(j, th);
	CHECK(t_wait_sleeping(atomic_load(&j->tid), 10000));
	CHECK(!atomic_load(&j->returned));
}

/* Join within about ms; 1 if joined (*ret set). */
static int join_ret(pthread_t th, int ms, void **ret)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return pthread_timedjoin_np(th, ret, &ts) == 0;
}

/* A thread that did not end on its own: SIGUSR1 until it does. */
static void release(pthread_t th, void **ret)
{
	for (int i = 0; i < 100; i++) {
		pthread_kill(th, SIGUSR1);
		if (join_ret(th, 100, ret))
			return;
	}
	fprintf(stderr, "a thread could not be released\n");
	exit(1);
}

/* Cancel a blocked job; it must end with PTHREAD_CANCELED, without its
 * call returning.  Returns 1 if it was cancelled. */
static int cancel_job(struct job *j, pthread_t th, const char *what)
{
	void *ret = NULL;
	int joined;

	CHECK_EQ(pthread_cancel(th), 0);
	joined = join_ret(th, HANG_MS, &ret);
	if (!joined) {
		fprintf(stderr, "%s: the blocked call was not cancelled\n", what);
		CHECK(joined);
		release(th, &ret);
	}
	if (ret != PTHREAD_CANCELED)
		fprintf(stderr, "%s: thread not cancelled (returned=%d ret=%ld errno=%d)\n",
			what, atomic_load(&j->returned), j->ret, j->err);
	CHECK(ret == PTHREAD_CANCELED);
	CHECK(!atomic_load(&j->returned));
	return ret == PTHREAD_CANCELED;
}

/* A job that must return on its own (woken by an event) within ms. */
static void finish_job(struct job *j, pthread_t th, int ms, const char *what)
{
	void *ret = NULL;

	if (!join_ret(th, ms, &ret)) {
		fprintf(stderr, "%s: the waiter was not woken (hang)\n", what);
		CHECK(!"waiter woken");
		release(th, &ret);
	}
	CHECK(ret != PTHREAD_CANCELED);
	CHECK(atomic_load(&j->returned));
}

/* ---- kernel or uepoll, the same sequence ---- */

static int x_create(int kern)
{
	return kern ? epoll_create1(0) : uepoll_create1(0);
}

static int x_efd(int kern, unsigned int init, int flags)
{
	return kern ? eventfd(init, flags) : ueventfd(init, flags);
}

static int x_add(int kern, int ep, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return kern ? epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)
		    : uepoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static int x_write(int kern, int fd, uint64_t v)
{
	return kern ? eventfd_write(fd, v) : ueventfd_write(fd, v);
}

static int x_read(int kern, int fd, uint64_t *v)
{
	return kern ? eventfd_read(fd, v) : ueventfd_read(fd, v);
}

static int x_close(int kern, int fd)
{
	return kern ? close(fd) : uepoll_close(fd);
}

static const char *who(int kern)
{
	return kern ? "kernel" : "uepoll";
}

static void check_fds(int before, const char *what)
{
	int now = t_count_fds();

	if (now != before)
		fprintf(stderr, "%s: %d fds left open after close\n", what,
			now - before);
	CHECK_EQ(now, before);
}

/* lifo and calls: cancel a blocked wait, the instance still works, and
 * closing it leaves no fd. */
static void case_wait_call(int kern, enum op op)
{
	static const char *names[] = { "wait", "pwait", "pwait2" };
	char what[64];
	int fds = t_count_fds();
	int ep = x_create(kern), efd = x_efd(kern, 0, EFD_NONBLOCK);
	struct job j = { .kern = kern, .op = op, .timeout_ms = -1 };
	struct job j2 = { .kern = kern, .op = OP_WAIT, .timeout_ms = -1 };
	pthread_t th, th2;

	snprintf(what, sizeof(what), "%s %s", who(kern), names[op]);
	REQUIRE(ep >= 0 && efd >= 0);
	CHECK_EQ(x_add(kern, ep, efd, EPOLLIN, 1), 0);
	j.fd = j2.fd = ep;
	if (op == OP_PWAIT2)
		j.timeout_ms = 10000;
	job_block(&j, &th);
	cancel_job(&j, th, what);

	/* As if the call had returned: a new waiter is woken by a write. */
	job_block(&j2, &th2);
	CHECK_EQ(x_write(kern, efd, 1), 0);
	finish_job(&j2, th2, HANG_MS, what);
	CHECK_EQ(j2.ret, 1);
	CHECK_EQ(j2.ev[0].data.u64, 1);

	CHECK_EQ(x_close(kern, ep), 0);
	CHECK_EQ(x_close(kern, efd), 0);
	check_fds(fds, what);
}

static void case_lifo(void)
{
	case_wait_call(1, OP_WAIT);
	case_wait_call(0, OP_WAIT);
}

static void case_calls(void)
{
	case_wait_call(1, OP_PWAIT);
	case_wait_call(0, OP_PWAIT);
	case_wait_call(1, OP_PWAIT2);
	case_wait_call(0, OP_PWAIT2);
}

static void case_exclusive1(int kern)
{
	int fds = t_count_fds();
	int a = x_create(kern), b = x_create(kern);
	int efd = x_efd(kern, 0, EFD_NONBLOCK);
	struct job ja = { .kern = kern, .op = OP_WAIT, .timeout_ms = -1 };
	struct job jb = ja;
	pthread_t ta, tb;
	char what[64];

	snprintf(what, sizeof(what), "%s exclusive", who(kern));
	REQUIRE(a >= 0 && b >= 0 && efd >= 0);
	CHECK_EQ(x_add(kern, a, efd, EPOLLIN | EPOLLEXCLUSIVE, 7), 0);
	CHECK_EQ(x_add(kern, b, efd, EPOLLIN | EPOLLEXCLUSIVE, 8), 0);
	ja.fd = a;
	jb.fd = b;
	job_block(&ja, &ta);
	job_block(&jb, &tb);
	cancel_job(&ja, ta, what);
	CHECK_EQ(x_write(kern, efd, 1), 0);
	finish_job(&jb, tb, HANG_MS, what);
	CHECK_EQ(jb.ret, 1);
	CHECK_EQ(jb.ev[0].data.u64, 8);
	CHECK_EQ(x_close(kern, a), 0);
	CHECK_EQ(x_close(kern, b), 0);
	CHECK_EQ(x_close(kern, efd), 0);
	check_fds(fds, what);
}

static void case_exclusive(void)
{
	case_exclusive1(1);
	case_exclusive1(0);
}

static int set_window(int ep, uint32_t us)
{
	struct uepoll_batch pol = { .min_wait_us = us };

	return uepoll_batch(ep, &pol, NULL);
}

/* A dozing batching wait cancelled: the doorbell must not stay marked
 * rung (a plain waiter would then sleep through every write). */
static void case_batch_doze(void)
{
	int fds = t_count_fds();
	int ep = uepoll_create1(0), efd = ueventfd(0, EFD_NONBLOCK);
	struct job j = { .op = OP_WAIT, .timeout_ms = -1 };
	struct job j2 = j;
	pthread_t th, th2;

	REQUIRE(ep >= 0 && efd >= 0);
	CHECK_EQ(x_add(0, ep, efd, EPOLLIN, 3), 0);
	CHECK_EQ(set_window(ep, 2000000), 0);
	j.fd = j2.fd = ep;
	job_block(&j, &th);	/* dozes: the window is 2 s */
	cancel_job(&j, th, "batch-doze");
	CHECK_EQ(set_window(ep, 0), 0);

	job_block(&j2, &th2);
	CHECK_EQ(ueventfd_write(efd, 1), 0);
	finish_job(&j2, th2, HANG_MS, "batch-doze");
	CHECK_EQ(j2.ret, 1);
	CHECK_EQ(j2.ev[0].data.u64, 3);

	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_EQ(uepoll_close(efd), 0);
	check_fds(fds, "batch-doze");
}

/* A batching wait cancelled while it holds a level-triggered event on its
 * private list: the event is not lost. */
static void case_batch_hold(void)
{
	int fds = t_count_fds();
	int ep = uepoll_create1(0), efd = ueventfd(1, EFD_NONBLOCK);
	struct job j = { .op = OP_WAIT, .timeout_ms = -1 };
	struct epoll_event ev[4];
	pthread_t th;
	uint64_t v;
	int n;

	REQUIRE(ep >= 0 && efd >= 0);
	CHECK_EQ(x_add(0, ep, efd, EPOLLIN, 4), 0);
	CHECK_EQ(set_window(ep, 2000000), 0);
	j.fd = ep;
	job_block(&j, &th);	/* has collected the event, dozes */
	cancel_job(&j, th, "batch-hold");
	CHECK_EQ(set_window(ep, 0), 0);

	/* Level-triggered and still ready (counter 1): returned. */
	n = uepoll_wait(ep, ev, 4, 500);
	CHECK_EQ(n, 1);
	if (n == 1)
		CHECK_EQ(ev[0].data.u64, 4);
	n = uepoll_wait(ep, ev, 4, 0);
	CHECK_EQ(n, 1);
	/* Drain, then a new write is an event again. */
	CHECK_EQ(ueventfd_read(efd, &v), 0);
	CHECK_EQ(v, 1);
	CHECK_EQ(uepoll_wait(ep, ev, 4, 0), 0);
	CHECK_EQ(ueventfd_write(efd, 2), 0);
	n = uepoll_wait(ep, ev, 4, 500);
	CHECK_EQ(n, 1);
	if (n == 1)
		CHECK_EQ(ev[0].data.u64, 4);

	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_EQ(uepoll_close(efd), 0);
	check_fds(fds, "batch-hold");
}

static void case_fifo_leader(void)
{
	int fds = t_count_fds();
	int ep = uepoll_create2(0, UEPOLL_WAKE_FIFO);
	int efd = ueventfd(0, EFD_NONBLOCK);
	struct job j1 = { .op = OP_WAIT, .timeout_ms = -1 };
	struct job j2 = j1;
	pthread_t t1, t2;

	REQUIRE(ep >= 0 && efd >= 0);
	CHECK_EQ(x_add(0, ep, efd, EPOLLIN, 5), 0);
	j1.fd = j2.fd = ep;
	job_block(&j1, &t1);	/* the leader */
	job_block(&j2, &t2);	/* a follower */
	cancel_job(&j1, t1, "fifo-leader");
	CHECK_EQ(ueventfd_write(efd, 1), 0);
	finish_job(&j2, t2, HANG_MS, "fifo-leader");
	CHECK_EQ(j2.ret, 1);
	CHECK_EQ(j2.ev[0].data.u64, 5);
	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_EQ(uepoll_close(efd), 0);
	check_fds(fds, "fifo-leader");
}

static void case_fifo_follower(void)
{
	int fds = t_count_fds();
	int ep = uepoll_create2(0, UEPOLL_WAKE_FIFO);
	int efd = ueventfd(0, EFD_NONBLOCK);
	struct job j1 = { .op = OP_WAIT, .timeout_ms = -1 };
	struct job j2 = j1, j3 = j1;
	pthread_t t1, t2, t3;
	uint64_t v;

	REQUIRE(ep >= 0 && efd >= 0);
	CHECK_EQ(x_add(0, ep, efd, EPOLLIN, 6), 0);
	j1.fd = j2.fd = j3.fd = ep;
	job_block(&j1, &t1);	/* the leader */
	job_block(&j2, &t2);	/* a follower */
	cancel_job(&j2, t2, "fifo-follower");

	/* The leader gets the event (and hands over to nobody). */
	CHECK_EQ(ueventfd_write(efd, 1), 0);
	finish_job(&j1, t1, HANG_MS, "fifo-follower (leader)");
	CHECK_EQ(j1.ret, 1);
	CHECK_EQ(j1.ev[0].data.u64, 6);
	CHECK_EQ(ueventfd_read(efd, &v), 0);

	/* A thread that waits now leads, and is woken. */
	job_block(&j3, &t3);
	CHECK_EQ(ueventfd_write(efd, 1), 0);
	finish_job(&j3, t3, HANG_MS, "fifo-follower (next waiter)");
	CHECK_EQ(j3.ret, 1);
	CHECK_EQ(j3.ev[0].data.u64, 6);

	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_EQ(uepoll_close(efd), 0);
	check_fds(fds, "fifo-follower");
}

static void case_read1(int kern)
{
	int fds = t_count_fds();
	int efd = x_efd(kern, 0, 0);
	struct job j = { .kern = kern, .op = OP_READ };
	pthread_t th;
	uint64_t v = 0;
	char what[64];

	snprintf(what, sizeof(what), "%s read", who(kern));
	REQUIRE(efd >= 0);
	j.fd = efd;
	job_block(&j, &th);
	cancel_job(&j, th, what);
	/* As if the read had not happened: the counter works. */
	CHECK_EQ(x_write(kern, efd, 5), 0);
	CHECK_EQ(x_read(kern, efd, &v), 0);
	CHECK_EQ(v, 5);
	CHECK_EQ(x_close(kern, efd), 0);
	check_fds(fds, what);
}

static void case_read(void)
{
	case_read1(1);
	case_read1(0);
}

static void case_write1(int kern)
{
	int fds = t_count_fds();
	int efd = x_efd(kern, 0, 0);
	struct job j = { .kern = kern, .op = OP_WRITE, .val = 1 };
	pthread_t th;
	uint64_t v = 0;
	char what[64];

	snprintf(what, sizeof(what), "%s write", who(kern));
	REQUIRE(efd >= 0);
	CHECK_EQ(x_write(kern, efd, BIG), 0);
	j.fd = efd;
	job_block(&j, &th);
	cancel_job(&j, th, what);
	/* The cancelled write added nothing. */
	CHECK_EQ(x_read(kern, efd, &v), 0);
	CHECK(v == BIG);
	if (v != BIG)
		fprintf(stderr, "%s: counter %#llx, want %#llx\n", what,
			(unsigned long long)v, BIG);
	CHECK_EQ(x_close(kern, efd), 0);
	check_fds(fds, what);
}

static void case_write(void)
{
	case_write1(1);
	case_write1(0);
}

/*
 * A cancel pending when the call is made.  ready: a ueventfd with counter 1
 * is in the instance (the kernel still cancels: the check comes before the
 * system call).  Returns 1 if the thread was cancelled.
 */
static int pending1(int kern, int ready, int timeout_ms)
{
	int fds = t_count_fds();
	int ep = x_create(kern), efd = x_efd(kern, ready ? 1 : 0, EFD_NONBLOCK);
	struct job j = { .kern = kern, .op = OP_WAIT, .pending = 1 };
	void *ret = NULL;
	pthread_t th;
	char what[80];

	snprintf(what, sizeof(what), "%s pending (%s, timeout %d)", who(kern),
		 ready ? "ready" : "nothing ready", timeout_ms);
	REQUIRE(ep >= 0 && efd >= 0);
	CHECK_EQ(x_add(kern, ep, efd, EPOLLIN, 9), 0);
	j.fd = ep;
	j.timeout_ms = timeout_ms;
	job_start(&j, &th);
	if (!join_ret(th, HANG_MS, &ret)) {
		fprintf(stderr, "%s: the call did not act on the pending cancel\n",
			what);
		CHECK(!"pending cancel acted at the call");
		release(th, &ret);
	}
	if (ret != PTHREAD_CANCELED)
		fprintf(stderr, "%s: not cancelled (returned=%d ret=%ld)\n",
			what, atomic_load(&j.returned), j.ret);
	CHECK_EQ(x_close(kern, ep), 0);
	CHECK_EQ(x_close(kern, efd), 0);
	check_fds(fds, what);
	return ret == PTHREAD_CANCELED;
}

static void case_pending(void)
{
	static const struct {
		int ready, timeout_ms;
	} v[] = { { 0, -1 }, { 1, -1 }, { 0, 0 } };

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		int k = pending1(1, v[i].ready, v[i].timeout_ms);
		int u = pending1(0, v[i].ready, v[i].timeout_ms);

		if (k != u)
			fprintf(stderr, "pending (ready %d, timeout %d): kernel cancelled=%d, uepoll cancelled=%d\n",
				v[i].ready, v[i].timeout_ms, k, u);
		CHECK_EQ(u, k);
		if (i == 0)
			CHECK_EQ(k, 1);
	}
}

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
	{ "lifo", case_lifo },
	{ "calls", case_calls },
	{ "exclusive", case_exclusive },
	{ "batch-doze", case_batch_doze },
	{ "batch-hold", case_batch_hold },
	{ "fifo-leader", case_fifo_leader },
	{ "fifo-follower", case_fifo_follower },
	{ "read", case_read },
	{ "write", case_write },
	{ "pending", case_pending },
};

int main(int argc, char **argv)
{
	struct sigaction sa;
	int ran = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;	/* no SA_RESTART: waits fail with EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);

	t_begin("t_cancel");
	t_watchdog(120);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int before = t_failures;

		if (argc > 1 && strcmp(argv[1], cases[i].name))
			continue;
		cases[i].fn();
		ran++;
		printf("  %s: %s\n", cases[i].name,
		       t_failures == before ? "ok" : "FAIL");
		fflush(stdout);
	}
	if (!ran) {
		fprintf(stderr, "no case named %s\n", argv[1]);
		return 2;
	}
	return t_end();
}
