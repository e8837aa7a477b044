/*
 * t_fork_fifo: fork() while other threads of the parent wait in an instance.
 *
 * After fork() the child has its own copy of every instance (uepoll.h) and
 * none of the parent's other threads: whatever those threads
 * were doing in an instance at the time (leading or following in a
 * UEPOLL_WAKE_FIFO line, sleeping, dozing in a batching wait, counted as a
 * sleeper for EPOLLEXCLUSIVE), the child's copy must behave as an instance
 * that nobody waits in.  Checked, each in a child forked while the parent's
 * waiter threads are asleep in uepoll_wait (timeout 300 ms, in a loop):
 *  - FIFO, one thread waiting (the leader), and two (a leader and a follower
 *    in the line): the child writes the watched ueventfd and calls
 *    uepoll_wait(..., 1500), which returns 1 with the registration's data
 *    without blocking (no voluntary context switch of the thread during the
 *    call: the event is ready), and with timeout -1 too (a hang is caught by
 *    the parent: bounded waitpid, kill -9, failure);
 *  - LIFO, one thread waiting: the same (a control);
 *  - EPOLLEXCLUSIVE: a ueventfd registered exclusively in instances A and B,
 *    a parent thread asleep in A.  In the child nobody waits in A, so, as the
 *    kernel's exclusive wakeup passes over an epoll without waiters, a write
 *    queues the event in both: write, then uepoll_wait on B (1500, without
 *    blocking; and -1) and on A (0) each return it.  Without
 *    ThreadSanitizer also: the child's main thread sleeps in B and a child
 *    thread writes; the sleeper is woken.
 *  (Only write-then-wait is used where a parent thread sleeps in the same
 *  instance: the instance's kernel epoll is shared across fork, so a
 *  doorbell rung by the child may wake the parent's thread instead.)
 *  - a batching instance (uepoll_batch, 1 s window) with a thread dozing in
 *    it at fork time, FIFO and LIFO: the child's write then
 *    uepoll_wait(maxevents 1, 1500 without blocking / -1) returns the
 *    event (rule 1: maxevents reached, at once).  Without ThreadSanitizer
 *    also with the child's own waiter asleep when a child thread writes (it
 *    gets the event by the end of the window at the latest).
 *  - after each child, the parent's own waiters still work: one write per
 *    waiter, each taken by one of them, and they all end.
 * The child reports through its exit status (0 ok; else the step that
 * failed, with a line on stderr).  Under ThreadSanitizer the child of a
 * multi-threaded process must not start threads: the parts that need a
 * child thread are skipped there.
 */
#include "testlib.h"

#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>


#define WAITER_TIMEOUT_MS 300

/* ---- the parent's waiters ------------------------------------------------ */

struct waiter {
	pthread_t th;
	int ep, efd, maxev;
	atomic_int tid;
	atomic_int stop;
	atomic_ulong got; /* sum of the values it read */
	atomic_int err;	  /* errno of an unexpected failure */
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct epoll_event ev[4];
	uint64_t v;

	atomic_store(&w->tid, t_gettid());
	while (!atomic_load(&w->stop)) {
		int n = uepoll_wait(w->ep, ev, w->maxev, WAITER_TIMEOUT_MS);

		if (n < 0 && errno != EINTR) {
			atomic_store(&w->err, errno);
			return NULL;
		}
		/* Another waiter may have read it first: EAGAIN is fine. */
		if (n > 0 && ueventfd_read(w->efd, &v) == 0)
			atomic_fetch_add(&w->got, v);
	}
	return NULL;
}

/* Start a waiter on ep and wait until it is asleep in uepoll_wait. */
static void waiter_start(struct waiter *w, int ep, int efd, int maxev)
{
	memset(w, 0, sizeof(*w));
	w->ep = ep;
	w->efd = efd;
	w->maxev = maxev;
	REQUIRE(pthread_create(&w->th, NULL, waiter_main, w) == 0);
	while (!atomic_load(&w->tid))
		t_sleep_ms(1);
	REQUIRE(t_wait_sleeping(atomic_load(&w->tid), 5000));
}

static unsigned long waiters_got(struct waiter *w, int n)
{
	unsigned long s = 0;

	for (int i = 0; i < n; i++)
		s += atomic_load(&w[i].got);
	return s;
}

/*
 * The parent's waiters still work after the fork: n writes, one at a time,
 * each taken (bounded), then stop them.
 */
static void waiters_check_and_stop(const char *name, struct waiter *w, int n,
				   int efd)
{
	for (int i = 0; i < n; i++) {
		uint64_t end = t_now_ns() + 3000000000ull;

		CHECK_EQ(ueventfd_write(efd, 1), 0);
		while (waiters_got(w, n) < (unsigned long)i + 1 &&
		       t_now_ns() < end)
			t_sleep_ms(1);
		if (waiters_got(w, n) != (unsigned long)i + 1) {
			fprintf(stderr,
				"%s: parent's waiters took %lu of %d writes\n",
				name, waiters_got(w, n), i + 1);
			t_failures++;
		}
	}
	for (int i = 0; i < n; i++)
		atomic_store(&w[i].stop, 1);
	for (int i = 0; i < n; i++) {
		CHECK(t_join_within(w[i].th, 2 * WAITER_TIMEOUT_MS + 2000));
		CHECK_EQ(atomic_load(&w[i].err), 0);
	}
}

/* ---- children -------------------------------------------------------------- */

__attribute__((format(printf, 2, 3), noreturn)) static void
child_fail(int code, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0 && write(2, buf, (size_t)n < sizeof(buf) ? (size_t)n
							   : sizeof(buf) - 1) < 0)
		code = 99;
	_exit(code);
}

/* uepoll_wait(ep, maxev, timeout) must return exactly one event, data. */
static void child_expect_one(int step, int ep, int maxev, int timeout,
			     uint64_t data)
{
	struct epoll_event ev[4];
	int n = uepoll_wait(ep, ev, maxev, timeout);

	if (n != 1)
		child_fail(step, "child: uepoll_wait(timeout %d) returned %d "
				 "(errno %d), want 1 (step %d)\n",
			   timeout, n, n < 0 ? errno : 0, step);
	if (ev[0].data.u64 != data)
		child_fail(step + 1, "child: event data %llu, want %llu (step %d)\n",
			   (unsigned long long)ev[0].data.u64,
			   (unsigned long long)data, step);
}

static void child_expect_value(int step, int efd, uint64_t want)
{
	uint64_t v = 0;

	if (ueventfd_read(efd, &v) != 0 || v != want)
		child_fail(step, "child: ueventfd_read gave %llu (errno %d), "
				 "want %llu (step %d)\n",
			   (unsigned long long)v, errno,
			   (unsigned long long)want, step);
}

/* What a child does, given the parent's objects. */
struct objs {
	int ep;	     /* the instance the parent's threads wait in */
	int ep2;     /* EPOLLEXCLUSIVE: the second instance; else -1 */
	int efd;     /* the ueventfd they watch (data 1 in ep, 2 in ep2) */
	int maxev;   /* maxevents of the child's wait */
	int timeout; /* of the child's wait */
};

/* Voluntary context switches of the calling thread so far. */
static long child_nvcsw(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nvcsw : -1;
}

/*
 * Write, then wait: the event is there already, so the wait returns it
 * without blocking, as epoll_wait does (no duration is measured: a wait
 * that blocked shows as a voluntary context switch of the thread; one that
 * sleeps to its timeout before it looks returns the right count, late).
 */
static void child_write_then_wait(const struct objs *o)
{
	long cs;

	if (ueventfd_write(o->efd, 1) != 0)
		child_fail(2, "child: ueventfd_write failed, errno %d\n", errno);
	cs = child_nvcsw();
	child_expect_one(10, o->ep, o->maxev, o->timeout, 1);
	cs = child_nvcsw() - cs;
	if (cs != 0)
		child_fail(15, "child: uepoll_wait(timeout %d) blocked (%ld "
			       "voluntary context switches) with its event "
			       "ready\n", o->timeout, cs);
	child_expect_value(20, o->efd, 1);
	_exit(0);
}

/* EPOLLEXCLUSIVE: nobody waits in A (o->ep) in the child, so the write is
 * queued in B (o->ep2) as well; A has it too. */
static void child_excl_write_then_wait(const struct objs *o)
{
	long cs;

	if (ueventfd_write(o->efd, 1) != 0)
		child_fail(2, "child: ueventfd_write failed, errno %d\n", errno);
	cs = child_nvcsw();
	child_expect_one(10, o->ep2, o->maxev, o->timeout, 2);
	cs = child_nvcsw() - cs;
	if (cs != 0)
		child_fail(15, "child: uepoll_wait(timeout %d) blocked (%ld "
			       "voluntary context switches) with its event "
			       "ready\n", o->timeout, cs);
	child_expect_value(20, o->efd, 1);
	_exit(0);
}

#ifndef T_TSAN
struct cwriter {
	int efd, sleeper_tid;
	atomic_int writing; /* set just before the write */
};

static void *cwriter_main(void *arg)
{
	struct cwriter *c = arg;

	if (!t_wait_sleeping(c->sleeper_tid, 5000))
		child_fail(40, "child: main thread never seen asleep\n");
	atomic_store(&c->writing, 1);
	if (ueventfd_write(c->efd, 1) != 0)
		child_fail(41, "child: ueventfd_write failed, errno %d\n", errno);
	return NULL;
}

/* The child's own waiter, asleep in wep, is woken by a child thread's
 * write (wdata: its registration's data). */
static void child_own_waiter(int wep, uint64_t wdata, const struct objs *o)
{
	struct cwriter c = { .efd = o->efd, .sleeper_tid = t_gettid() };
	pthread_t th;

	if (pthread_create(&th, NULL, cwriter_main, &c) != 0)
		child_fail(42, "child: pthread_create failed\n");
	child_expect_one(10, wep, o->maxev, o->timeout, wdata);
	if (!atomic_load(&c.writing))
		child_fail(43, "child: the wait returned before the write\n");
	pthread_join(th, NULL);
	child_expect_value(20, o->efd, 1);
	_exit(0);
}

static void child_excl_own_waiter(const struct objs *o)
{
	child_own_waiter(o->ep2, 2, o);
}

static void child_plain_own_waiter(const struct objs *o)
{
	child_own_waiter(o->ep, 1, o);
}
#endif

static int add(int ep, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return uepoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* Fork, run fn in the child, wait for it (bounded), check its status. */
static void fork_case(const char *name, void (*fn)(const struct objs *),
		      const struct objs *o, int bound_ms)
{
	uint64_t end = t_now_ns() + (uint64_t)bound_ms * 1000000u;
	pid_t pid, w;
	int st = 0;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		/* The fork shared the parent's ueventfd (its watchers the
		 * kernel's, shared with the parent's waiters): the child
		 * watches a fresh one of its own, registered as that one was.
		 * Its registration in the inherited instances is the kernel
		 * epolls' the parent shares (FORKED in port.c), so, with
		 * EPOLLEXCLUSIVE, only in B: in A and B, the kernel's
		 * exclusive wakeup would go to the parent's waiter in A and
		 * leave B's list empty. */
		struct objs c = *o;
		uint32_t ex = o->ep2 >= 0 ? EPOLLEXCLUSIVE : 0;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		c.efd = ueventfd(0, EFD_NONBLOCK);
		if (c.efd < 0 ||
		    (c.ep2 < 0 && add(c.ep, c.efd, EPOLLIN | ex, 1) != 0) ||
		    (c.ep2 >= 0 && add(c.ep2, c.efd, EPOLLIN | ex, 2) != 0))
			child_fail(3, "child: fresh ueventfd: errno %d\n", errno);
		fn(&c);
		_exit(98);
	}
	while ((w = waitpid(pid, &st, WNOHANG)) == 0 && t_now_ns() < end)
		t_sleep_ms(5);
	if (w == 0) {
		kill(pid, SIGKILL);
		REQUIRE(waitpid(pid, &st, 0) == pid);
		fprintf(stderr, "%s: child HUNG (still running after %d ms), killed\n",
			name, bound_ms);
		t_failures++;
		return;
	}
	REQUIRE(w == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "%s: child failed (%s %d)\n", name,
			WIFEXITED(st) ? "exit" : "signal",
			WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		t_failures++;
	}
}

/* ---- cases ------------------------------------------------------------------ */

/* nwait threads of the parent wait in an instance created with uflags
 * (and batch, if not NULL); children run each fn in turn. */
static void case_waiting(const char *name, unsigned uflags,
			 const struct uepoll_batch *batch, int nwait,
			 int own_waiter)
{
	struct waiter w[2];
	struct objs o = { .ep2 = -1, .maxev = batch ? 1 : 4 };
	char label[128];

	o.ep = uepoll_create2(0, uflags);
	o.efd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(o.ep >= 0 && o.efd >= 0);
	if (batch)
		REQUIRE(uepoll_batch(o.ep, batch, NULL) == 0);
	REQUIRE(add(o.ep, o.efd, EPOLLIN, 1) == 0);
	for (int i = 0; i < nwait; i++)
		waiter_start(&w[i], o.ep, o.efd, batch ? 1 : 4);

	o.timeout = 1500;
	snprintf(label, sizeof(label), "%s, child write+wait(1500)", name);
	fork_case(label, child_write_then_wait, &o, 5000);
	o.timeout = -1;
	snprintf(label, sizeof(label), "%s, child write+wait(-1)", name);
	fork_case(label, child_write_then_wait, &o, 3000);
#ifndef T_TSAN
	if (own_waiter) {
		o.timeout = 1500;
		snprintf(label, sizeof(label),
			 "%s, child's waiter woken by a child thread", name);
		fork_case(label, child_plain_own_waiter, &o, 5000);
	}
#else
	(void)own_waiter;
#endif
	waiters_check_and_stop(name, w, nwait, o.efd);
	CHECK_EQ(uepoll_close(o.efd), 0);
	CHECK_EQ(uepoll_close(o.ep), 0);
}

static void case_exclusive(void)
{
	const char *name = "EPOLLEXCLUSIVE in A and B, parent asleep in A";
	struct objs o = { .maxev = 4 };
	struct waiter w;
	char label[160];

	o.ep = uepoll_create1(0);
	o.ep2 = uepoll_create1(0);
	o.efd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(o.ep >= 0 && o.ep2 >= 0 && o.efd >= 0);
	REQUIRE(add(o.ep, o.efd, EPOLLIN | EPOLLEXCLUSIVE, 1) == 0);
	REQUIRE(add(o.ep2, o.efd, EPOLLIN | EPOLLEXCLUSIVE, 2) == 0);
	waiter_start(&w, o.ep, o.efd, 4);

	o.timeout = 1500;
	snprintf(label, sizeof(label), "%s, child write+wait B(1500)", name);
	fork_case(label, child_excl_write_then_wait, &o, 5000);
	o.timeout = -1;
	snprintf(label, sizeof(label), "%s, child write+wait B(-1)", name);
	fork_case(label, child_excl_write_then_wait, &o, 3000);
#ifndef T_TSAN
	o.timeout = 1500;
	snprintf(label, sizeof(label),
		 "%s, child asleep in B woken by a child thread", name);
	fork_case(label, child_excl_own_waiter, &o, 5000);
#endif
	waiters_check_and_stop(name, &w, 1, o.efd);
	CHECK_EQ(uepoll_close(o.efd), 0);
	CHECK_EQ(uepoll_close(o.ep), 0);
	CHECK_EQ(uepoll_close(o.ep2), 0);
}

int main(void)
{
	/* A window longer than the waiters' timeout: they doze until it. */
	struct uepoll_batch b = { .min_wait_us = 1000000 };

	t_begin("t_fork_fifo");
	t_watchdog(60);
#ifdef T_TSAN
	printf("note: ThreadSanitizer: the child-thread parts are skipped\n");
#endif
	case_waiting("FIFO, 1 waiter (leader)", UEPOLL_WAKE_FIFO, NULL, 1, 0);
	case_waiting("FIFO, 2 waiters (leader + follower)", UEPOLL_WAKE_FIFO,
		     NULL, 2, 0);
	case_waiting("LIFO, 1 waiter (control)", UEPOLL_WAKE_LIFO, NULL, 1, 0);
	case_exclusive();
	case_waiting("batching FIFO, 1 waiter dozing", UEPOLL_WAKE_FIFO, &b, 1,
		     1);
	case_waiting("batching LIFO, 1 waiter dozing", UEPOLL_WAKE_LIFO, &b, 1,
		     1);
	return t_end();
}
