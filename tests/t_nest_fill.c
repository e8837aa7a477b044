/*
 * t_nest_fill: a write that fills a ueventfd's counter ends its EPOLLOUT,
 * and an instance nested in another one that watches it for EPOLLOUT must
 * stop being ready at once, as the kernel's nested epoll does: its
 * holder's kernel epoll (and poll() on its fd) must not report it, and a
 * one-shot registration of it in the holder must not be used up by a
 * report that the holder then drops.  Differential: the same sequence on
 * kernel epoll + eventfd and on uepoll, compared step by step.
 */
#include "testlib.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct world {
	int (*create)(int);
	int (*ctl)(int, int, int, struct epoll_event *);
	int (*wait)(int, struct epoll_event *, int, int);
	int (*efd)(unsigned, int);
	ssize_t (*rd)(int, void *, size_t);
	ssize_t (*wr)(int, const void *, size_t);
	int (*cls)(int);
};

static const struct world kernel = { epoll_create1, epoll_ctl, epoll_wait,
				     eventfd, read, write, close };
static const struct world user = { uepoll_create1, uepoll_ctl, uepoll_wait,
				   ueventfd, uepoll_read, uepoll_write,
				   uepoll_close };

#define NSTEP 8

/* One run: outer holds inner (outer_ev), inner watches e for EPOLLOUT;
 * fill e (in `writes` writes), then look, drain, look.  out[]: what each
 * look saw (events returned, or poll() revents). */
static void run(const struct world *w, uint32_t outer_ev, int writes,
		int out[NSTEP])
{
	struct epoll_event ev, got[4];
	int outer = w->create(0), inner = w->create(0);
	int e = w->efd(0, EFD_NONBLOCK), k = 0;
	struct pollfd pfd;
	uint64_t v;

	REQUIRE(outer >= 0 && inner >= 0 && e >= 0);
	ev.events = EPOLLOUT;
	ev.data.u64 = 7;
	REQUIRE(w->ctl(inner, EPOLL_CTL_ADD, e, &ev) == 0);
	ev.events = outer_ev;
	ev.data.u64 = 9;
	REQUIRE(w->ctl(outer, EPOLL_CTL_ADD, inner, &ev) == 0);
	/* Writable at first: the outer sees the inner. */
	pfd = (struct pollfd){ .fd = outer, .events = POLLIN };
	out[k++] = poll(&pfd, 1, 0) == 1 ? pfd.revents : 0;
	/* Fill the counter (the last write leaves no room). */
	for (int i = 0; i < writes; i++) {
		v = i + 1 < writes ? 1 : UINT64_C(0xfffffffffffffffe) - (uint64_t)(writes - 1);
		CHECK_EQ(w->wr(e, &v, 8), 8);
	}
	/* Not writable now: neither the outer's fd nor a wait on it. */
	pfd = (struct pollfd){ .fd = outer, .events = POLLIN };
	out[k++] = poll(&pfd, 1, 0) == 1 ? pfd.revents : 0;
	out[k++] = w->wait(outer, got, 4, 0);
	/* Drain: writable again. */
	CHECK_EQ(w->rd(e, &v, 8), 8);
	pfd = (struct pollfd){ .fd = outer, .events = POLLIN };
	out[k++] = poll(&pfd, 1, 0) == 1 ? pfd.revents : 0;
	out[k++] = w->wait(outer, got, 4, 0);
	out[k++] = w->wait(outer, got, 4, 0);
	out[k++] = w->wait(inner, got, 4, 0);
	pfd = (struct pollfd){ .fd = outer, .events = POLLIN };
	out[k++] = poll(&pfd, 1, 0) == 1 ? pfd.revents : 0;
	w->cls(outer);
	w->cls(inner);
	w->cls(e);
}

int main(void)
{
	static const uint32_t modes[] = { EPOLLIN, EPOLLIN | EPOLLET,
					  EPOLLIN | EPOLLONESHOT,
					  EPOLLIN | EPOLLET | EPOLLONESHOT };
	int kout[NSTEP], uout[NSTEP], bad = 0;

	t_begin("t_nest_fill");
	t_watchdog(30);
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
		for (int writes = 1; writes <= 3; writes++) {
			run(&kernel, modes[m], writes, kout);
			run(&user, modes[m], writes, uout);
			for (int i = 0; i < NSTEP; i++)
				if (kout[i] != uout[i]) {
					printf("mode %#x writes %d step %d: kernel %d uepoll %d\n",
					       modes[m], writes, i, kout[i], uout[i]);
					bad++;
				}
		}
	CHECK_EQ(bad, 0);
	return t_end();
}
