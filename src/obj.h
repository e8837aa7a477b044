/* SPDX-License-Identifier: MIT */
/*
 * obj.h - the header every uepoll object (ueventfd, instance) starts with,
 * its reference count, its kernel fds and its type-stable allocation.
 *
 * Lifetime: the fd table holds one reference from creation to
 * uepoll_close(); every operation in flight holds one more, taken by
 * fdtab_get().  The object is released (its private kernel fds closed) when
 * the count drops to zero.  Its memory is then returned to a per-type pool
 * and only ever reused for an object of the same type, never given back to
 * malloc: that is what lets fdtab_get() try to take a reference on a
 * pointer it read without a lock (see fdtab.c).
 *
 * Two numbers.  `fd` is the public number, the one the program holds: the
 * kernel object (an epoll, an eventfd) as the kernel created it.  `kfd` is
 * a private duplicate of it (close-on-exec) on which the library makes
 * every call of its own.  uepoll_close() closes the public number at once,
 * as close(2) frees a number at once, even while other threads are inside
 * calls on the object; those calls go on using kfd, which is closed only
 * with the last reference.  So uepoll never makes a call on, nor closes, a
 * number the program may have been given again since (CLOSE in api.c).
 *
 * Numbers (NUMBERS in obj.c): uepoll_dup and its kin give an object more
 * public numbers, as dup(2) gives a file more; each holds one reference
 * (the fd table's), and the object leaves the table (its type's close) when
 * the last of them is closed.
 *
 * Signals (SIGNALS in obj.c): a number may be closed or replaced by a
 * signal handler whatever its thread holds; the close of an object and its
 * release, which take other locks, are then owed to the thread (`owed`).
 *
 * Fork: every object from the end of its creation to the end of its
 * release is on a list of live objects, which a forked child repairs
 * (FORK in obj.c).
 */
#ifndef UEPOLL_OBJ_H
#define UEPOLL_OBJ_H

#include <signal.h>
#include <sys/types.h>

#include "internal.h"
#include "lock.h"

enum uobj_type {
	UOBJ_EVENTFD = 1,
	UOBJ_PORT = 2,
};

struct uobj {
	/* Pairs: uobj_tryget's CAS (acquire) with uobj_put's decrement
	 * (release); the final decrement is acq_rel so the release sees every
	 * earlier user's writes. */
	_Atomic int refs;
	/* Written once when the memory is first carved; the pool never changes
	 * it, so a racy reader of a recycled object still sees the right type. */
	int type;
	/* Its public numbers (fd table keys): the first of a list linked
	 * through the table (fdtab_link); -1 before creation ends and once
	 * none is left.  obj.c's lock (NUMBERS); read without it only by the
	 * object's own creation and a forked child. */
	int fd;
	/* The private duplicate every call of the library uses; -1 once
	 * closed (by the release, under the object's own lock: FORK). */
	int kfd;
	/* On the live list (obj.c's lock). */
	struct list live;
	bool on_live;
	/* From uobj_alloc to its publication (or its free, if it never is):
	 * its creator's span (FORK in obj.c).  The creator's only. */
	bool creating;
	/* When it joined the live list (obj.c's count of joins, under its
	 * lock): a fork's prepare shares and prepares only the objects that
	 * joined since the last fork that did every one (FORK in obj.c). */
	unsigned live_seq;
	struct uobj *pool_next;
	/* Its close, or its release, left by a thread inside one of the
	 * library's locks (a signal handler's close: SIGNALS in obj.c) to the
	 * end of that thread's last lock. */
	struct lock_owed owed;
};

/*
 * Each type's table: what the public entry points (api.c), obj.c and the
 * fork handlers do with an object of the type, dispatched by its type and
 * never by a switch.  A NULL call is one the type leaves to the kernel: the
 * entry point makes the kernel call of the same name on the public number
 * (read(2) of an epoll, epoll_ctl(2) on an eventfd...), so the answer and
 * errno are the kernel's.
 */
struct epoll_event;
struct uepoll_batch;
struct ueventfd_coalesce;
/* FORK: what a fork or an exec does with a live object (uobj_ops.fate).
 * Applied in the order of the types (ueventfds before instances: UNPEND in
 * unpend.c). */
enum uobj_fate {
	UOBJ_KEEP,   /* as it is */
	UOBJ_DEMOTE, /* ops->demote */
	UOBJ_SHARE,  /* ops->share */
};
struct uobj_ops {
	size_t size;
	ssize_t (*read)(struct uobj *o, void *buf, size_t n);
	ssize_t (*write)(struct uobj *o, const void *buf, size_t n);
	int (*ctl)(struct uobj *o, int op, int fd, struct epoll_event *ev);
	/* deadline: -1 blocks, 0 polls, else an absolute CLOCK_MONOTONIC time
	 * in ns.  NULL: EINVAL, as epoll_wait(2) on a non-epoll fd. */
	int (*wait)(struct uobj *o, struct epoll_event *evs, int max,
		    int64_t deadline, const sigset_t *sigmask);
	/* The object left the fd table (uepoll_close, or a number reused
	 * behind our back): detach it from others (a closed ueventfd leaves
	 * every instance watching it).  Idempotent. */
	void (*close)(struct uobj *o);
	/* The last reference is gone: close kfd and what else the object
	 * owns, then uobj_free.  Idempotent up to uobj_free (a forked child
	 * finishes a release its parent's thread had begun: FORK). */
	void (*release)(struct uobj *o);
	/* F_SETFL gave the file the status flags fl (uepoll_fcntl).  May be
	 * NULL. */
	void (*flags_set)(struct uobj *o, int fl);
	/* fork, prepare, before the gate (other threads run): the object's
	 * kernel fds are about to be shared with another process.  May be
	 * NULL. */
	void (*fork_prepare)(struct uobj *o);
	/* fork, child, all locks free: forget the state of the threads that
	 * did not come along (waiters, spinners, the FIFO line) and repair
	 * what they left half-done.  Returns the references the child still
	 * has besides the fd table's (a queued timer's). */
	int (*fork_child)(struct uobj *o);
	/* Something outside uepoll's calls polls the file (poll(), select(),
	 * a kernel epoll): its readiness must be exact from now on
	 * (UEPOLL_NOPOLL, UEVENTFD_NOPOLL end).  events: a kernel epoll's
	 * registration (EPOLLET: a ueventfd owes it an edge per write), else
	 * 0.  May be NULL.  Returns true when it began a hold that the
	 * kernel's call is to make (an instance held EPOLLET: WATCHED in
	 * bell.c), which polled_end then ends or keeps. */
	bool (*polled)(struct uobj *o, uint32_t events);
	/* After the kernel's call that polled announced: made, or refused
	 * (the hold ends). */
	void (*polled_end)(struct uobj *o, bool made);
	/* poll() or select() is about to look at the file (the preload
	 * layer): make its readiness what a wait would find, as the kernel's
	 * poll of an epoll drops what is not ready.  May be NULL. */
	void (*looked)(struct uobj *o);
	/* FORK: would `looked` change anything now?  Under obj__lock, with
	 * no reference (the object is on the live list: its memory and
	 * fields are whole): reads only, so that a fork's prepare writes
	 * nothing to an object that has nothing to do (a page written after
	 * a fork is copied, or faults back to writable: the parent's cost
	 * per fork, docs/benchmarks.md, issue 35 item 4).  NULL: always,
	 * when looked is set. */
	bool (*look_due)(struct uobj *o);
	/* DEMOTE: become, now, the kernel object the object stands for, with
	 * its exact state, while other threads use it (uobj_demote).  0 or
	 * -errno. */
	int (*demote)(struct uobj *o);
	/* FORK: what a fork (exec false: in its prepare) or an exec (true)
	 * is to do with the object: its policy (obj__demote_all acts on it).
	 * Called under obj__lock: reads only. */
	enum uobj_fate (*fate)(struct uobj *o, bool exec);
	/* SHARED: UOBJ_SHARE's work (a fork's prepare).  May be NULL if fate
	 * never answers UOBJ_SHARE. */
	int (*share)(struct uobj *o);
	/* The process exits normally (obj.c's destructor): deliver what the
	 * object still holds back for other processes.  May be NULL. */
	void (*exit_flush)(struct uobj *o);
	/* uepoll_batch: NULL for a type that has no min-wait (EINVAL). */
	int (*batch)(struct uobj *o, const struct uepoll_batch *set,
		     struct uepoll_batch *old);
	/* ueventfd_coalesce: NULL for a type that does not coalesce. */
	int (*coalesce)(struct uobj *o, const struct ueventfd_coalesce *set,
			struct ueventfd_coalesce *old);
};

/* The table of o's type (set once, when its memory was first carved). */
extern const struct uobj_ops *const uobj__ops[];
static inline const struct uobj_ops *uobj_ops(const struct uobj *o)
{
	return uobj__ops[o->type];
}

/* Allocate zeroed memory of the type's size from its pool, refs == 1,
 * fd == kfd == -1.  The creation is a span a fork waits for (FORK in
 * obj.c), from here to uobj_publish (or uobj_free): called with no lock of
 * ours held. */
struct uobj *uobj_alloc(int type);
/* Creation is over (every field and lock set up): from now on the fork
 * handlers take its locks.  Called just before it is published. */
void uobj_live(struct uobj *o);
/* Creation is over: uobj_live, then o is published under its public number
 * fd, which is returned.  -ENOMEM: not published, fd closed and o released
 * (the table could not grow). */
int uobj_publish(struct uobj *o, int fd);
/*
 * NUMBERS.  A new number for o (the caller holds a reference), made by the
 * kernel from oldfd, which must lead to o: dup3(oldfd, newfd, flags) when
 * newfd >= 0, else fcntl(oldfd, F_DUPFD or, with O_CLOEXEC in flags,
 * F_DUPFD_CLOEXEC, -newfd - 1).  The new number, or -errno; -ESTALE: oldfd
 * no longer leads to o (closed or demoted meanwhile), the caller asks
 * again.  Async-signal-safe (SIGNALS in obj.c).
 */
int uobj_dup(struct uobj *o, int oldfd, int newfd, int flags);
/* The number fd of o (the caller holds a reference) is closed: unpublish
 * it, close it in the kernel if kclose, then, if it was o's last number,
 * the type's close.  -ESTALE: fd no longer led to o (another thread closed
 * it, or a demotion took it back); nothing done.  Async-signal-safe
 * (SIGNALS in obj.c). */
int uobj_close_number(int fd, struct uobj *o, bool kclose);
/* F_SETFL set the file status flags fl on o's file (uepoll_fcntl). */
void uobj_flags_set(struct uobj *o, int fl);
/* Unpublish every number of o (the caller holds a reference) without its
 * type's close: a demotion, which has taken its watchers itself. */
void uobj_unpublish_all(struct uobj *o);
/* The number through which to make, in a kernel epoll, the registration
 * the program made through fd (a demotion's or a fork's, DEMOTE in
 * port.c): the kernel keys a registration (file, number) and keeps it
 * while the file lives, so fd itself if it is still o's (kcmp: not closed
 * behind our back); if the program closed it and fd is free, fd as a
 * temporary copy of o's file (*tmp); else o's private number.  The caller
 * gives it back with uobj_key_done after its ctl. */
int uobj_key_number(struct uobj *o, int fd, bool *tmp);
void uobj_key_done(int fd, bool tmp);
/* How many objects of the type are live now (made and not yet freed):
 * a relaxed hint, for the preload layer's "none at all" fast paths. */
int uobj_live_count(int type);
/* Take a reference if the count is not zero. */
bool uobj_tryget(struct uobj *o);
void uobj_get(struct uobj *o);
/* The last reference releases the object; inside one of the library's
 * locks, the release is owed (SIGNALS in obj.c).  Async-signal-safe. */
void uobj_put(struct uobj *o);
/* The number fd was closed or replaced behind uepoll's back (the preload
 * layer's wrappers, or a check that found the number holds another file):
 * drop the object recorded there, if any, without touching the number.
 * Calls in flight on it finish on its private fd. */
void uobj_forget(int fd);
/* fd's object, if any, is polled from outside uepoll's calls (the preload
 * layer's poll/select wrappers, with events 0): ops->polled. */
void uobj_polled(int fd, uint32_t events);
/* poll()/select() of fd (the preload layer): uobj_polled, then the type's
 * looked. */
void uobj_looked(int fd);
/* The same before a ctl of fd into a kernel epoll, with its events:
 * returns the object, with a reference, if it began a hold that the
 * kernel's call makes (then call uobj_polled_end with the call's outcome),
 * else NULL. */
struct uobj *uobj_polled_ctl(int fd, uint32_t events);
void uobj_polled_end(struct uobj *o, bool made);
/* The same for object o (the caller holds a reference), if fd still leads
 * to it. */
void uobj_unpublish(int fd, struct uobj *o);
/* Demote every ueventfd an execve() would keep open (uepoll_demote_exec). */
int obj_demote_inherited(void);
/* The live instances that have a number, each with a reference (put them
 * and free *out): the count (0: none, or no memory). */
size_t obj_ports(struct uobj ***out);
/* uepoll_demote: demote o (the caller holds a reference), a span a fork
 * waits for (FORK in obj.c). */
int uobj_demote(struct uobj *o);
/* The object left the fd table: its type's close (the caller holds a
 * reference; inside one of the library's locks, owed: SIGNALS). */
void uobj_close(struct uobj *o);
/* Return the memory to its pool (the end of a release, or of a failed
 * creation). */
void uobj_free(struct uobj *o);
/* Memory the close and release paths give back (an instance's items and
 * records): kept, and freed by the next creation or ADD (obj_reclaim),
 * since a signal handler may close and release an object (SIGNALS in
 * obj.c) and free(3) is not async-signal-safe.  Async-signal-safe. */
void obj_free_later(void *p);
/* Free what obj_free_later kept (never from a signal handler: a creation,
 * a ctl ADD; no lock of ours held). */
void obj_reclaim(void);

/* FORK: how many forks made this process from the first one, the
 * process's fork generation: 0 in a process no fork made, the parent's
 * plus one in a child (obj.c's child handler, before any other thread
 * exists, so a plain load sees it: a thread created later, or a signal
 * handler, runs after that store).  An object made before a fork tells
 * that it is the child's copy by this number alone (FORKED in port.c),
 * so a child need not write it into every object (a page written is a
 * page copied). */
unsigned obj_fork_gen(void);

/* PREPARED (obj.c): how many objects the last fork's prepare walked to
 * share and prepare them (those made since the last fork that did every
 * one).  For tests: a count of the prepare's work. */
unsigned obj_fork_visits(void);

/* In a forked child: set *v to 0 unless it is 0 already (a page the child
 * only reads is not copied). */
static inline void obj_fork_zero(_Atomic int *v)
{
	if (atomic_load_explicit(v, memory_order_relaxed))
		atomic_store_explicit(v, 0, memory_order_relaxed);
}

#endif
