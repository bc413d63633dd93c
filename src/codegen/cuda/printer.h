// The CUDA printer's state (internal to codegen/cuda; the entry is
// emit_cuda in emit.h). One Printer prints one kernel; its methods are split
// by what they print:
//   print_expr.cpp     names, literals, expressions, element offsets
//   print_stmt.cpp     statements, thread-distributed nests, epilogues
//   print_copy.cpp     copies (cp.async, register-staged, TMA) and the
//                      pipelined loop forms with their MMA calls
//   print_kernel.cpp   the kernel's ABI: header, signature, grid, results
// It reads the kernel plan (tir/plan.h) and decides nothing; the little
// state it keeps is where it is in the text (indentation, names, the
// threads that run the code being printed, the stage each ring is at).
#pragma once

#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "analysis/nonneg.h"
#include "codegen/cuda/emit.h"
#include "codegen/cuda/structure.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

class Printer {
 public:
  Printer(const tir::Kernel& k, const tir::Target& t) : k_(k), target_(t) {}
  CudaKernel run();

 private:
  // ---- names and output (print_expr.cpp) ----
  std::string name_of(const void* node, const std::string& hint);
  std::string var(const tir::Var& v) { return name_of(v.get(), v.name()); }
  std::string buf(const tir::Buffer& b) { return name_of(b.get(), b.name()); }
  void line(const std::string& s) { out_ << std::string(2 * indent_, ' ') << s << "\n"; }
  void open(const std::string& head) {
    line(head.empty() ? "{" : head + " {");
    ++indent_;
  }
  void close() {
    --indent_;
    line("}");
  }
  // Closes a block and opens the next on the same line (`} else {`).
  void close_open(const std::string& head) {
    --indent_;
    line("} " + head + " {");
    ++indent_;
  }
  std::string tmp(const char* prefix) { return prefix + std::to_string(tmp_++); }

  // ---- expressions (print_expr.cpp) ----
  std::string expr(const tir::Expr& e);
  std::string binary(const tir::Expr& e);
  std::string literal(const tir::Expr& e);
  std::string cast(DType to, const tir::Expr& v);
  std::string load(const tir::LoadNode* op);
  std::string address(const tir::Buffer& b, const std::vector<tir::Expr>& idx);  // "&x[off]"
  std::string element(const tir::Buffer& b, const std::vector<tir::Expr>& idx);  // "x[off]"
  std::string global_offset(const tir::Buffer& b, const std::vector<tir::Expr>& idx);
  std::string shared_offset(const tir::Buffer& b, const std::vector<tir::Expr>& idx);

  // ---- statements (print_stmt.cpp) ----
  void stmt(const tir::Stmt& s);
  void emit_for(const tir::ForNode* op);
  void emit_parallel(const tir::ForNode* op);
  void emit_fragment_nest(const tir::ForNode* op, const tir::BufferNode* frag);
  // The address of a fragment-order workspace's slice (its element at the
  // nest's i = j = 0) for a store or load at `indices` inside the nest.
  std::string workspace_slice(const std::vector<tir::Expr>& indices);
  // Fragment-order workspace (LaunchPlan::workspace_vector): the offset in
  // its slice of element frag_e_ of thread tid_sym_, and the layout in words.
  std::string fragment_order_offset() const;
  // With workspace_vector V > 1: the element offset of the thread's vector
  // `group` (its elements group * V ..), (group * threads + tid) * V.
  std::string fragment_order_vector(const std::string& group) const;
  std::string fragment_order_text() const;
  // The workspace loads of nest `op` (over frag_vars_) whose 16-byte vectors
  // can be loaded before its element loop: their slice and mask read no
  // variable the nest binds. Empty where workspace_vector is 1.
  std::vector<const tir::LoadNode*> workspace_vector_loads(const tir::ForNode* op) const;
  // `report`: the status call on failure, tf::report, or tf::report_cold
  // (out of line) in a persistent tile loop (ra_checks).
  void emit_check(const tir::CheckNode* op, const char* report = "tf::report");
  void emit_alloc(const tir::AllocateNode* op);
  // `for (v = tid; v < total; v += threads)`, or a fixed-trip unrolled loop
  // (slot index in trip_var_) when total is a whole number of rounds of at
  // most 64.
  void thread_loop(int64_t total, const std::string& v, const std::function<void()>& body);
  std::string barrier_for(tir::BarrierKind kind) const;

  // ---- copies and loops (print_copy.cpp) ----
  // How a register-staged copy is printed: load and store at once, or split
  // for register double-buffering (values into `regs` before the consumer,
  // to shared memory after it).
  enum class RegPhase { kWhole, kLoad, kStore };
  void emit_copy(const tir::CopyNode* op, bool pipelined, RegPhase phase = RegPhase::kWhole,
                 const std::string& regs = "");
  void emit_vector_lanes(const tir::CopyNode* op, int64_t vec, std::vector<std::string> decl,
                         RegPhase phase, const std::string& regs);
  void emit_tma_copy(const tir::CopyNode* op);
  // A hoisted cp.async copy (CopyPlan::hoisted) of a warp-specialized
  // producer: its slots' addresses once, before the loop (into arrays named
  // after `id`), then the copy of one stage.
  void emit_hoisted_setup(const tir::CopyNode* op, const std::string& id,
                          const std::string& loop_min);
  void emit_hoisted_copy(const tir::CopyNode* op, const std::string& id, const std::string& k,
                         const std::string& loop_min);
  // The declarations of a copy's vars at flat vector index `v` (the inner
  // var steps by `vec`).
  std::vector<std::string> copy_var_decls(const tir::CopyNode* op,
                                          const std::vector<int64_t>& ext, int64_t vec,
                                          const std::string& v);
  void emit_pipelined(const tir::ForNode* op);
  // Under LaunchPlan::timeline_slot, the block timeline's marks in thread 0:
  // the first stage landed, where `when` (a C++ condition) holds
  // (tf::timeline_first_stage); a main loop's end, the first two kept
  // (tf::timeline_loop_end). Else nothing.
  void timeline_first_stage(const std::string& when);
  void timeline_loop_end();
  void emit_in_order(const tir::ForNode* op, const PipelinedBody& body,
                     const tir::PipelinePlan& plan);
  void emit_warp_specialized(const tir::ForNode* op, const PipelinedBody& body,
                             const tir::PipelinePlan& plan);
  // The pieces of a warp-specialized loop: the mbarriers' setup, the
  // producer's copies and loop, the MMA warpgroups' loop. `it` names the
  // loop's count; `base` ("" or, in a persistent kernel, the iterations of
  // the tiles before) places it in the stage ring.
  void ws_setup(const PipelinedBody& body, const tir::PipelinePlan& plan);
  // The producer warpgroup's branch (`if (tf_tid >= kMmaThreads) { ... return; }`)
  // with its register budget and thread symbols, `body` printing its work;
  // then the MMA warpgroups' register budget.
  void ws_producer_role(const tir::PipelinePlan& plan, const std::function<void()>& body);
  void ws_producer_loop(const tir::ForNode* op, const PipelinedBody& body,
                        const tir::PipelinePlan& plan, const std::string& it,
                        const std::string& base);
  // In a multicast cluster: the producer waits until every block's MMA
  // warps released the last `stages` of its `total` ring iterations (an
  // expression of C++ type `type`), so that no block exits while the
  // other's arrivals on its `empty` mbarriers are still on their way.
  void ws_cluster_drain(const tir::PipelinePlan& plan, const std::string& type,
                        const std::string& total);
  // `after_loop`: a line printed after the K loop, before the final wait
  // (its wgmma may still run).
  void ws_consumer_loop(const tir::ForNode* op, const PipelinedBody& body,
                        const tir::PipelinePlan& plan, const std::string& it,
                        const std::string& base, const std::string& after_loop = "");
  // register_a (PipelinePlan::register_a_ahead): the loop's fragment copy
  // (null: none); the ring and row declarations; the thread's two fragment
  // rows' source addresses and masks into `p`[2], `ok`[2] (lets in scope);
  // one k-tile's loads into ring slot `slot` (row h from `src(h)`, read where
  // `ok(h)`); the rows into tf_rap / tf_rao and the first `ahead` k-tiles'
  // loads; the bytes of one k-tile of a row.
  static const tir::CopyNode* fragment_copy(const PipelinedBody& body);
  void ra_declare();
  // Prints `body` inside a loop over the thread's two fragment rows (tf_h),
  // the copy's vars bound (row: fragment_row(tf_h), column 0), reading the
  // rows' index load from `loaded`[tf_h] when not "".
  void ra_each_row(const tir::CopyNode* a, const std::string& acc, const std::string& loaded,
                   const std::function<void()>& body);
  void ra_rows(const tir::CopyNode* a, const std::string& acc, const std::string& p,
               const std::string& ok, const std::string& loaded = "");
  // The fragment copy's row checks (CopyPlan::row_checks) at this thread's
  // two rows, reading the index from `loaded`[2] (ra_preload) or, with "",
  // from memory. Printed where the accumulators are not live (before the
  // first tile, at a tile's start): inside the k-loop their report's
  // registers made ptxas spill and serialize wgmma (session 25). `cold`: a
  // later tile's start in the persistent tile loop, which reports through
  // tf::report_cold (out of line): inline there, the report's atomics and
  // fence made ptxas of CUDA 13.0 issue A's fragment loads one k-tile ahead
  // instead of three in every persistent register_a kernel (session 26,
  // SASS).
  void ra_checks(const tir::CopyNode* a, const std::string& acc, const std::string& loaded,
                 bool cold = false);
  // The rows' one global load (a gather's index) into `loaded`[2] ahead of
  // ra_rows(..., loaded); false (nothing printed) when they read none or
  // several.
  bool ra_preload(const tir::CopyNode* a, const std::string& acc, const std::string& loaded);
  // One k-tile of fragment copy `a` into tf_ra[slot]: its two rows from
  // src(0), src(1) where ok(0), ok(1) (else zeros); CopyPlan::no_allocate
  // picks the loads' L1 policy and CopyPlan::l2_prefetch their L2 prefetch
  // size.
  void ra_load(const tir::CopyNode* a, const std::string& slot,
               const std::function<std::string(int)>& src,
               const std::function<std::string(int)>& ok);
  void ra_first_fragments(const tir::CopyNode* a, const std::string& acc, int ahead);
  static int64_t fragment_step_bytes(const tir::CopyNode* a);
  // A persistent kernel's register-A consumers: prints the next tile's rows
  // into tf_ranp / tf_rano, and the condition that there is one.
  std::function<void()> ra_next_rows_;
  std::function<void()> ra_preload_next_;  // the next tile's index, at a tile's start
  static tir::Expr fragment_row_load(const tir::CopyNode* a);
  std::string ra_has_next_;
  // The split tail (PipelinePlan::split_tail): what the per-warp epilogue
  // prints between half 0's slabs and half 1's (the wait for half 1, its
  // accumulators pinned, the tail's stages released, register_a's deferred
  // loads); set by the consumer loop, taken by the epilogue.
  std::function<void()> split_tail_mid_;
  // Prints the split tail after a consumer loop of trip count n - T: half 0
  // of k-tiles n - T .. n - 1, then half 1 of each, and the wait for half 0.
  // `stage(k)` prints tf_stage and (with `full`) the full-barrier wait of
  // k-tile k's stage, `half(h, k)` one half's wgmma group.
  // (first_half 1: half 0's groups went in the loop; register_a)
  void split_tail_issue(int tail, int64_t n, int first_half,
                        const std::function<void(const std::string&, bool)>& stage,
                        const std::function<void(int, const std::string&)>& half,
                        const std::string& c);
  // The split tail's wait for half 1, its accumulators pinned, and (with
  // `arrive`, the release call; "" for none) the tail's stages released.
  void split_tail_half1_done(const std::string& c, int tail, int64_t n, int stages,
                             const std::string& arrive);
  void ws_consumer_loop_register_a(const tir::ForNode* op, const tir::CopyNode* frag,
                                   const tir::PipelinePlan& plan, const std::string& it,
                                   const std::string& base, const std::string& after_loop,
                                   const std::string& c, const std::string& b,
                                   const tir::GemmNode* g);
  // A persistent kernel (LaunchPlan::persistent): the tile loop of each role
  // around the statements structure.h's persistent_roles gives it.
  void emit_persistent();
  // The program ids of the grid from a linear index (`blockIdx.x`, or a
  // persistent kernel's tile).
  // The grid extents as CUDA expressions (numbers when constant, an
  // expression over scalar params for a symbolic dim), and their product.
  std::vector<std::string> grid_extents();
  std::string grid_size();
  // The program ids from a linear block index `linear`: div/mod of the
  // extents after each.
  void emit_grid_vars(const std::string& linear);
  // The declaration line of a shared or fragment buffer (not its body).
  void emit_alloc_decl(const tir::AllocateNode* op);
  // Declares the loop's lets that `users` need (directly or through other
  // lets), in order (and `k_decl`, the loop var, when they read it).
  void emit_loop_lets(const tir::ForNode* op, const std::vector<std::pair<tir::Var, tir::Expr>>& lets,
                      const std::vector<tir::Stmt>& users, const std::string& k_decl = "");
  std::string tile_type(const tir::FragmentPlan& f) const;
  int64_t tile_elems(const tir::Buffer& b) const { return const_numel(b); }
  const tir::SharedPlan& shared(const tir::Buffer& b) const;
  // The function an MMA thread releases a ring stage by ("tf::mbar_arrive",
  // or in a multicast cluster tf::mbar_arrive_lane_cluster<C>: the stage in
  // every block of the cluster).
  std::string stage_release() const;
  // The blocks of a cluster that share multicast copies' stages (1: none;
  // a split-K cluster shares no stage).
  int multicast_cluster() const {
    return k_.launch.split_k_cluster ? 1 : k_.launch.cluster_size;
  }

  const tir::Kernel& k_;
  tir::Target target_;
  CudaKernel result_;
  std::ostringstream out_;
  int indent_ = 0;
  int tmp_ = 0;
  // The threads running the code being printed: the block's, the
  // producer warpgroup's inside it, the consumers' after a
  // warp-specialized loop (their count, its symbol, the thread's index).
  int threads_ = 128;
  std::string threads_sym_ = "kThreads", tid_sym_ = "tf_tid";
  std::string block_barrier_;  // the block barrier of the loop forms
  int64_t consumer_threads_ = 0;
  int loop_depth_ = 0;
  std::string trip_var_;     // the slot index of the innermost fixed-trip thread loop
  bool in_threads_ = false;  // inside a thread-distributed region
  // thread_loop must give a trip var (a register-slot copy): a region of
  // fewer points than threads runs on the first threads, trip var 0.
  bool trip_always_ = false;
  // An epilogue issued TMA stores (cp.async.bulk): the issuing thread waits
  // for them before the consumers' code ends.
  bool bulk_stores_ = false;
  // ... from each MMA warp's lane 0 (per-warp slabs): each of them waits.
  bool warp_bulk_stores_ = false;
  bool record_copies_ = true;  // emit_copy lists the copy in result_.copies
  std::unordered_map<const void*, std::string> names_;
  std::set<std::string> used_names_;
  // Vars >= 0 (thread and loop indices from 0, grid vars, ...): where the
  // dividend of a `/` or `%` by a positive constant is, C++'s operator is
  // the IR's floor division.
  analysis::NonNegative nonneg_;
  std::unordered_map<const tir::BufferNode*, const tir::AllocateNode*> allocs_;
  std::unordered_map<const tir::BufferNode*, std::string> stage_expr_;  // ring -> its stage now
  // Inside an epilogue nest: loads of frag[vars] read frag.c[e].
  const tir::BufferNode* frag_ = nullptr;
  std::vector<const tir::VarNode*> frag_vars_;
  std::string frag_e_;
  // >= 0 while printing one half of a paired epilogue store: the Store is
  // captured into tf_ok<k>, tf_p<k>, tf_v<k> instead of executed.
  int capture_store_ = -1;
  bool capture_uncast_ = false;  // capture a store's value without its (pair_cast) cast
  // Workspace loads of a fragment nest preloaded a 16-byte vector at a time
  // (LaunchPlan::workspace_vector): the load and the vector's variable.
  std::vector<std::pair<const tir::LoadNode*, std::string>> ws_vectors_;
  // While printing one lane of a vectorized register copy: the vector load
  // (every structurally equal load reads the lane) and the lane.
  tir::Expr vector_load_;
  std::string vector_lane_;
};

// The tile of an accumulator, as the device headers name it
// ("tf::WgmmaTile<tf::f16, 128, 256, 64, 2, 1>", ...).
std::string fragment_tile_type(const tir::FragmentPlan& f, DType accumulator);

}  // namespace tilefuse::codegen
