/*
 * Hardware for a plan from a cluster spec (sn/spec.h): the GPU, server and
 * scale-up domain of one supernode template, its leaves and power
 * domains, how many supernodes the spec builds from it, the fabric's
 * efficiency and the storage tiers.
 *
 * The spec is only read. Every index is bounds-checked against its
 * catalogue, since a hand-built spec has no parser to vouch for it; names
 * are found by linear search here rather than through the parser's lookup
 * functions. Strings in *out point into the spec and live as long as it.
 */
#include <sn/plan.h>
#include <sn/spec.h>

#include <string.h>

static const struct sn_template *find_template(const struct sn_spec *spec, const char *name,
                                               uint32_t *index)
{
    for (uint32_t i = 0; i < spec->n_templates; i++)
        if (spec->templates[i].name && strcmp(spec->templates[i].name, name) == 0) {
            *index = i;
            return &spec->templates[i];
        }
    return NULL;
}

/* Copies one storage tier. Local tiers are per server and default to the
 * server's NVMe figures. */
static enum sn_err add_tier(const struct sn_storage_spec *s, const struct sn_server_model *srv,
                            struct sn_plan_hardware *out, struct sn_error *err)
{
    if (out->n_storage >= SN_PLAN_MAX_TIERS)
        return sn_error_set(err, SN_ERR_LIMIT, "more than %u storage tiers", SN_PLAN_MAX_TIERS);
    struct sn_plan_storage *t = &out->storage[out->n_storage];
    t->name = s->name;
    t->per_server = s->kind == SN_STORAGE_LOCAL;
    t->write_bytes_per_s = s->write_bytes_per_s;
    t->read_bytes_per_s = s->read_bytes_per_s;
    if (t->per_server && !(t->write_bytes_per_s > 0))
        t->write_bytes_per_s = srv->nvme_write_bytes_per_s;
    if (t->per_server && !(t->read_bytes_per_s > 0))
        t->read_bytes_per_s = srv->nvme_read_bytes_per_s;
    if (!(t->write_bytes_per_s > 0) || !(t->read_bytes_per_s > 0))
        return sn_error_set(err, SN_ERR_INVALID,
                            "storage tier '%s' states no write or read bandwidth",
                            s->name ? s->name : "?");
    out->n_storage++;
    return SN_OK;
}

static enum sn_err take_storage(const struct sn_spec *spec, const char *storage_name,
                                const struct sn_server_model *srv, struct sn_plan_hardware *out,
                                struct sn_error *err)
{
    bool found = false;
    struct sn_plan_hardware staged = *out;
    staged.n_storage = 0;
    for (uint32_t i = 0; i < spec->n_storage; i++) {
        const struct sn_storage_spec *s = &spec->storage[i];
        if (storage_name && (!s->name || strcmp(s->name, storage_name) != 0))
            continue;
        found = true;
        enum sn_err rc = add_tier(s, srv, &staged, err);
        if (rc)
            return rc;
    }
    if (storage_name && !found)
        return sn_error_set(err, SN_ERR_NOTFOUND, "no storage tier '%s' in the spec", storage_name);
    if (found) {
        out->n_storage = staged.n_storage;
        memcpy(out->storage, staged.storage, sizeof(out->storage));
    }
    return SN_OK;
}

static void take_scaleup(const struct sn_template *tp, const struct sn_server_model *srv,
                         const struct sn_gpu_model *gpu, struct sn_plan_hardware *out)
{
    if (tp->scaleup.switch_model == SN_NONE) {
        out->scaleup_gpus = 1; /* GPUs meet only through the leaves */
        return;
    }
    out->scaleup_gpus =
        tp->scaleup.domain == SN_SCALEUP_SERVER ? srv->gpus : srv->gpus * tp->servers;
    if (gpu->scaleup_links && gpu->scaleup_link_bytes_per_s > 0)
        out->scaleup_bytes_per_s = gpu->scaleup_links * gpu->scaleup_link_bytes_per_s;
}

enum sn_err sn_plan_hardware_from_spec(const struct sn_spec *spec, const char *template_name,
                                       const char *storage_name, struct sn_plan_hardware *out,
                                       struct sn_error *err)
{
    uint32_t ti = SN_NONE;
    const struct sn_template *tp = template_name ? find_template(spec, template_name, &ti) : NULL;
    if (!tp)
        return sn_error_set(err, SN_ERR_NOTFOUND, "no supernode template '%s' in the spec",
                            template_name ? template_name : "(none)");
    if (tp->server_model >= spec->n_server_models)
        return sn_error_set(err, SN_ERR_INVALID,
                            "template '%s': server model index %u out of "
                            "range",
                            tp->name, tp->server_model);
    const struct sn_server_model *srv = &spec->server_models[tp->server_model];
    if (srv->gpu_model >= spec->n_gpu_models || !srv->gpus || !tp->servers)
        return sn_error_set(err, SN_ERR_INVALID,
                            "template '%s': server '%s' has no GPU model or no GPUs", tp->name,
                            srv->name ? srv->name : "?");
    const struct sn_gpu_model *gpu = &spec->gpu_models[srv->gpu_model];
    struct sn_plan_hardware hw = *out;
    enum sn_err rc = take_storage(spec, storage_name, srv, &hw, err);
    if (rc)
        return rc;
    hw.gpu_name = gpu->name;
    if (gpu->dense_bf16_flops > 0)
        hw.peak_flops = gpu->dense_bf16_flops;
    if (gpu->hbm_bytes > 0)
        hw.hbm_bytes = gpu->hbm_bytes;
    if (gpu->hbm_bytes_per_s > 0)
        hw.hbm_bytes_per_s = gpu->hbm_bytes_per_s;
    hw.gpus_per_server = srv->gpus;
    hw.servers_per_supernode = tp->servers;
    if (srv->nics && srv->nic_bytes_per_s > 0)
        hw.scaleout_bytes_per_s = srv->nics * srv->nic_bytes_per_s / srv->gpus;
    take_scaleup(tp, srv, gpu, &hw);
    hw.leaves_per_supernode = tp->leaves.switch_model == SN_NONE ? 0 : tp->leaves.count;
    hw.power_domains_per_supernode = tp->n_power_domains;
    if (spec->fabric.present && spec->fabric.efficiency > 0)
        hw.scaleout_efficiency = spec->fabric.efficiency;
    hw.supernodes = 0;
    for (uint32_t i = 0; i < spec->n_groups; i++)
        if (spec->groups[i].template_index == ti)
            hw.supernodes += spec->groups[i].count;
    *out = hw;
    return SN_OK;
}
