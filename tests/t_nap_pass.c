/*
 * t_nap_pass: a nap ended by a signal passes its ring on (NAP in
 * src/bell.c, bell__nap_end; models/doorbell.pml, MUTANT_NAP_NO_PASS).
 *
 * On a UEPOLL_NOPOLL instance, thread A naps (a uepoll_wait without a
 * sigmask sleeps on the futex word) and thread B sleeps in the kernel epoll
 * (a uepoll_pwait with a sigmask).  A write's ring wakes one napper and
 * writes no doorbell (one thread per event, as the kernel's).  Here the
 * signal comes first: the write is held just before its FUTEX_WAKE (the
 * library's next system call, hooked: tests/libcwrap.h) while A is sent a
 * signal, and A's uepoll_wait returns -1 EINTR without collecting; then the
 * FUTEX_WAKE wakes nobody.  B must still get the event: A's nap, ending
 * without collecting, saw the item queued and B counted, and rang for it.
 * Without that, B sleeps for ever with the event pending (a lost wakeup,
 * seen as B not returning within 10 s).  The kernel's epoll loses nothing
 * there either: its ready list keeps the event for the next waiter.
 *
 * The same scenario catches a signal that kicks before it queues its item
 * (MUTANT_KICK_FIRST): A's nap then ends with nothing queued to pass on.
 */
#include "testlib.h"
#include "libcwrap.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

struct waiter {
	pthread_t th;
	int ep;
	const sigset_t *mask;
	_Atomic int tid;
	int r, err;
	struct epoll_event ev[4];
};

static void *waiter_fn(void *arg)
{
	struct waiter *w = arg;

	atomic_store(&w->tid, t_gettid());
	errno = 0;
	if (w->mask)
		w->r = uepoll_pwait(w->ep, w->ev, 4, -1, w->mask);
	else
		w->r = uepoll_wait(w->ep, w->ev, 4, -1);
	w->err = errno;
	return NULL;
}

/* Start a waiter; the system call it is found asleep in. */
static int waiter_start(struct waiter *w, int ep, const sigset_t *mask)
{
	w->ep = ep;
	w->mask = mask;
	atomic_store(&w->tid, 0);
	REQUIRE(pthread_create(&w->th, NULL, waiter_fn, w) == 0);
	while (!atomic_load(&w->tid))
		sched_yield();
	return t_blocked_in(atomic_load(&w->tid), 5000);
}

static _Atomic int handled;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

static struct waiter a, b;
static _Atomic long hooked = -1;
static _Atomic int a_joined;

/* In the writer, just before the ring's system call: interrupt the napper
 * and let its wait return before the FUTEX_WAKE is made. */
static void before_wake(long nr)
{
	atomic_store(&hooked, nr);
	pthread_kill(a.th, SIGUSR1);
	atomic_store(&a_joined, t_join_within(a.th, 5000));
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	uint64_t one = 1, v;
	sigset_t mask;
	int ep, e, nr;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };

	t_begin("t_nap_pass");
	t_watchdog(60);
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR2);

	ep = uepoll_create2(0, UEPOLL_NOPOLL);
	REQUIRE(ep >= 0);
	/* A NOPOLL ueventfd whose first unit is read away: it leaves that
	 * unit in its kernel fd (MIRROR in eventfd.c), so a later write's
	 * only system call is the ring's. */
	e = ueventfd(1, EFD_NONBLOCK | UEVENTFD_NOPOLL);
	REQUIRE(e >= 0);
	REQUIRE(uepoll_read(e, &v, 8) == 8);
	REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);

	nr = waiter_start(&a, ep, NULL);
	if (nr != SYS_futex) {
		fprintf(stderr, "A asleep in %d, not a nap\n", nr);
		t_failures++;
	}
	nr = waiter_start(&b, ep, &mask);
	CHECK(nr == SYS_epoll_pwait || nr == SYS_epoll_wait
#ifdef SYS_epoll_pwait2
	      || nr == SYS_epoll_pwait2
#endif
	);

	wrap_hook_once(before_wake);
	REQUIRE(uepoll_write(e, &one, 8) == 8);
	wrap_hook_once(NULL);
	/* The hook ran at the ring's FUTEX_WAKE, and A left its nap then. */
	CHECK_EQ(atomic_load(&hooked), SYS_futex);
	REQUIRE(atomic_load(&a_joined));
	CHECK_EQ(a.r, -1);
	CHECK_EQ(a.err, EINTR);
	CHECK_EQ(atomic_load(&handled), 1);

	/* B gets the event (a lost wakeup leaves it asleep). */
	if (!t_join_within(b.th, 10000)) {
		fprintf(stderr, "B was not woken: the ring was lost\n");
		exit(1);
	}
	CHECK_EQ(b.r, 1);
	CHECK_EQ(b.ev[0].data.u64, 7);
	CHECK_EQ(b.ev[0].events, EPOLLIN);
	REQUIRE(uepoll_read(e, &v, 8) == 8);
	CHECK_EQ(v, 1);

	signal(SIGUSR1, SIG_DFL);
	uepoll_close(e);
	uepoll_close(ep);
	return t_end();
}
