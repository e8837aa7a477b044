/* SPDX-License-Identifier: MIT */
/*
 * p_paths.c - every way a program reaches an eventfd or an epoll, run
 * natively and under the preload (compare mode: the same output).  One
 * behaviour per argument (issue 33's list, each failing before its fix):
 *
 *   numbers   the numbers the program gets are the kernel's: the lowest
 *             free one after eventfd()/epoll_create1(); a pipe dup2()ed onto
 *             "free" numbers, in a child that execs, gets nothing of the
 *             library's (the exec handover wrote into the private fd there)
 *   closeloop a child closes every number but an eventfd's (a close loop up
 *             to the limit, close_range around it), then execs: the new
 *             program reads the counter, not the kernel's stand-in
 *   rlimit    with a soft RLIMIT_NOFILE of 16, as many eventfds and epolls
 *             as natively before EMFILE
 *   syscall   syscall(2) of read, write, readv, writev, eventfd2, epoll_ctl,
 *             epoll_wait/pwait/pwait2 on objects reach the objects
 *   rw2       preadv2/pwritev2 (offset -1, flags, offsets) as the kernel's
 *   fionbio   ioctl(FIONBIO) makes a ueventfd's read EAGAIN, and back
 *   fdopen    fwrite/fread through stdio on an fdopen()ed eventfd
 *   execveat  execveat() and syscall(SYS_execve) hand over the counter
 *   vfork     vfork's child shares memory (exec's errno comes back)
 *   iouring   io_uring_setup through syscall(2) works; objects made
 *             before and after it behave as the kernel's
 *   aio       a kernel AIO completion signalled on an eventfd (RESFD)
 *             reaches its counter and the epoll that watches it
 *   aiofd     kernel AIO whose fd is an object (IOCB_CMD_POLL, PREAD) acts
 *             on it as on the kernel's (helper-37's F3)
 *   aliases   glibc's exported aliases (__poll, __select, __read, __write,
 *             __dup2, __fcntl, __close) reach the wrappers (F1)
 *   pollep    poll()/select() of an instance's fd: ready exactly when a
 *             wait would return an event
 *   unshare   a thread with an fd table of its own closes the objects
 *             there: the other threads still have them
 *   vforkclose a vfork child closes every number, then execs: the parent's
 *             objects are untouched
 *   selecttop select(getdtablesize()) with a plain fd_set: the kernel's fd
 *             table no larger than natively
 *   forkexec  a forked child execs with the parent's instance inherited:
 *             the parent's instance keeps working
 *   nestgone  a nested instance closed, its number and memory reused by
 *             another instance, closed too, then by a pipe ADDed to the
 *             holder: the holder's demotion leaves the pipe's data alone
 *             (pfuzz's seed 808024608)
 *   nestkey   a nested instance registered through a dup since closed,
 *             whose number a pipe took: the holder's demotion gives the
 *             registration the program's data (pfuzz's seed 808984787)
 *   forkshot  a nested instance's EPOLLONESHOT registration that a forked
 *             child's wait fired stays disarmed when a spawn then demotes
 *             the holder in the parent (pfuzz's seed 40555)
 *   etfork    an EPOLLET event a wait took does not come back after a fork
 *             (in parent or child), posix_spawn, system(), popen() or a
 *             forked child's exec with the eventfd inherited; the next
 *             write is an edge again; an
 *             edge not taken yet (a pipe's, a write's after a fork) is
 *             still reported; so is a registration made through a dup the
 *             program closed
 *   evbits    every event bit 0..31 with EPOLLIN, alone and with
 *             EPOLLEXCLUSIVE, on ADD and MOD, through epoll_ctl and
 *             syscall(SYS_epoll_ctl), on an eventfd and a pipe's two ends:
 *             the kernel's answers and the kernel's revents (uepoll's own
 *             bits 1<<25 and 1<<26 are unknown bits to the program)
 *   closereg  a registration made through a dup since closed (F19 in
 *             docs/reliability.md): it lives on under the closed number,
 *             so DEL through another number of the file is ENOENT, and
 *             DEL through the closed number once it is the file's again
 *             succeeds; without a fork, after one (parent, child), after
 *             a child's exec, after a demotion (io_uring); a ueventfd and
 *             an instance; level, EPOLLET, EPOLLONESHOT
 *   ctlnest   an instance holding another, forked, the child execs (F20):
 *             a later ADD into the inner one reaches the outer one's wait;
 *             a taken EPOLLONESHOT of the inner one stays taken; after a
 *             demotion of both (a vfork's exec), the inner one first, the
 *             holder reports the program's data
 *   closenest an instance closed while nested, its number then a pipe's
 *             ADDed to the holder (F21): after a fork, a child's exec, a
 *             vfork's exec (a demotion) and io_uring's the holder reports
 *             the pipe, with its data, and nothing of the closed instance
 *   kernhold  an instance whose ready ueventfd a spawn demoted (the
 *             instance itself close-on-exec, kept), ADDed then to a kernel
 *             epoll (an instance the spawn demoted): once the ueventfd is
 *             read, neither reads ready (pfuzz's seed 1419)
 *   keyreuse  an eventfd registered under a number the program closed and
 *             gave to another file before a spawn demoted the eventfd: a
 *             DEL through that number, once it is the eventfd's again,
 *             succeeds (the registration's key kept: pfuzz's seed
 *             820034982)
 *   keytwo    two files registered under one number (the program closed
 *             it and gave it to another it registered too): an instance's
 *             demotion gives each registration its own data (pfuzz's seed
 *             830006038: the kernel names the two in an order of its
 *             own, so 20 rounds)
 *   kheldlt   an instance a kernel epoll (a demoted one) holds
 *             level-triggered stops reading ready when its last ready
 *             eventfd is read empty, DELeted, or taken by a one-shot wait
 *             (K in reliability.md; pfuzz's seeds 1301426, 840027367)
 *   keyclose  after such a demotion (fdopen's) the eventfd's last close
 *             drops its registration and a pipe's writer's close gives the
 *             reader POLLHUP at once: the library keeps no copy of the
 *             program's files (helper-26), 50 times
 *   scmet     an epoll nested EPOLLET, demoted by its send over a UNIX
 *             socket: each later write of its eventfd is an edge for the
 *             holder (helper-26)
 *   forkpoll  eventfds shared by a fork (issue 35 item 4): the two
 *             processes take turns on two of them (blocking semaphore
 *             reads, 100 round trips, the layer's NOPOLL default), then
 *             the parent's poll() of one the child wrote, read and wrote
 *             under NOPOLL, and the child's select() and kernel epoll of
 *             one the parent left non-zero, see the kernel's readiness
 *   forkadd   a forked child's ctl of an instance it inherited is the
 *             parent's too (F24): an eventfd the child makes and ADDs
 *             leaves with the child; an inherited instance the child ADDs,
 *             or a nested one it MODs, reports the child's data to the
 *             parent's wait; the child's own waits see its eventfd's level
 *             and edges; the child's demotion of the instance (io_uring)
 *             leaves the parent's ueventfds made after the fork waking it
 */
#include <fcntl.h>
#include <stdbool.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <linux/aio_abi.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <spawn.h>

#include "ptest.h"

extern char **environ;
static const char *self;
/* The numbers open when the program started (inherited): not ours to
 * replace.  Every other number the program did not open itself is free for
 * it, whatever the library holds. */
static bool at_start[64];

static bool program_free(int fd, const int *own, int n)
{
	if (fd < 0 || fd >= 64 || at_start[fd])
		return false;
	for (int i = 0; i < n; i++)
		if (own[i] == fd)
			return false;
	return true;
}

/* The new program: read the eventfd at number fd (nonblocking) and print
 * what it holds. */
static int child_read(int fd)
{
	uint64_t v = 0;
	int fl = fcntl(fd, F_GETFL);
	ssize_t r;

	if (fl < 0) {
		printf("child: fd %d closed\n", fd);
		return 0;
	}
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	r = read(fd, &v, sizeof(v));
	printf("child: read %zd value %llu\n", r, (unsigned long long)v);
	return 0;
}

static int wait_child(pid_t pid)
{
	int st;

	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void exec_child(int fd)
{
	char a[16];

	snprintf(a, sizeof(a), "%d", fd);
	fflush(stdout);
	execl(self, self, "child", a, (char *)NULL);
	_exit(127);
}

static void run_numbers(void)
{
	int e = eventfd(2, 0), n1 = open("/dev/null", O_RDONLY);
	int ep = epoll_create1(0), n2 = open("/dev/null", O_RDONLY);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };
	int p[2];
	char buf[64];
	ssize_t got;

	P_REQUIRE(e >= 0 && ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
	printf("numbers: gaps %d %d %d\n", n1 - e, ep - n1, n2 - ep);
	P_REQUIRE(eventfd_write(e, 5) == 0);
	P_REQUIRE(pipe(p) == 0);
	/* The child puts the pipe's write end on every number from 3 to 40
	 * that is free for it, then execs (the handover of e runs). */
	pid_t pid = fork();
	if (pid == 0) {
		int own[] = { e, p[1] };

		for (int fd = 3; fd <= 40; fd++)
			if (program_free(fd, own, 2))
				dup2(p[1], fd);
		close(p[0]);
		exec_child(e);
	}
	close(p[1]);
	printf("numbers: child %d\n", wait_child(pid));
	got = read(p[0], buf, sizeof(buf));
	printf("numbers: the pipe got %zd bytes\n", got);
	close(p[0]);
	/* The child took the counter (and left the file nonblocking). */
	uint64_t v = 0;
	P_CHECK(eventfd_write(e, 1) == 0 && eventfd_read(e, &v) == 0);
	printf("numbers: counter %llu\n", (unsigned long long)v);
	/* The same without a fork: a log pipe put on every "free" number
	 * from 3 to 40, then the eventfd written and read through the
	 * instance; the pipe gets only the log line. */
	int lp[2], on[41] = { 0 };
	P_REQUIRE(pipe2(lp, O_NONBLOCK) == 0);
	int own[] = { e, n1, ep, n2, lp[0], lp[1] };
	for (int fd = 3; fd <= 40; fd++)
		if (program_free(fd, own, 6) && dup2(lp[1], fd) == fd)
			on[fd] = 1;
	struct epoll_event out;
	for (int i = 0; i < 3; i++) {
		P_CHECK(eventfd_write(e, 2) == 0);
		P_CHECK(epoll_wait(ep, &out, 1, 0) == 1);
		P_CHECK(eventfd_read(e, &v) == 0);
	}
	P_REQUIRE(write(lp[1], "log\n", 4) == 4);
	got = read(lp[0], buf, sizeof(buf));
	printf("numbers: the log pipe got %zd bytes\n", got);
	for (int fd = 3; fd <= 40; fd++)
		if (on[fd])
			close(fd);
	close(lp[0]);
	close(lp[1]);
	close(ep);
	close(e);
	close(n1);
	close(n2);
}

static void run_closeloop(void)
{
	int e = eventfd(3, 0);
	pid_t pid;

	P_REQUIRE(e >= 0 && eventfd_write(e, 4) == 0);
	for (int how = 0; how < 3; how++) {
		pid = fork();
		if (pid == 0) {
			long max = sysconf(_SC_OPEN_MAX);

			if (how == 0) {
				for (long fd = 3; fd < max; fd++)
					if (fd != e)
						close((int)fd);
			} else if (how == 1) {
				close_range(3, (unsigned)e - 1, 0);
				close_range((unsigned)e + 1, ~0u, 0);
			} else {
				/* closefrom above it, the ones below by hand */
				for (int fd = 3; fd < e; fd++)
					close(fd);
				closefrom(e + 1);
			}
			exec_child(e);
		}
		printf("closeloop %d: child %d\n", how, wait_child(pid));
	}
	close(e);
}

static int count_until_emfile(int epolls)
{
	int n = 0, fds[64];

	for (; n < 64; n++) {
		fds[n] = epolls ? epoll_create1(0) : eventfd(0, 0);
		if (fds[n] < 0)
			break;
	}
	printf("rlimit: %s %d, then %s\n", epolls ? "epolls" : "eventfds", n,
	       strerror(errno));
	for (int i = 0; i < n; i++)
		close(fds[i]);
	return n;
}

static void run_rlimit(void)
{
	struct rlimit old, rl;

	P_REQUIRE(getrlimit(RLIMIT_NOFILE, &old) == 0);
	if (old.rlim_max < 64)
		P_SKIP("hard RLIMIT_NOFILE below 64");
	/* A table of 16, with one object made before (its private fds are
	 * already placed). */
	int e0 = eventfd(0, 0);
	rl = old;
	rl.rlim_cur = 16;
	P_REQUIRE(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	P_REQUIRE(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	printf("rlimit: soft %llu\n", (unsigned long long)rl.rlim_cur);
	count_until_emfile(0);
	count_until_emfile(1);
	P_REQUIRE(setrlimit(RLIMIT_NOFILE, &old) == 0);
	close(e0);
}

/* One call, then what it left: the result, errno and a value (the call is
 * made before the arguments of printf are, whose order is unspecified). */
#define SHOW(what, call, val)                                                 \
	do {                                                                  \
		errno = 0;                                                    \
		long r_ = (long)(call);                                       \
		int e_ = errno;                                               \
		printf("%s %ld errno %d value %llu\n", what, r_, e_,          \
		       (unsigned long long)(val));                            \
	} while (0)
/* A wait, and the first event's field only if there is one: the array is
 * the caller's, never written by a wait that returns 0 (its old bytes
 * differ between the native and the preloaded run). */
#define SHOW_WAIT(what, call, val) \
	SHOW(what, call, r_ > 0 ? (unsigned long long)(val) : 0ull)

static void run_syscall(void)
{
	/* Made by their libc names: objects under the preload. */
	int e = eventfd(1, EFD_NONBLOCK);
	int ep = epoll_create1(0);
	/* Made by syscall(2): the same. */
	int e2 = (int)syscall(SYS_eventfd2, 2, 0);
	int ep2 = (int)syscall(SYS_epoll_create1, 0);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 99 };
	struct epoll_event out[4];
	struct timespec ts = { 0, 0 };
	uint64_t v = 6, w = 0;
	struct iovec io = { &w, sizeof(w) };

	P_REQUIRE(e >= 0 && ep >= 0);
	/* Unwatched: the counter moves in the process. */
	SHOW("syscall: write first", write(e, &v, sizeof(v)), 0);
	SHOW("syscall: read first", syscall(SYS_read, e, &w, sizeof(w)), w);
	SHOW("syscall: write by syscall", syscall(SYS_write, e, &v, sizeof(v)),
	     0);
	SHOW("syscall: read by libc", read(e, &w, sizeof(w)), w);
	SHOW("syscall: ctl", syscall(SYS_epoll_ctl, ep, EPOLL_CTL_ADD, e, &ev),
	     0);
	memset(out, 0, sizeof(out));
	SHOW("syscall: pwait", syscall(SYS_epoll_pwait, ep, out, 4, 0, NULL, 8),
	     out[0].data.u64);
	SHOW("syscall: write", syscall(SYS_write, e, &v, sizeof(v)), 0);
	memset(out, 0, sizeof(out));
	SHOW("syscall: pwait2",
	     syscall(SYS_epoll_pwait2, ep, out, 4, &ts, NULL, 8),
	     out[0].data.u64);
	SHOW("syscall: read", syscall(SYS_read, e, &w, sizeof(w)), w);
	SHOW("syscall: read again", syscall(SYS_read, e, &w, sizeof(w)), 0);
	w = 3;
	SHOW("syscall: writev", syscall(SYS_writev, e, &io, 1), 0);
	w = 0;
	SHOW("syscall: readv", syscall(SYS_readv, e, &io, 1), w);
	memset(out, 0, sizeof(out));
	SHOW("syscall: wait", syscall(SYS_epoll_pwait, ep, out, 4, 0, NULL, 8),
	     0);
	P_REQUIRE(e2 >= 0 && ep2 >= 0);
	ev.data.u64 = 12;
	SHOW("syscall: ctl2", epoll_ctl(ep2, EPOLL_CTL_ADD, e2, &ev), 0);
	SHOW_WAIT("syscall: wait2", epoll_wait(ep2, out, 4, 0), out[0].data.u64);
	SHOW("syscall: read2", read(e2, &w, 8), w);
	close(ep2);
	close(e2);
	close(ep);
	close(e);
}

static void run_rw2(void)
{
	int e = eventfd(5, EFD_NONBLOCK);
	uint64_t v = 2;
	struct iovec io = { &v, sizeof(v) };

	P_REQUIRE(e >= 0);
	SHOW("rw2: pwritev2 -1", pwritev2(e, &io, 1, -1, 0), 0);
	SHOW("rw2: pwritev2 0", pwritev2(e, &io, 1, 0, 0), 0);
	SHOW("rw2: pwritev2 bad flags", pwritev2(e, &io, 1, -1, 0x40000000),
	     0);
	v = 0;
	SHOW("rw2: preadv2 nowait", preadv2(e, &io, 1, -1, RWF_NOWAIT), v);
	SHOW("rw2: pread", pread(e, &v, 8, 0), 0);
	v = 3;
	SHOW("rw2: pwritev2 -1", pwritev2(e, &io, 1, -1, 0), 0);
	v = 0;
	SHOW("rw2: preadv2 -1", preadv2(e, &io, 1, -1, 0), v);
	SHOW("rw2: preadv2 empty", preadv2(e, &io, 1, -1, 0), 0);
	close(e);
}

/* FIONBIO: the writer waits until the reader sleeps in its read (its
 * state in /proc), then writes: a read that does not block answers at once
 * instead, and the writer then stops at `done`. */
static struct {
	int fd;
	pid_t tid;
	_Atomic int done;
} fion;

static int thread_state(pid_t tid)
{
	char path[64], buf[256], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	p = p ? strrchr(buf, ')') : NULL;
	return p && p[1] == ' ' ? p[2] : 0;
}

static void *fion_writer(void *arg)
{
	uint64_t v = 5;

	(void)arg;
	while (!atomic_load(&fion.done)) {
		if (thread_state(fion.tid) == 'S') {
			if (write(fion.fd, &v, 8) != 8)
				abort();
			break;
		}
		sched_yield();
	}
	return NULL;
}

static void run_fionbio(void)
{
	int e0 = eventfd(0, EFD_NONBLOCK), off0 = 0;
	uint64_t v0 = 1;
	pthread_t t;

	/* Non-blocking, a read that empties it, then blocking by ioctl: the
	 * next read blocks until the writer's 5 (it must not take the
	 * empty-after-drain shortcut of a non-blocking fd). */
	P_REQUIRE(e0 >= 0 && write(e0, &v0, 8) == 8 && read(e0, &v0, 8) == 8);
	SHOW("fionbio: off", ioctl(e0, FIONBIO, &off0), 0);
	fion.fd = e0;
	fion.tid = (pid_t)syscall(SYS_gettid);
	P_REQUIRE(pthread_create(&t, NULL, fion_writer, NULL) == 0);
	v0 = 0;
	SHOW("fionbio: blocking read", read(e0, &v0, 8), v0);
	atomic_store(&fion.done, 1);
	pthread_join(t, NULL);
	close(e0);

	int e = eventfd(0, 0), on = 1, off = 0;
	uint64_t v = 0;

	P_REQUIRE(e >= 0);
	SHOW("fionbio: on", ioctl(e, FIONBIO, &on), 0);
	SHOW("fionbio: read", read(e, &v, 8), 0);
	SHOW("fionbio: flags", fcntl(e, F_GETFL) & O_NONBLOCK, 0);
	SHOW("fionbio: off", ioctl(e, FIONBIO, &off), 0);
	SHOW("fionbio: flags", fcntl(e, F_GETFL) & O_NONBLOCK, 0);
	P_REQUIRE(eventfd_write(e, 9) == 0);
	SHOW("fionbio: read", read(e, &v, 8), v);
	/* The write side: a full counter, nonblocking by ioctl. */
	v = 0xfffffffffffffffeULL;
	SHOW("fionbio: fill", write(e, &v, 8), 0);
	SHOW("fionbio: on", ioctl(e, FIONBIO, &on), 0);
	v = 1;
	SHOW("fionbio: write full", write(e, &v, 8), 0);
	close(e);
}

static void run_fdopen(void)
{
	int e = eventfd(1, EFD_NONBLOCK), ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 5 }, out;
	uint64_t v = 41, w = 0;
	FILE *f;

	P_REQUIRE(e >= 0 && ep >= 0);
	P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
	P_REQUIRE(eventfd_write(e, 1) == 0);
	f = fdopen(e, "r+");
	P_REQUIRE(f);
	setvbuf(f, NULL, _IONBF, 0);
	SHOW("fdopen: fwrite", fwrite(&v, sizeof(v), 1, f), 0);
	SHOW("fdopen: fread", fread(&w, sizeof(w), 1, f), w);
	SHOW("fdopen: wait", epoll_wait(ep, &out, 1, 0), 0);
	v = 2;
	SHOW("fdopen: fwrite", fwrite(&v, sizeof(v), 1, f), 0);
	SHOW("fdopen: read", read(e, &w, 8), w);
	fclose(f);
	close(ep);

	/* Shared with a child (fork), which execs and so demotes it; then
	 * stdio here, whose fclose closes the number with libc's internal
	 * close: a pipe made next gets the number, and reads only its own. */
	int e2 = eventfd(5, EFD_SEMAPHORE), p[2];
	char a[16], buf[16];

	P_REQUIRE(e2 >= 0);
	snprintf(a, sizeof(a), "%d", e2);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		execl(self, self, "child", a, (char *)NULL);
		_exit(127);
	}
	printf("fdopen: child %d\n", wait_child(pid));
	f = fdopen(e2, "r+");
	P_REQUIRE(f);
	setvbuf(f, NULL, _IONBF, 0);
	v = 1;
	SHOW("fdopen: fwrite", fwrite(&v, sizeof(v), 1, f), 0);
	SHOW("fdopen: fread", fread(&w, sizeof(w), 1, f), w);
	fclose(f);
	P_REQUIRE(pipe2(p, O_NONBLOCK) == 0);
	SHOW("fdopen: the pipe on its number", read(p[0], buf, sizeof(buf)), 0);
	close(p[0]);
	close(p[1]);
}

static void run_execveat(void)
{
	int e = eventfd(10, 0);
	char a[16];
	char *argv[] = { (char *)self, "child", a, NULL };

	P_REQUIRE(e >= 0 && eventfd_write(e, 5) == 0);
	snprintf(a, sizeof(a), "%d", e);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		execveat(AT_FDCWD, self, argv, environ, 0);
		_exit(127);
	}
	printf("execveat: child %d\n", wait_child(pid));
	P_REQUIRE(eventfd_write(e, 1) == 0);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		syscall(SYS_execve, self, argv, environ);
		_exit(127);
	}
	printf("syscall execve: child %d\n", wait_child(pid));
	close(e);
}

static void run_vfork(void)
{
	volatile int err = -1;
	int e = eventfd(4, 0);
	pid_t pid;

	P_REQUIRE(e >= 0 && eventfd_write(e, 1) == 0);
	pid = vfork();
	if (pid == 0) {
		execl("/nonexistent/program", "x", (char *)NULL);
		err = errno;
		_exit(127);
	}
	printf("vfork: child %d errno back %d\n", wait_child(pid), err);
	char a[16];
	snprintf(a, sizeof(a), "%d", e);
	fflush(stdout);
	pid = vfork();
	if (pid == 0) {
		execl(self, self, "child", a, (char *)NULL);
		_exit(127);
	}
	printf("vfork: child %d\n", wait_child(pid));
	close(e);
}

static void run_iouring(void)
{
	struct io_uring_params prm;
	int e = eventfd(3, EFD_NONBLOCK), ep = epoll_create1(0), ring, e2;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 }, out;
	uint64_t v = 0;

	P_REQUIRE(e >= 0 && ep >= 0);
	P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
	memset(&prm, 0, sizeof(prm));
	ring = (int)syscall(SYS_io_uring_setup, 4, &prm);
	printf("iouring: setup %s\n", ring >= 0 ? "ok" : strerror(errno));
	P_REQUIRE(eventfd_write(e, 2) == 0);
	SHOW("iouring: wait", epoll_wait(ep, &out, 1, 0), 0);
	SHOW("iouring: read", read(e, &v, 8), v);
	e2 = eventfd(8, 0);
	SHOW("iouring: new eventfd read", read(e2, &v, 8), v);
	if (ring >= 0)
		close(ring);
	close(e2);
	close(ep);
	close(e);
}

static void run_aio(void)
{
	aio_context_t ctx = 0;
	char path[] = "/tmp/p_paths_aioXXXXXX", data[512];
	int e = eventfd(0, EFD_NONBLOCK), ep = epoll_create1(0), f;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 3 }, out;
	struct iocb cb, *cbs[1] = { &cb };
	struct io_event done;
	uint64_t v = 0;

	P_REQUIRE(e >= 0 && ep >= 0);
	P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
	f = mkstemp(path);
	P_REQUIRE(f >= 0);
	unlink(path);
	if (syscall(SYS_io_setup, 4, &ctx) < 0)
		P_SKIP("io_setup failed (no kernel AIO)");
	memset(&cb, 0, sizeof(cb));
	memset(data, 'x', sizeof(data));
	cb.aio_lio_opcode = IOCB_CMD_PWRITE;
	cb.aio_fildes = (uint32_t)f;
	cb.aio_buf = (uint64_t)(uintptr_t)data;
	cb.aio_nbytes = sizeof(data);
	cb.aio_flags = IOCB_FLAG_RESFD;
	cb.aio_resfd = (uint32_t)e;
	SHOW("aio: submit", syscall(SYS_io_submit, ctx, 1, cbs), 0);
	SHOW("aio: events", syscall(SYS_io_getevents, ctx, 1, 1, &done, NULL),
	     0);
	SHOW_WAIT("aio: wait", epoll_wait(ep, &out, 1, -1), out.data.u64);
	SHOW("aio: read", read(e, &v, 8), v);
	syscall(SYS_io_destroy, ctx);
	close(f);
	close(ep);
	close(e);
}

/* glibc's exported aliases (__poll, __select, __read, __write, __dup2,
 * __fcntl, __close; PRELOAD_ALIASES in preload/fns.h) reach the same
 * wrappers: a look through __poll or __select at an emptied eventfd and at
 * a ready instance sees what poll() sees (under the NOPOLL default, before
 * the fix, the stale kernel fd: 1 and 0), and __close frees the number of
 * an object for good (the pipe that takes it is read as a pipe). */
int __poll(struct pollfd *, nfds_t, int);
int __select(int, fd_set *, fd_set *, fd_set *, struct timeval *);
ssize_t __read(int, void *, size_t);
ssize_t __write(int, const void *, size_t);
int __dup2(int, int);
int __fcntl(int, int, ...);
int __close(int);

static void run_aliases(void)
{
	int e = eventfd(0, EFD_NONBLOCK), f = eventfd(0, EFD_NONBLOCK);
	int ep = epoll_create1(0), d, p[2];
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 };
	struct pollfd pf = { .events = POLLIN };
	struct timeval tv = { 0, 0 };
	uint64_t v = 5;
	fd_set r;
	char c;

	P_REQUIRE(e >= 0 && f >= 0 && ep >= 0);
	P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, f, &ev) == 0);
	SHOW("aliases: __write", __write(e, &v, 8), 0);
	SHOW("aliases: __read", __read(e, &v, 8), v);
	pf.fd = e;
	SHOW("aliases: __poll emptied", __poll(&pf, 1, 0), pf.revents);
	FD_ZERO(&r);
	FD_SET(e, &r);
	SHOW("aliases: __select emptied", __select(e + 1, &r, NULL, NULL, &tv),
	     FD_ISSET(e, &r));
	v = 1;
	P_REQUIRE(write(f, &v, 8) == 8);
	pf.fd = ep;
	SHOW("aliases: __poll ready instance", __poll(&pf, 1, 1000),
	     pf.revents);
	d = __dup2(e, 50);
	v = 2;
	SHOW("aliases: __dup2", d, write(e, &v, 8));
	SHOW("aliases: read the dup", read(d, &v, 8), v);
	d = __fcntl(e, F_DUPFD, 60);
	v = 3;
	SHOW("aliases: __fcntl F_DUPFD", d >= 60, write(e, &v, 8));
	SHOW("aliases: read the dup", read(d, &v, 8), v);
	close(d);
	close(50);
	SHOW("aliases: __close", __close(e), 0);
	P_REQUIRE(pipe(p) == 0);
	SHOW("aliases: the pipe took the number", p[0] == e, 0);
	P_REQUIRE(write(p[1], "x", 1) == 1);
	SHOW("aliases: read the pipe", read(p[0], &c, 1), c);
	close(p[0]);
	close(p[1]);
	close(ep);
	close(f);
}

/* Kernel AIO that names an object as its fd (IOCB_CMD_POLL of an emptied
 * eventfd, of an instance whose eventfd is written after the submission
 * and of one already ready; IOCB_CMD_PREAD of an eventfd) acts on it as
 * on the kernel's: before the fix the default's NOPOLL objects left the
 * poll of the eventfd complete and those of the instances pending (lost),
 * and the read took the kernel's stand-in (1, not 5). */
static void aio_one(const char *what, int fd, uint16_t op, void *buf,
		    size_t n, int after)
{
	aio_context_t ctx = 0;
	struct iocb cb, *cbs[1] = { &cb };
	struct io_event done;
	struct timespec t = { 1, 0 };
	uint64_t v = 1;
	long got;

	if (syscall(SYS_io_setup, 1, &ctx) < 0)
		P_SKIP("io_setup failed (no kernel AIO)");
	memset(&cb, 0, sizeof(cb));
	cb.aio_lio_opcode = op;
	cb.aio_fildes = (uint32_t)fd;
	cb.aio_buf = buf ? (uint64_t)(uintptr_t)buf : POLLIN;
	cb.aio_nbytes = n;
	SHOW(what, syscall(SYS_io_submit, ctx, 1, cbs), 0);
	if (after >= 0)
		P_REQUIRE(write(after, &v, 8) == 8);
	got = syscall(SYS_io_getevents, ctx, 1, 1, &done, &t);
	SHOW(what, got, got == 1 ? done.res : -1);
	syscall(SYS_io_destroy, ctx);
}

static void run_aiofd(void)
{
	int e = eventfd(0, EFD_NONBLOCK), f = eventfd(0, EFD_NONBLOCK);
	int g = eventfd(0, EFD_NONBLOCK), h = eventfd(0, EFD_NONBLOCK);
	int ep = epoll_create1(0), ep2 = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 };
	uint64_t v = 1;

	P_REQUIRE(e >= 0 && f >= 0 && g >= 0 && h >= 0 && ep >= 0 &&
		  ep2 >= 0);
	P_REQUIRE(write(e, &v, 8) == 8 && read(e, &v, 8) == 8);
	aio_one("aiofd: poll emptied eventfd", e, IOCB_CMD_POLL, NULL, 0, -1);
	P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, f, &ev) == 0);
	aio_one("aiofd: poll instance, written after", ep, IOCB_CMD_POLL,
		NULL, 0, f);
	P_REQUIRE(epoll_ctl(ep2, EPOLL_CTL_ADD, g, &ev) == 0);
	v = 1;
	P_REQUIRE(write(g, &v, 8) == 8);
	aio_one("aiofd: poll ready instance", ep2, IOCB_CMD_POLL, NULL, 0, -1);
	v = 5;
	P_REQUIRE(write(h, &v, 8) == 8);
	v = 0;
	aio_one("aiofd: pread eventfd", h, IOCB_CMD_PREAD, &v, 8, -1);
	SHOW("aiofd: the value read", v, read(h, &v, 8));
	close(ep2);
	close(ep);
	close(h);
	close(g);
	close(f);
	close(e);
}

/* An instance's fd polled from outside reads ready exactly when a wait
 * would return an event: after the last event is taken, poll() says 0 (a
 * loop that polls it and then waits with no timeout must not block). */
static void run_pollep(void)
{
	int ep = epoll_create1(0), e = eventfd(0, EFD_NONBLOCK), p[2];
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 }, out[4];
	struct pollfd pf = { .events = POLLIN };
	fd_set rs;
	struct timeval tv = { 0, 0 };
	uint64_t v = 1;
	char c;

	P_REQUIRE(ep >= 0 && e >= 0 && pipe(p) == 0);
	P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
	ev.data.u64 = 2;
	P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0);
	pf.fd = ep;
	for (int round = 0; round < 4; round++) {
		if (round % 2)
			P_REQUIRE(write(e, &v, 8) == 8);
		else
			P_REQUIRE(write(p[1], "x", 1) == 1);
		SHOW("pollep: poll", poll(&pf, 1, 0), pf.revents);
		SHOW_WAIT("pollep: wait", epoll_wait(ep, out, 4, 0), out[0].data.u64);
		if (round % 2)
			P_REQUIRE(read(e, &v, 8) == 8);
		else
			P_REQUIRE(read(p[0], &c, 1) == 1);
		pf.revents = 0;
		SHOW("pollep: poll drained", poll(&pf, 1, 0), pf.revents);
		FD_ZERO(&rs);
		FD_SET(ep, &rs);
		SHOW("pollep: select drained", select(ep + 1, &rs, NULL, NULL, &tv),
		     FD_ISSET(ep, &rs));
	}
	close(p[0]);
	close(p[1]);
	close(e);
	close(ep);
}

/* A thread with an fd table of its own (unshare(CLONE_FILES), or
 * close_range's CLOSE_RANGE_UNSHARE) closes the eventfd and the instance in
 * its table: the other threads still have them. */
static struct {
	int e, ep, how;
} spl;

static void *split_thread(void *arg)
{
	(void)arg;
	if (spl.how == 0) {
		if (unshare(CLONE_FILES) != 0)
			abort();
		close(spl.e);
		close(spl.ep);
	} else {
		int lo = spl.e < spl.ep ? spl.e : spl.ep;
		int hi = spl.e < spl.ep ? spl.ep : spl.e;

		if (close_range((unsigned)lo, (unsigned)hi,
				CLOSE_RANGE_UNSHARE) != 0)
			abort();
	}
	return NULL;
}

static void run_unshare(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 4 }, out[2];
	uint64_t v = 2;
	pthread_t t;

	for (spl.how = 0; spl.how < 2; spl.how++) {
		spl.e = eventfd(1, EFD_NONBLOCK);
		spl.ep = epoll_create1(0);
		P_REQUIRE(spl.e >= 0 && spl.ep >= 0);
		P_REQUIRE(epoll_ctl(spl.ep, EPOLL_CTL_ADD, spl.e, &ev) == 0);
		P_REQUIRE(pthread_create(&t, NULL, split_thread, NULL) == 0);
		P_REQUIRE(pthread_join(t, NULL) == 0);
		SHOW("unshare: write", write(spl.e, &v, 8), 0);
		SHOW_WAIT("unshare: wait", epoll_wait(spl.ep, out, 2, 0),
		     out[0].data.u64);
		SHOW("unshare: read", read(spl.e, &v, 8), v);
		SHOW("unshare: close", close(spl.e), 0);
		SHOW("unshare: close ep", close(spl.ep), 0);
	}
}

/* A vfork child closes every number above 2 (a close loop, close_range),
 * as JDK's launcher and shells do, then execs: the parent's close-on-exec
 * objects are untouched (the child's table is its own). */
static void run_vforkclose(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 }, o[4];

	for (int how = 0; how < 2; how++) {
		int e = eventfd(3, EFD_NONBLOCK | EFD_CLOEXEC);
		int ep = epoll_create1(EPOLL_CLOEXEC);
		uint64_t v = 0;
		pid_t pid;

		P_REQUIRE(e >= 0 && ep >= 0);
		P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
		pid = vfork();
		if (pid == 0) {
			if (how)
				close_range(3, ~0u, 0);
			else
				for (int fd = 3; fd < 64; fd++)
					close(fd);
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		printf("vforkclose %d: child %d\n", how, wait_child(pid));
		memset(o, 0, sizeof(o));
		SHOW_WAIT("vforkclose: wait", epoll_wait(ep, o, 4, 0), o[0].data.u64);
		SHOW("vforkclose: read", read(e, &v, 8), v);
		v = 2;
		SHOW("vforkclose: write", write(e, &v, 8), 0);
		SHOW_WAIT("vforkclose: wait", epoll_wait(ep, o, 4, 0), o[0].data.u64);
		close(ep);
		close(e);
	}
}

/* select(getdtablesize(), ...) with a plain fd_set followed by other data:
 * the kernel reads as many bits as its fd table has, so the table must be
 * no larger than natively, also when the library's fds take the highest
 * numbers below the limit (a hard limit equal to the soft one: set here)
 * and the program holds 1023 itself. */
static struct {
	fd_set s;
	unsigned char other[4096];
} sel;

static void run_selecttop(void)
{
	struct rlimit rl = { 4096, 4096 };
	struct timeval tv = { 0, 0 };
	int e, ep, hold;

	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		P_SKIP("cannot set RLIMIT_NOFILE to 4096");
	hold = dup2(0, 1023);
	P_REQUIRE(hold == 1023);
	e = eventfd(1, 0);
	ep = epoll_create1(0);
	P_REQUIRE(e >= 0 && ep >= 0);
	memset(sel.other, 0xff, sizeof(sel.other));
	FD_ZERO(&sel.s);
	FD_SET(e, &sel.s);
	SHOW("selecttop: select", select(getdtablesize(), &sel.s, NULL, NULL, &tv),
	     FD_ISSET(e, &sel.s));
	close(ep);
	close(e);
	close(hold);
}

/* An instance without O_CLOEXEC, inherited by a forked child that execs:
 * the parent's instance keeps working (the child's exec must not rewrite
 * the epoll file both share).  A thread blocked in the parent's wait is
 * woken by a later write, and poll() of the instance sees the event. */
static struct {
	int ep;
	long r;
	_Atomic pid_t tid;
} fx;

static void *fx_wait(void *arg)
{
	struct epoll_event o;

	(void)arg;
	atomic_store(&fx.tid, (pid_t)syscall(SYS_gettid));
	fx.r = epoll_wait(fx.ep, &o, 1, -1);
	return NULL;
}

static void run_forkexec(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };
	struct pollfd pf = { .events = POLLIN };
	uint64_t v = 1;
	pthread_t t;
	pid_t pid;
	int e;

	fx.ep = epoll_create1(0);
	e = eventfd(0, EFD_NONBLOCK);
	P_REQUIRE(fx.ep >= 0 && e >= 0);
	P_REQUIRE(epoll_ctl(fx.ep, EPOLL_CTL_ADD, e, &ev) == 0);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	printf("forkexec: child %d\n", wait_child(pid));
	P_REQUIRE(pthread_create(&t, NULL, fx_wait, NULL) == 0);
	/* Asleep in the wait (its state in /proc), then the write. */
	while (!atomic_load(&fx.tid) || thread_state(atomic_load(&fx.tid)) != 'S')
		sched_yield();
	P_REQUIRE(write(e, &v, 8) == 8);
	P_REQUIRE(pthread_join(t, NULL) == 0);
	printf("forkexec: the blocked wait returned %ld\n", fx.r);
	pf.fd = fx.ep;
	SHOW("forkexec: poll", poll(&pf, 1, 0), pf.revents);
	P_REQUIRE(read(e, &v, 8) == 8);
	int e2 = eventfd(1, EFD_NONBLOCK);
	P_REQUIRE(e2 >= 0 && epoll_ctl(fx.ep, EPOLL_CTL_ADD, e2, &ev) == 0);
	pf.revents = 0;
	SHOW("forkexec: poll a new one", poll(&pf, 1, 0), pf.revents);
	close(e2);
	close(e);
	close(fx.ep);
}

static void run_nestgone(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 }, out[4];
	int a = epoll_create1(0), b = epoll_create1(EPOLL_CLOEXEC), p[2];
	char *argv[] = { "true", NULL };
	pid_t pid;
	int n;

	P_REQUIRE(a >= 0 && b >= 0);
	P_REQUIRE(epoll_ctl(a, EPOLL_CTL_ADD, b, &ev) == 0);
	close(b);
	b = epoll_create1(EPOLL_CLOEXEC); /* its number, likely its memory */
	P_REQUIRE(b >= 0);
	close(b);
	P_REQUIRE(pipe2(p, O_CLOEXEC) == 0);
	ev.data.u64 = 2;
	P_REQUIRE(epoll_ctl(a, EPOLL_CTL_ADD, p[0], &ev) == 0);
	close(p[1]);
	P_REQUIRE(posix_spawn(&pid, "/bin/true", NULL, NULL, argv,
			      environ) == 0);
	printf("nestgone: spawned %d\n", wait_child(pid));
	n = epoll_wait(a, out, 4, 0);
	printf("nestgone: wait %d", n);
	for (int i = 0; i < n; i++)
		printf(" [%#x %llu]", out[i].events,
		       (unsigned long long)out[i].data.u64);
	printf("\n");
	close(p[0]);
	close(a);
}

static void nestkey_one(bool inherit)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 }, out[4];
	/* inherit: the nested instance is demoted by the spawn too. */
	int a = epoll_create1(0), b = epoll_create1(inherit ? 0 : EPOLL_CLOEXEC);
	int d, p[2];
	int e = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
	char *argv[] = { "true", NULL };
	pid_t pid;
	int n;

	P_REQUIRE(a >= 0 && b >= 0 && e >= 0 && (d = dup(b)) >= 0);
	P_REQUIRE(epoll_ctl(a, EPOLL_CTL_ADD, d, &ev) == 0);
	close(d);
	P_REQUIRE(pipe2(p, O_CLOEXEC) == 0); /* d's number, likely */
	P_REQUIRE(posix_spawn(&pid, "/bin/true", NULL, NULL, argv,
			      environ) == 0);
	printf("nestkey: spawned %d\n", wait_child(pid));
	ev.data.u64 = 2;
	P_REQUIRE(epoll_ctl(b, EPOLL_CTL_ADD, e, &ev) == 0);
	n = epoll_wait(a, out, 4, 0);
	printf("nestkey: wait %d", n);
	for (int i = 0; i < n; i++)
		printf(" [%#x %llu]", out[i].events,
		       (unsigned long long)out[i].data.u64);
	printf("\n");
	close(p[0]);
	close(p[1]);
	close(e);
	close(b);
	close(a);
}

static void run_nestkey(void)
{
	nestkey_one(false);
	nestkey_one(true);
}

/* forkshot: the kernel epoll is shared since the fork; the child's wait
 * disarms the one-shot registration in it, which the parent's memory does
 * not know. */
static void run_forkshot(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 }, out[4];
	int out_ep = epoll_create1(0), in = epoll_create1(EPOLL_CLOEXEC);
	int e = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
	struct pollfd pf = { .events = POLLIN };
	char *argv[] = { "true", NULL };
	pid_t pid;

	P_REQUIRE(out_ep >= 0 && in >= 0 && e >= 0);
	P_REQUIRE(epoll_ctl(in, EPOLL_CTL_ADD, e, &ev) == 0);
	ev.events = EPOLLIN | EPOLLONESHOT;
	ev.data.u64 = 2;
	P_REQUIRE(epoll_ctl(out_ep, EPOLL_CTL_ADD, in, &ev) == 0);
	fflush(stdout);
	pid = fork();
	P_REQUIRE(pid >= 0);
	if (pid == 0) {
		int n = epoll_wait(out_ep, out, 4, 0);

		printf("forkshot: child %d %llu\n", n,
		       n > 0 ? (unsigned long long)out[0].data.u64 : 0ull);
		fflush(stdout);
		_exit(0);
	}
	printf("forkshot: child %d\n", wait_child(pid));
	P_REQUIRE(posix_spawn(&pid, "/bin/true", NULL, NULL, argv,
			      environ) == 0);
	printf("forkshot: spawned %d\n", wait_child(pid));
	pf.fd = out_ep;
	SHOW("forkshot: poll", poll(&pf, 1, 0), pf.revents);
	SHOW_WAIT("forkshot: wait", epoll_wait(out_ep, out, 4, 0), out[0].data.u64);
	close(e);
	close(in);
	close(out_ep);
}

/* One way the eventfd leaves the library's sight (see run_etfork). */
static void etfork_leave(int how)
{
	char *argv[] = { "true", NULL };
	pid_t pid;
	FILE *f;

	fflush(stdout);
	switch (how) {
	case 1:
		P_REQUIRE(posix_spawn(&pid, "/bin/true", NULL, NULL, argv,
				      environ) == 0);
		printf("etfork: spawned %d\n", wait_child(pid));
		break;
	case 2:
		printf("etfork: system %d\n", system("true"));
		break;
	case 3:
		f = popen("true", "r");
		P_REQUIRE(f != NULL);
		printf("etfork: popen %d\n", pclose(f));
		break;
	case 4:
		/* A fork shares the ueventfd; the child's exec demotes it
		 * (SHARED: its counter carried into the kernel fd that the
		 * parent's registrations watch). */
		pid = fork();
		P_REQUIRE(pid >= 0);
		if (pid == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		printf("etfork: forkexec %d\n", wait_child(pid));
		break;
	}
}

/* After the edge was taken, what each side sees: a wait, a poll of the
 * instance, then a write's edge. */
static void etfork_look(const char *who, int ep, int e)
{
	struct epoll_event out[4];
	struct pollfd pf = { .fd = ep, .events = POLLIN };
	uint64_t v = 1;
	int n;

	SHOW(who, poll(&pf, 1, 0), pf.revents);
	n = epoll_wait(ep, out, 4, 0);
	SHOW(who, n, n > 0 ? out[0].events : 0);
	P_REQUIRE(write(e, &v, 8) == 8);
	n = epoll_wait(ep, out, 4, 0);
	SHOW(who, n, n > 0 ? out[0].events : 0);
	n = epoll_wait(ep, out, 4, 0);
	SHOW(who, n, n > 0 ? out[0].events : 0);
}

/* F18: an edge-triggered registration of a ready eventfd whose event a
 * wait took: a fork (the counter shared, SHARED) or a spawn, system() or
 * popen() of a child that inherits the eventfd (DEMOTE) makes the
 * library's item a kernel registration, whose ADD would report the fd
 * again. */
static void run_etfork(void)
{
	static const uint32_t masks[] = { EPOLLIN | EPOLLET,
					  EPOLLIN | EPOLLOUT | EPOLLET,
					  EPOLLOUT | EPOLLET };

	for (int how = 0; how < 5; how++)
	for (int inherit = 0; inherit < 2; inherit++)
		for (unsigned m = 0; m < sizeof(masks) / sizeof(masks[0]); m++) {
			struct epoll_event ev = { .events = masks[m],
						  .data.u64 = 5 },
					   out[4];
			/* inherit: the instance too goes to the child (the
			 * spawn demotes it, DEMOTE in port.c). */
			int ep = epoll_create1(inherit ? 0 : EPOLL_CLOEXEC);
			/* 5: a demotion writes 4 more into the kernel fd. */
			int e = eventfd(5, EFD_NONBLOCK);
			pid_t pid;

			printf("etfork: how %d inherit %d mask %x\n", how,
			       inherit, masks[m]);
			P_REQUIRE(ep >= 0 && e >= 0);
			P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
			SHOW_WAIT("etfork: took", epoll_wait(ep, out, 4, 0),
			     out[0].events);
			if (how) {
				etfork_leave(how);
				etfork_look("etfork: after", ep, e);
			} else {
				fflush(stdout);
				pid = fork();
				P_REQUIRE(pid >= 0);
				if (pid == 0) {
					etfork_look("etfork: child", ep, e);
					fflush(stdout);
					_exit(0);
				}
				printf("etfork: child %d\n", wait_child(pid));
				etfork_look("etfork: parent", ep, e);
			}
			close(e);
			close(ep);
		}
	/* The same instance also holds a pipe, edge-triggered, its edge not
	 * taken (the settle's harvest takes it and must give it back), and
	 * a registration made through a dup since closed (edge-triggered:
	 * its number cannot give it back, so there is no harvest, and the
	 * wait that gets the ADD's report looks at the probe instead); after
	 * a fork, a write, then a spawn that demotes the instance: the
	 * write's edge survives. */
	for (int how = 0; how < 4; how++) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET },
				   out[8];
		int ep = epoll_create1(how ? 0 : EPOLL_CLOEXEC);
		int e = eventfd(5, EFD_NONBLOCK), p[2], q[2], d;
		uint64_t v = 1;
		pid_t pid;

		printf("etfork: others, how %d\n", how);
		P_REQUIRE(ep >= 0 && e >= 0 && pipe(p) == 0 && pipe(q) == 0);
		ev.data.u64 = 5;
		P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
		SHOW_WAIT("etfork: took", epoll_wait(ep, out, 8, 0), out[0].data.u64);
		P_REQUIRE(write(p[1], "x", 1) == 1);
		ev.data.u64 = 6;
		P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0);
		if (how % 3 == 0) {
			P_REQUIRE((d = dup(q[0])) >= 0);
			ev.data.u64 = 7;
			P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, d, &ev) == 0);
			P_REQUIRE(write(q[1], "y", 1) == 1);
			SHOW_WAIT("etfork: took q", epoll_wait(ep, out, 8, 0),
			     out[0].data.u64);
			close(d);
		}
		fflush(stdout);
		pid = fork();
		P_REQUIRE(pid >= 0);
		if (pid == 0)
			_exit(0);
		printf("etfork: child %d\n", wait_child(pid));
		if (how) {
			P_REQUIRE(write(e, &v, 8) == 8);
			etfork_leave(how);
		}
		for (int k = 0; k < 2; k++) {
			int n = epoll_wait(ep, out, 8, 0);
			uint64_t sum = 0;

			for (int i = 0; i < n; i++)
				sum = sum * 16 + out[i].data.u64;
			SHOW("etfork: after", n, sum);
		}
		close(p[0]);
		close(p[1]);
		close(q[0]);
		close(q[1]);
		close(e);
		close(ep);
	}
}

/* evbits: the kernel's answer to every bit of the mask (F11).  The kernel
 * ignores a bit it does not define, but refuses (EINVAL) any bit outside
 * EPOLLEXCLUSIVE_OK_BITS with EPOLLEXCLUSIVE, and EPOLLEXCLUSIVE on MOD or
 * on MOD of an exclusive registration; it never reports an undefined bit
 * in revents.  One line per bit, fd and path: every answer and wait. */
typedef int (*eb_ctl_fn)(int, int, int, struct epoll_event *);

static int eb_ctl_libc(int ep, int op, int fd, struct epoll_event *ev)
{
	return epoll_ctl(ep, op, fd, ev);
}

static int eb_ctl_sys(int ep, int op, int fd, struct epoll_event *ev)
{
	return (int)syscall(SYS_epoll_ctl, ep, op, fd, ev);
}

static void eb_ctl(eb_ctl_fn ctl, int ep, int op, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = 0x5a };
	int r;

	errno = 0;
	r = ctl(ep, op, fd, &ev);
	printf(" %s %x: %d %d",
	       op == EPOLL_CTL_ADD ? "add" : op == EPOLL_CTL_MOD ? "mod" : "del",
	       events, r, r < 0 ? errno : 0);
}

static void eb_wait(int ep)
{
	struct epoll_event out[2];
	int n;

	memset(out, 0, sizeof(out));
	n = epoll_wait(ep, out, 2, 0);
	printf(" wait %d", n);
	for (int i = 0; i < n; i++)
		printf(" %x/%llx", out[i].events,
		       (unsigned long long)out[i].data.u64);
}

static void run_evbits(void)
{
	static const struct {
		const char *name;
		eb_ctl_fn ctl;
	} paths[] = { { "libc", eb_ctl_libc }, { "syscall", eb_ctl_sys } };
	int ep = epoll_create1(0), e = eventfd(1, EFD_NONBLOCK), p[2];
	const char *const names[] = { "eventfd", "pipe-r", "pipe-w" };
	int fd[3];

	P_REQUIRE(ep >= 0 && e >= 0 && pipe(p) == 0);
	P_REQUIRE(write(p[1], "x", 1) == 1);
	fd[0] = e;
	fd[1] = p[0];
	fd[2] = p[1];
	for (size_t w = 0; w < 2; w++)
		for (int f = 0; f < 3; f++)
			for (int b = 0; b < 32; b++) {
				eb_ctl_fn ctl = paths[w].ctl;
				uint32_t m1 = EPOLLIN | (1u << b);
				uint32_t m2 = m1 | EPOLLEXCLUSIVE;

				printf("evbits: %s %s bit %d:", paths[w].name,
				       names[f], b);
				/* ADD, waits (twice: EPOLLET, EPOLLONESHOT),
				 * MOD to the same and to exclusive. */
				eb_ctl(ctl, ep, EPOLL_CTL_ADD, fd[f], m1);
				eb_wait(ep);
				eb_wait(ep);
				eb_ctl(ctl, ep, EPOLL_CTL_MOD, fd[f], m1);
				eb_wait(ep);
				eb_ctl(ctl, ep, EPOLL_CTL_MOD, fd[f], m2);
				eb_ctl(ctl, ep, EPOLL_CTL_DEL, fd[f], 0);
				/* MOD of a plain registration to the bit. */
				eb_ctl(ctl, ep, EPOLL_CTL_ADD, fd[f], EPOLLIN);
				eb_ctl(ctl, ep, EPOLL_CTL_MOD, fd[f], m1);
				eb_wait(ep);
				eb_ctl(ctl, ep, EPOLL_CTL_DEL, fd[f], 0);
				/* 1<<27 with EPOLLEXCLUSIVE on ADD is the
				 * round-robin proposal's bit, taken by design
				 * (wrap_epoll.c): the one known difference. */
				if (b == 27) {
					printf(" exclusive: by design\n");
					continue;
				}
				/* ADD exclusive, then MOD of it (EINVAL). */
				eb_ctl(ctl, ep, EPOLL_CTL_ADD, fd[f], m2);
				eb_wait(ep);
				eb_ctl(ctl, ep, EPOLL_CTL_MOD, fd[f], m1);
				eb_ctl(ctl, ep, EPOLL_CTL_DEL, fd[f], 0);
				printf("\n");
			}
	close(p[0]);
	close(p[1]);
	close(e);
	close(ep);
}

/* The ways the cases below go on after their setup (how): 0 nothing, 1 a
 * fork whose child exits, 2 a fork whose child execs /bin/true, 3 a fork
 * whose child goes on (and the parent waits for it, silent), 4 a vfork
 * whose child execs /bin/true (the parent demotes the objects an exec
 * would keep, before the vfork: VFORK in wrap_exec.c), 5 an io_uring setup
 * (the preload demotes every object and makes the process PLAIN: the
 * objects made after it are the kernel's, so it comes last, and only its
 * first case tests anything). */
#define P_HOWS 6
static const char *const how_name[P_HOWS] = {
	"nofork", "fork", "forkexec", "child", "vforkexec", "iouring",
};

/* Set in the child of how 3, which ends the case with exit(). */
static bool in_child;

/* Returns true in the process that goes on. */
static bool go_on(int how)
{
	struct io_uring_params prm;
	pid_t pid;
	int ring;

	fflush(stdout);
	switch (how) {
	case 0:
		return true;
	case 5:
		memset(&prm, 0, sizeof(prm));
		ring = (int)syscall(SYS_io_uring_setup, 4, &prm);
		if (ring >= 0)
			close(ring);
		return true;
	case 4:
		pid = vfork();
		if (pid == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		P_REQUIRE(wait_child(pid) == 0);
		return true;
	}
	pid = fork();
	if (pid == 0) {
		if (how == 2)
			execl("/bin/true", "true", (char *)NULL);
		if (how == 3)
			return in_child = true;
		_exit(how == 2 ? 127 : 0);
	}
	P_REQUIRE(wait_child(pid) == 0);
	return how != 3;
}

static void show_wait(const char *what, int ep)
{
	struct epoll_event o[4];
	int n = epoll_wait(ep, o, 4, 0);

	printf("%s: wait %d", what, n);
	for (int i = 0; i < n; i++)
		printf(" {%#x %llu}", o[i].events,
		       (unsigned long long)o[i].data.u64);
	printf("\n");
}

static void show_ctl(const char *what, int ep, int op, int fd, uint32_t events,
		     uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };
	int r;

	errno = 0;
	r = epoll_ctl(ep, op, fd, &ev);
	printf("%s: %d %s\n", what, r, r ? strerror(errno) : "");
}

/* F19: the registration's key is (file, number), and it lives while the
 * file does. */
static void closereg_one(int how, bool inst, uint32_t fl)
{
	int ep = epoll_create1(0);
	int e = inst ? epoll_create1(0) : eventfd(1, 0);
	int d = dup(e), x = eventfd(1, 0);

	P_REQUIRE(ep >= 0 && e >= 0 && d >= 0 && x >= 0);
	printf("closereg %s %s %#x\n", how_name[how], inst ? "ep" : "efd", fl);
	if (inst) /* something in it: a ready instance */
		P_REQUIRE(epoll_ctl(e, EPOLL_CTL_ADD, x,
			&(struct epoll_event){ .events = EPOLLIN }) == 0);
	show_ctl("add d", ep, EPOLL_CTL_ADD, d, EPOLLIN | fl, 5);
	close(d);
	if (go_on(how)) {
		show_wait("wait", ep);
		show_ctl("del e", ep, EPOLL_CTL_DEL, e, 0, 0);
		show_ctl("mod e", ep, EPOLL_CTL_MOD, e, EPOLLIN, 6);
		show_ctl("add e", ep, EPOLL_CTL_ADD, e, EPOLLIN, 6);
		show_wait("both", ep);
		/* The closed number is the file's again: the key's. */
		P_REQUIRE(dup2(e, d) == d);
		show_ctl("add d again", ep, EPOLL_CTL_ADD, d, EPOLLIN, 7);
		show_ctl("del d", ep, EPOLL_CTL_DEL, d, 0, 0);
		show_ctl("del e", ep, EPOLL_CTL_DEL, e, 0, 0);
		show_wait("none", ep);
		close(d);
	}
	close(x);
	close(e);
	close(ep);
	if (in_child)
		exit(p_end());
}

static void run_closereg(void)
{
	static const uint32_t fls[] = { 0, EPOLLET, EPOLLONESHOT };

	for (int how = 0; how < P_HOWS; how++)
		for (int inst = 0; inst < 2; inst++)
			for (size_t f = 0; f < 3; f++)
				closereg_one(how, inst, fls[f]);
}

/* F20: a forked child's exec leaves the epoll files it shares with the
 * parent as the parent uses them. */
static void ctlnest_one(int how, uint32_t fl, bool inner_first)
{
	int c0 = inner_first ? epoll_create1(0) : -1;
	int b = epoll_create1(0), c = inner_first ? c0 : epoll_create1(0);
	int x = eventfd(1, 0);
	uint64_t v;

	P_REQUIRE(b >= 0 && c >= 0 && x >= 0);
	printf("ctlnest %s %#x%s\n", how_name[how], fl,
	       inner_first ? " inner first" : "");
	show_ctl("b add c", b, EPOLL_CTL_ADD, c, EPOLLIN | fl, 9);
	if (fl) { /* the one-shot taken before */
		show_ctl("c add x", c, EPOLL_CTL_ADD, x, EPOLLIN, 3);
		show_wait("b", b);
	}
	if (go_on(how)) {
		int y = eventfd(1, 0);

		P_REQUIRE(y >= 0);
		show_ctl("c add y", c, EPOLL_CTL_ADD, y, EPOLLIN, 4);
		show_wait("b", b);
		show_wait("b again", b);
		show_wait("c", c);
		P_REQUIRE(read(y, &v, 8) == 8);
		if (fl)
			P_REQUIRE(read(x, &v, 8) == 8);
		show_wait("b drained", b);
		P_REQUIRE(write(y, &v, 8) == 8);
		show_wait("b written", b);
		close(y);
	}
	close(x);
	close(c);
	close(b);
	if (in_child)
		exit(p_end());
}

static void run_ctlnest(void)
{
	/* inner first: the inner one has the lower number, so a demotion of
	 * every object (PLAIN) demotes it before its holder. */
	for (int how = 0; how < P_HOWS; how++)
		for (int first = 0; first < 2; first++) {
			ctlnest_one(how, 0, first);
			ctlnest_one(how, EPOLLONESHOT, first);
		}
}

/* F21: closing an instance's last number drops its registrations in the
 * instances that hold it; one kept open through a dup keeps its
 * registration under the closed number, which another file then has. */
static void closenest_one(int how, bool keep)
{
	int b = epoll_create1(0), c = epoll_create1(0), x = eventfd(1, 0);
	int p[2], cc = -1;

	P_REQUIRE(b >= 0 && c >= 0 && x >= 0 && pipe(p) == 0);
	printf("closenest %s%s\n", how_name[how], keep ? " kept" : "");
	show_ctl("b add c", b, EPOLL_CTL_ADD, c, EPOLLIN, 9);
	show_ctl("c add x", c, EPOLL_CTL_ADD, x, EPOLLIN, 3);
	if (keep)
		P_REQUIRE((cc = dup(c)) >= 0);
	close(c);
	P_REQUIRE(dup2(p[1], c) == c);
	show_ctl("b add pipe", b, EPOLL_CTL_ADD, c, EPOLLIN | EPOLLOUT, 4);
	if (go_on(how)) {
		/* Both ends' readiness: the reader's end too (ERR). */
		show_wait("b", b);
		close(p[0]);
		p[0] = -1;
		show_wait("b, read end closed", b);
		if (cc >= 0)
			show_ctl("b mod pipe", b, EPOLL_CTL_MOD, c, EPOLLOUT, 8);
		show_wait("b after", b);
	}
	if (cc >= 0)
		close(cc);
	if (p[0] >= 0)
		close(p[0]);
	close(p[1]);
	close(c);
	close(x);
	close(b);
	if (in_child)
		exit(p_end());
}

static void run_closenest(void)
{
	/* Not kept with a demotion (vforkexec): the instance's registration
	 * under a number the pipe now holds cannot be named to give it the
	 * program's data back (design.md, DEMOTE: what cannot be carried). */
	for (int how = 0; how < P_HOWS; how++) {
		closenest_one(how, false);
		if (how != 4)
			closenest_one(how, true);
	}
}

static void run_kernhold(void)
{
	int e = eventfd(5, EFD_NONBLOCK), in = epoll_create1(EPOLL_CLOEXEC);
	int k = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 };
	char *av[] = { "true", NULL };
	struct pollfd pf = { .events = POLLIN };
	uint64_t v;
	pid_t pid;

	P_REQUIRE(e >= 0 && in >= 0 && k >= 0);
	P_REQUIRE(epoll_ctl(in, EPOLL_CTL_ADD, e, &ev) == 0);
	P_REQUIRE(posix_spawn(&pid, "/bin/true", NULL, NULL, av, environ) == 0);
	printf("kernhold: child %d\n", wait_child(pid));
	for (int et = 0; et < 2; et++) {
		ev.events = EPOLLIN | (et ? EPOLLET : 0);
		show_ctl("kernhold: add", k, et ? EPOLL_CTL_MOD : EPOLL_CTL_ADD,
			 in, ev.events, 2);
		pf.fd = k;
		SHOW("kernhold: poll the kernel epoll", poll(&pf, 1, 0),
		     pf.revents);
		if (!et)
			P_REQUIRE(read(e, &v, 8) == 8);
		else
			P_REQUIRE(write(e, &v, 8) == 8 && read(e, &v, 8) == 8);
		SHOW("kernhold: poll it, read", poll(&pf, 1, 0), pf.revents);
		show_wait("kernhold: its wait", k);
		pf.fd = in;
		SHOW("kernhold: poll the instance", poll(&pf, 1, 0),
		     pf.revents);
	}
	close(k);
	close(in);
	close(e);
}

static void run_keyreuse(void)
{
	char *av[] = { "true", NULL };
	pid_t pid;

	/* 0, 1: the eventfd inherited (its demotion moves the registration),
	 * level and edge-triggered; 2: only the epoll (the epoll's). */
	for (int how = 0; how < 3; how++) {
		int ep = epoll_create1(0);
		int e = eventfd(1, EFD_NONBLOCK | (how == 2 ? EFD_CLOEXEC : 0));
		int other, again;

		P_REQUIRE(ep >= 0 && e >= 0);
		printf("keyreuse %d\n", how);
		show_ctl("keyreuse: add", ep, EPOLL_CTL_ADD, e,
			 how == 1 ? EPOLLIN | EPOLLET : EPOLLOUT, 7);
		P_REQUIRE((again = fcntl(e, how == 2 ? F_DUPFD_CLOEXEC : F_DUPFD,
					 0)) >= 0);
		close(e);
		/* The registration's number is another file's now. */
		P_REQUIRE((other = epoll_create1(0)) == e);
		P_REQUIRE(posix_spawn(&pid, "/bin/true", NULL, NULL, av,
				      environ) == 0);
		printf("keyreuse: child %d\n", wait_child(pid));
		show_wait("keyreuse: wait", ep);
		show_ctl("keyreuse: del through another number", ep,
			 EPOLL_CTL_DEL, again, 0, 0);
		close(other);
		P_REQUIRE(dup2(again, e) == e);
		show_ctl("keyreuse: del through its number", ep, EPOLL_CTL_DEL,
			 e, 0, 0);
		show_wait("keyreuse: after", ep);
		close(e);
		close(again);
		close(ep);
	}
}

static void run_keytwo(void)
{
	char *av[] = { "true", NULL };
	int bad = 0;
	pid_t pid;

	for (int i = 0; i < 20; i++) {
		int ep = epoll_create1(EPOLL_CLOEXEC), e = eventfd(0, 0);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT };
		struct epoll_event o[4];
		int again, in, n;

		P_REQUIRE(ep >= 0 && e >= 0);
		ev.data.u64 = 0xa;
		P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
		/* The eventfd inherited: its registration the kernel's. */
		P_REQUIRE(posix_spawn(&pid, "/bin/true", NULL, NULL, av,
				      environ) == 0 &&
			  wait_child(pid) == 0);
		P_REQUIRE((again = fcntl(e, F_DUPFD_CLOEXEC, 0)) >= 0);
		close(e);
		P_REQUIRE((in = epoll_create1(EPOLL_CLOEXEC)) == e);
		ev.data.u64 = 0xb;
		P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, in, &ev) == 0);
		/* Now the instance inherited: its demotion. */
		P_REQUIRE(fcntl(ep, F_SETFD, 0) == 0);
		P_REQUIRE(posix_spawn(&pid, "/bin/true", NULL, NULL, av,
				      environ) == 0 &&
			  wait_child(pid) == 0);
		n = epoll_wait(ep, o, 4, 0);
		if (n != 1 || o[0].events != EPOLLOUT || o[0].data.u64 != 0xa) {
			if (!bad)
				printf("keytwo: round %d: wait %d {%#x %llu}\n",
				       i, n, n > 0 ? o[0].events : 0,
				       n > 0 ? (unsigned long long)o[0].data.u64
					     : 0ull);
			bad++;
		}
		close(in);
		close(again);
		close(ep);
	}
	printf("keytwo: %d rounds of 20 wrong\n", bad);
}

static void run_kheldlt(void)
{
	char *av[] = { "true", NULL };
	int a = epoll_create1(0), b = epoll_create1(EPOLL_CLOEXEC);
	int x = eventfd(3, EFD_NONBLOCK | EFD_CLOEXEC);
	int y = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct pollfd pf = { .fd = a, .events = POLLIN };
	uint64_t v = 1;
	pid_t pid;

	P_REQUIRE(a >= 0 && b >= 0 && x >= 0 && y >= 0);
	/* a inherited by the spawn: a kernel epoll from then on. */
	P_REQUIRE(posix_spawn(&pid, "/bin/true", NULL, NULL, av, environ) ==
			  0 &&
		  wait_child(pid) == 0);
	show_ctl("kheldlt: a holds b", a, EPOLL_CTL_ADD, b, EPOLLIN, 1);
	show_ctl("kheldlt: b holds x", b, EPOLL_CTL_ADD, x, EPOLLIN, 2);
	SHOW("kheldlt: poll a", poll(&pf, 1, 0), pf.revents);
	P_REQUIRE(read(x, &v, 8) == 8);
	SHOW("kheldlt: x read empty, poll a", poll(&pf, 1, 0), pf.revents);
	show_wait("kheldlt: wait a", a);
	P_REQUIRE(write(x, &v, 8) == 8);
	SHOW("kheldlt: x written, poll a", poll(&pf, 1, 0), pf.revents);
	show_ctl("kheldlt: b dels x", b, EPOLL_CTL_DEL, x, 0, 0);
	SHOW("kheldlt: x deleted, poll a", poll(&pf, 1, 0), pf.revents);
	show_ctl("kheldlt: b holds x one-shot", b, EPOLL_CTL_ADD, x,
		 EPOLLIN | EPOLLONESHOT, 3);
	show_wait("kheldlt: wait b", b);
	SHOW("kheldlt: x taken, poll a", poll(&pf, 1, 0), pf.revents);
	/* Two items, one emptied, the other still ready. */
	show_ctl("kheldlt: b holds y", b, EPOLL_CTL_ADD, y, EPOLLIN, 4);
	show_ctl("kheldlt: b mods x", b, EPOLL_CTL_MOD, x, EPOLLIN, 5);
	P_REQUIRE(write(y, &v, 8) == 8);
	P_REQUIRE(read(x, &v, 8) == 8);
	SHOW("kheldlt: x read, y not, poll a", poll(&pf, 1, 0), pf.revents);
	P_REQUIRE(read(y, &v, 8) == 8);
	SHOW("kheldlt: both read, poll a", poll(&pf, 1, 0), pf.revents);
	show_wait("kheldlt: wait b", b);
	close(y);
	close(x);
	close(b);
	close(a);
}

static void run_keyclose(void)
{
	int stale = 0, nohup = 0;

	for (int i = 0; i < 50; i++) {
		int ep = epoll_create1(0), e = eventfd(1, EFD_NONBLOCK), p[2];
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 9 };
		struct epoll_event o[4];
		struct pollfd pf = { .events = POLLIN };
		int again, n;
		FILE *f;

		P_REQUIRE(ep >= 0 && e >= 0);
		P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) == 0);
		P_REQUIRE((again = dup(e)) >= 0);
		close(e);
		P_REQUIRE(pipe(p) == 0 && p[0] == e);
		/* Demotes the eventfd, its registration keyed by p[0]'s
		 * number. */
		P_REQUIRE((f = fdopen(dup(again), "r")) != NULL);
		fclose(f);
		close(again);
		close(p[1]);
		n = epoll_wait(ep, o, 4, 0);
		pf.fd = p[0];
		stale += n != 0;
		nohup += poll(&pf, 1, 0) != 1 || !(pf.revents & POLLHUP);
		close(p[0]);
		close(ep);
	}
	printf("keyclose: closed eventfd reported %d, no POLLHUP %d\n", stale,
	       nohup);
}

static void scm_send(int fd)
{
	int sv[2], got;
	char c = 'x', cb[CMSG_SPACE(sizeof(int))];
	struct iovec io = { &c, 1 };
	struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1,
			    .msg_control = cb, .msg_controllen = sizeof(cb) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	P_REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	P_REQUIRE(sendmsg(sv[0], &m, 0) == 1 && recvmsg(sv[1], &m, 0) == 1);
	memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof(int));
	close(got);
	close(sv[0]);
	close(sv[1]);
}

static void run_scmet(void)
{
	int ep = epoll_create1(0), in = epoll_create1(0);
	int x = eventfd(0, EFD_NONBLOCK);
	uint64_t one = 1;

	P_REQUIRE(ep >= 0 && in >= 0 && x >= 0);
	show_ctl("scmet: inner add", in, EPOLL_CTL_ADD, x, EPOLLIN, 7);
	show_ctl("scmet: outer add", ep, EPOLL_CTL_ADD, in, EPOLLIN | EPOLLET,
		 8);
	scm_send(in);
	show_wait("scmet: sent", ep);
	for (int i = 0; i < 3; i++) {
		P_REQUIRE(write(x, &one, 8) == 8);
		show_wait("scmet: a write", ep);
		show_wait("scmet: again", ep);
	}
	close(x);
	close(in);
	close(ep);
}

/* F24: after a fork both processes use one epoll file. */
static void forkadd_child(int ep, int in, int ip)
{
	int e = eventfd(0, EFD_NONBLOCK), e2 = eventfd(2, 0);
	int own = epoll_create1(0);
	uint64_t v = 1;

	P_REQUIRE(e >= 0 && e2 >= 0 && own >= 0);
	show_ctl("child: add eventfd", ep, EPOLL_CTL_ADD, e, EPOLLIN | EPOLLET, 5);
	show_wait("child: before its write", ep);
	P_REQUIRE(write(e, &v, 8) == 8);
	show_wait("child: after its write", ep);
	show_wait("child: again", ep);
	P_REQUIRE(write(e, &v, 8) == 8);
	show_wait("child: a second write (an edge)", ep);
	show_ctl("child: mod eventfd", ep, EPOLL_CTL_MOD, e, EPOLLIN, 6);
	show_wait("child: level", ep);
	show_ctl("child: del eventfd", ep, EPOLL_CTL_DEL, e, 0, 0);
	show_wait("child: deleted", ep);
	show_ctl("child: add eventfd again", ep, EPOLL_CTL_ADD, e, EPOLLIN, 7);
	show_ctl("child: add the inherited instance", ep, EPOLL_CTL_ADD, in,
		 EPOLLIN, 42);
	show_ctl("child: mod the nested one", ep, EPOLL_CTL_MOD, ip, EPOLLIN,
		 43);
	show_ctl("child: own instance", own, EPOLL_CTL_ADD, e2, EPOLLIN, 8);
	show_ctl("child: add its own instance", ep, EPOLL_CTL_ADD, own,
		 EPOLLIN, 44);
	show_wait("child: all", ep);
	/* Its demotion gives every registration the program's data. */
	go_on(5);
	show_wait("child: after io_uring", ep);
	fflush(stdout);
	_exit(0);
}

/* A forked child's demotion of the instance (io_uring's, a spawn's) must
 * leave the parent's instance working: its ueventfd still wakes it. */
static void forkadd_demote(int how)
{
	int ep = epoll_create1(0), e, go[2];
	struct pollfd pf = { .events = POLLIN };
	uint64_t v = 1;
	char c;
	pid_t pid;

	P_REQUIRE(ep >= 0 && pipe(go) == 0);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		/* After the parent's ADD of an eventfd made after the fork. */
		P_REQUIRE(read(go[0], &c, 1) == 1);
		go_on(how);
		show_wait("demote: child", ep);
		fflush(stdout);
		_exit(0);
	}
	P_REQUIRE((e = eventfd(0, EFD_NONBLOCK)) >= 0);
	show_ctl("demote: add e", ep, EPOLL_CTL_ADD, e, EPOLLIN, 11);
	P_REQUIRE(write(go[1], "g", 1) == 1);
	printf("demote %d: child %d\n", how, wait_child(pid));
	close(go[0]);
	close(go[1]);
	P_REQUIRE(write(e, &v, 8) == 8);
	pf.fd = ep;
	SHOW("demote: parent's poll", poll(&pf, 1, 0), pf.revents);
	show_wait("demote: parent", ep);
	pf.fd = ep;
	SHOW("demote: parent's poll after", poll(&pf, 1, 0), pf.revents);
	close(e);
	close(ep);
}

/* The child ADDs an instance both have into another: the parent's ueventfd
 * made after the fork, in the first, still reaches the parent's waits. */
static void forkadd_nest(void)
{
	int ep = epoll_create1(0), in = epoll_create1(0), z, go[2];
	struct pollfd pf = { .events = POLLIN };
	uint64_t v = 1;
	char c;
	pid_t pid;

	P_REQUIRE(ep >= 0 && in >= 0 && pipe(go) == 0);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		P_REQUIRE(read(go[0], &c, 1) == 1);
		show_ctl("nest: child: add in", ep, EPOLL_CTL_ADD, in, EPOLLIN,
			 42);
		fflush(stdout);
		_exit(0);
	}
	P_REQUIRE((z = eventfd(0, EFD_NONBLOCK)) >= 0);
	show_ctl("nest: add z", in, EPOLL_CTL_ADD, z, EPOLLIN, 5);
	P_REQUIRE(write(z, &v, 8) == 8);
	P_REQUIRE(write(go[1], "g", 1) == 1);
	printf("nest: child %d\n", wait_child(pid));
	/* A wait that sleeps: only the doorbell's ring can end it. */
	{
		struct epoll_event o[2];
		int n = epoll_wait(ep, o, 2, 5000);

		printf("nest: wait %d %llu\n", n,
		       n > 0 ? (unsigned long long)o[0].data.u64 : 0ull);
	}
	pf.fd = in;
	SHOW("nest: poll in", poll(&pf, 1, 0), pf.revents);
	P_REQUIRE(read(z, &v, 8) == 8);
	close(go[0]);
	close(go[1]);
	close(z);
	close(in);
	close(ep);
}

static uint64_t fp_read(int fd)
{
	uint64_t v = 0;

	P_REQUIRE(read(fd, &v, 8) == 8);
	return v;
}

static void fp_write(int fd, uint64_t v)
{
	P_REQUIRE(write(fd, &v, 8) == 8);
}

static short fp_poll(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN | POLLOUT };

	return poll(&pf, 1, 0) == 1 ? pf.revents : 0;
}

/* The child of forkpoll: B of the handoffs. */
static void forkpoll_child(int a2b, int b2a, int x, int y)
{
	int ep = epoll_create1(0), n;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 9 }, o;
	fd_set r;
	struct timeval tv = { 0, 0 };

	for (int i = 0; i < 100; i++) {
		(void)fp_read(a2b);
		fp_write(x, 2);
		if (fp_read(x) != 2)
			_exit(3);
		fp_write(b2a, 1);
	}
	(void)fp_read(a2b);
	fp_write(x, 3); /* the parent polls it */
	fp_write(b2a, 1);
	(void)fp_read(a2b);
	printf("forkpoll: child read x %llu\n", (unsigned long long)fp_read(x));
	fflush(stdout);
	fp_write(b2a, 1);
	(void)fp_read(a2b);
	fp_write(x, 1);
	fp_write(b2a, 1);
	/* y: the parent wrote 5 under NOPOLL. */
	(void)fp_read(a2b);
	FD_ZERO(&r);
	FD_SET(y, &r);
	n = select(y + 1, &r, NULL, NULL, &tv);
	printf("forkpoll: child select y %d %d\n", n, n > 0 && FD_ISSET(y, &r));
	P_REQUIRE(ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, y, &ev) == 0);
	printf("forkpoll: child epoll y %d\n", epoll_wait(ep, &o, 1, 0));
	printf("forkpoll: child read y %llu\n", (unsigned long long)fp_read(y));
	printf("forkpoll: child epoll y %d poll %#x\n", epoll_wait(ep, &o, 1, 0),
	       fp_poll(y));
	fflush(stdout);
	close(ep);
	fp_write(b2a, 1);
	_exit(0);
}

static void run_forkpoll(void)
{
	int a2b = eventfd(0, EFD_SEMAPHORE), b2a = eventfd(0, EFD_SEMAPHORE);
	int x = eventfd(0, 0), y = eventfd(0, 0);
	pid_t pid;

	P_REQUIRE(a2b >= 0 && b2a >= 0 && x >= 0 && y >= 0);
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		forkpoll_child(a2b, b2a, x, y);
	for (int i = 0; i < 100; i++) {
		fp_write(a2b, 1);
		(void)fp_read(b2a);
	}
	fp_write(a2b, 1);
	(void)fp_read(b2a);
	printf("forkpoll: parent poll x %#x\n", fp_poll(x));
	fflush(stdout);
	fp_write(a2b, 1);
	(void)fp_read(b2a); /* the child read x */
	printf("forkpoll: parent poll x %#x\n", fp_poll(x));
	fflush(stdout);
	fp_write(a2b, 1);
	(void)fp_read(b2a); /* the child wrote 1 */
	printf("forkpoll: parent poll x %#x\n", fp_poll(x));
	printf("forkpoll: parent read x %llu\n", (unsigned long long)fp_read(x));
	printf("forkpoll: parent poll x %#x\n", fp_poll(x));
	fp_write(y, 5);
	fflush(stdout);
	fp_write(a2b, 1);
	(void)fp_read(b2a); /* the child's looks at y */
	printf("forkpoll: child %d\n", wait_child(pid));
	close(a2b);
	close(b2a);
	close(x);
	close(y);
}

static void run_forkadd(void)
{
	int ep = epoll_create1(0), in = epoll_create1(0), ip = epoll_create1(0);
	int x = eventfd(1, 0), y = eventfd(1, 0);
	struct pollfd pf = { .fd = ep, .events = POLLIN };
	pid_t pid;

	P_REQUIRE(ep >= 0 && in >= 0 && ip >= 0 && x >= 0 && y >= 0);
	show_ctl("add x to in", in, EPOLL_CTL_ADD, x, EPOLLIN, 1);
	show_ctl("add y to ip", ip, EPOLL_CTL_ADD, y, EPOLLIN, 2);
	show_ctl("add ip to ep", ep, EPOLL_CTL_ADD, ip, EPOLLIN, 3);
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		forkadd_child(ep, in, ip);
	printf("forkadd: child %d\n", wait_child(pid));
	SHOW("parent: poll", poll(&pf, 1, 0), pf.revents);
	show_wait("parent", ep);
	show_ctl("parent: del in", ep, EPOLL_CTL_DEL, in, 0, 0);
	show_ctl("parent: mod ip", ep, EPOLL_CTL_MOD, ip, EPOLLIN, 45);
	show_wait("parent: after", ep);
	close(x);
	close(y);
	close(in);
	close(ip);
	close(ep);
	forkadd_demote(5);
	forkadd_demote(4);
	forkadd_nest();
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*run)(void);
	} tests[] = {
		{ "numbers", run_numbers },   { "closeloop", run_closeloop },
		{ "rlimit", run_rlimit },     { "syscall", run_syscall },
		{ "rw2", run_rw2 },	      { "fionbio", run_fionbio },
		{ "fdopen", run_fdopen },     { "execveat", run_execveat },
		{ "vfork", run_vfork },	      { "iouring", run_iouring },
		{ "aio", run_aio },	      { "pollep", run_pollep },
		{ "unshare", run_unshare },   { "vforkclose", run_vforkclose },
		{ "selecttop", run_selecttop }, { "forkexec", run_forkexec },
		{ "etfork", run_etfork },     { "forkshot", run_forkshot },
		{ "nestgone", run_nestgone },
		{ "nestkey", run_nestkey },
		{ "evbits", run_evbits },
		{ "closereg", run_closereg }, { "ctlnest", run_ctlnest },
		{ "closenest", run_closenest }, { "kernhold", run_kernhold },
		{ "forkpoll", run_forkpoll }, { "forkadd", run_forkadd }, { "keyreuse", run_keyreuse },
		{ "keyclose", run_keyclose }, { "scmet", run_scmet },
		{ "keytwo", run_keytwo }, { "kheldlt", run_kheldlt },
		{ "aliases", run_aliases }, { "aiofd", run_aiofd },
	};

	self = argv[0];
	if (argc == 3 && !strcmp(argv[1], "child"))
		return child_read(atoi(argv[2]));
	if (argc != 2)
		P_SKIP("usage: p_paths TEST");
	/* Made before the watchdog and the fd count, so that the objects of
	 * the test, not stdio, are what is counted. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int fd = 0; fd < 64; fd++)
		at_start[fd] = fcntl(fd, F_GETFD) >= 0;
	p_begin(60);
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!strcmp(argv[1], tests[i].name)) {
			tests[i].run();
			return p_end();
		}
	P_SKIP("unknown test");
}
