/*
 * The sn client commands (sn submit, jobs, job, cancel, nodes, cordon,
 * drain, resume, fail, tenants, token, top): shared option parsing, the
 * server and token lookup, requests to snd over lib/httpc, and the exit
 * statuses scripts can rely on (docs/cmd-client.md):
 *   0 success; 1 the server refused the request (400, 409, 422, 429 ...);
 *   2 bad usage or input (flags, job file); 3 internal error;
 *   4 not found (404); 5 not authenticated or not allowed (401, 403);
 *   6 the server cannot be reached, timed out or failed (5xx) - retryable.
 * Server and token come from, in order: --server / --token (or
 * --token-file), SN_SERVER / SN_TOKEN, then the config file ($SN_CONFIG or
 * ~/.config/supernode/client.conf, lines "server = URL", "token = TEXT",
 * "token_file = PATH"). The default server is http://127.0.0.1:7070.
 * The server may be HOST:PORT, [IPv6]:PORT or an http(s):// URL; TLS
 * options come from --cacert / --cert / --key, SN_CACERT / SN_CERT /
 * SN_KEY, then the config keys ca_file, cert_file, key_file.
 */
#ifndef SN_CMD_CLIENT_H
#define SN_CMD_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include <sn/error.h>
#include <sn/httpc.h>

enum {
    SN_EXIT_REFUSED = 1,
    SN_EXIT_NOT_FOUND = 4,
    SN_EXIT_AUTH = 5,
    SN_EXIT_UNAVAILABLE = 6,
};

#define CLIENT_MAX_OPTS 16
#define CLIENT_MAX_ARGS 16

/* One option of a command: "--name VALUE" (or a bare flag when is_flag). */
struct client_opt {
    const char *name;
    bool is_flag;
    const char *help;
    const char *value; /* filled: the value, or "1" for a flag given */
};

struct client {
    const char *cmd; /* "sn jobs" */
    struct sn_httpc *http; /* the server's client (client_common.c frees it at exit) */
    char token[1024];
    bool json; /* -o json */
    int last_status; /* HTTP status of the last request (0: none came) */
    char last_message[520]; /* its error message ("" for a 2xx) */
    char last_field[64];    /* the error's field, or "" */
    bool wide; /* -o wide: the table with more columns (sn nodes, sn gpus, sn jobs) */
    const char *args[CLIENT_MAX_ARGS];
    int n_args;
};

/* Parses argv (argv[0] the command's name) against the command's options
 * and the common ones (--server, --token, --token-file, -o, --help); fills
 * c and the options. Returns -1 to go on, else an exit status (after
 * printing usage or the error). */
int client_init(struct client *c, const char *cmd, const char *usage, int argc, char **argv,
                struct client_opt *opts, size_t n_opts, int min_args, int max_args);

/* One request; prints the error and returns its exit status unless the
 * status is 2xx, in which case *out gets the parsed body (caller decrefs)
 * and 0 is returned. path is printf-formatted. */
int client_call(struct client *c, const char *method, const char *body, const char *header,
                json_t **out, const char *path_fmt, ...) SN_PRINTF(6, 7);

/* client_call's GET that prints nothing on failure (for optional
 * lookups). */
int client_call_quiet(struct client *c, json_t **out, const char *path_fmt, ...) SN_PRINTF(3, 4);

/* A request that prints nothing on failure and gives the HTTP status in
 * *status (0 when no answer came): for routes a server may not have yet
 * (404 from an older snd). Returns client_call's exit status. */
int client_call_status(struct client *c, const char *method, const char *body, json_t **out,
                       int *status, const char *path_fmt, ...) SN_PRINTF(6, 7);

/* Prints the last failed request's error as client_call does
 * ("sn CMD: STATUS MESSAGE (field 'F')"). */
void client_print_last_error(struct client *c);

/* sn jobs --start (client_verbs.c): the pending jobs of `pending` with their
 * expected start time and its basis from GET /v1/scheduler/starts. */
int client_jobs_start(struct client *c, json_t *pending);

/* GETs every page of a listing route ("/v1/jobs": `items` and a `next`
 * cursor, at most 1,000 per page) until max items or the last page; filter
 * is appended to the query ("&state=running" or ""). *out gets the items
 * (caller decrefs). Returns client_call's exit status. */
int client_get_pages(struct client *c, const char *route, const char *filter, long long max,
                     json_t **out);

/* Prints j as indented JSON on stdout. */
void client_print_json(json_t *j);

/* "3m12s"-style age of a duration in seconds. */
char *client_age(long long s, char *buf, size_t len);

/* A string member or "-". */
const char *client_str(json_t *o, const char *key);

/* The closest of names[0..n) to word by edit distance, when close enough
 * to be a likely typo (at most a third of the word's length, at least 1,
 * at most 3 edits); NULL otherwise. */
const char *client_nearest(const char *word, const char *const *names, size_t n);

/* Checks a comma-separated list of states against valid[0..n_valid);
 * prints "CMD: FLAG 'X': expected a, b or c (did you mean 'b'?)" and returns
 * SN_EXIT_USAGE for the first unknown one, else 0. */
int client_check_states(const char *cmd, const char *flag, const char *value,
                        const char *const *valid, size_t n_valid);

/* True when state is one of the comma-separated list. */
bool client_state_in(const char *state, const char *list);

/* "2026-12-04T06:11:36Z", or "-" for t <= 0. */
char *client_utc(long long t, char *buf, size_t len);

/* Every page of a list route (client_get_pages without a cap). */
int client_fetch_all(struct client *c, const char *route, const char *filter, json_t **out);

/* One entry of an id list: a job id, or task `task` (>= 0) of the array
 * whose first task is job `id` ("320_3"). */
struct client_id {
    long long id;
    long long task; /* -1: the job itself (the whole array for an array's id) */
};

/* Appends the ids of arg ("12", "320-329", "320,322", "320_3", or a
 * comma-separated mix) to out[*n..max); prints the error and returns
 * SN_EXIT_USAGE for anything else or more than max ids (client_arrays.c). */
int client_parse_ids(const char *cmd, const char *arg, struct client_id *out, int *n, int max);

/* Sets array_job_id (the array's first task's job id) on each array task of
 * jobs (job objects in id order); see client_arrays.c for how tasks are
 * recognised without array_id. */
void client_array_assign(json_t *jobs);

/* Every job from id `first` on (GET /v1/jobs, all states), in id order, with
 * array_job_id set by client_array_assign. Caller decrefs *out. */
int client_jobs_from(struct client *c, long long first, json_t **out);

/* One job of arg ("12", or an array task "320_3") into *id; usage error
 * for a list, a range or anything else, 4 for an absent task. */
int client_resolve_one(struct client *c, const char *arg, long long *id);

#define CLIENT_MAX_IDS 10000

/* POSTs /v1/jobs/{id}/ACTION (body may be NULL) for each job of the id
 * lists in c->args (client_parse_ids): an array's id acts on each task
 * not yet ended. Prints "PAST job 12" (or "PAST job 329 (320_9)") per job,
 * the JSON answers with -o json; a 404 "no route" says this snd lacks the
 * route. Returns the exit status of the first failure. */
int client_act_on_ids(struct client *c, const char *action, const char *body, const char *past);

/* After a failed request: when snd answered 404 "no route", prints that
 * this snd lacks ROUTE ("POST /v1/jobs/{id}/hold") and returns 1. */
int client_route_missing(struct client *c, const char *route);

/* The node states of sn nodes: the admin states and `mixed`. */
#define CLIENT_N_NODE_STATES 7
extern const char *const client_node_states[CLIENT_N_NODE_STATES];

/* Every node (GET /v1/nodes) with the state derived from its GPUs (GET
 * /v1/gpus; client_gpus.c): each node gets derived_state, derived_reason,
 * derived_by, derived_since_s and gpu_states ({state: count}). *gpus (when
 * not NULL) gets every GPU in id order. Caller decrefs both. */
int client_fetch_nodes(struct client *c, json_t **nodes, json_t **gpus);

#endif
