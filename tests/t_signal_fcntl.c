/*
 * t_signal_fcntl: a signal handler's fcntl (uepoll_fcntl, as fcntl(2),
 * which is async-signal-safe) while its thread is inside the library,
 * holding one of its locks (tests/sigop.h: every hold point, each compared
 * with the kernel's epoll and eventfd):
 *  - setfl:         F_SETFL O_NONBLOCK on a blocking ueventfd: the next
 *                   read of the emptied counter answers EAGAIN (it would
 *                   block for ever, else: the watchdog's);
 *  - setfl_last:    F_SETFL on an instance whose number another thread
 *                   closes while the handler's fcntl(2) is on its way
 *                   (the hook of its system call): EBADF, and the
 *                   handler's reference is the instance's last, whose
 *                   release takes its items' wq->lock (the walk holds the
 *                   written ueventfd's: a deadlock before the fix);
 *  - dupfd:         F_DUPFD above the fd table's first chunk;
 *  - dupfd_cloexec: F_DUPFD_CLOEXEC (obj__lock, held by the frame's dup
 *                   before the fix: a deadlock).
 */
#include "sigop.h"

static void blocking(struct sop_fix *f)
{
	REQUIRE(A->fcntl(f->efd, F_SETFL, 0) == 0);
}

static void setfl(struct sop_fix *f, struct t_log *l)
{
	t_log_res(l, A->fcntl(f->efd, F_SETFL, O_NONBLOCK));
	t_log_put(l, (A->fcntl(f->efd, F_GETFL) & O_NONBLOCK) != 0);
}

/* Empty the counter: the second read finds it empty. */
static void drain(struct sop_fix *f, struct t_log *l)
{
	uint64_t v = 0;

	t_log_res(l, A->read(f->efd, &v, sizeof(v)));
	t_log_res(l, A->read(f->efd, &v, sizeof(v)));
}

static void close_p_job(void)
{
	CHECK_EQ(A->close(F.P), 0);
}

static void close_p(void)
{
	sop_ask(close_p_job);
}

static void setfl_last(struct sop_fix *f, struct t_log *l)
{
	if (A->kernel) {
		close_p();
	} else {
		/* At the handler's own fcntl(2): its reference is then the
		 * last. */
		atomic_store(&sop_hhook_nr, SYS_fcntl);
		atomic_store(&sop_hhook, close_p);
	}
	t_log_res(l, A->fcntl(f->P, F_SETFL, O_NONBLOCK));
	t_log_put(l, atomic_exchange(&sop_hhook, NULL) == NULL);
}

static void dupfd(struct sop_fix *f, struct t_log *l)
{
	t_log_res(l, A->fcntl(f->efd, F_DUPFD, SOP_HIGH + 2));
}

static void dupfd_cloexec(struct sop_fix *f, struct t_log *l)
{
	t_log_res(l, A->fcntl(f->efd, F_DUPFD_CLOEXEC, SOP_LOW));
}

static const struct sop_op ops[] = {
	{ "setfl", blocking, setfl, drain },
	{ "setfl_last", NULL, setfl_last, NULL },
	{ "dupfd", NULL, dupfd, NULL },
	{ "dupfd_cloexec", NULL, dupfd_cloexec, NULL },
};

int main(void)
{
	return sop_main("t_signal_fcntl", ops, sizeof(ops) / sizeof(ops[0]));
}
