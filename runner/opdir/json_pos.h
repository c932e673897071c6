/* phasegate runner — a strict JSON scanner that records where every value sits.
 *
 * cJSON parses values but keeps no positions, cannot report duplicate keys and
 * accepts a few non-JSON spellings. This scanner walks the same text first: it checks
 * the RFC 8259 grammar (with positions for every syntax error), enforces nesting and
 * size caps, finds duplicate keys, and builds a flat tree of nodes (pre-order) holding
 * line:col of every object member key and value and every array element. Children
 * appear in document order, exactly as cJSON links them, so a loader can walk a cJSON
 * tree and this tree in lockstep, or use this tree alone: string values are decoded
 * too (pg_json_pos_string) and numbers convert as cJSON converts them
 * (pg_json_pos_number), so the suite loader needs no second parse.
 * pg_json_pos_find() looks a node up by JSON path ("cases[3].level").
 * Not for: building or printing JSON.
 * Part of the opdir room's API (included by opdir/opdir.h: the suite loader and the report
 * merger use it); no global state.
 */
#ifndef PHASEGATE_JSON_POS_H
#define PHASEGATE_JSON_POS_H

#include <stddef.h>

enum pg_json_type {
  PG_JSON_NULL = 0,
  PG_JSON_FALSE,
  PG_JSON_TRUE,
  PG_JSON_NUMBER,
  PG_JSON_STRING,
  PG_JSON_ARRAY,
  PG_JSON_OBJECT
};

struct pg_json_node {
  enum pg_json_type type;
  int parent;            /* -1 for the root */
  int first_child;       /* -1 when none */
  int next_sibling;      /* -1 when last */
  int n_children;
  int dup_of;            /* object members: the earlier member with the same key, else -1 */
  int key_line, key_col; /* object members: the opening quote of the key; else 0 */
  int line, col;         /* first character of the value (1-based; bytes) */
  /* Offsets are 32-bit (the scanner refuses larger input), keeping a node at 60
   * bytes: a big suite has hundreds of thousands of nodes, each page of them a fault. */
  unsigned key_off;      /* object members: decoded, NUL-terminated key in pos->keys */
  unsigned key_len;      /* object members: its length in bytes (without the NUL) */
  unsigned str_off;      /* strings: the decoded, NUL-terminated value in pos->keys */
  unsigned off, len;     /* the value's text in the source (whole object/array too) */
};

struct pg_json_pos {
  struct pg_json_node *nodes; /* nodes[0] is the root value */
  int n, cap;
  const char *src;         /* the scanned text (borrowed; numbers are read from it) */
  char *keys;              /* arena of decoded keys and string values */
  size_t keys_len, keys_cap;
  int n_dups;              /* members whose dup_of >= 0 */
};

struct pg_json_limits {
  int max_depth; /* arrays/objects nested deeper than this are an error; <= 0: 64 */
  int max_nodes; /* more values than this are an error (PG_ELIMIT); <= 0: 1 << 20 */
};

/* A scan failure: where and what. `message` has no position prefix. */
struct pg_json_fail {
  int line, col;
  size_t offset;
  int is_limit; /* a cap (nesting, value count) rather than a grammar error */
  char message[256];
};

void pg_json_pos_init(struct pg_json_pos *p);
void pg_json_pos_reset(struct pg_json_pos *p);

/* Scans `size` bytes (need not be NUL-terminated; a UTF-8 BOM is skipped). Returns
 * PG_OK, PG_EPARSE (syntax error, nesting too deep, empty input: *fail says where),
 * PG_ELIMIT (too many values, or 4 GiB of text or more) or PG_ENOMEM. `limits` may
 * be NULL. Duplicate keys do not fail the scan: they are marked with dup_of. On
 * failure `p` is reset-safe. The text must outlive pg_json_pos_number calls. */
int pg_json_pos_scan(const char *data, size_t size, const struct pg_json_limits *limits,
                      struct pg_json_pos *p, struct pg_json_fail *fail);

/* The decoded key of an object member node (borrowed), or NULL. */
const char *pg_json_pos_key(const struct pg_json_pos *p, int node);
/* The decoded value of a string node (borrowed), or NULL for other kinds. */
const char *pg_json_pos_string(const struct pg_json_pos *p, int node);
/* The value of a number node exactly as cJSON computes valuedouble (strtod of the
 * text, '.' read as the locale's decimal point); 0 for other kinds. Needs the
 * scanned text still alive. */
double pg_json_pos_number(const struct pg_json_pos *p, int node);
/* The first member of object `node` whose key is `key`, or -1. */
int pg_json_pos_member(const struct pg_json_pos *p, int node, const char *key);
/* Element i (0-based) of array (or member i of object) `node`, or -1. */
int pg_json_pos_element(const struct pg_json_pos *p, int node, int i);
/* Node by path: "" is the root, then ".key" or "key" and "[i]" steps, e.g.
 * "cases[3].shape.S". Returns -1 when absent or the path is malformed. */
int pg_json_pos_find(const struct pg_json_pos *p, const char *path);

/* 1-based line and byte column of `offset` in data (offset may equal size). */
void pg_json_linecol(const char *data, size_t size, size_t offset, int *line, int *col);

#endif
