/* SPDX-License-Identifier: MIT */
/*
 * krec.c - the registrations in an instance's kernel epoll that a harvest
 * must recognise (struct krec, krec.h): uepoll instances added to this one
 * (nesting), and kernel fds added with EPOLLROUNDROBIN or EPOLLURGENT.
 *
 * The kernel answers their ctl (errno included); what is ours is the record,
 * registered as the data: a harvest (wait.c) finds it again by address
 * (krec_of), reports the user's data, checks that a nested instance really
 * has something (krec_nest_ready, as the kernel's poll of an epoll does),
 * moves a round-robin registration to the back of the fd's wait queue
 * (krec_rr_took), and knows an urgent one.  A nested instance is counted
 * as watched (bell_watch), which makes it keep its fd exact (WATCHED in
 * bell.c), and, while its registration is EPOLLET, as an edge-triggered
 * nesting of the process (krec->edge, bell__nedge), which makes every
 * watched instance ring on every event (an edge-triggered holder sees the
 * events of every level below it): counted before the kernel call that
 * makes the registration so, uncounted after the one that ends it
 * (krec__nest_count, krec__nest_settle).
 *
 * LOCKING.  Records are made, reused and cleared under the holder's
 * port->mtx (ctl, and the round-robin rotation a harvest makes); they are
 * only ever appended to port->krecs (release store) and freed with the port
 * (krec_release), so a harvest walks the list without a lock (acquire loads)
 * and a record it found stays valid memory.
 *
 * DATA (no event carries anything but the data the program registered).
 * The kernel gives back only the data of a registration, and a harvest
 * translates it without a lock, possibly after the registration changed:
 * the record was reused, modified or freed meanwhile, or the kernel
 * reported the registration before ctl had finished recording it.  So a
 * record is registered with its address and a tag (krec__data): the tag
 * changes (under mtx) whenever the registration it stands for does, and
 * every field a harvest reads is stored before the kernel call that makes
 * the registration (so an event the kernel gives for it finds them).  A
 * harvest (krec_of) reads the tag, the fields, then the tag again, as a
 * sequence lock: the tag written before the fields (release fence) and
 * read after them (acquire fence).  If the event's tag is not the one it
 * read both times, the event belongs to a registration that no longer
 * exists, and it is dropped: the outcome of the ctl having come first,
 * which the caller cannot tell from the one it raced with.  An address is
 * told from user data by walking the instance's records (never freed
 * before the instance, so no user pointer can equal one), and the list is
 * read after each kernel call, so a record made while a wait slept is
 * found.  ADD always takes a fresh record (an EEXIST leaves the old one
 * untouched); MOD of an exclusive registration, which the kernel refuses,
 * changes nothing.  With 16 bits of tag (the address's unused top bits),
 * an event is mistaken only if its record is changed 65536 times while the
 * harvest that took it is between the kernel call and the translation.
 * Model: models/data.pml (a record added, modified, removed and reused
 * while events come).
 *
 * ROUNDROBIN (kernel fds; a ueventfd's is wq.c's).  Kernel fds cannot be
 * walked from userspace: each instance's kernel epoll holds the fd with
 * EPOLLEXCLUSIVE, and the kernel wakes the first idle one.  An instance
 * that receives an event of a round-robin registration moves it to the
 * back of the fd's wait queue with EPOLL_CTL_DEL + EPOLL_CTL_ADD
 * (krec_rr_took): two system calls per wakeup, the price of doing it with
 * what a stock kernel offers, and it works across processes too.  The ADD
 * polls the fd again, so an event that comes in between is not lost.
 *
 * RR-ET.  Moving a round-robin registration to the back (EPOLL_CTL_DEL +
 * ADD) makes the kernel poll the fd again, which an edge-triggered
 * registration would report as a new edge while the fd is still readable.
 * So for EPOLLET the move is owed (rr_owed) until a later wait of the
 * instance finds the fd drained (a zero-timeout poll), as an
 * edge-triggered user drains it before waiting again (krec_rr_settle: one
 * more system call per wakeup); a registration whose fd stays ready keeps
 * its place until then.  The inner instance's watched
 * count and doorbell mode change under its bell's wlock (bell_watch),
 * nested inside the holder's mtx and outside the inner instance's rq->lock.
 * A harvest's check of a nested instance takes no lock of its own (rq->lock
 * through rq_prune).
 *
 * STALE.  A MOD does not take a registration off the kernel's ready list:
 * one that was loud and queued there stays queued after a MOD makes it
 * silent, until an epoll_wait on the holder scans the list and drops it.
 * While it stays, a MOD that makes it loud again finds it queued and wakes
 * nobody, so an edge-triggered holder of this instance gets no edge; the
 * kernel's holder gets one if a wait on the instance came between (the
 * fuzzer's input tests/fuzz/corpus/silent-stale).  So a MOD that makes a
 * record silent keeps it counted in nkernel (and in ksettle) until a wait
 * has looked at the kernel epoll, as the kernel's next wait on the
 * instance would (wait__kernel uncounts what it found counted before its
 * call; t_nest_stale).  A DEL takes the registration off the list at
 * once.
 *
 * SILENT.  An epoll's fd reports EPOLLIN | EPOLLRDNORM and nothing else, so
 * a nested instance registered without either never fires (perf's `bench
 * epoll wait -N` registers its chain with EPOLLHUP only).  Its registration
 * is in the kernel epoll all the same (ctl's answers: EEXIST, ELOOP), but
 * it is not counted in nkernel, which counts what may fire (a wait need not
 * look at the kernel epoll for it, nor ring the doorbell to take turns with
 * it), nor as a watcher of the inner (which need not keep its fd exact for
 * it).  A MOD that makes it loud counts it (and watches the inner) before
 * the kernel call, so the kernel's poll then finds the inner's fd exact and
 * waits look at the kernel; one that makes it silent uncounts it after.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "uepoll.h"

#include "fdzone.h"
#include "krec.h"
#include "port_impl.h"
#include "lock.h"
#include "sys.h"
#include "unpend.h"

#define KREC__ADDR ((UINT64_C(1) << 48) - 1)

/* The data a record is registered with: its address and its tag. */
static uint64_t krec__data(struct krec *n)
{
	return (uint64_t)(uintptr_t)n |
	       ((uint64_t)(atomic_load_explicit(&n->tag, memory_order_relaxed) &
			   0xffff)
		<< 48);
}

/* The registration n stands for changes (mtx held): events given for the
 * one before are dropped from now on.  The release fence orders the tag
 * before the field stores that follow (DATA). */
static void krec__retag(struct krec *n)
{
	atomic_store_explicit(&n->tag,
			      atomic_load_explicit(&n->tag,
						   memory_order_relaxed) + 1,
			      memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

/* n is a record of this incarnation of inner, not of an earlier object at
 * the same address. */
static bool krec__is(struct krec *n, struct port *inner)
{
	return atomic_load_explicit(&n->inner_gen, memory_order_relaxed) ==
	       atomic_load_explicit(&inner->gen, memory_order_relaxed);
}

static struct krec *krec__find(struct port *p, struct port *inner, int fd)
{
	struct krec *n;

	for (n = atomic_load_explicit(&p->krecs, memory_order_acquire); n;
	     n = n->next)
		if (atomic_load_explicit(&n->inner, memory_order_relaxed) == inner &&
		    atomic_load_explicit(&n->fd, memory_order_relaxed) == fd)
			return n;
	return NULL;
}

/* Count an instance holding p (WATCHED in bell.c); edge: holding it
 * edge-triggered (delta 0: a holder's registration becomes, or stops
 * being, edge-triggered). */
static void krec__set_watched(struct port *p, int delta, bool edge)
{
	bell_watch(&p->bell, p->obj.kfd, (uint64_t)(uintptr_t)p, &p->rq,
		   delta, edge);
}

/* A free record, or a new one appended to the list (mtx held). */
static struct krec *krec__new(struct port *p)
{
	struct krec *n = krec__find(p, NULL, -1);

	if (n)
		return n;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	if ((uintptr_t)n & ~(uintptr_t)KREC__ADDR) {
		/* The tag needs the top 16 bits of the address. */
		free(n);
		return NULL;
	}
	atomic_init(&n->inner, NULL);
	atomic_init(&n->fd, -1);
	atomic_init(&n->probe, -1);
	n->next = atomic_load_explicit(&p->krecs, memory_order_relaxed);
	/* release: pairs with the harvest's acquire walk */
	atomic_store_explicit(&p->krecs, n, memory_order_release);
	return n;
}

/* The registration is gone (mtx held): events given for it are dropped,
 * and the record may be reused. */
static void krec__free(struct krec *n)
{
	int probe = atomic_exchange(&n->probe, -1);

	if (probe >= 0) /* UNPEND: never reported since its settle */
		fdzone_close(probe);
	krec__retag(n);
	atomic_store_explicit(&n->rr_events, 0, memory_order_relaxed);
	atomic_store_explicit(&n->urgent, false, memory_order_relaxed);
	atomic_store_explicit(&n->rr_owed, false, memory_order_relaxed);
	atomic_store_explicit(&n->silent, false, memory_order_relaxed);
	/* (A demotion's nested instance stays counted for good: krec.h.) */
	atomic_store_explicit(&n->edge, false, memory_order_relaxed);
	atomic_store_explicit(&n->fd, -1, memory_order_relaxed);
	atomic_store_explicit(&n->inner, NULL, memory_order_release);
}

/* Forget an owed move (mtx held). */
static void krec__unowe(struct port *p, struct krec *n)
{
	if (atomic_exchange(&n->rr_owed, false))
		atomic_fetch_sub(&p->rr_owed, 1);
}

/* Store what a harvest reads of a kernel fd's record (mtx held), before
 * the kernel call that registers it (DATA). */
static void krec__set_fd(struct krec *n, int fd, const struct epoll_event *ev,
			 uint32_t kevents, bool add)
{
	atomic_store_explicit(&n->data, ev->data.u64, memory_order_relaxed);
	/* ROUNDROBIN comes only with ADD; MOD of an exclusive registration
	 * fails in the kernel. */
	if (add)
		atomic_store_explicit(&n->rr_events,
				      (ev->events & EPOLLROUNDROBIN) ? kevents
								     : 0,
				      memory_order_relaxed);
	atomic_store_explicit(&n->urgent, (ev->events & EPOLLURGENT) != 0,
			      memory_order_relaxed);
	atomic_store_explicit(&n->kevents, kevents, memory_order_relaxed);
	atomic_store_explicit(&n->kreg, kevents, memory_order_relaxed);
	atomic_store_explicit(&n->disarmed, false, memory_order_relaxed);
	atomic_store_explicit(&n->fd, fd, memory_order_release);
}

/* A ctl the kernel is to refuse, leaving record n and the registration it
 * stands for unchanged: the kernel answers (errno included), given n's
 * current data and none of our bits. */
static int krec__answer(struct port *p, struct krec *n, int op, int fd,
			const struct epoll_event *ev)
{
	struct epoll_event kev = *ev;

	kev.events &= ~(EPOLLROUNDROBIN | EPOLLURGENT);
	kev.data.u64 = krec__data(n);
	return sys_epoll_ctl(p->obj.kfd, op, fd, &kev);
}

static int krec__kctl_counted(struct port *p, int op, int r);

int krec_kctl(struct port *p, int op, int fd, struct epoll_event *ev)
{
	return krec__kctl_counted(p, op, sys_epoll_ctl(p->obj.kfd, op, fd, ev));
}

int krec_kadd_keyed(struct port *p, int num, int file, struct epoll_event *ev)
{
	int r = sys_epoll_ctl_keyed(p->obj.kfd, EPOLL_CTL_ADD, num, file, ev);

	/* Not made under num: under file's own number then (the old key
	 * lost, the registration and its events kept). */
	if (r == 1)
		return krec_kctl(p, EPOLL_CTL_ADD, file, ev);
	return krec__kctl_counted(p, EPOLL_CTL_ADD, r);
}

static int krec__kctl_counted(struct port *p, int op, int r)
{
	/* nkernel: never below the true number of kernel registrations (a
	 * wait skips the kernel epoll at 0). */
	if (r == 0 && op == EPOLL_CTL_ADD)
		/* (its waits then sleep in the kernel epoll: NAP) */
		(void)bell_kernel(&p->bell, BELL_K_ADD, 0);
	else if (r == 0 && op == EPOLL_CTL_DEL)
		(void)bell_kernel(&p->bell, BELL_K_DEL, 0);
	return r;
}

/* A kernel fd's registration no longer has a record (mtx held). */
static void krec__fd_drop(struct port *p, struct krec *n)
{
	krec__unowe(p, n);
	krec__free(n);
	atomic_fetch_sub(&p->nfdrec, 1);
}

/*
 * Register fd with a record (ADD; MOD with m == n, n's own): every field
 * stored before the kernel call (DATA), none of our bits given to the
 * kernel.  m is new unless it is n; n: the fd's record before (NULL, or
 * one left by an fd closed without DEL, which the new one replaces).
 */
static int krec__fd_set(struct port *p, struct krec *m, struct krec *n,
			int op, int fd, const struct epoll_event *ev)
{
	struct epoll_event kev = *ev;
	int r;

	kev.events &= ~(EPOLLROUNDROBIN | EPOLLURGENT);
	krec__retag(m);
	krec__set_fd(m, fd, ev, kev.events, op == EPOLL_CTL_ADD);
	kev.data.u64 = krec__data(m);
	r = krec_kctl(p, op, fd, &kev);
	if (m == n)
		return r; /* a failed MOD: the registration is gone */
	if (r < 0) {
		krec__free(m);
		return r;
	}
	if (n)
		krec__fd_drop(p, n);
	atomic_fetch_add(&p->nfdrec, 1);
	return r;
}

/* ADD: a new record if asked (EPOLLROUNDROBIN, EPOLLURGENT), else the
 * kernel's registration alone (a closed fd's record stays until the
 * number's next MOD or DEL). */
static int krec__fd_add(struct port *p, struct krec *n, int fd,
			struct epoll_event *ev, bool rec)
{
	struct krec *m;

	if (!rec)
		return krec_kctl(p, EPOLL_CTL_ADD, fd, ev);
	m = krec__new(p);
	if (!m)
		return -ENOMEM;
	return krec__fd_set(p, m, n, EPOLL_CTL_ADD, fd, ev);
}

/* MOD: may add or drop EPOLLURGENT, and with it the record. */
static int krec__fd_mod(struct port *p, struct krec *n, int fd,
			struct epoll_event *ev, bool rec)
{
	struct krec *m = n;
	int r;

	/* The kernel refuses MOD of (or to) an exclusive registration after
	 * its EBADF checks: let it answer, with the record (and the data the
	 * kernel has) unchanged. */
	if (n && ((ev->events | atomic_load_explicit(&n->kevents,
						     memory_order_relaxed)) &
		  EPOLLEXCLUSIVE))
		return krec__answer(p, n, EPOLL_CTL_MOD, fd, ev);
	if (rec) {
		if (!m)
			m = krec__new(p);
		if (!m)
			return -ENOMEM;
		return krec__fd_set(p, m, n, EPOLL_CTL_MOD, fd, ev);
	}
	r = krec_kctl(p, EPOLL_CTL_MOD, fd, ev);
	if (r == 0 && n)
		krec__fd_drop(p, n);
	return r;
}

static int krec__fd_del(struct port *p, struct krec *n, int fd,
			struct epoll_event *ev)
{
	int r = krec_kctl(p, EPOLL_CTL_DEL, fd, ev);

	if (r == 0 && n)
		krec__fd_drop(p, n);
	return r;
}

/*
 * A kernel fd while the instance has recorded registrations: the kernel
 * answers, and a registration made with EPOLLROUNDROBIN or EPOLLURGENT gets a
 * record (registered as its data), so that a harvest can move a round-robin
 * registration to the back of the fd's wait queue (krec_rr_took) and know
 * an urgent one; neither bit goes to the kernel.
 */
int krec_ctl_fd(struct port *p, int op, int fd, struct epoll_event *ev)
{
	bool rec = op != EPOLL_CTL_DEL &&
		   (ev->events & (EPOLLROUNDROBIN | EPOLLURGENT));
	struct krec *n;
	int r;

	lock_take(&p->mtx);
	if (port_demoting(p)) { /* DEMOTE in port.c: the kernel's now */
		lock_drop(&p->mtx);
		return -ESTALE;
	}
	/* The fd's record, or one left by an fd closed without DEL (the
	 * kernel dropped that registration). */
	n = krec__find(p, NULL, fd);
	switch (op) {
	case EPOLL_CTL_ADD:
		r = krec__fd_add(p, n, fd, ev, rec);
		break;
	case EPOLL_CTL_MOD:
		r = krec__fd_mod(p, n, fd, ev, rec);
		break;
	case EPOLL_CTL_DEL:
		r = krec__fd_del(p, n, fd, ev);
		break;
	default:
		r = sys_epoll_ctl(p->obj.kfd, op, fd, ev); /* its EINVAL */
	}
	lock_drop(&p->mtx);
	return r;
}

int krec_add_unpended(struct port *p, int fd, struct epoll_event *ev,
		      int probe)
{
	struct krec *n, *m;
	int r;

	lock_take(&p->mtx);
	if (port_demoting(p)) {
		lock_drop(&p->mtx);
		fdzone_close(probe);
		return -ESTALE;
	}
	n = krec__find(p, NULL, fd);
	m = krec__new(p);
	if (!m) {
		lock_drop(&p->mtx);
		fdzone_close(probe);
		return -ENOMEM;
	}
	/* Before the kernel call (DATA): a harvest that gets the ADD's
	 * report finds it. */
	atomic_store_explicit(&m->probe, probe, memory_order_relaxed);
	r = krec__fd_set(p, m, n, EPOLL_CTL_ADD, fd, ev);
	if (r == 0 && probe >= 0) {
		struct unpend u = { .fd = fd,
				    .data = krec__data(m),
				    .probe = &m->probe,
				    .held = true };

		unpend_settle(p->obj.kfd, &u, 1);
	} else if ((probe = atomic_exchange(&m->probe, -1)) >= 0) {
		fdzone_close(probe);
	}
	lock_drop(&p->mtx);
	return r;
}

bool krec_unpend_drop(struct krec *n)
{
	int probe;
	bool drop;

	if (atomic_load_explicit(&n->probe, memory_order_relaxed) < 0)
		return false;
	probe = atomic_exchange(&n->probe, -1);
	if (probe < 0)
		return false;
	drop = !unpend_edge(probe);
	fdzone_close(probe);
	return drop;
}

/* Move n's registration to the back of its fd's wait queue (mtx held). */
static void krec__rotate(struct port *p, struct krec *n)
{
	struct epoll_event kev;
	int fd = atomic_load_explicit(&n->fd, memory_order_relaxed);

	kev.events = atomic_load_explicit(&n->rr_events, memory_order_relaxed);
	if (fd < 0 || !kev.events)
		return;
	/* The same registration: the same data, tag included. */
	kev.data.u64 = krec__data(n);
	if (krec_kctl(p, EPOLL_CTL_DEL, fd, NULL) == 0 &&
	    krec_kctl(p, EPOLL_CTL_ADD, fd, &kev) < 0)
		krec__fd_drop(p, n); /* closed meanwhile: the registration is gone */
}

/*
 * This instance took a wakeup of a round-robin kernel fd: move its
 * registration to the back of the fd's wait queue (the kernel wakes
 * exclusive waiters in queue order), so the next wakeup goes to the next
 * idle instance.  Two system calls per wakeup; the fd stays registered in
 * other instances meanwhile, and ADD re-checks readiness, so no event is
 * lost in between.  Edge-triggered: later (RR-ET).
 */
void krec_rr_took(struct port *p, struct krec *n)
{
	if (atomic_load_explicit(&n->rr_events, memory_order_relaxed) &
	    EPOLLET) {
		if (!atomic_exchange(&n->rr_owed, true))
			atomic_fetch_add(&p->rr_owed, 1);
		return;
	}
	lock_take(&p->mtx);
	krec__rotate(p, n);
	lock_drop(&p->mtx);
}

void krec_rr_settle(struct port *p)
{
	struct krec *n;

	lock_take(&p->mtx);
	for (n = atomic_load_explicit(&p->krecs, memory_order_acquire); n;
	     n = n->next) {
		uint32_t ev;
		int fd;

		if (!atomic_load_explicit(&n->rr_owed, memory_order_relaxed))
			continue;
		fd = atomic_load_explicit(&n->fd, memory_order_relaxed);
		ev = atomic_load_explicit(&n->rr_events, memory_order_relaxed);
		/* Still ready: the user has not drained it yet (or a new edge
		 * came, which this instance has then been given). */
		if (fd >= 0 && (sys_poll_now(fd, (short)(ev & (EPOLLIN |
							      EPOLLOUT |
							      EPOLLPRI))) &
				(short)ev))
			continue;
		krec__unowe(p, n);
		krec__rotate(p, n);
	}
	lock_drop(&p->mtx);
}

/* Store what a harvest reads of a nested instance's record and make the
 * registration's kernel event (mtx held): DATA, every field before the
 * kernel call. */
static void krec__nest_set(struct krec *n, const struct epoll_event *ev,
			   struct epoll_event *kev)
{
	krec__retag(n);
	atomic_store_explicit(&n->data, ev->data.u64, memory_order_relaxed);
	atomic_store_explicit(&n->urgent, (ev->events & EPOLLURGENT) != 0,
			      memory_order_relaxed);
	atomic_store_explicit(&n->kevents, EPOLLIN, memory_order_relaxed);
	*kev = *ev;
	kev->events &= ~EPOLLURGENT;
	kev->data.u64 = krec__data(n);
	atomic_store_explicit(&n->kreg, kev->events, memory_order_relaxed);
	atomic_store_explicit(&n->disarmed, false, memory_order_relaxed);
}

static bool krec__silent(uint32_t events)
{
	return !(events & (EPOLLIN | EPOLLRDNORM));
}

/* A registration that needs the inner's level exact (LAZY in bell.c): an
 * edge-triggered one (an edge per event), a one-shot one (its kernel epoll
 * would disarm it for a stale level), and one asking EPOLLRDNORM without
 * EPOLLIN: the kernel's nested wakeup carries EPOLLIN only, so its epoll
 * never requeues such an item on an event; a stale level that its wait
 * reports (which our check then drops) leaves it queued level-triggered,
 * and the next event is reported where the kernel's wait finds nothing
 * (attack14: lazy_rdnorm).  Counted in bell__nedge (krec->edge). */
static bool krec__exacting(uint32_t events)
{
	return (events & (EPOLLET | EPOLLONESHOT)) ||
	       (events & (EPOLLIN | EPOLLRDNORM)) == EPOLLRDNORM;
}

/* SILENT: record n becomes loud (counted, the inner watched) or silent
 * (mtx held); edge: a loud one's registration is EPOLLET or EPOLLONESHOT
 * (krec__exacting). */
static void krec__nest_loud(struct port *p, struct krec *n,
			    struct port *inner, bool loud, bool edge)
{
	if (atomic_load_explicit(&n->silent, memory_order_relaxed) != loud)
		return;
	atomic_store_explicit(&n->silent, !loud, memory_order_relaxed);
	(void)bell_kernel(&p->bell, loud ? BELL_K_ADD : BELL_K_DEL, 0);
	edge = loud ? edge
		    : atomic_load_explicit(&n->edge, memory_order_relaxed);
	atomic_store_explicit(&n->edge, loud && edge, memory_order_relaxed);
	/* LAZY in bell.c: a nesting whose holder or inner something outside
	 * uepoll may poll keeps every level exact (counted before the
	 * kernel call, inside krec__exact_hold's; uncounted after). */
	if (loud && (!bell_nopoll(&p->bell) || !bell_nopoll(&inner->bell))) {
		atomic_store_explicit(&n->exact, true, memory_order_relaxed);
		bell_exact(1);
	}
	krec__set_watched(inner, loud ? 1 : -1, edge);
	if (!loud && atomic_exchange(&n->exact, false))
		bell_exact(-1);
}

/* WATCHED in bell.c: a loud record n's registration becomes, or stops
 * being, edge-triggered or one-shot (mtx held). */
static void krec__nest_edge(struct krec *n, struct port *inner, bool edge)
{
	if (atomic_load_explicit(&n->silent, memory_order_relaxed) ||
	    atomic_load_explicit(&n->edge, memory_order_relaxed) == edge)
		return;
	atomic_store_explicit(&n->edge, edge, memory_order_relaxed);
	krec__set_watched(inner, 0, edge);
}

/* Count record n as its new events say, before the kernel call that
 * makes them: loud, and edge-triggered or one-shot (a holder that stops
 * being either is uncounted after the call, krec__nest_settle). */
static void krec__nest_count(struct port *p, struct krec *n,
			     struct port *inner, uint32_t events)
{
	if (krec__silent(events))
		return;
	if (atomic_load_explicit(&n->silent, memory_order_relaxed))
		krec__nest_loud(p, n, inner, true, krec__exacting(events));
	else if (krec__exacting(events))
		krec__nest_edge(n, inner, true);
}

/* After a kernel call that made record n's registration `events`: uncount
 * what it no longer is (silent, level-triggered).  A MOD that made it
 * silent stays counted in nkernel until a wait has looked at the kernel
 * epoll (STALE). */
static void krec__nest_settle(struct port *p, struct krec *n,
			      struct port *inner, uint32_t events)
{
	if (krec__silent(events)) {
		if (!atomic_load_explicit(&n->silent, memory_order_relaxed))
			(void)bell_kernel(&p->bell, BELL_K_STALE, 0);
		krec__nest_loud(p, n, inner, false, false);
	} else if (!krec__exacting(events)) {
		krec__nest_edge(n, inner, false);
	}
}

static int krec__nest_add(struct port *p, struct port *inner, int fd,
			  const struct epoll_event *ev)
{
	struct epoll_event kev;
	struct krec *n = krec__new(p);
	int r;

	if (!n)
		return -ENOMEM;
	krec__nest_set(n, ev, &kev);
	atomic_store_explicit(&n->fd, fd, memory_order_relaxed);
	atomic_store_explicit(&n->inner_gen,
			      atomic_load_explicit(&inner->gen,
						   memory_order_relaxed),
			      memory_order_relaxed);
	atomic_store_explicit(&n->inner, inner, memory_order_release);
	/* Watched and counted before the kernel looks at it, so its fd is
	 * exact then; a silent one neither (SILENT). */
	atomic_store_explicit(&n->silent, true, memory_order_relaxed);
	krec__nest_count(p, n, inner, kev.events);
	r = sys_epoll_ctl(p->obj.kfd, EPOLL_CTL_ADD, fd, &kev);
	if (r < 0) {
		krec__nest_loud(p, n, inner, false, false);
		krec__free(n);
	}
	return r;
}

static int krec__nest_mod(struct port *p, struct krec *n, int fd,
			  const struct epoll_event *ev)
{
	struct port *inner = atomic_load_explicit(&n->inner,
						  memory_order_relaxed);
	struct epoll_event kev;
	int r;

	krec__nest_set(n, ev, &kev);
	krec__nest_count(p, n, inner, kev.events);
	r = sys_epoll_ctl(p->obj.kfd, EPOLL_CTL_MOD, fd, &kev);
	if (r == 0)
		krec__nest_settle(p, n, inner, kev.events);
	return r;
}

static int krec__nest_del(struct port *p, struct krec *n, struct port *inner,
			  int fd, struct epoll_event *ev)
{
	int r = sys_epoll_ctl(p->obj.kfd, EPOLL_CTL_DEL, fd, ev);

	if (r == 0) {
		krec__nest_loud(p, n, inner, false, false);
		krec__free(n);
	}
	return r;
}

static int krec__ctl_nest(struct port *p, int op, int fd, struct port *inner,
			  struct epoll_event *ev);
static struct port *krec__inner_get(struct krec *n);

/* LAZY in bell.c: instances p holds, at every level, may have left their
 * doorbells rung with nothing ready behind them; take those (UNSTALE's
 * look: the queues left in place, as a refused ctl has not polled).  No
 * lock held: a reference dropped here may be an instance's last. */
static void krec__exact(struct port *p, int depth)
{
	if (depth >= 8) /* the kernel limits nesting; this bounds the walk */
		return;
	for (struct krec *n = atomic_load_explicit(&p->krecs,
						   memory_order_acquire);
	     n; n = n->next) {
		struct port *in;

		if (!atomic_load_explicit(&n->inner, memory_order_acquire) ||
		    atomic_load_explicit(&n->silent, memory_order_relaxed) ||
		    !(in = krec__inner_get(n)))
			continue;
		(void)bell_look(&in->bell, &in->rq, BELL_LOOK_EXACT);
		krec__exact(in, depth + 1);
		uobj_put(&in->obj);
	}
}

void krec_nest_exact(struct port *p)
{
	krec__exact(p, 0);
}

/* A loud registration of inner is about to be made (ADD or MOD): LAZY in
 * bell.c may have left inner, or a level below it, rung with nothing ready
 * behind it, which the kernel's call would poll.  Counted in bell__nexact
 * first (reads and waits stop being LAZY: a read that emptied a source
 * before the count is seen by the look after it, seq_cst), then inner and
 * every level below it made exact, so that the call polls exact fds, and a
 * record that needs them exact (krec__exacting, or an instance that is not
 * NOPOLL: counted under mtx, before the call) finds them so.  The record's
 * own counts, if the call makes them, outlive this hold.  A ctl of a
 * nesting is rare: the look's calls are its cost. */
static void krec__exact_hold(struct port *inner, bool begin)
{
	bell_exact(begin ? 1 : -1);
	if (!begin)
		return;
	(void)bell_look(&inner->bell, &inner->rq, BELL_LOOK_EXACT);
	krec__exact(inner, 0);
}

/* A nested instance: the kernel answers, with our record as the data. */
int krec_ctl_nest(struct port *p, int op, int fd, struct port *inner,
		  struct epoll_event *ev)
{
	bool loud;
	int r;

	/* An unknown op, the instance itself, or EPOLLEXCLUSIVE on an epoll:
	 * the kernel's EINVAL (the last before it polls the target, so
	 * before krec__set_watched, whose prune of the inner's ready queue
	 * would otherwise reorder its events). */
	if ((op != EPOLL_CTL_ADD && op != EPOLL_CTL_MOD && op != EPOLL_CTL_DEL) ||
	    inner == p || (op != EPOLL_CTL_DEL && (ev->events & EPOLLEXCLUSIVE)))
		return sys_epoll_ctl(p->obj.kfd, op, fd, ev);
	loud = op != EPOLL_CTL_DEL && !krec__silent(ev->events);
	if (loud)
		krec__exact_hold(inner, true);
	r = krec__ctl_nest(p, op, fd, inner, ev);
	if (loud)
		krec__exact_hold(inner, false);
	return r;
}

/* krec_ctl_nest's ctl, mtx taken here. */
static int krec__ctl_nest(struct port *p, int op, int fd, struct port *inner,
			  struct epoll_event *ev)
{
	struct krec *n;
	int r;

	lock_take(&p->mtx);
	if (port_demoting(p)) { /* DEMOTE in port.c: the kernel's now */
		lock_drop(&p->mtx);
		return -ESTALE;
	}
	n = krec__find(p, inner, fd);
	if (n && !krec__is(n, inner)) {
		/* Left by a closed instance whose memory and fd number inner
		 * now has: the kernel dropped that registration.  ADD reuses
		 * the record as a new one; MOD and DEL get the kernel's
		 * answer for a registration that is not there. */
		if (op == EPOLL_CTL_ADD)
			krec__free(n);
		n = NULL;
	}
	if (op == EPOLL_CTL_ADD)
		/* Registered already: the kernel's EEXIST, nothing changed. */
		r = n ? krec__answer(p, n, op, fd, ev)
		      : krec__nest_add(p, inner, fd, ev);
	else if (!n)
		r = krec_kctl(p, op, fd, ev);
	else if (op == EPOLL_CTL_MOD)
		r = krec__nest_mod(p, n, fd, ev);
	else
		r = krec__nest_del(p, n, inner, fd, ev);
	lock_drop(&p->mtx);
	return r;
}

/* inner's record under fd, or NULL (mtx held). */
static struct krec *krec__nest_of(struct port *p, struct port *inner, int fd)
{
	struct krec *n = krec__find(p, inner, fd);

	return n && krec__is(n, inner) ? n : NULL;
}

bool krec_has_nest(struct port *p, struct port *inner, int fd)
{
	bool r;

	lock_take(&p->mtx);
	r = krec__nest_of(p, inner, fd) != NULL;
	lock_drop(&p->mtx);
	return r;
}

static bool krec__ready(struct port *p, int depth);

struct krec *krec_of(struct port *p, uint64_t data, struct krec_view *out)
{
	uint64_t addr = data & KREC__ADDR;
	uint32_t tag = (uint32_t)(data >> 48), t1, t2;
	struct krec *n;

	for (n = atomic_load_explicit(&p->krecs, memory_order_acquire); n;
	     n = n->next)
		if ((uint64_t)(uintptr_t)n == addr)
			break;
	if (!n)
		return NULL;
	/* DATA: tag, fields, tag. */
	t1 = atomic_load_explicit(&n->tag, memory_order_acquire);
	out->data = atomic_load_explicit(&n->data, memory_order_relaxed);
	out->nested = atomic_load_explicit(&n->inner, memory_order_relaxed);
	out->urgent = atomic_load_explicit(&n->urgent, memory_order_relaxed);
	out->rr_events = atomic_load_explicit(&n->rr_events,
					      memory_order_relaxed);
	out->oneshot = atomic_load_explicit(&n->kreg, memory_order_relaxed) &
		       EPOLLONESHOT;
	atomic_thread_fence(memory_order_acquire);
	t2 = atomic_load_explicit(&n->tag, memory_order_relaxed);
	if (t1 != t2 || (t1 & 0xffff) != tag)
		return KREC_STALE;
	return n;
}

/*
 * Is a nested instance ready, as the kernel's poll of an epoll would say?
 * Our kernel epoll saw its fd readable, but that may be a doorbell left from
 * a harvest that already took everything; look, and clear what is stale.
 */
/* The instance record n stands for, with a reference, or NULL: the record
 * was freed by a concurrent DEL, or the instance is gone (its memory,
 * type-stable, may hold a later instance: krec__is).  Found through the
 * record, not through its number, which the program may have closed while
 * the instance lives on through another (NUMBERS in obj.c). */
static struct port *krec__inner_get(struct krec *n)
{
	struct port *in = atomic_load_explicit(&n->inner, memory_order_acquire);

	if (!in || !uobj_tryget(&in->obj))
		return NULL;
	if (!krec__is(n, in)) {
		uobj_put(&in->obj);
		return NULL;
	}
	return in;
}

/* 1 ready, 0 not, -1 not ours any more (the kernel's word is all). */
static int krec__nest_look(struct krec *n, int depth)
{
	struct port *in = krec__inner_get(n);
	int ready = -1;

	if (in) {
		ready = krec__ready(in, depth + 1);
		uobj_put(&in->obj);
	}
	return ready;
}

bool krec_nest_ready(struct krec *n, int depth)
{
	return krec__nest_look(n, depth) != 0;
}

/* Only kernel fds can make p's epoll readable: no userspace source, its
 * doorbell not rung (nothing else rings it), no instance nested in it.
 * The kernel's report of p is then exact as it stands. */
static bool krec__kernel_only(struct port *p)
{
	struct krec *n;

	if (atomic_load_explicit(&p->nuser, memory_order_relaxed) > 0 ||
	    bell_rung(&p->bell))
		return false;
	for (n = atomic_load_explicit(&p->krecs, memory_order_acquire); n;
	     n = n->next)
		if (atomic_load_explicit(&n->inner, memory_order_relaxed) &&
		    !atomic_load_explicit(&n->silent, memory_order_relaxed))
			return false;
	return true;
}

static bool krec__ready(struct port *p, int depth)
{
	struct krec *n;

	/* Trust the kernel where nothing of ours can be stale: no system
	 * call (KERNEL COST in wait.c).  Only for the instance the kernel
	 * reported (depth 1: krec_nest_ready's); one below it, looked at for
	 * its holder's check, was reported by nobody: the kernel's poll says
	 * (a holder left rung by LAZY, emptied, that holds an empty
	 * instance of kernel fds only is not ready: t_nest_lazy_deep). */
	if (krec__kernel_only(p))
		return depth <= 1 || sys_poll_now(p->obj.kfd, POLLIN) != 0;
	/* (True also when something came meanwhile.) */
	if (bell_look(&p->bell, &p->rq, BELL_LOOK_NESTED))
		return true;
	/* Clear what is stale in the instances p holds, so that the kernel's
	 * poll below sees their fds exact.  Whether one of them being ready
	 * makes p ready is the kernel's to say: p's registration of it may
	 * not ask for EPOLLIN (an epoll fd reports nothing else) or may be a
	 * disarmed one-shot.  The kernel limits nesting; this bound only
	 * guards the recursion. */
	if (depth < 8) {
		bool known = false;

		for (n = atomic_load_explicit(&p->krecs, memory_order_acquire);
		     n; n = n->next) {
			uint32_t k = atomic_load_explicit(&n->kreg,
							  memory_order_relaxed);

			if (!atomic_load_explicit(&n->inner,
						  memory_order_acquire) ||
			    atomic_load_explicit(&n->silent,
						 memory_order_relaxed))
				continue;
			/* A ready inner registered level-triggered (not
			 * one-shot) keeps p readable in the kernel's poll:
			 * no need to ask it. */
			if (krec__nest_look(n, depth) == 1 &&
			    !(k & (EPOLLET | EPOLLONESHOT)))
				known = true;
		}
		if (known)
			return true;
	}
	/* What is left readable is kernel fds, watched instances (or a ring
	 * that just came). */
	return sys_poll_now(p->obj.kfd, POLLIN) != 0;
}

/* SOLO: a loud registration the kernel reports exactly while its inner
 * is ready, whatever happened before: level-triggered, not one-shot, and
 * asking EPOLLIN (an epoll wakes its pollers with the key EPOLLIN, so a
 * registration of EPOLLRDNORM alone is queued only by the ADD's or MOD's
 * poll: its report is the kernel's list's). */
static bool krec__plain_ev(uint32_t k)
{
	return (k & EPOLLIN) && !(k & (EPOLLET | EPOLLONESHOT));
}

static bool krec__plain(struct krec *n)
{
	return krec__plain_ev(atomic_load_explicit(&n->kreg,
						   memory_order_relaxed));
}

/* SOLO: is p's fd readable, as far as its ready queues at every level tell
 * without a system call?  1 yes, 0 no, -1 only the kernel knows (a kernel
 * fd, an edge-triggered or one-shot registration, a MOD's look owed).  Its
 * look is the holders' check's (LOOK_NESTED: the queue pruned, a stale
 * doorbell taken), so a 0 leaves the fd not readable. */
static int krec__known(struct port *p, int depth)
{
	int nloud = 0, r = 0;

	/* (With no item and the doorbell not rung the look does nothing:
	 * skipped, for a level of kernel fds only.) */
	if ((atomic_load_explicit(&p->nuser, memory_order_relaxed) > 0 ||
	     bell_rung(&p->bell) || !rq_empty(&p->rq)) &&
	    bell_look(&p->bell, &p->rq, BELL_LOOK_NESTED))
		return 1;
	if (depth >= 8) /* the kernel limits nesting; this bounds the walk */
		return -1;
	for (struct krec *n = atomic_load_explicit(&p->krecs,
						   memory_order_acquire);
	     n; n = n->next) {
		struct port *in;
		int k = -1;

		if (!atomic_load_explicit(&n->inner, memory_order_acquire) ||
		    atomic_load_explicit(&n->silent, memory_order_relaxed))
			continue;
		nloud++;
		if (krec__plain(n) && (in = krec__inner_get(n))) {
			k = krec__known(in, depth + 1);
			uobj_put(&in->obj);
		}
		if (k == 1)
			return 1;
		if (k < 0)
			r = -1;
	}
	/* Nothing else in the kernel epoll may fire. */
	if (bell_kernel(&p->bell, BELL_K_COUNT, 0) != nloud)
		return -1;
	return r;
}

/*
 * SOLO (KERNEL COST in wait.c).  A holder whose only registration that may
 * fire is one nested instance held level-triggered, not one-shot (perf's
 * `bench epoll wait -N` chain), with nothing of its own queued, is ready
 * exactly when that instance is, which the ready queues at every level
 * tell (krec__known); the kernel's report would be decided by the same
 * look (krec__ready).  So a zero-timeout wait answers without the kernel's
 * epoll_wait.  What that call would have done besides needs nothing of us
 * for such a registration: the kernel's poll of the inner drops its stale
 * entries (our look prunes and takes a stale doorbell at every level), and
 * a level-triggered report leaves the registration queued as it was.  Two
 * or more such registrations (the kernel's list orders them), kernel fds,
 * edge-triggered or one-shot registrations (the list holds their edge),
 * a MOD's owed look (STALE), items of its own: the kernel is asked.  The
 * counts read are relaxed hints: a registration added meanwhile was added
 * after this look, as far as the caller can tell.
 */
int krec_solo(struct port *p, struct epoll_event *ev)
{
	struct krec *solo = NULL;
	struct krec_view v;
	struct port *in;
	uint32_t tag, kreg;
	int k;

	if (atomic_load_explicit(&p->nuser, memory_order_relaxed) > 0 ||
	    bell_rung(&p->bell) || !rq_empty(&p->rq) ||
	    bell_kernel(&p->bell, BELL_K_COUNT, 0) != 1)
		return -1;
	for (struct krec *n = atomic_load_explicit(&p->krecs,
						   memory_order_acquire);
	     n; n = n->next) {
		if (!atomic_load_explicit(&n->inner, memory_order_acquire) ||
		    atomic_load_explicit(&n->silent, memory_order_relaxed))
			continue;
		if (solo)
			return -1;
		solo = n;
	}
	if (!solo || !krec__plain(solo) || !(in = krec__inner_get(solo)))
		return -1;
	k = krec__known(in, 1);
	uobj_put(&in->obj);
	if (k <= 0)
		return k;
	/* DATA: the tag, the fields, then krec_of's fence and tag again. */
	tag = atomic_load_explicit(&solo->tag, memory_order_acquire);
	kreg = atomic_load_explicit(&solo->kreg, memory_order_relaxed);
	if (krec_of(p, (uint64_t)(uintptr_t)solo |
			       ((uint64_t)(tag & 0xffff) << 48),
		    &v) != solo ||
	    !v.nested || !krec__plain_ev(kreg))
		return -1;
	/* An epoll's fd reports EPOLLIN | EPOLLRDNORM, as registered. */
	ev->events = kreg & (EPOLLIN | EPOLLRDNORM);
	ev->data.u64 = v.data;
	return 1;
}

size_t krec_count(struct port *p)
{
	size_t c = 0;

	for (struct krec *n = atomic_load_explicit(&p->krecs,
						   memory_order_acquire);
	     n; n = n->next)
		c++;
	return c;
}

/* UNPEND (unpend.c) for the records' MODs: an edge-triggered registration
 * whose fd is ready now but which is not queued in the kernel epoll (its
 * edge taken) would be queued by the MOD.  Probes first, then one harvest
 * tells the queued ones (seen: their edge stands, and the MOD keeps it),
 * so an edge that comes between is caught by the probe.  What is left in
 * v (its data: the user's, which the MOD gives it) is for the settle after
 * the MODs.  The count left. */
static size_t krec__demote_unpend(struct port *p, struct unpend *v,
				  _Atomic int *probes, const int *nums)
{
	size_t n = 0, k = 0, i = 0;
	uint32_t kreg;
	bool harvested;
	int fd;

	/* nums[i]: the number that reaches the i-th record's registration
	 * now (krec__reach), -1 for none. */
	for (struct krec *r = atomic_load_explicit(&p->krecs,
						   memory_order_acquire);
	     r; r = r->next) {
		fd = nums[i++];
		kreg = atomic_load_explicit(&r->kreg, memory_order_relaxed);
		if (fd < 0 || !(kreg & EPOLLET) ||
		    atomic_load_explicit(&r->disarmed, memory_order_relaxed) ||
		    !(sys_poll_now(fd, (short)(kreg & 0xffff)) &
		      (short)(kreg & 0xffff)))
			continue;
		atomic_store_explicit(&probes[n], unpend_probe(fd, kreg),
				      memory_order_relaxed);
		v[n] = (struct unpend){ .fd = fd, .data = krec__data(r),
					.probe = NULL };
		n++;
	}
	if (!n)
		return 0;
	/* No probe given: drops nothing.  No harvest: nothing known to be
	 * unqueued, so nothing is dropped after the MODs either. */
	harvested = unpend_settle(p->obj.kfd, v, n);
	for (i = 0; i < n; i++) {
		int pfd = atomic_load_explicit(&probes[i],
					       memory_order_relaxed);
		struct krec *r;

		if (v[i].seen || pfd < 0 || !harvested) {
			if (pfd >= 0)
				fdzone_close(pfd);
			continue;
		}
		r = (struct krec *)(uintptr_t)(v[i].data & KREC__ADDR);
		atomic_store_explicit(&probes[k], pfd, memory_order_relaxed);
		v[k] = (struct unpend){
			.fd = v[i].fd,
			.data = atomic_load_explicit(&r->data,
						     memory_order_relaxed),
			.probe = &probes[k]
		};
		k++;
	}
	return k;
}

/* The number through which a record's registration (made through fd) is
 * reached now: fd if it still holds the registered file (kcmp); else, if
 * the program holds the file under another number and fd is free, a copy
 * placed at fd for the caller's ctl (*tmp: closed after it); if fd holds
 * another file, that other number (the caller's ctl goes under fd's key:
 * sys_epoll_ctl_keyed); else fd (the file is closed, and its registration
 * gone). */
static int krec__reach(struct port *p, int fd, int toff, bool *tmp)
{
	int key, x;

	if (*tmp || sys_epoll_target_is(p->obj.kfd, fd, toff, fd) != 0)
		return fd;
	key = sys_epoll_target_find(p->obj.kfd, fd, toff);
	if (key < 0)
		return fd;
	x = sys_fcntl(key, F_DUPFD_CLOEXEC, (void *)(intptr_t)fd);
	if (x == fd) {
		*tmp = true;
		return fd;
	}
	if (x >= 0)
		(void)sys_close(x);
	/* fd holds another file: a number of the registered one, for a
	 * ctl under the registration's own key (sys_epoll_ctl_keyed). */
	return key;
}

/* The kernel's list (fdinfo): the index of a registration under number fd
 * with this data, or -1. */
static int krec__listed(const struct unpend_reg *regs, int n, int fd,
			uint64_t data)
{
	for (int i = 0; i < n; i++)
		if (regs[i].fd == fd && regs[i].data == data)
			return i;
	return -1;
}

/* krec_demote's first pass, for record n (registered through fd): the
 * number that reaches its registration now (krec__reach: a copy placed at
 * fd if the program closed it, noted in tmps[*t]), or -1 if fdinfo no
 * longer lists the registration (its file was closed, and the number may
 * hold another one registered since, which a MOD through it would rewrite:
 * pfuzz's seed 808024608, F21): the record is dropped. */
static int krec__demote_number(struct port *p, struct krec *n, int fd,
			       const struct unpend_reg *regs, int nregs,
			       int *tmps, size_t *t)
{
	int li = nregs >= 0 ? krec__listed(regs, nregs, fd, krec__data(n)) : -1;
	bool tmp = false;

	if (nregs >= 0 && li < 0) {
		if (atomic_load_explicit(&n->inner, memory_order_relaxed))
			krec__free(n); /* still watched: krec.h */
		else
			krec__fd_drop(p, n);
		return -1;
	}
	/* Which of the files registered under its number is its own: the
	 * program may have given the number to another it registered too
	 * (pfuzz's seed 830006038: the first one kcmp named, the wrong one's
	 * registration got its data). */
	fd = krec__reach(p, fd, li >= 0 ? unpend_toff(regs, li) : 0, &tmp);
	/* A copy placed at fd: closed by the caller after its settle, which
	 * may give the registration back through fd. */
	if (tmp)
		tmps[(*t)++] = fd;
	return fd;
}

/* krec_demote's second pass: record n's registration, reached through fd,
 * becomes the program's own (its data, its events; a one-shot one that
 * fired only its flags), and the record goes. */
static void krec__demote_one(struct port *p, struct krec *n, int fd,
			     const struct unpend_reg *regs, int nregs)
{
	uint32_t kreg = atomic_load_explicit(&n->kreg, memory_order_relaxed);
	bool off = atomic_load_explicit(&n->disarmed, memory_order_relaxed);
	int key = atomic_load_explicit(&n->fd, memory_order_relaxed);
	struct epoll_event ev;

	/* A one-shot one another process's wait fired (the epoll is shared
	 * since a fork): its harvest's disarmed is that process's; the
	 * kernel's events say. */
	for (int j = 0; !off && (kreg & EPOLLONESHOT) && j < nregs; j++)
		if (regs[j].data == krec__data(n) &&
		    !(regs[j].events & ~UEP_PRIVATE_BITS))
			off = true;
	ev.events = off ? kreg & UEP_PRIVATE_BITS : kreg;
	ev.data.u64 = atomic_load_explicit(&n->data, memory_order_relaxed);
	/* An exclusive registration cannot be modified: made again (the ADD
	 * polls the fd, so a readiness of the moment between is reported).  A
	 * failure means the fd was closed: the kernel dropped the
	 * registration already. */
	if (fd != key && !(kreg & EPOLLEXCLUSIVE)) {
		/* Registered through key, a number that holds another file now
		 * (fd: a number of the registered one): the MOD under the
		 * registration's own key. */
		(void)sys_epoll_ctl_keyed(p->obj.kfd, EPOLL_CTL_MOD, key, fd,
					  &ev);
	} else if (kreg & EPOLLEXCLUSIVE) {
		if (krec_kctl(p, EPOLL_CTL_DEL, fd, NULL) == 0)
			(void)krec_kctl(p, EPOLL_CTL_ADD, fd, &ev);
	} else {
		(void)sys_epoll_ctl(p->obj.kfd, EPOLL_CTL_MOD, fd, &ev);
	}
	/* Events the kernel gave with the record's data before this are
	 * dropped as stale by the harvest that has them: the kernel queued
	 * the registration again if it was ready. */
	if (atomic_load_explicit(&n->inner, memory_order_relaxed))
		krec__free(n); /* still watched: see krec.h */
	else
		krec__fd_drop(p, n);
}

size_t krec_demote(struct port *p, struct unpend *v, _Atomic int *probes,
		   int *tmps)
{
	struct krec *n;
	size_t k, t = 0, i = 0, cnt = krec_count(p);
	struct unpend_reg *regs = NULL;
	int fd, nregs = unpend_regs(p->obj.kfd, &regs);
	int *nums = malloc((cnt ? cnt : 1) * sizeof(*nums));

	/* First the number that reaches each registration, before UNPEND's
	 * first harvest, which must be able to give every report back. */
	for (n = atomic_load_explicit(&p->krecs, memory_order_acquire); n;
	     n = n->next, i++) {
		fd = atomic_load_explicit(&n->fd, memory_order_relaxed);
		if (fd >= 0)
			fd = krec__demote_number(p, n, fd, regs, nregs, tmps,
						 &t);
		if (nums)
			nums[i] = fd;
	}
	tmps[t] = -1;
	k = nums ? krec__demote_unpend(p, v, probes, nums) : 0;
	i = 0;
	for (n = atomic_load_explicit(&p->krecs, memory_order_acquire); n;
	     n = n->next, i++) {
		fd = nums ? nums[i] : atomic_load_explicit(&n->fd,
							   memory_order_relaxed);
		if (fd >= 0 &&
		    atomic_load_explicit(&n->fd, memory_order_relaxed) >= 0)
			krec__demote_one(p, n, fd, regs, nregs);
	}
	free(nums);
	free(regs);
	return k;
}

/* The instance is being released, its kernel epoll closed: free its records
 * and stop counting it as a holder of the instances it held.  One record
 * at a time under mtx (FORK in obj.c: a child finishing the release sees
 * each record either still counted or gone). */
void krec_release(struct port *p)
{
	int probe;

	for (;;) {
		struct port *in;
		struct krec *n;

		lock_take(&p->mtx);
		n = p->krecs;
		if (!n) {
			lock_drop(&p->mtx);
			return;
		}
		/* The kernel drops our registration in it with our epoll. */
		in = krec__inner_get(n);
		if (in && !atomic_load(&n->silent))
			krec__set_watched(in, -1, atomic_load(&n->edge));
		if (atomic_exchange(&n->exact, false)) /* LAZY: its count */
			bell_exact(-1);
		p->krecs = n->next;
		lock_drop(&p->mtx);
		/* Outside mtx: this may be the inner's last reference, and its
		 * release takes its own mtx (no path holds two). */
		if (in)
			uobj_put(&in->obj);
		/* UNPEND: a probe never reported since its settle. */
		if ((probe = atomic_exchange(&n->probe, -1)) >= 0)
			fdzone_close(probe);
		/* A release may run in a signal handler (SIGNALS in obj.c). */
		obj_free_later(n);
	}
}
