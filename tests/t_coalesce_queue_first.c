/*
 * t_coalesce_queue_first: a coalesced write decides whether its instance's
 * ring is owed (bell__defer: the doorbell not rung, or a napper) after it
 * queued the item, so that a waiter that took the doorbell and found the
 * queue empty meanwhile is rung by the write's timer (COALESCE in
 * src/eventfd.c; issue 36: the C twin of models/coalesce.pml's
 * HOLD_FIRST).  Decided before the queueing, the write sees the doorbell
 * rung, owes nothing and arms no timer; the waiter, which took that ring
 * and found nothing queued, sleeps with the item queued behind it until
 * some other event comes: a lost wakeup.
 *
 * The window has no system call (and the write holds the ueventfd's
 * wq.lock in it), so a hardware watchpoint places the waiter's whole wait
 * in it.  An instance holds a ueventfd edge-triggered, with its counter at
 * 1 (the kernel fd readable: no change of class, so no ring owed for the
 * mirror), and its doorbell rung with nothing queued (a wait took the
 * event and left the ring).  Coalescing on (a long delay, no count),
 * thread A writes 1 and gets a synchronous SIGTRAP (perf_event_open's
 * sigtrap, on A's own accesses to the doorbell's `set`) right after the
 * write loaded `set` for its decision; its handler waits (spinning on
 * atomics: A holds wq.lock) while the main thread starts waiter W
 * (uepoll_wait, no timeout), until W has returned, or has taken the ring
 * and sleeps in the kernel epoll with the doorbell clear.  Then A goes on.
 * W must return the write's event: at once (the item was queued before the
 * decision), or when the timer rings.  A W still asleep 3 s after the
 * write has ended is a lost wakeup (a hang detector, not a timing: the
 * event is due within the delay); it is then woken by a plain write.  No
 * clock decides anything else.  Skipped (77) where perf breakpoints with
 * sigtrap are not allowed (perf_event_paranoid, a seccomp filter, a
 * kernel before 5.13).  Uses the library's private headers for the
 * doorbell's address.
 */
#include "testlib.h"
#include "watchpoint.h"

#include "eventfd_impl.h"
#include "fdtab.h"
#include "port_impl.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DELAY_US 100000 /* the longest: only the timer's ring */

static int ep, efd;
static struct port *p;
static _Atomic int a_ready, a_done, fired, w_go, w_tid, w_done, a_go;
static int w_n;
static struct epoll_event w_ev[2];

/* A's first access to `set` is its write's decision whether a ring is
 * owed (the write touches the instance's bell nowhere before it).
 *
 * Relaxed atomics only, then a fence: under ThreadSanitizer the trap may
 * also come inside the runtime's own atomic operation on the watched word
 * (its second load, under the thread's slot lock and the word's sync
 * object lock), where a seq_cst or acquire operation here would wait for
 * a lock this thread holds; relaxed ones take none. */
static void on_access(const void *addr)
{
	(void)addr;
	if (atomic_exchange_explicit(&fired, 1, memory_order_relaxed))
		return;
	atomic_store_explicit(&w_go, 1, memory_order_relaxed);
	while (!atomic_load_explicit(&a_go, memory_order_relaxed))
		sched_yield();
	atomic_thread_fence(memory_order_seq_cst);
}

static void *a_main(void *arg)
{
	uint64_t v = 1;
	int w;

	(void)arg;
	w = wp_watch(&p->bell.set, 4, on_access);
	atomic_store(&a_ready, w >= 0 ? 1 : w);
	if (w < 0)
		return NULL;
	CHECK_EQ(uepoll_write(efd, &v, 8), 8);
	atomic_store(&a_done, 1);
	close(w);
	return NULL;
}

static void *w_main(void *arg)
{
	(void)arg;
	atomic_store(&w_tid, t_gettid());
	w_n = uepoll_wait(ep, w_ev, 2, -1);
	atomic_store(&w_done, 1);
	return NULL;
}

/* W is blocked in the kernel epoll (its sleep), not on its way to it. */
static int w_asleep(void)
{
	char path[64], buf[64];
	int tid = atomic_load(&w_tid), nr = -1;
	FILE *f;

	if (!tid)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && buf[0] >= '0' && buf[0] <= '9')
		nr = atoi(buf);
	fclose(f);
	return nr == SYS_epoll_pwait || nr == SYS_epoll_pwait2
#ifdef SYS_epoll_wait
	       || nr == SYS_epoll_wait
#endif
		;
}

int main(void)
{
	struct ueventfd_coalesce co = { .delay_us = DELAY_US };
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET,
				  .data.u64 = 5 }, got[2];
	pthread_t a, w;
	uint64_t v = 1;
	int n;

	t_begin("t_coalesce_queue_first");
	t_watchdog(60);

	ep = uepoll_create1(0);
	efd = ueventfd(1, EFD_NONBLOCK);
	REQUIRE(ep >= 0 && efd >= 0);
	p = (struct port *)(void *)fdtab_peek(ep);
	REQUIRE(p);
	/* The ADD finds the counter at 1: the item queued, the doorbell
	 * rung; a wait takes the event (edge-triggered: not queued again)
	 * and leaves the ring. */
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
	n = uepoll_wait(ep, got, 2, 0);
	REQUIRE(n == 1 && got[0].data.u64 == 5);
	REQUIRE(rq_empty(&p->rq));
	REQUIRE(atomic_load(&p->bell.set) == 1);
	REQUIRE(ueventfd_coalesce(efd, &co, NULL) == 0);

	REQUIRE(pthread_create(&a, NULL, a_main, NULL) == 0);
	while (!atomic_load(&a_ready))
		sched_yield();
	if (atomic_load(&a_ready) < 0) {
		fprintf(stderr, "perf_event_open: %s: skip\n",
			strerror(-atomic_load(&a_ready)));
		pthread_join(a, NULL);
		uepoll_close(ep);
		uepoll_close(efd);
		T_SKIP("no perf breakpoint with sigtrap here");
	}
	/* (Under ThreadSanitizer the trap's handler may come late, or the
	 * write may end first: then W comes after it, as it may.) */
	while (!atomic_load(&w_go) && !atomic_load(&a_done))
		sched_yield();
	REQUIRE(pthread_create(&w, NULL, w_main, NULL) == 0);
	/* W returned, or took the ring (with nothing queued: `set` clear)
	 * and sleeps. */
	while (!atomic_load(&w_done) &&
	       !(atomic_load(&p->bell.set) == 0 &&
		 atomic_load(&p->bell.sleepers) > 0 && w_asleep()))
		sched_yield();
	atomic_store(&a_go, 1);
	REQUIRE(t_join_within(a, 10000));
	CHECK(atomic_load(&fired)); /* the watchpoint did place W's wait */

	if (!t_join_within(w, 2000)) {
		fprintf(stderr, "the waiter still sleeps with the write's item "
				"queued: its ring was decided before the "
				"queueing\n");
		t_failures++;
		co.delay_us = 0;
		CHECK_EQ(ueventfd_coalesce(efd, &co, NULL), 0);
		CHECK_EQ(uepoll_write(efd, &v, 8), 8);
		REQUIRE(t_join_within(w, 10000));
	}
	CHECK_EQ(w_n, 1);
	if (w_n == 1)
		CHECK(w_ev[0].events == EPOLLIN && w_ev[0].data.u64 == 5);

	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_EQ(uepoll_close(efd), 0);
	return t_end();
}
