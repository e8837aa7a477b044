/*
 * t_xproc_bypass_race: two bypasses of a stopped holder race, a read that
 * empties the counter and drains the kernel fd, and a write from 0 that
 * makes it readable; the fd must end readable over the written value while
 * the holder stays stopped (issue 36: the C twins of models/xbypass.pml's
 * NO_RELOOK and NO_POSTLOOK).
 *
 * One ueventfd holding 1, shared with a child H that fills it (a write
 * from 1 to the maximum) and stops itself inside the cross-process lock,
 * at its FILL's first system call (after its CAS: the counter is full, the
 * kernel fd holds 1).  Then two threads of the parent bypass H:
 *  - R reads (non-blocking): its CAS takes the counter to 0; the test
 *    holds it before its drain of the kernel fd;
 *  - W writes 1: from 0, so its bypass looks at the kernel fd (readable:
 *    H's unit, not yet drained) and writes nothing, then CASes 0 -> 1.
 * Two orders (hooks at the library's system calls, libcwrap.h):
 *  RELOOK:   W ends before R drains; R's drain takes the only unit, so R
 *            must look at the counter again (1) and make the fd readable.
 *  POSTLOOK: W is held after its look, R drains and ends (the counter is
 *            0 then), W's CAS comes after: W must look at the kernel fd
 *            again after its CAS and make it readable.
 * In both, with H still stopped, poll(2) must say readable and a read get
 * 1; then H is continued and killed, and the fd reads as the kernel's.
 * No timing is asserted.
 */
#include "libcwrap.h"
#include "xproc.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

#define FULL 0xfffffffffffffffeull

enum { RELOOK, POSTLOOK };

static int fd;
static _Atomic int r_held, r_go, w_held, w_go;
static __thread int r_closed;

/* R: held before its drain, its first system call after it closed the
 * /proc file that told it H is stopped (then its CAS came). */
static void r_hook(long nr)
{
	if (!r_closed) {
		r_closed = nr == SYS_close;
		wrap_hook_once(r_hook);
		return;
	}
	atomic_store(&r_held, 1);
	while (!atomic_load(&r_go))
		sched_yield();
}

static void *r_main(void *arg)
{
	uint64_t v = 0;
	ssize_t r;

	(void)arg;
	wrap_hook_once(r_hook);
	r = uepoll_read(fd, &v, 8);
	wrap_hook_once(NULL);
	return (void *)(intptr_t)(r == 8 ? (intptr_t)v : -errno);
}

/* W (POSTLOOK): held after its first ppoll (the look before its CAS). */
static void w_after(long nr)
{
	if (nr != SYS_ppoll) {
		wrap_hook_after_once(w_after);
		return;
	}
	atomic_store(&w_held, 1);
	while (!atomic_load(&w_go))
		sched_yield();
}

static void *w_main(void *arg)
{
	uint64_t v = 1;
	ssize_t r;

	if ((intptr_t)arg == POSTLOOK)
		wrap_hook_after_once(w_after);
	r = uepoll_write(fd, &v, 8);
	wrap_hook_after_once(NULL);
	return (void *)(intptr_t)r;
}

/* H: stopped at its first system call (its FILL's read of fdinfo). */
static void h_hook(long nr)
{
	(void)nr;
	raise(SIGSTOP);
}

static void round1(int order)
{
	const char *name = order == RELOOK ? "relook" : "postlook";
	struct t_child c;
	pthread_t r, w;
	uint64_t v = 1;
	void *ret;
	int st;

	atomic_store(&r_held, 0);
	atomic_store(&r_go, 0);
	atomic_store(&w_held, 0);
	atomic_store(&w_go, 0);
	fd = ueventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	REQUIRE(fd >= 0);
	REQUIRE(uepoll_write(fd, &v, 8) == 8);
	pid_t p = x_fork(&c);
	REQUIRE(p >= 0);
	if (p == 0) {
		v = FULL - 1;
		wrap_hook_once(h_hook);
		_exit(uepoll_write(fd, &v, 8) == 8 ? 0 : 1);
	}
	x_step(name, "H stops inside the lock, in its fill");
	REQUIRE(waitpid(p, &st, WUNTRACED) == p && WIFSTOPPED(st));
	x_step_end();

	x_step(name, "R bypasses H, CASes to 0, is held before its drain");
	REQUIRE(pthread_create(&r, NULL, r_main, NULL) == 0);
	while (!atomic_load(&r_held))
		sched_yield();
	x_step_end();

	x_step(name, "W bypasses H, writes from 0");
	REQUIRE(pthread_create(&w, NULL, w_main, (void *)(intptr_t)order) == 0);
	if (order == RELOOK) {
		REQUIRE(pthread_join(w, &ret) == 0);
		CHECK_EQ((intptr_t)ret, 8);
	} else {
		while (!atomic_load(&w_held))
			sched_yield();
	}
	x_step_end();

	x_step(name, "R drains and ends");
	atomic_store(&r_go, 1);
	REQUIRE(pthread_join(r, &ret) == 0);
	CHECK((intptr_t)ret == (intptr_t)FULL);
	x_step_end();

	if (order == POSTLOOK) {
		x_step(name, "W ends");
		atomic_store(&w_go, 1);
		REQUIRE(pthread_join(w, &ret) == 0);
		CHECK_EQ((intptr_t)ret, 8);
		x_step_end();
	}

	/* H still stopped: the counter is 1, the fd must say so. */
	x_step(name, "the fd is readable over W's value, H stopped");
	int ev = x_poll(fd, POLLIN, 0);

	if (!(ev & POLLIN))
		fprintf(stderr, "%s: not readable over a counter of 1 while the "
				"holder is stopped\n", name);
	CHECK(ev & POLLIN);
	v = 0;
	CHECK_EQ(uepoll_read(fd, &v, 8), 8);
	CHECK_EQ(v, 1);
	x_step_end();

	x_step(name, "H continued, its fill ends");
	REQUIRE(kill(p, SIGCONT) == 0);
	CHECK_EQ(t_child_reap(&c, 10000, "H"), 0);
	x_step_end();
	/* At rest: the fd's readiness is the counter's (0). */
	ev = x_poll(fd, POLLIN | POLLOUT, 0);
	v = 0;
	ssize_t n = uepoll_read(fd, &v, 8);

	CHECK(n < 0 && errno == EAGAIN);
	CHECK_EQ(ev, POLLOUT);
	CHECK_EQ(uepoll_close(fd), 0);
}

int main(void)
{
	t_begin("t_xproc_bypass_race");
	x_init();
	round1(RELOOK);
	round1(POSTLOOK);
	return t_end();
}
