/*
 * diffops.h - the kernel-vs-uepoll differential op model (diffops.c),
 * driven by a PRNG (t_differential) or by fuzzer input (tests/fuzz/).
 */
#ifndef UEPOLL_DIFFOPS_H
#define UEPOLL_DIFFOPS_H

#include <stddef.h>
#include <stdint.h>

#include "testlib.h"

/* Draw the choices of the next sequence from a PRNG seeded with state. */
void diff_use_prng(uint64_t state);
/* Draw them from data[0..len): the sequence ends when the bytes run out. */
void diff_use_bytes(const uint8_t *data, size_t len);
/*
 * Run one sequence of at most nops operations on fresh objects (two
 * instances, three eventfds, maybe a pipe, then random ops), then close
 * everything, comparing every result.  Stops at the first mismatch.
 */
void diff_run_sequence(int nops);

/* Called on each mismatch, with the op log of the sequence so far. */
extern void (*diff_on_mismatch)(const char *what);
/* The op being run (1-based; 0 while creating the first objects). */
extern int diff_nop;
/* Op log of the current sequence ("op -> k ret/errno u ret/errno" lines). */
extern char diff_logbuf[1 << 16];
extern size_t diff_loglen;

/* Totals over all sequences, so that a weak generator shows. */
struct diff_stats {
	unsigned long ctl_ok, ctl_err, events, wait_sets, mismatches;
	/* tolerated extra edges of nested instances (extra_edges_ok) */
	unsigned long extra_edges;
};
extern struct diff_stats diff_stats;

#endif
