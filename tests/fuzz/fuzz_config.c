/* fuzz_config.c — libFuzzer harness of the configuration parser (src/config/config.c):
 * the INI file through libinih, the command line through getopt_long, and the
 * checks between keys. An input is the text of a config file, optionally followed
 * by a line "#--" and command-line flags, one per line:
 *
 *     [model]
 *     layers = 3
 *     #--
 *     --train.iters=7
 *     --run.output_dir
 *     out
 *
 * (the marker is an INI comment, so a config file alone is an input as it is).
 * Beyond what the sanitizers catch, it checks the parser's promise: a refusal is
 * one non-empty line of text, and what it accepts formats back and resolves
 * without harm. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"

#define MAX_FLAGS 64

static char g_path[64];

static void remove_file(void) { unlink(g_path); }

/* One file for every input, rewritten each time: the parser opens it by name. */
static const char *config_file(void)
{
    if (g_path[0] == '\0') {
        snprintf(g_path, sizeof g_path, "/tmp/dpscale-fuzz-config-XXXXXX");
        const int fd = mkstemp(g_path);
        if (fd < 0) abort();
        close(fd);
        atexit(remove_file);
    }
    return g_path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char marker[] = "\n#--\n";
    const uint8_t *at = size >= 5 ? memmem(data, size, marker, 5) : NULL;
    const size_t ini_len = at != NULL ? (size_t)(at - data) + 1 : size;
    const size_t rest = at != NULL ? size - ini_len - 4 : 0;

    const char *path = config_file();
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(data, 1, ini_len, f) != ini_len || fclose(f) != 0) abort();

    /* the flags, NUL-terminated in place of their line breaks */
    char *flags = malloc(rest + 1);
    if (flags == NULL) abort();
    if (rest > 0) memcpy(flags, data + ini_len + 4, rest);
    flags[rest] = '\0';
    char *argv[MAX_FLAGS + 4] = {"run", "--config", (char *)path};
    int argc = 3;
    for (char *line = flags; argc < MAX_FLAGS + 3 && line < flags + rest;) {
        char *end = memchr(line, '\n', (size_t)(flags + rest - line));
        if (end != NULL) *end = '\0';
        if (line[0] != '\0') argv[argc++] = line;
        if (end == NULL) break;
        line = end + 1;
    }
    argv[argc] = NULL;

    struct config cfg;
    char err[2048];
    const int rc = config_load(&cfg, argc, argv, err, sizeof err);
    if (rc < 0) {
        if (err[0] == '\0') __builtin_trap(); /* a refusal says why */
        for (const char *p = err; *p != '\0'; p++)
            if ((unsigned char)*p < 0x20) __builtin_trap(); /* on one line */
    } else if (rc == 0) {
        char value[4 * CONFIG_STR_LEN];
        for (size_t i = 0; i < config_nkeys; i++) config_format_value(&cfg, &config_keys[i], value, sizeof value);
        (void)config_resolve_for_world(&cfg, 1 + (int)(size % 16), err, sizeof err);
    }
    free(flags);
    return 0;
}
