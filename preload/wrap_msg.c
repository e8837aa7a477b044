/* SPDX-License-Identifier: MIT */
/*
 * wrap_msg.c - sendmsg and sendmmsg with SCM_RIGHTS.
 *
 * A ueventfd sent to another process arrives there as the kernel eventfd
 * it stands for, without the counter in this process's memory: so each one
 * is demoted before the message leaves (uepoll_demote), and both processes
 * then share an exact kernel eventfd, as after a fork.  An instance is
 * demoted too: it arrives as its kernel epoll with every registration.
 */
#include <stdlib.h>
#include <sys/socket.h>

#include "uepoll.h"

#include "obj.h"

#include "preload.h"

/* Every object among the fds msg passes with SCM_RIGHTS is demoted.  The
 * header and its control data are read with preload_peek (a bad pointer is
 * the kernel's EFAULT, never a fault here), and only while objects exist;
 * control data beyond 64 KiB (far more than the kernel's SCM_MAX_FD fds)
 * is the kernel's to refuse. */
static void msg__demote(const struct msghdr *umsg)
{
	unsigned char small[4096], *buf = small;
	struct msghdr msg;
	struct cmsghdr *c;

	if (!umsg || preload_in_vfork_child() ||
	    (uobj_live_count(UOBJ_EVENTFD) == 0 &&
	     uobj_live_count(UOBJ_PORT) == 0) ||
	    !preload_peek(&msg, umsg, sizeof(msg)) || !msg.msg_control ||
	    msg.msg_controllen < sizeof(*c) || msg.msg_controllen > 65536)
		return;
	if (msg.msg_controllen > sizeof(small) &&
	    !(buf = malloc(msg.msg_controllen)))
		return;
	if (!preload_peek(buf, msg.msg_control, msg.msg_controllen))
		goto out;
	msg.msg_control = buf;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		const unsigned char *p = CMSG_DATA(c);
		size_t n;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			__builtin_memcpy(&fd, p + i * sizeof(int), sizeof(fd));
			if (preload_is_object(fd) && uepoll_demote(fd) == 0)
				stats_add(STAT_DEMOTES);
		}
	}
out:
	if (buf != small)
		free(buf);
}

PRELOAD_WRAP ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	if (preload_ready()) {
		int e = errno;

		msg__demote(msg);
		errno = e;
	}
	return REAL(sendmsg)(fd, msg, flags);
}

PRELOAD_WRAP int sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen,
			  int flags)
{
	if (preload_ready() && vec) {
		int e = errno;

		/* The kernel takes at most UIO_MAXIOV (1024) of them. */
		for (unsigned int i = 0; i < vlen && i < 1024; i++)
			msg__demote(&vec[i].msg_hdr);
		errno = e;
	}
	return REAL(sendmmsg)(fd, vec, vlen, flags);
}
