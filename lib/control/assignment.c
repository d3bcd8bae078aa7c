/*
 * What an agent is told to run (docs/agent.md "Heartbeat answer"): for a
 * running job with ranks on a server, the job's identity and run, its
 * world, the server's node rank, the ranks (global rank, GPU, local
 * index, exited), MASTER_ADDR/MASTER_PORT, the checkpoint assignment and
 * the spec fields the agent needs to start a rank.
 */
#include "control_int.h"

json_t *sn_control_assignment(const struct sn_control *c, const struct sn_control_job *j,
                              uint32_t s, const char *master_addr)
{
    const struct sn_model *m = c->model;
    if (!j->n_alloc)
        return NULL;
    char master[64];
    uint32_t s0 = m->gpu_server[j->alloc[0]];
    if (master_addr)
        snprintf(master, sizeof(master), "%s", master_addr);
    else
        sn_model_server_name(m, s0, master, sizeof(master));
    /* node_rank: the server's place among the job's servers in rank order. */
    uint32_t node_rank = 0, last = s0;
    for (uint32_t r = 0; r < j->n_alloc && last != s; r++)
        if (m->gpu_server[j->alloc[r]] != last) {
            node_rank++;
            last = m->gpu_server[j->alloc[r]];
        }
    json_t *ranks = json_array();
    for (uint32_t r = 0; r < j->n_alloc; r++) {
        if (m->gpu_server[j->alloc[r]] != s)
            continue;
        bool done = j->ranks_done && (j->ranks_done[r / 64] & (1ull << (r % 64)));
        json_array_append_new(ranks,
                              json_pack("{s:I,s:I,s:I,s:b}", "rank", (json_int_t)r, "gpu",
                                        (json_int_t)j->alloc[r], "local_index",
                                        (json_int_t)sn_model_gpu_index_in_server(m, j->alloc[r]),
                                        "exited", done));
    }
    json_t *o = json_pack("{s:I,s:I,s:s,s:I,s:s,s:o}", "id", (json_int_t)j->id, "run",
                          (json_int_t)j->requeues, "tenant", j->tenant, "world_size",
                          (json_int_t)j->n_alloc, "master_addr", master, "ranks", ranks);
    if (!o)
        return NULL;
    json_object_set_new(o, "node_rank", json_integer(node_rank));
    if (j->master_port)
        json_object_set_new(o, "master_port", json_integer(j->master_port));
    sn_control_ckpt_assignment(j, o);
    sn_control_imex_assignment(c, j, s, o);
    sn_control_preflight_assignment(c, j, s, o);
    sn_control_preempt_assignment(c, j, o);
    static const char *const keys[] = {"name",          "command",
                                       "data_path",     "checkpoint_path",
                                       "time_limit_s",  "cpus_per_rank",
                                       "memory_bytes_per_rank", "pids_per_rank",
                                       "array_task_id"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        json_t *v = json_object_get(j->spec, keys[i]);
        if (v)
            json_object_set(o, keys[i], v);
    }
    return o;
}
