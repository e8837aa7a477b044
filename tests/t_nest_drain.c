/*
 * t_nest_drain: a read that drains a ueventfd takes the readiness away from
 * the instances that hold, level-triggered, an instance watching it, as the
 * kernel's nested epoll does: the outer instance is asked first (without a
 * wait on the inner instance that would tidy it up), and must answer as the
 * kernel's outer epoll does, through each way of asking it:
 *  - uepoll_wait(outer, timeout 0);
 *  - poll() on the outer's fd;
 *  - a kernel epoll holding the outer (inner -> outer -> kernel epoll);
 *  - a uepoll instance holding the outer (inner -> outer -> top).
 * Each scenario is run side by side on kernel epoll + eventfd and on uepoll,
 * with the same sequence of writes, reads and waits, and every answer is
 * compared; the drain is done in several ways (one read of a non-semaphore
 * counter, reads of a semaphore counter down to 0, a drain loop to EAGAIN).
 */
#include "testlib.h"

#include <poll.h>
#include <unistd.h>

/* One world: the kernel's calls or uepoll's. */
struct world {
	const char *name;
	int (*create1)(int);
	int (*efd)(unsigned int, int);
	int (*ctl)(int, int, int, struct epoll_event *);
	int (*wait)(int, struct epoll_event *, int, int);
	ssize_t (*rd)(int, void *, size_t);
	ssize_t (*wr)(int, const void *, size_t);
	int (*cls)(int);
};

static int k_efd(unsigned int init, int flags)
{
	return eventfd(init, flags);
}

static const struct world kernel = { "kernel", epoll_create1, k_efd,
				     epoll_ctl, epoll_wait, read, write,
				     close };
static const struct world user = { "uepoll", uepoll_create1, ueventfd,
				   uepoll_ctl, uepoll_wait, uepoll_read,
				   uepoll_write, uepoll_close };

/* The objects of one scenario in one world. */
struct objs {
	int efd, inner, outer, top, kep;
};

/* What one world answered to one look: a small code per way of asking. */
struct look {
	int wait_outer;	  /* uepoll_wait/epoll_wait(outer, 0): n, or -errno */
	uint64_t data;	  /* its first event's data, if any */
	int poll_outer;	  /* POLLIN of poll() on the outer's fd */
	int kep_outer;	  /* kernel epoll holding the outer: n */
	int wait_top;	  /* the instance holding the outer (same world): n */
	int wait_inner;	  /* the inner, last */
};

static int add(const struct world *w, int ep, int fd, uint32_t events,
	       uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return w->ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static void open_objs(const struct world *w, struct objs *o, int efd_flags,
		      int top)
{
	o->efd = w->efd(0, EFD_NONBLOCK | efd_flags);
	o->inner = w->create1(0);
	o->outer = w->create1(0);
	o->top = top ? w->create1(0) : -1;
	o->kep = epoll_create1(0);
	REQUIRE(o->efd >= 0 && o->inner >= 0 && o->outer >= 0 &&
		(!top || o->top >= 0) && o->kep >= 0);
	REQUIRE(add(w, o->inner, o->efd, EPOLLIN, 1) == 0);
	REQUIRE(add(w, o->outer, o->inner, EPOLLIN, 2) == 0);
	if (top)
		REQUIRE(add(w, o->top, o->outer, EPOLLIN, 3) == 0);
	/* the kernel epoll is the same in both worlds: it holds the outer */
	REQUIRE(add(&kernel, o->kep, o->outer, EPOLLIN, 4) == 0);
}

static void close_objs(const struct world *w, struct objs *o)
{
	CHECK_EQ(close(o->kep), 0);
	if (o->top >= 0)
		CHECK_EQ(w->cls(o->top), 0);
	CHECK_EQ(w->cls(o->outer), 0);
	CHECK_EQ(w->cls(o->inner), 0);
	CHECK_EQ(w->cls(o->efd), 0);
}

static int pollin(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r = poll(&p, 1, 0);

	return r < 0 ? -errno : (r == 1 && (p.revents & POLLIN)) ? 1 : 0;
}

static int waitn(const struct world *w, int ep, uint64_t *data)
{
	struct epoll_event ev[4];
	int r = w->wait(ep, ev, 4, 0);

	if (r < 0)
		return -errno;
	if (data)
		*data = r > 0 ? ev[0].data.u64 : 0;
	return r;
}

/*
 * Ask the outer in one way first (first: 0 wait, 1 poll, 2 kernel epoll,
 * 3 top), then the others; the inner last of all.  Asking in different
 * orders matters: a look may tidy up what the next one sees.
 */
static struct look look_at(const struct world *w, struct objs *o, int first)
{
	struct look l;

	memset(&l, 0, sizeof(l));
	for (int i = 0; i < 4; i++) {
		switch ((first + i) % 4) {
		case 0:
			l.wait_outer = waitn(w, o->outer, &l.data);
			break;
		case 1:
			l.poll_outer = pollin(o->outer);
			break;
		case 2:
			l.kep_outer = waitn(&kernel, o->kep, NULL);
			break;
		case 3:
			if (o->top >= 0)
				l.wait_top = waitn(w, o->top, NULL);
			break;
		}
	}
	l.wait_inner = waitn(w, o->inner, NULL);
	return l;
}

static void compare(const char *what, int first, struct look k, struct look u)
{
	if (memcmp(&k, &u, sizeof(k)) == 0)
		return;
	fprintf(stderr,
		"%s (first look %d): kernel wait %d data %llu poll %d kep %d "
		"top %d inner %d; uepoll wait %d data %llu poll %d kep %d "
		"top %d inner %d\n",
		what, first, k.wait_outer, (unsigned long long)k.data,
		k.poll_outer, k.kep_outer, k.wait_top, k.wait_inner,
		u.wait_outer, (unsigned long long)u.data, u.poll_outer,
		u.kep_outer, u.wait_top, u.wait_inner);
	t_failures++;
}

static ssize_t wr(const struct world *w, int fd, uint64_t v)
{
	return w->wr(fd, &v, sizeof(v));
}

static ssize_t rd(const struct world *w, int fd, uint64_t *v)
{
	return w->rd(fd, v, sizeof(*v));
}

/*
 * The drains: 0 one read of a counter of 1; 1 one read of a counter of 3;
 * 2 a semaphore counter of 2 read twice; 3 a drain loop (reads to EAGAIN).
 * Returns the reads' results folded into one number, to compare.
 */
static long drain(const struct world *w, struct objs *o, int how)
{
	uint64_t v = 0;
	long sum = 0;
	ssize_t r;

	switch (how) {
	case 0:
		REQUIRE(wr(w, o->efd, 1) == 8);
		sum = rd(w, o->efd, &v) * 1000 + (long)v;
		break;
	case 1:
		REQUIRE(wr(w, o->efd, 1) == 8);
		REQUIRE(wr(w, o->efd, 2) == 8);
		sum = rd(w, o->efd, &v) * 1000 + (long)v;
		break;
	case 2:
		REQUIRE(wr(w, o->efd, 2) == 8);
		sum = rd(w, o->efd, &v) * 1000 + (long)v;
		sum = sum * 10000 + rd(w, o->efd, &v) * 1000 + (long)v;
		break;
	case 3:
		REQUIRE(wr(w, o->efd, 5) == 8);
		while ((r = rd(w, o->efd, &v)) == 8)
			sum += (long)v;
		sum = sum * 100 + (r < 0 && errno == EAGAIN);
		break;
	}
	return sum;
}

/*
 * One scenario in one world: maybe look at the outer while the ueventfd is
 * ready (pre: 0 no, 1 yes: the outer has reported the inner once), drain,
 * look again with the given look first; then write again (ready once more)
 * and look, then drain once more and look.
 */
static void scenario(const struct world *w, int efd_flags, int how, int top,
		     int pre, int first, struct look out[4], long *reads)
{
	struct objs o;

	open_objs(w, &o, efd_flags, top);
	out[0] = look_at(w, &o, first);	/* all idle */
	if (pre) {
		/* the outer reports the inner, but nobody waits on the inner */
		REQUIRE(wr(w, o.efd, 1) == 8);
		out[1] = look_at(w, &o, first);
		{
			uint64_t v;

			REQUIRE(rd(w, o.efd, &v) == 8);
		}
	} else {
		memset(&out[1], 0, sizeof(out[1]));
	}
	reads[0] = drain(w, &o, how);
	out[2] = look_at(w, &o, first);
	reads[1] = drain(w, &o, how);
	out[3] = look_at(w, &o, (first + 1) % 4);
	close_objs(w, &o);
}

int main(void)
{
	static const char *const drains[] = { "read of 1", "read of 3",
					      "semaphore reads", "drain loop" };
	char what[160];

	t_begin("t_nest_drain");
	t_watchdog(60);
	for (int sem = 0; sem < 2; sem++) {
		for (int how = 0; how < 4; how++) {
			if ((how == 2) != (sem == 1))
				continue;
			for (int tp = 0; tp < 4; tp++) {
				int top = tp & 1, pre = tp >> 1;

				/* an outer that no uepoll instance holds may
				 * stay readable once after a wait returned its
				 * last event (uepoll.h): pre only with top */
				if (pre && !top)
					continue;
				for (int first = 0; first < 4; first++) {
					struct look k[4], u[4];
					long kr[2], ur[2];
					int fl = sem ? EFD_SEMAPHORE : 0;

					scenario(&kernel, fl, how, top, pre,
						 first, k, kr);
					scenario(&user, fl, how, top, pre,
						 first, u, ur);
					CHECK_EQ(kr[0], ur[0]);
					CHECK_EQ(kr[1], ur[1]);
					for (int s = 0; s < 4; s++) {
						snprintf(what, sizeof(what),
							 "%s, %s, %s, look %d",
							 drains[how],
							 top ? "outer held" :
							       "outer not held",
							 pre ? "outer looked at "
							       "while ready" :
							       "outer not looked at",
							 s);
						compare(what, first, k[s], u[s]);
					}
				}
			}
		}
	}
	return t_end();
}
