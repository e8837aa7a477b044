/*
 * t_spin_kernel_preempt: a kernel spin that finds its event only after the
 * scheduler took the CPU from it (its peer runs on the same CPU) is scored
 * as a miss (PREEMPTED in src/spin.c), so such an instance stops spinning;
 * one that is not preempted keeps its budget.  With UEPOLL_SPIN_US=100, two
 * instances on a pipe each: 8 waits, in each of which the pipe becomes
 * readable just before the spin's first poll (a hook), so every spin finds
 * it, whatever its budget:
 *  - "preempted": the hook makes the thread's involuntary context switches
 *    (getrusage RUSAGE_THREAD's ru_nivcsw, as the library reads it through
 *    syscall()) grow by one at each read: every spin was preempted, so the
 *    budget halves at each wait, 100 us down to 0, and a ninth wait on
 *    nothing makes no poll;
 *  - "running": the same without the fake: the budget stays 100 us.
 * Each wait returns the pipe (the spin's find is taken either way), with
 * no call that could block.  Told
 * apart by the budget and the polls (system calls counted by
 * tests/libcwrap.c's hook), never by a clock.
 */
#include "testlib.h"
#include "libcwrap.h"

#include "fdtab.h"
#include "port_impl.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_NS 100000u

static _Atomic int polls, write_at, fake, sleeps;
static _Atomic long bumps;
static int wfd = -1;

/* A call that may block (a timeout other than zero); and the pipe made
 * readable just before the write_at-th poll of the kernel epoll's fd, so
 * that poll finds it (the spin hits whatever its budget). */
static void before(long nr, const long *a)
{
	char c = 'x';

	if ((nr == SYS_epoll_pwait && a[3] != 0) || nr == SYS_epoll_pwait2)
		atomic_fetch_add(&sleeps, 1);
	if (nr == SYS_ppoll &&
	    atomic_fetch_add(&polls, 1) + 1 == atomic_load(&write_at))
		CHECK_EQ(write(wfd, &c, 1), 1);
}

static void after(long nr, const long *a, long r)
{
	if (nr == SYS_getrusage && r == 0 && atomic_load(&fake))
		/* Each read sees one more involuntary switch than the last. */
		((struct rusage *)a[1])->ru_nivcsw += atomic_fetch_add(&bumps, 1) + 1;
}

static uint32_t budget(int ep)
{
	struct port *p = (struct port *)(void *)fdtab_peek(ep);

	REQUIRE(p);
	return atomic_load(&p->kspin.budget);
}

/* 8 waits that each find the pipe during their spin; the budget after
 * (the pipe's write end stays open, in wfd: closed, it would read ready). */
static uint32_t rounds(bool preempted, int *ep_out, int *r_out)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int p[2], ep = uepoll_create2(EPOLL_CLOEXEC, UEPOLL_SPIN_KERNEL);
	char b;

	REQUIRE(ep >= 0);
	REQUIRE(pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0);
	wfd = p[1];
	atomic_store(&fake, preempted);
	for (int i = 0; i < 8; i++) {
		atomic_store(&polls, 0);
		atomic_store(&sleeps, 0);
		atomic_store(&write_at, 1);
		wrap_take(-1);
		wrap_arm(0);
		CHECK_EQ(uepoll_wait(ep, &ev, 1, 5000), 1);
		wrap_disarm();
		/* The library's sleeps: libc's epoll_pwait(2) (the zero-timeout
		 * polls go through syscall(), above) and epoll_pwait2. */
		atomic_fetch_add(&sleeps, wrap_take(WRAP_EPOLL_PWAIT) +
						  wrap_take(WRAP_EPOLL_PWAIT2));
		/* What the spin saw is collected without a blocking call, even
		 * once a preempted spin took the budget to 0 (wait__plain's
		 * look). */
		CHECK_EQ(atomic_load(&sleeps), 0);
		atomic_store(&write_at, 0);
		CHECK_EQ(read(p[0], &b, 1), 1);
		/* Found by the spin's first poll. */
		CHECK_EQ(atomic_load(&polls), 1);
	}
	atomic_store(&fake, 0);
	*ep_out = ep;
	*r_out = p[0];
	return budget(ep);
}

/* A wait of 20 ms on nothing: did it poll? */
static bool spun(int ep)
{
	struct epoll_event ev;

	atomic_store(&polls, 0);
	CHECK_EQ(uepoll_wait(ep, &ev, 1, 20), 0);
	return atomic_load(&polls) > 0;
}

int main(void)
{
	uint32_t b;
	int ep, r;

	t_begin("t_spin_kernel_preempt");
	setenv("UEPOLL_SPIN_US", "100", 1);
	wrap_hook_all(before, after);
	b = rounds(true, &ep, &r);
	printf("preempted: budget %u ns after 8 hits\n", b);
	CHECK_EQ(b, 0);
	CHECK(!spun(ep));
	uepoll_close(ep);
	close(r);
	close(wfd);
	b = rounds(false, &ep, &r);
	printf("running: budget %u ns after 8 hits\n", b);
	CHECK_EQ(b, MAX_NS);
	uepoll_close(ep);
	close(r);
	close(wfd);
	wrap_hook_all(NULL, NULL);
	return t_end();
}
