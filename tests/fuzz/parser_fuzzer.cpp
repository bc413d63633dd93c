// libFuzzer target for the .tfs front end (run by run_fuzz.sh).
//
// Contract under test (frontend.h): parse_program either returns a Program or
// throws UserError with a location inside the source, and format_diagnostic
// renders any such error. Anything else escaping (InternalError, a standard
// exception, a sanitizer report, a hang, unbounded recursion) is a bug, so it
// aborts and libFuzzer saves the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "frontend/frontend.h"

namespace {

[[noreturn]] void bug(const char* what, const char* detail) {
  std::fprintf(stderr, "parser_fuzzer: %s: %s\n", what, detail);
  std::abort();
}

int count_lines(std::string_view s) {
  int lines = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || (s[i] == '\r' && (i + 1 == s.size() || s[i + 1] != '\n'))) ++lines;
  }
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view source(reinterpret_cast<const char*>(data), size);
  try {
    tilefuse::Program program = tilefuse::parse_program(source, "fuzz.tfs");
    if (program.graph.outputs().empty()) bug("parsed program", "has no outputs");
  } catch (const tilefuse::UserError& e) {
    const tilefuse::SourceLoc& loc = e.loc();
    // Every front-end error points into the program text.
    if (!loc.valid() || loc.col < 1 || loc.length < 1 || loc.line > count_lines(source))
      bug("UserError without a valid location", e.what());
    if (std::string_view(e.what()).empty()) bug("UserError", "empty message");
    std::string rendered = tilefuse::format_diagnostic("fuzz.tfs", source, e);
    if (rendered.find('^') == std::string::npos) bug("format_diagnostic", "no caret");
  } catch (const std::exception& e) {
    bug("unexpected exception", e.what());
  } catch (...) {
    bug("unexpected exception", "of unknown type");
  }
  return 0;
}
