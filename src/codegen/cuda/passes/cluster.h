// cluster: pairs of blocks of a warp-specialized sm_90a kernel that read the
// same tile of an operand at every stage run as one thread-block cluster and
// share that tile by TMA multicast (issue 15, item 3: "thread-block clusters
// with TMA multicast of the affine operand, which halves its L2 traffic").
//
// With the GEMM template's grouped raster, program ids 2c and 2c + 1 are
// neighbouring M tiles of the same N tile: they read the same B stage. The
// pass proves that for every pair of the (constant) grid by evaluating each
// TMA copy's box coordinates at both program ids, the loop var left
// symbolic, and comparing the simplified expressions; a copy whose boxes
// agree for every pair (and split evenly over the 2 blocks) is multicast:
// block r issues boxes r, r + 2, ... into both blocks' stages, each block's
// `full` mbarrier still expecting the whole stage. A block may refill a
// stage only once both blocks' MMA warpgroups released it, so each MMA warp
// arrives on the `empty` mbarrier of both blocks (the printer; PTX ISA
// 9.7.9.25.5.1, "cp.async.bulk.tensor" .multicast::cluster; CUDA
// Programming Guide, "Thread Block Clusters").
//
// It writes LaunchPlan::cluster_size = 2 and CopyPlan::multicast; a note
// says why a kernel stays without a cluster (not warp-specialized, stream-K
// or ping-pong, a grid that is not constant or odd, no copy shared by every
// pair). A persistent kernel forms clusters too: its blocks take tiles
// b, b + G, ... with G even (the runtime launches whole clusters), so the
// two blocks of a cluster take the pairs (2c + jG, 2c + 1 + jG) in step.
// CudaOptions::cluster_multicast turns it on.
#pragma once

#include "passes/pipeline.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

tir::Kernel form_clusters(const tir::Kernel& kernel, const passes::PassContext& context);

}  // namespace tilefuse::codegen
