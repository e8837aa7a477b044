/* SPDX-License-Identifier: MIT */
/*
 * internal.h - shared by every module of libuepoll.
 *
 * Conventions (as in liburing): internal functions return a value >= 0 or a
 * negated errno; only the public entry points in api.c set errno.  Names are
 * module_verb; file-private helpers are module__verb.
 */
#ifndef UEPOLL_INTERNAL_H
#define UEPOLL_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#define UEPOLL_CACHELINE 64

/* The kernel's EP_PRIVATE_BITS: flags that are not poll events. */
#define UEP_PRIVATE_BITS (EPOLLWAKEUP | EPOLLONESHOT | EPOLLET | EPOLLEXCLUSIVE)
/* The kernel's EPOLLEXCLUSIVE_OK_BITS. */
#define UEP_EXCLUSIVE_OK_BITS                                               \
	(EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLWAKEUP | EPOLLET |  \
	 EPOLLEXCLUSIVE)

/* The kernel's EP_MAX_EVENTS. */
#define UEP_MAX_EVENTS (int)(INT32_MAX / sizeof(struct epoll_event))

/* Largest eventfd counter value (ULLONG_MAX - 1). */
#define UEFD_MAX UINT64_C(0xfffffffffffffffe)

/* Intrusive doubly linked circular list. */
struct list {
	struct list *next, *prev;
};

static inline void list_init(struct list *l)
{
	l->next = l->prev = l;
}

static inline bool list_empty(const struct list *l)
{
	return l->next == l;
}

static inline void list__insert(struct list *n, struct list *prev,
				struct list *next)
{
	n->next = next;
	n->prev = prev;
	prev->next = n;
	next->prev = n;
}

static inline void list_add_head(struct list *head, struct list *n)
{
	list__insert(n, head, head->next);
}

static inline void list_add_tail(struct list *head, struct list *n)
{
	list__insert(n, head->prev, head);
}

static inline void list_del(struct list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

#define list_for_each(pos, head) \
	for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

#endif
