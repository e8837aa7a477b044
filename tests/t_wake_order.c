/*
 * t_wake_order: which of an instance's blocked threads takes a wakeup.
 *  - LIFO (default, UEPOLL_WAKE_LIFO): the same sequence as the kernel's
 *    epoll with the same threads blocked in the same order (differential);
 *  - FIFO (UEPOLL_WAKE_FIFO): N threads that blocked in order 0..N-1 take
 *    N*K events sent one at a time in exactly the order 0,1,..,N-1,0,1,..
 *    for a ueventfd and for a pipe (a kernel fd);
 *  - FIFO keeps epoll_wait's contract for a thread waiting in the line: its
 *    timeout returns 0, a signal handler makes it return EINTR (even with
 *    SA_RESTART), the sigmask of uepoll_pwait applies while it waits;
 *  - a bounded stress of FIFO waits with short random timeouts: every event
 *    written is read exactly once (counts balance) and none is stranded;
 *  - uflags validation (both orders at once: EINVAL).
 */
#include "testlib.h"

#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#define N 4
#define K 6

enum { KERNEL, LIFO, FIFO };
static const char *kind_name[] = { "kernel", "uepoll-lifo", "uepoll-fifo" };

struct waiter {
	int idx, tid;
	pthread_t th;
};

static struct waiter w[N];
static int ep, src, wr, is_pipe, kind;
static int seq[N * K + 8], nseq;
static int stop_fd;

static int do_wait(struct epoll_event *ev, int timeout)
{
	return kind == KERNEL ? epoll_wait(ep, ev, 1, timeout)
			      : uepoll_wait(ep, ev, 1, timeout);
}

static void *waiter_main(void *arg)
{
	struct waiter *me = arg;
	struct epoll_event ev;

	__atomic_store_n(&me->tid, t_gettid(), __ATOMIC_SEQ_CST);
	for (;;) {
		if (do_wait(&ev, -1) != 1)
			continue;
		if (ev.data.u64 == 1)
			return NULL;
		if (is_pipe) {
			char c;

			while (read(src, &c, 1) == 1)
				;
		} else {
			uint64_t v;

			if (kind == KERNEL)
				CHECK_EQ(read(src, &v, 8), 8);
			else
				CHECK_EQ(ueventfd_read(src, &v), 0);
		}
		int i = __atomic_load_n(&nseq, __ATOMIC_SEQ_CST);

		seq[i] = me->idx;
		__atomic_store_n(&nseq, i + 1, __ATOMIC_SEQ_CST);
	}
}

static void send_one(void)
{
	if (is_pipe)
		CHECK_EQ(write(wr, "x", 1), 1);
	else if (kind == KERNEL)
		CHECK_EQ(eventfd_write(wr, 1), 0);
	else
		CHECK_EQ(ueventfd_write(wr, 1), 0);
}

/* Block N threads in order 0..N-1, then send N*K events one at a time;
 * seq gets who took each. */
static void run(int k, int pipe_src)
{
	struct epoll_event ev;
	int p[2];

	kind = k;
	is_pipe = pipe_src;
	nseq = 0;
	if (kind == KERNEL)
		ep = epoll_create1(0);
	else
		ep = uepoll_create2(0, kind == FIFO ? UEPOLL_WAKE_FIFO
						    : UEPOLL_WAKE_LIFO);
	REQUIRE(ep >= 0);
	if (is_pipe) {
		REQUIRE(pipe2(p, O_NONBLOCK) == 0);
		src = p[0];
		wr = p[1];
		stop_fd = eventfd(0, EFD_NONBLOCK);
	} else if (kind == KERNEL) {
		src = wr = eventfd(0, EFD_NONBLOCK);
		stop_fd = eventfd(0, EFD_NONBLOCK);
	} else {
		src = wr = ueventfd(0, EFD_NONBLOCK);
		stop_fd = ueventfd(0, EFD_NONBLOCK);
	}
	REQUIRE(src >= 0 && stop_fd >= 0);
	ev.events = EPOLLIN | EPOLLET;
	ev.data.u64 = 0;
	REQUIRE((kind == KERNEL ? epoll_ctl(ep, EPOLL_CTL_ADD, src, &ev)
				: uepoll_ctl(ep, EPOLL_CTL_ADD, src, &ev)) == 0);
	ev.events = EPOLLIN; /* level: every thread sees the stop */
	ev.data.u64 = 1;
	REQUIRE((kind == KERNEL ? epoll_ctl(ep, EPOLL_CTL_ADD, stop_fd, &ev)
				: uepoll_ctl(ep, EPOLL_CTL_ADD, stop_fd, &ev)) == 0);
	for (int i = 0; i < N; i++) {
		w[i].idx = i;
		w[i].tid = 0;
		REQUIRE(pthread_create(&w[i].th, NULL, waiter_main, &w[i]) == 0);
		while (!__atomic_load_n(&w[i].tid, __ATOMIC_SEQ_CST))
			t_sleep_ms(1);
		REQUIRE(t_wait_sleeping(w[i].tid, 10000));
	}
	for (int e = 0; e < N * K; e++) {
		send_one();
		for (int t = 0; t < 10000 && __atomic_load_n(&nseq, __ATOMIC_SEQ_CST) < e + 1; t++)
			t_sleep_ms(1);
		REQUIRE(__atomic_load_n(&nseq, __ATOMIC_SEQ_CST) == e + 1);
		/* the thread that took it is back in its wait */
		REQUIRE(t_wait_sleeping(w[seq[e]].tid, 10000));
	}
	if (kind == KERNEL || is_pipe)
		CHECK_EQ(eventfd_write(stop_fd, 1), 0);
	else
		CHECK_EQ(ueventfd_write(stop_fd, 1), 0);
	for (int i = 0; i < N; i++)
		CHECK(t_join_within(w[i].th, 10000));
	CHECK_EQ(nseq, N * K);
	printf("%-12s %-9s:", kind_name[kind], is_pipe ? "pipe" : "eventfd");
	for (int e = 0; e < N * K; e++)
		printf(" %d", seq[e]);
	printf("\n");
	if (kind == KERNEL) {
		close(ep);
		close(src);
		close(stop_fd);
	} else {
		CHECK_EQ(uepoll_close(ep), 0);
		CHECK_EQ(uepoll_close(src), 0);
		CHECK_EQ(uepoll_close(stop_fd), 0);
	}
	if (is_pipe)
		close(wr);
}

/* --- a thread waiting in the line keeps epoll_wait's contract --- */

static volatile sig_atomic_t got_sig;
static void on_sig(int s)
{
	(void)s;
	got_sig = 1;
}

struct lw {
	int ep, timeout, use_mask, r, err, tid;
	pthread_t th;
};

static void *line_waiter(void *arg)
{
	struct lw *l = arg;
	struct epoll_event ev;
	sigset_t none;

	sigemptyset(&none);
	__atomic_store_n(&l->tid, t_gettid(), __ATOMIC_SEQ_CST);
	l->r = l->use_mask ? uepoll_pwait(l->ep, &ev, 1, l->timeout, &none)
			   : uepoll_wait(l->ep, &ev, 1, l->timeout);
	l->err = errno;
	return NULL;
}

static void start(struct lw *l)
{
	l->tid = 0;
	REQUIRE(pthread_create(&l->th, NULL, line_waiter, l) == 0);
	while (!__atomic_load_n(&l->tid, __ATOMIC_SEQ_CST))
		t_sleep_ms(1);
	REQUIRE(t_wait_sleeping(l->tid, 10000));
}

static void test_line_contract(void)
{
	struct sigaction sa = { .sa_handler = on_sig, .sa_flags = SA_RESTART };
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 9 };
	struct lw lead = { 0 }, f = { 0 };
	sigset_t usr1, old;
	int efd;

	ep = uepoll_create2(0, UEPOLL_WAKE_FIFO);
	efd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(ep >= 0 && efd >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	/* SIGUSR1 blocked in every thread from here on, except through the
	 * sigmask argument of uepoll_pwait. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	REQUIRE(pthread_sigmask(SIG_BLOCK, &usr1, &old) == 0);

	lead.ep = f.ep = ep;
	lead.timeout = -1;
	start(&lead); /* the leader: sleeps in the kernel */

	/* a follower's timeout returns 0 */
	f.timeout = 50;
	f.use_mask = 0;
	REQUIRE(pthread_create(&f.th, NULL, line_waiter, &f) == 0);
	CHECK(t_join_within(f.th, 10000));
	CHECK_EQ(f.r, 0);

	/* a follower with SIGUSR1 blocked by its thread but open in the
	 * sigmask of uepoll_pwait: the signal interrupts it, SA_RESTART or not */
	f.timeout = -1;
	f.use_mask = 1;
	got_sig = 0;
	start(&f);
	REQUIRE(pthread_kill(f.th, SIGUSR1) == 0);
	CHECK(t_join_within(f.th, 10000));
	CHECK_EQ(f.r, -1);
	CHECK_EQ(f.err, EINTR);
	CHECK_EQ(got_sig, 1);

	/* the same without the sigmask: the signal stays blocked and
	 * pending, the wait goes on until the event comes */
	f.use_mask = 0;
	got_sig = 0;
	start(&f);
	REQUIRE(pthread_kill(f.th, SIGUSR1) == 0);
	t_sleep_ms(20);
	CHECK_EQ(got_sig, 0);
	/* two events, level-triggered: the leader takes one, hands over,
	 * the follower (now leading) takes the next */
	CHECK_EQ(ueventfd_write(efd, 1), 0);
	CHECK(t_join_within(lead.th, 10000));
	CHECK(t_join_within(f.th, 10000));
	CHECK_EQ(lead.r, 1);
	CHECK_EQ(f.r, 1);
	{
		sigset_t pend;
		int sig;

		sigpending(&pend);
		if (sigismember(&pend, SIGUSR1))
			sigwait(&usr1, &sig);
	}
	REQUIRE(pthread_sigmask(SIG_SETMASK, &old, NULL) == 0);
	signal(SIGUSR1, SIG_DFL);
	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_EQ(uepoll_close(efd), 0);
}

/* --- stress: short random timeouts while the lead changes hands --- */

#define ST 4
static _Atomic long st_read, st_stop;
static int st_ep, st_efd;

static void *stress_waiter(void *arg)
{
	uint64_t rs = (uint64_t)(uintptr_t)arg * 7919 + 1;
	struct epoll_event ev[2];

	while (!atomic_load(&st_stop)) {
		/* 0 to 3 ms: some polls, mostly short sleeps that end in
		 * the line, in the lead or during a handover */
		int n = uepoll_wait(st_ep, ev, 1 + (int)(t_rand(&rs) % 2),
				    (int)(t_rand(&rs) % 4));
		for (int i = 0; i < n; i++) {
			uint64_t v;

			if (ueventfd_read(st_efd, &v) == 0)
				atomic_fetch_add(&st_read, (long)v);
		}
		if (n < 0)
			CHECK_EQ(errno, EINTR);
	}
	return NULL;
}

static void test_stress(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	uint64_t rs = t_seed(42);
	long total = 0, rounds = (long)(20000 * t_scale());
	pthread_t th[ST];

	st_ep = uepoll_create2(0, UEPOLL_WAKE_FIFO);
	st_efd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(st_ep >= 0 && st_efd >= 0);
	REQUIRE(uepoll_ctl(st_ep, EPOLL_CTL_ADD, st_efd, &ev) == 0);
	for (int i = 0; i < ST; i++)
		REQUIRE(pthread_create(&th[i], NULL, stress_waiter,
				       (void *)(uintptr_t)(i + 1)) == 0);
	for (long r = 0; r < rounds; r++) {
		uint64_t v = 1 + t_rand(&rs) % 3;

		CHECK_EQ(ueventfd_write(st_efd, v), 0);
		total += (long)v;
		if (t_rand(&rs) % 64 == 0) {
			/* every write so far must be read without another
			 * write: nothing is stranded while the lead passes */
			for (int t = 0; t < 10000 && atomic_load(&st_read) < total; t++)
				t_sleep_ms(1);
			CHECK_EQ(atomic_load(&st_read), total);
		}
	}
	for (int t = 0; t < 10000 && atomic_load(&st_read) < total; t++)
		t_sleep_ms(1);
	CHECK_EQ(atomic_load(&st_read), total);
	atomic_store(&st_stop, 1);
	for (int i = 0; i < ST; i++)
		CHECK(t_join_within(th[i], 10000));
	printf("stress: %ld rounds, %ld written, %ld read\n", rounds, total,
	       (long)atomic_load(&st_read));
	/* The lead was handed on, never lost: a thread that now blocks with
	 * no timeout leads and takes the next event.  (Short timeouts hide a
	 * lost lead: the followers' last looks still take the events.) */
	{
		struct lw l = { .ep = st_ep, .timeout = -1 };

		start(&l);
		CHECK_EQ(ueventfd_write(st_efd, 1), 0);
		CHECK(t_join_within(l.th, 10000));
		CHECK_EQ(l.r, 1);
	}
	CHECK_EQ(uepoll_close(st_ep), 0);
	CHECK_EQ(uepoll_close(st_efd), 0);
}

int main(void)
{
	int kseq[N * K];

	t_begin("t_wake_order");
	t_watchdog(240);

	CHECK_ERR(uepoll_create2(0, UEPOLL_WAKE_LIFO | UEPOLL_WAKE_FIFO), EINVAL);
	CHECK_ERR(uepoll_create2(0, 0x100u), EINVAL);

	for (int pipe_src = 0; pipe_src < 2; pipe_src++) {
		run(KERNEL, pipe_src);
		memcpy(kseq, seq, sizeof(kseq));
		run(LIFO, pipe_src);
		for (int e = 0; e < N * K; e++)
			CHECK_EQ(seq[e], kseq[e]);
		run(FIFO, pipe_src);
		for (int e = 0; e < N * K; e++)
			CHECK_EQ(seq[e], e % N);
	}
	test_line_contract();
	test_stress();
	return t_end();
}
