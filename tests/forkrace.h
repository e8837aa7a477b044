/*
 * forkrace.h - fork() raced by another thread at a chosen step inside the
 * library (issue 32), for the tests t_fork_twice, t_fork_create and
 * t_fork_demote.
 *
 * The step is a system call of the library on one thread: every one goes
 * through syscall(), which libcwrap wraps, and wrap_hook_once() runs a
 * function there first (a hook may arm itself again to wait for a later
 * call).  The hook lets the other thread act (fork, create, demote) and
 * waits until that thread has done it, or sleeps: a correct library may
 * make the other thread wait for what the hooked one is doing (a fork
 * waits for a creation in flight, a creation for the fork), and a thread
 * that sleeps is then blocked, so the hook goes on and the library
 * decides the order.  Nothing is decided by a clock: "asleep" is the
 * thread's state in /proc (read through an fd opened beforehand), the other thread waits by yielding (it is never
 * asleep while it has work), and a hang ends at the test's watchdog.
 *
 * A fork's own prepare handler can be the hooked step: fr_init() registers
 * an atfork prepare handler after the library's (so it runs first) that
 * arms the hook of a thread that asked for it (fr_arm_fork).
 */
#ifndef UEPOLL_TEST_FORKRACE_H
#define UEPOLL_TEST_FORKRACE_H

#include "libcwrap.h"
#include "testlib.h"

#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

/* The process the hooks act in (a child inherits an armed hook). */
static pid_t fr_pid;
/* This thread's next fork runs fr_fork_hook at the first system call of
 * the library's prepare handler. */
static __thread int fr_arm_fork;
static void (*fr_fork_hook)(long nr);

/* A thread to watch from a hook: its /proc stat file, opened beforehand,
 * so that a hook makes no fd (a test may predict the next number). */
static inline int fr_watch(int tid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0);
	return fd;
}

/* The watched thread's state letter (R, S, D...), 0 if unreadable.
 * Called inside the library (a hook): no allocation, no stdio, no fd. */
static inline char fr_state(int watch)
{
	char buf[512], *p = NULL;
	ssize_t n = pread(watch, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* The name may hold spaces: the state follows the last ')'. */
	for (char *q = buf; *q; q++)
		if (*q == ')')
			p = q;
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Until *flag == want (1), or the watched thread sleeps (0). */
static inline int fr_until(_Atomic int *flag, int want, int watch)
{
	for (;;) {
		if (atomic_load(flag) == want)
			return 1;
		if (fr_state(watch) == 'S')
			return atomic_load(flag) == want;
		sched_yield();
	}
}

/* Until *flag == want: a thread waiting for its turn, never asleep. */
static inline void fr_spin(_Atomic int *flag, int want)
{
	while (atomic_load(flag) != want)
		sched_yield();
}

static inline void fr__prepare(void)
{
	if (fr_arm_fork) {
		fr_arm_fork = 0;
		wrap_hook_once(fr_fork_hook);
	}
}

/* In the hook: is this the test's process (not a child that inherited an
 * armed hook)? */
static inline int fr_here(void)
{
	return getpid() == fr_pid;
}

static inline void fr_init(void (*fork_hook)(long nr))
{
	fr_pid = getpid();
	fr_fork_hook = fork_hook;
	REQUIRE(pthread_atfork(fr__prepare, NULL, NULL) == 0);
}

/* Is fd open, as an eventfd? (In a child: did the fork copy it?) */
static inline int fr_is_eventfd(int fd)
{
	char path[64], to[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, to, sizeof(to) - 1);
	if (n <= 0)
		return 0;
	to[n] = 0;
	return strcmp(to, "anon_inode:[eventfd]") == 0;
}

/* The number the next fd made will get (the lowest free one; not dup(0):
 * stdin may be closed). */
static inline int fr_next_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	REQUIRE(fd >= 0);
	close(fd);
	return fd;
}

#endif
