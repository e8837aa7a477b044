/*
 * t_dup: a new number of a uepoll object is the same object, as a kernel
 * dup is the same open file (uepoll_dup, uepoll_dup2, uepoll_dup3,
 * uepoll_fcntl).  Differential: each scenario runs once on kernel objects
 * (eventfd, epoll_*, read, write, close, dup*, fcntl) and once on uepoll's,
 * logging every result and errno, every poll() revents and every wait's
 * events; the two logs must be equal.  Scenarios:
 *  - the counter through either number, poll() on both;
 *  - a registration through a number lives until the file's last number is
 *    closed (epoll(7)): closing one number keeps it, ctl through the closed
 *    number is EBADF, through the other ENOENT, and a second ADD through
 *    the other is a second registration; the last close removes both;
 *  - dup2/dup3 onto a number of another object: that object loses the
 *    number, and with its last number its registrations;
 *  - the errors (EINVAL, EBADF) and FD_CLOEXEC of dup2/dup3/F_DUPFD*;
 *  - F_SETFL through one number seen at once through the other (a read
 *    after a successful one blocks once O_NONBLOCK is cleared);
 *  - an instance's dup: ctl through one, wait through the other;
 *  - demotion and fork of a ueventfd with two numbers.
 * Then, uepoll only: a dup of a kernel fd onto a number closed behind
 * uepoll's back drops the stale object; an instance held through a dup'ed
 * number stops being watched when its holder goes, even if that number was
 * closed first; and threads that dup and close
 * numbers while others write and read lose no write (counts balance), and
 * nothing leaks.
 */
#include "testlib.h"
#include "calls.h"

#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

void uobj_forget(int fd);
bool bell_any_watched(void); /* internal (src/bell.h), linked statically */

/* A call that returns a number: 1 if one was returned, else -errno. */
static int num(struct t_log *l, int r)
{
	t_log_put(l, r < 0 ? -errno : 1);
	return r;
}

static void rdv(struct t_log *l, const struct calls *b, int fd)
{
	uint64_t v = 0;
	ssize_t r = b->read(fd, &v, sizeof(v));

	t_log_res(l, r);
	t_log_put(l, r == 8 ? (long)v : -1);
}

static void wrv(struct t_log *l, const struct calls *b, int fd, uint64_t v)
{
	t_log_res(l, b->write(fd, &v, sizeof(v)));
}

static void pollv(struct t_log *l, int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };

	t_log_res(l, poll(&p, 1, 0));
	t_log_put(l, p.revents);
}

/* Every event of a zero-timeout wait, sorted. */
static void waitv(struct t_log *l, const struct calls *b, int ep)
{
	struct epoll_event ev[8];

	t_log_events(l, ev, b->wait(ep, ev, 8, 0));
}

static int add(const struct calls *b, int ep, int op, int fd, uint32_t events,
	       uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return b->ctl(ep, op, fd, &ev);
}

static void sc_counter(const struct calls *b, struct t_log *l)
{
	int a = b->eventfd(3, EFD_NONBLOCK), d;

	num(l, a);
	d = num(l, b->dup(a));
	wrv(l, b, d, 4);
	pollv(l, a);
	pollv(l, d);
	rdv(l, b, a);
	pollv(l, d);
	rdv(l, b, d);
	wrv(l, b, a, 0xfffffffffffffffeull);
	pollv(l, d);
	t_log_res(l, b->close(a));
	rdv(l, b, d);
	t_log_res(l, b->read(a, &(uint64_t){ 0 }, 8)); /* closed: EBADF */
	t_log_res(l, b->close(d));
	t_log_res(l, b->close(d));
}

static void sc_registration(const struct calls *b, struct t_log *l)
{
	int ep = b->create1(0), a = b->eventfd(1, EFD_NONBLOCK), d;

	num(l, ep);
	num(l, a);
	d = num(l, b->dup(a));
	t_log_res(l, add(b, ep, EPOLL_CTL_ADD, a, EPOLLIN, 1));
	t_log_res(l, add(b, ep, EPOLL_CTL_ADD, a, EPOLLIN, 2)); /* EEXIST */
	waitv(l, b, ep);
	t_log_res(l, add(b, ep, EPOLL_CTL_MOD, d, EPOLLIN, 3)); /* ENOENT */
	t_log_res(l, b->close(a));
	waitv(l, b, ep); /* still there */
	t_log_res(l, add(b, ep, EPOLL_CTL_MOD, a, EPOLLIN, 4)); /* EBADF */
	t_log_res(l, b->ctl(ep, EPOLL_CTL_DEL, d, NULL));	  /* ENOENT */
	t_log_res(l, add(b, ep, EPOLL_CTL_ADD, d, EPOLLIN | EPOLLET, 5));
	waitv(l, b, ep); /* both */
	waitv(l, b, ep); /* the level one only */
	wrv(l, b, d, 1);
	waitv(l, b, ep);
	t_log_res(l, add(b, ep, EPOLL_CTL_MOD, d, EPOLLIN | EPOLLONESHOT, 6));
	waitv(l, b, ep);
	waitv(l, b, ep);
	t_log_res(l, b->close(d)); /* the last number: both go */
	waitv(l, b, ep);
	t_log_res(l, b->close(ep));
}

static void sc_replace(const struct calls *b, struct t_log *l)
{
	int ep = b->create1(0), x = b->eventfd(1, EFD_NONBLOCK),
	    y = b->eventfd(7, EFD_NONBLOCK), y2, x2;

	num(l, ep);
	num(l, x);
	num(l, y);
	t_log_res(l, add(b, ep, EPOLL_CTL_ADD, x, EPOLLIN, 10));
	t_log_res(l, add(b, ep, EPOLL_CTL_ADD, y, EPOLLIN, 20));
	y2 = num(l, b->dup(y));
	/* y's number now leads to x; y lives on through y2. */
	t_log_put(l, b->dup2(x, y) == y);
	waitv(l, b, ep);
	rdv(l, b, y);  /* x's counter */
	rdv(l, b, y2); /* y's */
	/* y2 replaced too: y's last number, its registration goes. */
	x2 = num(l, b->dup(x));
	t_log_put(l, b->dup3(x, y2, O_CLOEXEC) == y2);
	t_log_put(l, b->fcntl(y2, F_GETFD) == FD_CLOEXEC);
	wrv(l, b, x2, 2);
	waitv(l, b, ep);
	t_log_res(l, add(b, ep, EPOLL_CTL_DEL, x, 0, 0));
	waitv(l, b, ep);
	t_log_res(l, b->close(x));
	t_log_res(l, b->close(y));
	rdv(l, b, y2);
	t_log_res(l, b->close(y2));
	t_log_res(l, b->close(x2));
	t_log_res(l, b->close(ep));
}

static void sc_errors(const struct calls *b, struct t_log *l)
{
	int a = b->eventfd(0, 0), c, big;

	num(l, a);
	t_log_put(l, b->dup2(a, a) == a);
	t_log_res(l, b->dup3(a, a, 0));		/* EINVAL */
	t_log_res(l, b->dup3(a, a + 1, O_NONBLOCK));	/* EINVAL */
	t_log_res(l, b->dup3(a, -1, 0));		/* EBADF */
	t_log_res(l, b->dup2(1000000, a));		/* EBADF */
	t_log_res(l, b->dup(1000000));		/* EBADF */
	t_log_res(l, b->fcntl(a, F_DUPFD, -1));	/* EINVAL */
	t_log_res(l, b->fcntl(a, F_DUPFD, 1 << 30));	/* EINVAL */
	big = a + 40;
	c = b->fcntl(a, F_DUPFD_CLOEXEC, big);
	t_log_put(l, c >= big);
	t_log_put(l, b->fcntl(c, F_GETFD) == FD_CLOEXEC);
	t_log_put(l, b->fcntl(a, F_GETFD) == 0);
	wrv(l, b, c, 9);
	rdv(l, b, a);
	t_log_res(l, b->close(c));
	t_log_res(l, b->close(a));
}

static void *late_write(void *arg)
{
	const void **a = arg;
	const struct calls *b = a[0];
	int fd = *(const int *)a[1];
	uint64_t v = 77;

	t_sleep_ms(100);
	b->write(fd, &v, sizeof(v));
	return NULL;
}

static void sc_setfl(const struct calls *b, struct t_log *l)
{
	int a = b->eventfd(0, EFD_NONBLOCK), d;
	const void *arg[2] = { b, &a };
	pthread_t th;

	num(l, a);
	d = num(l, b->dup(a));
	wrv(l, b, a, 1);
	rdv(l, b, d);
	rdv(l, b, d); /* EAGAIN */
	t_log_put(l, b->fcntl(a, F_GETFL) & O_NONBLOCK);
	t_log_res(l, b->fcntl(d, F_SETFL, O_RDWR));
	t_log_put(l, b->fcntl(a, F_GETFL) & O_NONBLOCK);
	wrv(l, b, a, 1);
	rdv(l, b, a);
	/* Blocking now: this read waits for the thread's write. */
	REQUIRE(pthread_create(&th, NULL, late_write, arg) == 0);
	rdv(l, b, a);
	pthread_join(th, NULL);
	t_log_res(l, b->fcntl(a, F_SETFL, O_RDWR | O_NONBLOCK));
	rdv(l, b, d); /* EAGAIN */
	t_log_res(l, b->close(a));
	t_log_res(l, b->close(d));
}

static void sc_instance(const struct calls *b, struct t_log *l)
{
	int ep = b->create1(0), e = b->eventfd(2, EFD_NONBLOCK), ep2;

	num(l, ep);
	num(l, e);
	ep2 = num(l, b->dup(ep));
	t_log_res(l, add(b, ep2, EPOLL_CTL_ADD, e, EPOLLIN, 5));
	waitv(l, b, ep);
	t_log_res(l, b->close(ep));
	waitv(l, b, ep2);
	t_log_res(l, add(b, ep2, EPOLL_CTL_DEL, e, 0, 0));
	waitv(l, b, ep2);
	t_log_res(l, b->wait(ep, (struct epoll_event[1]){ 0 }, 1, 0)); /* EBADF */
	t_log_res(l, b->close(ep2));
	t_log_res(l, b->close(e));
}

static void sc_demote_fork(const struct calls *b, struct t_log *l)
{
	int ep = b->create1(0), a = b->eventfd(5, EFD_NONBLOCK), d, st = 0;
	pid_t pid;

	num(l, ep);
	num(l, a);
	d = num(l, b->dup(a));
	t_log_res(l, add(b, ep, EPOLL_CTL_ADD, d, EPOLLIN, 8));
	t_log_res(l, b->demote(a));
	rdv(l, b, a);
	wrv(l, b, d, 3);
	pollv(l, a);
	waitv(l, b, ep);
	/* The registration made through d is keyed by d in the kernel. */
	t_log_res(l, add(b, ep, EPOLL_CTL_MOD, d, EPOLLIN, 9));
	waitv(l, b, ep);
	t_log_res(l, b->close(a));
	t_log_res(l, b->close(d));
	/* Another ueventfd with two numbers, across fork. */
	a = b->eventfd(0, 0);
	num(l, a);
	d = num(l, b->dup(a));
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		uint64_t v = 0;

		if (b->read(d, &v, 8) != 8 || v != 6)
			_exit(1);
		v = 11;
		_exit(b->write(a, &v, 8) == 8 ? 0 : 2);
	}
	wrv(l, b, a, 6);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	t_log_put(l, st);
	rdv(l, b, d);
	t_log_res(l, b->close(a));
	t_log_res(l, b->close(d));
	t_log_res(l, b->close(ep));
}

static void (*const scenarios[])(const struct calls *, struct t_log *) = {
	sc_counter, sc_registration, sc_replace, sc_errors,
	sc_setfl, sc_instance, sc_demote_fork,
};

static void differential(void)
{
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		static struct t_log k, u;
		char what[32];

		k.n = u.n = 0;
		scenarios[i](&calls_kernel, &k);
		scenarios[i](&calls_uepoll, &u);
		snprintf(what, sizeof(what), "scenario %zu", i);
		t_log_same(&k, &u, what);
	}
}

/* An instance held by another through a dup'ed number that is then
 * closed: when the holder goes, the instance is no longer watched (the
 * count is found through the record, not through the closed number). */
static void watched_through_dup(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 };
	int in = uepoll_create1(0), out = uepoll_create1(0), d;

	REQUIRE(in >= 0 && out >= 0);
	CHECK(!bell_any_watched());
	d = uepoll_dup(in);
	REQUIRE(d >= 0);
	CHECK_EQ(uepoll_ctl(out, EPOLL_CTL_ADD, d, &ev), 0);
	CHECK(bell_any_watched());
	CHECK_EQ(uepoll_close(d), 0);
	CHECK_EQ(uepoll_close(out), 0);
	CHECK(!bell_any_watched());
	CHECK_EQ(uepoll_close(in), 0);
}

/* A dup of a kernel fd onto a number closed behind uepoll's back. */
static void stale_target(void)
{
	int e = ueventfd(4, EFD_NONBLOCK), p[2], r;
	char c = 0;

	REQUIRE(e >= 0 && pipe(p) == 0);
	REQUIRE(close(e) == 0); /* behind uepoll's back */
	r = uepoll_dup2(p[0], e);
	CHECK_EQ(r, e);
	CHECK_EQ(write(p[1], "z", 1), 1);
	CHECK_EQ(uepoll_read(e, &c, 1), 1); /* the pipe, not the ueventfd */
	CHECK_EQ(c, 'z');
	CHECK_EQ(uepoll_close(e), 0);
	close(p[0]);
	close(p[1]);
}

/* Threads that dup and close numbers of one ueventfd, a writer and a
 * reader: every write is read once, whatever number it went through. */
static int st_fd;
static _Atomic int st_stop;
static _Atomic uint64_t st_read;
#define ST_WRITES 20000

static void *st_writer(void *arg)
{
	for (int i = 0; i < ST_WRITES; i++) {
		int n = uepoll_dup(st_fd);

		if (n < 0 || ueventfd_write(i & 1 ? n : st_fd, 1) < 0 ||
		    uepoll_close(n) < 0) {
			t_failures++;
			break;
		}
	}
	return arg;
}

static void *st_reader(void *arg)
{
	eventfd_t v;

	while (atomic_load(&st_read) < ST_WRITES) {
		/* Looked at before the read: if the writer was done then, an
		 * empty read means a write was lost. */
		int done = atomic_load(&st_stop);
		int n = uepoll_fcntl(st_fd, F_DUPFD_CLOEXEC, 0), r;

		if (n < 0) {
			t_failures++;
			break;
		}
		r = ueventfd_read(n, &v);
		uepoll_close(n);
		if (r == 0)
			atomic_fetch_add(&st_read, v);
		else if (errno != EAGAIN || done)
			break;
	}
	return arg;
}

static void stress(void)
{
	pthread_t w, r;

	st_fd = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(st_fd >= 0);
	REQUIRE(pthread_create(&w, NULL, st_writer, NULL) == 0);
	REQUIRE(pthread_create(&r, NULL, st_reader, NULL) == 0);
	pthread_join(w, NULL);
	atomic_store(&st_stop, 1);
	pthread_join(r, NULL);
	CHECK_EQ(atomic_load(&st_read), (uint64_t)ST_WRITES);
	CHECK_EQ(uepoll_close(st_fd), 0);
}

int main(void)
{
	t_begin("t_dup");
	t_watchdog(60);
	differential();
	stale_target();
	watched_through_dup();
	stress();
	return t_end();
}
