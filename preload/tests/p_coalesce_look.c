/* SPDX-License-Identifier: MIT */
/*
 * p_coalesce_look ROUNDS - a coalesced eventfd looked at by poll() keeps
 * its coalescing under the preload's NOPOLL default: ROUNDS times, write 1,
 * poll(fd, 0), read it empty.  The first poll ends the object's NOPOLL (it is exact
 * from then on, its kernel fd armed once); after it, a look must not arm
 * the kernel fd again by itself (a write's arm waits for the coalescing
 * timer), or proposal 004's coalesced subscriber never sleeps.
 * coalesce_test.sh counts the write(2) calls under `uepoll-run --coalesce
 * 100000` for 0 and for N rounds: counts, never a timing.  Prints the
 * number of polls that returned.
 */
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 200, n = 0;
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t one = 1, v;

	if (fd < 0 || poll(&p, 1, 0) < 0)
		return 1;
	for (int i = 0; i < rounds; i++) {
		if (write(fd, &one, sizeof(one)) != sizeof(one) ||
		    poll(&p, 1, 0) < 0 || read(fd, &v, sizeof(v)) != sizeof(v))
			return 2;
		n++;
	}
	printf("%d\n", n);
	return close(fd) ? 3 : 0;
}
