/* SPDX-License-Identifier: MIT */
/*
 * policy.c - the user's switches, read once from the environment by the
 * constructor (init.c), before any wrapper routes through uepoll.
 *
 * Every one is off unless set, and with all off the program gets the
 * kernel's behaviour: each only adds what the program could have asked
 * uepoll for had it been ported (uepoll_create2's flags, uepoll_batch,
 * EPOLLROUNDROBIN).  UEPOLL_EVENTFD_COALESCE and UEPOLL_SPIN_NS are not
 * here: the library itself reads them for every ueventfd and wait.
 */
#include <stdlib.h>

#include "preload.h"

struct policy policy;

/* "1" switches on; anything else, or nothing, leaves the kernel's
 * behaviour. */
static bool policy__flag(const char *name)
{
	const char *s = getenv(name);

	return s && s[0] == '1' && !s[1];
}

/* A decimal number of at most 32 bits, else 0 (off): a typo must not turn
 * into a surprising window. */
static uint32_t policy__u32(const char *name)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return 0;
	v = strtoull(s, &end, 10);
	return *end || v > UINT32_MAX ? 0 : (uint32_t)v;
}

void policy_load(void)
{
	policy.roundrobin = policy__flag("UEPOLL_ROUNDROBIN");
	policy.nospin = policy__flag("UEPOLL_NOSPIN");
	policy.fifo = policy__flag("UEPOLL_WAKE_FIFO");
	policy.stats = policy__flag("UEPOLL_STATS");
	policy.min_wait_us = policy__u32("UEPOLL_MIN_WAIT_US");
	policy.nopoll = policy__flag("UEPOLL_NOPOLL");
	policy.no_iouring = policy__flag("UEPOLL_NO_IOURING");
}
