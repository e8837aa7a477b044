/*
 * t_rq_idle_first: a harvest stores IDLE in the item it dequeued before it
 * polls the item's source, so that a write that lands between its poll
 * and the end of its delivery queues the item again (STATE MACHINE in
 * src/readyq.c; issue 36: the C twin of models/readyq.pml's
 * IDLE_AFTER_POLL).  Stored after the poll, the write finds the item
 * QUEUED and queues nothing; the harvest, which polled before the write,
 * drops the item and leaves it IDLE: the counter holds 1 and no wait ever
 * reports it (level-triggered, nothing queues it until the next write).
 *
 * The window has no system call, so a hardware watchpoint places the
 * write in it: a level-triggered ueventfd's item is left queued with the
 * counter at 0 (a write, then a read); thread H, in uepoll_wait(0), gets a
 * synchronous SIGTRAP (perf_event_open's sigtrap, on H's own accesses to
 * the counter's word) right after its delivery's poll loaded the counter,
 * and its handler lets the main thread write 1 and waits for that write to
 * end.  Then what H returned and a wait after it must hold the event once
 * (no clock decides anything).  Skipped (77) where perf breakpoints with
 * sigtrap are not allowed (perf_event_paranoid, a seccomp filter, a
 * kernel before 5.13).  Uses the library's private headers for the
 * counter's address.
 */
#include "testlib.h"
#include "watchpoint.h"

#include "eventfd_impl.h"
#include "fdtab.h"
#include "item.h"
#include "port_impl.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

static int ep, efd;
static struct uefd *e;
static _Atomic int h_ready, h_done, fired, w_go, w_done;
static int h_n;
static struct epoll_event h_ev[2];

/* H's first access to the counter is its delivery's poll (it makes no
 * other from its watch on): the write comes, and H goes on when it has
 * ended.  Spins only on atomics (H holds the queue's consumer lock, which
 * the write does not take).
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
	while (!atomic_load_explicit(&w_done, memory_order_relaxed))
		sched_yield();
	atomic_thread_fence(memory_order_seq_cst);
}

static void *h_main(void *arg)
{
	int w;

	(void)arg;
	w = wp_watch(&e->sh->count, 8, on_access);
	atomic_store(&h_ready, w >= 0 ? 1 : w);
	if (w < 0)
		return NULL;
	h_n = uepoll_wait(ep, h_ev, 2, 0);
	atomic_store(&h_done, 1);
	close(w);
	return NULL;
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 }, got[2];
	struct port *p;
	struct item *it;
	uint64_t v = 1;
	pthread_t h;
	int n, total;

	t_begin("t_rq_idle_first");
	t_watchdog(60);

	ep = uepoll_create1(0);
	efd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(ep >= 0 && efd >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
	e = (struct uefd *)(void *)fdtab_peek(efd);
	p = (struct port *)(void *)fdtab_peek(ep);
	REQUIRE(e && p && !list_empty(&p->items));
	it = container_of(p->items.next, struct item, portlink);
	REQUIRE(it->fd == efd);

	/* The item queued, the counter 0. */
	REQUIRE(uepoll_write(efd, &v, 8) == 8);
	REQUIRE(uepoll_read(efd, &v, 8) == 8 && v == 1);
	REQUIRE(atomic_load(&it->state) == ITEM_QUEUED);

	REQUIRE(pthread_create(&h, NULL, h_main, NULL) == 0);
	while (!atomic_load(&h_ready))
		sched_yield();
	if (atomic_load(&h_ready) < 0) {
		fprintf(stderr, "perf_event_open: %s: skip\n",
			strerror(-atomic_load(&h_ready)));
		pthread_join(h, NULL);
		uepoll_close(ep);
		uepoll_close(efd);
		T_SKIP("no perf breakpoint with sigtrap here");
	}
	/* (Under ThreadSanitizer the trap's handler may come late, or the
	 * wait may end first: then the write comes after it, as it may.) */
	while (!atomic_load(&w_go) && !atomic_load(&h_done))
		sched_yield();
	v = 1;
	CHECK_EQ(uepoll_write(efd, &v, 8), 8);
	atomic_store(&w_done, 1);
	REQUIRE(t_join_within(h, 10000));
	CHECK(atomic_load(&fired)); /* the watchpoint did place the write */
	CHECK(h_n >= 0 && h_n <= 1);
	total = h_n > 0 ? h_n : 0;

	/* The write made the counter 1: a level-triggered wait reports it. */
	n = uepoll_wait(ep, got, 2, 0);
	if (n == 0 && total == 0)
		fprintf(stderr, "the counter holds 1 and no wait reports it: "
				"the harvest stored IDLE after its poll\n");
	CHECK_EQ(n, 1);
	for (int i = 0; i < h_n; i++)
		CHECK(h_ev[i].events == EPOLLIN && h_ev[i].data.u64 == 7);
	for (int i = 0; i < n; i++)
		CHECK(got[i].events == EPOLLIN && got[i].data.u64 == 7);

	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_EQ(uepoll_close(efd), 0);
	return t_end();
}
