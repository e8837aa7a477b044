/* SPDX-License-Identifier: MIT */
/*
 * config.c - the environment, read once, here only.
 *
 * RULES.  One per kind of value, for every variable:
 *  - a switch is on when its value is exactly "1"; anything else (unset,
 *    empty, "0", "yes") leaves the kernel's behaviour;
 *  - a number is decimal digits only, within the variable's range; any
 *    other value is as if the variable were unset (a typo must not turn
 *    into a surprising window, and a library cannot fail the program for
 *    its environment);
 *  - UEPOLL_EVENTFD_COALESCE is "delay_us" or "delay_us,count", delay_us
 *    at most UEVENTFD_COALESCE_MAX_US; else no coalescing.
 * What each variable means is said where it is used (spin.c, eventfd.c,
 * obj.c, preload/policy.c) and in uepoll(7) and uepoll-run(1).
 *
 * ONCE.  At the first call, not at load: a program (the tests do) may
 * change its environment in main() before its first object.  The values
 * are atomics stored by whichever first callers race (they compute the
 * same values from the same environment), then `known` with release; a
 * call that sees `known` (acquire) reads them.  Nothing waits, so a signal
 * handler that interrupts the first read reads the environment itself.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "config.h"
#include "uepoll.h"

enum {
	CONFIG__ROUNDROBIN = 1 << 0,
	CONFIG__NOSPIN = 1 << 1,
	CONFIG__FIFO = 1 << 2,
	CONFIG__STATS = 1 << 3,
	CONFIG__NOPOLL = 1 << 4,
	CONFIG__NO_IOURING = 1 << 5,
	CONFIG__FORK_INSTANCES = 1 << 6,
	CONFIG__FORK_EVENTFDS = 1 << 7,
	CONFIG__EXACT = 1 << 8,
};

static struct {
	_Atomic int known;
	_Atomic unsigned flags;
	_Atomic int64_t spin_ns, spin_us;
	_Atomic uint32_t coalesce_us, min_wait_us;
	_Atomic uint64_t coalesce_count;
} config__v;

static bool config__flag(const char *name)
{
	const char *s = getenv(name);

	return s && s[0] == '1' && !s[1];
}

/* Decimal digits at *s, at most max, stored in *out; *s moved past them. */
static bool config__digits(const char **s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = *s;

	if (*p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (max - (uint64_t)(*p - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*s = p;
	*out = v;
	return true;
}

/* A whole value of digits, at most max; -1 if unset or malformed. */
static int64_t config__num(const char *name, uint64_t max)
{
	const char *s = getenv(name);
	uint64_t v;

	return s && config__digits(&s, max, &v) && !*s ? (int64_t)v : -1;
}

static void config__read(void)
{
	const char *s = getenv("UEPOLL_EVENTFD_COALESCE");
	uint64_t delay = 0, count = 0;
	unsigned f = 0;
	int64_t n;

	f |= config__flag("UEPOLL_ROUNDROBIN") ? CONFIG__ROUNDROBIN : 0;
	f |= config__flag("UEPOLL_NOSPIN") ? CONFIG__NOSPIN : 0;
	f |= config__flag("UEPOLL_WAKE_FIFO") ? CONFIG__FIFO : 0;
	f |= config__flag("UEPOLL_STATS") ? CONFIG__STATS : 0;
	f |= config__flag("UEPOLL_NOPOLL") ? CONFIG__NOPOLL : 0;
	f |= config__flag("UEPOLL_EXACT") ? CONFIG__EXACT : 0;
	f |= config__flag("UEPOLL_NO_IOURING") ? CONFIG__NO_IOURING : 0;
	f |= config__flag("UEPOLL_FORK_DEMOTE_INSTANCES")
		     ? CONFIG__FORK_INSTANCES
		     : 0;
	f |= config__flag("UEPOLL_FORK_DEMOTE_EVENTFDS") ? CONFIG__FORK_EVENTFDS
							 : 0;
	atomic_store_explicit(&config__v.flags, f, memory_order_relaxed);
	atomic_store_explicit(&config__v.spin_ns,
			      config__num("UEPOLL_SPIN_NS", INT64_MAX),
			      memory_order_relaxed);
	atomic_store_explicit(&config__v.spin_us,
			      config__num("UEPOLL_SPIN_US", INT64_MAX),
			      memory_order_relaxed);
	n = config__num("UEPOLL_MIN_WAIT_US", UINT32_MAX);
	atomic_store_explicit(&config__v.min_wait_us, n < 0 ? 0 : (uint32_t)n,
			      memory_order_relaxed);
	if (!s || !config__digits(&s, UEVENTFD_COALESCE_MAX_US, &delay) ||
	    (*s == ',' && (s++, !config__digits(&s, UINT64_MAX, &count))) ||
	    *s)
		delay = count = 0;
	atomic_store_explicit(&config__v.coalesce_us, (uint32_t)delay,
			      memory_order_relaxed);
	atomic_store_explicit(&config__v.coalesce_count, count,
			      memory_order_relaxed);
	/* Release: pairs with config_get's acquire (ONCE). */
	atomic_store_explicit(&config__v.known, 1, memory_order_release);
}

struct config config_get(void)
{
	unsigned f;

	if (!atomic_load_explicit(&config__v.known, memory_order_acquire))
		config__read();
	f = atomic_load_explicit(&config__v.flags, memory_order_relaxed);
	return (struct config){
		.spin_ns = atomic_load_explicit(&config__v.spin_ns,
						memory_order_relaxed),
		.spin_us = atomic_load_explicit(&config__v.spin_us,
						memory_order_relaxed),
		.coalesce_us = atomic_load_explicit(&config__v.coalesce_us,
						    memory_order_relaxed),
		.coalesce_count = atomic_load_explicit(
			&config__v.coalesce_count, memory_order_relaxed),
		.fork_demote_instances = f & CONFIG__FORK_INSTANCES,
		.fork_demote_eventfds = f & CONFIG__FORK_EVENTFDS,
		.roundrobin = f & CONFIG__ROUNDROBIN,
		.nospin = f & CONFIG__NOSPIN,
		.fifo = f & CONFIG__FIFO,
		.stats = f & CONFIG__STATS,
		.nopoll = f & CONFIG__NOPOLL,
		.exact = f & CONFIG__EXACT,
		.no_iouring = f & CONFIG__NO_IOURING,
		.min_wait_us = atomic_load_explicit(&config__v.min_wait_us,
						    memory_order_relaxed),
	};
}
