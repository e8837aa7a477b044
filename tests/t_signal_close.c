/*
 * t_signal_close: a signal handler closes a number (uepoll_close, as
 * close(2), which is async-signal-safe) while its thread is inside the
 * library, holding one of its locks (tests/sigop.h: every hold point,
 * each compared with the kernel's epoll and eventfd).
 *  - close:          the last number of a ueventfd that two instances
 *                    watch: the number is free when the call returns (a
 *                    new eventfd() gets it, and a write through it reaches
 *                    that one), and neither instance reports the ueventfd
 *                    again.  Before the fix its close took the instances'
 *                    port->mtx and its own wq->lock (port_drop_source)
 *                    and obj__lock, which the interrupted frame held: a
 *                    deadlock.
 *  - close_instance: the last number and the last reference of an
 *                    instance: its release takes its items' wq->lock (the
 *                    walk holds the written ueventfd's).
 *  - close_dup:      one of a ueventfd's two numbers: it stays watched
 *                    through the other, as the kernel's file does.
 */
#include "sigop.h"

static void close_efd(struct sop_fix *f, struct t_log *l)
{
	t_log_res(l, A->close(f->efd));
	/* The number is free: the lowest, so the next one made gets it. */
	f->k = eventfd(0, EFD_NONBLOCK);
	t_log_put(l, f->k == f->efd);
}

static void close_instance(struct sop_fix *f, struct t_log *l)
{
	t_log_res(l, A->close(f->P));
}

static void dup_low(struct sop_fix *f)
{
	REQUIRE(A->dup2(f->efd, SOP_LOW) == SOP_LOW);
}

static void close_one(struct sop_fix *f, struct t_log *l)
{
	t_log_res(l, A->close(f->efd));
}

static const struct sop_op ops[] = {
	{ "close", NULL, close_efd, NULL },
	{ "close_instance", NULL, close_instance, NULL },
	{ "close_dup", dup_low, close_one, NULL },
};

int main(void)
{
	return sop_main("t_signal_close", ops, sizeof(ops) / sizeof(ops[0]));
}
