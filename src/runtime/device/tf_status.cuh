// tilefuse device helpers: the status word device-side checks report into
// (PTX ISA 9.7.13.5, atom.cas).
#pragma once

namespace tf {

// ---- the status word ---------------------------------------------------------
// The first failing check of a launch wins: it claims `code` with a CAS
// (0 -> -1), writes its arguments, then publishes its code. The word may
// live in mapped host memory, read by the host while kernels run, so the
// arguments are made visible system-wide before the code. The kernel goes
// on (accesses a check guards are masked), so the context stays usable.
struct Status {
  int code;
  int pad;
  long long args[4];
};

__device__ __forceinline__ void report(Status* s, int code, long long a0 = 0, long long a1 = 0,
                                       long long a2 = 0, long long a3 = 0) {
  if (atomicCAS(&s->code, 0, -1) == 0) {
    s->args[0] = a0;
    s->args[1] = a1;
    s->args[2] = a2;
    s->args[3] = a3;
    __threadfence_system();
    atomicExch(&s->code, code);
  }
}

}  // namespace tf
