/*
 * spec_int.h (private to lib/spec): the parser's context and the helpers
 * that turn libfyaml nodes into checked spec values.
 *
 * Every mapping of the format is read through a key table: sn__spec_bind()
 * walks the mapping once in document order, rejects keys that are not in the
 * table (with an edit-distance suggestion), rejects duplicates naming both
 * places, and records each value node and its key's location. Getters then
 * read one key each, apply its default when absent, parse and range-check
 * it, and report errors at the value's line and column. All strings and
 * arrays go to the spec's arena. The first error wins (sn_error), and every
 * helper returns SN_OK or the error code, so callers chain them with
 * `if ((rc = ...) != SN_OK) return rc;`.
 */
#ifndef SN_SPEC_INT_H
#define SN_SPEC_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <libfyaml.h>

#include <sn/error.h>
#include <sn/spec.h>
#include <sn/units.h>

#include "core/arena.h"

/* The spec's arena may hold at most this much (a 4 MiB spec needs far less). */
#define SN__SPEC_ARENA_CAP ((size_t)64 << 20)
/* Most keys any one mapping of the format allows. */
#define SN__SPEC_MAX_KEYS 20
/* Longest name (catalogue entries, templates, domains, pools...). */
#define SN__SPEC_NAME_MAX 63
/* Longest scalar read as a number or a quantity. */
#define SN__SPEC_VALUE_MAX 127
/* Most entries in a domain or loop list, and most supernode groups. */
#define SN__SPEC_MAX_LIST 65536
#define SN__SPEC_MAX_GROUPS 65536
/* Cable types and length classes are stored in uint8 by the model. */
#define SN__SPEC_MAX_CABLES 255
#define SN__SPEC_MAX_LENGTH_CLASSES 255
/* Caps of single counts named by the format. */
#define SN__SPEC_MAX_SERVERS 65536
#define SN__SPEC_MAX_CHIPS 4096

struct sn__spec_ctx {
    const char *file;
    const char *buf; /* the YAML text, which token marks index */
    size_t len;
    struct sn__arena *arena;
    struct sn_spec *spec;
    struct sn_error *err;
};

/* A mapping read through a key table. */
struct sn__spec_map {
    struct sn_src_loc loc;   /* where the mapping was introduced */
    char what[128];          /* for messages: "gpu 'H100-SXM5-80GB'" */
    const char *const *keys; /* allowed keys */
    unsigned n_keys;
    struct fy_node *value[SN__SPEC_MAX_KEYS]; /* NULL: absent or empty */
    struct sn_src_loc key_loc[SN__SPEC_MAX_KEYS];
    bool present[SN__SPEC_MAX_KEYS];
};

/* What a reference names; DOMAIN and LOOP are local to one template. */
enum sn__spec_ref {
    SN__REF_GPU,
    SN__REF_SERVER,
    SN__REF_SWITCH,
    SN__REF_CABLE,
    SN__REF_LENGTH,
    SN__REF_POOL,
    SN__REF_TEMPLATE,
    SN__REF_DOMAIN,
    SN__REF_LOOP,
};

/* ---- errors and locations (spec_yaml.c) ------------------------------- */

/* Sets an SN_ERR_INVALID error "<file>:<line>:<col>: <message>". */
enum sn_err sn__spec_fail(struct sn__spec_ctx *c, struct sn_src_loc loc, const char *fmt, ...)
    SN_PRINTF(3, 4);

/* Where node starts (its first scalar), or fallback when it has none. */
struct sn_src_loc sn__spec_loc(struct fy_node *node, struct sn_src_loc fallback);

/* "a mapping", "a sequence", "a scalar", "an alias" or "nothing". */
const char *sn__spec_node_kind(struct fy_node *node);

/* The closest of n candidates to word within a small edit distance, or
 * NULL. get(i) gives candidate i. */
const char *sn__spec_suggest(const char *word, const char *(*get)(const void *, uint32_t),
                             const void *from, uint32_t n);

/* ---- mappings and scalars --------------------------------------------- */

/* Checks that node is a mapping whose keys are all in keys[] and unique,
 * and fills *m. loc is where the mapping was introduced (the key naming
 * it); what names it in messages. */
enum sn_err sn__spec_bind(struct sn__spec_ctx *c, struct fy_node *node, struct sn_src_loc loc,
                          const char *what, const char *const *keys, unsigned n_keys,
                          struct sn__spec_map *m);

/* Error "missing required key" unless key k is present with a value. */
enum sn_err sn__spec_require(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k);

/* Location of key k's value (its key when the value is empty). */
struct sn_src_loc sn__spec_value_loc(const struct sn__spec_map *m, unsigned k);

/* Copies a scalar node's text into buf (NUL-terminated). what names the
 * value in messages. Rejects non-scalars, aliases, NUL bytes and text of
 * len or more bytes. */
enum sn_err sn__spec_scalar_text(struct sn__spec_ctx *c, struct fy_node *node,
                                 struct sn_src_loc loc, const char *what, char *buf, size_t len);

/* A scalar node as a string in the arena (any length up to the file's). */
enum sn_err sn__spec_scalar_dup(struct sn__spec_ctx *c, struct fy_node *node, struct sn_src_loc loc,
                                const char *what, const char **out);

/* A name: a scalar matching [A-Za-z0-9][A-Za-z0-9._-]* of at most 63
 * characters, copied to the arena. */
enum sn_err sn__spec_name(struct sn__spec_ctx *c, struct fy_node *node, struct sn_src_loc loc,
                          const char *what, const char **out);

/* ---- getters of one key: absent keys take the default ------------------ */

/* A string (required when def is NULL). */
enum sn_err sn__spec_get_string(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                                const char *def, const char **out);

/* A count: decimal digits only, in [min, max] (max at most 2^32-1). */
enum sn_err sn__spec_get_count(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                               bool required, uint32_t def, uint32_t min, uint32_t max,
                               uint32_t *out);

/* A quantity of the given unit kind (sn_units_parse). */
enum sn_err sn__spec_get_quantity(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                                  enum sn_unit_kind kind, bool required, double def, double *out);

/* A plain decimal number (no unit). */
enum sn_err sn__spec_get_number(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                                double def, double *out);

/* true or false. */
enum sn_err sn__spec_get_bool(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                              bool def, bool *out);

/* One of names[0..n) (required when def < 0), as its index. */
enum sn_err sn__spec_get_enum(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                              const char *const *names, unsigned n, int def, int *out);

/* A reference by name to an entity of kind ref (tpl for DOMAIN and LOOP).
 * Absent: SN_NONE, or an error when required. */
enum sn_err sn__spec_get_ref(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                             enum sn__spec_ref ref, const struct sn_template *tpl, bool required,
                             uint32_t *out);

/* A sequence of names of ref (DOMAIN or LOOP) of tpl, as local indices.
 * Absent: an empty list. */
enum sn_err sn__spec_get_list(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                              enum sn__spec_ref ref, const struct sn_template *tpl,
                              struct sn_domain_list *out);

/* Index of an entity by name, or SN_NONE (spec_names.c). */
uint32_t sn__spec_lookup(const struct sn_spec *spec, enum sn__spec_ref ref,
                         const struct sn_template *tpl, const char *name);
/* Number of entities of kind ref so far, and the name of the i-th. */
uint32_t sn__spec_ref_count(const struct sn_spec *spec, enum sn__spec_ref ref,
                            const struct sn_template *tpl);
const char *sn__spec_ref_name(const struct sn_spec *spec, enum sn__spec_ref ref,
                              const struct sn_template *tpl, uint32_t i);

/* Range check message for key k: "<key> <text> ...: expected <expected>". */
enum sn_err sn__spec_fail_value(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                                const char *expected);

/* ---- sections (spec_catalog.c, spec_template.c) ------------------------ */

enum sn_err sn__spec_parse_catalog(struct sn__spec_ctx *c, struct fy_node *node,
                                   struct sn_src_loc loc);
enum sn_err sn__spec_parse_templates(struct sn__spec_ctx *c, struct fy_node *node,
                                     struct sn_src_loc loc);
/* A `psu` mapping (key k of m: count, rating, redundancy, pulse,
 * pulse_time) into *out; absent: count 0. what names the owner. */
enum sn_err sn__spec_parse_psu(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                               const char *what, struct sn_psu_spec *out);

/* A rack's `feed` mapping (key k of m) into *out; absent: count 0. */
enum sn_err sn__spec_parse_feed(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                                const char *what, struct sn_feed_spec *out);

/* The fabric's power domains (key k_domains of fm) into holder, a template
 * that stands for the fabric (server_model SN_NONE) so that DOMAIN
 * references resolve against it, and its network racks (key k_racks) into
 * *racks. Absent domains with a spine tier: A and B, capacity 0. */
enum sn_err sn__spec_parse_fabric_power(struct sn__spec_ctx *c, const struct sn__spec_map *fm,
                                        unsigned k_domains, unsigned k_racks, bool spine_tier,
                                        struct sn_template *holder,
                                        struct sn_fabric_racks_spec *racks);
enum sn_err sn__spec_parse_groups(struct sn__spec_ctx *c, struct fy_node *node,
                                  struct sn_src_loc loc);

/* One NAME: value pair of a mapping of named entries (a catalogue,
 * templates, pools, domains...). */
struct sn__spec_entry {
    const char *name; /* in the arena */
    struct sn_src_loc loc;
    struct fy_node *value;
};

/* Checks that node is a mapping of at most max entries whose keys are valid
 * unique names, and returns them in document order in an arena array.
 * what names one entry in messages ("gpu model"). */
enum sn_err sn__spec_entries(struct sn__spec_ctx *c, struct fy_node *node, struct sn_src_loc loc,
                             const char *what, uint32_t max, struct sn__spec_entry **out,
                             uint32_t *n);

#endif /* SN_SPEC_INT_H */
