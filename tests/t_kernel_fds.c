/*
 * t_kernel_fds: kernel fds inside a uepoll instance (pipes, a socketpair with
 * EPOLLRDHUP, timerfd, signalfd, a kernel epoll) behave as inside a kernel
 * epoll.  Each scenario is run twice, once with epoll_* and once with
 * uepoll_*, recording a transcript of every call's result and returned
 * events; the transcripts must be identical.
 *
 * Then a waiter blocked on an instance holding a ueventfd and a pipe is woken
 * by either from another thread, and does not spin while it waits.
 */
#include "testlib.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

struct ops {
	int (*create1)(int);
	int (*ctl)(int, int, int, struct epoll_event *);
	int (*wait)(int, struct epoll_event *, int, int);
	int (*close)(int);
};

static int k_close(int fd)
{
	return close(fd);
}

static const struct ops kops = { epoll_create1, epoll_ctl, epoll_wait, k_close };
static const struct ops uops = { uepoll_create1, uepoll_ctl, uepoll_wait,
				 uepoll_close };

/* Transcript: a flat list of numbers. */
struct tr {
	long long v[512];
	int n;
};

static void rec(struct tr *t, long long x)
{
	if (t->n < 512)
		t->v[t->n++] = x;
}

static void rec_call(struct tr *t, int r)
{
	rec(t, r);
	if (r < 0)
		rec(t, errno);
}

static void ctl(const struct ops *o, struct tr *t, int ep, int op, int fd,
		uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	rec_call(t, o->ctl(ep, op, fd, &ev));
}

static void wait_rec(const struct ops *o, struct tr *t, int ep, int timeout)
{
	struct epoll_event ev[16];
	int n = o->wait(ep, ev, 16, timeout);

	rec_call(t, n);
	for (int i = 0; i < n; i++) {
		rec(t, ev[i].events);
		rec(t, (long long)ev[i].data.u64);
	}
}

static void sc_pipe(const struct ops *o, struct tr *t)
{
	int ep = o->create1(0), p[2];
	char buf[8];

	REQUIRE(ep >= 0);
	REQUIRE(pipe2(p, O_NONBLOCK) == 0);
	ctl(o, t, ep, EPOLL_CTL_ADD, p[0], EPOLLIN | EPOLLRDHUP, 1);
	ctl(o, t, ep, EPOLL_CTL_ADD, p[1], EPOLLOUT, 2);
	wait_rec(o, t, ep, 0);
	rec(t, write(p[1], "ab", 2));
	wait_rec(o, t, ep, 0);
	ctl(o, t, ep, EPOLL_CTL_MOD, p[0], EPOLLIN | EPOLLET, 3);
	wait_rec(o, t, ep, 0);
	wait_rec(o, t, ep, 0);
	rec(t, write(p[1], "c", 1));
	wait_rec(o, t, ep, 0);
	ctl(o, t, ep, EPOLL_CTL_DEL, p[1], 0, 0);
	rec(t, close(p[1]));	/* reader sees HUP */
	wait_rec(o, t, ep, 0);
	ctl(o, t, ep, EPOLL_CTL_MOD, p[0], EPOLLIN | EPOLLONESHOT, 4);
	wait_rec(o, t, ep, 0);
	wait_rec(o, t, ep, 0);
	rec(t, read(p[0], buf, sizeof(buf)));
	ctl(o, t, ep, EPOLL_CTL_MOD, p[0], EPOLLIN, 5);
	wait_rec(o, t, ep, 0);	/* EPOLLHUP only */
	rec(t, close(p[0]));
	wait_rec(o, t, ep, 0);	/* closed: gone */
	rec(t, o->close(ep));
}

static void sc_socket(const struct ops *o, struct tr *t)
{
	int ep = o->create1(0), s[2];
	char buf[8];

	REQUIRE(ep >= 0);
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s) == 0);
	ctl(o, t, ep, EPOLL_CTL_ADD, s[0], EPOLLIN | EPOLLRDHUP | EPOLLET, 1);
	ctl(o, t, ep, EPOLL_CTL_ADD, s[1], EPOLLIN | EPOLLOUT | EPOLLRDHUP, 2);
	wait_rec(o, t, ep, 0);
	wait_rec(o, t, ep, 0);
	rec(t, write(s[1], "hi", 2));
	wait_rec(o, t, ep, 0);
	rec(t, shutdown(s[1], SHUT_WR));
	wait_rec(o, t, ep, 0);
	rec(t, read(s[0], buf, sizeof(buf)));
	wait_rec(o, t, ep, 0);
	rec(t, shutdown(s[0], SHUT_WR));
	wait_rec(o, t, ep, 0);
	ctl(o, t, ep, EPOLL_CTL_MOD, s[0], EPOLLIN | EPOLLRDHUP | EPOLLPRI, 3);
	wait_rec(o, t, ep, 0);
	rec(t, close(s[1]));
	wait_rec(o, t, ep, 0);
	rec(t, close(s[0]));
	rec(t, o->close(ep));
}

static void sc_timerfd(const struct ops *o, struct tr *t)
{
	int ep = o->create1(0), tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	struct itimerspec its = { { 0, 0 }, { 0, 2000000 } };
	uint64_t ticks;

	REQUIRE(ep >= 0 && tfd >= 0);
	ctl(o, t, ep, EPOLL_CTL_ADD, tfd, EPOLLIN, 7);
	wait_rec(o, t, ep, 0);
	rec(t, timerfd_settime(tfd, 0, &its, NULL));
	wait_rec(o, t, ep, 10000);	/* blocks until the timer fires */
	wait_rec(o, t, ep, 0);
	rec(t, read(tfd, &ticks, sizeof(ticks)));
	rec(t, ticks >= 1);
	wait_rec(o, t, ep, 0);
	rec(t, close(tfd));
	rec(t, o->close(ep));
}

static void sc_signalfd(const struct ops *o, struct tr *t)
{
	int ep = o->create1(0), sfd;
	struct signalfd_siginfo si;
	sigset_t ss;

	REQUIRE(ep >= 0);
	sigemptyset(&ss);
	sigaddset(&ss, SIGUSR2);
	REQUIRE(pthread_sigmask(SIG_BLOCK, &ss, NULL) == 0);
	sfd = signalfd(-1, &ss, SFD_NONBLOCK);
	REQUIRE(sfd >= 0);
	ctl(o, t, ep, EPOLL_CTL_ADD, sfd, EPOLLIN, 9);
	wait_rec(o, t, ep, 0);
	rec(t, kill(getpid(), SIGUSR2));
	wait_rec(o, t, ep, 10000);
	rec(t, read(sfd, &si, sizeof(si)));
	rec(t, si.ssi_signo);
	wait_rec(o, t, ep, 0);
	rec(t, close(sfd));
	rec(t, o->close(ep));
	REQUIRE(pthread_sigmask(SIG_UNBLOCK, &ss, NULL) == 0);
}

static void sc_kernel_epoll(const struct ops *o, struct tr *t)
{
	int ep = o->create1(0), kep = epoll_create1(0), p[2];
	char c;

	REQUIRE(ep >= 0 && kep >= 0);
	REQUIRE(pipe2(p, O_NONBLOCK) == 0);
	{
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 };

		REQUIRE(epoll_ctl(kep, EPOLL_CTL_ADD, p[0], &ev) == 0);
	}
	ctl(o, t, ep, EPOLL_CTL_ADD, kep, EPOLLIN, 11);
	ctl(o, t, ep, EPOLL_CTL_ADD, kep, EPOLLIN, 11);		/* EEXIST */
	ctl(o, t, ep, EPOLL_CTL_MOD, kep, EPOLLIN | EPOLLEXCLUSIVE, 11);
	wait_rec(o, t, ep, 0);
	rec(t, write(p[1], "x", 1));
	wait_rec(o, t, ep, 0);
	wait_rec(o, t, ep, 0);
	rec(t, read(p[0], &c, 1));
	wait_rec(o, t, ep, 0);
	ctl(o, t, ep, EPOLL_CTL_MOD, kep, EPOLLIN | EPOLLET, 12);
	rec(t, write(p[1], "x", 1));
	wait_rec(o, t, ep, 0);
	wait_rec(o, t, ep, 0);
	ctl(o, t, ep, EPOLL_CTL_DEL, kep, 0, 0);
	wait_rec(o, t, ep, 0);
	/* now the other way round: the kernel epoll holds the instance, so
	 * adding it back into the instance is a loop */
	{
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 2 };

		rec_call(t, epoll_ctl(kep, EPOLL_CTL_ADD, ep, &ev));
	}
	ctl(o, t, ep, EPOLL_CTL_ADD, kep, EPOLLIN, 13);	/* ELOOP */
	rec(t, close(p[0]));
	rec(t, close(p[1]));
	rec(t, close(kep));
	rec(t, o->close(ep));
}

static void compare(const char *name, void (*sc)(const struct ops *, struct tr *))
{
	static struct tr tk, tu;

	memset(&tk, 0, sizeof(tk));
	memset(&tu, 0, sizeof(tu));
	sc(&kops, &tk);
	sc(&uops, &tu);
	if (tk.n != tu.n) {
		fprintf(stderr, "%s: transcript lengths differ: kernel %d uepoll %d\n",
			name, tk.n, tu.n);
		t_failures++;
	}
	for (int i = 0; i < tk.n && i < tu.n; i++) {
		if (tk.v[i] != tu.v[i]) {
			fprintf(stderr, "%s: transcript differs at %d: kernel %lld uepoll %lld\n",
				name, i, tk.v[i], tu.v[i]);
			fprintf(stderr, "  kernel:");
			for (int j = 0; j < tk.n; j++)
				fprintf(stderr, " %lld", tk.v[j]);
			fprintf(stderr, "\n  uepoll:");
			for (int j = 0; j < tu.n; j++)
				fprintf(stderr, " %lld", tu.v[j]);
			fprintf(stderr, "\n");
			t_failures++;
			break;
		}
	}
}

/* ---- blocked waiter woken by a ueventfd or a pipe ---- */

/* Voluntary context switches a blocked wait may make: its sleep, and a
 * lock or two met on the way. */
#define MAX_SLEEPS 4

struct waiter {
	int ep;
	int tid;
	volatile int ready;
	int n;
	uint64_t data;
	long sleeps; /* voluntary context switches over the wait */
};

static long thread_nvcsw(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw;
}

static void *waiter_main(void *p)
{
	struct waiter *w = p;
	struct epoll_event ev[4];
	long s0;

	w->tid = t_gettid();
	s0 = thread_nvcsw();
	__atomic_store_n(&w->ready, 1, __ATOMIC_SEQ_CST);
	w->n = uepoll_wait(w->ep, ev, 4, 20000);
	w->sleeps = thread_nvcsw() - s0;
	if (w->n > 0)
		w->data = ev[0].data.u64;
	return NULL;
}

static void test_blocked_waiter(void)
{
	int ep = uepoll_create1(0), efd = ueventfd(0, EFD_NONBLOCK), p[2];
	struct epoll_event ev;
	uint64_t v;
	char c;

	REQUIRE(ep >= 0 && efd >= 0);
	REQUIRE(pipe2(p, O_NONBLOCK) == 0);
	ev.events = EPOLLIN;
	ev.data.u64 = 1;
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
	ev.data.u64 = 2;
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0);

	for (int source = 1; source <= 2; source++) {
		struct waiter w = { .ep = ep };
		pthread_t th;

		REQUIRE(pthread_create(&th, NULL, waiter_main, &w) == 0);
		while (!__atomic_load_n(&w.ready, __ATOMIC_SEQ_CST))
			t_sleep_ms(1);
		/* it must be asleep, not spinning */
		CHECK(t_wait_sleeping(w.tid, 10000));
		t_sleep_ms(200);
		CHECK(t_wait_sleeping(w.tid, 10000));
		if (source == 1)
			CHECK_EQ(ueventfd_write(efd, 1), 0);
		else
			CHECK_EQ(write(p[1], "x", 1), 1);
		REQUIRE(t_join_within(th, 10000));
		CHECK_EQ(w.n, 1);
		CHECK_EQ(w.data, source);
		/*
		 * It slept once, not in a loop of short sleeps (a count, not
		 * a time: a loaded machine adds involuntary switches only).
		 */
		if (w.sleeps > MAX_SLEEPS) {
			fprintf(stderr, "waiter slept %ld times in one wait\n",
				w.sleeps);
			t_failures++;
		}
		if (source == 1)
			CHECK_EQ(ueventfd_read(efd, &v), 0);
		else
			CHECK_EQ(read(p[0], &c, 1), 1);
	}
	CHECK_EQ(uepoll_close(ep), 0);
	CHECK_EQ(uepoll_close(efd), 0);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	t_begin("t_kernel_fds");
	t_watchdog(120);
	signal(SIGPIPE, SIG_IGN);
	compare("pipe", sc_pipe);
	compare("socketpair", sc_socket);
	compare("timerfd", sc_timerfd);
	compare("signalfd", sc_signalfd);
	compare("kernel epoll", sc_kernel_epoll);
	test_blocked_waiter();
	return t_end();
}
