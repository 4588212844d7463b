//===- gridexpr_fuzzer.cpp - libFuzzer target: grid expressions -----------===//
//
// A manifest's `grid` records are small integer expressions the runtime
// parses at load and evaluates on every call (runtime/src/gridexpr.cpp).
// The manifest target reaches them through whole manifests; this one feeds
// the expression text directly, which finds arithmetic edge cases (deep
// nesting, huge constants, overflow, division by zero) far faster. Each
// expression that parses is evaluated with the sizes of a real call, with
// zeros and with values near INT32_MAX: evaluation must refuse, never wrap.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace pa;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  GridExpr expr;
  std::string why;
  if (!parseGridExpr(text, expr, why)) {
    if (why.empty())
      std::abort(); // a refusal must say why
    return 0;
  }
  for (int64_t fill : {int64_t(0), int64_t(INT32_MAX), int64_t(-1)}) {
    GridEnv env;
    for (int i = 0; i < kNumGridSyms; ++i)
      env.values[i] = fill == -1 ? int64_t(7 + 13 * i) : fill;
    int64_t value = 0;
    (void)evalGridExpr(expr, env, value);
  }
  return 0;
}
