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
#include <sys/socket.h>

#include "uepoll.h"

#include "preload.h"

static void msg__demote(const struct msghdr *msg)
{
	struct cmsghdr *c;

	if (!msg || !msg->msg_control || msg->msg_controllen < sizeof(*c))
		return;
	for (c = CMSG_FIRSTHDR((struct msghdr *)msg); c;
	     c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
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

		for (unsigned int i = 0; i < vlen; i++)
			msg__demote(&vec[i].msg_hdr);
		errno = e;
	}
	return REAL(sendmmsg)(fd, vec, vlen, flags);
}
