//===- stress_decode.cpp - many threads, contexts and calls on one GPU ----===//
//
// What a serving engine does to the runtime over hours, in minutes, through
// the public C API only (pa_runtime.h):
//
//  1. threads: --threads (32) threads, each with its own stream on one
//     pa_context, start together behind a barrier, so the first calls of
//     several keys race (thread t's workload w uses served key (t + w) mod
//     keys: threads t and t + keys share their first key). Each thread then
//     cycles through its workloads (shapes, GQA groups, features, grid
//     modes vary) until --calls (10^6) calls have been made in all.
//  2. cycles: --cycles (1000) times pa_context_create, load --cycle-library,
//     one call, pa_context_destroy.
//
// Outputs are spot-checked against the e2e harness's float64 reference:
// every workload's first call and then every --check-every-th call of a
// thread (output poisoned with NaN first). Host RSS and the device's used
// memory (cuMemGetInfo) are printed before and after each phase; growth
// past --max-growth-mib (16) after the warm-up fails the phase.
//
// Usage: stress_decode --library DIR [--cycle-library DIR] [--threads N]
//          [--calls N] [--cycles N] [--check-every N] [--max-growth-mib N]
// Ends with "N passed, N failed" (checks); exit 0 when none failed, 1 when
// one did, 2 on a usage or setup error.
//
//===----------------------------------------------------------------------===//

// The e2e harness's driver loading, inputs (Case, makeInputs, baseArgs) and
// float64 reference are shared, not copied: its main() is renamed, unused.
#define main e2e_decode_main
#include "e2e_decode.cpp"
#undef main

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace {

//===----------------------------------------------------------------------===//
// Options, tallies, memory readings
//===----------------------------------------------------------------------===//

struct Options {
  std::string library, cycleLibrary;
  int threads = 32, cycles = 1000, checkEvery = 1000;
  long long calls = 1000000;
  double maxGrowthMiB = 16;
};

/// Checks passed and failed, from any thread.
struct Checks {
  std::atomic<int> passed{0}, failed{0};
  std::mutex printing;
  void report(bool ok, const std::string &what) {
    (ok ? passed : failed)++;
    if (!ok) {
      std::lock_guard<std::mutex> lock(printing);
      std::printf("FAIL %s\n", what.c_str());
    }
  }
};
Checks checks;

decltype(&::cuMemGetInfo) memGetInfo = nullptr;

struct Memory {
  double hostMiB = 0, deviceMiB = 0;
};

/// Host RSS (VmRSS) and the device's used memory; the calling thread must
/// have the primary context current.
Memory readMemory() {
  Memory m;
  if (FILE *f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    long kib = 0;
    while (std::fgets(line, sizeof(line), f))
      if (std::sscanf(line, "VmRSS: %ld kB", &kib) == 1)
        m.hostMiB = kib / 1024.0;
    std::fclose(f);
  }
  size_t freeBytes = 0, totalBytes = 0;
  if (memGetInfo(&freeBytes, &totalBytes) == CUDA_SUCCESS)
    m.deviceMiB = double(totalBytes - freeBytes) / (1024.0 * 1024.0);
  return m;
}

/// Prints before/after and checks the growth against the bound.
void checkGrowth(const Options &o, const char *phase, const Memory &before,
                 const Memory &after) {
  double host = after.hostMiB - before.hostMiB;
  double device = after.deviceMiB - before.deviceMiB;
  char what[256];
  std::snprintf(what, sizeof(what),
                "memory %s: host RSS %.1f -> %.1f MiB (%+.1f), device used "
                "%.1f -> %.1f MiB (%+.1f), bound +%.0f MiB each",
                phase, before.hostMiB, after.hostMiB, host, before.deviceMiB,
                after.deviceMiB, device, o.maxGrowthMiB);
  std::printf("%s\n", what);
  checks.report(host <= o.maxGrowthMiB && device <= o.maxGrowthMiB, what);
}

//===----------------------------------------------------------------------===//
// One workload: inputs on the device, its reference, repeated calls
//===----------------------------------------------------------------------===//

struct Workload {
  Case c;
  Inputs in;
  pa_decode_args args;
  std::vector<double> ref;
  HostTensor output; // host copy; NaN before a checked call
  DeviceBuffer dq, dk, dv, dbt, dlens, dout, des, dml, dtmp, dalibi, dsinks,
      dscales;
};

CUresult upload(DeviceBuffer &buf, const void *data, size_t bytes) {
  CUresult r = buf.alloc(bytes);
  return r == CUDA_SUCCESS && data ? driver.cuMemcpyHtoD(buf.ptr, data, bytes)
                                   : r;
}

/// Builds `c`'s inputs and reference and puts them on the device (the
/// calling thread's current context), as runCase does.
std::unique_ptr<Workload> prepare(const Case &c, std::string &why) {
  auto w = std::make_unique<Workload>();
  w->c = c;
  Rng rng(c.seed);
  w->in = makeInputs(c, rng);
  const Inputs &in = w->in;
  w->args = baseArgs(c, in);
  w->ref = reference(in);
  size_t rows = size_t(in.numSeqs) * in.numHeads;
  size_t partRows = rows * in.maxNumPartitions;
  w->output.resize(c.dtype, rows * in.headSize);
  float scales[2] = {in.kScale, in.vScale};
  CUresult r = CUDA_SUCCESS;
  auto step = [&](DeviceBuffer &b, const void *data, size_t bytes) {
    if (r == CUDA_SUCCESS)
      r = upload(b, data, bytes);
  };
  step(w->dq, in.query.data(), in.query.bytes());
  step(w->dk, in.keyCache.data(), in.keyCache.bytes());
  step(w->dv, in.valueCache.data(), in.valueCache.bytes());
  step(w->dbt, in.blockTables.data(), in.blockTables.size() * 4);
  step(w->dlens, in.seqLens.data(), in.seqLens.size() * 4);
  step(w->dout, nullptr, w->output.bytes());
  step(w->des, nullptr, partRows * 4);
  step(w->dml, nullptr, partRows * 4);
  step(w->dtmp, nullptr, partRows * in.headSize * 4);
  if (!in.alibiSlopes.empty())
    step(w->dalibi, in.alibiSlopes.data(), in.alibiSlopes.size() * 4);
  if (!in.sinks.empty())
    step(w->dsinks, in.sinks.data(), in.sinks.size() * 4);
  step(w->dscales, scales, sizeof(scales));
  if (r != CUDA_SUCCESS) {
    why = "device buffers: " + driver.name(r);
    return nullptr;
  }
  pa_decode_args &a = w->args;
  a.query = w->dq.ptr;
  a.key_cache = w->dk.ptr;
  a.value_cache = w->dv.ptr;
  a.block_tables = w->dbt.ptr;
  a.seq_lens = w->dlens.ptr;
  a.output = w->dout.ptr;
  a.exp_sums = w->des.ptr;
  a.max_logits = w->dml.ptr;
  a.tmp_output = w->dtmp.ptr;
  a.alibi_slopes = w->dalibi.ptr;
  // baseArgs marks sinks with a stand-in address (it plans only): the real
  // buffer, as e2e_decode's runCase does.
  a.sinks = w->dsinks.ptr;
  if (a.k_scale_ptr)
    a.k_scale_ptr = w->dscales.ptr;
  if (a.v_scale_ptr)
    a.v_scale_ptr = w->dscales.ptr + sizeof(float);
  return w;
}

/// prepare(), without the features when the library has no variant with
/// them for the key (a served key always has a lean one).
std::unique_ptr<Workload> prepareServed(pa_context *ctx, Case c,
                                        std::string &why) {
  Rng rng(c.seed);
  Inputs in = makeInputs(c, rng);
  pa_decode_args args = baseArgs(c, in);
  pa_plan plan;
  if (pa_plan_decode_v2(ctx, &args, &plan).code == PA_ERROR_UNSUPPORTED)
    c.features = 0;
  return prepare(c, why);
}

std::string label(const Workload &w) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%s%s d%d b%d %s %s %s features %s",
                dtypeName(w.c.dtype), w.c.cache ? "+fp8" : "", w.c.headSize,
                w.c.blockSize, kHeadShapes[w.c.shape].label,
                kProfileNames[w.c.profile],
                w.c.fixedGrid ? "fixed" : "adaptive",
                featureLabel(w.c.features).c_str());
  return buf;
}

/// One call, output poisoned before and compared with the reference after.
bool checkedCall(pa_context *ctx, CUstream stream, Workload &w,
                 std::string &why) {
  w.output.setNaN();
  CUresult r = driver.cuStreamSynchronize(stream);
  if (r == CUDA_SUCCESS)
    r = driver.cuMemcpyHtoD(w.dout.ptr, w.output.data(), w.output.bytes());
  // A copy from pageable memory may return before its DMA lands; it runs on
  // the legacy stream, which the non-blocking `stream` does not wait for.
  if (r == CUDA_SUCCESS)
    r = driver.cuStreamSynchronize(nullptr);
  if (r != CUDA_SUCCESS) {
    why = "poisoning the output: " + driver.name(r);
    return false;
  }
  pa_status st = pa_decode_v2(ctx, &w.args, stream);
  if (st.code != PA_OK) {
    why = std::string("pa_decode_v2: ") + st.message;
    return false;
  }
  r = driver.cuStreamSynchronize(stream);
  if (r == CUDA_SUCCESS)
    r = driver.cuMemcpyDtoH(w.output.data(), w.dout.ptr, w.output.bytes());
  if (r != CUDA_SUCCESS) {
    why = "kernel execution: " + driver.name(r);
    return false;
  }
  double num = 0, den = 0;
  for (size_t i = 0; i < w.ref.size(); ++i) {
    double o = w.output.get(i), d = o - w.ref[i];
    if (std::isnan(o)) {
      why = "NaN at output element " + std::to_string(i);
      return false;
    }
    num += d * d;
    den += w.ref[i] * w.ref[i];
  }
  double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  if (!(rel <= errorBound(w.c.dtype))) {
    why = "rel err " + std::to_string(rel);
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Phase 1: threads
//===----------------------------------------------------------------------===//

/// A reusable barrier (C++17 has none).
class Barrier {
public:
  explicit Barrier(int n) : count(n) {}
  void wait() {
    std::unique_lock<std::mutex> lock(m);
    int gen = generation;
    if (++arrived == count) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return;
    }
    cv.wait(lock, [&] { return gen != generation; });
  }

private:
  std::mutex m;
  std::condition_variable cv;
  int count, arrived = 0, generation = 0;
};

struct ThreadsPhase {
  const Options &o;
  pa_context *ctx;
  CUcontext primary;
  const std::vector<Case> &keys;
  // start: the threads' first calls at once; warm, done: the main thread
  // reads the memory after the first calls and after the last (before the
  // buffers are freed); measured: it has.
  Barrier start, warm, done, measured;
  ThreadsPhase(const Options &o, pa_context *ctx, CUcontext primary,
               const std::vector<Case> &keys)
      : o(o), ctx(ctx), primary(primary), keys(keys), start(o.threads),
        warm(o.threads + 1), done(o.threads + 1), measured(o.threads + 1) {}
};

constexpr int kWorkloadsPerThread = 3;

/// Thread t's workload w: key (t + w) mod keys, the rest varied by t and w.
Case workloadCase(const std::vector<Case> &keys, int t, int w) {
  Case c = keys[size_t(t + w) % keys.size()];
  c.shape = (3 * t + w) % kNumShapes;
  c.profile = w == 2 ? kRagged : kShort;
  c.features = w == 1 ? kAllFeatures : t % 2 ? kWindow : 0;
  c.fixedGrid = (t + w) % 2 == 1;
  c.scales = ScaleMode((t + w) % kNumScaleModes);
  c.id = t * kWorkloadsPerThread + w;
  c.seed = 7919ull * uint64_t(c.id) + 1;
  return c;
}

void checkAndReport(pa_context *ctx, CUstream stream, Workload &w, int t,
                    const char *when) {
  std::string why;
  bool ok = checkedCall(ctx, stream, w, why);
  checks.report(ok, "thread " + std::to_string(t) + " " + when + " " +
                        label(w) + (ok ? "" : ": " + why));
}

void threadMain(ThreadsPhase &p, int t, long long calls) {
  driver.cuCtxPushCurrent(p.primary);
  CUstream stream = nullptr;
  CUresult r = driver.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  std::vector<std::unique_ptr<Workload>> work;
  std::string why;
  for (int w = 0; w < kWorkloadsPerThread && r == CUDA_SUCCESS; ++w) {
    work.push_back(prepareServed(p.ctx, workloadCase(p.keys, t, w), why));
    if (!work.back())
      r = CUDA_ERROR_UNKNOWN;
  }
  checks.report(r == CUDA_SUCCESS, "thread " + std::to_string(t) + " setup" +
                                       (r == CUDA_SUCCESS ? "" : ": " + why));
  p.start.wait(); // every thread's first call at once
  for (auto &w : work)
    if (w)
      checkAndReport(p.ctx, stream, *w, t, "first call");
  p.warm.wait(); // the main thread reads the memory
  for (long long i = 0; r == CUDA_SUCCESS && i < calls; ++i) {
    Workload &w = *work[size_t(i % kWorkloadsPerThread)];
    if ((i + 1) % p.o.checkEvery == 0) {
      std::string when = "call " + std::to_string(i);
      checkAndReport(p.ctx, stream, w, t, when.c_str());
      continue;
    }
    pa_status st = pa_decode_v2(p.ctx, &w.args, stream);
    if (st.code != PA_OK) {
      checks.report(false, "thread " + std::to_string(t) + " call " +
                               std::to_string(i) + ": " + st.message);
      break;
    }
  }
  if (stream) {
    checks.report(driver.cuStreamSynchronize(stream) == CUDA_SUCCESS,
                  "thread " + std::to_string(t) + " final synchronize");
  }
  p.done.wait();
  p.measured.wait();
  if (stream)
    driver.cuStreamDestroy(stream);
  work.clear();
  CUcontext popped;
  driver.cuCtxPopCurrent(&popped);
}

/// Phase 1; the main thread has the primary context current.
void runThreads(const Options &o, pa_context *ctx, CUcontext primary,
                const std::vector<Case> &keys) {
  ThreadsPhase p(o, ctx, primary, keys);
  Memory before = readMemory();
  std::vector<std::thread> threads;
  long long perThread = (o.calls + o.threads - 1) / o.threads;
  auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < o.threads; ++t)
    threads.emplace_back(threadMain, std::ref(p), t, perThread);
  p.warm.wait();
  Memory warm = readMemory();
  p.done.wait();
  Memory after = readMemory();
  p.measured.wait();
  for (std::thread &t : threads)
    t.join();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           t0)
                 .count();
  std::printf("threads: %d threads x %lld calls = %lld calls in %.1f s "
              "(memory before the threads: host %.1f MiB, device %.1f MiB)\n",
              o.threads, perThread, perThread * o.threads, s, before.hostMiB,
              before.deviceMiB);
  checkGrowth(o, "threads (after the first calls -> after the last)", warm,
              after);
}

//===----------------------------------------------------------------------===//
// Phase 2: context create/destroy cycles
//===----------------------------------------------------------------------===//

/// One cycle: create, load, one call (checked when `check`), destroy.
bool cycle(const Options &o, CUstream stream, Workload &w, bool check,
           std::string &why) {
  pa_context *ctx = nullptr;
  pa_status st = pa_context_create(0, &ctx);
  if (st.code == PA_OK)
    st = pa_context_load_library(ctx, o.cycleLibrary.c_str());
  bool ok = st.code == PA_OK;
  if (!ok)
    why = st.message;
  else if (check)
    ok = checkedCall(ctx, stream, w, why);
  else if ((st = pa_decode_v2(ctx, &w.args, stream)).code != PA_OK)
    ok = false, why = st.message;
  // The bundles' modules go with the context: finish the call first.
  if (driver.cuStreamSynchronize(stream) != CUDA_SUCCESS && ok)
    ok = false, why = "kernel execution";
  pa_context_destroy(ctx);
  return ok;
}

/// Phase 2, on a key `keys` serves that the cycle library serves too.
void runCycles(const Options &o, CUstream stream,
               const std::vector<Case> &keys) {
  std::string why;
  Case c = workloadCase(keys, 0, 0);
  c.features = 0; // the cycle library may hold no _ext bundle
  std::unique_ptr<Workload> w = prepare(c, why);
  if (!w) {
    checks.report(false, "cycles setup: " + why);
    return;
  }
  int warmup = std::min(o.cycles, 10);
  Memory before = readMemory(), warm = before;
  auto t0 = std::chrono::steady_clock::now();
  int failed = 0;
  for (int i = 0; i < o.cycles; ++i) {
    if (i == warmup)
      warm = readMemory();
    bool check = i % 100 == 0 || i == o.cycles - 1;
    if (!cycle(o, stream, *w, check, why) && failed++ < 5)
      checks.report(false, "cycle " + std::to_string(i) + ": " + why);
  }
  Memory after = readMemory();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           t0)
                 .count();
  std::printf("cycles: %d context create/load/call/destroy in %.1f s, %d "
              "failed (memory before: host %.1f MiB, device %.1f MiB)\n",
              o.cycles, s, failed, before.hostMiB, before.deviceMiB);
  checks.report(failed == 0, "cycles: " + std::to_string(failed) + " failed");
  checkGrowth(o, "cycles (after the warm-up -> after the last)", warm, after);
}

//===----------------------------------------------------------------------===//
// Driver program
//===----------------------------------------------------------------------===//

bool parseOptions(int argc, char **argv, Options &o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--library")
      o.library = v;
    else if (a == "--cycle-library")
      o.cycleLibrary = v;
    else if (a == "--threads")
      o.threads = std::atoi(v.c_str());
    else if (a == "--calls")
      o.calls = std::atoll(v.c_str());
    else if (a == "--cycles")
      o.cycles = std::atoi(v.c_str());
    else if (a == "--check-every")
      o.checkEvery = std::atoi(v.c_str());
    else if (a == "--max-growth-mib")
      o.maxGrowthMiB = std::atof(v.c_str());
    else
      return false;
  }
  if (o.cycleLibrary.empty())
    o.cycleLibrary = o.library;
  return argc % 2 == 1 && !o.library.empty() && o.threads > 0 &&
         o.calls >= 0 && o.cycles >= 0 && o.checkEvery > 0;
}

/// The keys both libraries serve (the cycle library's context checks).
std::vector<Case> commonKeys(pa_context *ctx, const Options &o) {
  std::vector<Case> keys = servedKeys(ctx);
  pa_context *cycleCtx = nullptr;
  if (pa_context_create(0, &cycleCtx).code != PA_OK ||
      pa_context_load_library(cycleCtx, o.cycleLibrary.c_str()).code != PA_OK) {
    pa_context_destroy(cycleCtx);
    return {};
  }
  std::vector<Case> served = servedKeys(cycleCtx);
  pa_context_destroy(cycleCtx);
  // Keys of both first: workload (0, 0) of the cycles takes keys[0].
  std::stable_partition(keys.begin(), keys.end(), [&](const Case &k) {
    return std::any_of(served.begin(), served.end(), [&](const Case &s) {
      return s.dtype == k.dtype && s.cache == k.cache &&
             s.headSize == k.headSize && s.blockSize == k.blockSize;
    });
  });
  return keys;
}

} // namespace

int main(int argc, char **argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Options o;
  if (!parseOptions(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: stress_decode --library DIR [--cycle-library DIR] "
                 "[--threads N] [--calls N] [--cycles N] [--check-every N] "
                 "[--max-growth-mib N]\n");
    return 2;
  }
  if (!driver.load())
    return 2;
  memGetInfo = reinterpret_cast<decltype(memGetInfo)>(
      dlsym(driver.library, E2E_STR_EXPANDED(cuMemGetInfo)));
  CUdevice device;
  CUcontext primary = nullptr;
  CUresult r = memGetInfo ? driver.cuInit(0) : CUDA_ERROR_NOT_FOUND;
  if (r == CUDA_SUCCESS)
    r = driver.cuDeviceGet(&device, 0);
  if (r == CUDA_SUCCESS)
    r = driver.cuDevicePrimaryCtxRetain(&primary, device);
  if (r == CUDA_SUCCESS)
    r = driver.cuCtxPushCurrent(primary);
  pa_context *ctx = nullptr;
  pa_status st = pa_context_create(0, &ctx);
  if (r != CUDA_SUCCESS || st.code != PA_OK ||
      (st = pa_context_load_library(ctx, o.library.c_str())).code != PA_OK) {
    std::fprintf(stderr, "error: setup: %s %s\n", driver.name(r).c_str(),
                 st.message);
    return 2;
  }
  std::vector<Case> keys = commonKeys(ctx, o);
  if (keys.empty()) {
    std::fprintf(stderr, "error: the libraries serve no key (tmp f32)\n");
    return 2;
  }
  std::printf("%s; %zu keys served\n", st.message, keys.size());
  runThreads(o, ctx, primary, keys);
  pa_context_destroy(ctx);

  CUstream stream = nullptr;
  if (driver.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
    return 2;
  runCycles(o, stream, keys);
  driver.cuStreamDestroy(stream);
  CUcontext popped;
  driver.cuCtxPopCurrent(&popped);
  driver.cuDevicePrimaryCtxRelease(device);
  std::printf("%d passed, %d failed\n", checks.passed.load(),
              checks.failed.load());
  return checks.failed ? 1 : 0;
}
