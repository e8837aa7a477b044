/* SPDX-License-Identifier: MIT */
/*
 * fdzone.h - the numbers of the library's own fds, kept out of the
 * program's way (fdzone.c).
 */
#ifndef UEPOLL_FDZONE_H
#define UEPOLL_FDZONE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* A private close-on-exec duplicate of fd, placed where the program does
 * not look (fdzone.c, PLACES), or -errno: -EMFILE when there is no such
 * place (the caller then makes no object: the program gets a plain kernel
 * object). */
int fdzone_dup(int fd);
/* The same for an fd the library just created for itself: fd is moved
 * (duplicated into the zone, then closed).  On failure fd is closed. */
int fdzone_move(int fd);
/* A new private eventfd (sys_eventfd(0, flags)) in the zone. */
int fdzone_eventfd(int flags);
/* Close a private fd that fdzone_dup or fdzone_move returned. */
void fdzone_close(int fd);

/* Is fd one of the library's private fds now?  One relaxed load for the
 * numbers below the lowest the zone ever used (every number a program
 * normally touches), two more above.  The preload layer hides these
 * numbers from the program's close, close_range and closefrom. */
extern _Atomic int fdzone__low;
bool fdzone__has(int fd);
static inline bool fdzone_has(int fd)
{
	return fd >= atomic_load_explicit(&fdzone__low,
					  memory_order_relaxed) &&
	       fdzone__has(fd);
}
/* The lowest private fd >= fd, or -1 (a racy snapshot: for close_range
 * around them). */
int fdzone_next(int fd);

/* The program's RLIMIT_NOFILE calls (the preload layer) run between these,
 * so that they neither see nor overwrite the raised soft limit of a
 * placement (RLIMIT in fdzone.c).  Not for a signal handler whose thread
 * is inside the library: fdzone_rlimit_begin then takes nothing and
 * returns false (end is then not called). */
bool fdzone_rlimit_begin(void);
void fdzone_rlimit_end(void);
/* A child that copies the soft limit without the fork handlers is being
 * made (posix_spawn, system, popen, vfork: SPAWN in fdzone.c): no raise
 * meanwhile. */
void fdzone_spawn_begin(void);
void fdzone_spawn_end(void);

#endif
