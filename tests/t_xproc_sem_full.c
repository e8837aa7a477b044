/*
 * t_xproc_sem_full: a shared (forked) EFD_SEMAPHORE ueventfd at its maximum
 * keeps its kernel fd exact across reads and writes that leave and refill
 * the maximum (issue 32, bug 7: a read of a full counter took two units from
 * the kernel fd, so that after the counter was full again poll() reported
 * POLLOUT while a write of 1 failed with EAGAIN, and the kernel fd drifted
 * a unit per cycle).
 *
 * The same script runs on the kernel's eventfd and on a ueventfd, both
 * EFD_SEMAPHORE|EFD_NONBLOCK and shared by a fork (the child writes and
 * reads its half of the script while the parent waits, so that both
 * processes' paths are used): cycles of read, poll, write of 1, poll,
 * write of 1 (EAGAIN when full), and the logs must be equal.  A kernel
 * epoll watching each fd level-triggered reports the same events.
 */
#include "xproc.h"

#include <fcntl.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#define FULL 0xfffffffffffffffeull
#define CYCLES 8

struct sys {
	const char *name;
	bool kernel;
};

static long s_read(const struct sys *s, int fd)
{
	uint64_t v = 0;
	ssize_t r = s->kernel ? read(fd, &v, 8) : uepoll_read(fd, &v, 8);

	return r < 0 ? -errno : (long)v;
}

static long s_write(const struct sys *s, int fd, uint64_t v)
{
	ssize_t r = s->kernel ? write(fd, &v, 8) : uepoll_write(fd, &v, 8);

	return r < 0 ? -errno : r;
}

/* What poll() and a kernel epoll say of fd now. */
static void look(struct t_log *l, int fd, int ep)
{
	struct epoll_event ev[2];
	int n;

	t_log_put(l, x_poll(fd, POLLIN | POLLOUT, 0));
	n = epoll_wait(ep, ev, 2, 0);
	t_log_put(l, n);
	if (n == 1)
		t_log_put(l, (long)ev[0].events);
}

/* One cycle: leave the maximum by a read, refill it by a write. */
static void cycle(const struct sys *s, struct t_log *l, int fd, int ep)
{
	t_log_res(l, s_read(s, fd));
	look(l, fd, ep);
	t_log_res(l, s_write(s, fd, 1));
	look(l, fd, ep);
	t_log_res(l, s_write(s, fd, 1)); /* full: EAGAIN */
	look(l, fd, ep);
}

static void run(const struct sys *s, struct t_log *l)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT };
	struct t_child c;
	int fd, ep, p[2];
	pid_t pid;

	x_step(s->name, "setup");
	fd = s->kernel ? eventfd(0, EFD_SEMAPHORE | EFD_NONBLOCK)
		       : ueventfd(0, EFD_SEMAPHORE | EFD_NONBLOCK);
	REQUIRE(fd >= 0);
	REQUIRE(s_write(s, fd, FULL) == 8);
	ep = epoll_create1(0);
	REQUIRE(ep >= 0);
	REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0);
	REQUIRE(pipe(p) == 0);
	look(l, fd, ep);
	pid = x_fork(&c);
	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct t_log cl = { .n = 0 };

		close(p[0]);
		for (int i = 0; i < CYCLES / 2; i++)
			cycle(s, &cl, fd, ep);
		x_log_send(p[1], &cl);
		_exit(0);
	}
	close(p[1]);
	x_step(s->name, "the child's cycles");
	REQUIRE(t_child_reap(&c, 20000, "child") == 0);
	REQUIRE(x_log_recv(p[0], l) == 0);
	close(p[0]);
	x_step(s->name, "the parent's cycles");
	for (int i = 0; i < CYCLES / 2; i++)
		cycle(s, l, fd, ep);
	/* Then down to 0 by semaphore reads is 2^64 reads: empty it another
	 * way is not possible; one more read and look. */
	t_log_res(l, s_read(s, fd));
	look(l, fd, ep);
	x_step_end();
	close(ep);
	CHECK_EQ(s->kernel ? close(fd) : uepoll_close(fd), 0);
}

int main(void)
{
	static const struct sys K = { "kernel", true }, U = { "uepoll", false };
	static struct t_log lk, lu;

	t_begin("t_xproc_sem_full");
	x_init();
	run(&K, &lk);
	run(&U, &lu);
	t_log_same(&lk, &lu, "semaphore at its maximum, shared");
	return t_end();
}
