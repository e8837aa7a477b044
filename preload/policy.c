/* SPDX-License-Identifier: MIT */
/*
 * policy.c - the user's switches, read once from the environment by the
 * constructor (init.c), before any wrapper routes through uepoll.
 *
 * Every one is off unless set, and with all off the program gets the
 * kernel's behaviour: each only adds what the program could have asked
 * uepoll for had it been ported (uepoll_create2's flags, uepoll_batch,
 * EPOLLROUNDROBIN).  The environment itself is read, with the library's
 * own variables (UEPOLL_EVENTFD_COALESCE, UEPOLL_SPIN_NS, ...), by
 * src/config.c, under one rule: a switch is on when it is exactly "1".
 */
#include "config.h"

#include "preload.h"

struct policy policy;

void policy_load(void)
{
	struct config c = config_get();

	policy.roundrobin = c.roundrobin;
	policy.nospin = c.nospin;
	policy.fifo = c.fifo;
	policy.stats = c.stats;
	policy.min_wait_us = c.min_wait_us;
	/* Fast by default (issue 35): every object the layer makes is NOPOLL,
	 * exact from the moment a path outside uepoll's calls could look at
	 * it (wrap_poll.c); UEPOLL_EXACT=1 keeps them exact from creation. */
	policy.nopoll = !c.exact;
	policy.no_iouring = c.no_iouring;
	/* The library bounds the spin by the same variable (spin.c); "block
	 * at once" wins over it, as uepoll_create2 refuses both. */
	policy.spin_kernel = c.spin_us > 0 && !c.nospin;
}
