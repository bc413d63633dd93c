/* The C API from C (so the header is checked as C, not C++), against
 * libtilefuse.so: a symbolic program run on CPU DLPack tensors at several
 * sizes with one compile, compared with a naive loop in double; every error
 * path (a malformed program, wrong dtype, shape, count, device, an index out
 * of range, NULL data, strides that overflow, negative counts, outputs
 * sharing memory, a FIFO) returns its status and a message naming what is
 * wrong; and the library never aborts. Prints one line per check; exits 1 on any failure. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tilefuse/tilefuse.h"

static int failures = 0;

#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      ++failures;                                         \
      printf("FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      printf(__VA_ARGS__);                                \
      printf("\n");                                       \
    }                                                     \
  } while (0)

static DLTensor tensor(void* data, DLDataTypeCode code, int bits, int ndim, int64_t* shape,
                       int64_t* strides) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = ndim;
  t.dtype.code = (uint8_t)code;
  t.dtype.bits = (uint8_t)bits;
  t.dtype.lanes = 1;
  t.shape = shape;
  t.strides = strides;
  t.byte_offset = 0;
  return t;
}

/* x[idx] @ w + b, relu: x f32[T, K], w f32[K, 24], b f32[24], idx i64[M]. */
static const char* kProgram =
    "def f(x: f32[T, K], w: f32[K, 24], b: f32[24], idx: i64[M] in [-T, T)):\n"
    "    return torch.relu(x[idx] @ w + b)\n";

static unsigned long long rng = 88172645463325252ull;
static double uniform(void) { /* xorshift64 in [-1, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static void run_at(tf_program* p, int64_t T, int64_t K, int64_t M) {
  float* x = malloc(sizeof(float) * (size_t)(T * K + 1));
  float* w = malloc(sizeof(float) * (size_t)(K * 24 + 1));
  float b[24];
  int64_t* idx = malloc(sizeof(int64_t) * (size_t)(M + 1));
  float* out = malloc(sizeof(float) * (size_t)(M * 24 + 1));
  for (int64_t i = 0; i < T * K; ++i) x[i] = (float)uniform();
  for (int64_t i = 0; i < K * 24; ++i) w[i] = (float)uniform();
  for (int i = 0; i < 24; ++i) b[i] = (float)uniform();
  for (int64_t i = 0; i < M; ++i) idx[i] = (int64_t)((uniform() + 1) / 2 * (double)(2 * T)) - T;
  for (int64_t i = 0; i < M * 24; ++i) out[i] = NAN; /* poisoned */
  int64_t xs[2] = {T, K}, ws[2] = {K, 24}, bs[1] = {24}, is[1] = {M}, os[2] = {M, 24};
  DLTensor tx = tensor(x, kDLFloat, 32, 2, xs, NULL), tw = tensor(w, kDLFloat, 32, 2, ws, NULL),
           tb = tensor(b, kDLFloat, 32, 1, bs, NULL), ti = tensor(idx, kDLInt, 64, 1, is, NULL),
           to = tensor(out, kDLFloat, 32, 2, os, NULL);
  const DLTensor* in[4] = {&tx, &tw, &tb, &ti};
  const DLTensor* outs[1] = {&to};
  tf_status s = tf_run(p, in, 4, outs, 1, NULL, NULL);
  CHECK(s == TF_OK, "T=%lld K=%lld M=%lld: %s %s", (long long)T, (long long)K, (long long)M,
        tf_status_name(s), tf_last_error());
  double err = 0, ref_norm = 0;
  for (int64_t m = 0; m < M; ++m) {
    const int64_t r = idx[m] < 0 ? idx[m] + T : idx[m];
    for (int n = 0; n < 24; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += (double)x[r * K + k] * (double)w[k * 24 + n];
      acc += b[n];
      if (acc < 0) acc = 0;
      const double d = out[m * 24 + n] - acc;
      err += d * d;
      ref_norm += acc * acc;
    }
  }
  CHECK(!(sqrt(err) > 1e-5 * sqrt(ref_norm)) && !isnan(err), "rel err %g at M=%lld",
        sqrt(err / (ref_norm > 0 ? ref_norm : 1)), (long long)M);
  /* The output shape for these inputs. */
  int64_t shape[4] = {-1, -1, -1, -1};
  int ndim = -1;
  s = tf_output_shape(p, in, 4, 0, shape, 4, &ndim);
  CHECK(s == TF_OK && ndim == 2 && shape[0] == M && shape[1] == 24, "output shape %lld %lld",
        (long long)shape[0], (long long)shape[1]);
  free(x);
  free(w);
  free(idx);
  free(out);
}

int main(void) {
  printf("tilefuse %s, API %d\n", tf_version(), tf_api_version());
  CHECK(tf_api_version() == TILEFUSE_API_VERSION, "api version");

  /* A malformed program: the diagnostic with file:line:col. */
  tf_program* bad = NULL;
  tf_status s = tf_compile_source("def f(x: f32[4]):\n    return x @ y\n", "bad.tfs", NULL, &bad);
  CHECK(s == TF_ERROR_COMPILE && bad == NULL, "%s", tf_status_name(s));
  CHECK(strstr(tf_last_error(), "bad.tfs:2:16: error:") != NULL, "%s", tf_last_error());
  CHECK(strstr(tf_last_error(), "^") != NULL, "caret: %s", tf_last_error());
  s = tf_compile_file("/nonexistent/x.tfs", NULL, &bad);
  CHECK(s == TF_ERROR_INVALID_ARGUMENT, "%s", tf_status_name(s));
  CHECK(tf_compile_source(NULL, NULL, NULL, &bad) == TF_ERROR_INVALID_ARGUMENT, "null source");
  tf_options o;
  tf_options_init(&o);
  o.device = "gpu";
  s = tf_compile_source(kProgram, "f.tfs", &o, &bad);
  CHECK(s == TF_ERROR_INVALID_ARGUMENT, "bad device: %s", tf_status_name(s));
  tf_options_init(&o);
  o.threads = -5;
  s = tf_compile_source(kProgram, "f.tfs", &o, &bad);
  CHECK(s == TF_ERROR_INVALID_ARGUMENT && strstr(tf_last_error(), "threads must be 0"),
        "negative threads: %s %s", tf_status_name(s), tf_last_error());
  /* A thread each: an absurd count is refused before any thread starts. */
  tf_options_init(&o);
  o.threads = 1 << 30;
  s = tf_compile_source(kProgram, "f.tfs", &o, &bad);
  CHECK(s == TF_ERROR_INVALID_ARGUMENT && strstr(tf_last_error(), "to 1024, got 1073741824"),
        "huge threads: %s %s", tf_status_name(s), tf_last_error());

  tf_options_init(&o);
  o.device = "cpu";
  tf_program* p = NULL;
  s = tf_compile_source(kProgram, "f.tfs", &o, &p);
  CHECK(s == TF_OK && p != NULL, "%s", tf_last_error());
  if (!p) return 1;
  CHECK(tf_program_num_inputs(p) == 4 && tf_program_num_outputs(p) == 1, "counts");
  CHECK(strstr(tf_program_signature(p), "\"shape\":[\"T\",\"K\"]") != NULL, "%s",
        tf_program_signature(p));

  /* Many sizes, one compile per specialization (every K and M here is not a
     multiple of 16, T neither, and the size buckets share the heuristic's
     configs: BLOCK_M 16 for M <= 16, BLOCK_K 16 .. 32). */
  run_at(p, 50, 20, 7);
  int after_first = tf_program_compile_count(p);
  run_at(p, 50, 20, 5);
  run_at(p, 51, 21, 3);
  CHECK(tf_program_compile_count(p) == after_first, "recompiled: %d after %d",
        tf_program_compile_count(p), after_first);
  run_at(p, 3, 1, 1);
  run_at(p, 17, 33, 0);
  run_at(p, 300, 64, 257);

  /* Errors name what is wrong. */
  float x[6 * 4], w[4 * 24], b[24], out[2 * 24];
  int64_t idx[2] = {0, 5};
  memset(x, 0, sizeof x);
  memset(w, 0, sizeof w);
  memset(b, 0, sizeof b);
  int64_t xs[2] = {6, 4}, ws[2] = {5, 24}, bs[1] = {24}, is[1] = {2}, os[2] = {2, 24};
  DLTensor tx = tensor(x, kDLFloat, 32, 2, xs, NULL), tw = tensor(w, kDLFloat, 32, 2, ws, NULL),
           tb = tensor(b, kDLFloat, 32, 1, bs, NULL), ti = tensor(idx, kDLInt, 64, 1, is, NULL),
           to = tensor(out, kDLFloat, 32, 2, os, NULL);
  const DLTensor* in[4] = {&tx, &tw, &tb, &ti};
  const DLTensor* outs[1] = {&to};
  s = tf_run(p, in, 4, outs, 1, NULL, NULL);
  CHECK(s == TF_ERROR_VALUE, "%s", tf_status_name(s));
  CHECK(strstr(tf_last_error(), "symbolic dim `K` is 4 in `x` (dim 1) but 5 in `w` (dim 0)"),
        "%s", tf_last_error());
  ws[0] = 4;
  tb.dtype.bits = 64;
  s = tf_run(p, in, 4, outs, 1, NULL, NULL);
  CHECK(s == TF_ERROR_TYPE && strstr(tf_last_error(), "input `b` must be f32, got f64"), "%s %s",
        tf_status_name(s), tf_last_error());
  tb.dtype.bits = 32;
  s = tf_run(p, in, 3, outs, 1, NULL, NULL);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "takes 4 inputs, got 3"), "%s",
        tf_last_error());
  os[0] = 3;
  s = tf_run(p, in, 4, outs, 1, NULL, NULL);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "output `out0` must have shape [2, 24]"),
        "%s", tf_last_error());
  os[0] = 2;
  tw.device.device_type = kDLCUDA;
  s = tf_run(p, in, 4, outs, 1, NULL, NULL);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "cuda:0"), "%s", tf_last_error());
  tw.device.device_type = kDLCPU;
  /* A DLPack device that cannot be: a CPU tensor's device_id is 0, a CUDA
     ordinal is not negative. */
  tw.device.device_id = 3;
  s = tf_run(p, in, 4, outs, 1, NULL, NULL);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "input `w` is a CPU tensor (DLPack kDLCPU) "
                                                       "with device_id 3"),
        "%s %s", tf_status_name(s), tf_last_error());
  tw.device.device_type = kDLCUDA;
  tw.device.device_id = -1;
  s = tf_run(p, in, 4, outs, 1, NULL, NULL);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "input `w` is on CUDA device -1"), "%s %s",
        tf_status_name(s), tf_last_error());
  tw.device.device_type = kDLCPU;
  tw.device.device_id = 0;
  /* idx[1] = 5 is in range for T = 6; 6 is not. */
  s = tf_run(p, in, 4, outs, 1, NULL, NULL);
  CHECK(s == TF_OK, "%s", tf_last_error());
  idx[1] = 6;
  s = tf_run(p, in, 4, outs, 1, NULL, NULL);
  CHECK(s == TF_ERROR_INDEX, "%s", tf_status_name(s));
  CHECK(strstr(tf_last_error(), "index 6 is out of bounds for dim 0 of `x` (size 6): `idx`[1] = 6"),
        "%s", tf_last_error());
  /* The message starts at the gather's place in the program: file:line:col. */
  CHECK(strncmp(tf_last_error(), "f.tfs:2:25: index 6 is out of bounds", 36) == 0, "%s",
        tf_last_error());
  /* The program is still usable afterwards. */
  idx[1] = -6;
  s = tf_run(p, in, 4, outs, 1, NULL, NULL);
  CHECK(s == TF_OK, "%s", tf_last_error());
  /* Hostile tensors and counts get errors, and the program stays usable: a
     NULL data pointer on a tensor with elements, strides whose reach
     overflows int64, negative counts (tf_run_managed sizes a buffer by them). */
  tx.data = NULL;
  s = tf_run(p, in, 4, outs, 1, NULL, NULL);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "input `x` has 24 elements and NULL data"),
        "%s %s", tf_status_name(s), tf_last_error());
  tx.data = x;
  int64_t huge_strides[2] = {INT64_MAX / 2, 1};
  tx.strides = huge_strides;
  s = tf_run(p, in, 4, outs, 1, NULL, NULL);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "input `x`") &&
            strstr(tf_last_error(), "reaches past 2^63 bytes"),
        "%s %s", tf_status_name(s), tf_last_error());
  tx.strides = NULL;
  /* A byte_offset that wraps data + byte_offset around the address space (it
     reached 8 bytes before the buffer), and data whose elements run past
     the address space's end: errors, nothing read or written. */
  tx.byte_offset = (uint64_t)-8;
  s = tf_run(p, in, 4, outs, 1, NULL, NULL);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "input `x` has the byte_offset "
                                                       "18446744073709551608"),
        "%s %s", tf_status_name(s), tf_last_error());
  tx.byte_offset = 0;
  to.byte_offset = (uint64_t)1 << 63;
  s = tf_run(p, in, 4, outs, 1, NULL, NULL);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "output `out0` has the byte_offset"),
        "%s %s", tf_status_name(s), tf_last_error());
  to.byte_offset = 0;
  tx.data = (void*)(UINTPTR_MAX - 15);
  s = tf_run(p, in, 4, outs, 1, NULL, NULL);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "input `x` starts at address") &&
            strstr(tf_last_error(), "run past the end of the address space"),
        "%s %s", tf_status_name(s), tf_last_error());
  tx.data = x;
  s = tf_run(p, in, -1, outs, 1, NULL, NULL);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "negative input count -1"), "%s %s",
        tf_status_name(s), tf_last_error());
  s = tf_run_managed(p, NULL, 20, NULL, -20, NULL, NULL);
  CHECK(s == TF_ERROR_INVALID_ARGUMENT && strstr(tf_last_error(), "negative"), "%s %s",
        tf_status_name(s), tf_last_error());
  s = tf_run_managed(p, NULL, 20, NULL, 1, NULL, NULL);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "takes 4 inputs and 1 output, got 20 and 1"),
        "%s %s", tf_status_name(s), tf_last_error());
  s = tf_run(p, in, 4, outs, 1, NULL, NULL);
  CHECK(s == TF_OK, "%s", tf_last_error());
  CHECK(tf_run(NULL, in, 4, outs, 1, NULL, NULL) == TF_ERROR_INVALID_ARGUMENT, "null program");
  CHECK(tf_run(p, NULL, 4, outs, 1, NULL, NULL) == TF_ERROR_VALUE, "null inputs");
  tf_run_options ro;
  tf_run_options_init(&ro);
  ro.struct_size = 4;
  CHECK(tf_run(p, in, 4, outs, 1, &ro, NULL) == TF_ERROR_INVALID_ARGUMENT, "struct_size");
  size_t ws_bytes = 99;
  CHECK(tf_workspace_size(p, in, 4, &ws_bytes) == TF_OK && ws_bytes == 0, "cpu workspace");
  /* tf_workspace_size checks the inputs as tf_run does, on the CPU too (it
     answered TF_OK, 0 bytes, for inputs tf_run refuses). */
  tw.dtype.code = kDLInt;
  s = tf_workspace_size(p, in, 4, &ws_bytes);
  CHECK(s == TF_ERROR_TYPE && strstr(tf_last_error(), "input `w` must be f32"), "%s %s",
        tf_status_name(s), tf_last_error());
  tw.dtype.code = kDLFloat;
  tw.ndim = 1;
  s = tf_workspace_size(p, in, 4, &ws_bytes);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "input `w` must have 2 dims"), "%s %s",
        tf_status_name(s), tf_last_error());
  tw.ndim = 2;
  CHECK(tf_synchronize(p) == TF_OK, "%s", tf_last_error());

  /* explain and tune. */
  char* json = NULL;
  s = tf_explain(p, in, 4, "cpu", &json);
  CHECK(s == TF_OK && json && strstr(json, "\"symbols\":[\"T\",\"K\",\"M\"]"), "%s",
        json ? json : tf_last_error());
  tf_free_string(json);
  char* report = NULL;
  char* no_json = NULL;
  const char* sizes[2] = {"T=64,K=32,M=16", "T=64,K=32,M=1000"};
  /* Tuning needs a CUDA device: p is compiled with device "cpu". */
  report = (char*)1;
  s = tf_tune(p, sizes, 2, 0, &report);
  CHECK(s == TF_ERROR_UNSUPPORTED && report == NULL &&
            strstr(tf_last_error(), "tuning needs a CUDA device") &&
            strstr(tf_last_error(), "device=\"cpu\""),
        "%s %s", tf_status_name(s), tf_last_error());
  CHECK(strcmp(tf_status_name(TF_ERROR_UNSUPPORTED), "TF_ERROR_UNSUPPORTED") == 0, "status name");
  const char* missing[1] = {"T=64,K=32"};
  s = tf_tune(p, missing, 1, 0, NULL);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "symbolic dim M needs a size"), "%s %s",
        tf_status_name(s), tf_last_error());
  const char* bad_sizes[1] = {"T=4,Q"};
  CHECK(tf_tune(p, bad_sizes, 1, 0, NULL) == TF_ERROR_INVALID_ARGUMENT, "bad sizes");
  const char* twice[1] = {"T=4,K=8,M=2,T=8"};
  s = tf_tune(p, twice, 1, 0, NULL);
  CHECK(s == TF_ERROR_INVALID_ARGUMENT && strstr(tf_last_error(), "`T` twice"), "%s %s",
        tf_status_name(s), tf_last_error());
  /* Negative counts say so, naming the argument and its value (tf_tune's
     said "program or sizes is NULL"); NULL pointers name which one. */
  s = tf_tune(p, sizes, -1, 0, NULL);
  CHECK(s == TF_ERROR_INVALID_ARGUMENT && strstr(tf_last_error(), "num_sizes is negative (-1)") &&
            !strstr(tf_last_error(), "NULL"),
        "%s %s", tf_status_name(s), tf_last_error());
  s = tf_tune(p, NULL, 2, 0, NULL);
  CHECK(
      s == TF_ERROR_INVALID_ARGUMENT && strstr(tf_last_error(), "sizes is NULL but num_sizes is 2"),
      "%s %s", tf_status_name(s), tf_last_error());
  s = tf_tune(NULL, sizes, 2, 0, NULL);
  CHECK(s == TF_ERROR_INVALID_ARGUMENT && strcmp(tf_last_error(), "program is NULL") == 0, "%s %s",
        tf_status_name(s), tf_last_error());
  const char* null_binding[2] = {"T=64,K=32,M=16", NULL};
  s = tf_tune(p, null_binding, 2, 0, NULL);
  CHECK(s == TF_ERROR_INVALID_ARGUMENT && strstr(tf_last_error(), "sizes[1] is NULL"), "%s %s",
        tf_status_name(s), tf_last_error());
  s = tf_explain(p, NULL, -3, "cpu", &no_json);
  CHECK(s == TF_ERROR_VALUE && no_json == NULL &&
            strstr(tf_last_error(), "negative input count -3 (num_inputs)"),
        "%s %s", tf_status_name(s), tf_last_error());
  s = tf_workspace_size(p, in, -2, &ws_bytes);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "negative input count -2 (num_inputs)"),
        "%s %s", tf_status_name(s), tf_last_error());
  int64_t out_shape[2];
  int out_ndim = 0;
  s = tf_output_shape(p, in, 4, 0, out_shape, -1, &out_ndim);
  CHECK(s == TF_ERROR_INVALID_ARGUMENT && strstr(tf_last_error(), "capacity is negative (-1)"),
        "%s %s", tf_status_name(s), tf_last_error());
  s = tf_output_shape(p, in, -1, 0, out_shape, 2, &out_ndim);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "negative input count -1 (num_inputs)"),
        "%s %s", tf_status_name(s), tf_last_error());
  s = tf_output_shape(p, in, 4, -1, out_shape, 2, &out_ndim);
  CHECK(s == TF_ERROR_INVALID_ARGUMENT && strstr(tf_last_error(), "no output -1"), "%s %s",
        tf_status_name(s), tf_last_error());
  s = tf_run(p, in, 4, outs, -1, NULL, NULL);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "negative output count -1 (num_outputs)"),
        "%s %s", tf_status_name(s), tf_last_error());
  const char* unknown[1] = {"T=4,K=8,M=2,Z=16"};
  s = tf_tune(p, unknown, 1, 0, NULL);
  CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "`Z` is not a symbolic dim"), "%s %s",
        tf_status_name(s), tf_last_error());
  s = tf_explain(p, NULL, 0, "sm_42", &no_json);
  CHECK(s == TF_ERROR_VALUE && no_json == NULL && strstr(tf_last_error(), "unknown target"),
        "%s %s", tf_status_name(s), tf_last_error());
  tf_program_free(p);
  tf_program_free(NULL);

  /* Sizes that make a value too large (stride-0 inputs of one float): the
     error starts at the value's place in the program in tf_explain,
     tf_output_shape and tf_run alike (tf_explain's had no file:line:col). */
  tf_program* big = NULL;
  s = tf_compile_source("def g(x: f32[A, 1], y: f32[1, B]):\n    return x + y\n", "big.tfs", NULL,
                        &big);
  CHECK(s == TF_OK, "%s", tf_last_error());
  if (big) {
    float one = 1.0f;
    int64_t bxs[2] = {(int64_t)1 << 21, 1}, bys[2] = {1, (int64_t)1 << 20}, zero[2] = {0, 0};
    DLTensor bx = tensor(&one, kDLFloat, 32, 2, bxs, zero),
             by = tensor(&one, kDLFloat, 32, 2, bys, zero);
    const DLTensor* bin[2] = {&bx, &by};
    s = tf_explain(big, bin, 2, "cpu", &no_json);
    CHECK(s == TF_ERROR_VALUE && no_json == NULL &&
              strncmp(tf_last_error(),
                      "big.tfs:2:14: at A=2097152, B=1048576 the program has a "
                      "tensor that is too large: the result of add",
                      90) == 0,
          "%s %s", tf_status_name(s), tf_last_error());
    int64_t big_shape[2];
    int big_ndim = 0;
    s = tf_output_shape(big, bin, 2, 0, big_shape, 2, &big_ndim);
    CHECK(s == TF_ERROR_VALUE && strncmp(tf_last_error(), "big.tfs:2:14: ", 14) == 0, "%s %s",
          tf_status_name(s), tf_last_error());
    tf_program_free(big);
  }

  /* Two outputs in one buffer: an error, not one result silently lost. */
  tf_program* two = NULL;
  s = tf_compile_source("def g(a: f32[4]):\n    return a * 2.0, a + 1.0\n", "two.tfs", NULL,
                        &two);
  CHECK(s == TF_OK, "%s", tf_last_error());
  if (two) {
    float a[4] = {1, 2, 3, 4}, shared[4];
    int64_t s4[1] = {4};
    DLTensor ta = tensor(a, kDLFloat, 32, 1, s4, NULL), o0 = tensor(shared, kDLFloat, 32, 1, s4, NULL),
             o1 = tensor(shared, kDLFloat, 32, 1, s4, NULL);
    const DLTensor* ins2[1] = {&ta};
    const DLTensor* outs2[2] = {&o0, &o1};
    s = tf_run(two, ins2, 1, outs2, 2, NULL, NULL);
    CHECK(s == TF_ERROR_VALUE && strstr(tf_last_error(), "overlaps output"), "%s %s",
          tf_status_name(s), tf_last_error());
    /* Host memory declared as CUDA memory is never launched on: without a GPU
       the call says there is none; with one, that the pointer is not CUDA
       memory. */
    float other[4];
    o0.data = other;
    ta.device.device_type = o0.device.device_type = kDLCUDA;
    const DLTensor* outs1[1] = {&o0};
    tf_program* one = NULL;
    s = tf_compile_source("def g(a: f32[4]):\n    return a * 2.0\n", "one.tfs", NULL, &one);
    CHECK(s == TF_OK, "%s", tf_last_error());
    if (one) {
      s = tf_run(one, ins2, 1, outs1, 1, NULL, NULL);
      CHECK((s == TF_ERROR_VALUE && strstr(tf_last_error(), "input `a` is declared on cuda:0 "
                                                            "(DLPack kDLCUDA) but its data pointer") &&
             strstr(tf_last_error(), "is not CUDA memory")) ||
                (s == TF_ERROR_RUNTIME && strstr(tf_last_error(), "No CUDA device")),
            "%s %s", tf_status_name(s), tf_last_error());
      tf_program_free(one);
    }
    tf_program_free(two);
  }

  /* NULL strides on absurd shapes: an element count past int64, or row-major
     strides past it (a size-0 dim counts as 1 in them), are errors naming the
     shape; computing those strides overflowed int64 (undefined behaviour). */
  tf_program* three = NULL;
  s = tf_compile_source("def h(x: f32[A, B, C]):\n    return x + 1.0\n", "three.tfs", NULL,
                        &three);
  CHECK(s == TF_OK, "%s", tf_last_error());
  if (three) {
    float v[1] = {2}, r[1] = {0};
    int64_t huge[3] = {(int64_t)1 << 62, 4, 1}, empty[3] = {0, (int64_t)1 << 62, 4},
            ones[3] = {1, 1, 1};
    DLTensor tv = tensor(v, kDLFloat, 32, 3, huge, NULL), tr = tensor(r, kDLFloat, 32, 3, ones, NULL);
    const DLTensor* ins3[1] = {&tv};
    const DLTensor* outs3[1] = {&tr};
    s = tf_run(three, ins3, 1, outs3, 1, NULL, NULL);
    CHECK(s == TF_ERROR_VALUE &&
              strstr(tf_last_error(), "input `x` has the shape [4611686018427387904, 4, 1], "
                                      "whose element count overflows int64"),
          "%s %s", tf_status_name(s), tf_last_error());
    tv.shape = empty;
    s = tf_run(three, ins3, 1, outs3, 1, NULL, NULL);
    CHECK(s == TF_ERROR_VALUE &&
              strstr(tf_last_error(), "input `x` has the shape [0, 4611686018427387904, 4] and "
                                      "NULL strides, and its row-major strides overflow int64"),
          "%s %s", tf_status_name(s), tf_last_error());
    tv.shape = ones;
    s = tf_run(three, ins3, 1, outs3, 1, NULL, NULL);
    CHECK(s == TF_OK && r[0] == 3.0f, "%s %s %g", tf_status_name(s), tf_last_error(), r[0]);
    tf_program_free(three);
  }

  /* A FIFO with no writer is refused, not waited on. */
  char fifo[64];
  snprintf(fifo, sizeof fifo, "/tmp/tf_c_api_test_%d.tfs", (int)getpid());
  unlink(fifo);
  if (mkfifo(fifo, 0600) == 0) {
    tf_program* q = NULL;
    char expected[160];
    snprintf(expected, sizeof expected,
             "cannot read '%s': not a regular file (a FIFO) and nothing is writing to it", fifo);
    s = tf_compile_file(fifo, NULL, &q);
    CHECK(s == TF_ERROR_INVALID_ARGUMENT && q == NULL && strstr(tf_last_error(), expected),
          "a writerless FIFO: %s %s", tf_status_name(s), tf_last_error());
    unlink(fifo);
  }

  /* /dev/zero stops at the 16 MiB program limit; the error names no CLI
     flag (C callers have none: it said "--max-program-size raises the
     limit"). */
  {
    tf_program* q = NULL;
    s = tf_compile_file("/dev/zero", NULL, &q);
    CHECK(s == TF_ERROR_INVALID_ARGUMENT && q == NULL &&
              strstr(tf_last_error(), "longer than 16 MiB, the most a program may be") != NULL &&
              strstr(tf_last_error(), "--max-program-size") == NULL,
          "/dev/zero: %s %s", tf_status_name(s), tf_last_error());
  }

  /* Program text has the file's limit too: 16 MiB compiles (a comment pads
     it), one byte more is refused before it is parsed (it was parsed: a
     100 MB text took 30 s and 4.7 GB, a larger one exhausted the machine). */
  {
    const size_t limit = (size_t)16 << 20;
    const char* head = "def pad(x: f32[4]):\n    return x * 2.0\n#";
    char* text = malloc(limit + 2);
    CHECK(text != NULL, "malloc");
    if (text) {
      memset(text, 'c', limit + 1);
      memcpy(text, head, strlen(head));
      text[limit] = '\0';
      tf_program* q = NULL;
      s = tf_compile_source(text, "pad.tfs", NULL, &q);
      CHECK(s == TF_OK && q != NULL, "16 MiB of text: %s %s", tf_status_name(s), tf_last_error());
      tf_program_free(q);
      q = NULL;
      text[limit] = 'c';
      text[limit + 1] = '\0';
      s = tf_compile_source(text, "pad.tfs", NULL, &q);
      CHECK(s == TF_ERROR_INVALID_ARGUMENT && q == NULL &&
                strstr(tf_last_error(),
                       "pad.tfs: the program text is longer than 16 MiB, the most a program may "
                       "be") != NULL,
            "16 MiB + 1 byte of text: %s %s", tf_status_name(s), tf_last_error());
      free(text);
    }
  }

  /* A program file whose path is not UTF-8 (byte 0xE9): it compiles, and
     its signature (JSON) carries U+FFFD for the byte (it was an internal
     error: the JSON writer refused the byte). */
  {
    char latin1[64];
    snprintf(latin1, sizeof latin1, "/tmp/tf_c_api_caf\xe9_%d.tfs", (int)getpid());
    FILE* f = fopen(latin1, "w");
    if (f) {
      fputs("def caf(x: f32[4, 3], w: f32[3, 2]):\n    return x @ w\n", f);
      fclose(f);
      tf_program* q = NULL;
      s = tf_compile_file(latin1, NULL, &q);
      CHECK(s == TF_OK && q != NULL, "a non-UTF-8 path: %s %s", tf_status_name(s), tf_last_error());
      if (q) {
        CHECK(strstr(tf_program_signature(q), "caf\xef\xbf\xbd_") != NULL, "%s",
              tf_program_signature(q));
        tf_program_free(q);
      }
      unlink(latin1);
    }
  }

  if (failures) {
    printf("%d check(s) failed\n", failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
