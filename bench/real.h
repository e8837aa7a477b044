/* SPDX-License-Identifier: MIT */
/*
 * real.h - what the real-program scenarios (sc_real_*.c) share: finding a
 * program, starting it natively or under uepoll-run with a policy,
 * loopback ports, running a client to its end, and sampling the CPU time
 * and context switches of a server's processes from /proc.
 *
 * Every process a rep starts joins one process group (wd_pgid), which the
 * rep kills at its end, on die() and from the watchdog: no server outlives
 * its rep, whatever happens.
 */
#ifndef UEPOLL_BENCH_REAL_H
#define UEPOLL_BENCH_REAL_H

#include "bench.h"

/* How a row runs its program: natively, or under uepoll-run with one
 * policy on (bcase.flags of the real scenarios). */
enum real_pol {
	REAL_NATIVE,     /* the kernel's epoll and eventfd */
	REAL_OFF,        /* uepoll-run, no policy */
	REAL_RR,         /* uepoll-run --roundrobin */
	REAL_MINWAIT,    /* uepoll-run --min-wait-us REAL_MINWAIT_US */
	REAL_COALESCE,   /* uepoll-run --coalesce REAL_COALESCE_SPEC */
	REAL_EXACT,      /* uepoll-run --exact (the default: NOPOLL) */
	REAL_COALESCE_5MS, /* uepoll-run --coalesce 5000, proposal 004's */
};

#define REAL_MINWAIT_US "200"
#define REAL_COALESCE_SPEC "50"

/* Fills c: variant, the kernel variant it is compared with (pair; "" for
 * the same name), policy; a native row is the kernel system's, the others
 * uepoll's.  skip is set when a program of progs (NULL-terminated) is not
 * installed, or when the preload cannot run in this build. */
void real_case(struct bcase *c, const char *variant, const char *pair,
	       enum real_pol pol, const char *const *progs);

/* progs's path as execvp would find it (PATH, then /usr/sbin and /sbin,
 * where nginx is); false when absent. */
bool real_find(const char *prog, char *buf, size_t n);

/* A loopback TCP port below the ephemeral range (32768-) that nothing
 * listens on now, so no client connection holds it. */
int real_port(void);
/* Up to ms milliseconds for something to accept on 127.0.0.1:port. */
bool real_wait_port(int port, int ms);

/* Starts argv (argv[0] found in PATH) under the row's policy, in the rep's
 * process group; stdout and stderr go to out_path ("/dev/null" for none).
 * Returns the pid (uepoll-run execs the program: the pid is the program's). */
pid_t real_start(const struct bcase *c, const char *const *argv,
		 const char *out_path);

/* Runs argv (natively: clients are never preloaded) to its end or for at
 * most timeout_s; its stdout and stderr in out (NUL-terminated, truncated
 * to n).  Returns the wait status, or -1 on the timeout (then killed). */
int real_client(const char *const *argv, char *out, size_t n,
		unsigned timeout_s);

/* Sends sig to pid and waits up to ms for it to exit; returns its wait
 * status, or -1 if it had to be killed. */
int real_stop(pid_t pid, int sig, int ms);
/* Kills what is left of the rep's process group (at the rep's end). */
void real_cleanup(void);

/* CPU time and context switches of pid and its children, all threads. */
struct real_usage {
	double cpu_s;
	double ctx;
	int nchild;
	pid_t child[16]; /* the children's pids (nginx's workers) */
};
void real_usage(pid_t pid, struct real_usage *u);
/* ops done between two samples a and b: the per-op metrics. */
void real_per_op(const struct real_usage *a, const struct real_usage *b,
		 double ops, struct metrics *m);

/* One request on a fresh loopback connection: sends req, reads until the
 * reply ends with end (or the peer closes), at most timeout_ms.  Returns
 * the reply's length, -1 on an error. */
ssize_t real_ask(int port, const char *req, const char *end, char *reply,
		 size_t n, int timeout_ms);

/* A fresh directory /tmp/uepoll-bench-WHAT.XXXXXX for a rep's files, and
 * its removal with all it holds. */
void real_tmpdir(char *buf, size_t n, const char *what);
void real_rmtree(const char *dir);
/* A whole file, NUL-terminated (free it); NULL if it cannot be read. */
char *real_slurp_file(const char *path, size_t *len);

/* Per-line helpers on a program's text output (and text_next_line,
 * text_field in bench.h). */
/* Up to n integers from the start of line l (blank-separated, up to its
 * end); returns how many.  Not sscanf: glibc's takes the length of the
 * whole rest of the text on every call, quadratic over a large log. */
int real_nums(const char *l, long long *v, int n);
/* The text after `key` on the first line that holds it, or NULL. */
const char *real_after(const char *text, const char *key);

#endif
