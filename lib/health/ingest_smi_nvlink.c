/*
 * lib/health/ingest_smi_nvlink.c: `nvidia-smi nvlink -s` (--status).
 *
 *   GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5f1c0a6e-...)
 *   	 Link 0: 26.562 GB/s
 *   	 Link 1: <inactive>
 *
 * A "GPU N: name (UUID: ...)" line sets the GPU (index and UUID); each
 * "Link N: ..." line under it is one link: a speed is active (the figure is
 * per link and per direction, as NVML's nvmlDeviceGetNvLinkState and the
 * link's line rate report it), "<inactive>" is inactive. A link line before
 * any GPU line is reported as having no identity.
 *
 * When NVML reports no link at all, nvidia-smi prints one line under the GPU
 * instead of its links (leptonai/gpud#1085, a B200):
 *
 *   GPU 2: NVIDIA B200 (UUID: GPU-xxx)
 *   NVML: Unable to retrieve NVLink information as all links are inActive
 *
 * That is every link inactive: it is read as SN_TELEM_NVLINK_MAX inactive
 * links (NVML's most per GPU), and the detector judges those the GPU's
 * design has (none on a GPU without NVLink, which prints the same line).
 *
 * `nvidia-smi nvlink -e` (--errorcounters) prints the same GPU lines and
 * one line per link and counter (the layout of drivers up to R570, as in
 * stas00/ml-engineering's H100 and NVIDIA/srt-slurm#307's GB300 outputs,
 * tests/data/real/nvidia-smi-nvlink/), a blank line between links:
 *
 *   GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)
 *   	 Link 0: Replay Errors: 0
 *   	 Link 0: Recovery Errors: 0
 *   	 Link 0: CRC Errors: 0
 *
 * Each is one counter record (struct sn_telem_nvlink with counters set):
 * Replay, Recovery and CRC Errors (NVML's DL replay, DL recovery and DL
 * CRC flit counters). Other "Name: value" counters (the newer drivers'
 * per-link set: Rx Errors, Tx discards, Effective Errors, ...) are not
 * read (an unused skip each); a counter whose value is no whole number
 * (N/A) is a bad-value skip. An elision line ("[...]", "...") is unused.
 */
#include "health/ingest_int.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

struct nvl_state {
    bool have_gpu;
    int index;
    char uuid[SN_TELEM_UUID_MAX];
};

/* "GPU-" and hex digits and dashes, at least 8 digits: a placeholder
 * ("GPU-xxx", leptonai/gpud#1085) is no UUID. */
static bool uuid_word(const char *s, size_t n)
{
    unsigned digits = 0;
    if (n < 4 || memcmp(s, "GPU-", 4) != 0)
        return false;
    for (size_t i = 4; i < n; i++) {
        if (isxdigit((unsigned char)s[i]))
            digits++;
        else if (s[i] != '-')
            return false;
    }
    return digits >= 8;
}

/* "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)". */
static bool gpu_line(struct sn_telem_parser *p, struct nvl_state *st, const char *s, size_t n)
{
    size_t i = 4, b;
    unsigned long long idx;
    if (!sn__telem_starts(s, n, "GPU "))
        return false;
    b = i;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    if (i == b || i >= n || s[i] != ':' || !sn__telem_uint(s + b, i - b, &idx) || idx > 4095)
        return false;
    st->have_gpu = true;
    st->index = (int)idx;
    st->uuid[0] = '\0';
    const char *u = sn__telem_find(s, n, "(UUID: ");
    const char *name = s + i + 1;
    size_t nl = (u ? (size_t)(u - name) : n - (size_t)(name - s));
    if (u) {
        const char *ue = memchr(u, ')', n - (size_t)(u - s));
        /* Only a GPU's UUID ("GPU-..."): a paste's placeholder ("UUID:
         * ...", Azure/azhpc-diagnostics#73) names no GPU, and as a UUID it
         * would tie every such paste to one GPU whatever its host. */
        if (ue && uuid_word(u + 7, (size_t)(ue - u - 7)))
            sn__telem_copy(st->uuid, sizeof(st->uuid), u + 7, (size_t)(ue - u - 7));
    }
    sn__telem_trim(&name, &nl);
    if (nl) {
        char text[SN_TELEM_NAME_MAX];
        struct sn_telem_attr rec = {
            {p->host, st->index, st->uuid[0] ? st->uuid : NULL, SN_TELEM_BUS_NONE},
            sn__telem_origin(p, NAN),
            SN_TELEM_ATTR_NAME,
            sn__telem_copy(text, sizeof(text), name, nl)};
        SN__EMIT(p, attr, &rec);
    }
    return true;
}

/* "... all links are inActive" (nvidia-smi's spelling), any case. */
static bool all_inactive(const char *s, size_t n)
{
    static const char key[] = "all links are inactive";
    const size_t kl = sizeof(key) - 1;
    for (size_t i = 0; i + kl <= n; i++)
        if (sn__telem_eqi(s + i, kl, key))
            return true;
    return false;
}

/* "Replay Errors: 0" after "Link N:": one nvlink -e counter of link. */
static void counter_line(struct sn_telem_parser *p, const struct nvl_state *st, unsigned link,
                         const char *v, size_t vl, const char *colon)
{
    static const char *const label[] = {
#define SN_X(id, name, text) text,
        SN_TELEM_NVLERR_LIST(SN_X)
#undef SN_X
    };
    const char *name = v, *num = colon + 1;
    size_t nl = (size_t)(colon - v), ml = vl - nl - 1;
    sn__telem_trim(&name, &nl);
    sn__telem_trim(&num, &ml);
    unsigned k = 0;
    while (k < SN_NVLERR_COUNT && !sn__telem_eqi(name, nl, label[k]))
        k++;
    if (k == SN_NVLERR_COUNT) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "NVLink counter '%.*s' is not read",
                       (int)(nl > 60 ? 60 : nl), name);
        return;
    }
    unsigned long long x;
    if (!ml || !sn__telem_uint(num, ml, &x)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a count of %s",
                       (int)(ml > 40 ? 40 : ml), num, label[k]);
        return;
    }
    struct sn_telem_nvlink rec = {
        {p->host, st->index, st->uuid[0] ? st->uuid : NULL, SN_TELEM_BUS_NONE},
        sn__telem_origin(p, NAN),
        link,
        SN_LINK_UNKNOWN,
        NAN,
        true,
        {NAN, NAN, NAN}};
    rec.err[k] = (double)x;
    SN__EMIT(p, nvlink, &rec);
}

/* "[...]" or "...": a paste's elision. */
static bool elision(const char *s, size_t n)
{
    if (n >= 2 && s[0] == '[' && s[n - 1] == ']')
        s++, n -= 2;
    if (n < 3)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '.')
            return false;
    return true;
}

static void nvl_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    struct nvl_state *st = p->state;
    sn__telem_trim(&s, &n);
    if (n == 0 || gpu_line(p, st, s, n))
        return;
    if (st->have_gpu && all_inactive(s, n)) {
        for (unsigned l = 0; l < SN_TELEM_NVLINK_MAX; l++) {
            struct sn_telem_nvlink rec = {
                {p->host, st->index, st->uuid[0] ? st->uuid : NULL, SN_TELEM_BUS_NONE},
                sn__telem_origin(p, NAN),
                l,
                SN_LINK_INACTIVE,
                NAN,
                false,
                {0}};
            SN__EMIT(p, nvlink, &rec);
        }
        return;
    }
    if (elision(s, n)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "'%.*s': lines left out", (int)n, s);
        return;
    }
    if (!sn__telem_starts(s, n, "Link ")) {
        sn__telem_skip(
            p, 0, sn__telem_find(s, n, "NVLink") ? SN_TELEM_SKIP_UNUSED : SN_TELEM_SKIP_MALFORMED,
            "'%.*s' is not a GPU or link line", (int)(n > 80 ? 80 : n), s);
        return;
    }
    size_t i = 5, b = 5;
    unsigned long long link;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    if (i == b || i >= n || s[i] != ':' || !sn__telem_uint(s + b, i - b, &link) || link > 255) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "'%.*s' is not 'Link N: state'", (int)n, s);
        return;
    }
    if (!st->have_gpu) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_NO_IDENTITY, "link line before any 'GPU N:' line");
        return;
    }
    const char *v = s + i + 1;
    size_t vl = n - i - 1;
    sn__telem_trim(&v, &vl);
    const char *colon = memchr(v, ':', vl);
    if (colon) {
        counter_line(p, st, (unsigned)link, v, vl, colon);
        return;
    }
    struct sn_telem_nvlink rec = {
        {p->host, st->index, st->uuid[0] ? st->uuid : NULL, SN_TELEM_BUS_NONE},
        sn__telem_origin(p, NAN),
        (unsigned)link,
        SN_LINK_INACTIVE,
        NAN,
        false,
        {0}};
    if (!sn__telem_eqi(v, vl, "<inactive>")) {
        double x, factor;
        size_t used;
        enum sn__telem_dim dim;
        if (!sn__telem_number(v, vl, &x, &used)) {
            sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a link speed", (int)vl, v);
            return;
        }
        const char *u = v + used;
        size_t ul = vl - used;
        sn__telem_trim(&u, &ul);
        if (!sn__telem_unit(u, ul, &dim, &factor) || dim != SN__DIM_BW) {
            sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_UNIT, "'%.*s' has no bandwidth unit", (int)vl,
                           v);
            return;
        }
        rec.state = SN_LINK_ACTIVE;
        rec.speed_bytes_per_s = x * factor;
    }
    SN__EMIT(p, nvlink, &rec);
}

const struct sn__telem_ops sn__telem_smi_nvlink_ops = {
    .fmt = SN_TELEM_FMT_SMI_NVLINK,
    .state_size = sizeof(struct nvl_state),
    .allow_prefix = true,
    .line = nvl_line,
};
