/* SPDX-License-Identifier: MIT */
/*
 * p_plain - a program written against the kernel's calls only (epoll,
 * eventfd, read, write, close, dup, fcntl, poll, fork), printing every
 * result.  The test runs it with and without the preload and compares the
 * output line for line: the preload must not change any answer or errno.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "ptest.h"

#define SHOW(fmt, ...) printf(fmt "\n", __VA_ARGS__)

static void show_r(const char *what, long r)
{
	printf("%s = %ld%s%s\n", what, r, r < 0 ? " " : "",
	       r < 0 ? strerrorname_np(errno) : "");
}

static void show_wait(const char *what, int ep, int timeout)
{
	struct epoll_event ev[8];
	int n = epoll_wait(ep, ev, 8, timeout);

	show_r(what, n);
	for (int i = 0; i < n; i++)
		SHOW("  event data=%llu events=%#x",
		     (unsigned long long)ev[i].data.u64, ev[i].events);
}

static short poll_now(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };

	return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

static volatile size_t runtime_eight = 8;

/* poll() and select() of arrays on a page of this stack frame that the
 * program made unreadable: the kernel's EFAULT, natively as preloaded (the
 * preload reads the array before the kernel does: helper-32 crashed a
 * read that took the stack above the frame for readable). */
static void unreadable_stack(int efd)
{
	char area[4 * 4096];
	uintptr_t pg = ((uintptr_t)area + 4095) & ~(uintptr_t)4095;
	struct pollfd *pf = (struct pollfd *)(pg + 4096 - sizeof(*pf));
	fd_set *fs = (fd_set *)pg;

	pf->fd = efd;
	pf->events = POLLIN;
	P_REQUIRE(mprotect((void *)pg, 4096, PROT_NONE) == 0);
	show_r("poll of an unreadable stack page", poll(pf, 1, 0));
	show_r("select of an unreadable stack page",
	       select(efd + 1, fs, NULL, NULL, &(struct timeval){ 0, 0 }));
	P_REQUIRE(mprotect((void *)pg, 4096, PROT_READ | PROT_WRITE) == 0);
}

int main(void)
{
	unsigned char buf[16];
	uint64_t v = 0;
	eventfd_t ev_v = 0;
	struct epoll_event e;
	int efd, sfd, ep, p[2], d, st;
	pid_t pid;

	p_begin(60);
	/* A counter: writes add, a read takes all, an empty read EAGAIN. */
	efd = eventfd(3, EFD_NONBLOCK | EFD_CLOEXEC);
	P_REQUIRE(efd >= 0);
	v = 5;
	show_r("write 5", write(efd, &v, sizeof(v)));
	show_r("write short", write(efd, &v, 4));
	SHOW("poll %#x", poll_now(efd));
	show_r("read", read(efd, &v, sizeof(v)));
	SHOW("  value %llu", (unsigned long long)v);
	show_r("read empty", read(efd, &v, sizeof(v)));
	SHOW("poll %#x", poll_now(efd));
	v = UINT64_MAX;
	show_r("write max", write(efd, &v, sizeof(v)));
	show_r("eventfd_write", eventfd_write(efd, 7));
	show_r("eventfd_read", eventfd_read(efd, &ev_v));
	SHOW("  value %llu", (unsigned long long)ev_v);
	/* A count the compiler cannot see: with _FORTIFY_SOURCE this read is
	 * __read_chk (the fortified test build). */
	show_r("eventfd_write", eventfd_write(efd, 9));
	show_r("read runtime count", read(efd, buf, runtime_eight));
	memcpy(&v, buf, sizeof(v));
	SHOW("  value %llu", (unsigned long long)v);

	/* writev: a write per vector (a value split over two is EINVAL);
	 * readv: one 8-byte value scattered over the vectors. */
	{
		uint64_t a = 6, b = 1;
		uint32_t lo = 6, hi = 0, rlo = 0, rhi = 0;
		struct iovec w2[2] = { { &a, 8 }, { &b, 8 } };
		struct iovec w[2] = { { &lo, 4 }, { &hi, 4 } };
		struct iovec r[3] = { { &rlo, 2 }, { (char *)&rlo + 2, 2 },
				      { &rhi, 4 } };

		show_r("writev two values", writev(efd, w2, 2));
		show_r("writev split value", writev(efd, w, 2));
		show_r("writev short", writev(efd, w, 1));
		show_r("readv short", readv(efd, r, 2));
		show_r("readv", readv(efd, r, 3));
		SHOW("  value %u %u", rlo, rhi);
		show_r("readv empty", readv(efd, r, 3));
	}

	/* Semaphore mode: one at a time. */
	sfd = eventfd(2, EFD_SEMAPHORE | EFD_NONBLOCK);
	P_REQUIRE(sfd >= 0);
	for (int i = 0; i < 3; i++) {
		show_r("sem read", read(sfd, &v, sizeof(v)));
		if (i < 2)
			SHOW("  value %llu", (unsigned long long)v);
	}
	show_r("eventfd bad flags", eventfd(0, 0x4000000));

	/* An instance watching an eventfd and a pipe, level and edge. */
	ep = epoll_create1(EPOLL_CLOEXEC);
	P_REQUIRE(ep >= 0);
	P_REQUIRE(pipe2(p, O_NONBLOCK) == 0);
	e.events = EPOLLIN;
	e.data.u64 = 1;
	show_r("ctl add efd", epoll_ctl(ep, EPOLL_CTL_ADD, efd, &e));
	show_r("ctl add efd again", epoll_ctl(ep, EPOLL_CTL_ADD, efd, &e));
	e.events = EPOLLIN | EPOLLET;
	e.data.u64 = 2;
	show_r("ctl add pipe", epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &e));
	e.data.u64 = 3;
	show_r("ctl add sem", epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &e));
	show_r("ctl mod absent", epoll_ctl(ep, EPOLL_CTL_MOD, p[1], &e));
	show_r("ctl add self", epoll_ctl(ep, EPOLL_CTL_ADD, ep, &e));
	show_r("ctl bad epfd", epoll_ctl(p[0], EPOLL_CTL_ADD, efd, &e));
	show_wait("wait empty", ep, 0);
	show_r("eventfd_write", eventfd_write(efd, 2));
	show_r("pipe write", write(p[1], "x", 1));
	show_wait("wait two", ep, 1000);
	show_wait("wait level again", ep, 0);
	show_r("eventfd_write sem", eventfd_write(sfd, 1));
	show_wait("wait sem edge", ep, 0);
	show_wait("wait sem edge again", ep, 0);
	show_r("read efd", read(efd, &v, sizeof(v)));
	SHOW("  value %llu", (unsigned long long)v);
	show_wait("wait drained", ep, 0);
	show_r("wait bad max", epoll_wait(ep, &e, 0, 0));

	/* fcntl: O_NONBLOCK off and on again; dup of a kernel fd. */
	st = fcntl(efd, F_GETFL);
	SHOW("getfl nonblock %d", (st & O_NONBLOCK) != 0);
	show_r("setfl", fcntl(efd, F_SETFL, st & ~O_NONBLOCK));
	SHOW("getfl nonblock %d", (fcntl(efd, F_GETFL) & O_NONBLOCK) != 0);
	show_r("setfl", fcntl(efd, F_SETFL, st));
	show_r("read empty nonblock", read(efd, &v, sizeof(v)));
	SHOW("getfd cloexec %d", fcntl(efd, F_GETFD) & FD_CLOEXEC);
	d = dup(p[1]);
	show_r("dup pipe ok", d >= 0);
	show_r("dup write", write(d, "y", 1));
	show_r("close dup", close(d));
	show_r("close again", close(d));
	show_r("dup bad", dup(-1));
	show_r("dup2 self", dup2(p[0], p[0]) == p[0]);

	/* A forked child shares the eventfd's counter with the parent. */
	show_r("eventfd_write", eventfd_write(efd, 40));
	fflush(stdout);
	pid = fork();
	P_REQUIRE(pid >= 0);
	if (pid == 0) {
		uint64_t c = 0;
		int ok = eventfd_read(efd, &c) == 0 && c == 40 &&
			 eventfd_write(efd, 2) == 0;

		_exit(ok ? 0 : 3);
	}
	P_REQUIRE(waitpid(pid, &st, 0) == pid);
	SHOW("child status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	show_r("read after child", read(efd, &v, sizeof(v)));
	SHOW("  value %llu", (unsigned long long)v);

	unreadable_stack(efd);
	show_r("close ep", close(ep));
	show_r("close efd", close(efd));
	show_r("close sfd", close(sfd));
	show_r("close bad", close(efd));
	close(p[0]);
	close(p[1]);
	fflush(stdout);
	return p_end();
}
