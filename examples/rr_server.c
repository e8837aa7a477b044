/* SPDX-License-Identifier: MIT */
/*
 * rr_server - a small HTTP/1.1 server whose worker threads share one
 * listening socket, to compare how accepts are spread over the workers.
 *
 *   example_rr_server [-m rr|exclusive|kernel|reuseport] [-t THREADS]
 *                     [-p PORT] [-d SECONDS] [-b ACCEPTS_PER_WAKEUP]
 *
 * Every worker owns one event-loop instance and serves the connections it
 * accepted in that instance.  Modes:
 *   rr         uepoll; the shared listener is registered in every instance
 *              with EPOLLIN|EPOLLEXCLUSIVE|EPOLLROUNDROBIN.
 *   exclusive  uepoll; EPOLLIN|EPOLLEXCLUSIVE (the kernel's semantics).
 *   kernel     the kernel's epoll_*; EPOLLIN|EPOLLEXCLUSIVE.
 *   reuseport  the kernel's epoll_*; one SO_REUSEPORT listener per worker
 *              on the same port (the kernel hashes connections to them).
 * Listens on 127.0.0.1 only.  With -p 0 it picks a free port; it always
 * prints `listening on PORT` (flushed) once every listener is ready.  After
 * -d seconds, or SIGINT/SIGTERM, it prints `worker I accepted A requests R`
 * per worker and `total accepted A requests R jain J`, J being Jain's
 * fairness index over the per-worker accepted counts, and exits 0.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uepoll.h>

#define MAX_WORKERS 255 /* conn.owner holds id + 1 in a byte */
#define MAX_EVENTS 64
/* Waits never block longer than this, so a worker sees the stop flag and
 * the deadline within 100 ms whatever the traffic. */
#define WAIT_MS 100
/* Bounds a connection's reads per event: level-triggered, so what is left
 * comes back at the next wait, and one busy client cannot starve the
 * others (or the stop check) of its worker. */
#define READS_PER_EVENT 4

enum mode { MODE_RR, MODE_EXCLUSIVE, MODE_KERNEL, MODE_REUSEPORT };

/* The event-loop calls of a mode: uepoll's or the kernel's, so one worker
 * loop serves every mode and only the system under test differs. */
struct evsys {
	int (*create1)(int flags);
	int (*ctl)(int epfd, int op, int fd, struct epoll_event *ev);
	int (*wait)(int epfd, struct epoll_event *evs, int max, int timeout);
	int (*close)(int fd);
};

static const struct evsys sys_uepoll = {
	uepoll_create1, uepoll_ctl, uepoll_wait, uepoll_close,
};
static const struct evsys sys_kernel = {
	epoll_create1, epoll_ctl, epoll_wait, close,
};

struct worker {
	int id;
	int ep;
	int lfd; /* the listener this worker watches */
	pthread_t thread;
	uint64_t accepted, requests;
};

static const char response[] = "HTTP/1.1 200 OK\r\n"
			       "Content-Type: text/plain\r\n"
			       "Content-Length: 13\r\n"
			       "Connection: keep-alive\r\n"
			       "\r\n"
			       "Hello, world\n";
#define RESPONSE_LEN (sizeof(response) - 1)

static const struct evsys *sys;
static uint32_t listen_events;
static int accept_batch = 1;
static _Atomic int stop;
/*
 * Per connection, indexed by fd (an fd belongs to exactly one worker, so
 * the table needs no lock): how much of "\r\n\r\n" the bytes read so far
 * end with, and which worker owns the fd (0: none), so that each worker can
 * close its own connections at exit.  Sized by RLIMIT_NOFILE: no fd can be
 * past it.
 */
struct conn {
	/* Atomic (relaxed) only because an fd number passes from one worker to
	 * another through close() and accept(), an ordering ThreadSanitizer
	 * cannot see. */
	_Atomic unsigned char match;
	/* worker id + 1; read by every worker at shutdown, hence atomic */
	_Atomic unsigned char owner;
};
static struct conn *conns;
static int nconns;

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void die(const char *what)
{
	fprintf(stderr, "rr_server: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void conn_close(struct worker *w, int fd)
{
	/* DEL before close: a plain close() would do for the kernel, but an
	 * explicit DEL leaves no stale bookkeeping in any mode and costs the
	 * same in all of them. */
	sys->ctl(w->ep, EPOLL_CTL_DEL, fd, NULL);
	atomic_store_explicit(&conns[fd].owner, 0, memory_order_relaxed);
	close(fd);
}

/* Accept at most accept_batch connections: few enough per wakeup that the
 * way wakeups are spread shows in who accepts; the level-triggered
 * listener reports what is left at the next wait. */
static int do_accept(struct worker *w)
{
	int got = 0;

	for (int i = 0; i < accept_batch; i++) {
		struct epoll_event ev;
		int one = 1;
		int fd = accept4(w->lfd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			/* EAGAIN: another worker took it (or nothing
			 * left); EMFILE & co.: try again later. */
			return got;
		}
		if (fd >= nconns) {
			close(fd);
			continue;
		}
		/* A small response per request: do not let Nagle hold it
		 * back waiting for the client's ACK. */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		atomic_store_explicit(&conns[fd].match, 0, memory_order_relaxed);
		atomic_store_explicit(&conns[fd].owner, (unsigned char)(w->id + 1),
				      memory_order_relaxed);
		ev.events = EPOLLIN | EPOLLRDHUP;
		ev.data.u64 = (uint64_t)fd;
		if (sys->ctl(w->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			atomic_store_explicit(&conns[fd].owner, 0,
					      memory_order_relaxed);
			close(fd);
			continue;
		}
		w->accepted++;
		got++;
	}
	return got;
}

/* Counts the complete requests (headers ending in "\r\n\r\n") in buf; the
 * match state carries a terminator split across reads.  GET-style requests
 * only: a body would be taken as the next request's bytes. */
static unsigned count_requests(struct conn *c, const char *buf, size_t n)
{
	static const char term[4] = { '\r', '\n', '\r', '\n' };
	unsigned m = atomic_load_explicit(&c->match, memory_order_relaxed),
		 done = 0;

	for (size_t i = 0; i < n; i++) {
		if (buf[i] == term[m]) {
			if (++m == 4) {
				done++;
				m = 0;
			}
		} else {
			/* No proper prefix of the terminator is a suffix of
			 * a partial match except "\r". */
			m = buf[i] == '\r';
		}
	}
	atomic_store_explicit(&c->match, (unsigned char)m, memory_order_relaxed);
	return done;
}

static void do_conn(struct worker *w, int fd, uint32_t events)
{
	static _Thread_local char rbuf[4096], wbuf[16 * RESPONSE_LEN];

	for (int r = 0; r < READS_PER_EVENT; r++) {
		ssize_t n = read(fd, rbuf, sizeof(rbuf));
		unsigned k;

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			conn_close(w, fd);
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		k = count_requests(&conns[fd], rbuf, (size_t)n);
		/* One write for all the requests of this read (pipelining). */
		while (k) {
			unsigned b = k < 16 ? k : 16;
			size_t len = b * RESPONSE_LEN;

			for (unsigned i = 0; i < b; i++)
				memcpy(wbuf + i * RESPONSE_LEN, response,
				       RESPONSE_LEN);
			/* A client that does not read its responses fills
			 * the socket buffer: a short write closes it rather
			 * than buffer without bound. */
			if (write(fd, wbuf, len) != (ssize_t)len) {
				conn_close(w, fd);
				return;
			}
			w->requests += b;
			k -= b;
		}
		if ((size_t)n < sizeof(rbuf))
			break;
	}
	if (events & (EPOLLERR | EPOLLHUP)) {
		conn_close(w, fd);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct epoll_event evs[MAX_EVENTS];

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int n = sys->wait(w->ep, evs, MAX_EVENTS, WAIT_MS);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("wait");
		}
		for (int i = 0; i < n; i++) {
			int fd = (int)evs[i].data.u64;

			if (fd == w->lfd)
				do_accept(w);
			else
				do_conn(w, fd, evs[i].events);
		}
	}
	for (int fd = 0; fd < nconns; fd++)
		if (atomic_load_explicit(&conns[fd].owner,
					 memory_order_relaxed) == w->id + 1)
			conn_close(w, fd);
	return NULL;
}

static int listener(int port, int reuseport)
{
	struct sockaddr_in sa;
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket");
	/* SO_REUSEADDR: a rerun on a fixed port does not wait out
	 * TIME_WAIT. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		die("SO_REUSEADDR");
	if (reuseport &&
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0)
		die("SO_REUSEPORT");
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("bind");
	if (listen(fd, 4096) < 0)
		die("listen");
	return fd;
}

static int bound_port(int fd)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);

	if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		die("getsockname");
	return ntohs(sa.sin_port);
}

static double jain(const struct worker *w, int n)
{
	double sum = 0, sq = 0;

	for (int i = 0; i < n; i++) {
		sum += (double)w[i].accepted;
		sq += (double)w[i].accepted * (double)w[i].accepted;
	}
	/* Nothing accepted: nothing was unfair. */
	return sq > 0 ? sum * sum / ((double)n * sq) : 1.0;
}

static void usage(void)
{
	fputs("usage: example_rr_server [-m rr|exclusive|kernel|reuseport] "
	      "[-t THREADS] [-p PORT] [-d SECONDS] [-b ACCEPTS]\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	static struct worker workers[MAX_WORKERS];
	enum mode mode = MODE_RR;
	int nthreads = 4, port = 0, seconds = 10, opt, shared = -1;
	uint64_t deadline, tot_acc = 0, tot_req = 0;
	struct rlimit rl;
	sigset_t sigs;

	while ((opt = getopt(argc, argv, "m:t:p:d:b:")) != -1) {
		switch (opt) {
		case 'm':
			if (!strcmp(optarg, "rr"))
				mode = MODE_RR;
			else if (!strcmp(optarg, "exclusive"))
				mode = MODE_EXCLUSIVE;
			else if (!strcmp(optarg, "kernel"))
				mode = MODE_KERNEL;
			else if (!strcmp(optarg, "reuseport"))
				mode = MODE_REUSEPORT;
			else
				usage();
			break;
		case 't':
			nthreads = atoi(optarg);
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'd':
			seconds = atoi(optarg);
			break;
		case 'b':
			accept_batch = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || nthreads < 1 || nthreads > MAX_WORKERS ||
	    port < 0 || port > 65535 || seconds < 1 || accept_batch < 1)
		usage();

	sys = mode == MODE_RR || mode == MODE_EXCLUSIVE ? &sys_uepoll
							: &sys_kernel;
	listen_events = EPOLLIN | EPOLLEXCLUSIVE;
	if (mode == MODE_RR)
		listen_events |= EPOLLROUNDROBIN;
	else if (mode == MODE_REUSEPORT)
		listen_events = EPOLLIN; /* the listener is the worker's own */

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	nconns = getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
				 rl.rlim_cur != RLIM_INFINITY &&
				 rl.rlim_cur < (1u << 20)
			 ? (int)rl.rlim_cur
			 : 1 << 20;
	conns = calloc((size_t)nconns, sizeof(*conns));
	if (!conns)
		die("calloc");

	/* The workers inherit this mask: SIGINT/SIGTERM are taken by the main
	 * thread's sigtimedwait only, never interrupt a worker. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	/* A client that resets while we write must not kill the server. */
	signal(SIGPIPE, SIG_IGN);

	if (mode != MODE_REUSEPORT) {
		shared = listener(port, 0);
		port = bound_port(shared);
	}
	for (int i = 0; i < nthreads; i++) {
		struct worker *w = &workers[i];
		struct epoll_event ev;

		w->id = i;
		if (mode == MODE_REUSEPORT) {
			/* The first one settles the port (-p 0), the others
			 * join it. */
			w->lfd = listener(port, 1);
			if (i == 0)
				port = bound_port(w->lfd);
		} else {
			w->lfd = shared;
		}
		w->ep = sys->create1(EPOLL_CLOEXEC);
		if (w->ep < 0)
			die("create1");
		ev.events = listen_events;
		ev.data.u64 = (uint64_t)w->lfd;
		if (sys->ctl(w->ep, EPOLL_CTL_ADD, w->lfd, &ev) < 0)
			die("ctl add listener");
	}
	printf("listening on %d\n", port);
	fflush(stdout);

	deadline = mono_ms() + (uint64_t)seconds * 1000u;
	for (int i = 0; i < nthreads; i++) {
		int e = pthread_create(&workers[i].thread, NULL, worker_main,
				       &workers[i]);

		if (e) {
			errno = e;
			die("pthread_create");
		}
	}
	for (;;) {
		uint64_t now = mono_ms();
		struct timespec ts = { 0, WAIT_MS * 1000000L };

		if (now >= deadline)
			break;
		if (sigtimedwait(&sigs, NULL, &ts) > 0)
			break;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(workers[i].thread, NULL);

	for (int i = 0; i < nthreads; i++) {
		struct worker *w = &workers[i];

		printf("worker %d accepted %llu requests %llu\n", i,
		       (unsigned long long)w->accepted,
		       (unsigned long long)w->requests);
		tot_acc += w->accepted;
		tot_req += w->requests;
		sys->close(w->ep);
		if (mode == MODE_REUSEPORT)
			close(w->lfd);
	}
	if (shared >= 0)
		close(shared);
	printf("total accepted %llu requests %llu jain %.3f\n",
	       (unsigned long long)tot_acc, (unsigned long long)tot_req,
	       jain(workers, nthreads));
	fflush(stdout);
	free(conns);
	return 0;
}
