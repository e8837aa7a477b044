/*
 * sigop.h - a signal handler's close, dup2, dup3 or fcntl while its thread
 * is inside the library (issue 33, "Signals"; SIGNALS in src/obj.c), for
 * t_signal_close, t_signal_dup2, t_signal_dup3 and t_signal_fcntl.
 *
 * close(2), dup2(2), dup3(2) and fcntl(2) are async-signal-safe, so a
 * program may call them from a handler at any moment.  A test names the
 * handler's operations (struct sop_op: what its SIGUSR1 handler does with
 * the fixture's numbers) and sop_main runs each at every hold point (enum
 * sop_hold), where the thread T (the main thread) is inside a call of the
 * library that holds a lock, and its handler runs there:
 *   none      T is outside the library (depth 0: the handler does all);
 *   mtx       an instance's port->mtx: T's ctl MOD of a kernel fd
 *             registered EPOLLURGENT (a record: krec_ctl_fd), at its
 *             epoll_ctl(2);
 *   walk      the written ueventfd's wq->lock and an instance's
 *             bell.dblock: T's ueventfd_write of efd, at the doorbell's
 *             write(2) in the walk of its watchers;
 *   numbers   obj__lock: T's uepoll_dup of efd2, at its fcntl(F_DUPFD)
 *             (the lock blocks signals: the handler runs as it is dropped,
 *             its depth still counted);
 *   nest      an instance's port->mtx and another's bell.wlock: T's ADD of
 *             an instance into P, at the epoll_ctl(2) that turns the
 *             inner's doorbell level-triggered (bell__watch);
 *   lockwait  inside pthread_mutex_lock of port->mtx, waiting: a helper
 *             thread holds the lock (parked in its own ctl), another sends
 *             T the signal once T sleeps there, and releases the holder
 *             only after the handler has returned (so the handler must
 *             take no lock but obj__lock: it owes the rest).  Not under
 *             ThreadSanitizer, which runs the handler only when the lock
 *             is taken;
 *   malloc    inside malloc(3), outside the library (depth 0: the handler
 *             does all at once): this file's malloc raises the signal
 *             before it calls glibc's, and an allocator call of the
 *             handler's (malloc, calloc, realloc, aligned_alloc, free) is
 *             a failure: it could wait for the allocator's lock its frame
 *             holds (a close's items and records are kept for later:
 *             obj_free_later).  The plain build only (the sanitizers have
 *             their own allocators, and ThreadSanitizer reports a
 *             handler's allocator call by itself).
 * The hooks are libcwrap's (wrap_hook_all: every system call of the
 * library), which raise SIGUSR1 in T (raise(), or tgkill(2) while the
 * signal is blocked: ThreadSanitizer's raise() insists on running the
 * handler at once).  The same sequence runs on the kernel's objects (an
 * epoll, eventfds), with the handler's call before or after T's as the
 * library's hold point is before or after T's kernel call (nest: after, as
 * a kernel call in flight keeps its file whatever a close does meanwhile,
 * and T's ctl has its instance already), and the two logs
 * must be equal (t_log_same): what each call returned, and then what the
 * numbers are (F_GETFD), where a write through each lands (a read of each),
 * and what each instance reports; so a number closed by the handler is
 * free (a new eventfd() gets it, and writes reach that one), an instance
 * no longer reports a ueventfd the handler closed (or whose number it
 * replaced), and a dup's number leads to its object.  Each run's fds are
 * counted before its fixture and after its teardown (the objects' private
 * fds close with their release: nothing leaked, nothing left owed).  No
 * clock decides: a hang is the watchdog's (60 s).
 */
#ifndef UEPOLL_TEST_SIGOP_H
#define UEPOLL_TEST_SIGOP_H

#include "libcwrap.h"
#include "testlib.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The calls, the kernel's or the library's (which passes a kernel fd to the
 * kernel). */
struct sop_api {
	bool kernel;
	int (*create1)(int flags);
	int (*efd)(unsigned int v, int flags);
	int (*ctl)(int ep, int op, int fd, struct epoll_event *ev);
	int (*wait)(int ep, struct epoll_event *ev, int n, int timeout);
	ssize_t (*read)(int fd, void *b, size_t n);
	ssize_t (*write)(int fd, const void *b, size_t n);
	int (*close)(int fd);
	int (*dup)(int fd);
	int (*dup2)(int a, int b);
	int (*dup3)(int a, int b, int flags);
	int (*fcntl)(int fd, int cmd, ...);
};

static const struct sop_api sop_kernel = {
	true, epoll_create1, eventfd, epoll_ctl, epoll_wait, read, write,
	close, dup, dup2, dup3, fcntl,
};
static const struct sop_api sop_uepoll = {
	false, uepoll_create1, ueventfd, uepoll_ctl, uepoll_wait, uepoll_read,
	uepoll_write, uepoll_close, uepoll_dup, uepoll_dup2, uepoll_dup3,
	uepoll_fcntl,
};

/* Numbers above the fd table's first chunk (4096 each: a dup onto one
 * maps a new chunk, from the handler), and one inside it. */
#define SOP_HIGH 4200
#define SOP_LOW 900

/*
 * The fixture: instances ep (efd: data 1, efd2: 2, pr: 3, EPOLLURGENT on
 * the library's) and P (efd: 11; nest: inner, 21); efd and efd2 non-blocking
 * (u)eventfds at 0; kx a kernel eventfd; a pipe.  Numbers the handler or T
 * make are noted in `made` and closed with the rest.
 */
struct sop_fix {
	int ep, P, inner, efd, efd2, kx, pr, pw;
	int k;	  /* a new eventfd the handler made, or -1 */
	int tdup; /* T's dup (numbers), or -1 */
};

enum sop_hold {
	SOP_NONE,
	SOP_MTX,
	SOP_WALK,
	SOP_NUMBERS,
	SOP_NEST,
	SOP_LOCKWAIT,
	SOP_MALLOC,
	SOP_NHOLD
};

static const char *const sop_hold_name[SOP_NHOLD] = {
	"none", "mtx", "walk", "numbers", "nest", "lockwait", "malloc",
};
/* The handler's call comes before T's kernel call (the hook is before it),
 * else after it (the kernel's effect of T's call is made first). */
static const bool sop_hold_first[SOP_NHOLD] = {
	true, true, false, false, false, true, true,
};

struct sop_op {
	const char *name;
	/* Before T's call, outside the handler (may be NULL). */
	void (*prepare)(struct sop_fix *f);
	/* The handler's work: log what its calls return. */
	void (*handler)(struct sop_fix *f, struct t_log *l);
	/* After T's call, before the common look (may be NULL). */
	void (*after)(struct sop_fix *f, struct t_log *l);
};

/* The run in progress (the handler and the hooks read them). */
static const struct sop_api *A;
static struct sop_fix F;
static const struct sop_op *sop__op;
static struct t_log sop__hlog;
static volatile sig_atomic_t sop__in_handler;
static _Atomic int sop__hdone;
/* T's hook: the hold point armed (0: none), and whether it fired. */
static _Atomic int sop__armed, sop__fired;
static int sop__tid;
static pthread_t sop__tthread;
/* Who this thread is: 1 T, 2 the lockwait holder. */
static __thread int sop__role;

/* ---- the allocator (the malloc hold point) ------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
#define SOP__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SOP__ASAN 1
#endif
#endif
#if !defined(SOP__ASAN) && !defined(T_TSAN)
#define SOP_PROBE_MALLOC 1

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);

/* The thread whose next malloc raises SIGUSR1 first; the thread inside
 * that malloc while its handler runs; the allocator calls made there. */
static volatile pid_t sop__probe_raise, sop__probe_in;
static _Atomic int sop__reentries;

static void sop__probe(void)
{
	pid_t me;

	if (!sop__probe_raise && !sop__probe_in)
		return;
	me = gettid();
	if (sop__probe_in == me) {
		atomic_fetch_add(&sop__reentries, 1);
	} else if (sop__probe_raise == me) {
		sop__probe_raise = 0;
		sop__probe_in = me;
		raise(SIGUSR1);
		sop__probe_in = 0;
	}
}

/* Exported (the build hides symbols): the library's calls reach them, as
 * a preloaded allocator's would. */
#define SOP__EXPORT __attribute__((visibility("default")))

SOP__EXPORT void *malloc(size_t n)
{
	sop__probe();
	return __libc_malloc(n);
}

SOP__EXPORT void *calloc(size_t n, size_t size)
{
	sop__probe();
	return __libc_calloc(n, size);
}

SOP__EXPORT void *realloc(void *p, size_t n)
{
	sop__probe();
	return __libc_realloc(p, n);
}

SOP__EXPORT void *aligned_alloc(size_t align, size_t n)
{
	sop__probe();
	return __libc_memalign(align, n);
}

SOP__EXPORT void free(void *p)
{
	sop__probe();
	__libc_free(p);
}
#endif

/* ---- helper threads ------------------------------------------------- */

/* A worker that runs one function at a time for others (the handler may
 * ask it: it spins, so it waits for nothing a handler's thread holds). */
struct sop_worker {
	pthread_t th;
	int role;
	void (*_Atomic job)(void);
	_Atomic int stop;
};

static void *sop__worker_main(void *arg)
{
	struct sop_worker *w = arg;

	sop__role = w->role;
	while (!atomic_load(&w->stop)) {
		void (*job)(void) = atomic_load(&w->job);

		if (!job) {
			sched_yield();
			continue;
		}
		job();
		atomic_store(&w->job, NULL);
	}
	return NULL;
}

static void sop_worker_start(struct sop_worker *w, int role)
{
	w->role = role;
	atomic_store(&w->job, NULL);
	atomic_store(&w->stop, 0);
	REQUIRE(pthread_create(&w->th, NULL, sop__worker_main, w) == 0);
}

static void sop_worker_post(struct sop_worker *w, void (*job)(void))
{
	atomic_store(&w->job, job);
}

static void sop_worker_wait(struct sop_worker *w)
{
	while (atomic_load(&w->job))
		sched_yield();
}

static void sop_worker_stop(struct sop_worker *w)
{
	atomic_store(&w->stop, 1);
	REQUIRE(t_join_within(w->th, 10000));
}

/* The worker a handler may ask (sop_ask), and the lockwait holder. */
static struct sop_worker sop_helper, sop__holder;
/* The holder is parked inside its ctl, holding ep's mtx, until released. */
static _Atomic int sop__parked, sop__release;

/* Run job on the helper and wait for it (from a handler too). */
static inline void sop_ask(void (*job)(void))
{
	sop_worker_post(&sop_helper, job);
	sop_worker_wait(&sop_helper);
}

/* ---- the hooks ------------------------------------------------------ */

/* SIGUSR1 to this thread, now if it is not blocked. */
static void sop__signal_self(void)
{
	sigset_t cur;

	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	if (sigismember(&cur, SIGUSR1))
		syscall(SYS_tgkill, getpid(), sop__tid, SIGUSR1);
	else
		raise(SIGUSR1);
}

/* A hold point's system call (T's, outside its handler). */
static bool sop__at(int hold, long nr, const long *a)
{
	switch (hold) {
	case SOP_MTX:
		return nr == SYS_epoll_ctl;
	case SOP_WALK:
		return nr == SYS_write;
	case SOP_NUMBERS:
		return nr == SYS_fcntl && a[1] == F_DUPFD;
	case SOP_NEST:
		return nr == SYS_epoll_ctl && a[1] == EPOLL_CTL_MOD;
	}
	return false;
}

/* A handler's own hook (t_signal_fcntl): at its next system call nr. */
static void (*_Atomic sop_hhook)(void);
static _Atomic long sop_hhook_nr;

static void sop__on_syscall(long nr, const long *a)
{
	if (sop__role == 1 && !sop__in_handler) {
		int hold = atomic_load(&sop__armed);

		if (hold && sop__at(hold, nr, a)) {
			atomic_store(&sop__armed, 0);
			atomic_store(&sop__fired, 1);
			sop__signal_self();
		}
	} else if (sop__role == 1 && sop__in_handler &&
		   atomic_load(&sop_hhook) && nr == atomic_load(&sop_hhook_nr)) {
		void (*h)(void) = atomic_exchange(&sop_hhook, NULL);

		if (h)
			h();
	} else if (sop__role == 2 && nr == SYS_epoll_ctl &&
		   !atomic_load(&sop__parked)) {
		/* The holder, inside ep's mtx: parked until released. */
		atomic_store(&sop__parked, 1);
		while (!atomic_load(&sop__release))
			sched_yield();
	}
}

static void sop__on_usr1(int sig)
{
	int e = errno;

	(void)sig;
	sop__in_handler = 1;
	sop__op->handler(&F, &sop__hlog);
	sop__in_handler = 0;
	atomic_store(&sop__hdone, 1);
	errno = e;
}

/* ---- the fixture ---------------------------------------------------- */

static int sop__add(int ep, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return A->ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static void sop__make(void)
{
	int p[2];

	F.ep = A->create1(0);
	F.P = A->create1(0);
	F.inner = A->create1(0);
	F.efd = A->efd(0, EFD_NONBLOCK);
	F.efd2 = A->efd(0, EFD_NONBLOCK);
	F.kx = eventfd(0, EFD_NONBLOCK);
	REQUIRE(pipe2(p, O_NONBLOCK) == 0);
	F.pr = p[0];
	F.pw = p[1];
	F.k = -1;
	F.tdup = -1;
	REQUIRE(F.ep >= 0 && F.P >= 0 && F.inner >= 0 && F.efd >= 0 &&
		F.efd2 >= 0 && F.kx >= 0);
	REQUIRE(sop__add(F.ep, F.efd, EPOLLIN, 1) == 0);
	REQUIRE(sop__add(F.ep, F.efd2, EPOLLIN, 2) == 0);
	/* A record on the library's side (krec_ctl_fd, under mtx). */
	REQUIRE(sop__add(F.ep, F.pr, EPOLLIN | (A->kernel ? 0 : EPOLLURGENT),
			 3) == 0);
	REQUIRE(sop__add(F.P, F.efd, EPOLLIN, 11) == 0);
}

/* Every number the run may have: the fixture's, and the ones made on it. */
static int sop__numbers(int *v)
{
	int n = 0;

	v[n++] = F.efd;
	v[n++] = F.efd2;
	v[n++] = F.kx;
	v[n++] = SOP_LOW;
	v[n++] = SOP_HIGH;
	v[n++] = SOP_HIGH + 1;
	v[n++] = SOP_HIGH + 2;
	if (F.k >= 0 && F.k != F.efd)
		v[n++] = F.k;
	if (F.tdup >= 0)
		v[n++] = F.tdup;
	return n;
}

/* What the numbers are now, where a write lands, what the instances
 * report. */
static void sop__observe(struct t_log *l)
{
	struct epoll_event ev[8];
	int v[16], n = sop__numbers(v), open[16];
	uint64_t x;

	for (int i = 0; i < n; i++) {
		int fl = A->fcntl(v[i], F_GETFD);

		t_log_res(l, fl);
		open[i] = fl >= 0;
	}
	t_log_events(l, ev, A->wait(F.ep, ev, 8, 0));
	t_log_events(l, ev, A->wait(F.P, ev, 8, 0));
	for (int i = 0; i < n; i++) {
		if (!open[i])
			continue;
		x = 1ull << i;
		t_log_res(l, A->write(v[i], &x, sizeof(x)));
	}
	for (int i = 0; i < n; i++) {
		if (!open[i])
			continue;
		x = 0;
		t_log_res(l, A->read(v[i], &x, sizeof(x)));
		t_log_put(l, (long)x);
	}
	t_log_events(l, ev, A->wait(F.ep, ev, 8, 0));
	t_log_events(l, ev, A->wait(F.P, ev, 8, 0));
}

static void sop__teardown(void)
{
	int v[16], n = sop__numbers(v);

	for (int i = 0; i < n; i++)
		if (fcntl(v[i], F_GETFD) >= 0)
			A->close(v[i]);
	A->close(F.ep);
	A->close(F.P);
	A->close(F.inner);
	close(F.pr);
	close(F.pw);
}

/* ---- T's call at each hold point --------------------------------------- */

static void sop__park_job(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLURGENT,
				  .data.u64 = 3 };

	CHECK_EQ(uepoll_ctl(F.ep, EPOLL_CTL_MOD, F.pr, &ev), 0);
}

static _Atomic int sop__t_waiting;

/* lockwait: once T sleeps in the mutex the holder holds, the signal; the
 * holder goes on only after the handler has returned. */
static void *sop__signaller(void *arg)
{
	(void)arg;
	while (!atomic_load(&sop__t_waiting))
		sched_yield();
	CHECK_EQ(t_blocked_in(sop__tid, 10000), SYS_futex);
	pthread_kill(sop__tthread, SIGUSR1);
	while (!atomic_load(&sop__hdone))
		sched_yield();
	atomic_store(&sop__release, 1);
	return NULL;
}

/* T's call for hold point h (its result logged). */
static void sop__tcall(int h, struct t_log *l)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 3 };
	uint64_t one = 1;

	switch (h) {
	case SOP_MTX:
	case SOP_LOCKWAIT:
		if (!A->kernel)
			ev.events |= EPOLLURGENT;
		t_log_res(l, A->ctl(F.ep, EPOLL_CTL_MOD, F.pr, &ev));
		break;
	case SOP_WALK:
		t_log_res(l, A->write(F.efd, &one, sizeof(one)));
		break;
	case SOP_NUMBERS:
		F.tdup = A->dup(F.efd2);
		t_log_put(l, F.tdup >= 0);
		break;
	case SOP_NEST:
		ev.data.u64 = 21;
		t_log_res(l, A->ctl(F.P, EPOLL_CTL_ADD, F.inner, &ev));
		break;
#ifdef SOP_PROBE_MALLOC
	case SOP_MALLOC: {
		static void *volatile sink;

		/* The handler runs inside this malloc (the library's run). */
		if (!A->kernel)
			sop__probe_raise = sop__tid;
		sink = malloc(64);
		t_log_put(l, sink != NULL);
		free(sink);
		break;
	}
#endif
	}
}

/* One run of op at hold point h, on the kernel's objects or the library's;
 * its log in l. */
static void sop__run(const struct sop_op *op, int h, bool kernel,
		     struct t_log *l)
{
	int fds = t_count_fds();
	pthread_t sig;

	A = kernel ? &sop_kernel : &sop_uepoll;
	sop__op = op;
	l->n = 0;
	sop__hlog.n = 0;
	atomic_store(&sop__hdone, 0);
	atomic_store(&sop__fired, 0);
	sop__make();
	if (op->prepare)
		op->prepare(&F);
	if (kernel || h == SOP_NONE) {
		/* The handler's call where the library's hold point puts it. */
		if (sop_hold_first[h])
			raise(SIGUSR1);
		sop__tcall(h, l);
		if (!sop_hold_first[h])
			raise(SIGUSR1);
	} else if (h == SOP_LOCKWAIT) {
		atomic_store(&sop__parked, 0);
		atomic_store(&sop__release, 0);
		atomic_store(&sop__t_waiting, 0);
		sop_worker_post(&sop__holder, sop__park_job);
		while (!atomic_load(&sop__parked))
			sched_yield();
		REQUIRE(pthread_create(&sig, NULL, sop__signaller, NULL) == 0);
		atomic_store(&sop__t_waiting, 1);
		sop__tcall(h, l);
		REQUIRE(t_join_within(sig, 10000));
		sop_worker_wait(&sop__holder);
		atomic_store(&sop__fired, 1);
	} else if (h == SOP_MALLOC) {
#ifdef SOP_PROBE_MALLOC
		atomic_store(&sop__reentries, 0);
		sop__tcall(h, l);
		atomic_store(&sop__fired, atomic_load(&sop__hdone));
		if (atomic_load(&sop__reentries)) {
			fprintf(stderr, "%s/malloc: the handler called the "
				"allocator %d time(s), inside the malloc it "
				"interrupted\n", op->name,
				atomic_load(&sop__reentries));
			t_failures++;
		}
#endif
	} else {
		atomic_store(&sop__armed, h);
		sop__tcall(h, l);
		atomic_store(&sop__armed, 0);
	}
	if (!kernel && h != SOP_NONE && !atomic_load(&sop__fired)) {
		fprintf(stderr, "%s/%s: the hold point was never reached\n",
			op->name, sop_hold_name[h]);
		t_failures++;
	}
	CHECK(atomic_load(&sop__hdone));
	for (int i = 0; i < sop__hlog.n; i++)
		t_log_put(l, sop__hlog.v[i]);
	if (op->after)
		op->after(&F, l);
	sop__observe(l);
	sop__teardown();
	if (t_count_fds() != fds) {
		fprintf(stderr, "%s/%s (%s): %d fds before, %d after\n",
			op->name, sop_hold_name[h], kernel ? "kernel" : "uepoll",
			fds, t_count_fds());
		t_failures++;
	}
}

/* Run every op at every hold point, each compared with the kernel's. */
static int sop_main(const char *name, const struct sop_op *ops, int nops)
{
	struct sigaction sa;
	struct rlimit rl;
	struct t_log k, u;
	char what[128];
	/* One run only, for a look at it (e.g. SOP_ONLY=close/walk). */
	const char *only = getenv("SOP_ONLY");

	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_begin(name);
	t_watchdog(60);
	/* Room for the high numbers. */
	REQUIRE(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	if (rl.rlim_cur < SOP_HIGH + 16) {
		if (rl.rlim_max < SOP_HIGH + 16)
			T_SKIP("RLIMIT_NOFILE too low for the high numbers");
		rl.rlim_cur = SOP_HIGH + 16;
		REQUIRE(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	}
	sop__tid = t_gettid();
	sop__tthread = pthread_self();
	sop__role = 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sop__on_usr1;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	wrap_hook_all(sop__on_syscall, NULL);
	sop_worker_start(&sop_helper, 0);
	sop_worker_start(&sop__holder, 2);
	for (int i = 0; i < nops; i++)
		for (int h = 0; h < SOP_NHOLD; h++) {
#ifdef T_TSAN
			if (h == SOP_LOCKWAIT)
				continue;
#endif
#ifndef SOP_PROBE_MALLOC
			if (h == SOP_MALLOC)
				continue;
#endif
			snprintf(what, sizeof(what), "%s/%s", ops[i].name,
				 sop_hold_name[h]);
			if (only && strcmp(only, what) != 0)
				continue;
			sop__run(&ops[i], h, true, &k);
			sop__run(&ops[i], h, false, &u);
			t_log_same(&k, &u, what);
			printf("%s: done\n", what);
			fflush(stdout);
		}
	sop_worker_stop(&sop_helper);
	sop_worker_stop(&sop__holder);
	wrap_hook_all(NULL, NULL);
	return t_end();
}

#endif
