// The CLI's subcommands, separate from argument parsing so each stays small.
// Every command returns the process exit code: 0 ok, 1 user error (printed as
// a diagnostic), 2 internal error or a failed --check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tilefuse::cli {

enum ExitCode : int { kOk = 0, kUserError = 1, kInternalError = 2 };

struct RunOptions {
  std::string program;                 // path of the .tfs file
  std::string device = "auto";         // auto | cpu
  uint64_t seed = 0;                   // random-input seed
  std::vector<std::string> inputs;     // "name=file.npy"
  std::string save_output_dir;         // empty: don't save
  bool check = false;                  // compare with the f64 oracle
  int threads = 0;                     // 0: all hardware threads
};

// `tilefuse run`: parses the program, makes or loads its inputs, evaluates it
// on the chosen device and prints each output's shape, dtype, checksum and
// the time (and with --check, the relative error against the f64 oracle).
int run_command(const RunOptions& options);

// `tilefuse emit --stage=graph`: prints the program's graph IR.
int emit_command(const std::string& program, const std::string& stage);

}  // namespace tilefuse::cli
