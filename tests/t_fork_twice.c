/*
 * t_fork_twice: two threads fork at once (issue 32, bug 3).
 *
 * A fork shares every ueventfd alive at that moment with the child
 * (SHARED), as the kernel's eventfd is one file in both processes.  Here
 * the main thread forks while a ueventfd made before is not yet shared;
 * at the first system call of its prepare handler (inside that share: the
 * watchers moved, the shared mode not yet on) a second thread forks, and
 * its child writes 1 to the ueventfd.  The parent must then read that 1,
 * as it does with the kernel's eventfd (the same script runs on it first).
 * Before the fix the second fork skipped the ueventfd whose share the
 * first had begun, forked before that share ended, and its child wrote to
 * a private copy: the parent read nothing (EAGAIN).
 *
 * Deterministic (tests/forkrace.h): the hook waits until the second fork
 * is over or its thread sleeps (a fixed library makes it wait for the
 * first fork).  The rounds are counted, not timed.
 */
#include "forkrace.h"
#include "calls.h"
#include "xproc.h"

static const struct calls *S;
static int efd;
static _Atomic int second_watch = -1; /* fr_watch of the second thread */
static _Atomic int cur, go, done, stop, fired; /* cur: the main thread's round */
static int second_status;

/* The main thread's prepare handler, at its first system call: the second
 * thread forks now. */
static void hook(long nr)
{
	(void)nr;
	if (!fr_here())
		return;
	atomic_fetch_add(&fired, 1);
	atomic_store(&go, atomic_load(&cur));
	fr_until(&done, atomic_load(&cur), second_watch);
}

static void *second(void *arg)
{
	atomic_store(&second_watch, fr_watch(t_gettid()));
	for (int round = 1;; round++) {
		struct t_child c;
		uint64_t one = 1;

		while (atomic_load(&go) != round && !atomic_load(&stop))
			sched_yield();
		if (atomic_load(&stop))
			break;
		if (x_fork(&c) == 0)
			_exit(S->write(efd, &one, sizeof(one)) == sizeof(one) ?
				      0 : 2);
		second_status = t_child_reap(&c, 10000, "the second fork's child");
		atomic_store(&done, round);
	}
	close(atomic_exchange(&second_watch, -1));
	return arg;
}

/* One script on one system; its results in L. */
static void run(const struct calls *s, int rounds, struct t_log *L)
{
	pthread_t th;

	S = s;
	atomic_store(&go, 0);
	atomic_store(&done, 0);
	atomic_store(&stop, 0);
	REQUIRE(pthread_create(&th, NULL, second, NULL) == 0);
	while (atomic_load(&second_watch) < 0)
		sched_yield();
	for (int r = 1; r <= rounds; r++) {
		struct t_child c;
		uint64_t v = 0;

		efd = s->eventfd(0, EFD_NONBLOCK);
		REQUIRE(efd >= 0);
		atomic_store(&cur, r);
		/* On uepoll the hook starts the second fork inside this one's
		 * prepare; the kernel has no prepare to race: at once. */
		if (s == &calls_uepoll)
			fr_arm_fork = 1;
		else
			atomic_store(&go, r);
		x_step(s->name, "the two forks");
		if (x_fork(&c) == 0)
			_exit(0);
		fr_arm_fork = 0;
		if (atomic_load(&go) != r) /* the hook never ran: no race */
			atomic_store(&go, r);
		t_log_put(L, t_child_reap(&c, 10000, "the first fork's child"));
		fr_spin(&done, r);
		x_step_end();
		t_log_put(L, second_status);
		/* The second child's write, as the kernel's eventfd has it. */
		t_log_res(L, s->read(efd, &v, sizeof(v)));
		t_log_put(L, (long)v);
		CHECK_EQ(s->close(efd), 0);
	}
	atomic_store(&stop, 1);
	REQUIRE(t_join_within(th, 10000));
}

int main(void)
{
	int rounds = (int)(8 * t_scale());
	struct t_log L[2];

	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_begin("t_fork_twice");
	x_init();
	fr_init(hook);
	if (rounds < 3)
		rounds = 3;
	memset(L, 0, sizeof(L));
	run(&calls_kernel, rounds, &L[0]);
	run(&calls_uepoll, rounds, &L[1]);
	CHECK_EQ(atomic_load(&fired), rounds);
	for (int r = 0; r < rounds; r++)
		CHECK_EQ(L[0].v[4 * r + 3], 1);
	t_log_same(&L[0], &L[1], "two forks at once");
	printf("%d rounds, the hook ran in %d\n", rounds, atomic_load(&fired));
	return t_end();
}
