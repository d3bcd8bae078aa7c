/*
 * sn/conf.h: configuration declared as one table of keys.
 *
 * A program declares its keys once (name, type, default, range, help, and
 * where the value lives in its own config struct); defaults, the parser of
 * "key = value" files, command-line overrides, `--help` and the docs are all
 * derived from that table. The parser is pure: it fills the caller's struct
 * and never keeps global state.
 *
 * File format: one "key = value" per line; '#' starts a comment; blank
 * lines are ignored; values are taken verbatim after trimming blanks. An
 * unknown key, a malformed value or one out of range is an error naming
 * file:line:col, what was found and what was expected.
 */
#ifndef SN_CONF_H
#define SN_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>

#define SN_CONF_STRING_MAX 256 /* a string value, NUL included */
#define SN_CONF_FILE_MAX_BYTES (1u << 20)

#define SN_CONF_TYPE_LIST(X)                                                                       \
    X(INT, "int")       /* int64_t, decimal, within [min, max] */                                  \
    X(BOOL, "bool")     /* bool: true/false */                                                     \
    X(STRING, "string") /* char[SN_CONF_STRING_MAX] */
enum sn_conf_type {
#define SN_X(name, text) SN_CONF_##name,
    SN_CONF_TYPE_LIST(SN_X)
#undef SN_X
        SN_CONF_TYPE_COUNT
};
const char *sn_conf_type_name(enum sn_conf_type type);

struct sn_conf_key {
    const char *name;
    enum sn_conf_type type;
    const char *def;  /* default, as text */
    int64_t min, max; /* INT range; STRING length range */
    size_t offset;    /* of the value in the caller's struct */
    const char *help; /* one line */
};

/* Sets every key of table to its default. Fails only when a default is
 * itself invalid (a programming error, reported as SN_ERR_INTERNAL). */
SN_MUST_CHECK enum sn_err sn_conf_defaults(const struct sn_conf_key *table, size_t n, void *out,
                                           struct sn_error *err);

/* Sets one key by name from text. where prefixes messages ("--set",
 * "snd.conf:3:1"). Unknown key: SN_ERR_INVALID with a suggestion when a key
 * is close; malformed: SN_ERR_SYNTAX; out of range: SN_ERR_RANGE. */
SN_MUST_CHECK enum sn_err sn_conf_set(const struct sn_conf_key *table, size_t n, void *out,
                                      const char *name, const char *value, const char *where,
                                      struct sn_error *err);

/* Parses a config file held in memory (name is used in messages). */
SN_MUST_CHECK enum sn_err sn_conf_parse(const struct sn_conf_key *table, size_t n, void *out,
                                        const char *name, const char *buf, size_t len,
                                        struct sn_error *err);

/* The key named name, or NULL. */
const struct sn_conf_key *sn_conf_find(const struct sn_conf_key *table, size_t n, const char *name);

#endif /* SN_CONF_H */
