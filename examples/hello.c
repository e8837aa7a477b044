/* The README example: a producer thread signals a ueventfd, the main thread
 * waits on a uepoll instance and collects the counter. */
#include <pthread.h>
#include <stdio.h>
#include <uepoll.h>

static int efd;

static void *producer(void *arg)
{
	for (int i = 0; i < 3; i++)
		ueventfd_write(efd, 1); /* no system call unless someone sleeps */
	return arg;
}

int main(void)
{
	int ep = uepoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = -1 }, out[8];
	pthread_t t;
	eventfd_t v = 0;

	efd = ueventfd(0, EFD_NONBLOCK);
	ev.data.fd = efd;
	uepoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
	pthread_create(&t, NULL, producer, NULL);
	pthread_join(t, NULL);
	int n = uepoll_wait(ep, out, 8, -1);
	ueventfd_read(out[0].data.fd, &v);
	printf("%d event(s), counter %llu\n", n, (unsigned long long)v);
	uepoll_close(efd);
	uepoll_close(ep);
	return 0;
}
