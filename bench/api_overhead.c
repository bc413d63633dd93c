/* Issue 13's host overhead at the C API: the median time of one tf_run of a
 * tiny program repeated on the same CPU DLPack tensors (the library's
 * repeated-call path: the last call's signature matches, so no checks, no
 * specialization and no compile), and of tf_run_managed, next to the same
 * call with the signature changing every time (alternating the index tensor
 * between two lengths: the checks and the specialization lookup run).
 *
 *   api_overhead [CALLS [MODE]]   (default 20000 calls, every mode; MODE 0, 1
 *                                 or 2 runs that mode alone, e.g. under
 *                                 callgrind: the instruction count's growth
 *                                 from CALLS to 2 CALLS is CALLS calls')
 *
 * On the CPU the executor's own work (the kernel, tiny here: x[idx] @ w at
 * M=1, K=N=8 in f32, one thread) is part of every figure; perf record on
 * this binary splits it. Prints one line per mode: "mode median_ns p10_ns
 * p90_ns". Exits 1 when a call fails. Not a test: ctest does not run it. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tilefuse/tilefuse.h"

static const char* kProgram =
    "def tiny(x: f32[T, 8], w: f32[8, 8], idx: i64[M] in [0, T)):\n"
    "    return x[idx] @ w\n";

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int cmp_ll(const void* a, const void* b) {
  const long long x = *(const long long*)a, y = *(const long long*)b;
  return x < y ? -1 : x > y;
}

static DLTensor tensor(void* data, DLDataTypeCode code, int bits, int ndim, int64_t* shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype.code = (uint8_t)code;
  t.dtype.bits = (uint8_t)bits;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

static void report(const char* mode, long long* t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_ll);
  printf("%-28s %8lld %8lld %8lld\n", mode, t[n / 2], t[n / 10], t[n - 1 - n / 10]);
}

int main(int argc, char** argv) {
  const int calls = argc > 1 ? atoi(argv[1]) : 20000;
  const int only = argc > 2 ? atoi(argv[2]) : -1;
  if (calls < 10) return 2;
  tf_options o;
  tf_options_init(&o);
  o.device = "cpu";
  o.threads = 1;
  tf_program* p = NULL;
  if (tf_compile_source(kProgram, "tiny.tfs", &o, &p) != TF_OK) {
    fprintf(stderr, "%s\n", tf_last_error());
    return 1;
  }
  float x[4 * 8], w[8 * 8], out[2 * 8];
  int64_t idx[2] = {1, 3};
  for (int i = 0; i < 32; ++i) x[i] = (float)i / 32;
  for (int i = 0; i < 64; ++i) w[i] = (float)(i % 7) / 7;
  int64_t xs[2] = {4, 8}, ws[2] = {8, 8}, is1[1] = {1}, is2[1] = {2}, os1[2] = {1, 8},
          os2[2] = {2, 8};
  DLTensor tx = tensor(x, kDLFloat, 32, 2, xs), tw = tensor(w, kDLFloat, 32, 2, ws),
           ti1 = tensor(idx, kDLInt, 64, 1, is1), ti2 = tensor(idx, kDLInt, 64, 1, is2),
           to1 = tensor(out, kDLFloat, 32, 2, os1), to2 = tensor(out, kDLFloat, 32, 2, os2);
  const DLTensor* in1[3] = {&tx, &tw, &ti1};
  const DLTensor* in2[3] = {&tx, &tw, &ti2};
  const DLTensor* out1[1] = {&to1};
  const DLTensor* out2[1] = {&to2};
  DLManagedTensor m[4];
  memset(m, 0, sizeof m);
  m[0].dl_tensor = tx;
  m[1].dl_tensor = tw;
  m[2].dl_tensor = ti1;
  m[3].dl_tensor = to1;
  DLManagedTensor* min[3] = {&m[0], &m[1], &m[2]};
  DLManagedTensor* mout[1] = {&m[3]};
  long long* t = malloc(sizeof(long long) * (size_t)calls);
  if (!t) return 2;
  printf("%-28s %8s %8s %8s\n", "mode (ns per call)", "median", "p10", "p90");
  for (int mode = 0; mode < 3; ++mode) {
    if (only >= 0 && mode != only) continue;
    for (int i = -calls / 10; i < calls; ++i) {
      const int odd = mode == 2 && (i & 1);
      const long long t0 = now_ns();
      tf_status s = mode == 1 ? tf_run_managed(p, min, 3, mout, 1, NULL, NULL)
                              : tf_run(p, odd ? in2 : in1, 3, odd ? out2 : out1, 1, NULL, NULL);
      const long long t1 = now_ns();
      if (s != TF_OK) {
        fprintf(stderr, "%s\n", tf_last_error());
        return 1;
      }
      if (i >= 0) t[i] = t1 - t0;
    }
    report(mode == 0   ? "tf_run, same signature"
           : mode == 1 ? "tf_run_managed, same"
                       : "tf_run, M alternating 1, 2",
           t, calls);
  }
  free(t);
  tf_program_free(p);
  return 0;
}
