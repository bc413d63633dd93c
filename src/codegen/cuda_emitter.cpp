// The CUDA C++ emitter (see cuda_emitter.h for the decisions it makes).
#include "codegen/cuda_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "passes/simplify.h"
#include "tir/functor.h"
#include "tir/printer.h"
#include "tir/structural.h"

namespace tilefuse::codegen {
namespace {

using namespace tir;

int64_t const_of(const Expr& e, const char* what) {
  const int64_t* c = as_const_int(e);
  TF_CHECK(c != nullptr, std::string("cuda emitter: ") + what + " is not a constant: " + print(e));
  return *c;
}

int64_t numel(const Buffer& b) {
  int64_t n = 1;
  for (const Expr& e : b->shape) n *= const_of(e, "a buffer extent");
  return n;
}

bool is_mma_dtype(DType dt) {
  return dt == DType::F16 || dt == DType::BF16;
}

// The MMA paths' shared tiles: (A, B) swizzle units in bytes (tf_copy.cuh's
// `swizzled` UNIT). MmaTile's ldmatrix reads 8 rows x 16 bytes of both;
// Tf32MmaTile's A loads 8 rows x 16 bytes, its B loads 4 rows x 32 bytes.
constexpr int kMmaSwizzleUnit = 16;
constexpr int kTf32BSwizzleUnit = 32;
// The producer warpgroup of a warp-specialized main loop.
constexpr int kProducerThreads = 128;

// ---- prescan: gemms, shared buffers, staging ---------------------------------

struct GemmInfo {
  const GemmNode* node = nullptr;
  Buffer c_only;  // a fragment with no gemm (node is null)
  bool mma = false;    // a tensor-core tile (mma.sync or wgmma): m16n8-style C fragments
  bool wgmma = false;  // the sm_90a WgmmaTile (warps_m/n are then warpgroups)
  bool tf32 = false;   // with mma: Tf32MmaTile (f32 operands, --allow-tf32), else MmaTile
  int bm = 0, bn = 0, bk = 0, warps_m = 1, warps_n = 1;
  // MMA k steps per BLOCK_K (k16 for MmaTile, k8 for Tf32MmaTile).
  int k_steps() const { return bk / (tf32 ? 8 : 16); }
  std::string tile_type;  // the C++ type of the accumulator object
};

// How a shared tile is laid out (tf_copy.cuh): row-major, `swizzled` (16-byte
// chunks XOR row: ldmatrix without bank conflicts; with 128-byte rows the
// wgmma 128-byte swizzle of a K-major operand), `swizzled32` (32-byte units:
// the B tile of a TF32 gemm), or `mn_swizzled` (a wgmma MN-major operand).
enum class SharedLayout { kRowMajor, kSwizzled, kSwizzled32, kMnSwizzled };

const char* layout_name(SharedLayout l) {
  switch (l) {
    case SharedLayout::kRowMajor:
      return "row_major";
    case SharedLayout::kSwizzled:
      return "swizzled";
    case SharedLayout::kSwizzled32:
      return "swizzled32";
    case SharedLayout::kMnSwizzled:
      return "mn_swizzled";
  }
  return "";
}

struct SharedInfo {
  int stages = 1;
  SharedLayout layout = SharedLayout::kRowMajor;
  int64_t tile_elems = 0;  // one stage
  int64_t offset = 0;
};

bool split_pipelined_body(const ForNode* op, std::vector<std::pair<Var, Expr>>* lets,
                          std::vector<const CopyNode*>* copies, std::vector<Stmt>* consumer);

class Prescan : public IRVisitor {
 public:
  std::vector<const GemmNode*> gemms;
  std::vector<const AllocateNode*> allocs;
  std::unordered_map<const BufferNode*, int> staged;  // buffer -> stages
  bool has_copy = false, has_check = false;

 protected:
  using IRVisitor::visit;
  void visit(const GemmNode* op) override {
    gemms.push_back(op);
    IRVisitor::visit(op);
  }
  void visit(const AllocateNode* op) override {
    allocs.push_back(op);
    IRVisitor::visit(op);
  }
  void visit(const CheckNode* op) override {
    has_check = true;
    IRVisitor::visit(op);
  }
  void visit(const CopyNode* op) override {
    has_copy = true;
    if (stages_ > 1) staged[op->dst.get()] = stages_;
    IRVisitor::visit(op);
  }
  void visit(const ForNode* op) override {
    int saved = stages_;
    if (op->for_kind == ForKind::Pipelined) {
      // A loop the emitter runs in order (emit_pipelined: an irregular body,
      // or no copies) fills one stage: its tiles get one.
      std::vector<std::pair<Var, Expr>> lets;
      std::vector<const CopyNode*> copies;
      std::vector<Stmt> consumer;
      const bool regular = split_pipelined_body(op, &lets, &copies, &consumer);
      stages_ = regular && !copies.empty() ? std::max(op->num_stages, 1) : 1;
    }
    IRVisitor::visit(op);
    stages_ = saved;
  }

 private:
  int stages_ = 1;
};

// The copy's mechanism as lower_copies named it ("register" when undecided).
std::string copy_mode(const CopyNode* c) {
  return c->plan ? std::string(copy_mechanism_name(c->plan->mechanism)) : "register";
}

// Does `e` read memory (a load)?
bool reads_memory(const Expr& e) {
  struct Reads : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const LoadNode* op) override {
      found = true;
      IRVisitor::visit(op);
    }
  } r;
  r.visit_expr(e);
  return r.found;
}

// Does `e` read the var `v`?
bool uses_var(const Expr& e, const Var& v) {
  struct Uses : IRVisitor {
    const VarNode* var = nullptr;
    bool found = false;
    using IRVisitor::visit;
    void visit(const VarNode* x) override { found = found || x == var; }
  } u;
  u.var = v.get();
  u.visit_expr(e);
  return u.found;
}

// The kernel's one pipelined loop when the kernel body reaches it through
// sequences, lets and allocations only (it runs once per block, in every
// thread: not inside another loop or a branch); null otherwise, and when the
// kernel has more than one.
const ForNode* top_level_pipelined(const Stmt& body) {
  struct Count : IRVisitor {
    int n = 0;
    using IRVisitor::visit;
    void visit(const ForNode* op) override {
      n += op->for_kind == ForKind::Pipelined;
      IRVisitor::visit(op);
    }
  } count;
  count.visit_stmt(body);
  if (count.n != 1) return nullptr;
  std::function<const ForNode*(const Stmt&)> find = [&](const Stmt& s) -> const ForNode* {
    if (const SeqNode* q = s.as<SeqNode>()) {
      for (const Stmt& t : q->stmts)
        if (const ForNode* f = find(t)) return f;
    } else if (const LetStmtNode* l = s.as<LetStmtNode>()) {
      return find(l->body);
    } else if (const AllocateNode* a = s.as<AllocateNode>()) {
      return find(a->body);
    } else if (const ForNode* f = s.as<ForNode>(); f && f->for_kind == ForKind::Pipelined) {
      return f;
    }
    return nullptr;
  };
  return find(body);
}

// Does `s` access a fragment buffer (load or store)?
class FragmentUse : public IRVisitor {
 public:
  const BufferNode* fragment = nullptr;

 protected:
  using IRVisitor::visit;
  void visit(const LoadNode* op) override {
    if (op->buffer.scope() == MemScope::Fragment) fragment = op->buffer.get();
    IRVisitor::visit(op);
  }
  void visit(const StoreNode* op) override {
    if (op->buffer.scope() == MemScope::Fragment) fragment = op->buffer.get();
    IRVisitor::visit(op);
  }
};

// The warp arrangement of an MMA tile: WARPS_M x WARPS_N = warps with warp
// tiles that are multiples of 16x16, the squarest first (fewest ldmatrix per
// mma: MT + NT/2 per k16 step); fewer warps when none fits.
std::pair<int, int> arrange_warps(int bm, int bn, int warps) {
  for (int w = warps; w >= 1; w /= 2) {
    int best_m = 0;
    int64_t best_cost = std::numeric_limits<int64_t>::max();
    for (int wm = 1; wm <= w; wm *= 2) {
      int wn = w / wm;
      if (bm % (wm * 16) != 0 || bn % (wn * 16) != 0) continue;
      int64_t cost = bm / wm + bn / wn;
      if (cost < best_cost) best_cost = cost, best_m = wm;
    }
    if (best_m) return {best_m, w / best_m};
  }
  return {0, 0};
}

// The warpgroup arrangement of a WgmmaTile: WG_M x WG_N = warps / 4 with
// warpgroup tiles WM x WN, WM a multiple of 64 and WN one of the generated
// wgmma N (64, 128, 256; tf_wgmma_ops.cuh), at most 128 accumulators per
// thread. Every wgmma reads its A (64 x 16) and B (16 x WN) from shared
// memory, so a warpgroup reads MT * (64 + WN) * 16 elements per k16 step for
// its WM * WN outputs (MT = WM / 64): for a fixed tile the fewest m64 rows
// (the widest WN) read the least (128x256 with 8 warps: 64x256 per
// warpgroup reads 10 KB per k16 step where 128x128 reads 12 KB). So the
// smallest WM first, then the widest WN. {0, 0} when none fits.
std::pair<int, int> arrange_warpgroups(int bm, int bn, int warps) {
  if (warps % 4 != 0) return {0, 0};
  const int groups = warps / 4;
  std::pair<int, int> best{0, 0};
  int best_cost = std::numeric_limits<int>::max(), best_wn = 0;
  for (int wg_n = 1; wg_n <= groups; wg_n *= 2) {
    if (groups % wg_n != 0) continue;
    const int wg_m = groups / wg_n;
    if (bm % wg_m != 0 || bn % wg_n != 0) continue;
    const int wm = bm / wg_m, wn = bn / wg_n;
    if (wm % 64 != 0 || (wn != 64 && wn != 128 && wn != 256)) continue;
    if (wm / 64 * wn / 2 > 128) continue;
    const int cost = wm;
    if (cost < best_cost || (cost == best_cost && wn > best_wn))
      best = {wg_m, wg_n}, best_cost = cost, best_wn = wn;
  }
  return best;
}

// ---- the emitter -------------------------------------------------------------

class Emitter {
 public:
  Emitter(const Kernel& k, const Target& t, const EmitOptions& o)
      : k_(k), target_(t), options_(o) {}

  CudaKernel run();

 private:
  // names
  std::string name_of(const void* node, const std::string& hint);
  std::string var(const Var& v) { return name_of(v.get(), v.name()); }
  std::string buf(const Buffer& b) { return name_of(b.get(), b.name()); }

  // output
  void line(const std::string& s) {
    out_ << std::string(2 * indent_, ' ') << s << "\n";
    last_line_ = s;
  }
  // The block barrier, unless the line just written is one.
  void barrier() {
    if (last_line_ != barrier_line_) line(barrier_line_);
  }
  struct Indent {
    Emitter* e;
    explicit Indent(Emitter* em) : e(em) { ++e->indent_; }
    ~Indent() { --e->indent_; }
  };
  void open(const std::string& head) {
    line(head.empty() ? "{" : head + " {");
    ++indent_;
  }
  void close() {
    --indent_;
    line("}");
  }

  // expressions
  std::string expr(const Expr& e);
  std::string binary(const Expr& e);
  std::string literal(const Expr& e);
  std::string cast(DType to, const Expr& v);
  std::string load(const LoadNode* op);
  std::string address(const Buffer& b, const std::vector<Expr>& idx);  // "&x[off]"
  std::string element(const Buffer& b, const std::vector<Expr>& idx);  // "x[off]"
  std::string global_offset(const Buffer& b, const std::vector<Expr>& idx);
  std::string shared_offset(const Buffer& b, const std::vector<Expr>& idx);
  bool nonneg(const Expr& e);

  // statements
  void stmt(const Stmt& s);
  void seq_of(const Stmt& s, std::vector<Stmt>* out);
  void emit_for(const ForNode* op);
  void emit_pipelined(const ForNode* op);
  void emit_warp_specialized(const ForNode* op, const std::vector<std::pair<Var, Expr>>& lets,
                             const std::vector<const CopyNode*>& copies, const GemmNode* g);
  bool wgmma_async_loop(const ForNode* op, const GemmNode** gemm);
  // Declares the loop's lets that `users` need (directly or through other
  // lets), in order (and `k_decl`, the loop var, when they read it): each
  // emission site declares only what it reads.
  void emit_loop_lets(const ForNode* op, const std::vector<std::pair<Var, Expr>>& lets,
                      const std::vector<Stmt>& users, const std::string& k_decl = "");
  void emit_parallel(const ForNode* op);
  void emit_fragment_nest(const ForNode* op, const BufferNode* frag);
  // How a register-staged copy is emitted: load and store at once, or split
  // for register double-buffering (values into `regs` before the mma, to
  // shared memory after it).
  enum class RegPhase { kWhole, kLoad, kStore };
  void emit_copy(const CopyNode* op, bool pipelined, RegPhase phase = RegPhase::kWhole,
                 const std::string& regs = "");
  // Slots per thread of the copy's fixed-trip thread loop; 0 when the loop
  // has no fixed trip count (then it cannot be split).
  int64_t copy_trips(const CopyNode* op) const;
  const LoadNode* vector_source(const CopyNode* op, int64_t* vec) const;
  void emit_vector_lanes(const CopyNode* op, const LoadNode* vload, int64_t vec,
                         std::vector<std::string> decl, RegPhase phase, const std::string& regs);
  bool whole_tile_gemm(const GemmNode* g) const;
  void emit_check(const CheckNode* op);
  void emit_alloc(const AllocateNode* op);
  void thread_loop(int64_t total, const std::string& v, const std::function<void()>& body);

  const Kernel& k_;
  Target target_;
  EmitOptions options_;
  CudaKernel result_;
  std::ostringstream out_;
  int indent_ = 0;
  int threads_ = 128;
  // The names thread-distributed loops use: the block's thread count and
  // this thread's index in it (inside the producer of a warp-specialized
  // loop, and after it, the producer's or the MMA warpgroups' own).
  std::string threads_sym_ = "kThreads", tid_sym_ = "tf_tid";
  // Warp specialization (emit_warp_specialized): the MMA warpgroups' threads
  // (0 .. mma_threads_ - 1; the producer warpgroup follows them), the
  // pipelined loop it applies to, and the shared offset of its mbarriers.
  bool warp_specialized_ = false;
  int mma_threads_ = 0;
  const ForNode* ws_loop_ = nullptr;
  int64_t mbar_offset_ = 0;
  // The warp-specialized loop's copies issued by TMA (lower_copies' "tma"
  // tiles whose shared layout a tensor map can write): one or more
  // cp.async.bulk.tensor per stage, each with its box origin (tensor
  // coordinates, innermost first) and its offset into the stage's tile.
  struct TmaOp {
    std::vector<Expr> coords;
    int64_t smem_elems = 0;
  };
  struct TmaCopy {
    int map = 0;  // index into result_.tensor_maps: the kernel param tf_map<map>
    std::vector<TmaOp> ops;
    int64_t bytes = 0;  // per stage
    // A row gather (A[i, j] = x[idx[i], k0 + j]): one box of one row per
    // row i, spread over the producer threads; ops[0] holds the coordinates
    // with the row var free (the gathered row where `mask` holds, else -1:
    // a box wholly out of bounds, zero-filled), smem_elems the row pitch.
    bool gather = false;
    int64_t rows = 0;
    Expr mask;
  };
  std::unordered_map<const CopyNode*, TmaCopy> tma_;
  bool in_producer_ = false;  // emitting the producer warpgroup's copies
  // Plans `op` as TMA copies (into tma_ and result_.tensor_maps); false,
  // with `why`, when a tensor map cannot write its tile.
  // `gather_only`: only as a row gather (a "cp_async" copy: lower_copies'
  // TMA checks did not pass it as a tile).
  bool plan_tma(const CopyNode* op, std::string* why, bool gather_only = false);
  void emit_tma_copy(const CopyNode* op);
  int tmp_ = 0;
  std::string last_line_;
  // The block barrier: __syncthreads(), or with a WgmmaTile in the kernel
  // tf::async_barrier() (generic-proxy shared writes fenced for wgmma first).
  std::string barrier_line_ = "__syncthreads();";
  // Shared buffers some emitted code has already read or written: a
  // synchronous copy into one needs a barrier first (earlier readers done).
  std::unordered_set<const BufferNode*> shared_used_;
  int loop_depth_ = 0;       // serial / unrolled loops around the statement being emitted
  std::string trip_var_;     // the slot index of the innermost fixed-trip thread loop
  bool in_threads_ = false;  // inside a thread-distributed region
  std::unordered_map<const void*, std::string> names_;
  std::set<std::string> used_names_;
  std::unordered_set<const VarNode*> nonneg_vars_;
  std::unordered_map<const BufferNode*, SharedInfo> shared_;
  std::unordered_map<const BufferNode*, std::string> stage_expr_;  // staged buffer -> stage now
  std::unordered_map<const BufferNode*, GemmInfo> fragments_;      // C buffer -> its gemm
  // Inside a fragment nest: loads of frag[vars] read frag.c[e].
  const BufferNode* frag_ = nullptr;
  std::vector<const VarNode*> frag_vars_;
  std::string frag_e_;
  // >= 0 while emitting one half of a paired epilogue store: the Store is
  // captured into tf_ok<k>, tf_p<k>, tf_v<k> instead of executed.
  int capture_store_ = -1;
  // While emitting one lane of a vectorized register copy: the load read a
  // vector at a time, and the expression of this lane's element.
  const LoadNode* vector_load_ = nullptr;
  std::string vector_lane_;
};

std::string Emitter::name_of(const void* node, const std::string& hint) {
  auto it = names_.find(node);
  if (it != names_.end()) return it->second;
  std::string base;
  for (char c : hint) base += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "v_" + base;
  static const std::set<std::string> kReserved = {
      "int",       "float",    "double",   "char",      "short",    "long",     "bool",
      "void",      "auto",     "const",    "if",        "else",     "for",      "while",
      "do",        "return",   "break",    "case",      "switch",   "new",      "delete",
      "this",      "true",     "false",    "struct",    "class",    "union",    "signed",
      "unsigned",  "static",   "extern",   "register",  "volatile", "default",  "goto",
      "sizeof",    "template", "typename", "namespace", "using",    "operator", "private",
      "public",    "asm",      "inline",   "restrict",  "min",      "max",      "tf",
      "threadIdx", "blockIdx", "blockDim", "gridDim",   "warpSize", "kThreads", "e", "kMmaThreads", "kProducerThreads"};
  if (kReserved.count(base) || base.rfind("tf_", 0) == 0) base += "_";
  std::string name = base;
  for (int n = 1; used_names_.count(name); ++n) name = base + "_" + std::to_string(n);
  used_names_.insert(name);
  names_[node] = name;
  return name;
}

// ---- expressions ----------------------------------------------------------------

bool Emitter::nonneg(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::IntImm:
      return e.as<IntImmNode>()->value >= 0;
    case ExprKind::Var:
      return nonneg_vars_.count(e.as<VarNode>()) > 0;
    case ExprKind::Add:
      return nonneg(e.as<AddNode>()->a) && nonneg(e.as<AddNode>()->b);
    case ExprKind::Mul:
      return nonneg(e.as<MulNode>()->a) && nonneg(e.as<MulNode>()->b);
    case ExprKind::Div:
      return nonneg(e.as<DivNode>()->a) && nonneg(e.as<DivNode>()->b);
    case ExprKind::Mod:
      return nonneg(e.as<ModNode>()->b);
    case ExprKind::Min:
      return nonneg(e.as<MinNode>()->a) && nonneg(e.as<MinNode>()->b);
    case ExprKind::Max:
      return nonneg(e.as<MaxNode>()->a) || nonneg(e.as<MaxNode>()->b);
    case ExprKind::Cast: {
      const CastNode* c = e.as<CastNode>();
      return is_integral(c->value.dtype()) &&
             dtype_size(e.dtype()) >= dtype_size(c->value.dtype()) && nonneg(c->value);
    }
    default:
      return false;
  }
}

std::string Emitter::literal(const Expr& e) {
  if (const IntImmNode* i = e.as<IntImmNode>()) {
    switch (e.dtype()) {
      case DType::Bool:
        return i->value ? "true" : "false";
      case DType::I32:
        return i->value == std::numeric_limits<int32_t>::min() ? "(-2147483647 - 1)"
                                                               : std::to_string(i->value);
      case DType::I64:
        return i->value == std::numeric_limits<int64_t>::min() ? "(-9223372036854775807ll - 1)"
                                                               : std::to_string(i->value) + "ll";
      default:
        return "static_cast<" + cuda_type(e.dtype()) + ">(" + std::to_string(i->value) + ")";
    }
  }
  const FloatImmNode* f = e.as<FloatImmNode>();
  const double v = f->value;
  auto f32_bits = [](float x) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    return b;
  };
  switch (e.dtype()) {
    case DType::F32:
      if (std::isfinite(v)) return fmt::format("{:a}f", static_cast<float>(v));
      return fmt::format("__int_as_float(0x{:08x})", f32_bits(static_cast<float>(v)));
    case DType::F64:
      if (std::isfinite(v)) return fmt::format("{:a}", v);
      {
        uint64_t b;
        std::memcpy(&b, &v, 8);
        return fmt::format("__longlong_as_double(0x{:016x}ll)", b);
      }
    case DType::F16:
      return fmt::format("tf::f16{{0x{:04x}}}", f32_to_f16_bits(static_cast<float>(v)));
    case DType::BF16:
      return fmt::format("tf::bf16{{0x{:04x}}}", f32_to_bf16_bits(static_cast<float>(v)));
    case DType::F8E4M3:
      return fmt::format("tf::f8e4m3{{0x{:02x}}}", f32_to_f8e4m3_bits(static_cast<float>(v)));
    case DType::F8E5M2:
      return fmt::format("tf::f8e5m2{{0x{:02x}}}", f32_to_f8e5m2_bits(static_cast<float>(v)));
    default:
      TF_CHECK(false, "cuda emitter: a float constant of a non-float dtype");
  }
  return "";
}

std::string Emitter::cast(DType to, const Expr& v) {
  const DType from = v.dtype();
  std::string x = expr(v);
  if (from == to) return x;
  // Integer widening/narrowing wraps (C++20 modular conversion); bool -> int
  // is 0/1. Everything else follows the IR contract in tf::cast.
  if ((is_integral(from) || from == DType::Bool) && is_integral(to))
    return "static_cast<" + cuda_type(to) + ">(" + x + ")";
  return "tf::cast<" + cuda_type(to) + ">(" + x + ")";
}

std::string Emitter::binary(const Expr& e) {
  auto ab = [&](const auto* op) { return std::make_pair(op->a, op->b); };
  Expr a, b;
  switch (e.kind()) {
#define TF_AB(name, ...)                     \
  case ExprKind::name:                       \
    std::tie(a, b) = ab(e.as<name##Node>()); \
    break;
    TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_AB)
#undef TF_AB
    default:
      TF_CHECK(false, "cuda emitter: not a binary op");
  }
  const DType dt = a.dtype();
  const std::string x = expr(a), y = expr(b);
  const bool narrow_int = dt == DType::I8 || dt == DType::U8;
  auto arith = [&](const char* sym) {
    std::string r = "(" + x + " " + sym + " " + y + ")";
    return narrow_int ? "static_cast<" + cuda_type(dt) + ">" + r : r;
  };
  if (is_comparison(e.kind()))  // C++ has the IR's comparison operators
    return "(" + x + " " + std::string(binary_symbol(e.kind())) + " " + y + ")";
  switch (e.kind()) {
    case ExprKind::Add:
      return arith("+");
    case ExprKind::Sub:
      return arith("-");
    case ExprKind::Mul:
      return arith("*");
    case ExprKind::Div: {
      if (!is_integral(dt)) return "(" + x + " / " + y + ")";
      const int64_t* c = as_const_int(b);
      if (c && *c > 0 && nonneg(a)) return arith("/");
      return "tf::floordiv(" + x + ", " + y + ")";
    }
    case ExprKind::Mod: {
      const int64_t* c = as_const_int(b);
      if (is_integral(dt) && c && *c > 0 && nonneg(a)) return arith("%");
      return "tf::floormod(" + x + ", " + y + ")";
    }
    case ExprKind::Min:
      return "tf::min(" + x + ", " + y + ")";
    case ExprKind::Max:
      return "tf::max(" + x + ", " + y + ")";
    case ExprKind::And:
    case ExprKind::Or:
      return "(" + x + " " + std::string(binary_symbol(e.kind())) + " " + y + ")";
    default:
      break;
  }
  TF_CHECK(false, "cuda emitter: unhandled binary op");
  return "";
}

std::string Emitter::expr(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
      return literal(e);
    case ExprKind::Var: {
      const VarNode* v = e.as<VarNode>();
      TF_CHECK(names_.count(v), "cuda emitter: unbound var " + v->name);
      return names_.at(v);
    }
    case ExprKind::Not:
      return "(!" + expr(e.as<NotNode>()->a) + ")";
    case ExprKind::Select: {
      const SelectNode* s = e.as<SelectNode>();
      return "(" + expr(s->cond) + " ? " + expr(s->true_value) + " : " + expr(s->false_value) + ")";
    }
    case ExprKind::Cast:
      return cast(e.dtype(), e.as<CastNode>()->value);
    case ExprKind::Call: {
      const CallNode* c = e.as<CallNode>();
      std::string r = "tf::" + std::string(intrinsic_name(c->op)) + "(";
      for (size_t i = 0; i < c->args.size(); ++i) r += (i ? ", " : "") + expr(c->args[i]);
      return r + ")";
    }
    case ExprKind::Load:
      return load(e.as<LoadNode>());
    case ExprKind::HookLoad:
      TF_CHECK(false, "cuda emitter: a load_input hook was not inlined");
      return "";
    default:
      return binary(e);
  }
}

std::string Emitter::global_offset(const Buffer& b, const std::vector<Expr>& idx) {
  const size_t rank = idx.size();
  std::vector<int64_t> strides(rank);
  if (!b->strides.empty()) {
    for (size_t d = 0; d < rank; ++d) strides[d] = const_of(b->strides[d], "a stride");
  } else {
    int64_t s = 1;
    for (size_t d = rank; d-- > 0;) {
      strides[d] = s;
      s *= const_of(b->shape[d], "a buffer extent");
    }
  }
  // 64-bit unless the largest offset and every index fit 32 bits (the IR's
  // "Offsets" rule).
  int64_t max_off = 0;
  bool wide = false;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t ext = const_of(b->shape[d], "a buffer extent");
    max_off += std::max<int64_t>(ext - 1, 0) * std::abs(strides[d]);
    wide |= idx[d].dtype() == DType::I64;
  }
  wide |= max_off > std::numeric_limits<int32_t>::max();
  std::string r;
  for (size_t d = 0; d < rank; ++d) {
    if (strides[d] == 0) continue;
    std::string term = expr(idx[d]);
    if (wide && idx[d].dtype() != DType::I64) term = "static_cast<long long>(" + term + ")";
    if (strides[d] != 1) term += " * " + std::to_string(strides[d]) + (wide ? "ll" : "");
    r += (r.empty() ? "" : " + ") + term;
  }
  return r.empty() ? "0" : r;
}

std::string Emitter::shared_offset(const Buffer& b, const std::vector<Expr>& idx) {
  shared_used_.insert(b.get());
  const SharedInfo& info = shared_.at(b.get());
  std::string off;
  if (idx.size() == 2) {
    const int64_t cols = const_of(b->shape[1], "a shared extent");
    switch (info.layout) {
      case SharedLayout::kSwizzled:
        off = fmt::format("tf::swizzled<{}, {}>({}, {})", cols, dtype_size(b.dtype()),
                          expr(idx[0]), expr(idx[1]));
        break;
      case SharedLayout::kSwizzled32:
        off = fmt::format("tf::swizzled<{}, {}, {}>({}, {})", cols, dtype_size(b.dtype()),
                          kTf32BSwizzleUnit, expr(idx[0]), expr(idx[1]));
        break;
      case SharedLayout::kMnSwizzled:
        off = fmt::format("tf::mn_swizzled<{}, {}, {}>({}, {})",
                          const_of(b->shape[0], "a shared extent"), cols, dtype_size(b.dtype()),
                          expr(idx[0]), expr(idx[1]));
        break;
      case SharedLayout::kRowMajor:
        off = fmt::format("tf::row_major<{}>({}, {})", cols, expr(idx[0]), expr(idx[1]));
        break;
    }
  } else {
    int64_t s = 1;
    for (size_t d = idx.size(); d-- > 0;) {
      std::string term = expr(idx[d]);
      if (s != 1) term += " * " + std::to_string(s);
      off = off.empty() ? term : term + " + " + off;
      s *= const_of(b->shape[d], "a shared extent");
    }
    if (off.empty()) off = "0";
  }
  if (info.stages > 1) {
    auto it = stage_expr_.find(b.get());
    TF_CHECK(it != stage_expr_.end(),
             "cuda emitter: staged buffer " + b.name() + " used outside its pipelined loop");
    off = "(" + it->second + ") * " + std::to_string(info.tile_elems) + " + " + off;
  }
  return off;
}

std::string Emitter::element(const Buffer& b, const std::vector<Expr>& idx) {
  switch (b.scope()) {
    case MemScope::Global:
      return buf(b) + "[" + global_offset(b, idx) + "]";
    case MemScope::Shared:
      return buf(b) + "[" + shared_offset(b, idx) + "]";
    case MemScope::Local: {
      std::string off;
      int64_t s = 1;
      for (size_t d = idx.size(); d-- > 0;) {
        std::string term = expr(idx[d]) + (s != 1 ? " * " + std::to_string(s) : "");
        off = off.empty() ? term : term + " + " + off;
        s *= const_of(b->shape[d], "a local extent");
      }
      return buf(b) + "[" + (off.empty() ? "0" : off) + "]";
    }
    case MemScope::Fragment: {
      bool ok = frag_ == b.get() && idx.size() == frag_vars_.size();
      for (size_t d = 0; ok && d < idx.size(); ++d) ok = idx[d].get() == frag_vars_[d];
      TF_CHECK(ok, "cuda emitter: fragment " + b.name() +
                       " accessed outside a parallel nest over its own elements");
      return buf(b) + ".c[" + frag_e_ + "]";
    }
  }
  return "";
}

std::string Emitter::address(const Buffer& b, const std::vector<Expr>& idx) {
  std::string e = element(b, idx);
  e.insert(e.begin(), '&');  // (not "&" + e: GCC 12 warns -Wrestrict on that, falsely)
  return e;
}

std::string Emitter::load(const LoadNode* op) {
  if (op == vector_load_) return vector_lane_;  // already loaded, a vector at a time
  std::string el = element(op->buffer, op->indices);
  // A WgmmaTile's accumulators are read through value(e) (see tf_wgmma.cuh:
  // a conversion reading them directly makes ptxas serialize the wgmma).
  if (op->buffer.scope() == MemScope::Fragment && fragments_.at(op->buffer.get()).wgmma)
    el = buf(op->buffer) + ".value(" + frag_e_ + ")";
  if (!op->mask.defined()) return el;
  std::string other =
      op->other.defined() ? expr(op->other) : literal(make_const(op->buffer.dtype(), 0));
  return "(" + expr(op->mask) + " ? " + el + " : " + other + ")";
}

// ---- statements -----------------------------------------------------------------

void Emitter::seq_of(const Stmt& s, std::vector<Stmt>* out) {
  if (const SeqNode* q = s.as<SeqNode>()) {
    for (const Stmt& t : q->stmts) seq_of(t, out);
  } else if (s.defined()) {
    out->push_back(s);
  }
}

// `for (v = tid; v < total; v += threads)`, or a fixed-trip unrolled loop
// when total is a multiple of the block.
void Emitter::thread_loop(int64_t total, const std::string& v, const std::function<void()>& body) {
  const bool saved = in_threads_;
  in_threads_ = true;
  if (total % threads_ == 0 && total / threads_ <= 64) {
    line("#pragma unroll");
    std::string r = "tf_r" + std::to_string(tmp_++);
    trip_var_ = r;
    open(fmt::format("for (int {} = 0; {} < {}; ++{})", r, r, total / threads_, r));
    line(fmt::format("const int {} = {} * {} + {};", v, r, threads_sym_, tid_sym_));
  } else {
    open(fmt::format("for (int {} = {}; {} < {}; {} += {})", v, tid_sym_, v, total, v,
                     threads_sym_));
  }
  body();
  close();
  in_threads_ = saved;
}

void Emitter::emit_check(const CheckNode* op) {
  // Each distinct check (code and message) gets its own id in the status
  // word; codes are categories, and two checks may share one.
  int id = 0;
  for (const CudaCheck& c : result_.checks)
    if (c.code == op->code && c.message == op->message) id = c.id;
  if (id == 0) {
    id = static_cast<int>(result_.checks.size()) + 1;
    result_.checks.push_back({id, op->code, op->message, static_cast<int>(op->args.size())});
  }
  TF_CHECK(op->args.size() <= 4, "cuda emitter: a check with more than 4 args");
  std::string args;
  for (const Expr& a : op->args) args += ", static_cast<long long>(" + expr(a) + ")";
  line(fmt::format("if (!{}) tf::report(tf_status, {}{});", expr(op->cond), id, args));
}

void Emitter::emit_alloc(const AllocateNode* op) {
  const Buffer& b = op->buffer;
  const std::string n = buf(b), t = cuda_type(b.dtype());
  switch (b.scope()) {
    case MemScope::Shared: {
      const SharedInfo& info = shared_.at(b.get());
      line(fmt::format("{}* {} = reinterpret_cast<{}*>(tf_smem + {});  // {}{}", t, n, t,
                       info.offset, layout_name(info.layout),
                       info.stages > 1 ? ", " + std::to_string(info.stages) + " stages" : ""));
      break;
    }
    case MemScope::Fragment: {
      auto it = fragments_.find(b.get());
      TF_CHECK(it != fragments_.end(), "cuda emitter: fragment " + b.name() + " is no gemm's C");
      line(it->second.tile_type + " " + n + ";");
      break;
    }
    case MemScope::Local:
      line(fmt::format("{} {}[{}];", t, n, numel(b)));
      break;
    case MemScope::Global:
      TF_CHECK(false, "cuda emitter: alloc of a global buffer");
  }
  stmt(op->body);
}

bool Emitter::whole_tile_gemm(const GemmNode* g) const {
  // A gemm of whole tiles has no index expressions: nothing in it depends on
  // the loop var or the loop's lets, so it can be split into k16 steps.
  return g->a.prefix.empty() && g->b.prefix.empty() && g->c.prefix.empty() && !g->trans_a &&
         !g->trans_b;
}

int64_t Emitter::copy_trips(const CopyNode* op) const {
  int64_t total = 1;
  for (const Expr& e : op->extents) {
    const int64_t* c = as_const_int(e);
    if (!c) return 0;
    total *= *c;
  }
  int64_t vec = 1;
  vector_source(op, &vec);
  total /= vec;  // the thread loop runs over vectors
  return total % threads_ == 0 && total / threads_ <= 64 ? total / threads_ * vec : 0;
}

// A register-staged copy whose main source load (lower_copies'
// `vector_load`) is read `width` bytes at a time: that load and *vec, the
// elements per access; nullptr (and *vec 1) when the copy goes element by
// element. On by default (run on the H200: test_gpu and every case);
// TILEFUSE_VECTOR_LOADS=0 turns it off, to compare or to rule it out.
const LoadNode* Emitter::vector_source(const CopyNode* op, int64_t* vec) const {
  *vec = 1;
  const char* on = std::getenv("TILEFUSE_VECTOR_LOADS");
  if (!op->plan || !op->plan->vector_load.defined() || (on && std::string(on) == "0"))
    return nullptr;
  const int64_t width = op->plan->width;
  const LoadNode* l = op->plan->vector_load.as<LoadNode>();
  const int64_t esz = dtype_size(l->buffer.dtype());
  const int64_t* inner = op->extents.empty() ? nullptr : as_const_int(op->extents.back());
  const int64_t n = width / esz;
  if (n < 2 || width % esz != 0 || !inner || *inner % n != 0 ||
      l->buffer.scope() != MemScope::Global)
    return nullptr;
  *vec = n;
  return l;
}

void Emitter::emit_copy(const CopyNode* op, bool pipelined, RegPhase phase,
                        const std::string& regs) {
  const Buffer& dst = op->dst;
  TF_CHECK(dst.scope() == MemScope::Shared || dst.scope() == MemScope::Local,
           "cuda emitter: a copy into " + std::string(mem_scope_name(dst.scope())) + " memory");
  std::string mode = copy_mode(op);
  int64_t width = op->plan ? op->plan->width : dtype_size(dst.dtype());
  std::vector<int64_t> ext;
  for (const Expr& e : op->extents) ext.push_back(const_of(e, "a copy extent"));
  const int64_t elem = dtype_size(dst.dtype());
  const LoadNode* src = op->value.as<LoadNode>();
  int64_t vec = 1;
  if (mode == "tma" && !in_producer_) {  // (the producer's own reason is noted at planning)
    const std::string note = "copy " + dst.name() +
                             ": cp.async, not TMA: only the producer of a warp-specialized main "
                             "loop issues TMA";
    if (std::find(result_.notes.begin(), result_.notes.end(), note) == result_.notes.end())
      result_.notes.push_back(note);
  }
  if (mode == "cp_async" || mode == "tma") {
    // Outside a warp-specialized loop's producer TMA-eligible tiles are
    // issued with cp.async.
    vec = width / elem;
    bool ok =
        src && dst.scope() == MemScope::Shared && vec >= 1 && width % elem == 0 && !ext.empty() &&
        ext.back() % vec == 0 && (width == 4 || width == 8 || width == 16) &&
        (!src->other.defined() || (as_const_int(src->other) && *as_const_int(src->other) == 0));
    TF_CHECK(ok, "cuda emitter: copy into " + dst.name() + " cannot be issued as cp.async");
    mode = "cp_async";
  } else {
    mode = "register";
  }
  // A register-staged copy may read its main source a vector at a time.
  const LoadNode* vload = nullptr;
  if (mode == "register") {
    vload = vector_source(op, &vec);
    if (vload) {
      width = vec * dtype_size(vload->buffer.dtype());
    } else {
      // One element of the main source per access: the element of
      // lower_copies' `vector_load` (vector loads off), else its decided
      // width (an i32 index hoisted into an i64 tile reads 4 bytes, not the
      // 8 it stores); without either, the destination's element.
      width = elem;
      if (op->plan && op->plan->vector_load.defined())
        width = dtype_size(op->plan->vector_load.as<LoadNode>()->buffer.dtype());
      else if (op->plan)
        width = op->plan->width;
    }
  }
  TF_CHECK(phase == RegPhase::kWhole || mode == "register",
           "cuda emitter: only register-staged copies are split");
  if (phase != RegPhase::kStore)
    result_.copies.push_back(
        {dst.name(), mode, width, pipelined ? shared_.at(dst.get()).stages : 1});

  int64_t total = 1;
  for (int64_t e : ext) total *= e;
  total /= vec;
  line(fmt::format("// copy {} <- {} ({}{} B){}", dst.name(), src ? src->buffer.name() : "prologue",
                   mode == "cp_async" ? "cp.async " : "register-staged, ", width,
                   phase == RegPhase::kLoad    ? ": loads into registers"
                   : phase == RegPhase::kStore ? ": registers to shared memory"
                                               : ""));
  std::string v = "tf_v" + std::to_string(tmp_++);
  for (const Var& cv : op->vars) nonneg_vars_.insert(cv.get());
  thread_loop(total, v, [&] {
    // Decompose the flat vector index; the innermost var steps by vec.
    int64_t stride = 1;
    std::vector<std::string> decl(ext.size());
    for (size_t d = ext.size(); d-- > 0;) {
      const int64_t e = d + 1 == ext.size() ? ext[d] / vec : ext[d];
      std::string x = stride == 1 ? v : "(" + v + " / " + std::to_string(stride) + ")";
      if (d > 0) x += " % " + std::to_string(e);
      if (d + 1 == ext.size() && vec > 1) x = "(" + x + ") * " + std::to_string(vec);
      decl[d] = fmt::format("const int {} = {};", var(op->vars[d]), x);
      stride *= e;
    }
    if (vload) {
      emit_vector_lanes(op, vload, vec, decl, phase, regs);
      return;
    }
    for (const std::string& s : decl) line(s);
    if (mode == "cp_async") {
      std::string pred = src->mask.defined() ? expr(src->mask) : "true";
      line("const bool tf_pred = " + pred + ";");
      line(fmt::format("tf::cp_async_{}({}, tf_pred ? static_cast<const void*>({}) : {}, tf_pred);",
                       width, address(dst, op->dst_indices), address(src->buffer, src->indices),
                       buf(src->buffer)));
    } else if (phase == RegPhase::kLoad) {
      line(fmt::format("{}[{}] = {};", regs, trip_var_, expr(op->value)));
    } else if (phase == RegPhase::kStore) {
      line(fmt::format("{} = {}[{}];", element(dst, op->dst_indices), regs, trip_var_));
    } else {
      line(element(dst, op->dst_indices) + " = " + expr(op->value) + ";");
    }
  });
}

// One vector of a vectorized register copy: the main load `vload` read
// `vec` elements at a time into tf_vl (masked off: `other` in every lane),
// then each lane's element computed and stored (or kept in `regs`).
// `decl` declares the copy vars; the inner one becomes lane 0 (tf_j0).
void Emitter::emit_vector_lanes(const CopyNode* op, const LoadNode* vload, int64_t vec,
                                std::vector<std::string> decl, RegPhase phase,
                                const std::string& regs) {
  const std::string jname = var(op->vars.back());
  const std::string inner = decl.back();
  const size_t eq = inner.find(" = ");
  decl.back() = "const int tf_j0 = " + inner.substr(eq + 3);
  for (const std::string& s : decl) line(s);
  const std::string lane = "tf_l" + std::to_string(tmp_++);
  const std::string vl = "tf_vl" + std::to_string(tmp_++);
  if (phase != RegPhase::kStore) {
    line(fmt::format("{} {}[{}];", cuda_type(vload->buffer.dtype()), vl, vec));
    open("");
    line(fmt::format("const int {} = tf_j0;", jname));
    const std::string other =
        vload->other.defined() ? expr(vload->other) : literal(make_const(vload->buffer.dtype(), 0));
    const std::string ld = fmt::format("tf::load_vector<{}>({}, {});", vec, vl,
                                       address(vload->buffer, vload->indices));
    if (vload->mask.defined()) {
      line(fmt::format("if ({}) {{", expr(vload->mask)));
      line("  " + ld);
      line("} else {");
      line(fmt::format("  for (int tf_k = 0; tf_k < {}; ++tf_k) {}[tf_k] = {};", vec, vl, other));
      line("}");
    } else {
      line(ld);
    }
    close();
  }
  line("#pragma unroll");
  open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", lane, vec));
  line(fmt::format("const int {} = tf_j0 + {};", jname, lane));
  vector_load_ = vload;
  vector_lane_ = vl + "[" + lane + "]";
  const std::string slot = fmt::format("{} * {} + {}", trip_var_, vec, lane);
  if (phase == RegPhase::kLoad) {
    line(fmt::format("{}[{}] = {};", regs, slot, expr(op->value)));
  } else if (phase == RegPhase::kStore) {
    line(fmt::format("{} = {}[{}];", element(op->dst, op->dst_indices), regs, slot));
  } else {
    line(element(op->dst, op->dst_indices) + " = " + expr(op->value) + ";");
  }
  vector_load_ = nullptr;
  close();
}

// A pipelined loop's body: a chain of lets, then the copies into shared
// tiles (the producer), then the rest (the consumer). False when the body
// has another shape (the loop then runs in order, with barriers).
bool split_pipelined_body(const ForNode* op, std::vector<std::pair<Var, Expr>>* lets,
                          std::vector<const CopyNode*>* copies, std::vector<Stmt>* consumer) {
  bool regular = true;
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (const SeqNode* q = s.as<SeqNode>()) {
      for (const Stmt& t : q->stmts) walk(t);
    } else if (const LetStmtNode* l = s.as<LetStmtNode>()) {
      if (!consumer->empty()) regular = false;
      lets->emplace_back(l->var, l->value);
      walk(l->body);
    } else if (const CopyNode* c = s.as<CopyNode>()) {
      if (!consumer->empty() || c->dst.scope() != MemScope::Shared) regular = false;
      copies->push_back(c);
    } else if (s.defined()) {
      consumer->push_back(s);
    }
  };
  walk(op->body);
  return regular;
}

// Is `op` a pipelined loop whose consumer is one whole-tile wgmma gemm over
// tiles staged by the loop itself (the asynchronous wgmma main loop)? Sets
// *gemm (when not null) to it.
bool Emitter::wgmma_async_loop(const ForNode* op, const GemmNode** gemm) {
  std::vector<std::pair<Var, Expr>> lets;
  std::vector<const CopyNode*> copies;
  std::vector<Stmt> consumer;
  const int stages = std::max(op->num_stages, 1);
  if (!split_pipelined_body(op, &lets, &copies, &consumer) || copies.empty() || stages < 2 ||
      consumer.size() != 1)
    return false;
  const GemmNode* g = consumer[0].as<GemmNode>();
  if (!g) return false;
  auto f = fragments_.find(g->c.buffer.get());
  if (f == fragments_.end() || !f->second.wgmma || !whole_tile_gemm(g) ||
      shared_.at(g->a.buffer.get()).stages != stages ||
      shared_.at(g->b.buffer.get()).stages != stages)
    return false;
  if (gemm) *gemm = g;
  return true;
}

bool Emitter::plan_tma(const CopyNode* op, std::string* why, bool gather_only) {
  const LoadNode* l = op->value.as<LoadNode>();
  if (!l || l->buffer.scope() != MemScope::Global) return *why = "not a plain global load", false;
  const Buffer& b = l->buffer;
  const int rank = static_cast<int>(l->indices.size());
  const int elem = static_cast<int>(dtype_size(b.dtype()));
  if (rank < 1 || rank > 5 || op->vars.empty() || op->vars.size() > 2)
    return *why = "rank", false;
  // The tensor: constant shape and strides (bytes), innermost contiguous.
  std::vector<int64_t> shape, strides;
  for (const Expr& e : b->shape) {
    const int64_t* c = as_const_int(e);
    if (!c) return *why = "a symbolic shape", false;
    shape.push_back(*c);
  }
  if (b->strides.empty()) {
    int64_t st = 1;
    strides.assign(rank, 0);
    for (int k = rank; k-- > 0;) strides[k] = st, st *= shape[k];
  } else {
    for (const Expr& e : b->strides) {
      const int64_t* c = as_const_int(e);
      if (!c) return *why = "a symbolic stride", false;
      strides.push_back(*c);
    }
  }
  if (strides.back() != 1) return *why = "the innermost dim is not contiguous", false;
  // Each copy dim reads one tensor dim, in order, the innermost copy dim the
  // innermost tensor dim; the destination is indexed by the copy vars.
  std::vector<int> dim_of(op->vars.size(), -1);
  for (int k = 0; k < rank; ++k)
    for (size_t d = 0; d < op->vars.size(); ++d)
      if (uses_var(l->indices[k], op->vars[d])) {
        if (dim_of[d] != -1) return *why = "a copy dim feeds two tensor dims", false;
        dim_of[d] = k;
      }
  for (size_t d = 0; d < dim_of.size(); ++d)
    if (dim_of[d] < 0 || (d > 0 && dim_of[d] <= dim_of[d - 1]))
      return *why = "the copy dims are not the tensor dims in order", false;
  if (dim_of.back() != rank - 1) return *why = "the inner copy dim is not the inner tensor dim", false;
  // A row gather: the outer copy var reaches its tensor index only through
  // a loaded value. Only under TILEFUSE_TMA_GATHER=1: one TMA per 128-byte
  // row was slower than the producer's cp.async on the H200 (seed 2048^3
  // f16, 128x256x64/4/8: 64.7 us against 52.6; 128x128x64/4/8 99.3 against
  // 71.0; bench/RESULTS.md, session 4).
  const bool gather = op->vars.size() == 2 && reads_memory(l->indices[dim_of[0]]);
  if (gather_only && !gather) return *why = "not a row gather", false;
  Expr row_mask;  // a gather's mask of whole rows
  if (gather) {
    if (std::getenv("TILEFUSE_TMA_GATHER") == nullptr)
      return *why = "gathered rows go by cp.async (TILEFUSE_TMA_GATHER=1: by TMA)", false;
    const Var& inner_var = op->vars.back();
    if (uses_var(passes::simplify(SubNode::make(l->indices.back(), inner_var)), inner_var))
      return *why = "the gathered rows are not contiguous", false;
    // The mask: bounds of the tensor itself are the tensor map's (zero
    // fill out of bounds); what is left must select whole rows.
    if (l->mask.defined()) {
      std::vector<Expr> terms;
      conjuncts(l->mask, &terms);
      for (const Expr& t : terms) {
        if (is_own_bounds_check(t, l)) continue;
        if (uses_var(t, inner_var)) return *why = "a mask within the gathered rows", false;
        row_mask = row_mask.defined() ? AndNode::make(row_mask, t) : t;
      }
    }
  } else if (l->mask.defined() && reads_memory(l->mask)) {
    return *why = "a mask that reads memory", false;
  }
  if (op->dst_indices.size() != op->vars.size()) return *why = "destination rank", false;
  for (size_t d = 0; d < op->vars.size(); ++d) {
    const VarNode* v = op->dst_indices[d].as<VarNode>();
    if (v != op->vars[d].get()) return *why = "the destination is not indexed by the copy vars", false;
  }
  std::vector<int64_t> ext;
  for (const Expr& e : op->extents) ext.push_back(const_of(e, "a copy extent"));
  // The box origin: the source indices with every copy var at 0.
  std::vector<Expr> origin;
  for (int k = 0; k < rank; ++k) {
    Expr e = l->indices[k];
    for (const Var& v : op->vars) e = substitute(e, v, make_const(v.dtype(), 0));
    origin.push_back(passes::simplify(e));
  }
  // The shared layout decides the boxes: row-major (one box, no swizzle),
  // `swizzled` with 128-byte rows (one box, the 128-byte swizzle), or
  // `mn_swizzled` (one box per 128-byte column strip, each 128-byte swizzled).
  const SharedInfo& si = shared_.at(op->dst.get());
  const int64_t inner = ext.back(), rows = op->vars.size() == 2 ? ext[0] : 1;
  // (A gathered row is one box of one row: its smem row starts at any
  // multiple of 128 bytes; the 128-byte swizzle is a function of the
  // address, PTX ISA 9.7.9.27 / the tensor map's swizzle modes.)
  int64_t box_inner = inner, strips = 1;
  int swizzle = 0;
  switch (si.layout) {
    case SharedLayout::kRowMajor:
      if (inner * elem % 16 != 0) return *why = "the inner box is not a multiple of 16 bytes", false;
      break;
    case SharedLayout::kSwizzled:
      if (inner * elem != 128) return *why = "swizzled rows of other than 128 bytes", false;
      swizzle = 128;
      break;
    case SharedLayout::kMnSwizzled:
      if (inner * elem % 128 != 0) return *why = "mn_swizzled strips", false;
      box_inner = 128 / elem, strips = inner * elem / 128, swizzle = 128;
      break;
    default:
      return *why = "a layout TMA does not write", false;
  }
  const int64_t align = swizzle ? 1024 : 128;  // a swizzled box starts on its pattern
  if ((si.offset % align) != 0 || (si.tile_elems * elem) % align != 0 ||
      (gather ? (box_inner * elem) % 128 != 0 || strips != 1
              : (rows * box_inner * elem) % align != 0 || rows > 256) ||
      box_inner > 256)
    return *why = "alignment of the stage tiles", false;
  CudaTensorMap m;
  int param = 0;
  for (const KernelParam& p : k_.params) {
    if (p.is_buffer() && p.buffer.same_as(b)) break;
    ++param;
  }
  if (param == static_cast<int>(k_.params.size())) return *why = "not a kernel parameter", false;
  m.param = param;
  m.elem_bytes = elem;
  for (int k = rank; k-- > 0;) m.dims.push_back(shape[k]);
  for (int k = rank - 1; k-- > 0;) m.strides.push_back(strides[k] * elem);
  for (int k = rank; k-- > 0;) {
    int64_t bx = 1;
    if (k == rank - 1) bx = box_inner;
    else if (op->vars.size() == 2 && k == dim_of[0] && !gather) bx = rows;
    m.box.push_back(static_cast<int>(bx));
  }
  m.swizzle_bytes = swizzle;
  for (int64_t st : m.strides)
    if (st % 16 != 0) return *why = "a stride is not a multiple of 16 bytes", false;
  TmaCopy t;
  t.map = static_cast<int>(result_.tensor_maps.size());
  for (int64_t s = 0; s < strips; ++s) {
    TmaOp o;
    for (int k = rank; k-- > 0;) {
      Expr c = gather && k == dim_of[0] ? l->indices[k] : origin[k];
      if (k == rank - 1 && s > 0)
        c = passes::simplify(AddNode::make(c, make_const(c.dtype(), static_cast<double>(s * box_inner))));
      o.coords.push_back(c);
    }
    o.smem_elems = gather ? box_inner : s * rows * box_inner;
    t.ops.push_back(o);
  }
  t.bytes = rows * inner * elem;
  t.gather = gather;
  t.rows = rows;
  if (gather) t.mask = row_mask;
  result_.tensor_maps.push_back(m);
  tma_[op] = t;
  return true;
}

void Emitter::emit_tma_copy(const CopyNode* op) {
  const TmaCopy& t = tma_.at(op);
  const SharedInfo& si = shared_.at(op->dst.get());
  result_.copies.push_back({op->dst.name(), "tma", 16, si.stages});
  if (t.gather) {
    const TmaOp& o = t.ops[0];
    line(fmt::format("// copy {} <- {} (TMA: one {}-byte box per gathered row, tf_map{})",
                     op->dst.name(), op->value.as<LoadNode>()->buffer.name(), t.bytes / t.rows,
                     t.map));
    const std::string r = "tf_g" + std::to_string(tmp_++);
    open(fmt::format("for (int {0} = {1}; {0} < {2}; {0} += {3})", r, tid_sym_, t.rows,
                     threads_sym_));
    const Var& row = op->vars[0];
    nonneg_vars_.insert(row.get());
    line(fmt::format("const int {} = {};", var(row), r));
    // The row coordinate (the gathered one) is the only one reading memory;
    // a masked row reads row -1: out of bounds, zero-filled.
    std::string coords;
    for (const Expr& c : o.coords)
      coords += t.mask.defined() && reads_memory(c)
                    ? fmt::format(", ({}) ? static_cast<int>({}) : -1", expr(t.mask), expr(c))
                    : ", static_cast<int>(" + expr(c) + ")";
    line(fmt::format("tf::tma_load<{}>(&{}[(tf_stage) * {} + {} * {}], &tf_map{}{}, &tf_full[tf_stage]);",
                     o.coords.size(), buf(op->dst), si.tile_elems, var(row), o.smem_elems, t.map,
                     coords));
    close();
    return;
  }
  line(fmt::format("// copy {} <- {} (TMA: {} box{} of {} bytes, tf_map{})", op->dst.name(),
                   op->value.as<LoadNode>()->buffer.name(), t.ops.size(),
                   t.ops.size() > 1 ? "es" : "", t.bytes / static_cast<int64_t>(t.ops.size()),
                   t.map));
  for (const TmaOp& o : t.ops) {
    std::string coords;
    for (const Expr& c : o.coords) coords += ", static_cast<int>(" + expr(c) + ")";
    line(fmt::format("tf::tma_load<{}>(&{}[(tf_stage) * {} + {}], &tf_map{}{}, &tf_full[tf_stage]);",
                     o.coords.size(), buf(op->dst), si.tile_elems, o.smem_elems, t.map, coords));
  }
}

void Emitter::emit_loop_lets(const ForNode* op, const std::vector<std::pair<Var, Expr>>& lets,
                             const std::vector<Stmt>& users, const std::string& k_decl) {
  struct Uses : IRVisitor {
    std::unordered_set<const VarNode*> vars;
    using IRVisitor::visit;
    void visit(const VarNode* v) override { vars.insert(v); }
  } u;
  for (const Stmt& st : users) u.visit_stmt(st);
  std::vector<bool> keep(lets.size(), false);
  for (size_t i = lets.size(); i-- > 0;)
    if (u.vars.count(lets[i].first.get())) {
      keep[i] = true;
      u.visit_expr(lets[i].second);
    }
  if (!k_decl.empty() && u.vars.count(op->var.get())) line(k_decl);
  for (size_t i = 0; i < lets.size(); ++i)
    if (keep[i])
      line(fmt::format("const {} {} = {};", cuda_type(lets[i].first.dtype()), var(lets[i].first),
                       expr(lets[i].second)));
}

void Emitter::emit_warp_specialized(const ForNode* op,
                                    const std::vector<std::pair<Var, Expr>>& lets,
                                    const std::vector<const CopyNode*>& copies, const GemmNode* g) {
  const int stages = op->num_stages;
  const std::string t = cuda_type(op->var.dtype());
  const std::string k = var(op->var);
  const std::string lo = expr(op->min), n = expr(op->extent);
  if (nonneg(op->min)) nonneg_vars_.insert(op->var.get());
  // cp.async copies arrive on the stage's `full` mbarrier when they land
  // (one .noinc arrival per producer thread); register-staged ones store to
  // shared memory, fence for the async proxy and arrive (release) after.
  // TMA copies: producer thread 0 announces the stage's bytes
  // (mbarrier.arrive.expect_tx, one arrival) and issues them; they complete
  // the transaction count as they land.
  bool async_copies = false, sync_copies = false;
  int64_t tma_bytes = 0;
  for (const CopyNode* c : copies) {
    if (tma_.count(c)) {
      tma_bytes += tma_.at(c).bytes;
      continue;
    }
    const std::string mode = copy_mode(c);
    (mode == "cp_async" || mode == "tma" ? async_copies : sync_copies) = true;
  }
  const int full_count = (async_copies ? kProducerThreads : 0) +
                         (sync_copies ? kProducerThreads : 0) + (tma_bytes > 0 ? 1 : 0);
  line(fmt::format(
      "// warp specialization: warpgroup {} (threads {}..{}) issues each stage's copies and "
      "signals the stage's `full` mbarrier; warpgroups 0..{} wait on it, run the stage's wgmma "
      "and release the stage through its `empty` mbarrier ({} stages)",
      mma_threads_ / 128, mma_threads_, mma_threads_ + kProducerThreads - 1,
      mma_threads_ / 128 - 1, stages));
  line(fmt::format("unsigned long long* tf_full = reinterpret_cast<unsigned long long*>(tf_smem + {});",
                   mbar_offset_));
  line(fmt::format("unsigned long long* tf_empty = tf_full + {};", stages));
  open("if (tf_tid == 0)");
  open(fmt::format("for (int tf_s = 0; tf_s < {}; ++tf_s)", stages));
  line(fmt::format("tf::mbar_init(&tf_full[tf_s], {});", full_count));
  line("tf::mbar_init(&tf_empty[tf_s], kMmaThreads);");
  close();
  close();
  line(barrier_line_);
  const std::string it = "tf_it" + std::to_string(tmp_++);
  // The producer warpgroup.
  {
    open("if (tf_tid >= kMmaThreads)");
    line(fmt::format("constexpr int kProducerThreads = {};", kProducerThreads));
    line("const int tf_ptid = tf_tid - kMmaThreads;");
    const int saved_threads = threads_;
    const std::string saved_sym = threads_sym_, saved_tid = tid_sym_;
    threads_ = kProducerThreads, threads_sym_ = "kProducerThreads", tid_sym_ = "tf_ptid";
    std::vector<Stmt> copy_stmts;
    for (const CopyNode* c : copies) copy_stmts.push_back(Stmt(c));
    open(fmt::format("auto tf_issue = [&]({} {}, int tf_stage)", t, k));
    for (const CopyNode* c : copies) stage_expr_[c->dst.get()] = "tf_stage";
    in_producer_ = true;
    emit_loop_lets(op, lets, copy_stmts);
    if (tma_bytes > 0) {
      open("if (tf_ptid == 0)");
      line(fmt::format("tf::mbar_arrive_expect_tx(&tf_full[tf_stage], {});", tma_bytes));
      for (const CopyNode* c : copies)
        if (tma_.count(c) && !tma_.at(c).gather) emit_tma_copy(c);
      close();
      for (const CopyNode* c : copies)
        if (tma_.count(c) && tma_.at(c).gather) emit_tma_copy(c);
    }
    for (const CopyNode* c : copies)
      if (!tma_.count(c)) emit_copy(c, true);
    in_producer_ = false;
    --indent_;
    line("};");
    open(fmt::format("for ({} {} = 0; {} < {}; ++{})", t, it, it, n, it));
    line(fmt::format("const int tf_stage = {} % {};", it, stages));
    line(fmt::format(
        "if ({0} >= {1}) tf::mbar_wait(&tf_empty[tf_stage], ({0} / {1} + 1) & 1);  // tile i - {1} "
        "released",
        it, stages));
    line(fmt::format("tf_issue({} + {}, tf_stage);", lo, it));
    if (sync_copies) {
      line("tf::fence_async_proxy();");
      line("tf::mbar_arrive(&tf_full[tf_stage]);");
    }
    if (async_copies) line("tf::cp_async_mbar_arrive(&tf_full[tf_stage]);");
    close();
    line("tf::cp_async_wait_all();  // its copies land before it exits");
    line("return;");
    close();
    threads_ = saved_threads, threads_sym_ = saved_sym, tid_sym_ = saved_tid;
  }
  // The MMA warpgroups: tile i's wgmma stays in flight while tile i - 1's
  // are waited for and its stage released.
  const std::string c = buf(g->c.buffer), a = buf(g->a.buffer), b = buf(g->b.buffer);
  shared_used_.insert(g->a.buffer.get());
  shared_used_.insert(g->b.buffer.get());
  open(fmt::format("for ({} {} = 0; {} < {}; ++{})", t, it, it, n, it));
  line(fmt::format("const int tf_stage = {} % {};", it, stages));
  line(fmt::format("tf::mbar_wait(&tf_full[tf_stage], ({} / {}) & 1);", it, stages));
  line("tf::fence_async_proxy();");
  line(fmt::format("{}.mma_async({} + tf_stage * {}, {} + tf_stage * {});", c, a,
                   shared_.at(g->a.buffer.get()).tile_elems, b,
                   shared_.at(g->b.buffer.get()).tile_elems));
  line(fmt::format("{}.wait_prior();  // this warpgroup's MMAs of tile i - 1 are done", c));
  line(fmt::format("if ({0} > 0) tf::mbar_arrive(&tf_empty[({0} + {1}) % {2}]);", it, stages - 1,
                   stages));
  close();
  line(fmt::format("{}.wait();", c));
  // From here on only the MMA warpgroups run.
  threads_ = mma_threads_, threads_sym_ = "kMmaThreads";
  barrier_line_ = fmt::format("tf::mma_barrier<{}>();", mma_threads_);
  line(barrier_line_);
  for (const CopyNode* cp : copies) stage_expr_.erase(cp->dst.get());
}

void Emitter::emit_pipelined(const ForNode* op) {
  std::vector<std::pair<Var, Expr>> lets;
  std::vector<const CopyNode*> copies;
  std::vector<Stmt> consumer;
  const bool regular = split_pipelined_body(op, &lets, &copies, &consumer);
  const int stages = std::max(op->num_stages, 1);
  const std::string t = cuda_type(op->var.dtype());
  const std::string k = var(op->var);
  const std::string lo = expr(op->min), n = expr(op->extent);
  if (nonneg(op->min)) nonneg_vars_.insert(op->var.get());
  if (!regular || copies.empty() || stages < 2) {
    const std::string why = copies.empty() ? "no copies"
                            : stages < 2   ? "one stage"
                                           : "irregular body: statements between or after the "
                                             "copies other than the gemm (e.g. an index check "
                                             "of a gather along K)";
    line(fmt::format("// pipelined loop run in order ({})", why));
    if (stages >= 2)
      result_.notes.push_back(fmt::format("loop {} not software-pipelined ({}): its tiles get one stage",
                                          op->var.name(), why));
    for (const CopyNode* c : copies) stage_expr_[c->dst.get()] = "0";
    open(fmt::format("for ({} {} = {}; {} < {} + {}; ++{})", t, k, lo, k, lo, n, k));
    line(barrier_line_);
    for (auto& [v, val] : lets)
      line(fmt::format("const {} {} = {};", cuda_type(v.dtype()), var(v), expr(val)));
    for (const CopyNode* c : copies) emit_copy(c, false);
    line("tf::cp_async_commit();");
    line("tf::cp_async_wait<0>();");
    line(barrier_line_);
    for (const Stmt& s : consumer) stmt(s);
    close();
    line(barrier_line_);
    return;
  }
  const GemmNode* g = consumer.size() == 1 ? consumer[0].as<GemmNode>() : nullptr;
  const GemmInfo* gi = g ? &fragments_.at(g->c.buffer.get()) : nullptr;
  if (op == ws_loop_) {
    emit_warp_specialized(op, lets, copies, g);
    return;
  }
  line(
      fmt::format("// software pipeline: {} stages; iteration i computes tile i while the "
                  "copies of tile i + {} are in flight",
                  stages, stages - 1));
  // wgmma asynchronous to the copies: tile i's MMAs are issued, then tile
  // i + S - 1's copies into the stage tile i - 1 used; each warpgroup waits
  // for its MMAs at the end of the iteration, so after the next barrier
  // every warpgroup is done with tile i's stage.
  const bool wgmma_async = wgmma_async_loop(op, nullptr);
  // Register-staged copies with a fixed slot count are double-buffered in
  // registers: loaded before the consumer runs, stored to their stage after.
  // Not under an asynchronous wgmma: the copies already overlap the MMAs,
  // and the registers are the accumulators'.
  std::vector<std::string> regs(copies.size());
  bool split = false;
  for (size_t c = 0; c < copies.size() && !wgmma_async; ++c) {
    const CopyNode* cp = copies[c];
    const bool reg = copy_mode(cp) == "register";
    if (!reg || copy_trips(cp) == 0) continue;
    regs[c] = "tf_rb" + std::to_string(tmp_++);
    line(fmt::format("{} {}[{}];  // register double buffer of {}", cuda_type(cp->dst.dtype()),
                     regs[c], copy_trips(cp), cp->dst.name()));
    split = true;
  }
  auto emit_lets_for = [&](const std::vector<Stmt>& users, const std::string& k_decl = "") {
    emit_loop_lets(op, lets, users, k_decl);
  };
  std::vector<Stmt> copy_stmts, split_stmts;
  for (size_t c = 0; c < copies.size(); ++c) {
    copy_stmts.push_back(Stmt(copies[c]));
    if (!regs[c].empty())  // the store phase reads only the destination indices
      for (const Expr& e : copies[c]->dst_indices) split_stmts.push_back(EvaluateNode::make(e));
  }
  // The producer: the copies of one iteration into one stage.
  open(fmt::format("auto tf_issue = [&]({} {}, int tf_stage)", t, k));
  for (const CopyNode* c : copies) stage_expr_[c->dst.get()] = "tf_stage";
  emit_lets_for(copy_stmts);
  for (size_t c = 0; c < copies.size(); ++c)
    emit_copy(copies[c], true, regs[c].empty() ? RegPhase::kWhole : RegPhase::kLoad, regs[c]);
  --indent_;
  line("};");
  if (split) {
    open(fmt::format("auto tf_store = [&]({} {}, int tf_stage)", t, k));
    emit_lets_for(split_stmts);
    for (size_t c = 0; c < copies.size(); ++c)
      if (!regs[c].empty()) emit_copy(copies[c], true, RegPhase::kStore, regs[c]);
    --indent_;
    line("};");
  }
  const std::string it = "tf_it" + std::to_string(tmp_++);
  // With 4 or more stages the wgmma loop keeps one MMA group in flight
  // across the barrier (wgmma.wait_group 1): the tensor cores do not wait
  // for the barrier and the copy issue. The stage the copies overwrite is
  // then the one of tile i - 2 (done by every warpgroup: each waited for it
  // before the barrier), so tiles are issued S - 2 ahead instead of S - 1.
  const bool keep_one = wgmma_async && stages >= 4 &&
                        std::getenv("TILEFUSE_WGMMA_WAIT_ALL") == nullptr;
  const int ahead = keep_one ? stages - 2 : stages - 1;
  open(fmt::format("for (int tf_s = 0; tf_s < {}; ++tf_s)", ahead));
  open(fmt::format("if (tf_s < {})", n));
  line(fmt::format("tf_issue({} + tf_s, tf_s);", lo));
  if (split) line(fmt::format("tf_store({} + tf_s, tf_s);", lo));
  close();
  line("tf::cp_async_commit();");
  close();
  const std::string next = fmt::format("{} + {}", it, ahead);
  for (const CopyNode* c : copies) stage_expr_[c->dst.get()] = "tf_stage";
  // The MMA consumer with its fragments software-pipelined (the CUTLASS
  // multistage main loop): while step s is multiplied, step s + 1's
  // fragments load; at the last step of a tile the loop waits for the next
  // tile and loads its first fragments before the last MMAs of this one.
  // The next tile's copies are issued after the first step. Needs two or
  // more k16 steps per tile (so that the issue precedes the wait).
  // TILEFUSE_NO_FRAGMENT_PIPELINE=1 turns it off (for measurements).
  // Only where the second fragment buffer costs no occupancy: with 128 or
  // more accumulators per thread the kernel already holds ~200+ registers.
  // Measured on the H200 (seed, 2048^3 f16): 128x128x32/3/8 (64 per thread)
  // 71.0 us without, 84.1 us with (162 registers: 1 block/SM instead of 2);
  // 128x256x32/3/8 (128 per thread) 68.2 us with.
  // Not for Tf32MmaTile: its f32 tiles take twice the cp.async of f16 ones,
  // and with two fragment sets ptxas spilled 50-110 bytes at 128
  // accumulators (128x256x32/3/8, 256x128x16/4/8; none without).
  const bool frag_pipeline = gi && gi->mma && !gi->wgmma && !gi->tf32 && gi->k_steps() >= 2 &&
                             !split &&
                             gi->bm * gi->bn / threads_ >= 128 && whole_tile_gemm(g) &&
                             shared_.at(g->a.buffer.get()).stages == stages &&
                             shared_.at(g->b.buffer.get()).stages == stages &&
                             std::getenv("TILEFUSE_NO_FRAGMENT_PIPELINE") == nullptr;
  if (wgmma_async) {
    const std::string c = buf(g->c.buffer), a = buf(g->a.buffer), b = buf(g->b.buffer);
    shared_used_.insert(g->a.buffer.get());
    shared_used_.insert(g->b.buffer.get());
    line("// wgmma: tile i's MMAs run while tile i + " + std::to_string(ahead) +
         "'s copies are issued" +
         (keep_one ? "; one MMA group stays in flight across the barrier" : ""));
    open(fmt::format("for ({} {} = 0; {} < {}; ++{})", t, it, it, n, it));
    line(fmt::format("tf::cp_async_wait<{}>();", ahead - 1));
    line(barrier_line_);
    line(fmt::format("const int tf_stage = {} % {};", it, stages));
    line(fmt::format("const bool tf_more = {} < {};", next, n));
    line(fmt::format("{}.mma_async({} + tf_stage * {}, {} + tf_stage * {});", c, a,
                     shared_.at(g->a.buffer.get()).tile_elems, b,
                     shared_.at(g->b.buffer.get()).tile_elems));
    if (keep_one)
      line(fmt::format("{}.wait_prior();  // this warpgroup's MMAs of tile i - 1 are done", c));
    line(fmt::format("if (tf_more) tf_issue({} + {}, ({}) % {});", lo, next, next, stages));
    line("tf::cp_async_commit();");
    if (split)
      line(fmt::format("if (tf_more) tf_store({} + {}, ({}) % {});", lo, next, next, stages));
    // (At the end of the iteration, not the start of the next: a wait at
    // the loop head makes ptxas serialize the wgmma, C7514.)
    if (!keep_one) line(fmt::format("{}.wait();  // this warpgroup's MMAs of tile i", c));
    close();
    line(fmt::format("{}.wait();", c));
  } else if (frag_pipeline) {
    const std::string c = buf(g->c.buffer), a = buf(g->a.buffer), b = buf(g->b.buffer);
    const int64_t ta = shared_.at(g->a.buffer.get()).tile_elems;
    const int64_t tb = shared_.at(g->b.buffer.get()).tile_elems;
    line(fmt::format("// MMA fragments double-buffered across k16 steps and tiles"));
    line(fmt::format("tf::cp_async_wait<{}>();", stages - 2));
    line(barrier_line_);
    line(fmt::format("typename decltype({})::Frags tf_fr[2];", c));
    line(fmt::format("{}.load_frags({}, {}, 0, tf_fr[0]);", c, a, b));
    open(fmt::format("for ({} {} = 0; {} < {}; ++{})", t, it, it, n, it));
    line(fmt::format("const int tf_stage = {} % {};", it, stages));
    line(fmt::format("const bool tf_more = {} < {};", next, n));
    line("#pragma unroll");
    open(fmt::format("for (int tf_kk = 0; tf_kk < decltype({})::kSteps; ++tf_kk)", c));
    line("int tf_rs = tf_stage, tf_rk = tf_kk + 1;");
    open(fmt::format("if (tf_kk == decltype({})::kSteps - 1)", c));
    if (split)
      line(fmt::format("if (tf_more) tf_store({} + {}, ({}) % {});", lo, next, next, stages));
    line(fmt::format("tf::cp_async_wait<{}>();", stages - 2));
    line(barrier_line_);
    line(fmt::format("tf_rs = ({} + 1) % {};", it, stages));
    line("tf_rk = 0;");
    close();
    line(fmt::format(
        "{}.load_frags({} + tf_rs * {}, {} + tf_rs * {}, tf_rk, tf_fr[(tf_kk + 1) % 2]);", c, a, ta,
        b, tb));
    open("if (tf_kk == 0)");
    line(fmt::format("if (tf_more) tf_issue({} + {}, ({}) % {});", lo, next, next, stages));
    line("tf::cp_async_commit();");
    close();
    line(fmt::format("{}.mma_frags(tf_fr[tf_kk % 2]);", c));
    close();
    close();
  } else {
    open(fmt::format("for ({} {} = 0; {} < {}; ++{})", t, it, it, n, it));
    line(fmt::format("tf::cp_async_wait<{}>();", stages - 2));
    line(barrier_line_);
    line(fmt::format("const bool tf_more = {} < {};", next, n));
    line(fmt::format("if (tf_more) tf_issue({} + {}, ({}) % {});", lo, next, next, stages));
    line("tf::cp_async_commit();");
    line(fmt::format("const int tf_stage = {} % {};", it, stages));
    emit_lets_for(consumer, fmt::format("const {} {} = {} + {};", t, k, lo, it));
    for (const Stmt& s : consumer) stmt(s);
    if (split)
      line(fmt::format("if (tf_more) tf_store({} + {}, ({}) % {});", lo, next, next, stages));
    close();
  }
  line("tf::cp_async_wait<0>();");
  line(barrier_line_);
  for (const CopyNode* c : copies) stage_expr_.erase(c->dst.get());
}

void Emitter::emit_fragment_nest(const ForNode* op, const BufferNode* frag) {
  // for i in parallel { lets; for j in parallel { body } } over frag[i, j]:
  // one iteration per accumulator element the thread owns.
  const ForNode* inner = nullptr;
  std::function<void(const Stmt&)> find = [&](const Stmt& s) {
    if (const SeqNode* q = s.as<SeqNode>()) {
      for (const Stmt& t : q->stmts) find(t);
    } else if (const LetStmtNode* l = s.as<LetStmtNode>()) {
      find(l->body);
    } else if (const ForNode* f = s.as<ForNode>(); f && f->for_kind == ForKind::Parallel) {
      TF_CHECK(!inner, "cuda emitter: two inner loops in a fragment nest");
      inner = f;
    }
  };
  find(op->body);
  TF_CHECK(inner != nullptr && frag->shape.size() == 2 &&
               const_of(op->extent, "a parallel extent") ==
                   const_of(frag->shape[0], "a fragment extent") &&
               const_of(inner->extent, "a parallel extent") ==
                   const_of(frag->shape[1], "a fragment extent"),
           "cuda emitter: a fragment is accessed by a nest that does not cover it in 2-D");
  const std::string f = buf(Buffer(frag));
  frag_ = frag;
  frag_vars_ = {op->var.get(), inner->var.get()};
  frag_e_ = "tf_e" + std::to_string(tmp_++);
  nonneg_vars_.insert(op->var.get());
  nonneg_vars_.insert(inner->var.get());
  const bool saved = in_threads_;
  in_threads_ = true;
  // The statements around the inner loop run once per element (lets and
  // checks are pure).
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (const LetStmtNode* l = s.as<LetStmtNode>()) {
      if (nonneg(l->value)) nonneg_vars_.insert(l->var.get());
      line(
          fmt::format("const {} {} = {};", cuda_type(l->var.dtype()), var(l->var), expr(l->value)));
      walk(l->body);
    } else if (const SeqNode* q = s.as<SeqNode>()) {
      for (const Stmt& t : q->stmts) walk(t);
    } else if (s.get() == inner) {
      walk(inner->body);
    } else {
      stmt(s);
    }
  };
  // Paired stores: an MmaTile thread owns column pairs (e, e + 1); when the
  // nest ends in one global store, both elements are computed and stored
  // with one access of twice the width where the two addresses are adjacent,
  // aligned and both unmasked (checked at run time), else one by one.
  const StoreNode* store = nullptr;
  bool pairable = fragments_.at(frag).mma;
  std::function<void(const Stmt&)> scan = [&](const Stmt& s) {
    if (const LetStmtNode* l = s.as<LetStmtNode>()) {
      scan(l->body);
    } else if (const SeqNode* q = s.as<SeqNode>()) {
      for (const Stmt& t : q->stmts) scan(t);
    } else if (s.get() == inner) {
      scan(inner->body);
    } else if (const StoreNode* st = s.as<StoreNode>();
               st && !store && st->buffer.scope() == MemScope::Global) {
      store = st;
    } else if (!s.as<CheckNode>()) {
      pairable = false;
    }
  };
  scan(op->body);
  pairable = pairable && store != nullptr;
  // Opens the loop over the thread's element pairs (e, e + 1) and captures
  // both elements' mask, address and value into tf_ok<k>, tf_p<k>, tf_v<k>;
  // returns the pair's first element index. The caller stores and closes.
  auto open_pair_loop = [&](const std::string& t) {
    line("#pragma unroll");
    open(fmt::format("for (int {} = 0; {} < decltype({})::kElems; {} += 2)", frag_e_, frag_e_, f,
                     frag_e_));
    const std::string e0 = frag_e_;
    line(fmt::format("bool tf_ok0 = false, tf_ok1 = false;"));
    line(fmt::format("{0}* tf_p0 = nullptr; {0}* tf_p1 = nullptr; {0} tf_v0{{}}, tf_v1{{}};", t));
    for (int half = 0; half < 2; ++half) {
      frag_e_ = half == 0 ? e0 : "(" + e0 + " + 1)";
      open("");
      line(fmt::format("const int {} = {}.row({});", var(op->var), f, frag_e_));
      line(fmt::format("const int {} = {}.col({});", var(inner->var), f, frag_e_));
      capture_store_ = half;
      walk(op->body);
      capture_store_ = -1;
      close();
    }
    frag_e_ = e0;
    return e0;
  };
  // Staged through shared memory (TILEFUSE_NO_STAGED_EPILOGUE=1: not): the
  // paired values go to a padded [BM][BN + 16 B] tile of the output dtype
  // (its rows 4 banks apart: the 8 rows of a fragment store hit 32 banks),
  // then every thread stores whole 16-byte row chunks to global memory,
  // coalesced, where the chunk's 16 / sizeof(T) addresses are contiguous,
  // aligned and unmasked (else element by element). Only where the
  // address and mask need no loaded value (the nest's lets read no memory
  // and no fragment), the nest has no check, and the tile fits the kernel's
  // shared memory below the mbarriers (the operand stages are dead by then).
  const int64_t out_bytes = store ? dtype_size(store->buffer.dtype()) : 0;
  const int64_t pitch = store ? const_of(frag->shape[1], "a fragment extent") + 16 / out_bytes : 0;
  const int64_t stage_bytes =
      store ? const_of(frag->shape[0], "a fragment extent") * pitch * out_bytes : 0;
  std::string not_staged;
  if (std::getenv("TILEFUSE_NO_STAGED_EPILOGUE") != nullptr)
    not_staged = "TILEFUSE_NO_STAGED_EPILOGUE is set";
  else if (stage_bytes > (warp_specialized_ ? mbar_offset_ : result_.dynamic_shared_bytes))
    not_staged = fmt::format("its {}-byte tile exceeds the kernel's shared memory", stage_bytes);
  // The copy-out needs only the store's address and mask: the nest's lets
  // they read (directly or through other lets), which must read no memory
  // (the values, bias loads included, are computed once, in the first phase).
  std::vector<const LetStmtNode*> nest_lets;
  std::vector<bool> address_let;
  if (pairable && not_staged.empty()) {
    std::function<void(const Stmt&)> collect = [&](const Stmt& st) {
      if (const LetStmtNode* l = st.as<LetStmtNode>()) {
        nest_lets.push_back(l);
        collect(l->body);
      } else if (const SeqNode* q = st.as<SeqNode>()) {
        for (const Stmt& t : q->stmts) collect(t);
      } else if (st.get() == inner) {
        collect(inner->body);
      }
    };
    collect(op->body);
    struct Uses : IRVisitor {
      std::unordered_set<const VarNode*> vars;
      using IRVisitor::visit;
      void visit(const VarNode* v) override { vars.insert(v); }
    } u;
    bool reads = store->mask.defined() && reads_memory(store->mask);
    for (const Expr& e : store->indices) {
      reads = reads || reads_memory(e);
      u.visit_expr(e);
    }
    if (store->mask.defined()) u.visit_expr(store->mask);
    address_let.assign(nest_lets.size(), false);
    for (size_t i = nest_lets.size(); i-- > 0;)
      if (u.vars.count(nest_lets[i]->var.get())) {
        address_let[i] = true;
        reads = reads || reads_memory(nest_lets[i]->value);
        u.visit_expr(nest_lets[i]->value);
      }
    if (reads) not_staged = "the store's address or mask reads memory";
    // Values that load (a bias) are not staged: at 128x256 under a
    // warp-specialized kernel's 168 registers that spilled 40-296 bytes
    // (ptxas, the bias + relu edge program of tests/common/ws_programs.h).
    for (const LetStmtNode* l : nest_lets)
      if (not_staged.empty() && reads_memory(l->value))
        not_staged = "a value of the nest loads memory (staged, such epilogues spilled)";
  }
  const bool staged = pairable && not_staged.empty() && out_bytes >= 1 && out_bytes <= 8 &&
                      16 % out_bytes == 0;
  if (pairable)
    result_.notes.push_back(
        staged ? "epilogue into " + store->buffer.name() +
                     ": staged through shared memory, stored in 16-byte row chunks"
               : "epilogue into " + store->buffer.name() +
                     ": paired stores from the accumulators, not staged: " + not_staged);
  if (pairable && staged) {
    const std::string t = cuda_type(store->buffer.dtype());
    const int64_t vec = 16 / out_bytes;
    const int64_t rows = const_of(frag->shape[0], "a fragment extent");
    const int64_t cols = const_of(frag->shape[1], "a fragment extent");
    barrier();  // every warp is done with the shared memory the tile reuses
    line(fmt::format("// epilogue staged in shared memory ({} x {} {}, row pitch {}), stored in "
                     "{}-byte row chunks",
                     rows, cols, t, pitch, 16));
    line(fmt::format("{0}* tf_es = reinterpret_cast<{0}*>(tf_smem);", t));
    const std::string e0 = open_pair_loop(t);
    line("(void)tf_ok0; (void)tf_ok1; (void)tf_p0; (void)tf_p1;");
    line(fmt::format("tf::store_pair(&tf_es[{0}.row({1}) * {2} + {0}.col({1})], tf_v0, tf_v1);", f,
                     e0, pitch));
    close();
    barrier();
    // The copy-out: chunk c is row c / (cols / vec), columns (c % (cols / vec)) * vec + 0..vec-1.
    frag_ = nullptr;  // (the fragment is not read here)
    const std::string c = "tf_c" + std::to_string(tmp_++);
    thread_loop(rows * cols / vec, c, [&] {
      line(fmt::format("const int tf_row = {} / {};", c, cols / vec));
      line(fmt::format("const int tf_col = ({} % {}) * {};", c, cols / vec, vec));
      line("bool tf_ok[" + std::to_string(vec) + "];");
      line(fmt::format("{}* tf_p[{}];", t, vec));
      for (int64_t l = 0; l < vec; ++l) {
        open("");
        line(fmt::format("const int {} = tf_row;", var(op->var)));
        line(fmt::format("const int {} = tf_col + {};", var(inner->var), l));
        for (size_t i = 0; i < nest_lets.size(); ++i)
          if (address_let[i])
            line(fmt::format("const {} {} = {};", cuda_type(nest_lets[i]->var.dtype()),
                             var(nest_lets[i]->var), expr(nest_lets[i]->value)));
        line(fmt::format("tf_ok[{}] = {};", l,
                         store->mask.defined() ? expr(store->mask) : "true"));
        line(fmt::format("tf_p[{}] = {};", l, address(store->buffer, store->indices)));
        close();
      }
      std::string all = "tf_ok[0]";
      for (int64_t l = 1; l < vec; ++l)
        all += fmt::format(" && tf_ok[{0}] && tf_p[{0}] == tf_p[0] + {0}", l);
      line(fmt::format("const {}* tf_src = &tf_es[tf_row * {} + tf_col];", t, pitch));
      open(fmt::format("if ({} && tf::aligned16(tf_p[0]))", all));
      line("tf::store16(tf_p[0], tf_src);");
      --indent_;
      line("} else {");
      ++indent_;
      line("#pragma unroll");
      open(fmt::format("for (int tf_l = 0; tf_l < {}; ++tf_l)", vec));
      line("if (tf_ok[tf_l]) *tf_p[tf_l] = tf_src[tf_l];");
      close();
      close();
    });
    in_threads_ = saved;
    frag_vars_.clear();
    return;
  }
  if (pairable) {
    const std::string t = cuda_type(store->buffer.dtype());
    const std::string e0 = open_pair_loop(t);
    line("if (tf_ok0 && tf_ok1 && tf_p1 == tf_p0 + 1 && tf::aligned_pair(tf_p0)) {");
    line("  tf::store_pair(tf_p0, tf_v0, tf_v1);");
    line("} else {");
    line("  if (tf_ok0) *tf_p0 = tf_v0;");
    line("  if (tf_ok1) *tf_p1 = tf_v1;");
    line("}");
  } else {
    line("#pragma unroll");
    open(fmt::format("for (int {} = 0; {} < decltype({})::kElems; ++{})", frag_e_, frag_e_, f,
                     frag_e_));
    line(fmt::format("const int {} = {}.row({});", var(op->var), f, frag_e_));
    line(fmt::format("const int {} = {}.col({});", var(inner->var), f, frag_e_));
    walk(op->body);
  }
  close();
  in_threads_ = saved;
  frag_ = nullptr;
  frag_vars_.clear();
}

void Emitter::emit_parallel(const ForNode* op) {
  FragmentUse fu;
  fu.visit_stmt(Stmt(op));
  if (fu.fragment) {
    emit_fragment_nest(op, fu.fragment);
    return;
  }
  if (in_threads_) {  // already distributed: every thread runs this loop itself
    open(fmt::format("for (int {} = 0; {} < {}; ++{})", var(op->var), var(op->var),
                     expr(op->extent), var(op->var)));
    if (nonneg(op->min)) nonneg_vars_.insert(op->var.get());
    stmt(op->body);
    close();
    return;
  }
  // Flatten the chain of parallel loops whose bodies are lets / checks
  // around exactly one inner parallel loop.
  std::vector<const ForNode*> chain{op};
  for (;;) {
    Stmt s = chain.back()->body;
    const ForNode* next = nullptr;
    bool only_pure = true;
    std::function<void(const Stmt&)> walk = [&](const Stmt& t) {
      if (const LetStmtNode* l = t.as<LetStmtNode>()) {
        walk(l->body);
      } else if (const SeqNode* q = t.as<SeqNode>()) {
        for (const Stmt& u : q->stmts) walk(u);
      } else if (const ForNode* f = t.as<ForNode>(); f && f->for_kind == ForKind::Parallel) {
        if (next) only_pure = false;
        next = f;
      } else if (t.as<CheckNode>()) {
      } else {
        only_pure = false;
      }
    };
    walk(s);
    if (!next || !only_pure) break;
    chain.push_back(next);
  }
  std::vector<int64_t> ext;
  int64_t total = 1;
  for (const ForNode* f : chain) {
    TF_CHECK(as_const_int(f->min) && *as_const_int(f->min) == 0,
             "cuda emitter: a parallel loop that does not start at 0");
    ext.push_back(const_of(f->extent, "a parallel extent"));
    total *= ext.back();
    nonneg_vars_.insert(f->var.get());
  }
  std::string v = "tf_v" + std::to_string(tmp_++);
  std::unordered_map<const ForNode*, std::string> coord;
  int64_t stride = total;
  for (size_t d = 0; d < chain.size(); ++d) {
    stride /= ext[d];
    std::string x = stride == 1 ? v : "(" + v + " / " + std::to_string(stride) + ")";
    if (d > 0) x += " % " + std::to_string(ext[d]);
    coord[chain[d]] = x;
  }
  thread_loop(total, v, [&] {
    std::function<void(const Stmt&)> walk = [&](const Stmt& t) {
      if (const ForNode* f = t.as<ForNode>(); f && coord.count(f)) {
        line(fmt::format("const int {} = {};", var(f->var), coord.at(f)));
        walk(f->body);
      } else if (const LetStmtNode* l = t.as<LetStmtNode>()) {
        if (nonneg(l->value)) nonneg_vars_.insert(l->var.get());
        line(fmt::format("const {} {} = {};", cuda_type(l->var.dtype()), var(l->var),
                         expr(l->value)));
        walk(l->body);
      } else if (const SeqNode* q = t.as<SeqNode>()) {
        for (const Stmt& u : q->stmts) walk(u);
      } else {
        stmt(t);
      }
    };
    walk(Stmt(op));
  });
}

void Emitter::emit_for(const ForNode* op) {
  switch (op->for_kind) {
    case ForKind::Pipelined:
      emit_pipelined(op);
      return;
    case ForKind::Parallel:
      emit_parallel(op);
      return;
    case ForKind::Unrolled:
      line("#pragma unroll");
      [[fallthrough]];
    case ForKind::Serial: {
      const std::string t = cuda_type(op->var.dtype()), v = var(op->var);
      if (nonneg(op->min)) nonneg_vars_.insert(op->var.get());
      open(fmt::format("for ({} {} = {}; {} < {} + {}; ++{})", t, v, expr(op->min), v,
                       expr(op->min), expr(op->extent), v));
      ++loop_depth_;
      stmt(op->body);
      --loop_depth_;
      close();
      return;
    }
  }
}

void Emitter::stmt(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::For:
      emit_for(s.as<ForNode>());
      return;
    case StmtKind::IfThenElse: {
      const IfThenElseNode* op = s.as<IfThenElseNode>();
      open("if (" + expr(op->cond) + ")");
      stmt(op->then_case);
      if (op->else_case.defined()) {
        --indent_;
        line("} else {");
        ++indent_;
        stmt(op->else_case);
      }
      close();
      return;
    }
    case StmtKind::LetStmt: {
      const LetStmtNode* op = s.as<LetStmtNode>();
      if (nonneg(op->value)) nonneg_vars_.insert(op->var.get());
      line(fmt::format("const {} {} = {};", cuda_type(op->var.dtype()), var(op->var),
                       expr(op->value)));
      stmt(op->body);
      return;
    }
    case StmtKind::Store: {
      const StoreNode* op = s.as<StoreNode>();
      if (capture_store_ >= 0) {
        const int k = capture_store_;
        line(fmt::format("tf_ok{} = {};", k, op->mask.defined() ? expr(op->mask) : "true"));
        line(fmt::format("tf_p{} = {};", k, address(op->buffer, op->indices)));
        line(fmt::format("tf_v{} = {};", k, expr(op->value)));
        return;
      }
      std::string st = element(op->buffer, op->indices) + " = " + expr(op->value) + ";";
      line(op->mask.defined() ? "if (" + expr(op->mask) + ") " + st : st);
      return;
    }
    case StmtKind::HookStore:
      TF_CHECK(false, "cuda emitter: a store_output hook was not inlined");
      return;
    case StmtKind::Copy: {
      // A copy outside a pipelined loop (e.g. a K loop of one iteration
      // that simplify removed) is synchronous: barriers before (earlier
      // readers of the buffer are done) and after (its data is visible).
      const CopyNode* op = s.as<CopyNode>();
      const bool shared = op->dst.scope() == MemScope::Shared;
      // (Inside a loop the copy runs again after later readers: always.)
      if (shared && (loop_depth_ > 0 || shared_used_.count(op->dst.get()))) barrier();
      emit_copy(op, false);
      if (result_.copies.back().mode == "cp_async") {
        line("tf::cp_async_commit();");
        line("tf::cp_async_wait<0>();");
      }
      if (shared) barrier();
      return;
    }
    case StmtKind::Gemm: {
      const GemmNode* op = s.as<GemmNode>();
      TF_CHECK(!op->trans_a && !op->trans_b && op->a.prefix.empty() && op->b.prefix.empty() &&
                   op->c.prefix.empty(),
               "cuda emitter: a transposed or prefixed gemm operand");
      auto tile = [&](const Buffer& b) {
        return buf(b) + (shared_.at(b.get()).stages > 1
                             ? " + (" + stage_expr_.at(b.get()) + ") * " +
                                   std::to_string(shared_.at(b.get()).tile_elems)
                             : "");
      };
      shared_used_.insert(op->a.buffer.get());
      shared_used_.insert(op->b.buffer.get());
      line(fmt::format("{}.mma({}, {});", buf(op->c.buffer), tile(op->a.buffer),
                       tile(op->b.buffer)));
      return;
    }
    case StmtKind::Fill: {
      const FillNode* op = s.as<FillNode>();
      if (op->buffer.scope() == MemScope::Fragment) {
        line(fmt::format("{}.fill({});", buf(op->buffer), expr(op->value)));
      } else if (op->buffer.scope() == MemScope::Local) {
        line(fmt::format("for (int tf_f = 0; tf_f < {}; ++tf_f) {}[tf_f] = {};", numel(op->buffer),
                         buf(op->buffer), expr(op->value)));
      } else {
        TF_CHECK(op->buffer.scope() == MemScope::Shared, "cuda emitter: fill of a global buffer");
        const SharedInfo& info = shared_.at(op->buffer.get());
        std::string v = "tf_v" + std::to_string(tmp_++);
        std::string val = expr(op->value);
        thread_loop(info.tile_elems * info.stages, v,
                    [&] { line(fmt::format("{}[{}] = {};", buf(op->buffer), v, val)); });
      }
      return;
    }
    case StmtKind::Check:
      emit_check(s.as<CheckNode>());
      return;
    case StmtKind::Barrier:
      line(barrier_line_);
      return;
    case StmtKind::Seq:
      for (const Stmt& t : s.as<SeqNode>()->stmts) stmt(t);
      return;
    case StmtKind::Allocate:
      emit_alloc(s.as<AllocateNode>());
      return;
    case StmtKind::Evaluate:
      line("(void)(" + expr(s.as<EvaluateNode>()->value) + ");");
      return;
  }
}

CudaKernel Emitter::run() {
  TF_CHECK(target_.is_cuda(), "emit_cuda: target " + target_.name() + " is not a CUDA target");
  result_.name = k_.name;
  result_.target = target_;
  int warps = 4;
  if (auto it = k_.attrs.find("num_warps"); it != k_.attrs.end())
    warps = static_cast<int>(std::get<int64_t>(it->second));
  TF_CHECK(warps >= 1 && warps <= 32, "emit_cuda: num_warps out of range");

  Prescan scan;
  scan.visit_stmt(k_.body);
  // lower_gemm: the tile family and warp arrangement of each gemm.
  std::unordered_map<const BufferNode*, int> mma_operands;  // shared tile -> swizzle unit
  std::unordered_set<const BufferNode*> wgmma_a, wgmma_b;   // K-major / MN-major wgmma operands
  std::vector<GemmInfo> infos;
  for (const GemmNode* g : scan.gemms) {
    GemmInfo gi;
    gi.node = g;
    const Buffer &a = g->a.buffer, &b = g->b.buffer, &c = g->c.buffer;
    TF_CHECK(a.rank() == 2 && b.rank() == 2 && c.rank() == 2 && a.scope() == MemScope::Shared &&
                 b.scope() == MemScope::Shared && c.scope() == MemScope::Fragment &&
                 a.dtype() == b.dtype(),
             "emit_cuda: gemm operands must be 2-D shared tiles of one dtype and a fragment");
    gi.bm = static_cast<int>(const_of(a->shape[0], "BLOCK_M"));
    gi.bk = static_cast<int>(const_of(a->shape[1], "BLOCK_K"));
    gi.bn = static_cast<int>(const_of(b->shape[1], "BLOCK_N"));
    gi.mma = is_mma_dtype(a.dtype()) && c.dtype() == DType::F32 && gi.bk % 16 == 0;
    // f32 operands on TF32 tensor cores only when allowed (PTX ISA
    // 9.7.14.5.14: mma.sync m16n8k8 .tf32 needs sm_80, every CUDA target).
    gi.tf32 = options_.allow_tf32 && a.dtype() == DType::F32 && c.dtype() == DType::F32 &&
              gi.bk % 8 == 0;
    gi.mma = gi.mma || gi.tf32;
    infos.push_back(gi);
  }
  // A fragment no gemm accumulates into (its K loop was empty and removed)
  // still holds its fill: a plain FMA tile of its own shape.
  for (const AllocateNode* al : scan.allocs) {
    const Buffer& b = al->buffer;
    if (b.scope() != MemScope::Fragment) continue;
    bool used = false;
    for (const GemmNode* g : scan.gemms) used |= g->c.buffer.same_as(b);
    if (used) continue;
    TF_CHECK(b.rank() == 2, "emit_cuda: a fragment that is not 2-D");
    GemmInfo gi;
    gi.c_only = b;
    gi.bm = static_cast<int>(const_of(b->shape[0], "a fragment extent"));
    gi.bn = static_cast<int>(const_of(b->shape[1], "a fragment extent"));
    gi.bk = 16;
    infos.push_back(gi);
  }
  // One block size for the kernel: the smallest any gemm tile allows.
  for (GemmInfo& gi : infos) {
    if (gi.mma) {
      auto [wm, wn] = arrange_warps(gi.bm, gi.bn, warps);
      if (wm == 0) {
        gi.mma = false;  // no 16x16 warp tile fits: the exact FMA path
        if (gi.tf32)
          result_.notes.push_back(fmt::format(
              "allow_tf32: the {}x{} tile has no 16x16 warp tile: exact FMA instead", gi.bm,
              gi.bn));
        gi.tf32 = false;
      } else if (wm * wn < warps) {
        result_.notes.push_back(
            fmt::format("num_warps {} -> {}: a {}x{} tile has only {} warp tiles of 16x16 or more",
                        warps, wm * wn, gi.bm, gi.bn, wm * wn));
        warps = wm * wn;
      }
    }
    if (!gi.mma) {
      while (warps > 1 && (warps * 32 % std::min(gi.bn, 16) != 0 ||
                           gi.bm % (warps * 32 / std::min(gi.bn, 16)) != 0 ||
                           gi.bn % std::min(gi.bn, 16) != 0)) {
        result_.notes.push_back(
            fmt::format("num_warps {} -> {}: the {}x{} FMA tile", warps, warps / 2, gi.bm, gi.bn));
        warps /= 2;
      }
    }
  }
  threads_ = warps * 32;
  // lower_gemm on sm_90a: wgmma where the tile allows it (TILEFUSE_NO_WGMMA=1
  // keeps mma.sync, to compare).
  const bool wgmma_off = std::getenv("TILEFUSE_NO_WGMMA") != nullptr;
  for (GemmInfo& gi : infos) {
    if (!gi.node || !gi.mma || gi.tf32 || !target_.has_wgmma()) continue;
    const int64_t row_bytes = int64_t{gi.bk} * dtype_size(gi.node->a.buffer.dtype());
    auto [wg_m, wg_n] = arrange_warpgroups(gi.bm, gi.bn, warps);
    std::string why_not;
    if (wgmma_off)
      why_not = "TILEFUSE_NO_WGMMA is set";
    else if (row_bytes != 128)
      why_not = fmt::format("BLOCK_K {} ({} bytes per row; the wgmma path takes 128)", gi.bk,
                            row_bytes);
    else if (wg_m == 0)
      why_not = fmt::format(
          "no warpgroup tile of a {}x{} block with {} warps (WM a multiple of 64, WN 64, 128 or "
          "256, at most 128 accumulators per thread)",
          gi.bm, gi.bn, warps);
    else if (!whole_tile_gemm(gi.node) || gi.node->a.buffer.same_as(gi.node->b.buffer))
      why_not = "the gemm's operands are not two whole tiles";
    if (!why_not.empty()) {
      result_.notes.push_back("mma.sync, not wgmma: " + why_not);
      continue;
    }
    gi.wgmma = true;
    gi.warps_m = wg_m, gi.warps_n = wg_n;
    barrier_line_ = "tf::async_barrier();";
  }
  for (GemmInfo& gi : infos) {
    if (!gi.node) {
      const Buffer& c = gi.c_only;
      gi.tile_type = fmt::format("tf::SimtTile<{0}, {0}, {1}, {2}, {3}, {4}>", cuda_type(c.dtype()),
                                 gi.bm, gi.bn, gi.bk, threads_);
      fragments_[c.get()] = gi;
      result_.notes.push_back("fragment " + c.name() + " has no gemm (empty K loop): fill only");
      continue;
    }
    const Buffer &a = gi.node->a.buffer, &c = gi.node->c.buffer;
    if (gi.wgmma) {
      gi.tile_type = fmt::format("tf::WgmmaTile<{}, {}, {}, {}, {}, {}>", cuda_type(a.dtype()),
                                 gi.bm, gi.bn, gi.bk, gi.warps_m, gi.warps_n);
      wgmma_a.insert(gi.node->a.buffer.get());
      wgmma_b.insert(gi.node->b.buffer.get());
    } else if (gi.mma) {
      std::tie(gi.warps_m, gi.warps_n) = arrange_warps(gi.bm, gi.bn, warps);
      if (gi.tf32) {
        gi.tile_type = fmt::format("tf::Tf32MmaTile<{}, {}, {}, {}, {}>", gi.bm, gi.bn, gi.bk,
                                   gi.warps_m, gi.warps_n);
        result_.notes.push_back(fmt::format(
            "allow_tf32: the f32 gemm into {} runs on TF32 tensor cores (operands rounded to "
            "10 mantissa bits)",
            c.name()));
      } else {
        gi.tile_type = fmt::format("tf::MmaTile<{}, {}, {}, {}, {}, {}>", cuda_type(a.dtype()),
                                   gi.bm, gi.bn, gi.bk, gi.warps_m, gi.warps_n);
      }
      // A tile feeding two gemms would need one layout for both.
      auto swizzle = [&](const Buffer& t, int unit) {
        auto [it, fresh] = mma_operands.emplace(t.get(), unit);
        TF_CHECK(fresh || it->second == unit,
                 "emit_cuda: shared tile " + t.name() + " feeds MMA gemms of two layouts");
      };
      swizzle(gi.node->a.buffer, kMmaSwizzleUnit);
      swizzle(gi.node->b.buffer, gi.tf32 ? kTf32BSwizzleUnit : kMmaSwizzleUnit);
    } else {
      gi.tile_type = fmt::format("tf::SimtTile<{}, {}, {}, {}, {}, {}>", cuda_type(a.dtype()),
                                 cuda_type(c.dtype()), gi.bm, gi.bn, gi.bk, threads_);
    }
    TF_CHECK(!fragments_.count(c.get()), "emit_cuda: two gemms accumulate into one fragment");
    fragments_[c.get()] = gi;
    CudaGemm rg;
    rg.family = gi.wgmma  ? fmt::format("wgmma.m64n{}k16", gi.bn / gi.warps_n)
                : gi.tf32 ? "mma.sync.m16n8k8.tf32"
                : gi.mma  ? "mma.sync.m16n8k16"
                          : "simt.fma";
    rg.dtype = std::string(dtype_name(a.dtype()));
    rg.block_m = gi.bm, rg.block_n = gi.bn, rg.block_k = gi.bk;
    rg.warps_m = gi.warps_m, rg.warps_n = gi.warps_n;
    if (gi.mma) {
      rg.elems_per_thread = gi.bm * gi.bn / threads_;
    } else {
      rg.elems_per_thread = gi.bm * gi.bn / threads_;
    }
    result_.gemms.push_back(rg);
  }
  // layout: shared buffers, their rings and offsets (128-byte aligned).
  int64_t offset = 0;
  for (const AllocateNode* al : scan.allocs) {
    const Buffer& b = al->buffer;
    if (b.scope() != MemScope::Shared) continue;
    SharedInfo info;
    auto st = scan.staged.find(b.get());
    info.stages = st == scan.staged.end() ? 1 : st->second;
    const bool wgmma_operand = wgmma_a.count(b.get()) || wgmma_b.count(b.get());
    if (wgmma_b.count(b.get())) {
      info.layout = SharedLayout::kMnSwizzled;
    } else if (wgmma_a.count(b.get())) {
      info.layout = SharedLayout::kSwizzled;
    } else if (auto m = mma_operands.find(b.get()); m != mma_operands.end()) {
      info.layout =
          m->second == kMmaSwizzleUnit ? SharedLayout::kSwizzled : SharedLayout::kSwizzled32;
    }
    info.tile_elems = numel(b);
    // wgmma's swizzle is a function of address bits [4, 10): its tiles (and
    // every stage, a multiple of 1024 bytes) start 1024-byte aligned.
    const int64_t align = wgmma_operand ? 1024 : 128;
    offset = (offset + align - 1) / align * align;
    info.offset = offset;
    const int64_t bytes = info.tile_elems * info.stages * dtype_size(b.dtype());
    TF_CHECK(!wgmma_operand || info.tile_elems * dtype_size(b.dtype()) % 1024 == 0,
             "emit_cuda: a wgmma tile that is not a multiple of 1024 bytes");
    offset += (bytes + 127) / 128 * 128;
    shared_[b.get()] = info;
    result_.shared.push_back({b.name(), layout_name(info.layout), info.stages, info.offset, bytes});
  }
  // Warp specialization of the wgmma main loop (TILEFUSE_NO_WARP_SPECIALIZE=1
  // keeps every warp copying and multiplying, to compare): a producer
  // warpgroup after the MMA warpgroups, and two mbarriers per stage.
  // Only where every copy of the loop is asynchronous (cp.async or TMA): a
  // register-staged copy (a conversion, dequant or transposed gather) in a
  // producer held to the 168 registers of a 384-thread block spilled
  // 400-3000 bytes (fresh-user finding), where the same copies spread over
  // all warps do not. And at most two MMA warpgroups: with the producer a
  // 640-thread block has 96 registers a thread, too few for the wgmma tile.
  mma_threads_ = threads_;
  const GemmNode* ws_gemm = nullptr;
  std::string no_ws;
  const ForNode* ws_candidate = top_level_pipelined(k_.body);
  if (ws_candidate && wgmma_async_loop(ws_candidate, &ws_gemm)) {
    std::vector<std::pair<Var, Expr>> lets;
    std::vector<const CopyNode*> copies;
    std::vector<Stmt> consumer;
    split_pipelined_body(ws_candidate, &lets, &copies, &consumer);
    for (const CopyNode* c : copies) {
      const std::string mode = copy_mode(c);
      if (mode != "cp_async" && mode != "tma")
        no_ws = "copy " + c->dst.name() + " is register-staged (its producer would spill)";
    }
    if (mma_threads_ > 256) no_ws = "more than two MMA warpgroups";
    if (std::getenv("TILEFUSE_NO_WARP_SPECIALIZE") != nullptr)
      no_ws = "TILEFUSE_NO_WARP_SPECIALIZE is set";
    if (!no_ws.empty()) result_.notes.push_back("wgmma main loop not warp-specialized: " + no_ws);
  }
  if (const ForNode* f = ws_candidate; f && ws_gemm && no_ws.empty()) {
    warp_specialized_ = true;
    ws_loop_ = f;
    offset = (offset + 7) / 8 * 8;
    mbar_offset_ = offset;
    offset += 2 * 8 * int64_t{f->num_stages};
    threads_ = mma_threads_ + kProducerThreads;
    result_.producer_threads = kProducerThreads;
    // Its "tma" copies whose tiles a tensor map can write (TILEFUSE_NO_TMA=1
    // issues them as cp.async, to compare).
    std::vector<std::pair<Var, Expr>> lets;
    std::vector<const CopyNode*> copies;
    std::vector<Stmt> consumer;
    split_pipelined_body(f, &lets, &copies, &consumer);
    // Gathered rows (cp.async by lower_copies: TMA has no gather on sm_90)
    // go by TMA too, one box per row, where the tensor map can.
    for (const CopyNode* c : copies) {
      if (!c->plan) continue;
      const std::string mode = copy_mode(c);
      std::string why = "TILEFUSE_NO_TMA is set";
      const bool off = std::getenv("TILEFUSE_NO_TMA") != nullptr;
      if (mode == "tma" && (off || !plan_tma(c, &why)))
        result_.notes.push_back("copy " + c->dst.name() + ": cp.async, not TMA: " + why);
      if (mode == "cp_async" && !off) {
        if (plan_tma(c, &why, /*gather_only=*/true))
          result_.notes.push_back("copy " + c->dst.name() +
                                  ": TMA, one box per gathered row (TILEFUSE_TMA_GATHER=1; "
                                  "lower_copies chose cp.async)");
        else if (std::getenv("TILEFUSE_TMA_GATHER") != nullptr && why != "not a row gather")
          result_.notes.push_back("copy " + c->dst.name() + ": cp.async, not a TMA row gather: " +
                                  why);
      }
    }
    result_.notes.push_back(fmt::format(
        "warp-specialized: warpgroup {} issues the copies (mbarrier pipeline), warpgroups 0..{} "
        "run wgmma",
        mma_threads_ / 128, mma_threads_ / 128 - 1));
  }
  result_.dynamic_shared_bytes = offset;
  result_.num_threads = threads_;

  // Headers, signature, grid.
  result_.headers = {"tf_numeric.cuh", "tf_status.cuh"};
  if (!shared_.empty() || scan.has_copy) result_.headers.push_back("tf_copy.cuh");
  if (!fragments_.empty()) result_.headers.push_back("tf_gemm.cuh");
  if (!wgmma_a.empty()) result_.headers.push_back("tf_wgmma.cuh");
  std::ostringstream head;
  head << "// " << k_.name << ": generated by tilefuse for " << target_.name() << "\n";
  if (!k_.attrs.empty()) {
    head << "// config:";
    for (auto& [key, val] : k_.attrs)
      std::visit([&](auto&& x) { head << " " << key << "=" << x; }, val);
    head << "\n";
  }
  for (const std::string& n : result_.notes) head << "// " << n << "\n";
  for (const std::string& h : result_.headers) head << "#include \"" << h << "\"\n";
  head << "\n";

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
  head << "extern \"C\" __global__ void __launch_bounds__(" << threads_ << ") " << k_.name
       << "(\n    " << params << ") {\n";

  indent_ = 1;
  line(fmt::format("constexpr int kThreads = {};", threads_));
  if (warp_specialized_) line(fmt::format("constexpr int kMmaThreads = {};", mma_threads_));
  line("const int tf_tid = static_cast<int>(threadIdx.x);");
  if (offset > 0)
    line(fmt::format("extern __shared__ __align__({}) unsigned char tf_smem[];",
                     wgmma_a.empty() ? 128 : 1024));
  int64_t grid = 1;
  std::vector<int64_t> gext;
  for (const GridDim& g : k_.grid) {
    gext.push_back(const_of(g.extent, "a grid extent"));
    grid *= gext.back();
  }
  TF_CHECK(grid <= std::numeric_limits<int32_t>::max(),
           "emit_cuda: more than 2^31 - 1 program instances");
  result_.grid = grid;
  int64_t stride = 1;
  for (size_t d = k_.grid.size(); d-- > 0;) {
    const GridDim& g = k_.grid[d];
    std::string x = stride == 1 ? "static_cast<int>(blockIdx.x)"
                                : fmt::format("static_cast<int>(blockIdx.x) / {}", stride);
    if (d > 0) x = "(" + x + ") % " + std::to_string(gext[d]);
    nonneg_vars_.insert(g.var.get());
    line(fmt::format("const {} {} = {};", cuda_type(g.var.dtype()), var(g.var), x));
    stride *= gext[d];
  }
  stmt(k_.body);
  indent_ = 0;
  result_.source = head.str() + out_.str() + "}\n";
  return result_;
}

}  // namespace

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

CudaKernel emit_cuda(const tir::Kernel& kernel, const tir::Target& target,
                     const EmitOptions& options) {
  Emitter e(kernel, target, options);
  return e.run();
}

}  // namespace tilefuse::codegen
