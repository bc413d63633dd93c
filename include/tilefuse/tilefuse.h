/* tilefuse's C API: compile a .tfs program and run it on DLPack tensors.
 *
 * libtilefuse.so (built next to the `tilefuse` CLI) exports only the tf_*
 * functions below; it links no CUDA library (libcuda, libnvrtc and
 * libcublasLt are opened at run time, as the CLI does), so the same library
 * runs with or without a GPU.
 *
 *   tf_options o;
 *   tf_options_init(&o);
 *   tf_program* p = NULL;
 *   if (tf_compile_file("gather_mm.tfs", &o, &p) != TF_OK) puts(tf_last_error());
 *   const DLTensor* in[3] = {&x, &y, &index};   // x: f16[T, 2048] ...
 *   const DLTensor* out[1] = {&result};          // caller-allocated, contiguous
 *   tf_run_options r;
 *   tf_run_options_init(&r);
 *   r.stream = my_stream;                        // CUDA tensors: the launches' stream
 *   size_t need = 0;
 *   tf_status s = tf_run(p, in, 3, out, 1, &r, &need);
 *   ...
 *   tf_program_free(p);
 *
 * Errors. Every function returns a tf_status (or, for the few that return
 * something else, says what it returns on failure); on failure
 * tf_last_error() is a message for people: a compile error is the
 * file:line:col diagnostic with the source line and a caret; an argument
 * error names the parameter (and for a symbolic dim bound two ways both
 * tensors and the dim); an index error names the indexed tensor, the index
 * tensor, the position and the value. No function aborts the process or lets
 * a C++ exception out, on any input.
 *
 * Ownership. A tf_program belongs to the caller, who frees it with
 * tf_program_free. Tensors are borrowed for the duration of the call only
 * (tilefuse never calls a DLManagedTensor's deleter and keeps no pointer to
 * a tensor after a call returns; but on CUDA the launched kernels read and
 * write the memory until the stream reaches them, as with any CUDA launch).
 * Strings returned as `const char*` are owned by tilefuse (see each);
 * strings returned through `char**` are the caller's, freed with
 * tf_free_string.
 *
 * Thread safety. Functions may be called from any thread. Calls on one
 * tf_program are serialized by a lock inside it (a first call at new sizes
 * compiles while holding it); distinct programs run concurrently.
 * tf_last_error() is per thread.
 *
 * Shapes and symbolic dims. A parameter dim may be a name
 * (`x: f16[T, 4096]`): bound at each call from the inputs' shapes (the same
 * name must have one size in every input), passed to the kernels as an
 * argument. Kernels are compiled once per specialization: which symbolic
 * dims are multiples of 16, whether every offset fits 32 bits, the inputs'
 * strides and alignments, and the size bucket's tuned config (each symbolic
 * dim rounded up to a power of two); a new size in the same specialization
 * does not compile anything.
 *
 * Tensors. DLTensor with lanes 1 of dtype (code, bits): f16 (kDLFloat, 16),
 * bf16 (kDLBfloat, 16), f32, f64, i8, u8, i32, i64, bool (code 6, the
 * kDLBool of DLPack 0.8+, 8 bits), f8e4m3 (code 10, DLPack 1.1's
 * kDLFloat8_e4m3fn) and f8e5m2 (code 12, kDLFloat8_e5m2). Device kDLCPU or
 * kDLCUDAHost (run by the CPU executor), kDLCUDA or kDLCUDAManaged (run on
 * that GPU). Strides in elements, non-negative (NULL: row-major); data plus
 * byte_offset is the first element (TF_ERROR_VALUE where that sum, or the
 * elements' bytes after it, would wrap around the address space). Inputs
 * may have any such layout;
 * outputs must be row-major contiguous (and 16-byte aligned on a GPU). All
 * tensors of a call are on one device.
 */
#ifndef TILEFUSE_TILEFUSE_H_
#define TILEFUSE_TILEFUSE_H_

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TF_API __attribute__((visibility("default")))
#else
#define TF_API
#endif

/* The version of this API; tf_api_version() returns the library's. */
#define TILEFUSE_API_VERSION 2

typedef enum tf_status {
  TF_OK = 0,
  TF_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, a bad option value, a count that differs */
  TF_ERROR_COMPILE = 2,          /* the program does not compile (the diagnostic) */
  TF_ERROR_TYPE = 3,             /* an argument of the wrong dtype */
  TF_ERROR_VALUE = 4,            /* an argument of the wrong rank, shape, layout or device */
  TF_ERROR_INDEX = 5,            /* an index out of range, found at run time */
  TF_ERROR_WORKSPACE = 6,        /* the workspace is too small: see tf_run; nothing ran */
  TF_ERROR_RUNTIME = 7,          /* no usable GPU, a CUDA or NVRTC failure, a kernel it cannot run */
  TF_ERROR_OUT_OF_MEMORY = 8,    /* host or device memory ran out */
  TF_ERROR_INTERNAL = 9,         /* a bug in tilefuse (please report it) */
  TF_ERROR_UNSUPPORTED = 10      /* nothing to do here: tf_tune without a CUDA device (API 2) */
} tf_status;

/* A compiled program (opaque). */
typedef struct tf_program tf_program;

/* Compile options; set every field with tf_options_init first. */
typedef struct tf_options {
  uint32_t struct_size; /* sizeof(tf_options), set by tf_options_init */
  const char* device;   /* "auto" (default: where each call's tensors are), "cpu", "cuda" */
  const char* plan;     /* "auto" (default: the tuned choice, else fused), "fused", "unfused" */
  int allow_tf32;       /* 1: f32 GEMMs on TF32 tensor cores (GPU); default 0: exact f32 */
  int tuning;           /* 1 (default): use tunings from the tuning cache (tf_tune, `tilefuse
                           tune`); a call never tunes. 0: heuristic configs only */
  const char* cache_dir; /* root of the kernel and tuning caches; NULL (default):
                            $TILEFUSE_CACHE_DIR, else $XDG_CACHE_HOME/tilefuse, else
                            ~/.cache/tilefuse */
  int threads;          /* CPU executor threads, 0 to 1024; 0 (default): all */
} tf_options;

TF_API void tf_options_init(tf_options* options);

/* Parses and checks a program (no kernel is compiled yet: that happens at
 * the first call of each specialization). `source` is the program text and
 * `name` the file name its diagnostics use (NULL: "<source>"). On success
 * *out is a new program. options may be NULL (the defaults). A text longer
 * than 16 MiB (a program file's limit) is TF_ERROR_INVALID_ARGUMENT, "NAME:
 * the program text is longer than 16 MiB, the most a program may be", and
 * is not read past that. */
TF_API tf_status tf_compile_source(const char* source, const char* name, const tf_options* options,
                                   tf_program** out);
/* The same for the program in the file at `path`. A file that cannot be
 * read is TF_ERROR_INVALID_ARGUMENT, "cannot read 'PATH': WHY" (missing, a
 * directory, longer than 16 MiB, a FIFO that nothing is writing to, a device
 * with no input ready: reading never waits for a writer that may not come). */
TF_API tf_status tf_compile_file(const char* path, const tf_options* options, tf_program** out);
/* Frees a program (NULL is fine): waits for its own last launch on each GPU
 * (its kernels must finish before their code is unloaded; not for the whole
 * device, so a CUDA graph capture on another stream goes on undisturbed), then
 * frees it. A CUDA graph that captured its launches must not be replayed
 * afterwards. */
TF_API void tf_program_free(tf_program* program);

/* The calling thread's message of its last failed call ("" when none).
 * Valid until the thread's next tilefuse call. */
TF_API const char* tf_last_error(void);
/* "TF_OK", "TF_ERROR_COMPILE", ... (a static string). */
TF_API const char* tf_status_name(tf_status status);
/* The library's version ("0.1.0") and API version (TILEFUSE_API_VERSION). */
TF_API const char* tf_version(void);
TF_API int tf_api_version(void);

/* The program's signature as JSON (owned by the program, valid until it is
 * freed; NULL only for a NULL program):
 *   {"name": "gather_mm", "file": "...", "symbols": ["T", "M"],
 *    "parameters": [{"name": "x", "dtype": "f16", "shape": ["T", 2048]},
 *                   {"name": "index", "dtype": "i64", "shape": ["M"], "range": [0, "T"]}],
 *    "outputs": [{"name": "out0", "dtype": "f16", "shape": ["M", 2048]}]}
 * A dim is a number, or a symbol's name; dtypes are tilefuse's names. */
TF_API const char* tf_program_signature(const tf_program* program);
TF_API int tf_program_num_inputs(const tf_program* program);  /* -1 for NULL */
TF_API int tf_program_num_outputs(const tf_program* program); /* -1 for NULL */

/* The shape output `index` has for these inputs (their symbolic dims
 * bound): its rank in *ndim and up to `capacity` sizes in `shape`. Checks
 * the inputs as tf_run does. A NULL program or ndim, a negative capacity, a
 * NULL shape with a positive capacity and an index that is not an output's
 * are TF_ERROR_INVALID_ARGUMENT, each message naming the argument. */
TF_API tf_status tf_output_shape(tf_program* program, const DLTensor* const* inputs,
                                 int num_inputs, int index, int64_t* shape, int capacity,
                                 int* ndim);

/* Per-call options; set every field with tf_run_options_init first. */
typedef struct tf_run_options {
  uint32_t struct_size; /* sizeof(tf_run_options) */
  void* stream;         /* CUDA: the CUstream / cudaStream_t to launch on; NULL: the default
                           stream. Ignored on the CPU. */
  void* workspace;      /* CUDA: device scratch for intermediate values, or NULL */
  size_t workspace_bytes;
  int sync;             /* CUDA: 1 waits for the stream and reports a failed index check in
                           this call; 0 (default) does not wait (see tf_run) */
} tf_run_options;

TF_API void tf_run_options_init(tf_run_options* options);

/* Runs the program: `inputs` one per parameter, `outputs` one per output
 * (caller-allocated, of the output's dtype and shape for these inputs,
 * contiguous; an output may overlap neither an input nor another output).
 * options may be NULL. The counts must be the program's (TF_ERROR_VALUE
 * otherwise, a negative one too: "negative input count -1 (num_inputs)");
 * a tensor with elements needs non-NULL data, and strides whose
 * farthest element lies 2^63 bytes or more from the first are refused
 * (TF_ERROR_VALUE naming the tensor).
 *
 * On the CPU the call is synchronous: the outputs are written when it
 * returns, and an index out of range is TF_ERROR_INDEX from this call.
 *
 * On a GPU every kernel is launched on options->stream and the call returns
 * without waiting (no device synchronization, no memory allocation), so it
 * may be captured in a CUDA graph once the program has been called at the
 * same sizes (the first call compiles and loads kernels, which a capture
 * does not allow: TF_ERROR_RUNTIME then). Intermediate values go to
 * options->workspace: when the plan needs more than workspace_bytes,
 * nothing runs, the result is TF_ERROR_WORKSPACE and *workspace_needed (when
 * not NULL) is the size needed (tf_workspace_size tells in advance). An
 * index out of range is written by the kernel to a status word in host
 * memory and reported as TF_ERROR_INDEX by a later tf_run of the same
 * program (once the failing kernel has finished) or by tf_synchronize, or by
 * this call with options->sync; the device stays usable. This is how CUDA
 * reports asynchronous errors, except that the context survives.
 *
 * Every function that works on a GPU makes that GPU's primary context current
 * on the calling thread to do it, and leaves the thread's current context as
 * it found it (none included) when it returns, failed or not: a caller's
 * current device (cudaGetDevice, torch.cuda.current_device()) does not change. */
TF_API tf_status tf_run(tf_program* program, const DLTensor* const* inputs, int num_inputs,
                        const DLTensor* const* outputs, int num_outputs,
                        const tf_run_options* options, size_t* workspace_needed);

/* tf_run on DLManagedTensors (their dl_tensor; the deleters are never called).
 * Negative counts are TF_ERROR_INVALID_ARGUMENT, counts other than the
 * program's TF_ERROR_VALUE, both before anything is read. */
TF_API tf_status tf_run_managed(tf_program* program, DLManagedTensor* const* inputs,
                                int num_inputs, DLManagedTensor* const* outputs, int num_outputs,
                                const tf_run_options* options, size_t* workspace_needed);

/* The device workspace a tf_run with these inputs needs (0 on the CPU);
 * compiles the program for them if it was not yet. The inputs are checked
 * as tf_run checks them (a negative num_inputs is TF_ERROR_VALUE). */
TF_API tf_status tf_workspace_size(tf_program* program, const DLTensor* const* inputs,
                                   int num_inputs, size_t* bytes);

/* Waits for every GPU this program ran on (cuCtxSynchronize) and reports a
 * failed index check of any earlier call (TF_ERROR_INDEX). TF_OK on the CPU. */
TF_API tf_status tf_synchronize(tf_program* program);

/* The explain account (the CLI's `explain --json`) of the kernels for
 * `target` ("cpu", "sm_80", "sm_90a", ...; NULL: where calls would run),
 * specialized for `inputs` when not NULL (their sizes and layouts), else the
 * generic kernels. *json is the caller's (tf_free_string). A negative
 * num_inputs is TF_ERROR_VALUE, with or without inputs. */
TF_API tf_status tf_explain(tf_program* program, const DLTensor* const* inputs, int num_inputs,
                            const char* target, char** json);

/* Tunes the program ahead of time on the GPU at each of `num_sizes`
 * bindings, each "T=4096,M=16" (a fixed program: ""), keeping the winner
 * per size bucket in the tuning cache (retune: search again even when one
 * is cached). *report (when not NULL; the caller's) has one line per
 * binding. Tuning needs a CUDA device: for a program compiled with
 * device "cpu", or where no GPU is usable, the bindings are checked
 * (TF_ERROR_INVALID_ARGUMENT / TF_ERROR_VALUE as below), then nothing is
 * tuned and the result is TF_ERROR_UNSUPPORTED, tf_last_error() saying why
 * (*report stays NULL). A NULL program, a negative num_sizes, a NULL sizes
 * with a positive num_sizes, a NULL binding and malformed bindings are
 * TF_ERROR_INVALID_ARGUMENT, the message naming the argument (and the
 * count); a size for a name that is not a symbol, or a missing one,
 * TF_ERROR_VALUE. */
TF_API tf_status tf_tune(tf_program* program, const char* const* sizes, int num_sizes, int retune,
                         char** report);

/* How many specializations the program has compiled so far (-1 for NULL). */
TF_API int tf_program_compile_count(const tf_program* program);

/* Frees a string tilefuse returned through char** (NULL is fine). */
TF_API void tf_free_string(char* s);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TILEFUSE_TILEFUSE_H_ */
