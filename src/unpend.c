/* SPDX-License-Identifier: MIT */
/*
 * unpend.c - an edge-triggered registration made in a kernel epoll for a
 * source whose edge the program has taken already, without the report the
 * kernel's ADD would add (UNPEND).
 *
 * Where it is needed.  A ueventfd's watchers are items in the library's
 * instances while the library can see every process that uses it.  When it
 * cannot any more (a fork shares the counter, SHARED in eventfd_shared.c;
 * an exec or a spawn demotes it, DEMOTE), each item becomes a registration
 * of the ueventfd's kernel fd in its instance's kernel epoll (port.c,
 * port_demote_source).  The kernel's ADD polls the fd and queues the new
 * registration if it is ready: right for a level-triggered one, and for an
 * edge-triggered one whose edge nobody took yet, but for an EPOLLET item
 * whose event a wait already returned it is a second report of one edge,
 * which the kernel would never give (fuzzer finding F18: a fork, then the
 * same EPOLLOUT again in parent and child).
 *
 * The kernel has no call that makes a registration armed, not queued, on a
 * ready fd: ADD and MOD both poll, and every write to an eventfd, even of
 * 0, is an edge.  Only a harvest takes an entry off an epoll's ready list.
 * So:
 *  1. unpend_probe: a private epoll (the probe) holds the source with the
 *     item's events, edge-triggered, and its own ADD's report is taken at
 *     once (an epoll_wait on the probe, which holds nothing else).  From
 *     then on the probe is queued exactly when a real edge comes.
 *  2. The caller makes the registration in the instance's kernel epoll
 *     through a record (krec.c) whose data is the record's, so a harvest
 *     knows it; the record holds the probe.
 *  3. unpend_settle harvests the epoll (zero timeout) and, for the new
 *     registration's report, looks at the probe (poll(2): a look, not a
 *     harvest): queued, a real edge came since step 1 and the report
 *     stands (queued again, below); not queued, the report is the ADD's
 *     and is dropped.  Every other report the harvest took is put back:
 *     a level-triggered registration the kernel queues again by itself;
 *     an edge-triggered or one-shot one is modified to the events and
 *     data it had (read from /proc/self/fdinfo before the harvest), which
 *     queues it again if its fd is ready, as the kernel's own wait would
 *     have reported it only then (it polls every queued entry first).
 *  A wait of the instance asleep in the epoll may take the ADD's report
 *  before step 3: it finds the record's probe (krec_unpend_drop) and
 *  decides the same way; whoever takes the probe (an exchange) decides,
 *  and closes it.  A settle that did not find the report leaves the probe
 *  to the record (the wait that took it has yet to look), which closes it
 *  at its next report or its end; so a record's probe may be inherited by
 *  a fork, and both processes then decide alike: the probe's look is a
 *  poll(2), which takes nothing.  models/unpend.pml checks the protocol.
 *
 * Races, and what they cost.  An edge between the probe's harvest and the
 * ADD queues both: reported, as the kernel would (the registration stood
 * for the item all along).  An edge after the settle's look: the kernel
 * queues the registration again: reported.  An edge between the harvest
 * and the look: both the harvested entry (kept: the probe saw it) and the
 * kernel's new one are reported, one edge twice; never one lost.  Two
 * registrations with the same data, one the program's edge-triggered one
 * that was queued and one it had taken the edge of: both are queued again
 * if ready (the data cannot tell them apart; it can only mean a second
 * report, never a lost one).
 *
 * LOCKING.  The caller holds the instance's mtx, which every ctl of the
 * instance's kernel epoll takes (port__ctl_kernel, krec_ctl_fd,
 * krec_ctl_nest): so the events and data read from fdinfo are still the
 * registrations' when they are given back.  Waits run beside it (they take
 * no mtx): they may take any report first, as they may at any time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <poll.h>

#include "fdzone.h"
#include "sys.h"
#include "unpend.h"

int unpend_probe(int srcfd, uint32_t events)
{
	struct epoll_event ev = { .events = events | EPOLLET, .data.u64 = 0 };
	int pfd, r;

	ev.events &= ~(uint32_t)(EPOLLONESHOT | EPOLLEXCLUSIVE | EPOLLWAKEUP);
	pfd = sys_epoll_create1(EPOLL_CLOEXEC);
	if (pfd < 0)
		return pfd;
	/* Out of the program's numbers (PLACES in fdzone.c). */
	pfd = fdzone_move(pfd);
	if (pfd < 0)
		return pfd;
	r = sys_epoll_ctl(pfd, EPOLL_CTL_ADD, srcfd, &ev);
	if (r == 0) {
		/* The ADD's report: taken, so that only a later edge queues
		 * the probe. */
		do
			r = sys_epoll_poll(pfd, &ev, 1);
		while (r == -EINTR);
	}
	if (r < 0) {
		fdzone_close(pfd);
		return r;
	}
	return pfd;
}

bool unpend_edge(int probe)
{
	return (sys_poll_now(probe, POLLIN) & POLLIN) != 0;
}

/* "tfd: %d events: %x data: %llx ..." lines of an epoll's fdinfo. */
int unpend_regs(int epfd, struct unpend_reg **out)
{
	char *buf, *p, *end;
	struct unpend_reg *v;
	size_t n = 0, cap = 0;
	ssize_t len = sys_fdinfo(epfd, &buf);

	if (len < 0)
		return (int)len;
	for (p = buf; (p = strstr(p, "tfd:")); p++)
		cap++;
	v = malloc((cap ? cap : 1) * sizeof(*v));
	if (!v) {
		free(buf);
		return -ENOMEM;
	}
	for (p = buf; n < cap && (p = strstr(p, "tfd:")); p = end) {
		v[n].fd = (int)strtol(p + 4, &end, 10);
		p = strstr(end, "events:");
		if (!p)
			break;
		v[n].events = (uint32_t)strtoul(p + 7, &end, 16);
		p = strstr(end, "data:");
		if (!p)
			break;
		v[n].data = strtoull(p + 5, &end, 16);
		n++;
	}
	free(buf);
	*out = v;
	return (int)n;
}

/* Queue r again if its fd is ready: what the harvest took from it. */
static void unpend__requeue(int epfd, const struct unpend_reg *r)
{
	struct epoll_event ev = { .events = r->events, .data.u64 = r->data };

	if (!(r->events & (EPOLLET | EPOLLONESHOT)))
		return; /* level-triggered: the kernel queued it again */
	if (r->events & EPOLLEXCLUSIVE) {
		/* An exclusive registration cannot be modified: made again
		 * (krec_demote does the same). */
		if (sys_epoll_ctl(epfd, EPOLL_CTL_DEL, r->fd, NULL) == 0)
			(void)sys_epoll_ctl(epfd, EPOLL_CTL_ADD, r->fd, &ev);
		return;
	}
	(void)sys_epoll_ctl(epfd, EPOLL_CTL_MOD, r->fd, &ev);
}

/* The entry of v that registration r is, or NULL. */
static struct unpend *unpend__which(struct unpend *v, size_t n,
				    const struct unpend_reg *r)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].fd == r->fd && v[i].data == r->data)
			return &v[i];
	return NULL;
}

/* Take u's probe and decide: did an edge come since it was made?  (No
 * probe: as u->drop says; another harvest decided: as if one did.) */
static bool unpend__edge(struct unpend *u)
{
	int pfd = u->probe ? atomic_exchange(u->probe, -1) : -1;
	bool edge;

	if (!u->probe)
		return !u->drop;
	if (pfd < 0)
		return true;
	edge = unpend_edge(pfd);
	fdzone_close(pfd);
	return edge;
}

/* Can every registration the harvest might take from be queued again
 * (unpend__requeue)?  A level-triggered one needs nothing; an
 * edge-triggered or one-shot one needs its number to hold its file still
 * (the kernel's key; kcmp(2) compares the two files): one whose number the
 * program closed, or gave to another file, could not be, and its edge
 * would be lost.  Then there is no harvest, and the report is left to the
 * wait's look at the probe (or stands: one edge reported twice, never one
 * lost).  So too where kcmp cannot tell, and for a number under which the
 * epoll holds more than one file (the first is all kcmp names). */
int unpend_toff(const struct unpend_reg *regs, int i)
{
	int t = 0;

	for (int j = 0; j < i; j++)
		t += regs[j].fd == regs[i].fd;
	return t;
}

static bool unpend__reachable(int epfd, const struct unpend_reg *regs,
			      int n)
{
	for (int i = 0; i < n; i++) {
		if (!(regs[i].events & (EPOLLET | EPOLLONESHOT)))
			continue;
		if (sys_epoll_target_is(epfd, regs[i].fd, 0, regs[i].fd) != 1)
			return false;
		for (int j = 0; j < n; j++)
			if (j != i && regs[j].fd == regs[i].fd)
				return false;
	}
	return true;
}

bool unpend_settle(int epfd, struct unpend *v, size_t n)
{
	struct unpend_reg *regs = NULL;
	struct epoll_event *evs = NULL;
	int nregs, got = 0, pfd;

	nregs = unpend_regs(epfd, &regs);
	if (nregs > 0 && !unpend__reachable(epfd, regs, nregs))
		nregs = 0; /* no harvest: nothing dropped, nothing lost */
	if (nregs > 0 && (evs = malloc((size_t)nregs * sizeof(*evs)))) {
		/* Each registration is reported at most once by one call,
		 * and there are nregs of them. */
		do
			got = sys_epoll_poll(epfd, evs, nregs);
		while (got == -EINTR);
	}
	for (int i = 0; i < got; i++)
		for (int j = 0; j < nregs; j++) {
			struct unpend *u;

			if (regs[j].data != evs[i].data.u64)
				continue;
			u = unpend__which(v, n, &regs[j]);
			if (u)
				u->seen = true;
			if (!u || unpend__edge(u))
				unpend__requeue(epfd, &regs[j]);
		}
	/* Not found: not queued, or a wait took the report first and has yet
	 * to take the probe (models/unpend.pml: closed here, the wait would
	 * deliver the ADD's report).  A record's probe stays with it for its
	 * next report, or its end (krec__free); any other is closed. */
	for (size_t i = 0; i < n; i++)
		if (v[i].probe && !v[i].held &&
		    (pfd = atomic_exchange(v[i].probe, -1)) >= 0)
			fdzone_close(pfd);
	free(evs);
	free(regs);
	return evs != NULL;
}
