/* SPDX-License-Identifier: MIT */
/*
 * p_calls ROUNDS - the system calls a program's eventfd and epoll cost
 * under the preload with no option (issue 35: fast by default).  One
 * thread, ROUNDS times: write 1 to an eventfd an epoll instance holds, a
 * zero-timeout epoll_wait that returns it, a read that empties it.  The
 * kernel's objects make 3 calls a round.  Under uepoll-run with no option
 * the layer makes both NOPOLL (nothing outside uepoll's calls looks at
 * them), so a round makes none; with --exact, the eventfd's write arms its
 * kernel eventfd and the read drains it.  calls_test.sh counts the calls
 * with strace, for ROUNDS 0 and N, and compares the difference: counts,
 * never a timing.  Prints the rounds' sum, which must be ROUNDS.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1000;
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };
	uint64_t one = 1, v, sum = 0;

	if (efd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev))
		return 1;
	for (int i = 0; i < rounds; i++) {
		if (write(efd, &one, sizeof(one)) != sizeof(one) ||
		    epoll_wait(ep, &ev, 1, 0) != 1 || ev.data.u64 != 7 ||
		    read(efd, &v, sizeof(v)) != sizeof(v))
			return 2;
		sum += v;
		/* Empty again: the kernel's answers, whatever the mode. */
		if (epoll_wait(ep, &ev, 1, 0) != 0)
			return 3;
	}
	printf("%llu\n", (unsigned long long)sum);
	return close(ep) || close(efd) ? 4 : 0;
}
