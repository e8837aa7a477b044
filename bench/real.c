/* SPDX-License-Identifier: MIT */
/*
 * real.c - starting, driving and measuring real programs for the "real"
 * scenario group (real.h).
 */
#include "real.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef UEPOLL_RUN_PATH
#define UEPOLL_RUN_PATH "uepoll-run"
#endif
#ifndef UEPOLL_BENCH_SANITIZED
#define UEPOLL_BENCH_SANITIZED 0
#endif

bool real_find(const char *prog, char *buf, size_t n)
{
	char dirs[4096];
	const char *path = getenv("PATH");
	size_t pl = strlen(prog);

	if (strchr(prog, '/')) {
		snprintf(buf, n, "%s", prog);
		return access(buf, X_OK) == 0;
	}
	snprintf(dirs, sizeof(dirs), "%s:/usr/sbin:/sbin",
		 path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (const char *d = dirs; *d;) {
		size_t len = strcspn(d, ":");

		if (len && len + pl + 2 <= n) {
			memcpy(buf, d, len);
			buf[len] = '/';
			memcpy(buf + len + 1, prog, pl + 1);
			if (access(buf, X_OK) == 0)
				return true;
		}
		d += len;
		if (*d == ':')
			d++;
	}
	return false;
}

void real_case(struct bcase *c, const char *variant, const char *pair,
	       enum real_pol pol, const char *const *progs)
{
	char path[4096];

	memset(c, 0, sizeof(*c));
	snprintf(c->variant, sizeof(c->variant), "%s", variant);
	snprintf(c->pair, sizeof(c->pair), "%s", pair ? pair : "");
	c->src = SRC_PIPE; /* unused: the program makes its own sources */
	c->flags = (uint32_t)pol;
	c->systems = pol == REAL_NATIVE ? SYSM(SYS_KERNEL) : SYSM(SYS_UEPOLL);
	for (int i = 0; progs && progs[i]; i++) {
		if (!real_find(progs[i], path, sizeof(path))) {
			snprintf(c->skip, sizeof(c->skip),
				 "%s is not installed (scripts/deps.sh)",
				 progs[i]);
			return;
		}
	}
	/* A sanitizer's runtime must be loaded before any preload library,
	 * so the preload cannot run under a sanitized build (the preload's
	 * own tests skip there too). */
	if (pol != REAL_NATIVE && UEPOLL_BENCH_SANITIZED)
		snprintf(c->skip, sizeof(c->skip),
			 "the preload cannot run in a sanitizer build");
	else if (pol != REAL_NATIVE && access(UEPOLL_RUN_PATH, X_OK) != 0)
		snprintf(c->skip, sizeof(c->skip), "no uepoll-run at %s",
			 UEPOLL_RUN_PATH);
}

/* ---- ports ---------------------------------------------------------------- */

static int real__tcp(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket: %s", strerror(errno));
	return fd;
}

static struct sockaddr_in real__addr(int port)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

int real_port(void)
{
	/* From a random start, so that reps (and other test runs) do not
	 * all race for one port. */
	int start = 20000 + (int)((now_ns() / 1000 + (uint64_t)getpid()) %
				  12000);

	for (int i = 0; i < 12000; i++) {
		int port = 20000 + (start - 20000 + i) % 12000;
		struct sockaddr_in a = real__addr(port);
		int fd = real__tcp();
		/* bind without SO_REUSEADDR fails on a port in any use,
		 * TIME_WAIT included. */
		int ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;

		close(fd);
		if (ok)
			return port;
	}
	die("no free loopback port in 20000-31999");
}

bool real_wait_port(int port, int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000u;

	do {
		struct sockaddr_in a = real__addr(port);
		int fd = real__tcp();
		int r = connect(fd, (struct sockaddr *)&a, sizeof(a));

		close(fd);
		if (r == 0)
			return true;
		sleep_us(20000);
	} while (now_ns() < end);
	return false;
}

/* ---- processes ------------------------------------------------------------ */

/* In a new child: join the rep's group, the default signals, stdout and
 * stderr to fd; then exec. */
static _Noreturn void real__exec(const char *const *argv, int fd)
{
	int null = open("/dev/null", O_RDONLY);

	setpgid(0, wd_pgid);
	/* The rep's watchdog alarm, ignored SIGPIPE and handlers are not the
	 * program's. */
	signal(SIGALRM, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	/* Killed with the rep even if it dies by SIGKILL. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (null >= 0)
		dup2(null, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	/* execv's prototype predates const; it does not write. */
	execv(argv[0], (char *const *)argv);
	fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* A rep stopped from outside (ctest's timeout, ^C) takes its programs
 * with it. */
static void real__on_term(int sig)
{
	if (wd_pgid > 0)
		kill(-wd_pgid, SIGKILL);
	signal(sig, SIG_DFL);
	raise(sig);
}

static pid_t real__fork(const char *const *argv, int fd)
{
	pid_t pid;

	if (!wd_pgid) {
		signal(SIGTERM, real__on_term);
		signal(SIGINT, real__on_term);
		signal(SIGHUP, real__on_term);
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0)
		real__exec(argv, fd);
	/* Both sides set the group, so it holds whichever runs first. */
	setpgid(pid, wd_pgid);
	if (!wd_pgid)
		wd_pgid = pid;
	return pid;
}

pid_t real_start(const struct bcase *c, const char *const *argv,
		 const char *out_path)
{
	const char *av[64];
	char prog[4096];
	int n = 0, fd;
	pid_t pid;

	if (!real_find(argv[0], prog, sizeof(prog)))
		die("%s is not installed", argv[0]);
	if (c->flags != REAL_NATIVE) {
		av[n++] = UEPOLL_RUN_PATH;
		if (c->flags == REAL_RR)
			av[n++] = "--roundrobin";
		if (c->flags == REAL_MINWAIT) {
			av[n++] = "--min-wait-us";
			av[n++] = REAL_MINWAIT_US;
		}
		if (c->flags == REAL_COALESCE) {
			av[n++] = "--coalesce";
			av[n++] = REAL_COALESCE_SPEC;
		}
		if (c->flags == REAL_EXACT)
			av[n++] = "--exact";
		if (c->flags == REAL_COALESCE_5MS) {
			av[n++] = "--coalesce";
			av[n++] = "5000";
		}
		av[n++] = "--";
	}
	av[n++] = prog;
	for (int i = 1; argv[i] && n < 63; i++)
		av[n++] = argv[i];
	av[n] = NULL;
	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die("%s: %s", out_path, strerror(errno));
	pid = real__fork(av, fd);
	close(fd);
	return pid;
}

int real_client(const char *const *argv, char *out, size_t n,
		unsigned timeout_s)
{
	const char *av[64];
	char prog[4096];
	int pfd[2], st, k = 0;
	size_t len = 0;
	uint64_t end = now_ns() + (uint64_t)timeout_s * 1000000000u;
	bool timed_out = false;
	pid_t pid;

	if (!real_find(argv[0], prog, sizeof(prog)))
		die("%s is not installed", argv[0]);
	av[k++] = prog;
	for (int i = 1; argv[i] && k < 63; i++)
		av[k++] = argv[i];
	av[k] = NULL;
	if (pipe2(pfd, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	pid = real__fork(av, pfd[1]);
	close(pfd[1]);
	out[0] = 0;
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		uint64_t t = now_ns();
		char sink[512];
		ssize_t r;

		if (t >= end) {
			timed_out = true;
			kill(pid, SIGKILL);
			break;
		}
		if (poll(&p, 1, (int)((end - t) / 1000000u) + 1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %s", strerror(errno));
		}
		if (!p.revents)
			continue;
		/* Past n: read on, drop the rest (it only bounds memory). */
		if (len + 1 < n)
			r = read(pfd[0], out + len, n - 1 - len);
		else
			r = read(pfd[0], sink, sizeof(sink));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (len + 1 < n) {
			len += (size_t)r;
			out[len] = 0;
		}
	}
	close(pfd[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid %s: %s", prog, strerror(errno));
	return timed_out ? -1 : st;
}

int real_stop(pid_t pid, int sig, int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
	int st;

	kill(pid, sig);
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return st;
		if (r < 0 && errno != EINTR)
			die("waitpid: %s", strerror(errno));
		if (now_ns() >= end)
			break;
		sleep_us(10000);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return -1;
}

void real_cleanup(void)
{
	if (wd_pgid > 0) {
		kill(-wd_pgid, SIGKILL);
		/* Reap what was ours; grandchildren were reparented. */
		while (waitpid(-wd_pgid, NULL, WNOHANG) > 0)
			;
	}
	wd_pgid = 0;
}

/* ---- /proc ------------------------------------------------------------------ */

/* utime+stime (clock ticks) from a /proc .../stat line. */
static double real__ticks(const char *path, pid_t *ppid)
{
	char buf[1024], *p;
	unsigned long ut = 0, stime = 0;
	int pp = 0;
	FILE *f = fopen(path, "r");
	size_t r;

	if (!f)
		return 0;
	r = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[r] = 0;
	/* The name in parentheses may hold blanks: fields count from the
	 * last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2,
			 "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			 &pp, &ut, &stime) != 3)
		return 0;
	if (ppid)
		*ppid = pp;
	return (double)ut + (double)stime;
}

static double real__ctx(const char *path)
{
	char line[256];
	double v = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long n;

		if (sscanf(line, "voluntary_ctxt_switches: %lu", &n) == 1 ||
		    sscanf(line, "nonvoluntary_ctxt_switches: %lu", &n) == 1)
			v += (double)n;
	}
	fclose(f);
	return v;
}

/* A thread's time on a CPU in ns (the first field of schedstat), -1 if
 * the kernel has no schedstat. */
static double real__run_ns(const char *path)
{
	unsigned long long ns;
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return -1;
	ok = fscanf(f, "%llu", &ns) == 1;
	fclose(f);
	return ok ? (double)ns : -1;
}

/* Every thread of pid: its CPU time in seconds (schedstat's ns, as the
 * stat file's clock ticks of 10 ms are too coarse for a run of a few
 * thousand requests; the ticks where there is no schedstat), and its
 * context switches (a process's status file shows its main thread's
 * only). */
static void real__one(pid_t pid, double *cpu_s, double *ctx)
{
	char path[128];
	double ns = 0;
	bool fine = true;
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char sp[300];
		double t;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(sp, sizeof(sp), "/proc/%d/task/%s/status", (int)pid,
			 e->d_name);
		*ctx += real__ctx(sp);
		snprintf(sp, sizeof(sp), "/proc/%d/task/%s/schedstat",
			 (int)pid, e->d_name);
		t = real__run_ns(sp);
		if (t < 0)
			fine = false;
		else
			ns += t;
	}
	closedir(d);
	if (fine) {
		*cpu_s += ns / 1e9;
	} else {
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		*cpu_s += real__ticks(path, NULL) /
			  (double)sysconf(_SC_CLK_TCK);
	}
}

void real_usage(pid_t pid, struct real_usage *u)
{
	double cpu_s = 0, ctx = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;

	memset(u, 0, sizeof(*u));
	real__one(pid, &cpu_s, &ctx);
	while (d && (e = readdir(d))) {
		char path[300];
		pid_t pp = 0, c;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		c = (pid_t)atoi(e->d_name);
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		real__ticks(path, &pp);
		if (pp != pid)
			continue;
		real__one(c, &cpu_s, &ctx);
		if (u->nchild < 16)
			u->child[u->nchild++] = c;
	}
	if (d)
		closedir(d);
	u->cpu_s = cpu_s;
	u->ctx = ctx;
}

void real_per_op(const struct real_usage *a, const struct real_usage *b,
		 double ops, struct metrics *m)
{
	m->v[M_USER_S] = NAN;
	m->v[M_CTX] = b->ctx - a->ctx;
	if (ops <= 0)
		return;
	m->v[M_CPU_US_PER_OP] = (b->cpu_s - a->cpu_s) * 1e6 / ops;
	m->v[M_CTX_PER_OP] = (b->ctx - a->ctx) / ops;
}

/* ---- a one-request client ------------------------------------------------- */

ssize_t real_ask(int port, const char *req, const char *end, char *reply,
		 size_t n, int timeout_ms)
{
	struct sockaddr_in a = real__addr(port);
	size_t len = 0, el = strlen(end), rl = strlen(req);
	int fd = real__tcp();
	struct timeval tv = { .tv_sec = timeout_ms / 1000,
			      .tv_usec = (timeout_ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    write(fd, req, rl) != (ssize_t)rl) {
		close(fd);
		return -1;
	}
	reply[0] = 0;
	while (len + 1 < n) {
		ssize_t r = read(fd, reply + len, n - 1 - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		reply[len] = 0;
		if (len >= el && !memcmp(reply + len - el, end, el))
			break;
	}
	close(fd);
	return (ssize_t)len;
}

/* ---- text ------------------------------------------------------------------ */

int real_nums(const char *l, long long *v, int n)
{
	int k = 0;

	while (k < n) {
		char *e;

		while (*l == ' ' || *l == '\t')
			l++;
		if (*l == '\n' || !*l)
			break;
		v[k] = strtoll(l, &e, 10);
		if (e == l)
			break;
		k++;
		l = e;
	}
	return k;
}

const char *real_after(const char *text, const char *key)
{
	const char *p = strstr(text, key);

	return p ? p + strlen(key) : NULL;
}

/* ---- scratch directories ------------------------------------------------- */


void real_tmpdir(char *buf, size_t n, const char *what)
{
	snprintf(buf, n, "/tmp/uepoll-bench-%s.XXXXXX", what);
	if (!mkdtemp(buf))
		die("mkdtemp: %s", strerror(errno));
	/* nginx's workers run as nobody and write their temp files here. */
	chmod(buf, 0755);
}

static int real__rm(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void real_rmtree(const char *dir)
{
	nftw(dir, real__rm, 16, FTW_DEPTH | FTW_PHYS);
}

char *real_slurp_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f)
		return NULL;
	for (;;) {
		size_t r;

		if (n + 4096 + 1 > cap) {
			cap = cap ? 2 * cap : 65536;
			buf = realloc(buf, cap);
			if (!buf)
				die("out of memory");
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		if (!r)
			break;
		n += r;
	}
	fclose(f);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}
