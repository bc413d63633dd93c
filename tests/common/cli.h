// Running the `tilefuse` binary (TILEFUSE_BINARY, the one built beside the
// tests; $TILEFUSE_TEST_BINARY overrides it, e.g. on the GPU machine where the
// binaries travel to another path) from the end-to-end tests: its exit code
// and what it printed.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace tilefuse::testing {

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout, and stderr unless with_stderr is false
};

struct CliOptions {
  // stderr joins stdout in `output` (2>&1), else it is dropped (2>/dev/null).
  bool with_stderr = true;
  // Put before the command, e.g. "TILEFUSE_CACHE_DIR=/tmp/x " (with the space).
  std::string env;
};

// Runs `tilefuse <args>` through the shell; exit_code is -1 when it did not
// exit normally (or could not be started).
inline CliResult run_cli(const std::string& args, const CliOptions& options = {}) {
  const char* override_binary = std::getenv("TILEFUSE_TEST_BINARY");
  const std::string binary =
      override_binary && *override_binary ? override_binary : std::string(TILEFUSE_BINARY);
  const std::string cmd = options.env + binary + " " + args +
                          (options.with_stderr ? " 2>&1" : " 2>/dev/null");
  CliResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// tests/cases/<file> (the file name with its extension).
inline std::string case_path(const std::string& file) {
  return std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases/" + file;
}

}  // namespace tilefuse::testing
