/*
 * t_xproc_nopoll_end: a UEVENTFD_NOPOLL ueventfd shared by a fork keeps
 * NOPOLL in both processes (its changes of class leave the kernel fd alone:
 * NOPOLL in src/eventfd_shared.c), and when one process ends it (a kernel
 * epoll's ctl through uepoll_ctl, an instance's registration) the kernel
 * fd is exact for every process before that process looks, whatever the
 * other did or where it died or stopped (models/xnopoll.pml).  Each look
 * is compared with a kernel eventfd given the same operations
 * (differential):
 *  (a) handoffs between parent and child, then the PARENT ends NOPOLL with
 *      a kernel epoll's ADD: poll(2) and epoll_wait see the counter the
 *      child left (non-zero over a kernel fd no write(2) touched), then a
 *      read and a write of the child's, exactly; a second ueventfd ended
 *      by a uepoll instance's registration in the child (a kernel one:
 *      SHARED), and a third whose kernel fd kept a stale unit from before
 *      the fork (MIRROR's NOPOLL) over an empty counter;
 *  (b) the child SIGKILLed asleep in a blocked read: the parent writes,
 *      ends NOPOLL, sees it readable;
 *  (c) the child SIGKILLed right after the CAS of its write from 0, the
 *      lock held (a hardware watchpoint on the counter, tests/watchpoint.h):
 *      the parent's end repairs (ROBUST) and sees it readable; the same
 *      after the CAS of its read that empties the counter: not readable;
 *  (d) the child stopped (held in its watchpoint's handler) right after
 *      the CAS of its write from 0, the lock held: the parent's end
 *      bypasses it and must make the fd readable itself (END_NO_RAISE);
 *  (e) the child held right after it took the lock for a write from 0,
 *      before it asked NOPOLL; the parent ends NOPOLL (bypassing it), then
 *      the child goes on and is killed right after its CAS: its write must
 *      have seen the end (it asks under the lock: LOOK_OUTSIDE).
 * (c)-(e) are skipped (noted) without perf breakpoints (and under TSan).
 * No timing is asserted.
 */
#include "watchpoint.h"
#include "xproc.h"

#include "eventfd_impl.h"
#include "fdtab.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/uio.h>

/* The child's watchpoint program, in MAP_SHARED memory. */
enum { W_NONE, W_KILL_AFTER_CAS_UP, W_KILL_AFTER_CAS_DOWN, W_HOLD_AFTER_CAS,
       W_HOLD_LOCKED_THEN_KILL };
struct shared_ctl {
	_Atomic int mode, held, go, watch_err;
};
static struct shared_ctl *ctl;
static struct uefd_ctr *wctr;
static int my_tid;

#ifndef FUTEX_TID_MASK
#define FUTEX_TID_MASK 0x3fffffff
#endif

/* The counter, read by the kernel (process_vm_readv): a load of the
 * handler's own would trap again, for ever. */
static uint64_t count_now(void)
{
	uint64_t c = 0;
	struct iovec l = { .iov_base = &c, .iov_len = sizeof(c) };
	struct iovec r = { .iov_base = (void *)&wctr->count,
			   .iov_len = sizeof(c) };

	if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != sizeof(c))
		_exit(5);
	return c;
}

/* After each access of the child's thread to the counter (relaxed atomics
 * only: watchpoint.h). */
static void on_count(const void *addr)
{
	uint64_t c = count_now();
	int mode = atomic_load_explicit(&ctl->mode, memory_order_relaxed);
	uint32_t owner = (uint32_t)__atomic_load_n(&wctr->xm.__data.__lock,
						   __ATOMIC_RELAXED) &
			 FUTEX_TID_MASK;

	(void)addr;
	switch (mode) {
	case W_KILL_AFTER_CAS_UP:
		if (c != 0)
			raise(SIGKILL);
		break;
	case W_KILL_AFTER_CAS_DOWN:
		if (c == 0)
			raise(SIGKILL);
		break;
	case W_HOLD_AFTER_CAS:
		if (c != 0 && !atomic_load_explicit(&ctl->held,
						    memory_order_relaxed)) {
			atomic_store_explicit(&ctl->held, 1,
					      memory_order_relaxed);
			while (!atomic_load_explicit(&ctl->go,
						     memory_order_relaxed))
				sched_yield();
		}
		break;
	case W_HOLD_LOCKED_THEN_KILL:
		if (c != 0)
			raise(SIGKILL);
		if (owner == (uint32_t)my_tid &&
		    !atomic_load_explicit(&ctl->held, memory_order_relaxed)) {
			atomic_store_explicit(&ctl->held, 1,
					      memory_order_relaxed);
			while (!atomic_load_explicit(&ctl->go,
						     memory_order_relaxed))
				sched_yield();
		}
		break;
	}
	atomic_thread_fence(memory_order_seq_cst);
}

static int pollin(int fd)
{
	return x_poll(fd, POLLIN, 0) & POLLIN ? 1 : 0;
}

static void wr(int fd, uint64_t v)
{
	CHECK_EQ(uepoll_write(fd, &v, 8), 8);
}

static void kwr(int fd, uint64_t v)
{
	CHECK_EQ(write(fd, &v, 8), 8);
}

static uint64_t rd(int fd)
{
	uint64_t v = 0;

	CHECK_EQ(uepoll_read(fd, &v, 8), 8);
	return v;
}

static uint64_t krd(int fd)
{
	uint64_t v = 0;

	CHECK_EQ(read(fd, &v, 8), 8);
	return v;
}

/* Both fds as poll(2) sees them, and the uepoll one through a kernel
 * epoll that holds it. */
static void same(int u, int k, int kep, const char *what)
{
	struct epoll_event ev;
	int pu = pollin(u), pk = pollin(k);
	int n = kep >= 0 ? epoll_wait(kep, &ev, 1, 0) : pk;

	if (pu != pk || n != pk)
		fprintf(stderr, "%s: poll(2) %d, epoll_wait %d; the kernel's "
				"eventfd %d\n", what, pu, n, pk);
	CHECK_EQ(pu, pk);
	CHECK_EQ(n, pk);
}

/* End NOPOLL of u the way a program's event loop does: a kernel epoll's
 * ADD through uepoll_ctl.  The epoll. */
static int end_by_kernel_epoll(int u)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int kep = epoll_create1(EPOLL_CLOEXEC);

	REQUIRE(kep >= 0);
	CHECK_EQ(uepoll_ctl(kep, EPOLL_CTL_ADD, u, &ev), 0);
	return kep;
}

/* (a) */
static void case_handoffs(void)
{
	int x = ueventfd(0, UEVENTFD_NOPOLL), kx = eventfd(0, EFD_CLOEXEC);
	int y = ueventfd(0, UEVENTFD_NOPOLL), ky = eventfd(0, EFD_CLOEXEC);
	int z = ueventfd(0, UEVENTFD_NOPOLL), kz = eventfd(0, EFD_CLOEXEC);
	int a2b = ueventfd(0, EFD_SEMAPHORE | UEVENTFD_NOPOLL);
	int b2a = ueventfd(0, EFD_SEMAPHORE | UEVENTFD_NOPOLL);
	struct t_child ch;
	int kep;

	REQUIRE(x >= 0 && kx >= 0 && y >= 0 && ky >= 0 && z >= 0 && kz >= 0 &&
		a2b >= 0 && b2a >= 0);
	/* z: MIRROR's NOPOLL leaves a unit in the kernel fd over an emptied
	 * counter (nobody polls it). */
	wr(z, 1);
	kwr(kz, 1);
	CHECK_EQ(rd(z), 1);
	CHECK_EQ(krd(kz), 1);
	x_step("uepoll", "(a) handoffs, then the child's writes");
	if (x_fork(&ch) == 0) {
		int ep;
		struct epoll_event ev = { .events = EPOLLIN }, out;

		for (int i = 0; i < 100; i++) {
			CHECK_EQ(rd(a2b), 1);
			wr(x, 2);
			kwr(kx, 2);
			wr(b2a, 1);
			CHECK_EQ(rd(a2b), 1);
			CHECK_EQ(rd(x), 2);
			CHECK_EQ(krd(kx), 2);
			wr(b2a, 1);
		}
		/* The counter left non-zero by a NOPOLL write. */
		CHECK_EQ(rd(a2b), 1);
		wr(x, 3);
		kwr(kx, 3);
		wr(y, 5);
		kwr(ky, 5);
		wr(b2a, 1);
		/* The parent ends x's NOPOLL; then a read and a write. */
		CHECK_EQ(rd(a2b), 1);
		CHECK_EQ(rd(x), 3);
		CHECK_EQ(krd(kx), 3);
		wr(b2a, 1);
		CHECK_EQ(rd(a2b), 1);
		wr(x, 1);
		kwr(kx, 1);
		wr(b2a, 1);
		/* y: a registration in an instance of the child's (a kernel
		 * registration: the ueventfd is shared) ends it. */
		ep = uepoll_create1(EPOLL_CLOEXEC);
		CHECK(ep >= 0);
		ev.data.u64 = 7;
		CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, y, &ev), 0);
		CHECK_EQ(uepoll_wait(ep, &out, 1, 0), 1);
		CHECK_EQ(pollin(y), pollin(ky));
		CHECK_EQ(rd(y), 5);
		CHECK_EQ(krd(ky), 5);
		CHECK_EQ(uepoll_wait(ep, &out, 1, 0), 0);
		CHECK_EQ(pollin(y), 0);
		CHECK_EQ(uepoll_close(ep), 0);
		wr(b2a, 1);
		for (int *f = (int[]){ x, y, z, a2b, b2a, -1 }; *f >= 0; f++)
			CHECK_EQ(uepoll_close(*f), 0);
		close(kx);
		close(ky);
		close(kz);
		_exit(t_end());
	}
	for (int i = 0; i < 100; i++) {
		wr(a2b, 1);
		CHECK_EQ(rd(b2a), 1);
		wr(a2b, 1);
		CHECK_EQ(rd(b2a), 1);
	}
	wr(a2b, 1);
	CHECK_EQ(rd(b2a), 1);
	/* The child wrote 3 to x under NOPOLL: the parent ends it. */
	kep = end_by_kernel_epoll(x);
	same(x, kx, kep, "(a) after the child's NOPOLL write of 3");
	wr(a2b, 1);
	CHECK_EQ(rd(b2a), 1); /* the child read it */
	same(x, kx, kep, "(a) after the child's read");
	wr(a2b, 1);
	CHECK_EQ(rd(b2a), 1); /* the child wrote 1 */
	same(x, kx, kep, "(a) after the child's write of 1");
	CHECK_EQ(rd(x), 1);
	CHECK_EQ(krd(kx), 1);
	same(x, kx, kep, "(a) after the parent's read");
	CHECK_EQ(rd(b2a), 1); /* the child's y checks are done */
	/* z: the stale unit from before the fork, over 0. */
	close(kep);
	kep = end_by_kernel_epoll(z);
	same(z, kz, kep, "(a) the stale unit of MIRROR's NOPOLL");
	close(kep);
	CHECK_EQ(t_child_reap(&ch, 10000, "(a)'s child"), 0);
	x_step_end();
	CHECK_EQ(pollin(y), pollin(ky));
	for (int *f = (int[]){ x, y, z, a2b, b2a, -1 }; *f >= 0; f++)
		CHECK_EQ(uepoll_close(*f), 0);
	close(kx);
	close(ky);
	close(kz);
}

/* (b) */
static void case_killed_asleep(void)
{
	int x = ueventfd(0, UEVENTFD_NOPOLL), kx = eventfd(0, EFD_CLOEXEC);
	struct t_child ch;
	int kep;

	REQUIRE(x >= 0 && kx >= 0);
	x_step("uepoll", "(b) the child killed asleep in its read");
	if (x_fork(&ch) == 0) {
		uint64_t v;

		(void)uepoll_read(x, &v, 8);
		_exit(9);
	}
	while (!atomic_load(&((struct uefd *)(void *)fdtab_peek(x))->sh->xsleepers))
		sched_yield();
	t_child_kill(&ch);
	wr(x, 1);
	kwr(kx, 1);
	kep = end_by_kernel_epoll(x);
	same(x, kx, kep, "(b) after the sleeper's death and a write");
	CHECK_EQ(rd(x), 1);
	CHECK_EQ(krd(kx), 1);
	same(x, kx, kep, "(b) after the read");
	close(kep);
	x_step_end();
	CHECK_EQ(uepoll_close(x), 0);
	close(kx);
}

/* The child: arm the watch, then one operation (up: a write of 1; else a
 * read).  Exits 0 if it got through (a held child let go). */
static void child_op(int x, int mode, bool up)
{
	int w;
	uint64_t v = 1;

	my_tid = t_gettid();
	wctr = ((struct uefd *)(void *)fdtab_peek(x))->sh;
	atomic_store(&ctl->mode, mode);
	w = wp_watch(&wctr->count, 8, on_count);
	if (w < 0) {
		atomic_store(&ctl->watch_err, w);
		_exit(0);
	}
	if (up)
		(void)uepoll_write(x, &v, 8);
	else
		(void)uepoll_read(x, &v, 8);
	close(w);
	_exit(0);
}

static bool watch_ok(void)
{
	if (atomic_load(&ctl->watch_err)) {
		printf("  (no perf breakpoint with sigtrap here: skipped)\n");
		return false;
	}
	return true;
}

/* (c) */
static void case_killed_after_cas(bool up)
{
	int x = ueventfd(up ? 0 : 1, UEVENTFD_NOPOLL);
	int kx = eventfd(up ? 0 : 1, EFD_CLOEXEC);
	struct t_child ch;
	int kep;

	REQUIRE(x >= 0 && kx >= 0);
	memset(ctl, 0, sizeof(*ctl));
	x_step("uepoll", up ? "(c) the child killed after its write's CAS"
			    : "(c) the child killed after its read's CAS");
	if (x_fork(&ch) == 0)
		child_op(x, up ? W_KILL_AFTER_CAS_UP : W_KILL_AFTER_CAS_DOWN,
			 up);
	(void)t_child_reap(&ch, 10000, "(c)'s child");
	if (watch_ok()) {
		/* Its CAS was made: the kernel's eventfd after its call. */
		if (up)
			kwr(kx, 1);
		else
			CHECK_EQ(krd(kx), 1);
		kep = end_by_kernel_epoll(x);
		same(x, kx, kep, up ? "(c) a holder killed after its CAS from 0"
				    : "(c) a holder killed after its CAS to 0");
		close(kep);
	}
	x_step_end();
	CHECK_EQ(uepoll_close(x), 0);
	close(kx);
}

/* (d) and (e) */
static void case_held(bool after_cas)
{
	int x = ueventfd(0, UEVENTFD_NOPOLL), kx = eventfd(0, EFD_CLOEXEC);
	struct t_child ch;
	int kep = -1;

	REQUIRE(x >= 0 && kx >= 0);
	memset(ctl, 0, sizeof(*ctl));
	x_step("uepoll", after_cas ? "(d) the child held after its write's CAS"
				   : "(e) the child held inside the lock, "
				     "then killed after its CAS");
	if (x_fork(&ch) == 0)
		child_op(x, after_cas ? W_HOLD_AFTER_CAS
				      : W_HOLD_LOCKED_THEN_KILL,
			 true);
	while (!atomic_load(&ctl->held) && !atomic_load(&ctl->watch_err) &&
	       !t_child_ended(&ch))
		sched_yield();
	if (atomic_load(&ctl->held)) {
		/* The end bypasses the child, which holds the lock (too
		 * long: as a stopped holder). */
		kep = end_by_kernel_epoll(x);
		if (after_cas) {
			/* Its write's CAS was made (a reader would take 1). */
			kwr(kx, 1);
			same(x, kx, kep, "(d) the end beside a held holder "
					 "after its CAS");
		}
		atomic_store(&ctl->go, 1);
	}
	(void)t_child_reap(&ch, 10000, "(d)/(e)'s child");
	/* A write from 0 takes the lock, NOPOLL or not (held in it there). */
	if (watch_ok() && !atomic_load(&ctl->held))
		fprintf(stderr, "the child's write from 0 never held the lock\n");
	CHECK(!watch_ok() || atomic_load(&ctl->held));
	if (watch_ok() && kep >= 0) {
		if (!after_cas)
			kwr(kx, 1); /* its CAS, then its death */
		same(x, kx, kep, after_cas ? "(d) after the holder's end"
					   : "(e) a holder killed after a CAS "
					     "it made once the end had come");
		CHECK_EQ(rd(x), 1);
		CHECK_EQ(krd(kx), 1);
		same(x, kx, kep, "(d)/(e) after the read");
	}
	if (kep >= 0)
		close(kep);
	x_step_end();
	CHECK_EQ(uepoll_close(x), 0);
	close(kx);
}

int main(void)
{
	t_begin("t_xproc_nopoll_end");
	x_init();
	ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(ctl != MAP_FAILED);
	case_handoffs();
	case_killed_asleep();
	case_killed_after_cas(true);
	case_killed_after_cas(false);
	case_held(true);
	case_held(false);
	munmap(ctl, sizeof(*ctl));
	return t_end();
}
