/* SPDX-License-Identifier: MIT */
/*
 * real.c - how the wrappers find libc's own definitions of the names they
 * take over.
 *
 * dlsym(RTLD_NEXT) from this library finds the next definition in the
 * lookup order, libc's (or another preloaded wrapper's, which then chains
 * to libc: the usual contract between interposers).  It is looked up on
 * first use, not only in the constructor, because a program's threads,
 * other libraries' constructors and a malloc's initialisation (jemalloc
 * reads /proc with read()) can call a wrapper before this library's
 * constructor ran.
 *
 * The lookup itself must not recurse: should dlsym ever call malloc, and
 * that malloc call read(), the wrapper would look read up again, inside
 * the first lookup.  A per-thread flag (initial-exec TLS: no allocation to
 * reach it) marks a thread that is looking something up; a wrapper entered
 * meanwhile gets NULL and makes a raw system call instead, which needs
 * neither libc nor malloc.
 *
 * The table is written racily by any thread that looks an entry up: every
 * writer stores the same pointer, and a pointer-sized aligned store is
 * atomic on every target glibc supports.
 */
#include <dlfcn.h>
#include <errno.h>
#include <sys/syscall.h>

#include "preload.h"

struct real_fns real__fns;

static __thread int real__busy __attribute__((tls_model("initial-exec")));

void *real__get(void **slot, const char *name)
{
	void *f = *slot;

	if (f || real__busy)
		return f;
	real__busy = 1;
	f = dlsym(RTLD_NEXT, name);
	real__busy = 0;
	*slot = f;
	return f;
}

void real_resolve_all(void)
{
	/* Each REAL() stores what it found; the values are not needed here
	 * (a name the libc lacks, such as closefrom before glibc 2.34, or
	 * io_submit without libaio, stays NULL: its wrapper says what then). */
#define REAL__RESOLVE(ret, name, params) (void)REAL(name);
	PRELOAD_LIBC(REAL__RESOLVE)
#undef REAL__RESOLVE
}

#if defined(__x86_64__)
long real_syscall_raw(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8),
			   "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
long real_syscall_raw(long nr, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;

	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}
#else
long real_syscall_raw(long nr, long a, long b, long c, long d, long e, long f)
{
	/* No raw path on this target: the nested call fails cleanly. */
	return -ENOSYS;
}
#endif
