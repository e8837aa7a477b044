/*
 * t_exec_demote: uepoll_demote_exec() before execve(): the new program
 * finds each inherited ueventfd as the kernel eventfd with its exact
 * counter and mode (read(2) gives the value, fdinfo the semaphore flag),
 * while close-on-exec ueventfds stay accelerated in the caller (still
 * ueventfds: ueventfd_coalesce works on them) and are gone in the new
 * program.  An instance that watched a demoted ueventfd sees what the new
 * program did to it (it read the counter: nothing left).  An inherited
 * instance is demoted too: the new program's epoll_wait on it reports the
 * semaphore ueventfd it watched, with its data.  The new program
 * is started with posix_spawn, which runs no fork handlers (a fork would
 * demote every ueventfd by itself).
 */
#include "testlib.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

/* The exec'd side: argv = { self, "--child", plain, sem, cloexec, ep }. */
static int child(char **argv)
{
	int plain = atoi(argv[2]), sem = atoi(argv[3]), cx = atoi(argv[4]),
	    ki = atoi(argv[5]);
	char path[64], line[128];
	struct epoll_event e = { 0 };
	uint64_t v = 0;
	int bad = 0, semflag = -1;
	FILE *f;

	bad |= epoll_wait(ki, &e, 1, 0) != 1 || e.data.u64 != 42 ||
	       e.events != EPOLLIN;
	bad |= read(plain, &v, 8) != 8 || v != 7;
	bad |= read(sem, &v, 8) != 8 || v != 1; /* semaphore: 1 of 4 */
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", sem);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "eventfd-semaphore: %d", &semflag) == 1)
			break;
	if (f)
		fclose(f);
	bad |= semflag != 1;
	bad |= fcntl(cx, F_GETFD) != -1; /* closed by the exec */
	return bad ? 10 : 0;
}

int main(int argc, char **argv)
{
	struct ueventfd_coalesce co = { 0 };
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 }, out;
	char a[16], b[16], c[16], d[16];
	int plain, sem, cx, ep, ki, st;
	pid_t pid;

	if (argc == 6 && !strcmp(argv[1], "--child"))
		return child(argv);
	t_begin("t_exec_demote");
	plain = ueventfd(7, 0);
	sem = ueventfd(4, EFD_SEMAPHORE);
	cx = ueventfd(5, EFD_CLOEXEC);
	ep = uepoll_create1(EPOLL_CLOEXEC);
	REQUIRE(plain >= 0 && sem >= 0 && cx >= 0 && ep >= 0);
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, plain, &ev), 0);
	ki = uepoll_create1(0); /* inherited */
	REQUIRE(ki >= 0);
	ev.data.u64 = 42;
	CHECK_EQ(uepoll_ctl(ki, EPOLL_CTL_ADD, sem, &ev), 0);
	ev.data.u64 = 1;
	CHECK_EQ(uepoll_demote_exec(), 0);
	CHECK_ERR(uepoll_batch(ki, NULL, NULL), EINVAL); /* kernel epoll now */
	CHECK_ERR(ueventfd_coalesce(plain, &co, NULL), EBADF); /* kernel now */
	CHECK_EQ(ueventfd_coalesce(cx, &co, NULL), 0);	/* still uepoll's */
	CHECK_EQ(uepoll_wait(ep, &out, 1, 0), 1);
	snprintf(a, sizeof(a), "%d", plain);
	snprintf(b, sizeof(b), "%d", sem);
	snprintf(c, sizeof(c), "%d", cx);
	snprintf(d, sizeof(d), "%d", ki);
	fflush(NULL);
	{
		/* posix_spawn runs no fork handlers: only uepoll_demote_exec
		 * has demoted anything. */
		char *args[] = { argv[0], "--child", a, b, c, d, NULL };
		extern char **environ;

		REQUIRE(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args,
				    environ) == 0);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	/* The new program read plain's 7: the instance sees it empty. */
	CHECK_EQ(uepoll_wait(ep, &out, 1, 0), 0);
	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_EQ(uepoll_close(plain), 0);
	CHECK_EQ(uepoll_close(sem), 0);
	CHECK_EQ(uepoll_close(cx), 0);
	CHECK_EQ(uepoll_close(ki), 0);
	return t_end();
}
