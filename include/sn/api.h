/*
 * sn/api.h: decoding of HTTP API request bodies, declared as field tables.
 *
 * Every JSON request body of the control-plane API is decoded by one
 * function from a table of its fields (name, type, required, range, where
 * the value goes in the caller's struct). The rules are strict: the body is
 * one JSON object with no duplicate keys; every key must be a known field;
 * each value has the declared type and lies in its range; required fields
 * are present. A failure names the field, so the API can answer
 * {"error": {"code", "message", "field"}}. Pure and bounded: fuzzed by
 * fuzz/fuzz_api_json.c.
 */
#ifndef SN_API_H
#define SN_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>

#define SN_API_FIELD_MAX 64 /* length of a field name, NUL included */

#define SN_API_TYPE_LIST(X)                                                                        \
    X(STRING, "string") /* char[max + 1]; length within [min, max] */                              \
    X(INT, "integer")   /* int64_t within [min, max] */                                            \
    X(BOOL, "boolean")  /* bool */                                                                 \
    X(NAME, "name")     /* char[64]: 1..63 of [a-z0-9_-] (sn_auth_valid_name) */
enum sn_api_type {
#define SN_X(name, text) SN_API_##name,
    SN_API_TYPE_LIST(SN_X)
#undef SN_X
        SN_API_TYPE_COUNT
};

struct sn_api_field {
    const char *name;
    enum sn_api_type type;
    bool required;
    int64_t min, max;
    size_t offset;
};

/* Decodes body (len bytes, not necessarily NUL-terminated) into out by the
 * field table. *present gets bit i set for each field i found (n <= 32).
 * On failure field holds the offending field's name ("" when the body as a
 * whole is wrong) and the code says which class: SN_ERR_SYNTAX malformed
 * JSON, SN_ERR_INVALID not an object / unknown field / wrong type / missing
 * field, SN_ERR_RANGE a value out of range, SN_ERR_LIMIT body too large. */
SN_MUST_CHECK enum sn_err sn_api_decode(const struct sn_api_field *fields, size_t n,
                                        const char *body, size_t len, size_t max_len, void *out,
                                        uint32_t *present, char field[SN_API_FIELD_MAX],
                                        struct sn_error *err);

/* A job submission. */
struct sn_api_job {
    char name[129];
    int64_t gpus;
    char tenant[64];
    char pool[64];
    char priority_class[64];
    char command[4097];
    char data_path[1025];
    char checkpoint_path[1025];
    int64_t time_limit_s; /* the walltime limit (and the scheduler's estimate) */
    /* Runtime limits of each rank (docs/agent.md, "Isolation"); 0: none. */
    int64_t cpus_per_rank;
    int64_t memory_bytes_per_rank;
    int64_t pids_per_rank;
    char after_ok[1024]; /* job ids "3,5-7": start only after each completed */
    int64_t array_task_id; /* an element of a job array (SN_ARRAY_TASK_ID) */
    /* Job shape (docs/scheduler.md, "Job shape in snd"). */
    int64_t group_gpus;        /* tensor-parallel group; divides gpus; absent = 1 */
    bool one_supernode;        /* the whole job in one supernode */
    bool spread_power_domains; /* groups spread over power domains */
    char exclusive[64];        /* "server" or "supernode"; "" = shared */
    int64_t xsn_bytes_per_s;   /* per GPU across supernodes, per direction */
    char model[64];            /* lib/plan model preset for the bandwidth default */
    bool preemptible;          /* overrides the priority class's */
    int64_t cpu_cores_per_gpu;    /* host cores per GPU (within the oversell ratio) */
    int64_t memory_bytes_per_gpu; /* host memory per GPU */
    int64_t checkpoint_write_s;   /* seconds to write one checkpoint (Daly interval) */
    /* Array throttling (`--array 0-99%4`): at most array_max_running tasks
     * of the array run at once; array_id is the job id of its first task
     * (absent on that task itself). */
    int64_t array_id;
    int64_t array_max_running;
    char preflight[8]; /* "quick", "full" or "off" (lib/control/preflight.c); "": the config's default */
};
extern const struct sn_api_field sn_api_job_fields[];
extern const size_t sn_api_job_field_count;

/* True when path is absolute, normalised (no "." or ".." components, no
 * "//", no trailing '/') and equal to prefix or below it. */
bool sn_api_path_within(const char *path, const char *prefix);

#endif /* SN_API_H */
