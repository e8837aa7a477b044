/* SPDX-License-Identifier: MIT */
/*
 * p_signal - a signal handler writes an eventfd while the thread it
 * interrupted is inside a call on the same eventfd or on an instance
 * watching it (uepoll holds the object's locks then): no deadlock, no
 * lost write.  Bounded rounds, handshakes instead of timing.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "ptest.h"

#define ROUNDS 300
#define FLOOD 3000

static int efd, ep;
static pthread_t main_th;
static sem_t ready;
static volatile sig_atomic_t handled;
static _Atomic int flooding;

static void on_usr1(int sig)
{
	int e = errno;

	if (eventfd_write(efd, 1) == 0)
		handled++;
	errno = e;
}

static void *sender(void *arg)
{
	/* Part 1: one signal per wait, sent once the main thread says it
	 * is about to wait. */
	for (int i = 0; i < ROUNDS; i++) {
		sem_wait(&ready);
		pthread_kill(main_th, SIGUSR1);
	}
	/* Part 2: a flood while the main thread writes and reads. */
	sem_wait(&ready);
	for (int i = 0; i < FLOOD && flooding; i++)
		pthread_kill(main_th, SIGUSR1);
	return arg;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct epoll_event ev = { .events = EPOLLIN }, out;
	uint64_t v, sum = 0, writes = 0;
	pthread_t th;
	int n;

	p_begin(60);
	sigemptyset(&sa.sa_mask);
	P_REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	efd = eventfd(0, EFD_NONBLOCK);
	ep = epoll_create1(0);
	P_REQUIRE(efd >= 0 && ep >= 0);
	P_REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
	P_REQUIRE(sem_init(&ready, 0, 0) == 0);
	main_th = pthread_self();
	flooding = 1;
	P_REQUIRE(pthread_create(&th, NULL, sender, NULL) == 0);

	for (int i = 0; i < ROUNDS; i++) {
		sem_post(&ready);
		for (;;) {
			n = epoll_wait(ep, &out, 1, -1);
			if (n == 1)
				break;
			P_REQUIRE(n < 0 && errno == EINTR);
		}
		/* The handler may still be running when a wait returns
		 * (it wrote, the wait saw it): read until the count is met. */
		while (sum < (uint64_t)i + 1) {
			if (eventfd_read(efd, &v) == 0)
				sum += v;
			else
				P_REQUIRE(errno == EAGAIN);
		}
	}
	P_CHECK(sum == ROUNDS);

	sem_post(&ready);
	for (int i = 0; i < 20000; i++) {
		if (eventfd_write(efd, 1) == 0)
			writes++;
		if (eventfd_read(efd, &v) == 0)
			sum += v;
		(void)epoll_wait(ep, &out, 1, 0);
	}
	flooding = 0;
	P_REQUIRE(pthread_join(th, NULL) == 0);
	while (eventfd_read(efd, &v) == 0)
		sum += v;
	printf("rounds %d, writes %llu, handled %d, counted %llu\n", ROUNDS,
	       (unsigned long long)writes, (int)handled,
	       (unsigned long long)sum);
	P_CHECK(sum == writes + (uint64_t)handled);
	close(ep);
	close(efd);
	sem_destroy(&ready);
	return p_end();
}
