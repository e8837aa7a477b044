/*
 * t_shm_regions: the shared counters of 1024 ueventfds take 4 mappings
 * (src/shm.c: 64 kB regions of 256-byte blocks), and every one of them is
 * shared by a fork.
 *
 * A fork copies one mapping per region, and a forked child, whose page
 * tables hold none of a MAP_SHARED mapping's pages, faults at least once
 * in each region its repair reads (docs/benchmarks.md, issue 35 item 4:
 * with 16 kB regions, 32 of the child's 38 faults at 4000 objects).  So
 * the count of the library's shared mappings (rw-s, /dev/zero in
 * /proc/self/maps) is checked, a count, not a time: at most 4 more after
 * 1024 ueventfds.  Then a child writes 1 to each ueventfd, first to last,
 * and the parent reads 1 from each (the counters of every region shared).
 */
#include "testlib.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

enum { N = 1024 };

static int shared_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	REQUIRE(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " rw-s ") && strstr(line, "/dev/zero"))
			n++;
	fclose(f);
	return n;
}

int main(void)
{
	static int fds[N];
	struct rlimit rl;
	int before, after, st;
	pid_t pid;

	t_begin("t_shm_regions");
	t_watchdog(60);
	/* Two fds a ueventfd (its number, the private duplicate). */
	REQUIRE(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	if (rl.rlim_max < 2 * N + 64)
		T_SKIP("RLIMIT_NOFILE's hard limit is below 2112");
	if (rl.rlim_cur < 2 * N + 64) {
		rl.rlim_cur = 2 * N + 64;
		REQUIRE(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	}
	before = shared_maps();
	for (int i = 0; i < N; i++) {
		fds[i] = ueventfd(0, EFD_NONBLOCK);
		REQUIRE(fds[i] >= 0);
	}
	after = shared_maps();
	if (after - before > 4 || after - before < 1)
		fprintf(stderr, "%d shared mappings for %d counters\n",
			after - before, N);
	CHECK(after - before >= 1 && after - before <= 4);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < N; i++)
			if (ueventfd_write(fds[i], 1) != 0)
				_exit(1);
		_exit(0);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (int i = 0; i < N; i++) {
		eventfd_t v = 0;

		if (ueventfd_read(fds[i], &v) != 0 || v != 1) {
			fprintf(stderr, "ueventfd %d: not shared\n", i);
			t_failures++;
			break;
		}
	}
	for (int i = 0; i < N; i++)
		CHECK(uepoll_close(fds[i]) == 0);
	return t_end();
}
