/*
 * t_xproc_fill_margin: FILL (src/eventfd.c uefd__settle) never passes the
 * kernel fd's maximum, however many bypasses raise it meanwhile (issue 32,
 * found by an outside tester with 67 raisers against a margin of 64: the
 * holder's write(2) past the maximum blocked until a read).
 *
 * One shared ueventfd (a child forked and parked keeps it shared), blocking.
 * Thread H writes the maximum to the counter of 0; the test holds it at its
 * second write(2) of the kernel fd (the fill's first step; the first was
 * the raise before its CAS), the cross-process lock held, through a hook at
 * the library's system calls (libcwrap.h).  Then, each bypassing H (held
 * too long):
 *  - the main thread reads the maximum (drains the kernel fd to 0);
 *  - RAISERS threads each write 1, each held at its raise's write(2), after
 *    its look found the kernel fd not readable;
 * then the raisers are let go (the kernel fd now holds RAISERS), then H.
 * H's write must end (a watchdog turns a hang into a failure), and then the
 * fd reads as the kernel's eventfd after the same operations: readable and
 * writable, RAISERS to read, then writable only.  No timing is asserted.
 */
#include "libcwrap.h"
#include "xproc.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

#define RAISERS 80
#define FULL 0xfffffffffffffffeull

static int fd;
static _Atomic int h_writes, h_held, h_go;
static _Atomic int r_held, r_go;

/* H: the hook follows its write(2)s; the second is held. */
static void h_hook(long nr)
{
	if (nr != SYS_write || atomic_fetch_add(&h_writes, 1) + 1 < 2) {
		wrap_hook_once(h_hook);
		return;
	}
	atomic_store(&h_held, 1);
	while (!atomic_load(&h_go))
		sched_yield();
}

static void *h_main(void *arg)
{
	uint64_t v = FULL;

	(void)arg;
	wrap_hook_once(h_hook);
	return (void *)(intptr_t)uepoll_write(fd, &v, 8);
}

/* A raiser: its first write(2) is its raise (a bypass, before its CAS). */
static void r_hook(long nr)
{
	if (nr != SYS_write) {
		wrap_hook_once(r_hook);
		return;
	}
	atomic_fetch_add(&r_held, 1);
	while (!atomic_load(&r_go))
		sched_yield();
}

static void *r_main(void *arg)
{
	uint64_t v = 1;

	(void)arg;
	wrap_hook_once(r_hook);
	return (void *)(intptr_t)uepoll_write(fd, &v, 8);
}

/* The same operations on the kernel's eventfd, one after the other: what
 * poll() says, then the read, then poll() again. */
static void kernel_ref(int *ev0, uint64_t *got, int *ev1)
{
	int k = eventfd(0, EFD_CLOEXEC);
	uint64_t v = FULL;

	REQUIRE(k >= 0);
	REQUIRE(write(k, &v, 8) == 8 && read(k, &v, 8) == 8);
	for (int i = 0; i < RAISERS; i++) {
		v = 1;
		REQUIRE(write(k, &v, 8) == 8);
	}
	*ev0 = x_poll(k, POLLIN | POLLOUT, 0);
	REQUIRE(read(k, got, 8) == 8);
	*ev1 = x_poll(k, POLLIN | POLLOUT, 0);
	close(k);
}

int main(void)
{
	pthread_t h, r[RAISERS];
	struct x_park park;
	int kev0, kev1, ev0, ev1;
	uint64_t v, kgot;
	void *ret;

	t_begin("t_xproc_fill_margin");
	x_init();
	kernel_ref(&kev0, &kgot, &kev1);

	fd = ueventfd(0, EFD_CLOEXEC);
	REQUIRE(fd >= 0);
	x_park(&park); /* the fd shared from here on */

	x_step("uepoll", "H reaches its fill, the lock held");
	REQUIRE(pthread_create(&h, NULL, h_main, NULL) == 0);
	while (!atomic_load(&h_held))
		sched_yield();
	x_step_end();

	x_step("uepoll", "a read of the maximum bypasses H");
	CHECK_EQ(uepoll_read(fd, &v, 8), 8);
	CHECK(v == FULL);
	x_step_end();

	x_step("uepoll", "the raisers bypass H and look");
	for (int i = 0; i < RAISERS; i++)
		REQUIRE(pthread_create(&r[i], NULL, r_main, NULL) == 0);
	while (atomic_load(&r_held) < RAISERS)
		sched_yield();
	x_step_end();

	x_step("uepoll", "the raisers' writes end");
	atomic_store(&r_go, 1);
	for (int i = 0; i < RAISERS; i++) {
		REQUIRE(pthread_join(r[i], &ret) == 0);
		CHECK_EQ((intptr_t)ret, 8);
	}
	x_step_end();

	x_step("uepoll", "H's write ends (its fill never passes the maximum)");
	atomic_store(&h_go, 1);
	REQUIRE(pthread_join(h, &ret) == 0);
	CHECK_EQ((intptr_t)ret, 8);
	x_step_end();

	x_step("uepoll", "the fd reads as the kernel's");
	ev0 = x_poll(fd, POLLIN | POLLOUT, 0);
	CHECK_EQ(ev0, kev0);
	if (ev0 & POLLIN) {
		CHECK_EQ(uepoll_read(fd, &v, 8), 8);
		CHECK_EQ(v, kgot);
	}
	ev1 = x_poll(fd, POLLIN | POLLOUT, 0);
	CHECK_EQ(ev1, kev1);
	x_step_end();

	x_unpark(&park);
	CHECK_EQ(uepoll_close(fd), 0);
	return t_end();
}
