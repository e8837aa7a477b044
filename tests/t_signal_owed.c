/*
 * t_signal_owed: a signal handler's ueventfd writes made while its thread
 * holds one of the library's locks are owed to the thread (SIGNALS in
 * eventfd.c, LOCKED-WORK in lock.c, models/owed.pml), and the thread's
 * drain of that owed work must walk every one of them, also when a handler
 * writes again while the drain walks.
 *
 * The thread T adds a ready ueventfd to an instance of its own, which
 * rings that instance's doorbell under its locks; at that write (T's hook)
 * its handler (SIGUSR1) writes ueventfds, which T then owes and drains
 * when it drops its last lock.  The drain's walk of a ueventfd wakes an
 * instance that watches it: a second hook, at that doorbell's write (a
 * system call inside the walk, T inside the ueventfd's lock), raises the
 * signal again:
 *  a. A is watched edge-triggered by two instances, each with a thread
 *     blocked in it.  At the walk's second doorbell, the thread woken by
 *     the first has taken its event and sleeps again; the handler writes A
 *     again.  That write must be walked too: the first thread gets a second
 *     event, as with the kernel's eventfd (an edge per write, one
 *     harvested between them).  A drain that cleared A's owed bits after
 *     its walk lost it (the handler found them set and queued nothing).
 *  b. the handler writes A then B (both level-triggered in one instance,
 *     with a thread blocked in it); the drain walks B first, and at its
 *     doorbell the handler writes B again (queued again on T's list).
 *     Both must be ready afterwards (a zero-timeout wait reports A and B,
 *     as the kernel's epoll would).  A drain that read B's next after
 *     taking its bits followed B's new place and never walked A.
 * The hooks are libcwrap's wrap_hook_all, which sees every system call of
 * the library.  No clock decides: the hook yields
 * until the woken thread is asleep again (/proc); a lost walk is a thread
 * not woken within 5 s while its event is pending.
 */
#include "libcwrap.h"
#include "testlib.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

struct waiter {
	pthread_t th;
	int ep;
	int once; /* one wait only (b) */
	_Atomic int tid, events, stop;
	int stat_fd, sys_fd;
};

static int A, B, scenario;
/* The instances' doorbells: the eventfds uepoll_create1 made. */
static int bells[8], nbells, own_bell;
static struct waiter W[2];
/* T's hook: which system call it waits for next (0: none). */
static __thread int stage;
static volatile sig_atomic_t in_handler, h_what;
static _Atomic int first; /* (a) the waiter woken first, + 1 */

static void on_usr1(int sig)
{
	(void)sig;
	in_handler = 1;
	if (h_what & 1)
		CHECK_EQ(ueventfd_write(A, 1), 0);
	if (h_what & 2)
		CHECK_EQ(ueventfd_write(B, 1), 0);
	in_handler = 0;
}

/* The waiter's state letter and system call (-1: it runs). */
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
	if (n <= 0 || buf[0] < '0' || buf[0] > '9')
		return -1;
	buf[n] = 0;
	return strtol(buf, NULL, 10);
}

static int asleep_in_wait(struct waiter *w)
{
	char st;
	long nr = where(w, &st);

	return st == 'S' && (nr == SYS_epoll_pwait || nr == SYS_epoll_wait ||
			     nr == SYS_epoll_pwait2);
}

static int is_bell(long fd)
{
	for (int i = 0; i < nbells; i++)
		if (bells[i] == fd)
			return 1;
	return 0;
}

/* uepoll_create1(0), its doorbell noted (the eventfd it made). */
/* Is fd an eventfd? */
static int is_eventfd(int fd)
{
	char path[64], to[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, to, sizeof(to) - 1);
	if (n <= 0)
		return 0;
	to[n] = 0;
	return strcmp(to, "anon_inode:[eventfd]") == 0;
}

/* A new instance; its doorbell (the eventfd that is new in the fd table:
 * the library places it where the program does not look, src/fdzone.c)
 * joins bells[]. */
static int instance(void)
{
	static unsigned char had[65536];
	int ep;

	for (int fd = 0; fd < 65536; fd++)
		had[fd] = (unsigned char)is_eventfd(fd);
	ep = uepoll_create1(0);
	REQUIRE(ep >= 0);
	for (int fd = 0; fd < 65536; fd++)
		if (!had[fd] && is_eventfd(fd) && nbells < 8) {
			bells[nbells++] = fd;
			break;
		}
	return ep;
}

static void hook(long nr, long fd)
{
	if (nr != SYS_write || !is_bell(fd))
		return;
	if (stage == 1 && fd == own_bell) {
		/* Inside the ctl's locks: the handler's writes are owed. */
		stage = 2;
		h_what = scenario == 'a' ? 1 : 3;
		raise(SIGUSR1);
	} else if (stage == 2 && fd != own_bell && scenario == 'a') {
		stage = 3; /* the walk's first doorbell */
	} else if ((stage == 3 || (stage == 2 && scenario == 'b')) &&
		   fd != own_bell) {
		stage = 0;
		if (scenario == 'a') {
			/* The waiter rung first has taken A's event and
			 * sleeps again. */
			for (;;) {
				int i = atomic_load(&W[0].events) ? 0 : 1;

				if (atomic_load(&W[i].events) == 1 &&
				    asleep_in_wait(&W[i])) {
					atomic_store(&first, i + 1);
					break;
				}
				sched_yield();
			}
			h_what = 1;
		} else {
			h_what = 2;
		}
		raise(SIGUSR1);
	}
}

/* The library's system calls come here (tests/libcwrap.c, which defines
 * libc's name): T's run the hook first. */
static void on_syscall(long nr, const long *a)
{
	if (stage && !in_handler)
		hook(nr, a[0]);
}

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct epoll_event ev[4];
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", t_gettid());
	w->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", t_gettid());
	w->sys_fd = open(path, O_RDONLY | O_CLOEXEC);
	REQUIRE(w->stat_fd >= 0 && w->sys_fd >= 0);
	atomic_store(&w->tid, t_gettid());
	while (!atomic_load(&w->stop)) {
		int n = uepoll_wait(w->ep, ev, 4, -1);

		for (int i = 0; i < n; i++)
			if (ev[i].data.u64 != 99)
				atomic_fetch_add(&w->events, 1);
		if (w->once)
			break;
	}
	return NULL;
}

static void start(struct waiter *w, int ep, int once)
{
	w->ep = ep;
	w->once = once;
	atomic_store(&w->tid, 0);
	atomic_store(&w->events, 0);
	atomic_store(&w->stop, 0);
	REQUIRE(pthread_create(&w->th, NULL, waiter_main, w) == 0);
	while (!atomic_load(&w->tid))
		sched_yield();
	REQUIRE(t_wait_sleeping(atomic_load(&w->tid), 10000));
}

static void finish(struct waiter *w)
{
	REQUIRE(t_join_within(w->th, 10000));
	close(w->stat_fd);
	close(w->sys_fd);
}

static int add(int ep, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return uepoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* T's ctl, inside which the handler writes (stage 1: the hooks): the ADD
 * of a ready ueventfd rings the instance's doorbell, under its locks. */
static void owe_and_drain(void)
{
	int ep = instance(), c = ueventfd(1, EFD_NONBLOCK);

	REQUIRE(c >= 0);
	own_bell = bells[nbells - 1];
	stage = 1;
	CHECK_EQ(add(ep, c, EPOLLIN, 0), 0);
	CHECK_EQ(stage, 0); /* every hook ran */
	stage = 0;
	CHECK_EQ(uepoll_close(c), 0);
	CHECK_EQ(uepoll_close(ep), 0);
}

/* Until w has n events, for at most 5 s. */
static int events_reach(struct waiter *w, int n)
{
	uint64_t end = t_now_ns() + 5000000000ull;

	while (atomic_load(&w->events) < n && t_now_ns() < end)
		t_sleep_ms(1);
	return atomic_load(&w->events) >= n;
}

static void run_a(void)
{
	int ep[2], stop = ueventfd(0, EFD_NONBLOCK);

	scenario = 'a';
	nbells = 0;
	atomic_store(&first, 0);
	A = ueventfd(0, EFD_NONBLOCK);
	B = -1;
	REQUIRE(A >= 0 && stop >= 0);
	for (int i = 0; i < 2; i++) {
		ep[i] = instance();
		REQUIRE(add(ep[i], A, EPOLLIN | EPOLLET, (uint64_t)i + 1) == 0);
		REQUIRE(add(ep[i], stop, EPOLLIN, 99) == 0);
		start(&W[i], ep[i], 0);
	}
	owe_and_drain();
	CHECK(atomic_load(&first) != 0);
	if (atomic_load(&first)) {
		struct waiter *w = &W[atomic_load(&first) - 1];

		/* Its second edge: the handler's write during the walk. */
		if (!events_reach(w, 2)) {
			fprintf(stderr, "a. the write owed during the drain's walk "
					"was never walked (the waiter has %d events)\n",
				atomic_load(&w->events));
			t_failures++;
		}
	}
	for (int i = 0; i < 2; i++)
		atomic_store(&W[i].stop, 1);
	CHECK_EQ(ueventfd_write(stop, 1), 0);
	for (int i = 0; i < 2; i++) {
		finish(&W[i]);
		CHECK_EQ(uepoll_close(ep[i]), 0);
	}
	CHECK_EQ(uepoll_close(A), 0);
	CHECK_EQ(uepoll_close(stop), 0);
}

static void run_b(void)
{
	int ep, n;
	struct epoll_event ev[4];

	scenario = 'b';
	nbells = 0;
	ep = instance();
	A = ueventfd(0, EFD_NONBLOCK);
	B = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(ep >= 0 && A >= 0 && B >= 0);
	REQUIRE(add(ep, A, EPOLLIN, 1) == 0);
	REQUIRE(add(ep, B, EPOLLIN, 2) == 0);
	start(&W[0], ep, 1);
	owe_and_drain();
	finish(&W[0]);
	/* Both written, neither read: both ready (level-triggered). */
	n = uepoll_wait(ep, ev, 4, 0);
	t_sort_events(ev, n > 0 ? n : 0);
	CHECK_EQ(n, 2);
	if (n >= 1)
		CHECK_EQ(ev[0].data.u64, 1);
	if (n == 1)
		fprintf(stderr, "b. A's owed write was never walked\n");
	CHECK_EQ(uepoll_close(A), 0);
	CHECK_EQ(uepoll_close(B), 0);
	CHECK_EQ(uepoll_close(ep), 0);
}

int main(void)
{
	struct sigaction sa;

	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_begin("t_signal_owed");
	wrap_hook_all(on_syscall, NULL);
	t_watchdog(60);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	run_a();
	run_b();
	return t_end();
}
