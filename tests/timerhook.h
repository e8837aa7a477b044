/*
 * timerhook.h - hold the library's timer thread ("uepoll-timer", timer.c)
 * at its next system call, for the tests that race a write against a
 * chosen step of a timer run (t_coalesce_clear_late, t_hold_clear_late).
 *
 * libcwrap's hook (libcwrap.h) is the calling thread's own, and the timer
 * thread runs no test code; so a test that includes this header defines
 * syscall() itself (every system call of the library goes through it:
 * THE SEAM in src/sys.c), and th_hook_once(tid, fn) makes thread tid's
 * next call run fn(nr) first, once.  Such a test must not link
 * uepoll_libcwrap (one definition of syscall()).  Include it in one file.
 */
#ifndef UEPOLL_TEST_TIMERHOOK_H
#define UEPOLL_TEST_TIMERHOOK_H

#include "testlib.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <unistd.h>

static _Atomic int th__tid;
static void (*_Atomic th__fn)(long nr);

static void th_hook_once(int tid, void (*fn)(long nr))
{
	atomic_store(&th__fn, NULL);
	atomic_store(&th__tid, tid);
	atomic_store(&th__fn, fn);
}

/* Six arguments are read whatever the call passed, as libc's own syscall()
 * does: not a bug ASan should stop on (as in libcwrap.c). */
__attribute__((no_sanitize("address"))) long syscall(long nr, ...)
{
	static long (*f)(long, ...);
	void (*h)(long);
	long a[6];
	va_list ap;

	if (atomic_load(&th__fn) && atomic_load(&th__tid) == gettid() &&
	    (h = atomic_exchange(&th__fn, NULL)))
		h(nr);
	if (!f)
		f = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	return f(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* tid of the "uepoll-timer" thread, 0 if the process has none. */
static int th_timer_tid(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int tid = 0;

	REQUIRE(d);
	while ((de = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) &&
		    !strncmp(comm, "uepoll-timer", 12))
			tid = atoi(de->d_name);
		fclose(f);
	}
	closedir(d);
	return tid;
}

#endif
