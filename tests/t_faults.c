/*
 * t_faults: allocation failure injected at every allocation the library
 * makes, one at a time.
 *
 * The test is linked with --wrap=malloc,calloc,realloc,aligned_alloc,
 * posix_memalign (tests/CMakeLists.txt): every such call in libuepoll.a's
 * objects (and in this file) goes to the __wrap_* functions below, which
 * forward to the real allocator (ASan's in the ASan build) unless armed.
 * Armed with n, the n-th allocation from then on fails.  For each public
 * call, fault_loop() runs it with n = 1, 2, ... until it succeeds, and after
 * every failure checks that:
 *   - it returned -1 with errno ENOMEM, and an injected failure did happen;
 *   - it left no fd behind (fd count unchanged);
 *   - the objects involved are still usable and unchanged (a probe per
 *     scenario: the registration was not half made, waits report what they
 *     reported before, the instance still delivers after the call succeeds);
 *   - a fork still ends (a failed creation ended its span: FORK in obj.c).
 * Memory leaks on the error paths are caught by LeakSanitizer in the ASan
 * build (each scenario runs in a forked child, which LSan checks at exit).
 * Each scenario forks from a parent that never touched uepoll, so the
 * child starts with empty object pools: the first create then reaches
 * every allocation on its path (object memory, the ueventfd's block list).
 *
 * The library's allocation sites (docs/reliability.md):
 *   obj.c    uobj_alloc: aligned_alloc of a ueventfd / instance
 *   shm.c    shm__region_with_room: realloc of the list of shared
 *            regions (the first ueventfd's counter)
 *   fdzone.c fdzone__word: calloc of a chunk of the private fds' bitmap
 *   port.c   port__ctl_user: calloc of an item (ueventfd watched)
 *   krec.c   krec__new: calloc of a record (nested instance, or a
 *            kernel fd added with EPOLLROUNDROBIN)
 *   timer.c  timer_arm: realloc of the deadline heap (a coalescing write;
 *            it cannot fail the write, so scen_held checks that the write
 *            then shows its value at once instead of holding it)
 * The fd table's chunks are mapped (mmap: a signal handler's dup may need
 * one, SIGNALS in obj.c), not allocated.  liburcu's wait-free queue (a
 * shared library, not wrapped) allocates nothing.  Every other public call must make no allocation at all: it is
 * run armed with n = 1 and must succeed.
 */
#include "testlib.h"

#include <fcntl.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
int __wrap_posix_memalign(void **p, size_t a, size_t n);

static long countdown;	  /* > 0: armed, the allocation that brings it to 0 fails */
static bool fired;	  /* the armed failure happened */
static unsigned long allocs; /* allocations seen while armed */
static unsigned long injected; /* failures injected in this process */

/* Distinct call shapes that failed: which sites were reached. */
struct site {
	const char *fn;
	size_t a, b;
};
static struct site sites[16];
static int nsites;

static bool fault__fail(const char *fn, size_t a, size_t b)
{
	if (countdown <= 0)
		return false;
	allocs++;
	if (--countdown)
		return false;
	fired = true;
	injected++;
	for (int i = 0; i < nsites; i++)
		if (sites[i].fn == fn && sites[i].a == a && sites[i].b == b)
			return true;
	if (nsites < 16)
		sites[nsites++] = (struct site){ fn, a, b };
	return true;
}

void *__wrap_malloc(size_t n)
{
	return fault__fail("malloc", n, 0) ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
	return fault__fail("calloc", n, m) ? NULL : __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
	return fault__fail("realloc", n, 0) ? NULL : __real_realloc(p, n);
}

void *__wrap_aligned_alloc(size_t a, size_t n)
{
	return fault__fail("aligned_alloc", a, n) ? NULL :
						       __real_aligned_alloc(a, n);
}

int __wrap_posix_memalign(void **p, size_t a, size_t n)
{
	return fault__fail("posix_memalign", a, n) ? ENOMEM :
						       __real_posix_memalign(p, a, n);
}

/* What a scenario works on. */
struct ctx {
	int ep, ep2, efd, efd2, p[2], newfd;
};

typedef long (*op_fn)(struct ctx *c);
/* Checks the objects after a failed (ok false) or the successful call. */
typedef void (*probe_fn)(struct ctx *c, bool ok);

/*
 * Run op with the n-th allocation failing, n = 1, 2, ..., until it
 * succeeds; returns the number of failures injected.  max_fail < 0: any
 * number; else at most that many (0: the call must not allocate).
 */
/* A fork by another thread still ends after a failure: a creation that
 * failed has ended its span (FORK in obj.c), which another thread's fork
 * would otherwise wait for for ever (the watchdog ends the test then; a
 * fork by this thread would skip its own span). */
static void *fork_thread(void *arg)
{
	pid_t p = fork();
	int st;

	if (p == 0)
		_exit(0);
	*(int *)arg = p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) &&
		      WEXITSTATUS(st) == 0;
	return NULL;
}

static void fork_ends(const char *name, long n)
{
	pthread_t th;
	int ok = 0;

	REQUIRE(pthread_create(&th, NULL, fork_thread, &ok) == 0);
	REQUIRE(pthread_join(th, NULL) == 0);
	if (!ok) {
		fprintf(stderr, "%s: n=%ld: a fork after the failure failed\n",
			name, n);
		t_failures++;
	}
}

static int fault_loop(const char *name, struct ctx *c, op_fn op, probe_fn probe,
		      int min_fail, int max_fail)
{
	int failures = 0;

	for (long n = 1; n < 100; n++) {
		int fds = t_count_fds(), e;
		long r;

		fired = false;
		allocs = 0;
		countdown = n;
		errno = 0;
		r = op(c);
		e = errno;
		countdown = 0;
		if (r >= 0) {
			if (fired) {
				fprintf(stderr, "%s: n=%ld: an allocation failed but the call returned %ld\n",
					name, n, r);
				t_failures++;
			}
			if (probe)
				probe(c, true);
			break;
		}
		failures++;
		if (!fired || e != ENOMEM) {
			fprintf(stderr, "%s: n=%ld: returned %ld errno %d (%s), failure injected: %d\n",
				name, n, r, e, strerror(e), fired);
			t_failures++;
			break;
		}
		if (t_count_fds() != fds) {
			fprintf(stderr, "%s: n=%ld: %d fds before, %d after the failure\n",
				name, n, fds, t_count_fds());
			t_failures++;
		}
		fork_ends(name, n);
		if (probe)
			probe(c, false);
	}
	printf("%s: %d injected failure(s)\n", name, failures);
	if (failures < min_fail || (max_fail >= 0 && failures > max_fail)) {
		fprintf(stderr, "%s: %d failures, want %d..%d\n", name, failures,
			min_fail, max_fail);
		t_failures++;
	}
	return failures;
}

static int nevents(int ep)
{
	struct epoll_event ev[8];

	return uepoll_wait(ep, ev, 8, 0);
}

static uint64_t first_data(int ep)
{
	struct epoll_event ev[8];

	return uepoll_wait(ep, ev, 8, 0) >= 1 ? ev[0].data.u64 : ~0ull;
}

/* A wait on ep reports data among its events. */
static bool reports(int ep, uint64_t data)
{
	struct epoll_event ev[8];
	int n = uepoll_wait(ep, ev, 8, 0);

	for (int i = 0; i < n; i++)
		if (ev[i].data.u64 == data)
			return true;
	return false;
}

static long ctl(int ep, int op, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return uepoll_ctl(ep, op, fd, &ev);
}

/* ---- creates ---- */

static long op_ueventfd(struct ctx *c)
{
	return c->newfd = ueventfd(2, EFD_NONBLOCK);
}

static void probe_new_efd(struct ctx *c, bool ok)
{
	eventfd_t v = 0;

	if (!ok)
		return;
	CHECK_EQ(ueventfd_read(c->newfd, &v), 0);
	CHECK_EQ(v, 2);
	CHECK_EQ(ueventfd_write(c->newfd, 5), 0);
	CHECK_EQ(ueventfd_read(c->newfd, &v), 0);
	CHECK_EQ(v, 5);
	CHECK_EQ(uepoll_close(c->newfd), 0);
}

static long op_create1(struct ctx *c)
{
	return c->newfd = uepoll_create1(EPOLL_CLOEXEC);
}

static long op_create2_fifo(struct ctx *c)
{
	return c->newfd = uepoll_create2(0, UEPOLL_WAKE_FIFO);
}

static long op_create(struct ctx *c)
{
	return c->newfd = uepoll_create(1);
}

/* A new instance works: it delivers a ueventfd's event. */
static void probe_new_instance(struct ctx *c, bool ok)
{
	int efd;

	if (!ok)
		return;
	efd = ueventfd(1, EFD_NONBLOCK);
	REQUIRE(efd >= 0);
	CHECK_EQ(ctl(c->newfd, EPOLL_CTL_ADD, efd, EPOLLIN, 3), 0);
	CHECK_EQ(first_data(c->newfd), 3);
	CHECK_EQ(uepoll_close(efd), 0);
	CHECK_EQ(uepoll_close(c->newfd), 0);
}

static void scen_efd(void)
{
	struct ctx c = { 0 };

	/* object memory, the list of shared regions, and the private fds'
	 * bitmap chunk if no object made it before in this process */
	fault_loop("ueventfd", &c, op_ueventfd, probe_new_efd, 2, 3);
}

static void scen_instance(void)
{
	struct ctx c = { 0 };

	/* object memory, and the private fds' bitmap chunk if no object made
	 * it before in this process */
	fault_loop("uepoll_create1", &c, op_create1, probe_new_instance, 1, 2);
	/* The probe closed the new instance, so its memory is in the pool:
	 * take it, so that the next create has to allocate. */
	c.ep = uepoll_create1(0);
	REQUIRE(c.ep >= 0);
	fault_loop("uepoll_create2", &c, op_create2_fifo, probe_new_instance,
		   1, 1);
	c.ep2 = uepoll_create1(0);
	REQUIRE(c.ep2 >= 0);
	fault_loop("uepoll_create", &c, op_create, probe_new_instance, 1, 1);
	CHECK_EQ(uepoll_close(c.ep), 0);
	CHECK_EQ(uepoll_close(c.ep2), 0);
}

/* ---- ctl ---- */

static long op_add_efd(struct ctx *c)
{
	return ctl(c->ep, EPOLL_CTL_ADD, c->efd, EPOLLIN | EPOLLET, 7);
}

static void probe_add_efd(struct ctx *c, bool ok)
{
	if (!ok) {
		/* nothing half-registered: not reported, not known */
		CHECK_EQ(nevents(c->ep), 1); /* only efd2, as before */
		CHECK_ERR(ctl(c->ep, EPOLL_CTL_MOD, c->efd, EPOLLIN, 7), ENOENT);
		CHECK_ERR(uepoll_ctl(c->ep, EPOLL_CTL_DEL, c->efd, NULL), ENOENT);
		return;
	}
	CHECK_EQ(nevents(c->ep), 2);
	CHECK_EQ(ueventfd_write(c->efd, 1), 0); /* ET: a new edge */
	CHECK(reports(c->ep, 7));
}

static long op_add_nested(struct ctx *c)
{
	return ctl(c->ep2, EPOLL_CTL_ADD, c->ep, EPOLLIN, 9);
}

static void probe_add_nested(struct ctx *c, bool ok)
{
	if (!ok) {
		CHECK_EQ(nevents(c->ep2), 0);
		CHECK_ERR(uepoll_ctl(c->ep2, EPOLL_CTL_DEL, c->ep, NULL), ENOENT);
		CHECK_EQ(nevents(c->ep), 1); /* the inner one still works */
		return;
	}
	CHECK_EQ(first_data(c->ep2), 9);
}

static long op_add_rr(struct ctx *c)
{
	return ctl(c->ep, EPOLL_CTL_ADD, c->p[0],
		   EPOLLIN | EPOLLEXCLUSIVE | EPOLLROUNDROBIN, 11);
}

static void probe_add_rr(struct ctx *c, bool ok)
{
	struct epoll_event ev[8];
	int n, seen = 0;

	if (!ok) {
		CHECK_ERR(uepoll_ctl(c->ep, EPOLL_CTL_DEL, c->p[0], NULL), ENOENT);
		return;
	}
	CHECK_EQ(write(c->p[1], "x", 1), 1);
	n = uepoll_wait(c->ep, ev, 8, 0);
	for (int i = 0; i < n; i++)
		seen += ev[i].data.u64 == 11;
	CHECK_EQ(seen, 1);
}

static void scen_ctl(void)
{
	struct ctx c = { 0 };

	c.ep = uepoll_create1(0);
	c.ep2 = uepoll_create1(0);
	c.efd = ueventfd(1, EFD_NONBLOCK);
	c.efd2 = ueventfd(1, EFD_NONBLOCK);
	REQUIRE(c.ep >= 0 && c.ep2 >= 0 && c.efd >= 0 && c.efd2 >= 0);
	REQUIRE(pipe2(c.p, O_NONBLOCK) == 0);
	CHECK_EQ(ctl(c.ep, EPOLL_CTL_ADD, c.efd2, EPOLLIN, 8), 0);
	fault_loop("ctl ADD ueventfd", &c, op_add_efd, probe_add_efd, 1, 1);
	fault_loop("ctl ADD nested instance", &c, op_add_nested,
		   probe_add_nested, 1, 1);
	fault_loop("ctl ADD EPOLLROUNDROBIN pipe", &c, op_add_rr, probe_add_rr,
		   1, 1);
	CHECK_EQ(uepoll_close(c.ep2), 0);
	CHECK_EQ(uepoll_close(c.ep), 0);
	CHECK_EQ(uepoll_close(c.efd), 0);
	CHECK_EQ(uepoll_close(c.efd2), 0);
	close(c.p[0]);
	close(c.p[1]);
}

/* ---- calls that must not allocate ---- */

static long op_wait(struct ctx *c)
{
	struct epoll_event ev[8];

	return uepoll_wait(c->ep2, ev, 8, 0);
}

static long op_pwait(struct ctx *c)
{
	struct epoll_event ev[8];
	sigset_t s;

	sigemptyset(&s);
	return uepoll_pwait(c->ep2, ev, 8, 0, &s);
}

static long op_pwait2(struct ctx *c)
{
	struct epoll_event ev[8];
	struct timespec ts = { 0, 1000 };

	return uepoll_pwait2(c->ep2, ev, 8, &ts, NULL);
}

static long op_write(struct ctx *c)
{
	return ueventfd_write(c->efd, 3);
}

static long op_uwrite(struct ctx *c)
{
	uint64_t v = 1;

	return uepoll_write(c->efd, &v, sizeof(v));
}

static long op_read(struct ctx *c)
{
	eventfd_t v;

	return ueventfd_read(c->efd, &v);
}

static long op_uread(struct ctx *c)
{
	uint64_t v;

	return uepoll_read(c->efd2, &v, sizeof(v));
}

static long op_mod(struct ctx *c)
{
	return ctl(c->ep, EPOLL_CTL_MOD, c->efd, EPOLLIN | EPOLLONESHOT, 4);
}

static long op_mod_nested(struct ctx *c)
{
	return ctl(c->ep2, EPOLL_CTL_MOD, c->ep, EPOLLIN | EPOLLET, 5);
}

static long op_add_pipe(struct ctx *c)
{
	return ctl(c->ep, EPOLL_CTL_ADD, c->p[0], EPOLLIN, 6);
}

static long op_del(struct ctx *c)
{
	return uepoll_ctl(c->ep, EPOLL_CTL_DEL, c->efd, NULL);
}

static long op_del_nested(struct ctx *c)
{
	return uepoll_ctl(c->ep2, EPOLL_CTL_DEL, c->ep, NULL);
}

static long op_close_efd(struct ctx *c)
{
	return uepoll_close(c->efd2);
}

static long op_close_ep(struct ctx *c)
{
	return uepoll_close(c->ep);
}

static void scen_no_alloc(void)
{
	static const struct {
		const char *name;
		op_fn fn;
	} ops[] = {
		{ "uepoll_wait", op_wait },
		{ "uepoll_pwait", op_pwait },
		{ "uepoll_pwait2", op_pwait2 },
		{ "ueventfd_write", op_write },
		{ "uepoll_write", op_uwrite },
		{ "ueventfd_read", op_read },
		{ "uepoll_read", op_uread },
		{ "ctl MOD ueventfd", op_mod },
		{ "ctl MOD nested", op_mod_nested },
		{ "ctl ADD pipe", op_add_pipe },
		{ "ctl DEL ueventfd", op_del },
		{ "ctl DEL nested", op_del_nested },
		{ "uepoll_close ueventfd", op_close_efd },
		{ "uepoll_close instance", op_close_ep },
	};
	struct ctx c = { 0 };

	c.ep = uepoll_create1(0);
	c.ep2 = uepoll_create1(0);
	c.efd = ueventfd(1, EFD_NONBLOCK);
	c.efd2 = ueventfd(1, EFD_NONBLOCK);
	REQUIRE(c.ep >= 0 && c.ep2 >= 0 && c.efd >= 0 && c.efd2 >= 0);
	REQUIRE(pipe2(c.p, O_NONBLOCK) == 0);
	CHECK_EQ(ctl(c.ep, EPOLL_CTL_ADD, c.efd, EPOLLIN, 1), 0);
	CHECK_EQ(ctl(c.ep, EPOLL_CTL_ADD, c.efd2, EPOLLIN, 2), 0);
	CHECK_EQ(ctl(c.ep2, EPOLL_CTL_ADD, c.ep, EPOLLIN, 3), 0);
	CHECK_EQ(ctl(c.ep2, EPOLL_CTL_ADD, c.efd, EPOLLIN, 4), 0);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		fault_loop(ops[i].name, &c, ops[i].fn, NULL, 0, 0);
	CHECK_EQ(uepoll_close(c.ep2), 0);
	CHECK_EQ(uepoll_close(c.efd), 0);
	close(c.p[0]);
	close(c.p[1]);
}

/*
 * Run a scenario in a child; its failures and injected count come back
 * through a pipe.  The child exits through exit(), so LeakSanitizer checks
 * it (a leak makes its exit status non-zero).
 */
/*
 * Held writes (UEVENTFD_HOLD_WRITES) need room in the timer's heap, which
 * ueventfd_coalesce reserves (a write, which may come from a signal
 * handler, allocates nothing).  When that allocation fails the call fails
 * with ENOMEM and changes nothing: writes are shown at once.  Then, with
 * memory back, writes are held again and shown by the timer.
 */
static void scen_held(void)
{
	struct ueventfd_coalesce co = { .delay_us = UEVENTFD_COALESCE_MAX_US,
					.flags = UEVENTFD_HOLD_WRITES }, old;
	int u = ueventfd(0, EFD_NONBLOCK), fds = t_count_fds();
	eventfd_t v = 0;

	REQUIRE(u >= 0);
	countdown = 1;
	fired = false;
	CHECK_ERR(ueventfd_coalesce(u, &co, NULL), ENOMEM);
	countdown = 0;
	CHECK(fired);
	CHECK_EQ(ueventfd_coalesce(u, NULL, &old), 0);
	CHECK_EQ(old.delay_us, 0);
	CHECK_EQ(ueventfd_write(u, 5), 0);
	CHECK_EQ(ueventfd_read(u, &v), 0);
	CHECK_EQ(v, 5);
	REQUIRE(ueventfd_coalesce(u, &co, NULL) == 0);
	CHECK_EQ(ueventfd_write(u, 2), 0);
	/* Blocking-free check of the hold is t_hold_writes's; here only that
	 * the value arrives, within a loose bound. */
	for (int i = 0; i < 500 && ueventfd_read(u, &v) != 0; i++)
		t_sleep_ms(10);
	CHECK_EQ(v, 2);
	CHECK_EQ(uepoll_close(u), 0);
	/* A ueventfd holds two fds (its number and a private duplicate). */
	CHECK_EQ(t_count_fds(), fds - 2);
}

/* A fork whose prepare cannot allocate its list of the objects to share
 * (its first allocation fails) leaves them as they are (uepoll_demote(3),
 * ENOMEM: the child's copy of the ueventfd is its own); the next fork
 * shares them (PREPARED in obj.c: a failed share is tried again). */
static void scen_fork_share(void)
{
	int u = ueventfd(0, EFD_NONBLOCK), st;
	eventfd_t v = 0;
	pid_t pid;

	REQUIRE(u >= 0);
	fired = false;
	countdown = 1;
	pid = fork();
	countdown = 0;
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(0);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(fired);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(ueventfd_write(u, 1) == 0 ? 0 : 1);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(ueventfd_read(u, &v) == 0 && v == 1);
	CHECK_EQ(uepoll_close(u), 0);
}

static unsigned long run_child(const char *name, void (*fn)(void))
{
	unsigned long res[2] = { 0, 0 };
	int p[2], st;
	pid_t pid;

	REQUIRE(pipe(p) == 0);
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		int rc;

		close(p[0]);
		t_failures = 0; /* the parent's count so far is not ours */
		t_begin(name);
		fn();
		for (int i = 0; i < nsites; i++)
			printf("%s: site %s(%zu, %zu)\n", name, sites[i].fn,
			       sites[i].a, sites[i].b);
		rc = t_end();
		res[0] = (unsigned long)t_failures;
		res[1] = injected;
		if (write(p[1], res, sizeof(res)) != (ssize_t)sizeof(res))
			rc = 1;
		close(p[1]);
		exit(rc);
	}
	close(p[1]);
	if (read(p[0], res, sizeof(res)) != (ssize_t)sizeof(res)) {
		fprintf(stderr, "%s: child died\n", name);
		t_failures++;
	}
	close(p[0]);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "%s: child exit status %#x (a leak report above?)\n",
			name, st);
		t_failures++;
	}
	t_failures += (int)res[0];
	return res[1];
}

int main(void)
{
	unsigned long n = 0;

	t_begin("t_faults");
	t_watchdog(120);
	n += run_child("faults/ueventfd", scen_efd);
	n += run_child("faults/instance", scen_instance);
	n += run_child("faults/ctl", scen_ctl);
	n += run_child("faults/no-alloc", scen_no_alloc);
	n += run_child("faults/held-write", scen_held);
	n += run_child("faults/fork-share", scen_fork_share);
	printf("allocation failures injected: %lu\n", n);
	CHECK(n >= 9);
	return t_end();
}
