/* SPDX-License-Identifier: MIT */
/*
 * sockpp - request/response over a socket between two processes: A writes a
 * small request (64 bytes), B, asleep in its own instance's wait, reads it
 * and writes a response of the same size, which A waits for in its own
 * instance.  The sockets are kernel fds in both systems: the uepoll default
 * rows show what uepoll adds to a sleeping wait on them (KERNEL COST in
 * src/wait.c), the `-spin` rows what its opt-in spin for kernel fds
 * (UEPOLL_SPIN_KERNEL, bounded by UEPOLL_SPIN_US: KERNEL SPIN in
 * src/spin.c) takes off the round trip and what CPU it burns for it.
 * Channels: a UNIX stream socketpair (`unix`) and a loopback TCP connection
 * with TCP_NODELAY (`tcp`).  Each process is pinned: to two CPUs
 * (`cross-cpu`: each wakeup crosses CPUs, the case the spin is for) or to
 * the same one (`same-cpu`: a spin there only delays the peer, and the
 * adaptive rule must stop it).  The latency is the round trip as A sees
 * it; cpu_us_per_op is both processes' CPU time (user + system, getrusage
 * after the warmup) per round trip.
 */
#include "bench.h"
#include "uepoll.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define SP_WARMUP 200
#define SP_MSG 64
/* flags: bit 0 B on another CPU; SP_TCP loopback TCP, else a socketpair. */
#define SP_TCP 2u

struct sp_shm {
	uint64_t handled;
	double user_s, sys_s, ctx; /* B's, after its warmup */
};

static const struct sp_variant {
	const char *name;
	unsigned systems;
	uint32_t flags;
	uint32_t uflags;
	const char *pair;
} sp_variants[] = {
	{ "unix/cross-cpu", SYSM_KU, 1, 0, "" },
	{ "unix-spin/cross-cpu", SYSM(SYS_UEPOLL), 1, UEPOLL_SPIN_KERNEL,
	  "unix/cross-cpu" },
	{ "tcp/cross-cpu", SYSM_KU, SP_TCP | 1, 0, "" },
	{ "tcp-spin/cross-cpu", SYSM(SYS_UEPOLL), SP_TCP | 1,
	  UEPOLL_SPIN_KERNEL, "tcp/cross-cpu" },
	{ "unix/same-cpu", SYSM_KU, 0, 0, "" },
	{ "unix-spin/same-cpu", SYSM(SYS_UEPOLL), 0, UEPOLL_SPIN_KERNEL,
	  "unix/same-cpu" },
};

static void sp_size(bool quick, struct params *p, int *reps)
{
	params_set(p, "rounds", quick ? 2000 : 20000);
	*reps = quick ? 1 : 5;
}

static int sp_cases(struct bcase *out, int max)
{
	int n = 0;

	for (size_t i = 0; i < sizeof(sp_variants) / sizeof(sp_variants[0]) &&
			   n < max;
	     i++, n++) {
		snprintf(out[n].variant, sizeof(out[n].variant), "%s",
			 sp_variants[i].name);
		out[n].src = SRC_PIPE; /* kernel fds (not used otherwise) */
		out[n].flags = sp_variants[i].flags;
		out[n].systems = sp_variants[i].systems;
		out[n].uflags = sp_variants[i].uflags;
		snprintf(out[n].pair, sizeof(out[n].pair), "%s",
			 sp_variants[i].pair);
	}
	return n;
}

static void sp_nodelay(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		die("TCP_NODELAY: %s", strerror(errno));
}

/* A connected pair of nonblocking stream sockets: sv[0] A's, sv[1] B's. */
static void sp_connect(bool tcp, int sv[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l;

	if (!tcp) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			       0, sv) < 0)
			die("socketpair: %s", strerror(errno));
		return;
	}
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) < 0)
		die("tcp listener: %s", strerror(errno));
	sv[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sv[0] < 0 || connect(sv[0], (struct sockaddr *)&a, sizeof(a)) < 0)
		die("tcp connect: %s", strerror(errno));
	sv[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (sv[1] < 0)
		die("tcp accept: %s", strerror(errno));
	close(l);
	if (fcntl(sv[0], F_SETFL, O_NONBLOCK) < 0)
		die("fcntl: %s", strerror(errno));
	sp_nodelay(sv[0]);
	sp_nodelay(sv[1]);
}

/* An instance of s (case c's options) watching fd for input. */
static int sp_instance(const struct sys *s, const struct bcase *c, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = sys_create(s, c);

	if (s->ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		die("%s: ctl add: %s", s->name, strerror(errno));
	return ep;
}

/* Wait on ep until one whole message has come in on fd. */
static void sp_recv(const struct sys *s, int ep, int fd, const char *who)
{
	char buf[SP_MSG];
	size_t got = 0;

	while (got < SP_MSG) {
		struct epoll_event ev;
		ssize_t r;
		/* 10 s: far beyond any round trip; nothing by then is a
		 * lost event or a lost wakeup. */
		int n = s->wait(ep, &ev, 1, 10000);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("%s: %s: wait: %s", s->name, who, strerror(errno));
		if (n == 0)
			die("%s: %s: no message within 10 s after %llu round "
			    "trips (lost event or lost wakeup)",
			    s->name, who,
			    (unsigned long long)atomic_load(&wd_done));
		r = read(fd, buf + got, SP_MSG - got);
		if (r > 0)
			got += (size_t)r;
		else if (r == 0)
			die("%s: %s: the peer closed", s->name, who);
		else if (errno != EAGAIN)
			die("%s: %s: read: %s", s->name, who, strerror(errno));
	}
	if (buf[0] != 'q' || buf[SP_MSG - 1] != 'q')
		die("%s: %s: a message came garbled", s->name, who);
}

static void sp_send(const struct sys *s, int fd, const char *who)
{
	char buf[SP_MSG];

	memset(buf, 'q', sizeof(buf));
	/* 64 bytes into an empty socket buffer: all of them at once. */
	if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
		die("%s: %s: write: %s", s->name, who, strerror(errno));
}

static double sp_tv(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* B's process: answer every request.  Its errors go to stderr (die); A
 * sees its exit. */
static _Noreturn void sp_b(const struct sys *s, const struct bcase *c,
			   int fd, long total, int cpu, struct sp_shm *sh,
			   pid_t a_pid)
{
	struct rusage ru0 = { 0 }, ru1;
	int ep;

	result_fd = -1; /* the rep's result is A's to send */
	wd_pgid = 0;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != a_pid) /* A died before the prctl */
		_exit(2);
	pin_self(cpu);
	ep = sp_instance(s, c, fd);
	for (long i = 0; i < total; i++) {
		if (i == SP_WARMUP)
			getrusage(RUSAGE_SELF, &ru0);
		sp_recv(s, ep, fd, "B");
		sp_send(s, fd, "B");
		sh->handled++;
	}
	getrusage(RUSAGE_SELF, &ru1);
	sh->user_s = sp_tv(ru1.ru_utime) - sp_tv(ru0.ru_utime);
	sh->sys_s = sp_tv(ru1.ru_stime) - sp_tv(ru0.ru_stime);
	sh->ctx = (double)(ru1.ru_nvcsw - ru0.ru_nvcsw) +
		  (double)(ru1.ru_nivcsw - ru0.ru_nivcsw);
	s->close(ep);
	_exit(0);
}

/* After the last round: B must exit by itself within 5 s (else killed). */
static void sp_reap(pid_t b, struct metrics *m)
{
	uint64_t deadline = now_ns() + 5000000000ull;
	int st = 0;

	for (;;) {
		pid_t r = waitpid(b, &st, WNOHANG);

		if (r == b)
			break;
		if (now_ns() > deadline) {
			kill(b, SIGKILL);
			waitpid(b, &st, 0);
			fail(m, "B's process did not exit after its last round");
			return;
		}
		sleep_us(1000);
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fail(m, "B's process ended with status 0x%x", st);
}

static void sp_run(const struct sys *s, const struct bcase *c,
		   const struct params *p, struct metrics *m)
{
	long rounds = params_get(p, "rounds"), total = rounds + SP_WARMUP;
	struct hist *h = calloc(1, sizeof(*h));
	struct sp_shm *sh;
	struct meas me;
	int sv[2], ep;
	pid_t a_pid, b;
	char extra;

	if (!h)
		die("out of memory");
	wd_target = (uint64_t)total;
	sp_connect(c->flags & SP_TCP, sv);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	/* Each process makes its own instance after the fork: nothing of
	 * uepoll's is shared. */
	pin_self(0);
	a_pid = getpid();
	fflush(NULL);
	b = fork();
	if (b < 0)
		die("fork: %s", strerror(errno));
	if (b == 0) {
		close(sv[0]);
		sp_b(s, c, sv[1], total, c->flags & 1 ? 1 : 0, sh, a_pid);
	}
	close(sv[1]);
	ep = sp_instance(s, c, sv[0]);
	for (long i = 0; i < total; i++) {
		uint64_t t0;

		if (i == SP_WARMUP)
			meas_begin(&me);
		t0 = now_ns();
		sp_send(s, sv[0], "A");
		sp_recv(s, ep, sv[0], "A");
		if (i >= SP_WARMUP)
			hist_add(h, now_ns() - t0);
		atomic_fetch_add_explicit(&wd_done, 1, memory_order_relaxed);
	}
	meas_end(&me, m);
	sp_reap(b, m);
	if (sh->handled != (uint64_t)total)
		fail(m, "B answered %llu requests, A sent %ld",
		     (unsigned long long)sh->handled, total);
	if (read(sv[0], &extra, 1) > 0)
		fail(m, "bytes left over after the last round");
	m->v[M_USER_S] += sh->user_s;
	m->v[M_SYS_S] += sh->sys_s;
	m->v[M_CTX] += sh->ctx;
	m->v[M_EVENTS] = (double)rounds;
	m->v[M_EVENTS_PER_S] = (double)rounds / m->v[M_WALL_S];
	m->v[M_LAT_P50] = hist_pct_us(h, 50);
	m->v[M_LAT_P99] = hist_pct_us(h, 99);
	m->v[M_CPU_US_PER_OP] =
		(m->v[M_USER_S] + m->v[M_SYS_S]) * 1e6 / (double)rounds;
	s->close(ep);
	close(sv[0]);
	munmap(sh, sizeof(*sh));
	free(h);
}

const struct scenario sc_sockpp = {
	.name = "sockpp",
	.proposal = "issue 35, item 3: spin for kernel fds",
	.what = "request/response of 64 bytes over a UNIX socketpair or "
		"loopback TCP between two processes, each asleep in its own "
		"instance between messages; -spin rows: UEPOLL_SPIN_KERNEL",
	.headline = M_LAT_P50,
	.size = sp_size,
	.cases = sp_cases,
	.run = sp_run,
};
