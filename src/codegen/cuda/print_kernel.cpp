// The printer's kernel ABI: header, signature, grid, and what the runtime
// and explain read (printer.h).
#include <fmt/format.h>

#include <limits>

#include "codegen/cuda/printer.h"
#include "core/error.h"
#include "tir/functor.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: the printer reads the Tile IR

std::string fragment_tile_type(const FragmentPlan& f, DType accumulator) {
  switch (f.family) {
    case MmaFamily::Wgmma:
      // (CHAINS printed only where it is not 1, WgmmaTile's default)
      return fmt::format("tf::WgmmaTile<{}, {}, {}, {}, {}, {}{}>", cuda_type(f.operand), f.block_m,
                         f.block_n, f.block_k, f.warps_m, f.warps_n,
                         f.chains > 1 ? fmt::format(", {}", f.chains) : "");
    case MmaFamily::MmaSyncTf32:
      return fmt::format("tf::Tf32MmaTile<{}, {}, {}, {}, {}>", f.block_m, f.block_n, f.block_k,
                         f.warps_m, f.warps_n);
    case MmaFamily::MmaSync:
      return fmt::format("tf::MmaTile<{}, {}, {}, {}, {}, {}>", cuda_type(f.operand), f.block_m,
                         f.block_n, f.block_k, f.warps_m, f.warps_n);
    case MmaFamily::SimtFma:
      return fmt::format("tf::SimtTile<{}, {}, {}, {}, {}, {}>", cuda_type(f.operand),
                         cuda_type(accumulator), f.block_m, f.block_n, f.block_k, f.threads);
  }
  return "";
}

const SharedPlan& Printer::shared(const Buffer& b) const {
  auto it = allocs_.find(b.get());
  const SharedPlan* p = it == allocs_.end() ? nullptr : shared_plan(it->second);
  TF_CHECK(p != nullptr && p->offset >= 0,
           "cuda printer: shared buffer " + b.name() + " has no SharedPlan with an offset");
  return *p;
}

CudaKernel Printer::run() {
  TF_CHECK(target_.is_cuda(), "emit_cuda: target " + target_.name() + " is not a CUDA target");
  TF_CHECK(k_.launch.defined,
           "emit_cuda: kernel " + k_.name + " has no launch plan (run the CUDA pass table first)");
  const LaunchPlan& launch = k_.launch;
  result_.name = k_.name;
  result_.target = target_;
  allocs_ = allocations(k_.body);
  threads_ = launch.num_threads;
  consumer_threads_ = launch.consumer_threads;
  block_barrier_ = barrier_for(launch.async_barriers ? BarrierKind::BlockAsync : BarrierKind::Block);
  const int mma_threads = consumer_threads_ > 0 ? static_cast<int>(consumer_threads_) : threads_;

  // What the runtime and explain read: the gemms, the shared buffers.
  bool has_fragment = false, has_wgmma = false, has_copy = false;
  struct Scan : IRVisitor {
    std::vector<const AllocateNode*> allocs;
    bool copy = false, registers = false;
    using IRVisitor::visit;
    void visit(const ForNode* op) override {
      if (const auto* p = std::get_if<PipelinePlan>(&op->plan))
        registers = registers || p->producer_registers > 0;
      IRVisitor::visit(op);
    }
    void visit(const AllocateNode* op) override {
      allocs.push_back(op);
      IRVisitor::visit(op);
    }
    void visit(const CopyNode* op) override {
      copy = true;
      IRVisitor::visit(op);
    }
  } scan;
  scan.visit_stmt(k_.body);
  has_copy = scan.copy;
  const bool register_budgets = scan.registers;
  for (const AllocateNode* al : scan.allocs) {
    if (const FragmentPlan* f = fragment_plan(al)) {
      has_fragment = true;
      has_wgmma = has_wgmma || f->family == MmaFamily::Wgmma;
    }
    if (al->buffer.scope() == MemScope::Shared) {
      const SharedPlan& s = shared(al->buffer);
      result_.shared.push_back({al->buffer.name(), std::string(shared_layout_name(s.layout)),
                                s.stages, s.offset, s.bytes});
    }
  }
  for (const GemmNode* g : gemms(k_.body)) {
    const FragmentPlan* f = fragment_plan(allocs_.at(g->c.buffer.get()));
    TF_CHECK(f != nullptr, "cuda printer: accumulator " + g->c.buffer.name() + " has no plan");
    CudaGemm rg;
    rg.family = f->family == MmaFamily::Wgmma
                    ? fmt::format("wgmma.m64n{}k16", f->block_n / f->warps_n)
                : f->family == MmaFamily::MmaSyncTf32 ? "mma.sync.m16n8k8.tf32"
                : f->family == MmaFamily::MmaSync     ? "mma.sync.m16n8k16"
                                                      : "simt.fma";
    rg.dtype = std::string(dtype_name(f->operand));
    rg.block_m = f->block_m, rg.block_n = f->block_n, rg.block_k = f->block_k;
    if (f->family != MmaFamily::SimtFma) rg.warps_m = f->warps_m, rg.warps_n = f->warps_n;
    rg.elems_per_thread = f->block_m * f->block_n / mma_threads;
    result_.gemms.push_back(rg);
  }
  result_.producer_threads =
      consumer_threads_ > 0 ? threads_ - mma_threads * launch.consumer_teams : 0;
  result_.consumer_teams = launch.consumer_teams;
  result_.block_timeline = launch.block_timeline();
  result_.dynamic_shared_bytes = launch.dynamic_shared_bytes;
  result_.num_threads = threads_;
  result_.tensor_maps = launch.tensor_maps;
  result_.notes = launch.notes;

  // Headers, signature, grid.
  result_.headers = {"tf_numeric.cuh", "tf_status.cuh"};
  if (!result_.shared.empty() || has_copy) result_.headers.push_back("tf_copy.cuh");
  if (has_fragment) result_.headers.push_back("tf_gemm.cuh");
  if (has_wgmma) result_.headers.push_back("tf_wgmma.cuh");
  std::ostringstream head;
  head << "// " << k_.name << ": generated by tilefuse for " << target_.name() << "\n";
  if (!k_.attrs.empty()) {
    head << "// config:";
    for (const auto& attr : k_.attrs)  // (clang 14 cannot capture a structured binding)
      std::visit([&](auto&& x) { head << " " << attr.first << "=" << x; }, attr.second);
    head << "\n";
  }
  for (const std::string& n : result_.notes) head << "// " << n << "\n";
  for (const std::string& h : result_.headers) head << "#include \"" << h << "\"\n";
  head << "\n";
  if (launch.block_timeline())
    head << "__device__ unsigned long long tf_timeline[tf::kTimelineWords * tf::kTimelineBlocks];  "
            "// block "
            "timeline records (tf::record_timeline)\n\n";

  std::string params;
  for (const KernelParam& p : k_.params) {
    if (!params.empty()) params += ",\n    ";
    if (p.is_buffer()) {
      const Buffer& b = p.buffer;
      params += (b->read_only ? "const " : "") + cuda_type(b.dtype()) + "* __restrict__ " + buf(b);
    } else {
      params += cuda_type(p.var.dtype()) + " " + var(p.var);
    }
  }
  if (!params.empty()) params += ",\n    ";
  params += "tf::Status* __restrict__ tf_status";
  for (size_t m = 0; m < result_.tensor_maps.size(); ++m)
    params += fmt::format(",\n    const __grid_constant__ tf::TmaDesc tf_map{}", m);
  // Register budgets by setmaxnreg need a register cap at entry: one block
  // per SM (PTX ISA 9.7.17.3).
  // A cluster's shape is the kernel's (__cluster_dims__): an ordinary
  // launch runs it (CUDA Programming Guide, "Thread Block Clusters").
  head << "extern \"C\" __global__ void ";
  if (launch.cluster_size > 1) head << "__cluster_dims__(" << launch.cluster_size << ", 1, 1) ";
  head << "__launch_bounds__(" << threads_
       << (register_budgets ? ", 1" : "") << ") " << k_.name
       << "(\n    " << params << ") {\n";

  indent_ = 1;
  line(fmt::format("constexpr int kThreads = {};", threads_));
  if (consumer_threads_ > 0)
    line(fmt::format("constexpr int kMmaThreads = {};", consumer_threads_));
  line("const int tf_tid = static_cast<int>(threadIdx.x);");
  if (launch.dynamic_shared_bytes > 0)
    line(fmt::format("extern __shared__ __align__({}) unsigned char tf_smem[];",
                     launch.shared_align));
  if (launch.block_timeline())
    line(fmt::format("tf::timeline_begin(tf_smem + {}, tf_tid);  // block timeline",
                     launch.timeline_slot));
  // Scalar params are sizes and strides (symbolic dims, run-time strides:
  // lower/specialization.h), never negative.
  for (const KernelParam& p : k_.params)
    if (!p.is_buffer()) nonneg_.vars.insert(p.var.get());
  // The grid, flattened into blockIdx.x: each program id is recovered by
  // div/mod of the extents after it. Constant extents print as numbers; an
  // extent over scalar params (a symbolic dim) is computed in the kernel,
  // and the runtime computes the block count from the same extents
  // (CudaKernel::grid is then -1).
  // A constant grid past 2^31 - 1 blocks (a launch's limit, and blockIdx.x
  // is read as an int) is the program's sizes, not a bug: a user error
  // worded as the runtime's for a symbolic grid (driver::launch_blocks).
  int64_t grid = 1;
  bool constant_grid = true, overflows = false, empty = false;
  std::string extents;
  for (const GridDim& g : k_.grid) {
    if (const int64_t* c = as_const_int(g.extent)) {
      empty = empty || *c == 0;
      overflows = __builtin_mul_overflow(grid, *c, &grid) || overflows;
      extents += fmt::format("{}{}", extents.empty() ? "" : " x ", *c);
    } else {
      constant_grid = false;
    }
  }
  constexpr int64_t kMaxBlocks = std::numeric_limits<int32_t>::max();
  if (empty) grid = 0;
  if (constant_grid && !empty && (overflows || grid > kMaxBlocks))
    throw UserError(
        ErrorKind::kValue,
        fmt::format("kernel {} needs a grid of {} = {} blocks at these sizes, more than a CUDA "
                    "launch allows (at most {} blocks)",
                    k_.name, extents,
                    overflows ? std::string("over 2^63") : fmt::format("{}", grid), kMaxBlocks));
  result_.grid = constant_grid ? grid : -1;
  result_.persistent = launch.persistent;
  result_.cluster_size = launch.cluster_size;
  result_.stream_k_units = launch.stream_k_units;
  if (launch.persistent) {
    emit_persistent();
  } else {
    emit_grid_vars("static_cast<int>(blockIdx.x)");
    // (producer_start: the warp-specialized loop's mbarriers at the entry,
    // so that its producer waits for nothing the statements before it do.)
    if (const ForNode* ws = top_level_pipelined(k_.body)) {
      const auto* plan = std::get_if<PipelinePlan>(&ws->plan);
      if (plan && plan->form == PipelineForm::WarpSpecialized && plan->setup_at_entry)
        ws_setup(split_pipelined_body(ws), *plan);
    }
    stmt(k_.body);
    // (Per-warp slabs' TMA stores: each warp's lane 0 issued its own.)
    TF_CHECK(!bulk_stores_ || warp_bulk_stores_,
             "cuda printer: whole-tile TMA stores in a kernel that is not persistent");
    if (warp_bulk_stores_)
      line("if (tf_tid % 32 == 0) tf::bulk_wait<0>();  // its TMA stores are done before it exits");
  }
  TF_CHECK(!split_tail_mid_,
           "cuda printer: a split tail whose per-warp epilogue was not printed after it");
  if (launch.block_timeline())
    line(fmt::format("tf::record_timeline(tf_timeline, tf_tid, tf_smem + {});",
                     launch.timeline_slot));
  indent_ = 0;
  result_.source = head.str() + out_.str() + "}\n";
  return result_;
}

std::vector<std::string> Printer::grid_extents() {
  std::vector<std::string> gext;
  for (const GridDim& g : k_.grid) {
    if (const int64_t* c = as_const_int(g.extent))
      gext.push_back(std::to_string(*c));
    else
      gext.push_back("static_cast<int>(" + expr(g.extent) + ")");
  }
  return gext;
}

std::string Printer::grid_size() {
  const std::vector<std::string> gext = grid_extents();
  int64_t constant = 1;
  std::string symbolic;
  for (size_t d = 0; d < k_.grid.size(); ++d) {
    if (const int64_t* c = as_const_int(k_.grid[d].extent))
      constant *= *c;
    else
      symbolic += (symbolic.empty() ? "" : " * ") + gext[d];
  }
  if (symbolic.empty()) return std::to_string(constant);
  return constant == 1 ? symbolic : fmt::format("{} * {}", constant, symbolic);
}

void Printer::emit_grid_vars(const std::string& linear) {
  const std::vector<std::string> gext = grid_extents();
  std::string stride = "1";
  int64_t const_stride = 1;
  bool constant = true;
  for (size_t d = k_.grid.size(); d-- > 0;) {
    const GridDim& g = k_.grid[d];
    std::string x = stride == "1" ? linear : fmt::format("{} / {}", linear, stride);
    if (d > 0) x = "(" + x + ") % " + gext[d];
    nonneg_.vars.insert(g.var.get());
    line(fmt::format("const {} {} = {};", cuda_type(g.var.dtype()), var(g.var), x));
    if (constant && as_const_int(g.extent)) {
      const_stride *= *as_const_int(g.extent);
      stride = std::to_string(const_stride);
    } else {
      constant = false;
      stride = stride == "1" ? gext[d] : "(" + stride + " * " + gext[d] + ")";
    }
  }
}

std::string cuda_type(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return "bool";
    case DType::U8:
      return "unsigned char";
    case DType::I8:
      return "signed char";
    case DType::I32:
      return "int";
    case DType::I64:
      return "long long";
    case DType::F8E4M3:
      return "tf::f8e4m3";
    case DType::F8E5M2:
      return "tf::f8e5m2";
    case DType::F16:
      return "tf::f16";
    case DType::BF16:
      return "tf::bf16";
    case DType::F32:
      return "float";
    case DType::F64:
      return "double";
  }
  return "void";
}

CudaKernel emit_cuda(const tir::Kernel& kernel, const tir::Target& target) {
  Printer p(kernel, target);
  return p.run();
}

}  // namespace tilefuse::codegen
