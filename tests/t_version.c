/*
 * t_version: uepoll_version() is the version the header announces,
 * UEPOLL_VERSION_MAJOR.MINOR.PATCH (both generated from CMake's project
 * version; the string is made from the macros by the preprocessor, this
 * test makes it at run time).
 */
#include "testlib.h"

int main(void)
{
	char want[64];

	t_begin("t_version");
	snprintf(want, sizeof(want), "%d.%d.%d", UEPOLL_VERSION_MAJOR,
		 UEPOLL_VERSION_MINOR, UEPOLL_VERSION_PATCH);
	REQUIRE(uepoll_version() != NULL);
	if (strcmp(uepoll_version(), want) != 0)
		fprintf(stderr, "uepoll_version() \"%s\", macros \"%s\"\n",
			uepoll_version(), want);
	CHECK(strcmp(uepoll_version(), want) == 0);
	return t_end();
}
