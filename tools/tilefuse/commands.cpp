#include "commands.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <future>
#include <cmath>
#include <limits>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "core/error.h"
#include "driver/bench.h"
#include "driver/callable.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "driver/execute.h"
#include "driver/explain.h"
#include "driver/specialize.h"
#include "driver/tune.h"
#include "frontend/frontend.h"
#include "io/npy.h"
#include "reference/eval.h"
#include "reference/inputs.h"
#include "runtime/cuda/cublaslt.h"
#include "runtime/cuda/loader.h"
#include "schedule/schedule.h"
#include "tir/printer.h"

namespace tilefuse::cli {
namespace {

// Prints a UserError as a diagnostic against `source`, the program's text
// as read (empty when it could not be read: the error says why).
int report(const UserError& e, const std::string& file, std::string_view source) {
  std::string text = format_diagnostic(file, source, e);
  std::fprintf(stderr, "%s", text.c_str());
  if (text.empty() || text.back() != '\n') std::fputc('\n', stderr);
  return kUserError;
}

// A `--gemm-config` value: "BMxBNxBK/num_stages/num_warps" with BLOCK_M and
// BLOCK_N powers of two or multiples of 64 (192: wgmma's m64n192, three
// 64-column strips of B a warpgroup) and BLOCK_K a power of two (16..256,
// BLOCK_K 16..128; for the CPU target 1..512 each, the range of its
// default config), 1..16 stages and 1..16 warps (a power of
// two), optionally followed by "/splitkS" (split-K over S blocks a tile,
// 1..64) or "/streamkU" (stream-K over U blocks, 1..4096: the tiles' K
// iterations shared out evenly, GemmConfig::stream_k; persistent on
// sm_90a), and then "/persistent" (sm_90a: the warp-specialized kernel's
// blocks take its tiles in turn) or "/pingpong" (persistent, with two
// consumer teams of num_warps warps taking alternate tiles), and last
// "/ra" (sm_90a: the gathered A loaded into the MMA warps' wgmma fragments,
// GemmConfig::register_a) or "/ra256" (the same, the fragment loads with a
// 256-byte L2 prefetch, GemmConfig::register_a_l2_prefetch). A UserError
// names the flag and the value otherwise.
GemmConfig parse_gemm_config(const std::string& full, bool cpu) {
  GemmConfig c;
  // The optional "/tailT" at the very end (the split tail: GemmConfig::
  // split_tail, 1..64 k-tiles), taken off before the rest is read.
  std::string text = full;
  if (const size_t t = full.rfind("/tail"); t != std::string::npos) {
    const std::string digits = full.substr(t + 5);
    const bool all_digits = !digits.empty() && digits.size() <= 2 &&
                            digits.find_first_not_of("0123456789") == std::string::npos;
    if (!all_digits || std::stoi(digits) < 1 || std::stoi(digits) > 64)
      throw UserError("--gemm-config: a split tail is /tailT at the end, T in 1..64 k-tiles, got `" +
                      full + "`");
    c.split_tail = std::stoi(digits);
    text = full.substr(0, t);
  }
  size_t used = 0;
  // A number: decimal digits only (no blank, no sign), within int. (A
  // hostile-input pass found sscanf's %d taking " 128" and "+128", and
  // wrapping 4294967424 to 128.)
  auto number = [&](int* out) {
    const char* b = text.data() + used;
    const char* e = text.data() + text.size();
    if (b == e || *b < '0' || *b > '9') return false;
    const auto [end, ec] = std::from_chars(b, e, *out);
    if (ec != std::errc()) return false;
    used = static_cast<size_t>(end - text.data());
    return true;
  };
  auto literal = [&](std::string_view l) {
    if (text.compare(used, l.size(), l) != 0) return false;
    used += l.size();
    return true;
  };
  bool ok = number(&c.block_m) && literal("x") && number(&c.block_n) && literal("x") &&
            number(&c.block_k) && literal("/") && number(&c.num_stages) && literal("/") &&
            number(&c.num_warps);
  // The optional "/splitkS" suffix.
  if (ok && text.compare(used, 7, "/splitk") == 0) ok = literal("/splitk") && number(&c.split_k);
  // Or "/streamkU".
  else if (ok && text.compare(used, 8, "/streamk") == 0) {
    ok = literal("/streamk") && number(&c.stream_k);
    if (ok && (c.stream_k < 1 || c.stream_k > 4096))
      throw UserError("--gemm-config: the stream-K block count must be 1..4096, got `" + text +
                      "`");
    c.persistent = true;
  }
  if (ok && text.compare(used, 11, "/persistent") == 0) {
    c.persistent = true;
    used += 11;
  } else if (ok && text.compare(used, 9, "/pingpong") == 0) {
    c.persistent = c.pingpong = true;
    used += 9;
  }
  // The optional "/ra" or "/ra256" last (register A: GemmConfig::register_a;
  // 256: GemmConfig::register_a_l2_prefetch).
  if (ok && text.compare(used, std::string::npos, "/ra") == 0) {
    c.register_a = true;
    used = text.size();
  } else if (ok && text.compare(used, std::string::npos, "/ra256") == 0) {
    c.register_a = true;
    c.register_a_l2_prefetch = 256;
    used = text.size();
  }
  ok = ok && used == text.size();  // nothing after the suffixes
  if (!ok)
    throw UserError(
        "--gemm-config must look like 128x128x32/3/8 (BLOCK_MxBLOCK_NxBLOCK_K/"
        "num_stages/num_warps), 128x128x32/3/8/splitk4 (split-K over 4 blocks a tile) or "
        "128x256x64/3/8/persistent (a persistent kernel) or 128x128x64/4/4/pingpong (persistent, "
        "two teams of 4 warps taking alternate tiles) or 128x256x64/3/8/streamk132 (stream-K over "
        "132 blocks), each optionally ending in /ra (the gathered A in wgmma's register fragments) "
        "or /ra256 (the same, its loads prefetching 256 bytes into L2), and then optionally "
        "/tailT (the split tail of T k-tiles), got `" +
        full + "`");
  if (c.split_k < 1 || c.split_k > 64)
    throw UserError("--gemm-config: the split-K factor must be 1..64, got `" + full + "`");
  auto pow2 = [](int v) { return v > 0 && (v & (v - 1)) == 0; };
  // The CPU executor's tiles go down to 1 (its default config fits dims
  // below 16: default_cpu_gemm_config), the GPU's MMA tiles start at 16.
  const int min_tile = cpu ? 1 : 16, max_mn = cpu ? 512 : 256, max_k = cpu ? 512 : 128;
  const std::string where = cpu ? " on the CPU" : "";
  auto bad = [&](const std::string& what) {
    throw UserError(fmt::format("--gemm-config `{}`: {}", full, what));
  };
  auto tile_edge = [&](const char* name, int v, bool multiple_of_64, int max) {
    if (v < min_tile || v > max || !(pow2(v) || (multiple_of_64 && v % 64 == 0)))
      bad(fmt::format("{} is {}; it must be {}, {}..{}{}", name, v,
                      multiple_of_64 ? "a power of two or a multiple of 64" : "a power of two",
                      min_tile, max, where));
  };
  tile_edge("BLOCK_M", c.block_m, true, max_mn);
  tile_edge("BLOCK_N", c.block_n, true, max_mn);
  tile_edge("BLOCK_K", c.block_k, false, max_k);
  if (c.num_stages < 1 || c.num_stages > 16)
    bad(fmt::format("num_stages is {}; it must be 1..16", c.num_stages));
  if (!pow2(c.num_warps) || c.num_warps > 16)
    bad(fmt::format("num_warps is {}; it must be a power of two, 1..16", c.num_warps));
  return c;
}

// " FLAG A=... FLAG B=..." for the first few `names`, then how many more: what
// a message asking for one flag per name shows (a program may have thousands
// of symbolic dims; the message stays a line).
std::string flag_per_name(std::string_view flag, const std::vector<std::string>& names) {
  constexpr size_t kShown = 4;
  std::string out;
  for (size_t i = 0; i < names.size() && i < kShown; ++i)
    out += fmt::format(" {} {}=...", flag, names[i]);
  if (names.size() > kShown)
    out += fmt::format(" ... ({} more, one {} each)", names.size() - kShown, flag);
  return out;
}

// The `--cuda-option NAME=0|1` values (tir::CudaOptions); a UserError names
// a bad one and lists the options. `--allow-tf32` and `--cuda-option
// allow_tf32=1` are two spellings of one switch: either turns it on, and
// *allow_tf32 (in: the flag) and the result's allow_tf32 both say the
// outcome, since the checks' tolerance, the tuning's cache key and cuBLASLt's
// compute type read the flag and the code generator reads the option. An
// option given twice is an error (as --shape and --input are), not the last
// value silently.
tir::CudaOptions parse_cuda_options(const std::vector<std::string>& given, bool* allow_tf32) {
  tir::CudaOptions o;
  std::set<std::string> names;
  for (const std::string& a : given) {
    const std::string name = a.substr(0, a.find('='));
    if (!names.insert(name).second)
      throw UserError(fmt::format("--cuda-option gives `{}` twice", name));
    std::string error;
    if (!o.set(a, &error)) throw UserError("--cuda-option: " + error);
  }
  *allow_tf32 = *allow_tf32 || o.allow_tf32;
  o.allow_tf32 = *allow_tf32;
  return o;
}

// Tunes `g` on the GPU for run and bench (the cached choice unless retune),
// for `spec` (symbolic dims: the inputs' size bucket).
driver::TuneResult tune_on_gpu(const Graph& g, const std::vector<Tensor>& inputs,
                               const std::string& name, bool retune, int cpu_threads,
                               bool allow_tf32, const tir::CudaOptions& cuda,
                               const Specialization& spec = {}) {
  driver::TuneOptions to;
  to.device = driver::cuda_tune_device();
  to.retune = retune;
  to.allow_tf32 = allow_tf32;
  to.cuda = cuda;
  to.name = name;
  to.cpu_threads = cpu_threads;
  to.specialization = spec;
  return driver::tune(g, inputs, to);
}

using driver::output_names;

// Which parameters (by position) an `--input name=file.npy` gives: those are
// not drawn at random (make_random_inputs), so a parameter that no random
// value fits (an index into an empty dim) can still be given. Malformed
// specs are load_inputs' to report.
std::vector<bool> given_inputs(const Graph& g, const std::vector<std::string>& specs) {
  std::vector<bool> given(g.parameters().size(), false);
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos) continue;
    for (size_t i = 0; i < g.parameters().size(); ++i)
      if (g.node(g.parameters()[i]).name == spec.substr(0, eq)) given[i] = true;
  }
  return given;
}

// Replaces the random input of each `name=file.npy` parameter. A file's dtype
// must equal the parameter's, except that bf16/f8 parameters (which .npy
// cannot hold) read any floating file, rounded.
void load_inputs(const Graph& g, const std::vector<std::string>& specs,
                 std::vector<Tensor>& inputs) {
  std::set<std::string> given;
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw UserError(fmt::format("--input expects name=file.npy, got `{}`", spec));
    std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    std::optional<size_t> pos;
    for (size_t i = 0; i < g.parameters().size(); ++i)
      if (g.node(g.parameters()[i]).name == name) pos = i;
    if (!pos) {
      std::string params;
      for (ValueId p : g.parameters()) params += (params.empty() ? "" : ", ") + g.node(p).name;
      throw UserError(fmt::format("--input names `{}`, which is not a parameter (parameters: {})",
                                  name, params));
    }
    if (!given.insert(name).second) throw UserError(fmt::format("--input gives `{}` twice", name));
    const Node& param = g.node(g.parameters()[*pos]);
    Tensor t = read_npy(path);
    bool lossy_ok = (param.dtype == DType::BF16 || param.dtype == DType::F8E4M3 ||
                     param.dtype == DType::F8E5M2) &&
                    is_floating(t.dtype());
    if (t.dtype() != param.dtype && !lossy_ok)
      throw UserError(fmt::format("input `{}` is {} but {} holds {}", name, dtype_name(param.dtype),
                                  path, dtype_name(t.dtype())));
    if (t.shape() != param.shape)
      throw UserError(fmt::format("input `{}` has shape {} but {} holds {}", name,
                                  shape_to_string(param.shape), path, shape_to_string(t.shape())));
    inputs[*pos] = t.dtype() == param.dtype ? t : t.to(param.dtype);
  }
}

struct Checksum {
  double sum = 0;
  uint64_t hash = 0;
};

// Sum of the elements (f64) and xxh64 of the contiguous bytes: the sum is
// comparable across devices within rounding, the hash only bit-for-bit,
// except that every NaN counts as one value: each is hashed as the dtype's
// positive quiet NaN and a NaN sum prints as `nan`. (Engines differ in a
// NaN's sign bit and payload, e.g. x86's default NaN is negative, and
// neither is a difference of value: torch.equal-style comparisons and
// --check treat NaNs alike.)
Checksum checksum(const Tensor& t) {
  Tensor c = t.contiguous();
  Checksum s;
  bool nan = false;
  for (int64_t i = 0; i < c.numel(); ++i) {
    const double v = c.get_linear(i);
    nan = nan || std::isnan(v);
    s.sum += v;
  }
  if (nan) {
    c = t.contiguous(/*force=*/true);  // a copy of our own to rewrite
    for (int64_t i = 0; i < c.numel(); ++i)
      if (std::isnan(c.get_linear(i))) c.set_linear(i, std::numeric_limits<double>::quiet_NaN());
  }
  // (A NaN sum, from a NaN element or made by the sum itself, inf + -inf,
  // takes the machine's default NaN, negative on x86: it prints as `nan`.)
  if (std::isnan(s.sum)) s.sum = std::numeric_limits<double>::quiet_NaN();
  s.hash = XXH64(c.data_ptr(), static_cast<size_t>(c.numel()) * dtype_size(c.dtype()), 0);
  return s;
}

// Taken during static initialization, before main: the start-up figure
// `run -v` prints ("first launch: ... after the process started") counts from here.
const std::chrono::steady_clock::time_point kProcessStart = std::chrono::steady_clock::now();

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// --plan's value (the CLI checks it is one of these).
PlanKind parse_plan(const std::string& plan) {
  return plan == "unfused" ? PlanKind::kUnfused : PlanKind::kFused;
}

// --target's value; anything else is a user error naming the valid ones
// (main.cpp checks at parse time too; this keeps the commands safe alone).
tir::Target parse_target(const std::string& name) {
  std::optional<tir::Target> t = tir::Target::parse(name);
  if (!t) throw UserError(fmt::format("unknown target `{}`; valid targets: {}", name, kTargetHelp));
  return *t;
}

// Loads the program at `path` and runs `body(program)`; a UserError from
// either is printed as a diagnostic against the program's source and gives
// exit code 1. `before_report` runs first (e.g. to flush partial output).
// `options` is a command's options: its `program` path and
// `max_program_bytes`.
template <class Options, class Body>
int with_program(const Options& options, Body body, void (*before_report)() = nullptr) {
  const std::string& path = options.program;
  // The file is read once: a diagnostic quotes the text that was parsed
  // (a pipe cannot be read again, a FIFO's second open could block).
  std::string source;
  std::optional<Program> program;
  try {
    source =
        read_program_file(path, LoadOptions{.max_bytes = options.max_program_bytes,
                                            .raise_hint = "--max-program-size raises the limit"});
    program = parse_program(source, path);
  } catch (const UserError& e) {
    return report(e, path, source);
  }
  try {
    return body(*program);
  } catch (const UserError& e) {
    if (before_report) before_report();
    return report(e, program->file, program->source);
  }
}

// A size of --shape / --shapes: decimal digits, blanks around them ignored
// ("M= 16"); no sign, no other base, nothing past INT64_MAX (nullopt).
std::optional<int64_t> parse_size(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return std::nullopt;
  text = text.substr(first, text.find_last_not_of(" \t") + 1 - first);
  int64_t size = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), size);
  if (ec != std::errc() || end != text.data() + text.size() || size < 0 || text[0] == '-')
    return std::nullopt;
  return size;
}

// `--shape` values: "NAME=SIZE", several per flag comma-separated.
SymbolValues parse_shapes(const std::vector<std::string>& specs) {
  SymbolValues v;
  for (const std::string& spec : specs) {
    size_t start = 0;
    while (start <= spec.size()) {
      const size_t end = std::min(spec.find(',', start), spec.size());
      // Blanks around an item ("M=2, T=1") are not part of the name or size.
      std::string item = spec.substr(start, end - start);
      const size_t first = item.find_first_not_of(" \t");
      item = first == std::string::npos ? std::string()
                                        : item.substr(first, item.find_last_not_of(" \t") + 1 - first);
      const size_t eq = item.find('=');
      const std::optional<int64_t> size = eq == std::string::npos
                                              ? std::nullopt
                                              : parse_size(std::string_view(item).substr(eq + 1));
      if (eq == std::string::npos || eq == 0 || !size)
        throw UserError(fmt::format("--shape expects NAME=SIZE (a non-negative integer), got `{}`",
                                    item));
      std::string name = item.substr(0, eq);
      name.erase(name.find_last_not_of(" \t") + 1);  // "T =1"
      if (name.empty())
        throw UserError(fmt::format("--shape expects NAME=SIZE (a non-negative integer), got `{}`",
                                    item));
      if (!v.emplace(name, *size).second)
        throw UserError(fmt::format("--shape gives `{}` twice", name));
      start = end + 1;
    }
  }
  return v;
}

// Binds the symbolic dims of each `--input name=file.npy` parameter to the
// file's sizes (read from its header), adding them to `values` (--shape's):
// `x: f16[M, 64]` given a [10, 64] file binds M = 10. A size that disagrees
// with --shape's or with another file's is a UserError naming both; a file
// of another rank one naming the parameter's type and the file's shape.
// Malformed specs and unknown names are left to load_inputs.
void bind_input_symbols(const Graph& g, const std::vector<std::string>& specs,
                        SymbolValues* values) {
  std::map<std::string, std::string> source;  // symbol -> what gave its size
  for (const auto& entry : *values) source[entry.first] = "--shape";
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) continue;
    const std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    const Node* param = nullptr;
    for (ValueId p : g.parameters())
      if (g.node(p).name == name) param = &g.node(p);
    if (!param || !param->has_symbolic_dim()) continue;
    const NpyInfo info = read_npy_info(path);
    const std::string type =
        std::string(dtype_name(param->dtype)) + symbolic_shape_string(g, *param);
    if (info.shape.size() != param->shape.size())
      throw UserError(fmt::format("input `{}` has {} dim{} ({}) but {} holds {}", name,
                                  param->shape.size(), param->shape.size() == 1 ? "" : "s", type,
                                  path, shape_to_string(info.shape)));
    for (size_t d = 0; d < param->shape.size(); ++d) {
      const SymbolId s = param->symbol(d);
      if (s == kFixedDim) continue;
      const std::string& sym = g.symbols()[static_cast<size_t>(s)].name;
      const int64_t size = info.shape[d];
      const std::string here = fmt::format("`{}` ({}, dim {})", name, path, d);
      const auto it = values->find(sym);
      if (it == values->end()) {
        values->emplace(sym, size);
        source[sym] = here;
      } else if (it->second != size) {
        throw UserError(ErrorKind::kValue, fmt::format("symbolic dim `{}` is {} in {} but {} in {}",
                                                       sym, it->second, source[sym], size, here));
      }
    }
  }
}

// A program as a command sees it: the generic graph the kernels are
// compiled from (and tuned for) and, with symbolic dims, the program bound
// to --shape (its inputs, its reference). Without symbols both are the one
// program.
struct Loaded {
  const Program& generic;
  const Program& bound;
  driver::Binding binding;  // the --shape sizes (empty without symbols)
  bool symbolic() const { return !generic.graph.symbols().empty(); }
};

// with_program, then binds the symbolic dims to `options.shapes`. With
// `need_shapes`, a symbolic program without every size is a user error;
// otherwise the bound program is the generic one when no --shape is given.
template <class Options, class Body>
int with_shapes(const Options& options, bool need_shapes, Body body,
                void (*before_report)() = nullptr) {
  return with_program(
      options,
      [&](const Program& generic) -> int {
        SymbolValues values = parse_shapes(options.shapes);
        // run and bench: --input files bind the symbolic dims they hold.
        if constexpr (requires { options.inputs; })
          if (!generic.graph.symbols().empty())
            bind_input_symbols(generic.graph, options.inputs, &values);
        if (generic.graph.symbols().empty()) {
          if (!values.empty())
            throw UserError(fmt::format("--shape: '{}' has no symbolic dims (every dim is fixed)",
                                        generic.name));
          return body(Loaded{generic, generic, {}});
        }
        if (values.empty() && !need_shapes) return body(Loaded{generic, generic, {}});
        // Only the symbols still missing (an --input may have bound some).
        std::vector<std::string> unbound;
        for (const Symbol& sym : generic.graph.symbols())
          if (!values.count(sym.name)) unbound.push_back(sym.name);
        const std::string how = "give" + flag_per_name("--shape", unbound);
        const driver::Binding binding = driver::binding_of(generic.graph, values, how);
        const Program bound = parse_program(generic.source, generic.file, &values);
        return body(Loaded{generic, bound, binding});
      },
      before_report);
}

// The specialization a run at `loaded`'s binding compiles for (the inputs
// are the CLI's own: contiguous); without a binding, the generic one.
Specialization cli_specialization(const Loaded& loaded, const std::vector<Tensor>& inputs) {
  if (!loaded.symbolic()) return {};
  std::vector<driver::ArgDesc> args;
  for (const Tensor& t : inputs) args.push_back(driver::ArgDesc::of(t));
  return driver::specialize(loaded.generic.graph, loaded.binding, args);
}

// The specialization emit and explain show: --shape's, with contiguous
// inputs; none without.
Specialization shown_specialization(const Loaded& loaded) {
  if (!loaded.symbolic() || loaded.binding.empty()) return {};
  std::vector<driver::ArgDesc> args;
  for (ValueId p : loaded.bound.graph.parameters()) {
    const Node& n = loaded.bound.graph.node(p);
    args.push_back({n.dtype, n.shape, contiguous_strides(n.shape), 0});
  }
  return driver::specialize(loaded.generic.graph, loaded.binding, args);
}

}  // namespace

int run_command(const RunOptions& options) {
  return with_shapes(options, true, [&](const Loaded& loaded) -> int {
    const Program& program = loaded.generic;
    // The program at --shape's sizes makes the inputs and the reference; the
    // kernels are compiled from the generic graph (the same for every size).
    const Graph& g = loaded.bound.graph;
    const Graph& cg = loaded.generic.graph;
    if (options.threads < 0) throw UserError("--threads must be >= 0");
    if (options.save_output_dir && options.save_output_dir->empty())
      throw UserError("--save-output needs a directory (got an empty path)");
    const bool reference = options.engine == "reference";
    if (reference && options.device == "cuda")
      throw UserError("--engine reference runs on the CPU; use --device cpu or auto");
    // Where to run: cuda needs a usable GPU; auto takes one when present.
    // Opening the device (dlopen, cuInit, the primary context: hundreds of
    // milliseconds) runs on a second thread while this one makes the inputs.
    std::future<std::string> device_start;  // "" when the GPU is usable, else why not
    if (options.device != "cpu" && !reference) {
      device_start = std::async(std::launch::async, [] {
        std::string why;
        if (!cuda::cuda_available(&why)) return why;
        driver::default_device();
        return std::string();
      });
    }
    // libcublasLt (~150 ms and ~200 MB resident to load on the H200 host) is
    // loaded only when the plan that runs has GEMM steps on cuBLASLt, on a
    // second thread while the kernels compile: "" once loaded, else why not.
    std::future<std::string> cublaslt_load;
    // On --threads threads (the same values with any count).
    std::vector<Tensor> inputs =
        make_random_inputs(g, options.seed, options.threads, given_inputs(g, options.inputs));
    load_inputs(g, options.inputs, inputs);
    const Specialization spec = cli_specialization(loaded, inputs);
    const double inputs_ms = ms_since(kProcessStart);
    bool gpu = false;
    std::string why_cpu;
    if (device_start.valid()) {
      why_cpu = device_start.get();
      gpu = why_cpu.empty();
      if (!gpu && options.device == "cuda") throw UserError("--device cuda: " + why_cpu);
    }
    const double device_ms = ms_since(kProcessStart);
    // --cuda-option and --gemm-config are checked on every path (a bad one
    // is an error on the CPU and with the reference engine too, as in the
    // other commands), though only a GPU run uses them.
    bool allow_tf32 = options.allow_tf32;
    const tir::CudaOptions cuda_options = parse_cuda_options(options.cuda_options, &allow_tf32);
    if (!options.gemm_config.empty()) (void)parse_gemm_config(options.gemm_config, !gpu);

    EvalOptions eval;
    eval.num_threads = options.threads;
    int threads = options.threads > 0 ? options.threads
                                      : static_cast<int>(std::thread::hardware_concurrency());
    std::string how;
    std::optional<driver::CompiledProgram> compiled;
    std::unique_ptr<driver::CudaProgram> cuda_program;
    double compile_s = 0;
    double loaded_ms = 0;
    std::string where = "cpu";
    // What the tuner did (printed with --verbose).
    std::string tuning_line;
    // The tuned choice is unfused+cuBLASLt: the unfused plan with its plain
    // GEMM steps on cuBLASLt (only for --plan auto; an explicit plan runs
    // our kernels).
    bool cublaslt = false;
    std::string plan_name = options.plan == "auto" ? "fused" : options.plan;
    if (reference) {
      how = "reference evaluator";
    } else {
      driver::CompileOptions co;
      co.plan = parse_plan(plan_name);
      co.target = tir::Target::cpu();
      if (!gpu)
        tuning_line = options.plan == "auto"
                          ? "tuning: none on the CPU (--plan auto runs the fused plan)"
                          : "tuning: none on the CPU";
      if (gpu) {
        cuda::Device& dev = driver::default_device();
        std::optional<tir::Target> t = tir::Target::parse(dev.arch());
        if (!t)
          throw UserError(fmt::format("the GPU {} is {}; tilefuse needs sm_80 or newer", dev.name(),
                                      dev.arch()));
        co.target = *t;
        co.allow_tf32 = allow_tf32;
        co.cuda = cuda_options;
        // The plan and its config: the tuned choice (cached, else tuned now)
        // for --plan auto or --retune; an explicit plan takes its tuned
        // config when a tuning is cached, else the heuristic's.
        std::optional<driver::TunedChoice> choice;
        if (!options.gemm_config.empty()) {
          tuning_line = "tuning: none (--gemm-config sets every GEMM step's config)";
        } else if (options.plan == "auto" || options.retune) {
          driver::TuneResult tr = tune_on_gpu(cg, inputs, program.name, options.retune,
                                              options.threads, allow_tf32, co.cuda, spec);
          choice = tr.choice;
          tuning_line =
              tr.from_cache
                  ? fmt::format("tuning: cached choice ({})", tr.choice.summary())
                  : fmt::format(
                        "tuning: searched {} candidates in {:.1f} s ({} skipped{}; {} "
                        "kernels, {} from the kernel cache; {}): {}",
                        tr.candidates, tr.seconds, tr.failed,
                        tr.spilled > 0 ? fmt::format(", {} for spills", tr.spilled) : std::string(),
                        tr.nvrtc_kernels, tr.nvrtc_cache_hits, driver::tune_phases(tr),
                        tr.choice.summary());
        } else {
          choice = driver::cached_choice(cg, driver::cuda_tune_device(), allow_tf32, co.cuda,
                                         spec.size_hints);
          if (choice) {
            const std::optional<GemmConfig> c =
                choice->lower_for(parse_plan(options.plan)).gemm_config;
            tuning_line = fmt::format(
                "tuning: --plan {} with its cached tuned config {} (the "
                "tuning chose {})",
                options.plan, c ? driver::gemm_config_name(*c) : std::string("(default)"),
                choice->summary());
          } else {
            tuning_line =
                "tuning: none cached; --plan " + options.plan + " with the heuristic config";
          }
        }
        if (choice) {
          if (options.plan == "auto") plan_name = std::string(plan_kind_name(choice->plan));
          co.plan = parse_plan(plan_name);
          co.lower = choice->lower_for(co.plan);
          if (options.plan == "auto" && choice->cublaslt) {
            cublaslt = true;
            cublaslt_load = std::async(std::launch::async, [] {
              std::string why;
              return cuda::cublaslt_available(&why) ? std::string() : why;
            });
          }
        }
      }
      if (!options.gemm_config.empty()) {
        co.lower.gemm_config = parse_gemm_config(options.gemm_config, !gpu);
        if (!gpu) tuning_line = "tuning: none (--gemm-config sets every GEMM step's config)";
      }
      auto t0 = std::chrono::steady_clock::now();
      if (gpu) {
        cuda::Device& dev = driver::default_device();
        co.lower.specialization = spec;
        compiled = driver::compile(cg, co);
        if (cublaslt_load.valid()) {
          // Tuned where libcublasLt loaded; without it now, our kernels
          // run the same unfused plan rather than fail.
          const std::string why = cublaslt_load.get();
          cublaslt = why.empty();
          if (!cublaslt)
            tuning_line += "; cuBLASLt is unavailable now (" + why +
                           "), so the unfused plan runs on our kernels";
        }
        driver::CudaProgramOptions po;
        po.cublaslt_gemms = cublaslt;
        cuda_program = std::make_unique<driver::CudaProgram>(*compiled, dev, po);
        where = fmt::format("{} ({})", dev.name(), dev.arch());
      } else {
        co.lower.specialization = spec;
        compiled = driver::compile(cg, co);
      }
      compile_s = seconds_since(t0);
      loaded_ms = ms_since(kProcessStart);
      size_t n = compiled->kernels.size();
      if (cublaslt) {
        // -v lists which steps cuBLASLt runs ("step 1 on cuBLASLt: ...").
        how = fmt::format("{} plan, GEMM steps on cuBLASLt, {} step{}, CUDA", plan_name, n,
                          n == 1 ? "" : "s");
      } else {
        how = fmt::format("{} plan, {} kernel{}, {}", plan_name, n, n == 1 ? "" : "s",
                          gpu ? "CUDA" : "CPU executor");
      }
    }
    if (gpu)
      std::printf("%s: %zu output%s on %s (%s), seed %llu\n", program.name.c_str(),
                  g.outputs().size(), g.outputs().size() == 1 ? "" : "s", where.c_str(),
                  how.c_str(), static_cast<unsigned long long>(options.seed));
    else
      std::printf("%s: %zu output%s on cpu (%s, %d thread%s), seed %llu\n", program.name.c_str(),
                  g.outputs().size(), g.outputs().size() == 1 ? "" : "s", how.c_str(), threads,
                  threads == 1 ? "" : "s", static_cast<unsigned long long>(options.seed));
    if (options.verbose && !gpu && options.device == "auto" && !reference)
      std::printf("device: cpu, because %s\n", why_cpu.c_str());
    if (options.verbose && !tuning_line.empty()) std::printf("%s\n", tuning_line.c_str());
    if (!reference) std::printf("compile: %.3f s\n", compile_s);
    if (options.verbose && cuda_program) {
      const std::vector<size_t> blas = cuda_program->cublaslt_steps();
      for (size_t i = 0; i < cuda_program->stats().size(); ++i) {
        const driver::CudaKernelStats& st = cuda_program->stats()[i];
        if (std::find(blas.begin(), blas.end(), i) != blas.end()) {
          std::printf("  step %zu on cuBLASLt: %s\n", i, st.name.c_str());
          continue;
        }
        std::printf(
            "  kernel %s: %s (%.1f ms); %d registers, %d B local, %lld B dynamic shared; "
            "%s; %d blocks/SM (occupancy %.0f%%)\n",
            st.name.c_str(), st.from_cache ? "from the kernel cache" : "compiled with NVRTC",
            st.compile_ms, st.registers, st.local_bytes,
            static_cast<long long>(st.dynamic_shared_bytes), driver::launch_shape_text(st).c_str(),
            st.blocks_per_sm, 100 * st.occupancy);
      }
    }
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> outputs;
    if (reference) {
      outputs = evaluate(g, inputs, eval);
    } else if (cuda_program) {
      outputs = cuda_program->run(inputs, /*poison=*/true);
    } else {
      driver::ExecuteOptions xo;
      xo.num_threads = options.threads;
      outputs = driver::execute(*compiled, inputs, xo);
    }
    double elapsed = seconds_since(t0);
    if (options.verbose && cuda_program && cuda_program->first_launch())
      std::printf(
          "first launch: %.1f ms after the process started (inputs ready at %.1f ms, device at "
          "%.1f ms, kernels loaded at %.1f ms)\n",
          std::chrono::duration<double, std::milli>(*cuda_program->first_launch() - kProcessStart)
              .count(),
          inputs_ms, device_ms, loaded_ms);

    std::vector<std::string> names = output_names(g);
    for (size_t i = 0; i < outputs.size(); ++i) {
      Checksum c = checksum(outputs[i]);
      std::printf("  %s: %s%s  sum=%.6g  xxh64=%016llx\n", names[i].c_str(),
                  std::string(dtype_name(outputs[i].dtype())).c_str(),
                  shape_to_string(outputs[i].shape()).c_str(), c.sum,
                  static_cast<unsigned long long>(c.hash));
    }
    std::printf("time: %.3f s\n", elapsed);

    if (options.save_output_dir) {
      const std::string& dir = *options.save_output_dir;
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec)
        throw UserError(fmt::format("--save-output: cannot create `{}`: {}", dir, ec.message()));
      for (size_t i = 0; i < outputs.size(); ++i) {
        std::string path = (std::filesystem::path(dir) / (names[i] + ".npy"));
        write_npy(path, outputs[i]);
        std::printf("saved %s\n", path.c_str());
      }
    }

    if (options.check) {
      eval.mode = EvalMode::kOracle;
      std::vector<Tensor> refs = evaluate(g, inputs, eval);
      // The program op by op at its dtypes, evaluated only if an output
      // misses check_tolerance (faithful_tolerance).
      std::optional<std::vector<Tensor>> eager;
      bool ok = true;
      for (size_t i = 0; i < outputs.size(); ++i) {
        const double err = oracle_error(outputs[i], refs[i]);
        // TF32 only where the kernels ran on the GPU (the CPU executor and
        // the reference evaluator are exact).
        const double tol = check_tolerance(g, g.outputs()[i], gpu && allow_tf32);
        bool pass = err <= tol;  // false for NaN
        std::string why;
        if (!pass && !std::isnan(err) && is_floating(outputs[i].dtype())) {
          if (!eager) {
            eval.mode = EvalMode::kEager;
            // (the reference engine's outputs are that evaluation)
            eager = reference ? outputs : evaluate(g, inputs, eval);
          }
          const double own = oracle_error((*eager)[i], refs[i]);
          pass = err <= faithful_tolerance(tol, own);
          why = fmt::format(" (the program op by op at its dtypes is {:.3e} from the oracle{})",
                            own, pass ? fmt::format(": within {:g}x of that", kFaithfulFactor) : "");
        }
        ok = ok && pass;
        std::printf("check: %s rel_err=%.3e tol=%.3g %s%s\n", names[i].c_str(), err, tol,
                    pass ? "ok" : "FAILED", why.c_str());
      }
      if (!ok) return kCheckFailed;
    }
    return kOk;
  });
}

int emit_command(const EmitOptions& options) {
  return with_shapes(
      options, false,
      [&](const Loaded& loaded) -> int {
        // The graph and plan at --shape's sizes (else generic); the kernels
        // from the generic graph, specialized for --shape when given.
        const Graph& g = loaded.bound.graph;
        const bool kernels = options.stage == "tir" || options.stage == "tir-opt";
        if (!options.dump_after.empty() && !kernels)
          throw UserError(
              "--dump-after prints kernels: use it with --stage=tir or --stage=tir-opt");
        // (Every option is checked, at every stage.)
        driver::CompileOptions co;
        co.plan = parse_plan(options.plan);
        co.target = parse_target(options.target);
        co.allow_tf32 = options.allow_tf32;
        co.cuda = parse_cuda_options(options.cuda_options, &co.allow_tf32);
        if (!options.gemm_config.empty())
          co.lower.gemm_config = parse_gemm_config(options.gemm_config, !co.target.is_cuda());
        if (options.stage == "graph") {
          std::cout << g.to_string();
          return kOk;
        }
        if (options.stage == "plan") {
          std::cout << to_string(g, build_plan(g, co.plan));
          return kOk;
        }
        if (options.stage == "cuda" && !co.target.is_cuda())
          throw UserError("--stage=cuda needs a CUDA target: --target sm_80 or --target sm_90a");
        // --stage=tir stops after lowering unless a dump asks for the passes.
        co.optimize = options.stage != "tir" || !options.dump_after.empty();
        co.dump_after = options.dump_after;
        co.dump = &std::cout;
        co.lower.specialization = shown_specialization(loaded);
        const driver::CompiledProgram compiled = driver::compile(loaded.generic.graph, co);
        if (!options.dump_after.empty()) std::cout << "# stage " << options.stage << "\n";
        const int64_t smem_limit = driver::default_max_shared_bytes(co.target);
        // (A program of views and parameters alone runs no kernel: say so,
        // as a comment of the stage's language, rather than print nothing.)
        if (compiled.kernels.empty())
          std::cout << (options.stage == "cuda" ? "// " : "# ")
                    << "no kernels: nothing to compute (each output is an input, or a view of one that "
                       "needs no copy)\n";
        for (const driver::CompiledKernel& ck : compiled.kernels) {
          // (Shown anyway: emit is for reading the kernel; run, bench and
          // the tuner reject the config.)
          if (const std::string excess =
                  ck.cuda ? driver::shared_memory_excess(ck.kernel.name,
                                                         ck.cuda->dynamic_shared_bytes,
                                                         smem_limit, co.target.name())
                          : "";
              !excess.empty())
            std::cerr << "tilefuse: warning: " << excess
                      << " (opt-in): run, bench and the tuner reject this config\n";
          if (options.stage == "cuda")
            std::cout << ck.cuda->source;
          else
            std::cout << tir::print(options.stage == "tir" ? ck.lowered.kernel : ck.kernel);
        }
        return kOk;
      },
      [] { std::cout.flush(); });
}

int explain_command(const ExplainOptions& options) {
  return with_shapes(options, false, [&](const Loaded& loaded) -> int {
    const Program& program = loaded.generic;
    driver::CompileOptions co;
    co.plan = parse_plan(options.plan);
    co.target = parse_target(options.target);
    co.allow_tf32 = options.allow_tf32;
    co.cuda = parse_cuda_options(options.cuda_options, &co.allow_tf32);
    if (!options.gemm_config.empty())
      co.lower.gemm_config = parse_gemm_config(options.gemm_config, !co.target.is_cuda());
    co.lower.specialization = shown_specialization(loaded);
    const nlohmann::json account =
        driver::explain(driver::compile(program.graph, co), program.name);
    std::cout << (options.json ? account.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n" : driver::render_explain_text(account));
    return kOk;
  });
}

int bench_command(const BenchOptions& options) {
  return with_shapes(options, true, [&](const Loaded& loaded) -> int {
    const Program& program = loaded.generic;
    const Graph& g = loaded.bound.graph;  // inputs, oracle, FLOPs (kernels: the generic graph)
    bool gpu = false;
    std::string why_cpu;
    if (options.device != "cpu") {
      gpu = cuda::cuda_available(&why_cpu);
      if (!gpu && options.device == "cuda") throw UserError("--device cuda: " + why_cpu);
    }
    driver::BenchOptions bo;
    bo.warmup = options.warmup >= 0 ? options.warmup : (gpu ? 10 : 1);
    bo.repeats = options.repeats >= 0 ? options.repeats : (gpu ? 100 : 5);
    if (bo.repeats < 1) throw UserError("--repeats must be >= 1");
    // (Checked before anything is timed, as run's --save-output.)
    if (options.save_inputs_dir && options.save_inputs_dir->empty())
      throw UserError("--save-inputs needs a directory (got an empty path)");
    bo.baselines = options.baselines;
    bo.check = options.check;
    bo.cpu_threads = options.threads;
    bo.allow_tf32 = options.allow_tf32;
    bo.cuda = parse_cuda_options(options.cuda_options, &bo.allow_tf32);
    if (!options.gemm_config.empty())
      bo.lower.gemm_config = parse_gemm_config(options.gemm_config, !gpu);
    std::vector<Tensor> inputs =
        make_random_inputs(g, options.seed, options.threads, given_inputs(g, options.inputs));
    load_inputs(g, options.inputs, inputs);
    bo.compile_graph = &loaded.generic.graph;
    bo.specialization = cli_specialization(loaded, inputs);
    if (options.save_inputs_dir) {
      const std::string& dir = *options.save_inputs_dir;
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec)
        throw UserError(fmt::format("--save-inputs: cannot create `{}`: {}", dir, ec.message()));
      for (size_t i = 0; i < inputs.size(); ++i)
        write_npy((std::filesystem::path(dir) /
                   (g.node(g.parameters()[i]).name + ".npy"))
                      .string(),
                  inputs[i]);
    }
    // The tuned configs and the "chosen" row.
    std::string chosen_missing;
    if (!options.gemm_config.empty()) {
      chosen_missing = "not tuned: --gemm-config sets every row's config";
    } else if (gpu) {
      driver::TuneResult tr =
          tune_on_gpu(loaded.generic.graph, inputs, program.name, options.retune, options.threads,
                      bo.allow_tf32, bo.cuda, bo.specialization);
      bo.fused_lower = tr.choice.lower_for(PlanKind::kFused);
      bo.unfused_lower = tr.choice.lower_for(PlanKind::kUnfused);
      bo.chosen_plan = tr.choice.plan;
      bo.chosen_cublaslt = tr.choice.cublaslt;
      bo.chosen_note = tr.from_cache ? fmt::format("tuned (cached, {}): {}", tr.choice.tuned_at,
                                                   tr.choice.summary())
                                     : fmt::format("tuned now ({} candidates, {:.1f} s): {}",
                                                   tr.candidates, tr.seconds, tr.choice.summary());
    } else {
      bo.chosen_plan = PlanKind::kFused;
      bo.chosen_note = "the fused plan, heuristic config: run --plan auto on the CPU (no tuning)";
    }
    driver::BenchReport r =
        gpu ? driver::bench_gpu(g, inputs, bo) : driver::bench_cpu(g, inputs, bo);
    r.program = program.name;
    if (!chosen_missing.empty()) {
      driver::BenchRow row;
      row.name = "chosen";
      row.note = chosen_missing;
      r.rows.push_back(row);
    }
    if (options.json) {
      nlohmann::json j;
      j["program"] = r.program;
      j["device"] = r.device;
      j["target"] = r.target;
      j["gemm_flops"] = r.gemm_flops;
      j["min_bytes"] = r.min_bytes;
      j["copy_gbps"] = r.copy_gbps;
      if (!r.copy_note.empty()) j["copy_note"] = r.copy_note;
      j["warmup"] = bo.warmup;
      j["repeats"] = bo.repeats;
      j["l2_flushed"] = bo.flush_l2;
      j["seed"] = options.seed;
      j["rows"] = nlohmann::json::array();
      for (const driver::BenchRow& row : r.rows) {
        nlohmann::json jr = {{"name", row.name},
                             {"median_us", row.median_ms * 1e3},
                             {"min_us", row.min_ms * 1e3},
                             {"max_us", row.max_ms * 1e3},
                             {"tflops", row.tflops},
                             {"gbps", row.gbps},
                             {"copy_fraction", row.copy_fraction},
                             {"note", row.note}};
        if (row.rel_err >= 0 || std::isnan(row.rel_err)) jr["rel_err"] = row.rel_err;
        jr["kernels"] = nlohmann::json::array();
        for (const driver::CudaKernelStats& k : row.kernels)
          jr["kernels"].push_back({{"name", k.name},
                                   {"from_cache", k.from_cache},
                                   {"registers", k.registers},
                                   {"local_bytes", k.local_bytes},
                                   {"dynamic_shared_bytes", k.dynamic_shared_bytes},
                                   {"threads", k.threads},
                                   {"blocks", k.blocks},
                                   {"blocks_per_sm", k.blocks_per_sm},
                                   {"occupancy", k.occupancy}});
        for (const driver::BlockTimeline& t : row.timelines) {
          auto three = [](const double* v) { return nlohmann::json::array({v[0], v[1], v[2]}); };
          jr["timelines"].push_back({{"kernel", t.kernel},
                                     {"blocks", t.blocks},
                                     {"launched", t.launched},
                                     {"sms", t.sms},
                                     {"max_blocks_on_an_sm", t.max_blocks_on_an_sm},
                                     {"start_spread_us", t.start_spread_us},
                                     {"span_us", t.span_us},
                                     {"block_us", three(t.block_us)},
                                     {"first_stage_blocks", t.first_stage_blocks},
                                     {"first_stage_us", three(t.first_stage_us)},
                                     {"loop_blocks", t.loop_blocks},
                                     {"loop_us", three(t.loop_us)},
                                     {"after_loop_us", three(t.after_loop_us)},
                                     {"second_loop_blocks", t.second_loop_blocks},
                                     {"second_loop_us", three(t.second_loop_us)}});
        }
        j["rows"].push_back(jr);
      }
      std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return kOk;
    }
    std::printf(
        "%s on %s (%s): %.3g GFLOP, %.4g MB must move (gathered rows, inputs, outputs once); "
        "median of %d runs after %d, %s\n",
        r.program.c_str(), r.device.c_str(), r.target.c_str(), r.gemm_flops / 1e9,
        r.min_bytes / 1e6, bo.repeats, bo.warmup,
        gpu ? "L2 flushed before each" : "wall time, caches flushed before each");
    if (r.copy_gbps > 0)
      std::printf(
          "device copy: %.0f GB/s (a %zu MiB device-to-device copy, read + written, timed "
          "the same way)\n",
          r.copy_gbps, bo.copy_bytes >> 20);
    else if (gpu)
      std::printf("device copy: %s\n", r.copy_note.c_str());
    std::printf("%-20s %11s %11s %9s %9s %7s %10s\n", "plan", "median us", "min us", "TFLOP/s",
                "GB/s", "%copy", "rel_err");
    for (const driver::BenchRow& row : r.rows) {
      if (row.median_ms <= 0) {
        std::printf("%-20s %s\n", row.name.c_str(), row.note.c_str());
        continue;
      }
      std::string err = row.rel_err < 0 ? "-" : fmt::format("{:.2e}", row.rel_err);
      // TFLOP/s and GB/s to 3 significant digits (CPU rows are far below 0.1).
      const std::string copy =
          row.copy_fraction > 0 ? fmt::format("{:.0f}%", 100 * row.copy_fraction) : "-";
      std::printf("%-20s %11.1f %11.1f %9.3g %9.3g %7s %10s\n", row.name.c_str(),
                  row.median_ms * 1e3, row.min_ms * 1e3, row.tflops, row.gbps, copy.c_str(),
                  err.c_str());
    }
    // (a timed row's note says what it ran: the GEMMs alone, the fused
    // plan's kernels again, the tuned choice)
    for (const driver::BenchRow& row : r.rows)
      if (row.median_ms > 0 && !row.note.empty())
        std::printf("%s: %s\n", row.name.c_str(), row.note.c_str());
    if (gpu)
      for (const driver::BenchRow& row : r.rows)
        for (const driver::CudaKernelStats& k : row.kernels)
          if (k.threads > 0)
            std::printf("  %s/%s: %d regs, %lld B smem, %s, %d blocks/SM (occupancy %.0f%%)\n",
                        row.name.c_str(), k.name.c_str(), k.registers,
                        static_cast<long long>(k.dynamic_shared_bytes),
                        driver::launch_shape_text(k).c_str(), k.blocks_per_sm, 100 * k.occupancy);
    for (const driver::BenchRow& row : r.rows)
      for (const driver::BlockTimeline& t : row.timelines)
        std::printf("  timeline %s/%s\n", row.name.c_str(),
                    driver::format_block_timeline(t).c_str());
    return kOk;
  });
}

}  // namespace tilefuse::cli

namespace tilefuse::cli {

int tune_command(const TuneCommandOptions& options) {
  return with_program(options, [&](const Program& generic) -> int {
    const Graph& cg = generic.graph;
    // --shapes NAME=S1,S2,...: the sizes of each symbol; --shape
    // NAME=SIZE[,NAME=SIZE...] (run's form) gives one size each.
    std::vector<std::string> shapes = options.shapes;
    for (const std::string& given : options.single_shapes)
      for (size_t start = 0; start <= given.size();) {
        const size_t end = std::min(given.find(',', start), given.size());
        const std::string pair = given.substr(start, end - start);
        if (pair.find('=') == std::string::npos)
          throw UserError(fmt::format(
              "--shape expects NAME=SIZE[,NAME=SIZE...], got `{}` (several sizes of one symbol: "
              "--shapes NAME=S1,S2,...)",
              given));
        shapes.push_back(pair);
        start = end + 1;
      }
    bool allow_tf32 = options.allow_tf32;
    const tir::CudaOptions cuda = parse_cuda_options(options.cuda_options, &allow_tf32);
    std::vector<std::pair<std::string, std::vector<int64_t>>> lists;
    for (const std::string& spec : shapes) {
      const size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
        throw UserError(fmt::format("--shapes expects NAME=SIZE[,SIZE...], got `{}`", spec));
      const std::string name = spec.substr(0, eq);
      if (cg.find_symbol(name) == kFixedDim)
        throw UserError(fmt::format("--shapes names `{}`, which is not a symbolic dim of '{}'",
                                    name, generic.name));
      for (const auto& [n, v] : lists)
        if (n == name) throw UserError(fmt::format("--shapes gives `{}` twice", name));
      // Each size as parse_shapes reads one ("M=16"), in the order given.
      lists.emplace_back(name, std::vector<int64_t>{});
      size_t start = eq + 1;
      while (start <= spec.size()) {
        const size_t end = std::min(spec.find(',', start), spec.size());
        const std::string item = spec.substr(start, end - start);
        const std::optional<int64_t> size = parse_size(item);
        if (!size)
          throw UserError(fmt::format(
              "--shapes {}: `{}` is not a size (a non-negative integer){}", spec, item,
              item.find('=') != std::string::npos
                  ? "; --shapes takes one symbol per flag: --shapes T=4 --shapes M=1,16"
                  : ""));
        lists.back().second.push_back(*size);
        start = end + 1;
      }
    }
    std::vector<std::string> missing;
    for (const Symbol& s : cg.symbols()) {
      bool given = false;
      for (const auto& [n, v] : lists) given = given || n == s.name;
      if (!given) missing.push_back(s.name);
    }
    if (!missing.empty())
      throw UserError("the program's symbolic dims need the sizes to tune at:" +
                      flag_per_name("--shapes", missing));
    bool gpu = false;
    std::string why_cpu;
    if (options.device != "cpu") {
      gpu = cuda::cuda_available(&why_cpu);
      if (!gpu && options.device == "cuda") throw UserError("--device cuda: " + why_cpu);
    }
    // Every combination of the sizes, in the order given: at most
    // kMaxTuneShapes, counted before any is made (3,000 sizes of each of two
    // symbols made 9 million bindings, 20,000 each would have filled the
    // machine's memory).
    constexpr int64_t kMaxTuneShapes = 10000;
    int64_t count = 1;
    std::string factors;
    bool overflow = false;
    for (const auto& [name, sizes] : lists) {
      factors += fmt::format("{}{} {}", factors.empty() ? "" : " x ", name, sizes.size());
      overflow =
          overflow || __builtin_mul_overflow(count, static_cast<int64_t>(sizes.size()), &count);
    }
    if (overflow || count > kMaxTuneShapes)
      throw UserError(fmt::format(
          "--shapes gives {} shapes to tune (the sizes of each symbol multiplied: {}); one "
          "command tunes at most {}",
          overflow ? std::string("more than 2^63") : std::to_string(count), factors,
          kMaxTuneShapes));
    std::vector<SymbolValues> combos(1);
    for (const auto& [name, sizes] : lists) {
      std::vector<SymbolValues> next;
      for (const SymbolValues& c : combos)
        for (int64_t v : sizes) {
          SymbolValues d = c;
          d[name] = v;
          next.push_back(std::move(d));
        }
      combos = std::move(next);
    }
    // Why there is no GPU (every library path tried) is said once, not on
    // every shape's line.
    if (!gpu && !why_cpu.empty()) std::printf("device: cpu, because %s\n", why_cpu.c_str());
    for (const SymbolValues& values : combos) {
      driver::TuneOptions to;
      if (gpu) to.device = driver::cuda_tune_device();
      to.retune = options.retune;
      to.allow_tf32 = allow_tf32;
      to.cuda = cuda;
      to.name = generic.name;
      to.cpu_threads = options.threads;
      const std::string line = driver::tune_at(generic, values, to, gpu, options.seed);
      std::printf("%s\n", line.c_str());
    }
    return kOk;
  });
}

}  // namespace tilefuse::cli
