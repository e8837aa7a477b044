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

#include <poll.h>
#include <stdbool.h>
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
		{ "thread", g_thread },
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
	run_shm();
	run_brk(false);
	run_brk(true);
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
