/*
 * t_rsleep_seq_first: a blocked reader that sleeps on the futex word rwake
 * (uefd__rsleep: a shared ueventfd, SHARED; a UEVENTFD_NOPOLL one, NAP)
 * reads the word before it looks at the counter, so that a write between
 * its look and its sleep is never missed (issue 36: the C twin of
 * models/xmirror.pml's and models/rnap.pml's SEQ_AFTER, one line of C).
 * Read after the look, the word already holds that write's wake: the
 * reader sleeps on it and nothing wakes it but, SHARED, its sleep's
 * one-second limit; NAP, nothing (a hang, which x_step turns into a
 * failure).
 *
 * The window has no system call, so a hardware watchpoint places the
 * write in it: thread R, about to sleep in a read of the empty counter,
 * gets a synchronous SIGTRAP (perf_event_open's sigtrap, on R's own
 * accesses to the counter's word) once it is counted as a sleeper and
 * has looked at the counter; its handler lets the main thread write 1 and
 * waits for that write to end.  R must then not sleep until its limit: its
 * futex sleep returns at once (the word changed) or is not made, never
 * ETIMEDOUT.  Skipped (77) where perf breakpoints with sigtrap are not
 * allowed (perf_event_paranoid, a seccomp filter, a kernel before 5.13).
 * Uses the library's private headers for the counter's address.
 */
#include "libcwrap.h"
#include "watchpoint.h"
#include "xproc.h"

#include "eventfd_impl.h"
#include "fdtab.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

static int fd;
static struct uefd_ctr *ctr;
static _Atomic int r_ready, fired, w_go, w_done, timed_out;

enum { SHARED, NAP };

/* R's accesses to the counter: once R is a counted sleeper (and so has
 * looked at the counter: the watchpoint traps after the access), the
 * write comes, and R goes on only when it has ended.  Relaxed atomics
 * only, then a fence: under ThreadSanitizer the trap may also come inside
 * the runtime's own atomic operation on the counter (its second load,
 * under the thread's slot lock and the word's sync object lock), where a
 * seq_cst operation here would wait for a lock this thread holds. */
static void on_access(const void *addr)
{
	(void)addr;
	if (atomic_load_explicit(&fired, memory_order_relaxed) ||
	    !atomic_load_explicit(&ctr->xsleepers, memory_order_relaxed))
		return;
	atomic_store_explicit(&fired, 1, memory_order_relaxed);
	atomic_store_explicit(&w_go, 1, memory_order_relaxed);
	while (!atomic_load_explicit(&w_done, memory_order_relaxed))
		sched_yield();
	atomic_thread_fence(memory_order_seq_cst);
}

static void r_after(long nr)
{
	if (nr == SYS_futex_waitv && wrap_last_result() < 0 &&
	    errno == ETIMEDOUT)
		atomic_store(&timed_out, 1);
	wrap_hook_after_once(r_after);
}

static void *r_main(void *arg)
{
	uint64_t v = 0;
	ssize_t r;
	int w;

	(void)arg;
	w = wp_watch(&ctr->count, 8, on_access);
	atomic_store(&r_ready, w >= 0 ? 1 : w);
	if (w < 0)
		return (void *)(intptr_t)-2;
	wrap_hook_after_once(r_after);
	r = uepoll_read(fd, &v, 8);
	wrap_hook_after_once(NULL);
	close(w);
	return (void *)(intptr_t)(r == 8 ? (intptr_t)v : -1);
}

/* One reader, one write in its window; 0, or 77 (no watchpoint here). */
static int round1(int mode)
{
	const char *name = mode == SHARED ? "shared" : "nopoll";
	pthread_t r;
	struct x_park park;
	uint64_t v = 1;
	void *ret;

	atomic_store(&r_ready, 0);
	atomic_store(&fired, 0);
	atomic_store(&w_go, 0);
	atomic_store(&w_done, 0);
	atomic_store(&timed_out, 0);
	fd = ueventfd(0, EFD_CLOEXEC | (mode == NAP ? UEVENTFD_NOPOLL : 0));
	REQUIRE(fd >= 0);
	ctr = ((struct uefd *)(void *)fdtab_peek(fd))->sh;
	if (mode == SHARED) {
		x_park(&park); /* the fd shared from here on */
	}

	x_step(name, "R watches the counter and reads");
	REQUIRE(pthread_create(&r, NULL, r_main, NULL) == 0);
	while (!atomic_load(&r_ready))
		sched_yield();
	x_step_end();
	if (atomic_load(&r_ready) > 0) {
		x_step(name, "R, a counted sleeper, has looked at the counter");
		while (!atomic_load(&w_go))
			sched_yield();
		x_step_end();
		x_step(name, "the write in R's window");
		CHECK_EQ(uepoll_write(fd, &v, 8), 8);
		atomic_store(&w_done, 1);
		x_step_end();
	}
	x_step(name, "R returns");
	REQUIRE(pthread_join(r, &ret) == 0);
	x_step_end();
	if (atomic_load(&r_ready) > 0) {
		CHECK_EQ((intptr_t)ret, 1);
		CHECK(atomic_load(&fired)); /* the watchpoint placed the write */
		if (atomic_load(&timed_out))
			fprintf(stderr, "%s: R slept until its limit: it read the "
					"futex word after its look at the counter\n",
				name);
		CHECK(!atomic_load(&timed_out));
	}
	if (mode == SHARED) {
		x_unpark(&park);
	}
	CHECK_EQ(uepoll_close(fd), 0);
	if (atomic_load(&r_ready) < 0) {
		fprintf(stderr, "perf_event_open: %s: skip\n",
			strerror(-atomic_load(&r_ready)));
		return 77;
	}
	return 0;
}

int main(void)
{
	t_begin("t_rsleep_seq_first");
	x_init();
	if (round1(SHARED) == 77)
		T_SKIP("no perf breakpoint with sigtrap here");
	round1(NAP);
	return t_end();
}
