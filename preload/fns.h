/* SPDX-License-Identifier: MIT */
/*
 * fns.h - THE LIST: every libc name the preload layer takes over, once.
 *
 * PRELOAD_LIBC(X) calls X(return type, name, parameter list) for each
 * name a wrapper (wrap_*.c) defines.  It makes the table of libc's own
 * definitions (struct real_fns in preload.h) and their resolution
 * (real_resolve_all in real.c); preload.map exports the same names, and
 * the test `preload_fns_exported` checks that the two agree.  Why each
 * name is wrapped is said beside its wrapper; a name taken over must also
 * be reachable through syscall(2) if it has a system call of its own
 * (PRELOAD_SYSCALLS in wrap_syscall.c).
 *
 * vfork is a stub in assembly that jumps to libc's (VFORK in wrap_exec.c).
 * fork needs no wrapper: the library's pthread_atfork handlers (FORK in
 * src/obj.c) run in the preload's copy of it.
 * pread/pwrite/preadv/pwritev only hide the private fds (PRIVATE): with an
 * offset, an eventfd or an epoll answers ESPIPE before touching anything,
 * the kernel's answer as it is.
 */
#ifndef UEPOLL_PRELOAD_FNS_H
#define UEPOLL_PRELOAD_FNS_H

#define PRELOAD_LIBC(X)                                                       \
	/* wrap_io.c */                                                       \
	X(ssize_t, read, (int, void *, size_t))                               \
	X(ssize_t, write, (int, const void *, size_t))                        \
	X(ssize_t, __read_chk, (int, void *, size_t, size_t))                 \
	X(ssize_t, readv, (int, const struct iovec *, int))                   \
	X(ssize_t, writev, (int, const struct iovec *, int))                  \
	X(ssize_t, preadv2, (int, const struct iovec *, int, off_t, int))     \
	X(ssize_t, pwritev2, (int, const struct iovec *, int, off_t, int))    \
	X(ssize_t, preadv64v2,                                                \
	  (int, const struct iovec *, int, off64_t, int))                     \
	X(ssize_t, pwritev64v2,                                               \
	  (int, const struct iovec *, int, off64_t, int))                     \
	X(ssize_t, pread, (int, void *, size_t, off_t))                       \
	X(ssize_t, pwrite, (int, const void *, size_t, off_t))                \
	X(ssize_t, pread64, (int, void *, size_t, off64_t))                   \
	X(ssize_t, pwrite64, (int, const void *, size_t, off64_t))            \
	X(ssize_t, preadv, (int, const struct iovec *, int, off_t))           \
	X(ssize_t, pwritev, (int, const struct iovec *, int, off_t))          \
	X(ssize_t, preadv64, (int, const struct iovec *, int, off64_t))       \
	X(ssize_t, pwritev64, (int, const struct iovec *, int, off64_t))      \
	X(FILE *, fdopen, (int, const char *))                                \
	X(int, io_submit, (unsigned long, long, void **))                     \
	/* wrap_fd.c */                                                       \
	X(int, close, (int))                                                  \
	X(int, close_range, (unsigned int, unsigned int, int))                \
	X(void, closefrom, (int))                                             \
	X(int, dup, (int))                                                    \
	X(int, dup2, (int, int))                                              \
	X(int, dup3, (int, int, int))                                         \
	X(int, fcntl, (int, int, ...))                                        \
	X(int, fcntl64, (int, int, ...))                                      \
	X(int, ioctl, (int, unsigned long, ...))                              \
	X(int, unshare, (int))                                                \
	X(int, getrlimit, (__rlimit_resource_t, struct rlimit *))             \
	X(int, setrlimit, (__rlimit_resource_t, const struct rlimit *))       \
	X(int, prlimit,                                                       \
	  (pid_t, __rlimit_resource_t, const struct rlimit *,                 \
	   struct rlimit *))                                                  \
	X(int, getrlimit64, (__rlimit_resource_t, struct rlimit64 *))         \
	X(int, setrlimit64, (__rlimit_resource_t, const struct rlimit64 *))   \
	X(int, prlimit64,                                                     \
	  (pid_t, __rlimit_resource_t, const struct rlimit64 *,               \
	   struct rlimit64 *))                                                \
	/* wrap_syscall.c */                                                  \
	X(long, syscall, (long, ...))                                         \
	/* wrap_eventfd.c */                                                  \
	X(int, eventfd, (unsigned int, int))                                  \
	X(int, eventfd_read, (int, uint64_t *))                               \
	X(int, eventfd_write, (int, uint64_t))                                \
	/* wrap_epoll.c */                                                    \
	X(int, epoll_create, (int))                                           \
	X(int, epoll_create1, (int))                                          \
	X(int, epoll_ctl, (int, int, int, struct epoll_event *))              \
	X(int, epoll_wait, (int, struct epoll_event *, int, int))             \
	X(int, epoll_pwait,                                                   \
	  (int, struct epoll_event *, int, int, const sigset_t *))            \
	X(int, epoll_pwait2,                                                  \
	  (int, struct epoll_event *, int, const struct timespec *,           \
	   const sigset_t *))                                                 \
	/* wrap_msg.c */                                                      \
	X(ssize_t, sendmsg, (int, const struct msghdr *, int))                \
	X(int, sendmmsg, (int, struct mmsghdr *, unsigned int, int))          \
	/* wrap_exec.c */                                                     \
	X(int, execve, (const char *, char *const[], char *const[]))          \
	X(int, execveat,                                                      \
	  (int, const char *, char *const[], char *const[], int))             \
	X(int, execv, (const char *, char *const[]))                          \
	X(int, execvp, (const char *, char *const[]))                         \
	X(int, execvpe, (const char *, char *const[], char *const[]))         \
	X(int, fexecve, (int, char *const[], char *const[]))                  \
	X(int, posix_spawn,                                                   \
	  (pid_t *, const char *, const posix_spawn_file_actions_t *,         \
	   const posix_spawnattr_t *, char *const[], char *const[]))          \
	X(int, posix_spawnp,                                                  \
	  (pid_t *, const char *, const posix_spawn_file_actions_t *,         \
	   const posix_spawnattr_t *, char *const[], char *const[]))          \
	X(int, system, (const char *))                                        \
	X(FILE *, popen, (const char *, const char *))                        \
	X(pid_t, vfork, (void))                                               \
	/* wrap_mem.c */                                                      \
	X(void *, mmap, (void *, size_t, int, int, int, off_t))               \
	X(void *, mmap64, (void *, size_t, int, int, int, off64_t))           \
	X(int, munmap, (void *, size_t))                                      \
	X(void *, mremap, (void *, size_t, size_t, int, ...))                 \
	X(int, mprotect, (void *, size_t, int))                               \
	X(int, pkey_mprotect, (void *, size_t, int, int))                     \
	X(int, pkey_alloc, (unsigned int, unsigned int))                      \
	X(int, madvise, (void *, size_t, int))                                \
	X(void *, shmat, (int, const void *, int))                            \
	X(int, shmdt, (const void *))                                         \
	X(int, brk, (void *))                                                 \
	X(void *, sbrk, (intptr_t))                                           \
	X(ssize_t, process_madvise,                                           \
	  (int, const struct iovec *, size_t, int, unsigned int))             \
	X(int, io_destroy, (unsigned long))                                   \
	X(pid_t, _Fork, (void))                                               \
	X(int, clone, (int (*)(void *), void *, int, void *, ...))            \
	/* wrap_poll.c */                                                     \
	X(int, poll, (struct pollfd *, nfds_t, int))                          \
	X(int, __poll_chk, (struct pollfd *, nfds_t, int, size_t))            \
	X(int, ppoll,                                                         \
	  (struct pollfd *, nfds_t, const struct timespec *,                  \
	   const sigset_t *))                                                 \
	X(int, __ppoll_chk,                                                   \
	  (struct pollfd *, nfds_t, const struct timespec *,                  \
	   const sigset_t *, size_t))                                         \
	X(int, select,                                                        \
	  (int, fd_set *, fd_set *, fd_set *, struct timeval *))              \
	X(int, pselect,                                                       \
	  (int, fd_set *, fd_set *, fd_set *, const struct timespec *,        \
	   const sigset_t *))

/*
 * PRELOAD_ALIASES(A) calls A(alias, name) for each other public name glibc
 * exports for a wrapped function (GLIBC_2.2.5, `nm -D libc.so.6`): a
 * program or library that calls it by that name must reach the wrapper
 * too.  Missed, `__poll` of a NOPOLL object looked at its stale kernel fd
 * (an emptied eventfd read ready, a ready instance did not: a lost wakeup;
 * helper-37's F1), and `__close` left the object on a number the kernel
 * then gave to another file.  Each is defined beside its name's wrapper
 * (PRELOAD_ALIAS in preload.h), the same function.
 */
#define PRELOAD_ALIASES(A)                                                    \
	A(__read, read)                                                       \
	A(__write, write)                                                     \
	A(__close, close)                                                     \
	A(__dup2, dup2)                                                       \
	A(__fcntl, fcntl)                                                     \
	A(__poll, poll)                                                       \
	A(__select, select)

#endif
