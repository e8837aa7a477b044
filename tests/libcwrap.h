/*
 * libcwrap: definitions of the libc names the library reaches the kernel
 * through (src/sys.c, THE SEAM: syscall, read, write, close, epoll_pwait,
 * epoll_pwait2, ppoll; pthread_mutex_clocklock, the cross-process lock's
 * timed wait), for the tests that count the library's system
 * calls.  Linked into a test program (tests/CMakeLists.txt: only those that
 * ask), they win the symbol lookup over libc's, as a preloaded library's
 * would; each forwards to the next definition (libc's) and, while the
 * calling thread is armed, counts the call.
 */
#ifndef UEPOLL_TEST_LIBCWRAP_H
#define UEPOLL_TEST_LIBCWRAP_H

enum {
	WRAP_READ,
	WRAP_WRITE,
	WRAP_CLOSE,
	WRAP_EPOLL_PWAIT,
	WRAP_EPOLL_PWAIT2,
	WRAP_PPOLL,
	WRAP_SYSCALL, /* syscall() of any number but SYS_futex */
	WRAP_FUTEX,   /* syscall(SYS_futex, ...) */
	WRAP_XM_WAIT, /* pthread_mutex_clocklock: a timed wait for xm */
	WRAP_N
};

extern const char *const wrap_name[WRAP_N];

/* Count this thread's calls from now on (every thread: all = 1). */
void wrap_arm(int all);
void wrap_disarm(void);
/* The calls counted of one name, or of all (name < 0), since the last
 * take, which resets them. */
int wrap_take(int name);
/* As wrap_take(-1), printing each non-zero count as "  NAME: N". */
int wrap_take_show(void);
/* A hook point inside the library: the calling thread's next syscall()
 * (every system call of the library goes through it, futex included)
 * first calls fn(nr), once.  Tests that race another thread against a
 * chosen step of the library (tests/forkrace.h) use it. */
void wrap_hook_once(void (*fn)(long nr));
/* The same for thread tid (a thread that runs no test code: the library's
 * timer thread, testlib.h's t_timer_tid), before its next call, once. */
void wrap_hook_tid_once(int tid, void (*fn)(long nr));
/* The same, after that system call returned (fn may arm either again). */
void wrap_hook_after_once(void (*fn)(long nr));
/* Every thread's system calls, for a test with its own rule (it looks at
 * the number and the six arguments): before(nr, a) first, after(nr, a, r)
 * once the call returned r (errno kept).  NULL: none.  Set them before the
 * threads they concern start.  A hook makes no syscall() of its own (not
 * t_gettid: gettid()), or it runs again inside itself. */
void wrap_hook_all(void (*before)(long nr, const long *a),
		   void (*after)(long nr, const long *a, long r));
/* In an after-hook: what that system call returned (errno is its own). */
long wrap_last_result(void);

#endif
