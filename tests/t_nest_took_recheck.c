/*
 * t_nest_took_recheck: a wait that took an edge-triggered doorbell's event
 * (bell_took in src/bell.h: it loads lt, stores `set` = 0) loads lt again
 * after its store, and takes the doorbell properly if a holder made it
 * level-triggered meanwhile (bell__retake; WATCHED in src/bell.c;
 * models/arrive.pml, mutant TOOK_NO_RECHECK).  Without that look, the
 * store hides the ring the holder's arrival made (bell_watch: MOD to
 * level-triggered, take, then a ring for the queued item): `set` is 0 with
 * the level-triggered eventfd counting, which no clear takes any more
 * (bell__clear does nothing while `set` is 0).  The instance then reads
 * ready for ever with nothing in it: its fd polls readable and its holder
 * reports it on every look (a stuck ring), where the kernel's epoll
 * reports an empty nested epoll to nobody.
 *
 * Thread W sleeps in a wait on instance `in` (unwatched: its doorbell
 * edge-triggered), which holds ueventfd A.  The main thread writes A: the
 * ring wakes W with the doorbell's event.  W has a hardware watchpoint on
 * its own accesses to the word of `in`'s lt (watchpoint.h): at the first
 * after the write (bell_took's load of lt), W waits while the main thread
 * makes instance `out` hold `in` level-triggered (its ctl returns before
 * W goes on).  W then returns A, and nothing is left in `in`: its fd must
 * not poll readable, `out` must not report it, a wait on `in` must find
 * nothing (zero-timeout looks once the steps are over: no timing; W's
 * wait is bounded, 10 s, as a hang detector).  Skipped (77) where perf
 * breakpoints with sigtrap are not allowed.
 */
#include "testlib.h"
#include "watchpoint.h"

#include "fdtab.h"
#include "port_impl.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

/* ThreadSanitizer runs a synchronous signal's handler inside the atomic
 * operation that trapped, holding its lock of this thread: the handler's
 * own atomics would deadlock.  No watchpoint there: the steps run one
 * after the other, and only the outcome is checked. */
#ifdef T_TSAN
#define WP_WATCH(addr, len, fn) ((void)(addr), (void)(fn), T_NO_WATCH)
#else
#define WP_WATCH(addr, len, fn) wp_watch(addr, len, fn)
#endif
enum { T_NO_WATCH = -100000 };

static int in;
static struct port *pin;
static _Atomic int w_ready, a_written, fired, m_go, m_done, w_n;
static struct epoll_event w_got[4];

/* W's accesses to the word of lt: the first after A's write. */
static void on_lt(const void *addr)
{
	(void)addr;
	if (!atomic_load(&a_written) || atomic_load(&fired))
		return;
	atomic_store(&fired, 1);
	atomic_store(&m_go, 1);
	while (!atomic_load(&m_done))
		sched_yield();
}

static void *w_main(void *arg)
{
	uintptr_t word = (uintptr_t)(void *)&pin->bell.lt & ~(uintptr_t)3;
	int wp;

	(void)arg;
	wp = WP_WATCH((const void *)word, 4, on_lt);
	atomic_store(&w_ready, wp >= 0 || wp == T_NO_WATCH ? 1 : wp);
	if (wp < 0 && wp != T_NO_WATCH)
		return NULL;
	atomic_store(&w_n, uepoll_wait(in, w_got, 4, 10000));
	if (wp >= 0)
		close(wp);
	atomic_store(&m_go, 1); /* (if the watchpoint never fired) */
	return NULL;
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, got[4];
	struct pollfd pfd;
	uint64_t one = 1;
	pthread_t w;
	int out, a, n;

	t_begin("t_nest_took_recheck");
	t_watchdog(30);
	in = uepoll_create1(0);
	out = uepoll_create1(0);
	a = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(in >= 0 && out >= 0 && a >= 0);
	pin = (struct port *)(void *)fdtab_peek(in);
	REQUIRE(pin);
	ev.events = EPOLLIN | EPOLLET; /* not put back once returned */
	ev.data.u64 = 'A';
	REQUIRE(uepoll_ctl(in, EPOLL_CTL_ADD, a, &ev) == 0);
	ev.events = EPOLLIN;

	REQUIRE(pthread_create(&w, NULL, w_main, NULL) == 0);
	while (!atomic_load(&w_ready))
		sched_yield();
	if (atomic_load(&w_ready) < 0) {
		REQUIRE(pthread_join(w, NULL) == 0);
		fprintf(stderr, "perf_event_open: %s\n",
			strerror(-atomic_load(&w_ready)));
		T_SKIP("no perf breakpoint with sigtrap here");
	}
	/* W counted as a sleeper: it sleeps in the kernel epoll, or is
	 * about to (the ring's event is then there when it does). */
	while (atomic_load(&pin->bell.sleepers) == 0)
		sched_yield();
	atomic_store(&a_written, 1);
	CHECK_EQ(uepoll_write(a, &one, 8), 8);
	/* In W's window: a holder arrives. */
	while (!atomic_load(&m_go))
		sched_yield();
	ev.data.u64 = 'I'; /* level-triggered holder */
	CHECK_EQ(uepoll_ctl(out, EPOLL_CTL_ADD, in, &ev), 0);
	atomic_store(&m_done, 1);
	REQUIRE(pthread_join(w, NULL) == 0);
#ifndef T_TSAN
	CHECK(atomic_load(&fired)); /* the watchpoint placed the ctl */
#endif
	CHECK_EQ(atomic_load(&w_n), 1);
	CHECK_EQ(w_got[0].data.u64, 'A');

	/* Nothing is left in `in`. */
	pfd.fd = in;
	pfd.events = POLLIN;
	pfd.revents = 0;
	n = poll(&pfd, 1, 0);
	CHECK_EQ(n, 0);
	n = uepoll_wait(out, got, 4, 0);
	CHECK_EQ(n, 0);
	if (n != 0)
		fprintf(stderr, "`out` reports `in`, which holds nothing: its "
				"doorbell was left counting (a stuck ring)\n");
	CHECK_EQ(uepoll_wait(in, got, 4, 0), 0);
	CHECK_EQ(poll(&pfd, 1, 0), 0);

	uepoll_close(out);
	uepoll_close(in);
	uepoll_close(a);
	return t_end();
}
