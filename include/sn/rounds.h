/*
 * Inter-node benchmark rounds, the decisions (docs/api.md "Health rounds",
 * docs/agent.md "Pair rounds"): which round is active, which servers it
 * holds, which pair is asked for, which is failed (server down, no result
 * within the timeout), when a server is released and when a round ends.
 * Pure: the clock, the scheduler's view of a server (down, idle), its name
 * and the hold itself come in through struct sn_rounds_env; cmd/snd
 * decodes the routes, answers heartbeats and applies the holds.
 *
 * Invariant: held[s] is set exactly while server s is named by an
 * unfinished pair of the active round (the first round not finished).
 */
#ifndef SN_ROUNDS_H
#define SN_ROUNDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <sn/model.h>

#define SN_ROUNDS_MAX 64        /* rounds kept (finished ones are dropped first) */
#define SN_ROUND_PAIRS_MAX 4096 /* pairs of one round */

enum sn_round_state {
    SN_ROUND_WAITING,
    SN_ROUND_RUNNING,
    SN_ROUND_DONE, /* this and the next ones are finished */
    SN_ROUND_FAILED,
    SN_ROUND_NOT_AVAILABLE,
    SN_ROUND_STATE_COUNT
};
extern const char *const sn_round_state_names[SN_ROUND_STATE_COUNT];

/* The runners a round may ask for (the agent's pair runners). */
#define SN_ROUND_RUNNERS 2
extern const char *const sn_round_runners[SN_ROUND_RUNNERS];

struct sn_round_item {
    uint32_t a, b; /* servers: a runs the pair runner, b is its peer */
    enum sn_round_state state;
    int64_t asked_s, ended_s; /* 0: not yet */
    char detail[256];
};

struct sn_round {
    int64_t id;
    unsigned runner; /* index in sn_round_runners */
    int64_t submit_s, start_s, end_s;
    char actor[80];
    struct sn_round_item *items; /* owned */
    uint32_t n;
};

struct sn_rounds {
    struct sn_round r[SN_ROUNDS_MAX]; /* in submission order */
    uint32_t n;
    int64_t next_id;
    uint32_t n_servers;
    uint8_t *held;    /* by server */
    uint8_t *scratch; /* by server: working flags of one pass */
};

/* What the decisions need from the outside, passed in on each call. */
struct sn_rounds_env {
    void *ctx;
    int64_t now_s;
    int64_t timeout_s; /* health_round_timeout_s */
    bool (*down)(void *ctx, uint32_t s);
    /* Whether server s can take part now; false with why set. */
    bool (*idle)(void *ctx, uint32_t s, char *why, size_t cap);
    void (*name)(void *ctx, uint32_t s, char *buf, size_t cap);
    /* Called only when held[s] changes. */
    void (*hold)(void *ctx, uint32_t s, bool on);
};

/* 0, or -1 out of memory. */
int sn_rounds_init(struct sn_rounds *rs, uint32_t n_servers);
void sn_rounds_free(struct sn_rounds *rs);
bool sn_round_finished(enum sn_round_state s);
/* The index of runner name in sn_round_runners, or SN_ROUND_RUNNERS. */
unsigned sn_round_runner(const char *name);
/* Queues a round of n items (taken over on success, items[i].state
 * WAITING); its id, or 0 when SN_ROUNDS_MAX are kept and none finished
 * (items stay the caller's). */
int64_t sn_rounds_add(struct sn_rounds *rs, unsigned runner, struct sn_round_item *items,
                      uint32_t n, int64_t now_s, const char *actor);
struct sn_round *sn_rounds_find(struct sn_rounds *rs, int64_t id);
/* Moves the active round on: starts it (holds its servers), fails pairs
 * on a down server or past the timeout, asks for pairs whose servers are
 * free, ends it and starts the next. */
void sn_rounds_advance(struct sn_rounds *rs, const struct sn_rounds_env *env);
/* An agent's result for item i of r; false (nothing changed) when the
 * item is not running (a stale report). Advances the rounds. */
bool sn_rounds_result(struct sn_rounds *rs, struct sn_round *r, uint32_t i, enum sn_round_state st,
                      const char *detail, const struct sn_rounds_env *env);
/* The running pair whose first server is s, in the active round (one pair
 * at a time per node); NULL if none. */
const struct sn_round_item *sn_rounds_asked(const struct sn_rounds *rs, uint32_t s,
                                            const struct sn_round **round, uint32_t *item);
/* Whether some pair of a kept round has s run against peer p. */
bool sn_rounds_peer_ok(const struct sn_rounds *rs, uint32_t s, uint32_t p);

/* One pair of a submission ([A, B] or {"servers": [A, B]}, item i) into
 * it, waiting; false with field ("pairs[i].servers[1]") and msg saying
 * what is wrong (not two names, not a server of m, the same server). */
bool sn_round_pair_parse(const struct sn_model *m, json_t *p, size_t i, struct sn_round_item *it,
                         char *field, size_t fcap, char *msg, size_t mcap);
/* A round as GET /v1/health/rounds shows it: id, runner, state (queued,
 * running, finished), actor, submit_s, start_s, end_s, counts by item
 * state, items (item, servers, state, detail, asked_s, ended_s). */
json_t *sn_round_json(const struct sn_model *m, const struct sn_round *r);

#endif
