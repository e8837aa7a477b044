/*
 * t_efd_syscalls: what a ueventfd's reads and writes cost in system calls,
 * against what the kernel's eventfd needs for the same sequence (each of
 * its reads and writes is one call).  A ueventfd whose fd shows the
 * kernel's readiness exactly (issue 18, item 1) still makes no more calls
 * than the kernel's, and far fewer in the common patterns:
 *  (a) 1000 rounds of {write 1; read}: at most 2000 (the kernel's 2000;
 *      expected: one arming write and one draining read a round);
 *  (b) 1000 writes of 1, then one read: at most 2 (the first write arms,
 *      the later ones make none, the read drains);
 *  (c) a drain loop ("read until EAGAIN") on an EFD_NONBLOCK ueventfd: the
 *      final, empty read makes no call;
 *  (d) semaphore: a write of 1000, then 1000 reads of 1: at most 2 plus a
 *      few (arm, drain at the end).
 * (a), (b) and (d) on blocking and EFD_NONBLOCK ueventfds.
 * (e) with UEVENTFD_NOPOLL (nobody polls the fd from outside): (a) makes at
 *     most 2 calls in all (the first write arms, no read drains).
 *
 * The count: this program is linked with tests/libcwrap.c, which defines
 * the libc names the library reaches the kernel through (src/sys.c), and
 * counts the calls the calling thread makes.  The kernel's own count is
 * measured the same way, with read(2)/write(2) on a kernel eventfd.  These
 * are counts, not timings.
 */
#include "testlib.h"
#include "libcwrap.h"

#include <sys/eventfd.h>
#include <unistd.h>

#define ROUNDS 1000

/* Which side a sequence runs on. */
struct side {
	int kernel; /* 1: a kernel eventfd with read/write */
	int fd;
};

static ssize_t s_read(struct side *s, uint64_t *v)
{
	return s->kernel ? read(s->fd, v, sizeof(*v))
			 : uepoll_read(s->fd, v, sizeof(*v));
}

static ssize_t s_write(struct side *s, uint64_t v)
{
	return s->kernel ? write(s->fd, &v, sizeof(v))
			 : uepoll_write(s->fd, &v, sizeof(v));
}

static void s_open(struct side *s, int kernel, unsigned int init, int flags)
{
	s->kernel = kernel;
	s->fd = kernel ? eventfd(init, flags) : ueventfd(init, flags);
	REQUIRE(s->fd >= 0);
}

static void s_close(struct side *s)
{
	CHECK_EQ(s->kernel ? close(s->fd) : uepoll_close(s->fd), 0);
}

/* Start counting this thread's calls. */
static void count_start(void)
{
	wrap_take(-1);
	wrap_arm(0);
}

static int count_stop(void)
{
	wrap_disarm();
	return wrap_take(-1);
}

/* (a) ROUNDS of {write 1; read}; the calls made. */
static int seq_a(int kernel, int flags)
{
	struct side s;
	uint64_t v;
	int n;

	s_open(&s, kernel, 0, flags);
	count_start();
	for (int i = 0; i < ROUNDS; i++) {
		CHECK_EQ(s_write(&s, 1), 8);
		v = 0;
		CHECK_EQ(s_read(&s, &v), 8);
		CHECK_EQ(v, 1);
	}
	n = count_stop();
	s_close(&s);
	return n;
}

/* (b) ROUNDS writes of 1, then one read. */
static int seq_b(int kernel, int flags)
{
	struct side s;
	uint64_t v = 0;
	int n;

	s_open(&s, kernel, 0, flags);
	count_start();
	for (int i = 0; i < ROUNDS; i++)
		CHECK_EQ(s_write(&s, 1), 8);
	CHECK_EQ(s_read(&s, &v), 8);
	n = count_stop();
	CHECK_EQ(v, ROUNDS);
	s_close(&s);
	return n;
}

/* (c) a few writes, then "read until EAGAIN" on a non-blocking fd: the
 * calls of the whole loop (*all) and of its last, empty read. */
static int seq_c(int kernel, int flags, int *all)
{
	struct side s;
	uint64_t v, sum = 0;
	int last = -1, reads = 0;

	s_open(&s, kernel, 0, flags | EFD_NONBLOCK);
	for (int i = 0; i < 5; i++)
		CHECK_EQ(s_write(&s, 1), 8);
	*all = 0;
	for (;;) {
		ssize_t r;
		int e;

		count_start();
		r = s_read(&s, &v);
		e = errno;
		last = count_stop();
		*all += last;
		if (r < 0) {
			CHECK_EQ(e, EAGAIN);
			break;
		}
		sum += v;
		if (++reads > 10) {
			CHECK(!"drain loop does not end");
			break;
		}
	}
	CHECK_EQ(sum, 5);
	s_close(&s);
	return last;
}

/* (d) semaphore: a write of ROUNDS, then ROUNDS reads of 1. */
static int seq_d(int kernel, int flags)
{
	struct side s;
	uint64_t v;
	int n;

	s_open(&s, kernel, 0, flags | EFD_SEMAPHORE);
	count_start();
	CHECK_EQ(s_write(&s, ROUNDS), 8);
	for (int i = 0; i < ROUNDS; i++) {
		v = 0;
		CHECK_EQ(s_read(&s, &v), 8);
		CHECK_EQ(v, 1);
	}
	n = count_stop();
	s_close(&s);
	return n;
}

int main(void)
{
	static const int fl[] = { 0, EFD_NONBLOCK };
	int k, u, kall, uall;

	/* Coalescing would defer the arming write to the timer thread: this
	 * is about the default. */
	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_begin("t_efd_syscalls");
	t_watchdog(60);
	/* The first ueventfd probes the kernel once (a long write): not part
	 * of any sequence. */
	u = ueventfd(0, 0);
	REQUIRE(u >= 0);
	CHECK_EQ(uepoll_close(u), 0);

	for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
		const char *f = fl[i] ? "EFD_NONBLOCK" : "blocking";

		k = seq_a(1, fl[i]);
		u = seq_a(0, fl[i]);
		printf("(a) %s: %d x {write 1; read}: kernel %d calls, "
		       "ueventfd %d\n", f, ROUNDS, k, u);
		CHECK_EQ(k, 2 * ROUNDS); /* the measure itself */
		CHECK(u <= 2 * ROUNDS);

		u = seq_a(0, fl[i] | UEVENTFD_NOPOLL);
		printf("(e) %s: UEVENTFD_NOPOLL, %d x {write 1; read}: "
		       "ueventfd %d\n", f, ROUNDS, u);
		CHECK(u <= 2);

		k = seq_b(1, fl[i]);
		u = seq_b(0, fl[i]);
		printf("(b) %s: %d x write 1, then read: kernel %d calls, "
		       "ueventfd %d\n", f, ROUNDS, k, u);
		CHECK_EQ(k, ROUNDS + 1);
		CHECK(u <= 2);

		k = seq_d(1, fl[i]);
		u = seq_d(0, fl[i]);
		printf("(d) %s: semaphore, write %d, then %d reads: kernel %d "
		       "calls, ueventfd %d\n", f, ROUNDS, ROUNDS, k, u);
		CHECK_EQ(k, ROUNDS + 1);
		CHECK(u <= 4);
	}

	k = seq_c(1, 0, &kall);
	u = seq_c(0, 0, &uall);
	printf("(c) EFD_NONBLOCK: 5 x write 1, drain loop: kernel %d calls "
	       "(the empty read: %d), ueventfd %d (the empty read: %d)\n",
	       kall, k, uall, u);
	CHECK_EQ(k, 1);
	CHECK_EQ(u, 0);
	CHECK(uall <= kall);
	k = seq_c(1, EFD_SEMAPHORE, &kall);
	u = seq_c(0, EFD_SEMAPHORE, &uall);
	printf("(c) EFD_NONBLOCK semaphore: 5 x write 1, drain loop: kernel %d "
	       "calls (the empty read: %d), ueventfd %d (the empty read: %d)\n",
	       kall, k, uall, u);
	CHECK_EQ(k, 1);
	CHECK_EQ(u, 0);
	CHECK(uall <= kall);
	return t_end();
}
