/*
 * The fixture of the health tests that feed readings to a real history:
 * a spec's model, a telemetry store and a health history over it with the
 * default configuration, the last report, parser stats, and the name of
 * the model's first server (the host most tests' lines are from).
 */
#ifndef SN_TEST_HEALTH_FIXTURE_H
#define SN_TEST_HEALTH_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include <sn/health.h>
#include <sn/model.h>
#include <sn/spec.h>
#include <sn/telemetry.h>

#include "sn_test.h"

struct fx {
    struct sn_spec *spec;
    struct sn_model *model;
    struct sn_telem_store *store;
    struct sn_health_history *hist;
    struct sn_health_config cfg;
    struct sn_health_report *rep;
    struct sn_telem_parser_stats stats;
    char host[64];
};

/* spec: a path from the repository root. */
static inline void fx_open(struct fx *f, const char *spec)
{
    char path[512];
    struct sn_error err = {0};
    memset(f, 0, sizeof(*f));
    if (sn_spec_parse_file(sn_test_path(path, sizeof(path), spec), &f->spec, &err) != SN_OK ||
        sn_model_build(f->spec, &f->model, &err) != SN_OK ||
        sn_telem_store_new(NULL, &f->store, &err) != SN_OK)
        fail_msg("%s", err.message);
    sn_health_config_default(&f->cfg);
    assert_int_equal(sn_health_history_new(f->store, &f->cfg, &f->hist, &err), SN_OK);
    sn_model_server_name(f->model, 0, f->host, sizeof(f->host));
}

static inline void fx_close(struct fx *f)
{
    sn_health_report_free(f->rep);
    sn_health_history_free(f->hist);
    sn_telem_store_free(f->store);
    sn_model_free(f->model);
    sn_spec_free(f->spec);
}

#endif
