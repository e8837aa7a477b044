/*
 * t_nesting: a uepoll instance inside another instance.  The outer reports
 * EPOLLIN for the inner while the inner has events (from a ueventfd and from
 * a pipe), and stops once they are consumed (after a wait on the inner that
 * finds nothing: uepoll.h allows one stale readiness); loops give ELOOP, adding an
 * instance to itself EINVAL, and the depth limit gives the kernel's errno at
 * the kernel's depth (built side by side with kernel epolls).
 */
#include "testlib.h"

#include <fcntl.h>
#include <unistd.h>

static int add(int (*ctl)(int, int, int, struct epoll_event *), int ep, int fd,
	       uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static int wait0(int ep, struct epoll_event *ev, int max)
{
	return uepoll_wait(ep, ev, max, 0);
}

static void test_inner_events(void)
{
	struct epoll_event ev[8];
	int outer = uepoll_create1(0), inner = uepoll_create1(0);
	int efd = ueventfd(0, EFD_NONBLOCK), pfd[2];
	uint64_t v;
	char c;

	REQUIRE(outer >= 0 && inner >= 0 && efd >= 0);
	REQUIRE(pipe2(pfd, O_NONBLOCK) == 0);
	CHECK_EQ(add(uepoll_ctl, inner, efd, EPOLLIN, 1), 0);
	CHECK_EQ(add(uepoll_ctl, inner, pfd[0], EPOLLIN, 2), 0);
	CHECK_EQ(add(uepoll_ctl, outer, inner, EPOLLIN, 100), 0);
	CHECK_EQ(wait0(outer, ev, 8), 0);

	/* ueventfd source */
	CHECK_EQ(ueventfd_write(efd, 1), 0);
	CHECK_EQ(wait0(outer, ev, 8), 1);
	CHECK_EQ(ev[0].events, EPOLLIN);
	CHECK_EQ(ev[0].data.u64, 100);
	CHECK_EQ(wait0(outer, ev, 8), 1);	/* LT: still there */
	CHECK_EQ(wait0(inner, ev, 8), 1);
	CHECK_EQ(ev[0].data.u64, 1);
	CHECK_EQ(ueventfd_read(efd, &v), 0);
	CHECK_EQ(wait0(inner, ev, 8), 0);
	CHECK_EQ(wait0(outer, ev, 8), 0);

	/* pipe source */
	CHECK_EQ(write(pfd[1], "x", 1), 1);
	CHECK_EQ(wait0(outer, ev, 8), 1);
	CHECK_EQ(ev[0].data.u64, 100);
	CHECK_EQ(wait0(inner, ev, 8), 1);
	CHECK_EQ(ev[0].data.u64, 2);
	CHECK_EQ(read(pfd[0], &c, 1), 1);
	/*
	 * uepoll.h: an instance's fd may read ready once after a wait
	 * returned its last event, until a wait finds nothing; so let the
	 * inner find nothing before the outer is asked.
	 */
	CHECK_EQ(wait0(inner, ev, 8), 0);
	CHECK_EQ(wait0(outer, ev, 8), 0);

	/* both sources, and the outer also holds the ueventfd directly */
	CHECK_EQ(add(uepoll_ctl, outer, efd, EPOLLIN, 3), 0);
	CHECK_EQ(ueventfd_write(efd, 2), 0);
	CHECK_EQ(write(pfd[1], "y", 1), 1);
	CHECK_EQ(wait0(outer, ev, 8), 2);
	t_sort_events(ev, 2);
	CHECK_EQ(ev[0].data.u64, 3);
	CHECK_EQ(ev[1].data.u64, 100);
	CHECK_EQ(wait0(inner, ev, 8), 2);
	t_sort_events(ev, 2);
	CHECK_EQ(ev[0].data.u64, 1);
	CHECK_EQ(ev[1].data.u64, 2);
	CHECK_EQ(ueventfd_read(efd, &v), 0);
	CHECK_EQ(read(pfd[0], &c, 1), 1);
	CHECK_EQ(wait0(inner, ev, 8), 0);
	CHECK_EQ(wait0(outer, ev, 8), 0);

	/* ONESHOT in the inner: once consumed, the outer no longer reports it */
	CHECK_EQ(uepoll_ctl(inner, EPOLL_CTL_MOD, efd,
			    &(struct epoll_event){ EPOLLIN | EPOLLONESHOT, { .u64 = 1 } }), 0);
	CHECK_EQ(uepoll_ctl(outer, EPOLL_CTL_DEL, efd, NULL), 0);
	CHECK_EQ(ueventfd_write(efd, 1), 0);
	CHECK_EQ(wait0(outer, ev, 8), 1);
	CHECK_EQ(wait0(inner, ev, 8), 1);
	CHECK_EQ(wait0(inner, ev, 8), 0);	/* disarmed */
	CHECK_EQ(wait0(outer, ev, 8), 0);

	/* two levels: outer2 -> outer -> inner */
	{
		int outer2 = uepoll_create1(0);

		REQUIRE(outer2 >= 0);
		CHECK_EQ(add(uepoll_ctl, outer2, outer, EPOLLIN, 200), 0);
		CHECK_EQ(wait0(outer2, ev, 8), 0);
		CHECK_EQ(write(pfd[1], "z", 1), 1);
		CHECK_EQ(wait0(outer2, ev, 8), 1);
		CHECK_EQ(ev[0].data.u64, 200);
		CHECK_EQ(read(pfd[0], &c, 1), 1);
		CHECK_EQ(wait0(inner, ev, 8), 0);
		CHECK_EQ(wait0(outer, ev, 8), 0);
		CHECK_EQ(wait0(outer2, ev, 8), 0);
		CHECK_EQ(uepoll_ctl(inner, EPOLL_CTL_MOD, efd,
				    &(struct epoll_event){ EPOLLIN, { .u64 = 1 } }), 0);
		CHECK_EQ(wait0(outer2, ev, 8), 1);	/* efd still has 1 */
		CHECK_EQ(ueventfd_read(efd, &v), 0);
		CHECK_EQ(wait0(inner, ev, 8), 0);
		CHECK_EQ(wait0(outer, ev, 8), 0);
		CHECK_EQ(wait0(outer2, ev, 8), 0);
		CHECK_EQ(uepoll_close(outer2), 0);
	}

	/* a kernel epoll can hold a uepoll instance too */
	{
		int kep = epoll_create1(0);

		REQUIRE(kep >= 0);
		CHECK_EQ(add(epoll_ctl, kep, inner, EPOLLIN, 300), 0);
		CHECK_EQ(epoll_wait(kep, ev, 8, 0), 0);
		CHECK_EQ(ueventfd_write(efd, 1), 0);
		CHECK_EQ(epoll_wait(kep, ev, 8, 0), 1);
		CHECK_EQ(ev[0].data.u64, 300);
		CHECK_EQ(ueventfd_read(efd, &v), 0);
		CHECK_EQ(wait0(inner, ev, 8), 0);
		CHECK_EQ(epoll_wait(kep, ev, 8, 0), 0);
		close(kep);
	}

	CHECK_EQ(uepoll_close(outer), 0);
	CHECK_EQ(uepoll_close(inner), 0);
	CHECK_EQ(uepoll_close(efd), 0);
	close(pfd[0]);
	close(pfd[1]);
}

static void test_loops(void)
{
	int a = uepoll_create1(0), b = uepoll_create1(0), c = uepoll_create1(0);
	int ka = epoll_create1(0), kb = epoll_create1(0), kc = epoll_create1(0);

	REQUIRE(a >= 0 && b >= 0 && c >= 0 && ka >= 0 && kb >= 0 && kc >= 0);
	CHECK_ERR(add(uepoll_ctl, a, a, EPOLLIN, 0), EINVAL);
	CHECK_ERR(add(epoll_ctl, ka, ka, EPOLLIN, 0), EINVAL);
	CHECK_EQ(add(uepoll_ctl, a, b, EPOLLIN, 0), 0);
	CHECK_EQ(add(epoll_ctl, ka, kb, EPOLLIN, 0), 0);
	CHECK_ERR(add(uepoll_ctl, b, a, EPOLLIN, 0), ELOOP);
	CHECK_ERR(add(epoll_ctl, kb, ka, EPOLLIN, 0), ELOOP);
	CHECK_EQ(add(uepoll_ctl, b, c, EPOLLIN, 0), 0);
	CHECK_EQ(add(epoll_ctl, kb, kc, EPOLLIN, 0), 0);
	CHECK_ERR(add(uepoll_ctl, c, a, EPOLLIN, 0), ELOOP);
	CHECK_ERR(add(epoll_ctl, kc, ka, EPOLLIN, 0), ELOOP);
	/* ELOOP also with events == 0 and with EPOLLET */
	CHECK_ERR(add(uepoll_ctl, c, a, 0, 0), ELOOP);
	CHECK_ERR(add(uepoll_ctl, c, b, EPOLLET | EPOLLIN, 0), ELOOP);
	/* after DEL the loop is gone */
	CHECK_EQ(uepoll_ctl(a, EPOLL_CTL_DEL, b, NULL), 0);
	CHECK_EQ(add(uepoll_ctl, c, a, EPOLLIN, 0), 0);
	CHECK_EQ(epoll_ctl(ka, EPOLL_CTL_DEL, kb, NULL), 0);
	CHECK_EQ(add(epoll_ctl, kc, ka, EPOLLIN, 0), 0);
	CHECK_EQ(uepoll_close(a), 0);
	CHECK_EQ(uepoll_close(b), 0);
	CHECK_EQ(uepoll_close(c), 0);
	close(ka);
	close(kb);
	close(kc);
}

/*
 * Build chains e[0] <- e[1] <- ... (e[i+1] holds e[i]) as long as the kernel
 * lets us, in both worlds; every ADD must give the same answer, and the
 * chain must also be refused at the same point when built top-down.
 */
#define CHAIN 10

static void test_depth(void)
{
	int k[CHAIN], u[CHAIN], kf, uf, rk, ru, ek, eu;

	for (int dir = 0; dir < 2; dir++) {
		for (int i = 0; i < CHAIN; i++) {
			k[i] = epoll_create1(0);
			u[i] = uepoll_create1(0);
			REQUIRE(k[i] >= 0 && u[i] >= 0);
		}
		/* a leaf fd at the bottom */
		kf = eventfd(1, EFD_NONBLOCK);
		uf = ueventfd(1, EFD_NONBLOCK);
		REQUIRE(kf >= 0 && uf >= 0);
		CHECK_EQ(add(epoll_ctl, k[0], kf, EPOLLIN, 0), 0);
		CHECK_EQ(add(uepoll_ctl, u[0], uf, EPOLLIN, 0), 0);
		for (int n = 0; n < CHAIN - 1; n++) {
			/* bottom-up: link i = n; top-down: link from the top */
			int i = dir == 0 ? n : CHAIN - 2 - n;

			errno = 0;
			rk = add(epoll_ctl, k[i + 1], k[i], EPOLLIN, (uint64_t)i);
			ek = errno;
			errno = 0;
			ru = add(uepoll_ctl, u[i + 1], u[i], EPOLLIN, (uint64_t)i);
			eu = errno;
			if (rk != ru || (rk < 0 && ek != eu)) {
				fprintf(stderr, "depth (%s) link %d: kernel %d errno %d, uepoll %d errno %d\n",
					dir ? "top-down" : "bottom-up", i, rk,
					ek, ru, eu);
				t_failures++;
			}
		}
		/* and the top of the deepest allowed chain reports the leaf */
		{
			struct epoll_event ke[2], ue[2];
			int top = CHAIN - 1, nk, nu;

			nk = epoll_wait(k[top], ke, 2, 0);
			nu = uepoll_wait(u[top], ue, 2, 0);
			CHECK_EQ(nu, nk);
		}
		for (int i = 0; i < CHAIN; i++) {
			close(k[i]);
			CHECK_EQ(uepoll_close(u[i]), 0);
		}
		close(kf);
		CHECK_EQ(uepoll_close(uf), 0);
	}

	/* the kernel really does have a limit: make sure we hit it */
	{
		int ke[CHAIN], hit = 0;

		for (int i = 0; i < CHAIN; i++)
			ke[i] = epoll_create1(0);
		for (int i = 0; i + 1 < CHAIN; i++)
			if (add(epoll_ctl, ke[i + 1], ke[i], EPOLLIN, 0) < 0)
				hit = 1;
		CHECK(hit);
		for (int i = 0; i < CHAIN; i++)
			close(ke[i]);
	}
}

/* Mixed chain: uepoll instance inside a kernel epoll inside a uepoll. */
static void test_mixed(void)
{
	struct epoll_event ev[4];
	int u1 = uepoll_create1(0), k = epoll_create1(0), u2 = uepoll_create1(0);
	int efd = ueventfd(0, EFD_NONBLOCK);
	uint64_t v;

	REQUIRE(u1 >= 0 && k >= 0 && u2 >= 0 && efd >= 0);
	CHECK_EQ(add(uepoll_ctl, u1, efd, EPOLLIN, 1), 0);
	CHECK_EQ(add(epoll_ctl, k, u1, EPOLLIN, 2), 0);
	CHECK_EQ(add(uepoll_ctl, u2, k, EPOLLIN, 3), 0);
	CHECK_ERR(add(uepoll_ctl, u1, u2, EPOLLIN, 4), ELOOP);
	CHECK_EQ(uepoll_wait(u2, ev, 4, 0), 0);
	CHECK_EQ(ueventfd_write(efd, 5), 0);
	CHECK_EQ(uepoll_wait(u2, ev, 4, 0), 1);
	CHECK_EQ(ev[0].data.u64, 3);
	CHECK_EQ(ueventfd_read(efd, &v), 0);
	CHECK_EQ(uepoll_wait(u1, ev, 4, 0), 0);
	CHECK_EQ(uepoll_wait(u2, ev, 4, 0), 0);
	CHECK_EQ(uepoll_close(u2), 0);
	close(k);
	CHECK_EQ(uepoll_close(u1), 0);
	CHECK_EQ(uepoll_close(efd), 0);
}

/*
 * A refused nesting (EPOLLEXCLUSIVE on an instance: EINVAL) has no side
 * effect on the instance it tried to add, as in the kernel, which refuses it
 * before it polls the target.  Found by the fuzzer (tests/fuzz): the refused
 * ADD pruned the inner's ready queue, so an item that was queued, emptied
 * and filled again moved behind the others.
 */
static void one_world(int (*create1)(int),
		      int (*ctl)(int, int, int, struct epoll_event *),
		      int (*wait)(int, struct epoll_event *, int, int),
		      int (*efd)(unsigned int, int), int (*cl)(int),
		      int *rc, int *err, uint64_t *order)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[4];
	int outer = create1(0), inner = create1(0);
	int a = efd(1, EFD_NONBLOCK), b = efd(1, EFD_NONBLOCK);
	eventfd_t v;

	REQUIRE(outer >= 0 && inner >= 0 && a >= 0 && b >= 0);
	ev.data.u64 = 1;
	CHECK_EQ(ctl(inner, EPOLL_CTL_ADD, a, &ev), 0);
	ev.data.u64 = 2;
	CHECK_EQ(ctl(inner, EPOLL_CTL_ADD, b, &ev), 0);
	/* a stays queued first while empty: the kernel only drops it when the
	 * instance is polled */
	CHECK_EQ(uepoll_read(a, &v, sizeof(v)), 8);
	ev.events = EPOLLIN | EPOLLEXCLUSIVE;
	errno = 0;
	*rc = ctl(outer, EPOLL_CTL_ADD, inner, &ev);
	*err = errno;
	CHECK_EQ(uepoll_write(a, &(uint64_t){ 1 }, 8), 8);
	CHECK_EQ(wait(inner, out, 4, 0), 2);
	order[0] = out[0].data.u64;
	order[1] = out[1].data.u64;
	CHECK_EQ(cl(a), 0);
	CHECK_EQ(cl(b), 0);
	CHECK_EQ(cl(inner), 0);
	CHECK_EQ(cl(outer), 0);
}

static int k_close(int fd)
{
	return close(fd);
}

static void test_refused_add_no_side_effect(void)
{
	uint64_t ko[2], uo[2];
	int kr, ke, ur, ue;

	one_world(epoll_create1, epoll_ctl, epoll_wait, eventfd, k_close, &kr,
		  &ke, ko);
	one_world(uepoll_create1, uepoll_ctl, uepoll_wait, ueventfd,
		  uepoll_close, &ur, &ue, uo);
	CHECK_EQ(kr, -1);
	CHECK_EQ(ke, EINVAL);
	CHECK_EQ(ur, kr);
	CHECK_EQ(ue, ke);
	CHECK_EQ(ko[0], 1);
	CHECK_EQ(uo[0], ko[0]);
	CHECK_EQ(uo[1], ko[1]);
}

/*
 * An instance held through a registration that does not ask for EPOLLIN
 * (an epoll fd reports nothing else) does not make its holder ready, even
 * when it has events.  Found by the fuzzer: a holder's check of a nested
 * instance counted the instances *it* held as ready whatever the mask.
 */
static int mask_world(int (*create1)(int),
		      int (*ctl)(int, int, int, struct epoll_event *),
		      int (*wait)(int, struct epoll_event *, int, int),
		      int (*efd)(unsigned int, int), int (*cl)(int))
{
	struct epoll_event ev = { .events = EPOLLIN }, out[4];
	int outer = create1(0), mid = create1(0), inner = create1(0);
	int e = efd(1, EFD_NONBLOCK), other = efd(0, EFD_NONBLOCK), n;

	REQUIRE(outer >= 0 && mid >= 0 && inner >= 0 && e >= 0 && other >= 0);
	CHECK_EQ(ctl(inner, EPOLL_CTL_ADD, e, &ev), 0);
	/* other is writable now: queued in mid, whose fd turns readable */
	ev.events = EPOLLOUT;
	CHECK_EQ(ctl(mid, EPOLL_CTL_ADD, other, &ev), 0);
	ev.events = EPOLLOUT | EPOLLERR;
	CHECK_EQ(ctl(mid, EPOLL_CTL_ADD, inner, &ev), 0);
	ev.events = EPOLLIN;
	CHECK_EQ(ctl(outer, EPOLL_CTL_ADD, mid, &ev), 0);
	/* full: other is not writable any more, mid's readiness is stale */
	CHECK_EQ(uepoll_write(other, &(uint64_t){ 0xfffffffffffffffeull }, 8), 8);
	n = wait(outer, out, 4, 0);
	CHECK_EQ(cl(e), 0);
	CHECK_EQ(cl(other), 0);
	CHECK_EQ(cl(inner), 0);
	CHECK_EQ(cl(mid), 0);
	CHECK_EQ(cl(outer), 0);
	return n;
}

static void test_nested_mask(void)
{
	int k = mask_world(epoll_create1, epoll_ctl, epoll_wait, eventfd,
			   k_close);
	int u = mask_world(uepoll_create1, uepoll_ctl, uepoll_wait, ueventfd,
			   uepoll_close);

	CHECK_EQ(k, 0);
	CHECK_EQ(u, k);
}

/*
 * A closed nested instance whose memory and fd number a new instance then
 * gets: the holder's record of the old one must not be taken for the new
 * one.  Found by the fuzzer: closing the holder "un-watched" the new
 * instance (watched -1), which then pruned its ready queue on every read
 * that emptied a source and returned its events out of order.
 */
static void reuse_world(int (*create1)(int),
			int (*ctl)(int, int, int, struct epoll_event *),
			int (*wait)(int, struct epoll_event *, int, int),
			int (*efd)(unsigned int, int), int (*cl)(int),
			uint64_t *order)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[4];
	int h = create1(0), z = create1(0), y, e[3];
	uint64_t v;

	REQUIRE(h >= 0 && z >= 0);
	CHECK_EQ(ctl(h, EPOLL_CTL_ADD, z, &ev), 0);
	CHECK_EQ(cl(z), 0);
	y = create1(0); /* uepoll: z's memory and fd number */
	REQUIRE(y >= 0);
	CHECK_EQ(cl(h), 0);
	for (int i = 0; i < 3; i++) {
		e[i] = efd(1, EFD_NONBLOCK);
		REQUIRE(e[i] >= 0);
		ev.data.u64 = (uint64_t)i;
		CHECK_EQ(ctl(y, EPOLL_CTL_ADD, e[i], &ev), 0);
	}
	/* e[1] stays first in line while empty, in the kernel */
	CHECK_EQ(uepoll_read(e[1], &v, sizeof(v)), 8);
	CHECK_EQ(uepoll_write(e[1], &(uint64_t){ 1 }, 8), 8);
	CHECK_EQ(wait(y, out, 4, 0), 3);
	for (int i = 0; i < 3; i++) {
		order[i] = out[i].data.u64;
		CHECK_EQ(cl(e[i]), 0);
	}
	CHECK_EQ(cl(y), 0);
}

static void test_reused_inner(void)
{
	uint64_t ko[3], uo[3];

	reuse_world(epoll_create1, epoll_ctl, epoll_wait, eventfd, k_close, ko);
	reuse_world(uepoll_create1, uepoll_ctl, uepoll_wait, ueventfd,
		    uepoll_close, uo);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(uo[i], ko[i]);
}

int main(void)
{
	t_begin("t_nesting");
	t_watchdog(120);
	test_inner_events();
	test_loops();
	test_depth();
	test_mixed();
	test_refused_add_no_side_effect();
	test_nested_mask();
	test_reused_inner();
	return t_end();
}
