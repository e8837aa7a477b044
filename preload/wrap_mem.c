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
 * generation moves around every call through libc (or libc's syscall())
 * that can make readable memory unreadable:
 *  - munmap, mremap, mprotect without PROT_READ, pkey_mprotect, mmap with
 *    MAP_FIXED, shmat, shmdt, brk, sbrk;
 *  - madvise and process_madvise with an advice that is not a known
 *    harmless one (MADV_GUARD_INSTALL, MADV_HWPOISON);
 *  - io_destroy (the kernel unmaps the AIO ring);
 *  - a new process's copy (fork, _Fork, clone without CLONE_VM): the child
 *    lacks what MADV_DONTFORK kept from it.
 * For good, nothing is remembered once the program maps a file (mmap with
 * an fd: a file cut short by ftruncate, by an open with O_TRUNC, by
 * fopen("w") through libc's own open, or by another process, leaves the
 * mapping past its end SIGBUS where the kernel answers EFAULT; anonymous
 * memory has no such end), after pkey_alloc (a thread may then deny itself
 * a page with no call at all: pkey_set is one instruction), after a
 * userfaultfd is made or registered (a missing page of a SIGBUS-mode range
 * faults, and MADV_DONTNEED makes one), and once the process is PLAIN.
 *
 * What it cannot see, and where a read the kernel would answer EFAULT then
 * faults instead: memory unmapped by libc itself (free() of a large block,
 * a finished thread's stack, dlclose) and then passed again, which is a
 * use after free; a system call instruction of the program's own.
 * uepoll-run(1), LIMITS.  (helper-33 and helper-34 found the earlier lists
 * incomplete: DONTFORK, uffd, process_madvise, io_destroy, truncation,
 * O_TRUNC, a signal's siglongjmp out of munmap; p_seen covers each.)
 *
 * IN FLIGHT: a call that may unmap raises `changing` and moves the
 * generation before it (mem_begin), and moves it again and lowers
 * `changing` after (mem__end).  A peek remembers a range only if, after its
 * read, `changing` is 0 and the generation is the one it loaded before the
 * read (seq_cst loads; the same stores in the opposite order: a seqlock).
 * So a read made while a call is in flight is never remembered, and a
 * call that a signal handler leaves by siglongjmp (skipping mem__end) has
 * moved the generation past every entry and keeps `changing` raised: SEEN
 * then remembers nothing more, for good, which is only slower.
 * Ordering: a peek that happens after the call (the program's own order:
 * the call returned, then it polled) loads (acquire) a generation the
 * call moved, and misses.  A peek racing the call itself races the
 * program's own two calls, as the kernel's would (EFAULT there, a fault
 * here, if it loses).  Its entry carries the generation loaded before its
 * read, so it misses once the
 * bump is seen.  Each entry is one 64-bit word, read and written whole
 * (relaxed): a raw clone() thread that shares another's TLS may race on
 * the ways, never see half an entry.  An entry holds the generation's low
 * 23 bits; the thread's ways were all filled under one full generation
 * (mem__seen_gen), which a hit must equal too: 2^23 bumps never alias.
 */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/ioctl.h>
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
static _Atomic int mem__changing;
static atomic_bool mem__off;
static __thread _Atomic uint64_t mem__seen[MEM__WAYS]
	__attribute__((tls_model("initial-exec")));
static __thread unsigned mem__turn __attribute__((tls_model("initial-exec")));
static __thread _Atomic uint64_t mem__seen_gen
	__attribute__((tls_model("initial-exec")));

/* One move, with nothing in flight (a new process's child, a clone, the
 * end of SEEN). */
static void mem__changed(void)
{
	/* release: pairs with the acquire load in mem__entry. */
	atomic_fetch_add_explicit(&mem__gen, 1, memory_order_release);
}

void mem_begin(void)
{
	/* IN FLIGHT: raised, then moved (seq_cst both); mem__seen_add's loads
	 * come in the opposite order. */
	atomic_fetch_add(&mem__changing, 1);
	atomic_fetch_add(&mem__gen, 1);
}

static void mem__end(void)
{
	atomic_fetch_add(&mem__gen, 1);
	atomic_fetch_sub(&mem__changing, 1);
}

long mem_end_r(long r)
{
	mem__end();
	return r;
}

bool mem_map_check(int flags, int fd)
{
	if (!(flags & MAP_ANONYMOUS) && fd >= 0)
		mem_forget_all();
	return flags & MAP_FIXED;
}

void mem_forget_all(void)
{
	atomic_store_explicit(&mem__off, true, memory_order_relaxed);
	mem__changed();
}

/* The entry [src, src + n) would have now under the generation *gen, or
 * 0 if it cannot have one. */
static uint64_t mem__entry(const void *src, size_t n, uint64_t *gen)
{
	uintptr_t a = (uintptr_t)src;
	uint64_t first = a >> MEM__SHIFT, last = (a + n - 1) >> MEM__SHIFT;
	uint64_t g;

	if (atomic_load_explicit(&mem__off, memory_order_relaxed) ||
	    a + n - 1 < a || last >> MEM__PAGE_BITS ||
	    last - first >= (1u << MEM__SPAN_BITS))
		return 0;
	*gen = atomic_load_explicit(&mem__gen, memory_order_acquire);
	g = *gen & ((1u << MEM__GEN_BITS) - 1);
	return 1ull << 63 | g << (MEM__PAGE_BITS + MEM__SPAN_BITS) |
	       (last - first) << MEM__PAGE_BITS | first;
}

/* Remember want, read under the full generation gen, unless a call that
 * may unmap was in flight meanwhile (IN FLIGHT). */
static void mem__seen_add(uint64_t want, uint64_t gen)
{
	if (atomic_load(&mem__changing) != 0 || atomic_load(&mem__gen) != gen)
		return;
	if (atomic_load_explicit(&mem__seen_gen, memory_order_relaxed) != gen) {
		for (int i = 0; i < MEM__WAYS; i++)
			atomic_store_explicit(&mem__seen[i], 0,
					      memory_order_relaxed);
		atomic_store_explicit(&mem__seen_gen, gen,
				      memory_order_relaxed);
	}
	atomic_store_explicit(&mem__seen[mem__turn++ % MEM__WAYS], want,
			      memory_order_relaxed);
}

/* Is the range of `want` inside a remembered one of the same generation? */
static bool mem__seen_has(uint64_t want, uint64_t gen)
{
	const uint64_t page = (1ull << MEM__PAGE_BITS) - 1;
	const uint64_t span = (1ull << MEM__SPAN_BITS) - 1;
	const int gen_at = MEM__PAGE_BITS + MEM__SPAN_BITS;
	uint64_t first = want & page;
	uint64_t last = first + (want >> MEM__PAGE_BITS & span);

	if (atomic_load_explicit(&mem__seen_gen, memory_order_relaxed) != gen)
		return false;
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

/* A process_vm_readv or _writev of n bytes from src to dst answered got:
 * true if it copied them.  Where such a call is not allowed (a seccomp
 * filter, say) the copy is made directly, as the kernel's call is about to
 * touch the memory anyway; EFAULT is false. */
static bool mem__vm_done(ssize_t got, void *dst, const void *src, size_t n)
{
	if (got == (ssize_t)n)
		return true;
	if (got < 0 && errno != EFAULT) {
		__builtin_memcpy(dst, src, n);
		return true;
	}
	return false;
}

bool preload_peek(void *dst, const void *src, size_t n)
{
	struct iovec l = { dst, n }, r = { (void *)src, n };
	uint64_t want, gen = 0;
	ssize_t got;

	if (!n)
		return true;
	want = mem__entry(src, n, &gen);
	if (want && mem__seen_has(want, gen)) {
		__builtin_memcpy(dst, src, n);
		return true;
	}
	stats_add(STAT_PEEKS);
	got = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
	if (got == (ssize_t)n && want)
		mem__seen_add(want, gen);
	return mem__vm_done(got, dst, src, n);
}

bool preload_poke(void *dst, const void *src, size_t n)
{
	struct iovec l = { (void *)src, n }, r = { dst, n };

	return mem__vm_done(process_vm_writev(getpid(), &l, 1, &r, 1, 0), dst,
			    src, n);
}

bool mem_uffd_request(unsigned long req)
{
	return req == (unsigned long)USERFAULTFD_IOC_NEW ||
	       req == (unsigned long)UFFDIO_API ||
	       req == (unsigned long)UFFDIO_REGISTER;
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

/* A call that may unmap, between mem_begin and mem__end (IN FLIGHT). */
#define MEM__AROUND(type, call)                                               \
	({                                                                    \
		type r_;                                                      \
		mem_begin();                                                  \
		r_ = (type)(call);                                            \
		mem__end();                                                   \
		r_;                                                           \
	})

PRELOAD_WRAP int munmap(void *addr, size_t len)
{
	return MEM__AROUND(int, MEM__CALL(munmap, SYS_munmap, addr, len));
}

PRELOAD_WRAP int mprotect(void *addr, size_t len, int prot)
{
	if (prot & PROT_READ)
		return (int)MEM__CALL(mprotect, SYS_mprotect, addr, len, prot);
	return MEM__AROUND(int,
			   MEM__CALL(mprotect, SYS_mprotect, addr, len, prot));
}

PRELOAD_WRAP int pkey_mprotect(void *addr, size_t len, int prot, int pkey)
{
	return MEM__AROUND(int, MEM__CALL(pkey_mprotect, SYS_pkey_mprotect,
					  addr, len, prot, pkey));
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
#define MEM__MMAP                                                             \
	(f ? f(addr, len, prot, flags, fd, off)                               \
	   : (void *)mem__raw(real_syscall_raw(SYS_mmap, (long)addr,          \
					       (long)len, prot, flags, fd,    \
					       (long)off)))
	/* Only MAP_FIXED can replace a mapping: any other lands where
	 * nothing was.  A file mapping ends SEEN. */
	if (!mem_map_check(flags, fd))
		return MEM__MMAP;
	return MEM__AROUND(void *, MEM__MMAP);
#undef MEM__MMAP
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
	void *to;
	va_list ap;

	/* The fifth argument, whatever the flags: glibc's mremap passes its
	 * register to the kernel as it is, which takes it as a hint with
	 * MREMAP_DONTUNMAP alone (helper-34). */
	va_start(ap, flags);
	to = va_arg(ap, void *);
	va_end(ap);
	return MEM__AROUND(void *, MEM__CALL(mremap, SYS_mremap, old, old_len,
					     len, flags, to));
}

PRELOAD_WRAP int madvise(void *addr, size_t len, int advice)
{
	if (!mem_advice_may_unmap(advice))
		return (int)MEM__CALL(madvise, SYS_madvise, addr, len, advice);
	return MEM__AROUND(int,
			   MEM__CALL(madvise, SYS_madvise, addr, len, advice));
}

PRELOAD_WRAP ssize_t process_madvise(int pidfd, const struct iovec *iov,
				     size_t n, int advice, unsigned int flags)
{
	if (!mem_advice_may_unmap(advice))
		return MEM__CALL(process_madvise, SYS_process_madvise, pidfd,
				 iov, n, advice, flags);
	return MEM__AROUND(ssize_t,
			   MEM__CALL(process_madvise, SYS_process_madvise,
				     pidfd, iov, n, advice, flags));
}

PRELOAD_WRAP void *shmat(int id, const void *addr, int flags)
{
	return MEM__AROUND(void *,
			   MEM__CALL(shmat, SYS_shmat, id, addr, flags));
}

PRELOAD_WRAP int shmdt(const void *addr)
{
	return MEM__AROUND(int, MEM__CALL(shmdt, SYS_shmdt, addr));
}

/* (The raw brk answers the new break, not 0/-1: no raw fallback; no
 * lookup ever calls brk or sbrk through these names.) */
PRELOAD_WRAP int brk(void *addr)
{
	return MEM__AROUND(int, REAL(brk) ? REAL(brk)(addr)
					  : (errno = ENOMEM, -1));
}

PRELOAD_WRAP void *sbrk(intptr_t inc)
{
	return MEM__AROUND(void *, REAL(sbrk) ? REAL(sbrk)(inc)
					      : (errno = ENOMEM, (void *)-1));
}

/* libaio's io_destroy: the kernel unmaps the context's ring. */
int io_destroy(unsigned long ctx); /* libaio.h's */
PRELOAD_WRAP int io_destroy(unsigned long ctx)
{
	return MEM__AROUND(int, REAL(io_destroy)
					? REAL(io_destroy)(ctx)
					: (int)real_syscall_raw(SYS_io_destroy,
								(long)ctx, 0,
								0, 0, 0, 0));
}

/* A new process: what MADV_DONTFORK kept out of it is not there.  fork()
 * runs the handler below in the child; _Fork runs none, so the child moves
 * the generation on its way back; clone(fn) never comes back here, so it
 * is moved before (the child's copy has the new one, the parent merely
 * forgets). */
PRELOAD_WRAP pid_t _Fork(void)
{
	pid_t r = REAL(_Fork) ? REAL(_Fork)()
			      : (pid_t)mem__raw(real_syscall_raw(
					SYS_clone, SIGCHLD, 0, 0, 0, 0, 0));

	if (r == 0)
		mem__changed();
	return r;
}

PRELOAD_WRAP int clone(int (*fn)(void *), void *stack, int flags, void *arg,
		       ...)
{
	void *ptid, *tls, *ctid;
	va_list ap;

	/* The three optional arguments, read as glibc's clone reads them
	 * (registers, whatever the flags). */
	va_start(ap, arg);
	ptid = va_arg(ap, void *);
	tls = va_arg(ap, void *);
	ctid = va_arg(ap, void *);
	va_end(ap);
	if (!(flags & CLONE_VM))
		mem__changed();
	if (!REAL(clone)) {
		errno = ENOSYS;
		return -1;
	}
	return REAL(clone)(fn, stack, flags, arg, ptid, tls, ctid);
}

static void mem__fork_child(void)
{
	mem__changed();
}

__attribute__((constructor)) static void mem__init(void)
{
	(void)pthread_atfork(NULL, NULL, mem__fork_child);
}
