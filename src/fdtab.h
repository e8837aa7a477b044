/* SPDX-License-Identifier: MIT */
/*
 * fdtab.h - map from fd number to the uepoll object that owns it.
 */
#ifndef UEPOLL_FDTAB_H
#define UEPOLL_FDTAB_H

#include "obj.h"

/* The object at fd with a reference taken, or NULL (not a uepoll fd). */
struct uobj *fdtab_get(int fd);
/* Publish o at fd (o->fd == fd).  An object still recorded at that number
 * was closed with close() behind our back: it is unpublished and returned
 * (with the table's reference) for the caller to tear down; NULL otherwise.
 * Returns false in *ok when the table cannot grow. */
struct uobj *fdtab_set(int fd, struct uobj *o, bool *ok);
/* Make sure fd has a slot (so that a later fdtab_set cannot fail).
 * Async-signal-safe, as the rest (a new chunk is mapped: fdtab.c). */
bool fdtab_reserve(int fd);
/* Unpublish o from fd if it is still there; true if this call did it (the
 * caller then owns the table's reference). */
bool fdtab_clear(int fd, struct uobj *o);
/* The object at fd, no reference taken (a forked child, alone). */
struct uobj *fdtab_peek(int fd);
/* The link of fd in its object's list of numbers (NUMBERS in obj.c: under
 * obj.c's lock), or NULL if fd has no slot (then it was never published). */
int *fdtab_link(int fd);
/* The lowest number >= fd at which an object is published now, or -1 (a
 * racy snapshot: for the preload layer's close_range, which then checks
 * each number with uobj_forget). */
int fdtab_next(int fd);
/* The highest number at which an object was ever published, or -1. */
int fdtab_high(void);

#endif
