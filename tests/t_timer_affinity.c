/*
 * t_timer_affinity: the thread that delivers held ueventfd wakeups does not
 * inherit the CPU pinning of the thread that happened to start it.
 *
 * The main thread pins itself to one CPU (as a pinned publisher would) and
 * then makes the first held write, which starts the timer thread.  That
 * thread must be allowed the CPUs the process had at load time; pinned to
 * a CPU its publisher keeps busy, it delivered late (see timer.c,
 * AFFINITY).  The held write must still reach a sleeping reader.
 */
#include "testlib.h"

#include <sched.h>
#include <string.h>

struct rd {
	int fd, tid;
	uint64_t v;
};

static void *reader(void *arg)
{
	struct rd *r = arg;

	__atomic_store_n(&r->tid, t_gettid(), __ATOMIC_RELEASE);
	if (uepoll_read(r->fd, &r->v, sizeof(r->v)) != sizeof(r->v))
		r->v = 0;
	return NULL;
}

int main(void)
{
	struct ueventfd_coalesce co = { .delay_us = 2000 };
	cpu_set_t all, one, got;
	struct rd rd = { .tid = 0 };
	pthread_t th;
	int u, tid, first = -1;

	t_begin("t_timer_affinity");
	REQUIRE(sched_getaffinity(0, sizeof(all), &all) == 0);
	if (CPU_COUNT(&all) < 2)
		T_SKIP("the process may use only one CPU");
	for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
		if (CPU_ISSET(c, &all))
			first = c;
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	REQUIRE(sched_setaffinity(0, sizeof(one), &one) == 0);
	CHECK_EQ(t_timer_tid(), 0); /* nothing armed yet: no thread */

	u = ueventfd(0, 0);
	REQUIRE(u >= 0);
	CHECK_EQ(ueventfd_coalesce(u, &co, NULL), 0);
	/* A sleeping reader, so that the write is held and starts the thread. */
	rd.fd = u;
	REQUIRE(pthread_create(&th, NULL, reader, &rd) == 0);
	while (!__atomic_load_n(&rd.tid, __ATOMIC_ACQUIRE))
		t_sleep_ms(1);
	REQUIRE(t_wait_sleeping(rd.tid, 5000));
	CHECK_EQ(ueventfd_write(u, 5), 0);
	tid = t_timer_tid();
	CHECK(tid > 0);
	if (tid > 0) {
		REQUIRE(sched_getaffinity(tid, sizeof(got), &got) == 0);
		CHECK(CPU_EQUAL(&got, &all));
		CHECK(!CPU_EQUAL(&got, &one));
	}
	CHECK(t_join_within(th, 2000));
	CHECK_EQ(rd.v, 5);
	CHECK_EQ(uepoll_close(u), 0);
	return t_end();
}
