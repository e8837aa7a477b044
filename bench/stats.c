/* SPDX-License-Identifier: MIT */
/*
 * stats.c - medians, spreads, Jain's fairness index, latency histogram.
 */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Copies the non-NaN values, sorted; returns how many. */
static int sorted(const double *v, int n, double *out)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		if (!isnan(v[i]))
			out[k++] = v[i];
	qsort(out, (size_t)k, sizeof(*out), cmp_double);
	return k;
}

double stat_median(const double *v, int n)
{
	double s[MAX_REPS];
	int k = sorted(v, n > MAX_REPS ? MAX_REPS : n, s);

	if (!k)
		return NAN;
	return k % 2 ? s[k / 2] : (s[k / 2 - 1] + s[k / 2]) / 2;
}

double stat_min(const double *v, int n)
{
	double s[MAX_REPS];
	int k = sorted(v, n > MAX_REPS ? MAX_REPS : n, s);

	return k ? s[0] : NAN;
}

double stat_max(const double *v, int n)
{
	double s[MAX_REPS];
	int k = sorted(v, n > MAX_REPS ? MAX_REPS : n, s);

	return k ? s[k - 1] : NAN;
}

double stat_jain(const uint64_t *x, int n)
{
	double sum = 0, sq = 0;

	for (int i = 0; i < n; i++) {
		sum += (double)x[i];
		sq += (double)x[i] * (double)x[i];
	}
	if (n == 0 || sq == 0)
		return NAN;
	return sum * sum / ((double)n * sq);
}

/*
 * Bucket index: values below HIST_SUB map to themselves; above, the top bit
 * position picks a group of HIST_SUB buckets and the next log2(HIST_SUB) bits
 * pick the bucket in it.
 */
static int hist_index(uint64_t ns)
{
	int msb, shift;

	if (ns < HIST_SUB)
		return (int)ns;
	msb = 63 - __builtin_clzll(ns);
	shift = msb - 5; /* log2(HIST_SUB) == 5 */
	return (msb - 4) * HIST_SUB + (int)((ns >> shift) & (HIST_SUB - 1));
}

/* The middle of bucket i in ns. */
static double hist_value(int i)
{
	int group = i / HIST_SUB, sub = i % HIST_SUB, shift;

	if (group == 0)
		return sub;
	shift = group - 1;
	return ((double)(HIST_SUB + sub) + 0.5) * ldexp(1.0, shift);
}

uint64_t hist_add_stamps(struct hist *h, const _Atomic uint64_t *stamp,
			 uint64_t ring, uint64_t first, uint64_t v,
			 uint64_t pub, uint64_t t, uint64_t samples)
{
	uint64_t k = v < samples ? v : samples, skipped = 0;

	for (uint64_t j = 0; j < k; j++) {
		uint64_t seq = first + j * (v / k);

		if (pub - seq >= ring) {
			skipped++;
			continue;
		}
		/* The remainder of v / k rides on the oldest sample. */
		hist_add_n(h,
			   t - atomic_load_explicit(&stamp[seq & (ring - 1)],
						    memory_order_relaxed),
			   j == 0 ? v / k + v % k : v / k);
	}
	return skipped;
}

void hist_add_n(struct hist *h, uint64_t ns, uint64_t n)
{
	int i = hist_index(ns);

	if (i >= HIST_BUCKETS)
		i = HIST_BUCKETS - 1;
	h->b[i] += n;
	h->count += n;
}

void hist_add(struct hist *h, uint64_t ns)
{
	hist_add_n(h, ns, 1);
}

double hist_pct_us(const struct hist *h, double pct)
{
	uint64_t want, seen = 0;

	if (!h->count)
		return NAN;
	want = (uint64_t)ceil(pct / 100.0 * (double)h->count);
	if (want < 1)
		want = 1;
	for (int i = 0; i < HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= want)
			return hist_value(i) / 1000.0;
	}
	return hist_value(HIST_BUCKETS - 1) / 1000.0;
}
