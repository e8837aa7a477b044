/*
 * t_fork: uepoll objects across fork() and exec (docs/reliability.md,
 * "fork and exec"; uepoll.h).
 *
 * After fork() the child holds the parent's ueventfds and copies of its
 * instances: a ueventfd's counter is shared with the child, as a kernel
 * eventfd's is (SHARED), an instance's userspace state (registrations,
 * ready queue) is copied and from then on evolves separately in each
 * process, and the kernel fds are shared as any fd is.  Supported:
 *  - the child uses the objects while the parent leaves its own alone (or
 *    the other way round): ueventfds go on from their value at fork(),
 *    instances deliver, nesting works; the parent finds the counters as
 *    the child left them, and its objects keep working afterwards, a
 *    blocking wait included;
 *  - the child closes its copies with uepoll_close(): the parent's objects
 *    are unaffected;
 *  - exec: ueventfd(EFD_CLOEXEC) and uepoll_create1(EPOLL_CLOEXEC) fds are
 *    closed by exec, the others stay open, as the kernel's; an instance's
 *    private doorbell never crosses exec.  The exec'd program sees exactly
 *    the fds the parent had without FD_CLOEXEC.
 */
#include "testlib.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

static int add(int ep, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return uepoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* Sorted data of the events a zero-timeout wait reports, as a bit mask. */
static unsigned waitmask(int ep, int timeout)
{
	struct epoll_event ev[16];
	int n = uepoll_wait(ep, ev, 16, timeout);
	unsigned m = 0;

	for (int i = 0; i < n; i++)
		m |= 1u << ev[i].data.u64;
	return n < 0 ? 0x80000000u : m;
}

static int wait_child(pid_t pid)
{
	int st;

	REQUIRE(waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

struct objs {
	int ep, inner, efd, efd2, p[2];
};

static void objs_open(struct objs *o)
{
	o->ep = uepoll_create1(0);
	o->inner = uepoll_create1(0);
	o->efd = ueventfd(5, EFD_NONBLOCK);
	o->efd2 = ueventfd(0, EFD_NONBLOCK);
	REQUIRE(o->ep >= 0 && o->inner >= 0 && o->efd >= 0 && o->efd2 >= 0);
	REQUIRE(pipe2(o->p, O_NONBLOCK) == 0);
	CHECK_EQ(add(o->ep, o->efd, EPOLLIN, 1), 0);
	CHECK_EQ(add(o->inner, o->efd2, EPOLLIN, 2), 0);
	CHECK_EQ(add(o->ep, o->inner, EPOLLIN, 3), 0);
	CHECK_EQ(add(o->ep, o->p[0], EPOLLIN, 4), 0);
}

static void objs_close(struct objs *o)
{
	CHECK_EQ(uepoll_close(o->ep), 0);
	CHECK_EQ(uepoll_close(o->inner), 0);
	CHECK_EQ(uepoll_close(o->efd), 0);
	CHECK_EQ(uepoll_close(o->efd2), 0);
	CHECK_EQ(close(o->p[0]), 0);
	CHECK_EQ(close(o->p[1]), 0);
}

struct writer {
	int fd, tid;
};

static void *write_when_asleep(void *arg)
{
	struct writer *w = arg;

	t_wait_sleeping(w->tid, 5000);
	CHECK_EQ(ueventfd_write(w->fd, 1), 0);
	return NULL;
}

/* The parent's objects after the child is gone: alive, the ueventfds
 * sharing their counters with the child as kernel eventfds do (efd holds
 * efd_count: 5, less what the child took). */
static void check_parent(struct objs *o, eventfd_t efd_count)
{
	struct writer w = { o->efd2, t_gettid() };
	pthread_t th;
	eventfd_t v = 0;

	if (efd_count) {
		CHECK_EQ(waitmask(o->ep, 0), 1u << 1); /* only efd */
		CHECK_EQ(ueventfd_read(o->efd, &v), 0);
		CHECK_EQ(v, efd_count);
	} else {
		CHECK_EQ(ueventfd_read(o->efd, &v), -1);
		CHECK_EQ(errno, EAGAIN);
	}
	CHECK_EQ(waitmask(o->ep, 0), 0);
	/* a blocking wait woken by a write from another thread, through
	 * the nested instance (its doorbell and the outer's) */
	REQUIRE(pthread_create(&th, NULL, write_when_asleep, &w) == 0);
	CHECK_EQ(waitmask(o->ep, 10000), 1u << 3);
	REQUIRE(t_join_within(th, 10000));
	CHECK_EQ(waitmask(o->inner, 0), 1u << 2);
	CHECK_EQ(ueventfd_read(o->efd2, &v), 0);
	CHECK_EQ(v, 1);
	/* kernel fds are shared: a byte written now is seen here */
	CHECK_EQ(write(o->p[1], "y", 1), 1);
	CHECK_EQ(waitmask(o->ep, 0), 1u << 4);
}

/* The child uses the objects; the parent waits for it, then finds the
 * counters as the child left them and uses the objects. */
static void test_child_uses(void)
{
	struct objs o;
	pid_t pid;

	objs_open(&o);
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		eventfd_t v = 0;
		int bad = 0;

		bad |= waitmask(o.ep, 0) != 1u << 1;
		bad |= ueventfd_write(o.efd, 2) != 0;
		bad |= ueventfd_read(o.efd, &v) != 0 || v != 7;
		bad |= ueventfd_write(o.efd2, 1) != 0;
		bad |= waitmask(o.ep, 1000) != 1u << 3;
		bad |= waitmask(o.inner, 0) != 1u << 2;
		bad |= ueventfd_read(o.efd2, &v) != 0 || v != 1;
		bad |= write(o.p[1], "x", 1) != 1;
		bad |= waitmask(o.ep, 1000) != 1u << 4;
		bad |= read(o.p[0], &v, 1) != 1;
		bad |= waitmask(o.ep, 0) != 0;
		objs_close(&o);
		exit(bad || t_failures ? 1 : 0);
	}
	CHECK_EQ(wait_child(pid), 0);
	check_parent(&o, 0); /* the child read efd's 5 + 2 */
	objs_close(&o);
}

/* The child only closes its copies. */
static void test_child_closes(void)
{
	struct objs o;
	pid_t pid;

	objs_open(&o);
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		objs_close(&o);
		exit(t_failures ? 1 : 0);
	}
	CHECK_EQ(wait_child(pid), 0);
	check_parent(&o, 5);
	objs_close(&o);
}

/* Exec'd as "t_fork --probe": print the open fds above 2, one per line. */
static int probe(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return 2;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] != '.' && fd > 2 && fd != dirfd(d))
			printf("%d\n", fd);
	}
	closedir(d);
	return 0;
}

/* Set of fds > 2 of this process without FD_CLOEXEC. */
static void inheritable(unsigned char *set, int max)
{
	memset(set, 0, (size_t)max);
	for (int fd = 3; fd < max; fd++) {
		int fl = fcntl(fd, F_GETFD);

		if (fl >= 0 && !(fl & FD_CLOEXEC))
			set[fd] = 1;
	}
}

static void test_exec(void)
{
	enum { MAXFD = 1024 };
	static unsigned char before[MAXFD], want[MAXFD], got[MAXFD];
	int kc, ko, kec, keo, uc, uo, uec, ueo, p[2], n = 0;
	char buf[4096], self[4096];
	ssize_t len;
	FILE *f;
	pid_t pid;

	inheritable(before, MAXFD);
	kc = eventfd(0, EFD_CLOEXEC);
	ko = eventfd(0, 0);
	kec = epoll_create1(EPOLL_CLOEXEC);
	keo = epoll_create1(0);
	uc = ueventfd(3, EFD_CLOEXEC);
	uo = ueventfd(3, 0);
	uec = uepoll_create1(EPOLL_CLOEXEC);
	ueo = uepoll_create1(0);
	int fds[] = { kc, ko, kec, keo, uc, uo, uec, ueo };

	for (int i = 0; i < 8; i++)
		REQUIRE(fds[i] >= 0 && fds[i] < MAXFD);
	/* each uepoll fd's close-on-exec flag is the kernel counterpart's */
	CHECK_EQ(fcntl(uc, F_GETFD), fcntl(kc, F_GETFD));
	CHECK_EQ(fcntl(uo, F_GETFD), fcntl(ko, F_GETFD));
	CHECK_EQ(fcntl(uec, F_GETFD), fcntl(kec, F_GETFD));
	CHECK_EQ(fcntl(ueo, F_GETFD), fcntl(keo, F_GETFD));
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	REQUIRE(len > 0);
	self[len] = 0;
	REQUIRE(pipe2(p, O_CLOEXEC) == 0);
	inheritable(want, MAXFD);
	/* the new inheritable fds are exactly the public fds of the objects
	 * made without CLOEXEC: an instance's doorbell is never one */
	for (int fd = 3; fd < MAXFD; fd++)
		if (want[fd] && !before[fd])
			CHECK(fd == ko || fd == keo || fd == uo || fd == ueo);
	CHECK(want[ko] && want[keo] && want[uo] && want[ueo]);
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		execl(self, self, "--probe", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	REQUIRE(f);
	memset(got, 0, sizeof(got));
	while (fgets(buf, sizeof(buf), f)) {
		int fd = atoi(buf);

		if (fd > 2 && fd < MAXFD)
			got[fd] = 1;
	}
	fclose(f);
	CHECK_EQ(wait_child(pid), 0);
	want[1] = got[1] = 0;
	for (int fd = 3; fd < MAXFD; fd++) {
		if (want[fd] != got[fd]) {
			fprintf(stderr, "exec: fd %d %s in the new program\n",
				fd, got[fd] ? "open" : "not open");
			t_failures++;
		}
		n += got[fd];
	}
	/* the CLOEXEC ones are gone, the others there: kernel and uepoll */
	CHECK(!got[kc] && got[ko] && !got[kec] && got[keo]);
	CHECK(!got[uc] && got[uo] && !got[uec] && got[ueo]);
	close(kc);
	close(ko);
	close(kec);
	close(keo);
	for (int i = 4; i < 8; i++)
		CHECK_EQ(uepoll_close(fds[i]), 0);
	printf("exec: %d inherited fds checked\n", n);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--probe"))
		return probe();
	t_begin("t_fork");
	t_watchdog(60);
	test_child_uses();
	test_child_closes();
	test_exec();
	return t_end();
}
