/*
 * t_ctl_retired: ADD, a MOD that finds the fd ready, DEL, in a loop, on an
 * instance nobody waits on (perf bench epoll ctl's loop, issue 35 item 2).
 * The kernel's DEL takes its epitem off the ready list and frees it; a
 * uepoll item retired while queued waits in the wait-free queue for a
 * harvest, and with no wait every one of them was kept: memory grew by an
 * item per cycle, without bound (660 MB after 4 s of perf bench epoll ctl
 * under uepoll-run).  COMPACT in readyq.c unlinks them.
 *
 * Checked, against the kernel's epoll and eventfd run through the same
 * sequence (every call's result, and the events of the waits):
 *  (a) the memory the allocator holds for the process (mallinfo2's
 *      uordblks) after CYCLES cycles is within SLACK of what it held after
 *      the first few: an item per cycle would be CYCLES * sizeof(item);
 *  (b) the live registrations keep their place in the ready list across
 *      the compactions, as the kernel's: four ready level-triggered fds,
 *      one taken by a wait of one event (so it goes to the tail, and three
 *      are left in the consumers' batch, which a compaction walks), then
 *      the cycles, then a wait: the same events in the same order;
 *  (c) the same with the dead items mixed among live ones queued during
 *      the cycles (a live fd made ready, by MOD, every few cycles).
 * A count of bytes, never a time.
 */
#include "testlib.h"

#include <malloc.h>
#include <stdbool.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define CYCLES 20000
#define NLIVE 4
#define NDEAD 4
/* Far below an item (a cache line or more) per cycle. */
#define SLACK (64 * 1024)

struct side {
	bool kernel;
	int ep;
	int live[NLIVE + 1];
	int dead[NDEAD];
};

static int s_ctl(struct side *s, int op, int fd, uint32_t events,
		 uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	if (s->kernel)
		return epoll_ctl(s->ep, op, fd, op == EPOLL_CTL_DEL ? NULL : &ev);
	return uepoll_ctl(s->ep, op, fd, op == EPOLL_CTL_DEL ? NULL : &ev);
}

static int s_wait(struct side *s, struct epoll_event *evs, int max)
{
	return s->kernel ? epoll_wait(s->ep, evs, max, 0)
			 : uepoll_wait(s->ep, evs, max, 0);
}

static void s_open(struct side *s, bool kernel)
{
	s->kernel = kernel;
	s->ep = kernel ? epoll_create1(0) : uepoll_create1(0);
	REQUIRE(s->ep >= 0);
	for (int i = 0; i < NLIVE + 1; i++) {
		s->live[i] = kernel ? eventfd(0, EFD_NONBLOCK)
				    : ueventfd(0, EFD_NONBLOCK);
		REQUIRE(s->live[i] >= 0);
	}
	for (int i = 0; i < NDEAD; i++) {
		s->dead[i] = kernel ? eventfd(0, EFD_NONBLOCK)
				    : ueventfd(0, EFD_NONBLOCK);
		REQUIRE(s->dead[i] >= 0);
	}
}

static void s_close(struct side *s)
{
	int (*cl)(int) = s->kernel ? close : uepoll_close;

	for (int i = 0; i < NLIVE + 1; i++)
		CHECK_EQ(cl(s->live[i]), 0);
	for (int i = 0; i < NDEAD; i++)
		CHECK_EQ(cl(s->dead[i]), 0);
	CHECK_EQ(cl(s->ep), 0);
}

/* The trace of a run: every call's result and every event, in order. */
struct trace {
	long v[64];
	int n;
	long failed_ctl; /* ctl calls that did not return 0 */
};

static void t_add(struct trace *t, long x)
{
	if (t->n < (int)(sizeof(t->v) / sizeof(t->v[0])))
		t->v[t->n++] = x;
}

static void t_wait(struct side *s, struct trace *t, int max)
{
	struct epoll_event evs[16];
	int n = s_wait(s, evs, max);

	t_add(t, n);
	for (int i = 0; i < n; i++) {
		t_add(t, (long)evs[i].data.u64);
		t_add(t, (long)evs[i].events);
	}
}

/* One cycle on dead fd d: ADD (not ready: EPOLLIN of an empty eventfd),
 * MOD to EPOLLOUT (ready: queued), DEL (retired while queued). */
static void cycle(struct side *s, struct trace *t, int d, uint64_t data)
{
	t->failed_ctl += s_ctl(s, EPOLL_CTL_ADD, d, EPOLLIN, data) != 0;
	t->failed_ctl += s_ctl(s, EPOLL_CTL_MOD, d, EPOLLOUT, data) != 0;
	t->failed_ctl += s_ctl(s, EPOLL_CTL_DEL, d, 0, 0) != 0;
}

static size_t in_use(void)
{
	return mallinfo2().uordblks;
}

/* mixed: (c), a live fd made ready among the dead every 97 cycles. */
static void run(bool kernel, bool mixed, struct trace *t, size_t *growth)
{
	struct side s;
	size_t before = 0;

	memset(t, 0, sizeof(*t));
	s_open(&s, kernel);
	for (int i = 0; i < NLIVE; i++)
		t->failed_ctl += s_ctl(&s, EPOLL_CTL_ADD, s.live[i], EPOLLOUT,
				       100 + (uint64_t)i) != 0;
	if (mixed)
		t->failed_ctl += s_ctl(&s, EPOLL_CTL_ADD, s.live[NLIVE], EPOLLIN,
				       200) != 0;
	/* The first live one leaves the batch for the shared queue's tail. */
	t_wait(&s, t, 1);
	for (int c = 0; c < CYCLES; c++) {
		cycle(&s, t, s.dead[c % NDEAD], (uint64_t)c);
		/* The allocator's own first-use growth (arenas, the objects'
		 * pools, the later-free list) is behind us after a few. */
		if (c == 2 * NDEAD)
			before = in_use();
		if (mixed && c == CYCLES / 2)
			t->failed_ctl += s_ctl(&s, EPOLL_CTL_MOD, s.live[NLIVE],
					       EPOLLOUT, 201) != 0;
	}
	*growth = in_use() > before ? in_use() - before : 0;
	t_wait(&s, t, 16);
	t_wait(&s, t, 16);
	s_close(&s);
}

static void compare(bool mixed)
{
	struct trace k, u;
	size_t kg, ug;

	run(true, mixed, &k, &kg);
	run(false, mixed, &u, &ug);
	CHECK_EQ(k.failed_ctl, 0);
	CHECK_EQ(u.failed_ctl, 0);
	CHECK_EQ(u.n, k.n);
	for (int i = 0; i < k.n && i < u.n; i++)
		if (u.v[i] != k.v[i]) {
			fprintf(stderr, "mixed=%d: trace[%d]: uepoll %ld, kernel %ld\n",
				mixed, i, u.v[i], k.v[i]);
			CHECK(0);
			break;
		}
	if (ug >= SLACK)
		fprintf(stderr,
			"mixed=%d: %zu bytes more in use after %d cycles "
			"(an item per cycle kept?)\n",
			mixed, ug, CYCLES);
	CHECK(ug < SLACK);
}

int main(void)
{
	t_begin("t_ctl_retired");
	compare(false);
	compare(true);
	return t_end();
}
