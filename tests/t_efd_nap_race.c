/*
 * t_efd_nap_race: a write that lands while a blocked reader of a
 * UEVENTFD_NOPOLL ueventfd is on its way to its nap wakes it, or is seen
 * by it (NAP in src/eventfd.c, uefd__rsleep: read rwake, count itself in
 * xsleepers, then look at the counter; models/rnap.pml, mutant LOOK_FIRST).
 *
 * Thread R makes a blocking uepoll_read of the empty counter.  Its first
 * system call on the way to the nap is the F_GETFL that tells whether the
 * fd blocks; the test writes 1 from inside that call, before it is made (a
 * hook at the library's system calls, libcwrap.h).  The write's CAS comes
 * before R counts itself, so it wakes nobody: R's look at the counter,
 * after its count, must find the value.  A look made before the write
 * leaves R asleep with the counter at 1: R must return 1 within 5 s, and
 * is let go (by a second write) if not.  Nothing is decided by time
 * otherwise.
 */
#include "testlib.h"
#include "libcwrap.h"

#include <stdatomic.h>
#include <sys/syscall.h>

static int efd;
static _Atomic int hooked;

static void hook(long nr)
{
	uint64_t one = 1;

	if (nr != SYS_fcntl) {
		wrap_hook_once(hook);
		return;
	}
	atomic_store(&hooked, 1);
	CHECK_EQ(uepoll_write(efd, &one, 8), 8);
}

static uint64_t got;

static void *reader(void *arg)
{
	(void)arg;
	wrap_hook_once(hook);
	CHECK_EQ(uepoll_read(efd, &got, 8), 8);
	return NULL;
}

int main(void)
{
	uint64_t one = 1;
	pthread_t th;

	t_begin("t_efd_nap_race");
	t_watchdog(60);
	efd = ueventfd(0, UEVENTFD_NOPOLL);
	REQUIRE(efd >= 0);
	REQUIRE(pthread_create(&th, NULL, reader, NULL) == 0);
	if (!t_join_within(th, 5000)) {
		fprintf(stderr, "the reader still naps 5 s after the write\n");
		t_failures++;
		CHECK_EQ(uepoll_write(efd, &one, 8), 8); /* let it go */
		REQUIRE(t_join_within(th, 5000));
	}
	CHECK(atomic_load(&hooked));
	CHECK_EQ(got, 1);
	uepoll_close(efd);
	return t_end();
}
