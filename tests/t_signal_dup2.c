/*
 * t_signal_dup2: a signal handler's dup2 (uepoll_dup2, as dup2(2), which
 * is async-signal-safe) while its thread is inside the library, holding
 * one of its locks (tests/sigop.h: every hold point, each compared with
 * the kernel's epoll and eventfd):
 *  - replace:     a kernel eventfd onto a ueventfd's last number: the
 *                 number leads to the kernel file when the call returns
 *                 (writes reach it), and the ueventfd, closed with its
 *                 last number, leaves the instances that watched it;
 *  - onto_object: a ueventfd onto another's last number: the number is
 *                 the first one's (writes reach its counter), the second
 *                 is closed, and the instances report only the first;
 *  - onto_free:   a ueventfd onto a free number above the fd table's
 *                 first chunk (the handler's dup maps the chunk);
 *  - onto_kernel: a ueventfd onto a kernel eventfd's number;
 *  - self:        dup2(efd, efd): the number, untouched.
 * Before the fix the dup took obj__lock, and the close of the object it
 * replaced the instances' port->mtx and the source's wq->lock, which the
 * interrupted frame may hold: a deadlock.
 */
#include "sigop.h"

static void replace(struct sop_fix *f, struct t_log *l)
{
	t_log_put(l, A->dup2(f->kx, f->efd) == f->efd);
}

static void onto_object(struct sop_fix *f, struct t_log *l)
{
	t_log_put(l, A->dup2(f->efd, f->efd2) == f->efd2);
}

static void onto_free(struct sop_fix *f, struct t_log *l)
{
	t_log_res(l, A->dup2(f->efd, SOP_HIGH));
}

static void onto_kernel(struct sop_fix *f, struct t_log *l)
{
	t_log_put(l, A->dup2(f->efd, f->kx) == f->kx);
}

static void self(struct sop_fix *f, struct t_log *l)
{
	t_log_put(l, A->dup2(f->efd, f->efd) == f->efd);
}

static const struct sop_op ops[] = {
	{ "replace", NULL, replace, NULL },
	{ "onto_object", NULL, onto_object, NULL },
	{ "onto_free", NULL, onto_free, NULL },
	{ "onto_kernel", NULL, onto_kernel, NULL },
	{ "self", NULL, self, NULL },
};

int main(void)
{
	return sop_main("t_signal_dup2", ops, sizeof(ops) / sizeof(ops[0]));
}
