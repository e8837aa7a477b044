/*
 * t_nest_edge_count: an instance that comes to hold another one
 * edge-triggered is counted (the inner watched once more, bell__nedge)
 * before its kernel ADD (krec__nest_add in src/krec.c, WATCHED in
 * src/bell.c; models/watched.pml, mutant EDGE_COUNT_LATE).  Counted after
 * it, an event between the two is signalled as for level-triggered
 * holders only: a ring only if the doorbell is not rung, so no write, and
 * the new edge-triggered holder, whose ADD's edge was taken already,
 * misses it.  (When the instance was not watched before, the count's own
 * take and re-ring, bell_watch, would cover it: so `in` is held
 * level-triggered by another instance first.)
 *
 * Instance `in` holds ueventfds A and E and is held level-triggered by
 * `out1`.  A is written: `in`'s doorbell is rung.  Thread T makes `out2`
 * hold `in` with EPOLLET; from inside that call, right after its kernel
 * epoll_ctl (a hook at the library's system calls, libcwrap.h; T holds
 * `out2`'s mtx there, which neither step below needs), the main thread
 * (1) waits on `out2`, which reports `in` (the ADD's edge: `in` is
 * readable), then (2) writes E.  After T's call returns, `out2` must
 * report `in` again: E came after its registration (it reported `in`
 * already), and the kernel wakes an epoll that holds another one
 * EPOLLET on each event of the inner.  The first wait returns at once
 * (its event is ready when it starts; 5 s is a hang bound); the last look
 * is a zero-timeout one.
 */
#include "testlib.h"
#include "libcwrap.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>

static int in, out2;
static _Atomic int hooked, m_go, m_done;

/* T's kernel epoll_ctl of the ADD has returned: the main thread's steps. */
static void hook(long nr)
{
	if (nr != SYS_epoll_ctl) {
		wrap_hook_after_once(hook);
		return;
	}
	atomic_store(&hooked, wrap_last_result() == 0 ? 1 : -1);
	atomic_store(&m_go, 1);
	while (!atomic_load(&m_done))
		sched_yield();
}

static void *t_main(void *arg)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET,
				  .data.u64 = 'J' };

	(void)arg;
	wrap_hook_after_once(hook);
	CHECK_EQ(uepoll_ctl(out2, EPOLL_CTL_ADD, in, &ev), 0);
	wrap_hook_after_once(NULL);
	atomic_store(&m_go, 1); /* (if the hook never ran) */
	return NULL;
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, got[4];
	uint64_t one = 1;
	pthread_t t;
	int out1, a, e, n;

	t_begin("t_nest_edge_count");
	t_watchdog(30);
	in = uepoll_create1(0);
	out1 = uepoll_create1(0);
	out2 = uepoll_create1(0);
	a = ueventfd(0, EFD_NONBLOCK);
	e = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(in >= 0 && out1 >= 0 && out2 >= 0 && a >= 0 && e >= 0);
	ev.data.u64 = 'A';
	REQUIRE(uepoll_ctl(in, EPOLL_CTL_ADD, a, &ev) == 0);
	ev.data.u64 = 'E';
	REQUIRE(uepoll_ctl(in, EPOLL_CTL_ADD, e, &ev) == 0);
	ev.data.u64 = 'I'; /* level-triggered holder */
	REQUIRE(uepoll_ctl(out1, EPOLL_CTL_ADD, in, &ev) == 0);
	CHECK_EQ(uepoll_write(a, &one, 8), 8);

	REQUIRE(pthread_create(&t, NULL, t_main, NULL) == 0);
	while (!atomic_load(&m_go))
		sched_yield();
	if (atomic_load(&hooked) > 0) {
		/* (1) The ADD's edge, taken. */
		n = uepoll_wait(out2, got, 4, 5000);
		CHECK_EQ(n, 1);
		if (n == 1)
			CHECK_EQ(got[0].data.u64, 'J');
		/* (2) An event after the registration. */
		CHECK_EQ(uepoll_write(e, &one, 8), 8);
	}
	atomic_store(&m_done, 1);
	REQUIRE(pthread_join(t, NULL) == 0);
	REQUIRE(atomic_load(&hooked) > 0);

	n = uepoll_wait(out2, got, 4, 0);
	CHECK_EQ(n, 1);
	if (n != 1)
		fprintf(stderr, "`out2` holds `in` EPOLLET and missed E's "
				"event: no doorbell write for it\n");
	else
		CHECK_EQ(got[0].data.u64, 'J');
	/* `in` has both events. */
	CHECK_EQ(uepoll_wait(in, got, 4, 0), 2);

	uepoll_close(out2);
	uepoll_close(out1);
	uepoll_close(in);
	uepoll_close(a);
	uepoll_close(e);
	return t_end();
}
