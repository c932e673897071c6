/* phasegate gen — placeholder until its issue lands. */
#include <string.h>

#include "cli.h"

int pg_cmd_gen(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    printf("usage: phasegate gen ...\n(not yet implemented)\n");
    return PG_EXIT_PASS;
  }
  fprintf(stderr, "phasegate gen: not yet implemented\n");
  return PG_EXIT_ERROR;
}
