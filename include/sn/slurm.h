/*
 * sn/slurm.h: what Supernode needs to talk to a running Slurm (docs/slurm.md):
 * a reader of `scontrol show node` output (node name, state flags and
 * reason), the drain reasons Supernode writes and recognises, the decision
 * of `sn-agent health-check` (drain, resume or leave a node, with the
 * hysteresis of its small state file), and the decision of snd's Slurm
 * mirror (what snd's admin states ask of Slurm, and what Slurm's states ask
 * of snd).
 *
 * Ownership of Slurm drains is decided by the reason text alone, which
 * Slurm keeps across restarts:
 *  - "sn: <detector> <entity>: <evidence>" is a drain by sn-agent
 *    health-check (SN_SLURM_REASON_HC);
 *  - "sn: snd <state> <part>: <reason>" is a drain by snd's mirror
 *    (SN_SLURM_REASON_SND);
 *  - anything else is an administrator's (or another tool's): Supernode
 *    never resumes it.
 * The health-check resumes only a node whose reason is its own and whose
 * state file says it drained it; the mirror resumes only its own reasons.
 *
 * Purity: nothing here runs a program, reads a file or the clock; the
 * callers (cmd/sn-agent/health_check.c, cmd/snd/slurm_mirror.c) run
 * scontrol and pass its output in.
 */
#ifndef SN_SLURM_H
#define SN_SLURM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>

#define SN_SLURM_NODES_MAX 65536u  /* nodes read from one scontrol output */
#define SN_SLURM_NAME_MAX 64u      /* bytes of a node name, with the NUL */
#define SN_SLURM_STATE_MAX 96u     /* "IDLE+DRAIN+NOT_RESPONDING" */
#define SN_SLURM_REASON_MAX 256u   /* bytes of a reason we keep and write */
#define SN_SLURM_REASON_HC "sn: "  /* prefix of sn-agent health-check drains */
#define SN_SLURM_REASON_SND "sn: snd " /* prefix of snd mirror drains */

/* One node of `scontrol show node` (22.05 and later; also the one-line
 * form of `scontrol -o show node`). */
struct sn_slurm_node {
    char name[SN_SLURM_NAME_MAX];
    char state[SN_SLURM_STATE_MAX]; /* as printed: "IDLE+DRAIN" */
    char reason[SN_SLURM_REASON_MAX]; /* without the " [user@time]" suffix; "" none */
    bool drain;     /* DRAIN flag: draining or drained */
    bool down;      /* base state DOWN (or FAIL flag) */
    bool responding; /* no NOT_RESPONDING flag ('*' suffix in sinfo) */
    uint32_t line;  /* of its NodeName= in the input */
};

/* Reads `scontrol show node` text into *out (malloc'd array of *n; free()
 * it). Records start at "NodeName=" at the start of a line; State= and
 * Reason= are read from the record's lines (Reason runs to the end of its
 * line, less Slurm's " [user@time]" suffix). An input with no record (an
 * empty cluster, "No nodes in the system") gives *n = 0. A record without a
 * State= is SN_ERR_SYNTAX naming source:line:col. SN_ERR_LIMIT past
 * SN_SLURM_NODES_MAX records. Names and reasons longer than the caps are
 * cut (never an error). */
SN_MUST_CHECK enum sn_err sn_slurm_nodes_parse(const char *text, size_t len, const char *source,
                                               struct sn_slurm_node **out, uint32_t *n,
                                               struct sn_error *err);

/* The node called name in nodes[0..n), or NULL. */
const struct sn_slurm_node *sn_slurm_node_find(const struct sn_slurm_node *nodes, uint32_t n,
                                               const char *name);

/* Writes "<prefix><text>" into buf (cap bytes, cap >= 16), cut to
 * SN_SLURM_REASON_MAX - 1 bytes and to cap, with control characters and
 * quotes made spaces, so that Slurm keeps it on one line of scontrol's
 * output. Returns buf. */
char *sn_slurm_reason(char *buf, size_t cap, const char *prefix, const char *text);

/* Whose drain a reason is. */
enum sn_slurm_owner { SN_SLURM_OWNER_ADMIN, SN_SLURM_OWNER_HC, SN_SLURM_OWNER_SND };
enum sn_slurm_owner sn_slurm_reason_owner(const char *reason);

/* ---- sn-agent health-check ------------------------------------------------- */

/* The health-check's memory of one node between runs (its state file). */
struct sn_slurm_hc_state {
    bool drained;       /* this program drained the node and has not resumed it */
    uint32_t clean;     /* clean checks in a row since the finding cleared */
    int64_t since_s;    /* when it drained it (Unix seconds), 0 */
    char reason[SN_SLURM_REASON_MAX]; /* the reason it wrote */
};

enum sn_slurm_hc_action {
    SN_SLURM_HC_NONE,   /* leave the node as it is */
    SN_SLURM_HC_DRAIN,  /* scontrol update State=DRAIN Reason=want_reason */
    SN_SLURM_HC_RESUME, /* scontrol update State=RESUME */
};

struct sn_slurm_hc_check {
    /* The drain reason of the worst finding whose action is drain or
     * worse ("sn: slow-gpu sn00-t01-gpu3: ..."), or NULL when none. */
    const char *want_reason;
    /* Every GPU and the server score at or above readmit_at (the score's
     * hysteresis: leave only well above the entry threshold). */
    bool scores_ok;
    uint32_t resume_after; /* clean checks in a row needed to resume, >= 1 */
    int64_t now_s;
};

/* Decides what to do with node (its Slurm state; NULL when Slurm does not
 * know it: nothing is done) and updates *st:
 *  - a finding: drain, unless an administrator's drain is in place (left
 *    alone, reason untouched) or our drain with the same reason is;
 *  - no finding: if the node carries our drain and st says we made it,
 *    count a clean check; resume after resume_after in a row with
 *    scores_ok (a check with low scores but no finding counts 0);
 *  - a node st says we drained but whose reason is no longer ours (an
 *    administrator resumed or re-drained it): forget it.
 * Never resumes a reason that is not ours. Pure. */
enum sn_slurm_hc_action sn_slurm_hc_decide(const struct sn_slurm_node *node,
                                           const struct sn_slurm_hc_check *c,
                                           struct sn_slurm_hc_state *st);

/* The state file: "sn-slurm-hc 1" then "drained 0|1", "clean N", "since S",
 * "reason TEXT" lines. format writes into buf (cap bytes) and returns the
 * length (>= cap when cut). parse accepts what format writes; a missing or
 * empty text is the empty state; anything else is SN_ERR_SYNTAX naming
 * source:line. */
size_t sn_slurm_hc_state_format(const struct sn_slurm_hc_state *st, char *buf, size_t cap);
SN_MUST_CHECK enum sn_err sn_slurm_hc_state_parse(const char *text, size_t len, const char *source,
                                                  struct sn_slurm_hc_state *st,
                                                  struct sn_error *err);

/* ---- snd's mirror ---------------------------------------------------------- */

/* What snd holds for one server, reduced to what Slurm can express. */
struct sn_slurm_mirror_in {
    const struct sn_slurm_node *slurm; /* NULL: Slurm does not know the node */
    /* snd's wish: "" when the server and all its GPUs are up or only held by
     * Slurm; else the drain reason ("sn: snd cordoned node: ...") */
    const char *want_reason;
    bool want_down;   /* the server itself is down (failed) in snd */
    bool snd_by_slurm; /* snd's server state is a cordon made from Slurm */
};

enum sn_slurm_mirror_action {
    SN_SLURM_MIRROR_NONE,
    SN_SLURM_MIRROR_DRAIN,       /* scontrol: State=DRAIN Reason=want_reason */
    SN_SLURM_MIRROR_DOWN,        /* scontrol: State=DOWN Reason=want_reason */
    SN_SLURM_MIRROR_RESUME,      /* scontrol: State=RESUME (our drain only) */
    SN_SLURM_MIRROR_SND_CORDON,  /* snd: cordon the server, actor slurm, Slurm's reason */
    SN_SLURM_MIRROR_SND_RESUME,  /* snd: lift the cordon made from Slurm */
};

/* One step of the reconciliation for one server. Slurm's own drains (admin
 * or health-check) are read back into snd as a cordon; snd's states are
 * written to Slurm with the mirror prefix; each side lifts only what it
 * made. Pure. */
enum sn_slurm_mirror_action sn_slurm_mirror_decide(const struct sn_slurm_mirror_in *in);

#endif /* SN_SLURM_H */
