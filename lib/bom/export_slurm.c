/*
 * Slurm node configuration from the model: the NodeName and PartitionName
 * lines of slurm.conf (format slurm-conf) and gres.conf (format slurm-gres).
 * With topology.conf (slurm-tree, or slurm-block for Slurm >= 23.11) they
 * are what a Slurm cluster needs to know of the machines; tests/cli/
 * slurm_conf.sh loads all three into a real slurmctld and slurmd (Debian's
 * Slurm 22.05) and reads them back with scontrol and sinfo.
 *
 * Choices (docs/export.md):
 *  - one NodeName line per server, since Features differ per server: the
 *    supernode, the power domains feeding it (pd-<name>), its first NIC's
 *    leaf, its rack and its pool;
 *  - Sockets and cores from the server model (cpus = sockets, cpu_cores in
 *    all), one thread per core, RealMemory in MiB less 5 % for the OS
 *    (Slurm drains a node whose memory is below its RealMemory);
 *  - Gres=gpu:<type>:<n> with the type from the GPU model's name, lowered,
 *    anything but [a-z0-9_] made '_' (Slurm's GRES types are identifiers);
 *  - one partition per pool holding its supernodes' servers (the first is
 *    Default=YES); without pools one partition "all";
 *  - gres.conf: per server model, File=/dev/nvidia[0-N], Cores= the
 *    socket's cores each GPU sits on (GPUs split evenly over sockets, in
 *    order, as on HGX boards), and Links= for NVLink peers: every GPU of a
 *    scale-up domain reaches every other of its server (-1 is the GPU
 *    itself, as in Slurm's gres.conf(5)).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "export_int.h"

/* The GRES type of a GPU model ("H100-SXM5-80GB" -> "h100_sxm5_80gb"). */
static void gres_type(const char *model, char *buf, size_t len)
{
    size_t o = 0;
    for (; model && *model && o + 1 < len; model++)
        buf[o++] = isalnum((unsigned char)*model) ? (char)tolower((unsigned char)*model) : '_';
    buf[o] = '\0';
    if (!o)
        snprintf(buf, len, "gpu");
}

static void feature(FILE *out, bool *first, const char *prefix, const char *name)
{
    fprintf(out, "%s%s%s", *first ? "" : ",", prefix, name);
    *first = false;
}

static void node_line(FILE *out, const struct sn_model *m, uint32_t sv)
{
    char name[SN__EXPORT_NAME_LEN], type[96];
    const struct sn_server_model *sm = sn_model_server_spec(m, sv);
    uint32_t sockets = sm->cpus ? sm->cpus : 1, cores = sm->cpu_cores ? sm->cpu_cores : sockets;
    unsigned long long mib = (unsigned long long)(sm->memory_bytes / 1048576.0 * 0.95);
    gres_type(m->spec->gpu_models[sm->gpu_model].name, type, sizeof(type));
    fprintf(out,
            "NodeName=%s CPUs=%u Boards=1 SocketsPerBoard=%u CoresPerSocket=%u ThreadsPerCore=1 "
            "RealMemory=%llu Gres=gpu:%s:%u Features=",
            sn_model_server_name(m, sv, name, sizeof(name)), cores, sockets, cores / sockets,
            mib ? mib : 1, type, sm->gpus);
    bool first = true;
    uint32_t sn = m->server_supernode[sv];
    feature(out, &first, "", sn_model_supernode_name(m, sn, name, sizeof(name)));
    for (int f = 0; f < 2; f++)
        if (m->server_power[f][sv] != SN_NONE)
            feature(out, &first, "pd-",
                    sn_model_power_domain_name(m, m->server_power[f][sv], name, sizeof(name)));
    uint32_t leaf = m->gpu_leaf[m->server_first_gpu[sv]];
    if (leaf != SN_NONE)
        feature(out, &first, "", sn_model_switch_name(m, leaf, name, sizeof(name)));
    if (m->server_rack[sv] != SN_NONE)
        feature(out, &first, "", sn_model_rack_name(m, m->server_rack[sv], name, sizeof(name)));
    if (m->supernodes[sn].pool != SN_NONE)
        feature(out, &first, "pool-", m->spec->pools[m->supernodes[sn].pool].name);
    fputs(" State=UNKNOWN\n", out);
}

static void partition(FILE *out, const struct sn_model *m, const char *name, uint32_t pool,
                      bool dflt)
{
    char host[SN__EXPORT_NAME_LEN];
    struct sn__hostlist h;
    fprintf(out, "PartitionName=%s Nodes=", name);
    sn__hostlist_begin(&h, out);
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        const struct sn_supernode *s = &m->supernodes[sn];
        if (pool != SN_NONE && s->pool != pool)
            continue;
        for (uint32_t sv = s->first_server; sv < s->first_server + s->n_servers; sv++)
            sn__hostlist_add(&h, sn_model_server_name(m, sv, host, sizeof(host)));
    }
    sn__hostlist_end(&h);
    fprintf(out, " Default=%s MaxTime=INFINITE State=UP\n", dflt ? "YES" : "NO");
}

/* IMEX for multi-node NVLink (SwitchType=switch/nvidia_imex, Slurm >=
 * 24.05): slurmctld hands each job an IMEX channel and slurmd makes its
 * /dev/nvidia-caps-imex-channels/channel<N> for the job's steps. The
 * plugin (src/plugins/switch/nvidia_imex) keeps one bitmap of channels
 * 1..imex_channel_count for the whole cluster, channel 0 reserved, so the
 * count bounds the jobs running at once cluster-wide. The driver makes
 * channels 0..ImexChannelCount-1, 2048 by default (/proc/driver/nvidia/
 * params), so 2047 keeps every channel Slurm hands out on a device that
 * exists (Slurm's own default, 2048, can hand out channel 2048). */
static void imex_lines(FILE *out, const struct sn_model *m)
{
    const unsigned driver_channels = 2048, channels = driver_channels - 1;
    fprintf(out,
            "# NVLink domains span servers: one IMEX channel per job (switch/nvidia_imex, "
            "Slurm >= 24.05).\n# Channels 1-%u, cluster-wide: at most %u jobs run at once; "
            "the driver's default\n# ImexChannelCount=%u makes channels 0-%u.\n",
            channels, channels, driver_channels, driver_channels - 1);
    if (m->n_servers > channels)
        fprintf(out,
                "# NOTE: %u nodes: more single-node jobs can run than there are channels; "
                "raise the driver's\n# NVreg_ImexChannelCount and imex_channel_count together.\n",
                m->n_servers);
    fprintf(out, "SwitchType=switch/nvidia_imex\nSwitchParameters=imex_channel_count=%u\n",
            channels);
}

enum sn_err sn__export_slurm_conf(FILE *out, const struct sn_model *m, struct sn_error *err)
{
    (void)err;
    fprintf(out,
            "# Slurm node and partition configuration for cluster '%s': %u supernodes, %u nodes, "
            "%u GPUs;\n# written by sn design export --format slurm-conf. Include it from "
            "slurm.conf\n# (Include /etc/slurm/nodes.conf) with GresTypes=gpu and "
            "TopologyPlugin=topology/tree\n# (topology.conf: --format slurm-tree), gres.conf: "
            "--format slurm-gres. Slurm >= 20.11.\n",
            m->spec->name ? m->spec->name : "", m->n_supernodes, m->n_servers, m->n_gpus);
    if (sn__multi_server_nvlink(m))
        imex_lines(out, m);
    for (uint32_t sv = 0; sv < m->n_servers; sv++)
        node_line(out, m, sv);
    if (m->spec->n_pools == 0) {
        partition(out, m, "all", SN_NONE, true);
        return SN_OK;
    }
    for (uint32_t p = 0; p < m->spec->n_pools; p++) {
        bool used = false;
        for (uint32_t sn = 0; sn < m->n_supernodes && !used; sn++)
            used = m->supernodes[sn].pool == p;
        if (used)
            partition(out, m, m->spec->pools[p].name, p, p == 0);
    }
    return SN_OK;
}

/* gres.conf lines of the servers of one server model, in hostlist runs. */
static void gres_model(FILE *out, const struct sn_model *m, uint32_t model)
{
    const struct sn_server_model *sm = &m->spec->server_models[model];
    char type[96], host[SN__EXPORT_NAME_LEN];
    gres_type(m->spec->gpu_models[sm->gpu_model].name, type, sizeof(type));
    uint32_t sockets = sm->cpus ? sm->cpus : 1, cores = sm->cpu_cores ? sm->cpu_cores : sockets;
    uint32_t per_socket = cores / sockets;
    for (uint32_t g = 0; g < sm->gpus; g++) {
        struct sn__hostlist h;
        fputs("NodeName=", out);
        sn__hostlist_begin(&h, out);
        for (uint32_t sv = 0; sv < m->n_servers; sv++)
            if (m->server_model[sv] == model)
                sn__hostlist_add(&h, sn_model_server_name(m, sv, host, sizeof(host)));
        sn__hostlist_end(&h);
        uint32_t socket = (uint32_t)((unsigned long long)g * sockets / sm->gpus);
        fprintf(out, " Name=gpu Type=%s File=/dev/nvidia%u Cores=%u-%u", type, g,
                socket * per_socket, socket * per_socket + per_socket - 1);
        if (sm->gpus > 1 && m->spec->gpu_models[sm->gpu_model].scaleup_links) {
            fputs(" Links=", out);
            for (uint32_t k = 0; k < sm->gpus; k++)
                fprintf(out, "%s%d", k ? "," : "", k == g ? -1 : 1);
        }
        fputc('\n', out);
    }
}

enum sn_err sn__export_slurm_gres(FILE *out, const struct sn_model *m, struct sn_error *err)
{
    (void)err;
    fprintf(out,
            "# Slurm gres.conf for cluster '%s', written by sn design export --format "
            "slurm-gres:\n# one line per GPU of each server model; Cores= the socket the GPU "
            "sits on;\n# Links= NVLink peers (-1: the GPU itself).\n",
            m->spec->name ? m->spec->name : "");
    for (uint32_t model = 0; model < m->spec->n_server_models; model++) {
        bool used = false;
        for (uint32_t sv = 0; sv < m->n_servers && !used; sv++)
            used = m->server_model[sv] == model;
        if (used)
            gres_model(out, m, model);
    }
    return SN_OK;
}

/* ---- job_submit.lua -------------------------------------------------------- */

/* A job_submit/lua script (Slurm's JobSubmitPlugins=lua) holding two of
 * Supernode's rules as far as Slurm can express them (docs/slurm.md):
 *  - a job whose GPUs fit in the largest supernode is kept in one: it gets
 *    --switches=1@<wait> (one level-0 switch of the slurm-tree topology,
 *    which is a supernode);
 *  - a job that declares its tensor-parallel size in its comment
 *    ("sn:tp=8") has its GPU count rounded up to whole groups, and a group
 *    larger than a server also keeps the job in one supernode.
 * Per-supernode tenant quotas need snd: Slurm's QOS and association limits
 * count GPUs per partition, not per switch. */
enum sn_err sn__export_slurm_job_submit(FILE *out, const struct sn_model *m, struct sn_error *err)
{
    (void)err;
    uint32_t max_gpus = 0, node_gpus = 0;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++)
        if (m->supernodes[sn].n_gpus > max_gpus)
            max_gpus = m->supernodes[sn].n_gpus;
    for (uint32_t sv = 0; sv < m->n_servers; sv++)
        if (sn_model_server_spec(m, sv)->gpus > node_gpus)
            node_gpus = sn_model_server_spec(m, sv)->gpus;
    fprintf(out,
            "-- Slurm job_submit.lua for cluster '%s', written by sn design export --format\n"
            "-- slurm-job-submit (docs/slurm.md). Install it beside slurm.conf with\n"
            "-- JobSubmitPlugins=lua and TopologyPlugin=topology/tree (sn design export\n"
            "-- --format slurm-tree: its level-0 switches are the supernodes).\n"
            "--   * a job whose GPUs fit in one supernode (%u GPUs) is kept in one:\n"
            "--     --switches=1@SN_SWITCH_WAIT (it waits that long for one to free up)\n"
            "--   * --comment=sn:tp=N rounds the GPU count up to whole groups of N; a group\n"
            "--     larger than a server (%u GPUs) also keeps the job in one supernode.\n"
            "-- Slurm >= 20.11 (tested with 22.05).\n\n",
            m->spec->name ? m->spec->name : "", max_gpus, node_gpus);
    fprintf(out,
            "local SUPERNODE_GPUS = %u\n"
            "local NODE_GPUS = %u\n"
            "local SN_SWITCH_WAIT = 300 -- seconds a job waits for one supernode\n\n",
            max_gpus, node_gpus);
    fputs("-- The GPU count in a TRES string (\"gres:gpu:16\", \"gres/gpu:h100:8\"), or nil.\n"
          "local function gpus_in(tres)\n"
          "   if tres == nil then return nil end\n"
          "   for item in string.gmatch(tres, \"[^,]+\") do\n"
          "      local n = string.match(item, \"^gres[:/]gpu:(%d+)$\") or\n"
          "                string.match(item, \"^gres[:/]gpu:[^:]+:(%d+)$\")\n"
          "      if n then return tonumber(n) end\n"
          "   end\n"
          "   return nil\n"
          "end\n\n"
          "-- Replaces the GPU count of a TRES string, keeping its type if any.\n"
          "local function with_gpus(tres, n)\n"
          "   local out = string.gsub(tres, \"(gres[:/]gpu:[^:,]*:?)%d+\", \"%1\" .. n, 1)\n"
          "   return out\n"
          "end\n\n"
          "function slurm_job_submit(job_desc, part_list, submit_uid)\n"
          "   local nodes = job_desc.min_nodes\n"
          "   if nodes == nil or nodes == slurm.NO_VAL or nodes < 1 then nodes = 1 end\n"
          "   local per_job = gpus_in(job_desc.tres_per_job)\n"
          "   local per_node = gpus_in(job_desc.tres_per_node)\n"
          "   local total = per_job or (per_node and per_node * nodes)\n"
          "   local tp = job_desc.comment and tonumber(string.match(job_desc.comment, \"sn:tp=(%d+)\"))\n"
          "   if tp and tp > 0 and total then\n"
          "      local want = math.ceil(total / tp) * tp\n"
          "      if want ~= total then\n"
          "         if per_job then\n"
          "            job_desc.tres_per_job = with_gpus(job_desc.tres_per_job, want)\n"
          "         else\n"
          "            local node_want = math.ceil(per_node / math.min(tp, NODE_GPUS)) * math.min(tp, NODE_GPUS)\n"
          "            job_desc.tres_per_node = with_gpus(job_desc.tres_per_node, node_want)\n"
          "            want = node_want * nodes\n"
          "         end\n"
          "         slurm.log_info(\"sn: job %s: %d GPUs rounded to %d (tp %d)\", tostring(job_desc.name), total, want, tp)\n"
          "         total = want\n"
          "      end\n"
          "   end\n"
          "   local one = total and total <= SUPERNODE_GPUS\n"
          "   if tp and tp > NODE_GPUS and tp <= SUPERNODE_GPUS then one = true end\n"
          "   if one and (job_desc.req_switch == nil or job_desc.req_switch == slurm.NO_VAL or job_desc.req_switch == 0) then\n"
          "      job_desc.req_switch = 1\n"
          "      job_desc.wait4switch = SN_SWITCH_WAIT\n"
          "      slurm.log_info(\"sn: job %s: %s GPUs kept in one supernode\", tostring(job_desc.name), tostring(total))\n"
          "   end\n"
          "   return slurm.SUCCESS\n"
          "end\n\n"
          "function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)\n"
          "   return slurm.SUCCESS\n"
          "end\n\n"
          "return slurm.SUCCESS\n",
          out);
    return SN_OK;
}
