// The recursive-descent parser of .tfs programs.
//
// Grammar (Python's, restricted; `frontend.h` for the language):
//
//   program    := (import | decorator | docstring)* function (docstring)* END
//   import     := 'import' dotted ['as' NAME] | 'from' dotted 'import' NAME ['as' NAME]
//   function   := 'def' NAME '(' [param (',' param)* [',']] ')' ['->' returns] ':' body
//   returns    := rtype | ('tuple' | 'Tuple' | 'typing.Tuple') '[' rtype (',' rtype)* [','] ']'
//               | ('tuple' | 'Tuple' | 'typing.Tuple') '[' rtype ',' '...' ']'
//   rtype      := dotted '[' [dim (',' dim)* [',']] ']' | 'torch.Tensor' | 'Tensor'
//   param      := NAME ':' dotted '[' [dim (',' dim)* [',']] ']' ['in' '[' bound ',' bound ')']
//   dim        := INT | NAME                  (a NAME is a symbolic dim, graph.h)
//   bound      := ['-'] (INT | NAME)
//   body       := simple_line | NEWLINE INDENT simple_line+ DEDENT
//   simple_line:= stmt (';' stmt)* [';'] NEWLINE
//   stmt       := NAME ('=' | '+=' | '-=' | '*=' | '/=' | '@=') expr
//               | 'return' expr (',' expr)* [',']
//   expr       := arith [('==' | '!=' | '<' | '<=' | '>' | '>=') arith]
//   arith      := term (('+' | '-') term)*
//   term       := unary (('*' | '/' | '@') unary)*
//   unary      := ('-' | '+' | '~') unary | postfix
//   postfix    := atom ('.' NAME | '(' args ')' | '[' subscript ']')*
//   atom       := NAME | INT | FLOAT | STRING | 'True' | 'False' | 'None'
//               | '(' [expr (',' expr)* [',']] ')' | '[' [expr (',' expr)* [',']] ']'
//
// A return annotation is checked at `return`: the number of values, and each
// typed one's dtype and shape (a dim is a size or a symbolic dim of the
// parameters, which must match the returned dim's symbol); `torch.Tensor`
// accepts any tensor. A mismatch is a UserError at the returned value naming
// both types; any other annotation is a UserError at the annotation.
//
// The parser builds the Graph while it parses (see operand.h), so semantic
// errors surface in source order, each at its own token. Expression nesting
// is capped (kMaxNesting) so no input can exhaust the stack.
#pragma once

#include <string>
#include <vector>

#include "frontend/frontend.h"
#include "frontend/lexer.h"

namespace tilefuse::frontend {

// Deepest expression nesting accepted (parentheses, calls, subscripts, unary
// operators). Deeper input is a UserError, never a stack overflow.
constexpr int kMaxNesting = 256;

// Parses `tokens` (from tokenize) into `graph`; returns the function's name.
// `values` binds symbolic dims (frontend.h, parse_program).
std::string parse_tokens(const std::vector<Token>& tokens, Graph& graph,
                         const SymbolValues* values = nullptr);

}  // namespace tilefuse::frontend
