/*
 * t_fork_signal_dup: a fork while a signal handler holds obj__lock where
 * the fork gate does not see it (src/obj.c, SIGNALS and FORK;
 * models/sigclose.pml, MUTANT_FORK_NO_OBJLOCK).
 *
 * A handler's dup or close takes obj__lock whatever its thread holds (the
 * lock blocks signals, so its own frame never holds it: MASKED in
 * src/lock.h), also while its frame waits at the fork gate: a lock_take
 * that found the gate closed has stepped out, so the fork's prepare sees
 * the thread outside and goes on.  So the prepare takes obj__lock itself,
 * after the gate: the child never inherits it held.
 *
 * The main thread forks.  At its prepare's membarrier(2) (the gate is
 * closed: libcwrap's hook, wrap_hook_all), thread T makes a ctl MOD of a
 * ueventfd, finds the gate closed and sleeps there; at that futex wait
 * (T's hook) T's handler (SIGUSR1) runs: uepoll_dup2 of the ueventfd onto
 * a free number, whose dup3(2), under obj__lock, its hook holds until the
 * fork is over or the main thread sleeps (a fixed prepare waits for
 * obj__lock, so the fork comes after the dup).  The child then writes the
 * ueventfd through the new number, reads it through the old one and
 * closes both: it must end with the dup's value (a child whose fork came
 * while the handler held obj__lock has no new number, and its close finds
 * the lock held for ever: it is killed at its deadline, a failure).  The
 * parent checks the same, and that T's ctl returned 0.  No clock decides.
 * Skipped under ThreadSanitizer (its raise() runs the handler at once,
 * but the child would report T as leaked, as t_fork_wait_inside says),
 * and where the gate makes no membarrier(2) (the hook's point).
 */
#include "forkrace.h"
#include "xproc.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <sys/syscall.h>

/* The library's (src/lock.c): no membarrier(2), the gate fences instead. */
extern bool lock__fence;

#define N 600 /* the dup's number (free) */

static int ep, efd;
static pid_t main_tid;
static _Atomic int t_tid, go, t_armed, in_dup, forked, dup_r;
static volatile sig_atomic_t in_handler;
static int main_watch;

static void parent_done(void)
{
	atomic_store(&forked, 1);
}

static void on_usr1(int sig)
{
	int e = errno;

	(void)sig;
	in_handler = 1;
	atomic_store(&dup_r, uepoll_dup2(efd, N));
	in_handler = 0;
	errno = e;
}

static void on_syscall(long nr, const long *a)
{
	pid_t me = gettid();

	if (me == main_tid) {
		/* The prepare, the gate closed: T goes in. */
		if (nr == SYS_membarrier &&
		    a[0] == MEMBARRIER_CMD_PRIVATE_EXPEDITED &&
		    !atomic_load(&go)) {
			atomic_store(&go, 1);
			while (!atomic_load(&in_dup))
				sched_yield();
		}
		return;
	}
	if (me != atomic_load(&t_tid))
		return;
	if (!in_handler && nr == SYS_futex && atomic_exchange(&t_armed, 0)) {
		/* T waits at the gate: its handler runs there. */
		raise(SIGUSR1);
	} else if (in_handler && nr == SYS_dup3 && !atomic_load(&in_dup)) {
		/* The handler holds obj__lock: until the fork is over, or the
		 * prepare waits (for obj__lock). */
		atomic_store(&in_dup, 1);
		fr_until(&forked, 1, main_watch);
	}
}

static void *t_main(void *arg)
{
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 1 };

	(void)arg;
	atomic_store(&t_tid, gettid());
	while (!atomic_load(&go))
		sched_yield();
	atomic_store(&t_armed, 1);
	return (void *)(intptr_t)uepoll_ctl(ep, EPOLL_CTL_MOD, efd, &e);
}

/* The dup leads to the ueventfd: a write through it, read through efd. */
static int dup_works(void)
{
	eventfd_t v = 0;

	return ueventfd_write(N, 5) == 0 && ueventfd_read(efd, &v) == 0 &&
	       v == 5;
}

static _Noreturn void child(void)
{
	int ok = dup_works();

	/* efd's close takes obj__lock (N may not be open here). */
	if (uepoll_close(efd) != 0 || uepoll_close(N) != 0)
		_exit(3);
	_exit(ok ? 0 : 2);
}

int main(void)
{
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 1 };
	struct sigaction sa;
	struct t_child c;
	pthread_t t;
	void *ret;
	pid_t p;

	t_begin("t_fork_signal_dup");
#ifdef T_TSAN
	T_SKIP("ThreadSanitizer: the child would report T as leaked");
#endif
	if (lock__fence)
		T_SKIP("no membarrier(2): the gate makes no system call to "
		       "stop at");
	x_init();
	main_tid = gettid();
	main_watch = fr_watch(main_tid);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	wrap_hook_all(on_syscall, NULL);
	/* After the library's (a constructor's): its parent handler first. */
	REQUIRE(pthread_atfork(NULL, parent_done, NULL) == 0);
	ep = uepoll_create1(0);
	efd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(ep >= 0 && efd >= 0);
	REQUIRE(fcntl(N, F_GETFD) < 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, efd, &e) == 0);
	REQUIRE(pthread_create(&t, NULL, t_main, NULL) == 0);

	x_step("uepoll", "the fork (T's handler holds obj__lock)");
	p = x_fork(&c);
	REQUIRE(p >= 0);
	if (p == 0)
		child();
	x_step_end();
	CHECK(atomic_load(&in_dup));
	if (t_child_reap(&c, 10000, "the child") != 0)
		fprintf(stderr, "the child could not use the ueventfd: the fork "
				"came while a handler held obj__lock\n");
	CHECK_EQ(c.status, 0);

	x_step("uepoll", "T ends");
	REQUIRE(pthread_join(t, &ret) == 0);
	x_step_end();
	CHECK_EQ((intptr_t)ret, 0);
	CHECK_EQ(atomic_load(&dup_r), N);
	CHECK(dup_works());
	CHECK_EQ(uepoll_close(N), 0);
	CHECK_EQ(uepoll_close(efd), 0);
	CHECK_EQ(uepoll_close(ep), 0);
	close(main_watch);
	return t_end();
}
