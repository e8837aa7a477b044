/*
 * t_fd_limits: fd exhaustion (EMFILE under a low RLIMIT_NOFILE), compared
 * with the kernel's objects.
 *
 * The holes below the highest open fd are filled first, so that with the
 * soft limit set to (first free number + k) exactly k more fds can be
 * opened (limit_free).  Then, for k = 0, 1, 2, 3:
 *   - eventfd/ueventfd, epoll_create1/uepoll_create1, uepoll_create and
 *     uepoll_create2: EMFILE exactly when the kernel's calls give it.  A
 *     ueventfd has two fds (its public one and the private duplicate the
 *     library uses) and a uepoll instance three (the same two and its
 *     doorbell), but the private ones are placed above the soft limit when
 *     the hard one leaves room (src/fdzone.c, ABOVE);
 *   - the same with the hard limit equal to the soft one (in a child each
 *     time: a lowered hard limit cannot be raised again): the private fds
 *     then take numbers below the limit (TOP), so with fewer than two (or
 *     three) left the library's calls fail with EMFILE where the kernel's
 *     succeed (documented), and leave no fd behind;
 *   - with no fd left, every call that opens none (ctl ADD/MOD/DEL of a
 *     ueventfd, a pipe, a nested instance, a round-robin registration;
 *     waits; reads and writes; closes) gives the kernel's result.
 * After the limit is restored everything works again.
 */
#include "testlib.h"
#include "calls.h"

#include <fcntl.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static int fillers[8192], nfill;
static struct rlimit saved;
/* TOP: limit_free sets the hard limit to the soft one (a child only). */
static bool top;

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
	if (top) {
		r.rlim_max = r.rlim_cur;
		/* valgrind refuses to move the hard limit (its own fds sit
		 * at the top): this child then skips. */
		if (setrlimit(RLIMIT_NOFILE, &r) != 0 && errno == EPERM)
			_exit(77);
	}
	REQUIRE(setrlimit(RLIMIT_NOFILE, &r) == 0);
}

static void unlimit(void)
{
	if (top)
		return; /* the child exits instead */
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

/* The open numbers below 8192 (fillers included). */
static int open_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 8192; fd++)
		n += fcntl(fd, F_GETFD) != -1;
	return n;
}

/* What the library needs free below the soft limit: 1 with room above it
 * (ABOVE), else n, the object's fds. */
static int need(int n)
{
	return top ? n : 1;
}

/* Case `which` (0: eventfd, 1: epoll_create1, 2: epoll_create, 3:
 * uepoll_create2 with UEPOLL_WAKE_FIFO) with k fds free. */
static void creates(int k, int which)
{
	int fds, rk = -1, ru, ek = 0, eu;

	limit_free(k);
	/* With the fillers; no fd needed to count (TOP has none to spare). */
	fds = open_fds();
	errno = 0;
	if (which == 0)
		rk = eventfd(1, EFD_NONBLOCK);
	else if (which == 1)
		rk = epoll_create1(EPOLL_CLOEXEC);
	else if (which == 2)
		rk = epoll_create(1);
	ek = errno;
	if (rk >= 0)
		close(rk);
	errno = 0;
	ru = which == 0	  ? ueventfd(1, EFD_NONBLOCK)
	     : which == 1 ? uepoll_create1(EPOLL_CLOEXEC)
	     : which == 2 ? uepoll_create(1)
			  : uepoll_create2(0, UEPOLL_WAKE_FIFO);
	eu = errno;
	unlimit();
	if (which < 3)
		cmp_create(which == 0	? "eventfd"
			   : which == 1 ? "epoll_create1"
					: "epoll_create",
			   k, rk, ek, ru, eu, k ? 0 : EMFILE,
			   k >= need(which ? 3 : 2) ? 0 : EMFILE);
	else if (k >= need(3))
		CHECK(ru >= 0 && uepoll_close(ru) == 0);
	else
		CHECK(ru == -1 && eu == EMFILE);
	CHECK_EQ(open_fds(), fds);
}

static void test_creates(void)
{
	for (int k = 0; k <= 3; k++)
		for (int w = 0; w < 4; w++)
			creates(k, w);
	/* TOP: each in a child, whose hard limit stays lowered. */
	for (int k = 0; k <= 3; k++)
		for (int w = 0; w < 4; w++) {
			pid_t pid = fork();
			int st;

			REQUIRE(pid >= 0);
			if (pid == 0) {
				top = true;
				creates(k, w);
				fflush(NULL);
				_exit(t_failures ? 1 : 0);
			}
			REQUIRE(waitpid(pid, &st, 0) == pid);
			if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
				fprintf(stderr, "TOP: the hard limit cannot be "
						"lowered here (valgrind?): not run\n");
				return;
			}
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				fprintf(stderr, "TOP, case %d, %d fd(s) free: failed\n",
					w, k);
				t_failures++;
			}
		}
}

/* One world's objects, made before the limit is lowered. */
struct world {
	const struct calls *c;
	int ep, ep2, efd, efd2, p[2];
};

static void world_open(struct world *w)
{
	w->ep = w->c->create1(0);
	w->ep2 = w->c->create1(0);
	w->efd = w->c->eventfd(0, EFD_NONBLOCK);
	w->efd2 = w->c->eventfd(1, EFD_NONBLOCK);
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
	R(w->c->ctl(w->ep, EPOLL_CTL_ADD, w->efd, &ev));
	ev.data.u64 = 2;
	R(w->c->ctl(w->ep, EPOLL_CTL_ADD, w->p[0], &ev));
	ev.data.u64 = 3;
	R(w->c->ctl(w->ep2, EPOLL_CTL_ADD, w->ep, &ev));
	ev.data.u64 = 4;
	R(w->c->ctl(w->ep2, EPOLL_CTL_ADD, w->efd2, &ev));
	R(w->c->write(w->efd, &v, sizeof(v)));
	R(write(w->p[1], "x", 1));
	R(w->c->wait(w->ep, out, 8, 0));
	R(w->c->wait(w->ep2, out, 8, 100));
	R(w->c->read(w->efd, &v, sizeof(v)));
	R((long)v);
	ev.events = EPOLLIN | EPOLLET;
	R(w->c->ctl(w->ep, EPOLL_CTL_MOD, w->efd, &ev));
	R(w->c->ctl(w->ep2, EPOLL_CTL_MOD, w->ep, &ev));
	R(w->c->ctl(w->ep, EPOLL_CTL_DEL, w->p[0], NULL));
	R(w->c->ctl(w->ep2, EPOLL_CTL_DEL, w->ep, NULL));
	ev.events = EPOLLIN | EPOLLEXCLUSIVE;
	R(w->c->ctl(w->ep, EPOLL_CTL_ADD, w->p[0], &ev));
	R(w->c->wait(w->ep, out, 8, 0));
	R(w->c->close(w->efd));
	R(w->c->wait(w->ep, out, 8, 0));
	R(w->c->close(w->ep));
	R(w->c->wait(w->ep2, out, 8, 0));
	R(w->c->close(w->ep2));
	R(w->c->close(w->efd2));
	R(close(w->p[0]));
	R(close(w->p[1]));
#undef R
	*n = i;
}

static void test_no_fd_left(void)
{
	struct world k = { .c = &calls_kernel }, u = { .c = &calls_uepoll };
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
