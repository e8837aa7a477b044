/*
 * t_efd_nopoll: UEVENTFD_NOPOLL, a ueventfd whose fd nobody polls from
 * outside uepoll (its readiness is not kept exact, to save the system call
 * of a read that empties the counter).
 *  - values and blocking are the eventfd's: a reader blocked in
 *    uepoll_read is woken by every write that comes while it sleeps, over
 *    many rounds, including rounds where a stale readiness was left by the
 *    previous one (the reader takes it and sleeps again); the sum balances;
 *  - a non-blocking drain loop ends with EAGAIN;
 *  - demotion makes the fd exact: not readable once the counter is empty;
 *  - flags uepoll does not know still give EINVAL, as eventfd(2)'s.
 */
#include "testlib.h"

#include <poll.h>
#include <stdatomic.h>

#define ROUNDS 300

static int fd;
static atomic_int tid, got_rounds;

static void *reader(void *arg)
{
	uint64_t v, sum = 0;

	(void)arg;
	atomic_store(&tid, t_gettid());
	while (sum < ROUNDS) {
		CHECK_EQ(ueventfd_read(fd, &v), 0);
		sum += v;
		atomic_store(&got_rounds, (int)sum);
	}
	CHECK_EQ(sum, ROUNDS);
	return NULL;
}

static int readable(int f)
{
	struct pollfd p = { .fd = f, .events = POLLIN };

	REQUIRE(poll(&p, 1, 0) >= 0);
	return (p.revents & POLLIN) != 0;
}

int main(void)
{
	pthread_t th;
	uint64_t v;
	int n;

	t_begin("t_efd_nopoll");
	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_watchdog(120);
	fd = ueventfd(0, UEVENTFD_NOPOLL);
	REQUIRE(fd >= 0);
	REQUIRE(pthread_create(&th, NULL, reader, NULL) == 0);
	while (!atomic_load(&tid))
		sched_yield();
	for (int i = 0; i < ROUNDS; i++) {
		/* Every 10th round, write only once the reader sleeps. */
		if (i % 10 == 0)
			CHECK(t_wait_sleeping(atomic_load(&tid), 5000));
		CHECK_EQ(ueventfd_write(fd, 1), 0);
		if (i % 10 == 0)
			while (atomic_load(&got_rounds) <= i)
				sched_yield();
	}
	REQUIRE(t_join_within(th, 20000));
	CHECK_EQ(uepoll_close(fd), 0);

	fd = ueventfd(3, UEVENTFD_NOPOLL | EFD_NONBLOCK);
	REQUIRE(fd >= 0);
	CHECK_EQ(ueventfd_write(fd, 2), 0);
	n = 0;
	while (ueventfd_read(fd, &v) == 0)
		n++;
	CHECK_EQ(errno, EAGAIN);
	CHECK_EQ(n, 1);
	CHECK_EQ(v, 5u);
	CHECK_EQ(uepoll_demote(fd), 0);
	CHECK_EQ(readable(fd), 0);
	CHECK_EQ(uepoll_close(fd), 0);

	CHECK_ERR(ueventfd(0, 0x20000000), EINVAL);
	CHECK_ERR(ueventfd(0, UEVENTFD_NOPOLL | 0x2), EINVAL);
	return t_end();
}
