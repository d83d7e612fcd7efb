/* config_value.h — what the readers of a configuration (config.c, the command line;
 * config_ini.c, the file) parse a value with, and nothing else includes. The
 * structures are those of config.h, which this header leaves to its includer. */
#ifndef DPSCALE_CONFIG_VALUE_H
#define DPSCALE_CONFIG_VALUE_H

#include <stddef.h>

struct config;
struct config_key;

/* Store `text` into the field of `key` in cfg. Returns 0, or -1 when it is not accepted. */
int config_parse_value(struct config *cfg, const struct config_key *key, const char *text);
/* "an integer in [1, 4096]", "one of gelu|relu"...: what `key` accepts, for messages. */
void config_describe_accepted(const struct config_key *key, char *buf, size_t len);
/* A value as an error message quotes it: 'value', or its first 48 characters and its length
 * when it is long (len >= 96). */
void config_quote_value(const char *value, char *buf, size_t len);
/* The message for a key of an earlier version ("comm.transport is now comm.path"), or NULL. */
const char *config_renamed_key(const char *section, const char *name);

#endif
