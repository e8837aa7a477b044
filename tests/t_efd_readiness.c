/*
 * t_efd_readiness: a ueventfd's fd shows exactly the kernel eventfd's
 * readiness to poll(), select() and a kernel epoll (level-triggered) after
 * every uepoll call returns: readable iff the counter is > 0, writable iff
 * it is below 0xfffffffffffffffe (a write of 1 would not block); plain and
 * EFD_SEMAPHORE, blocking and EFD_NONBLOCK (issue 18, item 1).
 *
 * 1. Differential: a kernel eventfd and a ueventfd made with the same
 *    arguments run the same pseudo-random sequence of writes (0, 1, 2,
 *    values that fill the counter or nearly, that overflow it, UINT64_MAX,
 *    short and long buffers), reads (short and long buffers), drain loops
 *    ("read until EAGAIN"), no-ops and dups.  After every op: the return
 *    value, errno and value read, then the readiness of both fds through
 *    poll() (revents), select() (read and write sets), one kernel epoll
 *    holding both (EPOLLIN|EPOLLOUT, level-triggered, timeout 0, events per
 *    fd) and, after a dup, poll() and select() on the dups.  The test keeps
 *    its own model of the counter (checked against the kernel's: return
 *    values, /proc/self/fdinfo and the kernel fd's readiness), so that on a
 *    blocking fd it never issues a write that would block nor a read of an
 *    empty counter.  The first divergence of a sequence is printed with its
 *    step, op and the ops before it, and ends that sequence.
 * 2. Two threads on a non-blocking ueventfd, one writing 1 N times, the
 *    other reading until it has N: then the fd is writable and not
 *    readable, and a read answers EAGAIN.
 * 3. A reader blocked in uepoll_read on an empty blocking ueventfd, woken
 *    by a write: afterwards the fd is not readable (plain: write 3, read 3;
 *    semaphore: write 2, read 1 -> readable, read 1 -> not readable).
 *
 * T_EFD_SELF=1 runs everything with a second kernel eventfd in place of
 * the ueventfd (kernel against kernel: must pass), a check of the test
 * itself.
 */
#include "testlib.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <unistd.h>

#define EFD_MAX 0xfffffffffffffffeULL

/* T_EFD_SELF: the "uepoll" side is a kernel eventfd too. */
static int self_mode;
/* The running kernel accepts writes longer than 8 bytes (probed). */
static int long_writes_ok;

static int u_make(unsigned int init, int flags)
{
	return self_mode ? eventfd(init, flags) : ueventfd(init, flags);
}

static ssize_t u_read(int fd, void *buf, size_t n)
{
	return self_mode ? read(fd, buf, n) : uepoll_read(fd, buf, n);
}

static ssize_t u_write(int fd, const void *buf, size_t n)
{
	return self_mode ? write(fd, buf, n) : uepoll_write(fd, buf, n);
}

static int u_close(int fd)
{
	return self_mode ? close(fd) : uepoll_close(fd);
}

/* The kernel eventfd counter behind fd from /proc/self/fdinfo; 1 if found.
 * (For a ueventfd: its kernel fd's counter, not the ueventfd's.) */
static int fdinfo_count(int fd, uint64_t *out)
{
	char path[64], line[256];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "eventfd-count:", 14)) {
			*out = strtoull(line + 14, NULL, 16);
			found = 1;
			break;
		}
	fclose(f);
	return found;
}

/* ---------------------------------------------------------------------- */
/* Readiness of one fd through poll, select and the kernel epoll. */

struct ready {
	short poll;   /* revents for POLLIN|POLLOUT */
	int sel_r;    /* in select()'s read set */
	int sel_w;    /* in select()'s write set */
	uint32_t ep;  /* events of the kernel epoll (-1u: not asked) */
};

/* "IN|OUT", "IN", "OUT", "none" (and "|other" for any other bit). */
static const char *fmt_bits(char *b, size_t n, unsigned in, unsigned out,
			    unsigned other)
{
	snprintf(b, n, "%s%s%s%s", in ? "IN" : "", in && out ? "|" : "",
		 out ? "OUT" : "", !in && !out ? "none" : "");
	if (other)
		strncat(b, "|other", n - strlen(b) - 1);
	return b;
}

static void fmt_ready(char *b, size_t n, const struct ready *r)
{
	char p[32], e[32];

	fmt_bits(p, sizeof(p), r->poll & POLLIN, r->poll & POLLOUT,
		 r->poll & ~(POLLIN | POLLOUT));
	if (r->ep == UINT32_MAX)
		snprintf(e, sizeof(e), "-");
	else
		fmt_bits(e, sizeof(e), r->ep & EPOLLIN, r->ep & EPOLLOUT,
			 r->ep & ~(uint32_t)(EPOLLIN | EPOLLOUT));
	snprintf(b, n, "poll=%s select=%s%s epoll=%s", p, r->sel_r ? "r" : "-",
		 r->sel_w ? "w" : "-", e);
}

/* Readiness of fds[0..n) (n <= 4) now; ep (or -1) holds them with data.u64
 * = their index. */
static void get_ready(const int *fds, int n, int ep, struct ready *out)
{
	struct pollfd pfd[4];
	struct epoll_event ev[8];
	fd_set rs, ws;
	struct timeval tv = { 0, 0 };
	int maxfd = -1, r;

	for (int i = 0; i < n; i++) {
		pfd[i].fd = fds[i];
		pfd[i].events = POLLIN | POLLOUT;
		pfd[i].revents = 0;
		out[i].ep = ep >= 0 ? 0 : UINT32_MAX;
	}
	REQUIRE(poll(pfd, (nfds_t)n, 0) >= 0);
	FD_ZERO(&rs);
	FD_ZERO(&ws);
	for (int i = 0; i < n; i++) {
		REQUIRE(fds[i] < FD_SETSIZE);
		FD_SET(fds[i], &rs);
		FD_SET(fds[i], &ws);
		if (fds[i] > maxfd)
			maxfd = fds[i];
	}
	REQUIRE(select(maxfd + 1, &rs, &ws, NULL, &tv) >= 0);
	for (int i = 0; i < n; i++) {
		out[i].poll = pfd[i].revents;
		out[i].sel_r = FD_ISSET(fds[i], &rs) != 0;
		out[i].sel_w = FD_ISSET(fds[i], &ws) != 0;
	}
	if (ep < 0)
		return;
	r = epoll_wait(ep, ev, 8, 0);
	REQUIRE(r >= 0);
	for (int i = 0; i < r; i++) {
		REQUIRE(ev[i].data.u64 < (uint64_t)n);
		out[ev[i].data.u64].ep = ev[i].events;
	}
}

static int ready_eq(const struct ready *a, const struct ready *b)
{
	return a->poll == b->poll && a->sel_r == b->sel_r &&
	       a->sel_w == b->sel_w && a->ep == b->ep;
}

/* What the counter c makes of readiness (ep: asked of epoll too). */
static struct ready ready_of(uint64_t c, int ep)
{
	struct ready r;

	r.poll = (short)((c > 0 ? POLLIN : 0) | (c < EFD_MAX ? POLLOUT : 0));
	r.sel_r = c > 0;
	r.sel_w = c < EFD_MAX;
	r.ep = ep ? (c > 0 ? EPOLLIN : 0) | (c < EFD_MAX ? EPOLLOUT : 0)
		  : UINT32_MAX;
	return r;
}

/* A single fd's readiness (its own epoll) must be what counter c gives. */
static void check_ready(const char *what, int fd, uint64_t c)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT };
	struct ready got, want = ready_of(c, 1);
	char g[128], w[128];
	int ep = epoll_create1(EPOLL_CLOEXEC);

	REQUIRE(ep >= 0);
	ev.data.u64 = 0;
	REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0);
	get_ready(&fd, 1, ep, &got);
	CHECK_EQ(close(ep), 0);
	if (!ready_eq(&got, &want)) {
		fmt_ready(g, sizeof(g), &got);
		fmt_ready(w, sizeof(w), &want);
		fprintf(stderr, "%s: counter %llu: readiness %s, want %s\n", what,
			(unsigned long long)c, g, w);
		t_failures++;
	}
}

/* ---------------------------------------------------------------------- */
/* 1. The differential sequences. */

#define LOGN 12

/* What the sequences reached, from the kernel's outcomes: the test fails if
 * a generator stops reaching one of these. */
static struct {
	long full_in;	/* a write filled the counter */
	long full_out;	/* a read left the full state */
	long empty_in;	/* a read emptied the counter */
	long sem_empty_in; /* ... of a semaphore */
	long w_eagain;	/* a write that would overflow: EAGAIN */
	long r_eagain;	/* an empty non-blocking read: EAGAIN */
	long w_einval;
	long r_einval;
	long compares;	/* readiness comparisons */
	int diverged;	/* sequences that stopped at a divergence */
} cov;

struct seq {
	const char *name;
	int k, u;	/* kernel eventfd, ueventfd */
	int ep;		/* kernel epoll: k as 0, u as 1 */
	int flags;
	uint64_t cnt;	/* the model's counter */
	int step;
	char log[LOGN][160]; /* the last ops, for the report */
	int nlog;
	int bad;	/* diverged: the sequence stops */
};

static void seq_log(struct seq *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void seq_log(struct seq *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->log[s->nlog % LOGN], sizeof(s->log[0]), fmt, ap);
	va_end(ap);
	s->nlog++;
}

static void seq_fail(struct seq *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void seq_fail(struct seq *s, const char *fmt, ...)
{
	uint64_t mk = 0, mu = 0;
	int hk, hu;
	va_list ap;

	if (s->bad)
		return;
	s->bad = 1;
	t_failures++;
	cov.diverged++;
	fprintf(stderr, "DIVERGENCE in %s at step %d: ", s->name, s->step);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	hk = fdinfo_count(s->k, &mk);
	hu = fdinfo_count(s->u, &mu);
	fprintf(stderr, "\n  model counter %llu (0x%llx); kernel fdinfo %s%llx,"
		" ueventfd's kernel fd fdinfo %s%llx\n  last ops (oldest first):\n",
		(unsigned long long)s->cnt, (unsigned long long)s->cnt,
		hk ? "0x" : "?", (unsigned long long)mk,
		hu ? "0x" : "?", (unsigned long long)mu);
	for (int i = s->nlog > LOGN ? s->nlog - LOGN : 0; i < s->nlog; i++)
		fprintf(stderr, "    %s\n", s->log[i % LOGN]);
}

/* Compare the readiness of k and u (and with the model) now. */
static void seq_compare_ready(struct seq *s, const char *when)
{
	int fds[2] = { s->k, s->u };
	struct ready r[2], want = ready_of(s->cnt, 1);
	char a[128], b[128];
	uint64_t fc;

	if (s->bad)
		return;
	get_ready(fds, 2, s->ep, r);
	cov.compares++;
	if (!ready_eq(&r[0], &want)) {
		/* The test's model is wrong: a bug of the test. */
		fmt_ready(a, sizeof(a), &r[0]);
		fmt_ready(b, sizeof(b), &want);
		seq_fail(s, "%s: MODEL: kernel fd %s, model says %s", when, a, b);
		return;
	}
	if (fdinfo_count(s->k, &fc) && fc != s->cnt) {
		seq_fail(s, "%s: MODEL: kernel fdinfo count %llu", when,
			 (unsigned long long)fc);
		return;
	}
	if (!ready_eq(&r[0], &r[1])) {
		fmt_ready(a, sizeof(a), &r[0]);
		fmt_ready(b, sizeof(b), &r[1]);
		seq_fail(s, "%s: readiness: kernel %s | ueventfd %s", when, a, b);
	}
}

/* One write of v with a buffer of n bytes on both. */
static void seq_write(struct seq *s, uint64_t v, size_t n)
{
	uint64_t bk[2] = { v, 0 }, bu[2] = { v, 0 };
	ssize_t rk, ru;
	int ek, eu;

	seq_log(s, "step %d: write %llu (0x%llx) len %zu [counter %llu]",
		s->step, (unsigned long long)v, (unsigned long long)v, n,
		(unsigned long long)s->cnt);
	errno = 0;
	rk = write(s->k, bk, n);
	ek = rk < 0 ? errno : 0;
	errno = 0;
	ru = u_write(s->u, bu, n);
	eu = ru < 0 ? errno : 0;
	if (rk < 0 && ek == EAGAIN)
		cov.w_eagain++;
	if (rk < 0 && ek == EINVAL)
		cov.w_einval++;
	if (rk > 0 && v && s->cnt + v == EFD_MAX)
		cov.full_in++;
	if (rk > 0) {
		if (v > EFD_MAX - s->cnt)
			seq_fail(s, "MODEL: kernel write of %llu at %llu gave %zd",
				 (unsigned long long)v,
				 (unsigned long long)s->cnt, rk);
		else
			s->cnt += v;
	}
	if (rk != ru || ek != eu)
		seq_fail(s, "write %llu len %zu: kernel %zd errno %d (%s) | "
			 "ueventfd %zd errno %d (%s)", (unsigned long long)v, n,
			 rk, ek, ek ? strerror(ek) : "-", ru, eu,
			 eu ? strerror(eu) : "-");
	seq_compare_ready(s, "after write");
}

/* One read with a buffer of n bytes on both; returns the kernel's result. */
static ssize_t seq_read(struct seq *s, size_t n)
{
	uint64_t bk[2] = { 0xdead, 0xdead }, bu[2] = { 0xdead, 0xdead };
	ssize_t rk, ru;
	int ek, eu;

	seq_log(s, "step %d: read len %zu [counter %llu]", s->step, n,
		(unsigned long long)s->cnt);
	errno = 0;
	rk = read(s->k, bk, n);
	ek = rk < 0 ? errno : 0;
	errno = 0;
	ru = u_read(s->u, bu, n);
	eu = ru < 0 ? errno : 0;
	if (rk < 0 && ek == EAGAIN)
		cov.r_eagain++;
	if (rk < 0 && ek == EINVAL)
		cov.r_einval++;
	if (rk > 0 && s->cnt == EFD_MAX)
		cov.full_out++;
	if (rk > 0 && (s->cnt == 1 || !(s->flags & EFD_SEMAPHORE)))
		cov.empty_in++;
	if (rk > 0 && s->cnt == 1 && (s->flags & EFD_SEMAPHORE))
		cov.sem_empty_in++;
	if (rk > 0) {
		uint64_t want = s->flags & EFD_SEMAPHORE ? 1 : s->cnt;

		if (rk != 8 || s->cnt == 0 || bk[0] != want)
			seq_fail(s, "MODEL: kernel read gave %zd value %llu",
				 rk, (unsigned long long)bk[0]);
		else
			s->cnt -= want;
	}
	if (rk != ru || ek != eu || (rk > 0 && bk[0] != bu[0]))
		seq_fail(s, "read len %zu: kernel %zd errno %d (%s) value %llu | "
			 "ueventfd %zd errno %d (%s) value %llu", n, rk, ek,
			 ek ? strerror(ek) : "-", (unsigned long long)bk[0], ru,
			 eu, eu ? strerror(eu) : "-", (unsigned long long)bu[0]);
	seq_compare_ready(s, "after read");
	return rk;
}

/* Would a write of v in n bytes block (on a blocking fd)? */
static int write_blocks(const struct seq *s, uint64_t v, size_t n)
{
	if (n < 8 || (n > 8 && !long_writes_ok) || v == UINT64_MAX)
		return 0; /* EINVAL first */
	return v > EFD_MAX - s->cnt;
}

/* A value to write: small, filling, nearly filling, overflowing...; only
 * small ones unless big. */
static uint64_t pick_value(struct seq *s, uint64_t *rs, int big)
{
	uint64_t room = EFD_MAX - s->cnt;

	if (!big)
		return t_rand(rs) % 4;
	switch (t_rand(rs) % 12) {
	case 0:
		return 0;
	case 1:
	case 2:
		return 1;
	case 3:
		return 2;
	case 4:
		return room; /* fills the counter exactly */
	case 5:
		return room > 0 ? room - 1 : 0; /* one below full */
	case 6:
		return room > 1 ? room - 2 : 1;
	case 7:
		return room + 1; /* one too many (UINT64_MAX at 0: EINVAL) */
	case 8:
		return UINT64_MAX; /* EINVAL */
	case 9:
		return (1ULL << 63) + (t_rand(rs) >> 2); /* large */
	case 10:
		return EFD_MAX - (t_rand(rs) % 4); /* close to the max */
	default:
		return t_rand(rs) % 100;
	}
}

static size_t pick_wlen(uint64_t *rs)
{
	switch (t_rand(rs) % 40) {
	case 0:
		return 4; /* EINVAL */
	case 1:
		return 7;
	case 2:
		return 16; /* as the kernel says */
	default:
		return 8;
	}
}

static size_t pick_rlen(uint64_t *rs)
{
	switch (t_rand(rs) % 30) {
	case 0:
		return 4; /* EINVAL */
	case 1:
		return 0;
	case 2:
		return 16; /* fine: 8 bytes read */
	default:
		return 8;
	}
}

static void seq_run(const char *name, int flags, unsigned int init,
		    uint64_t start, int nops, uint64_t seed)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT };
	int nonblock = (flags & EFD_NONBLOCK) != 0;
	uint64_t rs = seed;
	struct seq s;

	memset(&s, 0, sizeof(s));
	s.name = name;
	s.flags = flags;
	s.k = eventfd(init, flags);
	s.u = u_make(init, flags);
	s.ep = epoll_create1(EPOLL_CLOEXEC);
	REQUIRE(s.k >= 0 && s.u >= 0 && s.ep >= 0);
	ev.data.u64 = 0;
	REQUIRE(epoll_ctl(s.ep, EPOLL_CTL_ADD, s.k, &ev) == 0);
	ev.data.u64 = 1;
	REQUIRE(epoll_ctl(s.ep, EPOLL_CTL_ADD, s.u, &ev) == 0);
	s.cnt = init;
	seq_log(&s, "create init %u flags %s%s", init,
		flags & EFD_SEMAPHORE ? "SEMAPHORE " : "",
		nonblock ? "NONBLOCK" : "");
	seq_compare_ready(&s, "after create");
	/* Initial values above an unsigned int: one write gets there. */
	if (start > init)
		seq_write(&s, start - init, 8);

	for (s.step = 1; s.step <= nops && !s.bad; s.step++) {
		unsigned op = (unsigned)(t_rand(&rs) % 100);

		if (op < 40) {
			/* A semaphore's counter, once near the top, stays
			 * there (reads take 1): its first half stays low,
			 * where reads empty it. */
			int big = !(flags & EFD_SEMAPHORE) ||
				  s.step > nops / 2;
			uint64_t v = pick_value(&s, &rs, big);
			size_t n = pick_wlen(&rs);

			if (!nonblock && write_blocks(&s, v, n))
				v = s.cnt < EFD_MAX ? 1 : 0;
			seq_write(&s, v, n);
		} else if (op < 75) {
			size_t n = pick_rlen(&rs);

			if (!nonblock && n >= 8 && s.cnt == 0) {
				/* Would block: a write instead. */
				seq_write(&s, 1 + t_rand(&rs) % 3, 8);
				continue;
			}
			seq_read(&s, n);
		} else if (op < 85) {
			/* The drain loop of an event loop (a semaphore's
			 * may be long: bounded). */
			seq_log(&s, "step %d: drain loop", s.step);
			for (int i = 0; i < 40 && !s.bad; i++) {
				if (!nonblock && s.cnt == 0)
					break;
				if (seq_read(&s, 8) < 0)
					break;
			}
		} else if (op < 93) {
			/* Nothing: readiness is stable with no call. */
			seq_log(&s, "step %d: no-op", s.step);
			seq_compare_ready(&s, "after a no-op");
		} else {
			/* Readiness seen through dups of both fds. */
			int d[2], fds[4];
			struct ready r[4];
			char a[128], b[128];

			seq_log(&s, "step %d: dup", s.step);
			d[0] = dup(s.k);
			d[1] = dup(s.u);
			REQUIRE(d[0] >= 0 && d[1] >= 0);
			fds[0] = s.k;
			fds[1] = s.u;
			fds[2] = d[0];
			fds[3] = d[1];
			get_ready(fds, 4, -1, r);
			CHECK_EQ(close(d[0]), 0);
			CHECK_EQ(close(d[1]), 0);
			for (int i = 1; i < 4; i++)
				if (!ready_eq(&r[0], &r[i])) {
					fmt_ready(a, sizeof(a), &r[0]);
					fmt_ready(b, sizeof(b), &r[i]);
					seq_fail(&s, "dup: %s %s | kernel %s",
						 i == 1 ? "ueventfd" :
						 i == 2 ? "dup of the kernel fd" :
							  "dup of the ueventfd",
						 b, a);
					break;
				}
		}
	}
	CHECK_EQ(close(s.ep), 0);
	CHECK_EQ(close(s.k), 0);
	CHECK_EQ(u_close(s.u), 0);
	if (!s.bad)
		printf("  %-44s %d ops, ok (counter %llu)\n", name, nops,
		       (unsigned long long)s.cnt);
}

static void test_differential(uint64_t seed, int nops)
{
	static const struct {
		unsigned int init;
		uint64_t start;
	} starts[] = {
		{ 0, 0 }, { 1, 1 }, { 5, 5 }, { UINT_MAX, UINT_MAX },
		/* eventfd() takes an unsigned int: a write reaches these. */
		{ 0, EFD_MAX - 1 }, { 3, EFD_MAX },
	};
	static const int fl[] = { 0, EFD_SEMAPHORE, EFD_NONBLOCK,
				  EFD_SEMAPHORE | EFD_NONBLOCK };
	uint64_t rs = seed;

	for (size_t f = 0; f < sizeof(fl) / sizeof(fl[0]); f++)
		for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
			char name[96];

			snprintf(name, sizeof(name), "%s%s, start 0x%llx",
				 fl[f] & EFD_SEMAPHORE ? "semaphore" : "plain",
				 fl[f] & EFD_NONBLOCK ? " nonblock" : " blocking",
				 (unsigned long long)starts[i].start);
			seq_run(name, fl[f], starts[i].init, starts[i].start,
				nops, t_rand(&rs));
		}
}

/* ---------------------------------------------------------------------- */
/* 2. A writer and a reader thread. */

struct pc {
	int fd;
	int n;
	int semaphore;
	int64_t got;
	int eagain;
};

static void *pc_writer(void *arg)
{
	struct pc *p = arg;
	uint64_t one = 1;

	for (int i = 0; i < p->n; i++)
		if (u_write(p->fd, &one, sizeof(one)) != 8) {
			fprintf(stderr, "writer: write: %s\n", strerror(errno));
			t_failures++;
			break;
		}
	return NULL;
}

static void *pc_reader(void *arg)
{
	struct pc *p = arg;
	uint64_t v;

	while (p->got < p->n) {
		ssize_t r = u_read(p->fd, &v, sizeof(v));

		if (r == 8) {
			if (v == 0 || (p->semaphore && v != 1) ||
			    p->got + (int64_t)v > p->n) {
				fprintf(stderr, "reader: read %llu at %lld\n",
					(unsigned long long)v,
					(long long)p->got);
				t_failures++;
				break;
			}
			p->got += (int64_t)v;
		} else if (r < 0 && errno == EAGAIN) {
			p->eagain++;
			sched_yield();
		} else {
			fprintf(stderr, "reader: read: %zd %s\n", r,
				strerror(errno));
			t_failures++;
			break;
		}
	}
	return NULL;
}

static void test_threads(int n, int semaphore)
{
	struct pc p = { .n = n, .semaphore = semaphore };
	pthread_t w, r;
	uint64_t v;
	char what[64];

	p.fd = u_make(0, EFD_NONBLOCK | (semaphore ? EFD_SEMAPHORE : 0));
	REQUIRE(p.fd >= 0);
	REQUIRE(pthread_create(&r, NULL, pc_reader, &p) == 0);
	REQUIRE(pthread_create(&w, NULL, pc_writer, &p) == 0);
	pthread_join(w, NULL);
	pthread_join(r, NULL);
	CHECK_EQ(p.got, n);
	printf("  threads%s: %d writes of 1 read back (%d EAGAIN)\n",
	       semaphore ? ", semaphore" : "", n, p.eagain);
	snprintf(what, sizeof(what), "threads%s, all read",
		 semaphore ? " (semaphore)" : "");
	check_ready(what, p.fd, 0);
	CHECK_ERR(u_read(p.fd, &v, sizeof(v)), EAGAIN);
	snprintf(what, sizeof(what), "threads%s, after an empty read",
		 semaphore ? " (semaphore)" : "");
	check_ready(what, p.fd, 0);
	CHECK_EQ(u_close(p.fd), 0);
}

/* ---------------------------------------------------------------------- */
/* 3. A reader blocked on an empty blocking ueventfd. */

struct blocked {
	int fd;
	_Atomic int tid;
	ssize_t r;
	uint64_t v;
};

static void *blocked_reader(void *arg)
{
	struct blocked *b = arg;

	atomic_store(&b->tid, t_gettid());
	b->r = u_read(b->fd, &b->v, sizeof(b->v));
	return NULL;
}

/* Start a reader, wait until it sleeps in the read, write w, join it. */
static void blocked_round(struct blocked *b, uint64_t w)
{
	pthread_t th;

	b->r = -2;
	b->v = 0;
	atomic_store(&b->tid, 0);
	REQUIRE(pthread_create(&th, NULL, blocked_reader, b) == 0);
	while (!atomic_load(&b->tid))
		sched_yield();
	CHECK(t_wait_sleeping(atomic_load(&b->tid), 5000));
	CHECK_EQ(u_write(b->fd, &w, sizeof(w)), 8);
	REQUIRE(t_join_within(th, 5000));
}

static void test_blocked(void)
{
	struct blocked b;
	uint64_t v;

	/* Plain: write 3 -> the reader takes 3 -> nothing left. */
	b.fd = u_make(0, 0);
	REQUIRE(b.fd >= 0);
	check_ready("blocked plain, empty", b.fd, 0);
	blocked_round(&b, 3);
	CHECK_EQ(b.r, 8);
	CHECK_EQ(b.v, 3);
	check_ready("blocked plain, after the woken read of 3", b.fd, 0);
	CHECK_EQ(u_close(b.fd), 0);

	/* Semaphore: write 2 -> the reader takes 1 -> readable -> read 1 ->
	 * not readable. */
	b.fd = u_make(0, EFD_SEMAPHORE);
	REQUIRE(b.fd >= 0);
	blocked_round(&b, 2);
	CHECK_EQ(b.r, 8);
	CHECK_EQ(b.v, 1);
	check_ready("blocked semaphore, one of 2 taken", b.fd, 1);
	v = 0;
	CHECK_EQ(u_read(b.fd, &v, sizeof(v)), 8);
	CHECK_EQ(v, 1);
	check_ready("blocked semaphore, both taken", b.fd, 0);
	CHECK_EQ(u_close(b.fd), 0);
}

/* ---------------------------------------------------------------------- */

int main(void)
{
	const char *e = getenv("T_EFD_SELF");
	double scale = t_scale();
	int nops = (int)(2000 * scale), nthr = (int)(50000 * scale);
	uint64_t seed, probe[2] = { 0, 0 };
	int k;

	/* Wakeups held by coalescing would show later: this is about the
	 * default (a write shows at once). */
	unsetenv("UEPOLL_EVENTFD_COALESCE");
	self_mode = e && *e && strcmp(e, "0");
	t_begin("t_efd_readiness");
	t_watchdog(120);
	if (nops < 200)
		nops = 200;
	if (nthr < 2000)
		nthr = 2000;
	seed = t_seed(0x18e4d1ULL);
	if (self_mode)
		printf("T_EFD_SELF: kernel eventfd against kernel eventfd\n");
	k = eventfd(0, 0);
	REQUIRE(k >= 0);
	long_writes_ok = write(k, probe, sizeof(probe)) > 0;
	CHECK_EQ(close(k), 0);

	printf("differential, %d ops a sequence:\n", nops);
	test_differential(seed, nops);
	printf("reached: %ld fills, %ld reads from full, %ld reads that "
	       "emptied (%ld of a semaphore), %ld write EAGAIN, %ld read EAGAIN, %ld write EINVAL, "
	       "%ld read EINVAL; %ld readiness comparisons\n", cov.full_in,
	       cov.full_out, cov.empty_in, cov.sem_empty_in, cov.w_eagain, cov.r_eagain,
	       cov.w_einval, cov.r_einval, cov.compares);
	if (cov.diverged) {
		printf("%d sequence(s) diverged (reached: not checked)\n",
		       cov.diverged);
	} else {
		CHECK(cov.full_in >= 10 && cov.full_out >= 10 &&
		      cov.empty_in >= 10 && cov.sem_empty_in >= 10);
		CHECK(cov.w_eagain >= 10 && cov.r_eagain >= 10);
		CHECK(cov.w_einval >= 10 && cov.r_einval >= 10);
	}
	printf("threads:\n");
	test_threads(nthr, 0);
	test_threads(nthr, 1);
	printf("blocked reader:\n");
	test_blocked();
	return t_end();
}
