/*
 * t_nap_wake_after_cas: a write to a UEVENTFD_NOPOLL ueventfd looks for
 * nappers (xsleepers) after its CAS, never before (issue 36: the C twin of
 * models/rnap.pml's WAKE_FIRST).  Looked at before, a reader that counts
 * itself and finds the counter still 0 between the look and the CAS
 * sleeps, and the write, having seen no napper, wakes nobody: the reader
 * sleeps for ever with a value there.
 *
 * The window has no system call: a hardware watchpoint on the writer's
 * accesses to xsleepers (tests/watchpoint.h) stops the writer at its first
 * look; its handler lets thread R read and waits until R has gone to sleep
 * in its futex or has returned.  R must return the value (a hang is a
 * failure, named by x_step).  Skipped (77) without perf breakpoints.
 * Uses the library's private headers for the word's address.
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
static _Atomic int fired, r_go, r_slept, r_back;

/* R: notes its futex sleep. */
static void r_hook(long nr)
{
	if (nr == SYS_futex_waitv || nr == SYS_futex)
		atomic_store(&r_slept, 1);
	wrap_hook_once(r_hook);
}

static void *r_main(void *arg)
{
	uint64_t v = 0;
	ssize_t r;

	(void)arg;
	while (!atomic_load(&r_go))
		sched_yield();
	wrap_hook_once(r_hook);
	r = uepoll_read(fd, &v, 8);
	wrap_hook_once(NULL);
	atomic_store(&r_back, 1);
	return (void *)(intptr_t)(r == 8 ? (intptr_t)v : -1);
}

/* The writer's first look at xsleepers: R reads now, and the writer goes
 * on once R sleeps or has returned.  Relaxed atomics only, then a fence:
 * under ThreadSanitizer the trap may also come inside the runtime's own
 * atomic operation on xsleepers (under the thread's slot lock), where a
 * seq_cst operation here would wait for a lock this thread holds. */
static void on_access(const void *addr)
{
	(void)addr;
	if (atomic_exchange_explicit(&fired, 1, memory_order_relaxed))
		return;
	atomic_store_explicit(&r_go, 1, memory_order_relaxed);
	while (!atomic_load_explicit(&r_slept, memory_order_relaxed) &&
	       !atomic_load_explicit(&r_back, memory_order_relaxed))
		sched_yield();
	atomic_thread_fence(memory_order_seq_cst);
}

int main(void)
{
	pthread_t r;
	uint64_t v = 1;
	void *ret;
	int w;

	t_begin("t_nap_wake_after_cas");
	x_init();
	fd = ueventfd(0, EFD_CLOEXEC | UEVENTFD_NOPOLL);
	REQUIRE(fd >= 0);
	REQUIRE(pthread_create(&r, NULL, r_main, NULL) == 0);
	w = wp_watch(&((struct uefd *)(void *)fdtab_peek(fd))->sh->xsleepers, 4,
		     on_access);
	if (w < 0) {
		fprintf(stderr, "perf_event_open: %s: skip\n", strerror(-w));
		atomic_store(&r_go, 1);
		v = 1;
		(void)uepoll_write(fd, &v, 8);
		pthread_join(r, NULL);
		uepoll_close(fd);
		T_SKIP("no perf breakpoint with sigtrap here");
	}
	x_step("nopoll", "the write, stopped at its look for nappers");
	CHECK_EQ(uepoll_write(fd, &v, 8), 8);
	x_step_end();
	close(w);
	x_step("nopoll", "R returns the value");
	REQUIRE(pthread_join(r, &ret) == 0);
	x_step_end();
	CHECK(atomic_load(&fired));
	CHECK_EQ((intptr_t)ret, 1);
	CHECK_EQ(uepoll_close(fd), 0);
	return t_end();
}
