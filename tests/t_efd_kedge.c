/*
 * t_efd_kedge: an edge-triggered kernel epoll that watches a ueventfd gets
 * an event per write, as one that watches the kernel's eventfd (kedge in
 * src/eventfd.h: a write that keeps the counter's class writes 0 to the
 * kernel fd).  Differential: the same script on a kernel eventfd in a
 * kernel epoll and on a ueventfd registered
 *  (a) with uepoll_ctl into a kernel epoll, edge-triggered;
 *  (b) in a uepoll instance, edge-triggered, the instance then demoted (its
 *      registrations become the kernel's);
 * and the cost: a level-triggered kernel watcher costs a class-keeping
 * write nothing (no system call), an edge-triggered one a write of 0.
 */
#include "testlib.h"
#include "libcwrap.h"

#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

static void wait0(struct t_log *l, int ep, bool kernel)
{
	struct epoll_event ev[4];
	int r = kernel ? epoll_wait(ep, ev, 4, 0) : uepoll_wait(ep, ev, 4, 0);

	t_log_events(l, ev, r);
}

/* The script: writes that keep the class and change it, reads, waits. */
static void script(struct t_log *l, int ep, int fd, bool kernel)
{
	static const long ops[] = { 1, 0, 1, 0, 2, 0, -1, 0, 0, 5, 0, 0, 3, 0 };
	uint64_t v;

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (ops[i] > 0) { /* a write */
			v = (uint64_t)ops[i];
			t_log_res(l, uepoll_write(fd, &v, 8) == 8 ? 0 : -errno);
		} else if (ops[i] < 0) { /* a read */
			t_log_res(l, uepoll_read(fd, &v, 8) == 8 ? (long)v
								  : -errno);
		} else { /* a wait */
			wait0(l, ep, kernel);
		}
	}
	/* A write of 0 is a write: the kernel wakes its watchers too. */
	v = 0;
	t_log_res(l, uepoll_write(fd, &v, 8) == 8 ? 0 : -errno);
	wait0(l, ep, kernel);
}

static void kernel_run(struct t_log *l)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 1 };
	int ep = epoll_create1(0), fd = eventfd(0, EFD_NONBLOCK);

	REQUIRE(ep >= 0 && fd >= 0);
	REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0);
	script(l, ep, fd, true);
	close(fd);
	close(ep);
}

/* The script on a ueventfd registered EPOLLET (a) with uepoll_ctl into a
 * kernel epoll, or (b) in a uepoll instance then demoted. */
static void case_ueventfd(const struct t_log *k, bool demoted)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 1 };
	struct t_log u = { 0 };
	int ep = demoted ? uepoll_create1(0) : epoll_create1(0);
	int fd = ueventfd(0, EFD_NONBLOCK);

	REQUIRE(ep >= 0 && fd >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0);
	if (demoted)
		REQUIRE(uepoll_demote(ep) == 0);
	script(&u, ep, fd, !demoted);
	t_log_same(k, &u, demoted ? "a demoted instance"
				  : "uepoll_ctl into a kernel epoll");
	uepoll_close(fd);
	uepoll_close(ep);
}

/* The system calls of a write to a non-zero counter, watched by a kernel
 * epoll with `events`. */
static int write_calls(uint32_t events)
{
	struct epoll_event ev = { .events = events };
	int ep = epoll_create1(0), fd = ueventfd(1, EFD_NONBLOCK), n;
	uint64_t one = 1;

	REQUIRE(ep >= 0 && fd >= 0);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0);
	wrap_arm(0);
	REQUIRE(uepoll_write(fd, &one, 8) == 8);
	n = wrap_take(-1);
	wrap_disarm();
	uepoll_close(fd);
	close(ep);
	return n;
}

int main(void)
{
	struct t_log k = { 0 };

	t_begin("t_efd_kedge");
	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_watchdog(60);
	kernel_run(&k);
	case_ueventfd(&k, false);
	case_ueventfd(&k, true);
	CHECK_EQ(write_calls(EPOLLIN), 0);
	CHECK_EQ(write_calls(EPOLLIN | EPOLLET), 1);
	return t_end();
}
