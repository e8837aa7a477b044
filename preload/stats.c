/* SPDX-License-Identifier: MIT */
/*
 * stats.c - UEPOLL_STATS=1: how much of the program's epoll and eventfd
 * use went through uepoll, printed to stderr at exit.  It is the proof a
 * test or a user needs that the preload really took over (a program that
 * behaves the same with and without it would otherwise show nothing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "preload.h"

_Atomic uint64_t stats__v[STAT__N];

static const char *const stats__names[STAT__N] = {
	[STAT_INSTANCES] = "instances", [STAT_EVENTFDS] = "eventfds",
	[STAT_CTLS] = "ctls",		[STAT_WAITS] = "waits",
	[STAT_READS] = "reads",		[STAT_WRITES] = "writes",
	[STAT_CLOSES] = "closes",	[STAT_DUPS] = "dups",
	[STAT_DEMOTES] = "demotes",	[STAT_FORGETS] = "forgets",
	[STAT_PEEKS] = "peeks",
};

static void stats__print(void)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "uepoll-preload: pid %d",
			 (int)getpid());

	for (int i = 0; i < STAT__N && n > 0 && (size_t)n < sizeof(buf); i++)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, " %s=%llu",
			      stats__names[i],
			      (unsigned long long)atomic_load_explicit(
				      &stats__v[i], memory_order_relaxed));
	if (n > 0 && (size_t)n < sizeof(buf) - 1) {
		buf[n++] = '\n';
		/* One write, so that lines of several processes do not mix. */
		if (REAL(write))
			(void)REAL(write)(2, buf, (size_t)n);
	}
}

void stats_setup(void)
{
	if (policy.stats)
		atexit(stats__print);
}
