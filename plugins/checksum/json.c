#include "json.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *p, *end;
} cursor;

static void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int hex4(cursor *c) {
    if (c->end - c->p < 4) return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char h = *c->p++;
        v <<= 4;
        if (h >= '0' && h <= '9') v |= h - '0';
        else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
        else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
        else return -1;
    }
    return v;
}

static size_t put_utf8(char *out, uint32_t cp) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xC0 | cp >> 6); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12); out[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18); out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

// Parses a string at the cursor (which is on its opening quote). With `out`, writes the
// unescaped bytes there (never more than the escaped length). Returns the unescaped length, or
// -1 when malformed.
static long parse_string(cursor *c, char *out) {
    if (c->p >= c->end || *c->p != '"') return -1;
    c->p++;
    size_t n = 0;
    while (c->p < c->end) {
        char ch = *c->p++;
        if (ch == '"') return (long)n;
        if (ch != '\\') { if (out) out[n] = ch; n++; continue; }
        if (c->p >= c->end) return -1;
        char e = *c->p++;
        char simple = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f'
                    : (e == '"' || e == '\\' || e == '/') ? e : 0;
        if (simple) { if (out) out[n] = simple; n++; continue; }
        if (e != 'u') return -1;
        int cp = hex4(c);
        if (cp < 0) return -1;
        if (cp >= 0xD800 && cp <= 0xDBFF && c->end - c->p >= 6 && c->p[0] == '\\' && c->p[1] == 'u') {
            c->p += 2;
            int lo = hex4(c);
            if (lo < 0xDC00 || lo > 0xDFFF) return -1;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        char buf[4];
        size_t k = put_utf8(out ? out + n : buf, (uint32_t)cp);
        n += k;
    }
    return -1;
}

// Skips any JSON value (string, number, literal, array, object) at the cursor.
static bool skip_value(cursor *c) {
    skip_ws(c);
    if (c->p >= c->end) return false;
    if (*c->p == '"') return parse_string(c, NULL) >= 0;
    if (*c->p == '{' || *c->p == '[') {
        int depth = 0;
        while (c->p < c->end) {
            if (*c->p == '"') { if (parse_string(c, NULL) < 0) return false; continue; }
            if (*c->p == '{' || *c->p == '[') depth++;
            if (*c->p == '}' || *c->p == ']') depth--;
            c->p++;
            if (depth == 0) return true;
        }
        return false;
    }
    while (c->p < c->end && *c->p != ',' && *c->p != '}' && *c->p != ']') c->p++;
    return true;
}

char *json_string_field(const char *json, size_t json_len, const char *key, size_t *out_len) {
    cursor c = {json, json + json_len};
    skip_ws(&c);
    if (c.p >= c.end || *c.p++ != '{') return NULL;
    size_t key_len = strlen(key);
    for (;;) {
        skip_ws(&c);
        if (c.p >= c.end || *c.p == '}') return NULL;
        const char *key_start = c.p + 1;
        if (parse_string(&c, NULL) < 0) return NULL;
        bool match = (size_t)(c.p - 1 - key_start) == key_len && memcmp(key_start, key, key_len) == 0;
        skip_ws(&c);
        if (c.p >= c.end || *c.p++ != ':') return NULL;
        skip_ws(&c);
        if (match) {
            if (c.p >= c.end || *c.p != '"') return NULL;
            cursor probe = c;
            long n = parse_string(&probe, NULL);
            if (n < 0) return NULL;
            char *out = malloc((size_t)n + 1);
            if (!out) return NULL;
            parse_string(&c, out);
            out[n] = '\0';
            *out_len = (size_t)n;
            return out;
        }
        if (!skip_value(&c)) return NULL;
        skip_ws(&c);
        if (c.p < c.end && *c.p == ',') c.p++;
    }
}
