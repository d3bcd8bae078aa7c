/*
 * Reader of lldpd's `lldpctl -f json` and `-f json0` (lldpd
 * src/client/jansson_writer.c and json_writer.c): one host's neighbours.
 *
 *   json:  {"lldp": {"interface": {"eth0": {...}}}}, or with several
 *          interfaces "interface": [{"eth0": {...}}, {"eth1": {...}}];
 *          "chassis": {"<sysname>": {"id": {...}, ...}} (no name: the
 *          chassis fields directly); "port": {"id": {"type", "value"},
 *          "descr": "..."}.
 *   json0: every value an array: {"lldp": [{"interface": [{"name": "eth0",
 *          "chassis": [{"name": [{"value": ...}]}], "port": [{"id":
 *          [{"type": ..., "value": ...}], "descr": [{"value": ...}]}]}]}]}.
 * Lines before the first one that starts with '{' (a pasted shell prompt
 * and command) are passed over; line numbers still count them.
 * A text value is read from a string, an object's "value", or the first
 * element of an array of those, so both forms go through one walker. JSON
 * syntax errors name source:line:column (jansson's position); a neighbour
 * without a port id (or with an empty one), or a field too long for its buffer, names the path.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include <sn/fabric.h>

/* The text of a string, {"value": s} or [x, ...] (first element); NULL. */
static const char *text_of(const json_t *v)
{
    for (int depth = 0; v && depth < 4; depth++) {
        if (json_is_string(v))
            return json_string_value(v);
        if (json_is_array(v))
            v = json_array_get(v, 0);
        else if (json_is_object(v))
            v = json_object_get(v, "value");
        else
            return NULL;
    }
    return NULL;
}

/* An object, or the first element of an array holding one (json0). */
static const json_t *object_of(const json_t *v)
{
    if (json_is_array(v))
        v = json_array_get(v, 0);
    return json_is_object(v) ? v : NULL;
}

static enum sn_err copy(char *dst, size_t cap, const char *src, const char *source,
                        const char *ifname, const char *field, struct sn_error *err)
{
    size_t n = src ? strlen(src) : 0;
    if (n >= cap)
        return sn_error_set(err, SN_ERR_SYNTAX, "%s: interface '%s': %s longer than %zu bytes",
                            source, ifname, field, cap - 1);
    memcpy(dst, src ? src : "", n);
    dst[n] = '\0';
    return SN_OK;
}

struct acc {
    struct sn_lldp *l;
    size_t cap;
    const char *source;
};

/* The chassis name: json keys the chassis object by it; json0 has "name". */
static const char *chassis_name(const json_t *chassis)
{
    const json_t *c = object_of(chassis);
    if (!c)
        return NULL;
    const char *name = text_of(json_object_get(c, "name"));
    if (name)
        return name;
    if (json_object_size(c) == 1) {
        void *it = json_object_iter((json_t *)c);
        const char *key = json_object_iter_key(it);
        if (strcmp(key, "id") != 0 && json_is_object(json_object_iter_value(it)))
            return key;
    }
    return NULL;
}

static enum sn_err add(struct acc *a, const char *ifname, const json_t *body, struct sn_error *err)
{
    if (!json_is_object(body))
        return sn_error_set(err, SN_ERR_SYNTAX, "%s: interface '%s': expected an object", a->source,
                            ifname);
    const json_t *port = object_of(json_object_get(body, "port"));
    const json_t *id = port ? json_object_get(port, "id") : NULL;
    const char *pid = text_of(id);
    if (!pid || !pid[0])
        return sn_error_set(err, SN_ERR_SYNTAX,
                            "%s: interface '%s': neighbour without lldp.interface.port.id",
                            a->source, ifname);
    if (a->l->n >= a->cap) {
        if (a->l->n >= SN_FABRIC_MAX_RECORDS)
            return sn_error_set(err, SN_ERR_LIMIT, "%s: more than %u neighbours", a->source,
                                SN_FABRIC_MAX_RECORDS);
        size_t ncap = a->cap ? a->cap * 2 : 16;
        void *nv = realloc(a->l->v, ncap * sizeof(*a->l->v));
        if (!nv)
            return sn_error_set(err, SN_ERR_NOMEM, "out of memory reading '%s'", a->source);
        a->l->v = nv;
        a->cap = ncap;
    }
    struct sn_lldp_neighbor *nb = &a->l->v[a->l->n];
    memset(nb, 0, sizeof(*nb));
    const json_t *idobj = object_of(id);
    const char *type = idobj ? text_of(json_object_get(idobj, "type")) : NULL;
    enum sn_err rc =
        copy(nb->local_if, sizeof(nb->local_if), ifname, a->source, ifname, "interface name", err);
    if (rc == SN_OK)
        rc = copy(nb->sysname, sizeof(nb->sysname), chassis_name(json_object_get(body, "chassis")),
                  a->source, ifname, "chassis name", err);
    if (rc == SN_OK)
        rc = copy(nb->port_id, sizeof(nb->port_id), pid, a->source, ifname, "port id", err);
    if (rc == SN_OK)
        rc = copy(nb->port_id_type, sizeof(nb->port_id_type), type, a->source, ifname,
                  "port id type", err);
    if (rc == SN_OK)
        rc = copy(nb->port_descr, sizeof(nb->port_descr), text_of(json_object_get(port, "descr")),
                  a->source, ifname, "port description", err);
    if (rc == SN_OK)
        a->l->n++;
    return rc;
}

/* One element of "interface": {"eth0": {...}} (json) or {"name": ...} (json0). */
static enum sn_err interface_entry(struct acc *a, const json_t *e, struct sn_error *err)
{
    if (!json_is_object(e))
        return sn_error_set(err, SN_ERR_SYNTAX, "%s: lldp.interface: expected objects", a->source);
    const char *name = text_of(json_object_get(e, "name"));
    if (name && json_object_get(e, "port"))
        return add(a, name, e, err);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)e, key, v)
    {
        enum sn_err rc = add(a, key, v, err);
        if (rc != SN_OK)
            return rc;
    }
    return SN_OK;
}

static enum sn_err walk(struct acc *a, const json_t *root, struct sn_error *err)
{
    const json_t *lldp = json_is_object(root) ? json_object_get(root, "lldp") : NULL;
    if (!lldp)
        return sn_error_set(err, SN_ERR_SYNTAX,
                            "%s: expected an object with \"lldp\" (lldpctl -f json)", a->source);
    if (json_is_array(lldp)) /* json0 */
        lldp = json_array_size(lldp) ? json_array_get(lldp, 0) : NULL;
    if (!lldp)
        return SN_OK;
    if (!json_is_object(lldp))
        return sn_error_set(err, SN_ERR_SYNTAX, "%s: \"lldp\" is neither an object nor an array",
                            a->source);
    const json_t *ifs = json_object_get(lldp, "interface");
    if (!ifs)
        return SN_OK; /* no neighbours */
    if (json_is_object(ifs))
        return interface_entry(a, ifs, err);
    if (!json_is_array(ifs))
        return sn_error_set(err, SN_ERR_SYNTAX,
                            "%s: lldp.interface is neither an object nor an array", a->source);
    size_t i;
    json_t *e;
    json_array_foreach(ifs, i, e)
    {
        enum sn_err rc = interface_entry(a, e, err);
        if (rc != SN_OK)
            return rc;
    }
    return SN_OK;
}

enum sn_err sn_lldp_parse(const char *text, size_t len, const char *source, struct sn_lldp *out,
                          struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    source = source ? source : "<input>";
    /* Skip whole lines until one starts with '{'. */
    size_t off = 0;
    int skipped = 0;
    while (off < len && text[off] != '{') {
        const char *nl = memchr(text + off, '\n', len - off);
        if (!nl)
            break;
        off = (size_t)(nl - text) + 1;
        skipped++;
    }
    if (off >= len || text[off] != '{') {
        off = 0;
        skipped = 0;
    }
    json_error_t je;
    json_t *root = json_loadb(text + off, len - off, JSON_ALLOW_NUL, &je);
    if (!root) {
        int line = (je.line > 0 ? je.line : 1) + skipped, column = je.column > 0 ? je.column : 1;
        return sn_error_set_at(err, SN_ERR_SYNTAX, (unsigned)line, (unsigned)column, "%s:%d:%d: %s",
                               source, line, column, je.text);
    }
    struct acc a = {.l = out, .source = source};
    enum sn_err rc = walk(&a, root, err);
    json_decref(root);
    if (rc != SN_OK)
        sn_lldp_release(out);
    return rc;
}

void sn_lldp_release(struct sn_lldp *l)
{
    if (!l)
        return;
    free(l->v);
    memset(l, 0, sizeof(*l));
}
