/*
 * t_fairness: an instance that mixes ready ueventfds and ready kernel fds
 * rotates between them like the kernel's single ready list.
 *
 * Sources: level-triggered ueventfds with counter 1 (never read) and
 * level-triggered pipes holding one byte (never read), all always ready,
 * each registered with its own data.u64.  W waits with maxevents m on an
 * instance holding N such sources.  The kernel (epoll_create1 + eventfd +
 * pipe2) keeps one ready list and re-queues each reported level-triggered
 * item at its tail, so every source is reported every ceil(N/m) waits.
 * Checked for uepoll (both ready queues, waits with timeout 0 and 100, which
 * never block since everything is ready):
 *  - every wait returns min(m, N) events, with distinct known data;
 *  - each source's largest gap between consecutive reports, counting from
 *    before the first wait to after the last, is at most ceil(N/m) + 1
 *    waits (so every ready source is reported within N waits of N sources
 *    with maxevents 1);
 *  - each source's count is at least 3/4 of its fair share W*m/N.
 * Cases (ueventfds + pipes, m, W): 1+1 m=1; 32+32 m=1 (256 waits); 4+4
 * m=4; 1+7 m=1; 7+1 m=1; 3+5 m=2.  The kernel's counts and worst gaps are
 * printed beside uepoll's for reference (the kernel is not asserted on).
 */
#include "testlib.h"

#include <fcntl.h>
#include <unistd.h>

#define MAXSRC 64

struct side {
	const char *name;
	int kernel;		/* 1: epoll + eventfd; 0: uepoll + ueventfd */
	unsigned int uflags;	/* uepoll_create2 flags */
};

struct result {
	int count[MAXSRC];
	int gap[MAXSRC];
	int bad_n;		/* waits that returned other than min(m, N) */
	int bad_data;		/* unknown or repeated data within a wait */
};

static int ceil_div(int a, int b)
{
	return (a + b - 1) / b;
}

/* One run: nu ueventfds (data 0..nu-1), np pipes (data nu..nu+np-1). */
static void run(const struct side *s, int nu, int np, int m, int waits,
		int timeout, struct result *res)
{
	int n = nu + np, ep, fds[MAXSRC], pw[MAXSRC], last[MAXSRC];
	struct epoll_event ev[MAXSRC];

	REQUIRE(n <= MAXSRC && m <= MAXSRC);
	memset(res, 0, sizeof(*res));
	ep = s->kernel ? epoll_create1(0) : uepoll_create2(0, s->uflags);
	REQUIRE(ep >= 0);
	for (int i = 0; i < n; i++) {
		struct epoll_event e = { .events = EPOLLIN,
					 .data.u64 = 1000 + (uint64_t)i };

		pw[i] = -1;
		if (i < nu) {
			fds[i] = s->kernel ? eventfd(1, EFD_NONBLOCK)
					   : ueventfd(1, EFD_NONBLOCK);
			REQUIRE(fds[i] >= 0);
		} else {
			int p[2];

			REQUIRE(pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0);
			REQUIRE(write(p[1], "x", 1) == 1);
			fds[i] = p[0];
			pw[i] = p[1];
		}
		if (s->kernel)
			REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &e) == 0);
		else
			REQUIRE(uepoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &e) == 0);
		last[i] = 0;
	}
	for (int w = 1; w <= waits; w++) {
		int seen[MAXSRC] = { 0 };
		int want = m < n ? m : n;
		int r = s->kernel ? epoll_wait(ep, ev, m, timeout)
				  : uepoll_wait(ep, ev, m, timeout);

		if (r != want)
			res->bad_n++;
		for (int j = 0; j < r; j++) {
			uint64_t d = ev[j].data.u64;
			int i = (int)(d - 1000);

			if (d < 1000 || i >= n || seen[i]) {
				res->bad_data++;
				continue;
			}
			seen[i] = 1;
			res->count[i]++;
			if (w - last[i] > res->gap[i])
				res->gap[i] = w - last[i];
			last[i] = w;
		}
	}
	for (int i = 0; i < n; i++)
		if (waits + 1 - last[i] > res->gap[i])
			res->gap[i] = waits + 1 - last[i];
	for (int i = 0; i < n; i++) {
		if (i < nu) {
			if (s->kernel)
				REQUIRE(close(fds[i]) == 0);
			else
				REQUIRE(uepoll_close(fds[i]) == 0);
		} else {
			REQUIRE(close(fds[i]) == 0);
			REQUIRE(close(pw[i]) == 0);
		}
	}
	if (s->kernel)
		REQUIRE(close(ep) == 0);
	else
		REQUIRE(uepoll_close(ep) == 0);
}

/* "uefd:c/g c/g | pipe:c/g ..." on one line, counts and worst gaps. */
static void print(const char *label, int nu, int np, const struct result *r)
{
	int n = nu + np;

	printf("  %-14s uefd", label);
	for (int i = 0; i < nu; i++)
		printf(" %d/%d", r->count[i], r->gap[i]);
	printf(" | pipe");
	for (int i = nu; i < n; i++)
		printf(" %d/%d", r->count[i], r->gap[i]);
	printf("\n");
}

static void summary(const char *label, int nu, int np,
		    const struct result *r)
{
	int n = nu + np, umin = 1 << 30, umax = 0, pmin = 1 << 30, pmax = 0;
	int ug = 0, pg = 0;

	for (int i = 0; i < n; i++) {
		int *mn = i < nu ? &umin : &pmin, *mx = i < nu ? &umax : &pmax;
		int *g = i < nu ? &ug : &pg;

		if (r->count[i] < *mn)
			*mn = r->count[i];
		if (r->count[i] > *mx)
			*mx = r->count[i];
		if (r->gap[i] > *g)
			*g = r->gap[i];
	}
	printf("  %-14s uefd count %d..%d worst gap %d | pipe count %d..%d worst gap %d\n",
	       label, umin, umax, ug, pmin, pmax, pg);
}

static void one_case(int nu, int np, int m, int waits, int timeout)
{
	static const struct side kside = { "kernel", 1, 0 };
	static const struct side usides[] = {
		{ "uepoll", 0, 0 },
		{ "uepoll nospin", 0, UEPOLL_NOSPIN },
	};
	struct result kr, ur;
	int n = nu + np, bound = ceil_div(n, m) + 1;
	int fair = waits * (m < n ? m : n) / n;
	int min_count = (3 * fair) / 4;

	printf("case %d ueventfd + %d pipe, maxevents %d, %d waits, timeout %d: fair %d each, gap bound %d\n",
	       nu, np, m, waits, timeout, fair, bound);
	run(&kside, nu, np, m, waits, timeout, &kr);
	if (n <= 8)
		print("kernel", nu, np, &kr);
	else
		summary("kernel", nu, np, &kr);
	for (size_t k = 0; k < sizeof(usides) / sizeof(usides[0]); k++) {
		const struct side *s = &usides[k];
		int bad = 0;

		run(s, nu, np, m, waits, timeout, &ur);
		if (n <= 8)
			print(s->name, nu, np, &ur);
		else
			summary(s->name, nu, np, &ur);
		CHECK_EQ(ur.bad_n, 0);
		CHECK_EQ(ur.bad_data, 0);
		for (int i = 0; i < n; i++) {
			if (ur.gap[i] > bound || ur.count[i] < min_count) {
				if (bad++ < 4)
					fprintf(stderr,
						"%s: %d+%d m=%d timeout %d: %s %d: count %d (min %d), worst gap %d (max %d)\n",
						s->name, nu, np, m, timeout,
						i < nu ? "ueventfd" : "pipe",
						i < nu ? i : i - nu,
						ur.count[i], min_count,
						ur.gap[i], bound);
			}
		}
		if (bad) {
			fprintf(stderr,
				"%s: %d+%d m=%d timeout %d: %d of %d sources unfairly served\n",
				s->name, nu, np, m, timeout, bad, n);
			t_failures++;
		}
	}
}

int main(void)
{
	static const struct {
		int nu, np, m, waits;
	} cases[] = {
		{ 1, 1, 1, 1000 },  { 32, 32, 1, 256 }, { 4, 4, 4, 1000 },
		{ 1, 7, 1, 1000 },  { 7, 1, 1, 1000 },  { 3, 5, 2, 1000 },
	};
	static const int timeouts[] = { 0, 100 };

	t_begin("t_fairness");
	t_watchdog(60);
	for (size_t t = 0; t < sizeof(timeouts) / sizeof(timeouts[0]); t++)
		for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
			one_case(cases[c].nu, cases[c].np, cases[c].m,
				 cases[c].waits, timeouts[t]);
	return t_end();
}
