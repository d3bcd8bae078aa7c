/*
 * bench_review: time of the design review (lib/review) on a large spec.
 *
 *   bench_review [SPEC...]   (default: bench/specs/large-hgx-131k.yaml and
 *                             bench/specs/large-nvl72-131k.yaml)
 *
 * Prints, per spec: GPUs and links, the time to parse and build the model,
 * the time of the whole review (best of 3) and of each rule alone, and the
 * findings. Run from the repository root on an idle machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <sn/review.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double review_s(const struct sn_model *m, uint64_t mask, uint32_t *findings)
{
    double best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        struct sn_review *r = NULL;
        struct sn_error err = {0};
        double t0 = now_s();
        if (sn_review_run(m, NULL, mask, &r, &err) != SN_OK) {
            fprintf(stderr, "bench_review: %s\n", err.message);
            exit(1);
        }
        double t = now_s() - t0;
        best = t < best ? t : best;
        *findings = r->n_findings;
        sn_review_free(r);
    }
    return best;
}

static int bench(const char *path)
{
    struct sn_spec *spec = NULL;
    struct sn_model *model = NULL;
    struct sn_error err = {0};
    double t0 = now_s();
    if (sn_spec_parse_file(path, &spec, &err) != SN_OK ||
        sn_model_build(spec, &model, &err) != SN_OK) {
        fprintf(stderr, "bench_review: %s\n", err.message);
        sn_spec_free(spec);
        return 1;
    }
    double load = now_s() - t0;
    uint32_t findings = 0;
    double all = review_s(model, 0, &findings);
    printf("%s: %u GPUs, %llu links; parse+build %.3f s; review (%u rules, best of 3) %.3f s, "
           "%u findings\n",
           path, model->n_gpus, (unsigned long long)model->n_links, load, sn_review_rule_count(),
           all, findings);
    for (uint32_t i = 0; i < sn_review_rule_count(); i++) {
        double t = review_s(model, (uint64_t)1 << i, &findings);
        printf("  %s %-22s %.4f s\n", sn_review_rule(i)->id, sn_review_rule(i)->slug, t);
    }
    sn_model_free(model);
    sn_spec_free(spec);
    return 0;
}

int main(int argc, char **argv)
{
    static const char *defaults[] = {"bench/specs/large-hgx-131k.yaml",
                                     "bench/specs/large-nvl72-131k.yaml"};
    int rc = 0;
    if (argc > 1)
        for (int i = 1; i < argc; i++)
            rc |= bench(argv[i]);
    else
        for (size_t i = 0; i < 2; i++)
            rc |= bench(defaults[i]);
    return rc;
}
