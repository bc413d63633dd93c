// split_k_cluster: a split-K kernel's K splits of one output tile run as one
// thread-block cluster and sum their partial tiles through distributed shared
// memory, instead of the workspace round trip and the last block's fix-up
// (issue 12, item 1: "partial tiles reduced deterministically").
//
// The GEMM template (lower/gemm_template.cpp) writes split-K as: every split
// stores its partial tile to a global workspace (the fragment-order nest),
// then if_last_arrival on the tile's counter runs, in the last block only, a
// nest that sums the S partials in split order into the accumulators and the
// epilogue. Measured on the H200 (bench/RESULTS.md, sessions 10 and 12) that
// fix-up is the small-M kernels' missing time: the last block reads S - 1
// partials from L2 alone while the other S - 1 blocks idle, 2-7 us after the
// main loop.
//
// In a cluster the tile's S blocks are co-resident, so the pass rewrites the
// plan (the statements stay): the split becomes the grid's fastest dim and
// the cluster's shape (split s = cluster rank s), and LaunchPlan::
// split_k_cluster tells the printer to store the partial tile into each
// block's own shared memory (over the operand rings, dead after the loop),
// meet the cluster, run the if_last_arrival's body in every block but only in
// the MMA warps w with w % S == the block's split (a warp's accumulator
// elements are its own: every element is summed and stored exactly once),
// read split s's partials from block s (mapa + ld.shared::cluster), and meet
// again before any block exits. The sum's order is the template's, so the
// results are bit-identical to the workspace form's and across runs.
//
// It applies when CudaOptions::split_k_cluster is on, the target has clusters
// (sm_90+), the kernel is split 2 to 8 ways (a portable cluster holds at most
// 8 blocks: CUDA Programming Guide, "Thread Block Clusters"), not persistent
// and in no other cluster; the epilogue pass put the workspace in fragment
// order, every workspace load reads one split's slice of the stored tile,
// the body's epilogues meet no block barrier (per element, paired or staged
// per warp), and the partial tile fits below every shared byte that is not an
// operand ring of the main loop (its mbarriers, the epilogue's buffers).
// Otherwise a note says why the kernel keeps the workspace.
#pragma once

#include "passes/pipeline.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

tir::Kernel form_split_k_cluster(const tir::Kernel& kernel, const passes::PassContext& context);

}  // namespace tilefuse::codegen
