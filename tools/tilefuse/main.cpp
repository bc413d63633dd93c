// tilefuse: the command-line driver. Argument parsing only; the work is in
// commands.cpp.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <new>

#include "commands.h"
#include "driver/compile.h"
#include "reference/thread_pool.h"
#include "runtime/cuda/timing.h"
#include "tir/target.h"

int main(int argc, char** argv) {
  using namespace tilefuse::cli;
  CLI::App app{
      "tilefuse: compiles small PyTorch-style tensor programs built around a matrix\n"
      "multiply into fused kernels, and runs them (run), shows them (emit),\n"
      "explains them (explain), times them (bench) and tunes them (tune).\n"
      "Exit codes: 0 ok, 1 user error (bad program, input, option or index; a program\n"
      "too large), 2 internal error, 3 a --check over tolerance.",
      "tilefuse"};
  app.set_version_flag("--version", std::string("tilefuse ") + TILEFUSE_VERSION);
  app.require_subcommand(1);

  // --target: checked at parse time, so a bad value is a usage error (exit 1)
  // that lists the valid ones.
  CLI::Validator target_check(
      [](std::string& name) {
        return tilefuse::tir::Target::parse(name)
                   ? std::string()
                   : "unknown target `" + name + "`; valid targets: " + kTargetHelp;
      },
      "TARGET", "target");
  const std::vector<std::string> plans = {"fused", "unfused"};

  // Whether v is written as an integer, nothing around it: an optional '-'
  // then digits (strtoll alone also took " 2" and "+2", which --seed refused).
  auto integer_text = [](const std::string& v) {
    const size_t digits = !v.empty() && v[0] == '-' ? 1 : 0;
    return v.size() > digits && v.find_first_not_of("0123456789", digits) == std::string::npos;
  };
  // An integer in [lo, hi] ("--repeats: must be 1 to 100000, got 0").
  auto int_range = [integer_text](long long lo, long long hi) {
    return CLI::Validator(
        [lo, hi, integer_text](std::string& v) -> std::string {
          if (!integer_text(v)) return "not an integer: " + v;
          char* end = nullptr;
          errno = 0;
          const long long x = std::strtoll(v.c_str(), &end, 10);
          if (end == v.c_str() || *end != '\0') return "not an integer: " + v;
          if (errno == ERANGE || x < lo || x > hi)
            return "must be " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " + v;
          return std::string();
        },
        std::to_string(lo) + ".." + std::to_string(hi));
  };
  // --max-program-size: bytes, or with a K/M/G suffix (binary: 16M is 16 MiB).
  int64_t max_program_bytes = kDefaultMaxProgramBytes;
  const CLI::Validator byte_size = CLI::Validator(
      [](std::string& v) -> std::string {
        if (v.empty() || v[0] < '0' || v[0] > '9') return "not a positive size: " + v;
        char* end = nullptr;
        errno = 0;
        const long long x = std::strtoll(v.c_str(), &end, 10);
        if (errno == ERANGE && end != v.c_str() && x > 0) return "too large: " + v;
        if (end == v.c_str() || x < 1 || errno == ERANGE) return "not a positive size: " + v;
        const std::string unit(end);
        int shift = 0;
        if (unit == "K" || unit == "KiB")
          shift = 10;
        else if (unit == "M" || unit == "MiB")
          shift = 20;
        else if (unit == "G" || unit == "GiB")
          shift = 30;
        else if (!unit.empty())
          return "unknown unit in " + v + " (bytes, K, M or G)";
        if (x > (std::numeric_limits<long long>::max() >> shift)) return "too large: " + v;
        v = std::to_string(x << shift);
        return std::string();
      },
      "BYTES[K|M|G]");
  auto add_max_program_size = [&](CLI::App* cmd) {
    cmd->add_option("--max-program-size", max_program_bytes,
                    "The longest program file read, in bytes or with K, M, G (default 16M)")
        ->transform(byte_size);
  };
  // --threads: 0 (all) .. kMaxThreads (reference/thread_pool.h).
  using tilefuse::reference::kMaxThreads;
  const CLI::Validator thread_count = CLI::Validator(
      [integer_text](std::string& v) -> std::string {
        if (!integer_text(v)) return "not an integer: " + v;
        char* end = nullptr;
        const long long x = std::strtoll(v.c_str(), &end, 10);
        if (end == v.c_str() || *end != '\0') return "not an integer: " + v;
        if (x < 0 || x > kMaxThreads)
          return "must be 0 (all) to " + std::to_string(kMaxThreads) + ", got " + v;
        return std::string();
      },
      "0.." + std::to_string(kMaxThreads));
  // --seed: an unsigned 64-bit integer, no more (CLI11 would saturate).
  const CLI::Validator seed_value = CLI::Validator(
      [](std::string& v) -> std::string {
        if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
          return "not a non-negative integer: " + v;
        errno = 0;
        (void)std::strtoull(v.c_str(), nullptr, 10);
        if (errno == ERANGE) return "must be at most 18446744073709551615, got " + v;
        return std::string();
      },
      "0..2^64-1");
  // --gemm-config's value is parsed by the command (commands.cpp); an empty
  // one is an error here rather than "no config".
  const CLI::Validator gemm_config_value = CLI::Validator(
      [](std::string& v) -> std::string {
        return v.empty() ? std::string("an empty GEMM config") : std::string();
      },
      "CONFIG");
  // --allow-tf32, the same on every command that compiles for the GPU.
  const std::string tf32_help =
      "Let f32 GEMMs run on TF32 tensor cores (mma.sync m16n8k8: operands rounded to 10 "
      "mantissa bits, f32 accumulation; like PyTorch's allow_tf32). Without it f32 GEMMs are "
      "exact (one FMA per product)";

  // --shape, the same on every command that compiles a program.
  const std::string shape_help =
      "NAME=SIZE: the size of the program's symbolic dim NAME (a name in its signature, "
      "e.g. x: f16[T, 4096]); several comma-separated or repeated";
  // --cuda-option, the same on every command that compiles for the GPU.
  std::string cuda_option_help =
      "A switch of the CUDA code generator, NAME=0 or NAME=1 (repeatable); to compare forms. "
      "Options (default):";
  for (const auto& o : tilefuse::tir::CudaOptions::all())
    if (std::string(o.name) != "allow_tf32")
      cuda_option_help += std::string(" ") + o.name + " (" + (o.default_value ? "1" : "0") +
                          "): " + o.help + ";";

  RunOptions run;
  CLI::App* run_cmd = app.add_subcommand(
      "run",
      "Compile a program for the GPU (or the CPU) and run its kernels on random (or given) inputs; "
      "print each output's shape, dtype, checksum and the time.");
  run_cmd->add_option("program", run.program, "The .tfs program")->required();
  run_cmd->add_option("--shape", run.shapes, shape_help + " (every symbolic dim needs one)");
  run_cmd
      ->add_option("--device", run.device,
                   "Where to run: auto (the GPU if one is usable, else the CPU), "
                   "cpu, or cuda (an error when no GPU is usable)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  run_cmd
      ->add_option("--plan", run.plan,
                   "Which plan to compile: auto (on the GPU the tuned choice: the cached "
                   "one, else tuned now; on the CPU the fused plan), fused (prologues and "
                   "epilogues inside the GEMM kernels) or unfused (pointwise kernels "
                   "around plain GEMMs); on the GPU an explicit plan uses its cached tuned "
                   "config")
      ->check(CLI::IsMember({"auto", "fused", "unfused"}))
      ->capture_default_str();
  run_cmd->add_flag("--retune", run.retune,
                    "Tune again (GPU: every GEMM config of both plans, compiled in parallel and "
                    "timed) even when the tuning cache has a choice, and replace it; accepted "
                    "and ignored on the CPU");
  run_cmd
      ->add_option("--engine", run.engine,
                   "What evaluates the program: executor (the compiled "
                   "kernels on the CPU executor) or reference (the "
                   "graph's reference evaluator; --plan is ignored)")
      ->check(CLI::IsMember({"executor", "reference"}))
      ->capture_default_str();
  run_cmd->add_option("--seed", run.seed, "Seed of the random inputs")
      ->check(seed_value)
      ->capture_default_str();
  run_cmd->add_option("--input", run.inputs,
                      "name=file.npy: take parameter `name` from a NumPy .npy file (C order; "
                      "bf16/f8 parameters read any floating file, rounded). Repeatable.");
  run_cmd->add_option("--save-output", run.save_output_dir,
                      "Write each output to DIR/NAME.npy (bf16/f8 as f32, exactly)");
  run_cmd->add_flag(
      "--check", run.check,
      "Also evaluate the f64 oracle, round it to each output's dtype and print "
      "the relative error ||out-ref||/||ref||; exit 3 if it exceeds the dtype's "
      "tolerance "
      "(1e-2 for f16/bf16, 0.15 for f8, 1e-5 for f32, 1e-12 for f64, exact for integers; "
      "1e-2 for an output an f32 GEMM feeds under --allow-tf32 on the GPU) and twice the error "
      "of the program evaluated op by op at its dtypes (cancellation, underflow)");
  run_cmd->add_option("--threads", run.threads, "CPU threads (0: all; at most 1024)")
      ->check(thread_count)
      ->capture_default_str();
  run_cmd->add_flag("--allow-tf32", run.allow_tf32,
                    tf32_help + " (on the GPU; the CPU executor is exact either way)");
  run_cmd->add_option("--cuda-option", run.cuda_options, cuda_option_help);
  run_cmd
      ->add_option("--gemm-config", run.gemm_config,
                   "GEMM config for every GEMM step (no tuning): BLOCK_MxBLOCK_NxBLOCK_K/"
                   "num_stages/num_warps[/splitkS or /streamkU][/persistent or /pingpong][/ra or /ra256], e.g. "
                   "128x128x64/3/8/splitk4 (K split over 4 blocks a tile, the partial tiles "
                   "reduced in split order by the last block of each tile)")
      ->check(gemm_config_value);
  run_cmd->add_flag("--verbose,-v", run.verbose,
                    "Say where each kernel came from (compiled or the kernel cache), its "
                    "registers, shared memory and occupancy");

  BenchOptions bench;
  CLI::App* bench_cmd = app.add_subcommand(
      "bench",
      "Time the program's fused and unfused plans and the baselines (the unfused plan with "
      "cuBLASLt GEMMs, and those GEMMs alone) on random inputs: median of --repeats runs "
      "after --warmup, L2 flushed before each; prints time, TFLOP/s, GB/s of the bytes the "
      "program must move (each gathered row read once, each output written once, the other "
      "inputs once), on the GPU that rate's share of the device's copy bandwidth (a 1 GiB "
      "device-to-device copy timed in the same call), and the error against the f64 oracle. On the "
      "GPU the plans run with their tuned configs (the "
      "cached tuning, else one now) and the row `chosen` is the tuned winner.");
  bench_cmd->add_option("program", bench.program, "The .tfs program")->required();
  bench_cmd->add_option("--shape", bench.shapes, shape_help + " (every symbolic dim needs one)");
  bench_cmd->add_option("--device", bench.device, "auto, cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  bench_cmd->add_flag("--json", bench.json, "Print JSON instead of a table");
  bench_cmd->add_option("--seed", bench.seed, "Random-input seed")
      ->check(seed_value)
      ->capture_default_str();
  bench_cmd
      ->add_option("--warmup", bench.warmup,
                   "Untimed runs (default 10 GPU, 1 CPU; at most " +
                       std::to_string(tilefuse::cuda::kMaxWarmup) + ")")
      ->check(int_range(0, tilefuse::cuda::kMaxWarmup));
  bench_cmd
      ->add_option("--repeats", bench.repeats,
                   "Timed runs (default 100 GPU, 5 CPU; at most " +
                       std::to_string(tilefuse::cuda::kMaxRepeats) + ")")
      ->check(int_range(1, tilefuse::cuda::kMaxRepeats));
  bench_cmd->add_flag("!--no-baselines", bench.baselines, "Skip the cuBLASLt rows");
  bench_cmd->add_flag("!--no-check", bench.check, "Skip the comparison with the f64 oracle");
  bench_cmd->add_option("--threads", bench.threads, "CPU threads (0: all; at most 1024)")
      ->check(thread_count);
  bench_cmd->add_option("--input", bench.inputs,
                        "name=file.npy: time on parameter `name` from a NumPy .npy file instead "
                        "of random values (as run --input; e.g. the same index as a peer). "
                        "Repeatable.");
  bench_cmd->add_option("--save-inputs", bench.save_inputs_dir,
                        "Also write the inputs it times as DIR/<parameter>.npy (the same inputs "
                        "for another tool, e.g. bench/compare_torch.py)");
  bench_cmd->add_option(
      "--gemm-config", bench.gemm_config,
      "GEMM config for every GEMM step: BLOCK_MxBLOCK_NxBLOCK_K/num_stages/"
      "num_warps[/splitkS or /streamkU][/persistent or /pingpong][/ra or /ra256], e.g. 128x128x32/3/8 (default: the tuned ones on the GPU, "
      "the heuristic's on the CPU)")
      ->check(gemm_config_value);
  bench_cmd->add_flag("--retune", bench.retune,
                      "GPU: tune again even when the tuning cache has a choice");
  bench_cmd->add_flag("--allow-tf32", bench.allow_tf32,
                      tf32_help + "; the cuBLASLt rows then use CUBLAS_COMPUTE_32F_FAST_TF32 "
                                  "(GPU only)");
  bench_cmd->add_option("--cuda-option", bench.cuda_options, cuda_option_help);

  EmitOptions emit;
  CLI::App* emit_cmd = app.add_subcommand(
      "emit",
      "Print the program at a compilation stage: graph (the graph IR), plan (its "
      "kernels and fusion decisions), tir (the Tile IR kernels as lowered, after "
      "inline_hooks), tir-opt (after the whole pass pipeline) or cuda (the generated "
      "CUDA C++, one translation unit per kernel, each starting with a `// <kernel>: generated by "
      "tilefuse` line; needs a CUDA --target such as sm_80 or sm_90a).");
  emit_cmd->add_option("program", emit.program, "The .tfs program")->required();
  emit_cmd->add_option("--shape", emit.shapes,
                       shape_help + " (optional: without, the graph at generic sizes and the "
                                    "kernels every size shares)");
  emit_cmd->add_option("--stage", emit.stage, "Which stage: graph, plan, tir, tir-opt or cuda")
      ->check(CLI::IsMember({"graph", "plan", "tir", "tir-opt", "cuda"}))
      ->capture_default_str();
  emit_cmd->add_option("--plan", emit.plan, "Which plan: fused or unfused")
      ->check(CLI::IsMember(plans))
      ->capture_default_str();
  emit_cmd->add_option("--target", emit.target, std::string("The target: ") + kTargetHelp)
      ->check(target_check)
      ->capture_default_str();
  std::string pass_list;
  for (const std::string& p : tilefuse::driver::pass_names(tilefuse::tir::Target::cpu()))
    pass_list += p + ", ";
  std::string cuda_pass_list;
  for (const std::string& p : tilefuse::driver::pass_names(*tilefuse::tir::Target::parse("sm_90a")))
    if (pass_list.find(p + ", ") == std::string::npos) cuda_pass_list += p + ", ";
  emit_cmd->add_option("--dump-after", emit.dump_after,
                       "Also print every kernel after this pass (" + pass_list +
                           "and for a CUDA target " + cuda_pass_list +
                           "or all: after each), before the stage's output; with "
                           "--stage=tir or tir-opt");
  emit_cmd->add_flag("--allow-tf32", emit.allow_tf32, tf32_help + " (--stage=cuda)");
  emit_cmd->add_option("--cuda-option", emit.cuda_options, cuda_option_help);
  emit_cmd->add_option(
      "--gemm-config", emit.gemm_config,
      "GEMM config for every GEMM step: BLOCK_MxBLOCK_NxBLOCK_K/num_stages/"
      "num_warps[/splitkS or /streamkU][/persistent or /pingpong][/ra or /ra256], e.g. 128x256x64/4/8 (default: the template's heuristic)")
      ->check(gemm_config_value);

  ExplainOptions explain;
  CLI::App* explain_cmd = app.add_subcommand(
      "explain",
      "Explain the compiled plan: its kernels, the ops fused into each (prologue per "
      "operand, epilogue), what LICM hoisted out of which loop, each copy's mode, "
      "width and reason, the config and the fusion decisions. README.md documents "
      "the --json keys.");
  explain_cmd->add_option("program", explain.program, "The .tfs program")->required();
  explain_cmd->add_option("--shape", explain.shapes,
                          shape_help + " (optional: the kernels specialized for these sizes, "
                                       "and their size bucket's tuning)");
  explain_cmd->add_flag("--json", explain.json, "Print the account as JSON");
  explain_cmd->add_option("--target", explain.target, std::string("The target: ") + kTargetHelp)
      ->check(target_check)
      ->capture_default_str();
  explain_cmd->add_option("--plan", explain.plan, "Which plan: fused or unfused")
      ->check(CLI::IsMember(plans))
      ->capture_default_str();
  explain_cmd->add_flag("--allow-tf32", explain.allow_tf32,
                        tf32_help + " (a CUDA --target; the gemm family says which ran)");
  explain_cmd->add_option("--cuda-option", explain.cuda_options, cuda_option_help);
  explain_cmd->add_option("--gemm-config", explain.gemm_config,
                          "GEMM config for every GEMM step: BLOCK_MxBLOCK_NxBLOCK_K/num_stages/"
                          "num_warps[/splitkS or /streamkU][/persistent or /pingpong][/ra or /ra256] (default: the template's heuristic)")
      ->check(gemm_config_value);

  TuneCommandOptions tune;
  CLI::App* tune_cmd = app.add_subcommand(
      "tune",
      "Tune a program ahead of time (GPU): at each combination of --shapes, search both "
      "plans' GEMM configs and keep the winner in the tuning cache, per size bucket (each "
      "symbolic dim's size rounded up to a power of two), where run, bench and the C API "
      "and Python package find it. Prints one line per shape.");
  tune_cmd->add_option("program", tune.program, "The .tfs program")->required();
  tune_cmd->add_option("--shapes", tune.shapes,
                       "NAME=S1,S2,...: the sizes of symbolic dim NAME to tune at (e.g. "
                       "M=1,16,128,1024); repeat for each symbolic dim");
  tune_cmd->add_option("--shape", tune.single_shapes,
                       "NAME=SIZE[,NAME=SIZE...]: one size per symbolic dim, as run's --shape "
                       "(each pair counts as --shapes NAME=SIZE)");
  tune_cmd->add_option("--device", tune.device, "auto, cpu or cuda (the CPU tunes nothing)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  tune_cmd->add_flag("--retune", tune.retune, "Search again even when a tuning is cached");
  tune_cmd->add_flag("--allow-tf32", tune.allow_tf32, tf32_help);
  tune_cmd->add_option("--seed", tune.seed, "Seed of the random inputs it times")
      ->check(seed_value)
      ->capture_default_str();
  tune_cmd->add_option("--threads", tune.threads, "CPU threads (0: all; at most 1024)")
      ->check(thread_count);
  tune_cmd->add_option("--cuda-option", tune.cuda_options,
                       cuda_option_help +
                           " (part of the tuning's cache key: run and bench with "
                           "the same options find it)");

  for (CLI::App* cmd : {run_cmd, bench_cmd, emit_cmd, explain_cmd, tune_cmd}) add_max_program_size(cmd);

  // A first word that is no option and no command: say so (CLI11 would
  // report "A subcommand is required").
  if (argc > 1 && argv[1][0] != '-') {
    const std::string first = argv[1];
    if (first != "run" && first != "bench" && first != "emit" && first != "explain" &&
        first != "tune") {
      std::fprintf(stderr,
                   "tilefuse: unknown command '%s'; the commands are run, bench, emit, "
                   "explain and tune (tilefuse --help)\n",
                   first.c_str());
      return kUserError;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ArgumentMismatch& e) {
    // A single-valued option given twice: CLI11 says "--device: At Most 1
    // required but received 2"; say it in our words.
    const std::string what = e.what();
    const size_t colon = what.find(": At Most 1 required but received ");
    if (colon == std::string::npos) {
      app.exit(e);
      return kUserError;
    }
    std::fprintf(stderr, "tilefuse: error: %s was given %s times; it takes one value\n",
                 what.substr(0, colon).c_str(),
                 what.substr(colon + std::strlen(": At Most 1 required but received ")).c_str());
    return kUserError;
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kUserError;
  }

  run.max_program_bytes = bench.max_program_bytes = emit.max_program_bytes =
      explain.max_program_bytes = tune.max_program_bytes = max_program_bytes;
  try {
    if (*run_cmd) return run_command(run);
    if (*bench_cmd) return bench_command(bench);
    if (*emit_cmd) return emit_command(emit);
    if (*explain_cmd) return explain_command(explain);
    if (*tune_cmd) return tune_command(tune);
  } catch (const std::bad_alloc&) {
    // Tensor storage says how much and what for (core/memory.h); this is
    // any other allocation, whose size the standard library does not tell.
    std::fprintf(stderr,
                 "tilefuse: error: out of host memory (an allocation outside tensor storage "
                 "failed: the program or its shapes are too large for this machine)\n");
    return kUserError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tilefuse: internal error: %s\n", e.what());
    return kInternalError;
  }
  return kInternalError;
}
