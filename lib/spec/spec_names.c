/*
 * Names of the spec's enums, the review defaults, and lookups by name.
 *
 * The name tables are generated from the X-macro lists in sn/spec.h, so the
 * parser (which accepts exactly these spellings) and every printer agree.
 * Lookups are linear: catalogues hold at most SN_SPEC_MAX_CATALOG entries
 * and are searched only while parsing or on a user's request.
 */
#include <string.h>

#include <sn/headroom.h>

#include "spec/spec_int.h"

#define NAME_TABLE(list, table) static const char *const table[] = {list(SN_X)};

#define SN_X(name, text) text,
NAME_TABLE(SN_SWITCH_KIND_LIST, switch_kind_names)
NAME_TABLE(SN_CABLE_MEDIUM_LIST, cable_medium_names)
NAME_TABLE(SN_POWER_KIND_LIST, power_kind_names)
NAME_TABLE(SN_COOLING_KIND_LIST, cooling_kind_names)
NAME_TABLE(SN_SCALEUP_DOMAIN_LIST, scaleup_domain_names)
NAME_TABLE(SN_LEAF_ATTACH_LIST, leaf_attach_names)
NAME_TABLE(SN_MGMT_SEPARATION_LIST, mgmt_separation_names)
NAME_TABLE(SN_STORAGE_KIND_LIST, storage_kind_names)
NAME_TABLE(SN_APPLIANCE_KIND_LIST, appliance_kind_names)
NAME_TABLE(SN_POOL_KIND_LIST, pool_kind_names)
NAME_TABLE(SN_PSU_REDUNDANCY_LIST, psu_redundancy_names)
#undef SN_X

#define NAME_OF(table, value, count) ((unsigned)(value) < (count) ? table[value] : "unknown")

const char *sn_switch_kind_name(enum sn_switch_kind kind)
{
    return NAME_OF(switch_kind_names, kind, SN_SWITCH_KIND_COUNT);
}

const char *sn_cable_medium_name(enum sn_cable_medium medium)
{
    return NAME_OF(cable_medium_names, medium, SN_CABLE_MEDIUM_COUNT);
}

const char *sn_power_kind_name(enum sn_power_kind kind)
{
    return NAME_OF(power_kind_names, kind, SN_POWER_KIND_COUNT);
}

const char *sn_cooling_kind_name(enum sn_cooling_kind kind)
{
    return NAME_OF(cooling_kind_names, kind, SN_COOLING_KIND_COUNT);
}

const char *sn_scaleup_domain_name(enum sn_scaleup_domain domain)
{
    return NAME_OF(scaleup_domain_names, domain, SN_SCALEUP_DOMAIN_COUNT);
}

const char *sn_leaf_attach_name(enum sn_leaf_attach attach)
{
    return NAME_OF(leaf_attach_names, attach, SN_LEAF_ATTACH_COUNT);
}

const char *sn_mgmt_separation_name(enum sn_mgmt_separation sep)
{
    return NAME_OF(mgmt_separation_names, sep, SN_MGMT_SEPARATION_COUNT);
}

const char *sn_storage_kind_name(enum sn_storage_kind kind)
{
    return NAME_OF(storage_kind_names, kind, SN_STORAGE_KIND_COUNT);
}

const char *sn_appliance_kind_name(enum sn_appliance_kind kind)
{
    return NAME_OF(appliance_kind_names, kind, SN_APPLIANCE_KIND_COUNT);
}

const char *sn_pool_kind_name(enum sn_pool_kind kind)
{
    return NAME_OF(pool_kind_names, kind, SN_POOL_KIND_COUNT);
}

const char *sn_psu_redundancy_name(enum sn_psu_redundancy redundancy)
{
    return NAME_OF(psu_redundancy_names, redundancy, SN_PSU_REDUNDANCY_COUNT);
}

/* Defaults documented in docs/spec.md (and the rules that use them in
 * docs/rules.md). */
void sn_review_config_defaults(struct sn_review_config *config)
{
    config->power_margin = 1.5;
    config->peak_factor = 1.3;
    config->survivor_fraction = 0.5;
    config->air_cooling_limit_w = 40e3;
    config->cooling_margin = 1.2;
    config->bandwidth_headroom = SN_BANDWIDTH_HEADROOM; /* sn/headroom.h, shared with sn plan */
    config->memory_wall_bytes_per_flop = 0.003;
    config->peak_duration_s = 0; /* sustained: no pulse rating applies */
}

uint32_t sn__spec_ref_count(const struct sn_spec *spec, enum sn__spec_ref ref,
                            const struct sn_template *tpl)
{
    switch (ref) {
    case SN__REF_GPU:
        return spec->n_gpu_models;
    case SN__REF_SERVER:
        return spec->n_server_models;
    case SN__REF_SWITCH:
        return spec->n_switch_models;
    case SN__REF_CABLE:
        return spec->n_cable_types;
    case SN__REF_LENGTH:
        return spec->n_length_classes;
    case SN__REF_POOL:
        return spec->n_pools;
    case SN__REF_TEMPLATE:
        return spec->n_templates;
    case SN__REF_DOMAIN:
        return tpl ? tpl->n_power_domains : 0;
    case SN__REF_LOOP:
        return tpl ? tpl->n_cooling_loops : 0;
    }
    return 0;
}

const char *sn__spec_ref_name(const struct sn_spec *spec, enum sn__spec_ref ref,
                              const struct sn_template *tpl, uint32_t i)
{
    if (i >= sn__spec_ref_count(spec, ref, tpl))
        return NULL;
    switch (ref) {
    case SN__REF_GPU:
        return spec->gpu_models[i].name;
    case SN__REF_SERVER:
        return spec->server_models[i].name;
    case SN__REF_SWITCH:
        return spec->switch_models[i].name;
    case SN__REF_CABLE:
        return spec->cable_types[i].name;
    case SN__REF_LENGTH:
        return spec->length_classes[i].name;
    case SN__REF_POOL:
        return spec->pools[i].name;
    case SN__REF_TEMPLATE:
        return spec->templates[i].name;
    case SN__REF_DOMAIN:
        return tpl->power_domains[i].name;
    case SN__REF_LOOP:
        return tpl->cooling_loops[i].name;
    }
    return NULL;
}

uint32_t sn__spec_lookup(const struct sn_spec *spec, enum sn__spec_ref ref,
                         const struct sn_template *tpl, const char *name)
{
    if (!spec || !name)
        return SN_NONE;
    uint32_t n = sn__spec_ref_count(spec, ref, tpl);
    for (uint32_t i = 0; i < n; i++) {
        const char *cand = sn__spec_ref_name(spec, ref, tpl, i);
        if (cand && strcmp(cand, name) == 0)
            return i;
    }
    return SN_NONE;
}

uint32_t sn_spec_find_gpu_model(const struct sn_spec *spec, const char *name)
{
    return sn__spec_lookup(spec, SN__REF_GPU, NULL, name);
}

uint32_t sn_spec_find_server_model(const struct sn_spec *spec, const char *name)
{
    return sn__spec_lookup(spec, SN__REF_SERVER, NULL, name);
}

uint32_t sn_spec_find_switch_model(const struct sn_spec *spec, const char *name)
{
    return sn__spec_lookup(spec, SN__REF_SWITCH, NULL, name);
}

uint32_t sn_spec_find_template(const struct sn_spec *spec, const char *name)
{
    return sn__spec_lookup(spec, SN__REF_TEMPLATE, NULL, name);
}

uint32_t sn_spec_find_storage(const struct sn_spec *spec, const char *name)
{
    if (!spec || !name)
        return SN_NONE;
    for (uint32_t i = 0; i < spec->n_storage; i++)
        if (strcmp(spec->storage[i].name, name) == 0)
            return i;
    return SN_NONE;
}
