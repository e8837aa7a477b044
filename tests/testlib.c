#include "testlib.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int t_failures;
static int t_fds_at_start;
static const char *t_name;

/* Each open fd and what it is, to stderr (after a leak). */
static void t_list_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[300], to[256];
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, to, sizeof(to) - 1);
		to[n > 0 ? n : 0] = 0;
		fprintf(stderr, "  fd %s: %s\n", e->d_name, to);
	}
	closedir(d);
}

void t_begin(const char *name)
{
	t_name = name;
	t_fds_at_start = t_count_fds();
}

int t_end(void)
{
	int fds = t_count_fds();

	if (fds != t_fds_at_start) {
		fprintf(stderr, "%s: fd leak: %d fds at start, %d at end\n",
			t_name, t_fds_at_start, fds);
		t_list_fds();
		t_failures++;
	}
	if (t_failures) {
		fprintf(stderr, "%s: FAIL (%d)\n", t_name, t_failures);
		return 1;
	}
	printf("%s: ok\n", t_name);
	return 0;
}

uint64_t t_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t t_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

uint64_t t_seed(uint64_t dflt)
{
	const char *e = getenv("UEPOLL_TEST_SEED");
	uint64_t s = e ? strtoull(e, NULL, 0) : dflt;

	if (!s)
		s = 1;
	printf("seed: %llu (set UEPOLL_TEST_SEED to replay)\n",
	       (unsigned long long)s);
	return s;
}

double t_scale(void)
{
	const char *e = getenv("UEPOLL_TEST_SCALE");
	double s = e ? atof(e) : 1.0;

	return s > 0 ? s : 1.0;
}

static int t_ev_cmp(const void *a, const void *b)
{
	const struct epoll_event *x = a, *y = b;

	if (x->data.u64 != y->data.u64)
		return x->data.u64 < y->data.u64 ? -1 : 1;
	if (x->events != y->events)
		return x->events < y->events ? -1 : 1;
	return 0;
}

void t_sort_events(struct epoll_event *ev, int n)
{
	if (n > 1)
		qsort(ev, (size_t)n, sizeof(*ev), t_ev_cmp);
}

/* The library's timer thread ("uepoll-timer", timer.c): its tid, 0 if the
 * process has none. */
int t_timer_tid(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int tid = 0;

	REQUIRE(d);
	while ((de = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) &&
		    !strncmp(comm, "uepoll-timer", 12))
			tid = atoi(de->d_name);
		fclose(f);
	}
	closedir(d);
	return tid;
}

int t_gettid(void)
{
	return (int)syscall(SYS_gettid);
}

void t_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* State letter from /proc/self/task/<tid>/stat, or 0 if unreadable. */
static char t_thread_state(int tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* The command name may contain spaces: the state follows the last ')'. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return 0;
	return p[2];
}

int t_wait_sleeping(int tid, int timeout_ms)
{
	uint64_t deadline = t_now_ns() + (uint64_t)timeout_ms * 1000000u;
	int streak = 0;

	/*
	 * A thread may sleep briefly on a lock before it reaches the blocking
	 * call, so demand several consecutive sleeping samples.
	 */
	while (t_now_ns() < deadline) {
		if (t_thread_state(tid) == 'S') {
			if (++streak >= 10)
				return 1;
		} else {
			streak = 0;
		}
		t_sleep_ms(2);
	}
	return 0;
}

int t_blocked_in(int tid, int timeout_ms)
{
	char path[64], buf[64];
	FILE *f;
	int nr = -1;

	if (!t_wait_sleeping(tid, timeout_ms))
		return -1;
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		nr = atoi(buf);
	fclose(f);
	return nr;
}

static void t_watchdog_fired(int sig)
{
	static const char msg[] = "watchdog: test still running, hung?\n";

	(void)sig;
	/* only async-signal-safe calls here */
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

void t_watchdog(unsigned int secs)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = t_watchdog_fired;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm(secs);
}

int t_join_within(pthread_t th, int ms)
{
	return t_join_ret_within(th, ms, NULL);
}

int t_join_ret_within(pthread_t th, int ms, void **ret)
{
	uint64_t end = t_now_ns() + ((uint64_t)ms / 1000 + 1) * 1000000000u;

	/* The bound on the monotonic clock (a step of the wall clock, a VM's
	 * first sync, must not end it early), in slices of a tenth of a second
	 * of pthread_timedjoin_np's wall clock (pthread_clockjoin_np would do,
	 * but ThreadSanitizer does not see it join: false races). */
	for (;;) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (pthread_timedjoin_np(th, ret, &ts) == 0)
			return 1;
		if (t_now_ns() >= end)
			return 0;
	}
}

void t_log_put(struct t_log *l, long v)
{
	if (l->n < T_LOG_MAX)
		l->v[l->n++] = v;
}

void t_log_res(struct t_log *l, long r)
{
	t_log_put(l, r < 0 ? -errno : r);
}

void t_log_events(struct t_log *l, struct epoll_event *ev, int r)
{
	t_log_res(l, r);
	if (r > 0) {
		t_sort_events(ev, r);
		for (int i = 0; i < r; i++) {
			t_log_put(l, (long)ev[i].data.u64);
			t_log_put(l, ev[i].events);
		}
	}
}

void t_log_same(const struct t_log *k, const struct t_log *u,
		const char *what)
{
	if (getenv("T_DUMP"))
		for (int j = 0; j < k->n || j < u->n; j++)
			fprintf(stderr, "%s %3d %10ld %10ld\n", what, j,
				j < k->n ? k->v[j] : -999,
				j < u->n ? u->v[j] : -999);
	for (int j = 0; j < k->n || j < u->n; j++)
		if (j >= k->n || j >= u->n || k->v[j] != u->v[j]) {
			fprintf(stderr, "%s: entry %d: kernel %ld, uepoll %ld "
				"(%d and %d entries)\n", what, j,
				j < k->n ? k->v[j] : -999,
				j < u->n ? u->v[j] : -999, k->n, u->n);
			t_failures++;
			return;
		}
}

int t_child_fork(struct t_child *c)
{
	pid_t parent = getpid();

	fflush(NULL);
	c->done = 0;
	c->status = -1;
	c->pid = fork();
	REQUIRE(c->pid >= 0);
	if (c->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(99);
		t_failures = 0;
	}
	return c->pid;
}

static int t_child__decode(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int t_child_ended(struct t_child *c)
{
	int st;

	if (!c->done && waitpid(c->pid, &st, WNOHANG) == c->pid) {
		c->done = 1;
		c->status = t_child__decode(st);
	}
	return c->done;
}

int t_child_reap(struct t_child *c, int ms, const char *what)
{
	uint64_t deadline = t_now_ns() + (uint64_t)ms * 1000000u;
	int st;

	while (!t_child_ended(c)) {
		if (t_now_ns() > deadline) {
			fprintf(stderr, "%s: child %d hung: killed\n", what,
				c->pid);
			kill(c->pid, SIGKILL);
			if (waitpid(c->pid, &st, 0) == c->pid)
				c->status = t_child__decode(st);
			c->done = 1;
			t_failures++;
			return -1;
		}
		usleep(500);
	}
	if (c->status != 0)
		fprintf(stderr, "%s: child status %d\n", what, c->status);
	return c->status;
}

int t_child_kill(struct t_child *c)
{
	int st;

	if (c->done)
		return c->status;
	kill(c->pid, SIGKILL);
	while (waitpid(c->pid, &st, 0) != c->pid)
		if (errno != EINTR)
			return -1;
	c->done = 1;
	c->status = t_child__decode(st);
	return c->status;
}

#ifdef T_TSAN
/* ThreadSanitizer sleeps a second at exit while it thinks other threads
 * run (the library's timer thread, or, in a forked child, the record of a
 * thread it inherited): a second per test, or per child.  For every test
 * (the environment's TSAN_OPTIONS still wins). */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "atexit_sleep_ms=0";
}
#endif
