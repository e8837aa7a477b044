/* SPDX-License-Identifier: MIT */
/*
 * version.c - uepoll_version(): the version of the library that runs, made
 * from the macros a program sees in uepoll.h (both generated from CMake's
 * project version), so that a program can tell when it runs against
 * another release than the one it was compiled with.
 */
#include "uepoll.h"

#define UEPOLL_API __attribute__((visibility("default")))
#define VERSION__STR(x) #x
#define VERSION_STR(x) VERSION__STR(x)

UEPOLL_API const char *uepoll_version(void)
{
	return VERSION_STR(UEPOLL_VERSION_MAJOR) "." VERSION_STR(
		UEPOLL_VERSION_MINOR) "." VERSION_STR(UEPOLL_VERSION_PATCH);
}
