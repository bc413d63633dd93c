// The GEMM template (see gemm_template.h).
#include "lower/gemm_template.h"
#include "core/text.h"

#include <fmt/format.h>

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

int64_t StreamKSchedule::unit_of(int64_t x) const {
  const int64_t head = extra * (per_unit + 1);
  return x < head ? x / (per_unit + 1) : extra + (x - head) / per_unit;
}

std::optional<StreamKSchedule> stream_k_schedule(int64_t tiles, int64_t k_tiles, int64_t units) {
  if (tiles < 1 || k_tiles < 1 || units < 1) return std::nullopt;
  StreamKSchedule s;
  s.tiles = tiles;
  s.k_tiles = k_tiles;
  // (Whole waves round robin; only the last, partial, wave's tiles shared
  // out. One to two waves shared out, as the paper's hybrid does, measured
  // 18-100% slower on the H200: every unit then stores two 128 KB f32
  // partials of a 128x256 tile, bench/RESULTS.md session 22.)
  s.dp_tiles = tiles / units * units;
  if (s.dp_tiles == tiles) s.dp_tiles -= units;
  // (Every unit at least one iteration where whole tiles go round robin
  // over all of them: else a wave fewer round robin.)
  while (s.dp_tiles > 0 && (tiles - s.dp_tiles) * k_tiles < units) s.dp_tiles -= units;
  s.sk_tiles = tiles - s.dp_tiles;
  const int64_t iters = s.sk_tiles * k_tiles;
  s.units = std::min(units, iters);
  s.sk_units = std::max<int64_t>(1, std::min(s.units, iters / ((k_tiles + 1) / 2)));
  if (s.dp_tiles == 0) s.units = s.sk_units;  // (no whole tiles: no block without a piece)
  s.per_unit = iters / s.sk_units;
  s.extra = iters % s.sk_units;
  for (int64_t u = 0; u < s.sk_units; ++u)
    s.pieces = std::max(s.pieces, (s.begin(u + 1) - 1) / k_tiles - s.begin(u) / k_tiles + 1);
  for (int64_t t = 0; t < s.sk_tiles; ++t)
    s.peers = std::max(s.peers, s.unit_of((t + 1) * k_tiles - 1) - s.unit_of(t * k_tiles) + 1);
  return s;
}

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
  // (No floor of 16 as on the GPU: a tile fits a dim below 16, see the
  // header.)
  int64_t bm = std::clamp<int64_t>(next_pow2(m), 1, kMaxTile);
  int64_t bn = std::clamp<int64_t>(next_pow2(n), 1, kMaxTile);
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
  c.block_k = static_cast<int>(std::clamp<int64_t>(next_pow2(k), 1, kMaxTile));
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
  TF_CHECK(config.stream_k >= 0, "build_gemm: stream_k must not be negative");
  TF_CHECK(config.stream_k == 0 || config.split_k == 1,
           "build_gemm: split-K and stream-K exclude each other");
  const int split = config.split_k;
  if (split > 1 || config.stream_k > 0) {
    const std::string sym = gemm_symbolic_dim(graph, step);
    TF_CHECK(sym.empty(), fmt::format("build_gemm: {} needs constant sizes ({} is symbolic)",
                                      split > 1 ? "split-K" : "stream-K", sym));
  }
  // The output tiles (all batches) where the sizes are constant.
  const int64_t tiles =
      split > 1 || config.stream_k > 0
          ? std::max<int64_t>(1, shape_numel(geo.batch)) * ceil_div(geo.m, bm) * ceil_div(geo.n, bn)
          : 0;
  const std::optional<StreamKSchedule> sk =
      config.stream_k > 0 && shape_numel(geo.batch) > 0
          ? stream_k_schedule(tiles, ceil_div(geo.k, bk), config.stream_k)
          : std::nullopt;
  tir::KernelBuilder b(step.name);
  Buffer workspace, counters;
  if (split == 1 && !sk) {
    declare_buffers(b, sig);
  } else {
    // The buffers, then the scratch buffers (the workspace, then the
    // counters), then the scalar params (run-time strides).
    KernelSignature buffers = sig;
    buffers.scalars.clear();
    declare_buffers(b, buffers);
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
    if (sk) {
      // A partial tile in each unit's first and last slot; a counter for
      // each stream-K tile.
      const int64_t ws = sk->units * 2 * bm * bn;
      workspace = b.output(unique("streamk_workspace"), acc,
                           {index_const(sk->units, ws), index_const(2, ws), index_const(bm, ws),
                            index_const(bn, ws)},
                           {}, 16);
      counters = b.output(unique("streamk_counters"), DType::I32,
                          {index_const(sk->sk_tiles, sk->sk_tiles)}, {}, 16);
      b.set_attr("STREAM_K", sk->units);
      b.set_attr("STREAM_K_DP_TILES", sk->dp_tiles);
      b.set_attr("STREAM_K_PIECES", sk->pieces);
    } else {
      const int64_t ws = int64_t{split} * tiles * bm * bn;
      workspace = b.output(
          unique("splitk_workspace"), acc,
          {index_const(split, ws), index_const(tiles, ws), index_const(bm, ws), index_const(bn, ws)},
          {}, 16);
      counters =
          b.output(unique("splitk_counters"), DType::I32, {index_const(tiles, tiles)}, {}, 16);
      b.set_attr("SPLIT_K", int64_t{split});
    }
    for (const Var& v : sig.scalars) b.scalar_param(v);
  }
  b.set_attr("BLOCK_M", int64_t{bm});
  b.set_attr("BLOCK_N", int64_t{bn});
  b.set_attr("BLOCK_K", int64_t{bk});
  b.set_attr("num_stages", int64_t{config.num_stages});
  b.set_attr("num_warps", int64_t{config.num_warps});
  b.set_attr("GROUP_M", int64_t{config.group_m});
  if (config.persistent) b.set_attr("PERSISTENT", int64_t{1});
  if (config.pingpong) b.set_attr("PINGPONG", int64_t{1});
  if (config.register_a) b.set_attr("REGISTER_A", int64_t{1});
  if (config.register_a && config.register_a_l2_prefetch)
    b.set_attr("FRAGMENT_L2_PREFETCH", int64_t{config.register_a_l2_prefetch});
  if (config.split_tail > 0) b.set_attr("SPLIT_TAIL", int64_t{config.split_tail});

  std::vector<Expr> lead;  // the batch index, when batched
  Node batch;                // the batch dims as a node, for their product
  batch.shape = geo.batch;
  batch.dim_symbols = geo.batch_symbols;
  if (!geo.batch.empty() && !sk)
    lead.push_back(b.program_id("pid_b", env.product(batch, 0, geo.batch.size())));
  // Stream-K: one grid dim over the work items (StreamKSchedule); each
  // names its tile (the batch's and the tile's within it), its K tiles
  // [k_begin, k_begin + k_count) and the pieces of its tile (sk_count: 1 for
  // a whole tile, 0 for an empty item). sd: an index dtype for all of it.
  Var sk_unit, sk_seq, sk_tile, sk_first, sk_count, sk_k_begin, sk_k_count, sk_tile_id, sk_flat;
  DType sd = DType::I32;
  auto c = [&](int64_t v) { return tir::make_int(sd, v); };
  // The first iteration of unit u; the unit of iteration x.
  auto unit_begin = [&](const Expr& u) {
    return tir::min(u, c(sk->sk_units)) * c(sk->per_unit) + tir::min(u, c(sk->extra));
  };
  auto unit_of = [&](const Expr& x) {
    const int64_t head = sk->extra * (sk->per_unit + 1);
    return tir::select(x < c(head), x / c(sk->per_unit + 1),
                       c(sk->extra) + (x - c(head)) / c(sk->per_unit));
  };
  if (sk) {
    const StreamKSchedule& s = *sk;
    sd = index_dtype(2 * std::max({s.work_items(), (s.sk_tiles + 1) * s.k_tiles + s.units,
                                   s.tiles + s.units}));
    Var w = b.program_id("pid_w", index_const(s.work_items(), s.work_items()));
    const Expr we = w.dtype() == sd ? Expr(w) : tir::cast(sd, w);
    const Expr in_sk = we >= c(s.dp_tiles);
    const Expr piece = tir::max(we - c(s.dp_tiles), c(0));
    sk_unit = b.let("sk_unit", piece / c(s.pieces));
    sk_seq = b.let("sk_seq", piece % c(s.pieces));
    Var it0 = b.let("sk_begin", unit_begin(sk_unit));
    Var it1 = b.let("sk_end", unit_begin(sk_unit + c(1)));
    sk_tile = b.let("sk_tile", it0 / c(s.k_tiles) + sk_seq);  // of the stream-K tiles
    const Expr at = sk_tile * c(s.k_tiles);
    Var kb = b.let("sk_kb", tir::max(it0 - at, c(0)));
    Var kn = b.let("sk_kn", tir::max(tir::min(it1 - at, c(s.k_tiles)) - kb, c(0)));
    sk_first = b.let("sk_first", unit_of(at));
    sk_count = b.let(
        "sk_count",
        tir::select(in_sk,
                    tir::select(kn > c(0), unit_of(at + c(s.k_tiles - 1)) - sk_first + c(1), c(0)),
                    c(1)));
    sk_tile_id = b.let("sk_tile_id", tir::min(sk_tile, c(s.sk_tiles - 1)));
    sk_k_begin = b.let("k_begin", DimEnv::as(k_dt, tir::select(in_sk, Expr(kb), c(0))));
    sk_k_count = b.let("k_count", DimEnv::as(k_dt, tir::select(in_sk, Expr(kn), c(s.k_tiles))));
    sk_flat = b.let("tile", tir::select(in_sk, c(s.dp_tiles) + sk_tile_id, we));
    if (!geo.batch.empty()) {
      const Expr per_batch = c(ceil_div(geo.m, bm) * ceil_div(geo.n, bn));
      const Expr nb = env.product(batch, 0, geo.batch.size());
      lead.push_back(b.let("pid_b", DimEnv::as(nb.dtype(), sk_flat / per_batch)));
    }
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
  Var pid;
  if (!sk) {
    pid = b.program_id("pid", num_pid);
  } else {
    // (constant sizes: num_pid is a constant)
    const Expr t = geo.batch.empty() ? Expr(sk_flat) : sk_flat % c(*tir::as_const_int(num_pid));
    pid = b.let("pid", DimEnv::as(num_pid.dtype(), t));
  }

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
  if (sk) {
    k_extent = sk_k_count;
  } else if (split == 1) {
    Expr k_tiles = ceil_div(K, bk);
    if (const int64_t* c = tir::as_const_int(K)) k_tiles = index_const(ceil_div(*c, bk), *c);
    k_extent = DimEnv::as(k_dt, k_tiles);
  } else {
    per_split = ceil_div(ceil_div(geo.k, bk), split);
    k_extent = index_const(per_split, std::max(geo.k, per_split * split * bk));
  }
  // The K tile of iteration k: k, or pid_k * per_split + k under split-K.
  auto k_tile = [&](const Var& k) -> Expr {
    if (sk) return sk_k_begin + k;
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
  if (split == 1 && !sk) {
    store_tile([&](const Var& i, const Var& j) { return tir::load(c_f, {i, j}); });
    return b.build();
  }
  if (sk) {
    // Stream-K: a piece of a tile cut in K stores its partial in its
    // unit's slot (0 for the unit's first piece, 1 for its last); the last
    // of the tile's pieces to arrive sums them in K order (unit sk_first,
    // sk_first + 1, ...: the same order whoever is last) and runs the
    // epilogue. A whole tile (sk_count 1) runs the epilogue at once. The
    // last arrival reads its own partial back too (it stored it before it
    // arrived), rather than selecting it from its accumulators as split-K
    // does: with the accumulators live through the sums, a 128x256 tile's
    // fix-up of 3 pieces spilled 64 bytes (ptxas, 168 registers a
    // thread); read back, none.
    const int64_t ws_elems = sk->units * 2 * int64_t{bm} * bn;
    const DType wi = index_dtype(ws_elems);
    auto widen = [&](const Expr& e) { return e.dtype() == wi ? e : tir::cast(wi, e); };
    b.if_then(sk_count > c(1), [&] {
      b.parallel("i", bm, [&](Var i) {
        b.parallel("j", bn, [&](Var j) {
          b.store(workspace, {widen(sk_unit), widen(tir::min(sk_seq, c(1))), widen(i), widen(j)},
                  tir::load(c_f, {i, j}));
        });
      });
    });
    b.if_last_arrival(counters, {widen(sk_tile_id)}, sk_count, [&] {
      b.if_then(sk_count > c(1), [&] {
        b.parallel("i", bm, [&](Var i) {
          b.parallel("j", bn, [&](Var j) {
            Expr sum;
            for (int64_t q = 0; q < sk->peers; ++q) {
              const Expr u = sk_first + c(q);
              // The peer's slot: 0 where this tile is its first.
              const Expr slot = tir::select(unit_begin(u) / c(sk->k_tiles) == sk_tile, c(0), c(1));
              const Expr part = tir::load(workspace, {widen(u), widen(slot), widen(i), widen(j)},
                                          c(q) < sk_count);
              // (past the tile's pieces: -0, the exact identity of +; the
              // sum stays linear, not a select over it a peer)
              sum = q == 0 ? part
                           : sum + tir::select(c(q) < sk_count, part,
                                               tir::make_const(acc, -0.0));
            }
            b.store(c_f, {i, j}, sum);
          });
        });
      });
      store_tile([&](const Var& i, const Var& j) { return tir::load(c_f, {i, j}); });
    });
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
