/* SPDX-License-Identifier: MIT */
/*
 * wrap_mem.c - reading the program's memory without faulting
 * (preload_peek), and the calls that change what of it is readable.
 *
 * Several wrappers must read memory the program passed before the kernel
 * does (poll's array and select's sets for the private fds and the marks,
 * wrap_poll.c; a message's control data, wrap_msg.c; AIO's iocbs,
 * wrap_aio.c; an iovec, wrap_io.c).  Where the kernel answers EFAULT for a
 * bad pointer, a direct read would fault; preload_peek reads with
 * process_vm_readv(2) instead, which answers EFAULT as the kernel does, at
 * the price of two system calls (it and getpid).  A poll loop that paid
 * them on every call (a forked subscriber polling and reading a shared
 * eventfd: real-seed004, docs/benchmarks.md) cost 0.76x the kernel's CPU,
 * where it cost 0.42x before the private fds were hidden.
 *
 * SEEN: so each thread remembers the last few page ranges process_vm_readv
 * read whole, tagged with the process's map generation, and reads a range
 * inside one of them directly while the generation has not moved.  The
 * generation moves after every call through libc (or libc's syscall()) that
 * can make readable memory unreadable: munmap, mremap, mprotect and
 * pkey_mprotect, mmap with MAP_FIXED, madvise with an advice that is not a
 * known harmless one (MADV_GUARD_INSTALL, MADV_HWPOISON), shmat, shmdt, brk
 * and sbrk.  After pkey_alloc (a thread may then deny itself a page with
 * no call at all: pkey_set is one instruction) and once the process is
 * PLAIN, nothing is remembered any more.
 *
 * What it cannot see, and where a read the kernel would answer EFAULT then
 * faults instead: memory unmapped by libc itself (free() of a large block,
 * a finished thread's stack, dlclose) and then passed again, which is a
 * use after free; a system call instruction of the program's own; a shared
 * file mapping that some process truncates under the range.  uepoll-run(1),
 * LIMITS.
 *
 * Ordering: the generation is bumped (release) after the call returns, so
 * a peek that happens after the call (the program's own order: the call
 * returned, then it polled) loads (acquire) the new value and misses.  A
 * peek racing the call itself races the program's own two calls; its entry
 * carries the generation loaded before its read, so it misses once the
 * bump is seen.  Each entry is one 64-bit word, read and written whole
 * (relaxed): a raw clone() thread that shares another's TLS may race on
 * the ways, never see half an entry.
 */
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "preload.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

/* An entry: bit 63 set; bits 40-62 the generation's low 23 bits; 36-39
 * the number of 4 KiB pages after the first (a range up to 64 KiB);
 * 0-35 the first page (48-bit addresses).  4 KiB whatever the page size:
 * a readable page of any size is readable in every 4 KiB of it. */
#define MEM__SHIFT 12
#define MEM__PAGE_BITS 36
#define MEM__SPAN_BITS 4
#define MEM__GEN_BITS 23
#define MEM__WAYS 4
_Static_assert(MEM__PAGE_BITS + MEM__SPAN_BITS + MEM__GEN_BITS + 1 == 64,
	       "a SEEN entry is one 64-bit word");

static _Atomic uint64_t mem__gen;
static atomic_bool mem__off;
static __thread _Atomic uint64_t mem__seen[MEM__WAYS]
	__attribute__((tls_model("initial-exec")));
static __thread unsigned mem__turn __attribute__((tls_model("initial-exec")));

void mem_changed(void)
{
	/* release: pairs with the acquire load in mem__entry. */
	atomic_fetch_add_explicit(&mem__gen, 1, memory_order_release);
}

void mem_forget_all(void)
{
	atomic_store_explicit(&mem__off, true, memory_order_relaxed);
	mem_changed();
}

/* The entry [src, src + n) would have now, or 0 if it cannot have one. */
static uint64_t mem__entry(const void *src, size_t n)
{
	uintptr_t a = (uintptr_t)src;
	uint64_t first = a >> MEM__SHIFT, last = (a + n - 1) >> MEM__SHIFT;
	uint64_t g;

	if (atomic_load_explicit(&mem__off, memory_order_relaxed) ||
	    a + n - 1 < a || last >> MEM__PAGE_BITS ||
	    last - first >= (1u << MEM__SPAN_BITS))
		return 0;
	g = atomic_load_explicit(&mem__gen, memory_order_acquire) &
	    ((1u << MEM__GEN_BITS) - 1);
	return 1ull << 63 | g << (MEM__PAGE_BITS + MEM__SPAN_BITS) |
	       (last - first) << MEM__PAGE_BITS | first;
}

/* Is the range of `want` inside a remembered one of the same generation? */
static bool mem__seen_has(uint64_t want)
{
	const uint64_t page = (1ull << MEM__PAGE_BITS) - 1;
	const uint64_t span = (1ull << MEM__SPAN_BITS) - 1;
	const int gen_at = MEM__PAGE_BITS + MEM__SPAN_BITS;
	uint64_t first = want & page;
	uint64_t last = first + (want >> MEM__PAGE_BITS & span);

	for (int i = 0; i < MEM__WAYS; i++) {
		uint64_t e = atomic_load_explicit(&mem__seen[i],
						  memory_order_relaxed);
		uint64_t lo = e & page, hi = lo + (e >> MEM__PAGE_BITS & span);

		if (e && e >> gen_at == want >> gen_at && lo <= first &&
		    last <= hi)
			return true;
	}
	return false;
}

bool preload_peek(void *dst, const void *src, size_t n)
{
	struct iovec l = { dst, n }, r = { (void *)src, n };
	uint64_t want;
	ssize_t got;

	if (!n)
		return true;
	want = mem__entry(src, n);
	if (want && mem__seen_has(want)) {
		__builtin_memcpy(dst, src, n);
		return true;
	}
	stats_add(STAT_PEEKS);
	got = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
	if (got == (ssize_t)n) {
		if (want)
			atomic_store_explicit(
				&mem__seen[mem__turn++ % MEM__WAYS], want,
				memory_order_relaxed);
		return true;
	}
	if (got < 0 && errno != EFAULT) {
		/* Not allowed here (a seccomp filter, say): read it directly,
		 * as the kernel is about to. */
		__builtin_memcpy(dst, src, n);
		return true;
	}
	return false;
}

bool mem_advice_may_unmap(int advice)
{
	/* Up to MADV_COLLAPSE every advice leaves a page readable (MADV_FREE
	 * and MADV_DONTNEED give zeros or the old data, MADV_REMOVE zeros):
	 * allocators give these often, and they must not clear SEEN. */
	return advice < 0 || advice > MADV_COLLAPSE;
}

/* ---- the wrappers ------------------------------------------------------- */

/* A call's answer as libc gives it, from the raw one (-errno). */
static long mem__raw(long r)
{
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

#define MEM__CALL(name, nr, ...)                                              \
	(REAL(name) ? (long)REAL(name)(__VA_ARGS__)                           \
		    : mem__raw(real_syscall_raw(nr, ARGS6(__VA_ARGS__))))
#define ARGS6(...) ARGS6_(__VA_ARGS__, 0, 0, 0, 0, 0, 0)
#define ARGS6_(a, b, c, d, e, f, ...)                                        \
	(long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f)

PRELOAD_WRAP int munmap(void *addr, size_t len)
{
	int r = (int)MEM__CALL(munmap, SYS_munmap, addr, len);

	mem_changed();
	return r;
}

PRELOAD_WRAP int mprotect(void *addr, size_t len, int prot)
{
	int r = (int)MEM__CALL(mprotect, SYS_mprotect, addr, len, prot);

	if (!(prot & PROT_READ))
		mem_changed();
	return r;
}

PRELOAD_WRAP int pkey_mprotect(void *addr, size_t len, int prot, int pkey)
{
	int r = (int)MEM__CALL(pkey_mprotect, SYS_pkey_mprotect, addr, len,
			       prot, pkey);

	mem_changed();
	return r;
}

PRELOAD_WRAP int pkey_alloc(unsigned int flags, unsigned int rights)
{
	mem_forget_all();
	return (int)MEM__CALL(pkey_alloc, SYS_pkey_alloc, flags, rights);
}

static void *mem__mmap(void *(*f)(void *, size_t, int, int, int, off_t),
		       void *addr, size_t len, int prot, int flags, int fd,
		       off_t off)
{
	void *r = f ? f(addr, len, prot, flags, fd, off)
		    : (void *)mem__raw(real_syscall_raw(
			      SYS_mmap, (long)addr, (long)len, prot, flags, fd,
			      (long)off));

	/* Only MAP_FIXED can replace a mapping: any other lands where
	 * nothing was. */
	if (flags & MAP_FIXED)
		mem_changed();
	return r;
}

PRELOAD_WRAP void *mmap(void *addr, size_t len, int prot, int flags, int fd,
			off_t off)
{
	return mem__mmap(REAL(mmap), addr, len, prot, flags, fd, off);
}

PRELOAD_WRAP void *mmap64(void *addr, size_t len, int prot, int flags,
			  int fd, off64_t off)
{
	return mem__mmap(REAL(mmap64), addr, len, prot, flags, fd, off);
}

PRELOAD_WRAP void *mremap(void *old, size_t old_len, size_t len, int flags,
			  ...)
{
	void *to = NULL, *r;
	va_list ap;

	/* The fifth argument exists only with MREMAP_FIXED (glibc reads it
	 * on the same condition). */
	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		to = va_arg(ap, void *);
		va_end(ap);
	}
	r = (void *)MEM__CALL(mremap, SYS_mremap, old, old_len, len, flags, to);
	mem_changed();
	return r;
}

PRELOAD_WRAP int madvise(void *addr, size_t len, int advice)
{
	int r = (int)MEM__CALL(madvise, SYS_madvise, addr, len, advice);

	if (mem_advice_may_unmap(advice))
		mem_changed();
	return r;
}

PRELOAD_WRAP void *shmat(int id, const void *addr, int flags)
{
	void *r = (void *)MEM__CALL(shmat, SYS_shmat, id, addr, flags);

	mem_changed();
	return r;
}

PRELOAD_WRAP int shmdt(const void *addr)
{
	int r = (int)MEM__CALL(shmdt, SYS_shmdt, addr);

	mem_changed();
	return r;
}

PRELOAD_WRAP int brk(void *addr)
{
	int r;

	/* The raw brk answers the new break, not 0/-1: no raw fallback (no
	 * lookup ever calls brk through this name). */
	r = REAL(brk) ? REAL(brk)(addr) : (errno = ENOMEM, -1);
	mem_changed();
	return r;
}

PRELOAD_WRAP void *sbrk(intptr_t inc)
{
	void *r = REAL(sbrk) ? REAL(sbrk)(inc) : (errno = ENOMEM, (void *)-1);

	mem_changed();
	return r;
}
