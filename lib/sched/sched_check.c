/*
 * The scheduler's invariant checker and the naive reference placer.
 *
 * sn_sched_check_invariants() recomputes everything the scheduler keeps
 * incrementally from the per-GPU arrays and the jobs' GPU lists, and
 * compares. sn_sched_reference_min_supernodes() is deliberately naive: it
 * counts usable GPUs GPU by GPU and tries every subset of supernodes, so it
 * shares no code path with the placer it checks.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched_int.h"

#define FAIL(...) return sn_error_set(err, SN_ERR_INTERNAL, __VA_ARGS__)

/* A job placed (by the rules) after its supernode became single-server
 * only (a degraded NVLink domain) holds one server; SN_NONE when it keeps
 * that, else a supernode it breaks it on. */
static uint32_t one_server_broken(const struct sn_sched *s, const struct sched_job *j)
{
    const struct sn_model *m = s->m;
    if (s->n_one_server == 0 || j->restored)
        return SN_NONE;
    uint32_t srv0 = m->gpu_server[j->gpus[0]], bad = SN_NONE;
    bool spans = false;
    for (uint32_t i = 0; i < j->spec.gpus; i++) {
        uint32_t sn = m->gpu_supernode[j->gpus[i]];
        spans |= m->gpu_server[j->gpus[i]] != srv0;
        if (s->sn_one_server[sn] && j->place_no > s->sn_one_since[sn])
            bad = sn;
    }
    return spans ? bad : SN_NONE;
}

static enum sn_err check_jobs(const struct sn_sched *s, uint32_t *owner_count, struct sn_error *err)
{
    uint32_t pending = 0, running = 0, done = 0;
    for (uint32_t id = 0; id < s->n_jobs; id++) {
        const struct sched_job *j = &s->jobs[id];
        if (j->state == SN_JOB_PENDING) {
            pending++;
            if (j->list_pos >= s->n_pending || s->pending[j->list_pos] != id)
                FAIL("invariant: pending job %u not at its queue slot", id);
            continue;
        }
        if (j->state == SN_JOB_DONE) {
            done++;
            continue;
        }
        running++;
        if (j->list_pos >= s->n_running || s->running[j->list_pos] != id || !j->gpus)
            FAIL("invariant: running job %u not at its list slot", id);
        uint32_t g = j->spec.group_gpus;
        for (uint32_t i = 0; i < j->spec.gpus; i++) {
            uint32_t gpu = j->gpus[i];
            if (gpu >= s->m->n_gpus || s->gpu_owner[gpu] != id)
                FAIL("invariant: job %u lists GPU %u, owned by %u", id, gpu,
                     gpu < s->m->n_gpus ? s->gpu_owner[gpu] : SN_NONE);
            if (s->gpu_down[gpu])
                FAIL("invariant: job %u runs on failed GPU %u", id, gpu);
            owner_count[gpu]++;
            uint32_t first = j->gpus[i - i % g];
            if (s->cfg.policy == SN_SCHED_SUPERNODE_FIRST &&
                s->m->gpu_supernode[first] != s->m->gpu_supernode[gpu])
                FAIL("invariant: a group of job %u spans supernodes", id);
            if (s->cfg.policy == SN_SCHED_SUPERNODE_FIRST && !j->replaced &&
                g <= s->srv_gpus[s->m->gpu_server[first]] &&
                s->m->gpu_server[first] != s->m->gpu_server[gpu])
                FAIL("invariant: a group of job %u spans servers though it fits one", id);
        }
        uint32_t sn = one_server_broken(s, j);
        if (sn != SN_NONE)
            FAIL("invariant: job %u spans servers and holds GPUs of supernode %u, whose degraded "
                 "NVLink domain takes single-server jobs only",
                 id, sn);
    }
    if (pending != s->n_pending || running != s->n_running || done != s->n_done ||
        pending + running + done != s->n_jobs)
        FAIL("invariant: %u pending, %u running, %u done of %u jobs; lists say %u, %u, %u", pending,
             running, done, s->n_jobs, s->n_pending, s->n_running, s->n_done);
    return SN_OK;
}

static enum sn_err check_counters(const struct sn_sched *s, struct sn_error *err)
{
    const struct sn_model *m = s->m;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        const struct sn_supernode *S = &m->supernodes[sn];
        uint32_t usable = 0, up = 0, weak = 0, busy = 0;
        for (uint32_t srv = S->first_server; srv < S->first_server + S->n_servers; srv++) {
            uint32_t su = 0, sp = 0, sw = 0;
            for (uint32_t g = m->server_first_gpu[srv];
                 g < m->server_first_gpu[srv] + s->srv_gpus[srv]; g++) {
                busy += s->gpu_owner[g] != SN_NONE;
                if (s->gpu_owner[g] != SN_NONE || s->gpu_down[g])
                    continue;
                sp++;
                su += !s->gpu_cordon[g];
                sw += !s->gpu_cordon[g] && s->gpu_health[g] < HEALTH_FULL;
            }
            if (su != s->srv_usable[srv] || sp != s->srv_up[srv] || sw != s->srv_weak[srv])
                FAIL("invariant: server %u counts usable/up/weak %u/%u/%u, recomputed %u/%u/%u",
                     srv, s->srv_usable[srv], s->srv_up[srv], s->srv_weak[srv], su, sp, sw);
            if (s->srv_extra[srv])
                FAIL("invariant: scratch of server %u is not clear", srv);
            usable += su;
            up += sp;
            weak += sw;
        }
        if (usable != s->sn_usable[sn] || up != s->sn_up[sn] || weak != s->sn_weak[sn] ||
            busy != s->sn_busy[sn])
            FAIL("invariant: supernode %u counters differ from their recomputation", sn);
        if (s->sn_take[sn])
            FAIL("invariant: scratch of supernode %u is not clear", sn);
    }
    return SN_OK;
}

static enum sn_err check_quotas(const struct sn_sched *s, struct sn_error *err)
{
    const struct sn_model *m = s->m;
    uint32_t nsn = m->n_supernodes;
    uint32_t *per = calloc((size_t)s->cfg.n_tenants * nsn + 1, sizeof(uint32_t));
    if (!per)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory checking quotas");
    enum sn_err rc = SN_OK;
    for (uint32_t g = 0; g < m->n_gpus; g++)
        if (s->gpu_owner[g] != SN_NONE)
            per[(size_t)s->jobs[s->gpu_owner[g]].spec.tenant * nsn + m->gpu_supernode[g]]++;
    for (uint32_t t = 0; t < s->cfg.n_tenants && rc == SN_OK; t++) {
        const struct sn_sched_tenant *q = &s->tenants[t];
        uint32_t total = 0;
        for (uint32_t sn = 0; sn < nsn && rc == SN_OK; sn++) {
            uint32_t v = per[(size_t)t * nsn + sn];
            total += v;
            if (v != s->tenant_sn_gpus[(size_t)t * nsn + sn])
                rc = sn_error_set(err, SN_ERR_INTERNAL,
                                  "invariant: tenant %u holds %u GPUs in supernode %u, counted %u",
                                  t, v, sn, s->tenant_sn_gpus[(size_t)t * nsn + sn]);
            else if (q->quota_gpus_per_supernode && v > q->quota_gpus_per_supernode &&
                     s->pools[s->sn_pool[sn]].kind != SN_POOL_DEDICATED)
                rc = sn_error_set(err, SN_ERR_INTERNAL,
                                  "invariant: tenant %u holds %u GPUs in supernode %u, quota %u", t,
                                  v, sn, q->quota_gpus_per_supernode);
        }
        if (rc == SN_OK && (total != s->tenant_gpus[t] || (q->quota_gpus && total > q->quota_gpus)))
            rc = sn_error_set(err, SN_ERR_INTERNAL,
                              "invariant: tenant %u holds %u GPUs (counted %u, quota %u)", t, total,
                              s->tenant_gpus[t], q->quota_gpus);
    }
    for (uint32_t sn = 0; sn < nsn && rc == SN_OK; sn++) {
        uint32_t tenants = 0, owner = SN_NONE;
        for (uint32_t t = 0; t < s->cfg.n_tenants; t++)
            if (per[(size_t)t * nsn + sn]) {
                tenants++;
                owner = t;
            }
        bool dedicated = s->pools[s->sn_pool[sn]].kind == SN_POOL_DEDICATED;
        if (tenants != s->sn_ntenants[sn] || (dedicated && tenants > 1) ||
            (dedicated && s->sn_owner[sn] != owner) ||
            (!dedicated && s->cfg.max_tenants_per_supernode &&
             tenants > s->cfg.max_tenants_per_supernode))
            rc = sn_error_set(err, SN_ERR_INTERNAL,
                              "invariant: supernode %u holds %u tenants (counted %u)", sn, tenants,
                              s->sn_ntenants[sn]);
    }
    free(per);
    return rc;
}

/* Spine-pod uplink loads: recomputed from jobs spanning pods; within
 * capacity when admission is on. */
static enum sn_err check_pods(const struct sn_sched *s, bool admit, struct sn_error *err)
{
    const struct sn_model *m = s->m;
    double *load = calloc(s->n_pods + 1, sizeof(double));
    if (!load)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory checking pods");
    for (uint32_t r = 0; r < s->n_running; r++) {
        const struct sched_job *j = &s->jobs[s->running[r]];
        uint32_t pod0 = s->sn_pod[m->gpu_supernode[j->gpus[0]]];
        bool spans = false;
        for (uint32_t i = 1; i < j->spec.gpus && !spans; i++)
            spans = s->sn_pod[m->gpu_supernode[j->gpus[i]]] != pod0;
        for (uint32_t i = 0; spans && i < j->spec.gpus; i++)
            load[s->sn_pod[m->gpu_supernode[j->gpus[i]]]] += j->spec.xsn_bytes_per_s;
    }
    enum sn_err rc = SN_OK;
    for (uint32_t p = 0; p < s->n_pods && rc == SN_OK; p++) {
        double tol = 1e-6 * (load[p] + 1);
        if (fabs(load[p] - s->pod_load[p]) > tol)
            rc = sn_error_set(err, SN_ERR_INTERNAL, "invariant: pod %u load %g, recomputed %g", p,
                              s->pod_load[p], load[p]);
        else if (admit && load[p] > s->pod_cap[p] * (1 + 1e-9) + tol)
            rc = sn_error_set(err, SN_ERR_INTERNAL,
                              "invariant: pod %u spine uplinks carry %g bytes/s over a capacity "
                              "of %g",
                              p, load[p], s->pod_cap[p]);
    }
    free(load);
    return rc;
}

static enum sn_err check_leaves(const struct sn_sched *s, struct sn_error *err)
{
    const struct sn_model *m = s->m;
    double *load = calloc(m->n_switches + 1, sizeof(double));
    if (!load)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory checking leaves");
    for (uint32_t r = 0; r < s->n_running; r++) {
        const struct sched_job *j = &s->jobs[s->running[r]];
        if (j->n_sn < 2)
            continue;
        for (uint32_t i = 0; i < j->spec.gpus; i++)
            if (m->gpu_leaf[j->gpus[i]] != SN_NONE)
                load[m->gpu_leaf[j->gpus[i]]] += j->spec.xsn_bytes_per_s;
    }
    enum sn_err rc = SN_OK;
    bool admit = s->cfg.policy == SN_SCHED_SUPERNODE_FIRST && s->cfg.bandwidth_admission;
    for (uint32_t sw = 0; sw < m->n_switches && rc == SN_OK; sw++) {
        double tol = 1e-6 * (load[sw] + 1);
        if (load[sw] - s->leaf_load[sw] > tol || s->leaf_load[sw] - load[sw] > tol)
            rc = sn_error_set(err, SN_ERR_INTERNAL, "invariant: leaf %u load %g, recomputed %g", sw,
                              s->leaf_load[sw], load[sw]);
        else if (admit && load[sw] > s->leaf_cap[sw] * (1 + 1e-9) + tol)
            rc = sn_error_set(err, SN_ERR_INTERNAL,
                              "invariant: leaf %u carries %g bytes/s over a capacity of %g", sw,
                              load[sw], s->leaf_cap[sw]);
    }
    free(load);
    return rc == SN_OK ? check_pods(s, admit, err) : rc;
}

/* Host CPU and memory per server: recomputed from the running jobs and
 * within cores (bytes) x the oversell ratio. */
static enum sn_err check_hosts(const struct sn_sched *s, struct sn_error *err)
{
    const struct sn_model *m = s->m;
    double *cpu = calloc(2 * (size_t)m->n_servers + 1, sizeof(double)), *mem = cpu + m->n_servers;
    if (!cpu)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory checking hosts");
    for (uint32_t r = 0; r < s->n_running; r++) {
        const struct sched_job *j = &s->jobs[s->running[r]];
        for (uint32_t i = 0; i < j->spec.gpus; i++) {
            cpu[m->gpu_server[j->gpus[i]]] += j->spec.cpu_cores_per_gpu;
            mem[m->gpu_server[j->gpus[i]]] += j->spec.memory_bytes_per_gpu;
        }
    }
    enum sn_err rc = SN_OK;
    for (uint32_t srv = 0; srv < m->n_servers && rc == SN_OK; srv++) {
        double tc = 1e-6 * (cpu[srv] + 1), tm = 1e-6 * (mem[srv] + 1);
        if (fabs(cpu[srv] - s->srv_cpu_used[srv]) > tc ||
            fabs(mem[srv] - s->srv_mem_used[srv]) > tm)
            rc = sn_error_set(
                err, SN_ERR_INTERNAL,
                "invariant: server %u host use %g cores / %g bytes, recomputed %g / %g", srv,
                s->srv_cpu_used[srv], s->srv_mem_used[srv], cpu[srv], mem[srv]);
        else if ((s->srv_cpu_cap[srv] > 0 && cpu[srv] > s->srv_cpu_cap[srv] + tc) ||
                 (s->srv_mem_cap[srv] > 0 && mem[srv] > s->srv_mem_cap[srv] + tm))
            rc = sn_error_set(err, SN_ERR_INTERNAL,
                              "invariant: server %u oversold: %g of %g cores, %g of %g bytes", srv,
                              cpu[srv], s->srv_cpu_cap[srv], mem[srv], s->srv_mem_cap[srv]);
    }
    free(cpu);
    return rc;
}

/* Cooperative preemption: only running jobs leave, each pending job's
 * awaiting counts the running jobs leaving for it. */
static enum sn_err check_leaving(const struct sn_sched *s, struct sn_error *err)
{
    uint32_t *count = calloc(s->n_jobs + 1, sizeof(uint32_t));
    if (!count)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory checking invariants");
    enum sn_err rc = SN_OK;
    for (uint32_t i = 0; i < s->n_jobs && rc == SN_OK; i++) {
        const struct sched_job *j = &s->jobs[i];
        if ((j->leaving || j->leaving_for != SN_NONE) && j->state != SN_JOB_RUNNING)
            rc = sn_error_set(err, SN_ERR_INTERNAL, "invariant: job %u leaves but is not running",
                              i);
        else if (j->leaving_for != SN_NONE && j->leaving_for < s->n_jobs)
            count[j->leaving_for]++;
    }
    for (uint32_t i = 0; i < s->n_jobs && rc == SN_OK; i++)
        if (count[i] != s->jobs[i].awaiting)
            rc = sn_error_set(err, SN_ERR_INTERNAL,
                              "invariant: job %u awaits %u signalled victims, %u leave for it", i,
                              s->jobs[i].awaiting, count[i]);
    free(count);
    return rc;
}

enum sn_err sn_sched_check_invariants(const struct sn_sched *s, struct sn_error *err)
{
    const struct sn_model *m = s->m;
    uint32_t *owner_count = calloc(m->n_gpus + 1, sizeof(uint32_t));
    if (!owner_count)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory checking invariants");
    enum sn_err rc = check_jobs(s, owner_count, err);
    for (uint32_t g = 0; g < m->n_gpus && rc == SN_OK; g++)
        if (owner_count[g] != (s->gpu_owner[g] != SN_NONE))
            rc = sn_error_set(err, SN_ERR_INTERNAL,
                              "invariant: GPU %u is listed by %u jobs, owner %u", g, owner_count[g],
                              s->gpu_owner[g]);
    free(owner_count);
    if (rc == SN_OK)
        rc = check_counters(s, err);
    if (rc == SN_OK)
        rc = check_quotas(s, err);
    if (rc == SN_OK)
        rc = check_leaves(s, err);
    if (rc == SN_OK)
        rc = check_hosts(s, err);
    if (rc == SN_OK)
        rc = sn__sched_power_check(s, err);
    if (rc == SN_OK)
        rc = check_leaving(s, err);
    return rc;
}

/* ---- naive reference --------------------------------------------------- */

/* Groups-aligned GPUs of supernode sn usable by a fresh job, counted GPU
 * by GPU; *free_out receives the usable count. */
static uint32_t ref_capacity(const struct sn_sched *s, uint32_t sn, uint32_t group,
                             uint32_t *free_out)
{
    const struct sn_model *m = s->m;
    const struct sn_supernode *S = &m->supernodes[sn];
    uint32_t total = 0, grouped = 0;
    for (uint32_t srv = S->first_server; srv < S->first_server + S->n_servers; srv++) {
        uint32_t c = 0;
        for (uint32_t g = 0; g < m->n_gpus; g++)
            if (m->gpu_server[g] == srv && s->gpu_owner[g] == SN_NONE && !s->gpu_down[g] &&
                !s->gpu_cordon[g])
                c++;
        total += c;
        grouped += c - c % group;
    }
    uint32_t server_gpus = sn_model_server_spec(m, S->first_server)->gpus;
    if (group > server_gpus)
        grouped = total - total % group;
    uint32_t spare = s->cfg.spare_gpus_per_supernode;
    uint32_t limit = total > spare ? total - spare : 0;
    limit -= limit % group;
    *free_out = total;
    return grouped < limit ? grouped : limit;
}

uint32_t sn_sched_reference_min_supernodes(const struct sn_sched *s, uint32_t gpus,
                                           uint32_t group_gpus, uint32_t *best_free)
{
    uint32_t nsn = s->m->n_supernodes, cap[16], freec[16];
    *best_free = UINT32_MAX;
    if (nsn > 16 || group_gpus == 0)
        return 0;
    for (uint32_t sn = 0; sn < nsn; sn++)
        cap[sn] = ref_capacity(s, sn, group_gpus, &freec[sn]);
    uint32_t best = 0;
    for (uint32_t mask = 1; mask < (1u << nsn); mask++) {
        uint32_t sum = 0, k = 0;
        for (uint32_t sn = 0; sn < nsn; sn++)
            if (mask & (1u << sn)) {
                sum += cap[sn];
                k++;
            }
        if (sum < gpus)
            continue;
        if (best == 0 || k < best)
            best = k;
        if (k == 1)
            for (uint32_t sn = 0; sn < nsn; sn++)
                if ((mask & (1u << sn)) && freec[sn] < *best_free)
                    *best_free = freec[sn];
    }
    return best;
}
