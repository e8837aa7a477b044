/*
 * t_shm_reclaim: the shared memory of ueventfds shared by fork() (SHARED,
 * shm.c) is bounded and given back.  Cycles of create, fork, close in both
 * processes, in the three orders (child closes first, parent first, child
 * exits without closing), and ueventfds that live across many forks; then
 * the process maps no more shared regions than it did at the start (counted
 * in /proc/self/maps: writable shared anonymous mappings), and the counters
 * worked in every cycle (the child's write is read by the parent).
 * $UEPOLL_TEST_SCALE multiplies the cycles.
 */
#include "testlib.h"

#include <sys/wait.h>
#include <unistd.h>

/* Writable shared mappings of anonymous memory ("/dev/zero (deleted)"). */
static int shared_maps(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " rw-s ") && strstr(line, "/dev/zero"))
			n++;
	fclose(f);
	return n;
}

static int reap(pid_t p)
{
	int st = 0;

	if (waitpid(p, &st, 0) != p)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* One cycle.  order 0: the child closes, then the parent; 1: the parent
 * closes before the child has; 2: the child exits without closing. */
static int cycle(int order, int keep)
{
	int e = ueventfd(0, EFD_NONBLOCK), go[2];
	uint64_t v = 0;
	pid_t p;
	char c = 0;

	if (e < 0 || pipe(go) != 0)
		return -1;
	p = fork();
	if (p == 0) {
		int bad = ueventfd_write(e, 2) != 0 || ueventfd_write(keep, 1);

		if (order == 1 && read(go[0], &c, 1) != 1)
			bad = 1;
		if (order != 2)
			bad |= uepoll_close(e) != 0;
		_exit(bad);
	}
	if (p < 0)
		return -1;
	if (order == 1) {
		/* The parent closes first, once the child has written. */
		for (int i = 0; i < 5000 && ueventfd_read(e, &v) != 0; i++)
			usleep(200);
		CHECK_EQ(uepoll_close(e), 0);
		CHECK_EQ(write(go[1], &c, 1), 1);
		CHECK_EQ(reap(p), 0);
	} else {
		CHECK_EQ(reap(p), 0);
		CHECK_EQ(ueventfd_read(e, &v), 0);
		CHECK_EQ(uepoll_close(e), 0);
	}
	CHECK_EQ(v, 2);
	close(go[0]);
	close(go[1]);
	return 0;
}

int main(void)
{
	int n = 300, before, after, keep;
	const char *s = getenv("UEPOLL_TEST_SCALE");
	uint64_t v = 0;

	t_begin("t_shm_reclaim");
	if (s && atof(s) > 0)
		n = (int)(n * atof(s));
	/* A ueventfd that lives across every fork: shared once, the same
	 * block for all of them. */
	keep = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(keep >= 0);
	before = shared_maps();
	REQUIRE(before >= 0);
	for (int i = 0; i < n; i++)
		REQUIRE(cycle(i % 3, keep) == 0);
	after = shared_maps();
	printf("%d cycles: %d shared mappings before, %d after\n", n, before,
	       after);
	/* One region may be current (made by the last cycle's creation and
	 * retired by its fork, or fresh); never one per cycle. */
	CHECK(after <= before + 1);
	CHECK_EQ(ueventfd_read(keep, &v), 0);
	CHECK_EQ(v, (uint64_t)n);
	CHECK_EQ(uepoll_close(keep), 0);
	return t_end();
}
