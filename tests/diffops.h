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

/*
 * What the sequences exercised, counted from the kernel world's outcome of
 * each op both worlds agreed on: t_differential asserts minimums, so that a
 * generator that silently stops reaching an op or an outcome fails.
 */
enum diff_cov {
	DC_CREATE_EFD,	    /* eventfd created */
	DC_CREATE_EFD_ERR,  /* eventfd refused (bad flags) */
	DC_CREATE_INST,	    /* epoll_create1 / epoll_create succeeded */
	DC_CREATE_INST_ERR, /* ... refused (bad flags or size) */
	DC_CREATE_PIPE,
	DC_CTL_ADD, DC_CTL_MOD, DC_CTL_DEL, /* successful ctl, per op */
	DC_CTL_ADD_INST,    /* successful ADD of an instance (nesting) */
	DC_CTL_EBADF, DC_CTL_EINVAL, DC_CTL_EEXIST, DC_CTL_ENOENT,
	DC_CTL_ELOOP, DC_CTL_EFAULT,
	DC_WRITE_OK, DC_WRITE_EAGAIN, DC_WRITE_EINVAL,
	DC_READ_OK, DC_READ_EAGAIN, DC_READ_EINVAL,
	DC_PIPE_WRITE, DC_PIPE_READ_OK, DC_PIPE_READ_EAGAIN,
	DC_WAIT_EVENTS,	    /* waits that returned events */
	DC_WAIT_NONE,	    /* waits that returned 0 */
	DC_WAIT_ERR,	    /* waits that failed (bad fd, maxevents, ts) */
	DC_WAIT_EXACT,	    /* waits with events compared in order */
	DC_WAIT_SETS,	    /* waits with events compared as sets */
	DC_EV_EFD,	    /* events of eventfds returned */
	DC_EV_PIPE,	    /* events of pipe ends returned */
	DC_EV_INST,	    /* events of nested instances returned */
	DC_EV_OUT,	    /* events with EPOLLOUT */
	DC_EV_HUP,	    /* events with EPOLLHUP or EPOLLERR */
	DC_CLOSE,	    /* objects (or pipe ends) closed mid-sequence */
	DC_N
};
extern const char *const diff_cov_names[DC_N];

/* Totals over all sequences, so that a weak generator shows. */
struct diff_stats {
	unsigned long ctl_ok, ctl_err, events, wait_sets, mismatches;
	/* tolerated extra edges of nested instances (extra_edges_ok) */
	unsigned long extra_edges;
	unsigned long cov[DC_N];
};
extern struct diff_stats diff_stats;

#endif
