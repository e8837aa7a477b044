/* SPDX-License-Identifier: MIT */
/*
 * kselftest_select.c - a main() for a kernel selftest built on the 6.1
 * kselftest_harness.h, so that kselftest.sh can run some of its cases.
 *
 * The test's own source (from Debian's linux-source package, extracted at
 * test time, never copied into this tree) is included whole and unchanged:
 *
 *   cc -pthread -I SELFTESTS_DIR -DKS_TEST='"/path/to/epoll_wakeup_test.c"' \
 *      -o prog kselftest_select.c
 *
 * The 6.1 harness has no option to choose cases (newer ones have -t/-r),
 * so only its TEST_HARNESS_MAIN is replaced: the harness is included
 * first, its TEST_HARNESS_MAIN emptied, and this file's main() prunes the
 * harness's list of tests before handing it to the harness's own runner
 * (test_harness_run: one forked child per case, TAP output as usual).
 * With no option, every case runs exactly as the kernel's main() runs it.
 *
 *   prog                  all cases
 *   prog -o NAME ...      only these cases (NAME as in "global.NAME" or
 *                         the full "global.NAME"), in the file's order
 *   prog -x NAME ...      all cases but these
 *   prog -l               list the cases, one a line
 *   prog -i NAME          run NAME in this process, without the harness's
 *                         fork, and exit 0 if it passed: its epoll and
 *                         eventfd objects then belong to a process that
 *                         ends with exit(), so uepoll-run --stats prints
 *                         their counts (the harness's children end with
 *                         _exit(), which prints nothing)
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#undef TEST_HARNESS_MAIN
#define TEST_HARNESS_MAIN

#include KS_TEST

/* TEST_HARNESS_MAIN's constructor, at the same place: the end of the file
 * (the harness finds the order its constructors run in with it). */
static void __attribute__((constructor)) ks_constructor_order_last(void)
{
	if (!__constructor_order)
		__constructor_order = _CONSTRUCTOR_ORDER_BACKWARD;
}

static int ks_match(const struct __fixture_metadata *f,
		    const struct __test_metadata *t, const char *name)
{
	size_t n = strlen(f->name);

	if (strcmp(name, t->name) == 0)
		return 1;
	return strncmp(name, f->name, n) == 0 && name[n] == '.' &&
	       strcmp(name + n + 1, t->name) == 0;
}

static int ks_listed(const struct __fixture_metadata *f,
		     const struct __test_metadata *t, char **names, int n)
{
	for (int i = 0; i < n; i++)
		if (ks_match(f, t, names[i]))
			return 1;
	return 0;
}

/* Keep the tests for which keep() says so, in their order; the list is the
 * harness's: next ends in NULL, the head's prev is the tail. */
static void ks_prune(int only, char **names, int n)
{
	for (struct __fixture_metadata *f = __fixture_list; f; f = f->next) {
		struct __test_metadata *head = NULL, *tail = NULL, *next;

		for (struct __test_metadata *t = f->tests; t; t = next) {
			next = t->next;
			if (ks_listed(f, t, names, n) != only)
				continue;
			t->next = NULL;
			if (!head) {
				head = t;
			} else {
				tail->next = t;
				t->prev = tail;
			}
			tail = t;
		}
		if (head)
			head->prev = tail;
		f->tests = head;
	}
}

static int ks_inproc(const char *name)
{
	static struct __test_results results;
	struct __fixture_variant_metadata no_variant = { .name = "" };

	for (struct __fixture_metadata *f = __fixture_list; f; f = f->next)
		for (struct __test_metadata *t = f->tests; t; t = t->next) {
			if (!ks_match(f, t, name))
				continue;
			if (f->variant) {
				fprintf(stderr, "%s: has variants\n", name);
				return 2;
			}
			t->passed = 1;
			t->step = 1;
			t->results = &results;
			t->fn(t, &no_variant);
			printf("%s %s.%s (in process)\n",
			       t->passed && !t->skip ? "ok" : "not ok", f->name,
			       t->name);
			return t->passed && !t->skip ? 0 : 1;
		}
	fprintf(stderr, "%s: no such test\n", name);
	return 2;
}

int main(int argc, char **argv)
{
	char *names[argc > 0 ? argc : 1];
	int n = 0, mode = 0; /* 'o' only, 'x' all but, 0 all */

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-l") == 0) {
			for (struct __fixture_metadata *f = __fixture_list; f; f = f->next)
				for (struct __test_metadata *t = f->tests; t; t = t->next)
					printf("%s.%s\n", f->name, t->name);
			return 0;
		}
		if (strcmp(argv[i], "-i") == 0 && i + 1 < argc)
			return ks_inproc(argv[i + 1]);
		if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "-x") == 0) &&
		    i + 1 < argc && (!mode || mode == argv[i][1])) {
			mode = argv[i][1];
			names[n++] = argv[++i];
			continue;
		}
		fprintf(stderr,
			"usage: %s [-l | -i NAME | -o NAME... | -x NAME...]\n",
			argv[0]);
		return 2;
	}
	if (mode)
		ks_prune(mode == 'o', names, n);
	return test_harness_run(argc, argv);
}
