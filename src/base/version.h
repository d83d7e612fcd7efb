/* version.h — dpscale's version number, and the git commit it was built from:
 * version.c reads build/gen/git_commit.h, which make writes from `git describe
 * --always --dirty` and rewrites only when that changes (so only version.o is
 * rebuilt); "unknown" when built outside git. */
#ifndef DPSCALE_VERSION_H
#define DPSCALE_VERSION_H

#define DPSCALE_VERSION "0.1.0"

const char *version_git_commit(void);

#endif
