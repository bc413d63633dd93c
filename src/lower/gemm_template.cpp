// The GEMM template (see gemm_template.h).
#include "lower/gemm_template.h"
#include "core/text.h"

#include <algorithm>
#include <functional>

#include "lower/expr_lowering.h"
#include "tir/builder.h"

namespace tilefuse {
namespace {

using tir::Buffer;
using tir::Expr;
using tir::MemScope;
using tir::Var;


// tile * block + i, in the index dtype of a dim of `size` elements.
Expr tile_index(const Expr& tile, int block, const Var& i, int64_t size) {
  if (index_dtype(size) == DType::I64)
    return tir::cast(DType::I64, tile) * block + tir::cast(DType::I64, i);
  return tile * block + i;
}

}  // namespace

DType accumulator_dtype(DType dtype) {
  return dtype == DType::F64 ? DType::F64 : DType::F32;
}

bool can_use_gemm(const Graph& graph, const KernelStep& step) {
  if (step.kind != StepKind::kGemm) return false;
  const DType a = graph.node(step.a.operand).dtype, b = graph.node(step.b.operand).dtype;
  return a == b && is_floating(a);
}

GemmConfig default_gemm_config(const Graph& graph, const KernelStep& step, bool wgmma) {
  const GemmGeometry& g = step.gemm;
  GemmConfig c;
  c.block_m = static_cast<int>(std::clamp<int64_t>(next_pow2(g.m), 16, 128));
  c.block_n = static_cast<int>(std::clamp<int64_t>(next_pow2(g.n), 16, 128));
  // 64 only where the rows are whole 16-byte vectors (K and N multiples of
  // 8): else the copies go element by element through registers, and 64
  // elements per thread per stage spill (measured with ptxas: 255 registers
  // and ~400 spilled bytes for K = 1001).
  const int64_t elem = dtype_size(graph.node(step.a.operand).dtype);
  const bool wide_k = wgmma && elem == 2 && g.k * elem % 16 == 0 && g.n * elem % 16 == 0;
  c.block_k = static_cast<int>(std::clamp<int64_t>(next_pow2(g.k), 16, wide_k ? 64 : 32));
  c.num_stages = static_cast<int>(std::clamp<int64_t>(ceil_div(g.k, c.block_k), 1, 3));
  c.num_warps = c.block_m * c.block_n >= 128 * 128 ? 8 : 4;
  c.group_m = 8;
  return c;
}

GemmConfig default_cpu_gemm_config(const Graph& graph, const KernelStep& step) {
  const GemmGeometry& g = step.gemm;
  constexpr int64_t kMaxTile = 512, kMinTile = 64, kMinTiles = 16;
  GemmConfig c;
  int64_t bm = std::clamp<int64_t>(next_pow2(g.m), 16, kMaxTile);
  int64_t bn = std::clamp<int64_t>(next_pow2(g.n), 16, kMaxTile);
  // Enough program instances to spread over a machine's threads (a tile's
  // work is one thread's): halve the larger side while there are fewer
  // than kMinTiles and it stays at least kMinTile.
  const int64_t batch = std::max<int64_t>(1, shape_numel(g.batch));
  while (batch * ceil_div(g.m, bm) * ceil_div(g.n, bn) < kMinTiles &&
         std::max(bm, bn) / 2 >= kMinTile) {
    (bm >= bn ? bm : bn) /= 2;
  }
  c.block_m = static_cast<int>(bm);
  c.block_n = static_cast<int>(bn);
  c.block_k = static_cast<int>(std::clamp<int64_t>(next_pow2(g.k), 16, kMaxTile));
  c.num_stages = 1;
  c.num_warps = 4;
  c.group_m = 8;
  return c;
}

tir::Kernel build_gemm(const Graph& graph, const KernelStep& step, const KernelSignature& sig,
                       const GemmConfig& config) {
  TF_CHECK(can_use_gemm(graph, step), "build_gemm: not a GEMM step with one operand dtype");
  const GemmGeometry& geo = step.gemm;
  const DType dtype = graph.node(step.a.operand).dtype;
  const DType acc = accumulator_dtype(dtype);
  const int bm = config.block_m, bn = config.block_n, bk = config.block_k;
  const int64_t M = geo.m, N = geo.n, K = geo.k;

  TF_CHECK(config.split_k >= 1, "build_gemm: split_k must be at least 1");
  const int split = config.split_k;
  tir::KernelBuilder b(step.name);
  declare_buffers(b, sig);
  const int64_t batch = shape_numel(geo.batch);
  const int64_t num_pid_m = ceil_div(M, bm), num_pid_n = ceil_div(N, bn);
  const int64_t num_pid = num_pid_m * num_pid_n;
  const int64_t k_tiles = ceil_div(K, bk);
  // Split-K: split s runs K tiles [s * per_split, (s + 1) * per_split); the
  // last splits may reach past K (masked: zeros) or be empty.
  const int64_t per_split = ceil_div(k_tiles, split);
  const int64_t tiles = std::max<int64_t>(1, batch) * num_pid;
  Buffer workspace, counters;
  if (split > 1) {
    // Unique among the signature's names (executors bind by name).
    auto unique = [&](std::string n) {
      for (bool taken = true; taken;) {
        taken = sig.output.name == n;
        for (const BufferSpec& s : sig.inputs) taken = taken || s.name == n;
        if (taken) n += "_";
      }
      return n;
    };
    const int64_t ws = int64_t{split} * tiles * bm * bn;
    workspace = b.output(
        unique("splitk_workspace"), accumulator_dtype(dtype),
        {index_const(split, ws), index_const(tiles, ws), index_const(bm, ws), index_const(bn, ws)},
        {}, 16);
    counters = b.output(unique("splitk_counters"), DType::I32, {index_const(tiles, tiles)}, {}, 16);
    b.set_attr("SPLIT_K", int64_t{split});
  }
  b.set_attr("BLOCK_M", int64_t{bm});
  b.set_attr("BLOCK_N", int64_t{bn});
  b.set_attr("BLOCK_K", int64_t{bk});
  b.set_attr("num_stages", int64_t{config.num_stages});
  b.set_attr("num_warps", int64_t{config.num_warps});
  b.set_attr("GROUP_M", int64_t{config.group_m});

  std::vector<Expr> lead;  // the batch index, when batched
  if (!geo.batch.empty()) lead.push_back(b.program_id("pid_b", index_const(batch, batch)));
  // The split is the slower grid dim: blocks next to each other work on
  // neighbouring tiles of one K range (GROUP_M's L2 reuse).
  Var pid_k;
  if (split > 1) pid_k = b.program_id("pid_k", index_const(split, split));
  Var pid = b.program_id("pid", index_const(num_pid, num_pid));

  // Group-M ordering (the numbers of tiles are constants of the kernel).
  const int64_t in_group = std::max<int64_t>(1, config.group_m * num_pid_n);
  Var group_id = b.let("group_id", pid / in_group);
  Var first_pid_m = b.let("first_pid_m", group_id * config.group_m);
  Var group_size_m =
      b.let("group_size_m", tir::min(num_pid_m - first_pid_m, const_like(pid, config.group_m)));
  Var pid_m = b.let("pid_m", first_pid_m + pid % in_group % group_size_m);
  Var pid_n = b.let("pid_n", pid % in_group / group_size_m);

  Buffer a_s = b.alloc("A_s", MemScope::Shared, dtype, {bm, bk});
  Buffer b_s = b.alloc("B_s", MemScope::Shared, dtype, {bk, bn});
  Buffer c_f = b.alloc("C_f", MemScope::Fragment, acc, {bm, bn});
  b.fill(c_f, tir::make_const(acc, 0));
  // The K tile of iteration k: k, or pid_k * per_split + k under split-K.
  auto k_tile = [&](const Var& k) -> Expr {
    if (split == 1) return k;
    const Expr s = pid_k.dtype() == k.dtype() ? Expr(pid_k) : tir::cast(k.dtype(), pid_k);
    return s * per_split + k;
  };
  const int64_t k_iters = split > 1 ? per_split : k_tiles;
  const Expr k_extent = index_const(k_iters, std::max(K, k_iters * split * bk));
  b.pipelined("k", k_extent, config.num_stages, [&](Var k) {
    b.copy(a_s,
           [&](const std::vector<Var>& ij) {
             Expr m = tile_index(pid_m, bm, ij[0], M), kk = tile_index(k_tile(k), bk, ij[1], K);
             std::vector<Expr> idx = lead;
             idx.insert(idx.end(), {m, kk});
             return b.load_input("A", idx, dtype, m < M && kk < K);
           },
           {"i", "j"});
    b.copy(b_s,
           [&](const std::vector<Var>& ij) {
             Expr kk = tile_index(k_tile(k), bk, ij[0], K), n = tile_index(pid_n, bn, ij[1], N);
             std::vector<Expr> idx = lead;
             idx.insert(idx.end(), {kk, n});
             return b.load_input("B", idx, dtype, kk < K && n < N);
           },
           {"i", "j"});
    b.gemm(a_s, b_s, c_f);
  });
  // The output tile: the epilogue (store_output) at C's coordinates.
  auto store_tile = [&](const std::function<Expr(const Var&, const Var&)>& value) {
    b.parallel("i", bm, [&](Var i) {
      b.parallel("j", bn, [&](Var j) {
        Var m = b.let("m", tile_index(pid_m, bm, i, M));
        Var n = b.let("n", tile_index(pid_n, bn, j, N));
        std::vector<Expr> idx = lead;
        idx.insert(idx.end(), {m, n});
        b.store_output("C", idx, value(i, j), m < M && n < N);
      });
    });
  };
  if (split == 1) {
    store_tile([&](const Var& i, const Var& j) { return tir::load(c_f, {i, j}); });
    return b.build();
  }
  // Split-K: every split stores its partial tile, the last to arrive sums
  // the S partials in split order (its own from its registers: the same
  // value it stored) and runs the epilogue once.
  const int64_t ws_elems = int64_t{split} * tiles * bm * bn;
  const DType wi = index_dtype(ws_elems);
  auto widen = [&](const Expr& e) { return e.dtype() == wi ? e : tir::cast(wi, e); };
  Expr tile = widen(pid);
  if (!lead.empty()) tile = widen(lead[0]) * num_pid + tile;
  Var tile_id = b.let("tile", tile);
  b.parallel("i", bm, [&](Var i) {
    b.parallel("j", bn, [&](Var j) {
      b.store(workspace, {widen(pid_k), tile_id, widen(i), widen(j)}, tir::load(c_f, {i, j}));
    });
  });
  b.if_last_arrival(counters, {tile_id}, split, [&] {
    store_tile([&](const Var& i, const Var& j) {
      Expr sum;
      for (int s = 0; s < split; ++s) {
        const Expr own = pid_k == s;
        const Expr other =
            tir::load(workspace, {tir::make_int(wi, s), tile_id, widen(i), widen(j)}, pid_k != s);
        const Expr part = tir::select(own, tir::load(c_f, {i, j}), other);
        sum = s == 0 ? part : sum + part;
      }
      return sum;
    });
  });
  return b.build();
}

}  // namespace tilefuse
