/* standalone_main.c — the driver of the fuzz harnesses where clang's libFuzzer is
 * not available: LLVMFuzzerTestOneInput once per file named, each file of a folder
 * named, so that `make fuzz-replay` replays the seed corpus with gcc and the
 * sanitizers alone. Arguments that start with '-' are libFuzzer's options and are
 * ignored, so that both builds take the same command line. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got; buf != NULL && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (buf == NULL) return -1;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int regular(const struct dirent *e) { return e->d_name[0] != '.'; }

int main(int argc, char **argv)
{
    int inputs = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (argv[i][0] == '-') continue;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            bad = 1;
        } else if (S_ISDIR(st.st_mode)) {
            struct dirent **list;
            const int m = scandir(argv[i], &list, regular, alphasort);
            for (int k = 0; k < m; k++) {
                char path[4096];
                snprintf(path, sizeof path, "%s/%s", argv[i], list[k]->d_name);
                bad |= run_file(path) != 0;
                inputs++;
                free(list[k]);
            }
            if (m > 0) free(list);
        } else {
            bad |= run_file(argv[i]) != 0;
            inputs++;
        }
    }
    printf("%s: %d inputs replayed (without libFuzzer)\n", argv[0], inputs);
    return bad;
}
