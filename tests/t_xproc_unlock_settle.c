/*
 * t_xproc_unlock_settle: a bypass that fills a shared ueventfd's counter
 * while another thread holds the cross-process lock leaves the kernel fd's
 * fill to the holder, which settles again at its unlock (uefd__xunlock);
 * after it, the fd is not writable, as the kernel's eventfd at its
 * maximum (issue 36: UNLOCK_NO_RESETTLE; docs/design.md, SHARED, BYPASS).
 *
 * One shared ueventfd (a child forked and parked keeps it shared).  Thread
 * H writes 1 to the counter of 0: under the lock, its kernel fd raised,
 * its CAS, its settle.  A hardware watchpoint on H's accesses to kunits
 * (tests/watchpoint.h) stops H at its settle's look (the first access
 * after its CAS), the lock held, after which H does nothing but unlock;
 * there the main thread fills the counter (its write bypasses H, held too
 * long), then H goes on.  poll(2) must then say readable, not writable.
 * Skipped (77) without perf breakpoints.  No timing is asserted.
 */
#include "watchpoint.h"
#include "xproc.h"

#include "eventfd_impl.h"
#include "fdtab.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>

#define FULL 0xfffffffffffffffeull

static int fd;
static struct uefd_ctr *ctr;
static _Atomic int h_ready, h_held, h_go;

/* H's first access to kunits once its CAS is done: its settle's look.
 * Relaxed atomics only, then a fence: under ThreadSanitizer the trap may
 * also come inside the runtime's own atomic operation on kunits (under
 * the thread's slot lock), where a seq_cst operation here would wait for
 * a lock this thread holds. */
static void on_access(const void *addr)
{
	(void)addr;
	if (atomic_load_explicit(&h_held, memory_order_relaxed) ||
	    atomic_load_explicit(&ctr->count, memory_order_relaxed) != 1)
		return;
	atomic_store_explicit(&h_held, 1, memory_order_relaxed);
	while (!atomic_load_explicit(&h_go, memory_order_relaxed))
		sched_yield();
	atomic_thread_fence(memory_order_seq_cst);
}

static void *h_main(void *arg)
{
	uint64_t v = 1;
	ssize_t r;
	int w;

	(void)arg;
	w = wp_watch(&ctr->kunits, 8, on_access);
	atomic_store(&h_ready, w >= 0 ? 1 : w);
	if (w < 0)
		return (void *)(intptr_t)-2;
	r = uepoll_write(fd, &v, 8);
	close(w);
	return (void *)(intptr_t)r;
}

int main(void)
{
	pthread_t h;
	struct x_park park;
	int ev;
	uint64_t v = FULL - 1;
	void *ret;

	t_begin("t_xproc_unlock_settle");
	x_init();
	fd = ueventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	REQUIRE(fd >= 0);
	ctr = ((struct uefd *)(void *)fdtab_peek(fd))->sh;
	x_park(&park); /* the fd shared from here on */

	x_step("uepoll", "H writes 1, stopped at its settle's look");
	REQUIRE(pthread_create(&h, NULL, h_main, NULL) == 0);
	while (!atomic_load(&h_ready))
		sched_yield();
	while (atomic_load(&h_ready) > 0 && !atomic_load(&h_held))
		sched_yield();
	x_step_end();
	if (atomic_load(&h_ready) > 0) {
		x_step("uepoll", "a write that fills the counter bypasses H");
		CHECK_EQ(uepoll_write(fd, &v, 8), 8);
		x_step_end();
		atomic_store(&h_go, 1);
	}
	x_step("uepoll", "H ends");
	REQUIRE(pthread_join(h, &ret) == 0);
	x_step_end();
	if (atomic_load(&h_ready) < 0) {
		x_unpark(&park);
		uepoll_close(fd);
		T_SKIP("no perf breakpoint with sigtrap here");
	}
	CHECK_EQ((intptr_t)ret, 8);
	/* The kernel's eventfd at its maximum: readable, not writable. */
	ev = x_poll(fd, POLLIN | POLLOUT, 0);
	if (ev != POLLIN)
		fprintf(stderr, "poll(2) says %#x over a full counter (the "
				"kernel's: %#x)\n", ev, POLLIN);
	CHECK_EQ(ev, POLLIN);
	v = 0;
	CHECK_EQ(uepoll_read(fd, &v, 8), 8);
	CHECK(v == FULL);
	CHECK_EQ(x_poll(fd, POLLIN | POLLOUT, 0), POLLOUT);

	x_unpark(&park);
	CHECK_EQ(uepoll_close(fd), 0);
	return t_end();
}
