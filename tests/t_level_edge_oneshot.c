/*
 * t_level_edge_oneshot: level-triggered, edge-triggered and one-shot
 * reporting, EPOLLOUT, data round trips and maxevents smaller than the ready
 * count.  Every step runs on a kernel epoll + eventfds and on a uepoll
 * instance + ueventfds; each wait must return the same events in the same
 * order (all sources here are eventfds, so the kernel's ready-list order
 * applies exactly), and each step is also checked against the expected value
 * so the test means something on its own.
 */
#include "testlib.h"

#include <unistd.h>

#define NFD 6

static int kep, uep;
static int kfd[NFD], ufd[NFD];

static void setup(void)
{
	kep = epoll_create1(0);
	uep = uepoll_create1(0);
	REQUIRE(kep >= 0 && uep >= 0);
	for (int i = 0; i < NFD; i++) {
		kfd[i] = eventfd(0, EFD_NONBLOCK);
		ufd[i] = ueventfd(0, EFD_NONBLOCK);
		REQUIRE(kfd[i] >= 0 && ufd[i] >= 0);
	}
}

static void teardown(void)
{
	close(kep);
	CHECK_EQ(uepoll_close(uep), 0);
	for (int i = 0; i < NFD; i++) {
		close(kfd[i]);
		CHECK_EQ(uepoll_close(ufd[i]), 0);
	}
}

static void ctl(int line, int op, int i, uint32_t events, uint64_t data)
{
	struct epoll_event ke = { .events = events, .data.u64 = data };
	struct epoll_event ue = ke;
	int rk, ru;

	rk = epoll_ctl(kep, op, kfd[i], &ke);
	ru = uepoll_ctl(uep, op, ufd[i], &ue);
	if (rk != 0 || ru != 0) {
		fprintf(stderr, "line %d: ctl op %d fd %d: kernel %d, uepoll %d (errno %d)\n",
			line, op, i, rk, ru, errno);
		t_failures++;
	}
}

static void wr(int line, int i, uint64_t v)
{
	ssize_t rk = write(kfd[i], &v, 8);
	ssize_t ru = uepoll_write(ufd[i], &v, 8);

	if (rk != ru) {
		fprintf(stderr, "line %d: write fd %d: kernel %zd, uepoll %zd\n",
			line, i, rk, ru);
		t_failures++;
	}
}

static uint64_t rd(int line, int i)
{
	uint64_t vk = 0, vu = 0;
	ssize_t rk = read(kfd[i], &vk, 8);
	ssize_t ru = uepoll_read(ufd[i], &vu, 8);

	if (rk != ru || vk != vu) {
		fprintf(stderr, "line %d: read fd %d: kernel %zd/%llu, uepoll %zd/%llu\n",
			line, i, rk, (unsigned long long)vk, ru,
			(unsigned long long)vu);
		t_failures++;
	}
	return vk;
}

static void dump(const char *who, struct epoll_event *ev, int n)
{
	fprintf(stderr, "  %s (%d):", who, n);
	for (int i = 0; i < n; i++)
		fprintf(stderr, " {%#x, %#llx}", ev[i].events,
			(unsigned long long)ev[i].data.u64);
	fprintf(stderr, "\n");
}

/*
 * Wait with timeout 0 on both; they must agree exactly.  If want is >= 0 the
 * kernel's count must also equal it.  The kernel's events go to out.
 */
static int wait_both(int line, int maxev, int want, struct epoll_event *out)
{
	struct epoll_event ke[16], ue[16];
	int nk, nu, bad = 0;

	memset(ke, 0, sizeof(ke));
	memset(ue, 0, sizeof(ue));
	nk = epoll_wait(kep, ke, maxev, 0);
	nu = uepoll_wait(uep, ue, maxev, 0);
	if (nk != nu)
		bad = 1;
	for (int i = 0; !bad && i < nk; i++)
		if (ke[i].events != ue[i].events ||
		    ke[i].data.u64 != ue[i].data.u64)
			bad = 1;
	if (bad) {
		fprintf(stderr, "line %d: waits differ\n", line);
		dump("kernel", ke, nk);
		dump("uepoll", ue, nu);
		t_failures++;
	}
	if (want >= 0 && nk != want) {
		fprintf(stderr, "line %d: kernel returned %d events, test expected %d\n",
			line, nk, want);
		t_failures++;
	}
	if (out && nk > 0)
		memcpy(out, ke, sizeof(ke[0]) * (size_t)nk);
	return nk;
}

#define CTL(op, i, ev, d) ctl(__LINE__, op, i, ev, d)
#define WR(i, v) wr(__LINE__, i, v)
#define RD(i) rd(__LINE__, i)
#define WAIT(m, want, out) wait_both(__LINE__, m, want, out)

static void test_level(void)
{
	struct epoll_event ev[16];

	setup();
	CTL(EPOLL_CTL_ADD, 0, EPOLLIN, 100);
	WAIT(8, 0, NULL);
	WR(0, 3);
	/* reported again and again until drained */
	for (int i = 0; i < 3; i++) {
		WAIT(8, 1, ev);
		CHECK_EQ(ev[0].events, EPOLLIN);
		CHECK_EQ(ev[0].data.u64, 100);
	}
	CHECK_EQ(RD(0), 3);
	WAIT(8, 0, NULL);
	/* a write of 0 does not make it readable */
	WR(0, 0);
	WAIT(8, 0, NULL);
	teardown();
}

static void test_edge(void)
{
	struct epoll_event ev[16];

	setup();
	CTL(EPOLL_CTL_ADD, 0, EPOLLIN | EPOLLET, 7);
	WR(0, 1);
	WAIT(8, 1, ev);
	CHECK_EQ(ev[0].data.u64, 7);
	WAIT(8, 0, NULL);	/* still readable but no new edge */
	WR(0, 1);		/* each write is a new edge on an eventfd */
	WAIT(8, 1, NULL);
	WAIT(8, 0, NULL);
	WR(0, 1);
	WR(0, 1);		/* two writes before a wait: one report */
	WAIT(8, 1, NULL);
	WAIT(8, 0, NULL);
	CHECK_EQ(RD(0), 4);
	WAIT(8, 0, NULL);
	WR(0, 0);		/* a zero write still wakes in the kernel */
	WAIT(8, -1, NULL);
	WAIT(8, 0, NULL);
	/* ET on EPOLLIN|EPOLLOUT: the add itself reports writable once */
	CTL(EPOLL_CTL_ADD, 1, EPOLLIN | EPOLLOUT | EPOLLET, 8);
	WAIT(8, 1, ev);
	CHECK_EQ(ev[0].events, EPOLLOUT);
	WAIT(8, 0, NULL);
	WR(1, 5);
	WAIT(8, 1, ev);
	CHECK_EQ(ev[0].events, EPOLLIN | EPOLLOUT);
	RD(1);			/* a read is an EPOLLOUT edge */
	WAIT(8, 1, ev);
	CHECK_EQ(ev[0].events, EPOLLOUT);
	/* MOD re-evaluates readiness even for ET */
	WR(1, 1);
	WAIT(8, 1, NULL);
	WAIT(8, 0, NULL);
	CTL(EPOLL_CTL_MOD, 1, EPOLLIN | EPOLLET, 9);
	WAIT(8, 1, ev);
	CHECK_EQ(ev[0].data.u64, 9);
	teardown();
}

static void test_oneshot(void)
{
	struct epoll_event ev[16];

	setup();
	CTL(EPOLL_CTL_ADD, 0, EPOLLIN | EPOLLONESHOT, 1);
	WAIT(8, 0, NULL);
	WR(0, 1);
	WAIT(8, 1, NULL);
	WAIT(8, 0, NULL);	/* disarmed even though still readable */
	WR(0, 1);
	WAIT(8, 0, NULL);	/* writes do not re-arm */
	CTL(EPOLL_CTL_MOD, 0, EPOLLIN | EPOLLONESHOT, 2);
	WAIT(8, 1, ev);		/* MOD re-arms and it is ready */
	CHECK_EQ(ev[0].data.u64, 2);
	WAIT(8, 0, NULL);
	RD(0);
	CTL(EPOLL_CTL_MOD, 0, EPOLLIN | EPOLLONESHOT, 3);
	WAIT(8, 0, NULL);	/* armed but not ready */
	WR(0, 1);
	WAIT(8, 1, ev);
	CHECK_EQ(ev[0].data.u64, 3);
	WAIT(8, 0, NULL);
	/* re-arm as plain LT: reported each time */
	CTL(EPOLL_CTL_MOD, 0, EPOLLIN, 4);
	WAIT(8, 1, NULL);
	WAIT(8, 1, NULL);
	/* oneshot + ET */
	CTL(EPOLL_CTL_MOD, 0, EPOLLIN | EPOLLET | EPOLLONESHOT, 5);
	WAIT(8, 1, NULL);
	WR(0, 1);
	WAIT(8, 0, NULL);
	/* DEL of a disarmed item then ADD again */
	CTL(EPOLL_CTL_DEL, 0, 0, 0);
	CTL(EPOLL_CTL_ADD, 0, EPOLLIN | EPOLLONESHOT, 6);
	WAIT(8, 1, NULL);
	WAIT(8, 0, NULL);
	/* oneshot with EPOLLOUT */
	CTL(EPOLL_CTL_ADD, 1, EPOLLOUT | EPOLLONESHOT, 10);
	WAIT(8, 1, ev);
	CHECK_EQ(ev[0].events, EPOLLOUT);
	WAIT(8, 0, NULL);
	teardown();
}

static void test_out(void)
{
	struct epoll_event ev[16];

	setup();
	CTL(EPOLL_CTL_ADD, 0, EPOLLOUT, 1);
	WAIT(8, 1, ev);
	CHECK_EQ(ev[0].events, EPOLLOUT);
	WAIT(8, 1, NULL);	/* LT: again */
	WR(0, 0xfffffffffffffffdULL);
	WAIT(8, 1, NULL);	/* still room for 1 */
	WR(0, 1);		/* at the maximum: not writable */
	WAIT(8, 0, NULL);
	CTL(EPOLL_CTL_MOD, 0, EPOLLIN | EPOLLOUT, 2);
	WAIT(8, 1, ev);
	CHECK_EQ(ev[0].events, EPOLLIN);
	RD(0);
	WAIT(8, 1, ev);
	CHECK_EQ(ev[0].events, EPOLLOUT);
	/* requested bits the eventfd never reports (it reports plain EPOLLIN) */
	CTL(EPOLL_CTL_MOD, 0, EPOLLIN | EPOLLPRI | EPOLLRDHUP | EPOLLRDNORM, 3);
	WAIT(8, 0, NULL);
	WR(0, 1);
	WAIT(8, 1, ev);
	CHECK_EQ(ev[0].events, EPOLLIN);
	/* events == 0: never reported, not even EPOLLERR/EPOLLHUP */
	CTL(EPOLL_CTL_MOD, 0, 0, 4);
	WAIT(8, 0, NULL);
	teardown();
}

static void test_data(void)
{
	static const uint64_t vals[] = { 0, 1, 0xffffffffffffffffULL,
					 0xdeadbeefcafebabeULL,
					 0x8000000000000000ULL, 0xffffffffULL };
	struct epoll_event ev[16];

	setup();
	for (int i = 0; i < NFD; i++) {
		CTL(EPOLL_CTL_ADD, i, EPOLLIN, vals[i]);
		WR(i, 1);
		WAIT(8, 1, ev);
		CHECK_EQ(ev[0].data.u64, vals[i]);
		RD(i);
		/* MOD changes the data */
		CTL(EPOLL_CTL_MOD, i, EPOLLIN, ~vals[i]);
		WR(i, 1);
		WAIT(8, 1, ev);
		CHECK_EQ(ev[0].data.u64, ~vals[i]);
		RD(i);
	}
	teardown();
}

static void test_maxevents(void)
{
	struct epoll_event ev[16];

	setup();
	for (int i = 0; i < NFD; i++)
		CTL(EPOLL_CTL_ADD, i, EPOLLIN, (uint64_t)i);
	/* ready in the order 3,1,5,0,2,4 */
	WR(3, 1);
	WR(1, 1);
	WR(5, 1);
	WR(0, 1);
	WR(2, 1);
	WR(4, 1);
	WAIT(2, 2, ev);
	CHECK_EQ(ev[0].data.u64, 3);
	CHECK_EQ(ev[1].data.u64, 1);
	WAIT(3, 3, ev);
	CHECK_EQ(ev[0].data.u64, 5);
	CHECK_EQ(ev[1].data.u64, 0);
	CHECK_EQ(ev[2].data.u64, 2);
	WAIT(1, 1, ev);
	CHECK_EQ(ev[0].data.u64, 4);
	/* all LT, all still ready: re-queued at the tail in delivery order */
	WAIT(16, NFD, NULL);
	WAIT(4, 4, NULL);
	RD(1);
	RD(2);
	WAIT(16, NFD - 2, NULL);
	/* ET items beyond maxevents stay queued too */
	for (int i = 0; i < NFD; i++)
		CTL(EPOLL_CTL_MOD, i, EPOLLIN | EPOLLET, (uint64_t)i + 10);
	WR(1, 1);
	WR(2, 1);
	WAIT(1, 1, NULL);
	WAIT(2, 2, NULL);
	WAIT(16, -1, NULL);
	WAIT(16, 0, NULL);
	/* maxevents 1 repeatedly cycles through LT items */
	for (int i = 0; i < NFD; i++)
		CTL(EPOLL_CTL_MOD, i, EPOLLIN, (uint64_t)i + 20);
	for (int i = 0; i < 2 * NFD + 1; i++)
		WAIT(1, 1, NULL);
	teardown();
}

/* Order of DEL + re-ADD, MOD of an already queued item, interleaving. */
static void test_order(void)
{
	setup();
	for (int i = 0; i < NFD; i++)
		CTL(EPOLL_CTL_ADD, i, EPOLLIN, (uint64_t)i);
	WR(0, 1);
	WR(1, 1);
	WR(2, 1);
	CTL(EPOLL_CTL_DEL, 1, 0, 0);
	CTL(EPOLL_CTL_ADD, 1, EPOLLIN, 11);
	CTL(EPOLL_CTL_MOD, 0, EPOLLIN, 10);
	WR(3, 1);
	WAIT(16, 4, NULL);
	RD(2);
	WR(0, 1);
	WAIT(2, 2, NULL);
	WR(4, 1);
	WAIT(16, 4, NULL);
	teardown();
}

int main(void)
{
	t_begin("t_level_edge_oneshot");
	t_watchdog(120);
	test_level();
	test_edge();
	test_oneshot();
	test_out();
	test_data();
	test_maxevents();
	test_order();
	return t_end();
}
