/*
 * t_spin_kernel: an instance made with UEPOLL_SPIN_KERNEL polls its kernel
 * fds from userspace before it sleeps on them (KERNEL SPIN in src/spin.c),
 * and nothing else changes.  Told apart by the system calls a wait makes,
 * never by a clock:
 *  (a) spin on: a pipe that becomes readable while the wait spins (written
 *      by a hook after the spin's third poll) is returned without a sleep:
 *      no epoll_pwait2/epoll_pwait with a timeout, no futex; a
 *      zero-timeout epoll_pwait first (what is ready already costs the
 *      one call: KERNEL COST in src/wait.c), four polls of the kernel
 *      epoll's fd, then one zero-timeout epoll_pwait collects;
 *  (b) no option: a wait that times out makes its one epoll_pwait2 and no
 *      poll (KERNEL COST in src/wait.c: the default costs what it did);
 *  (c) spin on, timeout 0: the one zero-timeout call, no poll;
 *  (d) spin on, a signal mask given (uepoll_pwait): no poll, one sleep (a
 *      handler the mask blocks must not run inside the wait);
 *  (e) spin on, nothing comes: the wait polls, then sleeps once, and a
 *      spin happens once per wait;
 *  (f) UEPOLL_NOSPIN | UEPOLL_SPIN_KERNEL contradict each other: EINVAL.
 *
 * The counts: this program is linked with tests/libcwrap.c (the libc names
 * the library reaches the kernel through); its hook sees each raw system
 * call's number and arguments, so a sleep made with syscall() (the
 * ThreadSanitizer build's) is told from a zero-timeout poll by its timeout.
 */
#include "testlib.h"
#include "libcwrap.h"

#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic int polls, zero_waits, raw_sleeps, poll_write_at;
static int wfd = -1;

static void before(long nr, const long *a)
{
	if (nr == SYS_epoll_pwait && a[3] == 0)
		atomic_fetch_add(&zero_waits, 1);
	else if (nr == SYS_epoll_pwait || nr == SYS_epoll_pwait2)
		atomic_fetch_add(&raw_sleeps, 1);
}

/* After the poll_write_at-th poll of the kernel epoll's fd (0: never), the
 * pipe becomes readable: the event comes during the spin. */
static void after(long nr, const long *a, long r)
{
	char c = 'x';

	(void)a;
	(void)r;
	if (nr != SYS_ppoll)
		return;
	if (atomic_fetch_add(&polls, 1) + 1 == atomic_load(&poll_write_at))
		CHECK_EQ(write(wfd, &c, 1), 1);
}

struct count {
	int polls, zero_waits, sleeps, futex;
};

/* One counted wait (sigmask: uepoll_pwait's); its result. */
static int counted(int ep, int timeout, const sigset_t *sigmask,
		   struct count *c)
{
	struct epoll_event ev[4];
	int n;

	atomic_store(&polls, 0);
	atomic_store(&zero_waits, 0);
	atomic_store(&raw_sleeps, 0);
	wrap_take(-1);
	wrap_arm(0);
	n = sigmask ? uepoll_pwait(ep, ev, 4, timeout, sigmask)
		    : uepoll_wait(ep, ev, 4, timeout);
	wrap_disarm();
	c->polls = atomic_load(&polls);
	c->zero_waits = atomic_load(&zero_waits);
	c->futex = wrap_take(WRAP_FUTEX);
	c->sleeps = wrap_take(WRAP_EPOLL_PWAIT) + wrap_take(WRAP_EPOLL_PWAIT2) +
		    wrap_take(WRAP_PPOLL) + atomic_load(&raw_sleeps);
	printf("  %d event(s): %d poll(s), %d zero-timeout wait(s), "
	       "%d sleep(s), %d futex\n",
	       n, c->polls, c->zero_waits, c->sleeps, c->futex);
	return n;
}

/* An instance (uflags) watching the read end of a new pipe; *w its write
 * end. */
static int open_inst(unsigned int uflags, int *r, int *w)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int p[2], ep = uepoll_create2(EPOLL_CLOEXEC, uflags);

	REQUIRE(ep >= 0);
	REQUIRE(pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0);
	*r = p[0];
	*w = p[1];
	return ep;
}

static void close_inst(int ep, int r, int w)
{
	uepoll_close(ep);
	close(r);
	close(w);
}

static void test_hit(void)
{
	struct count c;
	char b;
	int r, ep = open_inst(UEPOLL_SPIN_KERNEL, &r, &wfd);

	printf("(a) ready during the spin:\n");
	atomic_store(&poll_write_at, 3);
	CHECK_EQ(counted(ep, 5000, NULL, &c), 1);
	atomic_store(&poll_write_at, 0);
	CHECK_EQ(c.sleeps, 0);
	CHECK_EQ(c.futex, 0);
	CHECK_EQ(c.polls, 4);
	CHECK_EQ(c.zero_waits, 2);
	CHECK_EQ(read(r, &b, 1), 1);
	close_inst(ep, r, wfd);
}

static void test_default(void)
{
	struct count c;
	int r, w, ep = open_inst(0, &r, &w);

	printf("(b) no option, times out:\n");
	CHECK_EQ(counted(ep, 20, NULL, &c), 0);
	CHECK_EQ(c.polls, 0);
	CHECK_EQ(c.zero_waits, 0);
	CHECK_EQ(c.sleeps, 1);
	close_inst(ep, r, w);
}

static void test_zero(void)
{
	struct count c;
	int r, w, ep = open_inst(UEPOLL_SPIN_KERNEL, &r, &w);

	printf("(c) spin on, timeout 0:\n");
	CHECK_EQ(counted(ep, 0, NULL, &c), 0);
	CHECK_EQ(c.polls, 0);
	CHECK_EQ(c.zero_waits, 1);
	CHECK_EQ(c.sleeps, 0);
	close_inst(ep, r, w);
}

static void test_sigmask(void)
{
	struct count c;
	sigset_t m;
	int r, w, ep = open_inst(UEPOLL_SPIN_KERNEL, &r, &w);

	printf("(d) spin on, a signal mask:\n");
	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	CHECK_EQ(counted(ep, 20, &m, &c), 0);
	CHECK_EQ(c.polls, 0);
	CHECK_EQ(c.sleeps, 1);
	close_inst(ep, r, w);
}

static void test_miss(void)
{
	struct count c;
	int r, w, ep = open_inst(UEPOLL_SPIN_KERNEL, &r, &w);

	printf("(e) spin on, nothing comes:\n");
	/* Longer than the spin's bound, so that the spin ends by itself and
	 * the sleep after it still has a timeout (cut by the wait's own
	 * deadline, the last call would be a zero-timeout look, which the
	 * ThreadSanitizer build's count takes for a poll). */
	CHECK_EQ(counted(ep, 1500, NULL, &c), 0);
	CHECK(c.polls > 0);
	CHECK_EQ(c.sleeps, 1);
	CHECK_EQ(c.futex, 0);
	close_inst(ep, r, w);
}

static void test_einval(void)
{
	errno = 0;
	CHECK_EQ(uepoll_create2(0, UEPOLL_NOSPIN | UEPOLL_SPIN_KERNEL), -1);
	CHECK_EQ(errno, EINVAL);
}

int main(void)
{
	t_begin("t_spin_kernel");
	/* Read once, before the first instance: a spin long enough that it
	 * never ends before the hook's write, even beside a CPU hog; (e)
	 * waits longer than it). */
	setenv("UEPOLL_SPIN_US", "1000000", 1);
	wrap_hook_all(before, after);
	test_hit();
	test_default();
	test_zero();
	test_sigmask();
	test_miss();
	test_einval();
	wrap_hook_all(NULL, NULL);
	return t_end();
}
