// tilefuse: the command-line driver. Argument parsing only; the work is in
// commands.cpp.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>

#include "commands.h"

int main(int argc, char** argv) {
  using namespace tilefuse::cli;
  CLI::App app{
      "tilefuse: compiles small PyTorch-style tensor programs built around a matrix\n"
      "multiply into fused kernels, and runs them.\n"
      "Exit codes: 0 ok, 1 user error (bad program, input or index), 2 internal error\n"
      "or a failed --check.",
      "tilefuse"};
  app.set_version_flag("--version", std::string("tilefuse ") + TILEFUSE_VERSION);
  app.require_subcommand(1);

  RunOptions run;
  CLI::App* run_cmd = app.add_subcommand(
      "run", "Run a program on random (or given) inputs and print each output's shape, dtype, "
             "checksum and time.");
  run_cmd->add_option("program", run.program, "The .tfs program")->required();
  run_cmd->add_option("--device", run.device, "Where to run: auto (the GPU if present, else the CPU) "
                                              "or cpu")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  run_cmd->add_option("--seed", run.seed, "Seed of the random inputs")->capture_default_str();
  run_cmd->add_option("--input", run.inputs,
                      "name=file.npy: take parameter `name` from a NumPy .npy file (C order; "
                      "bf16/f8 parameters read any floating file, rounded). Repeatable.");
  run_cmd->add_option("--save-output", run.save_output_dir,
                      "Write each output to DIR/NAME.npy (bf16/f8 as f32, exactly)");
  run_cmd->add_flag("--check", run.check,
                    "Also evaluate the f64 oracle and print each output's relative error "
                    "||out-ref||/||ref||; exit 2 if it exceeds the dtype's tolerance "
                    "(1e-2 for f16/bf16/f8, 1e-5 for f32, 1e-12 for f64, exact for integers)");
  run_cmd->add_option("--threads", run.threads, "CPU threads (0: all)")->capture_default_str();

  std::string emit_program, emit_stage = "graph";
  CLI::App* emit_cmd = app.add_subcommand("emit", "Print the program at a compilation stage.");
  emit_cmd->add_option("program", emit_program, "The .tfs program")->required();
  emit_cmd->add_option("--stage", emit_stage, "Which stage: graph")
      ->check(CLI::IsMember({"graph"}))
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kUserError;
  }

  try {
    if (*run_cmd) return run_command(run);
    if (*emit_cmd) return emit_command(emit_program, emit_stage);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "tilefuse: error: out of host memory\n");
    return kUserError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tilefuse: internal error: %s\n", e.what());
    return kInternalError;
  }
  return kInternalError;
}
