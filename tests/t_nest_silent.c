/*
 * t_nest_silent: a nested instance registered without EPOLLIN (SILENT in
 * src/krec.c, the shape of perf's `bench epoll wait -N`: a chain of
 * instances added with EPOLLHUP only) never fires, so it costs its holder
 * nothing: a wait on the holder makes as many system calls as the same
 * wait on an instance without the chain (counted through tests/libcwrap.c).
 * And it is still a registration: the same results as the kernel's for an
 * inner instance that has events (none reported), ELOOP for a cycle through
 * it, EEXIST for a second ADD; a MOD to EPOLLIN makes it fire (a thread
 * blocked in the holder's wait wakes for the inner's event), a MOD back to
 * EPOLLHUP silences it, DEL removes it.
 */
#include "testlib.h"
#include "libcwrap.h"
#include "calls.h"

#include <unistd.h>

static int counted_wait(int ep, int *n)
{
	struct epoll_event ev[8];

	wrap_take(-1);
	wrap_arm(0);
	*n = uepoll_wait(ep, ev, 8, 0);
	wrap_disarm();
	return wrap_take(-1);
}

static void costs(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 };
	int plain = uepoll_create1(0), held = uepoll_create1(0),
	    c1 = uepoll_create1(0), c2 = uepoll_create1(0),
	    e1 = ueventfd(0, EFD_NONBLOCK), e2 = ueventfd(0, EFD_NONBLOCK);
	int kp, kh, np, nh;
	uint64_t v = 1;

	REQUIRE(plain >= 0 && held >= 0 && c1 >= 0 && c2 >= 0 && e1 >= 0 &&
		e2 >= 0);
	CHECK_EQ(uepoll_ctl(plain, EPOLL_CTL_ADD, e1, &ev), 0);
	CHECK_EQ(uepoll_ctl(held, EPOLL_CTL_ADD, e2, &ev), 0);
	ev.events = EPOLLHUP;
	CHECK_EQ(uepoll_ctl(held, EPOLL_CTL_ADD, c1, &ev), 0);
	CHECK_EQ(uepoll_ctl(c1, EPOLL_CTL_ADD, c2, &ev), 0);
	for (int round = 0; round < 3; round++) {
		CHECK_EQ(uepoll_write(e1, &v, 8), 8);
		CHECK_EQ(uepoll_write(e2, &v, 8), 8);
		kp = counted_wait(plain, &np);
		kh = counted_wait(held, &nh);
		CHECK_EQ(np, 1);
		CHECK_EQ(nh, 1);
		CHECK_EQ(kh, kp);
		CHECK_EQ(uepoll_read(e1, &v, 8), 8);
		CHECK_EQ(uepoll_read(e2, &v, 8), 8);
		kp = counted_wait(plain, &np);
		kh = counted_wait(held, &nh);
		CHECK_EQ(np, 0);
		CHECK_EQ(nh, 0);
		CHECK_EQ(kh, kp);
	}
	uepoll_close(plain);
	uepoll_close(held);
	uepoll_close(c1);
	uepoll_close(c2);
	uepoll_close(e1);
	uepoll_close(e2);
}

/* The log of one run; the kernel's and uepoll's must be equal. */
static int script(const struct calls *s, long *log)
{
	int ep = s->create1(0), in = s->create1(0),
	    e = s->eventfd(1, EFD_NONBLOCK), k = 0;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 5 }, out[4];
	struct blocked b = { .s = s, .ep = ep };
	pthread_t th;
	uint64_t v = 1;

	REQUIRE(ep >= 0 && in >= 0 && e >= 0);
	log[k++] = s->ctl(in, EPOLL_CTL_ADD, e, &ev); /* in is ready */
	ev.events = EPOLLHUP;
	ev.data.u64 = 7;
	log[k++] = s->ctl(ep, EPOLL_CTL_ADD, in, &ev);
	log[k++] = s->wait(ep, out, 4, 0); /* silent: nothing */
	log[k++] = s->ctl(ep, EPOLL_CTL_ADD, in, &ev) < 0 ? errno : 0;
	log[k++] = s->ctl(in, EPOLL_CTL_ADD, ep, &ev) < 0 ? errno : 0;
	/* Loud while a thread sleeps on ep: the MOD wakes it (in is
	 * ready). */
	v = 0;
	s->write(e, &v, 8);
	REQUIRE(pthread_create(&th, NULL, blocked_wait, &b) == 0);
	t_sleep_ms(50);
	ev.events = EPOLLIN;
	log[k++] = s->ctl(ep, EPOLL_CTL_MOD, in, &ev);
	pthread_join(th, NULL);
	log[k++] = b.n;
	log[k++] = b.n == 1 ? (long)b.ev.data.u64 : -1;
	/* Silent again: nothing, though in is still ready. */
	ev.events = EPOLLHUP;
	log[k++] = s->ctl(ep, EPOLL_CTL_MOD, in, &ev);
	log[k++] = s->wait(ep, out, 4, 0);
	/* Loud, then the inner's event after a sleep began. */
	ev.events = EPOLLIN | EPOLLET;
	log[k++] = s->ctl(ep, EPOLL_CTL_MOD, in, &ev);
	log[k++] = s->wait(ep, out, 4, 0);
	log[k++] = s->wait(ep, out, 4, 0); /* the edge was taken */
	REQUIRE(pthread_create(&th, NULL, blocked_wait, &b) == 0);
	t_sleep_ms(50);
	v = 1;
	s->write(e, &v, 8);
	pthread_join(th, NULL);
	log[k++] = b.n;
	log[k++] = s->ctl(ep, EPOLL_CTL_DEL, in, NULL);
	log[k++] = s->ctl(ep, EPOLL_CTL_DEL, in, NULL) < 0 ? errno : 0;
	s->close(e);
	s->close(in);
	s->close(ep);
	return k;
}

static void differential(void)
{
	long kl[32], ul[32];
	int kn = script(&calls_kernel, kl), un = script(&calls_uepoll, ul);

	CHECK_EQ(kn, un);
	for (int i = 0; i < kn && i < un; i++)
		if (kl[i] != ul[i]) {
			fprintf(stderr, "entry %d: kernel %ld, uepoll %ld\n", i,
				kl[i], ul[i]);
			t_failures++;
		}
}

int main(void)
{
	t_begin("t_nest_silent");
	t_watchdog(60);
	costs();
	differential();
	return t_end();
}
