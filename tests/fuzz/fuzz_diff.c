/*
 * fuzz_diff: libFuzzer target for the differential op model (diffops.c).
 * Each input is decoded, byte by byte, into the choices of one operation
 * sequence (create, ctl with any op/flags/fd including invalid ones, read,
 * write, wait/pwait/pwait2 with timeout 0, close, nesting, pipes), run on
 * the kernel and on uepoll side by side.  Any difference in a return value,
 * errno or returned event aborts with the op log (libFuzzer then saves the
 * input: replay it with `fuzz_diff FILE`).  So does an fd left open after
 * the sequence closed everything.
 *
 * Built with clang only: -fsanitize=fuzzer,address,undefined for this file,
 * and the library's sources compiled again with -fsanitize=fuzzer-no-link so
 * that the fuzzer sees their coverage (tests/CMakeLists.txt).
 */
#include "diffops.h"

#include <signal.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_mismatch(const char *what)
{
	fprintf(stderr, "DIVERGENCE at op %d: %s\nop log:\n%s\n", diff_nop, what,
		diff_logbuf);
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	signal(SIGPIPE, SIG_IGN);
	diff_on_mismatch = on_mismatch;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Counted around each input: libFuzzer itself may hold a varying
	 * number of fds between inputs. */
	int before = t_count_fds(), after;

	diff_use_bytes(data, size);
	diff_run_sequence(1000);
	after = t_count_fds();
	if (after != before) {
		fprintf(stderr, "FD LEAK: %d fds before, %d after; op log:\n%s\n",
			before, after, diff_logbuf);
		abort();
	}
	return 0;
}
