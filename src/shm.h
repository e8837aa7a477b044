/* SPDX-License-Identifier: MIT */
/*
 * shm.h - small blocks of memory that a fork() shares with the child
 * (MAP_SHARED), for the state of objects that outlive a fork in both
 * processes (a ueventfd's counter: SHARED in eventfd_shared.c).
 *
 * A block is SHM_BLOCK bytes, aligned to SHM_BLOCK, zeroed.  It is carved
 * from a region (an anonymous MAP_SHARED mapping) whose bookkeeping is
 * private to the process.  A fork retires every region that exists then
 * (in parent and child alike): both processes may still use the blocks in
 * it that were live at the fork, neither hands out its free blocks again,
 * so two processes never carve the same block.  A process unmaps a retired
 * region when it frees the last block it had there; the kernel frees the
 * memory with the last process that maps it (a process that dies unmaps
 * everything).  So shared memory is bounded by the blocks live at each fork,
 * and reclaimed with the last process that closes them (t_xproc: cycles of
 * create, fork, close, with the fd-leak check).  A ueventfd no number led
 * to at a fork gets a private copy of its block in the child
 * (uefd__fork_child), whose release then leaves the parent's alone.
 *
 * LOCKING: shm__lock (a leaf, lock.h) protects the regions' bookkeeping;
 * the fork's prepare takes it inside the gate (no other thread is inside
 * any lock then) and holds it across the fork.
 */
#ifndef UEPOLL_SHM_H
#define UEPOLL_SHM_H

#define SHM_BLOCK 256

void *shm_alloc(void);
void shm_free(void *p);
/* Inside the fork's gate (obj.c): retire every region, and hold the lock
 * until shm_fork_done (in the parent and in the child). */
void shm_fork_prepare(void);
void shm_fork_done(void);

#endif
