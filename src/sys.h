/* SPDX-License-Identifier: MIT */
/*
 * sys.h - the system calls uepoll makes, each returning -errno on failure.
 *
 * Two kinds (sys.c says why):
 *  - plain ones are raw system calls: never a cancellation point, never a
 *    libc wrapper that could be interposed, async-signal-safe;
 *  - the sleeps (sys_epoll_sleep, sys_ppoll, sys_read_sleep,
 *    sys_futex_sleep) are cancellation points, as the kernel calls uepoll
 *    stands for are: a thread cancelled in one unwinds through the
 *    caller's cleanup handlers (pthread_cleanup_push), which must leave
 *    no state behind.
 */
#ifndef UEPOLL_SYS_H
#define UEPOLL_SYS_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/types.h>
#include <pthread.h>
#include <time.h>

int sys_epoll_create1(int flags);
int sys_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
/* epoll_wait with a zero timeout: never sleeps. */
int sys_epoll_poll(int epfd, struct epoll_event *evs, int max);
/* epoll_pwait2: timeout NULL blocks; sigmask may be NULL.  A cancellation
 * point (when it may sleep). */
int sys_epoll_sleep(int epfd, struct epoll_event *evs, int max,
		    const struct timespec *timeout, const sigset_t *sigmask);
int sys_eventfd(unsigned int initval, int flags);
ssize_t sys_read(int fd, void *buf, size_t n);
/* read(2) that may block (the fd's O_NONBLOCK decides): a cancellation
 * point. */
ssize_t sys_read_sleep(int fd, void *buf, size_t n);
ssize_t sys_write(int fd, const void *buf, size_t n);
int sys_close(int fd);
int sys_fcntl_getfl(int fd);
int sys_fcntl_getfd(int fd);
/* dup3(2) (newfd == oldfd: the kernel's EINVAL) and fcntl(2) with one
 * argument, as the kernel answers them. */
int sys_dup3(int oldfd, int newfd, int flags);
int sys_fcntl(int fd, int cmd, void *arg);
/* This process's RLIMIT_NOFILE: set it to *set (if set), read the old
 * value into *get (if get): prlimit(2). */
struct rlimit;
int sys_nofile(const struct rlimit *set, struct rlimit *get);
/* Wake an eventfd: add 1 to its counter. */
void sys_eventfd_signal(int fd);
/* Add v to an eventfd's counter (the caller knows it fits). */
void sys_eventfd_add(int fd, uint64_t v);
/* Take an eventfd's value (all of it, or 1 in semaphore mode) into *v
 * without ever sleeping: 8, or -EAGAIN when it is 0. */
int sys_eventfd_take(int fd, uint64_t *v);
/* FUTEX_WAIT (private) until woken, a signal (-EINTR) or val changed
 * (-EAGAIN); a cancellation point. */
int sys_futex_sleep(_Atomic uint32_t *addr, uint32_t val);
void sys_futex_wake(_Atomic uint32_t *addr, int n);
/* A wait's sleep on a futex word (NAP in bell.c): FUTEX_WAIT (private) while
 * *addr == val, until woken (0), val changed (-EAGAIN), the absolute
 * CLOCK_MONOTONIC time until_ns passed (-ETIMEDOUT; until_ns < 0: never) or
 * a signal handler ran (-EINTR, whatever its SA_RESTART says: as
 * epoll_wait).  A cancellation point. */
int sys_futex_nap(_Atomic uint32_t *addr, uint32_t val, int64_t until_ns);
/* (In the ThreadSanitizer build, as for sys_futex_sleep, a handler that
 * ends the nap runs when the thread next enters a call the runtime
 * intercepts: THREADSANITIZER in sys.c.) */
/* ppoll(2): sleeps until an fd is ready, the timeout passes (0; NULL:
 * never) or a signal handler runs (-EINTR); sigmask applied atomically.  A
 * cancellation point. */
int sys_ppoll(struct pollfd *pfd, nfds_t n, const struct timespec *timeout,
	      const sigset_t *sigmask);
/* Sleep until fd is readable (1): sys_ppoll on one fd. */
int sys_ppoll_in(int fd, const struct timespec *timeout,
		 const sigset_t *sigmask);
/* The poll mask of fd now, without sleeping (0 if none or on error). */
short sys_poll_now(int fd, short events);
/*
 * A program's own fd, passed through by uepoll's entry points: libc's call
 * as the program would have made it (-1 and errno as it sets them; a
 * cancellation point where it is one).
 */
ssize_t sys_pass_read(int fd, void *buf, size_t n);
ssize_t sys_pass_write(int fd, const void *buf, size_t n);
int sys_pass_close(int fd);
/* fcntl(2) with its one argument (F_SETLKW sleeps: a cancellation point). */
int sys_pass_fcntl(int fd, int cmd, void *arg);
int sys_pass_epoll_pwait(int epfd, struct epoll_event *evs, int max,
			 int timeout, const sigset_t *sigmask);
int sys_pass_epoll_pwait2(int epfd, struct epoll_event *evs, int max,
			  const struct timespec *timeout,
			  const sigset_t *sigmask);
/* membarrier(2) (-errno if unsupported). */
int sys_membarrier(int cmd);
/* FUTEX_WAIT / FUTEX_WAKE (all) on an int, private, no cancellation point:
 * for the library's own gates (lock.c), never for a caller's sleep. */
void sys_futex_wait(_Atomic int *addr, int val);
void sys_futex_wake_all(_Atomic int *addr);
/* The shared (not private) futex operations, on a 32-bit word that another
 * process may map too (SHARED in eventfd_shared.c): FUTEX_WAIT while
 * *addr == val, for at most rel_ns (< 0: no limit): 0 woken, -EAGAIN,
 * -ETIMEDOUT or -EINTR; xsleep is a cancellation point, xwait is not, and
 * xsleep is restarted after a handler with SA_RESTART, limit or not, as a
 * blocked read(2) is (but before Linux 5.16 with a limit).  xwake wakes n.
 */
int sys_futex_xwait(void *addr, uint32_t val, int64_t rel_ns);
int sys_futex_xsleep(void *addr, uint32_t val, int64_t rel_ns);
void sys_futex_xwake(void *addr, int n);
/* This thread's id. */
long sys_gettid(void);
/* A robust, process-shared mutex (SHARED in eventfd_shared.c): trylock; lock
 * within ms milliseconds (ETIMEDOUT); both may answer EOWNERDEAD.  Unseen
 * by ThreadSanitizer (sys.c says why). */
int sys_xm_trylock(pthread_mutex_t *m);
int sys_xm_lock_ms(pthread_mutex_t *m, int ms);
void sys_xm_unlock(pthread_mutex_t *m);
void sys_xm_consistent(pthread_mutex_t *m);
/* Is thread id t stopped (SIGSTOP, job control, a debugger: /proc's 'T'
 * or 't')?  Async-signal-safe. */
bool sys_thread_stopped(uint32_t t);
/* An eventfd's value without touching it (fdinfo's eventfd-count): 0, or
 * -errno where it cannot be read. */
int sys_eventfd_value(int fd, uint64_t *v);
/* /proc/self/fdinfo/FD whole, in *out (malloc'd, NUL-terminated; the
 * caller frees it): its length, or -errno. */
ssize_t sys_fdinfo(int fd, char **out);
/* Does number fd hold the file registered in epoll epfd under tfd (its
 * toff-th such registration, 0 the first, in the order of the epoll's
 * fdinfo: kcmp(2)'s KCMP_EPOLL_TFD; an epoll holds two files under one
 * number when the program closed the number of one and gave it to the
 * other)?  1 or 0 (0 too if fd is not open or tfd not registered);
 * -ENOSYS or -EPERM where kcmp is not available. */
int sys_epoll_target_is(int epfd, int tfd, int toff, int fd);
/* A number that holds the file registered in epfd under tfd (the toff-th:
 * /proc/self/fd and kcmp(2)), or -1. */
int sys_epoll_target_find(int epfd, int tfd, int toff);
/* epoll_ctl(epfd, op, num, ev) as if number num held the file that number
 * file holds, whatever num holds in this process: the kernel keys a
 * registration by (file, number), and one made through a number the
 * program has since given to another file is reachable only so.  Made in
 * a helper thread with a copy of the fd table (unshare(CLONE_FILES)), so
 * the program's table is never touched, and the copy's numbers closed
 * before the thread ends.  0 or -errno (the kernel's answer), or 1 if it
 * could not be made (no thread, or num at or above the soft
 * RLIMIT_NOFILE: the caller falls back to a number of the file). */
int sys_epoll_ctl_keyed(int epfd, int op, int num, int file,
			struct epoll_event *ev);
void sys_yield(void);
/* Are fds a and b the same open file (kcmp(2))?  1 or 0 (0 too if one is
 * not open); -ENOSYS or -EPERM where kcmp is not available. */
int sys_same_file(int a, int b);
/* In a forked child (obj.c's handler): forget the cached process id. */
void sys_fork_child(void);
/* Point the library's kernel calls at libc's own definitions (THE SEAM in
 * sys.c): for a preloaded layer that wraps read, write, close, epoll_*,
 * ppoll or syscall, before any thread uses the library.  0, or -ENOSYS
 * (libc.so.6 not found: a static executable; nothing changed). */
int sys_bind_libc(void);
uint64_t sys_now_ns(void);
/* The calling thread's involuntary context switches so far (getrusage's
 * RUSAGE_THREAD ru_nivcsw), or -1: KERNEL SPIN's look at whether a spin
 * was preempted (spin.c). */
long sys_preempted(void);
/* The time from now to deadline (CLOCK_MONOTONIC ns), 0 once it passed. */
void sys_time_left(int64_t deadline, struct timespec *ts);

#endif
