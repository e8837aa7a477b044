/*
 * t_stale_number: a uepoll number closed behind uepoll's back (plain
 * close(2)) and given by the kernel to another file.
 *  - uepoll_ctl ADD of the number finds that it no longer holds the
 *    ueventfd's file (kcmp) and registers what it holds now, a pipe, in the
 *    kernel: a byte written to the pipe is reported with the given data;
 *    the stale object is dropped (its private fd closed: the fd-leak check);
 *  - the internal hook uobj_forget(), which the preload layer's close
 *    wrappers call, drops the object recorded at a number without touching
 *    the number: afterwards uepoll_read on it reads what the kernel fd
 *    holds (/dev/null: 0 bytes), and no fd is leaked.
 */
#include "testlib.h"

#include <fcntl.h>
#include <unistd.h>

/* Internal (src/obj.h), linked from the static library. */
void uobj_forget(int fd);

static void test_add_reused(void)
{
	int efd = ueventfd(1, EFD_NONBLOCK), ep = uepoll_create1(0), p[2];
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 9 }, out;

	REQUIRE(efd >= 0 && ep >= 0);
	CHECK_EQ(close(efd), 0); /* behind uepoll's back */
	REQUIRE(pipe2(p, O_NONBLOCK) == 0);
	if (p[0] != efd) {
		close(p[0]);
		close(p[1]);
		uobj_forget(efd);
		uepoll_close(ep);
		T_SKIP("the kernel did not give the number again");
	}
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
	CHECK_EQ(uepoll_wait(ep, &out, 1, 0), 0);
	CHECK_EQ(write(p[1], "x", 1), 1);
	CHECK_EQ(uepoll_wait(ep, &out, 1, 1000), 1);
	CHECK_EQ(out.data.u64, 9u);
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL), 0);
	CHECK_EQ(uepoll_close(p[0]), 0);
	CHECK_EQ(close(p[1]), 0);
	CHECK_EQ(uepoll_close(ep), 0);
}

static void test_forget(void)
{
	int efd = ueventfd(5, EFD_NONBLOCK), n;
	char buf[8];

	REQUIRE(efd >= 0);
	CHECK_EQ(close(efd), 0);
	n = open("/dev/null", O_RDONLY | O_CLOEXEC);
	REQUIRE(n >= 0);
	if (n != efd) {
		close(n);
		uobj_forget(efd);
		T_SKIP("the kernel did not give the number again");
	}
	uobj_forget(n);
	uobj_forget(n); /* nothing left: no-op */
	CHECK_EQ(uepoll_read(n, buf, sizeof(buf)), 0); /* /dev/null's EOF */
	CHECK_EQ(uepoll_close(n), 0);
}

int main(void)
{
	t_begin("t_stale_number");
	test_add_reused();
	test_forget();
	return t_end();
}
