/*
 * t_fork_signal_write: a signal handler's write of a coalescing ueventfd,
 * in a forked child, as the child's first write (issue 32, bug 8).
 *
 * A write is async-signal-safe (ueventfd_write(3), as write(2) on an
 * eventfd is): it never allocates, takes a lock a handler may not take,
 * or starts a thread, in any process.  Before the fix a forked child had
 * no coalescing timer thread until its first coalesced write started one
 * (pthread_create, which allocates): from a handler that had interrupted
 * malloc, that deadlocked.
 *
 * The parent gives a ueventfd a 100 ms delay and forks; the child's
 * SIGUSR1 handler writes 1 to it, the child's first write:
 *  - in the plain build the signal is raised from inside malloc (the test
 *    defines malloc, calloc and realloc, which call glibc's own; one call
 *    raises the signal first): an allocation by the handler's write is
 *    then a re-entry, reported (exit 97) instead of the deadlock it was;
 *  - in every build, the child has as many threads after the handler's
 *    write as before (exit 5 otherwise); under ThreadSanitizer, whose
 *    runtime delivers no signal in the child of a threaded process, the
 *    child calls the handler itself;
 *  - where the child can have a timer thread (not under ThreadSanitizer,
 *    which cannot start threads in the child of a threaded process) the
 *    write is coalesced all the same: the handler's thread makes no system
 *    call that writes the kernel fd (libcwrap's hook counts them; exit 6
 *    otherwise);
 *  - the child exits normally; the parent then finds the fd readable and
 *    reads 1 (the exit delivers what was held), as with the kernel's
 *    eventfd, which runs the same script first (a handler's write(2)).
 */
#include "libcwrap.h"
#include "calls.h"
#include "xproc.h"

#include <dirent.h>
#include <sys/syscall.h>

static const struct calls *S;
static int efd;

#if !defined(X_ASAN) && !defined(T_TSAN)
#define T_PROBE_MALLOC 1

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);

/* The thread whose next allocation raises SIGUSR1 first; the thread
 * inside that allocation while its handler runs. */
static volatile pid_t probe_raise, probe_in;

static void probe(void)
{
	static const char msg[] = "t_fork_signal_write: the handler's write "
				  "allocated, inside the malloc it interrupted\n";
	pid_t me;

	if (!probe_raise && !probe_in)
		return;
	me = gettid();
	if (probe_in == me) {
		if (write(2, msg, sizeof(msg) - 1) < 0)
			_exit(98);
		_exit(97);
	}
	if (probe_raise == me) {
		probe_raise = 0;
		probe_in = me;
		raise(SIGUSR1);
		probe_in = 0;
	}
}

/* Default visibility (the build hides symbols): exported, they are what
 * glibc's own calls (pthread_create's) reach, as a preloaded allocator's. */
#define T_EXPORT __attribute__((visibility("default")))

T_EXPORT void *malloc(size_t n)
{
	probe();
	return __libc_malloc(n);
}

T_EXPORT void *calloc(size_t n, size_t size)
{
	probe();
	return __libc_calloc(n, size);
}

T_EXPORT void *realloc(void *p, size_t n)
{
	probe();
	return __libc_realloc(p, n);
}
#endif

static volatile sig_atomic_t handled;
static void *volatile sink; /* (the probed allocation is not optimised out) */
/* write(2)s the library made on this thread (its seam: syscall()). */
static volatile int kwrites;

static void count_kwrites(long nr)
{
	if (nr == SYS_write)
		kwrites++;
	wrap_hook_once(count_kwrites);
}

static void on_usr1(int sig)
{
	uint64_t one = 1;

	(void)sig;
	handled = S->write(efd, &one, sizeof(one)) == sizeof(one) ? 1 : -1;
}

static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static _Noreturn void child(void)
{
	struct sigaction sa;
	int before, after, calls;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	x_step(S->name, "the child's handler");
	before = threads();
	kwrites = 0;
	wrap_hook_once(count_kwrites);
#if defined(T_PROBE_MALLOC)
	probe_raise = gettid();
	sink = malloc(64); /* the handler runs inside */
#elif defined(T_TSAN)
	/* ThreadSanitizer delivers no signal in the child of a threaded
	 * process (its runtime ignores it there): the handler's call, from
	 * the thread. */
	on_usr1(SIGUSR1);
#else
	raise(SIGUSR1);
#endif
	wrap_hook_once(NULL);
	calls = kwrites;
	free((void *)sink);
	after = threads();
	x_step_end();
	if (handled != 1) {
		fprintf(stderr, "the handler's write: %d\n", (int)handled);
		exit(4);
	}
	if (after != before) {
		fprintf(stderr, "the handler's write started a thread (%d, then "
				"%d)\n", before, after);
		exit(5);
	}
#ifndef T_TSAN
	if (S == &calls_uepoll && calls != 0) {
		fprintf(stderr, "the child's coalesced write made %d "
				"write(2)s: it woke at once\n", calls);
		exit(6);
	}
#else
	(void)calls;
#endif
	exit(0); /* not _exit: what the library does at exit runs */
}

static void run(const struct calls *s, struct t_log *L)
{
	struct t_child c;
	uint64_t v = 0;

	S = s;
	efd = s->eventfd(0, EFD_NONBLOCK);
	REQUIRE(efd >= 0);
	if (s == &calls_uepoll) {
		struct ueventfd_coalesce co = { .delay_us = 100000 };

		REQUIRE(ueventfd_coalesce(efd, &co, NULL) == 0);
	}
	if (x_fork(&c) == 0)
		child();
	t_log_put(L, t_child_reap(&c, 15000, "the child"));
	t_log_put(L, x_poll(efd, POLLIN, 0));
	t_log_res(L, s->read(efd, &v, sizeof(v)));
	t_log_put(L, (long)v);
	CHECK_EQ(s->close(efd), 0);
}

int main(void)
{
	struct t_log L[2];

	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_begin("t_fork_signal_write");
	x_init();
	memset(L, 0, sizeof(L));
	run(&calls_kernel, &L[0]);
	run(&calls_uepoll, &L[1]);
	CHECK_EQ(L[0].v[0], 0);
	CHECK_EQ(L[0].v[1], POLLIN);
	CHECK_EQ(L[0].v[3], 1);
	t_log_same(&L[0], &L[1], "a handler's first write in a forked child");
	return t_end();
}
