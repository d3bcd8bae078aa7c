/*
 * Workloads for the simulator: the trace loaders, the synthetic generator
 * and the seeded RNG. This is the one file of lib/sim that reads files
 * (it is a parser of trace files).
 *
 * Mapping of traces onto jobs (docs/simulator.md has the rationale):
 *  - ITP clusterNN.csv (job_id, submission_time, duration, num_gpu) and
 *    Helios Venus (job_id, arrival_s, service_sec, gpu_count): submit and
 *    duration as given; tenant = FNV-1a(job_id) mod tenants (the traces
 *    carry no user or VC); group = gpus when gpus <= 8, else 8 when 8
 *    divides gpus, else 1 (a TP group of one 8-GPU server, DP over groups);
 *  - openb pods: GPU pods only (num_gpu 0 skipped); a fractional
 *    gpu_milli counts as one whole GPU; submit = creation_time; duration =
 *    deletion_time - scheduled_time (pods with an empty scheduled or
 *    deletion time never ran to an end and are skipped);
 *    tenant = QoS class (LS, BE, Burstable, Guaranteed = 0..3); group = gpus.
 * Rows are kept in file order; traces are sorted by submit time already,
 * and the loader re-sorts stably to be sure.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/sim.h>

#define MAX_TRACE_BYTES (256u << 20)
#define MAX_FIELDS 16

static const char *const kind_names[] = {
#define SN_X(name, text) text,
    SN_TRACE_KIND_LIST(SN_X)
#undef SN_X
};

const char *sn_trace_kind_name(enum sn_trace_kind kind)
{
    return (unsigned)kind < SN_TRACE_KIND_COUNT ? kind_names[kind] : "unknown";
}

enum sn_trace_kind sn_trace_kind_from_name(const char *name)
{
    for (int k = 0; k < SN_TRACE_KIND_COUNT; k++)
        if (strcmp(name, kind_names[k]) == 0)
            return (enum sn_trace_kind)k;
    return SN_TRACE_KIND_COUNT;
}

/* ---- RNG --------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void sn_rng_seed(struct sn_rng *rng, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t sn_rng_next(struct sn_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double sn_rng_uniform(struct sn_rng *rng)
{
    return (double)(sn_rng_next(rng) >> 11) * 0x1.0p-53;
}

double sn_rng_exp(struct sn_rng *rng, double mean)
{
    return -mean * log(1.0 - sn_rng_uniform(rng));
}

/* ---- CSV --------------------------------------------------------------- */

static enum sn_err read_all(const char *path, char **buf, size_t *len, struct sn_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return sn_error_set(err, SN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 20, n = 0;
    char *b = malloc(cap + 1);
    enum sn_err rc = SN_OK;
    while (b) {
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
        if (n == cap) {
            if (cap >= MAX_TRACE_BYTES) {
                rc = sn_error_set(err, SN_ERR_LIMIT, "%s: larger than %u bytes", path,
                                  MAX_TRACE_BYTES);
                break;
            }
            char *nb = realloc(b, cap * 2 + 1);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!b)
        return sn_error_set(err, SN_ERR_NOMEM, "%s: out of memory reading", path);
    if (rc != SN_OK) {
        free(b);
        return rc;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return SN_OK;
}

/* Splits line (NUL-terminated, modified) at commas. */
static uint32_t split(char *line, char **fields)
{
    uint32_t n = 0;
    fields[n++] = line;
    for (char *p = line; *p && n < MAX_FIELDS; p++)
        if (*p == ',') {
            *p = '\0';
            fields[n++] = p + 1;
        }
    return n;
}

static enum sn_err num(const char *path, unsigned line, const char *name, const char *text,
                       double *out, struct sn_error *err)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    while (*end == '\r' || *end == ' ')
        end++;
    if (end == text || *end || errno || !isfinite(v) || v < 0)
        return sn_error_set_at(err, SN_ERR_SYNTAX, line, 1,
                               "%s:%u: field '%s' is '%s', expected a number >= 0", path, line,
                               name, text);
    *out = v;
    return SN_OK;
}

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static uint32_t default_group(uint32_t gpus)
{
    if (gpus <= 8)
        return gpus;
    return gpus % 8 == 0 ? 8 : 1;
}

static const char *const qos_names[] = {"LS", "BE", "Burstable", "Guaranteed"};

/* One row into job; returns SN_OK and *keep false for rows that map to no job. */
static enum sn_err parse_row(enum sn_trace_kind kind, const char *path, unsigned line, char **f,
                             uint32_t nf, uint32_t tenants, struct sn_sim_job *job, bool *keep,
                             struct sn_error *err)
{
    double submit, dur, gpus;
    *keep = false;
    uint32_t want = kind == SN_TRACE_OPENB ? 11 : 4;
    if (nf != want)
        return sn_error_set_at(err, SN_ERR_SYNTAX, line, 1,
                               "%s:%u: %u fields, expected %u (%s trace)", path, line, nf, want,
                               sn_trace_kind_name(kind));
    enum sn_err rc;
    if (kind != SN_TRACE_OPENB) {
        if ((rc = num(path, line, kind == SN_TRACE_ITP ? "submission_time" : "arrival_s", f[1],
                      &submit, err)) ||
            (rc = num(path, line, kind == SN_TRACE_ITP ? "duration" : "service_sec", f[2], &dur,
                      err)) ||
            (rc =
                 num(path, line, kind == SN_TRACE_ITP ? "num_gpu" : "gpu_count", f[3], &gpus, err)))
            return rc;
        job->tenant = fnv1a(f[0]) % tenants;
    } else {
        double sched, del;
        if (f[9][0] == '\0' || f[9][0] == '\r' || f[10][0] == '\0' || f[10][0] == '\r')
            return SN_OK; /* never scheduled or never deleted: no duration */
        if ((rc = num(path, line, "num_gpu", f[3], &gpus, err)) ||
            (rc = num(path, line, "creation_time", f[8], &submit, err)) ||
            (rc = num(path, line, "deletion_time", f[9], &del, err)) ||
            (rc = num(path, line, "scheduled_time", f[10], &sched, err)))
            return rc;
        if (gpus == 0 || del <= sched)
            return SN_OK;
        dur = del - sched;
        job->tenant = 0;
        for (uint32_t q = 0; q < 4; q++)
            if (strcmp(f[6], qos_names[q]) == 0)
                job->tenant = q % tenants;
    }
    if (gpus < 1 || gpus > SN_SCHED_MAX_JOB_GPUS || gpus != floor(gpus) || !(dur > 0))
        return SN_OK;
    job->submit_s = submit;
    job->duration_s = dur;
    job->gpus = (uint32_t)gpus;
    job->group_gpus = kind == SN_TRACE_OPENB ? job->gpus : default_group(job->gpus);
    job->priority = 0;
    *keep = true;
    return SN_OK;
}

static int cmp_submit(const void *a, const void *b)
{
    const struct sn_sim_job *x = a, *y = b;
    if (x->submit_s != y->submit_s)
        return x->submit_s < y->submit_s ? -1 : 1;
    return x < y ? -1 : x > y; /* stable: qsort gets distinct addresses */
}

static enum sn_err parse_lines(enum sn_trace_kind kind, const char *path, char *buf, uint32_t limit,
                               uint32_t tenants, struct sn_sim_workload *w, struct sn_error *err)
{
    uint32_t cap = 0;
    unsigned line = 0;
    for (char *p = buf, *next; p && *p; p = next) {
        next = strchr(p, '\n');
        if (next)
            *next++ = '\0';
        if (++line == 1 || *p == '\0' || *p == '\r')
            continue; /* header, blank */
        char *f[MAX_FIELDS];
        uint32_t nf = split(p, f);
        struct sn_sim_job job;
        bool keep;
        enum sn_err rc = parse_row(kind, path, line, f, nf, tenants, &job, &keep, err);
        if (rc != SN_OK)
            return rc;
        if (!keep) {
            w->skipped++;
            continue;
        }
        if (w->n_jobs == cap) {
            if (cap >= SN_SIM_MAX_JOBS)
                return sn_error_set(err, SN_ERR_LIMIT, "%s: more than %u jobs", path,
                                    SN_SIM_MAX_JOBS);
            cap = cap ? cap * 2 : 4096;
            struct sn_sim_job *nj = realloc(w->jobs, cap * sizeof(*nj));
            if (!nj)
                return sn_error_set(err, SN_ERR_NOMEM, "%s: out of memory", path);
            w->jobs = nj;
        }
        w->jobs[w->n_jobs++] = job;
        if (limit && w->n_jobs >= limit)
            break;
    }
    return SN_OK;
}

static enum sn_err parse_owned(enum sn_trace_kind kind, const char *path, char *buf, uint32_t limit,
                               uint32_t tenants, struct sn_sim_workload *w, struct sn_error *err);

enum sn_err sn_sim_trace_load(enum sn_trace_kind kind, const char *path, uint32_t limit,
                              uint32_t tenants, struct sn_sim_workload *w, struct sn_error *err)
{
    memset(w, 0, sizeof(*w));
    if (tenants == 0)
        tenants = 1;
    if (kind == SN_TRACE_SYNTH) {
        char *end;
        unsigned long n = strtoul(path, &end, 10);
        if (*end || n == 0 || n > SN_SIM_MAX_JOBS)
            return sn_error_set(err, SN_ERR_INVALID, "synth: '%s' is not a job count from 1 to %u",
                                path, SN_SIM_MAX_JOBS);
        return sn_sim_synth(limit && limit < n ? limit : (uint32_t)n, tenants, 1, w, err);
    }
    if ((unsigned)kind >= SN_TRACE_KIND_COUNT)
        return sn_error_set(err, SN_ERR_INVALID, "unknown trace kind %d", (int)kind);
    char *buf = NULL;
    size_t len = 0;
    enum sn_err rc = read_all(path, &buf, &len, err);
    if (rc != SN_OK)
        return rc;
    rc = parse_owned(kind, path, buf, limit, tenants, w, err);
    free(buf);
    return rc;
}

enum sn_err sn_sim_trace_parse(enum sn_trace_kind kind, const char *name, const char *buf,
                               size_t len, uint32_t limit, uint32_t tenants,
                               struct sn_sim_workload *w, struct sn_error *err)
{
    memset(w, 0, sizeof(*w));
    if (tenants == 0)
        tenants = 1;
    if ((unsigned)kind >= SN_TRACE_SYNTH)
        return sn_error_set(err, SN_ERR_INVALID, "%s: trace kind %d is not a file format", name,
                            (int)kind);
    if (len > MAX_TRACE_BYTES)
        return sn_error_set(err, SN_ERR_LIMIT, "%s: larger than %u bytes", name, MAX_TRACE_BYTES);
    char *copy = malloc(len + 1);
    if (!copy)
        return sn_error_set(err, SN_ERR_NOMEM, "%s: out of memory", name);
    memcpy(copy, buf, len);
    copy[len] = '\0';
    enum sn_err rc = parse_owned(kind, name, copy, limit, tenants, w, err);
    free(copy);
    return rc;
}

/* Parses buf (NUL-terminated, modified) into w. */
static enum sn_err parse_owned(enum sn_trace_kind kind, const char *path, char *buf, uint32_t limit,
                               uint32_t tenants, struct sn_sim_workload *w, struct sn_error *err)
{
    w->n_tenants = kind == SN_TRACE_OPENB ? (tenants < 4 ? tenants : 4) : tenants;
    enum sn_err rc = parse_lines(kind, path, buf, limit, tenants, w, err);
    if (rc == SN_OK && w->n_jobs == 0)
        rc = sn_error_set(err, SN_ERR_INVALID, "%s: no jobs", path);
    if (rc != SN_OK) {
        sn_sim_workload_release(w);
        return rc;
    }
    qsort(w->jobs, w->n_jobs, sizeof(*w->jobs), cmp_submit);
    return SN_OK;
}

enum sn_err sn_sim_synth(uint32_t n, uint32_t tenants, uint64_t seed, struct sn_sim_workload *w,
                         struct sn_error *err)
{
    static const uint32_t sizes[] = {1, 2, 4, 8, 16, 32, 64};
    static const double weights[] = {0.60, 0.08, 0.08, 0.14, 0.05, 0.03, 0.02};
    memset(w, 0, sizeof(*w));
    if (n == 0 || n > SN_SIM_MAX_JOBS)
        return sn_error_set(err, SN_ERR_INVALID, "synth: %u jobs, expected 1 to %u", n,
                            SN_SIM_MAX_JOBS);
    w->jobs = calloc(n, sizeof(*w->jobs));
    if (!w->jobs)
        return sn_error_set(err, SN_ERR_NOMEM, "synth: out of memory for %u jobs", n);
    w->n_tenants = tenants ? tenants : 1;
    struct sn_rng rng;
    sn_rng_seed(&rng, seed);
    double t = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct sn_sim_job *j = &w->jobs[i];
        t += sn_rng_exp(&rng, 60);
        double u = sn_rng_uniform(&rng), acc = 0;
        uint32_t k = 0;
        while (k < 6 && u >= acc + weights[k])
            acc += weights[k++];
        /* log-normal by Box-Muller: median 3600 s, sigma 1.5 */
        double u1 = 1.0 - sn_rng_uniform(&rng), u2 = sn_rng_uniform(&rng);
        double z = sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
        double dur = 3600 * exp(1.5 * z);
        j->submit_s = t;
        j->duration_s = dur > 7 * 86400 ? 7 * 86400 : (dur < 1 ? 1 : dur);
        j->gpus = sizes[k];
        j->group_gpus = default_group(j->gpus);
        j->tenant = (uint32_t)(sn_rng_next(&rng) % w->n_tenants);
    }
    w->n_jobs = n;
    return SN_OK;
}

void sn_sim_workload_release(struct sn_sim_workload *w)
{
    if (!w)
        return;
    free(w->jobs);
    w->jobs = NULL;
    w->n_jobs = 0;
}
