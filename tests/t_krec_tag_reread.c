/*
 * t_krec_tag_reread: a harvest that translates a recorded registration's
 * event reads the record's tag again after its fields, so that a MOD
 * between its first look at the tag and its load of the fields makes it
 * drop the event, never report it with the data of the registration after
 * the MOD (DATA in src/krec.c; issue 36: the C twin of models/data.pml's
 * NO_REREAD).  Checked once, before the fields, the tag is the event's,
 * and the fields are the MOD's.
 *
 * The window has no system call, so a hardware watchpoint places the MOD
 * in it: an instance holds a pipe's read end, which holds a byte
 * (EPOLLIN | EPOLLURGENT, data 2: a recorded registration); thread W, in
 * uepoll_wait(0), gets a synchronous SIGTRAP (perf_event_open's sigtrap,
 * on W's own accesses to the record's tag) right after its translation of
 * the kernel's event loaded the tag the first time, and its handler lets
 * the main thread MOD the pipe to EPOLLOUT | EPOLLURGENT with data 3 and
 * waits for the MOD to end.  A pipe's read end is never writable: no event
 * may carry data 3 (the kernel's epoll, made the same, never gives one);
 * the event given before the MOD is dropped or keeps data 2.  No clock
 * decides anything.  Skipped (77) where perf breakpoints with sigtrap are
 * not allowed (perf_event_paranoid, a seccomp filter, a kernel before
 * 5.13).  Uses the library's private headers for the record's address.
 */
#include "testlib.h"
#include "watchpoint.h"

#include "fdtab.h"
#include "krec.h"
#include "port_impl.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <unistd.h>

static int ep;
static struct krec *rec;
static _Atomic int w_ready, w_done, fired, m_go, m_done;
static int w_n;
static struct epoll_event w_ev[4];

/* W's first access to the tag is krec_of's first load (W makes no other
 * from its watch on): the MOD comes, and W goes on when it has ended.
 * Spins only on atomics (W holds no lock of the instance: the harvest of
 * kernel events takes none, and the MOD takes the instance's mtx).
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
	atomic_store_explicit(&m_go, 1, memory_order_relaxed);
	while (!atomic_load_explicit(&m_done, memory_order_relaxed))
		sched_yield();
	atomic_thread_fence(memory_order_seq_cst);
}

static void *w_main(void *arg)
{
	int w;

	(void)arg;
	w = wp_watch(&rec->tag, 4, on_access);
	atomic_store(&w_ready, w >= 0 ? 1 : w);
	if (w < 0)
		return NULL;
	w_n = uepoll_wait(ep, w_ev, 4, 0);
	atomic_store(&w_done, 1);
	close(w);
	return NULL;
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLURGENT,
				  .data.u64 = 2 }, got[4];
	struct port *p;
	pthread_t w;
	int pp[2], n;

	t_begin("t_krec_tag_reread");
	t_watchdog(60);

	ep = uepoll_create1(0);
	REQUIRE(ep >= 0);
	REQUIRE(pipe2(pp, O_NONBLOCK) == 0);
	REQUIRE(write(pp[1], "x", 1) == 1);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, pp[0], &ev) == 0);
	p = (struct port *)(void *)fdtab_peek(ep);
	REQUIRE(p);
	for (rec = atomic_load(&p->krecs); rec; rec = rec->next)
		if (atomic_load(&rec->fd) == pp[0])
			break;
	REQUIRE(rec); /* EPOLLURGENT: the registration has a record */

	REQUIRE(pthread_create(&w, NULL, w_main, NULL) == 0);
	while (!atomic_load(&w_ready))
		sched_yield();
	if (atomic_load(&w_ready) < 0) {
		fprintf(stderr, "perf_event_open: %s: skip\n",
			strerror(-atomic_load(&w_ready)));
		pthread_join(w, NULL);
		uepoll_close(ep);
		close(pp[0]);
		close(pp[1]);
		T_SKIP("no perf breakpoint with sigtrap here");
	}
	/* (Under ThreadSanitizer the trap's handler may come late, or the
	 * wait may end first: then the MOD comes after it, as it may.) */
	while (!atomic_load(&m_go) && !atomic_load(&w_done))
		sched_yield();
	ev.events = EPOLLOUT | EPOLLURGENT;
	ev.data.u64 = 3;
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_MOD, pp[0], &ev), 0);
	atomic_store(&m_done, 1);
	REQUIRE(t_join_within(w, 10000));
	CHECK(atomic_load(&fired)); /* the watchpoint did place the MOD */

	CHECK(w_n >= 0 && w_n <= 1);
	for (int i = 0; i < w_n; i++)
		if (w_ev[i].data.u64 != 2) {
			fprintf(stderr, "an event %#x with data %llu, given "
				"before the MOD to data 3: the harvest did not "
				"read the tag again after the fields\n",
				w_ev[i].events,
				(unsigned long long)w_ev[i].data.u64);
			t_failures++;
		}
	/* And after the MOD: nothing (the read end is never writable). */
	n = uepoll_wait(ep, got, 4, 0);
	CHECK_EQ(n, 0);

	CHECK_EQ(uepoll_close(ep), 0);
	close(pp[0]);
	close(pp[1]);
	return t_end();
}
