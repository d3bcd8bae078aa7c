/*
 * lib/health/ingest_store.c: the latest-value store that the telemetry
 * parsers feed and the detectors read.
 *
 * Layout: GPUs live in one dense array indexed by id (first-seen order);
 * three open-addressing indexes map a UUID, a (host, bus id) and a (host,
 * index) to a GPU id, so a record that names a GPU by any of them lands on
 * the same entry, and a record that names it by several links the others.
 * Hosts are interned (id by name) and each keeps a list of its GPUs, for
 * compute-apps snapshots and node-level diag results. nccl-tests rows and
 * facility readings are keyed tables holding the latest entry per key.
 *
 * Invariants: every table has a hard cap from struct sn_telem_store_limits;
 * nothing grows with input length once the inventory is known (repeated
 * readings overwrite). A record that cannot be placed (unknown GPU under
 * inventory_only, conflicting identifiers, a cap) is counted and kept as a
 * skip, never dropped silently. Out of memory is a LIMIT skip.
 */
#include "health/ingest_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An open-addressing index of ids (stored +1, 0 = empty). The caller hashes
 * and compares; the index never owns keys. */
struct idx {
    uint32_t *slot;
    uint32_t cap; /* power of two, or 0 */
    uint32_t used;
};

struct sn_telem_store {
    struct sn_telem_store_limits lim;
    size_t bytes;
    struct sn_telem_gpu *gpus;
    uint32_t n_gpus, cap_gpus;
    uint32_t *gpu_next; /* next GPU of the same host, UINT32_MAX at the end */
    struct idx by_uuid, by_bus, by_index;
    char (*hosts)[SN_TELEM_HOST_MAX];
    uint32_t *host_first_gpu;
    struct sn_telem_topo **host_topo;
    struct host_diag **host_diag;    /* node-level dcgmi diag results, NULL if none */
    struct host_checks **host_check; /* failed node checks (NHC), NULL if none */
    uint8_t *src_excerpt;            /* per source: its samples are an excerpt; NULL until one */
    uint32_t n_hosts, cap_hosts;
    struct idx by_host;
    char **sources;
    uint16_t n_sources;
    struct idx by_source;      /* source names, so a lookup costs one hash at any count */
    uint16_t last_source;      /* cache of the last lookup */
    uint32_t last_host;        /* cache of the last lookup, valid when n_hosts */
    uint32_t last_samples_gpu; /* where the last samples record went, UINT32_MAX if dropped */
    /* The reference the last samples record resolved, by content: the
     * attributes of the same row (nvidia-smi CSV emits them right after)
     * reuse its id instead of hashing the UUID again. Any other resolve
     * clears it. */
    struct {
        bool valid;
        uint32_t id;
        int index;
        uint64_t bus;
        bool has_uuid;
        char host[SN_TELEM_HOST_MAX];
        char uuid[SN_TELEM_UUID_MAX];
    } last_ref;
    struct sn_telem_nccl_entry *nccl;
    uint32_t n_nccl, cap_nccl;
    struct idx by_nccl;
    struct sn_telem_facility_entry *fac;
    uint32_t n_fac, cap_fac;
    struct idx by_fac;
    struct sn_telem_store_skip *skips;
    uint32_t n_skips;
    struct sn_telem_store_stats stats;
};

/* ---- allocation and indexes ----------------------------------------------- */

static void *store_calloc(struct sn_telem_store *s, size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (p)
        s->bytes += n * size;
    return p;
}

/* Grows *arr (elements of size) to hold at least need, up to limit. */
static bool grow(struct sn_telem_store *s, void **arr, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap)
        return true;
    uint32_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*arr, (size_t)n * size);
    if (!p)
        return false;
    memset((char *)p + (size_t)*cap * size, 0, (size_t)(n - *cap) * size);
    s->bytes += (size_t)(n - *cap) * size;
    *arr = p;
    *cap = n;
    return true;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static uint64_t hash_str(const char *t, size_t n, uint64_t seed)
{
    uint64_t h = 1469598103934665603ULL ^ seed;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)t[i]) * 1099511628211ULL;
    return mix64(h);
}

typedef bool (*idx_eq_fn)(const struct sn_telem_store *s, uint32_t id, const void *key);
typedef uint64_t (*idx_hash_fn)(const struct sn_telem_store *s, uint32_t id);

/* The slot holding key, or the empty slot where it would go. */
static uint32_t idx_probe(const struct sn_telem_store *s, const struct idx *x, uint64_t h,
                          idx_eq_fn eq, const void *key)
{
    uint32_t mask = x->cap - 1, i = (uint32_t)h & mask;
    while (x->slot[i] && !eq(s, x->slot[i] - 1, key))
        i = (i + 1) & mask;
    return i;
}

static bool idx_find(const struct sn_telem_store *s, const struct idx *x, uint64_t h, idx_eq_fn eq,
                     const void *key, uint32_t *id)
{
    if (!x->cap)
        return false;
    uint32_t i = idx_probe(s, x, h, eq, key);
    if (!x->slot[i])
        return false;
    *id = x->slot[i] - 1;
    return true;
}

/* Inserts id (not present) under hash h; rehashes with rehash() when 1/2 full. */
static bool idx_insert(struct sn_telem_store *s, struct idx *x, uint64_t h, uint32_t id,
                       idx_hash_fn rehash)
{
    if ((x->used + 1) * 2 > x->cap) {
        uint32_t ncap = x->cap ? x->cap * 2 : 256;
        uint32_t *ns = calloc(ncap, sizeof(*ns));
        if (!ns)
            return false;
        s->bytes += (size_t)(ncap - x->cap) * sizeof(*ns);
        for (uint32_t i = 0; i < x->cap; i++) {
            if (!x->slot[i])
                continue;
            uint32_t j = (uint32_t)rehash(s, x->slot[i] - 1) & (ncap - 1);
            while (ns[j])
                j = (j + 1) & (ncap - 1);
            ns[j] = x->slot[i];
        }
        free(x->slot);
        x->slot = ns;
        x->cap = ncap;
    }
    uint32_t i = (uint32_t)h & (x->cap - 1);
    while (x->slot[i])
        i = (i + 1) & (x->cap - 1);
    x->slot[i] = id + 1;
    x->used++;
    return true;
}

/* ---- keys ------------------------------------------------------------------ */

struct gpu_key {
    uint32_t host;
    const char *uuid;
    uint64_t bus;
    int index;
};

/* UUIDs are hashed on every record: eight bytes per multiply rather than
 * byte-wise FNV, whose serial multiply chain cost ~40 multiplies a UUID. */
static uint64_t h_uuid(const char *u)
{
    size_t n = strlen(u), i = 0;
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, u + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    uint64_t tail = 0;
    memcpy(&tail, u + i, n - i);
    return mix64(h ^ tail);
}
static uint64_t h_bus(uint32_t host, uint64_t bus)
{
    return mix64(((uint64_t)host << 40) ^ bus ^ 0x5bd1e995ULL);
}
static uint64_t h_index(uint32_t host, int index)
{
    return mix64(((uint64_t)host << 32) ^ (uint32_t)index ^ 0x9e3779b97f4a7c15ULL);
}
static bool eq_uuid(const struct sn_telem_store *s, uint32_t id, const void *k)
{
    return strcmp(s->gpus[id].uuid, ((const struct gpu_key *)k)->uuid) == 0;
}
static bool eq_bus(const struct sn_telem_store *s, uint32_t id, const void *k)
{
    const struct gpu_key *g = k;
    return s->gpus[id].host == g->host && s->gpus[id].bus == g->bus;
}
static bool eq_index(const struct sn_telem_store *s, uint32_t id, const void *k)
{
    const struct gpu_key *g = k;
    return s->gpus[id].host == g->host && s->gpus[id].index == g->index;
}
static uint64_t rh_uuid(const struct sn_telem_store *s, uint32_t id)
{
    return h_uuid(s->gpus[id].uuid);
}
static uint64_t rh_bus(const struct sn_telem_store *s, uint32_t id)
{
    return h_bus(s->gpus[id].host, s->gpus[id].bus);
}
static uint64_t rh_index(const struct sn_telem_store *s, uint32_t id)
{
    return h_index(s->gpus[id].host, s->gpus[id].index);
}
static bool eq_host(const struct sn_telem_store *s, uint32_t id, const void *k)
{
    return strcmp(s->hosts[id], k) == 0;
}
static uint64_t rh_host(const struct sn_telem_store *s, uint32_t id)
{
    return hash_str(s->hosts[id], strlen(s->hosts[id]), 2);
}

/* ---- skips ----------------------------------------------------------------- */

static bool eq_source(const struct sn_telem_store *s, uint32_t id, const void *k)
{
    return strcmp(s->sources[id], k) == 0;
}
static uint64_t rh_source(const struct sn_telem_store *s, uint32_t id)
{
    return hash_str(s->sources[id], strlen(s->sources[id]), 3);
}

/* The id of source name src, added when new. Indexed: a daemon that names
 * each node's batches by the node has one source per server (16,384 at
 * 131,072 GPUs), and a linear scan of them per record was the ingest's
 * bottleneck (docs/PERFORMANCE.md). */
static uint16_t source_id(struct sn_telem_store *s, const char *src)
{
    if (s->n_sources && strcmp(s->sources[s->last_source], src) == 0)
        return s->last_source;
    uint64_t h = hash_str(src, strlen(src), 3);
    uint32_t found;
    if (idx_find(s, &s->by_source, h, eq_source, src, &found)) {
        s->last_source = (uint16_t)found;
        return s->last_source;
    }
    size_t n = strlen(src) + 1;
    char *copy = s->n_sources < s->lim.sources ? malloc(n) : NULL;
    if (!copy)
        return 0; /* over the cap: attributed to the first source */
    memcpy(copy, src, n);
    uint16_t id = s->n_sources;
    s->sources[id] = copy;
    if (!idx_insert(s, &s->by_source, h, id, rh_source)) {
        free(copy);
        s->sources[id] = NULL;
        return 0;
    }
    s->bytes += n;
    s->n_sources++;
    s->last_source = id;
    return id;
}

static void store_skip(struct sn_telem_store *s, const char *src, unsigned line, unsigned col,
                       enum sn_telem_skip_reason r, const char *detail)
{
    s->stats.skipped[r]++;
    /* "unused" lines (a kernel log's other lines) are only counted, so they
     * cannot crowd out the skips that matter. */
    if (s->n_skips >= s->lim.skips || r == SN_TELEM_SKIP_UNUSED)
        return;
    struct sn_telem_store_skip *k = &s->skips[s->n_skips++];
    k->source = src ? source_id(s, src) : 0;
    k->line = line;
    k->column = col;
    k->reason = r;
    sn__telem_copy(k->detail, sizeof(k->detail), detail, strlen(detail));
}

static void sink_skip(void *ctx, const struct sn_telem_skip *r)
{
    store_skip(ctx, r->source, r->line, r->column, r->reason, r->detail);
}

/* ---- hosts and GPUs -------------------------------------------------------- */

/* A host's node-level diag results (a test naming no GPU), kept so that a
 * GPU the store learns later gets them too: the same findings whatever the
 * order of the inputs. */
struct host_diag {
    struct sn_telem_diag_entry e[SN_TELEM_DIAG_KEEP];
    unsigned n;
};

struct host_checks {
    struct sn_telem_check_entry e[SN_TELEM_CHECK_KEEP];
    unsigned n;
};

static bool host_id(struct sn_telem_store *s, const char *name, bool create, uint32_t *id)
{
    if (s->n_hosts && strcmp(s->hosts[s->last_host], name) == 0) {
        *id = s->last_host;
        return true;
    }
    uint64_t h = hash_str(name, strlen(name), 2);
    if (idx_find(s, &s->by_host, h, eq_host, name, id)) {
        s->last_host = *id;
        return true;
    }
    if (!create || s->n_hosts >= s->lim.hosts)
        return false;
    uint32_t cap = s->cap_hosts;
    if (!grow(s, (void **)&s->hosts, &cap, s->n_hosts + 1, sizeof(*s->hosts)))
        return false;
    cap = s->cap_hosts;
    if (!grow(s, (void **)&s->host_first_gpu, &cap, s->n_hosts + 1, sizeof(uint32_t)))
        return false;
    cap = s->cap_hosts;
    if (!grow(s, (void **)&s->host_topo, &cap, s->n_hosts + 1, sizeof(*s->host_topo)))
        return false;
    cap = s->cap_hosts;
    if (!grow(s, (void **)&s->host_diag, &cap, s->n_hosts + 1, sizeof(*s->host_diag)))
        return false;
    cap = s->cap_hosts;
    if (!grow(s, (void **)&s->host_check, &cap, s->n_hosts + 1, sizeof(*s->host_check)))
        return false;
    s->cap_hosts = cap;
    *id = s->n_hosts;
    sn__telem_copy(s->hosts[*id], SN_TELEM_HOST_MAX, name, strlen(name));
    s->host_first_gpu[*id] = UINT32_MAX;
    if (!idx_insert(s, &s->by_host, h, *id, rh_host))
        return false;
    s->n_hosts++;
    return true;
}

static bool new_gpu(struct sn_telem_store *s, uint32_t host, uint32_t *id)
{
    if (s->n_gpus >= s->lim.gpus)
        return false;
    uint32_t cap = s->cap_gpus;
    if (!grow(s, (void **)&s->gpus, &cap, s->n_gpus + 1, sizeof(*s->gpus)))
        return false;
    cap = s->cap_gpus;
    if (!grow(s, (void **)&s->gpu_next, &cap, s->n_gpus + 1, sizeof(uint32_t)))
        return false;
    s->cap_gpus = cap;
    struct sn_telem_gpu *g = &s->gpus[s->n_gpus];
    memset(g, 0, sizeof(*g));
    g->host = host;
    g->index = -1;
    g->bus = SN_TELEM_BUS_NONE;
    for (unsigned m = 0; m < SN_METRIC_COUNT; m++) {
        g->m[m].value = NAN;
        g->m[m].time_s = NAN;
        g->m[m].status = SN_TELEM_ABSENT;
    }
    s->gpu_next[s->n_gpus] = s->host_first_gpu[host];
    s->host_first_gpu[host] = s->n_gpus;
    *id = s->n_gpus++;
    const struct host_diag *hd = s->host_diag[host];
    if (hd && hd->n && (g->diag = store_calloc(s, SN_TELEM_DIAG_KEEP, sizeof(*g->diag)))) {
        memcpy(g->diag, hd->e, hd->n * sizeof(*g->diag));
        g->n_diag = hd->n;
    }
    return true;
}

/* Points every slot of x that holds from at to instead (the key stays). */
static void idx_repoint(struct idx *x, uint32_t from, uint32_t to)
{
    for (uint32_t i = 0; i < x->cap; i++)
        if (x->slot[i] == from + 1)
            x->slot[i] = to + 1;
}

static bool reading_newer(const struct sn_telem_reading *a, const struct sn_telem_reading *b)
{
    if (a->status == SN_TELEM_ABSENT)
        return false;
    return b->status == SN_TELEM_ABSENT || a->time_s > b->time_s;
}

/* Two GPUs of one host turn out to be one: a record names both the index
 * of one (known by index only, from dmon or an index-only CSV) and the bus
 * id of the other (known by bus only, from a kernel log or -q). Whichever
 * came first, the GPU keeps the union of what both hold, so the order of
 * the inputs does not decide where an Xid lands. drop is left empty and
 * marked merged (no keys, no readings; detectors pass over it). */
static void merge_gpu(struct sn_telem_store *s, uint32_t keep, uint32_t drop)
{
    struct sn_telem_gpu *g = &s->gpus[keep], *o = &s->gpus[drop];
    for (unsigned m = 0; m < SN_METRIC_COUNT; m++)
        if (reading_newer(&o->m[m], &g->m[m]))
            g->m[m] = o->m[m];
    for (unsigned a = 0; a < SN_TELEM_ATTR_COUNT; a++)
        if (!g->attr[a][0])
            memcpy(g->attr[a], o->attr[a], SN_TELEM_NAME_MAX);
    for (unsigned l = 0; l < SN_TELEM_NVLINK_MAX; l++)
        if (g->nvlink[l].state == SN_LINK_UNKNOWN && o->nvlink[l].state != SN_LINK_UNKNOWN)
            g->nvlink[l] = o->nvlink[l];
    if (o->n_nvlinks > g->n_nvlinks)
        g->n_nvlinks = o->n_nvlinks;
    unsigned kept = o->xid_total < SN_TELEM_XID_KEEP ? (unsigned)o->xid_total : SN_TELEM_XID_KEEP;
    if (kept && (g->xids || (g->xids = store_calloc(s, SN_TELEM_XID_KEEP, sizeof(*g->xids))))) {
        for (unsigned k = 0; k < kept; k++)
            g->xids[g->xid_total++ % SN_TELEM_XID_KEEP] =
                o->xids[(o->xid_total - kept + k) % SN_TELEM_XID_KEEP];
    }
    for (unsigned k = 0; k < o->n_procs; k++) {
        unsigned i = 0;
        while (i < g->n_procs && g->procs[i].pid != o->procs[k].pid)
            i++;
        if (i < g->n_procs ||
            (!g->procs && !(g->procs = store_calloc(s, SN_TELEM_PROC_KEEP, sizeof(*g->procs)))))
            continue;
        if (g->n_procs < SN_TELEM_PROC_KEEP)
            g->procs[g->n_procs++] = o->procs[k];
    }
    for (unsigned k = 0; k < o->n_diag; k++) {
        unsigned i = 0;
        while (i < g->n_diag && strcmp(g->diag[i].test, o->diag[k].test) != 0)
            i++;
        if (i < g->n_diag ||
            (!g->diag && !(g->diag = store_calloc(s, SN_TELEM_DIAG_KEEP, sizeof(*g->diag)))))
            continue;
        if (g->n_diag < SN_TELEM_DIAG_KEEP)
            g->diag[g->n_diag++] = o->diag[k];
    }
    if (o->listed && (!g->listed || g->listed_source != o->listed_source))
        g->listed_multi |= g->listed || o->listed_multi;
    if (o->listed && !g->listed)
        g->listed_source = o->listed_source;
    g->listed |= o->listed;
    /* Keys: keep gets drop's, whose index slots now name keep. */
    if (g->index < 0 && o->index >= 0)
        g->index = o->index;
    if (g->bus == SN_TELEM_BUS_NONE && o->bus != SN_TELEM_BUS_NONE)
        g->bus = o->bus;
    if (!g->uuid[0] && o->uuid[0])
        memcpy(g->uuid, o->uuid, sizeof(g->uuid));
    idx_repoint(&s->by_index, drop, keep);
    idx_repoint(&s->by_bus, drop, keep);
    idx_repoint(&s->by_uuid, drop, keep);
    if (o->nvlink_err && !g->nvlink_err) {
        g->nvlink_err = o->nvlink_err;
        o->nvlink_err = NULL;
    }
    free(o->nvlink_err);
    free(o->xids);
    free(o->procs);
    free(o->diag);
    uint32_t host = o->host;
    memset(o, 0, sizeof(*o));
    o->host = host;
    o->index = -1;
    o->bus = SN_TELEM_BUS_NONE;
    for (unsigned m = 0; m < SN_METRIC_COUNT; m++) {
        o->m[m].value = NAN;
        o->m[m].time_s = NAN;
        o->m[m].status = SN_TELEM_ABSENT;
    }
    o->merged = true;
}

/* other (found by a key of k) can join g: same host, and no key of one
 * contradicts the other's. */
static bool mergeable(const struct sn_telem_gpu *g, const struct sn_telem_gpu *o)
{
    return g != o && g->host == o->host && (g->index < 0 || o->index < 0 || g->index == o->index) &&
           (g->bus == SN_TELEM_BUS_NONE || o->bus == SN_TELEM_BUS_NONE || g->bus == o->bus) &&
           (!g->uuid[0] || !o->uuid[0] || strcmp(g->uuid, o->uuid) == 0);
}

/* g and o are GPUs of one host with two UUIDs. */
static bool two_uuids(const struct sn_telem_gpu *g, const struct sn_telem_gpu *o)
{
    return g != o && g->host == o->host && g->uuid[0] && o->uuid[0] &&
           strcmp(g->uuid, o->uuid) != 0;
}

/* The index part of link_keys. A record that ties g (of one UUID) to an
 * index another UUID's GPU holds gives g that index off the slot's index,
 * as conflict_gpu does: which of the two was first in the slot depends on
 * the order of the inputs, the pair of GPUs at the slot does not. */
static bool link_keys_index(struct sn_telem_store *s, uint32_t id, const struct gpu_key *k)
{
    struct sn_telem_gpu *g = &s->gpus[id];
    uint32_t other;
    if (k->index < 0 || g->index == k->index)
        return true;
    if (g->index >= 0)
        return false;
    if (idx_find(s, &s->by_index, h_index(k->host, k->index), eq_index, k, &other)) {
        if (!mergeable(g, &s->gpus[other])) {
            if (!two_uuids(g, &s->gpus[other]))
                return false;
            g->index = k->index;
            return true;
        }
        merge_gpu(s, id, other);
    } else {
        g->index = k->index;
        if (!idx_insert(s, &s->by_index, h_index(g->host, g->index), id, rh_index))
            return false;
    }
    return true;
}

/* Links the keys of k that g lacks; false (conflict) if one names another GPU
 * or differs from what g has. */
static bool link_keys(struct sn_telem_store *s, uint32_t id, const struct gpu_key *k)
{
    struct sn_telem_gpu *g = &s->gpus[id];
    uint32_t other;
    if (g->host != k->host)
        return false;
    if (k->uuid && k->uuid[0]) {
        if (g->uuid[0] && strcmp(g->uuid, k->uuid) != 0)
            return false;
        if (!g->uuid[0]) {
            if (idx_find(s, &s->by_uuid, h_uuid(k->uuid), eq_uuid, k, &other))
                return false;
            sn__telem_copy(g->uuid, sizeof(g->uuid), k->uuid, strlen(k->uuid));
            if (!idx_insert(s, &s->by_uuid, h_uuid(g->uuid), id, rh_uuid))
                return false;
        }
    }
    if (k->bus != SN_TELEM_BUS_NONE && g->bus != k->bus) {
        if (g->bus != SN_TELEM_BUS_NONE)
            return false;
        if (idx_find(s, &s->by_bus, h_bus(k->host, k->bus), eq_bus, k, &other)) {
            if (!mergeable(g, &s->gpus[other])) {
                if (!two_uuids(g, &s->gpus[other]))
                    return false;
                g->bus = k->bus; /* off the slot's bus index, as conflict_gpu */
                return link_keys_index(s, id, k);
            }
            merge_gpu(s, id, other);
        } else {
            g->bus = k->bus;
            if (!idx_insert(s, &s->by_bus, h_bus(g->host, g->bus), id, rh_bus))
                return false;
        }
    }
    return link_keys_index(s, id, k);
}

/* Finds the GPU of k by UUID, then (host, bus), then (host, index); *by_uuid
 * tells whether the UUID matched (so it need not be compared again). */
static bool find_key2(const struct sn_telem_store *s, const struct gpu_key *k, uint32_t *id,
                      bool *by_uuid)
{
    *by_uuid = false;
    if (k->uuid && k->uuid[0] && idx_find(s, &s->by_uuid, h_uuid(k->uuid), eq_uuid, k, id))
        return *by_uuid = true;
    if (k->bus != SN_TELEM_BUS_NONE &&
        idx_find(s, &s->by_bus, h_bus(k->host, k->bus), eq_bus, k, id))
        return true;
    return k->index >= 0 && idx_find(s, &s->by_index, h_index(k->host, k->index), eq_index, k, id);
}

static bool find_key(const struct sn_telem_store *s, const struct gpu_key *k, uint32_t *id)
{
    bool by_uuid;
    return find_key2(s, k, id, &by_uuid);
}

/* A record whose UUID is new but whose (host, bus or index) slot holds a GPU
 * of another UUID: two machines' outputs under one host name, or a replaced
 * GPU. It gets a GPU of its own with that UUID and the slot's index, kept
 * out of the slot's index (the first GPU keeps it), so neither file's
 * readings are dropped and the same GPUs exist whatever the order of the
 * inputs; the analysis maps both to the slot and reports gpu-uuid-conflict
 * (health_analyze.c). */
static bool conflict_gpu(struct sn_telem_store *s, const struct gpu_key *k, uint32_t *id)
{
    uint32_t other;
    if (!new_gpu(s, k->host, id))
        return false;
    struct sn_telem_gpu *g = &s->gpus[*id];
    sn__telem_copy(g->uuid, sizeof(g->uuid), k->uuid, strlen(k->uuid));
    if (!idx_insert(s, &s->by_uuid, h_uuid(g->uuid), *id, rh_uuid))
        return false;
    if (k->bus != SN_TELEM_BUS_NONE &&
        !idx_find(s, &s->by_bus, h_bus(k->host, k->bus), eq_bus, k, &other)) {
        g->bus = k->bus;
        if (!idx_insert(s, &s->by_bus, h_bus(g->host, g->bus), *id, rh_bus))
            return false;
    }
    g->index = k->index;
    return true;
}

/* Resolves ref to a GPU id, creating it unless inventory_only. On failure
 * the reason is in *why. */
static bool resolve(struct sn_telem_store *s, const struct sn_telem_gpu_ref *ref, bool create,
                    uint32_t *id, enum sn_telem_skip_reason *why)
{
    struct gpu_key k = {0, ref->uuid, ref->bus, ref->index};
    if (!(k.uuid && k.uuid[0]) && k.bus == SN_TELEM_BUS_NONE && k.index < 0) {
        *why = SN_TELEM_SKIP_NO_IDENTITY;
        return false;
    }
    *why = SN_TELEM_SKIP_UNKNOWN_GPU;
    if (!host_id(s, ref->host ? ref->host : "", create, &k.host))
        return false;
    bool by_uuid;
    if (find_key2(s, &k, id, &by_uuid)) {
        const struct sn_telem_gpu *g = &s->gpus[*id];
        /* The common case: every key given is already linked. */
        if (g->host == k.host && (!k.uuid || !k.uuid[0] || by_uuid) &&
            (k.bus == SN_TELEM_BUS_NONE || g->bus == k.bus) && (k.index < 0 || g->index == k.index))
            return true;
        *why = SN_TELEM_SKIP_CONFLICT;
        /* Found by bus or index, not by its UUID, on a GPU of another UUID. */
        if (create && !by_uuid && k.uuid && k.uuid[0] && g->uuid[0] &&
            strcmp(g->uuid, k.uuid) != 0 && g->host == k.host) {
            *why = SN_TELEM_SKIP_LIMIT;
            return conflict_gpu(s, &k, id);
        }
        return link_keys(s, *id, &k);
    }
    if (!create)
        return false;
    *why = SN_TELEM_SKIP_LIMIT;
    return new_gpu(s, k.host, id) && link_keys(s, *id, &k);
}

static bool resolve_rec(struct sn_telem_store *s, const struct sn_telem_gpu_ref *ref,
                        const struct sn_telem_origin *at, uint32_t *id)
{
    enum sn_telem_skip_reason why;
    s->last_ref.valid = false;
    if (resolve(s, ref, !s->lim.inventory_only, id, &why))
        return true;
    char bus[32], detail[160];
    snprintf(detail, sizeof(detail), "record for GPU host '%s' index %d uuid '%s' bus %s not kept",
             ref->host ? ref->host : "", ref->index, ref->uuid ? ref->uuid : "",
             sn_telem_bus_format(ref->bus, bus, sizeof(bus)));
    store_skip(s, at->source, at->line, 0, why, detail);
    return false;
}

/* ---- sink callbacks -------------------------------------------------------- */

static void remember_ref(struct sn_telem_store *s, const struct sn_telem_gpu_ref *ref, uint32_t id)
{
    const char *host = ref->host ? ref->host : "";
    size_t hl = strlen(host), ul = ref->uuid ? strlen(ref->uuid) : 0;
    if (hl >= sizeof(s->last_ref.host) || ul >= sizeof(s->last_ref.uuid))
        return;
    memcpy(s->last_ref.host, host, hl + 1);
    if (ref->uuid)
        memcpy(s->last_ref.uuid, ref->uuid, ul + 1);
    s->last_ref.has_uuid = ref->uuid != NULL;
    s->last_ref.index = ref->index;
    s->last_ref.bus = ref->bus;
    s->last_ref.id = id;
    s->last_ref.valid = true;
}

/* The id of ref when it is, by content, the last samples record's. */
static bool same_as_last(const struct sn_telem_store *s, const struct sn_telem_gpu_ref *ref,
                         uint32_t *id)
{
    if (!s->last_ref.valid || ref->index != s->last_ref.index || ref->bus != s->last_ref.bus ||
        (ref->uuid != NULL) != s->last_ref.has_uuid ||
        strcmp(ref->host ? ref->host : "", s->last_ref.host) != 0 ||
        (ref->uuid && strcmp(ref->uuid, s->last_ref.uuid) != 0))
        return false;
    *id = s->last_ref.id;
    return true;
}

static void sink_samples(void *ctx, const struct sn_telem_samples *r)
{
    struct sn_telem_store *s = ctx;
    uint32_t id;
    s->last_samples_gpu = UINT32_MAX;
    if (!resolve_rec(s, &r->gpu, &r->at, &id))
        return;
    s->last_samples_gpu = id;
    remember_ref(s, &r->gpu, id);
    uint16_t src = source_id(s, r->at.source);
    struct sn_telem_gpu *g = &s->gpus[id];
    for (size_t i = 0; i < r->n; i++) {
        const struct sn_telem_sample *v = &r->v[i];
        if ((unsigned)v->metric >= SN_METRIC_COUNT)
            continue;
        struct sn_telem_reading *m = &g->m[v->metric];
        m->value = v->status == SN_TELEM_OK ? v->value : NAN;
        m->status = (uint8_t)v->status;
        m->time_s = r->at.time_s;
        m->line = r->at.line;
        m->source = src;
    }
    if (!(s->src_excerpt && s->src_excerpt[src])) {
        if (!g->listed) {
            g->listed = true;
            g->listed_source = src;
        } else if (g->listed_source != src) {
            g->listed_multi = true;
        }
    }
    s->stats.records++;
}

static void sink_attr(void *ctx, const struct sn_telem_attr *r)
{
    struct sn_telem_store *s = ctx;
    uint32_t id;
    if ((unsigned)r->kind >= SN_TELEM_ATTR_COUNT)
        return;
    if (!same_as_last(s, &r->gpu, &id) && !resolve_rec(s, &r->gpu, &r->at, &id))
        return;
    sn__telem_copy(s->gpus[id].attr[r->kind], SN_TELEM_NAME_MAX, r->text, strlen(r->text));
    s->stats.records++;
}

static void sink_nvlink(void *ctx, const struct sn_telem_nvlink *r)
{
    struct sn_telem_store *s = ctx;
    uint32_t id;
    if (!resolve_rec(s, &r->gpu, &r->at, &id))
        return;
    if (r->link >= SN_TELEM_NVLINK_MAX) {
        store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_LIMIT,
                   "NVLink number above the per-GPU cap");
        return;
    }
    struct sn_telem_gpu *g = &s->gpus[id];
    if (r->counters) {
        if (!g->nvlink_err) {
            g->nvlink_err = store_calloc(s, SN_TELEM_NVLINK_MAX, sizeof(*g->nvlink_err));
            if (!g->nvlink_err)
                return;
            for (unsigned l = 0; l < SN_TELEM_NVLINK_MAX; l++)
                for (unsigned k = 0; k < SN_NVLERR_COUNT; k++)
                    g->nvlink_err[l].value[k] = g->nvlink_err[l].first[k] = NAN;
        }
        struct sn_telem_link_errors *e = &g->nvlink_err[r->link];
        for (unsigned k = 0; k < SN_NVLERR_COUNT; k++) {
            if (isnan(r->err[k]))
                continue;
            /* First seen, or lower than the latest: the counter was reset
             * (nvidia-smi nvlink -r), the baseline starts again. */
            if (isnan(e->value[k]) || r->err[k] < e->value[k]) {
                e->first[k] = r->err[k];
                e->first_time_s[k] = r->at.time_s;
            }
            e->value[k] = r->err[k];
            e->time_s[k] = r->at.time_s;
            e->line[k] = r->at.line;
        }
        s->stats.records++;
        return;
    }
    g->nvlink[r->link].state = (uint8_t)r->state;
    g->nvlink[r->link].speed_bytes_per_s = r->speed_bytes_per_s;
    g->nvlink[r->link].line = r->at.line;
    if (r->link + 1 > g->n_nvlinks)
        g->n_nvlinks = r->link + 1;
    s->stats.records++;
}

static void sink_snapshot(void *ctx, const char *host, const struct sn_telem_origin *at)
{
    struct sn_telem_store *s = ctx;
    uint32_t h;
    (void)at;
    if (!host_id(s, host, false, &h))
        return;
    for (uint32_t g = s->host_first_gpu[h]; g != UINT32_MAX; g = s->gpu_next[g]) {
        s->gpus[g].n_procs = 0;
        s->gpus[g].procs_dropped = 0;
    }
}

static void sink_process(void *ctx, const struct sn_telem_process *r)
{
    struct sn_telem_store *s = ctx;
    uint32_t id;
    if (!resolve_rec(s, &r->gpu, &r->at, &id))
        return;
    struct sn_telem_gpu *g = &s->gpus[id];
    if (!g->procs && !(g->procs = store_calloc(s, SN_TELEM_PROC_KEEP, sizeof(*g->procs)))) {
        store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_LIMIT, "out of memory");
        return;
    }
    unsigned i = 0;
    while (i < g->n_procs && g->procs[i].pid != r->pid)
        i++;
    if (i == SN_TELEM_PROC_KEEP) {
        g->procs_dropped++;
        store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_LIMIT,
                   "more processes on one GPU than the store keeps");
        return;
    }
    if (i == g->n_procs)
        g->n_procs++;
    g->procs[i].pid = r->pid;
    g->procs[i].used_bytes = r->used_bytes;
    sn__telem_copy(g->procs[i].name, sizeof(g->procs[i].name), r->name, strlen(r->name));
    s->stats.records++;
}

static void sink_xid(void *ctx, const struct sn_telem_xid *r)
{
    struct sn_telem_store *s = ctx;
    uint32_t id;
    if (!resolve_rec(s, &r->gpu, &r->at, &id))
        return;
    struct sn_telem_gpu *g = &s->gpus[id];
    if (!g->xids && !(g->xids = store_calloc(s, SN_TELEM_XID_KEEP, sizeof(*g->xids)))) {
        store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_LIMIT, "out of memory");
        return;
    }
    struct sn_telem_xid_event *e = &g->xids[g->xid_total % SN_TELEM_XID_KEEP];
    e->time_s = r->at.time_s;
    e->uptime_s = r->uptime_s;
    e->code = r->code;
    e->line = r->at.line;
    e->pid = r->pid > INT32_MAX ? -1 : (int32_t)r->pid;
    e->nvlink = (int16_t)r->nvlink;
    e->bucket = (uint8_t)r->bucket;
    e->fatal = (int8_t)r->fatal;
    e->source = source_id(s, r->at.source);
    e->caused_by = r->caused_by <= 0xffff ? (uint16_t)r->caused_by : 0;
    g->xid_total++;
    s->stats.records++;
}

static void sink_topo(void *ctx, const struct sn_telem_topo *r)
{
    struct sn_telem_store *s = ctx;
    uint32_t h;
    if (!host_id(s, r->host, !s->lim.inventory_only, &h)) {
        store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_UNKNOWN_GPU,
                   "topology of an unknown host not kept");
        return;
    }
    if (!s->host_topo[h] && !(s->host_topo[h] = store_calloc(s, 1, sizeof(*r)))) {
        store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_LIMIT, "out of memory");
        return;
    }
    *s->host_topo[h] = *r;
    s->host_topo[h]->host = s->hosts[h];
    uint16_t src = source_id(s, r->at.source);
    s->host_topo[h]->at.source = src < s->n_sources ? s->sources[src] : "";
    s->stats.records++;
}

/* Sets test r->test of a list of at most SN_TELEM_DIAG_KEEP entries. */
static bool set_diag(struct sn_telem_diag_entry *e, unsigned *n, const struct sn_telem_diag *r)
{
    unsigned i = 0;
    while (i < *n && strcmp(e[i].test, r->test) != 0)
        i++;
    if (i == SN_TELEM_DIAG_KEEP)
        return false;
    if (i == *n) {
        (*n)++;
        sn__telem_copy(e[i].test, sizeof(e[i].test), r->test, strlen(r->test));
    }
    sn__telem_copy(e[i].category, sizeof(e[i].category), r->category,
                   r->category ? strlen(r->category) : 0);
    e[i].result = (uint8_t)r->result;
    e[i].line = r->at.line;
    sn__telem_copy(e[i].detail, sizeof(e[i].detail), r->detail, strlen(r->detail));
    return true;
}

static void put_diag(struct sn_telem_store *s, struct sn_telem_gpu *g,
                     const struct sn_telem_diag *r)
{
    if (!g->diag && !(g->diag = store_calloc(s, SN_TELEM_DIAG_KEEP, sizeof(*g->diag)))) {
        store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_LIMIT, "out of memory");
        return;
    }
    unsigned i = 0;
    while (i < g->n_diag && strcmp(g->diag[i].test, r->test) != 0)
        i++;
    if (i == SN_TELEM_DIAG_KEEP) {
        store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_LIMIT,
                   "more diag tests on one GPU than the store keeps");
        return;
    }
    if (i == g->n_diag) {
        g->n_diag++;
        sn__telem_copy(g->diag[i].test, sizeof(g->diag[i].test), r->test, strlen(r->test));
    }
    sn__telem_copy(g->diag[i].category, sizeof(g->diag[i].category), r->category,
                   r->category ? strlen(r->category) : 0);
    g->diag[i].result = (uint8_t)r->result;
    g->diag[i].line = r->at.line;
    sn__telem_copy(g->diag[i].detail, sizeof(g->diag[i].detail), r->detail, strlen(r->detail));
    s->stats.records++;
}

static void sink_diag(void *ctx, const struct sn_telem_diag *r)
{
    struct sn_telem_store *s = ctx;
    uint32_t id, h;
    if (r->gpu.index >= 0 || r->gpu.uuid || r->gpu.bus != SN_TELEM_BUS_NONE) {
        if (resolve_rec(s, &r->gpu, &r->at, &id))
            put_diag(s, &s->gpus[id], r);
        return;
    }
    /* A node-level result applies to every GPU the store knows on the host,
     * and to those it learns later (new_gpu). */
    if (!host_id(s, r->gpu.host, !s->lim.inventory_only, &h)) {
        store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_UNKNOWN_GPU,
                   "node-level diag result for a host not in the store not kept");
        return;
    }
    if (!s->host_diag[h] && !(s->host_diag[h] = store_calloc(s, 1, sizeof(*s->host_diag[h])))) {
        store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_LIMIT, "out of memory");
        return;
    }
    if (!set_diag(s->host_diag[h]->e, &s->host_diag[h]->n, r))
        store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_LIMIT,
                   "more node-level diag tests on one host than the store keeps");
    bool any = false;
    for (uint32_t g = s->host_first_gpu[h]; g != UINT32_MAX; g = s->gpu_next[g])
        put_diag(s, &s->gpus[g], r), any = true;
    if (!any)
        s->stats.records++;
}

static void sink_excerpt(void *ctx, const char *source, bool on)
{
    struct sn_telem_store *s = ctx;
    if (!s->src_excerpt && !(s->src_excerpt = store_calloc(s, (size_t)s->lim.sources + 1, 1)))
        return;
    uint16_t src = source_id(s, source);
    if (src > s->lim.sources)
        return;
    s->src_excerpt[src] = on;
    for (uint32_t i = 0; on && i < s->n_gpus; i++) {
        struct sn_telem_gpu *g = &s->gpus[i];
        if (g->listed && !g->listed_multi && g->listed_source == src)
            g->listed = false;
    }
}

/* A failed node check: kept on its host (created unless inventory-only). */
static void sink_node_check(void *ctx, const struct sn_telem_node_check *r)
{
    struct sn_telem_store *s = ctx;
    uint32_t h;
    if (!host_id(s, r->host, !s->lim.inventory_only, &h)) {
        store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_UNKNOWN_GPU,
                   "node check for a host not in the store not kept");
        return;
    }
    struct host_checks **hc = &s->host_check[h];
    if (!*hc && !(*hc = store_calloc(s, 1, sizeof(**hc)))) {
        store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_LIMIT, "out of memory");
        return;
    }
    if ((*hc)->n == SN_TELEM_CHECK_KEEP) {
        store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_LIMIT,
                   "more failed node checks on one host than the store keeps");
        return;
    }
    struct sn_telem_check_entry *e = &(*hc)->e[(*hc)->n++];
    sn__telem_copy(e->tool, sizeof(e->tool), r->tool, strlen(r->tool));
    sn__telem_copy(e->check, sizeof(e->check), r->check, strlen(r->check));
    sn__telem_copy(e->message, sizeof(e->message), r->message, strlen(r->message));
    sn__telem_copy(e->fault_code, sizeof(e->fault_code), r->fault_code, strlen(r->fault_code));
    e->source = source_id(s, r->at.source);
    e->line = r->at.line;
    e->time_s = r->at.time_s;
    s->stats.records++;
}

struct nccl_key {
    enum sn_nccl_coll coll;
    unsigned nranks;
    const char *type, *redop;
    double size;
};

static uint64_t nccl_hash(enum sn_nccl_coll c, unsigned n, const char *type, const char *redop,
                          double size)
{
    uint64_t h = hash_str(type, strlen(type), (uint64_t)c * 131 + n);
    h ^= hash_str(redop, strlen(redop), 3);
    return mix64(h ^ (uint64_t)(size >= 0 && size < 1.8e19 ? size : 0));
}
static bool eq_nccl(const struct sn_telem_store *s, uint32_t id, const void *key)
{
    const struct sn_telem_nccl_entry *e = &s->nccl[id];
    const struct nccl_key *k = key;
    return e->coll == k->coll && e->nranks == k->nranks && e->size_bytes == k->size &&
           strcmp(e->type, k->type) == 0 && strcmp(e->redop, k->redop) == 0;
}
static uint64_t rh_nccl(const struct sn_telem_store *s, uint32_t id)
{
    const struct sn_telem_nccl_entry *e = &s->nccl[id];
    return nccl_hash(e->coll, e->nranks, e->type, e->redop, e->size_bytes);
}

static void sink_nccl_row(void *ctx, const struct sn_telem_nccl_row *r)
{
    struct sn_telem_store *s = ctx;
    char type[16], redop[16];
    sn__telem_copy(type, sizeof(type), r->type, strlen(r->type));
    sn__telem_copy(redop, sizeof(redop), r->redop, strlen(r->redop));
    struct nccl_key k = {r->coll, r->nranks, type, redop, r->size_bytes};
    uint64_t h = nccl_hash(k.coll, k.nranks, type, redop, k.size);
    uint32_t id, host = 0;
    if (!idx_find(s, &s->by_nccl, h, eq_nccl, &k, &id)) {
        if (s->n_nccl >= s->lim.nccl_rows ||
            !grow(s, (void **)&s->nccl, &s->cap_nccl, s->n_nccl + 1, sizeof(*s->nccl))) {
            store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_LIMIT,
                       "nccl-tests row table full");
            return;
        }
        id = s->n_nccl;
        struct sn_telem_nccl_entry *e = &s->nccl[id];
        e->coll = r->coll;
        e->nranks = r->nranks;
        e->size_bytes = r->size_bytes;
        memcpy(e->type, type, sizeof(type));
        memcpy(e->redop, redop, sizeof(redop));
        if (!idx_insert(s, &s->by_nccl, h, id, rh_nccl)) {
            store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_LIMIT, "out of memory");
            return;
        }
        s->n_nccl++;
    }
    struct sn_telem_nccl_entry *e = &s->nccl[id];
    e->nhosts = r->nhosts;
    e->oop = r->oop;
    e->ip = r->ip;
    e->source = source_id(s, r->at.source);
    e->line = r->at.line;
    e->host = host_id(s, r->host, !s->lim.inventory_only, &host) ? host : UINT32_MAX;
    s->stats.records++;
}

struct fac_key {
    unsigned kind; /* enum sn_facility_kind */
    const char *name, *part;
    enum sn_facility_metric metric;
};

static uint64_t fac_hash(unsigned kind, const char *name, const char *part, unsigned metric)
{
    return mix64(hash_str(name, strlen(name), kind) ^ hash_str(part, strlen(part), 7 + metric));
}
static bool eq_fac(const struct sn_telem_store *s, uint32_t id, const void *key)
{
    const struct sn_telem_facility_entry *e = &s->fac[id];
    const struct fac_key *k = key;
    return (unsigned)e->kind == k->kind && e->metric == k->metric &&
           strcmp(e->name, k->name) == 0 && strcmp(e->part, k->part) == 0;
}
static uint64_t rh_fac(const struct sn_telem_store *s, uint32_t id)
{
    const struct sn_telem_facility_entry *e = &s->fac[id];
    return fac_hash(e->kind, e->name, e->part, e->metric);
}

static void sink_facility(void *ctx, const struct sn_telem_facility *r)
{
    struct sn_telem_store *s = ctx;
    struct sn_telem_facility_entry tmp = {0};
    sn__telem_copy(tmp.name, sizeof(tmp.name), r->name, strlen(r->name));
    sn__telem_copy(tmp.part, sizeof(tmp.part), r->part, strlen(r->part));
    /* Records from older callers set only is_feed (kind 0 is LOOP). */
    enum sn_facility_kind kind = r->is_feed ? SN_FACILITY_KIND_FEED : r->kind;
    struct fac_key k = {kind, tmp.name, tmp.part, r->metric};
    uint64_t h = fac_hash(k.kind, k.name, k.part, k.metric);
    uint32_t id;
    if (!idx_find(s, &s->by_fac, h, eq_fac, &k, &id)) {
        if (s->n_fac >= s->lim.facility ||
            !grow(s, (void **)&s->fac, &s->cap_fac, s->n_fac + 1, sizeof(*s->fac))) {
            store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_LIMIT, "facility table full");
            return;
        }
        id = s->n_fac;
        s->fac[id] = tmp;
        s->fac[id].is_feed = r->is_feed;
        s->fac[id].kind = kind;
        s->fac[id].metric = r->metric;
        if (!idx_insert(s, &s->by_fac, h, id, rh_fac)) {
            store_skip(s, r->at.source, r->at.line, 0, SN_TELEM_SKIP_LIMIT, "out of memory");
            return;
        }
        s->n_fac++;
    }
    s->fac[id].value = r->value;
    s->fac[id].time_s = r->at.time_s;
    s->fac[id].source = source_id(s, r->at.source);
    s->fac[id].line = r->at.line;
    s->stats.records++;
}

/* ---- public ---------------------------------------------------------------- */

enum sn_err sn_telem_store_new(const struct sn_telem_store_limits *lim, struct sn_telem_store **out,
                               struct sn_error *err)
{
    struct sn_telem_store *s = calloc(1, sizeof(*s));
    *out = NULL;
    if (!s)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory creating a telemetry store");
    if (lim)
        s->lim = *lim;
    s->lim.gpus = s->lim.gpus ? s->lim.gpus : 1u << 20;
    s->lim.hosts = s->lim.hosts ? s->lim.hosts : 1u << 18;
    s->lim.sources = s->lim.sources ? s->lim.sources : 4096;
    if (s->lim.sources > UINT16_MAX)
        s->lim.sources = UINT16_MAX;
    s->lim.nccl_rows = s->lim.nccl_rows ? s->lim.nccl_rows : 65536;
    s->lim.facility = s->lim.facility ? s->lim.facility : 65536;
    s->lim.skips = s->lim.skips ? s->lim.skips : 256;
    s->last_samples_gpu = UINT32_MAX;
    s->bytes = sizeof(*s);
    s->sources = store_calloc(s, s->lim.sources, sizeof(*s->sources));
    s->skips = store_calloc(s, s->lim.skips, sizeof(*s->skips));
    if (!s->sources || !s->skips) {
        sn_telem_store_free(s);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory creating a telemetry store");
    }
    *out = s;
    return SN_OK;
}

void sn_telem_store_free(struct sn_telem_store *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->n_gpus; i++) {
        free(s->gpus[i].nvlink_err);
        free(s->gpus[i].xids);
        free(s->gpus[i].procs);
        free(s->gpus[i].diag);
    }
    for (uint32_t i = 0; i < s->n_hosts; i++) {
        free(s->host_topo[i]);
        free(s->host_diag[i]);
        free(s->host_check[i]);
    }
    for (uint16_t i = 0; i < s->n_sources; i++)
        free(s->sources[i]);
    free(s->gpus);
    free(s->gpu_next);
    free(s->by_source.slot);
    free(s->by_uuid.slot);
    free(s->by_bus.slot);
    free(s->by_index.slot);
    free(s->hosts);
    free(s->host_first_gpu);
    free(s->host_topo);
    free(s->host_diag);
    free(s->host_check);
    free(s->src_excerpt);
    free(s->by_host.slot);
    free(s->sources);
    free(s->nccl);
    free(s->by_nccl.slot);
    free(s->fac);
    free(s->by_fac.slot);
    free(s->skips);
    free(s);
}

struct sn_telem_sink sn_telem_store_sink(struct sn_telem_store *s)
{
    struct sn_telem_sink k = {
        .ctx = s,
        .samples = sink_samples,
        .attr = sink_attr,
        .nvlink = sink_nvlink,
        .snapshot = sink_snapshot,
        .process = sink_process,
        .xid = sink_xid,
        .topo = sink_topo,
        .nccl_row = sink_nccl_row,
        .diag = sink_diag,
        .facility = sink_facility,
        .skipped = sink_skip,
        .node_check = sink_node_check,
        .excerpt = sink_excerpt,
    };
    return k;
}

enum sn_err sn_telem_store_add_gpu(struct sn_telem_store *s, const struct sn_telem_gpu_ref *ref,
                                   uint32_t *id, struct sn_error *err)
{
    enum sn_telem_skip_reason why;
    s->last_ref.valid = false;
    if (resolve(s, ref, true, id, &why))
        return SN_OK;
    switch (why) {
    case SN_TELEM_SKIP_CONFLICT:
        return sn_error_set(err, SN_ERR_CONFLICT,
                            "inventory GPU on host '%s' (index %d, uuid '%s') conflicts with a "
                            "known GPU",
                            ref->host, ref->index, ref->uuid ? ref->uuid : "");
    case SN_TELEM_SKIP_NO_IDENTITY:
        return sn_error_set(err, SN_ERR_INVALID,
                            "inventory GPU on host '%s' has no index, uuid or bus id", ref->host);
    default:
        return sn_error_set(err, SN_ERR_LIMIT, "inventory GPU on host '%s' over the store's caps",
                            ref->host);
    }
}

bool sn_telem_store_find_gpu(const struct sn_telem_store *s, const struct sn_telem_gpu_ref *ref,
                             uint32_t *id)
{
    struct gpu_key k = {0, ref->uuid, ref->bus, ref->index};
    uint64_t h = hash_str(ref->host, strlen(ref->host), 2);
    if (!idx_find(s, &s->by_host, h, eq_host, ref->host, &k.host))
        return false;
    return find_key(s, &k, id);
}

bool sn_telem_store_last_samples_gpu(const struct sn_telem_store *s, uint32_t *id)
{
    *id = s->last_samples_gpu;
    return s->last_samples_gpu < s->n_gpus;
}

uint32_t sn_telem_store_gpu_count(const struct sn_telem_store *s)
{
    return s->n_gpus;
}

const struct sn_telem_gpu *sn_telem_store_gpu(const struct sn_telem_store *s, uint32_t id)
{
    return id < s->n_gpus ? &s->gpus[id] : NULL;
}

uint32_t sn_telem_store_host_count(const struct sn_telem_store *s)
{
    return s->n_hosts;
}

const char *sn_telem_store_host_name(const struct sn_telem_store *s, uint32_t host)
{
    return host < s->n_hosts ? s->hosts[host] : "";
}

bool sn_telem_store_host_has_records(const struct sn_telem_store *s, uint32_t host)
{
    if (host >= s->n_hosts)
        return false;
    return (s->host_topo && s->host_topo[host]) ||
           (s->host_diag && s->host_diag[host] && s->host_diag[host]->n) ||
           (s->host_check && s->host_check[host] && s->host_check[host]->n);
}

const struct sn_telem_diag_entry *sn_telem_store_node_diag(const struct sn_telem_store *s,
                                                           uint32_t host, unsigned *n)
{
    *n = 0;
    if (host >= s->n_hosts || !s->host_diag || !s->host_diag[host])
        return NULL;
    *n = s->host_diag[host]->n;
    return s->host_diag[host]->e;
}

const struct sn_telem_check_entry *sn_telem_store_node_checks(const struct sn_telem_store *s,
                                                              uint32_t host, unsigned *n)
{
    *n = 0;
    if (host >= s->n_hosts || !s->host_check || !s->host_check[host])
        return NULL;
    *n = s->host_check[host]->n;
    return s->host_check[host]->e;
}

const char *sn_telem_store_source_name(const struct sn_telem_store *s, uint16_t source)
{
    return source < s->n_sources ? s->sources[source] : "";
}

const struct sn_telem_topo *sn_telem_store_topo(const struct sn_telem_store *s, uint32_t host)
{
    return host < s->n_hosts ? s->host_topo[host] : NULL;
}

uint32_t sn_telem_store_nccl_count(const struct sn_telem_store *s)
{
    return s->n_nccl;
}

const struct sn_telem_nccl_entry *sn_telem_store_nccl(const struct sn_telem_store *s, uint32_t i)
{
    return i < s->n_nccl ? &s->nccl[i] : NULL;
}

uint32_t sn_telem_store_facility_count(const struct sn_telem_store *s)
{
    return s->n_fac;
}

const struct sn_telem_facility_entry *sn_telem_store_facility(const struct sn_telem_store *s,
                                                              uint32_t i)
{
    return i < s->n_fac ? &s->fac[i] : NULL;
}

uint32_t sn_telem_store_skip_count(const struct sn_telem_store *s)
{
    return s->n_skips;
}

const struct sn_telem_store_skip *sn_telem_store_skip(const struct sn_telem_store *s, uint32_t i)
{
    return i < s->n_skips ? &s->skips[i] : NULL;
}

const struct sn_telem_store_stats *sn_telem_store_stats(const struct sn_telem_store *s)
{
    return &s->stats;
}

size_t sn_telem_store_memory_bytes(const struct sn_telem_store *s)
{
    return s->bytes;
}
