/* phasegate runner — the strict JSON position scanner (see json_pos.h).
 *
 * A recursive-descent walk over the raw bytes, bounded by a nesting cap so the
 * recursion is too. It validates what cJSON would accept loosely or not at all
 * (RFC 8259 numbers, escapes, UTF-8, surrogate pairs, trailing commas, trailing
 * garbage) so that text this scanner accepts, cJSON parses to the same tree.
 */
#include "opdir/json_pos.h"

#include <locale.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "phasegate/error.h"

#define DEFAULT_MAX_DEPTH 64
#define HARD_MAX_DEPTH 1000 /* recursion bound whatever the caller asks for */
#define DEFAULT_MAX_NODES (1 << 20)
#define MAX_NUMBER_LEN 63   /* cJSON copies numbers into a 64-byte buffer */

struct scan {
  const char *s;
  size_t n, i;
  int line;
  size_t line_start;
  int max_depth, max_nodes;
  struct pg_json_pos *p;
  struct pg_json_fail *fail;
};

void pg_json_pos_init(struct pg_json_pos *p) { memset(p, 0, sizeof *p); }

void pg_json_pos_reset(struct pg_json_pos *p) {
  if (!p) return;
  free(p->nodes);
  free(p->keys);
  memset(p, 0, sizeof *p);
}

void pg_json_linecol(const char *data, size_t size, size_t offset, int *line, int *col) {
  int l = 1;
  size_t start = 0;
  if (offset > size) offset = size;
  for (size_t i = 0; i < offset; i++)
    if (data[i] == '\n') {
      l++;
      start = i + 1;
    }
  *line = l;
  *col = (int)(offset - start) + 1;
}

/* Describes the byte at `off` for messages: 'x', byte 0xNN, or end of file, plus a
 * hint for the usual non-JSON habits. */
static void describe(const struct scan *sc, size_t off, char *buf, size_t size) {
  if (off >= sc->n) {
    snprintf(buf, size, "end of file");
    return;
  }
  unsigned char c = (unsigned char)sc->s[off];
  const char *hint = "";
  if (c == '/') hint = " (comments are not allowed in JSON)";
  else if (c == '\'') hint = " (strings need double quotes)";
  if (c >= 0x20 && c < 0x7f)
    snprintf(buf, size, "'%c'%s", c, hint);
  else
    snprintf(buf, size, "byte 0x%02X", c);
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static int fail_at(struct scan *sc, int rc, size_t off, const char *fmt, ...) {
  struct pg_json_fail *f = sc->fail;
  if (!f) return rc;
  f->offset = off;
  if (off >= sc->line_start) {
    f->line = sc->line;
    f->col = (int)(off - sc->line_start) + 1;
  } else {
    pg_json_linecol(sc->s, sc->n, off, &f->line, &f->col);
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->message, sizeof f->message, fmt, ap);
  va_end(ap);
  return rc;
}

static void skip_ws(struct scan *sc) {
  while (sc->i < sc->n) {
    char c = sc->s[sc->i];
    if (c == '\n') {
      sc->line++;
      sc->line_start = sc->i + 1;
    } else if (c != ' ' && c != '\t' && c != '\r') {
      return;
    }
    sc->i++;
  }
}

static int peek(const struct scan *sc) {
  return sc->i < sc->n ? (unsigned char)sc->s[sc->i] : -1;
}

static int new_node(struct scan *sc, enum pg_json_type type, int parent, int *out) {
  struct pg_json_pos *p = sc->p;
  if (p->n >= sc->max_nodes) {
    sc->fail->is_limit = 1;
    return fail_at(sc, PG_ELIMIT, sc->i, "more than %d JSON values", sc->max_nodes);
  }
  if (p->n == p->cap) {
    int cap = p->cap ? p->cap * 2 : 64;
    if (cap > sc->max_nodes) cap = sc->max_nodes;
    struct pg_json_node *nodes = realloc(p->nodes, (size_t)cap * sizeof *nodes);
    if (!nodes) return fail_at(sc, PG_ENOMEM, sc->i, "out of memory");
    p->nodes = nodes;
    p->cap = cap;
  }
  struct pg_json_node *nd = &p->nodes[p->n];
  memset(nd, 0, sizeof *nd);
  nd->type = type;
  nd->parent = parent;
  nd->first_child = nd->next_sibling = nd->dup_of = -1;
  nd->line = sc->line;
  nd->col = (int)(sc->i - sc->line_start) + 1;
  nd->off = (unsigned)sc->i;
  *out = p->n++;
  return PG_OK;
}

static int key_put(struct scan *sc, const char *bytes, size_t len) {
  struct pg_json_pos *p = sc->p;
  if (p->keys_len + len > p->keys_cap) {
    size_t cap = p->keys_cap ? p->keys_cap : 256;
    while (cap < p->keys_len + len) cap *= 2;
    char *k = realloc(p->keys, cap);
    if (!k) return fail_at(sc, PG_ENOMEM, sc->i, "out of memory");
    p->keys = k;
    p->keys_cap = cap;
  }
  memcpy(p->keys + p->keys_len, bytes, len);
  p->keys_len += len;
  return PG_OK;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Reads 4 hex digits after "\u" at s[i]; returns the code unit or -1. */
static long read_hex4(const struct scan *sc, size_t i) {
  if (i + 4 > sc->n) return -1;
  long v = 0;
  for (int k = 0; k < 4; k++) {
    int h = hexval((unsigned char)sc->s[i + (size_t)k]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

/* Length of a valid UTF-8 sequence starting at s[i] (lead byte >= 0x80), or 0. */
static size_t utf8_len(const struct scan *sc, size_t i) {
  const unsigned char *u = (const unsigned char *)sc->s;
  unsigned char c = u[i];
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) need = 1;
  else if (c == 0xE0) need = 2, lo = 0xA0;
  else if (c == 0xED) need = 2, hi = 0x9F;
  else if (c >= 0xE1 && c <= 0xEF) need = 2;
  else if (c == 0xF0) need = 3, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) need = 3;
  else if (c == 0xF4) need = 3, hi = 0x8F;
  else return 0;
  if (i + need >= sc->n) return 0;
  for (size_t k = 1; k <= need; k++) {
    unsigned char b = u[i + k];
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return 0;
  }
  return need + 1;
}

static size_t utf8_encode(unsigned long cp, char out[4]) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Scans a string at s[i] == '"' and appends its decoded bytes and a NUL to the
 * arena (keys and string values alike); *off receives where they start. */
static int scan_string(struct scan *sc, size_t *off) {
  size_t start = sc->i;
  *off = sc->p->keys_len;
  sc->i++;
  for (;;) {
    if (sc->i >= sc->n) return fail_at(sc, PG_EPARSE, start, "unterminated string");
    /* Copy a run of plain ASCII in one go: most strings are nothing else. */
    size_t run = sc->i;
    while (run < sc->n) {
      unsigned char r = (unsigned char)sc->s[run];
      if (r < 0x20 || r >= 0x80 || r == '"' || r == '\\') break;
      run++;
    }
    if (run > sc->i) {
      PG_RETURN_IF_ERROR(key_put(sc, sc->s + sc->i, run - sc->i));
      sc->i = run;
      continue;
    }
    unsigned char c = (unsigned char)sc->s[sc->i];
    if (c == '"') {
      sc->i++;
      break;
    }
    if (c == '\n' || c == '\r')
      return fail_at(sc, PG_EPARSE, start,
                     "unterminated string (a line break inside a string must be written \\n)");
    if (c < 0x20)
      return fail_at(sc, PG_EPARSE, sc->i,
                     "control character 0x%02X inside a string (escape it as \\u%04X)", c, c);
    if (c == '\\') {
      size_t esc = sc->i;
      if (esc + 1 >= sc->n) return fail_at(sc, PG_EPARSE, start, "unterminated string");
      char e = sc->s[esc + 1];
      char out[4];
      size_t olen = 1;
      switch (e) {
        case '"': out[0] = '"'; break;
        case '\\': out[0] = '\\'; break;
        case '/': out[0] = '/'; break;
        case 'b': out[0] = '\b'; break;
        case 'f': out[0] = '\f'; break;
        case 'n': out[0] = '\n'; break;
        case 'r': out[0] = '\r'; break;
        case 't': out[0] = '\t'; break;
        case 'u': {
          long u = read_hex4(sc, esc + 2);
          if (u < 0)
            return fail_at(sc, PG_EPARSE, esc, "invalid \\u escape (needs 4 hex digits)");
          unsigned long cp = (unsigned long)u;
          size_t used = 6;
          if (u >= 0xDC00 && u <= 0xDFFF)
            return fail_at(sc, PG_EPARSE, esc, "lone low surrogate \\u%04lX in string",
                           (unsigned long)u);
          if (u >= 0xD800 && u <= 0xDBFF) {
            long lo = -1;
            if (esc + 7 < sc->n && sc->s[esc + 6] == '\\' && sc->s[esc + 7] == 'u')
              lo = read_hex4(sc, esc + 8);
            if (lo < 0xDC00 || lo > 0xDFFF)
              return fail_at(sc, PG_EPARSE, esc,
                             "high surrogate \\u%04lX not followed by a low surrogate",
                             (unsigned long)u);
            cp = 0x10000 + (((unsigned long)u - 0xD800) << 10) + ((unsigned long)lo - 0xDC00);
            used = 12;
          }
          if (cp == 0)
            return fail_at(sc, PG_EPARSE, esc, "\\u0000 is not allowed in strings");
          olen = utf8_encode(cp, out);
          sc->i = esc + used;
          PG_RETURN_IF_ERROR(key_put(sc, out, olen));
          continue;
        }
        default:
          if ((unsigned char)e >= 0x20 && (unsigned char)e < 0x7f)
            return fail_at(sc, PG_EPARSE, esc, "invalid escape '\\%c' in string", e);
          return fail_at(sc, PG_EPARSE, esc, "invalid escape in string");
      }
      sc->i = esc + 2;
      PG_RETURN_IF_ERROR(key_put(sc, out, olen));
      continue;
    }
    size_t len = 1;
    if (c >= 0x80) {
      len = utf8_len(sc, sc->i);
      if (len == 0) return fail_at(sc, PG_EPARSE, sc->i, "invalid UTF-8 byte 0x%02X in string", c);
    }
    PG_RETURN_IF_ERROR(key_put(sc, sc->s + sc->i, len));
    sc->i += len;
  }
  PG_RETURN_IF_ERROR(key_put(sc, "", 1));
  return PG_OK;
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_word(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

/* Shows a bad token (up to 32 bytes of [A-Za-z0-9_.+-]) for a message. */
static void token_text(const struct scan *sc, size_t start, char *buf, size_t size) {
  size_t e = start;
  while (e < sc->n && e - start < 32) {
    int c = (unsigned char)sc->s[e];
    if (!(is_word(c) || c == '.' || c == '+' || c == '-')) break;
    e++;
  }
  snprintf(buf, size, "%.*s%s", (int)(e - start), sc->s + start,
           e < sc->n && is_word((unsigned char)sc->s[e]) ? "..." : "");
}

static int scan_number(struct scan *sc) {
  size_t start = sc->i, i = sc->i;
  int ok = 1;
  if (i < sc->n && sc->s[i] == '-') i++;
  if (i < sc->n && sc->s[i] == '0') {
    i++;
  } else if (i < sc->n && sc->s[i] >= '1' && sc->s[i] <= '9') {
    while (i < sc->n && is_digit((unsigned char)sc->s[i])) i++;
  } else {
    ok = 0;
  }
  if (ok && i < sc->n && sc->s[i] == '.') {
    i++;
    if (i >= sc->n || !is_digit((unsigned char)sc->s[i])) ok = 0;
    while (i < sc->n && is_digit((unsigned char)sc->s[i])) i++;
  }
  if (ok && i < sc->n && (sc->s[i] == 'e' || sc->s[i] == 'E')) {
    i++;
    if (i < sc->n && (sc->s[i] == '+' || sc->s[i] == '-')) i++;
    if (i >= sc->n || !is_digit((unsigned char)sc->s[i])) ok = 0;
    while (i < sc->n && is_digit((unsigned char)sc->s[i])) i++;
  }
  if (ok && i < sc->n) {
    int c = (unsigned char)sc->s[i];
    if (is_word(c) || c == '.' || c == '+' || c == '-') ok = 0;
  }
  if (!ok) {
    char tok[48];
    token_text(sc, start, tok, sizeof tok);
    return fail_at(sc, PG_EPARSE, start, "invalid number '%s'", tok);
  }
  if (i - start > MAX_NUMBER_LEN)
    return fail_at(sc, PG_EPARSE, start, "number longer than %d characters",
                   MAX_NUMBER_LEN);
  sc->i = i;
  return PG_OK;
}

/* Marks members of object `obj` whose key repeats an earlier one. */
struct key_ref {
  const char *key;
  int node;
};

static int key_ref_cmp(const void *a, const void *b) {
  const struct key_ref *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  if (c) return c;
  return (x->node > y->node) - (x->node < y->node);
}

static int mark_duplicates(struct scan *sc, int obj) {
  struct pg_json_pos *p = sc->p;
  int m = p->nodes[obj].n_children;
  if (m < 2) return PG_OK;
  if (m <= 16) {
    /* Pairwise, lengths first: a case object's ~10 keys rarely share a length. */
    for (int a = p->nodes[obj].first_child; a >= 0; a = p->nodes[a].next_sibling)
      for (int b = p->nodes[a].next_sibling; b >= 0; b = p->nodes[b].next_sibling)
        if (p->nodes[b].dup_of < 0 && p->nodes[a].key_len == p->nodes[b].key_len &&
            memcmp(p->keys + p->nodes[a].key_off, p->keys + p->nodes[b].key_off,
                   p->nodes[a].key_len) == 0) {
          p->nodes[b].dup_of = a;
          p->n_dups++;
        }
    return PG_OK;
  }
  struct key_ref *refs = malloc((size_t)m * sizeof *refs);
  if (!refs) return fail_at(sc, PG_ENOMEM, sc->i, "out of memory");
  int k = 0;
  for (int c = p->nodes[obj].first_child; c >= 0; c = p->nodes[c].next_sibling)
    refs[k++] = (struct key_ref){p->keys + p->nodes[c].key_off, c};
  qsort(refs, (size_t)k, sizeof *refs, key_ref_cmp);
  for (int a = 0; a < k;) {
    int b = a + 1;
    while (b < k && strcmp(refs[a].key, refs[b].key) == 0) {
      p->nodes[refs[b].node].dup_of = refs[a].node;
      p->n_dups++;
      b++;
    }
    a = b;
  }
  free(refs);
  return PG_OK;
}

static int scan_value(struct scan *sc, int depth, int parent, int *out);

static void link_child(struct pg_json_pos *p, int parent, int *last, int child) {
  if (*last < 0) p->nodes[parent].first_child = child;
  else p->nodes[*last].next_sibling = child;
  *last = child;
  p->nodes[parent].n_children++;
}

static int scan_array(struct scan *sc, int depth, int self) {
  int last = -1;
  sc->i++; /* '[' */
  skip_ws(sc);
  if (peek(sc) == ']') {
    sc->i++;
    return PG_OK;
  }
  for (;;) {
    int child;
    PG_RETURN_IF_ERROR(scan_value(sc, depth, self, &child));
    link_child(sc->p, self, &last, child);
    skip_ws(sc);
    int c = peek(sc);
    if (c == ']') {
      sc->i++;
      return PG_OK;
    }
    if (c != ',') {
      char what[64];
      describe(sc, sc->i, what, sizeof what);
      return fail_at(sc, PG_EPARSE, sc->i, "expected ',' or ']' after an array element, found %s",
                     what);
    }
    size_t comma = sc->i;
    sc->i++;
    skip_ws(sc);
    if (peek(sc) == ']')
      return fail_at(sc, PG_EPARSE, comma, "trailing comma before ']' (not allowed in JSON)");
  }
}

static int scan_object(struct scan *sc, int depth, int self) {
  int last = -1;
  size_t comma = 0;
  int after_comma = 0;
  sc->i++; /* '{' */
  skip_ws(sc);
  if (peek(sc) == '}') {
    sc->i++;
    return PG_OK;
  }
  for (;;) {
    if (peek(sc) != '"') {
      if (after_comma && peek(sc) == '}')
        return fail_at(sc, PG_EPARSE, comma, "trailing comma before '}' (not allowed in JSON)");
      char what[64];
      describe(sc, sc->i, what, sizeof what);
      return fail_at(sc, PG_EPARSE, sc->i, "expected a key in double quotes, found %s", what);
    }
    int key_line = sc->line, key_col = (int)(sc->i - sc->line_start) + 1;
    size_t key_off = 0;
    PG_RETURN_IF_ERROR(scan_string(sc, &key_off));
    size_t key_len = sc->p->keys_len - key_off - 1; /* now: the value's strings follow */
    skip_ws(sc);
    if (peek(sc) != ':') {
      char what[64];
      describe(sc, sc->i, what, sizeof what);
      return fail_at(sc, PG_EPARSE, sc->i, "expected ':' after the key \"%s\", found %s",
                     sc->p->keys + key_off, what);
    }
    sc->i++;
    skip_ws(sc);
    int child;
    PG_RETURN_IF_ERROR(scan_value(sc, depth, self, &child));
    struct pg_json_node *cn = &sc->p->nodes[child];
    cn->key_line = key_line;
    cn->key_col = key_col;
    cn->key_off = (unsigned)key_off;
    cn->key_len = (unsigned)key_len;
    link_child(sc->p, self, &last, child);
    skip_ws(sc);
    int c = peek(sc);
    if (c == '}') {
      sc->i++;
      return mark_duplicates(sc, self);
    }
    if (c != ',') {
      char what[64];
      describe(sc, sc->i, what, sizeof what);
      return fail_at(sc, PG_EPARSE, sc->i,
                     "expected ',' or '}' after an object member, found %s", what);
    }
    comma = sc->i;
    after_comma = 1;
    sc->i++;
    skip_ws(sc);
  }
}

static int scan_value(struct scan *sc, int depth, int parent, int *out) {
  int c = peek(sc);
  int self;
  if (c == '{' || c == '[') {
    if (depth >= sc->max_depth) {
      sc->fail->is_limit = 1;
      return fail_at(sc, PG_EPARSE, sc->i, "nesting deeper than %d levels", sc->max_depth);
    }
    PG_RETURN_IF_ERROR(new_node(sc, c == '{' ? PG_JSON_OBJECT : PG_JSON_ARRAY, parent, &self));
    int rc = c == '{' ? scan_object(sc, depth + 1, self) : scan_array(sc, depth + 1, self);
    if (rc != PG_OK) return rc;
  } else if (c == '"') {
    PG_RETURN_IF_ERROR(new_node(sc, PG_JSON_STRING, parent, &self));
    size_t str_off = 0;
    PG_RETURN_IF_ERROR(scan_string(sc, &str_off));
    sc->p->nodes[self].str_off = (unsigned)str_off;
  } else if (c == '-' || is_digit(c)) {
    PG_RETURN_IF_ERROR(new_node(sc, PG_JSON_NUMBER, parent, &self));
    PG_RETURN_IF_ERROR(scan_number(sc));
  } else if (c >= 0 && is_word(c)) {
    size_t start = sc->i, e = sc->i;
    while (e < sc->n && is_word((unsigned char)sc->s[e])) e++;
    size_t len = e - start;
    enum pg_json_type t;
    if (len == 4 && memcmp(sc->s + start, "true", 4) == 0) t = PG_JSON_TRUE;
    else if (len == 5 && memcmp(sc->s + start, "false", 5) == 0) t = PG_JSON_FALSE;
    else if (len == 4 && memcmp(sc->s + start, "null", 4) == 0) t = PG_JSON_NULL;
    else {
      char tok[48];
      token_text(sc, start, tok, sizeof tok);
      return fail_at(sc, PG_EPARSE, start,
                     "unknown literal '%s' (JSON literals are true, false and null)", tok);
    }
    PG_RETURN_IF_ERROR(new_node(sc, t, parent, &self));
    sc->i = e;
  } else {
    char what[64];
    describe(sc, sc->i, what, sizeof what);
    return fail_at(sc, PG_EPARSE, sc->i, "expected a value, found %s", what);
  }
  sc->p->nodes[self].len = (unsigned)(sc->i - sc->p->nodes[self].off);
  *out = self;
  return PG_OK;
}

/* Asks the kernel to back [ptr, ptr + bytes) with written pages now (Linux 5.14+;
 * elsewhere, or when refused, the pages fault in one by one as usual). */
static void prefault(void *ptr, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  const uintptr_t page = 4096;
  uintptr_t a = ((uintptr_t)ptr + page - 1) & ~(page - 1);
  uintptr_t e = ((uintptr_t)ptr + bytes) & ~(page - 1);
  if (e > a) (void)madvise((void *)a, e - a, MADV_POPULATE_WRITE);
#else
  (void)ptr;
  (void)bytes;
#endif
}

int pg_json_pos_scan(const char *data, size_t size, const struct pg_json_limits *limits,
                      struct pg_json_pos *p, struct pg_json_fail *fail) {
  struct pg_json_fail scratch;
  pg_json_pos_init(p);
  struct scan sc = {data, size, 0, 1, 0, DEFAULT_MAX_DEPTH, DEFAULT_MAX_NODES, p,
                    fail ? fail : &scratch};
  if (limits && limits->max_depth > 0) sc.max_depth = limits->max_depth;
  if (sc.max_depth > HARD_MAX_DEPTH) sc.max_depth = HARD_MAX_DEPTH;
  if (limits && limits->max_nodes > 0) sc.max_nodes = limits->max_nodes;
  memset(sc.fail, 0, sizeof *sc.fail);
  if (!data) size = sc.n = 0;
  if (size >= 0xFFFFFFFFu) {
    sc.fail->is_limit = 1;
    return fail_at(&sc, PG_ELIMIT, 0, "input of 4 GiB or more");
  }
  /* Size the node array once: a document has at most one value per ',' '[' '{' plus
   * the root, and growing a multi-MiB array by doubling costs more than this pass. */
  size_t bound = 1;
  for (size_t i = 0; i < size; i++) {
    char c = data[i];
    bound += c == ',' || c == '[' || c == '{';
  }
  if (bound > (size_t)sc.max_nodes) bound = (size_t)sc.max_nodes;
  if (bound > 64) {
    p->nodes = malloc(bound * sizeof *p->nodes);
    if (p->nodes) p->cap = (int)bound;
    /* Ordinary JSON fills the array to within a few per cent and writes all of it;
     * faulting it in with one call saves ~4 ms of a cold 20 000-case load (~45 ms)
     * over 6 000 single page faults. Capped at 8 bytes per byte of text (ordinary JSON
     * needs ~6), so text full of commas inside strings cannot make it commit much. */
    if (p->nodes) {
      size_t want = bound * sizeof *p->nodes;
      prefault(p->nodes, want < size * 8 ? want : size * 8);
    }
  }
  /* Decoded keys and strings never outgrow their source text (escapes only shrink,
   * the NUL takes a quote's place), so one arena of size + 1 bytes never moves. */
  p->keys = malloc(size + 1);
  if (p->keys) p->keys_cap = size + 1;
  p->src = data;
  if (size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) sc.i = 3;
  skip_ws(&sc);
  int rc;
  if (sc.i >= sc.n) {
    rc = fail_at(&sc, PG_EPARSE, sc.i, "empty input: expected a JSON value");
  } else {
    int root;
    rc = scan_value(&sc, 0, -1, &root);
    if (rc == PG_OK) {
      skip_ws(&sc);
      if (sc.i < sc.n) {
        char what[64];
        describe(&sc, sc.i, what, sizeof what);
        rc = fail_at(&sc, PG_EPARSE, sc.i, "unexpected %s after the end of the JSON document",
                     what);
      }
    }
  }
  if (rc != PG_OK) pg_json_pos_reset(p);
  return rc;
}

const char *pg_json_pos_key(const struct pg_json_pos *p, int node) {
  if (!p || node < 0 || node >= p->n || p->nodes[node].parent < 0) return NULL;
  if (p->nodes[p->nodes[node].parent].type != PG_JSON_OBJECT) return NULL;
  return p->keys + p->nodes[node].key_off;
}

const char *pg_json_pos_string(const struct pg_json_pos *p, int node) {
  if (!p || node < 0 || node >= p->n || p->nodes[node].type != PG_JSON_STRING) return NULL;
  return p->keys + p->nodes[node].str_off;
}

double pg_json_pos_number(const struct pg_json_pos *p, int node) {
  if (!p || !p->src || node < 0 || node >= p->n || p->nodes[node].type != PG_JSON_NUMBER)
    return 0;
  const struct pg_json_node *nd = &p->nodes[node];
  const char *t = p->src + nd->off;
  size_t len = nd->len;
  /* Clinger's fast path: with at most 15 significant digits the digits are exact in
   * a double, and so is 10^e for |e| <= 22; one multiplication or division then
   * rounds once, correctly, giving the very bits strtod gives. 1e-4, 0.5, 64, -3.25e2
   * all take it; anything longer goes to strtod below. */
  static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  size_t k = len && t[0] == '-' ? 1 : 0;
  int neg = k == 1, digits = 0, exp10 = 0;
  double m = 0;
  for (; k < len && t[k] >= '0' && t[k] <= '9'; k++) {
    if (digits || t[k] != '0') digits++;
    m = m * 10 + (t[k] - '0');
  }
  if (k < len && t[k] == '.')
    for (k++; k < len && t[k] >= '0' && t[k] <= '9'; k++) {
      if (digits || t[k] != '0') digits++;
      m = m * 10 + (t[k] - '0');
      exp10--;
    }
  if (k < len && (t[k] == 'e' || t[k] == 'E')) {
    k++;
    int eneg = k < len && t[k] == '-';
    if (k < len && (t[k] == '+' || t[k] == '-')) k++;
    int e = 0;
    for (; k < len && t[k] >= '0' && t[k] <= '9' && e < 10000; k++) e = e * 10 + (t[k] - '0');
    exp10 += eneg ? -e : e;
  }
  if (k == len && digits <= 15 && exp10 >= -22 && exp10 <= 22) {
    double v = exp10 >= 0 ? m * pow10[exp10] : m / pow10[-exp10];
    return neg ? -v : v;
  }
  /* As cJSON does: copy (the scanner capped numbers at 63 bytes), read '.' as the
   * locale's decimal point, strtod. */
  char buf[64];
  char point = localeconv()->decimal_point[0];
  if (len >= sizeof buf) len = sizeof buf - 1;
  for (size_t j = 0; j < len; j++) buf[j] = t[j] == '.' ? point : t[j];
  buf[len] = '\0';
  return strtod(buf, NULL);
}

int pg_json_pos_member(const struct pg_json_pos *p, int node, const char *key) {
  if (!p || node < 0 || node >= p->n || p->nodes[node].type != PG_JSON_OBJECT) return -1;
  for (int c = p->nodes[node].first_child; c >= 0; c = p->nodes[c].next_sibling)
    if (strcmp(p->keys + p->nodes[c].key_off, key) == 0) return c;
  return -1;
}

int pg_json_pos_element(const struct pg_json_pos *p, int node, int i) {
  if (!p || node < 0 || node >= p->n || i < 0) return -1;
  int c = p->nodes[node].first_child;
  while (c >= 0 && i-- > 0) c = p->nodes[c].next_sibling;
  return c;
}

int pg_json_pos_find(const struct pg_json_pos *p, const char *path) {
  if (!p || p->n == 0 || !path) return -1;
  int node = 0;
  const char *s = path;
  while (*s) {
    if (*s == '[') {
      char *end;
      long i = strtol(s + 1, &end, 10);
      if (end == s + 1 || *end != ']' || i < 0 || i > 0x7fffffff) return -1;
      if (p->nodes[node].type != PG_JSON_ARRAY) return -1;
      node = pg_json_pos_element(p, node, (int)i);
      s = end + 1;
    } else {
      if (*s == '.') s++;
      size_t len = strcspn(s, ".[");
      if (len == 0 || len >= 256) return -1;
      char key[256];
      memcpy(key, s, len);
      key[len] = '\0';
      node = pg_json_pos_member(p, node, key);
      s += len;
    }
    if (node < 0) return -1;
  }
  return node;
}
