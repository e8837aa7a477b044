/* SPDX-License-Identifier: MIT */
/*
 * pingpong - two threads hand a token back and forth, both asleep between
 * turns.  Thread A writes to B's eventfd (or pipe) and waits (epoll/uepoll
 * instance of its own) for its own; B does the mirror.  The pipe rows are
 * kernel fds in a uepoll instance: what uepoll adds to a sleeping wait on
 * them (KERNEL COST in src/wait.c).  The round trip as A sees it
 * is the latency.  The `futex` row is the floor: a bare futex word, the same
 * hand-off with nothing else.  The `futex-timed` rows are that floor for a
 * wait that has a timeout, as every instance row's wait has (10 s): each
 * sleep computes its deadline (a clock read) and passes it to FUTEX_WAIT, so
 * the kernel arms and cancels a timer per sleep, as it does for an
 * epoll_wait with a timeout and for uepoll's nap.  The `efd-read` rows have no instance: each
 * thread blocks in read(2) on its own eventfd (uepoll_read on a ueventfd:
 * a sleep in the mirror's read, MIRROR in src/eventfd.c; on a NOPOLL one,
 * a nap on a futex word, NAP there).  Both threads
 * are pinned: to the same CPU
 * (a wakeup is a context switch) or to two CPUs (a wakeup crosses CPUs).
 * The `efd-fork` rows are `efd-read` with B a forked process: two
 * EFD_SEMAPHORE eventfds made before the fork (ueventfds shared by the
 * fork on uepoll), blocking reads; B's count and CPU come back through
 * MAP_SHARED memory, and its CPU is added to A's.  The
 * `efd-fork-nopoll` rows make them with UEVENTFD_NOPOLL (uepoll only,
 * against the kernel's `efd-fork` rows of the same run).
 */
#include "bench.h"
#include "uepoll.h"

#include <errno.h>
#include <linux/futex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define WARMUP 200

struct pp {
	const struct sys *s;
	struct src to_a, to_b;
	int ep_a, ep_b;
	long rounds; /* measured; WARMUP more before them */
	int b_cpu;
	uint64_t b_handled;
	_Atomic uint32_t turn; /* futex row: 0 A's turn, 1 B's turn */
	bool timed;		/* futex-timed rows */
	struct hist *h;
};

static void pp_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "rounds", quick ? 2000 : 20000);
	*reps = quick ? 1 : 5;
}

/* flags: bit 0 B on another CPU; PP_READ blocking reads, no instance;
 * PP_FORK (with PP_READ) B is a forked process, semaphore eventfds. */
#define PP_READ 2u
#define PP_FORK 4u
/* futex rows: each sleep has a deadline (the futex-timed rows). */
#define PP_TIMED 8u

/* PP_FORK: what B's process reports, in MAP_SHARED memory. */
struct pp_shm {
	uint64_t handled;
	double user_s, sys_s, ctx; /* after its warmup */
};

/* One line per variant: the channel (eventfds through the system, or the
 * bare futex floor) and whether B runs on A's CPU or on another one. */
static const struct pp_variant {
	const char *name;
	enum src_kind src;
	unsigned systems;
	uint32_t flags; /* 1: B on another CPU; PP_READ */
	uint32_t uflags; /* uepoll rows: uepoll_create2 options */
	const char *pair;
} pp_variants[] = {
	{ "efd/same-cpu", SRC_EFD, SYSM_KU, 0, 0, "" },
	{ "efd/cross-cpu", SRC_EFD, SYSM_KU, 1, 0, "" },
	/* Nothing polls the fds from outside (UEVENTFD_NOPOLL,
	 * UEPOLL_NOPOLL): the least a uepoll handoff costs today, against
	 * the futex floor (issue 19). */
	{ "efd-nopoll/same-cpu", SRC_EFD_NOPOLL, SYSM(SYS_UEPOLL), 0,
	  UEPOLL_NOPOLL, "efd/same-cpu" },
	{ "efd-nopoll/cross-cpu", SRC_EFD_NOPOLL, SYSM(SYS_UEPOLL), 1,
	  UEPOLL_NOPOLL, "efd/cross-cpu" },
	{ "pipe/same-cpu", SRC_PIPE, SYSM_KU, 0, 0, "" },
	{ "pipe/cross-cpu", SRC_PIPE, SYSM_KU, 1, 0, "" },
	/* No instance: each thread blocks in read(2) on its own eventfd
	 * (uepoll_read on a ueventfd: MIRROR's sleep in eventfd.c, or NAP's
	 * on a NOPOLL one). */
	{ "efd-read/same-cpu", SRC_EFD, SYSM_KU, PP_READ, 0, "" },
	{ "efd-read-nopoll/same-cpu", SRC_EFD_NOPOLL, SYSM(SYS_UEPOLL),
	  PP_READ, 0, "efd-read/same-cpu" },
	{ "efd-read/cross-cpu", SRC_EFD, SYSM_KU, PP_READ | 1, 0, "" },
	{ "efd-read-nopoll/cross-cpu", SRC_EFD_NOPOLL, SYSM(SYS_UEPOLL),
	  PP_READ | 1, 0, "efd-read/cross-cpu" },
	/* B a forked process, EFD_SEMAPHORE, blocking reads. */
	{ "efd-fork/same-cpu", SRC_EFD, SYSM_KU, PP_READ | PP_FORK, 0, "" },
	{ "efd-fork/cross-cpu", SRC_EFD, SYSM_KU, PP_READ | PP_FORK | 1, 0,
	  "" },
	/* The same with UEVENTFD_NOPOLL ueventfds (the preload's default):
	 * nothing polls the shared kernel fds, so a handoff touches them
	 * not (NOPOLL in src/eventfd_shared.c); against the kernel's
	 * efd-fork rows (issue 35 item 4). */
	{ "efd-fork-nopoll/same-cpu", SRC_EFD_NOPOLL, SYSM(SYS_UEPOLL),
	  PP_READ | PP_FORK, 0, "efd-fork/same-cpu" },
	{ "efd-fork-nopoll/cross-cpu", SRC_EFD_NOPOLL, SYSM(SYS_UEPOLL),
	  PP_READ | PP_FORK | 1, 0, "efd-fork/cross-cpu" },
	{ "futex/same-cpu", SRC_EFD, SYSM(SYS_FUTEX), 0, 0, "" },
	{ "futex/cross-cpu", SRC_EFD, SYSM(SYS_FUTEX), 1, 0, "" },
	{ "futex-timed/same-cpu", SRC_EFD, SYSM(SYS_FUTEX), PP_TIMED, 0, "" },
	{ "futex-timed/cross-cpu", SRC_EFD, SYSM(SYS_FUTEX), PP_TIMED | 1, 0,
	  "" },
};

static int pp_cases(struct bcase *out, int max)
{
	int n = 0;

	for (size_t i = 0; i < sizeof(pp_variants) / sizeof(pp_variants[0]) &&
			   n < max;
	     i++, n++) {
		snprintf(out[n].variant, sizeof(out[n].variant), "%s",
			 pp_variants[i].name);
		out[n].src = pp_variants[i].src;
		out[n].flags = pp_variants[i].flags;
		out[n].systems = pp_variants[i].systems;
		out[n].uflags = pp_variants[i].uflags;
		snprintf(out[n].pair, sizeof(out[n].pair), "%s",
			 pp_variants[i].pair);
	}
	return n;
}

static void pp_wait_token(const struct pp *pp, int ep, const struct src *src)
{
	const struct sys *s = pp->s;

	for (;;) {
		struct epoll_event ev;
		uint64_t v;
		/* 10 s: far beyond any hand-off; no token by then is a lost
		 * event or a lost wakeup. */
		int n = s->wait(ep, &ev, 1, 10000);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("%s: wait: %s", s->name, strerror(errno));
		}
		if (n == 0)
			die("%s: pingpong: no token within 10 s after %llu "
			    "round trips (lost event or lost wakeup)",
			    s->name,
			    (unsigned long long)atomic_load(&wd_done));
		if (n != 1)
			die("%s: wait returned %d", s->name, n);
		v = src_read_one(s, src);
		if (v == 1)
			return;
		if (v > 1)
			die("%s: pingpong: read %llu tokens at once "
			    "(duplicated events)",
			    s->name, (unsigned long long)v);
		/* v == 0: spurious wakeup, wait again */
	}
}

static void *pp_b(void *arg)
{
	struct pp *pp = arg;
	long total = pp->rounds + WARMUP;

	pin_self(pp->b_cpu);
	for (long i = 0; i < total; i++) {
		pp_wait_token(pp, pp->ep_b, &pp->to_b);
		src_signal(pp->s, &pp->to_a);
		pp->b_handled++;
	}
	return NULL;
}

static pid_t pp_peer; /* PP_FORK, in A: B's process */

static void pp_sigchld(int sig)
{
	(void)sig; /* only to break A's blocking read (no SA_RESTART) */
}

/* PP_READ: a blocking read must bring exactly the one token. */
static void pp_read_token(const struct pp *pp, const struct src *src)
{
	uint64_t v;
	ssize_t r;

	for (;;) {
		int st;

		r = pp->s->read(src->rfd, &v, sizeof(v));
		if (r >= 0 || errno != EINTR)
			break;
		if (pp_peer > 0 && waitpid(pp_peer, &st, WNOHANG) == pp_peer) {
			pp_peer = 0;
			die("%s: pingpong: B's process ended (status 0x%x) "
			    "after %llu round trips",
			    pp->s->name, st,
			    (unsigned long long)atomic_load(&wd_done));
		}
	}
	if (r != sizeof(v))
		die("%s: pingpong: blocking read: %s", pp->s->name,
		    r < 0 ? strerror(errno) : "short");
	if (v != 1)
		die("%s: pingpong: read %llu tokens at once", pp->s->name,
		    (unsigned long long)v);
}

static void *pp_rb(void *arg)
{
	struct pp *pp = arg;
	long total = pp->rounds + WARMUP;

	pin_self(pp->b_cpu);
	for (long i = 0; i < total; i++) {
		pp_read_token(pp, &pp->to_b);
		src_signal(pp->s, &pp->to_a);
		pp->b_handled++;
	}
	return NULL;
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* PP_FORK: B's process.  Its errors go to stderr (die); A sees its exit. */
static _Noreturn void pp_xb(struct pp *pp, struct pp_shm *sh, pid_t a_pid)
{
	struct rusage ru0 = { 0 }, ru1;
	long total = pp->rounds + WARMUP;

	result_fd = -1; /* the rep's result is A's to send */
	wd_pgid = 0;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != a_pid) /* A died before the prctl */
		_exit(2);
	pin_self(pp->b_cpu);
	for (long i = 0; i < total; i++) {
		if (i == WARMUP)
			getrusage(RUSAGE_SELF, &ru0);
		pp_read_token(pp, &pp->to_b);
		src_signal(pp->s, &pp->to_a);
		sh->handled++;
	}
	getrusage(RUSAGE_SELF, &ru1);
	sh->user_s = tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime);
	sh->sys_s = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);
	sh->ctx = (double)(ru1.ru_nvcsw - ru0.ru_nvcsw) +
		  (double)(ru1.ru_nivcsw - ru0.ru_nivcsw);
	_exit(0);
}

/* PP_FORK, in A after the last round: reap B (5 s: it has only to exit,
 * else it is killed), and no token may be left in either eventfd. */
static void pp_xreap(const struct pp *pp, struct pp_shm *sh,
		     struct metrics *m)
{
	const struct sys *s = pp->s;
	uint64_t deadline = now_ns() + 5000000000ull;
	int st = 0;

	for (;;) {
		pid_t r = waitpid(pp_peer, &st, WNOHANG);

		if (r == pp_peer)
			break;
		if (now_ns() > deadline) {
			kill(pp_peer, SIGKILL);
			waitpid(pp_peer, &st, 0);
			fail(m, "B's process did not exit after its last round");
			break;
		}
		sleep_us(1000);
	}
	pp_peer = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fail(m, "B's process ended with status 0x%x", st);
	m->v[M_USER_S] += sh->user_s;
	m->v[M_SYS_S] += sh->sys_s;
	m->v[M_CTX] += sh->ctx;
	for (int i = 0; i < 2; i++) {
		int fd = i ? pp->to_b.rfd : pp->to_a.rfd;
		uint64_t v;
		int r = s->id == SYS_UEPOLL
				? uepoll_fcntl(fd, F_SETFL, O_NONBLOCK)
				: fcntl(fd, F_SETFL, O_NONBLOCK);

		if (r < 0)
			die("%s: fcntl O_NONBLOCK: %s", s->name,
			    strerror(errno));
		if (s->read(fd, &v, sizeof(v)) >= 0)
			fail(m, "tokens left over after the last round "
				"(duplicated)");
		else if (errno != EAGAIN)
			fail(m, "final read: %s", strerror(errno));
	}
}

static long futex(_Atomic uint32_t *uaddr, int op, uint32_t val)
{
	return syscall(SYS_futex, (uint32_t *)uaddr, op, val, NULL, NULL, 0);
}

/* Sleep while *uaddr == val; timed: until 10 s from now (an absolute
 * CLOCK_MONOTONIC deadline, as a wait with a timeout has). */
static void futex_sleep(_Atomic uint32_t *uaddr, uint32_t val, bool timed)
{
	struct timespec ts;

	if (!timed) {
		futex(uaddr, FUTEX_WAIT_PRIVATE, val);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += 10;
	syscall(SYS_futex, (uint32_t *)uaddr, FUTEX_WAIT_BITSET_PRIVATE, val,
		&ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

static void *pp_fb(void *arg)
{
	struct pp *pp = arg;
	long total = pp->rounds + WARMUP;

	pin_self(pp->b_cpu);
	for (long i = 0; i < total; i++) {
		while (atomic_load(&pp->turn) != 1)
			futex_sleep(&pp->turn, 0, pp->timed);
		atomic_store(&pp->turn, 0);
		futex(&pp->turn, FUTEX_WAKE_PRIVATE, 1);
		pp->b_handled++;
	}
	return NULL;
}

static void pp_run(const struct sys *s, const struct bcase *c,
		   const struct params *p, struct metrics *m)
{
	struct pp pp = { 0 };
	struct epoll_event ev;
	struct meas me;
	pthread_t tb;
	bool fx = s->id == SYS_FUTEX;
	bool rd = !fx && (c->flags & PP_READ);
	bool xp = rd && (c->flags & PP_FORK);
	struct pp_shm *sh = NULL;
	pid_t a_pid;
	struct sigaction sa = { .sa_handler = pp_sigchld }, osa;

	pp.s = s;
	pp.timed = c->flags & PP_TIMED;
	pp.rounds = params_get(p, "rounds");
	pp.h = calloc(1, sizeof(*pp.h));
	if (!pp.h)
		die("out of memory");
	wd_target = (uint64_t)pp.rounds + WARMUP;
	if (rd) {
		/* Blocking eventfds, and no instance. */
		int fl = EFD_CLOEXEC | (xp ? EFD_SEMAPHORE : 0) |
			 (c->src == SRC_EFD_NOPOLL && s->id == SYS_UEPOLL
				  ? UEVENTFD_NOPOLL
				  : 0);

		pp.to_a.kind = pp.to_b.kind = c->src;
		pp.to_a.rfd = pp.to_a.wfd = s->efd(0, fl);
		pp.to_b.rfd = pp.to_b.wfd = s->efd(0, fl);
		if (pp.to_a.rfd < 0 || pp.to_b.rfd < 0)
			die("%s: eventfd: %s", s->name, strerror(errno));
		pp.ep_a = pp.ep_b = -1;
	} else if (!fx) {
		src_open(s, c->src, &pp.to_a);
		src_open(s, c->src, &pp.to_b);
		pp.ep_a = sys_create(s, c);
		pp.ep_b = sys_create(s, c);
		if (pp.ep_a < 0 || pp.ep_b < 0)
			die("%s: create: %s", s->name, strerror(errno));
		ev.events = EPOLLIN;
		ev.data.u64 = 0;
		if (s->ctl(pp.ep_a, EPOLL_CTL_ADD, pp.to_a.rfd, &ev) < 0 ||
		    s->ctl(pp.ep_b, EPOLL_CTL_ADD, pp.to_b.rfd, &ev) < 0)
			die("%s: ctl add: %s", s->name, strerror(errno));
	}
	/* Pinned: on a VM an idle vCPU makes cross-CPU wakeups bimodal
	 * (a few us, or ~50 us when the host halted it), so each placement is
	 * its own variant. */
	pin_self(0);
	pp.b_cpu = c->flags & 1 ? 1 : 0;
	if (xp) {
		sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (sh == MAP_FAILED)
			die("mmap: %s", strerror(errno));
		/* B's death breaks A's blocking read (EINTR): a failure at
		 * once, not the watchdog's. */
		sigemptyset(&sa.sa_mask);
		sigaction(SIGCHLD, &sa, &osa);
		a_pid = getpid();
		fflush(NULL);
		pp_peer = fork();
		if (pp_peer < 0)
			die("fork: %s", strerror(errno));
		if (pp_peer == 0)
			pp_xb(&pp, sh, a_pid);
	} else {
		thread_start(&tb, fx ? pp_fb : rd ? pp_rb : pp_b, &pp);
	}

	for (long i = 0; i < pp.rounds + WARMUP; i++) {
		uint64_t t0;

		if (i == WARMUP)
			meas_begin(&me);
		t0 = now_ns();
		if (fx) {
			atomic_store(&pp.turn, 1);
			futex(&pp.turn, FUTEX_WAKE_PRIVATE, 1);
			while (atomic_load(&pp.turn) != 0)
				futex_sleep(&pp.turn, 1, pp.timed);
		} else if (rd) {
			src_signal(s, &pp.to_b);
			pp_read_token(&pp, &pp.to_a);
		} else {
			src_signal(s, &pp.to_b);
			pp_wait_token(&pp, pp.ep_a, &pp.to_a);
		}
		if (i >= WARMUP)
			hist_add(pp.h, now_ns() - t0);
		atomic_fetch_add_explicit(&wd_done, 1, memory_order_relaxed);
	}
	if (xp) {
		meas_end(&me, m);
		pp_xreap(&pp, sh, m);
		sigaction(SIGCHLD, &osa, NULL);
		pp.b_handled = sh->handled;
		munmap(sh, sizeof(*sh));
	} else {
		thread_join(tb);
		meas_end(&me, m);
	}

	if (pp.b_handled != (uint64_t)(pp.rounds + WARMUP))
		fail(m, "B handled %llu tokens, A sent %ld",
		     (unsigned long long)pp.b_handled, pp.rounds + WARMUP);
	if (!fx && !rd && (src_drain(s, &pp.to_a) || src_drain(s, &pp.to_b)))
		fail(m, "tokens left over after the last round (duplicated)");

	m->v[M_EVENTS] = (double)pp.rounds;
	m->v[M_EVENTS_PER_S] = (double)pp.rounds / m->v[M_WALL_S];
	m->v[M_LAT_P50] = hist_pct_us(pp.h, 50);
	m->v[M_LAT_P99] = hist_pct_us(pp.h, 99);

	if (rd) {
		s->close(pp.to_a.rfd);
		s->close(pp.to_b.rfd);
	} else if (!fx) {
		src_close(s, &pp.to_a);
		src_close(s, &pp.to_b);
		s->close(pp.ep_a);
		s->close(pp.ep_b);
	}
	free(pp.h);
}

const struct scenario sc_pingpong = {
	.name = "pingpong",
	.proposal = "wakeup latency floor; no single proposal",
	.what = "two threads (efd-fork: two processes) hand a token back and "
		"forth through an eventfd (or a pipe), both asleep between "
		"turns; a bare futex is the floor",
	.headline = M_LAT_P50,
	.size = pp_size,
	.cases = pp_cases,
	.run = pp_run,
};
