/*
 * t_bad_input: every invalid argument of the calls other than uepoll_ctl
 * (t_ctl_errors has those), plus a few ctl ones it lacks, each run on the
 * kernel's objects and on uepoll's, demanding the same return value and
 * errno.  Table-driven: a case is one call made on a world (a fresh set of
 * objects: an empty and a ready instance, an empty and a full eventfd, a
 * pipe, a regular file, a closed fd number), once per world.
 *
 * Covered: uepoll_create/create1/create2 (bad size, flags), uepoll_wait/
 * pwait/pwait2 (maxevents 0, negative, INT_MIN, INT_MAX, the kernel's
 * limit and one above; NULL events with and without events ready; an epfd
 * that is -1, closed, never opened, huge, an eventfd, a pipe, a regular
 * file; bad timespecs, before a bad epfd), ueventfd (unknown flags),
 * uepoll_read/write and ueventfd_read/write (short and long buffers, NULL
 * buffers, UINT64_MAX, overflow, bad fds, an instance's fd), uepoll_close
 * (bad fds, twice), and ctl with a huge fd/epfd, a regular file as epfd,
 * INT_MIN/INT_MAX ops and every event bit set.
 *
 * Documented differences are not compared (uepoll.h): a NULL events with a
 * non-zero timeout, a bad non-NULL pointer, a count reaching past the end
 * of the address space.  uepoll_create2 has no kernel counterpart: its
 * flags are compared with epoll_create1's and its uflags pinned to EINVAL.
 */
#include "testlib.h"
#include "calls.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#define EP_MAX (int)(INT_MAX / sizeof(struct epoll_event))

struct world {
	const struct calls *c;
	/* objects */
	int ep, ep_ready, efd, efd_full, efd_ready, p[2], reg, closed;
	int made[4], nmade; /* fds a case created, closed after it */
};

static void world_init(struct world *w, const struct calls *c)
{
	struct epoll_event ev = { .events = EPOLLIN };
	char path[] = "/tmp/uepoll_bad_XXXXXX";
	uint64_t v = 0xfffffffffffffffeULL;

	*w = (struct world){ .c = c };
	w->ep = w->c->create1(0);
	w->ep_ready = w->c->create1(0);
	w->efd = w->c->eventfd(0, EFD_NONBLOCK);
	w->efd_full = w->c->eventfd(0, EFD_NONBLOCK);
	w->efd_ready = w->c->eventfd(3, EFD_NONBLOCK);
	w->closed = w->c->eventfd(0, 0);
	REQUIRE(w->ep >= 0 && w->ep_ready >= 0 && w->efd >= 0);
	REQUIRE(w->efd_full >= 0 && w->efd_ready >= 0 && w->closed >= 0);
	REQUIRE(w->c->write(w->efd_full, &v, sizeof(v)) == 8);
	REQUIRE(w->c->ctl(w->ep_ready, EPOLL_CTL_ADD, w->efd_ready, &ev) == 0);
	REQUIRE(pipe2(w->p, O_NONBLOCK) == 0);
	w->reg = mkstemp(path);
	REQUIRE(w->reg >= 0);
	unlink(path);
	/* last, so that no object of the world reuses the number */
	REQUIRE(w->c->close(w->closed) == 0);
	w->nmade = 0;
}

static void world_fini(struct world *w)
{
	for (int i = 0; i < w->nmade; i++)
		CHECK_EQ(w->c->close(w->made[i]), 0);
	CHECK_EQ(w->c->close(w->ep), 0);
	CHECK_EQ(w->c->close(w->ep_ready), 0);
	CHECK_EQ(w->c->close(w->efd), 0);
	CHECK_EQ(w->c->close(w->efd_full), 0);
	CHECK_EQ(w->c->close(w->efd_ready), 0);
	CHECK_EQ(close(w->p[0]), 0);
	CHECK_EQ(close(w->p[1]), 0);
	CHECK_EQ(close(w->reg), 0);
}

/* A created fd is only compared as success; it is closed after the case. */
static long made(struct world *w, int fd)
{
	if (fd < 0)
		return fd;
	w->made[w->nmade++] = fd;
	return 0;
}

typedef long (*case_fn)(struct world *w);
static struct epoll_event evs[4];
static uint64_t buf[2];
static const struct timespec ts_zero = { 0, 0 };

/* ---- creates ---- */
static long c_create_0(struct world *w) { return made(w, w->c->create(0)); }
static long c_create_neg(struct world *w) { return made(w, w->c->create(-1)); }
static long c_create_min(struct world *w) { return made(w, w->c->create(INT_MIN)); }
static long c_create_max(struct world *w) { return made(w, w->c->create(INT_MAX)); }
static long c_create1_1(struct world *w) { return made(w, w->c->create1(1)); }
static long c_create1_neg(struct world *w) { return made(w, w->c->create1(-1)); }
static long c_create1_nonblock(struct world *w) { return made(w, w->c->create1(O_NONBLOCK)); }
static long c_create1_cloexec_bit(struct world *w) { return made(w, w->c->create1(EPOLL_CLOEXEC | 2)); }
static long c_create1_max(struct world *w) { return made(w, w->c->create1(INT_MAX)); }

/* ---- waits ---- */
static long c_wait_max0(struct world *w) { return w->c->wait(w->ep, evs, 0, 0); }
static long c_wait_neg(struct world *w) { return w->c->wait(w->ep, evs, -1, 0); }
static long c_wait_intmin(struct world *w) { return w->c->wait(w->ep, evs, INT_MIN, 0); }
static long c_wait_intmax(struct world *w) { return w->c->wait(w->ep, evs, INT_MAX, 0); }
static long c_wait_epmax(struct world *w) { return w->c->wait(w->ep_ready, evs, EP_MAX, 0); }
static long c_wait_epmax1(struct world *w) { return w->c->wait(w->ep_ready, evs, EP_MAX + 1, 0); }
static long c_wait_max0_badfd(struct world *w) { return w->c->wait(-1, evs, 0, 0); }
static long c_wait_null_empty(struct world *w) { return w->c->wait(w->ep, NULL, 4, 0); }
static long c_wait_null_ready(struct world *w) { return w->c->wait(w->ep_ready, NULL, 4, 0); }
static long c_wait_fd_neg(struct world *w) { return w->c->wait(-1, evs, 4, 0); }
static long c_wait_fd_closed(struct world *w) { return w->c->wait(w->closed, evs, 4, 0); }
static long c_wait_fd_never(struct world *w) { return w->c->wait(4000, evs, 4, 0); }
static long c_wait_fd_huge(struct world *w) { return w->c->wait(INT_MAX, evs, 4, 0); }
static long c_wait_fd_efd(struct world *w) { return w->c->wait(w->efd_ready, evs, 4, 0); }
static long c_wait_fd_pipe(struct world *w) { return w->c->wait(w->p[0], evs, 4, 0); }
static long c_wait_fd_reg(struct world *w) { return w->c->wait(w->reg, evs, 4, 0); }
static long c_wait_ready(struct world *w) { return w->c->wait(w->ep_ready, evs, 1, 0); }
static long c_pwait_neg(struct world *w) { return w->c->pwait(w->ep, evs, -1, 0, NULL); }
static long c_pwait_fd_efd(struct world *w) { return w->c->pwait(w->efd, evs, 4, 0, NULL); }
static long c_pwait_null_ready(struct world *w) { return w->c->pwait(w->ep_ready, NULL, 4, 0, NULL); }

static long c_pwait_mask(struct world *w)
{
	sigset_t s;

	sigfillset(&s);
	return w->c->pwait(w->ep_ready, evs, 4, 0, &s);
}

static long c_pwait2_nsec_neg(struct world *w)
{
	struct timespec t = { 0, -1 };

	return w->c->pwait2(w->ep, evs, 4, &t, NULL);
}

static long c_pwait2_nsec_big(struct world *w)
{
	struct timespec t = { 0, 1000000000 };

	return w->c->pwait2(w->ep, evs, 4, &t, NULL);
}

static long c_pwait2_sec_neg(struct world *w)
{
	struct timespec t = { -1, 0 };

	return w->c->pwait2(w->ep, evs, 4, &t, NULL);
}

/* the timeout is checked before the fd and maxevents */
static long c_pwait2_bad_ts_bad_fd(struct world *w)
{
	struct timespec t = { -1, 0 };

	return w->c->pwait2(-1, evs, 0, &t, NULL);
}

static long c_pwait2_huge_ready(struct world *w)
{
	struct timespec t = { LONG_MAX, 999999999 };

	return w->c->pwait2(w->ep_ready, evs, 4, &t, NULL);
}

static long c_pwait2_max0(struct world *w) { return w->c->pwait2(w->ep, evs, 0, &ts_zero, NULL); }
static long c_pwait2_fd_pipe(struct world *w) { return w->c->pwait2(w->p[1], evs, 4, &ts_zero, NULL); }
static long c_pwait2_null_ready(struct world *w) { return w->c->pwait2(w->ep_ready, NULL, 4, &ts_zero, NULL); }

/* ---- eventfd ---- */
static long c_efd_flag4(struct world *w) { return made(w, w->c->eventfd(0, 0x4)); }
static long c_efd_flag_neg(struct world *w) { return made(w, w->c->eventfd(0, -1)); }
static long c_efd_rdwr(struct world *w) { return made(w, w->c->eventfd(0, O_RDWR)); }
static long c_efd_sem_bad(struct world *w) { return made(w, w->c->eventfd(0, EFD_SEMAPHORE | 0x100)); }
static long c_efd_init_max(struct world *w) { return made(w, w->c->eventfd(UINT_MAX, EFD_SEMAPHORE)); }

static long c_read_0(struct world *w) { return w->c->read(w->efd_ready, buf, 0); }
static long c_read_4(struct world *w) { return w->c->read(w->efd_ready, buf, 4); }
static long c_read_7(struct world *w) { return w->c->read(w->efd_ready, buf, 7); }
static long c_read_16(struct world *w) { return w->c->read(w->efd_ready, buf, 16); }
static long c_read_empty(struct world *w) { return w->c->read(w->efd, buf, 8); }
static long c_read_4_empty(struct world *w) { return w->c->read(w->efd, buf, 4); }
static long c_read_null_empty(struct world *w) { return w->c->read(w->efd, NULL, 8); }
static long c_read_null_short(struct world *w) { return w->c->read(w->efd_ready, NULL, 4); }

/* The kernel consumes the counter, then fails to copy it out. */
static long c_read_null_ready(struct world *w)
{
	long r = w->c->read(w->efd_ready, NULL, 8);
	int e = errno;

	CHECK_ERR(w->c->read(w->efd_ready, buf, 8), EAGAIN);
	errno = e;
	return r;
}

static long c_read_value(struct world *w)
{
	buf[0] = 0;
	return w->c->read(w->efd_full, buf, 8) == 8 ? (long)(buf[0] >> 32) : -1;
}

static long c_read_bad_fd(struct world *w) { return w->c->read(w->closed, buf, 8); }
static long c_read_neg_fd(struct world *w) { return w->c->read(-1, buf, 8); }
static long c_read_instance(struct world *w) { return w->c->read(w->ep_ready, buf, 8); }
static long c_write_0(struct world *w) { return w->c->write(w->efd, buf, 0); }
static long c_write_4(struct world *w) { return w->c->write(w->efd, buf, 4); }

static long c_write_16(struct world *w)
{
	buf[0] = 1;
	buf[1] = 2;
	return w->c->write(w->efd, buf, 16);
}

static long c_write_max(struct world *w)
{
	buf[0] = UINT64_MAX;
	return w->c->write(w->efd, buf, 8);
}

static long c_write_max_short(struct world *w)
{
	buf[0] = UINT64_MAX;
	return w->c->write(w->efd, buf, 4);
}

static long c_write_overflow(struct world *w)
{
	buf[0] = 1;
	return w->c->write(w->efd_full, buf, 8);
}

static long c_write_zero_full(struct world *w)
{
	buf[0] = 0;
	return w->c->write(w->efd_full, buf, 8);
}

static long c_write_null(struct world *w) { return w->c->write(w->efd, NULL, 8); }
static long c_write_null_short(struct world *w) { return w->c->write(w->efd, NULL, 4); }
static long c_write_bad_fd(struct world *w) { return w->c->write(w->closed, buf, 8); }
static long c_write_instance(struct world *w) { return w->c->write(w->ep, buf, 8); }
static long c_write_reg(struct world *w) { return w->c->write(w->reg, buf, 8); }
static long c_efd_read_empty(struct world *w) { return w->c->eventfd_read(w->efd, (eventfd_t *)buf); }
static long c_efd_read_bad(struct world *w) { return w->c->eventfd_read(w->closed, (eventfd_t *)buf); }
static long c_efd_read_inst(struct world *w) { return w->c->eventfd_read(w->ep, (eventfd_t *)buf); }
static long c_efd_write_max(struct world *w) { return w->c->eventfd_write(w->efd, UINT64_MAX); }
static long c_efd_write_ovf(struct world *w) { return w->c->eventfd_write(w->efd_full, 1); }
static long c_efd_write_bad(struct world *w) { return w->c->eventfd_write(-1, 1); }
static long c_efd_write_pipe(struct world *w) { return w->c->eventfd_write(w->p[1], 1); }

/* ---- close ---- */
static long c_close_neg(struct world *w) { return w->c->close(-1); }
static long c_close_closed(struct world *w) { return w->c->close(w->closed); }
static long c_close_never(struct world *w) { return w->c->close(4000); }
static long c_close_huge(struct world *w) { return w->c->close(INT_MAX); }

static long c_close_twice(struct world *w)
{
	int fd = w->c->eventfd(0, 0);

	REQUIRE(fd >= 0);
	REQUIRE(w->c->close(fd) == 0);
	return w->c->close(fd);
}

static long c_close_instance_twice(struct world *w)
{
	int fd = w->c->create1(0);

	REQUIRE(fd >= 0);
	REQUIRE(w->c->close(fd) == 0);
	return w->c->close(fd);
}

/* ---- ctl cases t_ctl_errors lacks ---- */
static long c_ctl_fd_huge(struct world *w)
{
	struct epoll_event ev = { .events = EPOLLIN };

	return w->c->ctl(w->ep, EPOLL_CTL_ADD, INT_MAX, &ev);
}

static long c_ctl_epfd_huge(struct world *w)
{
	struct epoll_event ev = { .events = EPOLLIN };

	return w->c->ctl(1 << 30, EPOLL_CTL_ADD, w->efd, &ev);
}

static long c_ctl_epfd_reg(struct world *w)
{
	struct epoll_event ev = { .events = EPOLLIN };

	return w->c->ctl(w->reg, EPOLL_CTL_ADD, w->efd, &ev);
}

static long c_ctl_op_min(struct world *w)
{
	struct epoll_event ev = { .events = EPOLLIN };

	return w->c->ctl(w->ep, INT_MIN, w->efd, &ev);
}

static long c_ctl_op_max(struct world *w)
{
	struct epoll_event ev = { .events = EPOLLIN };

	return w->c->ctl(w->ep, INT_MAX, w->efd, &ev);
}

/* every bit, EPOLLEXCLUSIVE with what it may not be combined with */
static long c_ctl_all_bits(struct world *w)
{
	struct epoll_event ev = { .events = 0xffffffffu };

	return w->c->ctl(w->ep, EPOLL_CTL_ADD, w->efd, &ev);
}

static long c_ctl_all_bits_pipe(struct world *w)
{
	struct epoll_event ev = { .events = 0xffffffffu };

	return w->c->ctl(w->ep, EPOLL_CTL_ADD, w->p[0], &ev);
}

/* every bit but EPOLLEXCLUSIVE (and uepoll's round-robin bit): accepted */
static long c_ctl_all_but_excl(struct world *w)
{
	struct epoll_event ev = { .events = ~(uint32_t)(EPOLLEXCLUSIVE | (1u << 26)) };

	if (w->c->ctl(w->ep, EPOLL_CTL_ADD, w->efd_ready, &ev) < 0)
		return -1;
	return w->c->wait(w->ep, evs, 4, 0) == 1 ? (long)evs[0].events : -2;
}

static long c_ctl_del_never(struct world *w) { return w->c->ctl(w->ep, EPOLL_CTL_DEL, 4000, NULL); }
static long c_ctl_mod_null_closed(struct world *w) { return w->c->ctl(w->ep, EPOLL_CTL_MOD, w->closed, NULL); }

struct tcase {
	const char *name;
	case_fn fn;
};

#define C(fn) { #fn, fn }

static const struct tcase cases[] = {
	C(c_create_0), C(c_create_neg), C(c_create_min), C(c_create_max),
	C(c_create1_1), C(c_create1_neg), C(c_create1_nonblock),
	C(c_create1_cloexec_bit), C(c_create1_max),
	C(c_wait_max0), C(c_wait_neg), C(c_wait_intmin), C(c_wait_intmax),
	C(c_wait_epmax), C(c_wait_epmax1), C(c_wait_max0_badfd),
	C(c_wait_null_empty), C(c_wait_null_ready), C(c_wait_fd_neg),
	C(c_wait_fd_closed), C(c_wait_fd_never), C(c_wait_fd_huge),
	C(c_wait_fd_efd), C(c_wait_fd_pipe), C(c_wait_fd_reg), C(c_wait_ready),
	C(c_pwait_neg), C(c_pwait_fd_efd), C(c_pwait_null_ready),
	C(c_pwait_mask), C(c_pwait2_nsec_neg), C(c_pwait2_nsec_big),
	C(c_pwait2_sec_neg), C(c_pwait2_bad_ts_bad_fd), C(c_pwait2_huge_ready),
	C(c_pwait2_max0), C(c_pwait2_fd_pipe), C(c_pwait2_null_ready),
	C(c_efd_flag4), C(c_efd_flag_neg), C(c_efd_rdwr), C(c_efd_sem_bad),
	C(c_efd_init_max),
	C(c_read_0), C(c_read_4), C(c_read_7), C(c_read_16), C(c_read_empty),
	C(c_read_4_empty), C(c_read_null_empty), C(c_read_null_short),
	C(c_read_null_ready), C(c_read_value), C(c_read_bad_fd),
	C(c_read_neg_fd), C(c_read_instance),
	C(c_write_0), C(c_write_4), C(c_write_16), C(c_write_max),
	C(c_write_max_short), C(c_write_overflow), C(c_write_zero_full),
	C(c_write_null), C(c_write_null_short), C(c_write_bad_fd),
	C(c_write_instance), C(c_write_reg),
	C(c_efd_read_empty), C(c_efd_read_bad), C(c_efd_read_inst),
	C(c_efd_write_max), C(c_efd_write_ovf), C(c_efd_write_bad),
	C(c_efd_write_pipe),
	C(c_close_neg), C(c_close_closed), C(c_close_never), C(c_close_huge),
	C(c_close_twice), C(c_close_instance_twice),
	C(c_ctl_fd_huge), C(c_ctl_epfd_huge), C(c_ctl_epfd_reg),
	C(c_ctl_op_min), C(c_ctl_op_max), C(c_ctl_all_bits),
	C(c_ctl_all_bits_pipe), C(c_ctl_all_but_excl), C(c_ctl_del_never),
	C(c_ctl_mod_null_closed),
};

/* uepoll_create2: flags as epoll_create1's, uflags pinned. */
static void test_create2(void)
{
	static const int flags[] = { 1, -1, O_NONBLOCK, EPOLL_CLOEXEC | 2 };
	static const unsigned int uflags[] = {
		0x1, 0x2, 0x80, 0x80000000u,
		UEPOLL_WAKE_LIFO | UEPOLL_WAKE_FIFO,
		UEPOLL_NOSPIN | UEPOLL_SPIN_KERNEL, ~0u,
	};

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		int k, u, ek, eu;

		errno = 0;
		k = epoll_create1(flags[i]);
		ek = errno;
		errno = 0;
		u = uepoll_create2(flags[i], 0);
		eu = errno;
		CHECK(k == -1 && u == -1 && ek == eu);
	}
	for (size_t i = 0; i < sizeof(uflags) / sizeof(uflags[0]); i++)
		CHECK_ERR(uepoll_create2(0, uflags[i]), EINVAL);
}

int main(void)
{
	size_t n = sizeof(cases) / sizeof(cases[0]);

	t_begin("t_bad_input");
	t_watchdog(60);
	for (size_t i = 0; i < n; i++) {
		const struct tcase *c = &cases[i];
		struct world kw, uw;
		long rk, ru;
		int ek, eu;

		world_init(&kw, &calls_kernel);
		errno = 0;
		rk = c->fn(&kw);
		ek = rk < 0 ? errno : 0;
		world_fini(&kw);

		world_init(&uw, &calls_uepoll);
		errno = 0;
		ru = c->fn(&uw);
		eu = ru < 0 ? errno : 0;
		world_fini(&uw);

		if (rk != ru || ek != eu) {
			fprintf(stderr, "%s: kernel %ld errno %d (%s), uepoll %ld errno %d (%s)\n",
				c->name, rk, ek, strerror(ek), ru, eu,
				strerror(eu));
			t_failures++;
		}
	}
	test_create2();
	printf("%zu cases compared with the kernel\n", n);
	return t_end();
}
