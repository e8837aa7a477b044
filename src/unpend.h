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
/* The registration whose data in epfd is kdata has just been made; *probe
 * is its probe, taken (-1 stored) by whoever resolves it: this call, or a
 * harvest of epfd that got the ADD's report first (which drops the report
 * unless unpend_edge).  Takes the ADD's report out of epfd's ready list
 * unless an edge came since, and leaves every other registration that was
 * queued there queued again.  The caller excludes every ctl of epfd
 * (port->mtx: LOCKING in unpend.c). */
void unpend_settle(int epfd, uint64_t kdata, _Atomic int *probe);

#endif
