// The warp-specialized sm_90a main loop's edge programs and variants, shared
// by the compile-only test (tests/unit/codegen) and the GPU test (tests/gpu):
// M, N and K that are not multiples of the tiles (the producer's TMA boxes
// and masked cp.async rows at the edges, zero-filled), a gather, a
// bias + relu epilogue and a batched GEMM; each under the emitter's switches.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <string>

#include "lower/gemm_template.h"
#include "tir/target.h"

namespace tilefuse::testing {

struct WsProgram {
  const char* name;
  const char* source;
  int tma_maps;  // tensor maps of the fused GEMM kernel by default
  int64_t k;     // the GEMM's K
};

inline const std::vector<WsProgram>& ws_programs() {
  static const std::vector<WsProgram> p = {
      // Gathered A (cp.async rows, masked past M), B by TMA with K and N tails.
      {"gather_f16",
       "def g(x: f16[300, 520], w: f16[520, 264], idx: i64[333] in [0, 300)):\n"
       "    return x[idx] @ w\n",
       1, 520},
      // Both operands by TMA; an epilogue that reads the bias.
      {"mlp_bf16",
       "def mlp(x: bf16[333, 520], w: bf16[520, 264], b: bf16[264]):\n"
       "    return torch.relu(x @ w + b)\n",
       2, 520},
      // Gathered A with wrapped and checked indices, K = 8 tiles of 64 (register_a's
      // fragment ring takes it), M and N tails.
      {"gather_k512_bf16",
       "def g(x: bf16[300, 512], w: bf16[512, 264], idx: i64[333]):\n"
       "    return x[idx] @ w\n",
       1, 512},
      // Batched: rank-3 tensor maps.
      {"bmm_f16", "def bmm(x: f16[3, 200, 192], w: f16[3, 192, 136]):\n    return x @ w\n", 2, 192},
  };
  return p;
}

// The switches (CUDA options "NAME=0|1", several comma-separated; nullptr:
// the defaults).
struct WsVariant {
  const char* option;
  bool warp_specialized;
  tir::CudaOptions options() const {
    tir::CudaOptions o;
    std::string error;
    if (!option) return o;
    std::string_view rest = option;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      if (!o.set(rest.substr(0, comma), &error)) throw std::invalid_argument(error);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    return o;
  }
  const char* name() const { return option ? option : "default"; }
};

inline const std::vector<WsVariant>& ws_variants() {
  static const std::vector<WsVariant> v = {
      {nullptr, true},
      {"tma=0", true},
      {"tma_row_gather=1", true},
      {"hybrid_row_gather=1", true},
      {"hybrid_row_gather=1,persistent=1", true},
      {"staged_epilogue=0", true},
      {"warp_specialize=0", false},
      {"persistent=1", true},
      {"cluster_multicast=1", true},
      {"cluster_multicast=1,persistent=1", true},
      {"producer_start=0", true},
      {"split_k_cluster=1", true},
      {"split_k_cluster=1,warp_specialize=0", false},
      {"gather_cache_by_repeats=0", true},
      {"gather_cache_all=0", true},
      {"register_a=1", true},
      {"register_a=1,persistent=1", true},
      {"register_a=1,persistent=1,fragment_no_allocate=1", true},
      {"register_a=1,persistent=1,fragment_l2_prefetch=1", true},
      {"register_a=1,fragment_no_allocate=1,fragment_l2_prefetch=1", true},
      {"slab_buffers_all=0", true},
      {"register_a=1,cluster_multicast=1", true},
      {"register_a=1,persistent=1,fragment_l2_prefetch=1,cluster_multicast=1", true},
      // A's fragments by 32-bit loads, a masked row reading the zero row
      // (CopyPlan::word_loads), one-tile and persistent, with each cache
      // qualifier.
      {"register_a=1,fragment_word_loads=1", true},
      {"register_a=1,persistent=1,fragment_l2_prefetch=1,fragment_word_loads=1", true},
      {"register_a=1,persistent=1,fragment_no_allocate=1,fragment_word_loads=1", true},
      // The ring count folded after every tile (LaunchPlan::ring_fold_at), as
      // where it could pass 2^30: plain, register_a (its not-the-first-tile
      // test), a multicast cluster (its drain) and, by the ping-pong config,
      // two teams.
      {"persistent=1,ring_fold_every_tile=1", true},
      {"persistent=1,register_a=1,ring_fold_every_tile=1", true},
      {"persistent=1,cluster_multicast=1,ring_fold_every_tile=1", true},
  };
  return v;
}

// A gtest-safe name of a variant: its options with every character outside
// [A-Za-z0-9] as '_' ("register_a=1,persistent=1" -> "register_a_1_persistent_1"),
// "default" for the defaults. Distinct over ws_variants() (a test checks).
inline std::string ws_variant_test_name(const WsVariant& v) {
  std::string name = v.name();
  for (char& c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) c = '_';
  return name;
}

// Four plain configs (one of BLOCK_N 192: wgmma m64n192), two split-K ones
// and a ping-pong one (two teams of
// one warpgroup; the persistent variant's extra): K = 520 is 9 tiles of 64 (2
// splits of 5 and 4; 4 splits of 3 with the last one empty), K = 192 is 3
// (2 splits of 2 and 1; 4 splits of 1 with the last one empty). BLOCK_K 32
// puts A in wgmma's 64-byte swizzle (tf_wgmma.cuh; by TMA or cp.async). A
// persistent variant stays non-persistent under split-K (the splits meet at
// a counter).
inline const std::vector<GemmConfig>& ws_configs() {
  static const std::vector<GemmConfig> c = {
      GemmConfig{128, 256, 64, 4, 8, 8}, GemmConfig{64, 128, 64, 3, 4, 8},
      GemmConfig{128, 128, 64, 3, 8, 8, 2}, GemmConfig{64, 128, 64, 2, 4, 8, 4},
      GemmConfig{128, 128, 32, 5, 8, 8}, GemmConfig{128, 128, 32, 3, 4, 8, 1, true, true},
      // BLOCK_N 192: wgmma m64n192, three 64-column strips of B a warpgroup.
      GemmConfig{128, 192, 64, 4, 8, 8}};
  return c;
}

// Whether the fused GEMM kernel is warp-specialized: the variant's switch,
// and a main loop of at least 2 iterations (a split of one K tile runs in
// order).
inline bool ws_expected(const WsProgram& p, const WsVariant& v, const GemmConfig& c) {
  const int64_t k_tiles = (p.k + c.block_k - 1) / c.block_k;
  return v.warp_specialized && (k_tiles + c.split_k - 1) / c.split_k >= 2;
}

}  // namespace tilefuse::testing
