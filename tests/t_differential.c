/*
 * t_differential: random operation sequences run on the kernel and on
 * uepoll side by side, comparing every return value, errno and returned
 * event (the op model and its comparison rules are in diffops.c, shared
 * with the fuzz target tests/fuzz/fuzz_diff.c).
 *
 * On a mismatch the seed, sequence index and the sequence's op log are
 * printed (the log shows each op with "-> k ret/errno u ret/errno", and the
 * events both worlds returned).  Each sequence has its own generator state
 * derived from the seed and its index, so
 *   UEPOLL_TEST_SEED=<seed> UEPOLL_DIFF_SEQ=<index> t_differential
 * replays just that sequence (handy under strace or gdb).  A hang inside the
 * library is reported the same way by the watchdog.
 */
#include "diffops.h"

#include <signal.h>
#include <unistd.h>

static uint64_t base_seed;
static unsigned long seq_no;
static int reports;

static void on_mismatch(const char *what)
{
	t_failures++;
	if (reports++ >= 3) {
		/* one line each beyond the first few full logs */
		fprintf(stderr, "MISMATCH seed %llu sequence %lu op %d: %s\n",
			(unsigned long long)base_seed, seq_no, diff_nop, what);
		return;
	}
	fprintf(stderr, "MISMATCH seed %llu sequence %lu op %d: %s\nop log:\n%s\n",
		(unsigned long long)base_seed, seq_no, diff_nop, what,
		diff_logbuf);
}

/* Append the decimal form of v to buf at *n (async-signal-safe). */
static void put_num(char *buf, size_t *n, unsigned long long v)
{
	char tmp[24];
	int k = 0;

	do {
		tmp[k++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (k)
		buf[(*n)++] = tmp[--k];
}

/*
 * A hang inside the library during a sequence: say where, with the op log
 * so far (the op being run is its last line), using only write().
 */
static void on_hang(int sig)
{
	char msg[160];
	size_t n = 0;
	static const char a[] = "HANG seed ", b[] = " sequence ", c[] = " op ",
			  d[] = "; op log:\n";

	(void)sig;
	memcpy(msg + n, a, sizeof(a) - 1);
	n += sizeof(a) - 1;
	put_num(msg, &n, base_seed);
	memcpy(msg + n, b, sizeof(b) - 1);
	n += sizeof(b) - 1;
	put_num(msg, &n, seq_no);
	memcpy(msg + n, c, sizeof(c) - 1);
	n += sizeof(c) - 1;
	put_num(msg, &n, (unsigned long long)diff_nop);
	memcpy(msg + n, d, sizeof(d) - 1);
	n += sizeof(d) - 1;
	if (write(2, msg, n) < 0 || write(2, diff_logbuf, diff_loglen) < 0)
		_exit(1);
	_exit(1);
}

int main(void)
{
	uint64_t seed = t_seed(0x5eed0001);
	int nseq = (int)(2000 * t_scale()), nops = 60;
	const char *only;

	t_begin("t_differential");
	t_watchdog(120);
	signal(SIGALRM, on_hang);
	signal(SIGPIPE, SIG_IGN);
	diff_on_mismatch = on_mismatch;
	if (nseq < 50)
		nseq = 50;
	/* UEPOLL_DIFF_SEQ=n replays only sequence n (e.g. under strace) */
	only = getenv("UEPOLL_DIFF_SEQ");
	for (seq_no = 0; seq_no < (unsigned long)nseq; seq_no++) {
		if (only && strtoul(only, NULL, 0) != seq_no)
			continue;
		/* every sequence has its own seed so one can be replayed */
		diff_use_prng(seed ^ (0x9e3779b97f4a7c15ULL * (seq_no + 1)));
		base_seed = seed;
		diff_run_sequence(nops);
		if (only)
			fprintf(stderr, "op log:\n%s\n", diff_logbuf);
	}
	printf("ctl ok %lu, ctl errors %lu, events %lu, set-compared waits %lu\n",
	       diff_stats.ctl_ok, diff_stats.ctl_err, diff_stats.events,
	       diff_stats.wait_sets);
	if (reports > 3)
		fprintf(stderr, "%d mismatching sequences in all\n", reports);
	return t_end();
}
