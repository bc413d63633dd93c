#include "codegen/cuda/passes/lower_gemm.h"

#include <fmt/format.h>

#include <limits>
#include <unordered_map>

#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "tir/functor.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

std::pair<int, int> arrange_warps(int bm, int bn, int warps) {
  for (int w = warps; w >= 1; w /= 2) {
    int best_m = 0;
    int64_t best_cost = std::numeric_limits<int64_t>::max();
    for (int wm = 1; wm <= w; wm *= 2) {
      const int wn = w / wm;
      if (bm % (wm * 16) != 0 || bn % (wn * 16) != 0) continue;
      const int64_t cost = bm / wm + bn / wn;
      if (cost < best_cost) best_cost = cost, best_m = wm;
    }
    if (best_m) return {best_m, w / best_m};
  }
  return {0, 0};
}

std::pair<int, int> arrange_warpgroups(int bm, int bn, int warps) {
  if (warps % 4 != 0) return {0, 0};
  const int groups = warps / 4;
  std::pair<int, int> best{0, 0};
  int best_cost = std::numeric_limits<int>::max(), best_wn = 0;
  for (int wg_n = 1; wg_n <= groups; ++wg_n) {
    if (groups % wg_n != 0) continue;
    const int wg_m = groups / wg_n;
    if (bm % wg_m != 0 || bn % wg_n != 0) continue;
    const int wm = bm / wg_m, wn = bn / wg_n;
    if (wm % 64 != 0 || wn % 64 != 0 || wn > 256) continue;
    if (wm / 64 * wn / 2 > 128) continue;
    if (wm < best_cost || (wm == best_cost && wn > best_wn))
      best = {wg_m, wg_n}, best_cost = wm, best_wn = wn;
  }
  return best;
}

namespace {

bool is_mma_dtype(DType dt) {
  return dt == DType::F16 || dt == DType::BF16;
}

struct Tile {
  const GemmNode* gemm = nullptr;  // null: a fragment no gemm writes
  Buffer c;
  FragmentPlan plan;
};

}  // namespace

Kernel lower_gemm(const Kernel& kernel, const passes::PassContext& context) {
  const Target& target = context.target;
  const CudaOptions& options = context.cuda;
  TF_CHECK(target.is_cuda(), "lower_gemm: target " + target.name() + " is not a CUDA target");
  LaunchPlan launch;
  launch.defined = true;
  int warps = 4;
  if (auto it = kernel.attrs.find("num_warps"); it != kernel.attrs.end())
    warps = static_cast<int>(std::get<int64_t>(it->second));
  TF_CHECK(warps >= 1 && warps <= 32, "lower_gemm: num_warps out of range");

  std::vector<Tile> tiles;
  for (const GemmNode* g : gemms(kernel.body)) {
    const Buffer &a = g->a.buffer, &b = g->b.buffer, &c = g->c.buffer;
    TF_CHECK(a.rank() == 2 && b.rank() == 2 && c.rank() == 2 && a.scope() == MemScope::Shared &&
                 b.scope() == MemScope::Shared && c.scope() == MemScope::Fragment &&
                 a.dtype() == b.dtype(),
             "lower_gemm: gemm operands must be 2-D shared tiles of one dtype and a fragment");
    Tile t;
    t.gemm = g;
    t.c = c;
    FragmentPlan& f = t.plan;
    f.operand = a.dtype();
    f.block_m = static_cast<int>(const_of(a->shape[0], "BLOCK_M"));
    f.block_k = static_cast<int>(const_of(a->shape[1], "BLOCK_K"));
    f.block_n = static_cast<int>(const_of(b->shape[1], "BLOCK_N"));
    const bool mma = is_mma_dtype(a.dtype()) && c.dtype() == DType::F32 && f.block_k % 16 == 0;
    // f32 operands on TF32 tensor cores only when allowed (PTX ISA
    // 9.7.14.5.14: mma.sync m16n8k8 .tf32 needs sm_80, every CUDA target).
    const bool tf32 = options.allow_tf32 && a.dtype() == DType::F32 && c.dtype() == DType::F32 &&
                      f.block_k % 8 == 0;
    f.family = tf32 ? MmaFamily::MmaSyncTf32 : mma ? MmaFamily::MmaSync : MmaFamily::SimtFma;
    tiles.push_back(t);
  }
  // A fragment no gemm accumulates into (its K loop was empty and removed)
  // still holds its fill: a plain FMA tile of its own shape. (In program
  // order of the allocations.)
  {
    struct Fragments : IRVisitor {
      std::vector<Buffer> out;
      using IRVisitor::visit;
      void visit(const AllocateNode* op) override {
        if (op->buffer.scope() == MemScope::Fragment) out.push_back(op->buffer);
        IRVisitor::visit(op);
      }
    } frags;
    frags.visit_stmt(kernel.body);
    for (const Buffer& b : frags.out) {
      bool used = false;
      for (const Tile& t : tiles) used |= t.c.same_as(b);
      if (used) continue;
      TF_CHECK(b.rank() == 2, "lower_gemm: a fragment that is not 2-D");
      Tile t;
      t.c = b;
      t.plan.operand = b.dtype();
      t.plan.block_m = static_cast<int>(const_of(b->shape[0], "a fragment extent"));
      t.plan.block_n = static_cast<int>(const_of(b->shape[1], "a fragment extent"));
      t.plan.block_k = 16;
      tiles.push_back(t);
    }
  }
  // One block size for the kernel: the smallest any gemm tile allows.
  for (Tile& t : tiles) {
    FragmentPlan& f = t.plan;
    if (f.family != MmaFamily::SimtFma) {
      auto [wm, wn] = arrange_warps(f.block_m, f.block_n, warps);
      if (wm == 0) {
        if (f.family == MmaFamily::MmaSyncTf32)
          launch.notes.push_back(fmt::format(
              "allow_tf32: the {}x{} tile has no 16x16 warp tile: exact FMA instead", f.block_m,
              f.block_n));
        f.family = MmaFamily::SimtFma;  // no 16x16 warp tile fits: the exact FMA path
      } else if (wm * wn < warps) {
        launch.notes.push_back(
            fmt::format("num_warps {} -> {}: a {}x{} tile has only {} warp tiles of 16x16 or more",
                        warps, wm * wn, f.block_m, f.block_n, wm * wn));
        warps = wm * wn;
      }
    }
    if (f.family == MmaFamily::SimtFma) {
      const int bm = f.block_m, bn = f.block_n;
      while (warps > 1 && (warps * 32 % std::min(bn, 16) != 0 ||
                           bm % (warps * 32 / std::min(bn, 16)) != 0 ||
                           bn % std::min(bn, 16) != 0)) {
        launch.notes.push_back(
            fmt::format("num_warps {} -> {}: the {}x{} FMA tile", warps, warps / 2, bm, bn));
        warps /= 2;
      }
    }
  }
  const int threads = warps * 32;
  // wgmma on sm_90a where the tile allows it.
  for (Tile& t : tiles) {
    FragmentPlan& f = t.plan;
    if (!t.gemm || f.family != MmaFamily::MmaSync || !target.has_wgmma()) continue;
    const int64_t row_bytes = int64_t{f.block_k} * dtype_size(f.operand);
    auto [wg_m, wg_n] = arrange_warpgroups(f.block_m, f.block_n, warps);
    std::string why_not;
    if (!options.wgmma)
      why_not = "the wgmma option is off";
    else if (row_bytes != 128 && row_bytes != 64)
      why_not = fmt::format(
          "BLOCK_K {} ({} bytes per row; the wgmma path takes 128 or 64: one 128- or 64-byte "
          "swizzle row)",
          f.block_k, row_bytes);
    else if (wg_m == 0)
      why_not = fmt::format(
          "no warpgroup tile of a {}x{} block with {} warps (WM a multiple of 64, WN 64, 128, 192 "
          "or 256, at most 128 accumulators per thread)",
          f.block_m, f.block_n, warps);
    else if (!whole_tile_gemm(t.gemm) || t.gemm->a.buffer.same_as(t.gemm->b.buffer))
      why_not = "the gemm's operands are not two whole tiles";
    if (!why_not.empty()) {
      launch.notes.push_back("mma.sync, not wgmma: " + why_not);
      continue;
    }
    f.family = MmaFamily::Wgmma;
    f.warps_m = wg_m, f.warps_n = wg_n;
    launch.async_barriers = true;
  }
  codegen::PlanEdits edits;
  std::unordered_map<const BufferNode*, SharedLayout> layouts;
  auto operand_layout = [&](const Buffer& b, SharedLayout l) {
    auto [it, fresh] = layouts.emplace(b.get(), l);
    TF_CHECK(fresh || it->second == l,
             "lower_gemm: shared tile " + b.name() + " feeds MMA gemms of two layouts");
  };
  for (Tile& t : tiles) {
    FragmentPlan& f = t.plan;
    if (!t.gemm) {
      f.family = MmaFamily::SimtFma;
      f.threads = threads;
      launch.notes.push_back("fragment " + t.c.name() + " has no gemm (empty K loop): fill only");
    } else if (f.family == MmaFamily::Wgmma) {
      operand_layout(t.gemm->b.buffer, SharedLayout::MnSwizzled);
      operand_layout(t.gemm->a.buffer, SharedLayout::Swizzled);
    } else if (f.family == MmaFamily::SimtFma) {
      f.threads = threads;
    } else {
      std::tie(f.warps_m, f.warps_n) = arrange_warps(f.block_m, f.block_n, warps);
      if (f.family == MmaFamily::MmaSyncTf32)
        launch.notes.push_back(fmt::format(
            "allow_tf32: the f32 gemm into {} runs on TF32 tensor cores (operands rounded to "
            "10 mantissa bits)",
            t.c.name()));
      operand_layout(t.gemm->a.buffer, SharedLayout::Swizzled);
      operand_layout(t.gemm->b.buffer, f.family == MmaFamily::MmaSyncTf32
                                           ? SharedLayout::Swizzled32
                                           : SharedLayout::Swizzled);
    }
    TF_CHECK(!edits.buffers.count(t.c.get()),
             "lower_gemm: two gemms accumulate into one fragment " + t.c.name());
    edits.buffers[t.c.get()] = f;
  }
  for (const auto& [b, l] : layouts) {
    SharedPlan s;
    s.layout = l;
    edits.buffers[b] = s;
  }
  Kernel out = with_plans(kernel, edits);
  launch.num_threads = threads;
  out.launch = launch;
  return out;
}

}  // namespace tilefuse::codegen
