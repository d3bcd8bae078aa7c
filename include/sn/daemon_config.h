/*
 * snd's configuration (docs/cmd-snd.md): every key with its type, default,
 * range and meaning, as the daemon reads them from --config and --set
 * (lib/conf parses them into struct sn_daemon_config), and the rules'
 * share of them as lib/control takes it. In a library so that the
 * simulator, the tests and the docs read the same keys and defaults as
 * the daemon (lib/control/daemon_config.c).
 */
#ifndef SN_DAEMON_CONFIG_H
#define SN_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/conf.h>
#include <sn/control.h>

struct sn_daemon_config {
    char listen[64];
    int64_t body_max_bytes;
    int64_t connection_limit;
    int64_t connection_timeout_s;
    int64_t rate_per_s;
    int64_t rate_burst;
    int64_t store_queue;
    int64_t store_batch;
    int64_t admin_token_ttl_s;
    int64_t max_jobs;
    int64_t page_max;
    int64_t sched_interval_ms;
    int64_t sched_event_delay_ms;
    int64_t heartbeat_timeout_s;
    int64_t default_walltime_s;
    int64_t health_interval_ms;
    int64_t health_cordon_below;
    int64_t health_bench_interval_s;
    int64_t token_clock_skew_s;
    int64_t auth_fail_per_s;
    int64_t auth_fail_burst;
    int64_t audit_flood_interval_s;
    int64_t tenant_max_live_jobs;
    int64_t tenant_max_jobs;
    char sched_policy[32];
    int64_t gpu_history_samples;
    int64_t gpu_history_step_s;
    int64_t health_stale_s;
    int64_t health_min_nvlink_share_pct; /* the health engine's min_nvlink_share, in % */
    /* Listeners and TLS (http.c). */
    char agent_listen[64]; /* "" : agents use the API listener */
    char tls_cert[SN_CONF_STRING_MAX], tls_key[SN_CONF_STRING_MAX];
    char tls_client_ca[SN_CONF_STRING_MAX];
    bool allow_plain_http;
    int64_t connection_per_ip_limit;
    int64_t header_timeout_s;
    int64_t unauth_connection_pct;
    bool metrics_require_token;
    /* Scheduler policy knobs of the core (shape/quota work). */
    int64_t preempt_min_runtime_s;
    int64_t partition_share_pct;
    int64_t partition_window_s;
    int64_t max_tenants_per_supernode;
    int64_t spare_gpus_per_supernode;
    bool replace_in_place;
    int64_t cpu_oversell_pct;
    int64_t memory_oversell_pct;
    char pool_borrow[256]; /* "borrower:lender,...": pools that may borrow idle supernodes */
    int64_t imex_channel_count;   /* IMEX channels per NVLink domain, 0: off */
    int64_t imex_setup_timeout_s; /* a job's channel setup before it is requeued */
    int64_t preflight_default, preflight_require, preflight_timeout_s; /* preflight.c */
    int64_t pending_reason_hold_ms; /* a reason change persists this long before its event */
    /* Token keys (keys.c). */
    int64_t key_overlap_s;          /* a rotated-out key verifies this long after its retirement */
    char store[SN_CONF_STRING_MAX]; /* "": DIR/state.db; sqlite:PATH; postgresql://... */
    int64_t leader_lease_ms;        /* PostgreSQL: leadership unrenewed lasts this */
    char advertise_url[SN_CONF_STRING_MAX]; /* "": http(s)://listen; written for redirects */
    /* Slurm mirror (slurm_mirror.c; appended). */
    char slurm_mirror[16]; /* "" off, "scontrol" */
    int64_t slurm_mirror_interval_ms;
    char slurm_scontrol[SN_CONF_STRING_MAX];
    /* Health rounds (bench_rounds.c; appended). */
    int64_t health_round_timeout_s;
    /* Health guard rails (lib/control/breaker.c; appended). */
    int64_t health_breaker_cluster, health_breaker_supernode, health_breaker_rack;
    int64_t health_breaker_window_s;
    int64_t health_escalate_rack_pct;
    int64_t power_util_pct; /* power budgets at placement (lib/sched/sched_power.c) */
    char power_cap_policy[SN_CONF_STRING_MAX]; /* off|fit (lib/control/power_caps.c) */
    /* Repeat offenders (lib/control/offenders.c; appended). */
    int64_t offender_window_s, offender_count;
    int64_t health_auto_resume_s;
    int64_t health_half_life_s; /* the health engine's penalty half-life */
    char health_agent_actions[32];          /* "reset-gpu,reboot": remedy.c; "" never */
    int64_t health_agent_action_interval_s; /* a GPU asked at most this often */
    /* Cooperative preemption and expedited requeue (lib/control/preempt.c). */
    int64_t preempt_grace_s;
    char preempt_signal[16];
    int64_t expedite_hold_s;
    int64_t drain_grace_s;
};

extern const struct sn_conf_key sn_daemon_config_keys[];
extern const size_t sn_daemon_config_key_count;

/* The rules' knobs of f (the keys of the same names). */
void sn_daemon_config_control(const struct sn_daemon_config *f, struct sn_control_config *out);

#endif
