/*===- integrate-load.c - load a bundle through the installed runtime ----===*/
/*
 * integrate-load MANIFEST: creates a context on device 0 and loads one
 * bundle. Prints "loaded N variant(s)" (exit 0), or the failing call's
 * status (exit 1) — on a machine without a CUDA driver, the driver error.
 */
/*===----------------------------------------------------------------------===*/

#include <pa_runtime/pa_runtime.h>

#include <stdio.h>

static int report(const char *call, pa_status st) {
  printf("%s: code %d %s: %s\n", call, (int)st.code, st.driver_error,
         st.message);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: integrate-load MANIFEST\n");
    return 2;
  }
  pa_context *ctx = NULL;
  pa_status st = pa_context_create(0, &ctx);
  if (st.code != PA_OK)
    return report("pa_context_create", st);
  st = pa_context_load_bundle(ctx, argv[1]);
  if (st.code != PA_OK) {
    pa_context_destroy(ctx);
    return report("pa_context_load_bundle", st);
  }
  printf("loaded %zu variant(s)\n", pa_context_num_variants(ctx));
  pa_context_destroy(ctx);
  return 0;
}
