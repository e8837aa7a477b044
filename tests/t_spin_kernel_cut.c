/*
 * t_spin_kernel_cut: a kernel spin whose bound is longer than the waits'
 * timeouts (UEPOLL_SPIN_US=1000000 against waits of 2 ms on a pipe nobody
 * writes) is cut by each wait's deadline with nothing found; each such
 * spin is a miss (CUT in src/spin.c), so the budget halves at every wait,
 * 1 s down to 0, and the instance stops spinning: after 40 waits its
 * budget is 0 and a wait makes no poll.  Before CUT, a cut spin "said
 * nothing": the budget stayed 1 s and every wait spun its whole timeout
 * (a CPU kept busy by an idle loop).  Told by the budget and by the polls
 * (raw system calls counted by tests/libcwrap.c's hook), never by a
 * clock: the bound and the timeouts are far enough apart that a loaded
 * machine changes nothing.
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

static _Atomic int polls;

static void after(long nr, const long *a, long r)
{
	(void)a;
	(void)r;
	if (nr == SYS_ppoll)
		atomic_fetch_add(&polls, 1);
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct port *p;
	int fds[2], ep;

	t_begin("t_spin_kernel_cut");
	setenv("UEPOLL_SPIN_US", "1000000", 1);
	wrap_hook_all(NULL, after);
	ep = uepoll_create2(EPOLL_CLOEXEC, UEPOLL_SPIN_KERNEL);
	REQUIRE(ep >= 0);
	REQUIRE(pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev) == 0);
	p = (struct port *)(void *)fdtab_peek(ep);
	REQUIRE(p);
	for (int i = 0; i < 40; i++)
		CHECK_EQ(uepoll_wait(ep, &ev, 1, 2), 0);
	printf("budget after 40 waits of 2 ms: %u ns\n",
	       atomic_load(&p->kspin.budget));
	CHECK_EQ(atomic_load(&p->kspin.budget), 0);
	atomic_store(&polls, 0);
	CHECK_EQ(uepoll_wait(ep, &ev, 1, 2), 0);
	CHECK_EQ(atomic_load(&polls), 0);
	wrap_hook_all(NULL, NULL);
	uepoll_close(ep);
	close(fds[0]);
	close(fds[1]);
	return t_end();
}
