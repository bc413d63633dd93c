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


// tile * block + i, in index dtype `dt` (the tile and i converted first).
Expr tile_index(const Expr& tile, int block, const Var& i, DType dt) {
  return DimEnv::as(dt, tile) * block + DimEnv::as(dt, i);
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
  return default_gemm_config(DimEnv(graph, {}), step, wgmma);
}

GemmConfig default_gemm_config(const DimEnv& env, const KernelStep& step, bool wgmma) {
  const GemmGeometry& g = step.gemm;
  const int64_t m = env.hint(g.m, g.m_symbol), n = env.hint(g.n, g.n_symbol),
                k = env.hint(g.k, g.k_symbol);
  GemmConfig c;
  c.block_m = static_cast<int>(std::clamp<int64_t>(next_pow2(m), 16, 128));
  c.block_n = static_cast<int>(std::clamp<int64_t>(next_pow2(n), 16, 128));
  // 64 only where the rows are whole 16-byte vectors (K and N multiples of
  // 8): else the copies go element by element through registers, and 64
  // elements per thread per stage spill (measured with ptxas: 255 registers
  // and ~400 spilled bytes for K = 1001). A symbolic K or N counts only when
  // it is known to be a multiple of 16.
  const int64_t elem = dtype_size(env.graph().node(step.a.operand).dtype);
  auto rows_of_16_bytes = [&](int64_t size, SymbolId s) {
    return s == kFixedDim ? size * elem % 16 == 0 : env.divisible_by_16(size, s);
  };
  const bool wide_k =
      wgmma && elem == 2 && rows_of_16_bytes(g.k, g.k_symbol) && rows_of_16_bytes(g.n, g.n_symbol);
  c.block_k = static_cast<int>(std::clamp<int64_t>(next_pow2(k), 16, wide_k ? 64 : 32));
  c.num_stages = static_cast<int>(std::clamp<int64_t>(ceil_div(k, c.block_k), 1, 3));
  c.num_warps = c.block_m * c.block_n >= 128 * 128 ? 8 : 4;
  c.group_m = 8;
  return c;
}

GemmConfig default_cpu_gemm_config(const Graph& graph, const KernelStep& step) {
  return default_cpu_gemm_config(DimEnv(graph, {}), step);
}

GemmConfig default_cpu_gemm_config(const DimEnv& env, const KernelStep& step) {
  const GemmGeometry& g = step.gemm;
  constexpr int64_t kMaxTile = 512, kMinTile = 64, kMinTiles = 16;
  GemmConfig c;
  // A symbolic dim counts as its size hint (the kernels must not depend on
  // the graph's generic values).
  const int64_t m = env.hint(g.m, g.m_symbol), n = env.hint(g.n, g.n_symbol),
                k = env.hint(g.k, g.k_symbol);
  int64_t bm = std::clamp<int64_t>(next_pow2(m), 16, kMaxTile);
  int64_t bn = std::clamp<int64_t>(next_pow2(n), 16, kMaxTile);
  // Enough program instances to spread over a machine's threads (a tile's
  // work is one thread's): halve the larger side while there are fewer
  // than kMinTiles and it stays at least kMinTile.
  int64_t batch = 1;
  for (size_t d = 0; d < g.batch.size(); ++d)
    batch *= std::max<int64_t>(
        1, env.hint(g.batch[d], d < g.batch_symbols.size() ? g.batch_symbols[d] : kFixedDim));
  while (batch * ceil_div(m, bm) * ceil_div(n, bn) < kMinTiles &&
         std::max(bm, bn) / 2 >= kMinTile) {
    (bm >= bn ? bm : bn) /= 2;
  }
  c.block_m = static_cast<int>(bm);
  c.block_n = static_cast<int>(bn);
  c.block_k = static_cast<int>(std::clamp<int64_t>(next_pow2(k), 16, kMaxTile));
  c.num_stages = 1;
  c.num_warps = 4;
  c.group_m = 8;
  return c;
}

std::string gemm_symbolic_dim(const Graph& graph, const KernelStep& step) {
  const GemmGeometry& g = step.gemm;
  auto named = [&](const std::string& dim, SymbolId s) {
    const std::string& name = graph.symbols().at(static_cast<size_t>(s)).name;
    return name == dim ? dim : dim + " = " + name;  // ("M", not "M = M")
  };
  if (g.m_symbol != kFixedDim) return named("M", g.m_symbol);
  if (g.n_symbol != kFixedDim) return named("N", g.n_symbol);
  if (g.k_symbol != kFixedDim) return named("K", g.k_symbol);
  for (size_t d = 0; d < g.batch_symbols.size(); ++d)
    if (g.batch_symbols[d] != kFixedDim)
      return named("batch dim " + std::to_string(d), g.batch_symbols[d]);
  return "";
}

tir::Kernel build_gemm(const DimEnv& env, const KernelStep& step, const KernelSignature& sig,
                       const GemmConfig& config) {
  const Graph& graph = env.graph();
  TF_CHECK(can_use_gemm(graph, step), "build_gemm: not a GEMM step with one operand dtype");
  const GemmGeometry& geo = step.gemm;
  const DType dtype = graph.node(step.a.operand).dtype;
  const DType acc = accumulator_dtype(dtype);
  const int bm = config.block_m, bn = config.block_n, bk = config.block_k;
  // The sizes (constants or symbol vars) and the index dtype of each dim.
  const Expr M = env.size(geo.m, geo.m_symbol), N = env.size(geo.n, geo.n_symbol),
             K = env.size(geo.k, geo.k_symbol);
  const DType m_dt = env.index_dtype_of(M), n_dt = env.index_dtype_of(N),
              k_dt = env.index_dtype_of(K);

  TF_CHECK(config.split_k >= 1, "build_gemm: split_k must be at least 1");
  const int split = config.split_k;
  if (split > 1) {
    const std::string sym = gemm_symbolic_dim(graph, step);
    TF_CHECK(sym.empty(), "build_gemm: split-K needs constant sizes (" + sym + " is symbolic)");
  }
  tir::KernelBuilder b(step.name);
  Buffer workspace, counters;
  int64_t tiles = 0;  // split-K: the output tiles (all batches)
  if (split == 1) {
    declare_buffers(b, sig);
  } else {
    // The buffers, then split-K's scratch buffers (the workspace, then the
    // counters), then the scalar params (run-time strides).
    KernelSignature buffers = sig;
    buffers.scalars.clear();
    declare_buffers(b, buffers);
    tiles =
        std::max<int64_t>(1, shape_numel(geo.batch)) * ceil_div(geo.m, bm) * ceil_div(geo.n, bn);
    // Unique among the signature's names (executors bind by name).
    auto unique = [&](std::string n) {
      for (bool taken = true; taken;) {
        taken = sig.output.name == n;
        for (const BufferSpec& s : sig.inputs) taken = taken || s.name == n;
        for (const Var& v : sig.scalars) taken = taken || v.name() == n;
        if (taken) n += "_";
      }
      return n;
    };
    const int64_t ws = int64_t{split} * tiles * bm * bn;
    workspace = b.output(
        unique("splitk_workspace"), acc,
        {index_const(split, ws), index_const(tiles, ws), index_const(bm, ws), index_const(bn, ws)},
        {}, 16);
    counters = b.output(unique("splitk_counters"), DType::I32, {index_const(tiles, tiles)}, {}, 16);
    for (const Var& v : sig.scalars) b.scalar_param(v);
    b.set_attr("SPLIT_K", int64_t{split});
  }
  b.set_attr("BLOCK_M", int64_t{bm});
  b.set_attr("BLOCK_N", int64_t{bn});
  b.set_attr("BLOCK_K", int64_t{bk});
  b.set_attr("num_stages", int64_t{config.num_stages});
  b.set_attr("num_warps", int64_t{config.num_warps});
  b.set_attr("GROUP_M", int64_t{config.group_m});
  if (config.persistent) b.set_attr("PERSISTENT", int64_t{1});
  if (config.pingpong) b.set_attr("PINGPONG", int64_t{1});

  std::vector<Expr> lead;  // the batch index, when batched
  if (!geo.batch.empty()) {
    Node batch;  // the batch dims as a node, for their product
    batch.shape = geo.batch;
    batch.dim_symbols = geo.batch_symbols;
    lead.push_back(b.program_id("pid_b", env.product(batch, 0, geo.batch.size())));
  }
  // The split is the slower grid dim: blocks next to each other work on
  // neighbouring tiles of one K range (GROUP_M's L2 reuse).
  Var pid_k;
  if (split > 1) pid_k = b.program_id("pid_k", index_const(split, split));
  // The numbers of tiles: constants, or expressions of the symbols, in one
  // index dtype (the wider of the two).
  Expr num_pid_m = ceil_div(M, bm), num_pid_n = ceil_div(N, bn);
  const DType grid_dt = env.index_dtype_of(num_pid_m * num_pid_n) == DType::I64 ||
                                num_pid_m.dtype() == DType::I64 || num_pid_n.dtype() == DType::I64
                            ? DType::I64
                            : DType::I32;
  num_pid_m = DimEnv::as(grid_dt, num_pid_m);
  num_pid_n = DimEnv::as(grid_dt, num_pid_n);
  Expr num_pid = num_pid_m * num_pid_n;
  if (tir::as_const_int(num_pid_m) && tir::as_const_int(num_pid_n)) {
    const int64_t c = *tir::as_const_int(num_pid_m) * *tir::as_const_int(num_pid_n);
    num_pid = index_const(c, c);
    num_pid_m = DimEnv::as(num_pid.dtype(), num_pid_m);
    num_pid_n = DimEnv::as(num_pid.dtype(), num_pid_n);
  }
  Var pid = b.program_id("pid", num_pid);

  // Group-M ordering: GROUP_M row tiles share a column tile.
  Expr in_group = num_pid_n * config.group_m;
  // (With N = 0 the grid is empty: no instance divides by it.)
  if (const int64_t* c = tir::as_const_int(num_pid_n))
    in_group = const_like(pid, std::max<int64_t>(1, config.group_m * *c));
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
  // The K loop's trip count in K's index dtype; under split-K the K tiles
  // of one split: split s runs K tiles [s * per_split, (s + 1) * per_split)
  // (the last splits may reach past K, masked: zeros, or be empty).
  Expr k_extent;
  int64_t per_split = 0;
  if (split == 1) {
    Expr k_tiles = ceil_div(K, bk);
    if (const int64_t* c = tir::as_const_int(K)) k_tiles = index_const(ceil_div(*c, bk), *c);
    k_extent = DimEnv::as(k_dt, k_tiles);
  } else {
    per_split = ceil_div(ceil_div(geo.k, bk), split);
    k_extent = index_const(per_split, std::max(geo.k, per_split * split * bk));
  }
  // The K tile of iteration k: k, or pid_k * per_split + k under split-K.
  auto k_tile = [&](const Var& k) -> Expr {
    if (split == 1) return k;
    const Expr s = pid_k.dtype() == k.dtype() ? Expr(pid_k) : tir::cast(k.dtype(), pid_k);
    return s * per_split + k;
  };
  b.pipelined("k", k_extent, config.num_stages, [&](Var k) {
    b.copy(
        a_s,
        [&](const std::vector<Var>& ij) {
          Expr m = tile_index(pid_m, bm, ij[0], m_dt), kk = tile_index(k_tile(k), bk, ij[1], k_dt);
          std::vector<Expr> idx = lead;
          idx.insert(idx.end(), {m, kk});
          return b.load_input("A", idx, dtype, m < DimEnv::as(m_dt, M) && kk < DimEnv::as(k_dt, K));
        },
        {"i", "j"});
    b.copy(
        b_s,
        [&](const std::vector<Var>& ij) {
          Expr kk = tile_index(k_tile(k), bk, ij[0], k_dt), n = tile_index(pid_n, bn, ij[1], n_dt);
          std::vector<Expr> idx = lead;
          idx.insert(idx.end(), {kk, n});
          return b.load_input("B", idx, dtype, kk < DimEnv::as(k_dt, K) && n < DimEnv::as(n_dt, N));
        },
        {"i", "j"});
    b.gemm(a_s, b_s, c_f);
  });
  // The output tile: the epilogue (store_output) at C's coordinates.
  auto store_tile = [&](const std::function<Expr(const Var&, const Var&)>& value) {
    b.parallel("i", bm, [&](Var i) {
      b.parallel("j", bn, [&](Var j) {
        Var m = b.let("m", tile_index(pid_m, bm, i, m_dt));
        Var n = b.let("n", tile_index(pid_n, bn, j, n_dt));
        std::vector<Expr> idx = lead;
        idx.insert(idx.end(), {m, n});
        b.store_output("C", idx, value(i, j), m < DimEnv::as(m_dt, M) && n < DimEnv::as(n_dt, N));
      });
    });
  };
  if (split == 1) {
    store_tile([&](const Var& i, const Var& j) { return tir::load(c_f, {i, j}); });
    return b.build();
  }
  // Split-K: every split stores its partial tile; the last to arrive reads
  // the other S - 1 partials back (its own from its registers: the value it
  // stored) and sums them in split order into the accumulators, ((p0 + p1)
  // + p2) + ..., in one nest of its own, then runs the epilogue once on the
  // sums. (The sum
  // inside the epilogue's stored value, as before, made each element's
  // loads wait for the previous element's store: one L2 round trip an
  // element pair, 10 us of skinny's 24 on the H200; ncu and a globaltimer
  // trace in bench/RESULTS.md, session 10. In a nest of their own the loads
  // are independent, and the epilogue reads only the accumulators, so it
  // may be staged.)
  const int64_t ws_elems = int64_t{split} * tiles * bm * bn;
  const DType wi = index_dtype(ws_elems);
  auto widen = [&](const Expr& e) { return e.dtype() == wi ? e : tir::cast(wi, e); };
  Expr tile = widen(pid);
  if (!lead.empty()) tile = widen(lead[0]) * *tir::as_const_int(num_pid) + tile;
  Var tile_id = b.let("tile", tile);
  b.parallel("i", bm, [&](Var i) {
    b.parallel("j", bn, [&](Var j) {
      b.store(workspace, {widen(pid_k), tile_id, widen(i), widen(j)}, tir::load(c_f, {i, j}));
    });
  });
  b.if_last_arrival(counters, {tile_id}, split, [&] {
    b.parallel("i", bm, [&](Var i) {
      b.parallel("j", bn, [&](Var j) {
        Expr sum;
        for (int s = 0; s < split; ++s) {
          const Expr other =
              tir::load(workspace, {tir::make_int(wi, s), tile_id, widen(i), widen(j)}, pid_k != s);
          const Expr part = tir::select(pid_k == s, tir::load(c_f, {i, j}), other);
          sum = s == 0 ? part : sum + part;
        }
        b.store(c_f, {i, j}, sum);
      });
    });
    store_tile([&](const Var& i, const Var& j) { return tir::load(c_f, {i, j}); });
  });
  return b.build();
}

}  // namespace tilefuse
