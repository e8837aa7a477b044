/* SPDX-License-Identifier: MIT */
/*
 * wrap_exec.c - the calls that start another program with this process's
 * fds: the exec family, posix_spawn, system, popen, and vfork.
 *
 * A ueventfd's number is the kernel eventfd it stands for, but its counter
 * lives in this process's memory, which a new program does not get.  So
 * before the program is replaced or a child starts one, every ueventfd it
 * would inherit (no FD_CLOEXEC) is demoted: its counter goes into the
 * kernel eventfd, which the new program then reads exactly
 * (uepoll_demote_exec).  Demoting more than needed (a failed exec, a spawn
 * whose file actions close the fd) costs speed, never correctness.
 *
 * Why each name: glibc's execl, execlp, execle, execv and execvp call its
 * internal execve, and system, popen and posix_spawn its internal spawn,
 * none through the exported names: each is wrapped itself.
 *
 * VFORK stays vfork: a program may rely on its child sharing memory (to
 * hand exec's errno back, say).  Its child shares this memory but not the
 * fd table, so it must not change what the library knows of numbers: a
 * demotion, a close, a dup2 in the child would say "private fd closed" or
 * "number gone" in the memory while the parent's table keeps them (JDK's
 * launcher closes every fd in its vfork child).  So the demotion comes
 * first, in the parent, as for posix_spawn, and the child's wrappers that
 * make, close or replace numbers are libc's calls on its own table
 * (preload_in_vfork_child).  vfork is a stub (x86-64, aarch64) that keeps
 * the caller's return address in a thread-local variable, takes it off the
 * stack and calls libc's vfork (whose own return address lives in a
 * register across the system call): both the child and, later, the parent
 * come back into the stub, which marks the parent's thread as itself again
 * and returns to the caller (the technique of sanitizers' vfork
 * interceptors).
 *
 * execveat and fexecve, and every exec through syscall(2)
 * (wrap_syscall.c), demote the same way.
 */
#include <stdarg.h>
#include <sys/types.h>
#include <stdlib.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "uepoll.h"

#include "fdzone.h"

#include "preload.h"

void exec_prepare(void)
{
	int e = errno;

	if (preload_ready() && !preload_in_vfork_child()) {
		(void)uepoll_demote_exec();
		stats_add(STAT_DEMOTES);
	}
	errno = e;
}

PRELOAD_WRAP int execve(const char *path, char *const argv[],
			char *const envp[])
{
	exec_prepare();
	return REAL(execve)(path, argv, envp);
}

PRELOAD_WRAP int execv(const char *path, char *const argv[])
{
	exec_prepare();
	return REAL(execv)(path, argv);
}

PRELOAD_WRAP int execvp(const char *file, char *const argv[])
{
	exec_prepare();
	return REAL(execvp)(file, argv);
}

PRELOAD_WRAP int execvpe(const char *file, char *const argv[],
			 char *const envp[])
{
	exec_prepare();
	return REAL(execvpe)(file, argv, envp);
}

PRELOAD_WRAP int execveat(int dirfd, const char *path, char *const argv[],
			  char *const envp[], int flags)
{
	exec_prepare();
	if (!REAL(execveat)) { /* glibc < 2.34 */
		long r = REAL(syscall)(SYS_execveat, dirfd, path, argv, envp,
				       flags);

		return (int)r;
	}
	return REAL(execveat)(dirfd, path, argv, envp, flags);
}

PRELOAD_WRAP int fexecve(int fd, char *const argv[], char *const envp[])
{
	exec_prepare();
	return REAL(fexecve)(fd, argv, envp);
}

/* The execl* argument lists, counted and then copied into an array on the
 * stack (no malloc: these run in forked children).  arg is never NULL
 * (glibc declares it nonnull). */
#define EXEC__ARGV(argv, arg)                                                \
	size_t n_ = 1;                                                       \
	va_list ap_;                                                         \
	va_start(ap_, arg);                                                  \
	while (va_arg(ap_, char *))                                          \
		n_++;                                                        \
	va_end(ap_);                                                         \
	char *argv[n_ + 1];                                                  \
	argv[0] = (char *)(arg);                                             \
	va_start(ap_, arg);                                                  \
	for (size_t i_ = 1; i_ < n_; i_++)                                   \
		argv[i_] = va_arg(ap_, char *);                              \
	argv[n_] = NULL

PRELOAD_WRAP int execl(const char *path, const char *arg, ...)
{
	EXEC__ARGV(argv, arg);
	va_end(ap_);
	return execv(path, argv);
}

PRELOAD_WRAP int execlp(const char *file, const char *arg, ...)
{
	EXEC__ARGV(argv, arg);
	va_end(ap_);
	return execvp(file, argv);
}

PRELOAD_WRAP int execle(const char *path, const char *arg, ...)
{
	char *const *envp;

	EXEC__ARGV(argv, arg);
	/* The environment follows the NULL that ends the list. */
	(void)va_arg(ap_, char *);
	envp = va_arg(ap_, char *const *);
	va_end(ap_);
	return execve(path, argv, envp);
}

/* glibc's file action (spawn_int.h, the same since glibc 2.2): a tag and
 * a union whose dup2 member is { fd, newfd }.  posix_spawn_file_actions_t
 * itself shows __used and __actions in <spawn.h>. */
struct exec__action {
	int tag; /* 1: dup2 */
	union {
		struct {
			int fd, newfd;
		} dup2;
		struct {
			int fd;
			char *path;
			int oflag;
			mode_t mode;
		} open;
	} u;
};

/* A spawn with file actions may dup2 an fd, close-on-exec or not, onto a
 * number the new program inherits: the source of each dup2 action is
 * demoted too.  Actions that do not look like glibc's (a libc this was not
 * built for): every object is. */
static void exec__spawn_prepare(const posix_spawn_file_actions_t *fa)
{
	const struct exec__action *a;
	int e = errno, n;

	exec_prepare();
	if (!fa || !preload_ready() || preload_in_vfork_child())
		return;
	n = fa->__used;
	a = (const struct exec__action *)(const void *)fa->__actions;
	if (n >= 0 && n <= fa->__allocated && (n == 0 || a)) {
		for (int i = 0; i < n; i++)
			if (a[i].tag == 1 &&
			    preload_maybe_object(a[i].u.dup2.fd) &&
			    uepoll_demote(a[i].u.dup2.fd) == 0)
				stats_add(STAT_DEMOTES);
	} else {
		preload_demote_all();
	}
	errno = e;
}

PRELOAD_WRAP int posix_spawn(pid_t *pid, const char *path,
			     const posix_spawn_file_actions_t *fa,
			     const posix_spawnattr_t *attr, char *const argv[],
			     char *const envp[])
{
	int r;

	exec__spawn_prepare(fa);
	fdzone_spawn_begin();
	r = REAL(posix_spawn)(pid, path, fa, attr, argv, envp);
	fdzone_spawn_end();
	return r;
}

PRELOAD_WRAP int posix_spawnp(pid_t *pid, const char *file,
			      const posix_spawn_file_actions_t *fa,
			      const posix_spawnattr_t *attr, char *const argv[],
			      char *const envp[])
{
	int r;

	exec__spawn_prepare(fa);
	fdzone_spawn_begin();
	r = REAL(posix_spawnp)(pid, file, fa, attr, argv, envp);
	fdzone_spawn_end();
	return r;
}

PRELOAD_WRAP int system(const char *command)
{
	int r, e;

	exec_prepare();
	fdzone_spawn_begin();
	r = REAL(system)(command);
	e = errno;
	fdzone_spawn_end();
	errno = e;
	return r;
}

PRELOAD_WRAP FILE *popen(const char *command, const char *type)
{
	FILE *f;
	int e;

	exec_prepare();
	fdzone_spawn_begin();
	f = REAL(popen)(command, type);
	e = errno;
	fdzone_spawn_end();
	errno = e;
	return f;
}


void *vfork__prepare(void *ret);
void *vfork__after(long r);
pid_t vfork__nosys(void);

/* VFORK.  The stub's first call, in the parent: the exec demotion, the
 * caller's return address kept (the stub takes it off the stack, so that
 * libc's vfork, called, leaves nothing of the parent's on the stack the
 * child runs on), and the mark the child's wrappers see.  Returns libc's
 * vfork for the stub to call (NULL: none, the stub fails with ENOSYS). */
__thread void *vfork__ret __attribute__((tls_model("initial-exec")));
__thread bool preload__vforked __attribute__((tls_model("initial-exec")));

__attribute__((used, visibility("hidden"))) void *vfork__prepare(void *ret)
{
	void *f = (void *)REAL(vfork);

	exec_prepare(); /* here, in the parent: the child has its own fds */
	vfork__ret = ret;
	preload__vforked = f != NULL;
	if (f)
		fdzone_spawn_begin(); /* SPAWN in src/fdzone.c */
	return f;
}

/* The stub's second call, in the child (r == 0) and then in the parent
 * (the child's pid, or -1): the parent's thread is itself again.  Returns
 * the caller's return address.  (The thread-local variables are the
 * parent's thread's: the child runs on them, as on its memory.) */
__attribute__((used, visibility("hidden"))) void *vfork__after(long r)
{
	if (r != 0) {
		int e = errno;

		preload__vforked = false;
		fdzone_spawn_end();
		errno = e;
	}
	return vfork__ret;
}

__attribute__((used, visibility("hidden"))) pid_t vfork__nosys(void)
{
	errno = ENOSYS;
	return -1;
}

#if defined(__x86_64__)
/* At entry %rsp is 8 mod 16 (the caller's return address on top). */
__asm__(".text\n"
	".globl vfork\n"
	".type vfork, @function\n"
	"vfork:\n"
	"	mov (%rsp), %rdi\n"
	"	sub $8, %rsp\n"
	"	call vfork__prepare\n"
	"	add $8, %rsp\n"
	"	test %rax, %rax\n"
	"	jz 1f\n"
	"	pop %rcx\n" /* the return address, kept in vfork__ret */
	"	call *%rax\n" /* libc's vfork: child, then parent, here */
	"	push %rax\n"
	"	sub $8, %rsp\n"
	"	mov %rax, %rdi\n"
	"	call vfork__after\n"
	"	add $8, %rsp\n"
	"	mov %rax, %rcx\n"
	"	pop %rax\n"
	"	push %rcx\n"
	"	ret\n"
	"1:	jmp vfork__nosys\n"
	".size vfork, .-vfork\n");
#elif defined(__aarch64__)
/* The return address is in x30; the stack is the caller's (16-aligned). */
__asm__(".text\n"
	".globl vfork\n"
	".type vfork, %function\n"
	"vfork:\n"
	"	mov x0, x30\n"
	"	stp x29, x30, [sp, #-16]!\n"
	"	bl vfork__prepare\n"
	"	ldp x29, x30, [sp], #16\n"
	"	cbz x0, 1f\n"
	"	blr x0\n" /* libc's vfork: child, then parent, here */
	"	str x0, [sp, #-16]!\n"
	"	bl vfork__after\n"
	"	mov x30, x0\n"
	"	ldr x0, [sp], #16\n"
	"	ret\n"
	"1:	b vfork__nosys\n"
	".size vfork, .-vfork\n");
#endif
