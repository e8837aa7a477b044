/*
 * t_efd_mirror_race: a ueventfd's kernel fd (the mirror) shows the
 * counter's readiness after a sync (MIRROR in src/eventfd.c,
 * models/mirror.pml) raced by another thread at each of its system calls.
 *
 * Thread A's call is held at one system call of its sync, through a hook at
 * the library's system calls (libcwrap.h), while the main thread makes one
 * call on the same ueventfd; then A is let go.  Afterwards the fd must be
 * as the kernel's eventfd after the same operations (poll(): readable iff
 * the counter is non-zero), and stay so over a read and a write.
 *  - raise: A writes 1 and is held at the write(2) that raises the mirror;
 *    the main thread writes 1 (the classes agree: no call); after A, a read
 *    of 2 and a write of 1 must leave the fd readable.  (A raise that wrote
 *    before its CAS of kunits would add a second unit and lose one count.)
 *  - overtaken: A writes 1 and is held at that write(2); the main thread
 *    reads the 1 (its drain finds the unit still in flight and leaves it
 *    to A); after A, the fd must not be readable.  (A sync that stopped
 *    after one step would leave the unit there.)
 *  - drain: the counter at 1, A reads it and is held at its drain's
 *    read(2) of the kernel fd; the main thread writes 1 (kunits still
 *    counts the unit: no call); after A, the fd must be readable.  (A
 *    drain that lowered kunits before its read would make the write raise
 *    a second unit and then take both.)
 * Nothing waits on a clock: the hook yields until the main thread is done,
 * and a hang ends at the watchdog.
 */
#include "libcwrap.h"
#include "testlib.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

static int fd;
static long hook_nr;
static _Atomic int held, go;

static void hook(long nr)
{
	if (nr != hook_nr) {
		wrap_hook_once(hook);
		return;
	}
	atomic_store(&held, 1);
	while (!atomic_load(&go))
		sched_yield();
}

/* A: its call (a write of 1, or a read) held at system call nr. */
struct a_call {
	int write;
	long nr;
	ssize_t r;
	uint64_t v;
};

static void *a_main(void *arg)
{
	struct a_call *a = arg;

	a->v = 1;
	hook_nr = a->nr;
	wrap_hook_once(hook);
	a->r = a->write ? uepoll_write(fd, &a->v, 8) : uepoll_read(fd, &a->v, 8);
	wrap_hook_once(NULL);
	return NULL;
}

static int readable(int f)
{
	struct pollfd p = { .fd = f, .events = POLLIN };

	REQUIRE(poll(&p, 1, 0) >= 0);
	return (p.revents & POLLIN) != 0;
}

static void w1(int f)
{
	uint64_t v = 1;

	CHECK_EQ(uepoll_write(f, &v, 8), 8);
}

static uint64_t r1(int f)
{
	uint64_t v = 0;

	CHECK_EQ(uepoll_read(f, &v, 8), 8);
	return v;
}

/* A's call held at nr while main() runs, then let go and joined. */
static void race(struct a_call *a, void (*main_step)(void))
{
	pthread_t th;

	atomic_store(&held, 0);
	atomic_store(&go, 0);
	REQUIRE(pthread_create(&th, NULL, a_main, a) == 0);
	while (!atomic_load(&held))
		sched_yield();
	main_step();
	atomic_store(&go, 1);
	REQUIRE(t_join_within(th, 10000));
	CHECK_EQ(a->r, 8);
}

static void main_write(void)
{
	w1(fd);
}

static void main_read(void)
{
	CHECK_EQ(r1(fd), 1);
}

/* The kernel's eventfd after the same operations (ops: 'w' write 1, 'r'
 * read): readable? */
static int kernel_readable(const char *ops)
{
	int k = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	uint64_t v;
	int r;

	REQUIRE(k >= 0);
	for (; *ops; ops++) {
		v = 1;
		REQUIRE((*ops == 'w' ? write(k, &v, 8) : read(k, &v, 8)) == 8);
	}
	r = readable(k);
	close(k);
	return r;
}

static void check(const char *what, const char *ops)
{
	int u = readable(fd), k = kernel_readable(ops);

	if (u != k)
		fprintf(stderr, "%s: after %s the ueventfd is%s readable, the kernel's eventfd%s\n",
			what, ops, u ? "" : " not", k ? " is" : " not");
	CHECK_EQ(u, k);
}

static void raise_race(void)
{
	struct a_call a = { .write = 1, .nr = SYS_write };

	fd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(fd >= 0);
	race(&a, main_write);
	check("raise", "ww");
	CHECK_EQ(r1(fd), 2);
	check("raise", "wwr");
	w1(fd);
	check("raise", "wwrw");
	CHECK_EQ(r1(fd), 1);
	check("raise", "wwrwr");
	CHECK_EQ(uepoll_close(fd), 0);
}

static void overtaken(void)
{
	struct a_call a = { .write = 1, .nr = SYS_write };

	fd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(fd >= 0);
	race(&a, main_read);
	check("overtaken", "wr");
	w1(fd);
	check("overtaken", "wrw");
	CHECK_EQ(r1(fd), 1);
	check("overtaken", "wrwr");
	CHECK_EQ(uepoll_close(fd), 0);
}

static void drain(void)
{
	struct a_call a = { .write = 0, .nr = SYS_preadv2 };

	fd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(fd >= 0);
	w1(fd);
	race(&a, main_write);
	CHECK_EQ(a.v, 1);
	check("drain", "wrw");
	CHECK_EQ(r1(fd), 1);
	check("drain", "wrwr");
	w1(fd);
	check("drain", "wrwrw");
	CHECK_EQ(uepoll_close(fd), 0);
}

int main(void)
{
	t_begin("t_efd_mirror_race");
	t_watchdog(60);
	raise_race();
	overtaken();
	drain();
	return t_end();
}
