/*
 * t_coalesce_env: the process-wide default from UEPOLL_EVENTFD_COALESCE.
 * The variable is read once per process, so each case re-executes this
 * program with the variable set and the child checks what new ueventfds
 * get: the parsed default (non-semaphore only), nothing for malformed or
 * out-of-range values, a per-object override, and that a default delay
 * still delivers the last write to a sleeper.
 */
#include "testlib.h"

#include <sys/wait.h>
#include <unistd.h>

static void *reader(void *arg)
{
	int *fd = arg;
	uint64_t v = 0;

	if (uepoll_read(*fd, &v, sizeof(v)) != sizeof(v) || v != 3)
		fprintf(stderr, "reader got %llu\n", (unsigned long long)v);
	*fd = (int)v;
	return NULL;
}

static int child(uint32_t delay, uint64_t count)
{
	struct ueventfd_coalesce c, set = { .delay_us = 0 };
	int u = ueventfd(0, 0), sem = ueventfd(0, EFD_SEMAPHORE), u2, arg;
	pthread_t th;

	REQUIRE(u >= 0 && sem >= 0);
	CHECK_EQ(ueventfd_coalesce(u, NULL, &c), 0);
	CHECK_EQ(c.delay_us, delay);
	CHECK_EQ(c.count, count);
	/* Semaphore mode wakes at once whatever the default. */
	CHECK_EQ(ueventfd_coalesce(sem, NULL, &c), 0);
	CHECK_EQ(c.delay_us, 0);
	CHECK_EQ(c.count, 0);
	/* The default is read once: changing the variable now has no effect. */
	setenv("UEPOLL_EVENTFD_COALESCE", "777,1", 1);
	u2 = ueventfd(0, 0);
	REQUIRE(u2 >= 0);
	CHECK_EQ(ueventfd_coalesce(u2, NULL, &c), 0);
	CHECK_EQ(c.delay_us, delay);
	/* A per-object setting overrides it. */
	CHECK_EQ(ueventfd_coalesce(u2, &set, &c), 0);
	CHECK_EQ(c.delay_us, delay);
	CHECK_EQ(ueventfd_coalesce(u2, NULL, &c), 0);
	CHECK_EQ(c.delay_us, 0);
	/* With the default in force a sleeper still gets the last write. */
	arg = u;
	REQUIRE(pthread_create(&th, NULL, reader, &arg) == 0);
	t_sleep_ms(20);
	CHECK_EQ(ueventfd_write(u, 3), 0);
	CHECK(t_join_within(th, 2000));
	CHECK_EQ(arg, 3);
	CHECK_EQ(uepoll_close(u), 0);
	CHECK_EQ(uepoll_close(u2), 0);
	CHECK_EQ(uepoll_close(sem), 0);
	return t_end();
}

static void run_case(const char *env, uint32_t delay, uint64_t count)
{
	char d[32], n[32];
	pid_t pid;
	int st;

	snprintf(d, sizeof(d), "%u", delay);
	snprintf(n, sizeof(n), "%llu", (unsigned long long)count);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		char *argv[] = { "t_coalesce_env", "child", d, n, NULL };

		if (env)
			setenv("UEPOLL_EVENTFD_COALESCE", env, 1);
		else
			unsetenv("UEPOLL_EVENTFD_COALESCE");
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "case \"%s\": child status 0x%x\n",
			env ? env : "(unset)", st);
		t_failures++;
	}
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "child")) {
		t_begin("t_coalesce_env child");
		t_watchdog(60);
		return child((uint32_t)strtoul(argv[2], NULL, 10),
			     strtoull(argv[3], NULL, 10));
	}
	t_begin("t_coalesce_env");
	t_watchdog(120);
	run_case(NULL, 0, 0);
	run_case("5000,7", 5000, 7);
	run_case("2500", 2500, 0);
	run_case("100000,1", 100000, 1);
	run_case("0,9", 0, 9);
	/* Malformed or out of range: no coalescing. */
	run_case("100001", 0, 0);
	run_case("abc", 0, 0);
	run_case("-5", 0, 0);
	run_case("10,", 0, 0);
	run_case("10,x", 0, 0);
	run_case("10 ", 0, 0);
	run_case("", 0, 0);
	return t_end();
}
