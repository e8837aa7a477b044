/*
 * t_fork_demote: fork() while another thread demotes (uepoll_demote) a
 * ueventfd or an instance (issue 32, with bug 4: what a fork finds half
 * done).  The child must find the object whole: demoted (the kernel's
 * eventfd or epoll, with every value and registration) or live, never
 * stuck half-way (a demotion begun by a thread that the child does not
 * have would never end there).
 *
 * The demoting thread's hook (tests/forkrace.h) is its demotion's first
 * kcmp(2) (a watcher being made a kernel registration: the demotion has
 * begun, and holds none of the library's locks there): it lets the main
 * thread fork and waits until the child runs (its fork handlers are over:
 * its copy of the objects is made) or the forking thread sleeps (a fixed
 * library makes the fork wait for the demotion in flight).  Each script
 * runs on the kernel's objects too (whose uepoll_demote is a no-op) and
 * both logs must be equal:
 *  a. a ueventfd holding 5, watched by an instance, is demoted; the child
 *     writes 1 and demotes it too; the parent then reads 6.  Before the
 *     fix the child's copy stayed DEMOTING with the counter not yet
 *     carried: its write went to a private counter, lost to the parent,
 *     and its demotion waited for ever for the thread that was demoting;
 *  b. an instance watching a ueventfd and a pipe is demoted; the child
 *     adds an eventfd of its own and waits: it gets the eventfd's event.
 *     Before the fix its ctl waited for ever for the demotion to end.
 * A hang is a failure naming the step (xproc.h).
 */
#include "forkrace.h"
#include "calls.h"
#include "xproc.h"

#include <sys/mman.h>
#include <sys/syscall.h>

static const struct calls *S;
static int main_watch;
static _Atomic int cur, go, stop, fired, demoted;
/* The round whose child runs (set by the child: shared memory). */
static _Atomic int *child_up;
static int target; /* what the demoting thread demotes */

static void hook(long nr)
{
	if (!fr_here())
		return;
	if (nr != SYS_kcmp) {
		wrap_hook_once(hook);
		return;
	}
	atomic_fetch_add(&fired, 1);
	atomic_store(&go, atomic_load(&cur));
	fr_until(child_up, atomic_load(&cur), main_watch);
}

static void *demoter(void *arg)
{
	for (int round = 1;; round++) {
		while (atomic_load(&cur) != round && !atomic_load(&stop))
			sched_yield();
		if (atomic_load(&stop))
			break;
		if (S == &calls_uepoll)
			wrap_hook_once(hook);
		else
			atomic_store(&go, round); /* nothing to race */
		CHECK_EQ(uepoll_demote(target), 0);
		wrap_hook_once(NULL);
		atomic_store(&demoted, round);
	}
	return arg;
}

static long wr(int fd, uint64_t v)
{
	return S->write(fd, &v, sizeof(v)) == sizeof(v) ? 0 : -errno;
}

static long rd(int fd)
{
	uint64_t v = 0;

	return S->read(fd, &v, sizeof(v)) == sizeof(v) ? (long)v : -errno;
}

/* Fork when the demotion is at its hook; the child says it runs, the
 * parent waits for that (awake: the hook is watching it). */
static int fork_now(int r, struct t_child *c)
{
	int pid;

	fr_spin(&go, r);
	pid = x_fork(c);
	if (pid == 0)
		atomic_store(child_up, r);
	else
		fr_spin(child_up, r);
	return pid;
}

/* a. A ueventfd being demoted. */
static void round_efd(int r, struct t_log *L)
{
	int ep = S->create1(0), efd = S->eventfd(5, EFD_NONBLOCK);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };
	struct t_child c;

	REQUIRE(ep >= 0 && efd >= 0);
	REQUIRE(S->ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
	target = efd;
	x_step(S->name, "a. a ueventfd demoted");
	atomic_store(&cur, r);
	if (fork_now(r, &c) == 0) {
		x_step(S->name,
		       "a. the child's write and demotion");
		if (wr(efd, 1) != 0)
			_exit(2);
		_exit(uepoll_demote(efd) == 0 ? 0 : 4);
	}
	x_step_end();
	/* (A child stuck in the demotion ends at its step's deadline.) */
	t_log_put(L, t_child_reap(&c, 15000, "a. the child"));
	x_step(S->name, "a. the demotion's end");
	fr_spin(&demoted, r);
	x_step_end();
	t_log_put(L, rd(efd));
	t_log_put(L, rd(efd));
	t_log_put(L, S->wait(ep, &ev, 1, 0));
	CHECK_EQ(S->close(efd), 0);
	CHECK_EQ(S->close(ep), 0);
}

/* b. An instance being demoted. */
static void round_port(int r, struct t_log *L)
{
	int ep = S->create1(0), efd = S->eventfd(0, EFD_NONBLOCK), p[2];
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 };
	struct t_child c;

	REQUIRE(ep >= 0 && efd >= 0 && pipe(p) == 0);
	REQUIRE(S->ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
	ev.data.u64 = 2;
	REQUIRE(S->ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0);
	target = ep;
	x_step(S->name, "b. an instance demoted");
	atomic_store(&cur, r);
	if (fork_now(r, &c) == 0) {
		struct epoll_event out[4];
		int k = eventfd(1, 0), n;

		x_step(S->name,
		       "b. the child's ctl and wait");
		ev.data.u64 = 3;
		if (k < 0 || S->ctl(ep, EPOLL_CTL_ADD, k, &ev) != 0)
			_exit(2);
		n = S->wait(ep, out, 4, 0);
		_exit(n == 1 && out[0].data.u64 == 3 ? 0 : 4);
	}
	x_step_end();
	t_log_put(L, t_child_reap(&c, 15000, "b. the child"));
	x_step(S->name, "b. the demotion's end");
	fr_spin(&demoted, r);
	x_step_end();
	/* The parent's instance still has both registrations. */
	CHECK_EQ(write(p[1], "x", 1), 1);
	CHECK_EQ(wr(efd, 2), 0);
	{
		struct epoll_event out[4];
		int n = S->wait(ep, out, 4, 0);

		t_log_events(L, out, n);
	}
	close(p[0]);
	close(p[1]);
	CHECK_EQ(S->close(efd), 0);
	CHECK_EQ(S->close(ep), 0);
}

static void run(const struct calls *s, int rounds, struct t_log *La,
		struct t_log *Lb)
{
	pthread_t th;
	int r = 0;

	S = s;
	atomic_store(&cur, 0);
	atomic_store(&go, 0);
	atomic_store(child_up, 0);
	atomic_store(&demoted, 0);
	atomic_store(&stop, 0);
	REQUIRE(pthread_create(&th, NULL, demoter, NULL) == 0);
	for (int i = 0; i < rounds; i++)
		round_efd(++r, La);
	for (int i = 0; i < rounds; i++)
		round_port(++r, Lb);
	atomic_store(&stop, 1);
	REQUIRE(t_join_within(th, 10000));
}

int main(void)
{
	int rounds = (int)(4 * t_scale());
	struct t_log L[4];

	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_begin("t_fork_demote");
	x_init();
	main_watch = fr_watch(t_gettid());
	fr_init(NULL);
	child_up = mmap(NULL, sizeof(*child_up), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(child_up != MAP_FAILED);
	if (rounds < 2)
		rounds = 2;
	memset(L, 0, sizeof(L));
	run(&calls_kernel, rounds, &L[0], &L[1]);
	run(&calls_uepoll, rounds, &L[2], &L[3]);
	close(main_watch);
	munmap(child_up, sizeof(*child_up));
	CHECK_EQ(atomic_load(&fired), 2 * rounds);
	CHECK_EQ(L[0].v[1], 6);
	t_log_same(&L[0], &L[2], "a. a ueventfd demoted during a fork");
	t_log_same(&L[1], &L[3], "b. an instance demoted during a fork");
	printf("%d rounds each, the hook ran in %d\n", rounds,
	       atomic_load(&fired));
	return t_end();
}
