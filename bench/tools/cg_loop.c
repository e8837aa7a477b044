/*
 * cg_loop - the `loop` scenario's inner loop alone, for cachegrind (which
 * counts cache misses, not time, so the numbers repeat on a loaded machine):
 * one thread, N eventfds in one instance, each iteration makes K of them
 * ready, collects them with one wait and drains each.
 *
 *   cg_loop kernel|uepoll [N K ITERS]
 *
 * scripts/cachegrind-loop.sh runs it under cachegrind for each system and
 * prints D1 misses and instructions per delivered event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "uepoll.h"

int main(int argc, char **argv)
{
	int n = 1000, k = 10, iters = 20000, kernel, ep, *fd;
	unsigned long events = 0;
	struct epoll_event ev, out[64];
	uint64_t v;

	if (argc < 2) {
		fprintf(stderr, "usage: cg_loop kernel|uepoll [N K ITERS]\n");
		return 2;
	}
	if (argc == 5) {
		n = atoi(argv[2]);
		k = atoi(argv[3]);
		iters = atoi(argv[4]);
	}
	if (n <= 0 || k <= 0 || k > 64 || iters <= 0)
		return 2;
	kernel = !strcmp(argv[1], "kernel");
	ep = kernel ? epoll_create1(0) : uepoll_create1(0);
	fd = calloc((size_t)n, sizeof(*fd));
	if (ep < 0 || !fd)
		return 1;
	for (int i = 0; i < n; i++) {
		fd[i] = kernel ? eventfd(0, EFD_NONBLOCK)
			       : ueventfd(0, EFD_NONBLOCK);
		ev.events = EPOLLIN;
		ev.data.u64 = (uint64_t)i;
		if (fd[i] < 0 ||
		    (kernel ? epoll_ctl(ep, EPOLL_CTL_ADD, fd[i], &ev)
			    : uepoll_ctl(ep, EPOLL_CTL_ADD, fd[i], &ev)))
			return 1;
	}
	for (int it = 0; it < iters; it++) {
		int base = (it * k) % n, got;

		for (int j = 0; j < k; j++) {
			v = 1;
			if ((kernel ? write(fd[(base + j) % n], &v, 8)
				    : uepoll_write(fd[(base + j) % n], &v, 8)) != 8)
				return 1;
		}
		got = kernel ? epoll_wait(ep, out, 64, 0)
			     : uepoll_wait(ep, out, 64, 0);
		if (got != k)
			return 3; /* lost or duplicated events */
		for (int j = 0; j < got; j++)
			if ((kernel ? read(fd[out[j].data.u64], &v, 8)
				    : uepoll_read(fd[out[j].data.u64], &v, 8)) != 8 ||
			    v != 1)
				return 3;
		events += (unsigned long)got;
	}
	printf("events %lu\n", events);
	for (int i = 0; i < n; i++)
		kernel ? close(fd[i]) : uepoll_close(fd[i]);
	kernel ? close(ep) : uepoll_close(ep);
	free(fd);
	return 0;
}
