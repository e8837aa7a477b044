/*
 * t_nest_clear_recheck: a watched instance's clear of its doorbell looks at
 * the ready queue after it took the doorbell, and rings again for what is
 * queued (bell_clear in src/bell.c, WATCHED; models/watched.pml, mutant
 * CLEAR_NO_RECHECK).
 *
 * Instance `in` holds two ueventfds A and B (EPOLLET), and is held
 * level-triggered by instance `out`.  A is written: the doorbell is rung.  A
 * zero-timeout wait on `in` takes A's event and, finding the queue empty,
 * clears the doorbell (bell_mirror: a read of its eventfd, then `set` = 0).
 * The test writes B from inside that read's system call, before it is made
 * (a hook at the library's system calls, libcwrap.h): B's signal finds the
 * doorbell rung and does not ring, then the read takes the ring that was
 * A's.  B's event is now queued with the doorbell empty: only the clear's
 * look after its store rings for it.  Then `out` must report `in` (as the
 * kernel's epoll reports a nested epoll that has an event ready), and `in`
 * must return B.  A lost ring shows as a wait on `out` that times out
 * (5 s) with B's event pending; no timing is asserted otherwise.
 */
#include "testlib.h"
#include "libcwrap.h"

#include <poll.h>
#include <stdatomic.h>
#include <sys/syscall.h>

static int efd_b;
static _Atomic int hooked;

/* The wait's first read(2) is its take of the doorbell (bell_clear). */
static void hook(long nr)
{
	uint64_t one = 1;

	if (nr != SYS_read) {
		wrap_hook_once(hook);
		return;
	}
	atomic_store(&hooked, 1);
	CHECK_EQ(uepoll_write(efd_b, &one, 8), 8);
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET }, got[4];
	uint64_t one = 1;
	int in, out, a;

	t_begin("t_nest_clear_recheck");
	t_watchdog(60);
	in = uepoll_create1(0);
	out = uepoll_create1(0);
	a = ueventfd(0, EFD_NONBLOCK);
	efd_b = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(in >= 0 && out >= 0 && a >= 0 && efd_b >= 0);
	ev.data.u64 = 'A';
	REQUIRE(uepoll_ctl(in, EPOLL_CTL_ADD, a, &ev) == 0);
	ev.data.u64 = 'B';
	REQUIRE(uepoll_ctl(in, EPOLL_CTL_ADD, efd_b, &ev) == 0);
	ev.events = EPOLLIN; /* level-triggered holder */
	ev.data.u64 = 'I';
	REQUIRE(uepoll_ctl(out, EPOLL_CTL_ADD, in, &ev) == 0);

	CHECK_EQ(uepoll_write(a, &one, 8), 8);
	wrap_hook_once(hook);
	CHECK_EQ(uepoll_wait(in, got, 4, 0), 1);
	wrap_hook_once(NULL);
	CHECK_EQ(got[0].data.u64, 'A');
	REQUIRE(atomic_load(&hooked));

	/* B is pending in `in`: its holder must see it. */
	CHECK_EQ(uepoll_wait(out, got, 4, 5000), 1);
	CHECK_EQ(got[0].data.u64, 'I');
	CHECK_EQ(uepoll_wait(in, got, 4, 0), 1);
	CHECK_EQ(got[0].data.u64, 'B');

	uepoll_close(out);
	uepoll_close(in);
	uepoll_close(a);
	uepoll_close(efd_b);
	return t_end();
}
