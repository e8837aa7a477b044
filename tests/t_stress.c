/*
 * t_stress: bounded concurrency stress on one instance.
 *  - producers write random values to core and extra ueventfds
 *  - waiters consume (random maxevents; core fds are LT, ET or ONESHOT and
 *    oneshot ones are re-armed by the consumer)
 *  - a ctl thread keeps MOD/DEL/ADDing the extra ueventfds with random modes
 *  - a closer keeps creating ueventfds, adding them, writing and closing them
 * At the end every extra is put back as LT and the waiters drain everything:
 * the sum of values written to core and extra fds must equal the sum read.
 * Runs for about 2 s at scale 1 (UEPOLL_TEST_SCALE shortens it).
 */
#include "testlib.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#define NCORE 12
#define NEXTRA 6
#define NPROD 2
#define NWAIT 3
#define TAG_CLOSER 1000

static int ep;
static int core[NCORE], extra[NEXTRA];
static uint64_t produced, consumed;
static int stop_prod, stop_all, errors;
static uint64_t deadline_ns;
static uint64_t base_seed;

static uint32_t core_mode(int i)
{
	static const uint32_t m[3] = { 0, EPOLLET, EPOLLONESHOT };

	return EPOLLIN | m[i % 3];
}

static void err(const char *what)
{
	if (__atomic_add_fetch(&errors, 1, __ATOMIC_SEQ_CST) <= 5)
		fprintf(stderr, "error: %s (errno %d %s)\n", what, errno,
			strerror(errno));
}

static int get(int *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

static void *producer_main(void *arg)
{
	uint64_t rng = base_seed + (uintptr_t)arg * 0x9e3779b97f4a7c15ULL;

	while (!get(&stop_prod)) {
		for (int k = 0; k < 64; k++) {
			uint64_t r = t_rand(&rng), v = 1 + (r >> 8) % 5;
			int fd = (r % 4) ? core[r % NCORE] : extra[(r >> 4) % NEXTRA];

			if (ueventfd_write(fd, v) == 0)
				__atomic_add_fetch(&produced, v, __ATOMIC_SEQ_CST);
			else
				err("producer write");
		}
		sched_yield();
	}
	return NULL;
}

static void consume(uint64_t tag)
{
	uint64_t v;
	int fd;

	if (tag >= TAG_CLOSER)
		return;		/* closer fds: may be gone already, ignore */
	fd = tag < NCORE ? core[tag] : extra[tag - NCORE];
	if (ueventfd_read(fd, &v) == 0)
		__atomic_add_fetch(&consumed, v, __ATOMIC_SEQ_CST);
	else if (errno != EAGAIN)
		err("consumer read");
	if (tag < NCORE && (core_mode((int)tag) & EPOLLONESHOT)) {
		struct epoll_event e = { .events = core_mode((int)tag),
					 .data.u64 = tag };

		if (uepoll_ctl(ep, EPOLL_CTL_MOD, fd, &e))
			err("re-arm core oneshot");
	} else if (tag >= NCORE) {
		/* re-arm an extra in case it was oneshot; it may be gone */
		struct epoll_event e = { .events = EPOLLIN | EPOLLONESHOT,
					 .data.u64 = tag };

		if (uepoll_ctl(ep, EPOLL_CTL_MOD, fd, &e) && errno != ENOENT)
			err("re-arm extra");
	}
}

static void *waiter_main(void *arg)
{
	uint64_t rng = base_seed ^ ((uintptr_t)arg * 0xc2b2ae3d27d4eb4fULL);
	struct epoll_event ev[8];

	while (!get(&stop_all)) {
		int n = uepoll_wait(ep, ev, 1 + (int)(t_rand(&rng) % 8), 100);

		if (n < 0) {
			if (errno != EINTR)
				err("wait");
			continue;
		}
		for (int k = 0; k < n; k++)
			consume(ev[k].data.u64);
	}
	return NULL;
}

static void *ctl_main(void *arg)
{
	uint64_t rng = base_seed * 31 + 7;
	static const uint32_t modes[4] = { EPOLLIN, EPOLLIN | EPOLLET,
					   EPOLLIN | EPOLLONESHOT,
					   EPOLLIN | EPOLLET | EPOLLONESHOT };

	(void)arg;
	while (!get(&stop_prod)) {
		uint64_t r = t_rand(&rng);
		int i = (int)(r % NEXTRA), op = (int)((r >> 8) % 3) + 1;
		struct epoll_event e = { .events = modes[(r >> 16) % 4],
					 .data.u64 = (uint64_t)(NCORE + i) };
		int ret = uepoll_ctl(ep, op, extra[i], &e);

		if (ret && !(op == EPOLL_CTL_ADD && errno == EEXIST) &&
		    !(op != EPOLL_CTL_ADD && errno == ENOENT))
			err("ctl thread");
		if ((r >> 24) % 16 == 0)
			sched_yield();
	}
	return NULL;
}

static void *closer_main(void *arg)
{
	uint64_t tag = TAG_CLOSER;

	(void)arg;
	while (!get(&stop_prod)) {
		int fd = ueventfd(0, EFD_NONBLOCK);
		struct epoll_event e = { .events = EPOLLIN | EPOLLET | EPOLLONESHOT,
					 .data.u64 = tag++ };

		if (fd < 0) {
			err("closer ueventfd");
			continue;
		}
		if (uepoll_ctl(ep, EPOLL_CTL_ADD, fd, &e))
			err("closer add");
		if (ueventfd_write(fd, 1))
			err("closer write");
		if (tag % 2)
			sched_yield();
		if (uepoll_close(fd))
			err("closer close");
	}
	return NULL;
}

int main(void)
{
	pthread_t prod[NPROD], wait[NWAIT], ctl_th, closer_th;
	uint64_t limit;

	t_begin("t_stress");
	t_watchdog(120);
	base_seed = t_seed(0x57e55);
	deadline_ns = t_now_ns() + (uint64_t)(2e9 * t_scale());
	ep = uepoll_create1(0);
	REQUIRE(ep >= 0);
	for (int i = 0; i < NCORE; i++) {
		struct epoll_event e = { .events = core_mode(i), .data.u64 = (uint64_t)i };

		core[i] = ueventfd(0, EFD_NONBLOCK);
		REQUIRE(core[i] >= 0);
		REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, core[i], &e) == 0);
	}
	for (int i = 0; i < NEXTRA; i++) {
		extra[i] = ueventfd(0, EFD_NONBLOCK);
		REQUIRE(extra[i] >= 0);
	}

	for (int i = 0; i < NWAIT; i++)
		REQUIRE(pthread_create(&wait[i], NULL, waiter_main,
				       (void *)(uintptr_t)(i + 1)) == 0);
	for (int i = 0; i < NPROD; i++)
		REQUIRE(pthread_create(&prod[i], NULL, producer_main,
				       (void *)(uintptr_t)(i + 1)) == 0);
	REQUIRE(pthread_create(&ctl_th, NULL, ctl_main, NULL) == 0);
	REQUIRE(pthread_create(&closer_th, NULL, closer_main, NULL) == 0);

	while (t_now_ns() < deadline_ns)
		t_sleep_ms(10);
	__atomic_store_n(&stop_prod, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < NPROD; i++)
		pthread_join(prod[i], NULL);
	pthread_join(ctl_th, NULL);
	pthread_join(closer_th, NULL);

	/* put every extra back as LT so what is left in them gets consumed */
	for (int i = 0; i < NEXTRA; i++) {
		struct epoll_event e = { .events = EPOLLIN,
					 .data.u64 = (uint64_t)(NCORE + i) };

		if (uepoll_ctl(ep, EPOLL_CTL_ADD, extra[i], &e) &&
		    uepoll_ctl(ep, EPOLL_CTL_MOD, extra[i], &e))
			err("final re-add of extra");
	}
	limit = t_now_ns() + 10000000000ull;
	while (__atomic_load_n(&consumed, __ATOMIC_SEQ_CST) !=
	       __atomic_load_n(&produced, __ATOMIC_SEQ_CST) && t_now_ns() < limit)
		t_sleep_ms(2);
	__atomic_store_n(&stop_all, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < NWAIT; i++)
		pthread_join(wait[i], NULL);

	printf("produced %llu consumed %llu\n", (unsigned long long)produced,
	       (unsigned long long)consumed);
	if (produced != consumed) {
		fprintf(stderr, "produced %llu != consumed %llu\n",
			(unsigned long long)produced,
			(unsigned long long)consumed);
		for (int i = 0; i < NCORE + NEXTRA; i++) {
			uint64_t v;
			int fd = i < NCORE ? core[i] : extra[i - NCORE];

			if (ueventfd_read(fd, &v) == 0)
				fprintf(stderr, "  fd %d still held %llu\n", i,
					(unsigned long long)v);
		}
		t_failures++;
	}
	CHECK_EQ(errors, 0);
	for (int i = 0; i < NCORE; i++)
		CHECK_EQ(uepoll_close(core[i]), 0);
	for (int i = 0; i < NEXTRA; i++)
		CHECK_EQ(uepoll_close(extra[i]), 0);
	CHECK_EQ(uepoll_close(ep), 0);
	return t_end();
}
