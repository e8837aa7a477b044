/* SPDX-License-Identifier: MIT */
/*
 * uepoll.h - epoll(7) and eventfd(2) rebuilt in userspace.
 *
 * Every function has the signature, flags and errno of its kernel
 * counterpart: rename epoll_* to uepoll_* and eventfd to ueventfd, route
 * read/write/close of those fds through uepoll_read/uepoll_write/uepoll_close,
 * and the program behaves as before.  The types and flags are the kernel's
 * own, from <sys/epoll.h> and <sys/eventfd.h>.
 *
 * What differs from the kernel (see docs/design.md for the why):
 *  - A ueventfd or uepoll instance must be closed with uepoll_close(); a plain
 *    close() leaks the userspace object until its fd number is reused by a
 *    later ueventfd()/uepoll_create1(), which then reclaims it.  dup() of these
 *    fds gives a kernel fd that does not share the userspace state.
 *    uepoll_close() frees the number at once, as close(2) does, even while
 *    another thread is inside a call on the object (that call goes on until
 *    it returns, as in the kernel).
 *  - A ueventfd uses two kernel fds (its eventfd, which is the fd you get,
 *    and a private duplicate the library works on); a uepoll instance three
 *    (its epoll fd, a private duplicate, and a private eventfd "doorbell").
 *    With fewer free, ueventfd() and uepoll_create1() fail with EMFILE.
 *  - The fd of a ueventfd, seen by poll()/select()/a kernel epoll, is readable
 *    whenever the counter is non-zero; it may also stay readable after a
 *    uepoll_read() emptied the counter, until the second uepoll_read() in a row
 *    that finds it empty (which clears it: a drain loop that reads until
 *    EAGAIN makes no system call).  Edge-triggered kernel watchers of that fd see
 *    one edge per idle->ready transition, not one per write.
 *  - O_NONBLOCK cleared with fcntl() on a ueventfd is seen from the second
 *    empty read after a successful one.
 *  - After fork() each process has its own copy of the userspace state (a
 *    ueventfd's counter is not shared, unlike an eventfd's; kernel fds are):
 *    use the objects in one process, and close them in the other with
 *    uepoll_close() or leave them alone.  The child may use uepoll whatever
 *    the parent's other threads were doing in it at the fork.
 *  - Writes that signal handlers make while their thread is inside uepoll
 *    (below) reach the watchers when that thread leaves uepoll's lock, and
 *    several reach an edge-triggered watcher as one event.
 *
 * Threads, signals, cancellation:
 *  - Every function is thread-safe.
 *  - uepoll_read/uepoll_write (ueventfd_read/ueventfd_write) are
 *    async-signal-safe, as read(2)/write(2) are: a signal handler may write a
 *    ueventfd whatever its thread was doing.  The other functions are not.
 *  - uepoll_wait, uepoll_pwait, uepoll_pwait2, uepoll_read and uepoll_write
 *    are cancellation points, as the kernel calls are; a thread cancelled
 *    in one leaves nothing behind.  No other function is one.
 *  - The fd of a uepoll instance, seen by poll()/select()/a kernel epoll or
 *    another event loop, is readable whenever uepoll_wait() would return events.
 *    After a uepoll_wait() returned the last ready event it may stay readable
 *    until the next uepoll_wait() that finds nothing (an outer loop sees at
 *    most one spurious readiness per batch; a busy loop makes no system call).
 */
#ifndef UEPOLL_H
#define UEPOLL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* UEPOLL_VERSION_MAJOR, _MINOR, _PATCH: CMake's project version, generated. */
#include "uepoll_version.h"

/* The running library's "MAJOR.MINOR.PATCH" (the macros give the header's). */
const char *uepoll_version(void);

/* epoll_create1(2): flags is 0 or EPOLL_CLOEXEC. */
int uepoll_create1(int flags);

/*
 * uepoll_create1() with uepoll's own options in uflags (EINVAL for unknown
 * bits), kept apart from flags so that flags stay exactly the kernel's.
 *
 * Which of the instance's blocked threads takes a wakeup:
 *   UEPOLL_WAKE_LIFO      the thread that blocked last, as the kernel does
 *                         for threads in epoll_wait on one epoll.  The
 *                         default.  Under a light load the same thread takes
 *                         nearly every event while the others stay asleep.
 *   UEPOLL_WAKE_FIFO      the thread that has waited longest; a thread that
 *                         comes back to wait goes to the back of the line.  So
 *                         N idle threads and N*k events (one at a time) give
 *                         exactly k to each.  Cost: one thread at a time
 *                         sleeps in the kernel and hands the lead to the next
 *                         when it returns, so each wakeup of an instance with
 *                         several idle threads costs an eventfd write and a
 *                         second thread wakeup (in a saturated work queue,
 *                         one wakeup per wait: see docs/benchmarks.md).  A
 *                         waiting thread that is not the leader holds one
 *                         extra fd (an eventfd) while it
 *                         waits; if none can be opened it waits in LIFO order
 *                         instead.  Timeouts, signals (EINTR, sigmask) and
 *                         the events returned are as in LIFO mode; a
 *                         non-blocking wait (timeout 0) takes what is ready
 *                         without queueing.
 * Giving both flags of one kind is EINVAL.
 *
 * Spinning: a blocking wait that finds nothing ready first polls the
 * instance's ueventfds for a short while (at most UEPOLL_SPIN_NS ns, an
 * environment variable read once per process, default 10000; 0 never
 * spins), so that an event that comes meanwhile costs no system call and no
 * thread wakeup.  The length adapts: spins that find nothing shrink it to
 * nothing, and only an occasional probe spins on an instance whose events
 * are rare.  One thread per instance spins at a time; it counts as busy,
 * not blocked, for EPOLLEXCLUSIVE and EPOLLROUNDROBIN, and a kernel fd's
 * event or a signal waits for the end of the spin.
 *   UEPOLL_NOSPIN         this instance's waits never spin: they block at
 *                         once, as the kernel's epoll_wait does.
 */
/* 0x1u and 0x2u chose the ready queue's kind until 0.2 (one kind now):
 * reserved, EINVAL. */
#define UEPOLL_WAKE_LIFO 0x4u
#define UEPOLL_WAKE_FIFO 0x8u
#define UEPOLL_NOSPIN 0x10u
int uepoll_create2(int flags, unsigned int uflags);
/* epoll_create(2): size must be > 0 and is otherwise ignored. */
int uepoll_create(int size);

/*
 * epoll_ctl(2).  fd may be a ueventfd (its readiness travels in userspace),
 * another uepoll instance, or any kernel fd the kernel's epoll accepts (kept in
 * the instance's own kernel epoll, with every kernel flag).
 */
int uepoll_ctl(int epfd, int op, int fd, struct epoll_event *event);

/*
 * EPOLLROUNDROBIN, with EPOLLEXCLUSIVE on EPOLL_CTL_ADD only (EINVAL
 * otherwise): a source shared by several instances hands successive events to
 * successive idle instances in turn, instead of always to the first one.
 *  - Who gets a wakeup: the watchers are walked in line order; an instance
 *    with no thread blocked in a wait (busy) is passed over, as with plain
 *    EPOLLEXCLUSIVE, and the first one with a blocked thread is woken.  That
 *    instance then moves to the back of the line.  So with N idle instances,
 *    N*k events give exactly k to each.
 *  - An event that finds an instance busy is queued in it as with plain
 *    EPOLLEXCLUSIVE (it sees the source ready at its next wait, if it still
 *    is); only waking takes turns.
 *  - ueventfds: the line is the ueventfd's wait queue; a turn costs nothing
 *    more than a plain exclusive wakeup.
 *  - Kernel fds (a listening socket, a pipe, shared by per-thread instances
 *    or by instances in forked processes): the kernel's own exclusive
 *    wakeup picks the instance; each instance that receives an event of the
 *    fd then moves its registration to the back of the fd's wait queue with
 *    EPOLL_CTL_DEL + EPOLL_CTL_ADD: two system calls per wakeup.  With
 *    EPOLLET the move waits until a later wait of the instance finds the fd
 *    drained (one more system call, a zero-timeout poll), so that it never
 *    reports a readiness already reported: every other flag keeps its
 *    meaning.
 *  - Turns go to sleeping instances only: a worker that is already running
 *    keeps taking whatever its next wait finds (a level-triggered listener
 *    stays ready while its backlog is not empty), so round robin evens out
 *    steady or sparse arrivals, not a burst that arrives while everyone is
 *    busy.
 * The value is a bit <sys/epoll.h> does not use; uepoll never passes it to
 * the kernel.
 */
#define EPOLLROUNDROBIN (1u << 26)

/*
 * EPOLLURGENT, with EPOLL_CTL_ADD or EPOLL_CTL_MOD, for any source (a
 * ueventfd, a kernel fd, another instance; with or without EPOLLEXCLUSIVE):
 * an event of this registration ends a batching wait at once (see
 * uepoll_batch below); without a batching policy it changes nothing.  It is
 * never reported in returned events and never passed to the kernel.  The
 * value is a bit <sys/epoll.h> does not use (the kernel ignores it).
 */
#define EPOLLURGENT (1u << 25)

/*
 * Min-wait batching (man 3 uepoll_batch).  Per instance, a policy makes a
 * wait collect events for a while instead of returning the first one:
 *   min_wait_us     the window: the wait keeps collecting until this long
 *                   after it began (UEPOLL_BATCH_FROM_FIRST: after its
 *                   first event was collected).  0: no window.
 *   min_events      enough events: return as soon as this many are
 *                   collected (separate from maxevents; 0: not used).
 *   inter_event_us  once an event is collected, return when no new one
 *                   came for this long (0: not used).
 *   flags           0 or UEPOLL_BATCH_FROM_FIRST.
 * With all three at 0 (the default) waits behave as epoll_wait.  With
 * min_wait_us == 0 and min_events or inter_event_us set, the window is
 * open until the timeout.
 *
 * THE RULE.  A wait with a timeout other than 0 on an instance with a
 * policy returns at the first of:
 *   1. maxevents events collected (at once);
 *   2. min_events events collected (at once);
 *   3. an event of an EPOLLURGENT registration collected (at once, with
 *      all collected so far);
 *   4. at least one event collected and the window closed;
 *   5. inter_event_us set, at least one event collected, and nothing new
 *      for inter_event_us since the last new event the wait saw (dozing in
 *      the window it is not woken by each ueventfd event and looks again
 *      every inter_event_us: it returns one to two gaps after the last);
 *   6. the timeout expired: with what it collected, maybe none (the
 *      timeout always wins: a timeout shorter than min_wait_us ends the
 *      wait at the timeout);
 *   7. a signal handler ran while it slept: it returns the events it
 *      collected and those ready then, or fails with EINTR if none.
 * So if nothing arrives during the window, the wait goes on (up to the
 * timeout) for the first event and returns it at once, with whatever else
 * is ready then (io_uring's min-wait rule).  A timeout of 0 never batches:
 * it returns what is ready.
 * Bound: once a wait holds an event it returns within min_wait_us of its
 * start (of its first event with UEPOLL_BATCH_FROM_FIRST), or earlier by
 * rules 1-6; with min_wait_us == 0 the bound is the timeout (io_uring's
 * wait_nr; two threads waiting on one instance under min_events alone may
 * each hold fewer until then).  Events are returned in the order
 * collected, each registration at most once per wait, as one epoll_wait:
 * a level-triggered source that stays ready, or an edge-triggered one that
 * fires again during the window, is returned by the next wait (and the
 * level-triggered ones a wait holds are not seen by other threads' waits
 * until it returns).
 * Cost: in the window, ueventfd writes make no system call and wake no
 * one until it closes (an urgent source, or enough events for min_events
 * or maxevents, wake the wait); while events are there the wait collects
 * them without system calls (plus one zero-timeout epoll_wait per
 * collection when the instance also holds kernel fds).  Kernel fds wake
 * the wait as they do any wait, with two limits of the kernel's interface:
 * a kernel event whose data.u64 equals that of an entry the batch already
 * holds is merged into it (events or-ed); and while a level-triggered
 * kernel fd the wait holds stays ready, other kernel fds do not wake it
 * until the window closes (their events are then collected, within the
 * bound), except the first 32 urgent ones.  An instance held
 * by another uepoll instance rings on every event (as the kernel wakes an
 * epoll's pollers), so its batching waits are woken by each event, and
 * return early rather than spin on such a level-triggered kernel fd.
 *
 * uepoll_batch(): set (if set != NULL) the policy of instance epfd and
 * return the previous one in *old (if old != NULL).  Returns 0, or -1 with
 * errno: EBADF epfd is not open; EINVAL epfd is not a uepoll instance,
 * unknown flags, or min_wait_us or inter_event_us above INT32_MAX.  A
 * policy change applies to waits that start after it.
 */
struct uepoll_batch {
	uint32_t min_wait_us;
	uint32_t min_events;
	uint32_t inter_event_us;
	uint32_t flags;
};
#define UEPOLL_BATCH_FROM_FIRST 0x1u
int uepoll_batch(int epfd, const struct uepoll_batch *set,
		 struct uepoll_batch *old);

/*
 * UEPOLL_CTL_MIN_WAIT, the op of the proposal (EPOLL_CTL_MIN_WAIT, Axboe
 * 2022): uepoll_ctl(epfd, UEPOLL_CTL_MIN_WAIT, fd, &ev) sets the instance's
 * min_wait_us to ev.data.u64 (its other policy fields stay) and returns the
 * old value; fd is ignored (pass -1).  EFAULT if ev is NULL, EINVAL if the
 * value is above INT32_MAX or epfd is not a uepoll instance (a kernel epoll
 * answers EINVAL to an unknown op), EBADF if epfd is not open.  The number
 * is far from the kernel's EPOLL_CTL_* (1..3) so that a future kernel op
 * cannot collide with it.
 */
#define UEPOLL_CTL_MIN_WAIT 0x75650001

/* epoll_wait(2), epoll_pwait(2), epoll_pwait2(2). */
int uepoll_wait(int epfd, struct epoll_event *events, int maxevents,
		int timeout);
int uepoll_pwait(int epfd, struct epoll_event *events, int maxevents,
		 int timeout, const sigset_t *sigmask);
int uepoll_pwait2(int epfd, struct epoll_event *events, int maxevents,
		  const struct timespec *timeout, const sigset_t *sigmask);

/* eventfd(2): flags from EFD_SEMAPHORE, EFD_NONBLOCK, EFD_CLOEXEC. */
int ueventfd(unsigned int initval, int flags);

/*
 * read(2), write(2), close(2) that understand uepoll's objects and pass every
 * other fd straight to the kernel.
 */
ssize_t uepoll_read(int fd, void *buf, size_t count);
ssize_t uepoll_write(int fd, const void *buf, size_t count);
int uepoll_close(int fd);

/* eventfd_read(3)/eventfd_write(3) counterparts: 0 on success, -1 + errno. */
int ueventfd_read(int fd, eventfd_t *value);
int ueventfd_write(int fd, eventfd_t value);

/*
 * Coalesced wakeups (no kernel counterpart; man ueventfd_coalesce(3)).
 * A non-semaphore eventfd sums its writes, so one wakeup can collect many.
 * With delay_us > 0, a write that would wake a sleeper (a thread blocked in
 * uepoll_read(), a thread blocked in uepoll_wait() on an instance watching
 * the ueventfd, or whoever polls the ueventfd's fd with poll()/select()/a
 * kernel epoll/another event loop) holds that wakeup for at most delay_us
 * microseconds, and the writes in between ride on it.
 *   delay_us  0: wake at once (no coalescing); at most
 *             UEVENTFD_COALESCE_MAX_US (100 ms).
 *   flags     0, or UEVENTFD_HOLD_WRITES (below; needs delay_us > 0).
 *   count     0: no threshold.  Else a write that brings the counter to
 *             count or more wakes at once (the counter is the pending
 *             value: with writes of 1, count writes).
 * Guarantees:
 *  - A write is never lost and is visible at once: uepoll_read() of a
 *    non-empty counter and a uepoll_wait() that does not sleep (timeout 0,
 *    or a thread that was not asleep) see it immediately.  Only the waking
 *    of sleepers is delayed.
 *  - A waiter asleep when a write lands is woken within delay_us of the
 *    first held write (plus scheduling latency), or at once by a write
 *    that reaches count.  The last write of a burst is delivered too.
 *  - When no one sleeps on the ueventfd a write makes no system call, with
 *    or without a delay.  A held wakeup is run by one process-wide thread
 *    ("uepoll-timer", started when a ueventfd is first given a delay, all
 *    signals blocked, allowed the CPUs the process had when the library was
 *    loaded, whatever the pinning of the thread that started it), which
 *    sleeps with no timeout while nothing is pending: no
 *    timer is armed and nothing runs then.
 *  - Closing the ueventfd, or changing its setting, delivers a held wakeup
 *    at once (closing with one pending is safe).
 *  - Semaphore-mode ueventfds always wake at once: setting delay_us > 0 on
 *    one fails with EINVAL, and the default below does not apply to them.
 * UEVENTFD_HOLD_WRITES holds the writes themselves, not only the wakeups:
 * a write is added to a pending value that the counter does not show yet,
 * and the pending value is shown (added to the counter, which makes the
 * ueventfd readable and wakes as one write does) delay_us after the first
 * write that found nothing pending, or at once by the write that brings
 * the pending value to count.  Meanwhile reads, waits and poll() see the
 * counter without it (a non-blocking read answers EAGAIN if that is 0), so
 * a subscriber that drains the counter sleeps until the next batch,
 * however fast the publisher writes: one wakeup and one read per delay_us.
 * Without the flag an awake reader sees every write at once and keeps
 * finding the counter non-zero while writes keep coming.  A write is still
 * never lost (the last one of a burst is shown within delay_us), the
 * guarantees above hold for the shown writes, and a write makes no system
 * call and touches no watcher: the first write of a batch arms the timer
 * (under its lock), the others add to the pending value and load one flag
 * (the timer thread shows the batch and wakes).
 * Writes block (or fail with EAGAIN) when the counter plus the pending
 * value would exceed the counter's maximum, as an eventfd's do.  A write of
 * 0 shows nothing.  Closing the ueventfd or changing its setting shows the
 * pending value at once.
 * Default at creation: the environment variable
 * UEPOLL_EVENTFD_COALESCE="delay_us[,count]", read once per process at the
 * first ueventfd() (malformed or out of range: no coalescing); else none.
 * A later ueventfd_coalesce() overrides it for one ueventfd (call it right
 * after ueventfd() to set it "at creation").
 * ueventfd_coalesce(fd, set, old): set may be NULL (only read), old may be
 * NULL; old receives the setting in force before the call.  0, or -1 with
 * errno EBADF (fd is not a ueventfd), EINVAL (bad set), ENOMEM or EAGAIN
 * (the first delay of a ueventfd reserves room for its timer and starts
 * the timer thread if it is not running, and that failed; nothing
 * changed).
 */
#define UEVENTFD_COALESCE_MAX_US 100000u
#define UEVENTFD_HOLD_WRITES 0x1u
struct ueventfd_coalesce {
	uint32_t delay_us;
	uint32_t flags;
	uint64_t count;
};
int ueventfd_coalesce(int fd, const struct ueventfd_coalesce *set,
		      struct ueventfd_coalesce *old);

#ifdef __cplusplus
}
#endif

#endif /* UEPOLL_H */
