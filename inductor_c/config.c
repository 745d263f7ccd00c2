/* config.c — the settings table of ic_config.h: parsing, the Python-level values, the
 * snapshot a compilation takes and the cache-key text. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ic_internal.h"

enum { T_BOOL, T_INT, T_STR };

static const struct row {
    const char *name, *type, *dflt, *choices, *doc;
    int t, codegen;
} rows[IC_CFG_COUNT] = {
#define IC_CFG_ROW(name, type, dflt, cg, choices, doc) {#name, #type, dflt, choices, doc, T_##type, cg},
    IC_CONFIG_TABLE(IC_CFG_ROW)
#undef IC_CFG_ROW
};

_Static_assert(sizeof rows / sizeof rows[0] == IC_CFG_COUNT, "one row per setting");

static ic_config_entry entries[IC_CFG_COUNT];
static char envnames[IC_CFG_COUNT][48];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static struct {
    int set;
    char val[IC_CFG_STR_MAX];
} over[IC_CFG_COUNT];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void init(void) {
    for (int i = 0; i < IC_CFG_COUNT; i++) {
        int n = snprintf(envnames[i], sizeof envnames[i], "TORCHC_");
        for (const char *p = rows[i].name; *p && n < (int)sizeof envnames[i] - 1; p++)
            envnames[i][n++] = (char)toupper((unsigned char)*p);
        envnames[i][n] = 0;
        entries[i] = (ic_config_entry){rows[i].name, rows[i].type, rows[i].dflt, rows[i].choices, rows[i].doc,
                                       envnames[i], rows[i].codegen};
    }
}

IC_API const ic_config_entry *ic_config_entry_at(int id) {
    if (id < 0 || id >= IC_CFG_COUNT) return NULL;
    pthread_once(&once, init);
    return &entries[id];
}

IC_API int ic_config_find(const char *name) {
    for (int i = 0; name && i < IC_CFG_COUNT; i++)
        if (!strcmp(rows[i].name, name)) return i;
    return -1;
}

/* text -> value of row r: 0 ok (*iv or sv set), -1 with a message */
static int parse(int r, const char *text, long long *iv, char sv[IC_CFG_STR_MAX], char *err, size_t n) {
    const struct row *R = &rows[r];
    if (R->t == T_BOOL) {
        static const char *on[] = {"1", "true", "on", "yes"}, *off[] = {"0", "false", "off", "no"};
        for (int i = 0; i < 4; i++) {
            if (!strcasecmp(text, on[i])) return *iv = 1, 0;
            if (!strcasecmp(text, off[i])) return *iv = 0, 0;
        }
        if (err) snprintf(err, n, "torchc.config.%s must be a bool (0/1, false/true), got '%.40s'", R->name, text);
        return -1;
    }
    if (R->t == T_INT) {
        char *end;
        long long lo = 0, hi = 65536; /* choices "lo..hi": the row's range */
        const char *dots = strstr(R->choices, "..");
        if (dots) {
            lo = strtoll(R->choices, NULL, 10);
            hi = strtoll(dots + 2, NULL, 10);
        }
        errno = 0;
        long long v = strtoll(text, &end, 10);
        if (!*text || *end || errno || v < lo || v > hi) {
            if (err) snprintf(err, n, "torchc.config.%s must be an int in %lld..%lld, got '%.40s'", R->name, lo, hi, text);
            return -1;
        }
        return *iv = v, 0;
    }
    size_t len = strlen(text);
    if (len >= IC_CFG_STR_MAX) {
        if (err) snprintf(err, n, "torchc.config.%s: a value of at most %d bytes", R->name, IC_CFG_STR_MAX - 1);
        return -1;
    }
    if (R->choices[0] || strchr(R->choices, '|')) { /* "" allowed only where the choices list it */
        const char *c = R->choices;
        bool ok = false;
        while (!ok) {
            const char *e = strchr(c, '|');
            size_t l = e ? (size_t)(e - c) : strlen(c);
            ok = l == len && !strncmp(c, text, l);
            if (!e) break;
            c = e + 1;
        }
        if (!ok) {
            if (err) snprintf(err, n, "torchc.config.%s must be one of '%s', got '%.40s'", R->name, R->choices, text);
            return -1;
        }
    }
    memcpy(sv, text, len + 1);
    return 0;
}

/* A STR value that parses may still mean nothing to the code reading it: debug's comma list
 * and cache_max_mb's number (those readers ignore what they do not know). */
static int check_meaning(int r, const char *text, char *err, size_t n) {
    if (r == IC_CFG_debug) {
        static const char *known[] = {"graph", "loops", "llvm", "ptx", "time", "dedupe", "all"};
        for (const char *s = text; *s;) {
            const char *e = strchr(s, ',');
            size_t l = e ? (size_t)(e - s) : strlen(s);
            bool ok = l == 0;
            for (int i = 0; i < 7 && !ok; i++)
                ok = strlen(known[i]) == l && !strncmp(known[i], s, l);
            if (!ok) {
                if (err) snprintf(err, n, "torchc.config.debug is a comma list of graph, loops, llvm, ptx, time, dedupe, all; got '%.*s'",
                                  (int)(l > 40 ? 40 : l), s);
                return -1;
            }
            s = e ? e + 1 : s + l;
        }
    }
    if (r == IC_CFG_cache_max_mb && *text) {
        char *end = NULL;
        double mb = strtod(text, &end);
        if (end == text || *end || !(mb > 0)) {
            if (err) snprintf(err, n, "torchc.config.cache_max_mb must be a positive number of MiB (or inf), got '%.40s'", text);
            return -1;
        }
    }
    return 0;
}

IC_API int ic_config_check(int id, const char *text, char *err, size_t n) {
    if (id < 0 || id >= IC_CFG_COUNT || text == NULL) {
        if (err) snprintf(err, n, "no such setting");
        return -1;
    }
    long long iv;
    char sv[IC_CFG_STR_MAX];
    if (parse(id, text, &iv, sv, err, n) < 0) return -1;
    return rows[id].t == T_STR ? check_meaning(id, text, err, n) : 0;
}

IC_API int ic_config_set(int id, const char *text, char *err, size_t n) {
    if (id < 0 || id >= IC_CFG_COUNT) {
        if (err) snprintf(err, n, "no such setting");
        return -1;
    }
    if (text) {
        long long iv;
        char sv[IC_CFG_STR_MAX];
        if (parse(id, text, &iv, sv, err, n) < 0) return -1;
    }
    pthread_mutex_lock(&mu);
    over[id].set = text != NULL;
    if (text) snprintf(over[id].val, sizeof over[id].val, "%s", text);
    pthread_mutex_unlock(&mu);
    return 0;
}

/* the value of row r in effect: *iv / sv; returns the source (0 default, 1 env, 2 set) */
static int effective(int r, long long *iv, char sv[IC_CFG_STR_MAX]) {
    pthread_once(&once, init);
    char buf[IC_CFG_STR_MAX];
    int src = 0;
    pthread_mutex_lock(&mu);
    if (over[r].set) {
        memcpy(buf, over[r].val, sizeof buf);
        src = 2;
    }
    pthread_mutex_unlock(&mu);
    if (src == 2 && parse(r, buf, iv, sv, NULL, 0) == 0) return 2;
    const char *e = getenv(envnames[r]);
    if (e && *e && parse(r, e, iv, sv, NULL, 0) == 0) return 1;
    if (e && !*e && rows[r].t == T_STR && parse(r, e, iv, sv, NULL, 0) == 0) return 1;
    if (parse(r, rows[r].dflt, iv, sv, NULL, 0) < 0) {
        *iv = 0;
        sv[0] = 0;
    }
    return 0;
}

IC_API int ic_config_value(int id, char *out, size_t n) {
    if (id < 0 || id >= IC_CFG_COUNT) return -1;
    long long iv = 0;
    char sv[IC_CFG_STR_MAX] = "";
    int src = effective(id, &iv, sv);
    if (rows[id].t == T_STR) snprintf(out, n, "%s", sv);
    else snprintf(out, n, "%lld", iv);
    return src;
}

IC_API long long ic_config_int(int id) {
    long long iv = 0;
    char sv[IC_CFG_STR_MAX];
    if (id >= 0 && id < IC_CFG_COUNT) effective(id, &iv, sv);
    return iv;
}

IC_API void ic_config_str(int id, char out[IC_CFG_STR_MAX]) {
    long long iv;
    out[0] = 0;
    if (id >= 0 && id < IC_CFG_COUNT) effective(id, &iv, out);
}

IC_API void ic_config_read(ic_config *c) {
    memset(c, 0, sizeof *c);
#define IC_CFG_READ_BOOL(name) c->name = (int)ic_config_int(IC_CFG_##name);
#define IC_CFG_READ_INT(name) c->name = ic_config_int(IC_CFG_##name);
#define IC_CFG_READ_STR(name) ic_config_str(IC_CFG_##name, c->name);
#define IC_CFG_READ(name, type, dflt, cg, choices, doc) IC_CFG_READ_##type(name)
    IC_CONFIG_TABLE(IC_CFG_READ)
#undef IC_CFG_READ
}

IC_API char *ic_config_key(const ic_config *c) {
    ic_str s = {0};
    ic_str_printf(&s, "%s", "");
#define IC_CFG_KEY_BOOL(name) ic_str_printf(&s, "|%s=%d", #name, c->name);
#define IC_CFG_KEY_INT(name) ic_str_printf(&s, "|%s=%lld", #name, c->name);
#define IC_CFG_KEY_STR(name) ic_str_printf(&s, "|%s=%s", #name, c->name);
#define IC_CFG_KEY(name, type, dflt, cg, choices, doc) \
    if (cg) IC_CFG_KEY_##type(name)
    IC_CONFIG_TABLE(IC_CFG_KEY)
#undef IC_CFG_KEY
    if (s.oom) {
        free(s.s);
        return NULL;
    }
    return s.s;
}

IC_API char *ic_config_changed(void) {
    ic_str s = {0};
    ic_str_printf(&s, "%s", "");
    for (int i = 0; i < IC_CFG_COUNT; i++) {
        char v[IC_CFG_STR_MAX];
        int src = ic_config_value(i, v, sizeof v);
        if (src > 0) ic_str_printf(&s, "%s=%s (%s)\n", rows[i].name, v, src == 2 ? "set" : envnames[i]);
    }
    if (s.oom) {
        free(s.s);
        return NULL;
    }
    return s.s;
}
