/*
 * t_fork_create: a ueventfd created by another thread while fork() runs
 * is shared with the child, or is not in the child at all (issue 32,
 * bug 4).
 *
 * A fork shares every ueventfd alive at that moment (SHARED), as the
 * kernel's eventfd is one file in both processes: if the child has the
 * number, a write there is read by the parent.  Two races, each a few
 * rounds (tests/forkrace.h: hooks at the library's system calls, no
 * clock):
 *  a. the creation comes inside the fork's prepare handler: at the first
 *     system call of the prepare (the share of a ueventfd made before the
 *     fork, after the prepare's walk of the live objects) the other thread
 *     calls ueventfd() and the hook waits until it has returned or sleeps.
 *     Before the fix it returned, published after the walk and before the
 *     fork gate closed: the child had a private copy and its write was
 *     lost (the parent read EAGAIN).  Fixed, the creation waits for the
 *     fork, and the child has no such number.
 *  b. the creation is in flight when the fork begins: the creating
 *     thread's hook (its ueventfd()'s second system call: the kernel
 *     eventfd made, the object not yet published) lets the main thread
 *     fork and waits until the fork is over or the forking thread sleeps.
 *     Before the fix the fork did not see the object, and the child wrote
 *     to the bare kernel eventfd behind the parent's ueventfd (the parent
 *     read EAGAIN); fixed, the fork waits for the creation and shares it.
 * Checked in each round: if the child has the number (an eventfd, open),
 * its write of 1 is the parent's next read.  The kernel has no library to
 * race: the kernel's eventfd is shared whenever it was made (that is the
 * rule checked, not a log compared).
 */
#include "forkrace.h"
#include "xproc.h"

#include <sys/mman.h>

enum { RACE_IN_PREPARE, RACE_IN_CREATE };

static int main_watch;
static _Atomic int creator_watch = -1;
static int race, next_fd, newfd;
static _Atomic int cur, go, created, forked, stop, fired;
/* The child had the new number and wrote 1 to it (shared memory). */
static _Atomic int *child_copied;

/* The child: writes 1 to the new number if the fork copied it; exits 2
 * if the write failed. */
static _Noreturn void child(void)
{
	if (!fr_is_eventfd(next_fd))
		_exit(0);
	atomic_store(child_copied, 1);
	_exit(ueventfd_write(next_fd, 1) == 0 ? 0 : 2);
}

/* a: the main thread's prepare handler, at its first system call. */
static void prepare_hook(long nr)
{
	(void)nr;
	if (!fr_here())
		return;
	atomic_fetch_add(&fired, 1);
	atomic_store(&go, atomic_load(&cur));
	fr_until(&created, atomic_load(&cur), creator_watch);
}

/* b: the creating thread's ueventfd(), at its second system call. */
static int create_calls;
static void create_hook(long nr)
{
	(void)nr;
	if (!fr_here())
		return;
	if (++create_calls < 2) {
		wrap_hook_once(create_hook);
		return;
	}
	atomic_fetch_add(&fired, 1);
	atomic_store(&go, atomic_load(&cur));
	fr_until(&forked, atomic_load(&cur), main_watch);
}

static void *creator(void *arg)
{
	atomic_store(&creator_watch, fr_watch(t_gettid()));
	for (int round = 1;; round++) {
		int fd;

		while (atomic_load(&go) != round && !atomic_load(&stop))
			sched_yield();
		if (atomic_load(&stop))
			break;
		if (race == RACE_IN_CREATE) {
			create_calls = 0;
			wrap_hook_once(create_hook);
		}
		fd = ueventfd(0, EFD_NONBLOCK);
		wrap_hook_once(NULL);
		newfd = fd;
		atomic_store(&created, round);
	}
	close(atomic_exchange(&creator_watch, -1));
	return arg;
}

/* Rounds of one race; how many of them copied the new ueventfd into the
 * child (the others made it after the fork). */
static int run(int which, int rounds)
{
	pthread_t th;
	int copied = 0;

	race = which;
	atomic_store(&go, 0);
	atomic_store(&created, 0);
	atomic_store(&forked, 0);
	atomic_store(&stop, 0);
	atomic_store(&fired, 0);
	REQUIRE(pthread_create(&th, NULL, creator, NULL) == 0);
	while (atomic_load(&creator_watch) < 0)
		sched_yield();
	for (int r = 1; r <= rounds; r++) {
		/* Made before the fork: the prepare has it to share (a: its
		 * share's system call is the hook). */
		int old = ueventfd(0, EFD_NONBLOCK);
		struct t_child c;
		uint64_t v = 0;
		int st;

		REQUIRE(old >= 0);
		next_fd = fr_next_fd();
		atomic_store(child_copied, 0);
		atomic_store(&cur, r);
		x_step("uepoll", which == RACE_IN_PREPARE
					 ? "a. a creation inside the prepare"
					 : "b. a fork during a creation");
		if (which == RACE_IN_PREPARE) {
			fr_arm_fork = 1;
		} else {
			atomic_store(&go, r);
			fr_spin(&fired, r); /* the creation is at its hook */
		}
		if (x_fork(&c) == 0)
			child();
		fr_arm_fork = 0;
		atomic_store(&forked, r);
		if (atomic_load(&go) != r) /* the hook never ran */
			atomic_store(&go, r);
		st = t_child_reap(&c, 10000, "the child");
		fr_spin(&created, r);
		x_step_end();
		REQUIRE(newfd == next_fd);
		CHECK_EQ(st, 0);
		if (atomic_load(child_copied)) {
			/* The child had it: its write is ours to read. */
			copied++;
			CHECK_EQ(ueventfd_read(newfd, &v), 0);
			CHECK_EQ(v, 1);
		}
		CHECK_ERR(ueventfd_read(newfd, &v), EAGAIN);
		CHECK_EQ(uepoll_close(newfd), 0);
		CHECK_EQ(uepoll_close(old), 0);
	}
	atomic_store(&stop, 1);
	REQUIRE(t_join_within(th, 10000));
	CHECK_EQ(atomic_load(&fired), rounds);
	return copied;
}

int main(void)
{
	int rounds = (int)(8 * t_scale()), a, b;

	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_begin("t_fork_create");
	x_init();
	main_watch = fr_watch(t_gettid());
	fr_init(prepare_hook);
	child_copied = mmap(NULL, sizeof(*child_copied),
			    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			    -1, 0);
	REQUIRE(child_copied != MAP_FAILED);
	if (rounds < 3)
		rounds = 3;
	a = run(RACE_IN_PREPARE, rounds);
	b = run(RACE_IN_CREATE, rounds);
	close(main_watch);
	munmap(child_copied, sizeof(*child_copied));
	printf("a. created inside the prepare: %d of %d rounds copied it into "
	       "the child\n", a, rounds);
	printf("b. a fork during a creation: %d of %d rounds copied it into "
	       "the child\n", b, rounds);
	return t_end();
}
