/* version.c — the git commit of the build (version.h), from the generated header. */
#include "base/version.h"

#include "git_commit.h" /* build/gen/, written by make */

const char *version_git_commit(void) { return DPSCALE_GIT_COMMIT; }
