// Host memory: what an allocation that fails says.
//
// A failed allocation of tensor storage throws OutOfHostMemory, a UserError
// (exit 1: the program or its shapes are too big for this machine) whose
// message names the size and what it was for, e.g.
//   out of host memory: cannot allocate 8 GiB (f32[1048576, 2048]) for input `x`
// "What for" comes from the innermost AllocationPurpose alive on the
// allocating thread (the driver and the evaluators name their inputs,
// outputs and intermediate values); without one the message says so.
#pragma once

#include <cstdint>
#include <string>

#include "core/error.h"

namespace tilefuse {

class OutOfHostMemory : public UserError {
 public:
  explicit OutOfHostMemory(const std::string& message) : UserError(message) {}
};

// "512 bytes", "16 MiB", "1.5 GiB".
std::string format_bytes(int64_t bytes);

// Names what the allocations made on this thread while it lives are for
// ("input `x`", "the output of step gemm0"). Nests; not copyable.
class AllocationPurpose {
 public:
  explicit AllocationPurpose(std::string what);
  ~AllocationPurpose();
  AllocationPurpose(const AllocationPurpose&) = delete;
  AllocationPurpose& operator=(const AllocationPurpose&) = delete;
  // The innermost purpose on this thread, or "" when none.
  static const std::string& current();

 private:
  std::string what_;
  const AllocationPurpose* outer_;
};

// Throws OutOfHostMemory for `bytes` of `what` (a type such as
// "f32[1048576, 2048]", or "") under the current purpose.
[[noreturn]] void throw_out_of_host_memory(int64_t bytes, const std::string& what);

}  // namespace tilefuse
