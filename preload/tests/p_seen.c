/* SPDX-License-Identifier: MIT */
/*
 * p_seen.c - the preload reads a poll array or select sets it has read
 * before with no system call (SEEN in preload/wrap_mem.c); memory made
 * unreadable since, by any call that can, is still the kernel's EFAULT.
 *
 *   unmap  (compare mode) with an eventfd live, an array in its own page is
 *          polled and selected three times, then made unreadable by each
 *          way in turn: munmap, mprotect(PROT_NONE), mmap(MAP_FIXED) of a
 *          PROT_NONE page, mremap away, madvise(MADV_GUARD_INSTALL), each
 *          through libc and through syscall(2); pkey_mprotect with a key
 *          that denies access; shmdt; sbrk and brk giving the page back;
 *          munmap by another thread, by a fork child (its own copy; the
 *          parent's page stays) and by a vfork child (shared memory).
 *          Each poll and select after it: the kernel's EFAULT, never a
 *          fault.
 *   count  (run under uepoll-run --stats; CMakeLists.txt checks the line)
 *          1000 polls of one stack array: the preload reads it with
 *          process_vm_readv a few times, not 1000 (peeks=N).
 */

#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "ptest.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

#define PAGE 4096

static int efd;

/* Poll and select the array at p (pollfd at 0, fd_set at 256): the
 * answers, errno's name on failure. */
static void look(const char *way, const char *when, char *p)
{
	struct timeval tv = { 0, 0 };
	int r1 = poll((struct pollfd *)(void *)p, 1, 0);
	int e1 = errno;
	int r2 = select(efd + 1, (fd_set *)(void *)(p + 256), NULL, NULL, &tv);
	int e2 = errno;

	printf("%s %s: poll %d %s, select %d %s\n", way, when, r1,
	       r1 < 0 ? strerrorname_np(e1) : "", r2,
	       r2 < 0 ? strerrorname_np(e2) : "");
}

static void fill(char *p)
{
	struct pollfd *a = (struct pollfd *)(void *)p;
	fd_set *s = (fd_set *)(void *)(p + 256);

	a[0].fd = efd;
	a[0].events = POLLIN;
	a[0].revents = 0;
	FD_ZERO(s);
	FD_SET(efd, s);
}

/* Three looks (the preload remembers the page), `gone` makes it
 * unreadable, two looks after. */
static void try(const char *way, char *p, void (*gone)(char *))
{
	fill(p);
	for (int i = 0; i < 3; i++)
		look(way, "before", p);
	gone(p);
	look(way, "after", p);
	look(way, "after", p);
}

static char *page(void)
{
	char *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	P_REQUIRE(p != MAP_FAILED);
	return p;
}

static void g_munmap(char *p) { P_CHECK(munmap(p, PAGE) == 0); }
static void g_sys_munmap(char *p)
{
	P_CHECK(syscall(SYS_munmap, p, PAGE) == 0);
}
static void g_mprotect(char *p) { P_CHECK(mprotect(p, PAGE, PROT_NONE) == 0); }
static void g_sys_mprotect(char *p)
{
	P_CHECK(syscall(SYS_mprotect, p, PAGE, PROT_NONE) == 0);
}
static void g_fixed(char *p)
{
	P_CHECK(mmap(p, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		     -1, 0) == p);
}
static void g_sys_fixed(char *p)
{
	P_CHECK(syscall(SYS_mmap, p, PAGE, PROT_NONE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
		(long)p);
}
static char *remap_to;
static void g_mremap(char *p)
{
	P_CHECK(mremap(p, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
		       remap_to) == remap_to);
}
static void g_sys_mremap(char *p)
{
	P_CHECK(syscall(SYS_mremap, p, PAGE, PAGE,
			MREMAP_MAYMOVE | MREMAP_FIXED, remap_to) ==
		(long)remap_to);
}
/* (A kernel before 6.13 answers EINVAL, natively and preloaded alike: the
 * page stays readable and both runs print the same.) */
static void g_guard(char *p) { (void)madvise(p, PAGE, MADV_GUARD_INSTALL); }
static void g_sys_guard(char *p)
{
	(void)syscall(SYS_madvise, p, PAGE, MADV_GUARD_INSTALL);
}
static void g_pkey(char *p)
{
	int k = pkey_alloc(0, PKEY_DISABLE_ACCESS);

	/* No protection keys here: the page stays readable, in both runs. */
	if (k >= 0 && pkey_mprotect(p, PAGE, PROT_READ | PROT_WRITE, k) != 0)
		k = -1;
	(void)k; /* (never freed: the page keeps it) */
}
static void *t_unmap(void *p)
{
	P_CHECK(munmap(p, PAGE) == 0);
	return NULL;
}
static void g_thread(char *p)
{
	pthread_t t;

	P_REQUIRE(pthread_create(&t, NULL, t_unmap, p) == 0);
	pthread_join(t, NULL);
}
static void g_vfork(char *p)
{
	pid_t c = vfork();

	if (c == 0) {
		munmap(p, PAGE);
		_exit(0);
	}
	P_REQUIRE(c > 0);
	P_CHECK(waitpid(c, NULL, 0) == c);
}

static void run_fork(void)
{
	char *p = page();
	pid_t c;
	int st;

	fill(p);
	look("fork", "before", p);
	fflush(stdout);
	c = fork();
	P_REQUIRE(c >= 0);
	if (c == 0) {
		munmap(p, PAGE);
		look("fork", "child", p);
		fflush(stdout);
		_exit(0);
	}
	P_CHECK(waitpid(c, &st, 0) == c && WIFEXITED(st) &&
		WEXITSTATUS(st) == 0);
	look("fork", "parent", p);
	munmap(p, PAGE);
}

static void run_shm(void)
{
	int id = shmget(IPC_PRIVATE, PAGE, IPC_CREAT | 0600);
	char *p;

	P_REQUIRE(id >= 0);
	p = shmat(id, NULL, 0);
	P_REQUIRE(p != (void *)-1);
	(void)shmctl(id, IPC_RMID, NULL);
	fill(p);
	for (int i = 0; i < 3; i++)
		look("shmdt", "before", p);
	P_CHECK(shmdt(p) == 0);
	look("shmdt", "after", p);
}

/* The break moved up three pages and back: the page above the old break,
 * rounded up, is gone.  Nothing between may allocate (stdout is flushed
 * and written with write(2) meanwhile: printf may malloc). */
static void run_brk(bool use_brk)
{
	const char *way = use_brk ? "brk" : "sbrk";
	char *old = sbrk(0), *p;
	char buf[4][160];
	int n[4];

	fflush(stdout);
	P_REQUIRE(sbrk(3 * PAGE) == old);
	p = (char *)(((uintptr_t)old + PAGE - 1) & ~(uintptr_t)(PAGE - 1));
	fill(p);
	for (int i = 0; i < 4; i++) {
		struct timeval tv = { 0, 0 };
		int r1, e1, r2, e2;

		if (i == 2) {
			if (use_brk)
				P_CHECK(brk(old) == 0);
			else
				P_CHECK(sbrk(-3 * PAGE) != (void *)-1);
		}
		r1 = poll((struct pollfd *)(void *)p, 1, 0);
		e1 = errno;
		r2 = select(efd + 1, (fd_set *)(void *)(p + 256), NULL, NULL,
			    &tv);
		e2 = errno;
		n[i] = snprintf(buf[i], sizeof(buf[i]),
				"%s %s: poll %d %s, select %d %s\n", way,
				i < 2 ? "before" : "after", r1,
				r1 < 0 ? strerrorname_np(e1) : "", r2,
				r2 < 0 ? strerrorname_np(e2) : "");
	}
	for (int i = 0; i < 4; i++)
		P_CHECK(write(1, buf[i], (size_t)n[i]) == n[i]);
}

/* helper-33's ways (each crashed the first SEEN). */
static void g_pmadvise(char *p)
{
	struct iovec v = { p, PAGE };
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);

	if (pidfd >= 0) {
		(void)process_madvise(pidfd, &v, 1, MADV_GUARD_INSTALL, 0);
		close(pidfd);
	}
}
static void g_sys_pmadvise(char *p)
{
	struct iovec v = { p, PAGE };
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);

	if (pidfd >= 0) {
		(void)syscall(SYS_process_madvise, pidfd, &v, 1,
			      MADV_GUARD_INSTALL, 0);
		close(pidfd);
	}
}
/* 2^23 more moves of the generation after the unmap: an entry that kept
 * only its low bits would match again. */
static void g_wrap(char *p)
{
	P_CHECK(munmap(p, PAGE) == 0);
	for (long i = 1; i < 1L << 23; i++)
		(void)munmap(NULL, 0);
}

/* fn(arg) in a forked child: what it ends there (SEEN, for good: a file
 * mapping, a userfaultfd, a call left by siglongjmp; an rlimit) stays
 * there; its checks count through its exit status. */
static void in_child(void (*fn)(const void *), const void *arg)
{
	pid_t c;
	int st;

	fflush(stdout);
	c = fork();
	P_REQUIRE(c >= 0);
	if (c == 0) {
		fn(arg);
		fflush(stdout);
		_exit(t_failures ? 1 : 0);
	}
	P_CHECK(waitpid(c, &st, 0) == c && WIFEXITED(st) &&
		WEXITSTATUS(st) == 0);
}

/* A file mapping (MAP_SHARED or MAP_PRIVATE) of a page, then the file cut
 * to nothing (ftruncate, truncate, an open with O_TRUNC, creat, fopen "w"
 * through libc's own open) or the page remapped past its end
 * (remap_file_pages): SIGBUS for a direct read, EFAULT from the kernel.
 * In a child (a file mapping ends SEEN for good there). */
static void file__case(const char *way, int flags)
{
	char path[] = "/tmp/p_seen_XXXXXX";
	int fd = mkstemp(path);
	char *p;

	P_REQUIRE(fd >= 0);
	P_REQUIRE(ftruncate(fd, PAGE) == 0);
	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, flags, fd, 0);
	P_REQUIRE(p != MAP_FAILED);
	fill(p);
	for (int i = 0; i < 3; i++)
		look(way, "before", p);
	if (!strcmp(way, "truncate"))
		P_CHECK(truncate(path, 0) == 0);
	else if (!strcmp(way, "remap-file-pages"))
		P_CHECK(remap_file_pages(p, PAGE, 0, 100, 0) == 0);
	else if (!strcmp(way, "o-trunc"))
		P_CHECK(close(open(path, O_WRONLY | O_TRUNC)) == 0);
	else if (!strcmp(way, "creat"))
		P_CHECK(close(creat(path, 0600)) == 0);
	else if (!strcmp(way, "fopen-w"))
		P_CHECK(fclose(fopen(path, "w")) == 0);
	else
		P_CHECK(ftruncate(fd, 0) == 0);
	look(way, "after", p);
	munmap(p, PAGE);
	unlink(path);
	close(fd);
}

struct file__way {
	const char *way;
	int flags;
};

static void file__child(const void *arg)
{
	const struct file__way *w = arg;

	file__case(w->way, w->flags);
}

static void run_file(const char *way, int flags)
{
	struct file__way w = { way, flags };

	in_child(file__child, &w);
}

/* A signal handler leaves munmap by siglongjmp, after the unmap and before
 * the preload's wrapper returns (a 20 us timer interrupts the call's way
 * back): each poll of the gone page after that is the kernel's EFAULT.
 * Up to 300 such jumps in at most 200000 rounds (the count of jumps is
 * the machine's: it goes to stderr; a round the jump came too early for,
 * with the page still there, is not counted). */
static sigjmp_buf lj__jb;
static volatile sig_atomic_t lj__in;

static void lj__handler(int sig)
{
	(void)sig;
	if (lj__in) {
		lj__in = 0;
		siglongjmp(lj__jb, 1);
	}
}

static void run_longjmp(void)
{
	struct itimerval it = { { 0, 20 }, { 0, 20 } }, off = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa = { .sa_handler = lj__handler };
	volatile int jumps = 0, bad = 0;

	sigemptyset(&sa.sa_mask);
	P_REQUIRE(sigaction(SIGALRM, &sa, NULL) == 0);
	P_REQUIRE(setitimer(ITIMER_REAL, &it, NULL) == 0);
	for (volatile int i = 0; i < 200000 && jumps < 300; i++) {
		char *volatile p = mmap(NULL, 64 * PAGE, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
					-1, 0);

		if (p == MAP_FAILED)
			continue;
		fill(p);
		(void)poll((struct pollfd *)(void *)p, 1, 0);
		if (sigsetjmp(lj__jb, 1) == 0) {
			lj__in = 1;
			munmap(p, 64 * PAGE);
			lj__in = 0;
			continue;
		}
		/* Jumped: is the page gone (msync: ENOMEM if unmapped)? */
		if (msync(p, PAGE, MS_ASYNC) == 0) {
			munmap(p, 64 * PAGE);
			continue;
		}
		jumps++;
		if (!(poll((struct pollfd *)(void *)p, 1, 0) < 0 &&
		      errno == EFAULT))
			bad++;
	}
	P_CHECK(setitimer(ITIMER_REAL, &off, NULL) == 0);
	signal(SIGALRM, SIG_DFL);
	fprintf(stderr, "longjmp: %d jumps\n", jumps);
	printf("longjmp: %s\n", bad ? "a poll of a gone page did not fail"
				     : "every poll of a gone page: EFAULT");
}

/* In a child: a call left by siglongjmp ends SEEN there (IN FLIGHT). */
static void longjmp__child(const void *arg)
{
	(void)arg;
	run_longjmp();
}

/* MADV_DONTFORK keeps the page out of a child: fork, _Fork, clone. */
static int dontfork__child(void *p)
{
	look("dontfork-clone", "child", p);
	fflush(stdout);
	return 0;
}

static void run_dontfork(const char *way)
{
	char *p = page();
	pid_t c;
	int st;

	fill(p);
	for (int i = 0; i < 3; i++)
		look(way, "before", p);
	P_CHECK(madvise(p, PAGE, MADV_DONTFORK) == 0);
	fflush(stdout);
	if (!strcmp(way, "dontfork-clone")) {
		static char stack[1 << 16] __attribute__((aligned(16)));

		c = clone(dontfork__child, stack + sizeof(stack), SIGCHLD, p);
	} else {
		c = !strcmp(way, "dontfork-_Fork") ? _Fork() : fork();
		if (c == 0) {
			look(way, "child", p);
			fflush(stdout);
			_exit(0);
		}
	}
	P_REQUIRE(c > 0);
	P_CHECK(waitpid(c, &st, 0) == c && WIFEXITED(st) &&
		WEXITSTATUS(st) == 0);
	look(way, "parent", p);
	munmap(p, PAGE);
}

/* A userfaultfd range in SIGBUS mode whose page MADV_DONTNEED took: a
 * direct read is SIGBUS.  The fd made through /dev/userfaultfd and
 * registered here ("uffd-dev"), or made with the system call and registered
 * by a forked child (the registration is of the maker's memory: "uffd-sys",
 * the preload sees no registration).  Each in a child of its own (SEEN
 * ends there for good). */
static bool uffd__register(int u, char *p)
{
	struct uffdio_api api = { .api = UFFD_API,
				  .features = UFFD_FEATURE_SIGBUS };
	struct uffdio_register reg = {
		.range = { (unsigned long)p, PAGE },
		.mode = UFFDIO_REGISTER_MODE_MISSING
	};

	return ioctl(u, UFFDIO_API, &api) == 0 &&
	       ioctl(u, UFFDIO_REGISTER, &reg) == 0;
}

static void uffd__case(bool dev)
{
	const char *way = dev ? "uffd-dev" : "uffd-sys";
	char *p = page();
	bool ok = false;
	int u = -1, st;
	pid_t c;

	fill(p);
	for (int i = 0; i < 3; i++)
		look(way, "before", p);
	if (dev) {
		int d = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);

		if (d >= 0) {
			u = ioctl(d, USERFAULTFD_IOC_NEW, O_CLOEXEC);
			close(d);
		}
		ok = u >= 0 && uffd__register(u, p);
	} else {
		u = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
		fflush(stdout);
		c = u >= 0 ? fork() : -1;
		if (c == 0)
			_exit(uffd__register(u, p) ? 0 : 1);
		ok = c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) &&
		     WEXITSTATUS(st) == 0;
	}
	/* (Not allowed here: the page stays, in both runs.) */
	if (ok)
		P_CHECK(madvise(p, PAGE, MADV_DONTNEED) == 0);
	look(way, "after", p);
	fflush(stdout);
}

static void uffd__child(const void *arg)
{
	uffd__case(*(const bool *)arg);
}

static void run_uffd(bool dev)
{
	in_child(uffd__child, &dev);
}

/* The kernel unmaps an AIO context's ring at io_destroy. */
static void run_aio(void)
{
	aio_context_t ctx = 0;
	char *p;

	if (syscall(SYS_io_setup, 8, &ctx) != 0) {
		printf("aio: no io_setup\n");
		return;
	}
	p = (char *)(uintptr_t)ctx + 64;
	fill(p);
	for (int i = 0; i < 3; i++)
		look("io-destroy", "before", p);
	P_CHECK(syscall(SYS_io_destroy, ctx) == 0);
	look("io-destroy", "after", p);
}

/* A message header read by sendmsg's wrapper (the same memory reads). */
static void run_sendmsg(void)
{
	struct msghdr *m = (struct msghdr *)(void *)page();
	struct iovec v;
	char c = 'x';
	int sv[2];

	P_REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	v.iov_base = &c;
	v.iov_len = 1;
	m->msg_iov = &v;
	m->msg_iovlen = 1;
	for (int i = 0; i < 3; i++)
		printf("sendmsg before: %zd\n", sendmsg(sv[0], m, 0));
	P_CHECK(munmap(m, PAGE) == 0);
	{
		ssize_t r = sendmsg(sv[0], m, 0);
		int e = errno;

		printf("sendmsg after: %zd %s\n", r,
		       r < 0 ? strerrorname_np(e) : "");
	}
	close(sv[0]);
	close(sv[1]);
}

/* A read-only array naming a number the preload's own fd holds (with a
 * soft and hard RLIMIT_NOFILE of 64, the library's fds take the top
 * numbers below it, PLACES in src/fdzone.c): natively a free number, and
 * the kernel cannot write revents: EFAULT.  In a child (the limit stays
 * there). */
static void rohide__child(const void *arg)
{
	struct rlimit rl = { 64, 64 };
	struct pollfd *a;
	int e, r;

	(void)arg;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		_exit(3);
	e = eventfd(0, 0);
	a = (struct pollfd *)(void *)page();
	for (int i = 0; i < 8; i++) {
		a[i].fd = 63 - i;
		a[i].events = POLLIN;
	}
	P_CHECK(mprotect(a, PAGE, PROT_READ) == 0);
	r = poll(a, 8, 0);
	e = errno;
	printf("rohide: poll %d %s\n", r, r < 0 ? strerrorname_np(e) : "");
	fflush(stdout);
}

static void run_rohide(void)
{
	in_child(rohide__child, NULL);
}

static int run_unmap(void)
{
	static const struct {
		const char *name;
		void (*gone)(char *);
	} ways[] = {
		{ "munmap", g_munmap },	    { "sys-munmap", g_sys_munmap },
		{ "mprotect", g_mprotect }, { "sys-mprotect", g_sys_mprotect },
		{ "fixed", g_fixed },	    { "sys-fixed", g_sys_fixed },
		{ "mremap", g_mremap },	    { "sys-mremap", g_sys_mremap },
		{ "guard", g_guard },	    { "sys-guard", g_sys_guard },
		{ "thread", g_thread },	    { "pmadvise", g_pmadvise },
		{ "sys-pmadvise", g_sys_pmadvise }, { "wrap", g_wrap },
	};
	/* Last: after pkey_alloc the preload remembers nothing, and a vfork
	 * demotes every object (VFORK in preload/wrap_exec.c). */
	static const struct {
		const char *name;
		void (*gone)(char *);
	} last[] = { { "pkey", g_pkey }, { "vfork", g_vfork } };

	for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]); i++) {
		char *p = page();

		remap_to = page();
		try(ways[i].name, p, ways[i].gone);
		munmap(p, PAGE);
		munmap(remap_to, PAGE);
	}
	run_fork();
	run_file("ftruncate", MAP_SHARED);
	run_file("ftruncate", MAP_PRIVATE);
	run_file("truncate", MAP_SHARED);
	run_file("o-trunc", MAP_SHARED);
	run_file("creat", MAP_PRIVATE);
	run_file("fopen-w", MAP_SHARED);
	run_file("remap-file-pages", MAP_SHARED);
	in_child(longjmp__child, NULL);
	run_dontfork("dontfork-fork");
	run_dontfork("dontfork-_Fork");
	run_dontfork("dontfork-clone");
	run_aio();
	run_sendmsg();
	run_rohide();
	run_shm();
	run_brk(false);
	run_brk(true);
	run_uffd(true);
	run_uffd(false);
	for (size_t i = 0; i < sizeof(last) / sizeof(last[0]); i++) {
		char *p = page();

		try(last[i].name, p, last[i].gone);
		munmap(p, PAGE);
	}
	return 0;
}

static int run_count(void)
{
	struct pollfd a[2] = { { .fd = efd, .events = POLLIN },
			       { .fd = -1 } };

	for (int i = 0; i < 1000; i++)
		P_CHECK(poll(a, 2, 0) == 0);
	P_CHECK(eventfd_write(efd, 1) == 0);
	P_CHECK(poll(a, 2, 0) == 1 && a[0].revents == POLLIN);
	return 0;
}

int main(int argc, char **argv)
{
	int r = 2;

	p_begin(60);
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	efd = eventfd(0, EFD_NONBLOCK);
	P_REQUIRE(efd >= 0);
	if (argc == 2 && !strcmp(argv[1], "unmap"))
		r = run_unmap();
	else if (argc == 2 && !strcmp(argv[1], "count"))
		r = run_count();
	else
		fprintf(stderr, "usage: p_seen unmap|count\n");
	close(efd);
	fflush(stdout);
	return r ? r : p_end();
}
