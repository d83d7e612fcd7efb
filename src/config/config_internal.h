/* config_internal.h — what config.c and config_ini.c share, and nothing else
 * includes: the value parser of the key table, its "accepted" text, the keys of
 * earlier versions, and the INI file reader. */
#ifndef DPSCALE_CONFIG_INTERNAL_H
#define DPSCALE_CONFIG_INTERNAL_H

#include <stddef.h>

#include "config/config.h"

/* Store `text` into the field of `key` in cfg. Returns 0, or -1 when it is not accepted. */
int config_parse_value(struct config *cfg, const struct config_key *key, const char *text);
/* "an integer in [1, 4096]", "one of gelu|relu"...: what `key` accepts, for messages. */
void config_describe_accepted(const struct config_key *key, char *buf, size_t len);
/* A value as an error message quotes it: 'value', or its first 48 characters and its length
 * when it is long (len >= 96). */
void config_quote_value(const char *value, char *buf, size_t len);
/* The message for a key of an earlier version ("comm.transport is now comm.path"), or NULL. */
const char *config_renamed_key(const char *section, const char *name);
/* Apply the INI file at `path` to cfg. Returns 0, or -1 with "path:line: ..." in err. */
int config_load_ini(struct config *cfg, const char *path, char *err, size_t errlen);

#endif
