/*
 * sn/fmlog.h: NVIDIA Fabric Manager's log (/var/log/fabricmanager.log,
 * issue 26 item 3), the switch side of NVLink health that `nvidia-smi
 * nvlink -s` cannot see.
 *
 * Format, as FM writes it (real output: tests/data/real/fabricmanager/):
 *
 *   [Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on fid 0 on
 * NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61
 *
 * A record is "[MON DD YYYY HH:MM:SS] [LEVEL] [tid N] message"; a line
 * that does not start with '[' continues the record before it (FM prints
 * inband message payloads on their own lines, with a blank line after).
 * Records are kept only when they are events: every ERROR (or FATAL)
 * record, and an NVSwitch SXid report at any level, whose numbers (SXid,
 * fid, PCI bus id, physical id, port) are taken out. INFO, WARNING and
 * other levels are counted.
 *
 * Pure: text in, events out; no clock (the record's time is kept as
 * printed: FM writes local time without a zone). Errors name
 * "source:line:col": a line starting with '[' that is no record header, a
 * continuation before any record, a file over SN_FMLOG_MAX bytes.
 *
 * Ownership: sn_fmlog_read() fills *out, released by sn_fmlog_release()
 * (NULL and a zeroed log allowed); on failure nothing is held.
 */
#ifndef SN_FMLOG_H
#define SN_FMLOG_H

#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>

#define SN_FMLOG_MAX (64u << 20)       /* bytes of one log */
#define SN_FMLOG_EVENTS_MAX (1u << 20) /* events kept; past it SN_ERR_LIMIT */
#define SN_FMLOG_TEXT_MAX 192u         /* bytes of an event's message, NUL included */

#define SN_FMLOG_KIND_LIST(X)                                                                      \
    X(NVSWITCH_FATAL, "nvswitch-fatal")        /* "detected NVSwitch fatal error N ..." */         \
    X(NVSWITCH_NONFATAL, "nvswitch-non-fatal") /* "detected NVSwitch non-fatal error N ..." */     \
    X(ERROR, "error")                          /* any other ERROR or FATAL record */
enum sn_fmlog_kind {
#define SN_X(id, name) SN_FMLOG_##id,
    SN_FMLOG_KIND_LIST(SN_X)
#undef SN_X
        SN_FMLOG_KIND_COUNT
};
const char *sn_fmlog_kind_name(enum sn_fmlog_kind k);

struct sn_fmlog_event {
    uint32_t line; /* 1-based line of the record */
    enum sn_fmlog_kind kind;
    char time[24];                  /* "Feb 27 2025 15:10:02", as printed */
    char level[12];                 /* "ERROR" */
    uint32_t sxid;                  /* NVSwitch SXid; 0 for ERROR */
    int32_t fid, physical_id, port; /* -1 when the message names none */
    char pci[24];                   /* "00000000:86:00.0"; "" when none */
    char text[SN_FMLOG_TEXT_MAX];   /* the message after "[tid N] ", cut to fit */
};

struct sn_fmlog {
    struct sn_fmlog_event *events; /* in file order */
    uint32_t n, cap;
    uint32_t records;      /* record lines read */
    uint32_t continuation; /* lines that continued a record (blank ones included) */
};

/* Reads a Fabric Manager log of len bytes (source names it in messages). */
SN_MUST_CHECK enum sn_err sn_fmlog_read(const char *text, size_t len, const char *source,
                                        struct sn_fmlog *out, struct sn_error *err);
void sn_fmlog_release(struct sn_fmlog *log);

#endif /* SN_FMLOG_H */
