/*
 * t_fd_limits: fd exhaustion (EMFILE under a low RLIMIT_NOFILE), compared
 * with the kernel's objects.
 *
 * The holes below the highest open fd are filled first, so that with the
 * soft limit set to (first free number + k) exactly k more fds can be
 * opened (limit_free).  Then, for k = 0, 1, 2, 3:
 *   - eventfd/ueventfd, epoll_create1/uepoll_create1, uepoll_create and
 *     uepoll_create2: EMFILE when no fd is left, like the kernel's; a
 *     ueventfd needs two fds (its public one and the private duplicate the
 *     library uses) and a uepoll instance three (the same two and its
 *     doorbell, uepoll.h), so with fewer left they fail with EMFILE where
 *     the kernel's calls succeed, and leave no fd behind;
 *   - with no fd left, every call that opens none (ctl ADD/MOD/DEL of a
 *     ueventfd, a pipe, a nested instance, a round-robin registration;
 *     waits; reads and writes; closes) gives the kernel's result.
 * After the limit is restored everything works again.
 */
#include "testlib.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

static int fillers[8192], nfill;
static struct rlimit saved;

/* Make the free fd numbers contiguous from the returned number upward. */
static int fill_holes(void)
{
	int maxfd = -1, fd;

	for (int i = 0; i < 4096; i++)
		if (fcntl(i, F_GETFD) != -1)
			maxfd = i;
	for (;;) {
		fd = dup(0);
		REQUIRE(fd >= 0);
		if (fd > maxfd) {
			close(fd);
			return fd;
		}
		REQUIRE(nfill < 8192);
		fillers[nfill++] = fd;
	}
}

/* Allow exactly k more fds (0 <= k; holes below are filled first). */
static void limit_free(int k)
{
	struct rlimit r = saved;

	REQUIRE(setrlimit(RLIMIT_NOFILE, &saved) == 0);
	r.rlim_cur = (rlim_t)(fill_holes() + k);
	REQUIRE(setrlimit(RLIMIT_NOFILE, &r) == 0);
}

static void unlimit(void)
{
	REQUIRE(setrlimit(RLIMIT_NOFILE, &saved) == 0);
}

/* Both calls' results (the kernel's fd, if any, is closed already). */
static void cmp_create(const char *what, int k, int rk, int ek, int ru, int eu,
		       int want_k, int want_u)
{
	int okk = rk >= 0, oku = ru >= 0;

	if ((okk ? 0 : ek) != want_k || (oku ? 0 : eu) != want_u) {
		fprintf(stderr, "%s with %d fd(s) free: kernel %d/%d (want %d), uepoll %d/%d (want %d)\n",
			what, k, rk, okk ? 0 : ek, want_k, ru, oku ? 0 : eu,
			want_u);
		t_failures++;
	}
	if (oku)
		CHECK_EQ(uepoll_close(ru), 0);
}

static void test_creates(void)
{
	for (int k = 0; k <= 3; k++) {
		/* fillers (fill_holes) are not counted */
		int fds = t_count_fds() - nfill, rk, ru, ek, eu;

		limit_free(k);
		errno = 0;
		rk = eventfd(1, EFD_NONBLOCK);
		ek = errno;
		if (rk >= 0)
			close(rk);
		errno = 0;
		ru = ueventfd(1, EFD_NONBLOCK);
		eu = errno;
		unlimit();
		/* documented: a ueventfd takes two fds */
		cmp_create("eventfd", k, rk, ek, ru, eu, k ? 0 : EMFILE,
			   k >= 2 ? 0 : EMFILE);

		limit_free(k);
		errno = 0;
		rk = epoll_create1(EPOLL_CLOEXEC);
		ek = errno;
		if (rk >= 0)
			close(rk);
		errno = 0;
		ru = uepoll_create1(EPOLL_CLOEXEC);
		eu = errno;
		unlimit();
		/* documented: an instance takes three fds */
		cmp_create("epoll_create1", k, rk, ek, ru, eu, k ? 0 : EMFILE,
			   k >= 3 ? 0 : EMFILE);

		limit_free(k);
		errno = 0;
		rk = epoll_create(1);
		ek = errno;
		if (rk >= 0)
			close(rk);
		errno = 0;
		ru = uepoll_create(1);
		eu = errno;
		unlimit();
		cmp_create("epoll_create", k, rk, ek, ru, eu, k ? 0 : EMFILE,
			   k >= 3 ? 0 : EMFILE);

		limit_free(k);
		errno = 0;
		ru = uepoll_create2(0, UEPOLL_WAKE_FIFO);
		eu = errno;
		unlimit();
		if (k >= 3)
			CHECK(ru >= 0 && uepoll_close(ru) == 0);
		else
			CHECK(ru == -1 && eu == EMFILE);
		CHECK_EQ(t_count_fds() - nfill, fds);
	}
}

/* One world's objects, made before the limit is lowered. */
struct world {
	int (*create1)(int);
	int (*ctl)(int, int, int, struct epoll_event *);
	int (*wait)(int, struct epoll_event *, int, int);
	int (*mkefd)(unsigned int, int);
	ssize_t (*rd)(int, void *, size_t);
	ssize_t (*wr)(int, const void *, size_t);
	int (*cl)(int);
	int ep, ep2, efd, efd2, p[2];
};

static void world_open(struct world *w)
{
	w->ep = w->create1(0);
	w->ep2 = w->create1(0);
	w->efd = w->mkefd(0, EFD_NONBLOCK);
	w->efd2 = w->mkefd(1, EFD_NONBLOCK);
	REQUIRE(w->ep >= 0 && w->ep2 >= 0 && w->efd >= 0 && w->efd2 >= 0);
	REQUIRE(pipe2(w->p, O_NONBLOCK) == 0);
}

/* The calls that open no fd, in order; returns results for comparison. */
static void world_run(struct world *w, long *res, int *err, int *n)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[8];
	uint64_t v = 3;
	int i = 0;

#define R(call)                                                              \
	do {                                                                 \
		errno = 0;                                                   \
		res[i] = (long)(call);                                       \
		err[i] = res[i] < 0 ? errno : 0;                             \
		i++;                                                         \
	} while (0)
	ev.data.u64 = 1;
	R(w->ctl(w->ep, EPOLL_CTL_ADD, w->efd, &ev));
	ev.data.u64 = 2;
	R(w->ctl(w->ep, EPOLL_CTL_ADD, w->p[0], &ev));
	ev.data.u64 = 3;
	R(w->ctl(w->ep2, EPOLL_CTL_ADD, w->ep, &ev));
	ev.data.u64 = 4;
	R(w->ctl(w->ep2, EPOLL_CTL_ADD, w->efd2, &ev));
	R(w->wr(w->efd, &v, sizeof(v)));
	R(write(w->p[1], "x", 1));
	R(w->wait(w->ep, out, 8, 0));
	R(w->wait(w->ep2, out, 8, 100));
	R(w->rd(w->efd, &v, sizeof(v)));
	R((long)v);
	ev.events = EPOLLIN | EPOLLET;
	R(w->ctl(w->ep, EPOLL_CTL_MOD, w->efd, &ev));
	R(w->ctl(w->ep2, EPOLL_CTL_MOD, w->ep, &ev));
	R(w->ctl(w->ep, EPOLL_CTL_DEL, w->p[0], NULL));
	R(w->ctl(w->ep2, EPOLL_CTL_DEL, w->ep, NULL));
	ev.events = EPOLLIN | EPOLLEXCLUSIVE;
	R(w->ctl(w->ep, EPOLL_CTL_ADD, w->p[0], &ev));
	R(w->wait(w->ep, out, 8, 0));
	R(w->cl(w->efd));
	R(w->wait(w->ep, out, 8, 0));
	R(w->cl(w->ep));
	R(w->wait(w->ep2, out, 8, 0));
	R(w->cl(w->ep2));
	R(w->cl(w->efd2));
	R(close(w->p[0]));
	R(close(w->p[1]));
#undef R
	*n = i;
}

static ssize_t k_read(int fd, void *b, size_t n)
{
	return read(fd, b, n);
}

static ssize_t k_write(int fd, const void *b, size_t n)
{
	return write(fd, b, n);
}

static void test_no_fd_left(void)
{
	struct world k = { epoll_create1, epoll_ctl, epoll_wait, eventfd,
			   k_read, k_write, close, 0, 0, 0, 0, { 0, 0 } };
	struct world u = { uepoll_create1, uepoll_ctl, uepoll_wait, ueventfd,
			   uepoll_read, uepoll_write, uepoll_close,
			   0, 0, 0, 0, { 0, 0 } };
	long rk[32], ru[32];
	int ek[32], eu[32], nk, nu;

	world_open(&k);
	limit_free(0);
	world_run(&k, rk, ek, &nk);
	unlimit();
	world_open(&u);
	limit_free(0);
	world_run(&u, ru, eu, &nu);
	unlimit();
	CHECK_EQ(nk, nu);
	for (int i = 0; i < nk && i < nu; i++) {
		if (rk[i] != ru[i] || ek[i] != eu[i]) {
			fprintf(stderr, "no fd left, call %d: kernel %ld/%d, uepoll %ld/%d\n",
				i, rk[i], ek[i], ru[i], eu[i]);
			t_failures++;
		}
	}
}

int main(void)
{
	int e, ep;

	t_begin("t_fd_limits");
	t_watchdog(60);
	REQUIRE(getrlimit(RLIMIT_NOFILE, &saved) == 0);
	if (saved.rlim_cur != RLIM_INFINITY && saved.rlim_cur < 64)
		T_SKIP("RLIMIT_NOFILE too low");
	test_creates();
	test_no_fd_left();
	unlimit();
	/* everything works again */
	e = ueventfd(0, 0);
	ep = uepoll_create1(0);
	CHECK(e >= 0 && ep >= 0);
	CHECK_EQ(uepoll_close(e), 0);
	CHECK_EQ(uepoll_close(ep), 0);
	while (nfill)
		close(fillers[--nfill]);
	return t_end();
}
