// CUDA C++ to cubin with NVRTC (NVRTC documentation, "API Reference",
// section "Compilation").
//
// NVRTC is opened on its own (the same search order as loader.h), so that a
// machine with the toolkit but without a GPU or a driver can still compile:
// the compile-only tests and `emit` need no libcuda.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cuda/loader.h"

namespace tilefuse::cuda {

struct CompileOptions {
  // The target: "sm_80", "sm_90a", ... (NVRTC documentation, "Supported
  // Compile Options": --gpu-architecture; sm_XX yields a cubin).
  std::string arch = "sm_80";
  // Further NVRTC options, one per entry ("-std=c++17", "--ptxas-options=-v",
  // ...). "-Xptxas" followed by its value in the next entry is accepted too.
  std::vector<std::string> extra;
  // Pass every embedded device header (device_headers.h: "tf_numeric.cuh",
  // ...) to NVRTC, so that the source can #include them by name.
  bool device_headers = true;
};

// The resource usage ptxas reports with -v ("ptxas info : Used N registers,
// ..."), for one kernel.
struct PtxasUsage {
  // False when the log has no report: -v not given, or ptxas did not run
  // (seen on the H200 machine with libcuda loaded: a repeat compile of PTX
  // already assembled in the process returned an empty log).
  bool present = false;
  std::string function;  // the entry function it describes
  int registers = 0;
  int stack_frame_bytes = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int shared_bytes = 0;  // static shared memory ("smem")
};

struct CompiledKernel {
  std::string name;                   // the program name given to compile_cuda
  std::string arch;                   // as in CompileOptions
  std::vector<char> cubin;            // nvrtcGetCUBIN
  std::string log;                    // nvrtcGetProgramLog (warnings, ptxas -v report)
  PtxasUsage usage;                   // parsed from `log`
  std::vector<PtxasUsage> all_usage;  // one per entry function in the report
};

// The NVRTC entry points, opened once per process without libcuda. nullptr
// when libnvrtc cannot be loaded, with `why_not` saying every path tried.
const CudaLibraries* load_nvrtc(std::string* why_not = nullptr);

// "major.minor" of the loaded NVRTC, or "" when it is not loaded.
std::string nvrtc_version();

// Compiles `source` (one translation unit; kernels declared extern "C") for
// options.arch. A compile error throws UserError naming the source saved
// under failed_source_dir() and quoting the log; NVRTC itself missing throws
// UserError with the loader's reason.
CompiledKernel compile_cuda(const std::string& source, const std::string& name,
                            const CompileOptions& options = {});

// Parses every "Function properties for" / "Used N registers" block of a
// ptxas -v report. Entries appear in the order of the log.
std::vector<PtxasUsage> parse_ptxas_report(const std::string& log);

// failed/ under cache::default_cache_root(): $TILEFUSE_CACHE_DIR/failed,
// else $XDG_CACHE_HOME/tilefuse/failed, else $HOME/.cache/tilefuse/failed,
// else <temp dir>/tilefuse-cache/failed.
std::string failed_source_dir();

// Writes `source` atomically (a temporary file, then rename) into
// failed_source_dir() as <name>-<16 hex digits of its hash>.cu; returns the
// path. Throws UserError when the directory cannot be written.
std::string save_failed_source(const std::string& source, const std::string& name);

}  // namespace tilefuse::cuda
