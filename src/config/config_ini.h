/* config_ini.h — the config file (--config) read into a configuration, for config.c. */
#ifndef DPSCALE_CONFIG_INI_H
#define DPSCALE_CONFIG_INI_H

#include <stddef.h>

struct config;

/* Apply the INI file at `path` to cfg. Returns 0, or -1 with "path:line: ..." in err. */
int config_load_ini(struct config *cfg, const char *path, char *err, size_t errlen);

#endif
