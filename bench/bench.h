/* SPDX-License-Identifier: MIT */
/*
 * bench.h - shared by every module of uepoll-bench.
 *
 * A scenario is written once against `struct sys` (a table of function
 * pointers with the epoll/eventfd API) and run against each system: the
 * kernel (epoll_*, eventfd, read/write/close) and uepoll (uepoll_*,
 * ueventfd).  Each repetition of a row runs in a forked child (runner.c), so
 * its resource usage is its own; the child fills `struct metrics` and sends it
 * back over a pipe.
 */
#ifndef UEPOLL_BENCH_H
#define UEPOLL_BENCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>

/* ---- systems ------------------------------------------------------------ */

enum sys_id { SYS_KERNEL, SYS_UEPOLL, SYS_FUTEX, SYS_COUNT };
#define SYSM(id) (1u << (id))
#define SYSM_KU (SYSM(SYS_KERNEL) | SYSM(SYS_UEPOLL))

struct sys {
	enum sys_id id;
	const char *name;
	int (*create)(int flags);
	/* uepoll_create2 (uepoll's own options); NULL for the kernel. */
	int (*create2)(int flags, unsigned int uflags);
	int (*ctl)(int epfd, int op, int fd, struct epoll_event *ev);
	int (*wait)(int epfd, struct epoll_event *evs, int max, int timeout);
	int (*efd)(unsigned int initval, int flags);
	ssize_t (*read)(int fd, void *buf, size_t n);
	ssize_t (*write)(int fd, const void *buf, size_t n);
	int (*close)(int fd);
};

const struct sys *sys_get(enum sys_id id);
struct bcase;
/* A new instance for case c: create2(EPOLL_CLOEXEC, c->uflags) when the case
 * has uepoll options, else create(EPOLL_CLOEXEC). */
int sys_create(const struct sys *s, const struct bcase *c);

/* An event source: an eventfd of the system (ueventfd for uepoll) or a pipe
 * (a kernel fd for both systems).  The read side is nonblocking.
 * SRC_EFD_NOPOLL: for uepoll a ueventfd made with UEVENTFD_NOPOLL (its fd's
 * readiness not kept exact for outside pollers); for the kernel an eventfd. */
enum src_kind { SRC_EFD, SRC_PIPE, SRC_EFD_NOPOLL };

struct src {
	enum src_kind kind;
	int rfd, wfd;
};

const char *src_name(enum src_kind kind);
void src_open(const struct sys *s, enum src_kind kind, struct src *out);
void src_close(const struct sys *s, struct src *src);
/* One event: eventfd += 1, or 4 bytes into the pipe. */
void src_signal(const struct sys *s, const struct src *src);
/* One nonblocking read as a waiter does it: eventfd: 8 bytes (returns the
 * counter), pipe: 4 bytes (returns 1).  0 when nothing was there. */
uint64_t src_read_one(const struct sys *s, const struct src *src);
/* Read until empty; returns the events collected. */
uint64_t src_drain(const struct sys *s, const struct src *src);

/* ---- parameters, metrics ------------------------------------------------ */

#define MAX_PARAMS 10

struct params {
	int n;
	const char *name[MAX_PARAMS];
	long val[MAX_PARAMS];
};

void params_set(struct params *p, const char *name, long val);
long params_get(const struct params *p, const char *name);

enum metric {
	M_WALL_S,
	M_USER_S,
	M_SYS_S,
	M_CTX,
	M_EVENTS,
	M_EVENTS_PER_S,
	M_NS_PER_EVENT,
	M_WAIT_NS_PER_EVENT,
	M_WAKEUPS_PER_EVENT,
	M_WAKEUPS_PER_S,
	M_NOHIT,
	M_JAIN,
	M_LAT_P50,
	M_LAT_P99,
	M_LAT_MAX,
	M_CPU_CONS,
	M_CPU_PROD,
	M_CPU_OTHER,
	M_TIMER_CTX_PER_S,
	M_WRITES_PER_EVENT,
	/* Real programs (sc_real_*.c): an op is one request a client got
	 * answered (servers) or one message received (Node.js). */
	M_OPS_PER_S,
	M_CPU_US_PER_OP,
	M_CTX_PER_OP,
	M_COUNT
};

struct metric_info {
	const char *name;
	int decimals; /* digits after the point when printed */
	bool lower_better;
};

extern const struct metric_info metric_info[M_COUNT];

struct metrics {
	double v[M_COUNT]; /* NaN: does not apply */
	int failed;        /* correctness failure */
	char msg[256];     /* what failed */
};

void metrics_init(struct metrics *m);

/* ---- scenarios ---------------------------------------------------------- */

/* One variant of a scenario, run on every system in `systems`. */
struct bcase {
	char variant[48];
	enum src_kind src;
	uint32_t flags;  /* scenario-specific (e.g. epoll flags) */
	uint32_t uflags; /* uepoll_create2() options (uepoll rows only) */
	unsigned systems;
	/* The kernel variant the uepoll/kernel ratio compares with; empty:
	 * the same variant. */
	char pair[48];
	/* Non-empty: the row cannot run here (a program is missing...); it is
	 * reported as SKIPPED with this reason, never run, never failed. */
	char skip[96];
};

#define MAX_CASES 24

struct scenario {
	const char *name;
	const char *proposal; /* which seed proposal it reproduces */
	const char *what;     /* one line */
	enum metric headline;
	/* The suite size: quick or full. */
	void (*size)(bool quick, struct params *p, int *reps);
	/* The variants (rows per system); returns how many. */
	int (*cases)(struct bcase *out, int max);
	/* Run one rep of one row in the (forked) child; fill m. */
	void (*run)(const struct sys *s, const struct bcase *c,
		    const struct params *p, struct metrics *m);
};

extern const struct scenario sc_herd, sc_oneshot_mt, sc_loop, sc_pingpong,
	sc_pubsub, sc_xpubsub, sc_accept, sc_minwait, sc_fork, sc_nested,
	sc_sockpp;
/* Real programs (the "real" group): sc_real_*.c. */
extern const struct scenario sc_real_nginx, sc_real_nginx_rate,
	sc_real_redis, sc_real_memcached, sc_real_node, sc_real_seed004,
	sc_real_perf;

/* ---- a client's text output (common.c): wrk's, redis-benchmark's... ---- */

/* The line after l's, NULL at the end of the text. */
const char *text_next_line(const char *l);
/* The value after `key` at the start of a line (after blanks, and the
 * blanks after it), or NULL. */
const char *text_field(const char *text, const char *key);
/* wrk's latency ("123.45us", "1.20ms", "2.00s") in microseconds; NaN if
 * it is not one. */
double wrk_latency_us(const char *s);

/* ---- measurement helpers (common.c) ------------------------------------- */

uint64_t now_ns(void);
uint64_t thread_cpu_ns(void);
/* Busy for ns nanoseconds of wall time (a stand-in for work). */
void spin_ns(long ns);
void sleep_us(long us);

struct meas {
	uint64_t t0;
	struct rusage ru0;
};

/* Around the measured region (threads started and joined inside it):
 * fills wall_s, user_s, sys_s, ctx_switches from RUSAGE_SELF deltas of the
 * forked child (RUSAGE_SELF counts threads that already exited). */
void meas_begin(struct meas *me);
void meas_end(const struct meas *me, struct metrics *m);

/* Fail the current rep (records the message; the child exits non-zero). */
void fail(struct metrics *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* In a rep's child: where die() and the watchdog send their message. */
extern int result_fd;
/* Fatal error in the child: print, report it as the rep's failure, exit. */
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Watchdog: a progress counter and its target, printed if the rep hangs. */
extern _Atomic uint64_t wd_done;
/* In a rep's child: a process group of programs the rep started (0: none);
 * die() and the watchdog kill it, so no server outlives a failed rep. */
extern pid_t wd_pgid;
extern uint64_t wd_target;
extern const char *wd_what;
void watchdog_arm(unsigned seconds, const char *what);

int thread_start(pthread_t *t, void *(*fn)(void *), void *arg);
/* Pin the calling thread to the n-th CPU it may run on (mod their count);
 * returns the CPU count available. */
int pin_self(int n);
void thread_join(pthread_t t);

/* ---- statistics (stats.c) ------------------------------------------------ */

double stat_median(const double *v, int n);
double stat_min(const double *v, int n);
double stat_max(const double *v, int n);
double stat_jain(const uint64_t *x, int n);

/* Log-linear latency histogram over nanoseconds (~3% resolution). */
#define HIST_SUB 32
#define HIST_BUCKETS (64 * HIST_SUB)
struct hist {
	uint64_t count;
	uint64_t b[HIST_BUCKETS];
};
void hist_add(struct hist *h, uint64_t ns);
/* n samples of the same value. */
void hist_add_n(struct hist *h, uint64_t ns, uint64_t n);
/* pubsub's latency (sc_pubsub.c, sc_xpubsub.c): a read at time t collected
 * the v writes of sequence numbers first.. (each adds 1), whose stamps are
 * in stamp[seq % ring] (ring a power of 2); pub: writes done so far.  At
 * most `samples` of them, evenly spaced (the oldest always), each weighted
 * by its share of v.  Returns the samples whose stamp the ring overwrote
 * since (skipped). */
uint64_t hist_add_stamps(struct hist *h, const _Atomic uint64_t *stamp,
			 uint64_t ring, uint64_t first, uint64_t v,
			 uint64_t pub, uint64_t t, uint64_t samples);
/* Percentile (0..100) in microseconds; NaN when empty. */
double hist_pct_us(const struct hist *h, double pct);

/* ---- results and reports (report.c) ------------------------------------- */

#define MAX_REPS 16

struct row {
	const struct scenario *sc;
	const struct sys *sys;
	struct bcase c;
	struct params p;
	int nreps;
	bool skipped; /* c.skip says why */
	double rep[MAX_REPS][M_COUNT];
	double med[M_COUNT], min[M_COUNT], max[M_COUNT];
	int failed;
};

struct machine {
	char kernel[200];
	char cpu[128];
	int nproc;
	char date[64];
	char host[80];
};

void machine_get(struct machine *mc);
void row_summarize(struct row *r);
/* The uepoll/kernel ratio of the headline metric, NaN when no pair. */
double row_ratio(const struct row *rows, int nrows, const struct row *r);
void report_table(FILE *f, const struct scenario *sc, const struct row *rows,
		  int nrows);
int report_json(const char *path, const struct machine *mc,
		const struct row *rows, int nrows, bool quick);
int report_dir(const char *dir, const struct machine *mc,
	       const struct scenario *const *scs, int nsc,
	       const struct row *rows, int nrows, bool quick,
	       const char *cmdline);

#endif
