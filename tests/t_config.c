/*
 * t_config: every UEPOLL_* variable is read by one reader (src/config.c)
 * under one rule per kind of value: a switch is on only when it is exactly
 * "1"; a number is decimal digits within its range, else as if unset;
 * UEPOLL_EVENTFD_COALESCE is "delay_us[,count]" with delay_us at most
 * UEVENTFD_COALESCE_MAX_US, else no coalescing.  And it is read once, at
 * the first call: a later change of the environment changes nothing.
 *
 * The reader keeps what it read for the process, so each case runs in a
 * child of its own (the parent never calls it).
 */
#include "testlib.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"

static const char *const all[] = {
	"UEPOLL_ROUNDROBIN", "UEPOLL_NOSPIN",
	"UEPOLL_WAKE_FIFO", "UEPOLL_STATS",
	"UEPOLL_NOPOLL", "UEPOLL_NO_IOURING",
	"UEPOLL_FORK_DEMOTE_INSTANCES", "UEPOLL_FORK_DEMOTE_EVENTFDS",
	"UEPOLL_EXACT", "UEPOLL_SPIN_NS", "UEPOLL_SPIN_US", "UEPOLL_MIN_WAIT_US",
	"UEPOLL_EVENTFD_COALESCE",
};

/* In a child: the environment cleared of every variable but name=value
 * (if name), then the reader's view of it. */
static struct config in_child(const char *name, const char *value)
{
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		unsetenv(all[i]);
	if (name)
		setenv(name, value, 1);
	return config_get();
}

/* Every switch with value: on iff want.  Each in its own child, which
 * exits with the number of switches that were wrong. */
static void switches(const char *value, bool want)
{
	for (size_t i = 0; i < 9; i++) {
		pid_t pid = fork();
		int st;

		REQUIRE(pid >= 0);
		if (pid == 0) {
			struct config c = in_child(all[i], value);
			bool v[9] = { c.roundrobin, c.nospin, c.fifo, c.stats,
				      c.nopoll, c.no_iouring,
				      c.fork_demote_instances,
				      c.fork_demote_eventfds, c.exact };
			int bad = 0;

			for (size_t j = 0; j < 9; j++)
				bad += v[j] != (j == i && want);
			_exit(bad);
		}
		REQUIRE(waitpid(pid, &st, 0) == pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "%s=\"%s\": wrong switches\n", all[i],
				value);
			t_failures++;
		}
	}
}

/* name=value read as the numbers want (spin_ns, min_wait_us, coalesce_us,
 * coalesce_count). */
static void numbers(const char *name, const char *value, int64_t spin,
		    uint32_t min_wait, uint32_t co_us, uint64_t co_count)
{
	pid_t pid = fork();
	int st;

	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct config c = in_child(name, value);

		_exit(c.spin_ns != spin || c.min_wait_us != min_wait ||
		      c.coalesce_us != co_us || c.coalesce_count != co_count);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "%s=\"%s\": read wrong\n", name ? name : "-",
			value ? value : "");
		t_failures++;
	}
}

/* UEPOLL_SPIN_US=value read as want (-1: not set or not a number). */
static void spin_us(const char *value, int64_t want)
{
	pid_t pid = fork();
	int st;

	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(in_child("UEPOLL_SPIN_US", value).spin_us != want);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "UEPOLL_SPIN_US=\"%s\": read wrong\n", value);
		t_failures++;
	}
}

static void once(void)
{
	pid_t pid = fork();
	int st;

	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct config a = in_child("UEPOLL_MIN_WAIT_US", "7"), b;

		setenv("UEPOLL_MIN_WAIT_US", "9", 1);
		setenv("UEPOLL_NOPOLL", "1", 1);
		b = config_get();
		_exit(a.min_wait_us != 7 || b.min_wait_us != 7 || b.nopoll);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	char max[32];

	t_begin("t_config");
	switches("1", true);
	switches("0", false);
	switches("", false);
	switches("yes", false);
	switches("11", false);
	switches(" 1", false);
	switches("1 ", false);

	numbers(NULL, NULL, -1, 0, 0, 0);
	numbers("UEPOLL_SPIN_NS", "0", 0, 0, 0, 0);
	numbers("UEPOLL_SPIN_NS", "25000", 25000, 0, 0, 0);
	numbers("UEPOLL_SPIN_NS", "-1", -1, 0, 0, 0);
	numbers("UEPOLL_SPIN_NS", "+5", -1, 0, 0, 0);
	numbers("UEPOLL_SPIN_NS", "5ms", -1, 0, 0, 0);
	numbers("UEPOLL_SPIN_NS", "", -1, 0, 0, 0);
	numbers("UEPOLL_SPIN_NS", "99999999999999999999", -1, 0, 0, 0);
	numbers("UEPOLL_MIN_WAIT_US", "250", -1, 250, 0, 0);
	spin_us("0", 0);
	spin_us("75", 75);
	spin_us("7us", -1);
	numbers("UEPOLL_MIN_WAIT_US", "4294967295", -1, UINT32_MAX, 0, 0);
	numbers("UEPOLL_MIN_WAIT_US", "4294967296", -1, 0, 0, 0);
	numbers("UEPOLL_MIN_WAIT_US", "12x", -1, 0, 0, 0);
	numbers("UEPOLL_EVENTFD_COALESCE", "100", -1, 0, 100, 0);
	numbers("UEPOLL_EVENTFD_COALESCE", "100,8", -1, 0, 100, 8);
	snprintf(max, sizeof(max), "%u,1", UEVENTFD_COALESCE_MAX_US);
	numbers("UEPOLL_EVENTFD_COALESCE", max, -1, 0, UEVENTFD_COALESCE_MAX_US,
		1);
	snprintf(max, sizeof(max), "%u", UEVENTFD_COALESCE_MAX_US + 1);
	numbers("UEPOLL_EVENTFD_COALESCE", max, -1, 0, 0, 0);
	numbers("UEPOLL_EVENTFD_COALESCE", "100,", -1, 0, 0, 0);
	numbers("UEPOLL_EVENTFD_COALESCE", ",5", -1, 0, 0, 0);
	numbers("UEPOLL_EVENTFD_COALESCE", "5,x", -1, 0, 0, 0);
	numbers("UEPOLL_EVENTFD_COALESCE", "5;8", -1, 0, 0, 0);
	numbers("UEPOLL_EVENTFD_COALESCE", "1,18446744073709551615", -1, 0, 1,
		UINT64_MAX);
	numbers("UEPOLL_EVENTFD_COALESCE", "1,18446744073709551616", -1, 0, 0,
		0);
	once();
	return t_end();
}
