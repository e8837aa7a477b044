/*
 * t_fork_wait_inside: a fork waits for the threads inside the library (its
 * prepare closes the gate, then waits until none holds a lock: src/lock.c,
 * GATE; models/gate.pml, MUTANT_NO_WAIT), so that the child never inherits
 * a lock that a thread of the parent held: nobody in the child would ever
 * release it.
 *
 * Thread T adds instance B to instance A: the library registers B's kernel
 * epoll in A's under both instances' locks.  A hook at T's first system
 * call made with a lock held (libcwrap.h's wrap_hook_all; the depth is the
 * library's lock__depth) holds T there, its locks held, until the main
 * thread's fork is over or the main thread sleeps (a fixed fork waits for
 * T: then T goes on and leaves, and the fork with it).  The child then adds
 * a ueventfd to A and waits on A: it must end (a child that inherited A's
 * lock held hangs, and is killed at its deadline: a failure).  No clock
 * decides.  Skipped under ThreadSanitizer, which reports the parent's T
 * as a thread leaked by the child (its record inherited).
 */
#include "libcwrap.h"
#include "xproc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/syscall.h>

/* The library's (src/lock.h): the number of its locks this thread holds. */
extern __thread unsigned lock__depth;

static int a, b;
static pid_t main_tid;
static _Atomic int t_tid, in_lock, forked, preparing, fork_waits;

/* Before the library's prepare handler (registered after it). */
static void prepare(void)
{
	if (gettid() == main_tid)
		atomic_store(&preparing, 1);
}

static void on_syscall(long nr, const long *args)
{
	(void)args;
	/* The main thread's fork, in the library's prepare, yields for T. */
	if (gettid() == main_tid) {
		if (atomic_load(&preparing) && nr == SYS_sched_yield)
			atomic_store(&fork_waits, 1);
		return;
	}
	/* T's first system call inside a lock (not a futex wait for one). */
	if (gettid() != atomic_load(&t_tid) || lock__depth == 0 ||
	    nr == SYS_futex || atomic_load(&in_lock))
		return;
	atomic_store(&in_lock, 1);
	while (!atomic_load(&forked) && !atomic_load(&fork_waits))
		sched_yield();
}

static void *t_main(void *arg)
{
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 2 };

	(void)arg;
	atomic_store(&t_tid, gettid());
	return (void *)(intptr_t)uepoll_ctl(a, EPOLL_CTL_ADD, b, &e);
}

static _Noreturn void child(void)
{
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 3 }, ev[2];
	int u = ueventfd(1, 0);

	if (u < 0 || uepoll_ctl(a, EPOLL_CTL_ADD, u, &e) != 0)
		_exit(2);
	if (uepoll_wait(a, ev, 2, 0) < 1)
		_exit(3);
	_exit(0);
}

int main(void)
{
	struct t_child c;
	pthread_t t;
	void *ret;
	pid_t p;

	t_begin("t_fork_wait_inside");
#ifdef T_TSAN
	T_SKIP("ThreadSanitizer: the child would report T as leaked");
#endif
	x_init();
	main_tid = gettid();
	wrap_hook_all(on_syscall, NULL);
	/* After the library's (a constructor's): its prepare runs first. */
	REQUIRE(pthread_atfork(prepare, NULL, NULL) == 0);
	a = uepoll_create1(0);
	b = uepoll_create1(0);
	REQUIRE(a >= 0 && b >= 0);

	x_step("uepoll", "T is inside, its locks held");
	REQUIRE(pthread_create(&t, NULL, t_main, NULL) == 0);
	while (!atomic_load(&in_lock))
		sched_yield();
	x_step_end();

	x_step("uepoll", "the fork (it waits for T)");
	p = x_fork(&c);
	REQUIRE(p >= 0);
	if (p == 0)
		child();
	atomic_store(&forked, 1);
	x_step_end();
	if (t_child_reap(&c, 10000, "the child") != 0)
		fprintf(stderr, "the child could not use the instance: the fork "
				"did not wait for the thread inside\n");
	CHECK_EQ(c.status, 0);

	x_step("uepoll", "T ends");
	REQUIRE(pthread_join(t, &ret) == 0);
	x_step_end();
	CHECK_EQ((intptr_t)ret, 0);
	CHECK_EQ(uepoll_close(b), 0);
	CHECK_EQ(uepoll_close(a), 0);
	return t_end();
}
