/*
 * t_fork_orphan: an instance whose last number was closed while a thread
 * of the parent still waits on it is gone in the forked child: its files
 * (the private duplicate, the doorbell) are closed there.
 *
 * A thread's call holds a reference (NUMBERS in src/obj.c); the child has
 * none of the parent's other threads, so it recounts every object's
 * references (FORK) and closes and releases the ones left with none.  That
 * last walk runs only when the count found one (issue 35, item 4: a walk
 * less over every object otherwise), so this test is what shows the
 * decision right (FORK_ORPHANS_NEVER in tests/mutations/preload.txt).
 *
 * Differential: thread T waits with no timeout on an instance that
 * watches an eventfd, among other live instances and eventfds; the main
 * thread, once T is asleep, closes the instance's number and forks.  The
 * child closes its numbers and reports the fds it has left beyond what
 * the process had before (the kernel's: none); the parent then writes the
 * eventfd, T's wait returns the event (the kernel keeps an epoll alive
 * while a thread waits on it: so does uepoll), and every result must
 * agree between the kernel's objects and uepoll's.
 */
#include "testlib.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOTHER 64 /* live instance + eventfd pairs besides the orphan */

struct be {
	const char *name;
	int (*epc)(int);
	int (*ctl)(int, int, int, struct epoll_event *);
	int (*wait)(int, struct epoll_event *, int, int);
	int (*efd)(unsigned int, int);
	ssize_t (*wr)(int, const void *, size_t);
	int (*cl)(int);
};

static const struct be kern = {
	"kernel", epoll_create1, epoll_ctl, epoll_wait, eventfd, write, close,
};
static const struct be uep = {
	"uepoll", uepoll_create1, uepoll_ctl, uepoll_wait, ueventfd,
	uepoll_write, uepoll_close,
};

struct waiter {
	const struct be *b;
	int ep;
	_Atomic int tid;
	int r;
	struct epoll_event ev;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	atomic_store(&w->tid, t_gettid());
	w->r = w->b->wait(w->ep, &w->ev, 1, -1);
	return NULL;
}

static int add(const struct be *b, int ep, int fd, uint64_t data)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = data };

	return b->ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static void scenario(const struct be *b, struct t_log *l)
{
	int oep[NOTHER], oefd[NOTHER], e, fds0;
	struct waiter w = { .b = b };
	struct t_child c;
	uint64_t one = 1;
	pthread_t t;

	/* What the library makes once per process (its first objects) is
	 * not counted: one object of each kind first. */
	e = b->efd(0, 0);
	w.ep = b->epc(0);
	REQUIRE(e >= 0 && w.ep >= 0);
	b->cl(w.ep);
	b->cl(e);
	fds0 = t_count_fds();

	for (int i = 0; i < NOTHER; i++) {
		oep[i] = b->epc(EPOLL_CLOEXEC);
		oefd[i] = b->efd(0, EFD_NONBLOCK);
		REQUIRE(oep[i] >= 0 && oefd[i] >= 0);
		t_log_res(l, add(b, oep[i], oefd[i], (uint64_t)i));
	}
	w.ep = b->epc(0);
	e = b->efd(0, EFD_NONBLOCK);
	REQUIRE(w.ep >= 0 && e >= 0);
	t_log_res(l, add(b, w.ep, e, 42));
	REQUIRE(pthread_create(&t, NULL, waiter_main, &w) == 0);
	while (!atomic_load(&w.tid))
		sched_yield();
	/* Asleep in the wait's own sleep, not on a lock on its way there
	 * (under load a thread may sleep on one long enough to look asleep:
	 * the close would then come before the wait holds the instance). */
	for (int tries = 0;; tries++) {
		int nr = t_blocked_in(atomic_load(&w.tid), 10000);

		if (nr == SYS_epoll_wait || nr == SYS_epoll_pwait ||
		    nr == SYS_epoll_pwait2 || nr == SYS_ppoll ||
		    nr == SYS_futex_waitv)
			break;
		REQUIRE(tries < 100);
	}
	/* The last number: only T's call leads to the instance now. */
	t_log_res(l, b->cl(w.ep));

	if (t_child_fork(&c) == 0) {
		int left;

		for (int i = 0; i < NOTHER; i++) {
			b->cl(oep[i]);
			b->cl(oefd[i]);
		}
		b->cl(e);
		/* The orphan's files, if the child kept it. */
		left = t_count_fds() - fds0;
		_exit(left >= 0 && left < 100 ? left : 100);
	}
	t_log_put(l, t_child_reap(&c, 10000, b->name));

	t_log_res(l, b->wr(e, &one, sizeof(one)));
	t_log_put(l, t_join_within(t, 10000));
	t_log_events(l, &w.ev, w.r);
	for (int i = 0; i < NOTHER; i++) {
		t_log_res(l, b->cl(oep[i]));
		t_log_res(l, b->cl(oefd[i]));
	}
	t_log_res(l, b->cl(e));
	t_log_put(l, t_count_fds() - fds0);
}

int main(void)
{
	static struct t_log k, u;

	t_begin("t_fork_orphan");
#ifdef T_TSAN
	/* Closing an fd another thread waits on is the scenario itself;
	 * ThreadSanitizer's model of fds reports it as a race (the kernel's
	 * run too). */
	T_SKIP("ThreadSanitizer: a close of an fd another thread waits on");
#endif
	t_watchdog(60);
	scenario(&kern, &k);
	scenario(&uep, &u);
	t_log_same(&k, &u, "orphan");
	return t_end();
}
