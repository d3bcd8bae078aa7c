/*
 * sn/inventory.h: the real identities of a cluster's machines, and the one
 * function that resolves a name seen in telemetry to a model entity.
 *
 * The model names servers "sn00-t03" and GPUs "sn00-t03-gpu2". Real fleets
 * call them "gpu-node-017", "dgx-a-03.example.net" or 10.1.0.17, and GPUs
 * have UUIDs ("GPU-2b1c...") and PCI bus ids ("00000000:1B:00.0"). An
 * inventory maps those to model IDs. It is filled from short bulk forms that
 * stay small at 100k GPUs:
 *   - a name pattern ("gpu-node-{001..2048}", "10.1.{0..7}.{1..254}"): one
 *     name per model server, in model order (sn_inventory_add_pattern());
 *   - an inventory CSV (sn-inventory v1, sn_inventory_read_csv()): one row
 *     per server (host, aliases, ip) or per GPU slot (uuid, serial, bus_id).
 * The spec's "inventory:" section names both (docs/spec.md).
 *
 * Resolution (sn_inventory_server(), sn_inventory_gpu()) is case-blind and
 * matches a short name against an FQDN both ways ("gpu-node-017" and
 * "GPU-NODE-017.example.net" name the same server); model names always work.
 * Bus ids are compared as numbers, so "00000000:1B:00.0" equals "1b:00.0".
 * A UUID names its GPU whatever host the input claims.
 *
 * Purity: no files, clock or printing; the caller reads the CSV. Errors name
 * the source and line (and column) of the bad entry: duplicates cite both
 * places, count mismatches give both counts.
 *
 * Ownership: sn_inventory_new() returns an inventory freed with
 * sn_inventory_free() (NULL allowed). It borrows the model, which must
 * outlive it. Memory: O(names + GPUs with identities), never the input size.
 */
#ifndef SN_INVENTORY_H
#define SN_INVENTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>
#include <sn/model.h>

#define SN_INVENTORY_NAMES_MAX (1u << 22) /* names (hosts, aliases, IPs) in one inventory */
#define SN_INVENTORY_NAME_MAX 64u         /* bytes of one name, NUL included */
#define SN_INVENTORY_PATTERN_RANGES 4u    /* {a..b} ranges in one pattern */
#define SN_INVENTORY_CSV_MAX (256u << 20) /* bytes of one inventory CSV */

struct sn_inventory;

SN_MUST_CHECK enum sn_err sn_inventory_new(const struct sn_model *m, struct sn_inventory **out,
                                           struct sn_error *err);
void sn_inventory_free(struct sn_inventory *inv);

/* Expands pattern into one name per model server, in model order: literal
 * text and up to SN_INVENTORY_PATTERN_RANGES ranges {A..B} (decimal, A <= B;
 * zero-padded to the width of A when A has a leading zero), the last range
 * varying fastest. where ("spec.yaml:41:12") locates messages. SN_ERR_INVALID
 * for bad syntax or when the expansion does not give exactly one name per
 * server (both counts in the message). */
SN_MUST_CHECK enum sn_err sn_inventory_add_pattern(struct sn_inventory *inv, const char *pattern,
                                                   const char *where, struct sn_error *err);

/* Reads an inventory CSV (sn-inventory v1; docs/spec.md): '#' comments and
 * blank lines anywhere; a header naming "server" and any of host, aliases,
 * ip, gpu, uuid, serial, bus_id in any order; then rows. server is a model
 * server name; a row without gpu gives the server's host, aliases
 * (separated by ';' or blanks) and ip; a row with gpu (an index of the
 * server) gives that slot's uuid, serial and bus_id. Errors are
 * SN_ERR_SYNTAX or SN_ERR_INVALID "source:line:col: what was found (expected
 * ...)". */
SN_MUST_CHECK enum sn_err sn_inventory_read_csv(struct sn_inventory *inv, const char *data,
                                                size_t len, const char *source,
                                                struct sn_error *err);

/* Adds name as one more name of server (a binding the caller decided, such
 * as a one-host file's content host bound to the file's server: sn health
 * analyze). Unlike a host row it never becomes the server's first host
 * (sn_inventory_host()). where ("file.prom") locates messages, duplicates
 * included. SN_ERR_INVALID for an empty, too long or non-name name or a
 * server outside the model. Seal again before the next lookup. */
SN_MUST_CHECK enum sn_err sn_inventory_add_alias(struct sn_inventory *inv, const char *name,
                                                 uint32_t server, const char *where,
                                                 struct sn_error *err);

/* Sorts the indexes and checks them: one name (case-blind) naming two
 * servers, or one UUID, serial or host bus id naming two GPUs, is
 * SN_ERR_INVALID citing both places. Needed after adding and before any
 * lookup; adding after sealing unseals. */
SN_MUST_CHECK enum sn_err sn_inventory_seal(struct sn_inventory *inv, struct sn_error *err);

/* The model server a name names, or SN_NONE: an inventory name (host,
 * alias, FQDN, IP), then a model server name; each case-blind, then by the
 * short name (up to the first dot) of either side. inv may be NULL (model
 * names only, with the same case and FQDN rules). A short name that two
 * servers share through different FQDNs resolves to neither. */
uint32_t sn_inventory_server(const struct sn_inventory *inv, const struct sn_model *m,
                             const char *name);

/* The model GPU of a telemetry GPU: by uuid ("" none) anywhere in the
 * inventory, else by bus id (SN_TELEM_BUS_NONE none) among the slots of
 * server, else by index (< 0 none) in server. inv may be NULL (index only).
 * SN_NONE when nothing matches. */
uint32_t sn_inventory_gpu(const struct sn_inventory *inv, const struct sn_model *m, uint32_t server,
                          const char *uuid, uint64_t bus, int index);

/* The first inventory host name of a server (NULL if none). */
const char *sn_inventory_host(const struct sn_inventory *inv, uint32_t server);
/* Names and GPU identities held. */
uint32_t sn_inventory_name_count(const struct sn_inventory *inv);
uint32_t sn_inventory_gpu_ids(const struct sn_inventory *inv);

#endif /* SN_INVENTORY_H */
