/*
 * t_seam: the library reaches the kernel through one seam (src/sys.c), and
 * once that seam is bound to libc's own definitions (sys_bind_libc, what a
 * preloaded layer does first) no call of the library goes through the
 * process's `read`, `write`, `close`, `epoll_pwait`, `epoll_pwait2`, `ppoll`
 * or `syscall`: a preload that wraps those for the program is never
 * re-entered by the library it calls.
 *
 * This program is linked with tests/libcwrap.c, which defines the seven
 * (the static library's references resolve to those definitions, as a
 * preloaded library's would win the symbol lookup) and counts the calls
 * made while the library runs.  Before
 * the bind the counts must be non-zero (the check can fail); after it, zero
 * for the same operations: instance and ueventfd creation, ctl, waits that
 * poll and that sleep (woken by another thread), blocking and non-blocking
 * ueventfd reads and writes, a FIFO follower's sleep, and the pass-through
 * of a program's own fds (read, write, close of a pipe).
 */
#include "testlib.h"
#include "libcwrap.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* The library's own (hidden in the shared object, linkable from the static
 * archive): src/sys.h. */
int sys_bind_libc(void);

/* A thread blocked in uepoll_wait until the main thread writes. */
static void *sleeper(void *arg)
{
	struct epoll_event ev;
	int ep = *(int *)arg;

	return (void *)(intptr_t)uepoll_wait(ep, &ev, 1, 5000);
}

/* A blocking read of a ueventfd at 0, until the main thread writes. */
static void *reader(void *arg)
{
	uint64_t v;

	return (void *)(intptr_t)uepoll_read(*(int *)arg, &v, sizeof(v));
}

/* A FIFO instance: the second waiter follows (sleeps in ppoll on its own
 * eventfd) until the first hands over. */
static void *fifo_waiter(void *arg)
{
	struct epoll_event ev;
	int ep = *(int *)arg;

	return (void *)(intptr_t)uepoll_wait(ep, &ev, 1, 5000);
}

/* Everything the library does for a program, once. */
static void workload(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[4];
	int ep, fifo, e, eb, pfd[2];
	pthread_t th, th2;
	uint64_t v = 0;
	void *ret;
	char c = 'x';

	REQUIRE(pipe(pfd) == 0); /* (before arming: the program's own call) */
	wrap_arm(1);
	ep = uepoll_create1(EPOLL_CLOEXEC);
	e = ueventfd(0, EFD_NONBLOCK);
	eb = ueventfd(0, 0);
	REQUIRE(ep >= 0 && e >= 0 && eb >= 0);
	ev.data.u64 = 1;
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, e, &ev), 0);
	ev.data.u64 = 2;
	CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &ev), 0);
	/* A poll, then a wait that sleeps until the other thread's write. */
	CHECK_EQ(uepoll_wait(ep, out, 4, 0), 0);
	REQUIRE(pthread_create(&th, NULL, sleeper, &ep) == 0);
	t_sleep_ms(20);
	CHECK_EQ(ueventfd_write(e, 1), 0);
	pthread_join(th, &ret);
	CHECK_EQ((int)(intptr_t)ret, 1);
	CHECK_EQ(ueventfd_read(e, &v), 0);
	/* A timed wait that times out (sleeps in the kernel epoll). */
	CHECK_EQ(uepoll_wait(ep, out, 4, 5), 0);
	/* The program's pipe, passed through. */
	CHECK_EQ(uepoll_write(pfd[1], &c, 1), 1);
	CHECK_EQ(uepoll_wait(ep, out, 4, 100), 1);
	CHECK_EQ(uepoll_read(pfd[0], &c, 1), 1);
	/* A blocking ueventfd read that has to sleep. */
	REQUIRE(pthread_create(&th, NULL, reader, &eb) == 0);
	t_sleep_ms(20);
	CHECK_EQ(ueventfd_write(eb, 5), 0);
	pthread_join(th, &ret);
	CHECK_EQ((int)(intptr_t)ret, 8);
	/* FIFO: a follower sleeps on its own eventfd. */
	fifo = uepoll_create2(0, UEPOLL_WAKE_FIFO);
	REQUIRE(fifo >= 0);
	ev.data.u64 = 3;
	CHECK_EQ(uepoll_ctl(fifo, EPOLL_CTL_ADD, eb, &ev), 0);
	REQUIRE(pthread_create(&th, NULL, fifo_waiter, &fifo) == 0);
	REQUIRE(pthread_create(&th2, NULL, fifo_waiter, &fifo) == 0);
	t_sleep_ms(30);
	CHECK_EQ(ueventfd_write(eb, 2), 0);
	t_sleep_ms(10);
	CHECK_EQ(ueventfd_write(eb, 2), 0);
	pthread_join(th, NULL);
	pthread_join(th2, NULL);
	CHECK_EQ(uepoll_read(eb, &v, 8), 8); /* blocking fd, counter > 0 */
	CHECK_EQ(uepoll_close(fifo), 0);
	CHECK_EQ(uepoll_close(pfd[0]), 0);
	CHECK_EQ(uepoll_close(pfd[1]), 0);
	CHECK_EQ(uepoll_close(eb), 0);
	CHECK_EQ(uepoll_close(e), 0);
	CHECK_EQ(uepoll_close(ep), 0);
	wrap_disarm();
}

int main(void)
{
	t_begin("t_seam");
	t_watchdog(60);
	/* Not bound: the library's calls reach the process's symbols (these
	 * wrappers).  Proof that the check below can fail. */
	workload();
	printf("calls through the process's symbols, seam not bound:\n");
	CHECK(wrap_take_show() > 0);
	if (sys_bind_libc() != 0)
		T_SKIP("libc.so.6 not found (static executable?)");
	workload();
	printf("calls through the process's symbols, seam bound to libc:\n");
	CHECK_EQ(wrap_take_show(), 0);
	return t_end();
}
