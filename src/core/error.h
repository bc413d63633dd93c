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

// What kind of user problem an error is, for callers that map it further
// (the C API's status codes, Python's exception classes). Most errors are
// kGeneric; the run-time checks of a call's arguments and of its index
// values say which they are.
enum class ErrorKind {
  kGeneric,
  kType,   // an argument of the wrong dtype
  kValue,  // an argument of the wrong shape, layout or size (a symbolic dim bound twice)
  kIndex,  // an index out of range at run time (a failed bounds check)
  kUnsupported,  // a request this machine or program cannot serve (tuning without a CUDA device)
};

// A problem the user can fix. `what()` is one clear sentence without
// location; `loc()` says where in the program it was found, if anywhere.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message, SourceLoc loc = {})
      : std::runtime_error(message), loc_(loc) {}
  UserError(ErrorKind kind, const std::string& message, SourceLoc loc = {})
      : std::runtime_error(message), loc_(loc), kind_(kind) {}
  const SourceLoc& loc() const { return loc_; }
  ErrorKind kind() const { return kind_; }

 private:
  SourceLoc loc_;
  ErrorKind kind_ = ErrorKind::kGeneric;
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
