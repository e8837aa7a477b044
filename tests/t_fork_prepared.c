/*
 * t_fork_prepared: a fork's prepare shares and prepares only the objects
 * made since the last fork that did every one (PREPARED in src/obj.c),
 * and that is enough: every object alive at any fork works in the child
 * as the kernel's does (issue 35 item 4).
 *
 * Rounds of: make a ueventfd E, an instance P watching it and an empty
 * instance Q, close the ones made two rounds before (frees in the middle
 * of the live lists), fork.  The child writes 1 to every live E (made
 * before this fork, or at it: shared counters) and registers a pipe in Q
 * (one kernel epoll in both processes), then makes a ueventfd F of its
 * own and forks a grandchild, which writes 1 to F (made after the child's
 * fork: the child's next fork must share it), and reads F.  The parent
 * then finds P reporting E, Q the pipe (Q's wait must look at the kernel
 * epoll though the parent registered nothing there: the instance's
 * fork_prepare), and reads 1 from every live E.  Run with
 * the kernel's objects first (the rule checked), then uepoll's, where it
 * also counts the objects each prepare walked (obj_fork_visits, internal):
 * every object made since the last fork, none before (a count, not a
 * time).  With UEPOLL_FORK_DEMOTE_INSTANCES=1 / UEPOLL_FORK_DEMOTE_EVENTFDS=1
 * (ctest's t_fork_prepared_demoted*) the objects are demoted instead,
 * once each.
 */
#include "testlib.h"
#include "calls.h"

#include <sys/wait.h>

unsigned obj_fork_visits(void); /* internal (src/obj.h), linked statically */

enum { ROUNDS = 6 };

static int efd[ROUNDS], ep[ROUNDS], eq[ROUNDS];

/* The grandchild's part, in the child: F made after the child's fork. */
static int child_fork_again(const struct calls *s)
{
	int f = s->eventfd(0, EFD_NONBLOCK), st;
	eventfd_t v = 0;
	pid_t pid;

	if (f < 0)
		return 10;
	pid = fork();
	if (pid < 0)
		return 11;
	if (pid == 0)
		_exit(s->eventfd_write(f, 1) == 0 ? 0 : 1);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		return 12;
	if (s->eventfd_read(f, &v) != 0 || v != 1)
		return 13;
	return s->close(f) == 0 ? 0 : 14;
}

static _Noreturn void child(const struct calls *s, int r, const int *pfd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1000 };

	for (int i = 0; i <= r; i++)
		if (efd[i] >= 0 && s->eventfd_write(efd[i], 1) != 0)
			_exit(20 + i);
	if (s->ctl(eq[r], EPOLL_CTL_ADD, pfd[0], &ev) != 0)
		_exit(30);
	_exit(child_fork_again(s));
}

/* After the child: P_r has E_r's event (data r), Q_r the pipe's (1000). */
static void check_ports(const struct calls *s, int r)
{
	struct epoll_event evs[4];
	int n = s->wait(ep[r], evs, 4, 0), m;

	if (n != 1 || evs[0].data.u64 != (uint64_t)r)
		fprintf(stderr, "%s: round %d: P: %d events\n", s->name, r, n);
	CHECK(n == 1 && evs[0].data.u64 == (uint64_t)r);
	m = s->wait(eq[r], evs, 4, 0);
	if (m != 1 || evs[0].data.u64 != 1000)
		fprintf(stderr, "%s: round %d: Q: %d events\n", s->name, r, m);
	CHECK(m == 1 && evs[0].data.u64 == 1000);
}

static void run(const struct calls *s)
{
	unsigned made = 0;

	for (int r = 0; r < ROUNDS; r++) {
		struct epoll_event ev = { .events = EPOLLIN };
		int pfd[2], st;
		pid_t pid;

		efd[r] = s->eventfd(0, EFD_NONBLOCK);
		ep[r] = s->create1(EPOLL_CLOEXEC);
		eq[r] = s->create1(EPOLL_CLOEXEC);
		REQUIRE(efd[r] >= 0 && ep[r] >= 0 && eq[r] >= 0);
		ev.data.u64 = (uint64_t)r;
		REQUIRE(s->ctl(ep[r], EPOLL_CTL_ADD, efd[r], &ev) == 0);
		made += 3;
		if (r >= 2) { /* freed in the middle of the lists */
			REQUIRE(s->close(efd[r - 2]) == 0);
			REQUIRE(s->close(ep[r - 2]) == 0);
			REQUIRE(s->close(eq[r - 2]) == 0);
			efd[r - 2] = ep[r - 2] = eq[r - 2] = -1;
		}
		REQUIRE(pipe(pfd) == 0);
		REQUIRE(write(pfd[1], "x", 1) == 1);
		pid = fork();
		REQUIRE(pid >= 0);
		if (pid == 0)
			child(s, r, pfd);
		if (s == &calls_uepoll) {
			/* The first fork walks every object; each later one
			 * the three made since. */
			unsigned v = obj_fork_visits();

			if (v != made)
				fprintf(stderr, "round %d: the prepare walked "
						"%u objects, %u made since\n",
					r, v, made);
			CHECK(v == made);
		}
		made = 0;
		REQUIRE(waitpid(pid, &st, 0) == pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fprintf(stderr, "%s: round %d: child status %#x\n",
				s->name, r, st);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		check_ports(s, r);
		for (int i = 0; i <= r; i++) {
			eventfd_t v = 0;

			if (efd[i] < 0)
				continue;
			CHECK(s->eventfd_read(efd[i], &v) == 0 && v == 1);
		}
		close(pfd[0]);
		close(pfd[1]);
	}
	for (int i = 0; i < ROUNDS; i++)
		if (efd[i] >= 0) {
			CHECK(s->close(efd[i]) == 0);
			CHECK(s->close(ep[i]) == 0);
			CHECK(s->close(eq[i]) == 0);
		}
}

int main(void)
{
	t_begin("t_fork_prepared");
	t_watchdog(60);
	run(&calls_kernel);
	run(&calls_uepoll);
	return t_end();
}
