// Running the `tilefuse` binary (TILEFUSE_BINARY, the one built beside the
// tests; $TILEFUSE_TEST_BINARY overrides it, e.g. on the GPU machine where the
// binaries travel to another path) from the end-to-end tests: its exit code
// and what it printed.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

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

struct MeasuredCliResult {
  int exit_code = -1;  // -1: killed (timed out) or not exited normally
  bool timed_out = false;
  std::string output;   // stdout and stderr
  double seconds = 0;   // wall time
  long max_rss_kb = 0;  // peak resident set of the tilefuse process
};

// Runs `tilefuse <args>` (through `sh -c "exec ..."`, so the measured
// process is tilefuse itself) with a wall-clock limit: past `timeout_s` it
// is killed (timed_out). Reports its peak RSS (wait4's ru_maxrss).
inline MeasuredCliResult run_cli_measured(const std::string& args, double timeout_s,
                                          const CliOptions& options = {}) {
  const char* override_binary = std::getenv("TILEFUSE_TEST_BINARY");
  const std::string binary =
      override_binary && *override_binary ? override_binary : std::string(TILEFUSE_BINARY);
  const std::string cmd = options.env + "exec " + binary + " " + args;
  MeasuredCliResult r;
  int fds[2];
  if (pipe(fds) != 0) return r;
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) return r;
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  const auto deadline = t0 + std::chrono::duration<double>(timeout_s);
  char buf[4096];
  for (;;) {
    const double left =
        std::chrono::duration<double, std::milli>(deadline - std::chrono::steady_clock::now())
            .count();
    if (left <= 0) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::min(left, 1000.0))) > 0) {
      const ssize_t n = read(fds[0], buf, sizeof buf);
      if (n <= 0) break;  // EOF: the process closed its output (exited)
      r.output.append(buf, static_cast<size_t>(n));
    }
  }
  close(fds[0]);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.max_rss_kb = ru.ru_maxrss;
  r.exit_code = !r.timed_out && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The xxh64 of every output `tilefuse run` printed (`xxh64=<16 hex>`), in
// order: two runs agree bit for bit when these are equal.
inline std::vector<std::string> output_hashes(const std::string& output) {
  std::vector<std::string> out;
  const std::regex h(R"(xxh64=([0-9a-f]{16}))");
  for (std::sregex_iterator it(output.begin(), output.end(), h), end; it != end; ++it)
    out.push_back((*it)[1]);
  return out;
}

// tests/cases/<file> (the file name with its extension).
inline std::string case_path(const std::string& file) {
  return std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases/" + file;
}

}  // namespace tilefuse::testing
