/*
 * t_signal_write: ueventfd writes and reads from a signal handler.
 *
 * write(2) and read(2) on an eventfd are async-signal-safe, so
 * ueventfd_write/uepoll_write/uepoll_read/ueventfd_read on a ueventfd must be
 * too, whatever the interrupted thread was doing in the library, for every
 * spin setting (spinning or UEPOLL_NOSPIN), wake order
 * (UEPOLL_WAKE_LIFO, UEPOLL_WAKE_FIFO), with and without a min-wait batching
 * policy (uepoll_batch, min_wait_us 200), and with the ueventfd's coalescing
 * off, on (ueventfd_coalesce delay 100 us) and holding writes
 * (UEVENTFD_HOLD_WRITES).  A timer (timer_create, CLOCK_MONOTONIC,
 * SIGEV_THREAD_ID) sends SIGUSR1 to one thread every 10..90 us (50 on
 * average; the handler re-arms it), and the handler writes (or reads) the
 * ueventfd.  Checked for each combination:
 *  A. the thread writes the ueventfd (watched by an instance; it also waits
 *     on the instance and reads now and then) while its handler writes the
 *     same ueventfd;
 *  B. a single-threaded loop uepoll_wait(ep, ..., -1) + uepoll_read, woken
 *     only by the handler's writes (EINTR from the wait is expected);
 *  C. a reader thread blocked in uepoll_read on a blocking ueventfd, woken
 *     by the writes of another thread and of that thread's handler
 *     (coalescing off / on / holding writes);
 *  D. the handler reads a non-blocking ueventfd (registered EPOLLIN|EPOLLOUT
 *     in an instance) while the interrupted thread writes it and waits on the
 *     instance (both queue kinds, coalescing off / on / holding writes);
 *  E. the first held write of a coalescing ueventfd in the process (the one
 *     that needs the coalescing timer) is made by the handler while the
 *     interrupted thread is inside malloc()/free() (coalescing on / holding
 *     writes; 16 runs, as each process has one first write).
 * In each: nothing hangs, the handler never sees an error (D: other than
 * EAGAIN), and after the timer is stopped and everything drained, the sum
 * read equals the number of writes made (main thread + handler).  B is also
 * run on a kernel epoll + kernel eventfd as the reference: its counts must
 * balance the same way, and there a level-triggered eventfd that is not read
 * stays ready in every zero-timeout look (checked in B too).
 *
 * Each combination runs in a child process of the (single-threaded) test
 * process, so that a deadlock in one is reported by name and the others
 * still run: a child whose progress counter (shared memory) stops moving
 * for a second (two at scale 0.5) is killed and counted as hung.  The
 * parent never uses the library, so the children may start threads under
 * ThreadSanitizer too.
 */
#include "testlib.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define TICK_NS 50000L	   /* the handler's mean timer period */
#define TICK_MIN_NS 10000L /* its shortest */

/* ---- the handler -------------------------------------------------------- */

enum hmode {
	H_OFF,
	H_UWRITE, /* ueventfd_write / uepoll_write, alternately */
	H_UREAD,  /* uepoll_read / ueventfd_read (non-blocking), alternately */
	H_KWRITE, /* write(2) on a kernel eventfd (the reference) */
};

static volatile sig_atomic_t h_mode;
static volatile sig_atomic_t h_fd = -1;
static atomic_ulong h_calls;	/* handler runs that did something */
static atomic_ulong h_writes;	/* successful handler writes */
static atomic_ulong h_readsum;	/* sum of the values the handler read */
static atomic_ulong h_errors;	/* unexpected failures in the handler */
static volatile sig_atomic_t h_first_errno;
static timer_t h_timer;	    /* the running tick timer */
static uint64_t h_rng = 1;  /* the handler's own PRNG state */

static void h_error(int e)
{
	if (atomic_fetch_add(&h_errors, 1) == 0)
		h_first_errno = e;
}

static void on_tick(int sig)
{
	int saved = errno, fd = h_fd;
	unsigned long n;
	uint64_t one = 1, v = 0;

	(void)sig;
	if (h_mode == H_OFF || fd < 0) {
		errno = saved;
		return;
	}
	n = atomic_fetch_add(&h_calls, 1);
	switch (h_mode) {
	case H_UWRITE:
		if ((n & 1) ? uepoll_write(fd, &one, sizeof(one)) == sizeof(one)
			    : ueventfd_write(fd, 1) == 0)
			atomic_fetch_add(&h_writes, 1);
		else
			h_error(errno);
		break;
	case H_KWRITE:
		if (write(fd, &one, sizeof(one)) == sizeof(one))
			atomic_fetch_add(&h_writes, 1);
		else
			h_error(errno);
		break;
	case H_UREAD:
		if ((n & 1) ? uepoll_read(fd, &v, sizeof(v)) == sizeof(v)
			    : ueventfd_read(fd, &v) == 0)
			atomic_fetch_add(&h_readsum, v);
		else if (errno != EAGAIN)
			h_error(errno);
		break;
	default:
		break;
	}
	/* Next tick in 10..90 us (timer_settime is async-signal-safe): a
	 * varying period keeps the ticks from locking onto the phase of the
	 * interrupted loop. */
	h_rng = h_rng * 6364136223846793005ull + 1442695040888963407ull;
	{
		struct itimerspec its = {
			.it_value = { 0, TICK_MIN_NS +
					      (long)((h_rng >> 33) %
						     (2 * (TICK_NS - TICK_MIN_NS))) },
		};

		timer_settime(h_timer, 0, &its, NULL);
	}
	errno = saved;
}

static void handler_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_tick;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
}

static void handler_arm(enum hmode mode, int fd)
{
	atomic_store(&h_calls, 0);
	atomic_store(&h_writes, 0);
	atomic_store(&h_readsum, 0);
	atomic_store(&h_errors, 0);
	h_first_errno = 0;
	h_fd = fd;
	h_mode = mode;
}

/* A one-shot timer that sends SIGUSR1 to thread tid; the handler re-arms
 * it (every 10..90 us) while it has something to do. */
static void tick_start(int tid)
{
	struct sigevent sev;
	struct itimerspec its = { .it_value = { 0, TICK_NS } };

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGUSR1;
	sev.sigev_notify_thread_id = tid;
	REQUIRE(timer_create(CLOCK_MONOTONIC, &sev, &h_timer) == 0);
	REQUIRE(timer_settime(h_timer, 0, &its, NULL) == 0);
}

/* Stop the ticks; called by the thread they signal, so that no handler run
 * is in progress when the counters are read afterwards. */
static void tick_stop(void)
{
	h_mode = H_OFF; /* a tick still pending does nothing */
	CHECK_EQ(timer_delete(h_timer), 0);
}

/* ---- combinations -------------------------------------------------------- */

struct cfg {
	unsigned spin;	   /* 0 or UEPOLL_NOSPIN */
	unsigned wake;	   /* UEPOLL_WAKE_LIFO or UEPOLL_WAKE_FIFO */
	int batch;	   /* min-wait policy of 200 us on the instance */
	int co;		   /* 0 none, 1 delay 100 us, 2 delay 100 us + hold */
};

static const char *co_name[] = { "nocoalesce", "coalesce100", "hold100" };

/* The name of a run: the settings that apply to its scenario (show: 1 the
 * spin setting, 2 the wake order, 4 the batching policy). */
static void cfg_name(const struct cfg *c, int show, char *buf, size_t len)
{
	const char *rq = c->spin ? "nospin," : "spin,";
	const char *wake = c->wake == UEPOLL_WAKE_FIFO ? "fifo," : "lifo,";
	const char *batch = c->batch ? "batch200," : "nobatch,";

	snprintf(buf, len, "%s%s%s%s", show & 1 ? rq : "", show & 2 ? wake : "",
		 show & 4 ? batch : "", co_name[c->co]);
}

static int open_instance(const struct cfg *c)
{
	int ep = uepoll_create2(0, c->spin | c->wake);

	REQUIRE(ep >= 0);
	if (c->batch) {
		struct uepoll_batch b = { .min_wait_us = 200 };

		REQUIRE(uepoll_batch(ep, &b, NULL) == 0);
	}
	return ep;
}

static int open_efd(const struct cfg *c, int flags)
{
	int fd = ueventfd(0, flags);

	REQUIRE(fd >= 0);
	if (c->co) {
		struct ueventfd_coalesce co = {
			.delay_us = 100,
			.flags = c->co == 2 ? UEVENTFD_HOLD_WRITES : 0,
		};

		REQUIRE(ueventfd_coalesce(fd, &co, NULL) == 0);
	}
	return fd;
}

/* ---- shared with the parent: the child's progress ------------------------ */

static atomic_ulong *progress; /* MAP_SHARED page */

static void tick_progress(void)
{
	atomic_fetch_add_explicit(progress, 1, memory_order_relaxed);
}

static unsigned long target_signals(void)
{
	unsigned long n = (unsigned long)(2000 * t_scale());

	return n < 200 ? 200 : n;
}

/* How long a run may last at most (the signal target usually ends it in
 * the plain build; sanitizers deliver signals more slowly). */
static uint64_t run_cap_ns(void)
{
	return (uint64_t)(300e6 * t_scale());
}

/* Read the ueventfd through the instance until sum reaches want (held
 * writes are shown by the timer thread: wait for them, boundedly). */
static void drain_via(int ep, int efd, uint64_t *sum, uint64_t want)
{
	uint64_t deadline = t_now_ns() + 5000000000ull, v;
	struct epoll_event ev[4];

	while (*sum < want && t_now_ns() < deadline) {
		int n = uepoll_wait(ep, ev, 4, 20);

		tick_progress();
		if (n < 0) {
			CHECK(errno == EINTR);
			continue;
		}
		if (n > 0 && ueventfd_read(efd, &v) == 0)
			*sum += v;
	}
	/* Nothing more: the counter is empty now. */
	CHECK_ERR(ueventfd_read(efd, &v), EAGAIN);
	CHECK_ERR(ueventfd_read(efd, &v), EAGAIN);
}

static void check_handler_clean(const char *what)
{
	if (atomic_load(&h_errors)) {
		fprintf(stderr, "%s: handler saw %lu errors, first errno %d (%s)\n",
			what, atomic_load(&h_errors), (int)h_first_errno,
			strerror(h_first_errno));
		t_failures++;
	}
}

/*
 * A: this thread writes the watched ueventfd while its handler writes it;
 * now and then it waits (timeout 1 ms: batching and FIFO apply) and reads.
 */
static void run_a(const struct cfg *c)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 }, out[4];
	int ep = open_instance(c), efd = open_efd(c, EFD_NONBLOCK);
	uint64_t sum = 0, mine = 0, v, t0;
	unsigned long want = target_signals();

	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
	handler_arm(H_UWRITE, efd);
	tick_start(t_gettid());
	t0 = t_now_ns();
	for (unsigned long i = 0; atomic_load(&h_writes) < want &&
				  t_now_ns() - t0 < run_cap_ns(); i++) {
		uint64_t one = 1;
		int r = (i & 1) ? ueventfd_write(efd, 1)
				: (uepoll_write(efd, &one, 8) == 8 ? 0 : -1);

		CHECK_EQ(r, 0);
		if (r == 0)
			mine++;
		if (i % 128 == 0) {
			int n = uepoll_wait(ep, out, 4, 1);

			if (n < 0) {
				CHECK(errno == EINTR);
			} else if (n > 0) {
				CHECK_EQ(out[0].data.u64, 7);
				/* Readable and nobody else reads it. */
				CHECK_EQ(ueventfd_read(efd, &v), 0);
				sum += v;
			}
		}
		tick_progress();
	}
	tick_stop();
	CHECK(atomic_load(&h_writes) > 0);
	drain_via(ep, efd, &sum, mine + atomic_load(&h_writes));
	CHECK_EQ(sum, mine + atomic_load(&h_writes));
	check_handler_clean("A");
	CHECK_EQ(uepoll_close(efd), 0);
	CHECK_EQ(uepoll_close(ep), 0);
}

/*
 * B: one thread, uepoll_wait(-1) + uepoll_read, woken only by its handler's
 * writes.
 */
static void run_b(const struct cfg *c)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 11 }, out[4];
	int ep = open_instance(c), efd = open_efd(c, EFD_NONBLOCK);
	unsigned long want = target_signals();
	uint64_t sum = 0, v, t0;

	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
	handler_arm(H_UWRITE, efd);
	tick_start(t_gettid());
	t0 = t_now_ns();
	while (atomic_load(&h_writes) < want && t_now_ns() - t0 < run_cap_ns()) {
		/* (Ticks keep coming: each wait returns.) */
		int n = uepoll_wait(ep, out, 4, -1);

		tick_progress();
		if (n < 0) {
			if (errno != EINTR) {
				CHECK(errno == EINTR);
				break;
			}
			continue;
		}
		CHECK_EQ(n, 1);
		CHECK_EQ(out[0].data.u64, 11);
		/* Look again before reading, as a loop that polls its other
		 * sources would: the level-triggered item is still ready, so
		 * each look harvests it under the ready queue's lock, which is
		 * where a tick must land to catch the bug (a tick that finds
		 * the thread asleep, or the queue empty, hits no lock). */
		for (int k = 0; k < 64; k++) {
			n = uepoll_wait(ep, out, 4, 0);
			/* Still ready: 1 (0 is tolerated with held writes
			 * only: the timer thread may then be half-way through
			 * queueing the item, readyq.c, not a signal matter). */
			CHECK(n == 1 || (n == 0 && c->co == 2) ||
			      (n < 0 && errno == EINTR));
		}
		CHECK_EQ(uepoll_read(efd, &v, sizeof(v)), 8);
		sum += v;
	}
	tick_stop();
	drain_via(ep, efd, &sum, atomic_load(&h_writes));
	CHECK_EQ(sum, atomic_load(&h_writes));
	check_handler_clean("B");
	CHECK_EQ(uepoll_close(efd), 0);
	CHECK_EQ(uepoll_close(ep), 0);
}

/* C: a reader thread blocked in uepoll_read. */
struct reader {
	int fd;
	uint64_t sum;
	atomic_ulong expect; /* 0 until the writer is done */
	atomic_int done;
	int err;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	sigset_t s;
	uint64_t v;

	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	for (;;) {
		unsigned long e;

		if (uepoll_read(r->fd, &v, sizeof(v)) != sizeof(v)) {
			if (errno == EINTR)
				continue;
			r->err = errno;
			atomic_store(&r->done, 1);
			return NULL;
		}
		r->sum += v;
		e = atomic_load(&r->expect);
		if (e && r->sum >= e) {
			atomic_store(&r->done, 1);
			return NULL;
		}
	}
}

static void run_c(const struct cfg *c)
{
	struct reader rd = { .fd = open_efd(c, 0) };
	unsigned long want = target_signals();
	uint64_t mine = 0, t0;
	pthread_t th;

	REQUIRE(pthread_create(&th, NULL, reader_main, &rd) == 0);
	handler_arm(H_UWRITE, rd.fd);
	tick_start(t_gettid());
	t0 = t_now_ns();
	for (unsigned long i = 0; atomic_load(&h_writes) < want &&
				  t_now_ns() - t0 < run_cap_ns(); i++) {
		CHECK_EQ(ueventfd_write(rd.fd, 1), 0);
		mine++;
		/* Let the reader block: the handler's writes wake it. */
		if (i % 4 == 3) {
			struct timespec ts = { 0, 30000 };

			nanosleep(&ts, NULL);
		}
		tick_progress();
	}
	tick_stop();
	atomic_store(&rd.expect, mine + atomic_load(&h_writes) + 1);
	CHECK_EQ(ueventfd_write(rd.fd, 1), 0);
	/* Bounded: a reader that missed its wakeup stops the progress count
	 * and the parent reports the run as hung. */
	for (uint64_t end = t_now_ns() + 5000000000ull;
	     !atomic_load(&rd.done) && t_now_ns() < end;)
		t_sleep_ms(1), tick_progress();
	REQUIRE(atomic_load(&rd.done));
	REQUIRE(pthread_join(th, NULL) == 0);
	CHECK_EQ(rd.err, 0);
	CHECK_EQ(rd.sum, mine + atomic_load(&h_writes) + 1);
	check_handler_clean("C");
	CHECK_EQ(uepoll_close(rd.fd), 0);
}

/* D: the handler reads while this thread writes and waits. */
static void run_d(const struct cfg *c)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.u64 = 9 },
			   out[4];
	int ep = open_instance(c), efd = open_efd(c, EFD_NONBLOCK);
	unsigned long want = target_signals();
	uint64_t mine = 0, sum = 0, v, t0, deadline;

	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
	handler_arm(H_UREAD, efd);
	tick_start(t_gettid());
	t0 = t_now_ns();
	for (unsigned long i = 0; atomic_load(&h_calls) < want &&
				  t_now_ns() - t0 < run_cap_ns(); i++) {
		CHECK_EQ(ueventfd_write(efd, 1), 0);
		mine++;
		if (i % 4 == 0) {
			/* EPOLLOUT is always ready: 1 (0 is tolerated with
			 * held writes only: the timer thread may then be
			 * half-way through queueing the item, readyq.c, not
			 * a signal matter). */
			int n = uepoll_wait(ep, out, 4, 0);

			CHECK(n == 1 || (n == 0 && c->co == 2) ||
			      (n < 0 && errno == EINTR));
		}
		tick_progress();
	}
	tick_stop();
	/* What the handler did not take is still there (held writes are
	 * shown within the delay). */
	deadline = t_now_ns() + 5000000000ull;
	while (sum + atomic_load(&h_readsum) < mine && t_now_ns() < deadline) {
		if (ueventfd_read(efd, &v) == 0)
			sum += v;
		else
			t_sleep_ms(1);
		tick_progress();
	}
	CHECK(atomic_load(&h_readsum) > 0);
	CHECK_EQ(sum + atomic_load(&h_readsum), mine);
	CHECK_ERR(ueventfd_read(efd, &v), EAGAIN);
	check_handler_clean("D");
	CHECK_EQ(uepoll_close(efd), 0);
	CHECK_EQ(uepoll_close(ep), 0);
}

static void *idle_main(void *arg)
{
	atomic_int *quit = arg;
	sigset_t s;

	sigfillset(&s);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	while (!atomic_load(quit))
		t_sleep_ms(1);
	return NULL;
}

/*
 * E: the first held write of the process (the one that needs the
 * coalescing timer) is made by the handler, while the interrupted thread is
 * inside malloc() (an idle second thread makes malloc take its locks).
 * write(2) may interrupt malloc; so may a ueventfd write.
 */
static void run_e(const struct cfg *c)
{
	int efd = open_efd(c, EFD_NONBLOCK);
	atomic_int quit = 0;
	uint64_t sum = 0, v, t0, deadline;
	pthread_t th;

	REQUIRE(pthread_create(&th, NULL, idle_main, &quit) == 0);
	handler_arm(H_UWRITE, efd);
	tick_start(t_gettid());
	t0 = t_now_ns();
	while (atomic_load(&h_writes) < 20 && t_now_ns() - t0 < run_cap_ns()) {
		volatile char *p = malloc(48 * 1024);

		REQUIRE(p);
		p[0] = 1;
		free((void *)p);
		tick_progress();
	}
	tick_stop();
	atomic_store(&quit, 1);
	REQUIRE(pthread_join(th, NULL) == 0);
	deadline = t_now_ns() + 5000000000ull;
	while (sum < atomic_load(&h_writes) && t_now_ns() < deadline) {
		if (ueventfd_read(efd, &v) == 0)
			sum += v;
		else
			t_sleep_ms(1);
		tick_progress();
	}
	CHECK_EQ(sum, atomic_load(&h_writes));
	check_handler_clean("E");
	CHECK_EQ(uepoll_close(efd), 0);
}

/* ---- the runner ---------------------------------------------------------- */

static int nruns, nhung, nfailed;

/* Run fn(c) in a child; 1 if it passed. */
static int run_child(const char *scen, void (*fn)(const struct cfg *),
		     const struct cfg *c, int show)
{
	/* A run makes progress every few microseconds: a second without any
	 * is a deadlock (doubled at scale 0.5, for the sanitizers). */
	uint64_t stall_ns = (uint64_t)(1e9 / (t_scale() < 1 ? t_scale() : 1));
	unsigned long last;
	uint64_t last_change;
	char name[96];
	pid_t pid;
	int st;

	cfg_name(c, show, name, sizeof(name));
	nruns++;
	atomic_store(progress, 0);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		int fds;

		/* Die with the parent (its watchdog) rather than stay hung. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fds = t_count_fds();
		t_failures = 0;
		fn(c);
		if (t_count_fds() != fds) {
			fprintf(stderr, "fd leak: %d -> %d\n", fds,
				t_count_fds());
			t_failures++;
		}
		fflush(stdout);
		fflush(stderr);
		_exit(t_failures ? 1 : 0);
	}
	last = atomic_load(progress);
	last_change = t_now_ns();
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		unsigned long p;

		if (w == pid)
			break;
		REQUIRE(w == 0);
		p = atomic_load(progress);
		if (p != last) {
			last = p;
			last_change = t_now_ns();
		} else if (t_now_ns() - last_change > stall_ns) {
			kill(pid, SIGKILL);
			REQUIRE(waitpid(pid, &st, 0) == pid);
			fprintf(stderr,
				"%s %s: HUNG (no progress for %.1f s after %lu steps), killed\n",
				scen, name, stall_ns / 1e9, p);
			nhung++;
			t_failures++;
			return 0;
		}
		t_sleep_ms(2);
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "%s %s: FAILED (%s %d)\n", scen, name,
			WIFEXITED(st) ? "exit" : "signal",
			WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		nfailed++;
		t_failures++;
		return 0;
	}
	return 1;
}

/* B's loop on a kernel epoll and a kernel eventfd: the reference. */
static void kernel_reference(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 11 }, out[4];
	int ep = epoll_create1(0), efd = eventfd(0, EFD_NONBLOCK);
	unsigned long want = target_signals();
	uint64_t sum = 0, v;

	REQUIRE(ep >= 0 && efd >= 0);
	REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
	handler_arm(H_KWRITE, efd);
	tick_start(t_gettid());
	while (atomic_load(&h_writes) < want) {
		/* Not -1: under ThreadSanitizer a signal that lands just
		 * before the call has its handler (the write) deferred to the
		 * thread's next intercepted call, which would never come. */
		int n = epoll_wait(ep, out, 4, 100);

		if (n == 0)
			continue;
		if (n < 0) {
			if (errno != EINTR) {
				CHECK(errno == EINTR);
				break;
			}
			continue;
		}
		CHECK_EQ(n, 1);
		CHECK_EQ(out[0].data.u64, 11);
		for (int k = 0; k < 64; k++) {
			n = epoll_wait(ep, out, 4, 0);
			CHECK(n == 1 || (n < 0 && errno == EINTR));
		}
		CHECK_EQ(read(efd, &v, sizeof(v)), 8);
		sum += v;
	}
	tick_stop();
	while (epoll_wait(ep, out, 4, 0) == 1 && read(efd, &v, sizeof(v)) == 8)
		sum += v;
	CHECK_EQ(sum, atomic_load(&h_writes));
	check_handler_clean("kernel reference");
	CHECK_EQ(close(efd), 0);
	CHECK_EQ(close(ep), 0);
}

int main(void)
{
	static const unsigned rqs[] = { 0, UEPOLL_NOSPIN };
	static const unsigned wakes[] = { UEPOLL_WAKE_LIFO, UEPOLL_WAKE_FIFO };
	struct cfg c;

	t_begin("t_signal_write");
	t_watchdog(60);
	unsetenv("UEPOLL_EVENTFD_COALESCE");
	progress = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(progress != MAP_FAILED);
	handler_install();

	kernel_reference();

	for (int q = 0; q < 2; q++)
		for (int w = 0; w < 2; w++)
			for (int b = 0; b < 2; b++)
				for (int co = 0; co < 3; co++) {
					c = (struct cfg){ rqs[q], wakes[w], b, co };
					run_child("A(write vs handler write)", run_a, &c, 7);
					run_child("B(wait -1 woken by handler)", run_b, &c, 7);
				}
	for (int co = 0; co < 3; co++) {
		c = (struct cfg){ 0, UEPOLL_WAKE_LIFO, 0, co };
		run_child("C(blocked reader, handler writes)", run_c, &c, 0);
	}
	for (int q = 0; q < 2; q++)
		for (int co = 0; co < 3; co++) {
			c = (struct cfg){ rqs[q], UEPOLL_WAKE_LIFO, 0, co };
			run_child("D(handler reads vs write)", run_d, &c, 1);
		}
	for (int i = 0; i < 16; i++) {
		c = (struct cfg){ 0, UEPOLL_WAKE_LIFO, 0,
				  1 + i % 2 };
		run_child("E(first held write in a handler, vs malloc)", run_e,
			  &c, 0);
	}
	printf("%d runs: %d hung, %d failed\n", nruns, nhung, nfailed);
	fflush(stdout);
	CHECK_EQ(munmap(progress, 4096), 0);
	return t_end();
}
