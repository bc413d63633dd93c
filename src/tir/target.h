// The code-generation target a kernel is compiled for. Passes that depend on
// the hardware (lower_copies, pipeline, lower_gemm) take one.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilefuse::tir {

// The targets Target::parse accepts, in words for help and error messages.
inline constexpr const char* kTargetNames =
    "cpu, sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100, sm_120 (any sm_NN or sm_NNN from 80 up; "
    "the arch-specific `a` suffix from sm_90 up)";

struct Target {
  enum class Kind { kCpu, kCuda };
  Kind kind = Kind::kCpu;
  int sm = 0;              // CUDA compute capability x10 (80, 90); 0 for the CPU
  bool arch_specific = false;  // the "a" suffix: sm_90a enables wgmma/setmaxnreg
  // The code generator lowers "tma" copies (TMA descriptors + mbarriers):
  // on sm_90a, where the wgmma main loop is warp-specialized and its
  // producer issues them. Elsewhere (and in a loop that is not
  // warp-specialized) lower_copies' "tma" tiles are issued as cp.async, so
  // without this it reports a TMA-eligible tile as cp.async.
  bool tma_copies = false;

  bool is_cuda() const { return kind == Kind::kCuda; }
  bool has_cp_async() const { return is_cuda() && sm >= 80; }  // PTX ISA 9.7.9.25
  bool has_tma() const { return is_cuda() && sm >= 90; }       // cp.async.bulk.tensor
  bool has_wgmma() const { return is_cuda() && sm == 90 && arch_specific; }  // sm_90a only

  static Target cpu() { return {}; }
  static Target cuda(int sm, bool arch_specific = false) {
    Target t{Kind::kCuda, sm, arch_specific};
    t.tma_copies = t.has_wgmma();
    return t;
  }
  // "cpu", or "sm_NN" / "sm_NNN" with NN >= 80 ("sm_80", "sm_86", "sm_90",
  // "sm_100", "sm_120"), with the arch-specific "a" suffix only from sm_90 on
  // ("sm_90a", "sm_100a": NVRTC has no sm_80a or sm_89a); nullopt otherwise.
  static std::optional<Target> parse(std::string_view name) {
    if (name == "cpu") return cpu();
    if (name.substr(0, 3) != "sm_" || name.size() < 5) return std::nullopt;
    std::string_view digits = name.substr(3);
    bool a = !digits.empty() && digits.back() == 'a';
    if (a) digits.remove_suffix(1);
    if (digits.size() < 2 || digits.size() > 3 || digits[0] == '0') return std::nullopt;
    int sm = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      sm = sm * 10 + (c - '0');
    }
    if (sm < 80 || (a && sm < 90)) return std::nullopt;
    return cuda(sm, a);
  }
  std::string name() const {
    return is_cuda() ? "sm_" + std::to_string(sm) + (arch_specific ? "a" : "") : "cpu";
  }
};

// The CUDA code generator's switches: every choice of the backend passes
// that a user, a test or the tuner may turn (docs/architecture.md). The
// defaults are the fastest measured on the H200 (bench/RESULTS.md); the
// others exist to compare. The CLI sets them with `--cuda-option
// NAME=0|1`, the tuner searches some of them, and the kernel and tuning
// caches key on key().
#define TILEFUSE_FOR_EACH_CUDA_OPTION(X)                                                         \
  X(allow_tf32, false,                                                                           \
    "f32 GEMMs on TF32 tensor cores (mma.sync m16n8k8: operands rounded to 10 mantissa bits)")   \
  X(wgmma, true, "sm_90a: f16/bf16 GEMMs on wgmma (else mma.sync)")                              \
  X(warp_specialize, true,                                                                       \
    "sm_90a: a producer warpgroup issues the wgmma main loop's copies through mbarriers")        \
  X(tma, true, "sm_90a: a warp-specialized producer issues affine tiles by TMA")                 \
  X(tma_row_gather, false,                                                                       \
    "sm_90a: gathered rows by TMA too, one 1-row box per row (measured slower)")                 \
  X(hybrid_row_gather, false,                                                                    \
    "sm_90a: a quarter of a gathered tile's rows by TMA 1-row boxes and the rest by cp.async "   \
    "(measured slower)")                                                                         \
  X(vector_loads, true, "register-staged copies read their main source 2-16 bytes at a time")    \
  X(wgmma_keep_one, true,                                                                        \
    "a wgmma ring of 4+ stages keeps one MMA group in flight across the barrier")                \
  X(fragment_pipeline, true,                                                                     \
    "mma.sync: MMA fragments double-buffered across k16 steps (128+ accumulators a thread)")     \
  X(staged_epilogue, true,                                                                       \
    "MMA epilogues staged through shared memory and stored in 16-byte row chunks")               \
  X(stmatrix_epilogue, true,                                                                     \
    "sm_90a: a staged wgmma epilogue of 16-bit values stages by stmatrix.x4")                    \
  X(warp_staged_epilogue, true,                                                                  \
    "sm_90a: a stmatrix epilogue stages and stores per MMA warp, 16 rows x 64 columns at a "     \
    "time in a buffer of its own, with no block barrier")                                        \
  X(warp_tma_store, true,                                                                        \
    "sm_90a: a per-warp staged epilogue into an unmasked 2-D row-major 16-bit output stores "    \
    "each slab by one TMA box from lane 0 (two buffers a warp)")                                 \
  X(proved_epilogue_chunks, true,                                                                \
    "a staged epilogue whose 16-byte row chunks axis_info proves contiguous and aligned "        \
    "stores them with no run-time pointer or alignment test")                                    \
  X(pair_cast_epilogue, true,                                                                    \
    "a staged epilogue casting f32 to f16/bf16 converts element pairs together "                 \
    "(cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32, tf::cast_pack2)")                                    \
  X(setmaxnreg, true,                                                                            \
    "sm_90a: warp-specialized roles get register budgets (producer / MMA warpgroups: 64 / "      \
    "216, persistent 72 / 208, register_a 40 / 232 or, with a TMA-only producer, 24 / 240)")     \
  X(hoist_copy_addresses, true,                                                                  \
    "a warp-specialized producer computes its cp.async source addresses once, before the loop")  \
  X(gather_cache_all, true,                                                                      \
    "gathered rows by cp.async.ca (L1 serves duplicate rows) rather than .cg")                   \
  X(gather_cache_by_repeats, true,                                                               \
    "with gather_cache_all, a hoisted gathered copy picks .ca or .cg per tile and producer "     \
    "warp: .ca where 16 or more of the warp's lanes read one source in their first two slots "   \
    "(repeated rows: L1 merges them), else .cg (1-5% faster on distinct rows)")                  \
  X(persistent, false,                                                                           \
    "sm_90a: a warp-specialized kernel loops over its tiles (grid = SMs), the producer "         \
    "filling the next tile's stages during the epilogue")                                        \
  X(cluster_multicast, false,                                                                    \
    "sm_90a: pairs of blocks that read the same operand tiles run as a 2-block cluster and "     \
    "share them by TMA multicast")                                                               \
  X(split_k_cluster, false,                                                                      \
    "sm_90a: the K splits of a split-K tile (2 to 8) run as one cluster and sum their partials " \
    "through distributed shared memory, each block the rows of a share of its warps (no "        \
    "workspace round trip, no counter)")                                                         \
  X(prologue_prefetch, true,                                                                     \
    "sm_90a: a persistent producer loads the next tile's index into registers while this "       \
    "tile's copies run")                                                                         \
  X(tma_store_epilogue, true,                                                                    \
    "sm_90a: a persistent kernel's staged 16-bit epilogue tile goes out by TMA stores, "         \
    "holding no registers while the next tile's main loop runs")                                 \
  X(producer_start, true,                                                                        \
    "sm_90a: a warp-specialized producer loads the gathered index into registers itself and "    \
    "issues the affine operand's first stages before it returns (not persistent kernels)")       \
  X(register_a, false,                                                                           \
    "sm_90a: a warp-specialized wgmma loop whose A operand is gathered rows (hoisted cp.async) " \
    "has the MMA warps load A into registers for wgmma's register-A form (K permuted inside "    \
    "each k-tile, B's TMA box likewise); A never enters shared memory")                          \
  X(fragment_no_allocate, false,                                                                 \
    "register_a: the MMA warps' fragment loads by ld.global.nc.L1::no_allocate (each row's "     \
    "k-slice is read once; L1 keeps none of it)")                                                \
  X(fragment_l2_prefetch, false,                                                                 \
    "register_a: the MMA warps' fragment loads by ld.global.nc.L2::256B (a miss fetches a "      \
    "row's next k-tile too; the tuner tries it per config as /ra256)")                           \
  X(fragment_word_loads, false,                                                                 \
    "register_a: each k-tile of A's fragments by 16 32-bit loads straight into wgmma's register "  \
    "order, unpredicated (a masked row reads a zero row), not 4 predicated 16-byte loads whose "   \
    "words ptxas copies into place a k-tile after issuing them (measured 22-34% slower)")         \
  X(slab_buffers_all, true,                                                                      \
    "sm_90a: in a one-tile kernel, a per-warp epilogue whose slabs go out by TMA gives each of "  \
    "a warp's slabs a buffer of its own where they fit without costing a block an SM (4 a "      \
    "warp at BLOCK_N 256, not 2): no slab waits for an earlier box to be read")                   \
  X(split_tail, false,                                                                           \
    "sm_90a: a warp-specialized wgmma loop's last k-tiles go N half by N half (two m64n(N/2) "   \
    "chains a warpgroup), and the per-warp epilogue stores half 0 while half 1's tail runs "      \
    "(the tuner tries it per config as /tailT)")                                                 \
  X(block_timeline, false,                                                                       \
    "a measuring aid: each block records %globaltimer at its start, when its first stage "       \
    "has landed, at the ends of its first two main loops and at its end, and its SM (kept in "   \
    "32 bytes of shared memory); bench prints each kernel's phases")                             \
  X(ring_fold_every_tile, false,                                                                 \
    "a testing aid: a persistent kernel folds its ring count after every tile (as it does "      \
    "where the count could pass 2^30), so that tests run the fold")

struct CudaOptions {
#define TF_CUDA_OPTION_FIELD(name, dflt, help) bool name = dflt;
  TILEFUSE_FOR_EACH_CUDA_OPTION(TF_CUDA_OPTION_FIELD)
#undef TF_CUDA_OPTION_FIELD

  // "name=0,name=1,..." of the options that differ from the defaults ("" for
  // none): what the caches key on and explain prints.
  std::string key() const;
  // Sets one option from "NAME=0" or "NAME=1"; false with *error set for an
  // unknown name ("unknown CUDA option `foo` (options: ...)") or any other
  // value ("a CUDA option is NAME=0 or NAME=1, got `wgmma=true`").
  bool set(std::string_view assignment, std::string* error);
  // Every option: name, default and help, for --help.
  struct Info {
    const char* name;
    bool default_value;
    const char* help;
  };
  static std::vector<Info> all();
};

}  // namespace tilefuse::tir
