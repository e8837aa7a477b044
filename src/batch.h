/* SPDX-License-Identifier: MIT */
/*
 * batch.h - min-wait batching: an instance's policy and the rule that says
 * when a batching wait returns (include/uepoll.h, "THE RULE").  The rule is
 * pure bookkeeping over times and counts; wait.c does the collecting and the
 * sleeping.
 */
#ifndef UEPOLL_BATCH_H
#define UEPOLL_BATCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "uepoll.h"

/* An instance's policy (struct uepoll_batch), read by every wait without a
 * lock: `seq` is a sequence lock (odd while a write is in progress),
 * writers are serialised by `lock` (a leaf: LOCK ORDER in lock.h). */
struct batch_policy {
	pthread_mutex_t lock;
	_Atomic uint32_t seq;
	_Atomic uint32_t min_wait_us, min_events, inter_us, flags;
};

void batch_policy_init(struct batch_policy *b);
/* Set (if set) the policy, return the old one in *old (if old). */
int batch_set(struct batch_policy *b, const struct uepoll_batch *set,
	      struct uepoll_batch *old);
/* UEPOLL_CTL_MIN_WAIT: set min_wait_us only; returns the old value. */
int batch_set_min_wait(struct batch_policy *b, uint64_t us);
/* The policy as one consistent snapshot. */
void batch_get(struct batch_policy *b, struct uepoll_batch *out);
/* Does the policy batch at all? */
bool batch_active(const struct uepoll_batch *pol);

#define BATCH_NEVER INT64_MAX

/* One batching wait's state. */
struct batch {
	struct uepoll_batch pol;
	int max;	  /* maxevents */
	int n;		  /* events collected */
	bool urgent;	  /* an urgent event was collected */
	int64_t deadline; /* the wait's timeout, absolute ns; BATCH_NEVER */
	int64_t wend;	  /* the window's end; BATCH_NEVER: open */
	int64_t last;	  /* when new events were last collected */
};

void batch_start(struct batch *b, const struct uepoll_batch *pol, int max,
		 int64_t deadline, int64_t now);
/* nnew events were collected at now (urgent: one of them is). */
void batch_add(struct batch *b, int nnew, bool urgent, int64_t now);
/*
 * Must the wait return now?  If not, *until is when it must look again
 * (BATCH_NEVER: only an event can end it) and *doze says whether it may
 * sleep through ordinary events until then (the window is open, so a new
 * event alone does not end the wait; *want is how many more events would,
 * by min_events or maxevents).
 */
bool batch_due(const struct batch *b, int64_t now, int64_t *until,
	       bool *doze, int *want);

#endif
