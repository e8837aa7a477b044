/*
 * t_ctl_errors: uepoll_ctl's errno for every error epoll_ctl(2) documents.
 * Each case builds the same situation twice, once with the kernel's
 * epoll/eventfd and once with uepoll, runs the same call in both and demands
 * the same return value and errno.  A few expectations are also pinned to the
 * man page's errno so that a kernel and library that agree on something
 * unexpected still get noticed.
 */
#include "testlib.h"
#include "calls.h"

#include <fcntl.h>
#include <unistd.h>

/* Objects every case may use, created fresh for each case and world. */
struct world {
	const struct calls *o;
	int ep, ep2, ep3;	/* instances */
	int efd, efd2;		/* eventfds */
	int pfd[2];		/* a pipe */
	int reg;		/* a regular file */
	int extra[8];		/* objects a case creates; closed after */
	int nextra;
};

static void world_init(struct world *w, const struct calls *o)
{
	char path[] = "/tmp/uepoll_ctl_XXXXXX";

	memset(w, 0, sizeof(*w));
	w->o = o;
	w->ep = o->create1(0);
	w->ep2 = o->create1(0);
	w->ep3 = o->create1(0);
	w->efd = o->eventfd(0, EFD_NONBLOCK);
	w->efd2 = o->eventfd(1, EFD_NONBLOCK);
	REQUIRE(w->ep >= 0 && w->ep2 >= 0 && w->ep3 >= 0);
	REQUIRE(w->efd >= 0 && w->efd2 >= 0);
	REQUIRE(pipe(w->pfd) == 0);
	w->reg = mkstemp(path);
	REQUIRE(w->reg >= 0);
	unlink(path);
}

static void world_fini(struct world *w)
{
	const struct calls *o = w->o;

	for (int i = 0; i < w->nextra; i++)
		CHECK_EQ(o->close(w->extra[i]), 0);
	CHECK_EQ(o->close(w->ep), 0);
	CHECK_EQ(o->close(w->ep2), 0);
	CHECK_EQ(o->close(w->ep3), 0);
	CHECK_EQ(o->close(w->efd), 0);
	CHECK_EQ(o->close(w->efd2), 0);
	CHECK_EQ(close(w->pfd[0]), 0);
	CHECK_EQ(close(w->pfd[1]), 0);
	CHECK_EQ(close(w->reg), 0);
}

static int add_extra(struct world *w, int fd)
{
	REQUIRE(fd >= 0);
	REQUIRE(w->nextra < 8);
	w->extra[w->nextra++] = fd;
	return fd;
}

/* An fd number that is certainly closed right now. */
static int closed_fd(struct world *w)
{
	int fd = w->o->eventfd(0, 0);

	REQUIRE(fd >= 0);
	w->o->close(fd);
	return fd;
}

static int ctl(struct world *w, int op, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = 1 };

	return w->o->ctl(w->ep, op, fd, &ev);
}

/* Setup steps must succeed in both worlds. */
#define SETUP(x) REQUIRE((x) == 0)

/* Each case returns the result of its final call with errno set. */
typedef int (*case_fn)(struct world *w);

static int c_bad_epfd_neg(struct world *w)
{
	struct epoll_event ev = { .events = EPOLLIN };

	return w->o->ctl(-1, EPOLL_CTL_ADD, w->efd, &ev);
}

static int c_bad_epfd_closed(struct world *w)
{
	struct epoll_event ev = { .events = EPOLLIN };

	return w->o->ctl(closed_fd(w), EPOLL_CTL_ADD, w->efd, &ev);
}

static int c_bad_fd_neg(struct world *w)
{
	return ctl(w, EPOLL_CTL_ADD, -1, EPOLLIN);
}

static int c_bad_fd_closed(struct world *w)
{
	return ctl(w, EPOLL_CTL_ADD, closed_fd(w), EPOLLIN);
}

static int c_bad_fd_closed_del(struct world *w)
{
	return w->o->ctl(w->ep, EPOLL_CTL_DEL, closed_fd(w), NULL);
}

/* A ueventfd that was registered and then closed. */
static int c_closed_registered(struct world *w)
{
	int fd = w->o->eventfd(0, 0);

	SETUP(ctl(w, EPOLL_CTL_ADD, fd, EPOLLIN));
	SETUP(w->o->close(fd));
	return ctl(w, EPOLL_CTL_MOD, fd, EPOLLIN);
}

static int c_epfd_is_eventfd(struct world *w)
{
	struct epoll_event ev = { .events = EPOLLIN };

	return w->o->ctl(w->efd, EPOLL_CTL_ADD, w->efd2, &ev);
}

static int c_epfd_is_pipe(struct world *w)
{
	struct epoll_event ev = { .events = EPOLLIN };

	return w->o->ctl(w->pfd[0], EPOLL_CTL_ADD, w->efd, &ev);
}

static int c_epfd_is_eventfd_del(struct world *w)
{
	return w->o->ctl(w->efd, EPOLL_CTL_DEL, w->efd2, NULL);
}

static int c_self(struct world *w)
{
	return ctl(w, EPOLL_CTL_ADD, w->ep, EPOLLIN);
}

static int c_self_del(struct world *w)
{
	return w->o->ctl(w->ep, EPOLL_CTL_DEL, w->ep, NULL);
}

static int c_bad_op(struct world *w)
{
	return ctl(w, 99, w->efd, EPOLLIN);
}

static int c_bad_op_registered(struct world *w)
{
	SETUP(ctl(w, EPOLL_CTL_ADD, w->efd, EPOLLIN));
	return ctl(w, 0, w->efd, EPOLLIN);
}

static int c_bad_op_neg(struct world *w)
{
	return ctl(w, -1, w->efd, EPOLLIN);
}

static int c_mod_exclusive(struct world *w)
{
	SETUP(ctl(w, EPOLL_CTL_ADD, w->efd, EPOLLIN));
	return ctl(w, EPOLL_CTL_MOD, w->efd, EPOLLIN | EPOLLEXCLUSIVE);
}

static int c_mod_of_exclusive(struct world *w)
{
	SETUP(ctl(w, EPOLL_CTL_ADD, w->efd, EPOLLIN | EPOLLEXCLUSIVE));
	return ctl(w, EPOLL_CTL_MOD, w->efd, EPOLLIN | EPOLLOUT);
}

static int c_mod_of_exclusive_pipe(struct world *w)
{
	SETUP(ctl(w, EPOLL_CTL_ADD, w->pfd[0], EPOLLIN | EPOLLEXCLUSIVE));
	return ctl(w, EPOLL_CTL_MOD, w->pfd[0], EPOLLIN);
}

static int c_del_of_exclusive(struct world *w)
{
	SETUP(ctl(w, EPOLL_CTL_ADD, w->efd, EPOLLIN | EPOLLEXCLUSIVE));
	return w->o->ctl(w->ep, EPOLL_CTL_DEL, w->efd, NULL);
}

static int c_excl_oneshot(struct world *w)
{
	return ctl(w, EPOLL_CTL_ADD, w->efd, EPOLLIN | EPOLLEXCLUSIVE |
		   EPOLLONESHOT);
}

static int c_excl_pri(struct world *w)
{
	return ctl(w, EPOLL_CTL_ADD, w->efd, EPOLLIN | EPOLLEXCLUSIVE |
		   EPOLLPRI);
}

static int c_excl_rdhup(struct world *w)
{
	return ctl(w, EPOLL_CTL_ADD, w->pfd[0], EPOLLIN | EPOLLEXCLUSIVE |
		   EPOLLRDHUP);
}

static int c_excl_et_ok(struct world *w)
{
	return ctl(w, EPOLL_CTL_ADD, w->efd, EPOLLIN | EPOLLOUT | EPOLLET |
		   EPOLLERR | EPOLLHUP | EPOLLEXCLUSIVE);
}

static int c_excl_only(struct world *w)
{
	return ctl(w, EPOLL_CTL_ADD, w->efd, EPOLLEXCLUSIVE);
}

static int c_excl_epoll_target(struct world *w)
{
	return ctl(w, EPOLL_CTL_ADD, w->ep2, EPOLLIN | EPOLLEXCLUSIVE);
}

static int c_eexist(struct world *w)
{
	SETUP(ctl(w, EPOLL_CTL_ADD, w->efd, EPOLLIN));
	return ctl(w, EPOLL_CTL_ADD, w->efd, EPOLLOUT);
}

static int c_eexist_instance(struct world *w)
{
	SETUP(ctl(w, EPOLL_CTL_ADD, w->ep2, EPOLLIN));
	return ctl(w, EPOLL_CTL_ADD, w->ep2, EPOLLIN);
}

static int c_eexist_pipe(struct world *w)
{
	SETUP(ctl(w, EPOLL_CTL_ADD, w->pfd[0], EPOLLIN));
	return ctl(w, EPOLL_CTL_ADD, w->pfd[0], EPOLLIN);
}

static int c_enoent_mod(struct world *w)
{
	return ctl(w, EPOLL_CTL_MOD, w->efd, EPOLLIN);
}

static int c_enoent_del(struct world *w)
{
	return w->o->ctl(w->ep, EPOLL_CTL_DEL, w->efd, NULL);
}

static int c_enoent_del_twice(struct world *w)
{
	SETUP(ctl(w, EPOLL_CTL_ADD, w->efd, EPOLLIN));
	SETUP(w->o->ctl(w->ep, EPOLL_CTL_DEL, w->efd, NULL));
	return w->o->ctl(w->ep, EPOLL_CTL_DEL, w->efd, NULL);
}

static int c_enoent_other_instance(struct world *w)
{
	struct epoll_event ev = { .events = EPOLLIN };

	SETUP(w->o->ctl(w->ep2, EPOLL_CTL_ADD, w->efd, &ev));
	return ctl(w, EPOLL_CTL_MOD, w->efd, EPOLLIN);
}

static int c_enoent_pipe(struct world *w)
{
	return ctl(w, EPOLL_CTL_MOD, w->pfd[0], EPOLLIN);
}

static int c_enoent_instance(struct world *w)
{
	return w->o->ctl(w->ep, EPOLL_CTL_DEL, w->ep2, NULL);
}

static int c_eperm(struct world *w)
{
	return ctl(w, EPOLL_CTL_ADD, w->reg, EPOLLIN);
}

static int c_eperm_mod(struct world *w)
{
	return ctl(w, EPOLL_CTL_MOD, w->reg, EPOLLIN);
}

static int c_eloop2(struct world *w)
{
	struct epoll_event ev = { .events = EPOLLIN };

	SETUP(ctl(w, EPOLL_CTL_ADD, w->ep2, EPOLLIN));
	return w->o->ctl(w->ep2, EPOLL_CTL_ADD, w->ep, &ev);
}

static int c_eloop3(struct world *w)
{
	struct epoll_event ev = { .events = EPOLLIN };

	SETUP(ctl(w, EPOLL_CTL_ADD, w->ep2, EPOLLIN));
	SETUP(w->o->ctl(w->ep2, EPOLL_CTL_ADD, w->ep3, &ev));
	return w->o->ctl(w->ep3, EPOLL_CTL_ADD, w->ep, &ev);
}

/* A diamond is not a loop. */
static int c_diamond(struct world *w)
{
	struct epoll_event ev = { .events = EPOLLIN };

	SETUP(ctl(w, EPOLL_CTL_ADD, w->ep2, EPOLLIN));
	SETUP(ctl(w, EPOLL_CTL_ADD, w->ep3, EPOLLIN));
	SETUP(w->o->ctl(w->ep2, EPOLL_CTL_ADD, w->efd, &ev));
	return w->o->ctl(w->ep3, EPOLL_CTL_ADD, w->ep2, &ev);
}

/* A loop that was broken by DEL may be formed the other way round. */
static int c_loop_after_del(struct world *w)
{
	struct epoll_event ev = { .events = EPOLLIN };

	SETUP(ctl(w, EPOLL_CTL_ADD, w->ep2, EPOLLIN));
	SETUP(w->o->ctl(w->ep, EPOLL_CTL_DEL, w->ep2, NULL));
	return w->o->ctl(w->ep2, EPOLL_CTL_ADD, w->ep, &ev);
}

/* A loop through an instance that was closed is gone with it. */
static int c_loop_after_close(struct world *w)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int e4 = w->o->create1(0);

	REQUIRE(e4 >= 0);
	SETUP(ctl(w, EPOLL_CTL_ADD, e4, EPOLLIN));
	SETUP(w->o->ctl(e4, EPOLL_CTL_ADD, w->ep2, &ev));
	SETUP(w->o->close(e4));
	return w->o->ctl(w->ep2, EPOLL_CTL_ADD, w->ep, &ev);
}

static int c_efault_add(struct world *w)
{
	return w->o->ctl(w->ep, EPOLL_CTL_ADD, w->efd, NULL);
}

static int c_efault_mod(struct world *w)
{
	SETUP(ctl(w, EPOLL_CTL_ADD, w->efd, EPOLLIN));
	return w->o->ctl(w->ep, EPOLL_CTL_MOD, w->efd, NULL);
}

/* The kernel copies the event before it looks at the fds. */
static int c_efault_before_ebadf(struct world *w)
{
	return w->o->ctl(-1, EPOLL_CTL_ADD, -1, NULL);
}

static int c_del_null_ok(struct world *w)
{
	SETUP(ctl(w, EPOLL_CTL_ADD, w->efd, EPOLLIN));
	return w->o->ctl(w->ep, EPOLL_CTL_DEL, w->efd, NULL);
}

static int c_del_null_pipe_ok(struct world *w)
{
	SETUP(ctl(w, EPOLL_CTL_ADD, w->pfd[0], EPOLLIN));
	return w->o->ctl(w->ep, EPOLL_CTL_DEL, w->pfd[0], NULL);
}

static int c_del_null_instance_ok(struct world *w)
{
	SETUP(ctl(w, EPOLL_CTL_ADD, w->ep2, EPOLLIN));
	return w->o->ctl(w->ep, EPOLL_CTL_DEL, w->ep2, NULL);
}

static int c_add_ok_all_flags(struct world *w)
{
	return ctl(w, EPOLL_CTL_ADD, w->efd, EPOLLIN | EPOLLOUT | EPOLLPRI |
		   EPOLLRDHUP | EPOLLET | EPOLLONESHOT | EPOLLERR | EPOLLHUP |
		   EPOLLRDNORM | EPOLLWRNORM | EPOLLRDBAND | EPOLLWRBAND |
		   EPOLLMSG);
}

static int c_add_zero_events(struct world *w)
{
	return ctl(w, EPOLL_CTL_ADD, w->efd, 0);
}

/* Unknown event bits are accepted and ignored by the kernel. */
static int c_add_unknown_bits(struct world *w)
{
	return ctl(w, EPOLL_CTL_ADD, w->efd, EPOLLIN | 0x00f00000u);
}

static int c_add_closed_instance(struct world *w)
{
	int e4 = w->o->create1(0);

	REQUIRE(e4 >= 0);
	SETUP(w->o->close(e4));
	return ctl(w, EPOLL_CTL_ADD, e4, EPOLLIN);
}

static int c_eexist_after_mods(struct world *w)
{
	/* MODs do not unregister: a later ADD still finds the item. */
	int fd = add_extra(w, w->o->eventfd(0, 0));

	SETUP(ctl(w, EPOLL_CTL_ADD, fd, EPOLLIN));
	SETUP(ctl(w, EPOLL_CTL_MOD, fd, EPOLLOUT | EPOLLET));
	SETUP(ctl(w, EPOLL_CTL_MOD, fd, EPOLLIN | EPOLLONESHOT));
	return ctl(w, EPOLL_CTL_ADD, fd, EPOLLIN);
}

struct tcase {
	const char *name;
	case_fn fn;
	int want_errno; /* 0: success expected */
};

#define C(fn, e) { #fn, fn, e }

static const struct tcase cases[] = {
	C(c_bad_epfd_neg, EBADF),
	C(c_bad_epfd_closed, EBADF),
	C(c_bad_fd_neg, EBADF),
	C(c_bad_fd_closed, EBADF),
	C(c_bad_fd_closed_del, EBADF),
	C(c_closed_registered, EBADF),
	C(c_epfd_is_eventfd, EINVAL),
	C(c_epfd_is_pipe, EINVAL),
	C(c_epfd_is_eventfd_del, EINVAL),
	C(c_self, EINVAL),
	C(c_self_del, EINVAL),
	C(c_bad_op, EINVAL),
	C(c_bad_op_registered, EINVAL),
	C(c_bad_op_neg, EINVAL),
	C(c_mod_exclusive, EINVAL),
	C(c_mod_of_exclusive, EINVAL),
	C(c_mod_of_exclusive_pipe, EINVAL),
	C(c_del_of_exclusive, 0),
	C(c_excl_oneshot, EINVAL),
	C(c_excl_pri, EINVAL),
	C(c_excl_rdhup, EINVAL),
	C(c_excl_et_ok, 0),
	C(c_excl_only, 0),
	C(c_excl_epoll_target, EINVAL),
	C(c_eexist, EEXIST),
	C(c_eexist_instance, EEXIST),
	C(c_eexist_pipe, EEXIST),
	C(c_enoent_mod, ENOENT),
	C(c_enoent_del, ENOENT),
	C(c_enoent_del_twice, ENOENT),
	C(c_enoent_other_instance, ENOENT),
	C(c_enoent_pipe, ENOENT),
	C(c_enoent_instance, ENOENT),
	C(c_eperm, EPERM),
	C(c_eperm_mod, EPERM),
	C(c_eloop2, ELOOP),
	C(c_eloop3, ELOOP),
	C(c_diamond, 0),
	C(c_loop_after_del, 0),
	C(c_loop_after_close, 0),
	C(c_efault_add, EFAULT),
	C(c_efault_mod, EFAULT),
	C(c_efault_before_ebadf, EFAULT),
	C(c_del_null_ok, 0),
	C(c_del_null_pipe_ok, 0),
	C(c_del_null_instance_ok, 0),
	C(c_add_ok_all_flags, 0),
	C(c_add_zero_events, 0),
	C(c_add_unknown_bits, 0),
	C(c_add_closed_instance, EBADF),
	C(c_eexist_after_mods, EEXIST),
};

int main(void)
{
	t_begin("t_ctl_errors");
	t_watchdog(120);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct tcase *c = &cases[i];
		struct world kw, uw;
		int rk, ru, ek, eu;

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
			fprintf(stderr, "%s: kernel %d errno %d (%s), uepoll %d errno %d (%s)\n",
				c->name, rk, ek, strerror(ek), ru, eu,
				strerror(eu));
			t_failures++;
		}
		if (ek != c->want_errno) {
			/* The kernel disagrees with the man page: report, but
			 * the comparison above is what tests uepoll. */
			fprintf(stderr, "note: %s: kernel errno %d (%s), man page says %d\n",
				c->name, ek, strerror(ek), c->want_errno);
		}
	}
	return t_end();
}
