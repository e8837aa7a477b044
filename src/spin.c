/* SPDX-License-Identifier: MIT */
/*
 * spin.c - spinning before a sleep.
 *
 * SPIN.  A wait that found nothing ready sleeps in epoll_wait; the event
 * that comes next then costs a doorbell write, a wakeup and, on a busy
 * machine, the time until the scheduler runs the woken thread (on the 2-vCPU
 * reference machine, with producers running, that is most of an event's
 * cost: docs/benchmarks.md, oneshot-mt with producer work, where uepoll was
 * then 0.63-0.82x the kernel: the kernel's slower waiters find something
 * more often; with the spin, 1.5-2.5x).  So before it
 * sleeps a wait polls the ready queue for a while: a userspace source that
 * becomes ready meanwhile is taken without any system call on either side
 * (the doorbell stays rung while nobody sleeps: DOORBELL in bell.c).
 *
 * The spin is bounded and adaptive, so that an instance whose events come
 * rarely does not burn CPU:
 *  - it lasts at most `budget` ns (and never past the wait's deadline);
 *  - a spin that finds something keeps the budget and doubles it, up to
 *    `max` (UEPOLL_SPIN_NS, default SPIN_DEFAULT_NS: about what a sleep and
 *    its wakeup cost); one that finds nothing halves it, down to 0 below
 *    SPIN_MIN_NS;
 *  - at budget 0 a wait sleeps at once, except that every `period`-th such
 *    sleep first probes with a full-length spin, which brings the budget
 *    back if events now come quickly.  The period starts at SPIN_PROBE
 *    sleeps and doubles after each probe that finds nothing, up to
 *    SPIN_PROBE_MAX: an instance that stays idle, or whose peer thread runs
 *    on the same CPU (a spin there only delays it), soon spends about
 *    max / SPIN_PROBE_MAX of CPU per sleep, and a probe touches few enough
 *    waits not to show in their 99th percentile of latency (pingpong
 *    same-cpu: p99 8.3 -> 19.7 us with a fixed period of 16);
 *  - at most SPIN_SPINNERS threads of one instance spin at once; the others
 *    sleep as before, so a pool of N idle threads does not keep N CPUs busy;
 *  - an instance that got a deferred wakeup (a ueventfd that coalesces its
 *    wakeups queues the item but delays the ring: COALESCE in eventfd_hold.c)
 *    never spins again (spin_deferred): its user chose fewer wakeups over
 *    latency, and a spinner would take each such item at once (measured:
 *    pubsub efd-delay5ms went from 16% to 61% of a CPU).
 *
 * What a spinning thread does not do: it is not counted in bell.sleepers (it
 * is running, as a thread that is handling an event is: an exclusive or
 * round-robin wakeup passes over its instance, as the kernel passes over an
 * epoll with no thread in epoll_wait), and it polls only the ready queue: a
 * kernel fd's event waits at most the rest of the spin, then the sleep's
 * epoll_wait returns it at once.  Signals likewise: the wait's sigmask
 * applies from the sleep on.
 *
 * KERNEL SPIN.  An instance made with UEPOLL_SPIN_KERNEL also spins before
 * a sleep on its kernel fds (wait.c, wait__spin): request/response over a
 * socket between two processes on two CPUs otherwise pays a sleep and a
 * wakeup per message, when the answer often comes within a few
 * microseconds.  Its poll is a system call (a zero-timeout ppoll of the
 * kernel epoll's fd, which is readable while a registration there is
 * ready, the doorbell included), so it looks at the clock after every poll
 * and its bound is longer: UEPOLL_SPIN_US (default SPIN_KERNEL_DEFAULT_US).
 * It is opt-in: it burns a CPU for up to that long per wait that would
 * sleep, and the adaptive rule above (the same code, on the instance's
 * second struct spin) is what stops an instance whose spins keep missing.
 * Like the kernel's busy poll (EPIOCSPARAMS) and Onload's EF_POLL_USEC it
 * only decides when the sleep starts: what the wait returns, its timeout
 * and its signals are the sleep's.
 *
 * PREEMPTED.  A kernel spin whose thread shares its CPU with the peer it
 * waits for (request/response between two processes on one CPU) finds
 * the answer only once the scheduler has taken the CPU from it and run
 * the peer: every such spin "hits", keeps its budget, and delays each
 * answer by the rest of a time slice (sockpp same-cpu: p99 61 us against
 * the kernel's 11 us before this rule).  So a kernel spin reads its
 * thread's involuntary context switches before and after (two system
 * calls, beside one per poll), and a hit during which the thread was
 * preempted is scored as a miss: the budget halves, and such an instance
 * stops spinning as an idle one does.  (The wait still takes what the
 * spin found.)  The ueventfd spin does not pay for it: its polls are
 * loads, and its probes already keep a same-CPU peer's cost low.
 *
 * CUT.  A ueventfd spin the wait's deadline cuts short says nothing: its
 * bound (10 us) is below almost any timeout.  A kernel spin's bound may
 * be above the timeouts of the instance's waits (UEPOLL_SPIN_US up to 1 s
 * against a 1 ms tick): scored as nothing, such spins would never shrink,
 * and every wait would spin its whole timeout (helper-40: 62-71% of a CPU
 * for an idle 1 ms loop, and no EINTR, since a handler that runs during a
 * spin is one that ran before the call).  So a kernel spin cut with
 * nothing found is a miss.
 *
 * Memory ordering: none needed.  The fields are hints (relaxed); ready() is
 * the caller's own seq_cst look at its queue, and a thread that stops
 * spinning goes through the ordinary sleep protocol, which re-checks the
 * queue after counting itself a sleeper.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <urcu/arch.h>

#include "config.h"
#include "spin.h"
#include "sys.h"

#define SPIN_DEFAULT_NS 10000u
#define SPIN_LIMIT_NS 1000000000u /* UEPOLL_SPIN_NS above this: this */
#define SPIN_MIN_NS 500u
#define SPIN_PROBE 16u
#define SPIN_PROBE_MAX 1024u
#define SPIN_SPINNERS 2
/* KERNEL SPIN: UEPOLL_SPIN_US when unset (about two loopback round trips on
 * the reference machine). */
#define SPIN_KERNEL_DEFAULT_US 50u
/* Polls between two looks at the clock. */
#define SPIN_POLLS 32

/* UEPOLL_SPIN_NS (config.c): a number of ns (0: never spin), capped. */
static uint32_t spin__max(void)
{
	int64_t v = config_get().spin_ns;

	if (v < 0)
		return SPIN_DEFAULT_NS;
	return v > SPIN_LIMIT_NS ? SPIN_LIMIT_NS : (uint32_t)v;
}

/* UEPOLL_SPIN_US (config.c): a number of us (0: never spin), capped. */
static uint32_t spin__kernel_max(void)
{
	int64_t v = config_get().spin_us;

	if (v < 0)
		return SPIN_KERNEL_DEFAULT_US * 1000u;
	return v > SPIN_LIMIT_NS / 1000 ? SPIN_LIMIT_NS : (uint32_t)v * 1000u;
}

static void spin__init(struct spin *s, uint32_t max, uint32_t polls)
{
	s->max = max;
	s->polls = polls;
	s->kernel = polls == 1;
	atomic_init(&s->budget, s->max);
	atomic_init(&s->idle, 0);
	atomic_init(&s->period, SPIN_PROBE);
	atomic_init(&s->spinners, 0);
	atomic_init(&s->deferred, false);
}

void spin_init(struct spin *s, bool off)
{
	spin__init(s, off ? 0 : spin__max(), SPIN_POLLS);
}

void spin_init_kernel(struct spin *s, bool on)
{
	/* A poll is a system call: the clock after each. */
	spin__init(s, on ? spin__kernel_max() : 0, 1);
}

/* The budget of this wait's spin (0: none); *probe: it is a probe. */
static uint32_t spin__budget(struct spin *s, bool *probe)
{
	uint32_t b = atomic_load_explicit(&s->budget, memory_order_relaxed);

	*probe = false;
	if (atomic_load_explicit(&s->deferred, memory_order_relaxed))
		return 0;
	if (b || !s->max)
		return b;
	if (atomic_fetch_add_explicit(&s->idle, 1, memory_order_relaxed) + 1 <
	    atomic_load_explicit(&s->period, memory_order_relaxed))
		return 0;
	atomic_store_explicit(&s->idle, 0, memory_order_relaxed);
	*probe = true;
	return s->max;
}

/* The rule above, after a spin of budget b: a hit that counts keeps the
 * budget and grows it (a probe's brings it back and resets the period); a
 * miss halves it (a probe's doubles the period); a spin the deadline cut
 * with nothing found says nothing, but for a kernel spin's (CUT). */
static void spin__score(struct spin *s, uint32_t b, bool probe, bool scored,
			bool cut_miss)
{
	if (scored) {
		if (probe) {
			atomic_store_explicit(&s->period, SPIN_PROBE,
					      memory_order_relaxed);
			atomic_store_explicit(&s->budget, b,
					      memory_order_relaxed);
		} else if (b < s->max) {
			atomic_store_explicit(&s->budget,
					      b > s->max / 2 ? s->max : 2 * b,
					      memory_order_relaxed);
		}
	} else if (cut_miss && !s->kernel) {
		/* A spin the deadline cut short says nothing (CUT: but for a
		 * kernel spin's). */
	} else if (probe) {
		uint32_t per = atomic_load_explicit(&s->period,
						    memory_order_relaxed);

		if (per < SPIN_PROBE_MAX)
			atomic_store_explicit(&s->period, 2 * per,
					      memory_order_relaxed);
	} else {
		atomic_store_explicit(&s->budget,
				      b / 2 < SPIN_MIN_NS ? 0 : b / 2,
				      memory_order_relaxed);
	}
}

bool spin_wait(struct spin *s, bool (*ready)(void *), void *arg,
	       int64_t deadline)
{
	bool probe, hit = false, cut = false;
	long pre;
	uint32_t b = spin__budget(s, &probe);
	uint64_t end, now;

	if (!b)
		return false;
	if (atomic_fetch_add_explicit(&s->spinners, 1, memory_order_relaxed) >=
	    SPIN_SPINNERS) {
		atomic_fetch_sub_explicit(&s->spinners, 1, memory_order_relaxed);
		return false;
	}
	/* PREEMPTED (above): two system calls a kernel spin, whose every poll
	 * is one already. */
	pre = s->kernel ? sys_preempted() : -1;
	now = sys_now_ns();
	end = now + b;
	if (deadline >= 0 && (uint64_t)deadline < end) {
		end = (uint64_t)deadline;
		cut = true;
	}
	while (!hit && now < end) {
		for (uint32_t i = 0; i < s->polls; i++) {
			if (ready(arg)) {
				hit = true;
				break;
			}
			caa_cpu_relax();
		}
		now = sys_now_ns();
	}
	atomic_fetch_sub_explicit(&s->spinners, 1, memory_order_relaxed);
	spin__score(s, b, probe, hit && (pre < 0 || sys_preempted() == pre),
		    cut && !hit);
	return hit;
}
