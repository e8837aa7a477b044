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
 * vfork: the child would share this memory while the parent's other
 * threads go on, so it cannot demote anything safely, and a wrapper cannot
 * return into a vfork child at all (its frame would be the parent's).
 * vfork is therefore fork, which POSIX allows; the library's fork handler
 * shares every ueventfd first.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "uepoll.h"

#include "preload.h"

void exec_prepare(void)
{
	int e = errno;

	if (preload_ready()) {
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

PRELOAD_WRAP pid_t vfork(void)
{
	return REAL(fork)();
}
