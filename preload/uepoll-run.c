/* SPDX-License-Identifier: MIT */
/*
 * uepoll-run - run a program with libuepoll-preload.so and the policies
 * given as options: uepoll-run [OPTIONS] [--] CMD [ARGS...]
 *
 * It only sets the environment and execs CMD, so the exit status is CMD's.
 * A static executable cannot be preloaded (no dynamic loader reads
 * LD_PRELOAD): it is said on stderr and CMD runs unchanged, on the kernel.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void run__usage(FILE *f)
{
	fputs("usage: uepoll-run [OPTIONS] [--] CMD [ARGS...]\n"
	      "Run CMD with every epoll instance and eventfd on uepoll\n"
	      "(LD_PRELOAD=libuepoll-preload.so).  Options (each sets the\n"
	      "environment variable named; all off: the kernel's behaviour,\n"
	      "at uepoll's speed):\n"
	      "  --roundrobin       UEPOLL_ROUNDROBIN=1: EPOLLEXCLUSIVE\n"
	      "                     registrations wake instances in turn\n"
	      "  --min-wait-us N    UEPOLL_MIN_WAIT_US=N: every instance's\n"
	      "                     waits collect events for N us\n"
	      "  --coalesce SPEC    UEPOLL_EVENTFD_COALESCE=SPEC (delay_us[,count]):\n"
	      "                     eventfd wakeups coalesced\n"
	      "  --nospin           UEPOLL_NOSPIN=1: waits block at once\n"
	      "  --spin-us N        UEPOLL_SPIN_US=N: a wait that would sleep on\n"
	      "                     kernel fds (sockets, pipes) polls them for up\n"
	      "                     to N us first (adaptive; burns CPU meanwhile)\n"
	      "  --fifo             UEPOLL_WAKE_FIFO=1: the longest-waiting\n"
	      "                     thread of an instance takes a wakeup\n"
	      "  --exact            UEPOLL_EXACT=1: every fd's readiness exact\n"
	      "                     from its creation (by default it is made\n"
	      "                     exact once poll(), select() or a kernel\n"
	      "                     epoll first look; --nopoll, UEPOLL_NOPOLL=1,\n"
	      "                     the default, is accepted)\n"
	      "  --no-io-uring      UEPOLL_NO_IOURING=1: io_uring_setup through\n"
	      "                     syscall() fails with ENOSYS, instead of\n"
	      "                     ending the acceleration for the process\n"
	      "  --stats            UEPOLL_STATS=1: counters on stderr at exit\n"
	      "  --preload PATH     the preload library (default: next to\n"
	      "                     uepoll-run, else " UEPOLL_PRELOAD_PATH ")\n"
	      "  --help             this text\n",
	      f);
}

/* The .so next to this executable (a build tree), else the installed
 * one. */
static const char *run__library(void)
{
	static char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	char *slash;

	if (n > 0) {
		buf[n] = '\0';
		slash = strrchr(buf, '/');
		if (slash && (size_t)(slash - buf) + sizeof("/libuepoll-preload.so") <
				     sizeof(buf)) {
			strcpy(slash, "/libuepoll-preload.so");
			if (access(buf, R_OK) == 0)
				return buf;
		}
	}
	return UEPOLL_PRELOAD_PATH;
}

/* CMD as execvp would find it. */
static bool run__find(const char *cmd, char *out, size_t size)
{
	const char *path = getenv("PATH"), *p, *end;

	if (strchr(cmd, '/'))
		return snprintf(out, size, "%s", cmd) < (int)size;
	for (p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p; p = end) {
		size_t len;

		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		len = (size_t)(end - p);
		if (snprintf(out, size, "%.*s/%s", (int)len, len ? p : ".",
			     cmd) < (int)size &&
		    access(out, X_OK) == 0)
			return true;
		if (*end == ':')
			end++;
	}
	return false;
}

/* An ELF executable without a PT_INTERP header is static: no dynamic
 * loader, so no LD_PRELOAD.  Anything else (a script, an unreadable file)
 * is left for exec to handle. */
static bool run__is_static(const char *file)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	bool st = false;

	if (fd < 0)
		return false;
	if (pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) &&
	    !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 &&
	    eh.e_phentsize == sizeof(ph)) {
		st = true;
		for (int i = 0; i < eh.e_phnum; i++) {
			if (pread(fd, &ph, sizeof(ph),
				  (off_t)(eh.e_phoff + (Elf64_Off)i * sizeof(ph))) !=
			    (ssize_t)sizeof(ph)) {
				st = false;
				break;
			}
			if (ph.p_type == PT_INTERP) {
				st = false;
				break;
			}
		}
	}
	close(fd);
	return st;
}

/* Decimal digits only, at most UINT32_MAX (config.c's rule for a number;
 * refused here rather than ignored there). */
static bool run__number(const char *v)
{
	char *end;

	errno = 0;
	return *v >= '0' && *v <= '9' &&
	       strtoull(v, &end, 10) <= UINT32_MAX && !*end && !errno;
}

static void run__set(const char *name, const char *value)
{
	if (setenv(name, value, 1) != 0) {
		perror("uepoll-run: setenv");
		exit(127);
	}
}

int main(int argc, char *argv[])
{
	const char *lib = NULL, *old;
	char file[PATH_MAX], *pre;
	int i;

	/* Options up to "--" or to the first word that is not one (the
	 * command, for `uepoll-run prog args`). */
	for (i = 1; i < argc && strcmp(argv[i], "--") && argv[i][0] == '-';
	     i++) {
		const char *o = argv[i];
		bool has_arg = !strcmp(o, "--min-wait-us") ||
			       !strcmp(o, "--spin-us") ||
			       !strcmp(o, "--coalesce") || !strcmp(o, "--preload");

		if (has_arg && i + 1 >= argc) {
			fprintf(stderr, "uepoll-run: %s needs a value\n", o);
			return 2;
		}
		if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
			run__usage(stdout);
			return 0;
		} else if (!strcmp(o, "--roundrobin")) {
			run__set("UEPOLL_ROUNDROBIN", "1");
		} else if (!strcmp(o, "--nospin")) {
			run__set("UEPOLL_NOSPIN", "1");
		} else if (!strcmp(o, "--nopoll")) {
			run__set("UEPOLL_NOPOLL", "1");
		} else if (!strcmp(o, "--exact")) {
			run__set("UEPOLL_EXACT", "1");
		} else if (!strcmp(o, "--no-io-uring")) {
			run__set("UEPOLL_NO_IOURING", "1");
		} else if (!strcmp(o, "--fifo")) {
			run__set("UEPOLL_WAKE_FIFO", "1");
		} else if (!strcmp(o, "--stats")) {
			run__set("UEPOLL_STATS", "1");
		} else if (!strcmp(o, "--min-wait-us") ||
			   !strcmp(o, "--spin-us")) {
			const char *v = argv[++i];

			if (!run__number(v)) {
				fprintf(stderr, "uepoll-run: bad %s %s\n", o, v);
				return 2;
			}
			run__set(!strcmp(o, "--spin-us") ? "UEPOLL_SPIN_US"
							 : "UEPOLL_MIN_WAIT_US",
				 v);
		} else if (!strcmp(o, "--coalesce")) {
			run__set("UEPOLL_EVENTFD_COALESCE", argv[++i]);
		} else if (!strcmp(o, "--preload")) {
			lib = argv[++i];
		} else {
			fprintf(stderr, "uepoll-run: unknown option %s\n", o);
			run__usage(stderr);
			return 2;
		}
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i >= argc) {
		run__usage(stderr);
		return 2;
	}
	argv += i;
	if (!run__find(argv[0], file, sizeof(file))) {
		fprintf(stderr, "uepoll-run: %s: command not found\n", argv[0]);
		return 127;
	}
	if (run__is_static(file)) {
		fprintf(stderr,
			"uepoll-run: %s is statically linked: it cannot be "
			"preloaded and runs unchanged, on the kernel's epoll\n",
			file);
		execv(file, argv);
		fprintf(stderr, "uepoll-run: %s: %s\n", file, strerror(errno));
		return errno == ENOENT ? 127 : 126;
	}
	if (!lib)
		lib = run__library();
	if (access(lib, R_OK) != 0) {
		fprintf(stderr, "uepoll-run: %s: %s\n", lib, strerror(errno));
		return 127;
	}
	/* Ours first; whatever the user preloads already stays after it. */
	old = getenv("LD_PRELOAD");
	if (old && *old) {
		pre = malloc(strlen(lib) + strlen(old) + 2);
		if (!pre) {
			perror("uepoll-run");
			return 127;
		}
		sprintf(pre, "%s:%s", lib, old);
		run__set("LD_PRELOAD", pre);
	} else {
		run__set("LD_PRELOAD", lib);
	}
	execv(file, argv);
	fprintf(stderr, "uepoll-run: %s: %s\n", file, strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
