/*
 * t_eventfd_semantics: a ueventfd's counter behaves exactly like eventfd(2).
 * Every step runs on a kernel eventfd and on a ueventfd side by side and the
 * results (return value, errno, value read) must match.
 */
#include "testlib.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#define EFD_MAX 0xfffffffffffffffeULL

/* One kernel eventfd and one ueventfd created with the same arguments. */
struct pair {
	int k;
	int u;
};

static struct pair mkpair(unsigned int init, int flags)
{
	struct pair p;

	p.k = eventfd(init, flags);
	p.u = ueventfd(init, flags);
	REQUIRE(p.k >= 0);
	REQUIRE(p.u >= 0);
	return p;
}

static void closepair(struct pair p)
{
	CHECK_EQ(close(p.k), 0);
	CHECK_EQ(uepoll_close(p.u), 0);
}

/* read 8 bytes from both; results must agree; returns the value read. */
static uint64_t rd_both(struct pair p, int line)
{
	uint64_t vk = 0xdead, vu = 0xdead;
	ssize_t rk, ru;
	int ek, eu;

	errno = 0;
	rk = read(p.k, &vk, sizeof(vk));
	ek = errno;
	errno = 0;
	ru = uepoll_read(p.u, &vu, sizeof(vu));
	eu = errno;
	if (rk != ru || (rk < 0 && ek != eu) || (rk > 0 && vk != vu)) {
		fprintf(stderr, "line %d: read: kernel %zd errno %d val %llu, "
			"uepoll %zd errno %d val %llu\n", line, rk, ek,
			(unsigned long long)vk, ru, eu, (unsigned long long)vu);
		t_failures++;
	}
	return rk > 0 ? vk : 0;
}

static void wr_both(struct pair p, uint64_t v, int line)
{
	ssize_t rk, ru;
	int ek, eu;

	errno = 0;
	rk = write(p.k, &v, sizeof(v));
	ek = errno;
	errno = 0;
	ru = uepoll_write(p.u, &v, sizeof(v));
	eu = errno;
	if (rk != ru || (rk < 0 && ek != eu)) {
		fprintf(stderr, "line %d: write %llu: kernel %zd errno %d, "
			"uepoll %zd errno %d\n", line, (unsigned long long)v,
			rk, ek, ru, eu);
		t_failures++;
	}
}

#define RD(p) rd_both(p, __LINE__)
#define WR(p, v) wr_both(p, v, __LINE__)

static void test_basic(void)
{
	struct pair p = mkpair(5, EFD_NONBLOCK);

	CHECK_EQ(RD(p), 5);
	RD(p); /* EAGAIN on both */
	errno = 0;
	{
		uint64_t v;
		CHECK_ERR(uepoll_read(p.u, &v, sizeof(v)), EAGAIN);
	}
	WR(p, 1);
	WR(p, 2);
	WR(p, 0); /* adding 0 succeeds, changes nothing */
	CHECK_EQ(RD(p), 3);
	/*
	 * Buffers larger than 8 bytes: the kernel accepts them for read, and
	 * for write depending on its version (6.x rejects count != 8), so
	 * compare with the kernel instead of hardcoding.
	 */
	{
		uint64_t bk[2] = { 7, 0 }, bu[2] = { 7, 0 };
		char small[7];
		ssize_t rk, ru;
		int ek, eu;

		errno = 0;
		rk = write(p.k, bk, sizeof(bk));
		ek = errno;
		errno = 0;
		ru = uepoll_write(p.u, bu, sizeof(bu));
		eu = errno;
		CHECK_EQ(ru, rk);
		if (rk < 0)
			CHECK_EQ(eu, ek);
		WR(p, 1);
		bk[0] = bu[0] = 0;
		CHECK_EQ(uepoll_read(p.u, bu, sizeof(bu)), read(p.k, bk, sizeof(bk)));
		CHECK_EQ(bu[0], bk[0]);
		CHECK_ERR(uepoll_read(p.u, small, sizeof(small)), EINVAL);
		CHECK_ERR(read(p.k, small, sizeof(small)), EINVAL);
		CHECK_ERR(uepoll_write(p.u, small, sizeof(small)), EINVAL);
		CHECK_ERR(write(p.k, small, sizeof(small)), EINVAL);
		CHECK_ERR(uepoll_read(p.u, small, 0), EINVAL);
		CHECK_ERR(uepoll_write(p.u, small, 0), EINVAL);
	}
	closepair(p);
}

static void test_semaphore(void)
{
	struct pair p = mkpair(3, EFD_NONBLOCK | EFD_SEMAPHORE);

	CHECK_EQ(RD(p), 1);
	CHECK_EQ(RD(p), 1);
	WR(p, 10);
	for (int i = 0; i < 11; i++)
		CHECK_EQ(RD(p), 1);
	RD(p); /* both EAGAIN */
	closepair(p);
}

static void test_limits(void)
{
	struct pair p = mkpair(0, EFD_NONBLOCK);
	uint64_t v;

	/* 2^64-1 is never a valid value to add. */
	WR(p, 0xffffffffffffffffULL);
	v = 0xffffffffffffffffULL;
	CHECK_ERR(uepoll_write(p.u, &v, sizeof(v)), EINVAL);
	WR(p, EFD_MAX);	/* exactly the maximum fits */
	WR(p, 1);	/* overflow: EAGAIN when nonblocking */
	v = 1;
	CHECK_ERR(uepoll_write(p.u, &v, sizeof(v)), EAGAIN);
	WR(p, 0);	/* adding 0 at the maximum still fits */
	CHECK_EQ(RD(p), EFD_MAX);
	WR(p, EFD_MAX - 1);
	WR(p, 1);
	WR(p, 1);	/* overflow again */
	CHECK_EQ(RD(p), EFD_MAX);
	closepair(p);

	/* Large initval in semaphore mode */
	p = mkpair(0xffffffffu, EFD_NONBLOCK | EFD_SEMAPHORE);
	CHECK_EQ(RD(p), 1);
	WR(p, EFD_MAX - 0xffffffffULL + 1); /* now at the maximum */
	WR(p, 1);
	CHECK_EQ(RD(p), 1);
	WR(p, 1);
	closepair(p);
}

static void test_helpers(void)
{
	int fd = ueventfd(0, EFD_NONBLOCK);
	eventfd_t v = 99;

	REQUIRE(fd >= 0);
	CHECK_ERR(ueventfd_read(fd, &v), EAGAIN);
	CHECK_EQ(ueventfd_write(fd, 40), 0);
	CHECK_EQ(ueventfd_write(fd, 2), 0);
	CHECK_EQ(ueventfd_read(fd, &v), 0);
	CHECK_EQ(v, 42);
	CHECK_ERR(ueventfd_write(fd, 0xffffffffffffffffULL), EINVAL);
	CHECK_EQ(ueventfd_write(fd, EFD_MAX), 0);
	CHECK_ERR(ueventfd_write(fd, 1), EAGAIN);
	CHECK_EQ(ueventfd_read(fd, &v), 0);
	CHECK_EQ(v, EFD_MAX);
	CHECK_EQ(uepoll_close(fd), 0);
}

static void test_flags(void)
{
	int fd, fl;

	CHECK_ERR(eventfd(0, 0x40000000), EINVAL);
	CHECK_ERR(ueventfd(0, 0x40000000), EINVAL);
	CHECK_ERR(eventfd(0, O_RDWR), EINVAL);
	CHECK_ERR(ueventfd(0, O_RDWR), EINVAL);
	CHECK_ERR(ueventfd(0, -1), EINVAL);

	fd = ueventfd(0, EFD_CLOEXEC);
	REQUIRE(fd >= 0);
	fl = fcntl(fd, F_GETFD);
	CHECK(fl >= 0 && (fl & FD_CLOEXEC));
	CHECK_EQ(uepoll_close(fd), 0);

	fd = ueventfd(0, 0);
	REQUIRE(fd >= 0);
	fl = fcntl(fd, F_GETFD);
	CHECK(fl >= 0 && !(fl & FD_CLOEXEC));
	CHECK_EQ(uepoll_close(fd), 0);

	fd = ueventfd(0, EFD_NONBLOCK | EFD_SEMAPHORE | EFD_CLOEXEC);
	REQUIRE(fd >= 0);
	CHECK_EQ(uepoll_close(fd), 0);
}

/* Blocking read woken by a write from another thread, and vice versa. */
struct wake_arg {
	int fd;
	uint64_t val;
	ssize_t ret;
	int err;
	int tid;
	volatile int started;
};

static void *reader(void *p)
{
	struct wake_arg *a = p;

	a->tid = t_gettid();
	__atomic_store_n(&a->started, 1, __ATOMIC_SEQ_CST);
	errno = 0;
	a->ret = uepoll_read(a->fd, &a->val, sizeof(a->val));
	a->err = errno;
	return NULL;
}

static void *writer(void *p)
{
	struct wake_arg *a = p;

	a->tid = t_gettid();
	__atomic_store_n(&a->started, 1, __ATOMIC_SEQ_CST);
	errno = 0;
	a->ret = uepoll_write(a->fd, &a->val, sizeof(a->val));
	a->err = errno;
	return NULL;
}

static int wait_started(struct wake_arg *a)
{
	while (!__atomic_load_n(&a->started, __ATOMIC_SEQ_CST))
		t_sleep_ms(1);
	return t_wait_sleeping(a->tid, 10000);
}

/* Join with a loose upper bound that catches a hang. */
static void test_blocking(void)
{
	struct wake_arg a;
	pthread_t th;
	uint64_t v;
	int fd;

	for (int sem = 0; sem < 2; sem++) {
		fd = ueventfd(0, sem ? EFD_SEMAPHORE : 0);
		REQUIRE(fd >= 0);
		memset(&a, 0, sizeof(a));
		a.fd = fd;
		REQUIRE(pthread_create(&th, NULL, reader, &a) == 0);
		CHECK(wait_started(&a));
		CHECK_EQ(a.ret, 0); /* still blocked */
		CHECK_EQ(ueventfd_write(fd, 9), 0);
		REQUIRE(t_join_within(th, 10000));
		CHECK_EQ(a.ret, 8);
		CHECK_EQ(a.val, sem ? 1 : 9);
		CHECK_EQ(uepoll_close(fd), 0);
	}

	/* Blocking write at the maximum waits until a read makes room. */
	fd = ueventfd(0, 0);
	REQUIRE(fd >= 0);
	CHECK_EQ(ueventfd_write(fd, EFD_MAX - 1), 0);
	memset(&a, 0, sizeof(a));
	a.fd = fd;
	a.val = 5;
	a.ret = -7;
	REQUIRE(pthread_create(&th, NULL, writer, &a) == 0);
	CHECK(wait_started(&a));
	CHECK_EQ(a.ret, -7);
	CHECK_EQ(uepoll_read(fd, &v, sizeof(v)), 8);
	CHECK_EQ(v, EFD_MAX - 1);
	REQUIRE(t_join_within(th, 10000));
	CHECK_EQ(a.ret, 8);
	CHECK_EQ(uepoll_read(fd, &v, sizeof(v)), 8);
	CHECK_EQ(v, 5);
	CHECK_EQ(uepoll_close(fd), 0);
}

/* O_NONBLOCK switched with fcntl() is honoured (uepoll.h: by the next read
 * that would sleep or write that finds the counter full). */
static void test_fcntl_nonblock(void)
{
	struct wake_arg a;
	pthread_t th;
	uint64_t v;
	int fd, k;

	fd = ueventfd(0, 0);
	k = eventfd(0, 0);
	REQUIRE(fd >= 0 && k >= 0);
	CHECK_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
	CHECK_EQ(fcntl(k, F_SETFL, fcntl(k, F_GETFL) | O_NONBLOCK), 0);
	CHECK_ERR(read(k, &v, sizeof(v)), EAGAIN);
	CHECK_ERR(uepoll_read(fd, &v, sizeof(v)), EAGAIN);
	CHECK_EQ(ueventfd_write(fd, EFD_MAX), 0);
	CHECK_ERR(ueventfd_write(fd, 1), EAGAIN);
	CHECK_EQ(uepoll_close(fd), 0);
	close(k);

	/* and the other way: a nonblocking one made blocking */
	fd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(fd >= 0);
	CHECK_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK), 0);
	memset(&a, 0, sizeof(a));
	a.fd = fd;
	REQUIRE(pthread_create(&th, NULL, reader, &a) == 0);
	CHECK(wait_started(&a));
	CHECK_EQ(a.ret, 0);	/* blocked, not EAGAIN */
	CHECK_EQ(ueventfd_write(fd, 4), 0);
	REQUIRE(t_join_within(th, 10000));
	CHECK_EQ(a.ret, 8);
	CHECK_EQ(a.val, 4);
	CHECK_EQ(uepoll_close(fd), 0);
}

static void on_usr1(int sig)
{
	(void)sig;
}

static void test_eintr(void)
{
	struct sigaction sa;
	struct wake_arg a;
	pthread_t th;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1; /* no SA_RESTART */
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);

	/* Blocking read interrupted by a handler. */
	fd = ueventfd(0, 0);
	REQUIRE(fd >= 0);
	memset(&a, 0, sizeof(a));
	a.fd = fd;
	REQUIRE(pthread_create(&th, NULL, reader, &a) == 0);
	CHECK(wait_started(&a));
	pthread_kill(th, SIGUSR1);
	REQUIRE(t_join_within(th, 10000));
	CHECK_EQ(a.ret, -1);
	CHECK_EQ(a.err, EINTR);
	CHECK_EQ(uepoll_close(fd), 0);

	/* Blocking write interrupted by a handler. */
	fd = ueventfd(0, 0);
	REQUIRE(fd >= 0);
	CHECK_EQ(ueventfd_write(fd, EFD_MAX), 0);
	memset(&a, 0, sizeof(a));
	a.fd = fd;
	a.val = 1;
	REQUIRE(pthread_create(&th, NULL, writer, &a) == 0);
	CHECK(wait_started(&a));
	pthread_kill(th, SIGUSR1);
	REQUIRE(t_join_within(th, 10000));
	CHECK_EQ(a.ret, -1);
	CHECK_EQ(a.err, EINTR);
	CHECK_EQ(uepoll_close(fd), 0);

	signal(SIGUSR1, SIG_DFL);
}

/* uepoll_read/uepoll_write/uepoll_close pass kernel fds through. */
static void test_passthrough(void)
{
	int pfd[2];
	char c = 'x';

	REQUIRE(pipe(pfd) == 0);
	CHECK_EQ(uepoll_write(pfd[1], &c, 1), 1);
	c = 0;
	CHECK_EQ(uepoll_read(pfd[0], &c, 1), 1);
	CHECK_EQ(c, 'x');
	CHECK_EQ(uepoll_close(pfd[0]), 0);
	CHECK_EQ(uepoll_close(pfd[1]), 0);
	CHECK_ERR(uepoll_read(pfd[0], &c, 1), EBADF);
	CHECK_ERR(uepoll_write(-1, &c, 1), EBADF);
	CHECK_ERR(uepoll_close(-1), EBADF);
}

int main(void)
{
	t_begin("t_eventfd_semantics");
	t_watchdog(120);
	test_basic();
	test_semaphore();
	test_limits();
	test_helpers();
	test_flags();
	test_blocking();
	test_fcntl_nonblock();
	test_eintr();
	test_passthrough();
	return t_end();
}
