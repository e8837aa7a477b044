/*
 * t_rr_et: EPOLLROUNDROBIN keeps the meaning of every other flag; here
 * EPOLLET on kernel fds.  Each sequence runs on a kernel epoll with
 * EPOLLIN|EPOLLET|EPOLLEXCLUSIVE and on a uepoll instance with the same
 * flags plus EPOLLROUNDROBIN, and the counts must be the kernel's.
 *  - pipe: one byte written and never read, then NWAITS waits of 20 ms:
 *    one event (the kernel's count, 1), not one per wait.  Drain it (read
 *    until EAGAIN), write one more byte: exactly one more event (a new
 *    edge), however many waits.
 *  - listening TCP socket (127.0.0.1, port 0): one connect(), NWAITS
 *    waits: one event; accept, a second connect(): one more event.
 *  - two instances share one pipe (EPOLLET|EPOLLEXCLUSIVE|EPOLLROUNDROBIN),
 *    a thread blocked in each; rounds: with both asleep, write a byte; the
 *    woken thread drains the pipe and waits again.  No round gives more
 *    than one event in all (no duplicate edge: the kernel, with
 *    EPOLLET|EPOLLEXCLUSIVE and no round robin, gives none either, and no
 *    event that finds the pipe empty), and the wakeups alternate between
 *    the two instances (round robin still works with EPOLLET).
 *    Twice: the woken thread drains at once; and ("peek") it first makes
 *    one wait with timeout 0 on its instance, before draining, as a loop
 *    that handles other ready sources first would: with EPOLLET and no new
 *    data that wait reports nothing (the kernel's count is 0), so any
 *    event it returns is a duplicate edge of the same byte.
 */
#include "testlib.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#define NWAITS 10
#define ETX (EPOLLIN | EPOLLET | EPOLLEXCLUSIVE)

static int x_create(int kern)
{
	return kern ? epoll_create1(0) : uepoll_create1(0);
}

static int x_add(int kern, int ep, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	if (!kern && (events & EPOLLEXCLUSIVE))
		ev.events |= EPOLLROUNDROBIN;
	return kern ? epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)
		    : uepoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static int x_wait(int kern, int ep, struct epoll_event *ev, int max, int ms)
{
	return kern ? epoll_wait(ep, ev, max, ms) : uepoll_wait(ep, ev, max, ms);
}

static int x_close(int kern, int fd)
{
	return kern ? close(fd) : uepoll_close(fd);
}

static const char *who(int kern)
{
	return kern ? "kernel" : "uepoll";
}

/* Events of data 1 over NWAITS waits of 20 ms. */
static int count_events(int kern, int ep)
{
	struct epoll_event ev[4];
	int total = 0;

	for (int i = 0; i < NWAITS; i++) {
		int n = x_wait(kern, ep, ev, 4, 20);

		CHECK(n >= 0);
		for (int j = 0; j < n; j++) {
			CHECK_EQ(ev[j].data.u64, 1);
			total += ev[j].data.u64 == 1;
		}
	}
	return total;
}

static int drain(int fd)
{
	char buf[64];
	int total = 0;
	ssize_t r;

	while ((r = read(fd, buf, sizeof(buf))) > 0)
		total += (int)r;
	return total;
}

/* ---- a pipe ---- */

static void pipe1(int kern, int out[2])
{
	int ep = x_create(kern), p[2];

	REQUIRE(ep >= 0);
	REQUIRE(pipe2(p, O_NONBLOCK) == 0);
	CHECK_EQ(x_add(kern, ep, p[0], ETX, 1), 0);
	CHECK_EQ(write(p[1], "a", 1), 1);
	out[0] = count_events(kern, ep);
	CHECK_EQ(drain(p[0]), 1);
	CHECK_EQ(write(p[1], "b", 1), 1);
	out[1] = count_events(kern, ep);
	printf("  %s pipe: %d event(s) for a byte left unread, %d for the next byte\n",
	       who(kern), out[0], out[1]);
	CHECK_EQ(x_close(kern, ep), 0);
	close(p[0]);
	close(p[1]);
}

static void test_pipe(void)
{
	int k[2], u[2];

	pipe1(1, k);
	pipe1(0, u);
	CHECK_EQ(k[0], 1);
	CHECK_EQ(k[1], 1);
	CHECK_EQ(u[0], k[0]);
	CHECK_EQ(u[1], k[1]);
}

/* ---- a listening TCP socket ---- */

static int tcp_listener(struct sockaddr_in *addr)
{
	socklen_t len = sizeof(*addr);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

	REQUIRE(s >= 0);
	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s, (struct sockaddr *)addr, sizeof(*addr)) != 0 ||
	    listen(s, 16) != 0) {
		close(s);
		return -1;
	}
	REQUIRE(getsockname(s, (struct sockaddr *)addr, &len) == 0);
	return s;
}

static int tcp_connect(const struct sockaddr_in *addr)
{
	int c = socket(AF_INET, SOCK_STREAM, 0);

	REQUIRE(c >= 0);
	CHECK_EQ(connect(c, (const struct sockaddr *)addr, sizeof(*addr)), 0);
	return c;
}

static int accept_all(int s)
{
	int n = 0, a;

	while ((a = accept(s, NULL, NULL)) >= 0) {
		close(a);
		n++;
	}
	return n;
}

static int tcp1(int kern, int out[2])
{
	struct sockaddr_in addr;
	int ep = x_create(kern), s = tcp_listener(&addr), c1, c2;

	REQUIRE(ep >= 0);
	if (s < 0) {
		CHECK_EQ(x_close(kern, ep), 0);
		return -1;
	}
	CHECK_EQ(x_add(kern, ep, s, ETX, 1), 0);
	c1 = tcp_connect(&addr);
	out[0] = count_events(kern, ep);
	CHECK_EQ(accept_all(s), 1);
	c2 = tcp_connect(&addr);
	out[1] = count_events(kern, ep);
	CHECK_EQ(accept_all(s), 1);
	printf("  %s listening socket: %d event(s) for the first connection, %d for the second\n",
	       who(kern), out[0], out[1]);
	close(c1);
	close(c2);
	CHECK_EQ(x_close(kern, ep), 0);
	close(s);
	return 0;
}

static void test_tcp(void)
{
	int k[2], u[2];

	if (tcp1(1, k) < 0) {
		printf("note: no TCP on 127.0.0.1, listening-socket case skipped\n");
		return;
	}
	REQUIRE(tcp1(0, u) == 0);
	CHECK_EQ(k[0], 1);
	CHECK_EQ(k[1], 1);
	CHECK_EQ(u[0], k[0]);
	CHECK_EQ(u[1], k[1]);
}

/* ---- two instances, one pipe, a thread in each ---- */

struct side {
	int kern, ep, rd, peek;
	_Atomic int tid;
	_Atomic int events, bytes, empty;
	pthread_t th;
};

static void *side_main(void *arg)
{
	struct side *s = arg;
	struct epoll_event ev[4];

	atomic_store(&s->tid, t_gettid());
	for (;;) {
		int n = x_wait(s->kern, s->ep, ev, 4, -1);

		for (int i = 0; i < n; i++) {
			int got;

			if (ev[i].data.u64 == 2)
				return NULL;
			atomic_fetch_add(&s->events, 1);
			if (s->peek) {
				/* Nothing new came: an ET wait finds nothing. */
				struct epoll_event ev2[4];
				int n2 = x_wait(s->kern, s->ep, ev2, 4, 0);

				for (int j = 0; j < n2; j++)
					if (ev2[j].data.u64 == 1)
						atomic_fetch_add(&s->events, 1);
			}
			got = drain(s->rd);
			if (got)
				atomic_fetch_add(&s->bytes, got);
			else
				atomic_fetch_add(&s->empty, 1);
		}
	}
}

static int total_bytes(struct side *sd)
{
	return atomic_load(&sd[0].bytes) + atomic_load(&sd[1].bytes);
}

/* Runs the rounds; returns the number of rounds with more than one
 * event, and fills *alt_bad with the rounds woken on the same instance as
 * the round before. */
static int shared1(int kern, int peek, int rounds, int *alt_bad,
		   int *empty)
{
	struct side sd[2];
	int p[2], stop, dup_rounds = 0, last = -1;

	REQUIRE(pipe2(p, O_NONBLOCK) == 0);
	stop = kern ? eventfd(0, EFD_NONBLOCK) : ueventfd(0, EFD_NONBLOCK);
	REQUIRE(stop >= 0);
	*alt_bad = 0;
	for (int i = 0; i < 2; i++) {
		memset(&sd[i], 0, sizeof(sd[i]));
		sd[i].kern = kern;
		sd[i].peek = peek;
		sd[i].rd = p[0];
		sd[i].ep = x_create(kern);
		REQUIRE(sd[i].ep >= 0);
		CHECK_EQ(x_add(kern, sd[i].ep, p[0], ETX, 1), 0);
		CHECK_EQ(x_add(kern, sd[i].ep, stop, EPOLLIN, 2), 0);
		REQUIRE(pthread_create(&sd[i].th, NULL, side_main, &sd[i]) == 0);
	}
	for (int i = 0; i < 2; i++)
		while (!atomic_load(&sd[i].tid))
			t_sleep_ms(1);
	for (int r = 0; r < rounds; r++) {
		int e0[2], d[2], woke;

		for (int i = 0; i < 2; i++) {
			REQUIRE(t_wait_sleeping(atomic_load(&sd[i].tid), 10000));
			e0[i] = atomic_load(&sd[i].events);
		}
		CHECK_EQ(write(p[1], "x", 1), 1);
		for (int t = 0; t < 5000 && total_bytes(sd) < r + 1; t++)
			t_sleep_ms(1);
		CHECK_EQ(total_bytes(sd), r + 1);
		/* Both back asleep: whatever this byte caused has come. */
		for (int i = 0; i < 2; i++) {
			REQUIRE(t_wait_sleeping(atomic_load(&sd[i].tid), 10000));
			d[i] = atomic_load(&sd[i].events) - e0[i];
		}
		if (d[0] + d[1] != 1) {
			dup_rounds++;
			if (dup_rounds <= 3)
				fprintf(stderr, "%s shared pipe%s, round %d: %d events (instance A %d, B %d)\n",
					who(kern), peek ? " (peek)" : "", r,
					d[0] + d[1], d[0], d[1]);
		}
		woke = d[0] && !d[1] ? 0 : d[1] && !d[0] ? 1 : -1;
		if (r > 0 && (woke < 0 || woke == last))
			(*alt_bad)++;
		last = woke;
	}
	CHECK_EQ(kern ? eventfd_write(stop, 1) : ueventfd_write(stop, 1), 0);
	*empty = 0;
	for (int i = 0; i < 2; i++) {
		REQUIRE(t_join_within(sd[i].th, 5000));
		*empty += atomic_load(&sd[i].empty);
		printf("  %s shared pipe%s: instance %c took %d events, %d bytes, %d events found it empty\n",
		       who(kern), peek ? " (peek)" : "", 'A' + i,
		       atomic_load(&sd[i].events),
		       atomic_load(&sd[i].bytes), atomic_load(&sd[i].empty));
		CHECK_EQ(x_close(kern, sd[i].ep), 0);
	}
	CHECK_EQ(x_close(kern, stop), 0);
	close(p[0]);
	close(p[1]);
	return dup_rounds;
}

static void test_shared1(int peek)
{
	int rounds = (int)(16 * t_scale());
	int kalt, ualt, kempty, uempty, kdup, udup;

	if (rounds < 6)
		rounds = 6;
	kdup = shared1(1, peek, rounds, &kalt, &kempty);
	udup = shared1(0, peek, rounds, &ualt, &uempty);
	printf("  shared pipe%s, %d rounds: rounds with more than one event: kernel %d, uepoll %d; "
	       "uepoll rounds not alternating: %d\n",
	       peek ? " (peek)" : "", rounds, kdup, udup, ualt);
	CHECK_EQ(kdup, 0);
	CHECK_EQ(kempty, 0);
	CHECK_EQ(udup, kdup);
	CHECK_EQ(uempty, kempty);
	CHECK_EQ(ualt, 0);
}

static void test_shared(void)
{
	test_shared1(0);
	test_shared1(1);
}

int main(void)
{
	t_begin("t_rr_et");
	t_watchdog(60);
	test_pipe();
	test_tcp();
	test_shared();
	return t_end();
}
