// Internals of the CPU executor: the compiled form of a kernel.
//
// Every expression and statement is compiled once into a closure node
// (ExprCode / StmtCode). Evaluation is batched: a node computes its value
// for `n` lanes at a time (the points of a parallel loop nest or of a copy
// region, n <= kMaxLanes) into a Lane array, so the virtual call per node is
// paid once per batch. Scalar code (serial loops, the grid) runs the same
// nodes with n = 1.
//
// Values: bool and integers travel as int64 (already wrapped to their
// dtype), floats as double holding a value exactly representable in their
// dtype (f32 math is done in float, f64 in double, narrower floats in double
// and rounded once with round_to: the exact result of + - * of two f16/bf16
// fits a double, so this is a single rounding).
//
// `active` (may be null: all lanes) marks the lanes that execute: loads and
// stores in inactive lanes touch no memory, checks in inactive lanes do not
// fire. A mask is a Lane array holding 0 / 1 in `.i`.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "tir/ir.h"

namespace tilefuse::runtime::cpu {

constexpr int kMaxLanes = 256;
constexpr int kMaxRank = 8;

union Lane {
  int64_t i;
  double f;
};

// A buffer as bound at run time: element 0 at `base`, element strides, and
// the element offsets [lo, hi) the storage holds (the bounds check).
struct BufferView {
  std::byte* base = nullptr;
  int64_t lo = 0, hi = 0;
  int64_t shape[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
  int rank = 0;
  DType dtype = DType::F32;
  const std::string* name = nullptr;
};

// A `gemm_pack` copy's tile as rows of its source (eval_tile.cpp): row r
// starts at rows[r] (elements contiguous), its first valid[r] elements are
// in bounds and the rest read as 0. `active` after the copy described the
// tile this way; a copy that could not (its fallback wrote the tile)
// clears it, and the gemm then reads the tile itself.
struct PackedTile {
  std::vector<const std::byte*> rows;
  std::vector<int64_t> valid;
  int64_t cols = 0;
  DType dtype = DType::F32;
  bool active = false;
};

// The per-thread state of one running program instance (reused across the
// instances a thread runs).
struct Frame {
  std::vector<Lane> var_lanes;   // kMaxLanes per var slot
  std::vector<uint8_t> uniform;  // per var slot: lane 0 holds the value for all lanes
  // Per var slot: lane l holds lane 0 + l (the inner var of a row batch). A
  // hint on top of the lanes, which are written all the same.
  std::vector<uint8_t> affine;
  std::vector<BufferView> buffers;
  std::vector<std::vector<std::byte>> alloc_memory;  // per buffer slot
  std::vector<PackedTile> packed;                     // per buffer slot
  // The lowest grid instance that has failed so far (INT64_MAX: none), and
  // this frame's instance: a later instance stops (check_stop), an earlier
  // one runs on, so the error kept is the lowest failing instance's.
  const std::atomic<int64_t>* first_failed = nullptr;
  int64_t instance = 0;

  Lane* lanes(int slot) { return &var_lanes[static_cast<size_t>(slot) * kMaxLanes]; }
  void set_uniform_int(int slot, int64_t v) {
    lanes(slot)[0].i = v;
    uniform[slot] = 1;
    affine[slot] = 0;
  }
};

struct ExprCode {
  explicit ExprCode(DType dt) : dtype(dt) {}
  virtual ~ExprCode() = default;
  // Computes lanes [0, n) into out. Returns true when the value is uniform
  // (the same in every lane, e.g. a constant or an expression over grid ids
  // and serial loop vars): then only out[0] is written, and the caller's
  // work on it is one lane instead of n.
  virtual bool eval_u(Frame& f, int n, const Lane* active, Lane* out) const = 0;
  // All n lanes of out written.
  void eval(Frame& f, int n, const Lane* active, Lane* out) const {
    if (eval_u(f, n, active, out))
      for (int l = 1; l < n; ++l) out[l] = out[0];
  }
  // For a load with no `other` (a pure masked read): evaluates its mask and
  // address for n lanes (every lane active) into *on (null: all lanes) and
  // offsets (checked) and returns the buffer, so a copy can move the bytes
  // without converting them. nullptr for every other node.
  virtual const BufferView* plain_load(Frame& f, int n, Lane* mask, const Lane** on,
                                       int64_t* offsets) const {
    return nullptr;
  }
  // True when the value of lane l is *base + l for every l < n (an integer
  // that does not wrap there), e.g. `k*32 + j` in a row batch over j; the
  // caller then needs no lanes. Only asked with every lane active.
  virtual bool affine(Frame& f, int n, int64_t* base) const { return false; }
  // True when the value (a bool) holds exactly for lanes l < *count, e.g.
  // `kk < K` with kk affine (a K-tail mask). Every lane active.
  virtual bool prefix_mask(Frame& f, int n, int* count) const;
  // For a load without `other` whose active lanes form a prefix of the batch
  // and whose address is contiguous there: its buffer, the offset of lane 0
  // and the prefix length. The caller moves the prefix with one memcpy.
  virtual const BufferView* contiguous_load(Frame& f, int n, int64_t* base, int* count) const {
    return nullptr;
  }
  // A scalar evaluation (n = 1, every lane active).
  Lane eval1(Frame& f) const {
    Lane out;
    eval_u(f, 1, nullptr, &out);
    return out;
  }
  const DType dtype;
};
using ExprPtr = std::unique_ptr<ExprCode>;

struct StmtCode {
  virtual ~StmtCode() = default;
  // Runs for lanes [0, n); only statements compiled as `vectorizable` see
  // n > 1 or a non-null `active`.
  virtual void run(Frame& f, int n, const Lane* active) const = 0;
  bool vectorizable = true;
};
using StmtPtr = std::unique_ptr<StmtCode>;

// Slots of vars and buffers, assigned in order of first binding.
struct SlotMap {
  std::unordered_map<const tir::VarNode*, int> vars;
  std::unordered_map<const tir::BufferNode*, int> buffers;
  int var_slot(const tir::Var& v);
  int buffer_slot(const tir::Buffer& b);
  Frame make_frame() const;
};

// Thrown inside an instance when an earlier instance has failed
// (Frame::first_failed).
struct Stopped {};
inline void check_stop(const Frame& f) {
  if (f.first_failed && f.instance > f.first_failed->load(std::memory_order_relaxed))
    throw Stopped();
}

// Compiles an expression (eval_expr.cpp). Throws InternalError for hooks.
ExprPtr compile_expr(const tir::Expr& e, SlotMap& slots);
// Compiles a statement (eval_stmt.cpp).
StmtPtr compile_stmt(const tir::Stmt& s, SlotMap& slots);
// The nodes of eval_math.cpp and eval_tile.cpp.
ExprPtr make_cast_code(DType dtype, ExprPtr value);
ExprPtr make_call_code(DType dtype, tir::Intrinsic op, std::vector<ExprPtr> args);
StmtPtr make_copy_code(const tir::CopyNode* op, SlotMap& slots);
StmtPtr make_gemm_code(const tir::GemmNode* op, SlotMap& slots);
StmtPtr make_fill_code(const tir::FillNode* op, SlotMap& slots);

// Evaluates `indices` for lanes where `on` holds into element offsets of
// `view` (checked, see element_offsets).
void offsets_of(Frame& f, const BufferView& view, const std::vector<ExprPtr>& indices, int n,
                const Lane* on, int64_t* offsets);
// When every index is uniform or (one of them, at a unit stride) affine:
// the element offset of lane 0, lanes being contiguous from there. Not
// bounds-checked.
bool contiguous_offset(Frame& f, const BufferView& view, const std::vector<ExprPtr>& indices, int n,
                       int64_t* base);
// Throws the out-of-bounds InternalError unless [first, first + count) is
// inside the storage of `view` (nothing for count = 0).
void check_range(const BufferView& view, int64_t first, int64_t count);
// Wraps n lanes to integer / bool dtype dt (the switch outside the loop).
void wrap_lanes(DType dt, int n, Lane* out);

// Element offsets of `indices` (each an index lane array; where
// `uniform[d]`, only lane 0 is set and holds every lane's value) in `view`,
// checking those of active lanes against the storage (InternalError naming
// the buffer and the offset).
void element_offsets(const BufferView& view, const Lane* const* indices, const bool* uniform, int n,
                     const Lane* active, int64_t* offsets);
// Reads / writes n elements of view at offsets where active (null: all). A
// float written to a narrower float buffer is rounded (through f32, as
// round_to does).
void read_elements(const BufferView& view, const int64_t* offsets, int n, const Lane* active,
                   Lane* out);
void write_elements(const BufferView& view, const int64_t* offsets, int n, const Lane* active,
                    const Lane* values);
// A check's message with each "{}" replaced by the next value.
std::string format_check_message(const std::string& message,
                                 const std::vector<std::string>& values);
// A double as the shortest text that reads back to it.
std::string fmt_double(double v);

// dst[dst_offsets[l]] = src[src_offsets[l]] where on (null: all), else 0,
// element by element as raw bytes (the two dtypes are equal).
void move_elements(const BufferView& dst, const int64_t* dst_offsets, const BufferView& src,
                   const int64_t* src_offsets, int n, const Lane* on);
// The value `v` rounded to float dtype dt (f32 through float).
double round_float(DType dt, double v);
// `v` wrapped to integer / bool dtype dt.
int64_t wrap_int(DType dt, int64_t v);

}  // namespace tilefuse::runtime::cpu
