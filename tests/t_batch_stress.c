/*
 * t_batch_stress: batching waits under concurrency lose nothing and return
 * each registration at most once per wait.
 * Two producers write random sources (edge- and level-triggered ueventfds,
 * an urgent one, a level-triggered pipe) while two consumers wait on one
 * instance under each of several policies (window, min_events, gap timer,
 * FROM_FIRST) and read what they are told of.  The consumers wait with no
 * timeout (but under min_events alone, which by the rule waits for that
 * many events or the timeout, as io_uring's wait_nr: two consumers may
 * each hold fewer), so a lost wakeup leaves events unread: checks that every event
 * written is read within a loose bound (the counts balance), and that no
 * wait returns one source twice.  Then a stop ueventfd (level-triggered,
 * left readable) ends every consumer.  Bounded in time (t_scale()).
 */
#include "testlib.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

static int fcntl_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

#define NEFD 6 /* 0..2 ET, 3..4 LT, 5 urgent LT */
#define PIPE_DATA NEFD
#define STOP_DATA (NEFD + 1)
#define NPROD 2
#define NCONS 2

struct ctx {
	int ep, efd[NEFD], p[2], stopfd;
	long per_prod;
	uint64_t seed;
	int timeout;
	_Atomic long produced, consumed;
	_Atomic int dup;
	_Atomic int stop;
};

static void *prod_main(void *arg)
{
	struct ctx *c = arg;
	uint64_t rs = c->seed ^ (uint64_t)t_gettid();

	for (long i = 0; i < c->per_prod; i++) {
		unsigned k = (unsigned)(t_rand(&rs) % (NEFD + 1));

		if (k == NEFD) {
			if (write(c->p[1], "x", 1) != 1)
				abort();
		} else if (ueventfd_write(c->efd[k], 1) != 0) {
			abort();
		}
		atomic_fetch_add(&c->produced, 1);
		if ((t_rand(&rs) & 63) == 0)
			usleep(50);
	}
	return NULL;
}

static void *cons_main(void *arg)
{
	struct ctx *c = arg;
	struct epoll_event out[8];
	char buf[256];

	while (!atomic_load(&c->stop)) {
		int n = uepoll_wait(c->ep, out, 8, c->timeout);
		int seen = 0;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			abort();
		}
		for (int i = 0; i < n; i++) {
			uint64_t d = out[i].data.u64;
			eventfd_t v;
			ssize_t r;

			if (seen & (1 << d)) {
				fprintf(stderr, "source %d twice in one wait\n",
					(int)d);
				atomic_fetch_add(&c->dup, 1);
			}
			seen |= 1 << d;
			if (d == STOP_DATA) {
				atomic_store(&c->stop, 1);
			} else if (d == PIPE_DATA) {
				while ((r = read(c->p[0], buf, sizeof(buf))) > 0)
					atomic_fetch_add(&c->consumed, r);
			} else if (ueventfd_read(c->efd[d], &v) == 0) {
				atomic_fetch_add(&c->consumed, (long)v);
			}
		}
	}
	return NULL;
}

static void run(const struct uepoll_batch *pol, long per_prod, uint64_t seed)
{
	struct ctx c = { .per_prod = per_prod, .seed = seed };

	/* Only a window or a gap timer bounds a wait that holds events. */
	c.timeout = pol->min_wait_us || pol->inter_event_us ? -1 : 100;
	struct epoll_event ev;
	pthread_t pt[NPROD], ct[NCONS];
	uint64_t t0 = t_now_ns();

	c.ep = uepoll_create1(0);
	REQUIRE(c.ep >= 0 && pipe(c.p) == 0);
	REQUIRE(uepoll_batch(c.ep, pol, NULL) == 0);
	for (int i = 0; i < NEFD; i++) {
		c.efd[i] = ueventfd(0, EFD_NONBLOCK);
		REQUIRE(c.efd[i] >= 0);
		ev.events = EPOLLIN | (i < 3 ? EPOLLET : 0) |
			    (i == 5 ? EPOLLURGENT : 0);
		ev.data.u64 = (uint64_t)i;
		REQUIRE(uepoll_ctl(c.ep, EPOLL_CTL_ADD, c.efd[i], &ev) == 0);
	}
	REQUIRE(fcntl_nonblock(c.p[0]) == 0);
	ev.events = EPOLLIN;
	ev.data.u64 = PIPE_DATA;
	REQUIRE(uepoll_ctl(c.ep, EPOLL_CTL_ADD, c.p[0], &ev) == 0);
	c.stopfd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(c.stopfd >= 0);
	ev.data.u64 = STOP_DATA;
	REQUIRE(uepoll_ctl(c.ep, EPOLL_CTL_ADD, c.stopfd, &ev) == 0);
	for (int i = 0; i < NCONS; i++)
		REQUIRE(pthread_create(&ct[i], NULL, cons_main, &c) == 0);
	for (int i = 0; i < NPROD; i++)
		REQUIRE(pthread_create(&pt[i], NULL, prod_main, &c) == 0);
	for (int i = 0; i < NPROD; i++)
		pthread_join(pt[i], NULL);
	/* Everything written must be read, within a loose bound. */
	while (atomic_load(&c.consumed) < atomic_load(&c.produced) &&
	       t_now_ns() - t0 < 30000000000ull)
		t_sleep_ms(5);
	CHECK_EQ(atomic_load(&c.consumed), atomic_load(&c.produced));
	CHECK_EQ(ueventfd_write(c.stopfd, 1), 0);
	for (int i = 0; i < NCONS; i++)
		if (!t_join_within(ct[i], 10000)) {
			fprintf(stderr, "a consumer missed the stop event\n");
			exit(1);
		}
	CHECK_EQ(atomic_load(&c.consumed), atomic_load(&c.produced));
	CHECK_EQ(atomic_load(&c.produced), NPROD * per_prod);
	CHECK_EQ(atomic_load(&c.dup), 0);
	for (int i = 0; i < NEFD; i++)
		uepoll_close(c.efd[i]);
	uepoll_close(c.stopfd);
	close(c.p[0]);
	close(c.p[1]);
	uepoll_close(c.ep);
}

int main(void)
{
	static const struct uepoll_batch pols[] = {
		{ 500, 0, 0, 0 },
		{ 0, 4, 0, 0 },
		{ 2000, 3, 0, 0 },
		{ 300, 0, 100, 0 },
		{ 0, 0, 200, 0 },
		{ 400, 0, 0, UEPOLL_BATCH_FROM_FIRST },
	};
	long n = (long)(20000 * t_scale());
	uint64_t seed;

	t_begin("t_batch_stress");
	t_watchdog(240);
	seed = t_seed(0x5eed);
	if (n < 500)
		n = 500;
	for (size_t i = 0; i < sizeof(pols) / sizeof(pols[0]); i++)
		run(&pols[i], n, seed);
	return t_end();
}
