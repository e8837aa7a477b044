/*
 * timerhook.h - hold the library's timer thread ("uepoll-timer", timer.c)
 * at its next system call, for the tests that race a write against a
 * chosen step of a timer run (t_coalesce_clear_late, t_hold_clear_late).
 *
 * The timer thread runs no test code, so its hook is set from outside:
 * th_hook_once(tid, fn) makes thread tid's next system call run fn(nr)
 * first, once (libcwrap.h's wrap_hook_tid_once: a test that includes this
 * header links uepoll_libcwrap).
 */
#ifndef UEPOLL_TEST_TIMERHOOK_H
#define UEPOLL_TEST_TIMERHOOK_H

#include "libcwrap.h"
#include "testlib.h"

#include <dirent.h>
#include <stdlib.h>

/* Thread tid's next system call runs fn(nr) first, once (libcwrap.h). */
static inline void th_hook_once(int tid, void (*fn)(long nr))
{
	wrap_hook_tid_once(tid, fn);
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
