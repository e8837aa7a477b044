/*
 * t_demote: uepoll_demote() folds a ueventfd back into the kernel eventfd
 * it stands for.
 *  - state: for each of {plain, EFD_SEMAPHORE} x {blocking, EFD_NONBLOCK}
 *    and counters 0, 1, 7, full (0xfffffffffffffffe), the fd afterwards is
 *    a kernel eventfd with the exact counter: libc read() and write() give
 *    what a kernel eventfd created with the same flags and brought to the
 *    same counter gives, and so do poll() and the fdinfo "eventfd-count";
 *    uepoll_read/uepoll_write/uepoll_close pass through to it;
 *  - watchers: an instance watching the ueventfd (level, edge, a disarmed
 *    EPOLLONESHOT) watches the kernel fd with the same data: a write(2) by
 *    libc reaches it, the disarmed one stays silent until re-armed by MOD;
 *    ctl through the number afterwards is the kernel's (DEL, then ENOENT);
 *  - a writer blocked on a full counter at the demotion writes to the
 *    kernel fd once a read made room;
 *  - errors: EBADF for a closed number, 0 for a kernel fd, 0 for a second
 *    demotion;
 *  - concurrency: writers, non-blocking readers, a blocked reader, a waiter
 *    on an instance and a thread doing ctl MOD keep going while the main
 *    thread demotes; every value written is read exactly once (the sums
 *    balance), nothing hangs.
 */
#include "testlib.h"

#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <unistd.h>

#define FULL UINT64_C(0xfffffffffffffffe)

static short revents(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };

	REQUIRE(poll(&p, 1, 0) >= 0);
	return p.revents;
}

/* The kernel's count of an eventfd, from /proc/self/fdinfo. */
static uint64_t fdinfo_count(int fd)
{
	char path[64], line[256];
	unsigned long long v = UINT64_MAX;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	REQUIRE(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "eventfd-count: %llx", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* Bring a fresh eventfd (uepoll's when u) to count c. */
static void fill(int fd, int u, uint64_t c)
{
	if (!c)
		return;
	if (u)
		CHECK_EQ(uepoll_write(fd, &c, 8), 8);
	else
		CHECK_EQ(write(fd, &c, 8), 8);
}

static void test_state(void)
{
	static const uint64_t counts[] = { 0, 1, 7, FULL };
	static const int flags[] = { 0, EFD_SEMAPHORE, EFD_NONBLOCK,
				     EFD_SEMAPHORE | EFD_NONBLOCK };

	for (unsigned f = 0; f < 4; f++)
		for (unsigned c = 0; c < 4; c++) {
			int k = eventfd(0, flags[f]), u = ueventfd(0, flags[f]);
			uint64_t a = 0, b = 0, one = 1;
			ssize_t ra, rb;

			REQUIRE(k >= 0 && u >= 0);
			fill(k, 0, counts[c]);
			fill(u, 1, counts[c]);
			CHECK_EQ(uepoll_demote(u), 0);
			CHECK_EQ(fdinfo_count(u), counts[c]);
			CHECK_EQ(revents(u), revents(k));
			CHECK_EQ(fcntl(u, F_GETFL) & O_NONBLOCK,
				 fcntl(k, F_GETFL) & O_NONBLOCK);
			/* libc's read, on the kernel fd: the same answer. */
			if (counts[c] || (flags[f] & EFD_NONBLOCK)) {
				errno = 0;
				ra = read(k, &a, 8);
				int ea = errno;
				errno = 0;
				rb = read(u, &b, 8);
				CHECK_EQ(rb, ra);
				CHECK_EQ(errno, ea);
				CHECK_EQ(b, a);
			}
			CHECK_EQ(revents(u), revents(k));
			/* uepoll's calls pass through. */
			CHECK_EQ(uepoll_write(u, &one, 8), 8);
			CHECK_EQ(write(k, &one, 8), 8);
			CHECK_EQ(uepoll_read(u, &b, 8), 8);
			CHECK_EQ(read(k, &a, 8), 8);
			CHECK_EQ(b, a);
			CHECK_EQ(revents(u), revents(k));
			CHECK_EQ(uepoll_demote(u), 0); /* a kernel fd now */
			CHECK_EQ(close(k), 0);
			CHECK_EQ(uepoll_close(u), 0);
		}
}

static int ctl(int ep, int op, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return uepoll_ctl(ep, op, fd, &ev);
}

/* The events of a wait(timeout 0), as a bit per data value (< 32). */
static uint32_t waitmask(int ep, int timeout)
{
	struct epoll_event ev[8];
	uint32_t m = 0;
	int n = uepoll_wait(ep, ev, 8, timeout);

	REQUIRE(n >= 0);
	for (int i = 0; i < n; i++)
		m |= 1u << ev[i].data.u64;
	return m;
}

static void test_watchers(void)
{
	int ep = uepoll_create1(0), lt = ueventfd(0, EFD_NONBLOCK),
	    et = ueventfd(0, EFD_NONBLOCK), os = ueventfd(0, EFD_NONBLOCK);
	uint64_t v, one = 1;

	REQUIRE(ep >= 0 && lt >= 0 && et >= 0 && os >= 0);
	CHECK_EQ(ctl(ep, EPOLL_CTL_ADD, lt, EPOLLIN, 1), 0);
	CHECK_EQ(ctl(ep, EPOLL_CTL_ADD, et, EPOLLIN | EPOLLET, 2), 0);
	CHECK_EQ(ctl(ep, EPOLL_CTL_ADD, os, EPOLLIN | EPOLLONESHOT, 3), 0);
	CHECK_EQ(ueventfd_write(os, 1), 0);
	CHECK_EQ(waitmask(ep, 0), 1u << 3); /* disarms the one-shot */
	CHECK_EQ(ueventfd_write(lt, 2), 0);
	CHECK_EQ(waitmask(ep, 0), 1u << 1);
	CHECK_EQ(uepoll_demote(lt), 0);
	CHECK_EQ(uepoll_demote(et), 0);
	CHECK_EQ(uepoll_demote(os), 0);
	/* The level-triggered one is still ready, with its data. */
	CHECK_EQ(waitmask(ep, 0), 1u << 1);
	CHECK_EQ(read(lt, &v, 8), 8);
	CHECK_EQ(v, 2u);
	CHECK_EQ(waitmask(ep, 0), 0);
	/* libc's writes reach the instance through the kernel. */
	CHECK_EQ(write(et, &one, 8), 8);
	CHECK_EQ(waitmask(ep, 1000), 1u << 2);
	CHECK_EQ(waitmask(ep, 0), 0); /* edge-triggered: once */
	CHECK_EQ(write(et, &one, 8), 8);
	CHECK_EQ(waitmask(ep, 1000), 1u << 2);
	/* The one-shot stays disarmed (its count is 1) until MOD. */
	CHECK_EQ(waitmask(ep, 0), 0);
	CHECK_EQ(ctl(ep, EPOLL_CTL_MOD, os, EPOLLIN, 4), 0);
	CHECK_EQ(waitmask(ep, 0), 1u << 4);
	/* ctl through the numbers is the kernel's now. */
	CHECK_EQ(ctl(ep, EPOLL_CTL_DEL, os, 0, 0), 0);
	CHECK_ERR(ctl(ep, EPOLL_CTL_DEL, os, 0, 0), ENOENT);
	CHECK_ERR(ctl(ep, EPOLL_CTL_ADD, lt, EPOLLIN, 1), EEXIST);
	CHECK_EQ(uepoll_close(lt), 0);
	CHECK_EQ(uepoll_close(et), 0);
	CHECK_EQ(uepoll_close(os), 0);
	CHECK_EQ(uepoll_close(ep), 0);
}

/* A writer blocked on a full counter at the demotion writes to the kernel
 * fd once there is room. */
static int bw_fd;
static atomic_int bw_tid;
static void *blocked_writer(void *arg)
{
	(void)arg;
	atomic_store(&bw_tid, t_gettid());
	CHECK_EQ(ueventfd_write(bw_fd, 5), 0);
	return NULL;
}

static void test_blocked_writer(void)
{
	pthread_t th;
	uint64_t v;

	bw_fd = ueventfd(0, 0);
	REQUIRE(bw_fd >= 0);
	CHECK_EQ(ueventfd_write(bw_fd, FULL), 0);
	REQUIRE(pthread_create(&th, NULL, blocked_writer, NULL) == 0);
	while (!atomic_load(&bw_tid))
		sched_yield();
	CHECK(t_wait_sleeping(atomic_load(&bw_tid), 5000));
	CHECK_EQ(uepoll_demote(bw_fd), 0);
	CHECK_EQ(read(bw_fd, &v, 8), 8);
	CHECK_EQ(v, FULL);
	REQUIRE(t_join_within(th, 10000));
	CHECK_EQ(read(bw_fd, &v, 8), 8);
	CHECK_EQ(v, 5u);
	CHECK_EQ(uepoll_close(bw_fd), 0);
}

static void test_errors(void)
{
	int ep = uepoll_create1(0), p[2];

	REQUIRE(ep >= 0 && pipe(p) == 0);
	CHECK_EQ(uepoll_demote(ep), 0); /* an instance: t_demote_port */
	CHECK_EQ(uepoll_demote(ep), 0); /* a kernel epoll now */
	CHECK_EQ(uepoll_demote(p[0]), 0);
	CHECK_EQ(close(p[0]), 0);
	CHECK_EQ(close(p[1]), 0);
	CHECK_ERR(uepoll_demote(p[0]), EBADF);
	CHECK_ERR(uepoll_demote(-1), EBADF);
	CHECK_EQ(uepoll_close(ep), 0);
}

/* ---- concurrency --------------------------------------------------------- */

#define NWRITERS 2

static int c_efd, c_ep, c_block;
static atomic_int c_stop;
static atomic_ulong c_written, c_read;

static void *c_writer(void *arg)
{
	unsigned long n = (unsigned long)arg;

	for (unsigned long i = 0; i < n; i++) {
		CHECK_EQ(ueventfd_write(c_efd, 1), 0);
		atomic_fetch_add(&c_written, 1);
	}
	return NULL;
}

/* Non-blocking reads of the shared non-blocking ueventfd. */
static void *c_reader(void *arg)
{
	uint64_t v;

	(void)arg;
	while (!atomic_load(&c_stop)) {
		if (ueventfd_read(c_efd, &v) == 0)
			atomic_fetch_add(&c_read, v);
		else
			CHECK_EQ(errno, EAGAIN);
	}
	return NULL;
}

/* A reader that blocks on a blocking ueventfd; main wakes it at the end. */
static atomic_ulong c_bread;
static void *c_blocked(void *arg)
{
	uint64_t v;

	(void)arg;
	for (;;) {
		CHECK_EQ(ueventfd_read(c_block, &v), 0);
		if (v == 1000000)
			return NULL; /* main's end marker */
		atomic_fetch_add(&c_bread, v);
	}
}

/* Waits on the instance, reads what it reports; MODs now and then. */
static void *c_waiter(void *arg)
{
	struct epoll_event ev;
	unsigned long i = 0;
	uint64_t v;

	(void)arg;
	while (!atomic_load(&c_stop)) {
		int n = uepoll_wait(c_ep, &ev, 1, 5);

		CHECK(n >= 0);
		if (n == 1 && ueventfd_read(c_efd, &v) == 0)
			atomic_fetch_add(&c_read, v);
		if (++i % 16 == 0)
			CHECK_EQ(ctl(c_ep, EPOLL_CTL_MOD, c_efd, EPOLLIN,
				     i), 0);
	}
	return NULL;
}

static void test_concurrent(void)
{
	unsigned long per = (unsigned long)(200000 * t_scale()), rest;
	pthread_t w[NWRITERS], r, b, wt;
	uint64_t v, end = 1000000;

	if (per < 5000)
		per = 5000;
	for (int round = 0; round < 4; round++) {
		atomic_store(&c_stop, 0);
		atomic_store(&c_written, 0);
		atomic_store(&c_read, 0);
		atomic_store(&c_bread, 0);
		c_efd = ueventfd(0, EFD_NONBLOCK);
		c_block = ueventfd(0, round & 1 ? EFD_SEMAPHORE : 0);
		c_ep = uepoll_create1(0);
		REQUIRE(c_efd >= 0 && c_block >= 0 && c_ep >= 0);
		CHECK_EQ(ctl(c_ep, EPOLL_CTL_ADD, c_efd, EPOLLIN, 0), 0);
		REQUIRE(pthread_create(&r, NULL, c_reader, NULL) == 0);
		REQUIRE(pthread_create(&b, NULL, c_blocked, NULL) == 0);
		REQUIRE(pthread_create(&wt, NULL, c_waiter, NULL) == 0);
		for (int i = 0; i < NWRITERS; i++)
			REQUIRE(pthread_create(&w[i], NULL, c_writer,
					       (void *)per) == 0);
		/* Writes to the blocking one, some before its demotion. */
		for (int i = 0; i < 100; i++)
			CHECK_EQ(ueventfd_write(c_block, 3), 0);
		/* Demote mid-way (a few rounds at different points). */
		while (atomic_load(&c_written) < per * (unsigned)(round + 1) / 3)
			sched_yield();
		CHECK_EQ(uepoll_demote(c_efd), 0);
		if (round & 2)
			t_sleep_ms(1);
		CHECK_EQ(uepoll_demote(c_block), 0);
		for (int i = 0; i < 100; i++)
			CHECK_EQ(ueventfd_write(c_block, 3), 0);
		for (int i = 0; i < NWRITERS; i++)
			REQUIRE(t_join_within(w[i], 60000));
		atomic_store(&c_stop, 1);
		REQUIRE(t_join_within(r, 10000));
		REQUIRE(t_join_within(wt, 10000));
		/* What is left, then the balance. */
		rest = 0;
		while (ueventfd_read(c_efd, &v) == 0)
			rest += v;
		CHECK_EQ(atomic_load(&c_read) + rest, per * NWRITERS);
		/* The blocked reader: all 600, then the end marker. */
		for (int i = 0; i < 2000 && atomic_load(&c_bread) < 600; i++)
			t_sleep_ms(5);
		CHECK_EQ(atomic_load(&c_bread), 600u);
		if (round & 1) { /* semaphore: 1 per read, never 1000000 */
			pthread_cancel(b);
		} else {
			CHECK_EQ(ueventfd_write(c_block, end), 0);
		}
		REQUIRE(t_join_within(b, 10000));
		CHECK_EQ(uepoll_close(c_ep), 0);
		CHECK_EQ(uepoll_close(c_efd), 0);
		CHECK_EQ(uepoll_close(c_block), 0);
	}
}

int main(void)
{
	t_begin("t_demote");
	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_watchdog(240);
	test_state();
	test_watchers();
	test_errors();
	test_blocked_writer();
	test_concurrent();
	return t_end();
}
