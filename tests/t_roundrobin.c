/*
 * t_roundrobin: EPOLLROUNDROBIN.
 *  - validation: only with EPOLLEXCLUSIVE, only on ADD (EINVAL), after the
 *    fd checks (EBADF first), for ueventfds and kernel fds alike;
 *  - a ueventfd shared by N idle instances (one blocked thread each): N*k
 *    events give exactly k to each; plain EPOLLEXCLUSIVE gives all of them
 *    to the first instance;
 *  - a pipe (a kernel fd) shared the same way: every event reaches exactly
 *    one instance (none lost, none twice) and the spread stays within a
 *    small bound.
 * Before each event the writer waits until every waiter is asleep, so
 * "idle" is what the kernel means by it.
 */
#include "testlib.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#define N 4
#define K 8

struct waiter {
	int ep, src, tid, is_pipe;
	int got, empty;
	pthread_t th;
};

static struct waiter w[N];
static int stopfd;

static void *waiter_main(void *arg)
{
	struct waiter *me = arg;
	struct epoll_event ev;

	__atomic_store_n(&me->tid, t_gettid(), __ATOMIC_SEQ_CST);
	for (;;) {
		if (uepoll_wait(me->ep, &ev, 1, 20000) != 1)
			continue;
		if (ev.data.u64 == 1)
			return NULL;
		if (me->is_pipe) {
			char c;

			if (read(me->src, &c, 1) == 1)
				__atomic_add_fetch(&me->got, 1, __ATOMIC_SEQ_CST);
			else
				__atomic_add_fetch(&me->empty, 1, __ATOMIC_SEQ_CST);
		} else {
			uint64_t v;

			if (ueventfd_read(me->src, &v) == 0)
				__atomic_add_fetch(&me->got, (int)v, __ATOMIC_SEQ_CST);
			else
				__atomic_add_fetch(&me->empty, 1, __ATOMIC_SEQ_CST);
		}
	}
}

static void all_asleep(void)
{
	for (int i = 0; i < N; i++) {
		while (!__atomic_load_n(&w[i].tid, __ATOMIC_SEQ_CST))
			t_sleep_ms(1);
		REQUIRE(t_wait_sleeping(w[i].tid, 10000));
	}
}

static int total(void)
{
	int t = 0;

	for (int i = 0; i < N; i++)
		t += __atomic_load_n(&w[i].got, __ATOMIC_SEQ_CST);
	return t;
}

/* Run N*K events through a source shared by N instances; fill got[]. */
static void run(int is_pipe, uint32_t flags, int got[N], int *empty)
{
	int p[2] = { -1, -1 }, src, wr;
	struct epoll_event ev;

	if (is_pipe) {
		REQUIRE(pipe2(p, O_NONBLOCK) == 0);
		src = p[0];
		wr = p[1];
	} else {
		src = ueventfd(0, EFD_NONBLOCK);
		REQUIRE(src >= 0);
		wr = src;
	}
	stopfd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(stopfd >= 0);
	for (int i = 0; i < N; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].ep = uepoll_create1(0);
		w[i].src = src;
		w[i].is_pipe = is_pipe;
		REQUIRE(w[i].ep >= 0);
		ev.events = EPOLLIN | flags;
		ev.data.u64 = 0;
		REQUIRE(uepoll_ctl(w[i].ep, EPOLL_CTL_ADD, src, &ev) == 0);
		ev.events = EPOLLIN;
		ev.data.u64 = 1;
		REQUIRE(uepoll_ctl(w[i].ep, EPOLL_CTL_ADD, stopfd, &ev) == 0);
		REQUIRE(pthread_create(&w[i].th, NULL, waiter_main, &w[i]) == 0);
	}
	for (int e = 0; e < N * K; e++) {
		all_asleep();
		if (is_pipe)
			CHECK_EQ(write(wr, "x", 1), 1);
		else
			CHECK_EQ(ueventfd_write(wr, 1), 0);
		/* this event is taken before the next one is sent */
		for (int t = 0; t < 10000 && total() < e + 1; t++)
			t_sleep_ms(1);
		CHECK_EQ(total(), e + 1);
	}
	CHECK_EQ(ueventfd_write(stopfd, 1), 0);
	*empty = 0;
	for (int i = 0; i < N; i++) {
		pthread_join(w[i].th, NULL);
		got[i] = w[i].got;
		*empty += w[i].empty;
		CHECK_EQ(uepoll_close(w[i].ep), 0);
	}
	CHECK_EQ(uepoll_close(stopfd), 0);
	if (is_pipe) {
		close(p[0]);
		close(p[1]);
	} else {
		CHECK_EQ(uepoll_close(src), 0);
	}
}

static void test_validation(void)
{
	int ep = uepoll_create1(0), efd = ueventfd(0, 0), p[2];
	struct epoll_event ev = { .data.u64 = 0 };

	REQUIRE(ep >= 0 && efd >= 0 && pipe(p) == 0);
	CHECK(EPOLLROUNDROBIN != 0);
	/* collides with no flag of <sys/epoll.h> */
	CHECK_EQ(EPOLLROUNDROBIN & (EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLERR |
				    EPOLLHUP | EPOLLRDNORM | EPOLLRDBAND |
				    EPOLLWRNORM | EPOLLWRBAND | EPOLLMSG |
				    EPOLLRDHUP | EPOLLEXCLUSIVE | EPOLLWAKEUP |
				    EPOLLONESHOT | EPOLLET | (1u << 27)),
		 0);
	for (int k = 0; k < 2; k++) {
		int fd = k ? p[0] : efd;

		ev.events = EPOLLIN | EPOLLROUNDROBIN;
		CHECK_ERR(uepoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), EINVAL);
		ev.events = EPOLLIN | EPOLLROUNDROBIN | EPOLLEXCLUSIVE;
		CHECK_ERR(uepoll_ctl(ep, EPOLL_CTL_ADD, 1000000, &ev), EBADF);
		CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
		CHECK_ERR(uepoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), EEXIST);
		CHECK_ERR(uepoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev), EINVAL);
		ev.events = EPOLLIN | EPOLLROUNDROBIN;
		CHECK_ERR(uepoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev), EINVAL);
		/* EPOLLEXCLUSIVE's own rules come before EEXIST */
		ev.events = EPOLLIN | EPOLLROUNDROBIN | EPOLLEXCLUSIVE |
			    EPOLLONESHOT;
		CHECK_ERR(uepoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), EINVAL);
		CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL), 0);
		CHECK_ERR(uepoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), EINVAL);
		/* a round-robin registration reports the user's data */
		ev.events = EPOLLIN | EPOLLROUNDROBIN | EPOLLEXCLUSIVE;
		ev.data.u64 = 77;
		CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
		if (k)
			CHECK_EQ(write(p[1], "y", 1), 1);
		else
			CHECK_EQ(ueventfd_write(efd, 1), 0);
		CHECK_EQ(uepoll_wait(ep, &ev, 1, 1000), 1);
		CHECK_EQ(ev.data.u64, 77);
		CHECK_EQ(ev.events, EPOLLIN);
		CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL), 0);
	}
	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_EQ(uepoll_close(efd), 0);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	int got[N], empty, min, max;

	t_begin("t_roundrobin");
	t_watchdog(240);
	test_validation();

	/* ueventfd, round robin: exactly K each */
	run(0, EPOLLEXCLUSIVE | EPOLLROUNDROBIN, got, &empty);
	for (int i = 0; i < N; i++)
		CHECK_EQ(got[i], K);
	CHECK_EQ(empty, 0);

	/* ueventfd, plain exclusive: the first idle instance takes all */
	run(0, EPOLLEXCLUSIVE, got, &empty);
	CHECK_EQ(got[0], N * K);
	CHECK_EQ(empty, 0);

	/* pipe (kernel fd), round robin: none lost, none twice, spread small */
	run(1, EPOLLEXCLUSIVE | EPOLLROUNDROBIN, got, &empty);
	min = max = got[0];
	for (int i = 0; i < N; i++) {
		printf("pipe instance %d: %d events\n", i, got[i]);
		min = got[i] < min ? got[i] : min;
		max = got[i] > max ? got[i] : max;
	}
	CHECK_EQ(empty, 0);
	CHECK(max - min <= 2);
	return t_end();
}
