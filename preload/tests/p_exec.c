/* SPDX-License-Identifier: MIT */
/*
 * p_exec METHOD - a program started with this process's eventfd reads its
 * exact counter, and its write comes back.  The counter of a ueventfd
 * lives in this process's memory, so the preload must demote it before
 * the exec (or the spawn).  METHOD: fork (fork + execv), vfork (vfork +
 * execve), spawn (posix_spawn), system (system(3)).  The started program
 * is this one, as `p_exec child FD VALUE`.
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>

#include "ptest.h"

extern char **environ;

static int child(int fd, uint64_t want)
{
	uint64_t v = 0;

	if (eventfd_read(fd, &v) != 0 || v != want) {
		fprintf(stderr, "child: read %llu, want %llu (%s)\n",
			(unsigned long long)v, (unsigned long long)want,
			strerror(errno));
		return 3;
	}
	return eventfd_write(fd, 30) == 0 ? 0 : 4;
}

int main(int argc, char *argv[])
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	char fdarg[16], cmd[4096];
	char *args[] = { argv[0], "child", fdarg, "12", NULL };
	uint64_t v = 0;
	int efd, cfd, ep, st = -1;
	pid_t pid = -1;

	if (argc == 4 && !strcmp(argv[1], "child"))
		return child(atoi(argv[2]), strtoull(argv[3], NULL, 10));
	if (argc != 2)
		P_SKIP("usage: p_exec fork|vfork|spawn|system");
	p_begin(60);
	efd = eventfd(5, 0);
	cfd = eventfd(1, EFD_CLOEXEC);
	ep = epoll_create1(EPOLL_CLOEXEC);
	P_REQUIRE(efd >= 0 && cfd >= 0 && ep >= 0);
	/* The counter moves in userspace: 5 + 7 = 12, and watched. */
	P_REQUIRE(eventfd_write(efd, 7) == 0);
	P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
	P_CHECK(epoll_wait(ep, &out, 1, 0) == 1);
	snprintf(fdarg, sizeof(fdarg), "%d", efd);
	fflush(stdout);
	if (!strcmp(argv[1], "fork") || !strcmp(argv[1], "vfork")) {
		pid = strcmp(argv[1], "fork") ? vfork() : fork();
		P_REQUIRE(pid >= 0);
		if (pid == 0) {
			if (strcmp(argv[1], "fork"))
				execve(argv[0], args, environ);
			else
				execv(argv[0], args);
			_exit(127);
		}
	} else if (!strcmp(argv[1], "spawn")) {
		P_REQUIRE(posix_spawn(&pid, argv[0], NULL, NULL, args,
				      environ) == 0);
	} else if (!strcmp(argv[1], "system")) {
		snprintf(cmd, sizeof(cmd), "exec '%s' child %d 12", argv[0],
			 efd);
		st = system(cmd);
	} else {
		P_SKIP("unknown method");
	}
	if (pid > 0)
		P_REQUIRE(waitpid(pid, &st, 0) == pid);
	printf("%s: child status %d\n", argv[1],
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	P_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* Its write is ours to read, and the instance sees it. */
	P_CHECK(epoll_wait(ep, &out, 1, 0) == 1);
	P_CHECK(eventfd_read(efd, &v) == 0 && v == 30);
	P_CHECK(eventfd_read(cfd, &v) == 0 && v == 1);
	printf("%s: counter back %llu\n", argv[1], (unsigned long long)v);
	close(ep);
	close(efd);
	close(cfd);
	return p_end();
}
