/* SPDX-License-Identifier: MIT */
/*
 * p_scm - an eventfd sent to another process with SCM_RIGHTS: the
 * receiver reads the exact counter the sender's writes made, and the
 * sender reads the receiver's write.  The preload demotes it before
 * sendmsg (its counter lives in the sender's memory).
 */
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "ptest.h"

static int recv_fd(int s)
{
	char c, buf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = buf, .msg_controllen = sizeof(buf) };
	struct cmsghdr *cm;
	int fd = -1;

	if (recvmsg(s, &m, 0) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&m);
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
	return fd;
}

static int send_fd(int s, int fd)
{
	char c = 'x', buf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = buf, .msg_controllen = sizeof(buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(fd));
	return sendmsg(s, &m, 0) == 1 ? 0 : -1;
}

int main(void)
{
	int sv[2], st, efd;
	uint64_t v = 0;
	pid_t pid;

	p_begin(60);
	P_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fork();
	P_REQUIRE(pid >= 0);
	if (pid == 0) {
		int fd = recv_fd(sv[1]);

		if (fd < 0 || eventfd_read(fd, &v) != 0 || v != 21)
			_exit(3);
		_exit(eventfd_write(fd, 5) == 0 && write(sv[1], "k", 1) == 1
			      ? 0 : 4);
	}
	/* Made after the fork: accelerated, its counter in our memory. */
	efd = eventfd(0, EFD_NONBLOCK);
	P_REQUIRE(efd >= 0);
	P_REQUIRE(eventfd_write(efd, 20) == 0 && eventfd_write(efd, 1) == 0);
	P_REQUIRE(send_fd(sv[0], efd) == 0);
	P_REQUIRE(waitpid(pid, &st, 0) == pid);
	printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	P_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	P_CHECK(eventfd_read(efd, &v) == 0 && v == 5);
	printf("counter back %llu\n", (unsigned long long)v);
	close(efd);
	close(sv[0]);
	close(sv[1]);
	return p_end();
}
