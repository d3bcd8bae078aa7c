/*
 * lib/health/ingest_smi_infer.c: the column layout of nvidia-smi
 * --format=csv,noheader rows given without their --query field list.
 *
 * Pure: it sees the first rows of an input (at most SN_TELEM_INFER_ROWS,
 * already cut into trimmed cells) and decides, per column, the field it is
 * read as, or none. A wrong guess is worse than none: a column is assigned
 * only when its values have a shape that one field alone prints (CERTAIN),
 * or when a documented rule picks one of several candidates (RULE); every
 * other column stays UNASSIGNED and its cells are not read. The rules
 * (docs/health.md, "Rows without a header"):
 *
 *   - every cell of the column that is not a status ("[N/A]", "N/A", ...)
 *     has the same shape; a mix of shapes is unassigned;
 *   - PCI bus id ("00000000:07:00.0"), UUID ("GPU-..."/"MIG-..."),
 *     timestamp ("2024/05/01 12:00:00.123"), pstate ("P0".."P15"), product
 *     name ("NVIDIA ...", "Tesla ...", "A100-SXM4-40GB"), driver version
 *     (three parts, "535.104.05") and VBIOS version (five two-digit hex
 *     parts) are CERTAIN;
 *   - index (RULE): the one column of bare integers whose values, host by
 *     host and in order, run 0, 1, ..., n-1 and restart at 0 with the same
 *     n each time (the last run may be shorter: an excerpt), n >= 2; two
 *     such columns: neither;
 *   - power.draw (RULE): with a GPU key (host and index, bus id or UUID),
 *     the one "W" column whose value changes between two rows of the same
 *     GPU (limits are constant while the draw moves); other "W" columns
 *     stay unassigned (power.limit, enforced, default, min and max limits
 *     print the same shape);
 *   - clocks_event_reasons.active (RULE): likewise the one 16-digit hex
 *     bitmask that changes for one GPU (the supported mask never does);
 *   - everything else ("%", "MiB", "MHz", bare numbers, Enabled/Disabled,
 *     Active/Not Active, text) is unassigned, with its candidates named:
 *     two "MiB" columns may be used and total, or free and used; "MHz" may
 *     be the SM, memory, graphics or video clock; nvidia-smi prints
 *     temperatures without a unit, like counts and PCIe widths.
 */
#include "health/ingest_int.h"

#include <math.h>
#include <string.h>

enum shape {
    SH_STATUS, /* [N/A] and the other statuses: fits any field */
    SH_BUS,
    SH_UUID,
    SH_TIME,
    SH_PSTATE,
    SH_NAME,
    SH_DRIVER,
    SH_VBIOS,
    SH_HEX16,
    SH_HEX,
    SH_ENABLED,
    SH_YESNO,
    SH_ACTIVE,
    SH_UINT,
    SH_NUMBER,
    SH_MIB,
    SH_WATT,
    SH_MHZ,
    SH_PERCENT,
    SH_UNIT, /* a number with another unit */
    SH_TEXT,
    SH_MIXED, /* column only: cells of two shapes */
    SH_COUNT
};

/* Per shape: the field it is read as when certain, or the candidates. */
static const struct {
    const char *field;
    const char *text;
} shapes[SH_COUNT] = {
    [SH_STATUS] = {NULL, "only statuses such as [N/A]: no value to tell the field"},
    [SH_BUS] = {"pci.bus_id", "values like 00000000:07:00.0"},
    [SH_UUID] = {"uuid", "values like GPU-xxxxxxxx-xxxx-..."},
    [SH_TIME] = {"timestamp", "values like 2024/05/01 12:00:00.123"},
    [SH_PSTATE] = {"pstate", "values P0..P15"},
    [SH_NAME] = {"name", "GPU product names"},
    [SH_DRIVER] = {"driver_version", "three-part driver versions"},
    [SH_VBIOS] = {"vbios_version", "five-part VBIOS versions"},
    [SH_HEX16] = {NULL, "16-digit bitmask: clocks_event_reasons.active or .supported"},
    [SH_HEX] = {NULL, "hex: pci.domain, pci.bus, pci.device, pci.device_id, pci.sub_device_id"},
    [SH_ENABLED] = {NULL, "Enabled/Disabled: ecc.mode.*, persistence_mode, mig.mode.*, "
                          "accounting.mode, display_mode"},
    [SH_YESNO] = {NULL, "Yes/No: retired_pages.pending, remapped_rows.pending, "
                        "remapped_rows.failure"},
    [SH_ACTIVE] = {NULL, "Active/Not Active: one of the clocks_event_reasons.* bits"},
    [SH_UINT] = {NULL, "bare integers: temperature.gpu, temperature.memory, ECC, "
                       "retired-page and remapped-row counts, pcie.link.*, index"},
    [SH_NUMBER] = {NULL, "bare decimals: compute_cap, or (nounits) any numeric field"},
    [SH_MIB] = {NULL, "MiB: memory.used, memory.free, memory.total, memory.reserved"},
    [SH_WATT] = {NULL, "W: power.draw, power.limit, enforced.power.limit, "
                       "power.default_limit, power.min_limit, power.max_limit"},
    [SH_MHZ] = {NULL, "MHz: clocks.sm, clocks.mem, clocks.gr, clocks.video, clocks.max.*"},
    [SH_PERCENT] = {NULL, "%: utilization.gpu, utilization.memory, fan.speed"},
    [SH_UNIT] = {NULL, "a unit no field we read prints"},
    [SH_TEXT] = {NULL, "text: serial, compute_mode, driver_model.*, ... (not a GPU name)"},
    [SH_MIXED] = {NULL, "cells of different shapes: no one field prints them all"},
};

static bool all_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F')))
            return false;
    }
    return n > 0;
}

static bool all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)(s[i] - '0') > 9)
            return false;
    return n > 0;
}

/* "00000000:07:00.0" or "0000:07:00.0": domain, bus, device, function. */
static bool is_bus(const char *s, size_t n)
{
    const char *c1 = memchr(s, ':', n);
    if (!c1)
        return false;
    size_t d = (size_t)(c1 - s);
    return (d == 4 || d == 8) && n == d + 8 && all_hex(s, d) && all_hex(s + d + 1, 2) &&
           s[d + 3] == ':' && all_hex(s + d + 4, 2) && s[d + 6] == '.' && s[d + 7] >= '0' &&
           s[d + 7] <= '7';
}

static bool is_uuid(const char *s, size_t n)
{
    if (n < 12 || !(sn__telem_starts(s, n, "GPU-") || sn__telem_starts(s, n, "MIG-")))
        return false;
    for (size_t i = 4; i < n; i++)
        if (s[i] != '-' && !all_hex(s + i, 1))
            return false;
    return true;
}

/* Digit groups separated by dots: "535.104.05" -> 3 with widths. */
static unsigned dotted(const char *s, size_t n, size_t *width, unsigned cap, bool hex)
{
    unsigned k = 0;
    size_t b = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.')
            continue;
        size_t w = i - b;
        if (w == 0 || k == cap || !(hex ? all_hex(s + b, w) : all_digits(s + b, w)))
            return 0;
        width[k++] = w;
        b = i + 1;
    }
    return k;
}

/* Product names: a brand word, or a model code such as A100-SXM4-40GB,
 * H100, V100-SXM2-16GB, A10G, L40S, T4 (older drivers print no brand). */
static bool is_name(const char *s, size_t n)
{
    static const char *const brands[] = {"NVIDIA ", "Tesla ", "GeForce ", "Quadro ",
                                         "TITAN ",  "GRID ",  "NVIDIA-"};
    for (size_t b = 0; b < sizeof(brands) / sizeof(brands[0]); b++)
        if (sn__telem_starts(s, n, brands[b]) && n > strlen(brands[b]))
            return true;
    size_t i = 0;
    while (i < n && i < 2 && s[i] >= 'A' && s[i] <= 'Z')
        i++;
    size_t d = i;
    while (i < n && (unsigned char)(s[i] - '0') <= 9)
        i++;
    if (d == 0 || i == d || i - d > 4)
        return false;
    while (i < n && ((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z')))
        i++;
    return i == n || s[i] == '-' || s[i] == ' ';
}

static enum shape unit_shape(const char *u, size_t n)
{
    if (sn__telem_eq(u, n, "MiB"))
        return SH_MIB;
    if (sn__telem_eq(u, n, "W"))
        return SH_WATT;
    if (sn__telem_eq(u, n, "MHz"))
        return SH_MHZ;
    if (sn__telem_eq(u, n, "%"))
        return SH_PERCENT;
    enum sn__telem_dim dim;
    double f;
    return sn__telem_unit(u, n, &dim, &f) ? SH_UNIT : SH_TEXT;
}

static enum shape cell_shape(const char *s, size_t n)
{
    size_t w[8];
    if (n == 0 || sn__telem_status_of(s, n) != SN_TELEM_OK)
        return SH_STATUS;
    if (is_bus(s, n))
        return SH_BUS;
    if (is_uuid(s, n))
        return SH_UUID;
    double t;
    if (n >= 19 && all_digits(s, 4) && (s[4] == '/' || s[4] == '-') &&
        sn__telem_time_parse(s, n, &t))
        return SH_TIME;
    if (n >= 2 && n <= 3 && s[0] == 'P' && all_digits(s + 1, n - 1) &&
        (n == 2 || (s[1] == '1' && s[2] <= '5')))
        return SH_PSTATE;
    if (n > 2 && s[0] == '0' && s[1] == 'x' && all_hex(s + 2, n - 2))
        return n == 18 ? SH_HEX16 : SH_HEX;
    if (sn__telem_eq(s, n, "Enabled") || sn__telem_eq(s, n, "Disabled"))
        return SH_ENABLED;
    if (sn__telem_eq(s, n, "Yes") || sn__telem_eq(s, n, "No"))
        return SH_YESNO;
    if (sn__telem_eq(s, n, "Active") || sn__telem_eq(s, n, "Not Active"))
        return SH_ACTIVE;
    if (dotted(s, n, w, 8, false) == 3 && w[0] >= 2 && w[0] <= 3 && w[2] == 2)
        return SH_DRIVER;
    if (dotted(s, n, w, 8, true) == 5 && w[0] == 2 && w[1] == 2 && w[2] == 2 && w[3] == 2 &&
        w[4] == 2)
        return SH_VBIOS;
    if (all_digits(s, n))
        return SH_UINT;
    double x;
    size_t used;
    if (sn__telem_number(s, n, &x, &used) && isfinite(x)) {
        if (used == n)
            return SH_NUMBER;
        const char *u = s + used;
        size_t ul = n - used;
        sn__telem_trim(&u, &ul);
        return unit_shape(u, ul);
    }
    return is_name(s, n) ? SH_NAME : SH_TEXT;
}

/* A column's shape: the one shape of its non-status cells. */
static enum shape column_shape(const struct sn__infer_rows *in, unsigned c)
{
    enum shape col = SH_STATUS;
    for (unsigned r = 0; r < in->nrows; r++) {
        const struct sn__infer_cell *cell = &in->cell[r * in->ncols + c];
        enum shape sh = cell_shape(cell->s, cell->len);
        if (sh == SH_STATUS)
            continue;
        if (col == SH_STATUS || col == sh)
            col = sh;
        else if ((col == SH_UINT && sh == SH_NUMBER) || (col == SH_NUMBER && sh == SH_UINT))
            col = SH_NUMBER;
        else
            return SH_MIXED;
    }
    return col;
}

static unsigned long long cell_uint(const struct sn__infer_cell *cell)
{
    unsigned long long v = 0;
    for (size_t i = 0; i < cell->len && v < 100000; i++)
        v = v * 10 + (unsigned)(cell->s[i] - '0');
    return v;
}

/* The index rule (file comment): runs 0..n-1 per host, one n, n >= 2. */
static bool index_like(const struct sn__infer_rows *in, unsigned c)
{
    struct {
        const char *host;
        long long prev;
        unsigned run, full;
    } hs[SN_TELEM_INFER_ROWS];
    unsigned nh = 0;
    unsigned long long top = 0;
    for (unsigned r = 0; r < in->nrows; r++) {
        const struct sn__infer_cell *cell = &in->cell[r * in->ncols + c];
        if (!all_digits(cell->s, cell->len) || cell->len > 4)
            return false;
        unsigned long long v = cell_uint(cell);
        unsigned h = 0;
        while (h < nh && strcmp(hs[h].host, in->host[r]) != 0)
            h++;
        if (h == nh) {
            hs[nh].host = in->host[r];
            hs[nh].prev = -1;
            hs[nh].run = hs[nh].full = 0;
            nh++;
        }
        if (hs[h].prev >= 0 && v == (unsigned long long)hs[h].prev + 1) {
            hs[h].run++;
        } else if (v == 0) {
            if (hs[h].prev >= 0) { /* a restart closes a complete run */
                if (hs[h].full && hs[h].run != hs[h].full)
                    return false;
                hs[h].full = hs[h].run;
            }
            hs[h].run = 1;
        } else {
            return false;
        }
        hs[h].prev = (long long)v;
        top = v > top ? v : top;
    }
    for (unsigned h = 0; h < nh; h++)
        if (hs[h].full && hs[h].run > hs[h].full)
            return false;
    return top >= 1;
}

/* Whether column c has two different values for one GPU (same key). */
static bool varies(const struct sn__infer_rows *in, unsigned c, int key_col)
{
    for (unsigned a = 0; a < in->nrows; a++) {
        const struct sn__infer_cell *ka = &in->cell[a * in->ncols + (unsigned)key_col];
        const struct sn__infer_cell *va = &in->cell[a * in->ncols + c];
        if (cell_shape(va->s, va->len) == SH_STATUS)
            continue;
        for (unsigned b = a + 1; b < in->nrows; b++) {
            const struct sn__infer_cell *kb = &in->cell[b * in->ncols + (unsigned)key_col];
            const struct sn__infer_cell *vb = &in->cell[b * in->ncols + c];
            if (strcmp(in->host[a], in->host[b]) != 0 || ka->len != kb->len ||
                memcmp(ka->s, kb->s, ka->len) != 0 || cell_shape(vb->s, vb->len) == SH_STATUS)
                continue;
            if (va->len != vb->len || memcmp(va->s, vb->s, va->len) != 0)
                return true;
        }
    }
    return false;
}

/* The one column of shape sh that varies per GPU, -1 when none or two. */
static int only_varying(const struct sn__infer_rows *in, const enum shape *sh, enum shape want,
                        int key_col)
{
    int found = -1;
    for (unsigned c = 0; c < in->ncols; c++) {
        if (sh[c] != want || !varies(in, c, key_col))
            continue;
        if (found >= 0)
            return -1;
        found = (int)c;
    }
    return found;
}

static void set_col(struct sn_telem_layout_col *o, const char *field, enum sn_telem_confidence k,
                    const char *basis)
{
    o->field = field;
    o->confidence = k;
    o->basis = basis;
}

void sn__smi_csv_infer(const struct sn__infer_rows *in, struct sn_telem_layout_col *out)
{
    enum shape sh[SN__INFER_COLS];
    int index_col = -1, key_col = -1;
    unsigned index_like_cols = 0;
    for (unsigned c = 0; c < in->ncols; c++) {
        sh[c] = column_shape(in, c);
        const char *field = shapes[sh[c]].field;
        set_col(&out[c], field ? field : "", field ? SN_TELEM_CONF_CERTAIN : SN_TELEM_CONF_UNASSIGNED,
                shapes[sh[c]].text);
        if (sh[c] == SH_UINT && index_like(in, c)) {
            index_like_cols++;
            index_col = (int)c;
        }
    }
    if (index_like_cols == 1) {
        set_col(&out[index_col], "index", SN_TELEM_CONF_RULE,
                "runs 0, 1, ..., n-1 per host and sample");
        key_col = index_col;
    } else if (index_like_cols > 1) {
        for (unsigned c = 0; c < in->ncols; c++)
            if (sh[c] == SH_UINT && index_like(in, c))
                out[c].basis = "runs like an index, but so does another column";
    }
    /* A GPU key for the varying rules: the index, else a bus id or UUID. */
    for (unsigned c = 0; c < in->ncols && key_col < 0; c++)
        if (sh[c] == SH_BUS || sh[c] == SH_UUID)
            key_col = (int)c;
    if (key_col < 0)
        return;
    int draw = only_varying(in, sh, SH_WATT, key_col);
    if (draw >= 0)
        set_col(&out[draw], "power.draw", SN_TELEM_CONF_RULE,
                "the one W column that changes for a GPU (limits are constant)");
    int active = only_varying(in, sh, SH_HEX16, key_col);
    if (active >= 0)
        set_col(&out[active], "clocks_event_reasons.active", SN_TELEM_CONF_RULE,
                "the one bitmask that changes for a GPU (the supported mask is constant)");
}
