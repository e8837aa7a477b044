/*
 * t_spin_kernel_adapt: an instance made with UEPOLL_SPIN_KERNEL whose spins
 * keep missing stops spinning (KERNEL SPIN in src/spin.c: the rule of SPIN,
 * on the instance's kernel spin).  With UEPOLL_SPIN_US=100, waits of 50 ms
 * on a pipe nobody writes:
 *  - the first 8 waits spin (they poll the kernel epoll's fd), each one
 *    halving the budget: 100 us, 50, 25 ... 0.78, then 0 (below 0.5 us);
 *  - the next 15 make no poll at all: each is the one sleep of the
 *    default instance;
 *  - the 16th sleep at budget 0 probes (a full spin), which misses: the
 *    budget stays 0.
 * Whether a wait spun is whether it polled (the raw ppoll calls, counted
 * by tests/libcwrap.c's hook), never how long it took.  A wait's spin is
 * cut by its deadline only if the wait is held up 50 ms before it spins;
 * such a spin would leave the budget as it was, and the check of the
 * halving below says so.
 */
#include "testlib.h"
#include "libcwrap.h"

#include "fdtab.h"
#include "port_impl.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_NS 100000u

static _Atomic int polls;

static void after(long nr, const long *a, long r)
{
	(void)a;
	(void)r;
	if (nr == SYS_ppoll)
		atomic_fetch_add(&polls, 1);
}

static uint32_t budget(int ep)
{
	struct port *p = (struct port *)(void *)fdtab_peek(ep);

	REQUIRE(p);
	return atomic_load(&p->kspin.budget);
}

/* One wait of 50 ms with nothing ready: did it poll? */
static bool spun(int ep)
{
	struct epoll_event ev;

	atomic_store(&polls, 0);
	CHECK_EQ(uepoll_wait(ep, &ev, 1, 50), 0);
	return atomic_load(&polls) > 0;
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	uint32_t b = MAX_NS;
	int p[2], ep, quiet = 0;

	t_begin("t_spin_kernel_adapt");
	setenv("UEPOLL_SPIN_US", "100", 1);
	wrap_hook_all(NULL, after);
	ep = uepoll_create2(EPOLL_CLOEXEC, UEPOLL_SPIN_KERNEL);
	REQUIRE(ep >= 0);
	REQUIRE(pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0);
	CHECK_EQ(budget(ep), MAX_NS);
	for (int i = 0; i < 8; i++) {
		CHECK(spun(ep));
		b = b / 2 < 500 ? 0 : b / 2;
		CHECK_EQ(budget(ep), b);
	}
	CHECK_EQ(b, 0);
	for (int i = 0; i < 15; i++)
		quiet += !spun(ep);
	printf("at budget 0: %d of 15 waits made no poll\n", quiet);
	CHECK_EQ(quiet, 15);
	CHECK(spun(ep)); /* the probe */
	CHECK_EQ(budget(ep), 0);
	CHECK(!spun(ep));
	wrap_hook_all(NULL, NULL);
	uepoll_close(ep);
	close(p[0]);
	close(p[1]);
	return t_end();
}
