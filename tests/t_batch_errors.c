/*
 * t_batch_errors: errno of UEPOLL_CTL_MIN_WAIT and uepoll_batch(), and
 * their values.
 *  - UEPOLL_CTL_MIN_WAIT on an fd that is not a uepoll instance gets the
 *    kernel's own answer for that epoll_ctl (compared with the kernel call:
 *    EBADF for a closed epfd, EINVAL for a kernel epoll or a pipe with a
 *    valid fd); on an instance: EFAULT for a NULL event, EINVAL above
 *    INT32_MAX us; it returns the old min_wait_us and leaves the other
 *    policy fields as they were.
 *  - uepoll_batch(): EBADF for a closed fd, EINVAL for a kernel epoll, a
 *    pipe, unknown flags, a window or gap above INT32_MAX us (and then
 *    nothing changes); NULL set only reads; old gets the previous policy.
 *  - EPOLLURGENT is accepted on ADD and MOD for a ueventfd and a pipe, with
 *    EPOLLEXCLUSIVE on ADD; MOD of an exclusive registration stays EINVAL,
 *    as in the kernel.
 */
#include "testlib.h"

#include <limits.h>
#include <unistd.h>

static void same_errno(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1000 };
	int r1, e1, r2, e2;

	errno = 0;
	r1 = epoll_ctl(epfd, UEPOLL_CTL_MIN_WAIT, fd, &ev);
	e1 = errno;
	errno = 0;
	r2 = uepoll_ctl(epfd, UEPOLL_CTL_MIN_WAIT, fd, &ev);
	e2 = errno;
	CHECK_EQ(r1, -1);
	CHECK_EQ(r2, r1);
	CHECK_EQ(e2, e1);
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct uepoll_batch b, o;
	int ep, kep, p[2], closed, efd;

	t_begin("t_batch_errors");
	ep = uepoll_create1(0);
	kep = epoll_create1(0);
	REQUIRE(ep >= 0 && kep >= 0 && pipe(p) == 0);
	closed = dup(p[0]);
	REQUIRE(closed >= 0);
	close(closed);

	/* Not an instance: the kernel's answer. */
	same_errno(closed, p[0]);
	same_errno(kep, p[0]);
	same_errno(p[1], p[0]);
	CHECK_ERR(uepoll_ctl(closed, UEPOLL_CTL_MIN_WAIT, -1, &ev), EBADF);
	CHECK_ERR(uepoll_ctl(kep, UEPOLL_CTL_MIN_WAIT, p[0], &ev), EINVAL);

	/* An instance. */
	CHECK_ERR(uepoll_ctl(ep, UEPOLL_CTL_MIN_WAIT, -1, NULL), EFAULT);
	ev.data.u64 = (uint64_t)INT32_MAX + 1;
	CHECK_ERR(uepoll_ctl(ep, UEPOLL_CTL_MIN_WAIT, -1, &ev), EINVAL);
	ev.data.u64 = UINT64_MAX;
	CHECK_ERR(uepoll_ctl(ep, UEPOLL_CTL_MIN_WAIT, -1, &ev), EINVAL);
	b = (struct uepoll_batch){ 5, 6, 7, UEPOLL_BATCH_FROM_FIRST };
	CHECK_EQ(uepoll_batch(ep, &b, NULL), 0);
	ev.data.u64 = INT32_MAX;
	CHECK_EQ(uepoll_ctl(ep, UEPOLL_CTL_MIN_WAIT, -1, &ev), 5);
	ev.data.u64 = 200;
	CHECK_EQ(uepoll_ctl(ep, UEPOLL_CTL_MIN_WAIT, 12345, &ev), INT32_MAX);
	memset(&o, 0xff, sizeof(o));
	CHECK_EQ(uepoll_batch(ep, NULL, &o), 0);
	CHECK_EQ(o.min_wait_us, 200);
	CHECK_EQ(o.min_events, 6);
	CHECK_EQ(o.inter_event_us, 7);
	CHECK_EQ(o.flags, UEPOLL_BATCH_FROM_FIRST);

	/* uepoll_batch errors change nothing. */
	CHECK_ERR(uepoll_batch(closed, &b, NULL), EBADF);
	CHECK_ERR(uepoll_batch(kep, &b, NULL), EINVAL);
	CHECK_ERR(uepoll_batch(p[0], NULL, &o), EINVAL);
	b = (struct uepoll_batch){ 1, 1, 1, 0x2 };
	CHECK_ERR(uepoll_batch(ep, &b, &o), EINVAL);
	b = (struct uepoll_batch){ (uint32_t)INT32_MAX + 1, 0, 0, 0 };
	CHECK_ERR(uepoll_batch(ep, &b, &o), EINVAL);
	b = (struct uepoll_batch){ 0, 0, (uint32_t)INT32_MAX + 1, 0 };
	CHECK_ERR(uepoll_batch(ep, &b, &o), EINVAL);
	b = (struct uepoll_batch){ 0, 0, 0, 0 };
	CHECK_EQ(uepoll_batch(ep, &b, &o), 0);
	CHECK_EQ(o.min_wait_us, 200);
	CHECK_EQ(o.min_events, 6);
	CHECK_EQ(uepoll_batch(ep, NULL, NULL), 0);
	CHECK_EQ(uepoll_batch(ep, NULL, &o), 0);
	CHECK_EQ(o.min_wait_us | o.min_events | o.inter_event_us | o.flags, 0);

	/* EPOLLURGENT on ADD/MOD, with EPOLLEXCLUSIVE on ADD. */
	efd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(efd >= 0);
	ev.events = EPOLLIN | EPOLLURGENT;
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev), 0);
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_MOD, efd, &ev), 0);
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev), 0);
	CHECK_ERR(uepoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), EEXIST);
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL), 0);
	CHECK_ERR(uepoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL), ENOENT);
	CHECK_ERR(uepoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev), ENOENT);
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_DEL, efd, NULL), 0);
	ev.events = EPOLLIN | EPOLLEXCLUSIVE | EPOLLURGENT;
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev), 0);
	CHECK_ERR(uepoll_ctl(ep, EPOLL_CTL_MOD, efd, &ev), EINVAL);
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
	CHECK_ERR(uepoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev), EINVAL);
	CHECK_ERR(uepoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), EEXIST);

	uepoll_close(efd);
	uepoll_close(ep);
	close(kep);
	close(p[0]);
	close(p[1]);
	return t_end();
}
