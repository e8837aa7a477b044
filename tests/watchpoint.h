/*
 * watchpoint.h - a hardware watchpoint on the calling thread's own
 * accesses to a word, for the tests that must place another thread's step
 * in a window of the library with no system call in it (libcwrap.h's hooks
 * cannot stop a thread there): a load, then a store or CAS, of two atomics
 * (issue 36: the C twins of spin model mutants that reorder such steps).
 *
 * wp_watch(addr, len, fn): every access (read or write) of this thread to
 * the len (4 or 8) bytes at addr is followed by a synchronous SIGTRAP
 * (perf_event_open's sigtrap: a breakpoint event of this thread only),
 * whose handler calls fn(addr) in this thread, right after the access; fn
 * may wait there for another thread.  Returns the event's fd (close it to
 * end the watch), or -errno: the caller skips (77) where perf breakpoints
 * with sigtrap are not allowed (perf_event_paranoid > 2, a seccomp filter,
 * a kernel before 5.13).  One watch per thread.
 */
#ifndef UEPOLL_TEST_WATCHPOINT_H
#define UEPOLL_TEST_WATCHPOINT_H

#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

static __thread void (*wp__fn)(const void *addr);
static __thread const void *wp__addr;

static void wp__trap(int sig, siginfo_t *si, void *uc)
{
	int e = errno;

	(void)sig;
	(void)uc;
	if (si->si_code == TRAP_PERF && wp__fn)
		wp__fn(wp__addr);
	errno = e;
}

static inline int wp_watch(const void *addr, int len,
			   void (*fn)(const void *addr))
{
	struct perf_event_attr a;
	struct sigaction sa;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = wp__trap;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	if (sigaction(SIGTRAP, &sa, NULL) < 0)
		return -errno;
	wp__fn = fn;
	wp__addr = addr;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_BREAKPOINT;
	a.size = sizeof(a);
	a.bp_type = HW_BREAKPOINT_RW;
	a.bp_addr = (uint64_t)(uintptr_t)addr;
	a.bp_len = len == 4 ? HW_BREAKPOINT_LEN_4 : HW_BREAKPOINT_LEN_8;
	a.sample_period = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.remove_on_exec = 1; /* (sigtrap requires it) */
	a.sigtrap = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1,
			  PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		wp__fn = NULL;
		return -errno;
	}
	return fd;
}

#endif
