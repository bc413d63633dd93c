#include "codegen/cuda/passes/row_prefetch.h"

#include <fmt/format.h>

#include <algorithm>

#include "analysis/axis_info.h"
#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "tir/structural.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

Kernel row_prefetch(const Kernel& kernel, const passes::PassContext& context) {
  if (!context.cuda.next_tile_row_prefetch) return kernel;
  const LaunchPlan& lp = kernel.launch;
  // (Kernels with no register_a loop say nothing; one with it says why not.)
  if (!lp.persistent) return kernel;
  const ForNode* loop = top_level_pipelined(kernel.body);
  const PipelinePlan* plan = loop ? std::get_if<PipelinePlan>(&loop->plan) : nullptr;
  if (!plan || plan->form != PipelineForm::WarpSpecialized || plan->register_a_ahead == 0)
    return kernel;
  auto skip = [&](const std::string& why) {
    Kernel out = kernel;
    out.launch.notes.push_back("no row prefetch: " + why);
    return out;
  };
  if (lp.consumer_teams != 1 || lp.stream_k_units > 0)
    return skip("consumer teams or stream-K (the next tile is not the round robin's)");
  const PipelinedBody body = split_pipelined_body(loop);
  const CopyNode* frag = nullptr;
  for (const CopyNode* c : body.copies)
    if (c->plan && c->plan->mechanism == CopyMechanism::Fragment) frag = c;
  if (!frag) return skip("the loop has no fragment copy");
  const int64_t* trip = as_const_int(loop->extent);
  const int64_t* rows = as_const_int(frag->extents.at(0));
  if (!trip || *trip <= 0 || !rows || *rows <= 0)
    return skip("the trip count or the rows are not constants");
  const Expr index = fragment_row_load(frag);
  const LoadNode* ld = index.as<LoadNode>();
  if (!ld) return skip("the rows' addresses read no index, or more than one load");
  const int index_bytes = dtype_size(ld->buffer.dtype());
  if (ld->buffer.scope() != MemScope::Global || !is_integral(ld->buffer.dtype()) ||
      (index_bytes != 4 && index_bytes != 8))
    return skip("the index is not 4- or 8-byte integers in global memory");
  for (const Expr& e : ld->indices)
    if (uses_var(e, frag->vars.at(1)) || uses_var(e, loop->var))
      return skip("the index's address reads the column or the loop's var");
  if (*rows * index_bytes % 16 != 0)
    return skip(fmt::format("{} index entries of {} bytes are not a multiple of 16 bytes", *rows,
                            index_bytes));
  analysis::AxisInfo info(kernel, {frag->vars.at(0)}, {*rows});
  const analysis::AccessFacts facts = info.access(ld);
  if (facts.offset_facts.contiguity.at(0) < *rows || facts.byte_divisibility.at(0) < 16)
    return skip(fmt::format(
        "the index's address is not proved contiguous over the {} rows and 16-byte aligned "
        "(contiguity {}, {} bytes)",
        *rows, facts.offset_facts.contiguity.at(0), facts.byte_divisibility.at(0)));
  const LoadNode* src = frag->value.as<LoadNode>();
  TF_CHECK(src, "row_prefetch: a fragment copy that is not a load");
  const int64_t row_bytes = *trip * frag->plan->step * dtype_size(src->buffer.dtype());
  if (row_bytes % 16 != 0 || row_bytes >= (int64_t{1} << 31))
    return skip(fmt::format("a row's {} bytes are not a multiple of 16 below 2^31", row_bytes));

  CopyPlan p = *frag->plan;
  p.row_prefetch_bytes = row_bytes;
  p.row_prefetch_index_bytes = index_bytes;
  p.row_prefetch_rows = *rows;
  p.row_prefetch_at = static_cast<int>(std::min<int64_t>(plan->stages, *trip - 1));
  PlanEdits edits;
  edits.copies[frag] = p;
  Kernel out = with_plans(kernel, edits);
  out.launch.notes.push_back(fmt::format(
      "row prefetch: the producer asks L2 for the next tile's rows of {} (a row of {} bytes a "
      "thread, cp.async.bulk.prefetch.L2) after issuing the tile's iteration {}; their index "
      "({} bytes) by one bulk copy into shared memory at the tile's start",
      frag->dst.name(), row_bytes, p.row_prefetch_at, *rows * index_bytes));
  return out;
}

}  // namespace tilefuse::codegen
