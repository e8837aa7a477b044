/*
 * t_wait_errors: errno of uepoll_wait/pwait/pwait2 and uepoll_create/create1
 * for bad arguments, each compared with the kernel's answer; EPOLL_CLOEXEC.
 */
#include "testlib.h"

#include <fcntl.h>
#include <unistd.h>

/*
 * Compare one kernel call with its uepoll counterpart: both fail with the same
 * errno or both succeed (fd numbers differ, so only success is compared).
 */
#define SAME(kcall, ucall)                                                   \
	do {                                                                 \
		int _rk, _ru, _ek, _eu;                                      \
		errno = 0;                                                   \
		_rk = (kcall);                                               \
		_ek = errno;                                                 \
		errno = 0;                                                   \
		_ru = (ucall);                                               \
		_eu = errno;                                                 \
		if ((_rk < 0) != (_ru < 0) || (_rk < 0 && (_rk != _ru || _ek != _eu))) {                 \
			fprintf(stderr, "%s:%d: %s -> %d errno %d, %s -> %d errno %d\n", \
				__FILE__, __LINE__, #kcall, _rk, _ek, #ucall, \
				_ru, _eu);                                   \
			t_failures++;                                        \
		}                                                            \
		if (_rk >= 0 && _rk > 2)                                     \
			close(_rk);                                          \
		if (_ru >= 0 && _ru > 2)                                     \
			uepoll_close(_ru);                                   \
	} while (0)

int main(void)
{
	struct epoll_event ev[4];
	struct timespec ts;
	sigset_t ss;
	int kep, uep, kefd, uefd, pfd[2], kclosed, uclosed;
	/* volatile: keeps the compiler from flagging the negative sizes */
	volatile int neg1 = -1, intmin = -2147483647 - 1;

	t_begin("t_wait_errors");
	t_watchdog(120);
	sigemptyset(&ss);
	kep = epoll_create1(0);
	uep = uepoll_create1(0);
	kefd = eventfd(0, 0);
	uefd = ueventfd(0, 0);
	REQUIRE(kep >= 0 && uep >= 0 && kefd >= 0 && uefd >= 0);
	REQUIRE(pipe(pfd) == 0);
	kclosed = epoll_create1(0);
	REQUIRE(kclosed >= 0);
	close(kclosed);
	uclosed = uepoll_create1(0);
	REQUIRE(uclosed >= 0);
	uepoll_close(uclosed);

	/* maxevents <= 0 */
	SAME(epoll_wait(kep, ev, 0, 0), uepoll_wait(uep, ev, 0, 0));
	SAME(epoll_wait(kep, ev, neg1, 0), uepoll_wait(uep, ev, neg1, 0));
	SAME(epoll_wait(kep, ev, intmin, -1), uepoll_wait(uep, ev, intmin, -1));
	SAME(epoll_pwait(kep, ev, 0, 0, &ss), uepoll_pwait(uep, ev, 0, 0, &ss));
	ts.tv_sec = 0;
	ts.tv_nsec = 0;
	SAME(epoll_pwait2(kep, ev, 0, &ts, NULL),
	     uepoll_pwait2(uep, ev, 0, &ts, NULL));
	CHECK_ERR(uepoll_wait(uep, ev, 0, 0), EINVAL);

	/* bad epfd */
	SAME(epoll_wait(-1, ev, 4, 0), uepoll_wait(-1, ev, 4, 0));
	SAME(epoll_wait(kclosed, ev, 4, 0), uepoll_wait(uclosed, ev, 4, 0));
	SAME(epoll_pwait(-1, ev, 4, 0, &ss), uepoll_pwait(-1, ev, 4, 0, &ss));
	SAME(epoll_pwait2(-1, ev, 4, &ts, NULL),
	     uepoll_pwait2(-1, ev, 4, &ts, NULL));
	CHECK_ERR(uepoll_wait(-1, ev, 4, 0), EBADF);
	/* bad epfd and bad maxevents together: the kernel checks maxevents
	 * first */
	SAME(epoll_wait(-1, ev, 0, 0), uepoll_wait(-1, ev, 0, 0));

	/* epfd that is not an epoll */
	SAME(epoll_wait(kefd, ev, 4, 0), uepoll_wait(uefd, ev, 4, 0));
	SAME(epoll_wait(pfd[0], ev, 4, 0), uepoll_wait(pfd[0], ev, 4, 0));
	SAME(epoll_pwait(kefd, ev, 4, 0, &ss), uepoll_pwait(uefd, ev, 4, 0, &ss));
	SAME(epoll_pwait2(kefd, ev, 4, &ts, NULL),
	     uepoll_pwait2(uefd, ev, 4, &ts, NULL));
	CHECK_ERR(uepoll_wait(uefd, ev, 4, 0), EINVAL);

	/* pwait2 with a bad timespec */
	ts.tv_sec = 0;
	ts.tv_nsec = 1000000000;
	SAME(epoll_pwait2(kep, ev, 4, &ts, NULL),
	     uepoll_pwait2(uep, ev, 4, &ts, NULL));
	CHECK_ERR(uepoll_pwait2(uep, ev, 4, &ts, NULL), EINVAL);
	ts.tv_nsec = -1;
	SAME(epoll_pwait2(kep, ev, 4, &ts, NULL),
	     uepoll_pwait2(uep, ev, 4, &ts, NULL));
	ts.tv_sec = -1;
	ts.tv_nsec = 0;
	SAME(epoll_pwait2(kep, ev, 4, &ts, NULL),
	     uepoll_pwait2(uep, ev, 4, &ts, NULL));
	/* valid zero timespec, nothing ready */
	ts.tv_sec = 0;
	ts.tv_nsec = 0;
	SAME(epoll_pwait2(kep, ev, 4, &ts, &ss),
	     uepoll_pwait2(uep, ev, 4, &ts, &ss));

	/* A bad sigmask: the kernel's EFAULT whenever the wait would sleep
	 * (nothing ready, a timeout), on an instance with a ueventfd and
	 * on one with kernel fds only (uepoll(7): a wait that finds events
	 * without sleeping returns them). */
	{
		const sigset_t *bad = (const sigset_t *)(uintptr_t)8;
		struct epoll_event e = { .events = EPOLLIN };
		int kp = epoll_create1(0), up = uepoll_create1(0),
		    up2 = uepoll_create1(0);

		REQUIRE(kp >= 0 && up >= 0 && up2 >= 0);
		CHECK_EQ(uepoll_ctl(up, EPOLL_CTL_ADD, uefd, &e), 0);
		CHECK_EQ(uepoll_ctl(up2, EPOLL_CTL_ADD, pfd[0], &e), 0);
		CHECK_EQ(epoll_ctl(kp, EPOLL_CTL_ADD, pfd[0], &e), 0);
		SAME(epoll_pwait(kp, ev, 4, 10, bad),
		     uepoll_pwait(up, ev, 4, 10, bad));
		SAME(epoll_pwait(kp, ev, 4, 10, bad),
		     uepoll_pwait(up2, ev, 4, 10, bad));
		ts.tv_sec = 0;
		ts.tv_nsec = 10000000;
		SAME(epoll_pwait2(kp, ev, 4, &ts, bad),
		     uepoll_pwait2(up, ev, 4, &ts, bad));
		close(kp);
		CHECK_EQ(uepoll_close(up), 0);
		CHECK_EQ(uepoll_close(up2), 0);
	}

	/* create1 / create */
	SAME(epoll_create1(1), uepoll_create1(1));
	SAME(epoll_create1(-1), uepoll_create1(-1));
	SAME(epoll_create1(EPOLL_CLOEXEC | 1), uepoll_create1(EPOLL_CLOEXEC | 1));
	SAME(epoll_create(0), uepoll_create(0));
	SAME(epoll_create(-5), uepoll_create(-5));
	CHECK_ERR(uepoll_create1(1), EINVAL);
	CHECK_ERR(uepoll_create(0), EINVAL);
	CHECK_ERR(uepoll_create(-1), EINVAL);
	/* valid ones succeed (SAME closes them) */
	SAME(epoll_create(1), uepoll_create(1));
	SAME(epoll_create(100000), uepoll_create(100000));
	SAME(epoll_create1(EPOLL_CLOEXEC), uepoll_create1(EPOLL_CLOEXEC));

	/* EPOLL_CLOEXEC shows in F_GETFD, and only when asked for */
	{
		int a = uepoll_create1(EPOLL_CLOEXEC), b = uepoll_create1(0);
		int c = uepoll_create(1);

		REQUIRE(a >= 0 && b >= 0 && c >= 0);
		CHECK(fcntl(a, F_GETFD) & FD_CLOEXEC);
		CHECK(!(fcntl(b, F_GETFD) & FD_CLOEXEC));
		CHECK(!(fcntl(c, F_GETFD) & FD_CLOEXEC));
		CHECK_EQ(uepoll_close(a), 0);
		CHECK_EQ(uepoll_close(b), 0);
		CHECK_EQ(uepoll_close(c), 0);
	}

	close(kep);
	close(kefd);
	CHECK_EQ(uepoll_close(uep), 0);
	CHECK_EQ(uepoll_close(uefd), 0);
	close(pfd[0]);
	close(pfd[1]);
	return t_end();
}
