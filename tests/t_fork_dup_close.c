/*
 * t_fork_dup_close: numbers of a dup'ed ueventfd and a dup'ed instance
 * across fork(), closed one by one in the child, then in the parent.
 *
 * Each object has several numbers (dup, dup2 onto a chosen number,
 * F_DUPFD_CLOEXEC; the instance dup and F_DUPFD_CLOEXEC), each holding a
 * reference (NUMBERS in src/obj.c).  A forked child recounts every
 * object's references (FORK in src/obj.c): one per number it has, not one
 * per object; a child that counted one would release the object at the
 * first close of a number while its other numbers still lead to it.  So
 * the child closes one number of each, then uses the others (write, read,
 * epoll_ctl, epoll_wait), and closes them one by one; the parent does the
 * same after the child has gone, on the counter the child left (a
 * ueventfd's counter is shared by a fork, as a kernel eventfd's).
 *
 * Differential: the scenario runs on the kernel's eventfd and epoll, then
 * on uepoll's; every result, errno and wait (the child's sent back
 * through a pipe), the child's exit status and fds left in the child and
 * the parent, must agree.  Twice: the child closing the first numbers
 * first, then the dup'ed ones first.  The child's steps keep to what a
 * uepoll instance shares with its child as the kernel's: a registration
 * the child adds it deletes, and no wait looks at a registration after
 * the child closed the file's last number there (the parent still holds
 * it: the kernel keeps it, the child's copy of an instance drops it).
 */
#include "testlib.h"

#include <fcntl.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

struct be {
	const char *name;
	int (*epc)(int);
	int (*ctl)(int, int, int, struct epoll_event *);
	int (*wait)(int, struct epoll_event *, int, int);
	int (*efd)(unsigned int, int);
	ssize_t (*rd)(int, void *, size_t);
	ssize_t (*wr)(int, const void *, size_t);
	int (*cl)(int);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*fcntl)(int, int, ...);
};

static const struct be kern = {
	"kernel", epoll_create1, epoll_ctl, epoll_wait, eventfd, read, write,
	close, dup, dup2, fcntl,
};
static const struct be uep = {
	"uepoll", uepoll_create1, uepoll_ctl, uepoll_wait, ueventfd,
	uepoll_read, uepoll_write, uepoll_close, uepoll_dup, uepoll_dup2,
	uepoll_fcntl,
};

/* The number dup2 makes: a free one above what the test otherwise uses
 * (not the lowest free, which a plain dup takes), well below any fd
 * limit, and not one the test inherited. */
static int chosen(void)
{
	int fd = 100;

	while (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
		fd++;
	return fd;
}

/* A call that returns a number: 1 if one was returned, else -errno. */
static int num(struct t_log *l, int r)
{
	t_log_put(l, r < 0 ? -errno : 1);
	return r;
}

static void rdv(struct t_log *l, const struct be *b, int fd)
{
	uint64_t v = 0;
	ssize_t r = b->rd(fd, &v, sizeof(v));

	t_log_res(l, r);
	t_log_put(l, r == 8 ? (long)v : -1);
}

static void wrv(struct t_log *l, const struct be *b, int fd, uint64_t v)
{
	t_log_res(l, b->wr(fd, &v, sizeof(v)));
}

/* Every event of a zero-timeout wait, sorted. */
static void waitv(struct t_log *l, const struct be *b, int ep)
{
	struct epoll_event ev[8];

	t_log_events(l, ev, b->wait(ep, ev, 8, 0));
}

static int ctl(const struct be *b, int ep, int op, int fd, uint64_t data)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = data };

	return b->ctl(ep, op, fd, &ev);
}

struct nums {
	int a[4];  /* the eventfd: first, dup, dup2 onto chosen(), F_DUPFD_CLOEXEC */
	int ep[3]; /* the instance: first, dup, F_DUPFD_CLOEXEC */
};

/* The child's part: one number of each closed first (the first ones, or
 * with dups_first the dup'ed ones), the rest used, then closed.  Its log
 * goes back through fd out. */
static void child(const struct be *b, const struct nums *n, bool dups_first,
		  int fds0, int out)
{
	static struct t_log l;
	/* x: closed first; y, z: used after it. */
	int x = dups_first ? n->a[2] : n->a[0];
	int y = dups_first ? n->a[0] : n->a[1];
	int z = n->a[3];
	int ex = dups_first ? n->ep[2] : n->ep[0];
	int ey = n->ep[1];
	int ez = dups_first ? n->ep[0] : n->ep[2];
	ssize_t w;

	l.n = 0;
	t_log_res(&l, b->cl(x));
	/* The registration (made through a[0]) lives while the file does. */
	waitv(&l, b, ey);
	wrv(&l, b, y, 3);
	rdv(&l, b, z); /* 2 + 3 */
	rdv(&l, b, y); /* EAGAIN */
	t_log_res(&l, b->cl(ex));
	t_log_res(&l, ctl(b, ey, EPOLL_CTL_ADD, z, 2));
	wrv(&l, b, z, 1);
	waitv(&l, b, ez); /* both registrations */
	t_log_res(&l, ctl(b, ez, EPOLL_CTL_DEL, z, 0));
	waitv(&l, b, ey);
	t_log_res(&l, b->cl(y));
	waitv(&l, b, ez);
	rdv(&l, b, z); /* 1 */
	waitv(&l, b, ey);
	/* Left for the parent: one counter for both processes. */
	wrv(&l, b, z, 7);
	t_log_res(&l, b->cl(z));
	for (int i = 0; i < 4; i++)
		if (n->a[i] != x && n->a[i] != y && n->a[i] != z)
			t_log_res(&l, b->cl(n->a[i]));
	t_log_res(&l, b->cl(ey));
	t_log_res(&l, b->cl(ez));
	/* Every number closed: nothing of the objects left in the child
	 * (their private fds closed with their last numbers), only the
	 * log's pipe. */
	t_log_put(&l, t_count_fds() - fds0 - 1);
	w = write(out, l.v, (size_t)l.n * sizeof(l.v[0]));
	_exit(w == (ssize_t)((size_t)l.n * sizeof(l.v[0])) ? 0 : 3);
}

static void scenario(const struct be *b, bool dups_first, struct t_log *l)
{
	struct t_child c;
	struct nums n;
	int lp[2], fds0, to;
	long v[T_LOG_MAX];
	ssize_t r, got = 0;

	fds0 = t_count_fds();
	REQUIRE(pipe2(lp, O_CLOEXEC) == 0);
	n.ep[0] = num(l, b->epc(0));
	n.a[0] = num(l, b->efd(2, EFD_NONBLOCK));
	n.a[1] = num(l, b->dup(n.a[0]));
	to = chosen();
	n.a[2] = b->dup2(n.a[0], to);
	t_log_put(l, n.a[2] == to);
	n.a[3] = num(l, b->fcntl(n.a[0], F_DUPFD_CLOEXEC, 0));
	t_log_put(l, b->fcntl(n.a[3], F_GETFD) == FD_CLOEXEC);
	n.ep[1] = num(l, b->dup(n.ep[0]));
	n.ep[2] = num(l, b->fcntl(n.ep[0], F_DUPFD_CLOEXEC, 0));
	REQUIRE(n.ep[0] >= 0 && n.ep[1] >= 0 && n.ep[2] >= 0);
	REQUIRE(n.a[0] >= 0 && n.a[1] >= 0 && n.a[2] >= 0 && n.a[3] >= 0);
	/* Through a dup of the instance, keyed by the first number. */
	t_log_res(l, ctl(b, n.ep[1], EPOLL_CTL_ADD, n.a[0], 1));
	waitv(l, b, n.ep[2]);

	if (t_child_fork(&c) == 0) {
		close(lp[0]);
		child(b, &n, dups_first, fds0, lp[1]);
	}
	close(lp[1]);
	while ((r = read(lp[0], (char *)v + got, sizeof(v) - (size_t)got)) > 0)
		got += r;
	close(lp[0]);
	t_log_put(l, t_child_reap(&c, 10000, b->name));
	t_log_put(l, got % (ssize_t)sizeof(v[0]));
	for (ssize_t i = 0; i < got / (ssize_t)sizeof(v[0]); i++)
		t_log_put(l, v[i]);

	/* The parent's numbers, all still open: the counter the child left,
	 * then the same closes one by one. */
	rdv(l, b, n.a[2]); /* 7 */
	waitv(l, b, n.ep[0]);
	t_log_res(l, b->cl(n.a[0]));
	wrv(l, b, n.a[1], 2);
	waitv(l, b, n.ep[2]);
	rdv(l, b, n.a[3]);
	t_log_res(l, b->cl(n.ep[0]));
	t_log_res(l, ctl(b, n.ep[1], EPOLL_CTL_ADD, n.a[1], 2));
	wrv(l, b, n.a[2], 1);
	waitv(l, b, n.ep[2]);
	t_log_res(l, b->cl(n.a[1]));
	t_log_res(l, b->cl(n.a[2]));
	waitv(l, b, n.ep[1]); /* both: the file lives through a[3] */
	rdv(l, b, n.a[3]);
	t_log_res(l, b->cl(n.a[3]));
	wrv(l, b, n.a[3], 1); /* EBADF */
	waitv(l, b, n.ep[1]);
	t_log_res(l, b->cl(n.ep[1]));
	waitv(l, b, n.ep[2]);
	t_log_res(l, b->cl(n.ep[2]));
	t_log_put(l, t_count_fds() - fds0);
}

int main(void)
{
	static struct t_log k, u;

	t_begin("t_fork_dup_close");
	t_watchdog(60);
	for (int dups_first = 0; dups_first < 2; dups_first++) {
		char what[32];

		k.n = u.n = 0;
		scenario(&kern, dups_first, &k);
		scenario(&uep, dups_first, &u);
		snprintf(what, sizeof(what), "dups_first=%d", dups_first);
		t_log_same(&k, &u, what);
	}
	return t_end();
}
