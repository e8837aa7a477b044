/*
 * t_signal_dup3: a signal handler's dup3 (uepoll_dup3, as dup3(2), which
 * is async-signal-safe) while its thread is inside the library, holding
 * one of its locks (tests/sigop.h: every hold point, each compared with
 * the kernel's epoll and eventfd):
 *  - onto_object: a ueventfd onto another's last number, O_CLOEXEC: the
 *                 number is the first one's, close-on-exec, and the
 *                 second ueventfd leaves the instances that watched it;
 *  - replace:     a kernel eventfd onto a ueventfd's last number;
 *  - onto_free:   a ueventfd onto a free number above the fd table's
 *                 first chunk, O_CLOEXEC;
 *  - same:        dup3(efd, efd, 0): the kernel's EINVAL, nothing done.
 * Before the fix: the deadlocks t_signal_dup2 describes.
 */
#include "sigop.h"

static void onto_object(struct sop_fix *f, struct t_log *l)
{
	t_log_put(l, A->dup3(f->efd, f->efd2, O_CLOEXEC) == f->efd2);
}

static void replace(struct sop_fix *f, struct t_log *l)
{
	t_log_put(l, A->dup3(f->kx, f->efd, 0) == f->efd);
}

static void onto_free(struct sop_fix *f, struct t_log *l)
{
	t_log_res(l, A->dup3(f->efd, SOP_HIGH + 1, O_CLOEXEC));
}

static void same(struct sop_fix *f, struct t_log *l)
{
	t_log_res(l, A->dup3(f->efd, f->efd, 0));
}

static const struct sop_op ops[] = {
	{ "onto_object", NULL, onto_object, NULL },
	{ "replace", NULL, replace, NULL },
	{ "onto_free", NULL, onto_free, NULL },
	{ "same", NULL, same, NULL },
};

int main(void)
{
	return sop_main("t_signal_dup3", ops, sizeof(ops) / sizeof(ops[0]));
}
