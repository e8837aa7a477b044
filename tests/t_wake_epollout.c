/*
 * t_wake_epollout: a thread blocked in a wait on an EPOLLOUT-only
 * registration is woken by the call that makes room, on every source kind
 * (a ueventfd, a NOPOLL one, a kernel pipe), as on the kernel (issue 36:
 * QUIET looking at EPOLLIN only survived the whole suite).
 *
 * Each source is made full (a counter at its maximum, a pipe filled until
 * EAGAIN) and registered EPOLLOUT only; a thread waits with no timeout,
 * found asleep in its system call (/proc, no clock); then the main thread
 * reads.  The waiter must return the one EPOLLOUT event; a lost wakeup is a
 * hang, which the watchdog turns into a failure.
 */
#include "testlib.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "uepoll.h"

struct sys {
	const char *name;
	bool kernel;
};

enum kind { K_EFD, K_EFD_NOPOLL, K_PIPE, K_N };
static const char *const KIND[K_N] = { "ueventfd", "ueventfd NOPOLL",
				       "pipe" };

struct waiter {
	pthread_t th;
	const struct sys *s;
	int ep;
	_Atomic int tid;
	int r;
	struct epoll_event ev[4];
};

static void *waiter_fn(void *arg)
{
	struct waiter *w = arg;

	atomic_store(&w->tid, t_gettid());
	w->r = w->s->kernel ? epoll_wait(w->ep, w->ev, 4, -1)
			    : uepoll_wait(w->ep, w->ev, 4, -1);
	return NULL;
}

/* The source, full: wfd is the end registered EPOLLOUT, rfd the one the
 * main thread reads to make room. */
static void make_full(const struct sys *s, enum kind k, int *wfd, int *rfd)
{
	uint64_t v = 0xfffffffffffffffeull;
	int p[2];

	if (k == K_PIPE) {
		char buf[4096] = { 0 };

		REQUIRE(pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0);
		while (write(p[1], buf, sizeof(buf)) > 0)
			;
		REQUIRE(errno == EAGAIN);
		*rfd = p[0];
		*wfd = p[1];
		return;
	}
	*wfd = *rfd = s->kernel ? eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)
				: ueventfd(0, EFD_NONBLOCK | EFD_CLOEXEC |
						      (k == K_EFD_NOPOLL ?
							       UEVENTFD_NOPOLL :
							       0));
	REQUIRE(*wfd >= 0);
	REQUIRE((s->kernel ? write(*wfd, &v, 8) : uepoll_write(*wfd, &v, 8)) ==
		8);
}

static void drain(const struct sys *s, enum kind k, int rfd)
{
	char buf[4096];

	if (k == K_PIPE) {
		while (read(rfd, buf, sizeof(buf)) > 0)
			;
		return;
	}
	CHECK_EQ(s->kernel ? read(rfd, buf, 8) : uepoll_read(rfd, buf, 8), 8);
}

static void run(const struct sys *s, enum kind k)
{
	struct epoll_event ev = { .events = EPOLLOUT, .data.u64 = 7 };
	struct waiter w = { .s = s };
	int wfd, rfd;

	printf("%s: %s\n", s->name, KIND[k]);
	w.ep = s->kernel ? epoll_create1(EPOLL_CLOEXEC)
			 : uepoll_create1(EPOLL_CLOEXEC);
	REQUIRE(w.ep >= 0);
	make_full(s, k, &wfd, &rfd);
	CHECK_EQ(s->kernel ? epoll_ctl(w.ep, EPOLL_CTL_ADD, wfd, &ev)
			   : uepoll_ctl(w.ep, EPOLL_CTL_ADD, wfd, &ev),
		 0);
	REQUIRE(pthread_create(&w.th, NULL, waiter_fn, &w) == 0);
	while (!atomic_load(&w.tid))
		sched_yield();
	/* Asleep in its call (a wait that returned at once would be a bug
	 * of its own: the source is full). */
	CHECK(t_blocked_in(atomic_load(&w.tid), 10000) >= 0);
	drain(s, k, rfd);
	REQUIRE(pthread_join(w.th, NULL) == 0);
	CHECK_EQ(w.r, 1);
	CHECK_EQ(w.ev[0].events, EPOLLOUT);
	CHECK_EQ(w.ev[0].data.u64, 7);
	if (k == K_PIPE) {
		close(rfd);
		close(wfd);
	} else {
		CHECK_EQ(s->kernel ? close(wfd) : uepoll_close(wfd), 0);
	}
	CHECK_EQ(s->kernel ? close(w.ep) : uepoll_close(w.ep), 0);
}

int main(void)
{
	static const struct sys K = { "kernel", true }, U = { "uepoll", false };

	t_begin("t_wake_epollout");
	t_watchdog(120);
	for (int k = 0; k < K_N; k++) {
		run(&K, k);
		run(&U, k);
	}
	return t_end();
}
