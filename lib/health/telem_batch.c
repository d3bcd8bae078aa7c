/*
 * One agent's telemetry batch through snd's route (docs/agent.md): parsed
 * in one pass into a bounded buffer while every reading is range-checked;
 * a batch with an impossible reading, or too large to buffer, goes no
 * further (nothing of it is stored). Otherwise the buffer is replayed
 * through a host filter, so only the sending node's records reach the
 * store. The outcome says what the route answers.
 */
#include <sn/telem_buffer.h>
#include <sn/telem_filter.h>

#include <stdio.h>

enum sn_err sn_telem_batch_ingest(struct sn_telem_batch *b, struct sn_error *err)
{
    b->samples = b->skipped = 0;
    b->bad_metric = NULL;
    struct sn_telem_range_check rcheck = {0};
    struct sn_telem_sink tap = sn_telem_range_sink(&rcheck);
    struct sn_telem_buffer *buf = sn_telem_buffer_new(&tap, b->buffer_cap);
    if (!buf)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    struct sn_telem_sink bsink = sn_telem_buffer_sink(buf);
    struct sn_telem_opts o = {.source = b->source, .host = b->host, .prefix = SN_TELEM_PREFIX_NONE};
    struct sn_telem_parser_stats st;
    enum sn_err rc =
        sn_telem_parse_buffer(b->format, &o, &bsink, b->body ? b->body : "", b->len, &st, err);
    if ((rc != SN_OK && rc != SN_ERR_SYNTAX) || sn_telem_buffer_failed(buf)) {
        sn_telem_buffer_free(buf);
        if (rc == SN_OK || rc == SN_ERR_LIMIT)
            return sn_error_set(err, SN_ERR_LIMIT, "%s",
                                rc == SN_OK || !err->message[0] ? "the batch is too large to buffer"
                                                                : err->message);
        return rc;
    }
    if (rcheck.bad) {
        sn_telem_buffer_free(buf);
        b->bad_metric = sn_metric_name(rcheck.metric);
        return sn_error_set(err, SN_ERR_RANGE,
                            "line %u: %s %.17g %s is outside the physical range %.17g to %.17g; "
                            "the batch is refused",
                            rcheck.line, b->bad_metric, rcheck.value, sn_metric_unit(rcheck.metric),
                            rcheck.min, rcheck.max);
    }
    struct sn_telem_host_filter in = {.to = b->to,
                                      .host = b->host,
                                      .now_s = b->now_s,
                                      .on_leak = b->on_leak,
                                      .leak_ctx = b->leak_ctx};
    struct sn_telem_sink sink = sn_telem_host_filter_sink(&in);
    sn_telem_buffer_replay(buf, &sink);
    sn_telem_buffer_free(buf);
    for (int k = 0; k < SN_TELEM_SKIP_COUNT; k++)
        b->skipped += k == SN_TELEM_SKIP_UNUSED ? 0 : st.skipped[k];
    b->samples = in.samples;
    b->foreign = in.foreign;
    return SN_OK;
}
