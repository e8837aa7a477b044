/* SPDX-License-Identifier: MIT */
/*
 * unpend.h - a kernel registration made for an edge the program has taken
 * already, without the report the kernel's ADD would give it (UNPEND in
 * unpend.c).
 */
#ifndef UEPOLL_UNPEND_H
#define UEPOLL_UNPEND_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* A probe of srcfd: a private epoll holding it with events (edge-triggered),
 * its ADD's report taken, so that it reports only an edge that comes after
 * this call.  The probe's fd, or -errno (the caller registers as before,
 * and the ADD may report the edge once more). */
int unpend_probe(int srcfd, uint32_t events);
/* Did an edge come to the probe's source since unpend_probe?  Does not
 * consume it (poll(2) of the probe), so any process holding the probe
 * answers the same. */
bool unpend_edge(int probe);
/* A registration of epfd that settle looks for: through number fd, with
 * data.  probe: its probe (taken, -1 stored, by whoever decides: settle, or
 * a harvest of epfd that got its report first), or NULL for one only to be
 * seen.  seen: settle found it queued. */
struct unpend {
	int fd;
	uint64_t data;
	_Atomic int *probe;
	bool held; /* a record's: left to it if its report is not found */
	bool drop; /* no probe: its report is dropped (else kept) */
	bool seen;
};
/* Harvest epfd once: a report of a registration of v whose probe saw no
 * edge (the ADD's or MOD's, of an edge taken already) is dropped; every
 * other report is queued again (seen noted).  The probes are closed.  The
 * caller excludes every ctl of epfd (port->mtx: LOCKING in unpend.c).
 * False if there was no harvest (a registration could not be queued again,
 * or no memory): nothing was seen, nothing dropped. */
bool unpend_settle(int epfd, struct unpend *v, size_t n);
/* One registration of an epoll as the kernel has it (/proc/self/fdinfo):
 * its number, events (a fired EPOLLONESHOT one: its flags only) and data. */
struct unpend_reg {
	int fd;
	uint32_t events;
	uint64_t data;
};
/* Every registration of epfd: the count, or -errno; *out malloc'd.  In
 * the kernel's order (fdinfo's), which kcmp's KCMP_EPOLL_TFD counts in. */
int unpend_regs(int epfd, struct unpend_reg **out);
/* regs[i]'s place among the registrations under its number (kcmp's toff:
 * sys_epoll_target_is). */
int unpend_toff(const struct unpend_reg *regs, int i);

#endif
