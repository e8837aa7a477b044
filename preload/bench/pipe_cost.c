/* SPDX-License-Identifier: MIT */
/*
 * pipe_cost - what the preload costs a program that never uses epoll: a
 * one-byte write and read of a pipe, N times, then the nanoseconds per
 * call (the wrappers' lookup of each fd in the fd table is the cost).
 * Usage: pipe_cost [N]; run by bench.sh with and without the preload.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	struct timespec a, b;
	char c = 'x';
	int p[2];

	if (n <= 0 || pipe(p) != 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		if (write(p[1], &c, 1) != 1 || read(p[0], &c, 1) != 1)
			return 1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.1f\n", ((double)(b.tv_sec - a.tv_sec) * 1e9 +
			  (double)(b.tv_nsec - a.tv_nsec)) / (2.0 * (double)n));
	return 0;
}
