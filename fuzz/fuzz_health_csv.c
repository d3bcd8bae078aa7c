/*
 * libFuzzer harness: the health engine's small CSV inputs (sn-bench,
 * sn-node, sn-software, sn-matrix, sn-jobs, sn-events) through
 * sn_health_facts_read(). The first byte picks the kind; the rest is read
 * twice into one set of facts (so appending to tables that already hold rows
 * is covered too).
 *
 * Checked beyond "no crash": every row count stays under SN_HEALTH_FACTS_MAX,
 * every kept string is NUL-terminated inside its field, numbers are
 * non-negative where the format says so, and every error names the source
 * ("fuzz.csv:...") as the contract promises.
 */
#include <sn/health.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const char *s, size_t cap)
{
    if (!memchr(s, '\0', cap))
        abort();
}

static void check(const struct sn_health_facts *f)
{
    if (f->n_bench > SN_HEALTH_FACTS_MAX || f->n_node > SN_HEALTH_FACTS_MAX ||
        f->n_software > SN_HEALTH_FACTS_MAX || f->n_matrix > SN_HEALTH_FACTS_MAX ||
        f->n_jobs > SN_HEALTH_FACTS_MAX || f->n_events > SN_HEALTH_FACTS_MAX)
        abort();
    for (uint32_t i = 0; i < f->n_bench; i++) {
        check_str(f->bench[i].host, sizeof(f->bench[i].host));
        if (f->bench[i].gpu < 0 || !(f->bench[i].value >= 0) ||
            (unsigned)f->bench[i].test >= SN_BENCH_COUNT)
            abort();
    }
    for (uint32_t i = 0; i < f->n_node; i++)
        if (!(f->node[i].value >= 0) || (unsigned)f->node[i].metric >= SN_NODE_COUNT)
            abort();
    for (uint32_t i = 0; i < f->n_software; i++) {
        check_str(f->software[i].host, sizeof(f->software[i].host));
        check_str(f->software[i].version, sizeof(f->software[i].version));
    }
    for (uint32_t i = 0; i < f->n_matrix; i++)
        check_str(f->matrix[i].version, sizeof(f->matrix[i].version));
    for (uint32_t i = 0; i < f->n_jobs; i++) {
        check_str(f->jobs[i].job, sizeof(f->jobs[i].job));
        check_str(f->jobs[i].host, sizeof(f->jobs[i].host));
    }
    for (uint32_t i = 0; i < f->n_events; i++)
        if ((unsigned)f->events[i].kind >= SN_EVENT_COUNT)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    enum sn_facts_kind k = (enum sn_facts_kind)(data[0] % SN_FACTS_COUNT);
    struct sn_health_facts f;
    sn_health_facts_init(&f);
    for (int pass = 0; pass < 2; pass++) {
        struct sn_error err = {0};
        enum sn_err rc =
            sn_health_facts_read(&f, k, (const char *)data + 1, size - 1, "fuzz.csv", &err);
        if (rc != SN_OK && rc != SN_ERR_NOMEM && strncmp(err.message, "fuzz.csv", 8) != 0)
            abort(); /* an error that does not say where */
        check(&f);
    }
    sn_health_facts_release(&f);
    return 0;
}
