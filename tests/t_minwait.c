/*
 * t_minwait: the case of proposal 002 (EPOLL_CTL_MIN_WAIT, Axboe 2022).
 * Two events come 10 ms apart to a waiter blocked with an infinite timeout.
 *  - With UEPOLL_CTL_MIN_WAIT set (the ctl returns the old value), one wait
 *    (maxevents 8, so that the array does not fill) returns both, in the
 *    order they came, and not before the window closed
 *    (the rule's lower bound; the upper bound is a loose one that catches a
 *    hang).
 *  - Without it, the first wait returns the first event alone: the second
 *    is sent only after the producer saw that wait return, so this is exact.
 * For two pipes (kernel fds, level-triggered as in the proposal), two
 * ueventfds, and one of each.
 */
#include "testlib.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#define WINDOW_US 1000000 /* a second: the producer's 20 ms fit many times */

enum kind { K_PIPES, K_EFDS, K_MIXED };

struct src {
	int rfd, wfd; /* a ueventfd: both the same */
	int efd;
};

struct prod {
	struct src s[2];
	_Atomic int returned; /* the consumer's first wait returned */
	int handshake;	      /* send the second only after that */
};

static void src_open(struct src *s, int efd)
{
	int p[2];

	if (efd) {
		s->rfd = s->wfd = ueventfd(0, EFD_NONBLOCK);
		REQUIRE(s->rfd >= 0);
	} else {
		REQUIRE(pipe(p) == 0);
		s->rfd = p[0];
		s->wfd = p[1];
	}
	s->efd = efd;
}

static void src_fire(const struct src *s)
{
	if (s->efd)
		CHECK_EQ(ueventfd_write(s->wfd, 1), 0);
	else
		CHECK_EQ(write(s->wfd, "x", 1), 1);
}

static void src_close(struct src *s)
{
	uepoll_close(s->rfd);
	if (!s->efd)
		close(s->wfd);
}

static void *producer(void *arg)
{
	struct prod *pr = arg;

	t_sleep_ms(10);
	src_fire(&pr->s[0]);
	if (pr->handshake) {
		while (!atomic_load(&pr->returned))
			t_sleep_ms(1);
	} else {
		t_sleep_ms(10);
	}
	src_fire(&pr->s[1]);
	return NULL;
}

static void run(enum kind k, int minwait)
{
	struct prod pr = { .handshake = !minwait };
	struct epoll_event ev = { .events = EPOLLIN }, out[8];
	int ep = uepoll_create1(0), n;
	uint64_t t0, dt;
	pthread_t th;

	REQUIRE(ep >= 0);
	src_open(&pr.s[0], k == K_EFDS);
	src_open(&pr.s[1], k != K_PIPES);
	for (int i = 0; i < 2; i++) {
		ev.data.u64 = 100 + (uint64_t)i;
		REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, pr.s[i].rfd, &ev) == 0);
	}
	ev.data.u64 = minwait ? WINDOW_US : 0;
	/* The old value comes back: 0 at first, then what was set. */
	CHECK_EQ(uepoll_ctl(ep, UEPOLL_CTL_MIN_WAIT, -1, &ev), 0);
	CHECK_EQ(uepoll_ctl(ep, UEPOLL_CTL_MIN_WAIT, -1, &ev), ev.data.u64);

	REQUIRE(pthread_create(&th, NULL, producer, &pr) == 0);
	t0 = t_now_ns();
	/* maxevents above 2: a full array would end the wait (rule 1). */
	n = uepoll_wait(ep, out, 8, -1);
	dt = t_now_ns() - t0;
	atomic_store(&pr.returned, 1);
	if (minwait) {
		CHECK_EQ(n, 2);
		CHECK_EQ(out[0].data.u64, 100);
		CHECK_EQ(out[1].data.u64, 101);
		CHECK(dt >= (uint64_t)WINDOW_US * 1000);
		CHECK(dt < 30000000000ull);
	} else {
		CHECK_EQ(n, 1);
		CHECK_EQ(out[0].data.u64, 100);
		/* ...and the second comes to the next wait (the first
		 * source, level-triggered and unread, with it). */
		CHECK(t_join_within(th, 10000));
		n = uepoll_wait(ep, out, 8, 10000);
		CHECK_EQ(n, 2);
		t_sort_events(out, n > 0 ? n : 0);
		CHECK_EQ(out[1].data.u64, 101);
	}
	if (minwait)
		CHECK(t_join_within(th, 10000));
	CHECK_EQ(uepoll_close(ep), 0);
	src_close(&pr.s[0]);
	src_close(&pr.s[1]);
}

int main(void)
{
	t_begin("t_minwait");
	t_watchdog(120);
	for (enum kind k = K_PIPES; k <= K_MIXED; k++) {
		run(k, 1);
		run(k, 0);
	}
	return t_end();
}
