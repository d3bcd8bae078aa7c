/*
 * snd's /metrics scraped by the real Prometheus server (Debian's package
 * `prometheus`): snd and prometheus run on 127.0.0.1 with a scrape config
 * in a temporary directory; once a scrape has happened, Prometheus's HTTP
 * API is asked for the target's health (it parsed our exposition without
 * error) and for our metrics: GPUs by scheduler state, jobs by state and
 * the scheduler cycle-time histogram (through histogram_quantile). Skipped,
 * with a message, when no prometheus binary is found ($SN_PROMETHEUS or
 * /usr/bin/prometheus).
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include "snd_harness.h"

#include <ftw.h>
#include <math.h>
#include <sys/stat.h>

static const char *prometheus_path(void)
{
    const char *p = getenv("SN_PROMETHEUS");
    if (!p)
        p = "/usr/bin/prometheus";
    return access(p, X_OK) == 0 ? p : NULL;
}

static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    socklen_t len = sizeof(sa);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

/* GET on Prometheus's API; the parsed body, or NULL. */
static json_t *prom_get(unsigned port, const char *path)
{
    struct sn_httpc_request req = {.method = "GET", .path = path, .timeout_ms = 2000};
    struct sn_httpc_response resp;
    if (sn_httpc_do("127.0.0.1", (uint16_t)port, &req, &resp, NULL) != SN_OK)
        return NULL;
    json_t *j = resp.status == 200 ? json_loads(resp.body, 0, NULL) : NULL;
    sn_httpc_response_release(&resp);
    return j;
}

/* The value of an instant query with one result, as a double; NAN when
 * there is no such result. */
static double query(unsigned port, const char *promql)
{
    char path[512], enc[400];
    size_t n = 0;
    for (const char *p = promql; *p && n + 4 < sizeof(enc); p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '_' || *p == '.')
            enc[n++] = *p;
        else
            n += (size_t)snprintf(enc + n, sizeof(enc) - n, "%%%02X", (unsigned char)*p);
    }
    enc[n] = '\0';
    snprintf(path, sizeof(path), "/api/v1/query?query=%s", enc);
    json_t *j = prom_get(port, path);
    json_t *result = json_object_get(json_object_get(j, "data"), "result");
    double v = NAN;
    if (json_array_size(result) == 1) {
        json_t *value = json_object_get(json_array_get(result, 0), "value");
        v = strtod(json_string_value(json_array_get(value, 1)), NULL);
    }
    json_decref(j);
    return v;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void scraped_by_prometheus(void **state)
{
    (void)state;
    const char *prom = prometheus_path();
    if (!prom) {
        print_message("prometheus not found (install Debian's 'prometheus' or set "
                      "SN_PROMETHEUS): skipped\n");
        skip();
    }
    struct daemon d;
    make_dir(&d);
    const char *sets[] = {"sched_event_delay_ms=0", "sched_interval_ms=100", NULL};
    start(&d, sets);
    setup_tenants(&d);
    expect(&d, 201, "POST", "/v1/jobs", d.admin, "{\"name\":\"m\",\"gpus\":8,\"tenant\":\"acme\"}");
    json_decref(wait_job(&d, 1, "running"));
    char dir[300], conf[400], data[400], log[400];
    snprintf(dir, sizeof(dir), "%s/prom", d.dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(conf, sizeof(conf), "%s/prometheus.yml", dir);
    snprintf(data, sizeof(data), "%s/data", dir);
    snprintf(log, sizeof(log), "%s/prometheus.log", dir);
    FILE *f = fopen(conf, "w");
    assert_non_null(f);
    fprintf(f,
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: snd\n    metrics_path: /metrics\n"
            "    static_configs:\n      - targets: ['127.0.0.1:%u']\n",
            d.port);
    fclose(f);
    unsigned port = free_port();
    char listen[64], conf_arg[450], data_arg[450];
    snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%u", port);
    snprintf(conf_arg, sizeof(conf_arg), "--config.file=%s", conf);
    snprintf(data_arg, sizeof(data_arg), "--storage.tsdb.path=%s", data);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(prom, prom, conf_arg, data_arg, listen, "--log.level=warn", (char *)NULL);
        _exit(127);
    }
    track(pid, true);
    /* Wait (up to 25 s) for a scrape: up{job="snd"} == 1. */
    double up = NAN;
    for (int i = 0; i < 250 && !(up == 1); i++) {
        poll(NULL, 0, 100);
        up = query(port, "up{job=\"snd\"}");
    }
    if (!(up == 1))
        fail_msg("prometheus did not scrape snd (see %s)", log);
    /* The target is healthy: Prometheus parsed the exposition. */
    json_t *t = prom_get(port, "/api/v1/targets?state=active");
    json_t *target =
        json_array_get(json_object_get(json_object_get(t, "data"), "activeTargets"), 0);
    assert_string_equal(json_string_value(json_object_get(target, "health")), "up");
    assert_string_equal(json_string_value(json_object_get(target, "lastError")), "");
    json_decref(t);
    assert_true(query(port, "sn_gpus_scheduler{state=\"allocated\"}") == 8);
    assert_true(query(port, "sn_gpus_scheduler{state=\"free\"}") == 56);
    assert_true(query(port, "sn_jobs{state=\"running\"}") == 1);
    assert_true(query(port, "sn_jobs{state=\"pending\"}") == 0);
    assert_true(query(port, "sn_scheduler_cycle_seconds_count") >= 1);
    double p50 = query(port, "histogram_quantile(0.5, sn_scheduler_cycle_seconds_bucket)");
    assert_true(p50 >= 0 && p50 <= 0.5); /* a pass on 64 GPUs is far below 0.5 s */
    assert_true(query(port, "sum(sn_nodes)") == 8);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    track(pid, false);
    assert_int_equal(stop(&d, SIGTERM), 0);
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    cleanup(&d);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(scraped_by_prometheus, reap_daemons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
