/*
 * lib/health/ingest_kmsg.c: NVRM Xid lines in kernel logs, and the Xid
 * table.
 *
 * Line stamps read: dmesg "[ 1234.567890]" (uptime), dmesg -T "[Wed May  1
 * 12:00:00 2024]", journalctl/syslog "May  1 12:00:00 host kernel:" (time
 * only with opts.year), and ISO "2024-05-01T12:00:00.123+00:00 host
 * kernel:"; a Markdown fence glued to the first stamp ("```[  12.3]") and
 * quote or diff marks before a stamp ("+> [  12.3]") are passed over. The
 * Xid itself:
 *
 *   NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.
 *   NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off ...
 *   NVRM: Xid (0000:3b:00): 13, 0004 00000000 0000c1c0 ...          (older: no pid/name)
 *   NVRM: Xid (PCI:0000:05:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 04 (0x004505c6 0x0 ...)
 *
 * gives the code, bus id, pid and process name when present, the message,
 * and for the NVLink Xids 144-150 the link number, fatal/nonfatal and the
 * register words. Xid 154 carries its own recovery action ("... to 0x2
 * (Node Reboot Required)"), which sets the bucket. NIC link up/down lines
 * go to the link-flap reader (ingest_net.c); other lines without "NVRM:
 * Xid" are reported as unused.
 */
#include "health/ingest_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/*
 * The Xid table: code, meaning, action bucket. Condensed from NVIDIA's Xid
 * catalogue ("Xid Errors", docs.nvidia.com/deploy/xid-errors/, "Resolution
 * Bucket (Immediate Action)" column: RESTART_APP -> application, RESET_GPU
 * -> reset-gpu, RESTART_BM -> reboot-node, CONTACT_SUPPORT -> service,
 * IGNORE -> info) for Ampere and newer GPUs. To update: edit a row here and
 * the table in docs/health.md; codes not listed are "unknown". The NVLink
 * Xids 144-150 are WORKFLOW_NVLINK5_ERR: the row's bucket is the Fatal one,
 * a line the driver marks Nonfatal is info (read_fields).
 */
#define SN_XID_TABLE(X)                                                                            \
    X(8, "GPU stopped processing (channel idle timeout)", APPLICATION)                             \
    X(13, "Graphics engine exception", APPLICATION)                                                \
    X(31, "GPU memory page fault", APPLICATION)                                                    \
    X(32, "Invalid or corrupted push buffer stream", APPLICATION)                                  \
    X(43, "GPU stopped processing", APPLICATION)                                                   \
    X(45, "Preemptive cleanup, due to previous errors", APPLICATION)                               \
    X(48, "Double bit ECC error (DBE)", RESET_GPU)                                                 \
    X(61, "Internal micro-controller breakpoint/warning", RESET_GPU)                               \
    X(62, "Internal micro-controller halt", RESET_GPU)                                             \
    X(63, "ECC page retirement or row remapping recording event", RESET_GPU)                       \
    X(64, "ECC page retirement or row remapper recording failure", SERVICE)                        \
    X(68, "NVDEC0 exception", APPLICATION)                                                         \
    X(69, "Graphics engine class error", APPLICATION)                                              \
    X(74, "NVLink error", RESET_GPU)                                                               \
    X(79, "GPU has fallen off the bus", REBOOT_NODE)                                               \
    X(92, "High single-bit ECC error rate", INFO)                                                  \
    X(94, "Contained ECC error", APPLICATION)                                                      \
    X(95, "Uncontained ECC error", RESET_GPU)                                                      \
    X(109, "Context switch timeout", APPLICATION)                                                  \
    X(119, "GSP RPC timeout", RESET_GPU)                                                           \
    X(120, "GSP error", RESET_GPU)                                                                 \
    X(121, "C2C link corrected error", INFO)                                                       \
    X(140, "Unrecovered ECC error", RESET_GPU)                                                     \
    X(137, "NVLink privilege error", INFO)                                                         \
    X(143, "GPU initialization failure", SERVICE)                                                  \
    X(144, "NVLink: SAW error", RESET_GPU)                                                         \
    X(145, "NVLink: RLW error", RESET_GPU)                                                         \
    X(146, "NVLink: TLW error", RESET_GPU)                                                         \
    X(147, "NVLink: TREX error", RESET_GPU)                                                        \
    X(148, "NVLink: NVLPW_CTRL error", RESET_GPU)                                                  \
    X(149, "NVLink: NETIR error", RESET_GPU)                                                       \
    X(150, "NVLink: MSE error", RESET_GPU)                                                         \
    X(154, "GPU recovery action changed", INFO)

static const struct {
    unsigned code;
    const char *meaning;
    enum sn_xid_bucket bucket;
} xid_rows[] = {
#define SN_X(code, meaning, bucket) {code, meaning, SN_XID_##bucket},
    SN_XID_TABLE(SN_X)
#undef SN_X
};

static int xid_row(unsigned code)
{
    for (size_t i = 0; i < sizeof(xid_rows) / sizeof(xid_rows[0]); i++)
        if (xid_rows[i].code == code)
            return (int)i;
    return -1;
}

const char *sn_xid_meaning(unsigned code)
{
    int i = xid_row(code);
    return i < 0 ? "unknown Xid" : xid_rows[i].meaning;
}

enum sn_xid_bucket sn_xid_bucket(unsigned code)
{
    int i = xid_row(code);
    return i < 0 ? SN_XID_UNKNOWN : xid_rows[i].bucket;
}

struct stamp {
    double time_s, uptime_s;
    char host[SN_TELEM_HOST_MAX];
};

/* Reads the line's stamp (and host) before "NVRM:"; fields stay NaN/"" when absent. */
static void read_stamp(struct sn_telem_parser *p, const char *s, size_t n, struct stamp *st)
{
    st->time_s = st->uptime_s = NAN;
    st->host[0] = '\0';
    const char *k = sn__telem_find(s, n, " kernel:");
    size_t i = 0;
    if (k) {
        /* "<stamp> <host> kernel:": the host is the word before " kernel:". */
        const char *h = k;
        while (h > s && h[-1] != ' ')
            h--;
        if (sn__telem_is_hostname(h, (size_t)(k - h)))
            sn__telem_copy(st->host, sizeof(st->host), h, (size_t)(k - h));
        size_t sl = h > s ? (size_t)(h - s) - 1 : 0;
        double t;
        if (sl >= 15 && sn__telem_month(s, 3) && s[3] == ' ') {
            /* "May  1 12:00:00": syslog without a year. */
            char buf[40];
            if (p->year > 0) {
                snprintf(buf, sizeof(buf), "Xxx %.15s %d", s, p->year);
                if (sn__telem_time_ctime(buf, strlen(buf), &t))
                    st->time_s = t;
            }
        } else if (sn__telem_time_parse(s, sl, &t)) {
            st->time_s = t;
        }
        i = (size_t)(k - s) + 8;
    }
    while (i < n && s[i] == ' ')
        i++;
    /* Paste marks before a stamp: a Markdown code fence glued to the first
     * line ("```[93297.027938] NVRM: ...", vllm-project/vllm#5901), a quote
     * and a diff's added-line mark ("+> [Fri Aug 30 ...] NVRM: ...",
     * leptonai/gpud#46). Passed over only when a stamp follows. */
    size_t q = i;
    if (q + 3 <= n && memcmp(s + q, "```", 3) == 0)
        q += 3;
    while (q < n && (s[q] == '+' || s[q] == '>' || s[q] == ' '))
        q++;
    if (q > i && q < n && s[q] == '[')
        i = q;
    if (i < n && s[i] == '[') {
        const char *e = memchr(s + i, ']', n - i);
        if (e) {
            const char *b = s + i + 1;
            size_t bl = (size_t)(e - b), used;
            double v;
            sn__telem_trim(&b, &bl);
            if (sn__telem_number(b, bl, &v, &used) && used == bl)
                st->uptime_s = v;
            else if (sn__telem_time_ctime(b, bl, &v))
                st->time_s = v;
        }
    }
}

/* "pid=1234", "pid='<unknown>'", "name=python3", "name=<unknown>". */
static bool field(const char **s, size_t *n, const char *key, char *out, size_t cap)
{
    size_t kl = strlen(key);
    if (*n < kl || memcmp(*s, key, kl) != 0)
        return false;
    const char *v = *s + kl;
    const char *e = memchr(v, ',', *n - kl);
    size_t vl = e ? (size_t)(e - v) : *n - kl;
    sn__telem_copy(out, cap, v, vl);
    size_t adv = kl + vl + (e ? 1 : 0);
    *s += adv;
    *n -= adv;
    while (*n && **s == ' ')
        (*s)++, (*n)--;
    return true;
}

/* NVLink Xids: "... Link 04 (0x004505c6 0x00000000 ...)" and Fatal/Nonfatal. */
static void nvlink_fields(const char *m, size_t ml, struct sn_telem_xid *x)
{
    const char *l = sn__telem_find(m, ml, "Link ");
    if (l) {
        size_t i = (size_t)(l - m) + 5;
        unsigned v = 0;
        bool d = false;
        while (i < ml && isdigit((unsigned char)m[i]) && v < 1000)
            v = v * 10 + (unsigned)(m[i++] - '0'), d = true;
        if (d)
            x->nvlink = (int)v;
    }
    if (sn__telem_find(m, ml, "Nonfatal") || sn__telem_find(m, ml, "Non-fatal"))
        x->fatal = 0;
    else if (sn__telem_find(m, ml, "Fatal") || sn__telem_find(m, ml, "fatal"))
        x->fatal = 1;
    const char *par = memchr(m, '(', ml);
    for (size_t i = par ? (size_t)(par - m) : ml; i + 2 < ml && x->n_regs < 8; i++) {
        unsigned long long r;
        if (m[i] != '0' || m[i + 1] != 'x')
            continue;
        size_t b = i;
        i += 2;
        while (i < ml && isxdigit((unsigned char)m[i]))
            i++;
        if (sn__telem_uint(m + b, i - b, &r) && r <= 0xffffffffULL)
            x->regs[x->n_regs++] = (uint32_t)r;
    }
}

/* Xid 154: "... to 0x2 (Node Reboot Required)". */
static enum sn_xid_bucket recovery_bucket(const char *m, size_t ml)
{
    const char *to = sn__telem_find(m, ml, " to 0x");
    unsigned long long v;
    if (!to)
        return SN_XID_INFO;
    size_t i = (size_t)(to - m) + 4, b = i;
    while (i < ml && (isxdigit((unsigned char)m[i]) || m[i] == 'x'))
        i++;
    if (!sn__telem_uint(m + b, i - b, &v))
        return SN_XID_INFO;
    if (v & 0x2)
        return SN_XID_REBOOT_NODE;
    if (v & 0xd) /* 0x1 GPU reset required, 0x4 drain P2P, 0x8 drain and reset */
        return SN_XID_RESET_GPU;
    return SN_XID_INFO;
}

/* N of "caused by previous Xid N" in a message, 0 when absent. */
static unsigned caused_by(const char *m, size_t ml)
{
    static const char key[] = "caused by previous Xid ";
    const size_t kl = sizeof(key) - 1;
    for (size_t i = 0; i + kl < ml; i++) {
        if (memcmp(m + i, key, kl) != 0)
            continue;
        unsigned n = 0;
        size_t j = i + kl;
        while (j < ml && j < i + kl + 5 && m[j] >= '0' && m[j] <= '9')
            n = n * 10 + (unsigned)(m[j++] - '0');
        return j > i + kl && n <= 0xffff ? n : 0;
    }
    return 0;
}

/* After the code: ", pid=…, name=…, message"; sets pid, name, message,
 * bucket and the NVLink fields. name and msg are the caller's buffers. */
static void read_fields(const char *m, size_t ml, struct sn_telem_xid *rec, char *name,
                        size_t name_cap, char *msg, size_t msg_cap)
{
    char pid[32];
    unsigned long long pv;
    if (ml && *m == ',')
        m++, ml--;
    sn__telem_trim(&m, &ml);
    if (field(&m, &ml, "pid=", pid, sizeof(pid)) && sn__telem_uint(pid, strlen(pid), &pv) &&
        pv <= 0x7fffffff)
        rec->pid = (long)pv;
    if (field(&m, &ml, "name=", name, name_cap) && strcmp(name, "<unknown>") == 0)
        name[0] = '\0';
    rec->name = name;
    rec->message = sn__telem_copy(msg, msg_cap, m, ml);
    rec->bucket = sn_xid_bucket(rec->code);
    if (rec->code >= 144 && rec->code <= 150) {
        nvlink_fields(m, ml, rec);
        /* NVIDIA's catalogue sends 144-150 to its "XID 144-150 Decode"
         * sheet (WORKFLOW_NVLINK5_ERR), whose rows the driver prints as
         * Fatal or Nonfatal: the Non-fatal rows' immediate action is
         * IGNORE (or XID_154_EVAL: the Xid 154 that follows names the
         * action, read on its own line), the Fatal and Link Fatal rows'
         * RESET_GPU. A line that states neither stays reset-gpu. */
        if (rec->fatal == 0)
            rec->bucket = SN_XID_INFO;
    }
    if (rec->code == 154)
        rec->bucket = recovery_bucket(m, ml);
    rec->caused_by = caused_by(m, ml);
}

#define OFF_BUS_KEPT 64
#define SXID_KEPT 32

struct kmsg_state {
    /* The last Xid emitted: a line repeating it (same GPU, code, stamp and
     * pid) is the same event printed again, not a repeat. */
    bool have_last;
    uint64_t last_bus;
    unsigned last_code, last_line;
    double last_time, last_uptime;
    long last_pid;
    /* "The NVIDIA GPU <bus>" of a multi-line "fallen off the bus" message. */
    uint64_t pending_bus;
    bool have_pending;
    /* GPUs already reported fallen off the bus (Xid 79 or the message). */
    uint64_t off_bus[OFF_BUS_KEPT];
    unsigned n_off_bus;
    /* SXids read: (switch bus, code, fatal) and the line; a repeat is the
     * same fault of the switch (another link, another print), read once. */
    struct {
        uint64_t bus;
        unsigned code, line;
        bool fatal;
    } sxid[SXID_KEPT];
    unsigned n_sxid;
    /* The unidentified GPU of lines whose bus the poster elided. */
    char anon[48];
};

/* "..." (any run of dots): a bus id left out of a paste. */
static bool elided(const char *s, size_t n)
{
    sn__telem_trim(&s, &n);
    if (n < 3)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '.')
            return false;
    return true;
}

static bool same_stamp(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

/* Xid 79 and its messages without an Xid line are one event per GPU. */
static bool off_bus_seen(struct kmsg_state *ks, uint64_t bus)
{
    for (unsigned i = 0; i < ks->n_off_bus; i++)
        if (ks->off_bus[i] == bus)
            return true;
    if (ks->n_off_bus < OFF_BUS_KEPT)
        ks->off_bus[ks->n_off_bus++] = bus;
    return false;
}

/* The bus id word that starts at s (up to a blank, ':' after the function
 * or the end). */
static bool bus_word(const char *s, const char *end, uint64_t *bus)
{
    const char *e = s;
    while (e < end && *e != ' ' && *e != '\t' && *e != ',')
        e++;
    if (e > s && e[-1] == '.')
        e--;
    if (e > s && e[-1] == ':')
        e--;
    if (sn__telem_starts(s, (size_t)(e - s), "PCI:"))
        s += 4;
    return e > s && sn_telem_bus_parse(s, (size_t)(e - s), bus);
}

/*
 * "GPU has fallen off the bus" printed without an Xid (NVIDIA/NVSentinel
 * issue 155): "NVRM: GPU at 0000:01:00.0 has fallen off the bus." or "NVRM:
 * GPU 0000:3a:00.0: GPU has fallen off the bus." on one line, or "NVRM: The NVIDIA GPU
 * 0000:b3:00.0" then continuation lines ending "NVRM: fallen off the bus and is not responding to
 * commands.". Emitted as Xid 79 (same meaning, same bucket). Returns true if the line was part of
 * one.
 */
static bool off_bus_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    struct kmsg_state *ks = p->state;
    const char *end = s + n, *g = sn__telem_find(s, n, "NVRM: The NVIDIA GPU ");
    if (g) {
        ks->have_pending = bus_word(g + 21, end, &ks->pending_bus);
        return true;
    }
    const char *f = sn__telem_find(s, n, "fallen off the bus");
    if (!f)
        return false;
    uint64_t bus = 0;
    /* "NVRM: GPU at <bus> has fallen...", "NVRM: GPU <bus>: GPU has fallen...". */
    const char *at = sn__telem_find(s, n, "NVRM: GPU at ");
    const char *gb = at ? at + 13 : sn__telem_find(s, n, "NVRM: GPU ");
    if (gb && !at)
        gb += 10;
    bool have = gb ? bus_word(gb, end, &bus) : false;
    if (!have && ks->have_pending)
        have = true, bus = ks->pending_bus;
    ks->have_pending = false;
    if (!have) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_NO_IDENTITY,
                       "'fallen off the bus' without the GPU's bus id");
        return true;
    }
    if (off_bus_seen(ks, bus)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "GPU already reported fallen off the bus");
        return true;
    }
    struct stamp stamp;
    read_stamp(p, s, (size_t)(f - s), &stamp);
    struct sn_telem_xid rec = {.gpu = {stamp.host[0] ? stamp.host : p->host, -1, NULL, bus},
                               .at = {p->source, p->lineno, stamp.time_s},
                               .uptime_s = stamp.uptime_s,
                               .code = 79,
                               .pid = -1,
                               .name = "",
                               .message =
                                   "GPU has fallen off the bus (message without an Xid line)",
                               .bucket = sn_xid_bucket(79),
                               .nvlink = -1,
                               .fatal = -1};
    SN__EMIT(p, xid, &rec);
    return true;
}

/* Same GPU, code, stamp and pid as the last Xid: one event printed again. */
static bool repeat_of_last(struct kmsg_state *ks, const struct sn_telem_xid *x)
{
    bool same = ks->have_last && ks->last_bus == x->gpu.bus && ks->last_code == x->code &&
                ks->last_pid == x->pid && same_stamp(ks->last_time, x->at.time_s) &&
                same_stamp(ks->last_uptime, x->uptime_s) &&
                !(isnan(x->at.time_s) && isnan(x->uptime_s));
    ks->have_last = true;
    ks->last_bus = x->gpu.bus, ks->last_code = x->code, ks->last_pid = x->pid;
    ks->last_time = x->at.time_s, ks->last_uptime = x->uptime_s;
    if (!same)
        ks->last_line = x->at.line;
    return same;
}

/*
 * An NVSwitch SXid (the NVSwitch driver's "Switch Xid", NVIDIA/nvtrust#124):
 *
 *   nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link DLREQ ...
 *   nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 24007, Fatal, Link 30 sourcetrack timeout error
 *
 * The line with the driver's "Fatal" or "Non-fatal" word is the event (its
 * "Data {...}" and "Severity N Engine instance ..." lines are details). It is
 * a node_check record of tool "sxid", check "SXid <code> <device>" and the
 * line's text as the message, fault_code "fatal" or "non-fatal": about the
 * host, since the driver's device number names no NVSwitch of the model. A
 * repeat of (switch, code, fatality) is read once. Returns whether the line
 * was an SXid line.
 */
static bool sxid_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    const char *x = sn__telem_find(s, n, ": SXid (");
    if (!x)
        return false;
    const char *dev = x;
    while (dev > s && dev[-1] != ' ' && dev[-1] != ']' && dev[-1] != '\t')
        dev--;
    const char *b = x + 8, *end = s + n;
    const char *close = memchr(b, ')', (size_t)(end - b));
    uint64_t bus;
    if (sn__telem_starts(b, (size_t)(end - b), "PCI:"))
        b += 4;
    if (!close || !sn_telem_bus_parse(b, (size_t)(close - b), &bus)) {
        sn__telem_skip(p, (unsigned)(b - s) + 1, SN_TELEM_SKIP_BAD_VALUE,
                       "SXid line without a PCI bus id");
        return true;
    }
    const char *m = close + 1;
    size_t ml = (size_t)(end - m), used;
    double code;
    if (ml && *m == ':')
        m++, ml--;
    sn__telem_trim(&m, &ml);
    if (!sn__telem_number(m, ml, &code, &used) || code < 0 || code > 100000 ||
        code != (unsigned)code) {
        sn__telem_skip(p, (unsigned)(m - s) + 1, SN_TELEM_SKIP_BAD_VALUE, "SXid without a code");
        return true;
    }
    const char *w = m + used;
    size_t wl = ml - used;
    if (wl && *w == ',')
        w++, wl--;
    sn__telem_trim(&w, &wl);
    bool fatal;
    if (sn__telem_starts(w, wl, "Non-fatal") || sn__telem_starts(w, wl, "Nonfatal"))
        fatal = false;
    else if (sn__telem_starts(w, wl, "Fatal"))
        fatal = true;
    else {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "SXid %u detail line (no Fatal/Non-fatal)",
                       (unsigned)code);
        return true;
    }
    struct kmsg_state *ks = p->state;
    for (unsigned i = 0; i < ks->n_sxid; i++)
        if (ks->sxid[i].bus == bus && ks->sxid[i].code == (unsigned)code &&
            ks->sxid[i].fatal == fatal) {
            sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED,
                           "SXid %u of this NVSwitch already read at line %u", (unsigned)code,
                           ks->sxid[i].line);
            return true;
        }
    if (ks->n_sxid < SXID_KEPT) {
        ks->sxid[ks->n_sxid].bus = bus;
        ks->sxid[ks->n_sxid].code = (unsigned)code;
        ks->sxid[ks->n_sxid].line = p->lineno;
        ks->sxid[ks->n_sxid++].fatal = fatal;
    }
    struct stamp stamp;
    read_stamp(p, s, (size_t)(dev - s), &stamp);
    char check[SN_TELEM_NAME_MAX], msg[SN_TELEM_TEXT_MAX];
    snprintf(check, sizeof(check), "SXid %u %.*s", (unsigned)code,
             (int)(x - dev > 40 ? 40 : x - dev), dev);
    struct sn_telem_node_check rec = {stamp.host[0] ? stamp.host : p->host,
                                      {p->source, p->lineno, stamp.time_s},
                                      "sxid",
                                      check,
                                      sn__telem_copy(msg, sizeof(msg), w, wl),
                                      fatal ? "fatal" : "non-fatal"};
    SN__EMIT(p, node_check, &rec);
    return true;
}

static void kmsg_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    const char *x = sn__telem_find(s, n, "NVRM: Xid (");
    if (!x) {
        if (off_bus_line(p, s, n) || sxid_line(p, s, n) || sn__telem_net_kmsg_line(p, s, n))
            return;
        if (n)
            sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "not an NVRM Xid line");
        return;
    }
    struct stamp stamp;
    read_stamp(p, s, (size_t)(x - s), &stamp);
    const char *b = x + 11, *end = s + n;
    const char *close = memchr(b, ')', (size_t)(end - b));
    if (sn__telem_starts(b, (size_t)(end - b), "PCI:"))
        b += 4;
    struct sn_telem_xid rec = {.gpu = {stamp.host[0] ? stamp.host : p->host, -1, NULL, 0},
                               .at = {p->source, p->lineno, stamp.time_s},
                               .uptime_s = stamp.uptime_s,
                               .pid = -1,
                               .name = "",
                               .message = "",
                               .bucket = SN_XID_UNKNOWN,
                               .nvlink = -1,
                               .fatal = -1};
    struct kmsg_state *ks = p->state;
    if (close && elided(b, (size_t)(close - b))) {
        /* "Xid (PCI:...)": the poster elided the bus (NVIDIA/nccl#2241).
         * Such lines are one unidentified GPU of the host, as a -q excerpt
         * without its GPU line is (ingest_smi_q.c): findings land on the
         * server. */
        if (!ks->anon[0])
            snprintf(ks->anon, sizeof(ks->anon), SN__TELEM_EXCERPT_UUID "bus-elided-%08x-L%u",
                     (unsigned)(sn_telem_host_digest(p->source, strlen(p->source)) & 0xffffffffu),
                     p->lineno);
        rec.gpu.uuid = ks->anon;
        rec.gpu.bus = SN_TELEM_BUS_NONE;
    } else if (!close || !sn_telem_bus_parse(b, (size_t)(close - b), &rec.gpu.bus)) {
        sn__telem_skip(p, (unsigned)(b - s) + 1, SN_TELEM_SKIP_BAD_VALUE,
                       "Xid line without a PCI bus id");
        return;
    }
    const char *m = close + 1;
    size_t ml = (size_t)(end - m), used;
    double code;
    if (ml && *m == ':')
        m++, ml--;
    sn__telem_trim(&m, &ml);
    if (!sn__telem_number(m, ml, &code, &used) || code < 0 || code > 100000 ||
        code != (unsigned)code) {
        sn__telem_skip(p, (unsigned)(m - s) + 1, SN_TELEM_SKIP_BAD_VALUE, "Xid without a code");
        return;
    }
    rec.code = (unsigned)code;
    m += used, ml -= used;
    char name[SN_TELEM_NAME_MAX] = "", msg[SN_TELEM_TEXT_MAX];
    read_fields(m, ml, &rec, name, sizeof(name), msg, sizeof(msg));
    if (repeat_of_last(ks, &rec)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED,
                       "the Xid %u event of line %u printed again (same GPU, stamp and pid)",
                       rec.code, ks->last_line);
        return;
    }
    if (rec.code == 79 && off_bus_seen(ks, rec.gpu.bus)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "GPU already reported fallen off the bus");
        return;
    }
    SN__EMIT(p, xid, &rec);
}

const struct sn__telem_ops sn__telem_kmsg_ops = {
    .fmt = SN_TELEM_FMT_KMSG,
    .state_size = sizeof(struct kmsg_state),
    .allow_prefix = true,
    .line = kmsg_line,
};
