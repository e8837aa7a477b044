/*
 * t_close_inflight: uepoll_close() frees the fd number at once, even while
 * another thread is inside a call on that fd, as close(2) does; and uepoll
 * never later closes, writes or waits on a number it no longer owns.
 *
 * Instances (each run on the kernel's epoll too, as the reference; uepoll in
 * the default LIFO mode with one waiter, in UEPOLL_WAKE_FIFO mode with two
 * waiters, and with a batching policy (min_wait_us) with one waiter).  The
 * instance holds an edge-triggered ueventfd (eventfd for the kernel) and an
 * idle pipe.  Its waiters block in uepoll_wait(ep, ev, 8, 500) (2000 when
 * an event is to come); then
 * uepoll_close(ep) returns 0, and at once:
 *  (a) fcntl(ep, F_GETFD) fails with EBADF, and fcntl(x, F_DUPFD, ep)
 *      returns ep (the lowest free number >= ep is ep itself);
 *  (b) with that number now the write end of a pipe of the program: after
 *      the waiters returned, the number is still open, write(ep, "x", 1)
 *      returns 1 and the pipe's read end holds exactly "x";
 *      with the number now a foreign kernel epoll (holding a ready pipe,
 *      data 99) instead: the waiters never report its event, and after they
 *      returned it is still open and still reports its event;
 *      with an event on the ueventfd member written after the close: as in
 *      the kernel (which keeps the epoll alive while a thread waits in it),
 *      exactly one event (data 7) is returned in all, and the others return
 *      0 at their timeout; without one, every waiter returns 0;
 *  two pipes opened after the close (which may take other numbers uepoll
 *  freed) get no byte from uepoll and stay open.
 * ueventfd: a thread blocked in uepoll_read() (blocking, counter 0); then
 * uepoll_close(efd) returns 0 and at once fcntl(efd, F_GETFD) fails with
 * EBADF; the read does not return (the kernel's blocked read on a closed
 * eventfd never does) and is ended by pthread_cancel (uepoll_read is a
 * cancellation point, as read(2) is).  With a pipe's write end dup'ed onto
 * the number before the cancel, the pipe gets exactly the bytes the test
 * wrote through the number (write and uepoll_write), nothing else (no
 * 8-byte eventfd signal), and stays open after the reader is gone; without
 * one, the number is still free after the join (nothing leaked).  Same on
 * the kernel's eventfd as the reference.
 * At the end no fd is left open (t_end), all threads joined.
 */
#include "testlib.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#define WAIT_MS 500
/* with an event coming: it ends the wait, a long timeout costs nothing and
 * keeps a slow machine from timing out before the event */
#define WAIT_EVENT_MS 2000
#define MEMBER_DATA 7
#define IDLE_DATA 8
#define FOREIGN_DATA 99

enum mode { M_KERNEL, M_LIFO, M_FIFO, M_BATCH };
enum take { T_PIPE, T_PIPE_EVENT, T_EPOLL };

static const char *mode_name[] = { "kernel epoll", "uepoll lifo",
				   "uepoll fifo x2", "uepoll batch" };
static const char *take_name[] = { "pipe onto number",
				   "pipe onto number + member event",
				   "foreign epoll onto number" };

struct waiter {
	int ep, kernel, timeout;
	int tid, started;
	int n, err;
	struct epoll_event ev[8];
	pthread_t th;
};

static void *waiter_main(void *p)
{
	struct waiter *w = p;

	__atomic_store_n(&w->tid, t_gettid(), __ATOMIC_SEQ_CST);
	__atomic_store_n(&w->started, 1, __ATOMIC_SEQ_CST);
	errno = 0;
	w->n = w->kernel ? epoll_wait(w->ep, w->ev, 8, w->timeout)
			 : uepoll_wait(w->ep, w->ev, 8, w->timeout);
	w->err = errno;
	return NULL;
}

static int add(int kernel, int ep, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return kernel ? epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)
		      : uepoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* Read everything the pipe holds (non-blocking) into buf; returns length. */
static int drain(int rfd, char *buf, int cap)
{
	int len = 0;
	ssize_t r;

	while (len < cap && (r = read(rfd, buf + len, (size_t)(cap - len))) > 0)
		len += (int)r;
	return len;
}

/* Make `target` appear at number `num` (free if close worked). */
static void take_number(int target, int num)
{
	int d = fcntl(target, F_DUPFD_CLOEXEC, num);

	CHECK_EQ(d, num); /* (a): num was the lowest free number >= num */
	if (d != num) {
		if (d >= 0)
			close(d);
		/* The number is still held by uepoll: dup2 over it anyway, as
		 * a program that relies on close(2) semantics may. */
		REQUIRE(dup2(target, num) == num);
		REQUIRE(fcntl(num, F_SETFD, FD_CLOEXEC) == 0);
	}
}

static void inst_case(enum mode mode, enum take take)
{
	int kernel = mode == M_KERNEL, nw = mode == M_FIFO ? 2 : 1;
	struct waiter w[2];
	int ep, member, idle[2], tp[2] = { -1, -1 }, fe = -1, fp[2] = { -1, -1 };
	int by[2][2], total = 0;
	char buf[64];

	printf("instance: %s, %s\n", mode_name[mode], take_name[take]);
	switch (mode) {
	case M_KERNEL:
		ep = epoll_create1(EPOLL_CLOEXEC);
		break;
	case M_FIFO:
		ep = uepoll_create2(EPOLL_CLOEXEC, UEPOLL_WAKE_FIFO);
		break;
	default:
		ep = uepoll_create1(EPOLL_CLOEXEC);
		break;
	}
	REQUIRE(ep >= 0);
	if (mode == M_BATCH) {
		struct uepoll_batch b = { .min_wait_us = 100000 };

		REQUIRE(uepoll_batch(ep, &b, NULL) == 0);
	}
	member = kernel ? eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)
			: ueventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	REQUIRE(member >= 0);
	REQUIRE(pipe2(idle, O_NONBLOCK | O_CLOEXEC) == 0);
	REQUIRE(add(kernel, ep, member, EPOLLIN | EPOLLET, MEMBER_DATA) == 0);
	REQUIRE(add(kernel, ep, idle[0], EPOLLIN, IDLE_DATA) == 0);
	if (take == T_EPOLL) {
		struct epoll_event ev = { .events = EPOLLIN,
					  .data.u64 = FOREIGN_DATA };

		fe = epoll_create1(EPOLL_CLOEXEC);
		REQUIRE(fe >= 0);
		REQUIRE(pipe2(fp, O_NONBLOCK | O_CLOEXEC) == 0);
		REQUIRE(write(fp[1], "f", 1) == 1);
		REQUIRE(epoll_ctl(fe, EPOLL_CTL_ADD, fp[0], &ev) == 0);
	} else {
		REQUIRE(pipe2(tp, O_NONBLOCK | O_CLOEXEC) == 0);
	}

	memset(w, 0, sizeof(w));
	for (int i = 0; i < nw; i++) {
		w[i].ep = ep;
		w[i].kernel = kernel;
		w[i].timeout = take == T_PIPE_EVENT ? WAIT_EVENT_MS : WAIT_MS;
		REQUIRE(pthread_create(&w[i].th, NULL, waiter_main, &w[i]) == 0);
		while (!__atomic_load_n(&w[i].started, __ATOMIC_SEQ_CST))
			t_sleep_ms(1);
		CHECK(t_wait_sleeping(w[i].tid, 10000));
	}

	/* close while the waiters are inside */
	CHECK_EQ(kernel ? close(ep) : uepoll_close(ep), 0);
	/* (a) the number is free at once */
	errno = 0;
	CHECK(fcntl(ep, F_GETFD) == -1 && errno == EBADF);
	take_number(take == T_EPOLL ? fe : tp[1], ep);
	/* more numbers taken: any other number uepoll freed may land here */
	for (int i = 0; i < 2; i++)
		REQUIRE(pipe2(by[i], O_NONBLOCK | O_CLOEXEC) == 0);
	if (take == T_PIPE_EVENT) {
		if (kernel)
			CHECK_EQ(eventfd_write(member, 1), 0);
		else
			CHECK_EQ(ueventfd_write(member, 1), 0);
	}

	for (int i = 0; i < nw; i++)
		REQUIRE(t_join_within(w[i].th, WAIT_EVENT_MS + 5000));
	for (int i = 0; i < nw; i++) {
		printf("  waiter %d: returned %d", i, w[i].n);
		if (w[i].n < 0)
			printf(" errno %d (%s)", w[i].err, strerror(w[i].err));
		for (int j = 0; j < w[i].n; j++)
			printf(" [data %llu events 0x%x]",
			       (unsigned long long)w[i].ev[j].data.u64,
			       w[i].ev[j].events);
		printf("\n");
		/* the kernel's waiter returns normally, on the old epoll */
		CHECK(w[i].n >= 0);
		for (int j = 0; j < w[i].n; j++) {
			CHECK_EQ(w[i].ev[j].data.u64, MEMBER_DATA);
			total++;
		}
	}
	CHECK_EQ(total, take == T_PIPE_EVENT ? 1 : 0);

	/* (b) the number is the program's and stays so */
	errno = 0;
	CHECK(fcntl(ep, F_GETFD) != -1);
	if (take == T_EPOLL) {
		struct epoll_event ev[4];
		int n = epoll_wait(ep, ev, 4, 0);

		CHECK_EQ(n, 1);
		if (n == 1)
			CHECK_EQ(ev[0].data.u64, FOREIGN_DATA);
	} else {
		int len;

		errno = 0;
		CHECK_EQ(write(ep, "x", 1), 1);
		len = drain(tp[0], buf, (int)sizeof(buf));
		CHECK_EQ(len, 1);
		if (len >= 1)
			CHECK_EQ(buf[0], 'x');
	}
	/* the bystanders got nothing and are intact */
	for (int i = 0; i < 2; i++) {
		int len = drain(by[i][0], buf, (int)sizeof(buf));

		CHECK_EQ(len, 0);
		errno = 0;
		CHECK_EQ(write(by[i][1], "b", 1), 1);
		CHECK_EQ(drain(by[i][0], buf, (int)sizeof(buf)), 1);
		close(by[i][0]);
		close(by[i][1]);
	}

	close(ep); /* the program's copy at the number */
	if (kernel)
		close(member);
	else
		CHECK_EQ(uepoll_close(member), 0);
	close(idle[0]);
	close(idle[1]);
	if (take == T_EPOLL) {
		close(fe);
		close(fp[0]);
		close(fp[1]);
	} else {
		close(tp[0]);
		close(tp[1]);
	}
}

/*
 * ThreadSanitizer reports a close of an fd that another thread is using as
 * a race: for the kernel's objects that is the behaviour under test (the
 * reference runs), and a report, even a suppressed one, starts its
 * symbolizer, whose pipes the fd-leak check would then count.  So the
 * ThreadSanitizer build runs uepoll's cases only (uepoll's waiters sleep on
 * a private fd, and ThreadSanitizer sees no race in them); the other builds
 * run the kernel's too.
 */
#ifdef T_TSAN
static const int t_tsan = 1;
#else
static const int t_tsan = 0;
#endif

/* ---- a ueventfd closed under a blocked uepoll_read ---- */

struct reader {
	int fd, kernel;
	int tid, started, returned;
	ssize_t r;
	int err;
	pthread_t th;
};

static void *reader_main(void *p)
{
	struct reader *rd = p;
	uint64_t v = 0;
	ssize_t r;

	__atomic_store_n(&rd->tid, t_gettid(), __ATOMIC_SEQ_CST);
	__atomic_store_n(&rd->started, 1, __ATOMIC_SEQ_CST);
	errno = 0;
	r = rd->kernel ? read(rd->fd, &v, sizeof(v))
		       : uepoll_read(rd->fd, &v, sizeof(v));
	rd->r = r;
	rd->err = errno;
	__atomic_store_n(&rd->returned, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void read_case(int kernel, int with_pipe)
{
	struct reader rd;
	int tp[2] = { -1, -1 }, efd;
	char buf[64];

	printf("blocked read: %s, %s\n", kernel ? "kernel eventfd" : "ueventfd",
	       with_pipe ? "pipe onto number" : "number left free");
	efd = kernel ? eventfd(0, EFD_CLOEXEC) : ueventfd(0, EFD_CLOEXEC);
	REQUIRE(efd >= 0);
	if (with_pipe)
		REQUIRE(pipe2(tp, O_NONBLOCK | O_CLOEXEC) == 0);
	memset(&rd, 0, sizeof(rd));
	rd.fd = efd;
	rd.kernel = kernel;
	REQUIRE(pthread_create(&rd.th, NULL, reader_main, &rd) == 0);
	while (!__atomic_load_n(&rd.started, __ATOMIC_SEQ_CST))
		t_sleep_ms(1);
	CHECK(t_wait_sleeping(rd.tid, 10000));

	CHECK_EQ(kernel ? close(efd) : uepoll_close(efd), 0);
	errno = 0;
	CHECK(fcntl(efd, F_GETFD) == -1 && errno == EBADF);
	if (with_pipe) {
		take_number(tp[1], efd);
		errno = 0;
		CHECK_EQ(write(efd, "ab", 2), 2);
		CHECK_EQ(uepoll_write(efd, "cd", 2), 2);
	}
	t_sleep_ms(50);
	/* as in the kernel, the read is still blocked */
	if (__atomic_load_n(&rd.returned, __ATOMIC_SEQ_CST)) {
		fprintf(stderr, "%s:%d: blocked read returned %zd errno %d (%s) after close\n",
			__FILE__, __LINE__, rd.r, rd.err, strerror(rd.err));
		t_failures++;
	}
	REQUIRE(pthread_cancel(rd.th) == 0);
	REQUIRE(t_join_within(rd.th, 5000));
	t_sleep_ms(20);

	if (with_pipe) {
		int len;

		errno = 0;
		CHECK(fcntl(efd, F_GETFD) != -1);
		errno = 0;
		CHECK_EQ(write(efd, "e", 1), 1);
		len = drain(tp[0], buf, (int)sizeof(buf) - 1);
		buf[len < 0 ? 0 : len] = 0;
		printf("  pipe got %d bytes\n", len);
		CHECK_EQ(len, 5);
		CHECK(len == 5 && memcmp(buf, "abcde", 5) == 0);
		close(efd);
		close(tp[0]);
		close(tp[1]);
	} else {
		/* nothing kept the number after the reader went */
		errno = 0;
		CHECK(fcntl(efd, F_GETFD) == -1 && errno == EBADF);
	}
}

int main(void)
{
	t_begin("t_close_inflight");
	t_watchdog(90);
	setvbuf(stdout, NULL, _IONBF, 0);
	for (int t = T_PIPE; t <= T_EPOLL; t++)
		for (int m = M_KERNEL; m <= M_BATCH; m++)
			if (!(t_tsan && m == M_KERNEL))
				inst_case((enum mode)m, (enum take)t);
	for (int k = 1; k >= 0; k--)
		for (int p = 1; p >= 0; p--)
			if (!(t_tsan && k))
				read_case(k, p);
	return t_end();
}
