/*
 * t_signals: signals and uepoll_wait/pwait/pwait2.
 *  - uepoll_pwait() installs its sigmask atomically: a signal that is pending
 *    (blocked) before the call and unblocked by the call's mask interrupts
 *    it at once with EINTR, and its handler runs; the old mask is restored
 *  - a signal arriving while blocked in uepoll_pwait() with a mask that
 *    unblocks it gives EINTR
 *  - a signal blocked by the pwait mask does not interrupt it
 *  - uepoll_wait() returns EINTR when a handler interrupts it, even with
 *    SA_RESTART (epoll_wait is never restarted)
 *  - uepoll_pwait2()'s nanosecond timeout is honoured
 */
#include "testlib.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

static volatile sig_atomic_t handled;

static void on_sig(int sig)
{
	(void)sig;
	handled++;
}

static void set_handler(int restart)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
}

enum mode {
	M_PENDING_PWAIT,	/* signal pending before pwait unblocks it */
	M_PWAIT,		/* arrives during pwait that unblocks it */
	M_PWAIT2,		/* same with pwait2 */
	M_PWAIT_BLOCKED,	/* pwait's mask blocks it */
	M_WAIT_RESTART,		/* plain wait, SA_RESTART handler */
};

struct waiter {
	enum mode mode;
	int ep;
	int tid;
	int started;
	int ret;
	int err;
	int handled_at_return;
	int still_blocked_after;
	uint64_t elapsed_ns;
};

static void *waiter_main(void *p)
{
	struct waiter *w = p;
	struct epoll_event ev[2];
	sigset_t block, unblocked, now;
	struct timespec ts = { 10, 0 };
	uint64_t t0;

	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	/* the thread normally blocks SIGUSR1, except for M_PWAIT_BLOCKED
	 * and M_WAIT_RESTART where it is normally unblocked */
	if (w->mode == M_PWAIT_BLOCKED || w->mode == M_WAIT_RESTART)
		pthread_sigmask(SIG_UNBLOCK, &block, NULL);
	else
		pthread_sigmask(SIG_BLOCK, &block, NULL);
	pthread_sigmask(SIG_SETMASK, NULL, &unblocked);
	sigdelset(&unblocked, SIGUSR1);

	w->tid = t_gettid();
	if (w->mode == M_PENDING_PWAIT)
		pthread_kill(pthread_self(), SIGUSR1); /* stays pending */
	__atomic_store_n(&w->started, 1, __ATOMIC_SEQ_CST);
	t0 = t_now_ns();
	errno = 0;
	switch (w->mode) {
	case M_PENDING_PWAIT:
	case M_PWAIT:
		w->ret = uepoll_pwait(w->ep, ev, 2, 10000, &unblocked);
		break;
	case M_PWAIT2:
		w->ret = uepoll_pwait2(w->ep, ev, 2, &ts, &unblocked);
		break;
	case M_PWAIT_BLOCKED:
		w->ret = uepoll_pwait(w->ep, ev, 2, 400, &block);
		break;
	case M_WAIT_RESTART:
		w->ret = uepoll_wait(w->ep, ev, 2, 10000);
		break;
	}
	w->err = errno;
	w->handled_at_return = handled;
	w->elapsed_ns = t_now_ns() - t0;
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	w->still_blocked_after = sigismember(&now, SIGUSR1);
	/* let anything still pending be delivered before the thread ends */
	pthread_sigmask(SIG_UNBLOCK, &block, NULL);
	return NULL;
}

static void run(enum mode mode, int restart)
{
	struct waiter w;
	pthread_t th;
	sigset_t block, old;

	/* main never takes SIGUSR1 itself */
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	set_handler(restart);
	handled = 0;
	memset(&w, 0, sizeof(w));
	w.mode = mode;
	w.ep = uepoll_create1(0);
	REQUIRE(w.ep >= 0);
	REQUIRE(pthread_create(&th, NULL, waiter_main, &w) == 0);
	while (!__atomic_load_n(&w.started, __ATOMIC_SEQ_CST))
		t_sleep_ms(1);
	if (mode != M_PENDING_PWAIT) {
		CHECK(t_wait_sleeping(w.tid, 10000));
		pthread_kill(th, SIGUSR1);
	}
	REQUIRE(t_join_within(th, 12000));

	switch (mode) {
	case M_PENDING_PWAIT:
	case M_PWAIT:
	case M_PWAIT2:
		if (w.ret != -1 || w.err != EINTR) {
			fprintf(stderr, "mode %d: got %d errno %d, want EINTR\n",
				mode, w.ret, w.err);
			t_failures++;
		}
		if (w.handled_at_return != 1) {
			fprintf(stderr, "mode %d: handler ran %d times by return\n",
				mode, w.handled_at_return);
			t_failures++;
		}
		/* the mask in force before the call is back */
		CHECK(w.still_blocked_after);
		/* not the 10 s timeout */
		CHECK(w.elapsed_ns < 9000000000ull);
		break;
	case M_PWAIT_BLOCKED:
		/*
		 * Ran to its timeout instead of EINTR.  The handler runs as
		 * the old mask comes back on return, so by then it has run.
		 */
		CHECK_EQ(w.ret, 0);
		CHECK(!w.still_blocked_after);
		CHECK_EQ(handled, 1);
		break;
	case M_WAIT_RESTART:
		if (w.ret != -1 || w.err != EINTR) {
			fprintf(stderr, "uepoll_wait with SA_RESTART: got %d errno %d, want EINTR\n",
				w.ret, w.err);
			t_failures++;
		}
		CHECK_EQ(w.handled_at_return, 1);
		CHECK(w.elapsed_ns < 9000000000ull);
		break;
	}
	CHECK_EQ(uepoll_close(w.ep), 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	signal(SIGUSR1, SIG_DFL);
}

static void test_pwait2_timeout(void)
{
	struct epoll_event ev[2];
	struct timespec ts = { 0, 30 * 1000 * 1000 + 123 };
	int ep = uepoll_create1(0);
	uint64_t t0, dt;
	sigset_t ss;

	REQUIRE(ep >= 0);
	sigemptyset(&ss);
	t0 = t_now_ns();
	CHECK_EQ(uepoll_pwait2(ep, ev, 2, &ts, NULL), 0);
	dt = t_now_ns() - t0;
	CHECK(dt >= 30000000u);
	CHECK(dt < 10000000000ull);

	/* a sub-millisecond timeout is not rounded down to 0 busy-polling
	 * forever nor turned into "infinite" */
	ts.tv_sec = 0;
	ts.tv_nsec = 500000;
	t0 = t_now_ns();
	CHECK_EQ(uepoll_pwait2(ep, ev, 2, &ts, &ss), 0);
	dt = t_now_ns() - t0;
	CHECK(dt >= 500000u);
	CHECK(dt < 10000000000ull);

	/* one second and a bit, in both fields */
	ts.tv_sec = 1;
	ts.tv_nsec = 1000;
	t0 = t_now_ns();
	CHECK_EQ(uepoll_pwait2(ep, ev, 2, &ts, &ss), 0);
	dt = t_now_ns() - t0;
	CHECK(dt >= 1000001000ull);
	CHECK(dt < 11000000000ull);

	/* zero timespec: immediate */
	ts.tv_sec = 0;
	ts.tv_nsec = 0;
	CHECK_EQ(uepoll_pwait2(ep, ev, 2, &ts, &ss), 0);
	CHECK_EQ(uepoll_close(ep), 0);
}

int main(void)
{
	t_begin("t_signals");
	t_watchdog(120);
	run(M_PENDING_PWAIT, 0);
	run(M_PWAIT, 0);
	run(M_PWAIT2, 0);
	run(M_PWAIT, 1);
	run(M_PWAIT_BLOCKED, 0);
	run(M_WAIT_RESTART, 1);
	run(M_WAIT_RESTART, 0);
	test_pwait2_timeout();
	return t_end();
}
