/* A plugin whose library constructor misbehaves (-DCTOR_CRASH: SIGSEGV, -DCTOR_EXIT:
 * exit(5)) before any wrapper can be called: pg_impl_check must survive loading it
 * and name it (tests/impl/test-adapters.c, impl_check_*). -DCTOR_COUNT: the
 * constructor appends a line to $PG_CTOR_COUNT_FILE, so a test counts how often a run
 * loads the plugin (tests/impl/one_load.sh). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "phasegate/impl.h"

__attribute__((constructor)) static void misbehave(void) {
#if defined(CTOR_CRASH)
  raise(SIGSEGV);
#elif defined(CTOR_EXIT)
  exit(5);
#elif defined(CTOR_COUNT)
  const char *path = getenv("PG_CTOR_COUNT_FILE");
  FILE *f = path ? fopen(path, "a") : NULL;
  if (f) {
    fputs("loaded\n", f);
    fclose(f);
  }
#endif
}

int fake_module1_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                         const pg_call *call) {
  (void)in, (void)n_in, (void)out, (void)n_out, (void)call;
  return 0;
}
