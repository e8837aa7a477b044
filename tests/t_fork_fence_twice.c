/*
 * t_fork_fence_twice: a fork that waited for another fork closes the fork
 * fence itself (issue 32; models/gate.pml, MUTANT_LATE_FORK_MUTEX).
 *
 * A fork waits for the creations in flight and makes new ones wait (the
 * FENCE in src/lock.c), so that a ueventfd is either shared with the child
 * (SHARED) or not in the child at all: if the child has the number, its
 * write is the parent's next read, as with the kernel's eventfd.  Forks
 * are one at a time from their first step: a second fork that began while
 * the first was being prepared waits for it, then closes the fence itself
 * before it looks at the objects.
 *
 * Each round (as tests/forkrace.h: no clock decides, a thread is waited
 * for until it has done its step or sleeps; a hang ends at the step's
 * deadline): the main thread forks; after the library's prepare handler
 * (this program's, registered before the library's, runs after it), a
 * second thread forks and a third creates a ueventfd, and the first fork
 * waits until each sleeps (each waits for the first fork).  When the first
 * fork is over both go on, in this order (hooks: libcwrap's wrap_hook_all,
 * which the library's system calls go through, as tests/libcwrap.c's):
 * the second fork's prepare, after its first futex wait, waits until the
 * first fork is over (its parent handler has woken the creation: a sleep
 * seen before is the creation's wait for the first fork, not for this one;
 * the mutant's second fork is woken by the gate, before the fence is
 * opened), then until the creation has made its kernel eventfd (or sleeps:
 * a fixed library makes it wait at the fence); the creation, there, waits
 * until the second fork is over (or its thread sleeps: waits for the
 * creation).  The second fork's child writes 1 to the new number if it
 * has it, and the parent must read it.  A fork whose mutex came only at the gate, after the fence
 * and the walk, had passed its fence while the first fork held it, and the
 * first then opened it: the creation ran through the second fork, whose
 * child had the bare kernel eventfd (its write lost to the parent).
 */
#include "forkrace.h"
#include "xproc.h"

#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static pid_t pid0;
static _Atomic int second_watch = -1, creator_watch = -1;
static _Atomic int cur, go2, go3, forked1, forked2, reaped2, created, stop,
	fired, t3_hooked;
static int next_fd, newfd, second_status;
/* The second fork's child had the new number and wrote 1 to it. */
static _Atomic int *child_copied;
/* This thread's fork: 1 the first, 2 the second. */
static __thread int late;
/* Hooks (libcwrap's wrap_hook_all): 1 the second fork's first futex
 * call in its prepare handler; 2 the creation's eventfd2. */
static __thread int hook_at;

/* ---- the hooks ------------------------------------------------------- */

/* The library's system calls come here (tests/libcwrap.c, which defines
 * libc's name); the hooks run after the call. */
static void on_syscall_end(long nr, const long *a, long r)
{
	(void)a;
	(void)r;
	if (hook_at == 1 && nr == SYS_futex && getpid() == pid0) {
		/* The second fork waited (for the first, or for a span):
		 * the creation goes on to its kernel eventfd first.  Not
		 * before the first fork is over: the creation sleeps at its
		 * fence until then, and a sleep seen before the first fork's
		 * parent handler woke it (the gate's wake, which woke this
		 * thread, comes before the fence's) is not one for this
		 * fork.  Once the first fork is over, the creation was woken
		 * (running, to /proc) and any sleep of its is a new one. */
		int round = atomic_load(&cur);

		hook_at = 0;
		fr_spin(&forked1, round);
		fr_until(&t3_hooked, round, creator_watch);
	} else if (hook_at == 2 && nr == SYS_eventfd2) {
		/* The kernel eventfd is made, the object not yet published:
		 * the second fork goes on. */
		hook_at = 0;
		atomic_store(&t3_hooked, atomic_load(&cur));
		fr_until(&forked2, atomic_load(&cur), second_watch);
	}
}

/* Runs before the library's prepare handler (registered after it). */
static void early_prepare(void)
{
	if (late == 2 && getpid() == pid0)
		hook_at = 1;
}

/* Runs after the library's prepare handler (registered before it). */
static void late_prepare(void)
{
	int r = atomic_load(&cur);

	if (late != 1 || getpid() != pid0)
		return;
	late = 0;
	atomic_fetch_add(&fired, 1);
	/* The second fork waits for this one, */
	atomic_store(&go2, r);
	fr_until(&forked2, r, second_watch);
	/* and so does a creation. */
	atomic_store(&go3, r);
	fr_until(&created, r, creator_watch);
}

__attribute__((constructor(101))) static void late_register(void)
{
	/* Before the library's constructor registers its handlers. */
	if (pthread_atfork(late_prepare, NULL, NULL) != 0)
		abort();
}

static _Noreturn void second_child(void)
{
	if (!fr_is_eventfd(next_fd))
		_exit(0);
	atomic_store(child_copied, 1);
	_exit(ueventfd_write(next_fd, 1) == 0 ? 0 : 2);
}

static void *second(void *arg)
{
	atomic_store(&second_watch, fr_watch(t_gettid()));
	for (int round = 1;; round++) {
		struct t_child c;

		while (atomic_load(&go2) != round && !atomic_load(&stop))
			sched_yield();
		if (atomic_load(&stop))
			break;
		late = 2;
		if (x_fork(&c) == 0)
			second_child();
		late = 0;
		hook_at = 0;
		atomic_store(&forked2, round);
		second_status = t_child_reap(&c, 10000, "the second fork's child");
		atomic_store(&reaped2, round);
	}
	close(atomic_exchange(&second_watch, -1));
	return arg;
}

static void *creator(void *arg)
{
	atomic_store(&creator_watch, fr_watch(t_gettid()));
	for (int round = 1;; round++) {
		int fd;

		while (atomic_load(&go3) != round && !atomic_load(&stop))
			sched_yield();
		if (atomic_load(&stop))
			break;
		hook_at = 2;
		fd = ueventfd(0, EFD_NONBLOCK);
		hook_at = 0;
		newfd = fd;
		atomic_store(&created, round);
	}
	close(atomic_exchange(&creator_watch, -1));
	return arg;
}

int main(void)
{
	int rounds = 3, copied = 0;
	pthread_t th2, th3;

	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_begin("t_fork_fence_twice");
	wrap_hook_all(NULL, on_syscall_end);
	x_init();
	child_copied = mmap(NULL, sizeof(*child_copied),
			    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			    -1, 0);
	REQUIRE(child_copied != MAP_FAILED);
	REQUIRE(pthread_create(&th2, NULL, second, NULL) == 0);
	REQUIRE(pthread_create(&th3, NULL, creator, NULL) == 0);
	while (atomic_load(&second_watch) < 0 ||
	       atomic_load(&creator_watch) < 0)
		sched_yield();
	pid0 = getpid();
	REQUIRE(pthread_atfork(early_prepare, NULL, NULL) == 0);
	for (int r = 1; r <= rounds; r++) {
		struct t_child c;
		uint64_t v = 0;

		next_fd = fr_next_fd();
		atomic_store(child_copied, 0);
		atomic_store(&cur, r);
		x_step("uepoll", "two forks and a creation");
		late = 1;
		if (x_fork(&c) == 0)
			_exit(0);
		late = 0;
		/* Its parent handlers are done: the fence and gate open. */
		atomic_store(&forked1, r);
		CHECK_EQ(t_child_reap(&c, 10000, "the first fork's child"), 0);
		fr_spin(&reaped2, r);
		fr_spin(&created, r);
		x_step_end();
		REQUIRE(newfd == next_fd);
		CHECK_EQ(second_status, 0);
		if (atomic_load(child_copied)) {
			/* The child had it: its write is ours to read. */
			copied++;
			CHECK_EQ(ueventfd_read(newfd, &v), 0);
			CHECK_EQ(v, 1);
		}
		CHECK_ERR(ueventfd_read(newfd, &v), EAGAIN);
		CHECK_EQ(uepoll_close(newfd), 0);
	}
	atomic_store(&stop, 1);
	REQUIRE(t_join_within(th2, 10000));
	REQUIRE(t_join_within(th3, 10000));
	CHECK_EQ(atomic_load(&fired), rounds);
	munmap(child_copied, sizeof(*child_copied));
	printf("%d rounds, the new ueventfd in the second child in %d\n",
	       rounds, copied);
	return t_end();
}
