/* cmd_config.c — `dpscale config [--config FILE] [--section.key=value ...] [--get section.key]`:
 * the resolved configuration (every key, or one), without MPI. The job scripts ask
 * it for comm.paths so that one config file can name the paths to compare. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "config/config.h"
#include "cli/session.h"

int cmd_config(int argc, char **argv)
{
    const char *get = NULL;
    char *rest[512];
    int n = 0;
    for (int i = 0; i < argc && n < 511; i++) {
        if (strcmp(argv[i], "--get") == 0 && i + 1 < argc) get = argv[++i];
        else if (strncmp(argv[i], "--get=", 6) == 0) get = argv[i] + 6;
        else rest[n++] = argv[i];
    }
    rest[n] = NULL;
    struct config cfg;
    char err[1024];
    int rc = config_load(&cfg, n, rest, err, sizeof err);
    if (rc == 1) return EXIT_HELP; /* main prints the help */
    if (rc != 0) {
        fprintf(stderr, "dpscale: error: %s\n", err);
        return EXIT_BAD_INPUT;
    }
    for (size_t i = 0; i < config_nkeys; i++) {
        const struct config_key *k = &config_keys[i];
        char name[80], value[CONFIG_STR_LEN];
        snprintf(name, sizeof name, "%s.%s", k->section, k->name);
        if (get != NULL && strcmp(get, name) != 0) continue;
        config_format_value(&cfg, k, value, sizeof value);
        if (get != NULL) {
            printf("%s\n", value);
            return EXIT_OK;
        }
        printf("%s = %s\n", name, value);
    }
    if (get != NULL) {
        fprintf(stderr, "dpscale: error: --get %s: no such key; dpscale config --help lists them\n", get);
        return EXIT_BAD_INPUT;
    }
    return EXIT_OK;
}
