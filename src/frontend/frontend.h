// The .tfs front end: lexer, recursive-descent parser and diagnostics.
//
// Grammar and semantics: ../shared/DESIGN.md, "The .tfs language". A program
// is one `def NAME(params): body` with typed tensor parameters
// (`x: f16[2048, 2048]`, `idx: i64[50] in [-64, 64)`), statements
// `name = expr` and `return expr[, expr...]`, and `#` comments. An optional
// return annotation (`-> f16[M, 64]`, `-> tuple[f32[4], f32[4]]`) is checked
// against what `return` gives (parser.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "graph/graph.h"

namespace tilefuse {

struct Program {
  std::string file;     // as given to parse_program (used in diagnostics)
  std::string source;   // the whole text
  std::string name;     // the function's name
  Graph graph;          // parameters in order, outputs in `return` order
};

// Values of symbolic dims by name (`T` -> 2048).
using SymbolValues = std::map<std::string, int64_t, std::less<>>;

// Parses and type-checks a program. Throws UserError whose loc() points at
// the offending token (lexical, syntax, unknown name/method/dtype, arity,
// shape and dtype errors alike). Never crashes on any input.
//
// Symbolic dims (`x: f16[T, 4096]`, graph.h) take their value from `values`
// when it names them, else generic_symbol_value(): a graph built without
// values is valid for every binding (what kernels are compiled from, and
// what emit/explain show). A name in `values` that is not a symbolic dim of
// the program is a UserError (without a location); so is a negative value.
Program parse_program(std::string_view source, const std::string& file,
                      const SymbolValues* values = nullptr);

struct LoadOptions {
  // The largest program file read (bytes); a longer one is a UserError
  // naming this limit. Any file kind is read (a pipe from `<(gen)` too), at
  // most this much of it: /dev/zero is an error, not an endless read.
  int64_t max_bytes = int64_t{16} << 20;
  // How the caller raises max_bytes, appended to that error in parentheses
  // (the CLI: "--max-program-size raises the limit"; empty: nothing said).
  std::string raise_hint;
};

// Reads `path` (read_program_file) and parses it (parse_program).
Program load_program(const std::string& path, const LoadOptions& options = {});
// The text of the program file at `path`. Never blocks on a file that has
// nothing to read: a UserError "cannot read 'PATH': WHY" for
//  - a file that cannot be opened or read (WHY: strerror), a directory;
//  - a FIFO or pipe with no writer ("not a regular file (a FIFO) and
//    nothing is writing to it"); a pipe with a writer (`<(gen)`) is read
//    until the writer closes it;
//  - a socket, or a device with no input ready (a terminal): "not a regular
//    file (a character device) and it has no input ready";
//  - a file longer than options.max_bytes.
std::string read_program_file(const std::string& path, const LoadOptions& options = {});

// Renders an error as the CLI prints it:
//   file:line:col: error: message
//     <the source line>
//     <spaces>^~~~
// Errors without a location render as "file: error: message".
std::string format_diagnostic(const std::string& file, std::string_view source,
                              const UserError& error);

}  // namespace tilefuse
