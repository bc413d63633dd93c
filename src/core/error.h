// Error types shared by every module.
//
// Contract: user-facing problems (a malformed program, a bad input file, an
// out-of-range index at run time) throw `UserError`; the CLI prints them and
// exits with code 1. A broken invariant inside tilefuse throws
// `InternalError` (exit code 2). Nothing in tilefuse calls abort() or exit()
// on bad input.
#pragma once

#include <stdexcept>
#include <string>

namespace tilefuse {

// A position in a .tfs source file. `line` and `col` are 1-based; line 0
// means "no location" (errors raised away from the program text, such as
// run-time index errors). `length` is the number of columns the caret
// underlines (at least 1).
struct SourceLoc {
  int line = 0;
  int col = 0;
  int length = 1;
  bool valid() const { return line > 0; }
};

// A problem the user can fix. `what()` is one clear sentence without
// location; `loc()` says where in the program it was found, if anywhere.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message, SourceLoc loc = {})
      : std::runtime_error(message), loc_(loc) {}
  const SourceLoc& loc() const { return loc_; }

 private:
  SourceLoc loc_;
};

// A bug in tilefuse (a violated internal invariant).
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

}  // namespace tilefuse

// Checks an internal invariant; throws InternalError naming the condition.
#define TF_CHECK(cond, msg)                                                          \
  do {                                                                               \
    if (!(cond))                                                                     \
      throw ::tilefuse::InternalError(std::string(__FILE__) + ":" +                  \
                                      std::to_string(__LINE__) + ": check `" #cond \
                                      "` failed: " + (msg));                         \
  } while (0)
