/*
 * t_nest_race: a doorbell ring racing with a take must not leave a held
 * instance ready with nothing in it (DOORBELL and WATCHED in src/bell.c;
 * issue 32, bug 11's root: a store of the bell's `set` that hides a ring).
 *
 * An instance is held by another instance or by a kernel epoll (through
 * uepoll_ctl), level- or edge-triggered (a kernel epoll holding it
 * level-triggered does not make it watched: there a wait that finds nothing
 * takes the doorbell).  Trial after trial, a writer
 * thread makes one event (a ring of the doorbell: one per event for an
 * edge-triggered holder, one per idle -> ready change for a level-triggered
 * one) while this thread collects it, with zero-timeout waits, as it
 * arrives: the wait that takes the event finds the queue empty and takes
 * the doorbell (bell__clear), often while the ring's write is still being
 * made.  Once the write has returned and the counter is read, nothing is
 * ready: the instance must not poll ready.  Before the doorbell's write and
 * read were each made one step with their change of `set` (dblock), a take
 * that read the eventfd before the write landed and stored `set` = 0 after
 * the ring's store of 1 left the write in the eventfd for good: 20 to 500
 * trials in 20000, in every run, with an instance as the holder.  No
 * timing decides anything here: the count of trials that end ready must
 * be 0.
 */
#include "testlib.h"

#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

static int ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

struct race {
	int e;
	int trials;
	/* The trial the writer may make, and the last one it made: handed
	 * over on futex words, so that beside a CPU hog a thread that waits
	 * for the other sleeps (a yield loop there gives its CPU to the hog
	 * for a time slice at every turn). */
	_Atomic int turn, done;
};

static void word_set(_Atomic int *w, int v)
{
	atomic_store(w, v);
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void word_wait(_Atomic int *w, int v)
{
	int c;

	while ((c = atomic_load(w)) != v)
		syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, c, NULL, NULL, 0);
}

static void *writer(void *arg)
{
	struct race *r = arg;
	uint64_t v = 1;

	for (int i = 1; i <= r->trials; i++) {
		word_wait(&r->turn, i);
		CHECK_EQ(uepoll_write(r->e, &v, 8), 8);
		word_set(&r->done, i);
	}
	return NULL;
}

/* kernel: the holder is a kernel epoll; et: it holds the instance
 * EPOLLET.  Returns the trials that ended with the instance ready. */
static long run(int kernel, int et, int trials)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 1 },
			   out[8];
	struct race r = { .trials = trials };
	int in = uepoll_create1(0), h = kernel ? epoll_create1(0)
					       : uepoll_create1(0);
	long stuck = 0;
	pthread_t th;
	uint64_t v;

	r.e = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(in >= 0 && h >= 0 && r.e >= 0);
	/* Edge-triggered: the wait that takes the event leaves the queue
	 * empty (and takes the doorbell). */
	REQUIRE(uepoll_ctl(in, EPOLL_CTL_ADD, r.e, &ev) == 0);
	ev.events = et ? EPOLLIN | EPOLLET : EPOLLIN;
	REQUIRE(uepoll_ctl(h, EPOLL_CTL_ADD, in, &ev) == 0);
	REQUIRE(pthread_create(&th, NULL, writer, &r) == 0);
	for (int i = 1; i <= trials; i++) {
		word_set(&r.turn, i);
		/* Spin (the take must meet the ring), but yield now and then:
		 * beside a CPU hog the writer may need this CPU. */
		for (int spins = 0; uepoll_wait(in, out, 8, 0) == 0; spins++)
			if (spins % 256 == 255)
				sched_yield();
		word_wait(&r.done, i);
		CHECK_EQ(uepoll_read(r.e, &v, 8), 8);
		CHECK_EQ(uepoll_wait(in, out, 8, 0), 0);
		if (ready(in))
			stuck++;
		if (kernel) /* its edges, taken so they do not pile up */
			(void)epoll_wait(h, out, 8, 0);
	}
	pthread_join(th, NULL);
	if (kernel)
		close(h);
	else
		uepoll_close(h);
	uepoll_close(r.e);
	uepoll_close(in);
	return stuck;
}

int main(void)
{
	int trials = (int)(20000 * t_scale());

	t_begin("t_nest_race");
	t_watchdog(280);
	if (trials < 1000)
		trials = 1000;
	for (int kernel = 0; kernel < 2; kernel++)
		for (int et = 0; et < 2; et++) {
			long n;

			n = run(kernel, et, trials);
			printf("holder %s, %s: %ld of %d trials left the "
			       "instance ready\n",
			       kernel ? "a kernel epoll" : "an instance",
			       et ? "EPOLLET" : "level-triggered", n, trials);
			CHECK_EQ(n, 0);
		}
	return t_end();
}
