// The code-generation target a kernel is compiled for. Passes that depend on
// the hardware (lower_copies, pipeline, lower_gemm) take one.
#pragma once

#include <string>
#include <string_view>
#include <optional>

namespace tilefuse::tir {

struct Target {
  enum class Kind { kCpu, kCuda };
  Kind kind = Kind::kCpu;
  int sm = 0;              // CUDA compute capability x10 (80, 90); 0 for the CPU
  bool arch_specific = false;  // the "a" suffix: sm_90a enables wgmma/setmaxnreg
  // The code generator lowers "tma" copies (TMA descriptors + mbarriers).
  // Only the wgmma path will; the mma.sync path issues cp.async instead, so
  // lower_copies reports a TMA-eligible tile as cp.async unless this is set.
  bool tma_copies = false;

  bool is_cuda() const { return kind == Kind::kCuda; }
  bool has_cp_async() const { return is_cuda() && sm >= 80; }  // PTX ISA 9.7.9.25
  bool has_tma() const { return is_cuda() && sm >= 90; }       // cp.async.bulk.tensor
  bool has_wgmma() const { return is_cuda() && sm >= 90 && arch_specific; }

  static Target cpu() { return {}; }
  static Target cuda(int sm, bool arch_specific = false) { return {Kind::kCuda, sm, arch_specific}; }
  // "cpu", "sm_80", "sm_86", "sm_90", "sm_90a"; nullopt for anything else.
  static std::optional<Target> parse(std::string_view name) {
    if (name == "cpu") return cpu();
    if (name.substr(0, 3) != "sm_" || name.size() < 5) return std::nullopt;
    std::string_view digits = name.substr(3);
    bool a = !digits.empty() && digits.back() == 'a';
    if (a) digits.remove_suffix(1);
    if (digits.size() != 2 || digits[0] < '0' || digits[0] > '9' || digits[1] < '0' || digits[1] > '9')
      return std::nullopt;
    int sm = (digits[0] - '0') * 10 + (digits[1] - '0');
    if (sm < 80) return std::nullopt;
    return cuda(sm, a);
  }
  std::string name() const {
    return is_cuda() ? "sm_" + std::to_string(sm) + (arch_specific ? "a" : "") : "cpu";
  }
};

}  // namespace tilefuse::tir
