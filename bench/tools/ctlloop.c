/* SPDX-License-Identifier: MIT */
/* ctlloop - perf bench epoll ctl's loop in one thread, without perf's setrlimit (which
 * fails under valgrind): 64 eventfds, ROUNDS x (ADD EPOLLIN, MOD EPOLLOUT, DEL).
 * For callgrind and strace (docs/benchmarks.md, issue 35 item 2):
 *   gcc -O2 -g -o ctlloop bench/tools/ctlloop.c
 *   valgrind --tool=callgrind --trace-children=yes uepoll-run -- ./ctlloop 2000 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1000, nfds = 64, ep = epoll_create(1), fd[64];
	long ok = 0;
	for (int i = 0; i < nfds; i++) fd[i] = eventfd(0, EFD_NONBLOCK);
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < nfds; i++) {
			struct epoll_event ev = { .events = EPOLLIN, .data.u64 = i };
			ok += !epoll_ctl(ep, EPOLL_CTL_ADD, fd[i], &ev);
			ev.events = EPOLLOUT;
			ok += !epoll_ctl(ep, EPOLL_CTL_MOD, fd[i], &ev);
			ok += !epoll_ctl(ep, EPOLL_CTL_DEL, fd[i], NULL);
		}
	printf("ok=%ld of %ld\n", ok, 3L * rounds * nfds);
	return ok != 3L * rounds * nfds;
}
