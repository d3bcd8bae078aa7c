/*
 * lib/health/ingest_fmlog.c: NVIDIA Fabric Manager's log
 * (/var/log/fabricmanager.log) as a telemetry format, "fabricmanager".
 *
 *   [Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on fid 0
 *   on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61
 *
 * Each line that starts with '[' is one record, read by lib/fabric/fmlog.c
 * (sn_fmlog_read(), the one reader of the layout); lines that do not
 * continue the record before them (FM's inband message payloads) and are
 * not read. An NVSwitch SXid record ("detected NVSwitch fatal error N",
 * "non-fatal error N") is a node_check record of tool "fmlog": check
 * "SXid N physical id P port Q" (the parts the message names), the
 * message, fault_code "fatal" or "non-fatal"; the detector maps physical
 * id P to a chip of the host's NVLink domain (health_detect_node.c).
 * Every other record (INFO, WARNING, an ERROR that is no SXid) and every
 * continuation line is an unused skip; a line starting with '[' that is
 * no record header, or text before the first record, is malformed. The
 * record's time is FM's local time without a zone: not used (NaN).
 */
#include "health/ingest_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <sn/fmlog.h>

struct fm_state {
    bool record; /* a record header was read */
};

static void fm_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    struct fm_state *st = p->state;
    if (n == 0)
        return;
    if (s[0] != '[') {
        sn__telem_skip(p, 0, st->record ? SN_TELEM_SKIP_UNUSED : SN_TELEM_SKIP_MALFORMED,
                       st->record
                           ? "continues a record (not read)"
                           : "text before the first '[MON DD YYYY HH:MM:SS] [LEVEL]' record");
        return;
    }
    struct sn_fmlog log = {0};
    struct sn_error err = {0};
    if (sn_fmlog_read(s, n, "line", &log, &err) != SN_OK) {
        const char *why = strstr(err.message, ": ");
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "%s", why ? why + 2 : err.message);
        return;
    }
    st->record = true;
    const struct sn_fmlog_event *e = log.n == 1 ? &log.events[0] : NULL;
    if (!e || e->kind == SN_FMLOG_ERROR) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "%s record, not an NVSwitch SXid",
                       e ? e->level : "a non-error");
        sn_fmlog_release(&log);
        return;
    }
    char check[SN_TELEM_NAME_MAX];
    int at = snprintf(check, sizeof(check), "SXid %u", (unsigned)e->sxid);
    if (e->physical_id >= 0 && at > 0 && (size_t)at < sizeof(check))
        at += snprintf(check + at, sizeof(check) - (size_t)at, " physical id %d",
                       (int)e->physical_id);
    if (e->port >= 0 && at > 0 && (size_t)at < sizeof(check))
        snprintf(check + at, sizeof(check) - (size_t)at, " port %d", (int)e->port);
    struct sn_telem_node_check rec = {
        p->host, sn__telem_origin(p, NAN),
        "fmlog", check,
        e->text, e->kind == SN_FMLOG_NVSWITCH_FATAL ? "fatal" : "non-fatal"};
    SN__EMIT(p, node_check, &rec);
    sn_fmlog_release(&log);
}

const struct sn__telem_ops sn__telem_fmlog_ops = {
    .fmt = SN_TELEM_FMT_FABRICMANAGER,
    .state_size = sizeof(struct fm_state),
    .allow_prefix = false,
    .line = fm_line,
};
