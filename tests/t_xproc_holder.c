/*
 * t_xproc_holder: a process that shares a ueventfd and is stopped, or killed
 * and not reaped, while it may be inside a change of the counter's class
 * (holding the cross-process lock), blocks no other process (issue 32,
 * bugs 1 and 2).  The kernel never makes one process's eventfd call wait
 * for another: a zombie's or a stopped process's included.
 *
 * A child loops on a shared ueventfd (EFD_NONBLOCK), each operation a
 * change of class: write 1 (0 -> 1; in "filling" rounds the write of the
 * maximum, 0 -> full), read (-> 0).  Rounds, each after a random delay of
 * 0-2 ms ($UEPOLL_TEST_SEED replays them):
 *  stopped: the parent SIGSTOPs the child and waits until it is stopped
 *           (filling: the stop may find it between the steps of a fill);
 *  handler: a signal handler of the child tells the parent it runs, then
 *           waits for the parent: its thread, maybe inside the lock, runs
 *           no further until the checks are done (issue 32's attack);
 *  zombie:  the parent SIGKILLs it and waits until it is dead, without
 *           reaping it (waitid WNOWAIT): the child stays a zombie;
 * then, every step under a watchdog (a hang fails, naming the step):
 *  1. a read (non-blocking) takes whatever the child left (or EAGAIN);
 *  2. a write of 1, then poll() reports the fd readable, and a kernel epoll
 *     watching it reports EPOLLIN;
 *  3. a read returns the 1 (plus a unit of the child's write in flight, if
 *     its CAS had come and the read before missed it);
 *  4. a non-blocking read then says EAGAIN, and does not wait;
 *  5. a thread blocked in read is woken by a write of 3 with the 3 (plus
 *     at most the child's unit).
 * Then the stopped child is continued (the next round stops it again), the
 * handler released, and a zombie reaped (the next round forks a new child).  At the end the
 * counter is drained and poll() says not readable.  No timing is asserted:
 * the watchdog only turns a hang into a failure.
 */
#include "xproc.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#define ROUNDS 40

struct shared {
	_Atomic uint64_t ops;
};

static struct shared *sh;

enum mode { M_STOP, M_FILL, M_HANDLER, M_ZOMBIE };
static const char *const MODE[] = { "stopped child", "stopped child filling",
				    "child in a blocked handler",
				    "zombie child" };

/* M_HANDLER: the child's handler tells the parent it runs (hin), then
 * waits for it (hout): whatever the child's thread was inside, a class
 * change with the cross-process lock held among others. */
static int hin[2], hout[2];

static void on_usr1(int sig)
{
	char b = 0;

	(void)sig;
	if (write(hin[1], &b, 1) != 1 || read(hout[0], &b, 1) != 1)
		_exit(4);
}

static void child_loop(int fd, enum mode m)
{
	/* M_FILL: from 0 to the maximum, the write that fills (EAGAIN when
	 * the counter is not 0: the fd is non-blocking). */
	uint64_t v, w = m == M_FILL ? 0xfffffffffffffffeull : 1;

	if (m == M_HANDLER) {
		struct sigaction sa = { .sa_handler = on_usr1,
					.sa_flags = SA_RESTART };

		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR1, &sa, NULL);
	}
	for (;;) {
		if (uepoll_write(fd, &w, 8) != 8 && errno != EAGAIN)
			_exit(2);
		(void)uepoll_read(fd, &v, 8);
		atomic_fetch_add(&sh->ops, 1);
	}
}

static pid_t start_child(struct t_child *c, int fd, enum mode m)
{
	uint64_t ops = atomic_load(&sh->ops);
	pid_t p = x_fork(c);

	REQUIRE(p >= 0);
	if (p == 0)
		child_loop(fd, m);
	/* Until it runs its loop. */
	x_step("uepoll", "child starts");
	while (atomic_load(&sh->ops) < ops + 10)
		sched_yield();
	x_step_end();
	return p;
}

struct reader {
	pthread_t th;
	int fd;
	_Atomic int tid;
	ssize_t r;
	uint64_t v;
};

static void *reader_fn(void *arg)
{
	struct reader *rd = arg;

	atomic_store(&rd->tid, t_gettid());
	rd->r = uepoll_read(rd->fd, &rd->v, 8);
	return NULL;
}

/* The checks of one round, the child stopped or dead. */
static void checks(int fd, int ep, const char *how)
{
	struct epoll_event ev;
	struct reader rd = { .fd = fd };
	uint64_t v;
	ssize_t r;

	x_step(how, "a read takes what the child left");
	r = uepoll_read(fd, &v, 8);
	CHECK(r == 8 || (r < 0 && errno == EAGAIN));
	x_step(how, "a write of 1");
	CHECK_EQ(uepoll_write(fd, &(uint64_t){ 1 }, 8), 8);
	x_step(how, "poll() after the write");
	CHECK(x_poll(fd, POLLIN, 0) & POLLIN);
	CHECK_EQ(epoll_wait(ep, &ev, 1, 0), 1);
	x_step(how, "a read of the write");
	v = 0;
	CHECK_EQ(uepoll_read(fd, &v, 8), 8);
	CHECK(v == 1 || v == 2);
	x_step(how, "a non-blocking read of the empty counter");
	r = uepoll_read(fd, &v, 8);
	CHECK(r < 0 && errno == EAGAIN);
	x_step(how, "a blocked reader woken by a write");
	/* (The child is stopped or dead: it does not see the flag.) */
	REQUIRE(uepoll_fcntl(fd, F_SETFL, 0) == 0);
	REQUIRE(pthread_create(&rd.th, NULL, reader_fn, &rd) == 0);
	while (!atomic_load(&rd.tid))
		sched_yield();
	REQUIRE(t_wait_sleeping(atomic_load(&rd.tid), 8000));
	CHECK_EQ(uepoll_write(fd, &(uint64_t){ 3 }, 8), 8);
	REQUIRE(t_join_within(rd.th, 8000));
	CHECK_EQ(rd.r, 8);
	CHECK(rd.v == 3 || rd.v == 4);
	REQUIRE(uepoll_fcntl(fd, F_SETFL, O_NONBLOCK) == 0);
	x_step_end();
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	uint64_t seed, rs, v;
	struct t_child c;
	int fd, ep;
	siginfo_t si;
	pid_t p;

	t_begin("t_xproc_holder");
	x_init();
	seed = t_seed(32);
	rs = seed;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(sh != MAP_FAILED);
	fd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(fd >= 0);
	ep = epoll_create1(0);
	REQUIRE(ep >= 0);
	REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0);

	REQUIRE(pipe(hin) == 0 && pipe(hout) == 0);
	for (int m = M_STOP; m <= M_ZOMBIE; m++) {
		const char *how = MODE[m];

		p = start_child(&c, fd, m);
		for (int i = 0; i < ROUNDS; i++) {
			char b = 0;

			t_sleep_ms((int)(t_rand(&rs) % 3));
			x_step(how, "stop, signal or kill the child");
			if (m == M_STOP || m == M_FILL) {
				kill(p, SIGSTOP);
				REQUIRE(waitid(P_PID, (id_t)p, &si,
					       WSTOPPED | WNOWAIT) == 0);
			} else if (m == M_HANDLER) {
				kill(p, SIGUSR1);
				REQUIRE(read(hin[0], &b, 1) == 1);
			} else {
				kill(p, SIGKILL);
				/* Dead, not reaped: a zombie. */
				REQUIRE(waitid(P_PID, (id_t)p, &si,
					       WEXITED | WNOWAIT) == 0);
			}
			checks(fd, ep, how);
			x_step(how, "continue, release or reap the child");
			if (m == M_STOP || m == M_FILL) {
				/* (Reap the stop report, then continue.) */
				REQUIRE(waitid(P_PID, (id_t)p, &si,
					       WSTOPPED) == 0);
				kill(p, SIGCONT);
			} else if (m == M_HANDLER) {
				REQUIRE(write(hout[1], &b, 1) == 1);
			} else {
				t_child_kill(&c);
				p = start_child(&c, fd, m);
			}
			x_step_end();
		}
		x_step(how, "end the child");
		t_child_kill(&c);
		x_step_end();
	}
	close(hin[0]);
	close(hin[1]);
	close(hout[0]);
	close(hout[1]);
	/* Drained, the fd says not readable (a next operation settles what a
	 * dead holder left). */
	x_step("uepoll", "the end");
	while (uepoll_read(fd, &v, 8) == 8)
		;
	CHECK(!(x_poll(fd, POLLIN, 0) & POLLIN));
	x_step_end();
	close(ep);
	CHECK_EQ(uepoll_close(fd), 0);
	munmap(sh, sizeof(*sh));
	return t_end();
}
