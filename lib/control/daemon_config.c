/*
 * snd's configuration keys (sn/daemon_config.h, docs/cmd-snd.md, whose
 * table `snd --help-markdown` prints from this one) and the rules' share
 * of them.
 */
#include <sn/daemon_config.h>

#include <stddef.h>
#include <stdio.h>

#define C(f) offsetof(struct sn_daemon_config, f)
const struct sn_conf_key sn_daemon_config_keys[] = {
    {"listen", SN_CONF_STRING, "127.0.0.1:7070", 3, 63, C(listen),
     "HOST:PORT or [IPv6]:PORT to serve the API on (a name, or an address; port 0: any free "
     "port)"},
    {"body_max_bytes", SN_CONF_INT, "1048576", 1024, 64 << 20, C(body_max_bytes),
     "largest request body accepted; larger gets 413"},
    {"connection_limit", SN_CONF_INT, "1024", 1, 65536, C(connection_limit),
     "most concurrent client connections; more are refused"},
    {"connection_timeout_s", SN_CONF_INT, "30", 1, 3600, C(connection_timeout_s),
     "an idle or slow connection is closed after this many seconds"},
    {"rate_per_s", SN_CONF_INT, "2000", 1, 1000000, C(rate_per_s),
     "requests per second allowed per token (token bucket refill)"},
    {"rate_burst", SN_CONF_INT, "4000", 1, 1000000, C(rate_burst),
     "requests a token may make at once (token bucket size)"},
    {"store_queue", SN_CONF_INT, "16384", 16, 1 << 20, C(store_queue),
     "store writes waiting for a commit at most; more get 503"},
    {"store_batch", SN_CONF_INT, "1024", 1, 65536, C(store_batch),
     "store writes committed together at most (group commit)"},
    {"admin_token_ttl_s", SN_CONF_INT, "2592000", 60, 366LL * 86400, C(admin_token_ttl_s),
     "lifetime of the admin token written at first start"},
    {"max_jobs", SN_CONF_INT, "10000000", 16, 1LL << 32, C(max_jobs),
     "highest job id; submits beyond get 507"},
    {"page_max", SN_CONF_INT, "1000", 1, 100000, C(page_max),
     "largest page a list request may ask for (limit)"},
    {"sched_policy", SN_CONF_STRING, "supernode-first", 1, 31, C(sched_policy),
     "placement policy: supernode-first, first-fit or tree-best-fit"},
    {"sched_interval_ms", SN_CONF_INT, "1000", 10, 3600000, C(sched_interval_ms),
     "a scheduling pass (and the heartbeat check) runs at least this often"},
    {"sched_event_delay_ms", SN_CONF_INT, "5", 0, 60000, C(sched_event_delay_ms),
     "after an event (submit, cancel, exit, node change) a pass runs within this delay; "
     "events in between share it"},
    {"health_interval_ms", SN_CONF_INT, "10000", 100, 3600000, C(health_interval_ms),
     "the health engine analyses the agents' telemetry and benchmarks this often"},
    {"health_cordon_below", SN_CONF_INT, "60", 0, 100, C(health_cordon_below),
     "a GPU whose health score falls below this is cordoned by snd:health (0: never)"},
    {"health_bench_interval_s", SN_CONF_INT, "3600", 0, 31622400, C(health_bench_interval_s),
     "a node's agent is asked (heartbeat answer) to run the health benchmarks this often (0: "
     "never)"},
    {"heartbeat_timeout_s", SN_CONF_INT, "30", 1, 86400, C(heartbeat_timeout_s),
     "a node whose agent has sent heartbeats and then stays silent this long is marked down "
     "and its jobs requeued"},
    {"default_walltime_s", SN_CONF_INT, "86400", 1, 366LL * 86400, C(default_walltime_s),
     "walltime estimate for backfill of jobs without time_limit_s"},
    {"gpu_history_samples", SN_CONF_INT, "60", 1, 100000, C(gpu_history_samples),
     "telemetry samples kept per GPU for the dashboard's time series (16 bytes each, only for "
     "GPUs that report)"},
    {"gpu_history_step_s", SN_CONF_INT, "60", 1, 86400, C(gpu_history_step_s),
     "seconds between two kept telemetry samples of a GPU (samples x step = the history's "
     "span)"},
    {"health_stale_s", SN_CONF_INT, "900", 1, 31622400, C(health_stale_s),
     "telemetry older than this is stale evidence; a GPU whose agent keeps reporting its "
     "peers but not it for this long is gpu-missing and marked down"},
    {"health_min_nvlink_share_pct", SN_CONF_INT, "50", 0, 100, C(health_min_nvlink_share_pct),
     "a supernode NVLink domain whose switch trays leave its GPUs less than this % of their "
     "links is nvlink-domain-degraded: it takes single-server jobs only until its trays are "
     "back, one decision (0: never)"},
    {"agent_listen", SN_CONF_STRING, "", 0, 63, C(agent_listen),
     "HOST:PORT of a second listener for the agents' routes only, with its own connection "
     "slots (empty: agents use listen)"},
    {"tls_cert", SN_CONF_STRING, "", 0, 255, C(tls_cert),
     "PEM certificate (chain) file: every listener speaks HTTPS (empty: plain HTTP)"},
    {"tls_key", SN_CONF_STRING, "", 0, 255, C(tls_key), "PEM private key file of tls_cert"},
    {"tls_client_ca", SN_CONF_STRING, "", 0, 255, C(tls_client_ca),
     "PEM CA file: the agent listener (or listen, without agent_listen) requires client "
     "certificates it signed (mutual TLS)"},
    {"allow_plain_http", SN_CONF_BOOL, "false", 0, 1, C(allow_plain_http),
     "allow plain HTTP on a non-loopback address (refused at start otherwise)"},
    {"connection_per_ip_limit", SN_CONF_INT, "256", 0, 65536, C(connection_per_ip_limit),
     "most concurrent connections from one source address per listener (0: no limit)"},
    {"header_timeout_s", SN_CONF_INT, "10", 1, 3600, C(header_timeout_s),
     "a connection not yet authenticated must send complete headers this soon after its "
     "accept or its last answer, else it is closed"},
    {"unauth_connection_pct", SN_CONF_INT, "75", 1, 100, C(unauth_connection_pct),
     "unauthenticated connections may hold this share of connection_limit; past it the oldest "
     "is closed for the newcomer"},
    {"metrics_require_token", SN_CONF_BOOL, "false", 0, 1, C(metrics_require_token),
     "/metrics needs a bearer token with cluster_read (off: Prometheus scrapes without one)"},
    {"token_clock_skew_s", SN_CONF_INT, "60", 0, 3600, C(token_clock_skew_s),
     "a token issued more than this many seconds in the future is refused (401)"},
    {"auth_fail_per_s", SN_CONF_INT, "2", 1, 1000000, C(auth_fail_per_s),
     "failed authentications per second allowed per source address (bucket refill); beyond "
     "get 429"},
    {"auth_fail_burst", SN_CONF_INT, "30", 1, 1000000, C(auth_fail_burst),
     "failed authentications a source address may make at once (bucket size)"},
    {"tenant_max_live_jobs", SN_CONF_INT, "100000", 1, 1LL << 32, C(tenant_max_live_jobs),
     "pending, requeued and running jobs one tenant may have at once; submits beyond get 429"},
    {"tenant_max_jobs", SN_CONF_INT, "1000000", 1, 1LL << 32, C(tenant_max_jobs),
     "jobs one tenant may hold in all (finished ones included); submits beyond get 409, so "
     "one tenant cannot use up the job-id space"},
    {"audit_flood_interval_s", SN_CONF_INT, "10", 1, 3600, C(audit_flood_interval_s),
     "rate-limited refusals of one source are audited as one row per this many seconds, with "
     "their count"},
    {"preempt_min_runtime_s", SN_CONF_INT, "600", 0, 31622400, C(preempt_min_runtime_s),
     "a running preemptible job may be preempted by a higher priority only after this long"},
    {"partition_share_pct", SN_CONF_INT, "10", 0, 100, C(partition_share_pct),
     "when more than this share of the servers go silent at once, snd fences instead of "
     "evicting (100: never)"},
    {"partition_window_s", SN_CONF_INT, "5", 0, 3600, C(partition_window_s),
     "a silent server is declared down only this long after its heartbeat timeout, so that "
     "servers going silent together are counted together"},
    {"max_tenants_per_supernode", SN_CONF_INT, "0", 0, 1024, C(max_tenants_per_supernode),
     "at most this many tenants hold GPUs in one mixed supernode at a time (0: no cap)"},
    {"spare_gpus_per_supernode", SN_CONF_INT, "0", 0, 1 << 20, C(spare_gpus_per_supernode),
     "GPUs of every supernode kept free as spares for in-place replacement"},
    {"replace_in_place", SN_CONF_BOOL, "true", 0, 0, C(replace_in_place),
     "with spares: a job hit by a GPU or server failure swaps the failed GPUs for spares of "
     "its supernode and restarts in place instead of being requeued"},
    {"cpu_oversell_pct", SN_CONF_INT, "100", 1, 10000, C(cpu_oversell_pct),
     "host CPU cores allocatable to jobs, in percent of a server's cores (200: oversold 2:1)"},
    {"memory_oversell_pct", SN_CONF_INT, "100", 1, 10000, C(memory_oversell_pct),
     "host memory allocatable to jobs, in percent of a server's memory"},
    {"pool_borrow", SN_CONF_STRING, "", 0, 255, C(pool_borrow),
     "spec pools that may borrow idle supernodes of others, as borrower:lender pairs "
     "(shared:training,shared:elastic); the lender reclaims them by preemption"},
    {"imex_channel_count", SN_CONF_INT, "0", 0, 2047, C(imex_channel_count),
     "IMEX channels per NVLink domain (the driver's are 0 to 2047; 0 stays the default channel): "
     "a job on several servers of one domain gets one of 1..N and its ranks wait until every "
     "server's agent set it up (0: off)"},
    {"imex_setup_timeout_s", SN_CONF_INT, "120", 1, 86400, C(imex_setup_timeout_s),
     "a job whose IMEX channel is not ready on all its servers this long after its start is "
     "requeued (pending reason domain-setup)"},
    {"preflight_default", SN_CONF_INT, "0", 0, 1, C(preflight_default),
     "1: every job's servers run a preflight on exactly its GPUs before its ranks start, "
     "unless its spec says preflight: off (0: only jobs whose spec says preflight: quick)"},
    {"preflight_require", SN_CONF_INT, "0", 0, 1, C(preflight_require),
     "1: a preflight whose tools are not available on a server requeues the job instead of "
     "letting it start"},
    {"preflight_timeout_s", SN_CONF_INT, "120", 1, 86400, C(preflight_timeout_s),
     "a job whose servers have not all reported its preflight this long after its start is "
     "requeued (pending reason preflight)"},
    {"pending_reason_hold_ms", SN_CONF_INT, "10000", 0, 86400000, C(pending_reason_hold_ms),
     "a job's pending reason change is written as a job event only once it was the reason at "
     "every scheduling pass for this long, so reasons that flip leave one event (0: every "
     "change at once)"},
    {"key_overlap_s", SN_CONF_INT, "86400", 1, 366LL * 86400, C(key_overlap_s),
     "after `sn admin rotate-key`, tokens of the previous key still verify this long; then "
     "they get 401"},
    {"store", SN_CONF_STRING, "", 0, 255, C(store),
     "where the state lives: empty for DIR/state.db (SQLite), sqlite:PATH, or a PostgreSQL "
     "URI postgresql://... (several snd on one database elect a leader; the others stand by)"},
    {"leader_lease_ms", SN_CONF_INT, "3000", 300, 600000, C(leader_lease_ms),
     "PostgreSQL: a leader that stops renewing (paused, cut off) loses leadership after this "
     "long; a standby then takes over"},
    {"advertise_url", SN_CONF_STRING, "", 0, 255, C(advertise_url),
     "PostgreSQL: this snd's URL as clients reach it, given to them in redirects while it "
     "leads (empty: http(s)://listen with the bound port)"},
    {"slurm_mirror", SN_CONF_STRING, "", 0, 15, C(slurm_mirror),
     "scontrol: mirror node and GPU cordons, drains and failures to Slurm (drain/down with "
     "Reason=\"sn: snd ...\") and read Slurm's drains back as cordons by actor slurm (empty: "
     "off; slurmrestd is not implemented)"},
    {"slurm_mirror_interval_ms", SN_CONF_INT, "10000", 100, 3600000, C(slurm_mirror_interval_ms),
     "the Slurm mirror reads and reconciles every node this often"},
    {"slurm_scontrol", SN_CONF_STRING, "scontrol", 1, 255, C(slurm_scontrol),
     "the scontrol the Slurm mirror runs (a path, or a name looked up in PATH)"},
    {"health_round_timeout_s", SN_CONF_INT, "3600", 10, 86400, C(health_round_timeout_s),
     "a pair of a health round (POST /v1/health/rounds) whose agent has not reported this long "
     "after it was asked is failed and its servers released"},
    {"health_breaker_cluster", SN_CONF_INT, "0", 0, 1 << 24, C(health_breaker_cluster),
     "circuit breaker: at most this many GPUs cordoned or failed by snd:health in the cluster "
     "per health_breaker_window_s; past it health automation stops until POST "
     "/v1/health/breaker/reset (0: no limit)"},
    {"health_breaker_supernode", SN_CONF_INT, "0", 0, 1 << 24, C(health_breaker_supernode),
     "circuit breaker: the same limit for one supernode (NVLink domain) (0: no limit)"},
    {"health_breaker_rack", SN_CONF_INT, "0", 0, 1 << 24, C(health_breaker_rack),
     "circuit breaker: the same limit for one rack (0: no limit)"},
    {"health_breaker_window_s", SN_CONF_INT, "3600", 1, 31622400, C(health_breaker_window_s),
     "the circuit breaker counts the actions of this many seconds"},
    {"health_escalate_rack_pct", SN_CONF_INT, "0", 0, 100, C(health_escalate_rack_pct),
     "when this share of a rack's servers is bad, snd:health drains the whole rack as one "
     "decision, and undrains it when all are healthy again (0: never)"},
    {"power_util_pct", SN_CONF_INT, "0", 0, 200, C(power_util_pct),
     "power budgets at placement: a job's expected draw is its GPUs x TDP x this percent; no "
     "placement takes a rack past its feeds' continuous limit (another supernode or a spread "
     "is searched), and a job no placement fits waits with pending reason power-budget (0: no "
     "budgets)"},
    {"power_cap_policy", SN_CONF_STRING, "off", 2, 7, C(power_cap_policy),
     "per-GPU power caps with the budgets on (power_util_pct > 0): fit caps the GPUs of running "
     "jobs on a rack whose worst case (each GPU at TDP) is past its feeds' budget, to its share "
     "(TDP x room / worst, at least power_util_pct of TDP), set by the agents (NVML power "
     "limit) and reported; off sets none"},
    {"offender_window_s", SN_CONF_INT, "604800", 0, 31622400, C(offender_window_s),
     "repeat offenders: a part (GPU UUID) cordoned or failed by snd:health offender_count times "
     "within this many seconds is quarantined: never auto-resumed until a passed acceptance run "
     "or an operator re-qualifies it (0: never)"},
    {"offender_count", SN_CONF_INT, "2", 0, 16, C(offender_count),
     "repeat offenders: the findings within offender_window_s that quarantine a part (0: never)"},
    {"health_auto_resume_s", SN_CONF_INT, "0", 0, 31622400, C(health_auto_resume_s),
     "snd:health resumes a GPU it cordoned or failed once the report finds it healthy (score at "
     "least health_cordon_below, not gone) and it has been out this long; never a quarantined "
     "part or a leak's rack (0: never, an operator resumes)"},
    {"health_half_life_s", SN_CONF_INT, "3600", 1, 31622400, C(health_half_life_s),
     "a finding's penalty on a GPU's health score halves every this many seconds after its last "
     "bad sample (docs/health.md \"Scores and actions\")"},
    {"health_agent_actions", SN_CONF_STRING, "", 0, 31, C(health_agent_actions),
     "recommended actions snd asks the agents to carry out on idle GPUs it holds out: "
     "reset-gpu, reboot or both (reset-gpu,reboot); each audited, and done only where the "
     "agent's --allow-actions allows it too (empty: never)"},
    {"health_agent_action_interval_s", SN_CONF_INT, "600", 1, 31622400,
     C(health_agent_action_interval_s),
     "a GPU (a server for reboot) is asked for a recommended action at most this often"},
    {"preempt_grace_s", SN_CONF_INT, "0", 0, 86400, C(preempt_grace_s),
     "cooperative preemption: a running job that must leave (preempted, requeued) is signalled "
     "and evicted at its next checkpoint report or this many seconds later, whichever comes "
     "first (0: evicted at once)"},
    {"preempt_signal", SN_CONF_STRING, "TERM", 1, 15, C(preempt_signal),
     "the signal the agents send every rank of a preempting job (a name without SIG: TERM, INT, "
     "HUP, USR1, USR2; any other is sent as TERM)"},
    {"expedite_hold_s", SN_CONF_INT, "0", 0, 86400, C(expedite_hold_s),
     "expedited requeue: a job requeued by a GPU or server failure has its GPUs on servers still "
     "up held for it this long and is tried first at each pass (0: off)"},
    {"drain_grace_s", SN_CONF_INT, "0", 0, 86400, C(drain_grace_s),
     "cooperative drains: a running job on a node or GPU being drained (sn drain, snd:health's "
     "rack escalation) is signalled as a preempted one and requeued at its next checkpoint "
     "report or this many seconds later (0: a drain lets running jobs finish)"},
};
const size_t sn_daemon_config_key_count =
    sizeof(sn_daemon_config_keys) / sizeof(sn_daemon_config_keys[0]);

void sn_daemon_config_control(const struct sn_daemon_config *f, struct sn_control_config *out)
{
    *out = (struct sn_control_config){
        .max_jobs = f->max_jobs,
        .tenant_max_live_jobs = f->tenant_max_live_jobs,
        .tenant_max_jobs = f->tenant_max_jobs,
        .heartbeat_timeout_s = f->heartbeat_timeout_s,
        .default_walltime_s = f->default_walltime_s,
        .preempt_min_runtime_s = f->preempt_min_runtime_s,
        .partition_share_pct = f->partition_share_pct,
        .partition_window_s = f->partition_window_s,
        .max_tenants_per_supernode = f->max_tenants_per_supernode,
        .spare_gpus_per_supernode = f->spare_gpus_per_supernode,
        .replace_in_place = f->replace_in_place,
        .enforce_time_limits = true,
        .cpu_oversell_pct = f->cpu_oversell_pct,
        .memory_oversell_pct = f->memory_oversell_pct,
        .breaker_cluster = f->health_breaker_cluster,
        .breaker_supernode = f->health_breaker_supernode,
        .breaker_rack = f->health_breaker_rack,
        .breaker_window_s = f->health_breaker_window_s,
        .escalate_rack_pct = f->health_escalate_rack_pct,
        .power_util_pct = f->power_util_pct,
        .imex_channel_count = f->imex_channel_count,
        .imex_setup_timeout_s = f->imex_setup_timeout_s,
        .preflight_default = f->preflight_default,
        .preflight_require = f->preflight_require,
        .preflight_timeout_s = f->preflight_timeout_s,
        .pending_reason_hold_ms = f->pending_reason_hold_ms,
        .offender_window_s = f->offender_window_s,
        .offender_count = f->offender_count,
        .auto_resume_s = f->health_auto_resume_s,
        .preempt_grace_s = f->preempt_grace_s,
        .expedite_hold_s = f->expedite_hold_s,
        .drain_grace_s = f->drain_grace_s,
    };
    snprintf(out->sched_policy, sizeof(out->sched_policy), "%s", f->sched_policy);
    snprintf(out->pool_borrow, sizeof(out->pool_borrow), "%s", f->pool_borrow);
    snprintf(out->power_cap_policy, sizeof(out->power_cap_policy), "%.7s", f->power_cap_policy);
    snprintf(out->preempt_signal, sizeof(out->preempt_signal), "%s", f->preempt_signal);
}
