/*
 * t_spin: a blocking wait spins a little before it sleeps (SPIN in spin.c),
 * and the spin adapts.  Nothing here is decided by a clock: whether a spin
 * ran is whether it polled (its ready() was called, or a wait's spin left
 * the instance's budget halved), never how long it took or what it cost.
 *
 * The policy, on a struct spin of our own (spin_wait with a ready() that
 * counts its calls):
 *  - a spin that finds nothing halves the budget, down to 0; at budget 0
 *    waits sleep at once but for a probe after 16 sleeps, then 32, 64...:
 *    the first of 64 such waits spins, and 1 to 4 of the last 32;
 *  - a spin that finds something returns at once with it and keeps (or
 *    grows back) the budget;
 *  - a deadline already past: no poll at all, and the budget unchanged (a
 *    cut spin says nothing);
 *  - at most two spinners at once: a third sleeps at once;
 *  - an instance made with UEPOLL_NOSPIN, or one that got a deferred
 *    (coalesced) wakeup, never polls.
 * Through uepoll_wait (the instance's own struct spin, read through the
 * private headers):
 *  - a default instance's wait that finds nothing spins (UEPOLL_SPIN_NS of
 *    1 ms, the wait's timeout longer: its budget is halved after it);
 *  - an instance made with UEPOLL_NOSPIN does not (no budget, none spent);
 *  - an instance whose ueventfd coalesces stops spinning at its first held
 *    wakeup;
 *  - UEPOLL_SPIN_NS=0 (read once per process: in a child) never spins.
 */
#include "testlib.h"

#include "fdtab.h"
#include "port_impl.h"
#include "spin.h"

#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_NS 4000000u

static int calls, hit_at; /* ready()'s calls; the call that finds (0: none) */

static bool ready(void *arg)
{
	(void)arg;
	return ++calls == hit_at;
}

/* One spin_wait on s: did it poll? */
static bool polled(struct spin *s, int64_t deadline, bool *hit)
{
	bool h;

	calls = 0;
	h = spin_wait(s, ready, NULL, deadline);
	if (hit)
		*hit = h;
	return calls > 0;
}

static void fresh(struct spin *s, uint32_t max)
{
	spin_init(s, false);
	s->max = max;
	atomic_store(&s->budget, max);
}

static void test_adapts(void)
{
	struct spin s;
	bool spun[64];
	int late = 0;

	fresh(&s, MAX_NS);
	hit_at = 0;
	for (int i = 0; i < 64; i++)
		spun[i] = polled(&s, -1, NULL);
	for (int i = 32; i < 64; i++)
		late += spun[i];
	CHECK(spun[0]);
	CHECK(late >= 1 && late <= 4);
	CHECK_EQ(atomic_load(&s.budget), 0);
}

static void test_hit(void)
{
	struct spin s;
	bool hit;

	fresh(&s, MAX_NS);
	atomic_store(&s.budget, MAX_NS / 4);
	hit_at = 5;
	CHECK(polled(&s, -1, &hit));
	CHECK(hit);
	CHECK_EQ(calls, 5);
	CHECK_EQ(atomic_load(&s.budget), MAX_NS / 2); /* grown back */
}

static void test_deadline(void)
{
	struct spin s;
	bool hit = true;

	fresh(&s, MAX_NS);
	hit_at = 0;
	CHECK(!polled(&s, 0, &hit)); /* CLOCK_MONOTONIC 0: long past */
	CHECK(!hit);
	CHECK_EQ(atomic_load(&s.budget), MAX_NS);
}

static void test_spinners(void)
{
	struct spin s;

	fresh(&s, MAX_NS);
	hit_at = 1;
	atomic_store(&s.spinners, 2);
	CHECK(!polled(&s, -1, NULL));
	atomic_store(&s.spinners, 1);
	CHECK(polled(&s, -1, NULL));
	CHECK_EQ(atomic_load(&s.spinners), 1);
}

static void test_off(void)
{
	struct spin s;

	spin_init(&s, true);
	hit_at = 1;
	CHECK(spin_off(&s));
	CHECK(!polled(&s, -1, NULL));
	fresh(&s, MAX_NS);
	spin_deferred(&s);
	CHECK(spin_off(&s));
	CHECK(!polled(&s, -1, NULL));
}

static struct spin *spin_of(int ep)
{
	struct port *p = (struct port *)(void *)fdtab_peek(ep);

	REQUIRE(p);
	return &p->spin;
}

/* An instance (made with uflags) watching a new ueventfd for EPOLLIN. */
static int open_pair(unsigned int uflags, int *efd)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = uepoll_create2(EPOLL_CLOEXEC, uflags);

	*efd = ueventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	REQUIRE(ep >= 0 && *efd >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, *efd, &ev) == 0);
	return ep;
}

/* One wait of 50 ms on a new instance made with uflags, nothing written:
 * its spin's budget before and after. */
static void wait_once(unsigned int uflags, uint32_t *before, uint32_t *after)
{
	struct epoll_event ev;
	int efd, ep = open_pair(uflags, &efd);

	*before = atomic_load(&spin_of(ep)->budget);
	CHECK_EQ(uepoll_wait(ep, &ev, 1, 50), 0);
	*after = atomic_load(&spin_of(ep)->budget);
	uepoll_close(efd);
	uepoll_close(ep);
}

static void test_wait_spins(void)
{
	uint32_t b0, b1;

	wait_once(0, &b0, &b1);
	CHECK_EQ(b0, 1000000);
	CHECK_EQ(b1, 500000);
	wait_once(UEPOLL_NOSPIN, &b0, &b1);
	CHECK_EQ(b0, 0);
	CHECK_EQ(b1, 0);
}

/* A held (coalesced) wakeup: the instance stops spinning for good. */
static void test_held(void)
{
	struct ueventfd_coalesce co = { .delay_us = 2000 };
	struct epoll_event ev;
	int efd, ep = open_pair(0, &efd);
	eventfd_t v;

	CHECK(!spin_off(spin_of(ep)));
	REQUIRE(ueventfd_coalesce(efd, &co, NULL) == 0);
	REQUIRE(ueventfd_write(efd, 1) == 0);
	CHECK_EQ(uepoll_wait(ep, &ev, 1, 1000), 1);
	CHECK(ueventfd_read(efd, &v) == 0 && v == 1);
	CHECK(spin_off(spin_of(ep)));
	uepoll_close(efd);
	uepoll_close(ep);
}

static void test_never(void)
{
	pid_t pid = fork();
	int st;

	REQUIRE(pid >= 0);
	if (pid == 0) {
		setenv("UEPOLL_SPIN_NS", "0", 1);
		execl("/proc/self/exe", "t_spin", "never", (char *)NULL);
		_exit(127);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "never")) {
		uint32_t b0, b1;

		wait_once(0, &b0, &b1);
		return b0 || b1;
	}
	t_begin("t_spin");
	/* Before the first instance: the setting is read once. */
	setenv("UEPOLL_SPIN_NS", "1000000", 1);
	test_adapts();
	test_hit();
	test_deadline();
	test_spinners();
	test_off();
	test_wait_spins();
	test_held();
	test_never();
	return t_end();
}
