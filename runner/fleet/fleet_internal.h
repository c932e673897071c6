/* phasegate runner — what the fleet room's files share (not included outside it). */
#ifndef PHASEGATE_FLEET_INTERNAL_H
#define PHASEGATE_FLEET_INTERNAL_H

#include <stddef.h>

#include "fleet/fleet.h"

/* A string -> number map (open addressing; keys copied). 10 000 test names are looked
 * up in it for times, fixtures and merged verdicts, never by a linear scan. */
struct pg__fleet_map {
  char **keys;
  double *vals;
  int cap, n;
};
void pg__fleet_map_reset(struct pg__fleet_map *m);
/* 0, or -1 when out of memory; an existing key's value is replaced. */
int pg__fleet_map_put(struct pg__fleet_map *m, const char *key, double val);
/* 1 and *val when present. */
int pg__fleet_map_get(const struct pg__fleet_map *m, const char *key, double *val);

/* Runs argv (argv[0] looked up on PATH) with `env_add` ("NAME=value", n_env) added to
 * the environment, stdin from /dev/null; stdout to out_path (NULL: inherited) or, with
 * `capture`, into *capture (malloc'ed, *cap_len). *exit_code: its exit status (128+sig
 * for a signal). PG_EIO when it cannot start (the message names the program). */
int pg__fleet_spawn(char *const *argv, const char *const *env_add, int n_env,
                    char **capture, size_t *cap_len, int *exit_code, struct pg_error *err);

/* Writes text to path atomically (temp + rename). */
int pg__fleet_write_file(const char *path, const char *text, struct pg_error *err);
/* The host name ("unknown" when none), into buf. */
void pg__fleet_host(char *buf, size_t size);
#endif
