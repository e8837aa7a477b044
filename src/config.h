/* SPDX-License-Identifier: MIT */
/*
 * config.h - every UEPOLL_* environment variable, read in one place
 * (config.c), with one rule for each kind of value.
 */
#ifndef UEPOLL_CONFIG_H
#define UEPOLL_CONFIG_H
#include <stdbool.h>
#include <stdint.h>

struct config {
	/* The library's, for every program that links it. */
	int64_t spin_ns;	 /* UEPOLL_SPIN_NS=N; -1: not set (spin.c's
				  * default) */
	int64_t spin_us;	 /* UEPOLL_SPIN_US=N: the kernel fds' spin
				  * (UEPOLL_SPIN_KERNEL); -1: not set */
	uint32_t coalesce_us;	 /* UEPOLL_EVENTFD_COALESCE=delay_us[,count] */
	uint64_t coalesce_count; /* (both 0: none) */
	bool fork_demote_instances; /* UEPOLL_FORK_DEMOTE_INSTANCES=1 */
	bool fork_demote_eventfds;  /* UEPOLL_FORK_DEMOTE_EVENTFDS=1 */
	/* The preload layer's (uepoll-run's options, preload/policy.c). */
	bool roundrobin;      /* UEPOLL_ROUNDROBIN=1 */
	bool nospin;	      /* UEPOLL_NOSPIN=1 */
	bool fifo;	      /* UEPOLL_WAKE_FIFO=1 */
	bool stats;	      /* UEPOLL_STATS=1 */
	bool nopoll;	      /* UEPOLL_NOPOLL=1 (the default: a no-op) */
	bool exact;	      /* UEPOLL_EXACT=1: no NOPOLL (wins) */
	bool no_iouring;      /* UEPOLL_NO_IOURING=1 */
	uint32_t min_wait_us; /* UEPOLL_MIN_WAIT_US=N */
};

/* The environment as it was at the first call in the process (a program
 * may set or unset a variable before it makes its first object, not
 * after; the preload layer makes the first call at load).  Lock-free and
 * allocation-free: callable from any thread, a fork handler or a signal
 * handler. */
struct config config_get(void);
#endif
