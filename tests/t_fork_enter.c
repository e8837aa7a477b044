/*
 * t_fork_enter: a thread that enters the library just as a fork closes
 * it is either seen by the fork or waits for it (src/lock.c, GATE and
 * FENCE; models/gate.pml, MUTANT_LOAD_FIRST and MUTANT_SPAN_LOAD_FIRST).
 *
 * A thread's outermost lock stores "inside" in its slot, then loads the
 * fork gate; a span (a demotion, a creation) adds itself to the spans in
 * flight, then loads the fork fence.  The fork's prepare closes the gate
 * (the fence), then waits for the threads inside (the spans).  Dekker:
 * the thread's store comes before its load, so either the fork sees it, or
 * it sees the fork.  Here the thread stops at that store: the page that
 * holds it (the thread's slot, found through the library's lock__me; the
 * span count, found in the program's symbol table) is made read-only, and
 * the thread's SIGSEGV handler waits there until the fork's prepare is
 * over (the page is writable again meanwhile: the store is made again
 * when the handler returns).  Then, before the fork's clone (this
 * program's prepare handler, registered before the library's, runs after
 * it), the thread goes on, and the fork waits until it has done its step
 * or sleeps.  The child then uses the object:
 *  a. the thread is adding an instance to another (its kernel epoll is
 *     registered under both instances' locks: the thread's hook at that
 *     system call, through libcwrap's wrap_hook_all, waits until the fork is
 *     over).  A fixed thread sees the gate closed and waits; the child's
 *     own ADD to the instance must return.  A thread that loaded the gate
 *     before its store had taken the locks: the child found them held for
 *     ever;
 *  b. the thread demotes an instance (uepoll_demote).  A fixed thread sees
 *     the fence closed and waits; the child's ADD and wait must work.  A
 *     span that loaded the fence before its add had marked the instance
 *     DEMOTING: the child's ctl waited for ever for a demotion no thread
 *     of its would finish.
 * A hang is a child that has not ended within its step's deadline
 * (xproc.h); nothing is decided by a clock.  Skipped under
 * ThreadSanitizer, whose runtime makes the atomic operations (and takes
 * the fault) holding its own locks.
 */
#include "forkrace.h"
#include "xproc.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The library's (src/lock.h): this thread's slot for the fork gate, and
 * the number of the library's locks it holds. */
extern __thread void *lock__me;
extern __thread unsigned lock__depth;

static pid_t pid0;
static int scenario, ep, ep2, main_watch;
static void *target; /* the store the thread stops at */
static void *s_slot; /* the thread's slot (lock__me) */
/* What threads write while the page is read-only: on a page of its own
 * (the program's own variables may share the library's page). */
static struct flags {
	_Atomic int s_watch, go, parked, released, in_lock, forked, done_s,
		stop, ro;
} *F;
static __thread int s_hook, late;
static int held; /* the thread held a lock at the clone */

static void *page_of(void *p)
{
	return (void *)((uintptr_t)p & ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1));
}

/* ---- finding a static variable of the library ------------------------ */

static int bias_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uintptr_t *)data = info->dlpi_addr;
	return 1; /* the first is the program */
}

/* The address of the library's static object `name` (the program's
 * symbol table), or NULL. */
static void *static_symbol(const char *name)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	uintptr_t bias = 0, val = 0;
	struct stat st;
	char *m;

	if (fd < 0 || fstat(fd, &st) != 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	{
		Elf64_Ehdr *eh = (Elf64_Ehdr *)m;
		Elf64_Shdr *sh = (Elf64_Shdr *)(m + eh->e_shoff);

		for (int i = 0; i < eh->e_shnum && !val; i++) {
			Elf64_Sym *sym;
			const char *str;
			size_t n;

			if (sh[i].sh_type != SHT_SYMTAB)
				continue;
			sym = (Elf64_Sym *)(m + sh[i].sh_offset);
			str = m + sh[sh[i].sh_link].sh_offset;
			n = sh[i].sh_size / sizeof(*sym);
			for (size_t j = 0; j < n; j++)
				if (ELF64_ST_TYPE(sym[j].st_info) == STT_OBJECT &&
				    strcmp(str + sym[j].st_name, name) == 0) {
					val = sym[j].st_value;
					break;
				}
		}
	}
	munmap(m, (size_t)st.st_size);
	dl_iterate_phdr(bias_cb, &bias);
	return val ? (void *)(bias + val) : NULL;
}

/* ---- the stop, the hooks ---------------------------------------------- */

/* The thread's store to the read-only page: it waits here. */
static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (si->si_addr == target && !atomic_load(&F->parked)) {
		atomic_store(&F->parked, 1);
		while (!atomic_load(&F->released))
			sched_yield();
		return;
	}
	if (atomic_load(&F->ro) && gettid() != pid0 &&
	    page_of(si->si_addr) == page_of(target)) {
		/* Another thread's store to the page while it is read-only (a
		 * variable the linker put beside the target): it waits, and
		 * is made again once the main thread made the page writable
		 * (a store of the main thread's own there is a real fault). */
		while (atomic_load(&F->ro))
			sched_yield();
		return;
	}
	signal(sig, SIG_DFL); /* a real fault: the default action */
}

/* The library's system calls come here (tests/libcwrap.c, which defines
 * libc's name): the thread's first one inside a lock (not its
 * wait at the gate, which counts as one). */
static void on_syscall(long nr, const long *a)
{
	(void)a;
	if (s_hook && lock__depth > 0 && nr != SYS_futex) {
		s_hook = 0;
		atomic_store(&F->in_lock, 1);
		fr_until(&F->forked, 1, main_watch);
	}
}

/* After the library's prepare handler (registered before it): the
 * thread goes on; the fork waits until it holds its locks or sleeps. */
static void late_prepare(void)
{
	if (!late || getpid() != pid0)
		return;
	late = 0;
	atomic_store(&F->released, 1);
	held = fr_until(&F->in_lock, 1, atomic_load(&F->s_watch));
}

__attribute__((constructor(101))) static void late_register(void)
{
	if (pthread_atfork(late_prepare, NULL, NULL) != 0)
		abort();
}

static void *thread_main(void *arg)
{
	int warm = uepoll_create1(0); /* its first lock: its slot */

	REQUIRE(warm >= 0);
	CHECK_EQ(uepoll_close(warm), 0);
	s_slot = lock__me;
	atomic_store(&F->s_watch, fr_watch(t_gettid()));
	for (int round = 1;; round++) {
		while (atomic_load(&F->go) != round && !atomic_load(&F->stop))
			sched_yield();
		if (atomic_load(&F->stop))
			break;
		if (scenario == 'a') {
			struct epoll_event ev = { .events = EPOLLIN };

			s_hook = 1;
			CHECK_EQ(uepoll_ctl(ep, EPOLL_CTL_ADD, ep2, &ev), 0);
			s_hook = 0;
		} else {
			CHECK_EQ(uepoll_demote(ep), 0);
		}
		atomic_store(&F->done_s, round);
	}
	return arg;
}

/* The child: an ADD to the instance, and a look. */
static _Noreturn void child(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 3 };
	int k = ueventfd(1, EFD_NONBLOCK);

	x_step("uepoll", "the child's ADD and wait");
	if (k < 0 || uepoll_ctl(ep, EPOLL_CTL_ADD, k, &ev) != 0)
		_exit(2);
	_exit(uepoll_wait(ep, &ev, 1, 0) >= 1 ? 0 : 4);
}

static void run(int which, int round)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct t_child c;

	scenario = which;
	ep = uepoll_create1(0);
	ep2 = uepoll_create1(0);
	REQUIRE(ep >= 0 && ep2 >= 0);
	atomic_store(&F->parked, 0);
	atomic_store(&F->released, 0);
	atomic_store(&F->in_lock, 0);
	atomic_store(&F->forked, 0);
	/* (Nothing but the thread writes the page meanwhile.) */
	x_step("uepoll", "the thread stops at its store");
	atomic_store(&F->ro, 1);
	REQUIRE(mprotect(page_of(target), (size_t)pg, PROT_READ) == 0);
	atomic_store(&F->go, round);
	while (!atomic_load(&F->parked))
		sched_yield();
	x_step_end();
	REQUIRE(mprotect(page_of(target), (size_t)pg,
			 PROT_READ | PROT_WRITE) == 0);
	atomic_store(&F->ro, 0);
	x_step("uepoll", which == 'a' ? "a. a fork as a lock is taken"
				      : "b. a fork as a demotion begins");
	late = 1;
	if (x_fork(&c) == 0)
		child();
	late = 0;
	atomic_store(&F->forked, 1);
	x_step_end();
	CHECK_EQ(t_child_reap(&c, 15000, "the child"), 0);
	printf("%c. the thread %s at the clone\n", which,
	       held ? "held a lock" : "waited");
	while (atomic_load(&F->done_s) != round)
		sched_yield();
	CHECK_EQ(uepoll_close(ep2), 0);
	CHECK_EQ(uepoll_close(ep), 0);
}

int main(void)
{
	struct sigaction sa;
	pthread_t th;

#ifdef T_TSAN
	/* ThreadSanitizer's runtime makes the atomic operations itself,
	 * holding its own locks: a fault there cannot wait. */
	T_SKIP("a thread stopped at a fault inside ThreadSanitizer's runtime");
#endif
	unsetenv("UEPOLL_EVENTFD_COALESCE");
	t_begin("t_fork_enter");
	wrap_hook_all(on_syscall, NULL);
	x_init();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGSEGV, &sa, NULL) == 0);
	F = mmap(NULL, sizeof(*F), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(F != MAP_FAILED);
	pid0 = getpid();
	main_watch = fr_watch(t_gettid());
	REQUIRE(pthread_create(&th, NULL, thread_main, NULL) == 0);
	while (!atomic_load(&F->s_watch))
		sched_yield();
	REQUIRE(s_slot != NULL);
	/* a. its slot's `inside` (the slot's first word). */
	target = s_slot;
	run('a', 1);
	/* b. the count of spans in flight. */
	target = static_symbol("lock__spans");
	if (target)
		run('b', 2);
	else
		printf("b. skipped: no symbol table\n");
	atomic_store(&F->stop, 1);
	REQUIRE(t_join_within(th, 10000));
	close(main_watch);
	close(atomic_load(&F->s_watch));
	munmap(F, sizeof(*F));
	return t_end();
}
