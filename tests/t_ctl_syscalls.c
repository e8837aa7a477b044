/*
 * t_ctl_syscalls: what uepoll_ctl costs in system calls (issue 35, item 2:
 * "ctl at kernel speed or better"), against the kernel, where every
 * epoll_ctl(2) is one call.  perf bench epoll ctl's loop (ADD with
 * EPOLLIN, MOD to EPOLLOUT, which finds an eventfd ready, DEL), ROUNDS
 * times over NFDS fds:
 *  (a) ueventfds in an instance made with no flag and (b) with
 *      UEPOLL_NOPOLL: at most one call per ADD (kcmp(2), the STALE check
 *      of the number: obj.c), none per MOD or DEL but one in all (the
 *      doorbell's first ring); the kernel makes three a cycle;
 *  (c) pipes (kernel fds): exactly the kernel's one call per ctl, the
 *      floor (the kernel's epoll_ctl is the registration).
 * Every call must succeed.  The count: tests/libcwrap.c, as in
 * t_efd_syscalls; counts, not timings.
 */
#include "testlib.h"
#include "libcwrap.h"

#include <fcntl.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define ROUNDS 50
#define NFDS 16

struct cost {
	int add, mod, del, failed;
};

static void loop(int ep, const int *fd, struct cost *c)
{
	memset(c, 0, sizeof(*c));
	for (int r = 0; r < ROUNDS; r++)
		for (int i = 0; i < NFDS; i++) {
			struct epoll_event ev = { .events = EPOLLIN,
						  .data.u64 = (uint64_t)i };

			wrap_take(-1);
			c->failed += uepoll_ctl(ep, EPOLL_CTL_ADD, fd[i], &ev) != 0;
			c->add += wrap_take(-1);
			ev.events = EPOLLOUT;
			c->failed += uepoll_ctl(ep, EPOLL_CTL_MOD, fd[i], &ev) != 0;
			c->mod += wrap_take(-1);
			c->failed += uepoll_ctl(ep, EPOLL_CTL_DEL, fd[i], NULL) != 0;
			c->del += wrap_take(-1);
		}
}

static void ueventfds(unsigned int uflags, const char *what)
{
	int ep = uepoll_create2(0, uflags), fd[NFDS];
	struct cost c;

	REQUIRE(ep >= 0);
	for (int i = 0; i < NFDS; i++)
		REQUIRE((fd[i] = ueventfd(0, EFD_NONBLOCK)) >= 0);
	wrap_arm(0);
	loop(ep, fd, &c);
	wrap_disarm();
	printf("%s: %d cycles: ADD %d calls, MOD %d, DEL %d (the kernel: %d "
	       "each)\n",
	       what, ROUNDS * NFDS, c.add, c.mod, c.del, ROUNDS * NFDS);
	CHECK_EQ(c.failed, 0);
	/* +1: getpid, which kcmp needs, asked once per process. */
	CHECK(c.add <= ROUNDS * NFDS + 1);
	/* The doorbell rung by the first MOD that queues an item; it stays
	 * rung while nobody waits, so no later one rings (without
	 * UEPOLL_NOPOLL: the instance's fd shows the kernel's readiness). */
	CHECK(c.mod <= 1);
	CHECK_EQ(c.del, 0);
	for (int i = 0; i < NFDS; i++)
		CHECK_EQ(uepoll_close(fd[i]), 0);
	CHECK_EQ(uepoll_close(ep), 0);
}

int main(void)
{
	int ep, p[NFDS][2], fd[NFDS];
	struct cost c;

	t_begin("t_ctl_syscalls");
	ueventfds(0, "(a) ueventfds");
	ueventfds(UEPOLL_NOPOLL, "(b) ueventfds, UEPOLL_NOPOLL");

	REQUIRE((ep = uepoll_create1(0)) >= 0);
	for (int i = 0; i < NFDS; i++) {
		REQUIRE(pipe2(p[i], O_NONBLOCK) == 0);
		fd[i] = p[i][1]; /* the write end: EPOLLOUT ready, as an eventfd */
	}
	wrap_arm(0);
	loop(ep, fd, &c);
	wrap_disarm();
	printf("(c) pipes: %d cycles: ADD %d calls, MOD %d, DEL %d\n",
	       ROUNDS * NFDS, c.add, c.mod, c.del);
	CHECK_EQ(c.failed, 0);
	CHECK_EQ(c.add, ROUNDS * NFDS);
	CHECK_EQ(c.mod, ROUNDS * NFDS);
	CHECK_EQ(c.del, ROUNDS * NFDS);
	for (int i = 0; i < NFDS; i++) {
		CHECK_EQ(close(p[i][0]), 0);
		CHECK_EQ(close(p[i][1]), 0);
	}
	CHECK_EQ(uepoll_close(ep), 0);
	return t_end();
}
