/* SPDX-License-Identifier: MIT */
/*
 * pfuzz SEED STEPS [OFF|- [SKIP|-]] - the preload's differential fuzzer
 * (issue 33).  From SEED, STEPS random operations over the libc calls that
 * touch fds, one line of output each with everything a program can see:
 * return value, errno, the bytes read, the events of a wait (mask and
 * data), poll's revents, the fd number each creation returns.  pfuzz.sh
 * runs it natively and under uepoll-run and compares the outputs: with no
 * option set, a program must not be able to tell it runs under the
 * preload.
 *
 * OFF: a comma-separated list of kinds switched off (the names of KINDS
 * below, `pfuzz kinds`; PFUZZ_OFF adds to it).  The kinds of weight 0 are
 * not operations but ways of choosing arguments and printing results:
 *   fdnum  fds printed as numbers (off: as h<slot>, the program's own slot
 *          index, so that a different numbering is not seen by itself);
 *   rawfd  arguments picked among arbitrary numbers 3..64 and numbers
 *          closed earlier (off: only held fds, -1 and the top numbers);
 *   topfd  arguments at the top of the table (RLIMIT_NOFILE - 1, -2, the
 *          limit itself, + 1);
 *   intmax INT_MAX among them;
 *   evorder which events a wait with a small maxevents returns, and their
 *          order (off: maxevents 64, the events sorted: compared as a
 *          set);
 *   et, oneshot  EPOLLET, EPOLLONESHOT in the events registered;
 *   closereg  closing (or dup2 over) a number ADDed to an instance while
 *          another number of its file stays open (the kernel keeps the
 *          registration under the closed number);
 *   closenest  closing the last number of an instance ADDed to another.
 * (Off, such a close prints "kept" and is not made.)
 * SKIP: a comma-separated list of steps not made (the driver's
 * minimisation).  Each step draws its kind and its arguments from its own
 * generator (seeded by SEED and the step), so that switching a kind off or
 * skipping a step leaves the other steps' choices alone (their fds may
 * differ: the held fds differ).
 *
 * Nothing blocks: waits and polls have timeout 0, and a read or write
 * that could block is made only if the fd is O_NONBLOCK or poll() says it
 * is ready (else the line says "notready"); but blockread, whose read is
 * ended by a periodic timer's signal.  A watchdog (alarm,
 * PFUZZ_ALARM seconds, 10 by default) kills a run that blocks anyway:
 * the preload and the kernel then differ in exit status.  The output is
 * deterministic natively: no pointers, pids or times.  Fds 0-2 are never
 * an argument (stdout is the output); every fd above is closed at start
 * (what the environment left open must not show), and RLIMIT_NOFILE's
 * soft limit is 1024 (select's FD_SETSIZE).  PFUZZ_DEBUG=1 prints a held
 * fd as h<slot>/<number> (to compare the numbering by eye).
 *
 * `pfuzz child FD...` is the helper that exec and spawn start: it reports
 * each inherited FD (close-on-exec, what it is, readiness, 8 bytes read).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- kinds ---------------------------------------------------------- */

/* name, weight (0: a way of choosing fds, not an operation). */
#define KINDS(X)                                                             \
	X(fdnum, 0) X(rawfd, 0) X(topfd, 0) X(intmax, 0) X(evorder, 0) X(et, 0) X(etout, 0) X(forkadd, 0) X(oneshot, 0) X(closereg, 0) X(closenest, 0)                                  \
	X(eventfd, 7) X(epoll_create, 4) X(pipe, 2) X(socketpair, 2)        \
	X(ctl, 10) X(ctl_nest, 4) X(evbits, 1) X(wait, 9)                    \
	X(rw, 10) X(rwsize, 2) X(rwv, 3) X(rwvsize, 1) X(prw, 1) X(prw2, 2) X(efdrw, 5) X(blockread, 1)    \
	X(close, 5) X(dup, 3) X(dup2, 3) X(dup3, 2) X(fcntl, 4) X(dupfd, 2)  \
	X(ioctl_nbio, 2) X(ioctl_nread, 1) X(close_range, 1) X(closefrom, 1) X(close_all, 1) \
	X(poll, 3) X(select, 2) X(poll_ep, 2)                                \
	X(sys_close, 1) X(sys_dup, 1) X(sys_dup3, 1) X(sys_fcntl, 1) X(sys_setfl, 1) X(sys_dupfd, 1)         \
	X(sys_rw, 2) X(sys_epoll, 2) X(sys_create, 1)                        \
	X(stdio, 1) X(fork, 2) X(vfork, 1) X(exec, 1) X(exec_sys, 1)         \
	X(exec_closeloop, 1) X(spawn, 1) X(spawn_dup2, 1) X(signal, 2) X(rlimit, 1)

enum kind {
#define X(n, w) K_##n,
	KINDS(X)
#undef X
	K_N
};

static const char *const kind_name[K_N] = {
#define X(n, w) #n,
	KINDS(X)
#undef X
};

static const unsigned kind_weight[K_N] = {
#define X(n, w) w,
	KINDS(X)
#undef X
};

static bool kind_off[K_N];

static bool on(enum kind k)
{
	return !kind_off[k];
}

/* ---- random choices ------------------------------------------------- */

static uint64_t rng;

static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned rn(unsigned n)
{
	return n ? (unsigned)(rnd() % n) : 0;
}

static bool chance(unsigned pct)
{
	return rn(100) < pct;
}

/* ---- output --------------------------------------------------------- */

static const char *prefix = "";
static char line[8192];
static size_t linelen;

static void put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void put(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (linelen >= sizeof(line) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line + linelen, sizeof(line) - linelen, fmt, ap);
	va_end(ap);
	if (n > 0)
		linelen += (size_t)n;
	if (linelen >= sizeof(line))
		linelen = sizeof(line) - 1;
}

/* One line to stdout at once, with write(2): no stdio buffer that a fork
 * would copy. */
static void flush_line(void)
{
	size_t off = 0;

	line[linelen++] = '\n';
	while (off < linelen) {
		ssize_t r = write(1, line + off, linelen - off);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			break;
		}
		off += (size_t)r;
	}
	linelen = 0;
}

static void begin(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void begin(const char *fmt, ...)
{
	va_list ap;
	int n;

	linelen = 0;
	put("%s", prefix);
	va_start(ap, fmt);
	n = vsnprintf(line + linelen, sizeof(line) - linelen, fmt, ap);
	va_end(ap);
	if (n > 0)
		linelen += (size_t)n;
}

static void say(const char *s)
{
	begin("%s", s);
	flush_line();
}

static const char *ename(int e)
{
	const char *s = strerrorname_np(e);

	return s ? s : "E?";
}

/* " = R" and, if errno was set (it is 0 before every call), " ENAME". */
static void res(long r, int e)
{
	put(" = %ld", r);
	if (e)
		put(" %s", ename(e));
}

/* ---- the fds the program holds -------------------------------------- */

enum ftype { T_NONE, T_EFD, T_EP, T_PIPE, T_SOCK, T_OTHER };
static const char *const tname[] = { "none", "efd", "ep", "pipe", "sock",
				     "other" };

#define MAXH 40
static int held[MAXH]; /* fd number, -1: free slot */
static int htype[MAXH];
static int hid[MAXH];   /* the open file: the same for every dup */
static bool hreg[MAXH]; /* ADDed to an instance (ever) through this number */
static int next_id;
static int stale[8], nstale;
static int lim = 1024;       /* RLIMIT_NOFILE's soft limit, set at start */
static char self[PATH_MAX];

/* What the kernel says the number is (not printed: for choices only). */
static enum ftype ftype(int fd)
{
	char p[64], t[64];
	ssize_t n;

	/* Through the fd API first: /proc/self/fd also lists the preload's
	 * own fds, which the program's calls see as free numbers (uepoll-run
	 * man page, LIMITS). */
	if (fd < 0 || fcntl(fd, F_GETFD) < 0)
		return T_NONE;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	n = readlink(p, t, sizeof(t) - 1);
	if (n < 0)
		return T_NONE;
	t[n] = 0;
	if (!strcmp(t, "anon_inode:[eventfd]"))
		return T_EFD;
	if (!strcmp(t, "anon_inode:[eventpoll]"))
		return T_EP;
	if (!strncmp(t, "pipe:", 5))
		return T_PIPE;
	if (!strncmp(t, "socket:", 7))
		return T_SOCK;
	return T_OTHER;
}

static bool debug_numbers; /* PFUZZ_DEBUG: h<slot>/<number> */
static int dropped = -1; /* a number slot_add closed: the table was full */

static int slot_of(int fd)
{
	for (int i = 0; i < MAXH; i++)
		if (held[i] == fd && fd >= 0)
			return i;
	return -1;
}

static int nheld(void)
{
	int n = 0;

	for (int i = 0; i < MAXH; i++)
		n += held[i] >= 0;
	return n;
}

/* A number the program now holds: a creation's (from -1), a dup's of
 * from. */
static void slot_add_from(int fd, int from)
{
	int s = slot_of(fd), fs = slot_of(from);
	int id = fs >= 0 && from != fd ? hid[fs] : next_id++;

	if (fd < 0)
		return;
	for (int i = 0; s < 0 && i < MAXH; i++)
		if (held[i] < 0)
			s = i;
	if (s < 0) { /* full: closed at once, printed as "x" */
		close(fd);
		dropped = fd;
		return;
	}
	held[s] = fd;
	htype[s] = ftype(fd);
	hid[s] = id;
	hreg[s] = false;
}

static void slot_add(int fd)
{
	slot_add_from(fd, -1);
}

/* Whether the program may close this number (or replace it, dup2):
 *   closereg off: not a number ADDed to an instance while another number
 *     of its file stays open (the kernel keeps the registration under the
 *     closed number);
 *   closenest off: not the last number of an instance ADDed to another
 *     (the kernel drops the registration). */
static bool may_close(int fd)
{
	int s = slot_of(fd), others = 0;

	if (s < 0 || !hreg[s])
		return true;
	for (int i = 0; i < MAXH; i++)
		if (i != s && held[i] >= 0 && hid[i] == hid[s])
			others++;
	if (others && !on(K_closereg))
		return false;
	if (!others && htype[s] == T_EP && !on(K_closenest))
		return false;
	return true;
}

static bool may_close_range(unsigned a, unsigned b)
{
	for (int i = 0; i < MAXH; i++)
		if (held[i] >= 0 && (unsigned)held[i] >= a &&
		    (unsigned)held[i] <= b && !may_close(held[i]))
			return false;
	return true;
}

static void slot_del(int fd)
{
	int s = slot_of(fd);

	if (s < 0)
		return;
	held[s] = -1;
	if (nstale == (int)(sizeof(stale) / sizeof(stale[0])))
		memmove(stale, stale + 1, sizeof(stale) - sizeof(stale[0])),
			nstale--;
	stale[nstale++] = fd;
}

static void slot_del_range(unsigned a, unsigned b)
{
	for (int i = 0; i < MAXH; i++)
		if (held[i] >= 0 && (unsigned)held[i] >= a &&
		    (unsigned)held[i] <= b)
			slot_del(held[i]);
}

/* How an fd is printed: its number (fdnum), else the slot that holds it. */
static const char *fdn(int fd)
{
	static char buf[8][16];
	static int k;
	char *b = buf[k++ & 7];
	int s = slot_of(fd);

	if (s < 0 && fd == dropped && fd >= 0)
		snprintf(b, 16, "x");
	else if (on(K_fdnum) || s < 0)
		snprintf(b, 16, "%d", fd);
	else if (debug_numbers)
		snprintf(b, 16, "h%d/%d", s, fd);
	else
		snprintf(b, 16, "h%d", s);
	return b;
}

enum want { W_ANY, W_EFD, W_EP, W_NOTEP, W_RW };

static bool wants(enum want w, int t)
{
	switch (w) {
	case W_ANY:
		return true;
	case W_EFD:
		return t == T_EFD;
	case W_EP:
		return t == T_EP;
	case W_NOTEP:
		return t != T_EP;
	case W_RW:
		return t == T_EFD || t == T_PIPE || t == T_SOCK;
	}
	return true;
}

/* A held fd, of the kind wanted if there is one (mostly); -2 if none. */
static int held_pick(enum want w)
{
	int cand[MAXH], all[MAXH], n = 0, na = 0;

	for (int i = 0; i < MAXH; i++) {
		if (held[i] < 0)
			continue;
		all[na++] = i;
		if (wants(w, htype[i]))
			cand[n++] = i;
	}
	if (n && (n == na || chance(85)))
		return held[cand[rn((unsigned)n)]];
	if (na)
		return held[all[rn((unsigned)na)]];
	return -2;
}

/* The top of the table: RLIMIT_NOFILE - 1, - 2, the limit, + 1; INT_MAX
 * (its own kind). */
static int top_number(void)
{
	static const int d[] = { -1, -2, 0, 1 };
	unsigned i = rn(5);

	return i == 4 && on(K_intmax) ? INT_MAX : lim + d[i & 3];
}

static int raw_number(void)
{
	if (nstale && chance(30))
		return stale[rn((unsigned)nstale)];
	return 3 + (int)rn(62);
}

/* An fd argument: mostly a held fd, sometimes any number, the top of the
 * table, -1. */
static int pick_fd(enum want w)
{
	unsigned r = rn(100);
	int fd;

	if (r < 3)
		return -1;
	if (r < 10 && on(K_rawfd))
		return raw_number();
	if (r < 13 && on(K_topfd))
		return top_number();
	fd = held_pick(w);
	if (fd == -2)
		return on(K_rawfd) ? raw_number() : -1;
	return fd;
}

/* ---- gates: no call ever blocks ------------------------------------- */

static short revents_of(int fd, short ev)
{
	struct pollfd p = { .fd = fd, .events = ev };

	if (fd < 0 || poll(&p, 1, 0) != 1)
		return 0;
	return p.revents;
}

static bool nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_NONBLOCK);
}

/* A read of fd cannot block. */
static bool may_read(int fd)
{
	enum ftype t = ftype(fd);

	if (t != T_EFD && t != T_PIPE && t != T_SOCK)
		return true; /* fails at once, or reads /proc-like files */
	if (nonblocking(fd))
		return true;
	return revents_of(fd, POLLIN) & (POLLIN | POLLHUP | POLLERR);
}

/* A write of *v (eventfd) or n bytes cannot block; *v may be lowered to
 * 1 for a blocking eventfd (any larger value could wait for room). */
static bool may_write(int fd, uint64_t *v, size_t n)
{
	enum ftype t = ftype(fd);

	if (t != T_EFD && t != T_PIPE && t != T_SOCK)
		return true;
	if (nonblocking(fd))
		return true;
	if (t == T_EFD && (n < 8 || *v == UINT64_MAX))
		return true; /* EINVAL */
	if (!(revents_of(fd, POLLOUT) & (POLLOUT | POLLERR | POLLHUP)))
		return false;
	if (t == T_EFD && *v > 1)
		*v = 1;
	return true;
}

/* ---- operations ----------------------------------------------------- */

static uint64_t pick_value(void)
{
	static const uint64_t big[] = { 0, UINT64_MAX, UINT64_MAX - 1,
					UINT64_MAX - 2, 1ull << 63 };

	if (chance(85))
		return 1 + rn(5);
	return big[rn(5)];
}

static void print_bytes(const unsigned char *b, long n)
{
	if (n == 8) {
		uint64_t v;

		memcpy(&v, b, 8);
		put(" v=%llu", (unsigned long long)v);
	} else if (n > 0) {
		put(" b=");
		for (long i = 0; i < n; i++)
			put("%02x", b[i]);
	}
}

static void op_eventfd(void)
{
	static const int fl[] = { 0, EFD_SEMAPHORE, EFD_NONBLOCK, EFD_CLOEXEC,
				  EFD_NONBLOCK | EFD_SEMAPHORE,
				  EFD_NONBLOCK | EFD_CLOEXEC, 0x2 };
	unsigned init = chance(60) ? rn(4) : (unsigned)rnd();
	int f = fl[rn(7)], r;

	if (nheld() >= MAXH - 2)
		{ say("eventfd: table full"); return; }
	errno = 0;
	r = eventfd(init, f);
	slot_add(r);
	begin("eventfd(%u, 0x%x)", init, f);
	res(r < 0 ? r : 0, errno);
	put(" fd=%s", fdn(r));
	flush_line();
}

static void op_epoll_create(void)
{
	int how = (int)rn(6), r;

	if (nheld() >= MAXH - 2)
		{ say("epoll_create: table full"); return; }
	errno = 0;
	if (how == 0)
		r = epoll_create(chance(80) ? 1 + (int)rn(100) : -(int)rn(2));
	else
		r = epoll_create1(how == 5 ? 0x1 : how & 1 ? EPOLL_CLOEXEC : 0);
	slot_add(r);
	begin("epoll_create%d", how);
	res(r < 0 ? r : 0, errno);
	put(" fd=%s", fdn(r));
	flush_line();
}

static void op_pipe(void)
{
	static const int fl[] = { 0, O_NONBLOCK, O_CLOEXEC, O_DIRECT };
	int p[2] = { -1, -1 }, f = fl[rn(4)], r;

	if (nheld() >= MAXH - 2)
		{ say("pipe: table full"); return; }
	errno = 0;
	r = pipe2(p, f);
	begin("pipe2(0x%x)", f);
	res(r, errno);
	if (r == 0) {
		slot_add(p[0]);
		slot_add(p[1]);
		put(" fds=%s,%s", fdn(p[0]), fdn(p[1]));
	}
	flush_line();
}

static void op_socketpair(void)
{
	int s[2] = { -1, -1 }, ty = SOCK_STREAM, r;

	if (nheld() >= MAXH - 2)
		{ say("socketpair: table full"); return; }
	if (chance(30))
		ty = SOCK_DGRAM;
	if (chance(40))
		ty |= SOCK_NONBLOCK;
	if (chance(20))
		ty |= SOCK_CLOEXEC;
	errno = 0;
	r = socketpair(AF_UNIX, ty, 0, s);
	begin("socketpair(0x%x)", ty);
	res(r, errno);
	if (r == 0) {
		slot_add(s[0]);
		slot_add(s[1]);
		put(" fds=%s,%s", fdn(s[0]), fdn(s[1]));
	}
	flush_line();
}

static uint32_t pick_events(void)
{
	uint32_t e = 0;

	if (chance(70))
		e |= EPOLLIN;
	if (chance(40))
		e |= EPOLLOUT;
	if (chance(10))
		e |= EPOLLRDHUP;
	if (chance(5))
		e |= EPOLLPRI;
	if (chance(5))
		e |= EPOLLERR;
	if (chance(5))
		e |= EPOLLHUP;
	if (chance(25) && on(K_et))
		e |= EPOLLET;
	/* etout off: edge-triggered masks without EPOLLOUT (an eventfd's
	 * read is an EPOLLOUT edge the preload does not always make: F23). */
	if ((e & EPOLLET) && !on(K_etout))
		e &= ~(uint32_t)EPOLLOUT;
	if (chance(15) && on(K_oneshot))
		e |= EPOLLONESHOT;
	if (chance(8))
		e |= EPOLLEXCLUSIVE;
	if (chance(3))
		e |= EPOLLWAKEUP;
	if (on(K_evbits) && chance(30))
		e |= 1u << (12 + rn(16)); /* a bit epoll does not define */
	/* But 1<<27 with EPOLLEXCLUSIVE: the round-robin proposal's bit,
	 * which the preload takes by design (wrap_epoll.c; the kernel:
	 * EINVAL). */
	if (e & EPOLLEXCLUSIVE)
		e &= ~(1u << 27);
	return e;
}

static void do_ctl(enum want w)
{
	static const int bad_op[] = { 0, 5, -1 };
	struct epoll_event ev;
	int ep = pick_fd(W_EP), fd = pick_fd(w), op, r;
	unsigned o = rn(100);
	bool null = chance(3);

	op = o < 50 ? EPOLL_CTL_ADD : o < 75 ? EPOLL_CTL_MOD
		     : o < 96 ? EPOLL_CTL_DEL : bad_op[rn(3)];
	if (chance(3))
		fd = ep; /* itself */
	else if (!on(K_ctl_nest) && ftype(fd) == T_EP)
		fd = -1; /* no nesting */
	ev.events = pick_events();
	ev.data.u64 = rnd() & 0xffffff;
	errno = 0;
	r = epoll_ctl(ep, op, fd, null ? NULL : &ev);
	if (r == 0 && op == EPOLL_CTL_ADD && slot_of(fd) >= 0)
		hreg[slot_of(fd)] = true;
	begin("epoll_ctl(%s, %d, %s, ", fdn(ep), op, fdn(fd));
	if (null)
		put("NULL)");
	else
		put("{0x%x, 0x%llx})", ev.events,
		    (unsigned long long)ev.data.u64);
	res(r, errno);
	flush_line();
}

static void op_ctl(void)
{
	do_ctl(W_NOTEP);
}

static void op_ctl_nest(void)
{
	do_ctl(W_EP);
}

static void op_evbits(void)
{
	do_ctl(W_NOTEP); /* with evbits on, pick_events adds a bit */
}

static int ev_cmp(const void *a, const void *b)
{
	const struct epoll_event *x = a, *y = b;

	if (x->data.u64 != y->data.u64)
		return x->data.u64 < y->data.u64 ? -1 : 1;
	return x->events < y->events ? -1 : x->events > y->events;
}

/* The events of a wait; with evorder off, as a set (sorted). */
static void print_events(struct epoll_event *ev, int n)
{
	if (!on(K_evorder))
		qsort(ev, (size_t)n, sizeof(*ev), ev_cmp);
	put(" [");
	for (int i = 0; i < n; i++)
		put("%s0x%x:0x%llx", i ? " " : "", ev[i].events,
		    (unsigned long long)ev[i].data.u64);
	put("]");
}

static void op_wait(void)
{
	static const int maxs[] = { 1, 2, 3, 4, 8, 64, 0, -1 };
	struct epoll_event ev[64];
	int ep = pick_fd(W_EP), how = (int)rn(4), r;
	int max = maxs[chance(90) ? rn(6) : 6 + rn(2)];
	struct timespec ts = { 0, 0 };
	sigset_t ss;

	/* Which events a short wait takes, or in which order, only with
	 * evorder on; else every ready one, compared as a set. */
	if (!on(K_evorder) && max > 0)
		max = 64;
	sigemptyset(&ss);
	memset(ev, 0, sizeof(ev));
	errno = 0;
	switch (how) {
	case 0:
		r = epoll_wait(ep, ev, max, 0);
		break;
	case 1:
		r = epoll_pwait(ep, ev, max, 0, NULL);
		break;
	case 2:
		r = epoll_pwait(ep, ev, max, 0, &ss);
		break;
	default:
		r = epoll_pwait2(ep, ev, max, &ts, NULL);
		break;
	}
	begin("epoll_wait%d(%s, %d)", how, fdn(ep), max);
	res(r, errno);
	if (r > 0)
		print_events(ev, r);
	flush_line();
}

/* Where a vector call splits its n bytes in two.  With vec_odd (rwvsize:
 * odd sizes), anywhere, empty vectors included, and a third vector
 * sometimes; else two non-empty ones. */
static bool vec_odd;

static size_t vec_split(size_t n)
{
	if (vec_odd)
		return n ? rn((unsigned)n + 1) : 0;
	return n > 1 ? 1 + rn((unsigned)n - 1) : n;
}

/* read or write of n bytes, through the call `how` picks. */
enum io { IO_PLAIN, IO_VEC, IO_P, IO_P2, IO_EFD, IO_SYS };

static long do_read(enum io how, int fd, unsigned char *b, size_t n, int *e)
{
	struct iovec iov[3];
	int niov = 1;
	long r;

	if (how == IO_VEC || how == IO_P2) {
		size_t a = vec_split(n);

		iov[0] = (struct iovec){ b, a };
		iov[1] = (struct iovec){ b + a, n - a };
		niov = 2;
		if (vec_odd && chance(20))
			iov[2] = (struct iovec){ b + n, 0 }, niov = 3;
	}
	errno = 0;
	switch (how) {
	case IO_PLAIN:
		r = read(fd, b, n);
		break;
	case IO_VEC:
		r = readv(fd, iov, niov);
		break;
	case IO_P:
		r = pread(fd, b, n, chance(80) ? 0 : -1);
		break;
	case IO_P2:
		r = preadv2(fd, iov, niov, -1, chance(70) ? 0 : RWF_NOWAIT);
		break;
	case IO_EFD: {
		eventfd_t v = 0;

		r = eventfd_read(fd, &v);
		if (r == 0) {
			memcpy(b, &v, 8);
			r = 8; /* printed as bytes read */
		}
		break;
	}
	default:
		r = syscall(SYS_read, fd, b, n);
		break;
	}
	*e = errno;
	return r;
}

static long do_write(enum io how, int fd, uint64_t v, size_t n, int *e)
{
	unsigned char b[16];
	struct iovec iov[3];
	int niov = 1;
	long r;

	memset(b, 0, sizeof(b));
	memcpy(b, &v, 8);
	if (how == IO_VEC || how == IO_P2) {
		size_t a = vec_split(n);

		iov[0] = (struct iovec){ b, a };
		iov[1] = (struct iovec){ b + a, n - a };
		niov = 2;
		if (vec_odd && chance(20))
			iov[2] = (struct iovec){ b, 8 }, niov = 3;
	}
	errno = 0;
	switch (how) {
	case IO_PLAIN:
		r = write(fd, b, n);
		break;
	case IO_VEC:
		r = writev(fd, iov, niov);
		break;
	case IO_P:
		r = pwrite(fd, b, n, chance(80) ? 0 : -1);
		break;
	case IO_P2:
		r = pwritev2(fd, iov, niov, -1, chance(70) ? 0 : RWF_NOWAIT);
		break;
	case IO_EFD:
		r = eventfd_write(fd, v);
		break;
	default:
		r = syscall(SYS_write, fd, b, n);
		break;
	}
	*e = errno;
	return r;
}

static const char *const io_name[] = { "", "v", "p", "pv2", "efd_", "sys_" };

static void rw_op(enum io how, bool odd_sizes)
{
	static const size_t sizes[] = { 0, 4, 7, 9, 16 };
	unsigned char b[16];
	bool rd = chance(50);
	int fd = pick_fd(W_RW), e = 0;
	size_t n = odd_sizes ? sizes[rn(5)] : 8;
	uint64_t v = pick_value();
	long r;

	if (how == IO_EFD)
		n = 8;
	memset(b, 0, sizeof(b));
	if (rd) {
		begin("%sread(%s, %zu)", io_name[how], fdn(fd), n);
		if (!may_read(fd)) {
			put(" notready");
			{ flush_line(); return; }
		}
		r = do_read(how, fd, b, n, &e);
		res(r, e);
		print_bytes(b, r > 16 ? 16 : r);
	} else {
		bool ok = may_write(fd, &v, n);

		begin("%swrite(%s, %llu, %zu)", io_name[how], fdn(fd),
		      (unsigned long long)v, n);
		if (!ok) {
			put(" notready");
			{ flush_line(); return; }
		}
		r = do_write(how, fd, v, n, &e);
		res(r, e);
	}
	flush_line();
}

static void op_rw(void)
{
	rw_op(IO_PLAIN, false);
}

static void op_rwsize(void)
{
	rw_op(IO_PLAIN, true);
}

static void op_rwv(void)
{
	rw_op(IO_VEC, false);
}

static void op_rwvsize(void)
{
	vec_odd = true;
	rw_op(IO_VEC, true);
	vec_odd = false;
}

static void op_prw(void)
{
	rw_op(IO_P, chance(20));
}

static void op_prw2(void)
{
	rw_op(IO_P2, chance(20));
}

static void op_efdrw(void)
{
	rw_op(IO_EFD, false);
}

static void op_sys_rw(void)
{
	rw_op(IO_SYS, chance(20));
}

/* A read that blocks: of an fd that is not ready and not O_NONBLOCK (as
 * the program sees it: O_NONBLOCK cleared by fcntl or ioctl), ended by a
 * periodic timer's signal: EINTR without SA_RESTART; with it, the
 * handler's write of 1 (once) ends the restarted read.  Periodic: a tick
 * that comes before the read starts is followed by another. */
static timer_t btimer;
static bool btimer_made;
static volatile sig_atomic_t bwritten;
static int bfd = -1;

static void on_usr2(int signo)
{
	int e = errno;
	uint64_t one = 1;

	(void)signo;
	if (bfd >= 0 && !bwritten) {
		bwritten = 1;
		if (write(bfd, &one, 8) != 8)
			bwritten = 2;
	}
	errno = e;
}

static void op_blockread(void)
{
	struct itimerspec it = { { 0, 20000000 }, { 0, 20000000 } }, off;
	struct sigaction sa;
	unsigned char b[8];
	int fd = pick_fd(chance(80) ? W_EFD : W_RW), e;
	bool restart = chance(50);
	long r;

	memset(&off, 0, sizeof(off));
	if (ftype(fd) != T_EFD)
		restart = false; /* only an eventfd's own write ends its read */
	begin("blockread%s(%s)", restart ? "_restart" : "", fdn(fd));
	if (may_read(fd)) {
		put(" ready"); /* no read: it would not block */
		flush_line();
		return;
	}
	if (!btimer_made) {
		struct sigevent sev;

		memset(&sev, 0, sizeof(sev));
		sev.sigev_notify = SIGEV_SIGNAL;
		sev.sigev_signo = SIGUSR2;
		if (timer_create(CLOCK_MONOTONIC, &sev, &btimer) != 0) {
			put(" no timer");
			flush_line();
			return;
		}
		btimer_made = true;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr2;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
	bfd = restart ? fd : -1;
	bwritten = 0;
	memset(b, 0, sizeof(b));
	timer_settime(btimer, 0, &it, NULL);
	errno = 0;
	r = read(fd, b, 8);
	e = errno;
	timer_settime(btimer, 0, &off, NULL);
	bfd = -1;
	res(r, e);
	print_bytes(b, r);
	put(" w=%d", (int)bwritten);
	flush_line();
}

static void op_close(void)
{
	int fd = pick_fd(W_ANY), r;

	begin("close(%s)", fdn(fd));
	if (!may_close(fd)) {
		put(" kept");
		flush_line();
		return;
	}
	errno = 0;
	r = close(fd);
	res(r, errno);
	if (r == 0)
		slot_del(fd);
	flush_line();
}

static void op_sys_close(void)
{
	int fd = pick_fd(W_ANY);
	long r;

	begin("sys_close(%s)", fdn(fd));
	if (!may_close(fd)) {
		put(" kept");
		flush_line();
		return;
	}
	errno = 0;
	r = syscall(SYS_close, fd);
	res(r, errno);
	if (r == 0)
		slot_del(fd);
	flush_line();
}

static void after_new(long r, int from)
{
	if (r >= 0)
		slot_add_from((int)r, from);
	put(" fd=%s", fdn((int)r));
}

static void op_dup(void)
{
	int fd = pick_fd(W_ANY), r;

	errno = 0;
	r = dup(fd);
	begin("dup(%s)", fdn(fd));
	res(r < 0 ? r : 0, errno);
	after_new(r, fd);
	flush_line();
}

static void op_sys_dup(void)
{
	int fd = pick_fd(W_ANY);
	long r;

	errno = 0;
	r = syscall(SYS_dup, fd);
	begin("sys_dup(%s)", fdn(fd));
	res(r < 0 ? r : 0, errno);
	after_new(r, fd);
	flush_line();
}

/* A dup2/dup3 target: a held fd, the same number, any number, the top. */
static int pick_target(int old)
{
	unsigned r = rn(100);

	if (r < 45) {
		int fd = held_pick(W_ANY);

		if (fd >= 0)
			return fd;
	}
	if (r < 60)
		return old;
	if (r < 85 && on(K_rawfd))
		return raw_number();
	if (r < 95 && on(K_topfd))
		return top_number();
	return -1;
}

static void dup3_op(int how)
{
	static const int fl[] = { 0, O_CLOEXEC, 0x1 };
	int old = pick_fd(W_ANY), nw = pick_target(old), f = fl[rn(3)];
	long r;
	char nwname[16];

	/* The target's name before the call (a held fd's slot). */
	snprintf(nwname, sizeof(nwname), "%s", fdn(nw));
	if (nw != old && !may_close(nw)) {
		begin("dup%d(%s, %s) kept", how, fdn(old), nwname);
		flush_line();
		return;
	}
	errno = 0;
	switch (how) {
	case 0:
		r = dup2(old, nw);
		break;
	case 1:
		r = dup3(old, nw, f);
		break;
	case 2:
		r = syscall(SYS_dup3, old, nw, f);
		break;
	default:
		r = syscall(SYS_dup2, old, nw);
		break;
	}
	begin("%s(%s, %s, 0x%x)",
	      how == 0 ? "dup2" : how == 1 ? "dup3" : how == 2 ? "sys_dup3"
							       : "sys_dup2",
	      fdn(old), nwname, how == 1 || how == 2 ? f : 0);
	res(r < 0 ? r : r == nw ? 0 : 1, errno);
	if (r >= 0 && nw != old)
		slot_add_from(nw, old);
	flush_line();
}

static void op_dup2(void)
{
	dup3_op(0);
}

static void op_dup3(void)
{
	dup3_op(1);
}

static void op_sys_dup3(void)
{
	dup3_op(chance(50) ? 2 : 3);
}

/* fcntl's commands but the dups. */
/* sys: through syscall(2); setfl: F_SETFL only (else never: sys_setfl is
 * its own kind). */
static void fcntl_op(bool sys, bool setfl)
{
	int fd = pick_fd(W_ANY), c = setfl ? 1 : (int)rn(6), fl;
	long r = 0;
	const char *cn = "";

	if (sys && !setfl && (c == 1 || c == 2))
		c = 0; /* syscall(SYS_fcntl, F_SETFL) is sys_setfl */
	errno = 0;
	switch (c) {
	case 0:
		cn = "GETFL";
		r = sys ? syscall(SYS_fcntl, fd, F_GETFL) : fcntl(fd, F_GETFL);
		break;
	case 1:
	case 2:
		fl = chance(50) ? O_NONBLOCK : 0;
		if (chance(20))
			fl |= O_APPEND;
		cn = fl & O_NONBLOCK ? "SETFL+NB" : "SETFL-NB";
		r = sys ? syscall(SYS_fcntl, fd, F_SETFL, fl)
			: fcntl(fd, F_SETFL, fl);
		break;
	case 3:
		cn = "GETFD";
		r = sys ? syscall(SYS_fcntl, fd, F_GETFD) : fcntl(fd, F_GETFD);
		break;
	default:
		fl = chance(50) ? FD_CLOEXEC : 0;
		cn = fl ? "SETFD+CLOEXEC" : "SETFD-CLOEXEC";
		r = sys ? syscall(SYS_fcntl, fd, F_SETFD, fl)
			: fcntl(fd, F_SETFD, fl);
		break;
	}
	begin("%sfcntl(%s, %s)", sys ? "sys_" : "", fdn(fd), cn);
	res(r, errno);
	flush_line();
}

static int pick_base(void)
{
	unsigned r = rn(100);

	if (r < 30)
		return 0;
	if (r < 60)
		return 3 + (int)rn(40);
	if (r < 75 && on(K_fdnum)) {
		int fd = held_pick(W_ANY);

		return fd >= 0 ? fd : 3;
	}
	if (r < 90)
		return on(K_topfd) ? top_number() : 50;
	return -1;
}

static void dupfd_op(bool sys)
{
	int fd = pick_fd(W_ANY), base = pick_base();
	int cmd = chance(50) ? F_DUPFD : F_DUPFD_CLOEXEC;
	long r;

	errno = 0;
	r = sys ? syscall(SYS_fcntl, fd, cmd, base) : fcntl(fd, cmd, base);
	begin("%sfcntl(%s, %s, %d)", sys ? "sys_" : "", fdn(fd),
	      cmd == F_DUPFD ? "DUPFD" : "DUPFD_CLOEXEC", base);
	res(r < 0 ? r : 0, errno);
	after_new(r, fd);
	flush_line();
}

static void op_fcntl(void)
{
	fcntl_op(false, false);
}

static void op_dupfd(void)
{
	dupfd_op(false);
}

static void op_sys_fcntl(void)
{
	fcntl_op(true, false);
}

static void op_sys_setfl(void)
{
	fcntl_op(true, true);
}

static void op_sys_dupfd(void)
{
	dupfd_op(true);
}

static void op_ioctl_nbio(void)
{
	int fd = pick_fd(W_ANY), v = chance(50), r;

	errno = 0;
	r = ioctl(fd, FIONBIO, &v);
	begin("ioctl(%s, FIONBIO, %d)", fdn(fd), v);
	res(r, errno);
	flush_line();
}

static void op_ioctl_nread(void)
{
	int fd = pick_fd(W_ANY), v = -1, r;

	errno = 0;
	r = ioctl(fd, FIONREAD, &v);
	begin("ioctl(%s, FIONREAD)", fdn(fd));
	res(r, errno);
	if (r == 0)
		put(" n=%d", v);
	flush_line();
}

/* A range's end: a held fd's number, any number, the top, ~0. */
static unsigned range_end(bool hi)
{
	unsigned r = rn(100);

	if (r < 50) {
		int fd = held_pick(W_ANY);

		if (fd >= 0)
			return (unsigned)fd;
	}
	if (r < 75)
		return 3 + rn(62);
	if (r < 85)
		return (unsigned)lim - 1;
	return hi ? ~0u : 3 + rn(10);
}

/* A range to close.  Which fds lie between two numbers depends on the
 * numbering: with fdnum off, only ranges that do not (one held fd,
 * everything from 3, the top of the table). */
static void pick_range(unsigned *a, unsigned *b)
{
	unsigned r = rn(100);
	int fd;

	if (on(K_fdnum)) {
		*a = range_end(false);
		*b = range_end(true);
		if (chance(80) && *a > *b) {
			unsigned t = *a;

			*a = *b;
			*b = t;
		}
		return;
	}
	fd = held_pick(W_ANY);
	if (r < 80 && fd >= 0) {
		*a = *b = (unsigned)fd;
	} else {
		*a = (unsigned)lim - 1 - rn(2);
		*b = chance(50) ? ~0u : *a - rn(2);
	}
}

static const char *rname(unsigned v)
{
	static char buf[4][16];
	static int k;
	char *b = buf[k++ & 3];

	if (v == ~0u)
		return "~0";
	if (v <= INT_MAX)
		return fdn((int)v);
	snprintf(b, 16, "%u", v);
	return b;
}

static void op_close_range(void)
{
	static const int fl[] = { 0, CLOSE_RANGE_CLOEXEC, CLOSE_RANGE_UNSHARE,
				  0x8 };
	unsigned a, b;
	int f, r;

	pick_range(&a, &b);
	f = fl[chance(70) ? 0 : 1 + rn(3)];
	begin("close_range(%s, %s, 0x%x)", rname(a), rname(b), f);
	if (!(f & CLOSE_RANGE_CLOEXEC) && !may_close_range(a, b)) {
		put(" kept");
		flush_line();
		return;
	}
	errno = 0;
	r = chance(70) ? close_range(a, b, f)
		       : (int)syscall(SYS_close_range, a, b, f);
	res(r, errno);
	if (r == 0 && !(f & CLOSE_RANGE_CLOEXEC))
		slot_del_range(a, b);
	flush_line();
}

static void op_closefrom(void)
{
	unsigned a, b;
	int hi = -1;

	pick_range(&a, &b);
	/* With fdnum, mostly from the upper half of what is held:
	 * closefrom(3) would end every sequence. */
	for (int i = 0; i < MAXH; i++)
		if (held[i] > hi)
			hi = held[i];
	if (on(K_fdnum) && hi >= 0 && chance(70))
		a = (unsigned)hi - rn(3);
	else if (!on(K_fdnum) && a < (unsigned)lim - 2)
		a = (unsigned)lim - 1; /* a held fd: only with the numbers */
	if (a < 3)
		a = 3;
	begin("closefrom(%s)", rname(a));
	if (!may_close_range(a, ~0u)) {
		put(" kept");
		flush_line();
		return;
	}
	errno = 0;
	closefrom((int)a);
	res(0, errno);
	slot_del_range(a, ~0u);
	flush_line();
}

/* Every fd above stderr closed, as a daemon or a child before exec does:
 * closefrom(3), close_range(3, ~0). */
static void op_close_all(void)
{
	int how = (int)rn(3);
	long r = 0;

	begin("close_all%d", how);
	errno = 0;
	if (how == 0)
		closefrom(3);
	else if (how == 1)
		r = close_range(3, ~0u, 0);
	else
		r = syscall(SYS_close_range, 3, ~0u, 0);
	res(r, errno);
	if (r == 0)
		slot_del_range(3, ~0u);
	flush_line();
}

static void poll_op(bool with_ep, bool sel)
{
	static const short evs[] = { POLLIN, POLLOUT, POLLIN | POLLOUT,
				     POLLIN | POLLRDHUP, POLLPRI,
				     POLLIN | POLLOUT | POLLPRI };
	struct pollfd p[4];
	unsigned n = 1 + rn(4);
	int how = sel ? 2 : (int)rn(with_ep ? 3 : 2), r;
	struct timespec ts = { 0, 0 };

	for (unsigned i = 0; i < n; i++) {
		p[i].fd = pick_fd(with_ep ? (chance(60) ? W_EP : W_ANY)
					  : W_NOTEP);
		if (!with_ep && ftype(p[i].fd) == T_EP)
			p[i].fd = -1;
		p[i].events = evs[rn(6)];
		p[i].revents = 0;
	}
	if (how == 2) {
		/* select over the same fds (readable, writable, except). */
		fd_set rs, ws, xs;
		struct timeval tv = { 0, 0 };
		int nfds = 0;

		FD_ZERO(&rs);
		FD_ZERO(&ws);
		FD_ZERO(&xs);
		begin("select(");
		for (unsigned i = 0; i < n; i++) {
			int fd = p[i].fd;

			/* A number the program does not hold, beyond the
			 * smallest fd table (64): the kernel ignores its bit
			 * when its table is smaller, and the preload's own
			 * fds make the table larger (uepoll-run(1), LIMITS):
			 * not a question a program can rely on. */
			if (fd < 0 || fd >= FD_SETSIZE ||
			    (fd >= 64 && ftype(fd) == T_NONE))
				continue;
			if (p[i].events & POLLIN)
				FD_SET(fd, &rs);
			if (p[i].events & POLLOUT)
				FD_SET(fd, &ws);
			if (p[i].events & POLLPRI)
				FD_SET(fd, &xs);
			if (fd >= nfds)
				nfds = fd + 1;
			put("%s%s:%x", i ? " " : "", fdn(fd), p[i].events);
		}
		put(")");
		errno = 0;
		r = chance(50) ? select(nfds, &rs, &ws, &xs, &tv)
			       : pselect(nfds, &rs, &ws, &xs, &ts, NULL);
		res(r, errno);
		if (r > 0)
			for (unsigned i = 0; i < n; i++) {
				int fd = p[i].fd;

				if (fd < 0 || fd >= FD_SETSIZE)
					continue;
				put(" %s:%s%s%s", fdn(fd),
				    FD_ISSET(fd, &rs) ? "r" : "",
				    FD_ISSET(fd, &ws) ? "w" : "",
				    FD_ISSET(fd, &xs) ? "x" : "");
			}
		{ flush_line(); return; }
	}
	begin("%spoll(", how ? "p" : "");
	for (unsigned i = 0; i < n; i++)
		put("%s%s:%x", i ? " " : "", fdn(p[i].fd), p[i].events);
	put(")");
	errno = 0;
	r = how ? ppoll(p, n, &ts, NULL) : poll(p, n, 0);
	res(r, errno);
	for (unsigned i = 0; r >= 0 && i < n; i++)
		put(" %x", p[i].revents);
	flush_line();
}

static void op_poll(void)
{
	poll_op(false, false);
}

static void op_select(void)
{
	poll_op(false, true);
}

/* poll, ppoll or select, epoll fds among the fds. */
static void op_poll_ep(void)
{
	poll_op(true, false);
}

static void op_sys_epoll(void)
{
	struct epoll_event ev[8];
	int ep = pick_fd(W_EP);
	long r;

	memset(ev, 0, sizeof(ev));
	if (chance(50)) {
		int fd = pick_fd(chance(80) ? W_NOTEP : W_EP);
		int op = 1 + (int)rn(3);

		ev[0].events = pick_events();
		ev[0].data.u64 = rnd() & 0xffffff;
		errno = 0;
		r = syscall(SYS_epoll_ctl, ep, op, fd, &ev[0]);
		begin("sys_epoll_ctl(%s, %d, %s, {0x%x, 0x%llx})", fdn(ep), op,
		      fdn(fd), ev[0].events,
		      (unsigned long long)ev[0].data.u64);
		res(r, errno);
		{ flush_line(); return; }
	}
	errno = 0;
	r = syscall(SYS_epoll_pwait, ep, ev, 8, 0, NULL, 8);
	begin("sys_epoll_pwait(%s, 8)", fdn(ep));
	res(r, errno);
	if (r > 0)
		print_events(ev, (int)r);
	flush_line();
}

static void op_sys_create(void)
{
	long r;
	int how = (int)rn(2);

	if (nheld() >= MAXH - 2)
		{ say("sys_create: table full"); return; }
	errno = 0;
	if (how == 0)
		r = syscall(SYS_eventfd2, rn(3), chance(50) ? EFD_NONBLOCK : 0);
	else
		r = syscall(SYS_epoll_create1, 0);
	begin("sys_create%d", how);
	res(r < 0 ? r : 0, errno);
	after_new(r, -1);
	flush_line();
}

static void op_stdio(void)
{
	int fd = pick_fd(W_EFD), own = fd, r;
	bool use_dup = chance(50);
	static const char *const modes[] = { "r+", "w", "r" };
	const char *m = modes[rn(3)];
	FILE *f;

	begin("fdopen(%s%s, %s)", use_dup ? "dup " : "", fdn(fd), m);
	/* stdio only on an eventfd, whose reads and writes are whole: fread
	 * of 8 bytes from a pipe or socket holding fewer would block for the
	 * rest. */
	if (ftype(fd) != T_EFD) {
		put(" not an eventfd");
		flush_line();
		return;
	}
	if (!use_dup && !may_close(fd)) {
		put(" kept");
		flush_line();
		return;
	}
	errno = 0;
	if (use_dup) {
		own = dup(fd);
		if (own < 0) {
			res(own, errno);
			{ flush_line(); return; }
		}
	}
	f = fdopen(own, m);
	if (!f) {
		res(-1, errno);
		if (use_dup)
			close(own);
		{ flush_line(); return; }
	}
	put(" ok");
	setvbuf(f, NULL, _IONBF, 0);
	for (unsigned k = 1 + rn(3); k; k--) {
		unsigned char b[8];
		size_t n;

		if (chance(50)) {
			uint64_t v = 1 + rn(3);

			if (!may_write(own, &v, 8)) {
				put("; fwrite notready");
				continue;
			}
			memcpy(b, &v, 8);
			errno = 0;
			n = fwrite(b, 8, 1, f);
			put("; fwrite(%llu) = %zu", (unsigned long long)v, n);
		} else {
			if (!may_read(own)) {
				put("; fread notready");
				continue;
			}
			memset(b, 0, 8);
			errno = 0;
			n = fread(b, 8, 1, f);
			put("; fread = %zu", n);
			if (n == 1)
				print_bytes(b, 8);
		}
		if (errno)
			put(" %s", ename(errno));
		put(" err=%d eof=%d", ferror(f), feof(f));
		clearerr(f);
	}
	errno = 0;
	r = fclose(f);
	put("; fclose");
	res(r, errno);
	if (!use_dup)
		slot_del(own);
	flush_line();
}

/* ---- processes ------------------------------------------------------ */

static void report_status(int st)
{
	if (WIFEXITED(st))
		put(" exit %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		put(" signal %d", WTERMSIG(st));
	else
		put(" status 0x%x", st);
}

static void reap(pid_t pid)
{
	int st = 0;

	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	begin("  reaped");
	report_status(st);
	flush_line();
}

static void run_op(enum kind k);

static void op_fork(void)
{
	static const enum kind child_ops[] = { K_rw, K_efdrw, K_wait, K_close,
					       K_dup2, K_ctl, K_poll,
					       K_eventfd };
	unsigned nops = 1 + rn(3);
	enum kind ks[3];
	uint64_t seeds[3];
	pid_t pid;

	for (unsigned i = 0; i < nops; i++) {
		ks[i] = child_ops[rn(8)];
		seeds[i] = rnd();
	}
	begin("fork %u", nops);
	flush_line();
	pid = fork();
	if (pid == 0) {
		prefix = "  child: ";
		for (unsigned i = 0; i < nops; i++) {
			rng = seeds[i];
			/* forkadd off: the child neither makes an object of
			 * its own nor adds anything to an inherited instance
			 * (F24). */
			if ((ks[i] == K_eventfd || ks[i] == K_ctl) &&
			    !on(K_forkadd))
				continue;
			if (on(ks[i]))
				run_op(ks[i]);
		}
		_exit(chance(50) ? 0 : 3);
	}
	if (pid < 0) {
		begin("fork failed %s", ename(errno));
		{ flush_line(); return; }
	}
	reap(pid);
}

/* The helper's argv: "pfuzz child FD...". */
static char argbuf[4][16];
static char *cargv[6];

static void child_args(int n, const int *fds)
{
	cargv[0] = self;
	cargv[1] = "child";
	for (int i = 0; i < n; i++) {
		snprintf(argbuf[i], sizeof(argbuf[i]), "%d", fds[i]);
		cargv[2 + i] = argbuf[i];
	}
	cargv[2 + n] = NULL;
}

/* 1 or 2 fds for the helper to read: eventfds mostly. */
static int pick_child_fds(int *fds)
{
	int n = 1 + (int)rn(2);

	for (int i = 0; i < n; i++)
		fds[i] = pick_fd(chance(80) ? W_EFD : W_RW);
	return n;
}

static void put_fds(int n, const int *fds)
{
	for (int i = 0; i < n; i++)
		put(" %s", fdn(fds[i]));
}

static void op_vfork(void)
{
	int fds[2], n = pick_child_fds(fds);
	bool ex = chance(70);
	int code = 3 + (int)rn(5);
	pid_t pid;

	child_args(n, fds);
	begin("vfork %s", ex ? "exec" : "_exit");
	if (ex)
		put_fds(n, fds);
	flush_line();
	pid = vfork();
	if (pid == 0) {
		if (ex)
			execv(self, cargv);
		_exit(code);
	}
	if (pid < 0) {
		begin("vfork failed %s", ename(errno));
		{ flush_line(); return; }
	}
	reap(pid);
}

static void op_exec(void)
{
	int fds[2], n = pick_child_fds(fds), how = (int)rn(4);
	pid_t pid;

	child_args(n, fds);
	begin("exec%d", how);
	put_fds(n, fds);
	flush_line();
	pid = fork();
	if (pid == 0) {
		switch (how) {
		case 0:
			execv(self, cargv);
			break;
		case 1:
			execve(self, cargv, environ);
			break;
		case 2:
			execvp(self, cargv);
			break;
		default:
			if (n == 1)
				execl(self, self, "child", cargv[2],
				      (char *)NULL);
			else
				execle(self, self, "child", cargv[2], cargv[3],
				       (char *)NULL, environ);
			break;
		}
		_exit(127);
	}
	if (pid < 0)
		return;
	reap(pid);
}

static void op_exec_sys(void)
{
	int fds[2], n = pick_child_fds(fds), how = (int)rn(2);
	pid_t pid;

	child_args(n, fds);
	begin("exec_sys%d", how);
	put_fds(n, fds);
	flush_line();
	pid = fork();
	if (pid == 0) {
		if (how == 0)
			syscall(SYS_execve, self, cargv, environ);
		else
			execveat(AT_FDCWD, self, cargv, environ, 0);
		_exit(127);
	}
	if (pid < 0)
		return;
	reap(pid);
}

/* A child that closes every fd but the one it hands over, then execs:
 * a loop of close(), or a dup2 to 3 and closefrom(4), or close_range
 * around the fd. */
static void op_exec_closeloop(void)
{
	int fd = pick_fd(W_EFD), how = (int)rn(3);
	pid_t pid;

	begin("exec_closeloop%d %s", how, fdn(fd));
	flush_line();
	pid = fork();
	if (pid == 0) {
		int keep = fd;

		if (how == 0) {
			for (int i = 3; i < 256; i++)
				if (i != keep)
					close(i);
		} else if (how == 1) {
			if (keep != 3 && keep >= 0) {
				if (dup2(keep, 3) < 0)
					_exit(120);
				keep = 3;
			}
			closefrom(4);
		} else if (keep >= 3) {
			if (keep > 3)
				close_range(3, (unsigned)keep - 1, 0);
			close_range((unsigned)keep + 1, ~0u, 0);
		}
		child_args(1, &keep);
		execv(self, cargv);
		_exit(127);
	}
	if (pid < 0)
		return;
	reap(pid);
}

static void spawn_op(bool dup2_action)
{
	posix_spawn_file_actions_t fa;
	int fds[2], n = pick_child_fds(fds), r;
	int act = dup2_action ? 2 : (int)rn(3) * 3 / 2; /* 0, 1, 3 */
	bool p = chance(30);
	pid_t pid = -1;

	posix_spawn_file_actions_init(&fa);
	begin("spawn%s", p ? "p" : "");
	if (act == 1) {
		/* The child's copy closed: it reports EBADF. */
		posix_spawn_file_actions_addclose(&fa, fds[0]);
		put(" close %s", fdn(fds[0]));
	} else if (act == 2 && fds[0] >= 0) {
		/* The fd moved to a fresh number (as inetd hands over). */
		int to = 3 + (int)rn(8);

		posix_spawn_file_actions_adddup2(&fa, fds[0], to);
		put(" dup2 %s->%d", fdn(fds[0]), to);
		put_fds(n, fds);
		fds[0] = to;
	} else if (act == 3) {
		posix_spawn_file_actions_addclosefrom_np(&fa, 3);
		put(" closefrom 3");
	}
	if (act != 2)
		put_fds(n, fds);
	child_args(n, fds);
	flush_line();
	r = p ? posix_spawnp(&pid, self, &fa, NULL, cargv, environ)
	      : posix_spawn(&pid, self, &fa, NULL, cargv, environ);
	posix_spawn_file_actions_destroy(&fa);
	/* Printed after the child's lines, whenever it ran. */
	if (r == 0)
		reap(pid);
	begin("  spawn = %s", r ? ename(r) : "0");
	flush_line();
}

static void op_spawn(void)
{
	spawn_op(false);
}

/* posix_spawn with a dup2 file action. */
static void op_spawn_dup2(void)
{
	spawn_op(true);
}

/* The helper: what an exec'd program finds at each fd. */
static int child_main(int argc, char **argv)
{
	prefix = "  exec: ";
	for (int i = 2; i < argc; i++) {
		int fd = atoi(argv[i]), fdfl, fl;
		enum ftype t = ftype(fd);
		unsigned char b[8];

		fdfl = fcntl(fd, F_GETFD);
		begin("fd#%d %s", i - 2, tname[t]);
		if (fdfl < 0) {
			put(" %s", ename(errno));
			flush_line();
			continue;
		}
		fl = fcntl(fd, F_GETFL);
		put(" fd=%d fl=0x%x", fdfl, fl);
		/* An epoll inherited through a fork then an exec is the
		 * parent's, the library's doorbell in it (FORKED in
		 * src/port.c; uepoll-run(1), LIMITS): its readiness here is
		 * not a question the program can rely on. */
		if (t != T_EP)
			put(" rev=%x", revents_of(fd, POLLIN | POLLOUT));
		if (t == T_EFD || t == T_PIPE || t == T_SOCK) {
			if (may_read(fd)) {
				long r;

				memset(b, 0, sizeof(b));
				errno = 0;
				r = read(fd, b, 8);
				put(" read");
				res(r, errno);
				print_bytes(b, r);
			} else {
				put(" notready");
			}
		}
		flush_line();
	}
	return 0;
}

/* ---- signals -------------------------------------------------------- */

static struct {
	int action, fd, fd2;
	bool ready;
	long r;
	int e;
	uint64_t v;
} sig;

static void on_usr1(int signo)
{
	int e = errno;
	uint64_t v = 1;

	(void)signo;
	errno = 0;
	switch (sig.action) {
	case 0:
		sig.r = write(sig.fd, &v, 8);
		break;
	case 1:
		sig.v = 0;
		sig.r = sig.ready ? read(sig.fd, &sig.v, 8) : -2;
		break;
	case 2:
		sig.r = close(sig.fd);
		break;
	case 3:
		sig.r = dup2(sig.fd, sig.fd2);
		break;
	case 4:
		/* 1, the most op_signal's may_write can promise room for in
		 * a blocking eventfd (a 2 blocked the handler for ever, at
		 * seeds 890005965 and 890011396, natively too). */
		sig.r = eventfd_write(sig.fd, 1);
		break;
	default:
		sig.r = dup(sig.fd);
		break;
	}
	sig.e = errno;
	errno = e;
}

static void op_signal(void)
{
	static const char *const an[] = { "write", "read", "close", "dup2",
					   "eventfd_write", "dup" };
	struct sigaction sa;
	uint64_t one = 1;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = chance(50) ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sig.action = (int)rn(6);
	sig.fd = pick_fd(chance(80) ? W_EFD : W_ANY);
	sig.fd2 = pick_target(sig.fd);
	sig.ready = sig.action == 1 ? may_read(sig.fd) : true;
	if (sig.action == 0 || sig.action == 4)
		sig.ready = may_write(sig.fd, &one, 8) && one == 1;
	begin("signal %s(%s", an[sig.action], fdn(sig.fd));
	if (sig.action == 3)
		put(", %s", fdn(sig.fd2));
	put(")");
	if ((sig.action == 2 && !may_close(sig.fd)) ||
	    (sig.action == 3 && sig.fd2 != sig.fd && !may_close(sig.fd2))) {
		put(" kept");
		flush_line();
		return;
	}
	if (!sig.ready) {
		put(" notready");
		{ flush_line(); return; }
	}
	sig.r = -3;
	raise(SIGUSR1);
	res(sig.action == 5 || sig.action == 3 ? (sig.r < 0 ? sig.r : 0)
					       : sig.r,
	    sig.e);
	if (sig.action == 1)
		print_bytes((unsigned char *)&sig.v, sig.r);
	if (sig.action == 2 && sig.r == 0)
		slot_del(sig.fd);
	if (sig.action == 3 && sig.r >= 0 && sig.fd2 != sig.fd)
		slot_add_from(sig.fd2, sig.fd);
	if (sig.action == 5 && sig.r >= 0)
		after_new(sig.r, sig.fd);
	flush_line();
}

/* ---- RLIMIT_NOFILE -------------------------------------------------- */

static void op_rlimit(void)
{
	struct rlimit rl;
	unsigned n = 1 + rn(3);
	int soft = 4 + (int)rn(60), r;

	if (on(K_topfd) && chance(20))
		soft = lim - (int)rn(3);
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = (rlim_t)soft;
	errno = 0;
	r = setrlimit(RLIMIT_NOFILE, &rl);
	begin("rlimit %d", soft);
	res(r, errno);
	flush_line();
	for (unsigned i = 0; i < n; i++) {
		static const enum kind ks[] = { K_eventfd, K_epoll_create,
						K_dup, K_pipe, K_dupfd,
						K_dup2 };
		enum kind k = ks[rn(6)];

		if (on(k))
			run_op(k);
	}
	rl.rlim_cur = (rlim_t)lim;
	setrlimit(RLIMIT_NOFILE, &rl);
}

/* ---- the sequence --------------------------------------------------- */

static void run_op(enum kind k)
{
	switch (k) {
#define OP(n)                                                                \
	case K_##n:                                                          \
		op_##n();                                                    \
		break;
		OP(eventfd) OP(epoll_create) OP(pipe) OP(socketpair) OP(ctl)
		OP(ctl_nest) OP(evbits) OP(wait) OP(rw) OP(rwsize) OP(rwv) OP(rwvsize)
		OP(prw) OP(prw2) OP(efdrw) OP(blockread) OP(close) OP(dup) OP(dup2) OP(dup3)
		OP(fcntl) OP(dupfd) OP(ioctl_nbio) OP(ioctl_nread)
		OP(close_range) OP(closefrom) OP(close_all) OP(poll) OP(select) OP(poll_ep)
		OP(sys_close) OP(sys_dup) OP(sys_dup3) OP(sys_fcntl) OP(sys_setfl) OP(sys_dupfd)
		OP(sys_rw) OP(sys_epoll) OP(sys_create) OP(stdio) OP(fork)
		OP(vfork) OP(exec) OP(exec_sys) OP(exec_closeloop) OP(spawn) OP(spawn_dup2)
		OP(signal) OP(rlimit)
#undef OP
	default:
		break;
	}
}

/* The end: what every held fd is, its flags and readiness, and an
 * eventfd's or a pipe's content. */
static void dump(void)
{
	for (int i = 0; i < MAXH; i++) {
		int fd = held[i];
		enum ftype t;

		if (fd < 0)
			continue;
		t = ftype(fd);
		begin("end %s %s fd=%d fl=0x%x", fdn(fd), tname[t],
		      fcntl(fd, F_GETFD), fcntl(fd, F_GETFL));
		/* An epoll fd's readiness only with poll_ep on. */
		if (t != T_EP || on(K_poll_ep))
			put(" rev=%x", revents_of(fd, POLLIN | POLLOUT));
		if ((t == T_EFD || t == T_PIPE || t == T_SOCK) && may_read(fd)) {
			unsigned char b[8];
			long r;
			int e;

			memset(b, 0, sizeof(b));
			r = do_read(IO_PLAIN, fd, b, 8, &e);
			put(" read");
			res(r, e);
			print_bytes(b, r);
		}
		flush_line();
	}
}

static void parse_list(const char *s, bool *mark, int n, bool kinds)
{
	char buf[4096], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, ", ", &save); t;
	     t = strtok_r(NULL, ", ", &save)) {
		bool found = false;

		if (!strcmp(t, "-"))
			continue;
		if (kinds) {
			for (int k = 0; k < K_N; k++)
				if (!strcmp(t, kind_name[k]))
					mark[k] = found = true;
		} else {
			long v = strtol(t, NULL, 10);

			if (v >= 0 && v < n)
				mark[v] = found = true;
		}
		if (!found) {
			fprintf(stderr, "pfuzz: unknown %s '%s'\n",
				kinds ? "kind" : "step", t);
			exit(2);
		}
	}
}

int main(int argc, char **argv)
{
	uint64_t seed;
	long steps;
	bool *skip;
	unsigned total = 0;
	struct rlimit rl;
	const char *env;
	ssize_t n;

	if (argc >= 2 && !strcmp(argv[1], "child"))
		return child_main(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "kinds")) {
		for (int k = 0; k < K_N; k++)
			printf("%s\n", kind_name[k]);
		return 0;
	}
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: pfuzz SEED STEPS [OFF|- [SKIP|-]]\n"
				"       pfuzz kinds\n"
				"       pfuzz child FD...\n");
		return 2;
	}
	seed = strtoull(argv[1], NULL, 0);
	steps = strtol(argv[2], NULL, 0);
	if (steps < 0 || steps > 1000000)
		return 2;
	skip = calloc((size_t)steps + 1, 1);
	if (!skip)
		return 2;
	if (argc >= 4)
		parse_list(argv[3], kind_off, K_N, true);
	debug_numbers = getenv("PFUZZ_DEBUG") != NULL;
	if ((env = getenv("PFUZZ_OFF")))
		parse_list(env, kind_off, K_N, true);
	if (argc >= 5)
		parse_list(argv[4], skip, (int)steps, false);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return 2;
	self[n] = 0;

	/* The same start whatever the environment: no fd above 2, the same
	 * limit, no SIGPIPE, a watchdog. */
	closefrom(3);
	signal(SIGPIPE, SIG_IGN);
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_max < (rlim_t)lim)
		lim = (int)rl.rlim_max;
	rl.rlim_cur = (rlim_t)lim;
	setrlimit(RLIMIT_NOFILE, &rl);
	alarm((env = getenv("PFUZZ_ALARM")) ? (unsigned)atoi(env) : 10);
	for (int i = 0; i < MAXH; i++)
		held[i] = -1;

	for (int k = 0; k < K_N; k++)
		total += kind_weight[k];
	for (long s = 0; s < steps; s++) {
		unsigned w;
		int k;

		rng = seed * 0x2545f4914f6cdd1dull + (uint64_t)s * 0x9e3779b97f4a7c15ull;
		(void)rnd();
		w = rn(total);
		for (k = 0; k < K_N; k++) {
			if (w < kind_weight[k])
				break;
			w -= kind_weight[k];
		}
		/* The first steps mostly make fds (then most calls have
		 * something to act on); by the step, not by what is held, so
		 * that a step skipped leaves the others' kinds alone. */
		if (s < 8 && chance(60)) {
			static const enum kind mk[] = { K_eventfd, K_eventfd,
							K_epoll_create,
							K_pipe, K_socketpair };

			k = (int)mk[rn(5)];
		}
		if (skip[s] || kind_off[k])
			continue;
		prefix = "";
		dropped = -1;
		begin("s%ld %s", s, kind_name[k]);
		flush_line();
		run_op((enum kind)k);
	}
	prefix = "";
	dump();
	begin("done");
	flush_line();
	free(skip);
	return 0;
}
