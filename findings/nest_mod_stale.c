/*
 * nest_mod_stale.c - the smallest program behind fuzz_diff-nest-et-lt.bin:
 * a MOD that re-arms an item still on its instance's ready list wakes
 * nobody in the kernel, and wakes the instance's holders in uepoll.
 *
 *   cc -o nest_mod_stale nest_mod_stale.c && ./nest_mod_stale
 *   build/preload/uepoll-run -- ./nest_mod_stale
 *
 * a holds b EPOLLET; b holds the eventfd e (counter 3) level-triggered.
 * a's first wait reports b (the kernel's poll of b leaves e on b's ready
 * list: it is ready).  Then b's registration of e is MODded to no events
 * and back to EPOLLIN, with no wait or poll between.
 *
 *   native:  a: 1, a after mods: 0, c: 0, b: 1, a after b: 0, poll b: 1
 *   uepoll:  a: 1, a after mods: 1, ...           (the rest the same)
 *
 * Why (Linux 6.18, fs/eventpoll.c): ep_modify() polls the file and, if it
 * is ready, puts the item on the ready list and wakes the epoll's waiters
 * and pollers only if the item was not on the list already.  e never left
 * b's list: the MOD to no events does not take it off (only a scan does:
 * a wait on b, or a poll of b, which finds it not ready).  So the second
 * MOD wakes nobody and a, edge-triggered, gets no new edge.
 *
 * uepoll: b is watched (a holds it), and a watched instance keeps its fd
 * exact at every ctl: the MOD to no events prunes e from b's ready queue
 * and takes the doorbell (bell_mirror, from port_revalidate); the MOD back
 * queues e again, which is an idle->ready change, and rings the doorbell:
 * a's kernel epoll gets the edge.
 *
 * A fix has to keep the item in place through the silent MOD, as UNSTALE
 * (bell_unstale) does for instances a kernel epoll holds, and ring at the
 * MOD back only for holders whose registration still has b linked (the
 * level-triggered ones), while poll() of b still reads it ready: a
 * doorbell write reaches every holder at once, so the two kinds of holder
 * cannot both be matched by the doorbell alone.  Open (issue 33's note).
 */
#include <poll.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

int main(void)
{
	int b = epoll_create1(0), a = epoll_create1(0), e = eventfd(3, 0);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 1 };
	struct epoll_event out[4];
	struct pollfd p = { .fd = b, .events = POLLIN };
	int c;

	epoll_ctl(a, EPOLL_CTL_ADD, b, &ev);
	ev.events = EPOLLIN;
	ev.data.u64 = 2;
	epoll_ctl(b, EPOLL_CTL_ADD, e, &ev);
	printf("a: %d\n", epoll_wait(a, out, 4, 0));
	ev.events = 0;
	epoll_ctl(b, EPOLL_CTL_MOD, e, &ev);
	ev.events = EPOLLIN;
	epoll_ctl(b, EPOLL_CTL_MOD, e, &ev);
	printf("a after mods: %d\n", epoll_wait(a, out, 4, 0));
	c = epoll_create1(0);
	epoll_ctl(c, EPOLL_CTL_ADD, a, &ev);
	printf("c: %d\n", epoll_wait(c, out, 4, 0));
	printf("b: %d\n", epoll_wait(b, out, 4, 0));
	printf("a after b: %d\n", epoll_wait(a, out, 4, 0));
	printf("poll b: %d\n", poll(&p, 1, 0));
	return 0;
}
