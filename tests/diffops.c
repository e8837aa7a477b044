/*
 * diffops.c - the differential op model shared by t_differential (choices
 * from a seeded PRNG) and the fuzz target tests/fuzz/fuzz_diff.c (choices
 * from the fuzzer's input bytes): random operation sequences run on two
 * worlds side by side, the kernel's (epoll_*, eventfd, read, write, close)
 * and uepoll's (uepoll_*, ueventfd, uepoll_read/write/close), comparing every
 * return value, errno and returned event.
 *
 * Objects live in a table indexed the same way in both worlds; fd numbers
 * differ between the worlds and are never compared.  Event data carries the
 * object's index, so events can be matched across worlds.
 *
 * Ordering rules: events from ueventfds come back in the kernel's ready-list
 * order, so an instance that only ever held ueventfds and was never nested
 * is compared exactly, with any maxevents.  Once an instance holds a kernel
 * fd (pipe, other instance) or has itself been put into another instance,
 * the relative order of its events may legitimately differ; such an instance
 * is waited on with maxevents >= its number of registered items (so no
 * choice of what to return is involved) and results are compared as sets.
 *
 * Both worlds share this process's fd space, so a closed fd number of one
 * world may be reused by the other: stale numbers are only used while they
 * are closed in both worlds, else a number that is certainly closed.
 *
 * Objects are always closed with uepoll_close() (a plain close() of a
 * uepoll object is a documented difference, uepoll.h), and blocking reads
 * and writes the model knows would block are skipped: everything compared
 * is documented to behave as the kernel does.
 */
#include "diffops.h"

#include <stdbool.h>

#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <unistd.h>

#define NOBJ 12
#define MAXEV 64
#define EFD_MAX 0xfffffffffffffffeULL

enum kind { K_NONE, K_EFD, K_PIPE, K_INST };

/*
 * Flags in event data: the target is an instance, watched level-triggered.
 * Events of nested instances are compared exactly like all others: an
 * instance held by another uepoll instance keeps its fd exact (port.c).
 */
#define D_INST (1ull << 16)
#define D_LT (1ull << 17)

struct obj {
	enum kind kind;
	int kfd[2], ufd[2];	/* [0] the object / pipe read end, [1] pipe write end */
	int kstale, ustale;	/* numbers it had before it was closed */
	/* model state, updated from the kernel world's results */
	uint64_t count;		/* eventfd counter */
	int efd_flags;
	int setmode;		/* instance: compare as sets (see top) */
	int tainted;		/* instance: may see extra nested edges */
};

static struct obj objs[NOBJ];
/* reg[i][2*j+end]: object j's end is registered in instance i */
static unsigned char reg[NOBJ][2 * NOBJ];

/* Where choices come from: a PRNG, or the fuzzer's input bytes. */
static uint64_t rng;
static const uint8_t *src_bytes;
static size_t src_len;
static bool src_is_bytes, src_done;

int diff_nop;
#define nop diff_nop

/* Op log of the current sequence. */
char diff_logbuf[1 << 16];
size_t diff_loglen;
#define logbuf diff_logbuf
#define loglen diff_loglen

struct diff_stats diff_stats;
const char *const diff_cov_names[DC_N] = {
	[DC_CREATE_EFD] = "eventfd created",
	[DC_CREATE_EFD_ERR] = "eventfd refused",
	[DC_CREATE_INST] = "instance created",
	[DC_CREATE_INST_ERR] = "instance refused",
	[DC_CREATE_PIPE] = "pipe created",
	[DC_CTL_ADD] = "ctl ADD ok",
	[DC_CTL_MOD] = "ctl MOD ok",
	[DC_CTL_DEL] = "ctl DEL ok",
	[DC_CTL_ADD_INST] = "ctl ADD of an instance ok",
	[DC_CTL_EBADF] = "ctl EBADF",
	[DC_CTL_EINVAL] = "ctl EINVAL",
	[DC_CTL_EEXIST] = "ctl EEXIST",
	[DC_CTL_ENOENT] = "ctl ENOENT",
	[DC_CTL_ELOOP] = "ctl ELOOP",
	[DC_CTL_EFAULT] = "ctl EFAULT",
	[DC_WRITE_OK] = "eventfd write ok",
	[DC_WRITE_EAGAIN] = "eventfd write EAGAIN",
	[DC_WRITE_EINVAL] = "eventfd write EINVAL",
	[DC_READ_OK] = "eventfd read ok",
	[DC_READ_EAGAIN] = "eventfd read EAGAIN",
	[DC_READ_EINVAL] = "eventfd read EINVAL",
	[DC_PIPE_WRITE] = "pipe write",
	[DC_PIPE_READ_OK] = "pipe read ok",
	[DC_PIPE_READ_EAGAIN] = "pipe read EAGAIN",
	[DC_WAIT_EVENTS] = "waits with events",
	[DC_WAIT_NONE] = "waits with none",
	[DC_WAIT_ERR] = "waits failed",
	[DC_WAIT_EXACT] = "waits compared in order",
	[DC_WAIT_SETS] = "waits compared as sets",
	[DC_EV_EFD] = "eventfd events",
	[DC_EV_PIPE] = "pipe events",
	[DC_EV_INST] = "nested instance events",
	[DC_EV_OUT] = "EPOLLOUT events",
	[DC_EV_HUP] = "EPOLLHUP/EPOLLERR events",
	[DC_CLOSE] = "closes mid-sequence",
};
#define cov(c) (diff_stats.cov[c]++)
void (*diff_on_mismatch)(const char *what);

void diff_use_prng(uint64_t state)
{
	rng = state ? state : 1;
	t_rand(&rng);
	src_is_bytes = false;
	src_done = false;
}

void diff_use_bytes(const uint8_t *data, size_t len)
{
	src_bytes = data;
	src_len = len;
	src_is_bytes = true;
	src_done = len == 0;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (loglen >= sizeof(logbuf) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(logbuf + loglen, sizeof(logbuf) - loglen, fmt, ap);
	va_end(ap);
	if (n > 0)
		loglen += (size_t)n;
	if (loglen >= sizeof(logbuf))
		loglen = sizeof(logbuf) - 1;
}

/*
 * A choice among n.  From bytes: one byte for n <= 256, two above (every
 * n used here is below 65536), so that a mutation of one byte changes one
 * choice; once the input is used up every choice is 0 and the sequence
 * ends at the next op boundary.
 */
static uint32_t rnd(uint32_t n)
{
	uint32_t v = 0;

	if (!n)
		return 0;
	if (!src_is_bytes)
		return (uint32_t)(t_rand(&rng) % n);
	for (uint32_t need = n > 256 ? 2 : 1; need; need--) {
		if (!src_len) {
			src_done = true;
			return 0;
		}
		v = v << 8 | *src_bytes++;
		src_len--;
	}
	return v % n;
}

static int chance(int pct)
{
	return (int)rnd(100) < pct;
}

#define st_ctl_ok diff_stats.ctl_ok
#define st_ctl_err diff_stats.ctl_err
#define st_events diff_stats.events
#define st_wait_sets diff_stats.wait_sets
static int mismatch;

static void fail(const char *what)
{
	mismatch = 1;
	diff_stats.mismatches++;
	if (diff_on_mismatch)
		diff_on_mismatch(what);
}

/* Compare a result pair; returns 1 if equal. */
static int same(const char *op, long rk, int ek, long ru, int eu)
{
	char msg[256];

	logf_(" -> k %ld/%d u %ld/%d\n", rk, rk < 0 ? ek : 0, ru,
	      ru < 0 ? eu : 0);
	if (rk == ru && (rk >= 0 || ek == eu))
		return 1;
	snprintf(msg, sizeof(msg), "%s: kernel %ld errno %d (%s), uepoll %ld errno %d (%s)",
		 op, rk, ek, strerror(ek), ru, eu, strerror(eu));
	fail(msg);
	return 0;
}

/* Same for calls that return a new fd: only success/failure is compared. */
static int same_fd(const char *op, int rk, int ek, int ru, int eu)
{
	return same(op, rk < 0 ? -1 : 0, ek, ru < 0 ? -1 : 0, eu);
}

static int fd_closed(int fd)
{
	return fcntl(fd, F_GETFD) == -1 && errno == EBADF;
}

static int free_slot(void)
{
	int start = (int)rnd(NOBJ);

	for (int i = 0; i < NOBJ; i++) {
		int j = (start + i) % NOBJ;

		if (objs[j].kind == K_NONE)
			return j;
	}
	return -1;
}

static int pick(enum kind k)
{
	int cand[NOBJ], n = 0;

	for (int i = 0; i < NOBJ; i++)
		if (objs[i].kind == k)
			cand[n++] = i;
	return n ? cand[rnd((uint32_t)n)] : -1;
}

/* A reference to some fd, same object in both worlds. */
struct ref {
	int kfd, ufd;
	int obj, end;	/* obj -1: not a live object */
	char desc[32];
};

static struct ref pick_ref(void)
{
	struct ref r = { -1, -1, -1, 0, "" };
	int i, roll = (int)rnd(100);

	if (roll < 88) {
		/* mostly a live object; sometimes a slot that may be dead */
		i = (int)rnd(NOBJ);
		if (roll < 75) {
			int live[NOBJ], n = 0;

			for (int k = 0; k < NOBJ; k++)
				if (objs[k].kind != K_NONE)
					live[n++] = k;
			if (n)
				i = live[rnd((uint32_t)n)];
		}
		if (objs[i].kind != K_NONE) {
			r.obj = i;
			if (objs[i].kind == K_PIPE) {
				r.end = chance(70) ? 0 : 1;
				if (objs[i].kfd[r.end] < 0)
					r.end ^= 1;
			}
			r.kfd = objs[i].kfd[r.end];
			r.ufd = objs[i].ufd[r.end];
			snprintf(r.desc, sizeof(r.desc), "obj%d%s", i,
				 objs[i].kind == K_PIPE ? (r.end ? ".w" : ".r") : "");
			return r;
		}
		/* a slot that was closed: use its stale numbers if still free */
		if (objs[i].kstale >= 0 && fd_closed(objs[i].kstale) &&
		    fd_closed(objs[i].ustale)) {
			r.kfd = objs[i].kstale;
			r.ufd = objs[i].ustale;
			snprintf(r.desc, sizeof(r.desc), "stale%d", i);
			return r;
		}
	}
	if (roll < 93) {
		r.kfd = r.ufd = -1;
	} else if (roll < 97) {
		r.kfd = r.ufd = 4000;
	} else {
		r.kfd = r.ufd = 1 << 20;
	}
	snprintf(r.desc, sizeof(r.desc), "fd%d", r.kfd);
	return r;
}

static int nreg(int inst)
{
	int n = 0;

	for (int j = 0; j < 2 * NOBJ; j++)
		n += reg[inst][j];
	return n;
}

/* Forget an object: unregister it everywhere and its own registrations. */
static void forget(int i, int end_only, int end)
{
	for (int k = 0; k < NOBJ; k++) {
		if (!end_only || end == 0)
			reg[k][2 * i] = 0;
		if (!end_only || end == 1)
			reg[k][2 * i + 1] = 0;
	}
	if (!end_only)
		memset(reg[i], 0, sizeof(reg[i]));
}

/* ---- operations ---- */

/*
 * A create op's results in both worlds: they must agree; a new object takes
 * slot i.  False when there is no object to keep (an error, or a mismatch,
 * whose stray fds are closed).
 */
static bool adopt(int i, enum kind kind, const char *what, int fk, int ek,
		  int fu, int eu)
{
	if (!same_fd(what, fk, ek, fu, eu)) {
		if (fk >= 0)
			close(fk);
		if (fu >= 0)
			uepoll_close(fu);
		return false;
	}
	if (fk < 0)
		return false;
	memset(&objs[i], 0, sizeof(objs[i]));
	objs[i].kind = kind;
	objs[i].kfd[0] = fk;
	objs[i].ufd[0] = fu;
	objs[i].kfd[1] = objs[i].ufd[1] = -1;
	return true;
}

static void op_create_efd(void)
{
	static const unsigned int inits[] = { 0, 0, 1, 3, 0xffffffffu };
	int i = free_slot(), fk, fu, ek, eu, flags;
	unsigned int init = inits[rnd(5)];

	if (i < 0)
		return;
	flags = (chance(85) ? EFD_NONBLOCK : 0) |
		(chance(30) ? EFD_SEMAPHORE : 0) |
		(chance(20) ? EFD_CLOEXEC : 0);
	if (chance(3))
		flags |= 0x4; /* invalid */
	logf_("eventfd(%u, %#x) slot %d", init, flags, i);
	errno = 0;
	fk = eventfd(init, flags);
	ek = errno;
	errno = 0;
	fu = ueventfd(init, flags);
	eu = errno;
	if (!adopt(i, K_EFD, "eventfd", fk, ek, fu, eu)) {
		if (fk < 0 && fu < 0)
			cov(DC_CREATE_EFD_ERR);
		return;
	}
	cov(DC_CREATE_EFD);
	objs[i].count = init;
	objs[i].efd_flags = flags;
	forget(i, 0, 0);
}

static void op_create_inst(void)
{
	static const int sizes[] = { 1, 1, 64, 0, -1 };
	int i = free_slot(), fk, fu, ek, eu, flags;

	if (i < 0)
		return;
	if (chance(15)) {
		/* epoll_create(size): size <= 0 is EINVAL */
		int size = sizes[rnd(5)];

		logf_("epoll_create(%d) slot %d", size, i);
		errno = 0;
		fk = epoll_create(size);
		ek = errno;
		errno = 0;
		fu = uepoll_create(size);
		eu = errno;
		if (adopt(i, K_INST, "create", fk, ek, fu, eu)) {
			cov(DC_CREATE_INST);
			forget(i, 0, 0);
		} else if (fk < 0 && fu < 0) {
			cov(DC_CREATE_INST_ERR);
		}
		return;
	}
	flags = chance(30) ? EPOLL_CLOEXEC : 0;
	if (chance(3))
		flags = chance(50) ? 1 : (int)(rnd(256) << 8);
	logf_("epoll_create1(%#x) slot %d", flags, i);
	errno = 0;
	fk = epoll_create1(flags);
	ek = errno;
	errno = 0;
	fu = uepoll_create1(flags);
	eu = errno;
	if (!adopt(i, K_INST, "create1", fk, ek, fu, eu)) {
		if (fk < 0 && fu < 0)
			cov(DC_CREATE_INST_ERR);
		return;
	}
	cov(DC_CREATE_INST);
	forget(i, 0, 0);
}

static void op_create_pipe(void)
{
	int i = free_slot(), kp[2], up[2];

	if (i < 0)
		return;
	logf_("pipe slot %d\n", i);
	REQUIRE(pipe2(kp, O_NONBLOCK) == 0);
	REQUIRE(pipe2(up, O_NONBLOCK) == 0);
	memset(&objs[i], 0, sizeof(objs[i]));
	objs[i].kind = K_PIPE;
	objs[i].kfd[0] = kp[0];
	objs[i].kfd[1] = kp[1];
	objs[i].ufd[0] = up[0];
	objs[i].ufd[1] = up[1];
	cov(DC_CREATE_PIPE);
	forget(i, 0, 0);
}

static uint32_t rand_events(void)
{
	static const uint32_t bits[] = {
		EPOLLIN, EPOLLOUT, EPOLLPRI, EPOLLRDHUP, EPOLLET, EPOLLONESHOT,
		EPOLLEXCLUSIVE, EPOLLERR, EPOLLHUP, EPOLLRDNORM, EPOLLWRNORM,
	};
	static const int pct[] = { 75, 30, 5, 8, 30, 20, 10, 5, 5, 5, 5 };
	uint32_t ev = 0;

	for (size_t b = 0; b < sizeof(bits) / sizeof(bits[0]); b++)
		if (chance(pct[b]))
			ev |= bits[b];
	if (chance(2))
		ev |= 0x00f00000u; /* unknown bits */
	if (chance(2))
		ev = 0;
	return ev;
}

/*
 * A MOD in instance i may give its edge-triggered holders the documented
 * extra edge (extra_edges_ok), which then makes them ready for their own
 * holders: mark every instance that holds i, directly or not.
 */
static void taint_holders(int i)
{
	int todo[NOBJ], n = 0;
	bool seen[NOBJ] = { false };

	todo[n++] = i;
	seen[i] = true;
	while (n) {
		int x = todo[--n];

		for (int k = 0; k < NOBJ; k++) {
			if (objs[k].kind != K_INST || !reg[k][2 * x] || seen[k])
				continue;
			seen[k] = true;
			objs[k].tainted = 1;
			todo[n++] = k;
		}
	}
}

static void op_ctl(void)
{
	struct epoll_event kev, uev, *kp = &kev, *up = &uev;
	int ep = pick(K_INST), op, rk, ru, ek, eu, kepfd, uepfd;
	struct ref t;
	int roll = (int)rnd(100);
	char desc[32];

	if (chance(5) || ep < 0) {
		/* epfd that is no instance, or itself */
		struct ref e = pick_ref();

		kepfd = e.kfd;
		uepfd = e.ufd;
		ep = e.obj >= 0 && objs[e.obj].kind == K_INST ? e.obj : -1;
		snprintf(desc, sizeof(desc), "%s", e.desc);
	} else {
		kepfd = objs[ep].kfd[0];
		uepfd = objs[ep].ufd[0];
		snprintf(desc, sizeof(desc), "obj%d", ep);
	}
	op = roll < 50 ? EPOLL_CTL_ADD : roll < 75 ? EPOLL_CTL_MOD :
	     roll < 97 ? EPOLL_CTL_DEL : (int)rnd(6) - 1;
	/* Run under libuepoll-preload.so (preload_differential), the kernel
	 * side's op 4 is the min-wait proposal's EPOLL_CTL_MIN_WAIT
	 * (preload/wrap_epoll.c): another invalid op there. */
	if (op == 4 && getenv("UEPOLL_DIFF_PRELOADED"))
		op = 5;
	if (ep >= 0 && chance(3)) {
		t.kfd = kepfd;
		t.ufd = uepfd;
		t.obj = ep;
		t.end = 0;
		snprintf(t.desc, sizeof(t.desc), "self");
	} else {
		t = pick_ref();
	}
	memset(&kev, 0, sizeof(kev));
	kev.events = rand_events();
	kev.data.u64 = ((uint64_t)rnd(1000) << 32) |
		       (uint64_t)(t.obj >= 0 ? t.obj * 2 + t.end : 255);
	/* mark instance targets, and whether this registration is plain LT */
	if (t.obj >= 0 && objs[t.obj].kind == K_INST) {
		kev.data.u64 |= D_INST;
		if (!(kev.events & (EPOLLET | EPOLLONESHOT)))
			kev.data.u64 |= D_LT;
	}
	uev = kev;
	if (op == EPOLL_CTL_DEL && chance(50))
		kp = up = NULL;
	else if (chance(2))
		kp = up = NULL;
	logf_("ctl(%s, %d, %s, %s{%#x, %#llx})", desc, op, t.desc,
	      kp ? "" : "NULL ", kev.events,
	      (unsigned long long)kev.data.u64);
	errno = 0;
	rk = epoll_ctl(kepfd, op, t.kfd, kp);
	ek = errno;
	errno = 0;
	ru = uepoll_ctl(uepfd, op, t.ufd, up);
	eu = errno;
	if (rk == 0)
		st_ctl_ok++;
	else
		st_ctl_err++;
	if (!same("ctl", rk, ek, ru, eu))
		return;
	if (rk == 0) {
		cov(op == EPOLL_CTL_ADD ? DC_CTL_ADD :
		    op == EPOLL_CTL_MOD ? DC_CTL_MOD : DC_CTL_DEL);
		if (op == EPOLL_CTL_ADD && t.obj >= 0 &&
		    objs[t.obj].kind == K_INST)
			cov(DC_CTL_ADD_INST);
	} else {
		static const int errs[] = { EBADF, EINVAL, EEXIST, ENOENT,
					    ELOOP, EFAULT };
		static const enum diff_cov covs[] = {
			DC_CTL_EBADF, DC_CTL_EINVAL, DC_CTL_EEXIST,
			DC_CTL_ENOENT, DC_CTL_ELOOP, DC_CTL_EFAULT,
		};

		for (size_t e = 0; e < sizeof(errs) / sizeof(errs[0]); e++)
			if (ek == errs[e])
				cov(covs[e]);
	}
	if (rk < 0 || ep < 0 || t.obj < 0)
		return;
	if (op == EPOLL_CTL_MOD)
		taint_holders(ep);
	if (op == EPOLL_CTL_ADD) {
		reg[ep][2 * t.obj + t.end] = 1;
		if (objs[t.obj].kind != K_EFD)
			objs[ep].setmode = 1;
		if (objs[t.obj].kind == K_INST)
			objs[t.obj].setmode = 1;
	} else if (op == EPOLL_CTL_DEL) {
		reg[ep][2 * t.obj + t.end] = 0;
	}
}

static void op_write_efd(void)
{
	static const uint64_t vals[] = { 0, 1, 1, 2, 7, 1000, EFD_MAX,
					 EFD_MAX - 1, 0xffffffffffffffffULL,
					 0x8000000000000000ULL };
	int i = pick(K_EFD), ek, eu;
	uint64_t v = vals[rnd(10)], buf[2];
	size_t len = chance(95) ? 8 : chance(50) ? 4 : 16;
	ssize_t rk, ru;

	if (i < 0)
		return;
	/* a blocking eventfd would block: skip (the model knows) */
	if (!(objs[i].efd_flags & EFD_NONBLOCK) && len >= 8 &&
	    v != 0xffffffffffffffffULL && v > EFD_MAX - objs[i].count)
		return;
	logf_("write(obj%d, %#llx, %zu)", i, (unsigned long long)v, len);
	buf[0] = v;
	buf[1] = 0;
	errno = 0;
	rk = write(objs[i].kfd[0], buf, len);
	ek = errno;
	errno = 0;
	ru = uepoll_write(objs[i].ufd[0], buf, len);
	eu = errno;
	if (same("write", rk, ek, ru, eu))
		cov(rk >= 0 ? DC_WRITE_OK : ek == EAGAIN ? DC_WRITE_EAGAIN :
		    DC_WRITE_EINVAL);
	if (rk == 8)
		objs[i].count += v;
}

static void op_read_efd(void)
{
	int i = pick(K_EFD), ek, eu;
	size_t len = chance(95) ? 8 : chance(50) ? 4 : 16;
	uint64_t kb[2] = { 0, 0 }, ub[2] = { 0, 0 };
	ssize_t rk, ru;

	if (i < 0)
		return;
	if (!(objs[i].efd_flags & EFD_NONBLOCK) && len >= 8 &&
	    objs[i].count == 0)
		return;
	logf_("read(obj%d, %zu)", i, len);
	errno = 0;
	rk = read(objs[i].kfd[0], kb, len);
	ek = errno;
	errno = 0;
	ru = uepoll_read(objs[i].ufd[0], ub, len);
	eu = errno;
	if (same("read", rk, ek, ru, eu))
		cov(rk >= 0 ? DC_READ_OK : ek == EAGAIN ? DC_READ_EAGAIN :
		    DC_READ_EINVAL);
	if (rk == ru && rk == 8 && kb[0] != ub[0]) {
		char msg[96];

		snprintf(msg, sizeof(msg), "read value: kernel %#llx uepoll %#llx",
			 (unsigned long long)kb[0], (unsigned long long)ub[0]);
		fail(msg);
	}
	if (rk == 8)
		objs[i].count = (objs[i].efd_flags & EFD_SEMAPHORE) ?
				objs[i].count - 1 : 0;
}

static void op_pipe_io(void)
{
	int i = pick(K_PIPE), ek, eu;
	char buf[64];
	ssize_t rk, ru;

	if (i < 0)
		return;
	if (chance(55)) {
		if (objs[i].kfd[1] < 0)
			return;
		logf_("pipe write obj%d", i);
		errno = 0;
		rk = write(objs[i].kfd[1], "x", 1);
		ek = errno;
		errno = 0;
		ru = uepoll_write(objs[i].ufd[1], "x", 1);
		eu = errno;
		if (same("pipe io", rk, ek, ru, eu) && rk == 1)
			cov(DC_PIPE_WRITE);
		return;
	} else {
		if (objs[i].kfd[0] < 0)
			return;
		logf_("pipe read obj%d", i);
		errno = 0;
		rk = read(objs[i].kfd[0], buf, sizeof(buf));
		ek = errno;
		errno = 0;
		ru = uepoll_read(objs[i].ufd[0], buf, sizeof(buf));
		eu = errno;
	}
	if (same("pipe io", rk, ek, ru, eu) && (rk > 0 || ek == EAGAIN))
		cov(rk > 0 ? DC_PIPE_READ_OK : DC_PIPE_READ_EAGAIN);
}

static void dump_events(const char *who, struct epoll_event *ev, int n)
{
	logf_("  %s:", who);
	for (int i = 0; i < n; i++)
		logf_(" {%#x, %#llx}", ev[i].events,
		      (unsigned long long)ev[i].data.u64);
	logf_("\n");
}

/* The instance behind event data, if the data names one that is live. */
static int data_inst(uint64_t data)
{
	int i = (int)(data & 0xffff) / 2;

	return i < NOBJ && objs[i].kind == K_INST ? i : -1;
}

static bool fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/*
 * The one documented case where uepoll reports more than epoll (docs/
 * design.md): an edge-triggered or one-shot registration of a nested
 * instance may get an edge that the kernel does not give, when the inner
 * instance became ready again through a MOD while the kernel still kept a
 * stale entry on its ready list (the kernel then wakes no poller).  Accepted
 * only if every kernel event is also uepoll's, and every extra one is such a
 * registration of an instance that is ready in both worlds (poll() on both
 * inner fds).  Such an edge makes the instance that got it ready, so its
 * holders (any mode) may also report it: in an instance marked by
 * taint_holders, an extra event of any nested instance that is ready in
 * uepoll's world is accepted.  Both lists are sorted.
 */
static bool extra_edges_ok(int waited, struct epoll_event *ke, int nk,
			   struct epoll_event *ue, int nu)
{
	bool tainted = waited >= 0 && objs[waited].tainted;

	int j = 0;

	t_sort_events(ke, nk);
	t_sort_events(ue, nu);
	for (int i = 0; i < nu; i++) {
		int in;

		if (j < nk && ke[j].events == ue[i].events &&
		    ke[j].data.u64 == ue[i].data.u64) {
			j++;
			continue;
		}
		in = data_inst(ue[i].data.u64);
		if (!(ue[i].data.u64 & D_INST) || in < 0 ||
		    !fd_readable(objs[in].ufd[0]))
			return false;
		/* the edge itself: the inner is ready in both worlds; or its
		 * consequence further up: the inner (holding the instance
		 * that got the edge) is ready in uepoll's */
		if (!tainted && ((ue[i].data.u64 & D_LT) ||
				 !fd_readable(objs[in].kfd[0])))
			return false;
	}
	return j == nk;
}

static void op_wait(void)
{
	struct epoll_event ke[MAXEV], ue[MAXEV];
	int i = pick(K_INST), maxev, nk, nu, ek, eu, kepfd, uepfd, sets, how;
	struct timespec ts = { 0, 0 };
	char desc[32];

	sets = 0;
	if (i < 0 || chance(4)) {
		struct ref e = pick_ref();

		kepfd = e.kfd;
		uepfd = e.ufd;
		i = e.obj >= 0 && objs[e.obj].kind == K_INST ? e.obj : -1;
		snprintf(desc, sizeof(desc), "%s", e.desc);
	} else {
		kepfd = objs[i].kfd[0];
		uepfd = objs[i].ufd[0];
		snprintf(desc, sizeof(desc), "obj%d", i);
	}
	if (i >= 0 && objs[i].setmode) {
		sets = 1;
		maxev = nreg(i) + (int)rnd(3);
		if (maxev < 1)
			maxev = 1;
	} else {
		maxev = 1 + (int)rnd(8);
	}
	if (chance(2))
		maxev = (int)rnd(2) - 1; /* 0 or -1: EINVAL */
	if (chance(1))
		maxev = chance(50) ? INT32_MIN : INT32_MAX; /* EINVAL */
	how = (int)rnd(4); /* wait, pwait, pwait2, pwait2 with bad timeout */
	logf_("%s(%s, %d)%s", how == 0 ? "wait" : how == 1 ? "pwait" : "pwait2",
	      desc, maxev, sets ? " sets" : "");
	memset(ke, 0, sizeof(ke));
	memset(ue, 0, sizeof(ue));
	if (how == 3)
		ts.tv_nsec = chance(50) ? -1 : 1000000000;
	errno = 0;
	nk = how == 0 ? epoll_wait(kepfd, ke, maxev, 0) :
	     how == 1 ? epoll_pwait(kepfd, ke, maxev, 0, NULL) :
			epoll_pwait2(kepfd, ke, maxev, &ts, NULL);
	ek = errno;
	errno = 0;
	nu = how == 0 ? uepoll_wait(uepfd, ue, maxev, 0) :
	     how == 1 ? uepoll_pwait(uepfd, ue, maxev, 0, NULL) :
			uepoll_pwait2(uepfd, ue, maxev, &ts, NULL);
	eu = errno;
	/* log both lists first: a failure prints the log */
	if (nk > 0)
		dump_events("kernel", ke, nk);
	if (nu > 0)
		dump_events("uepoll", ue, nu);
	if (sets && nk >= 0 && nu > nk && extra_edges_ok(i, ke, nk, ue, nu)) {
		logf_(" -> k %d u %d: extra edge(s) of a ready nested instance\n",
		      nk, nu);
		diff_stats.extra_edges += (unsigned long)(nu - nk);
		return;
	}
	if (!same("wait", nk, ek, nu, eu))
		return;
	cov(nk > 0 ? DC_WAIT_EVENTS : nk == 0 ? DC_WAIT_NONE : DC_WAIT_ERR);
	if (nk <= 0)
		return;
	cov(sets ? DC_WAIT_SETS : DC_WAIT_EXACT);
	for (int j = 0; j < nk; j++) {
		int o = (int)(ke[j].data.u64 & 0xffff) / 2;

		if (ke[j].data.u64 & D_INST)
			cov(DC_EV_INST);
		else if (o < NOBJ && objs[o].kind == K_PIPE)
			cov(DC_EV_PIPE);
		else if (o < NOBJ && objs[o].kind == K_EFD)
			cov(DC_EV_EFD);
		if (ke[j].events & EPOLLOUT)
			cov(DC_EV_OUT);
		if (ke[j].events & (EPOLLHUP | EPOLLERR))
			cov(DC_EV_HUP);
	}
	st_events += (unsigned long)nk;
	st_wait_sets += (unsigned long)sets;
	if (sets) {
		t_sort_events(ke, nk);
		t_sort_events(ue, nu);
	}
	for (int j = 0; j < nk; j++) {
		if (ke[j].events != ue[j].events ||
		    ke[j].data.u64 != ue[j].data.u64) {
			fail("wait returned different events");
			return;
		}
	}
}

static void close_obj_end(int i, int end)
{
	int rk, ru, ek, eu;

	logf_("close(obj%d.%d)", i, end);
	errno = 0;
	rk = close(objs[i].kfd[end]);
	ek = errno;
	errno = 0;
	ru = uepoll_close(objs[i].ufd[end]);
	eu = errno;
	same("close", rk, ek, ru, eu);
	if (end == 0) {
		objs[i].kstale = objs[i].kfd[0];
		objs[i].ustale = objs[i].ufd[0];
	}
	objs[i].kfd[end] = objs[i].ufd[end] = -1;
}

static void op_close(void)
{
	int i = (int)rnd(NOBJ);

	if (objs[i].kind == K_NONE)
		return;
	if (objs[i].kind == K_PIPE && chance(50)) {
		/* close one end only: the other sees HUP / ERR */
		int end = (int)rnd(2);

		if (objs[i].kfd[end] < 0 || objs[i].kfd[end ^ 1] < 0)
			return;
		cov(DC_CLOSE);
		close_obj_end(i, end);
		forget(i, 1, end);
		return;
	}
	cov(DC_CLOSE);
	for (int end = 1; end >= 0; end--)
		if (objs[i].kfd[end] >= 0)
			close_obj_end(i, end);
	objs[i].kind = K_NONE;
	forget(i, 0, 0);
}

/* Close everything left at the end of a sequence, comparing results. */
static void close_all(void)
{
	for (int i = 0; i < NOBJ; i++) {
		if (objs[i].kind == K_NONE)
			continue;
		for (int end = 1; end >= 0; end--)
			if (objs[i].kfd[end] >= 0)
				close_obj_end(i, end);
		objs[i].kind = K_NONE;
	}
	memset(reg, 0, sizeof(reg));
}

void diff_run_sequence(int nops)
{
	loglen = 0;
	logbuf[0] = 0;
	mismatch = 0;
	for (int i = 0; i < NOBJ; i++) {
		objs[i].kind = K_NONE;
		objs[i].kstale = objs[i].ustale = -1;
	}
	memset(reg, 0, sizeof(reg));
	nop = 0;
	op_create_inst();
	op_create_inst();
	op_create_efd();
	op_create_efd();
	op_create_efd();
	if (chance(50))
		op_create_pipe();
	for (nop = 1; nop <= nops && !mismatch && !src_done; nop++) {
		int roll = (int)rnd(100);

		if (roll < 4)
			op_create_efd();
		else if (roll < 7)
			op_create_inst();
		else if (roll < 9)
			op_create_pipe();
		else if (roll < 40)
			op_ctl();
		else if (roll < 55)
			op_write_efd();
		else if (roll < 63)
			op_read_efd();
		else if (roll < 69)
			op_pipe_io();
		else if (roll < 96)
			op_wait();
		else
			op_close();
	}
	close_all();
}
