/*
 * The node agents' table in snd (lib/control/agents.c: heartbeats, boots,
 * telemetry sequence numbers) and their latest-value telemetry store, made
 * once at start (snd_agents_start) and read by the health engine, the
 * dashboard, the benchmark rounds and /metrics. The routes that fill them
 * are agent_routes.c's and routes_agent.c's; this file calls none of the
 * files above it, so they can all read it.
 *
 * Invariants: the telemetry store is keyed by the model (store GPU id ==
 * model GPU id, added here in model order); both live in memory only, owned
 * by the state thread, so a restart of snd starts them empty and the agents
 * re-announce themselves with their next heartbeat and batch.
 */
#include "agent.h"

#include <stdio.h>

#include <sn/agents.h>

static struct {
    struct sn_agents *t;
    struct sn_telem_store *telem;
} ag;

enum sn_err snd_agents_start(struct snd *d, struct sn_error *err)
{
    const struct sn_model *m = d->model;
    struct sn_telem_store_limits lim = {.gpus = m->n_gpus ? m->n_gpus : 1,
                                        .hosts = m->n_servers ? m->n_servers : 1,
                                        /* one source name per node (the store caps it
                                         * at 65,535) */
                                        .sources = m->n_servers + 64,
                                        .inventory_only = true};
    ag.t = sn_agents_new(m->n_servers, snd_now_ms());
    if (!ag.t)
        return sn_error_set(err, SN_ERR_NOMEM, "agent state: out of memory");
    if (sn_telem_store_new(&lim, &ag.telem, err) != SN_OK)
        return err->code;
    for (uint32_t g = 0; g < m->n_gpus; g++) {
        char host[64];
        sn_model_server_name(m, m->gpu_server[g], host, sizeof(host));
        struct sn_telem_gpu_ref ref = {.host = host,
                                       .index = (int)sn_model_gpu_index_in_server(m, g),
                                       .bus = SN_TELEM_BUS_NONE};
        uint32_t id;
        if (sn_telem_store_add_gpu(ag.telem, &ref, &id, err) != SN_OK)
            return err->code;
        if (id != g)
            return sn_error_set(err, SN_ERR_INTERNAL,
                                "agent state: telemetry store gave GPU %u the id %u", g, id);
    }
    return SN_OK;
}

void snd_agents_free(void)
{
    sn_agents_free(ag.t);
    sn_telem_store_free(ag.telem);
    ag.t = NULL;
    ag.telem = NULL;
}

struct sn_agents *snd_agents(void)
{
    return ag.t;
}

struct sn_telem_store *snd_agent_store(void)
{
    return ag.telem;
}

const struct sn_telem_store *snd_agent_telemetry_store(struct snd *d)
{
    (void)d;
    return ag.telem;
}

int64_t snd_agent_heartbeat_age_s(struct snd *d, uint32_t server)
{
    if (!ag.t || server >= d->model->n_servers || !ag.t->nodes[server].heartbeat_s)
        return -1;
    return snd_now_s() - ag.t->nodes[server].heartbeat_s;
}

void snd_agent_counts(struct snd *d, uint32_t *up, uint32_t *down)
{
    (void)d;
    *up = *down = 0;
    if (ag.t)
        sn_agents_counts(ag.t, snd_now_s(), up, down);
}

const char *snd_agent_address(struct snd *d, uint32_t server)
{
    return ag.t && server < d->model->n_servers && ag.t->nodes[server].address[0]
               ? ag.t->nodes[server].address
               : NULL;
}

void snd_agent_count_exit(void)
{
    if (ag.t)
        ag.t->exits_total++;
}

/* The agents' families (sn_agents itself is metrics.c's, with "never"). */
char *snd_agent_metrics_text(struct snd *d)
{
    (void)d;
    if (!ag.t)
        return NULL;
    sn_agents_roll(ag.t, snd_now_ms());
    return sn_agents_metrics_text(ag.t);
}
