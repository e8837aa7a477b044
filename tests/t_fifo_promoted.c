/*
 * t_fifo_promoted: UEPOLL_WAKE_FIFO, a follower that leaves the line just
 * as the leader hands it the lead (models/turn.pml, src/turn.c).
 *
 * Three threads wait on one instance, in order: L leads (sleeps in the
 * instance), F and G follow (each sleeps in ppoll on an eventfd of its
 * own).  A write wakes L, which hands the lead to F when it returns: under
 * the line's lock, F is marked promoted, then its eventfd is written.  At
 * that write (L's hook) F leaves its sleep another way, and the
 * hook waits until F is blocked on the line's lock, so that F finds itself
 * promoted when it gets the lock (the hook: libcwrap's wrap_hook_all,
 * which sees every system call of the library; it
 * knows F's eventfd by the pollfd of F's ppoll):
 *  - timeout: F's timeout passes; F must lead for one look, then hand over;
 *  - signal: a handler (no SA_RESTART) interrupts F's sleep; F returns
 *    EINTR and must hand the lead on;
 *  - cancel: F is cancelled (pthread_cancel); its cleanup must pass the
 *    lead on.
 * Either way the lead must reach G: once L and F are gone, a write must
 * wake G, as the kernel wakes a thread blocked in epoll_wait while the
 * event is ready.  G still asleep after 5 s is the lost lead (a follower
 * that kept it, or dropped it); G is then released by a signal.
 *
 * No clock decides: the hook reads F's state and system call in /proc
 * (through fds opened beforehand) and yields until F is where it must be;
 * a hang ends at the watchdog.  F's timeout (timeout case) must not pass
 * before the hook: if F has left its sleep by then (a slow machine), the
 * round is run again with a longer timeout.
 */
#include "libcwrap.h"
#include "testlib.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { BY_TIMEOUT, BY_SIGNAL, BY_CANCEL };
static const char *const how_name[] = { "timeout", "signal", "cancel" };

struct waiter {
	pthread_t th;
	_Atomic int tid;
	int timeout_ms;
	int lead;	    /* arms the hook (L) */
	_Atomic int done;   /* uepoll_wait returned */
	int ret, err;
	struct epoll_event ev;
	int stat_fd, sys_fd; /* its /proc stat and syscall files */
};

static int ep, efd, how, f_efd;
static struct waiter L, F, G;
static _Atomic int hook_on, staged;
static __thread int hooked_thread; /* L, in its wait */

/* The system call a thread is in while it does not run (-1 if it runs),
 * its state letter in *st.  No allocation, no fd: called in the hook. */
static long where(struct waiter *w, char *st)
{
	char buf[512], *p = NULL;
	ssize_t n = pread(w->stat_fd, buf, sizeof(buf) - 1, 0);

	*st = 0;
	if (n > 0) {
		buf[n] = 0;
		for (char *q = buf; *q; q++)
			if (*q == ')')
				p = q;
		if (p && p[1] == ' ')
			*st = p[2];
	}
	n = pread(w->sys_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	if (buf[0] < '0' || buf[0] > '9')
		return -1; /* "running" */
	return strtol(buf, NULL, 10);
}

/* Until w sleeps in system call nr (or has returned: 0). */
static int until_in(struct waiter *w, long nr)
{
	char st;

	for (;;) {
		if (atomic_load(&w->done))
			return 0;
		if (where(w, &st) == nr && st == 'S')
			return 1;
		sched_yield();
	}
}

/* L's hook: the handover's write of F's eventfd, made under the line's
 * lock with F promoted. */
static void hook(void)
{
	char st;


	/* F leaves the line only under the lock this thread holds: if it is
	 * still in its ppoll, it is the one promoted. */
	if (where(&F, &st) != SYS_ppoll)
		return; /* its timeout came first: not staged */
	atomic_store(&staged, 1);
	if (how == BY_SIGNAL)
		REQUIRE(pthread_kill(F.th, SIGUSR1) == 0);
	else if (how == BY_CANCEL)
		REQUIRE(pthread_cancel(F.th) == 0);
	/* F (its timeout, handler or cleanup) waits for the lock. */
	until_in(&F, SYS_futex);
}

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", t_gettid());
	w->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", t_gettid());
	w->sys_fd = open(path, O_RDONLY | O_CLOEXEC);
	REQUIRE(w->stat_fd >= 0 && w->sys_fd >= 0);
	atomic_store(&w->tid, t_gettid());
	hooked_thread = w->lead;
	w->ret = uepoll_wait(ep, &w->ev, 1, w->timeout_ms);
	w->err = errno;
	hooked_thread = 0;
	if (w->lead && w->ret == 1) {
		uint64_t v;

		CHECK_EQ(ueventfd_read(efd, &v), 0);
	}
	atomic_store(&w->done, 1);
	return NULL;
}

/* The fd a waiter blocked in ppoll polls (its eventfd): the pollfd's
 * address is the call's first argument (/proc). */
static int polled_fd(struct waiter *w)
{
	char buf[256];
	ssize_t n = pread(w->sys_fd, buf, sizeof(buf) - 1, 0);
	unsigned long long pfd;
	long nr;

	REQUIRE(n > 0);
	buf[n] = 0;
	REQUIRE(sscanf(buf, "%ld %llx", &nr, &pfd) == 2 && nr == SYS_ppoll);
	return ((struct pollfd *)(uintptr_t)pfd)->fd;
}

static void start(struct waiter *w, int timeout_ms, int lead)
{
	w->timeout_ms = timeout_ms;
	w->lead = lead;
	atomic_store(&w->tid, 0);
	atomic_store(&w->done, 0);
	w->ret = -2;
	REQUIRE(pthread_create(&w->th, NULL, waiter_main, w) == 0);
	while (!atomic_load(&w->tid))
		sched_yield();
}

/* Join w; 1 if it ended within ms. */
static int finish(struct waiter *w, int ms, void **res)
{
	int ok = t_join_ret_within(w->th, ms, res);

	if (!ok) {
		/* Release it (EINTR) to end the test cleanly. */
		pthread_kill(w->th, SIGUSR1);
		REQUIRE(pthread_join(w->th, res) == 0);
	}
	close(w->stat_fd);
	close(w->sys_fd);
	return ok;
}

/* One round; 0 if it was not staged (F's timeout came before the
 * handover). */
static int round_(int h, int f_timeout_ms)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };
	void *res = NULL;
	uint64_t v;

	how = h;
	atomic_store(&staged, 0);
	ep = uepoll_create2(0, UEPOLL_WAKE_FIFO);
	efd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(ep >= 0 && efd >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);

	start(&L, -1, 1);
	REQUIRE(t_wait_sleeping(atomic_load(&L.tid), 10000));
	start(&F, f_timeout_ms, 0);
	REQUIRE(t_blocked_in(atomic_load(&F.tid), 10000) == SYS_ppoll);
	f_efd = polled_fd(&F);
	start(&G, -1, 0);
	REQUIRE(t_blocked_in(atomic_load(&G.tid), 10000) == SYS_ppoll);

	/* L takes this and hands over: the hook. */
	atomic_store(&hook_on, 1);
	CHECK_EQ(ueventfd_write(efd, 1), 0);
	CHECK(finish(&L, 10000, NULL));
	CHECK_EQ(L.ret, 1);
	CHECK(finish(&F, 10000, &res));
	atomic_store(&hook_on, 0);
	if (!atomic_load(&staged)) {
		/* F's timeout came first: the lead went to G (no hook), or
		 * F had left its sleep at the hook. */
		CHECK_EQ(h, BY_TIMEOUT);
	} else if (h == BY_TIMEOUT) {
		/* One look after its timeout: the event, unless L read it. */
		CHECK(F.ret == 0 || F.ret == 1);
	} else if (h == BY_SIGNAL) {
		CHECK_EQ(F.ret, -1);
		CHECK_EQ(F.err, EINTR);
	} else {
		CHECK(res == PTHREAD_CANCELED);
	}
	/* G has the lead now: the next event is its. */
	(void)ueventfd_read(efd, &v);
	CHECK_EQ(ueventfd_write(efd, 1), 0);
	if (!finish(&G, 5000, NULL)) {
		fprintf(stderr, "%s: the follower behind was not woken: the "
				"lead was lost\n", how_name[h]);
		t_failures++;
	} else {
		CHECK_EQ(G.ret, 1);
		CHECK_EQ(G.ev.data.u64, 7);
	}
	CHECK_EQ(uepoll_close(efd), 0);
	CHECK_EQ(uepoll_close(ep), 0);
	return atomic_load(&staged);
}

/* The library's system calls come here (tests/libcwrap.c, which defines
 * libc's name): L's write of F's eventfd runs the hook first. */
static void on_syscall(long nr, const long *a)
{
	if (hooked_thread && nr == SYS_write && a[0] == f_efd &&
	    atomic_exchange(&hook_on, 0))
		hook();
}

static void on_usr1(int sig)
{
	(void)sig;
}

int main(void)
{
	struct sigaction sa;
	int t = 500, tries = 0;

	t_begin("t_fifo_promoted");
	wrap_hook_all(on_syscall, NULL);
	t_watchdog(120);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1; /* no SA_RESTART: EINTR */
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);

	while (!round_(BY_TIMEOUT, t)) {
		REQUIRE(++tries < 6);
		t *= 2;
	}
	CHECK(round_(BY_SIGNAL, -1));
	CHECK(round_(BY_CANCEL, -1));
	printf("staged: timeout (%d ms, %d retries), signal, cancel\n", t,
	       tries);
	return t_end();
}
