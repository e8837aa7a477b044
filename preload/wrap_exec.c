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
 * fd table, so it must not demote anything itself: the memory would say
 * "demoted, private fd closed" while the parent's table keeps the fd.  So
 * the demotion comes first, in the parent, as for posix_spawn: vfork is a
 * stub that calls vfork__prepare and then jumps to libc's vfork (a jump,
 * not a call: no frame of ours is left for the child to return through).
 * In the child, exec_prepare sees that it runs in a vfork child (the
 * thread's cached id is not the kernel's: a forked child's handler updates
 * it, a vfork child runs none) and does nothing: what it inherits was
 * demoted before the vfork.
 *
 * execveat and fexecve, and every exec through syscall(2)
 * (wrap_syscall.c), demote the same way.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "uepoll.h"

#include "preload.h"

/* This thread's id as the kernel gave it; 0 until asked, and again in a
 * forked child (exec__forked).  A vfork child shares it with the parent's
 * thread, whose id it is not. */
static __thread pid_t exec__tid __attribute__((tls_model("initial-exec")));

static void exec__forked(void)
{
	exec__tid = 0;
}

static void exec__register(void)
{
	(void)pthread_atfork(NULL, NULL, exec__forked);
}

static bool exec__in_vfork_child(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pid_t t = (pid_t)real_syscall_raw(SYS_gettid, 0, 0, 0, 0, 0, 0);

	if (!exec__tid) {
		(void)pthread_once(&once, exec__register);
		exec__tid = t;
	}
	return exec__tid != t;
}

void exec_prepare(void)
{
	int e = errno;

	if (preload_ready() && !exec__in_vfork_child()) {
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

PRELOAD_WRAP int posix_spawn(pid_t *pid, const char *path,
			     const posix_spawn_file_actions_t *fa,
			     const posix_spawnattr_t *attr, char *const argv[],
			     char *const envp[])
{
	exec_prepare();
	return REAL(posix_spawn)(pid, path, fa, attr, argv, envp);
}

PRELOAD_WRAP int posix_spawnp(pid_t *pid, const char *file,
			      const posix_spawn_file_actions_t *fa,
			      const posix_spawnattr_t *attr, char *const argv[],
			      char *const envp[])
{
	exec_prepare();
	return REAL(posix_spawnp)(pid, file, fa, attr, argv, envp);
}

PRELOAD_WRAP int system(const char *command)
{
	exec_prepare();
	return REAL(system)(command);
}

PRELOAD_WRAP FILE *popen(const char *command, const char *type)
{
	exec_prepare();
	return REAL(popen)(command, type);
}


void *vfork__prepare(void);
pid_t vfork__nosys(void);

/* VFORK.  Called by the stub before libc's vfork; returns libc's vfork for
 * the stub to jump to (NULL: none, the stub then fails with ENOSYS). */
__attribute__((used, visibility("hidden"))) void *vfork__prepare(void)
{
	void *f = (void *)REAL(vfork);

	exec_prepare(); /* here, in the parent: the child has its own fds */
	return f;
}

#if defined(__x86_64__)
__asm__(".text\n"
	".globl vfork\n"
	".type vfork, @function\n"
	"vfork:\n"
	"	sub $8, %rsp\n" /* the call's 16-byte alignment */
	"	call vfork__prepare\n"
	"	add $8, %rsp\n"
	"	test %rax, %rax\n"
	"	jz 1f\n"
	"	jmp *%rax\n"
	"1:	jmp vfork__nosys\n"
	".size vfork, .-vfork\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl vfork\n"
	".type vfork, %function\n"
	"vfork:\n"
	"	stp x29, x30, [sp, #-16]!\n"
	"	bl vfork__prepare\n"
	"	ldp x29, x30, [sp], #16\n"
	"	cbz x0, 1f\n"
	"	br x0\n"
	"1:	b vfork__nosys\n"
	".size vfork, .-vfork\n");
#endif

__attribute__((used, visibility("hidden"))) pid_t vfork__nosys(void)
{
	errno = ENOSYS;
	return -1;
}
