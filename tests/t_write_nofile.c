/*
 * t_write_nofile: a write of more than 8 bytes to a ueventfd gets the
 * running kernel's answer even when the process has no free fd.
 *
 * eventfd(2) documents EINVAL for a buffer shorter than 8 bytes; recent
 * kernels also refuse longer ones (EINVAL), older ones accept them (they
 * return 8 and add the first 8 bytes).  First the kernel's answer is taken
 * from a kernel eventfd (write of 16 bytes {1, 0}).  Then, in a forked child
 * (so that its long write is the first of the process; the parent makes
 * none), with a ueventfd and a kernel eventfd opened before, RLIMIT_NOFILE's
 * soft limit is set to the highest open fd + 1 and the holes below it are
 * filled with dup()s, so that no fd number is free (eventfd() and ueventfd()
 * fail with EMFILE).  Under that exhaustion:
 *  - the first long write, uepoll_write(efd, {1, 0}, 16), returns what the
 *    kernel's eventfd returns (-1 EINVAL, or 8), and so does the kernel
 *    eventfd's own long write there;
 *  - an 8-byte write of 1 still works (returns 8), a 4-byte one is EINVAL;
 * then, the limit restored and the dups closed, a second long write gives
 * the same answer, and a read returns exactly what the kernel's answers
 * make it (1 per 8-byte write, plus 1 per long write if the kernel accepts
 * them: a refused long write adds nothing).  The child reports
 * through its exit status.
 */
#include "testlib.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static int highest_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	int dfd, max = -1;
	struct dirent *e;

	REQUIRE(d);
	dfd = dirfd(d);
	while ((e = readdir(d))) {
		int fd;

		if (e->d_name[0] == '.')
			continue;
		fd = atoi(e->d_name);
		if (fd != dfd && fd > max)
			max = fd;
	}
	closedir(d);
	return max;
}

/* The kernel eventfd's answer to a 16-byte write: 8, or -errno. */
static long kernel_long_write(int fd)
{
	uint64_t buf[2] = { 1, 0 };
	ssize_t r;

	errno = 0;
	r = write(fd, buf, sizeof(buf));
	return r < 0 ? -errno : (long)r;
}

static long u_long_write(int fd)
{
	uint64_t buf[2] = { 1, 0 };
	ssize_t r;

	errno = 0;
	r = uepoll_write(fd, buf, sizeof(buf));
	return r < 0 ? -errno : (long)r;
}

static int child(long kanswer)
{
	static int dups[65536];
	int ndup = 0, efd, kfd, top, fd;
	struct rlimit saved, lim;
	uint64_t one = 1, v = 0, want = 0;
	long r;

	efd = ueventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	kfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	REQUIRE(efd >= 0 && kfd >= 0);

	/* no free fd number: limit = highest + 1, holes filled */
	REQUIRE(getrlimit(RLIMIT_NOFILE, &saved) == 0);
	top = highest_fd();
	REQUIRE(top >= 0 && (rlim_t)top + 1 <= saved.rlim_cur);
	lim = saved;
	lim.rlim_cur = (rlim_t)top + 1;
	REQUIRE(setrlimit(RLIMIT_NOFILE, &lim) == 0);
	while ((fd = dup(0)) >= 0) {
		REQUIRE(ndup < (int)(sizeof(dups) / sizeof(dups[0])));
		dups[ndup++] = fd;
	}
	REQUIRE(errno == EMFILE);
	printf("child: limit %d, %d dups, no fd free\n", top + 1, ndup);
	CHECK_ERR(eventfd(0, 0), EMFILE);
	CHECK_ERR(ueventfd(0, 0), EMFILE);

	/* the first long write of the process, under exhaustion */
	r = u_long_write(efd);
	printf("child: first long uepoll_write under exhaustion: %ld (kernel: %ld)\n",
	       r, kanswer);
	CHECK_EQ(r, kanswer);
	if (kanswer == 8)
		want++;
	CHECK_EQ(kernel_long_write(kfd), kanswer);
	/* short writes still work */
	errno = 0;
	CHECK_EQ(uepoll_write(efd, &one, sizeof(one)), 8);
	want++;
	CHECK_ERR(uepoll_write(efd, &one, 4), EINVAL);

	/* restore */
	REQUIRE(setrlimit(RLIMIT_NOFILE, &saved) == 0);
	while (ndup > 0)
		close(dups[--ndup]);

	r = u_long_write(efd);
	printf("child: second long uepoll_write: %ld\n", r);
	CHECK_EQ(r, kanswer);
	if (kanswer == 8)
		want++;
	errno = 0;
	CHECK_EQ(uepoll_read(efd, &v, sizeof(v)), 8);
	printf("child: counter %llu, want %llu\n", (unsigned long long)v,
	       (unsigned long long)want);
	CHECK_EQ(v, want);
	CHECK_EQ(uepoll_close(efd), 0);
	close(kfd);
	return t_failures ? 1 : 0;
}

int main(void)
{
	int kfd, status = 0;
	long kanswer;
	pid_t pid;

	t_begin("t_write_nofile");
	t_watchdog(30);
	kfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	REQUIRE(kfd >= 0);
	kanswer = kernel_long_write(kfd);
	close(kfd);
	printf("kernel eventfd, 16-byte write: %ld%s\n", kanswer,
	       kanswer == -EINVAL ? " (EINVAL)" : "");
	if (kanswer != 8 && kanswer != -EINVAL)
		T_SKIP("unexpected kernel answer to a long eventfd write");
	fflush(stdout);
	fflush(stderr);

	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		int rc = child(kanswer);

		fflush(stdout);
		fflush(stderr);
		_exit(rc);
	}
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status));
	if (WIFEXITED(status))
		CHECK_EQ(WEXITSTATUS(status), 0);
	else if (WIFSIGNALED(status))
		fprintf(stderr, "child killed by signal %d\n", WTERMSIG(status));
	return t_end();
}
