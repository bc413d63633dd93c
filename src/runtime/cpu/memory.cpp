// Element addressing, bounds checks and typed reads / writes of the CPU
// executor, one batch of lanes at a time. The dtype switch sits outside the
// lane loops so each loop is a plain strided copy with a conversion.
#include <cstring>
#include <string>

#include "core/error.h"
#include "runtime/cpu/eval.h"

namespace tilefuse::runtime::cpu {
namespace {

[[noreturn]] void out_of_bounds(const BufferView& view, int64_t offset) {
  throw InternalError("cpu executor: out-of-bounds access to buffer `" +
                      (view.name ? *view.name : std::string("?")) + "` at element offset " +
                      std::to_string(offset) + " (storage holds [" + std::to_string(view.lo) +
                      ", " + std::to_string(view.hi) + ")); the IR must mask this access");
}

template <class Fn>
void for_active(int n, const Lane* active, Fn fn) {
  if (active) {
    // Mostly every lane is on (a mask only cuts the tail): then run the
    // branch-free loop.
    int on = 0;
    for (int l = 0; l < n; ++l) on += active[l].i != 0;
    if (on == n) {
      for (int l = 0; l < n; ++l) fn(l);
      return;
    }
    for (int l = 0; l < n; ++l)
      if (active[l].i) fn(l);
  } else {
    for (int l = 0; l < n; ++l) fn(l);
  }
}

template <class T>
T read_raw(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
void write_raw(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

}  // namespace

void element_offsets(const BufferView& view, const Lane* const* indices, const bool* uniform, int n,
                     const Lane* active, int64_t* offsets) {
  // 64-bit offsets throughout: the IR computes in 32 bits only where that
  // provably fits, so 64-bit arithmetic gives the same values. Uniform
  // indices fold into one base; unit strides (the contiguous dim) skip the
  // multiply, so a row of a tile costs one pass.
  int64_t base = 0;
  for (int d = 0; d < view.rank; ++d)
    if (uniform[d]) base += indices[d][0].i * view.strides[d];
  bool first = true;
  for (int d = 0; d < view.rank; ++d) {
    if (uniform[d]) continue;
    const int64_t s = view.strides[d];
    const Lane* idx = indices[d];
    if (first && s == 1) {
      for (int l = 0; l < n; ++l) offsets[l] = base + idx[l].i;
    } else if (first) {
      for (int l = 0; l < n; ++l) offsets[l] = base + idx[l].i * s;
    } else if (s == 1) {
      for (int l = 0; l < n; ++l) offsets[l] += idx[l].i;
    } else {
      for (int l = 0; l < n; ++l) offsets[l] += idx[l].i * s;
    }
    first = false;
  }
  if (first)
    for (int l = 0; l < n; ++l) offsets[l] = base;
  const int64_t lo = view.lo, hi = view.hi;
  // One unsigned compare per lane, branch-free (the baseline x86-64 build
  // has no vector 64-bit compare, so this is scalar: keep it short).
  const uint64_t range = static_cast<uint64_t>(hi - lo);
  uint64_t bad = 0;
  if (active) {
    for (int l = 0; l < n; ++l)
      bad |= static_cast<uint64_t>(active[l].i) &
             static_cast<uint64_t>(static_cast<uint64_t>(offsets[l] - lo) >= range);
  } else {
    for (int l = 0; l < n; ++l)
      bad |= static_cast<uint64_t>(static_cast<uint64_t>(offsets[l] - lo) >= range);
  }
  if (bad) {
    for_active(n, active, [&](int l) {
      if (offsets[l] < lo || offsets[l] >= hi) out_of_bounds(view, offsets[l]);
    });
  }
}

void read_elements(const BufferView& view, const int64_t* offsets, int n, const Lane* active,
                   Lane* out) {
  const std::byte* base = view.base;
  switch (view.dtype) {
    case DType::F32: {
      const float* p = reinterpret_cast<const float*>(base);
      for_active(n, active, [&](int l) { out[l].f = p[offsets[l]]; });
      break;
    }
    case DType::F64: {
      const double* p = reinterpret_cast<const double*>(base);
      for_active(n, active, [&](int l) { out[l].f = p[offsets[l]]; });
      break;
    }
    case DType::F16:
      for_active(n, active, [&](int l) {
        out[l].f = f16_bits_to_f32(read_raw<uint16_t>(base + offsets[l] * 2));
      });
      break;
    case DType::BF16:
      for_active(n, active, [&](int l) {
        out[l].f = bf16_bits_to_f32(read_raw<uint16_t>(base + offsets[l] * 2));
      });
      break;
    case DType::F8E4M3:
      for_active(n, active, [&](int l) {
        out[l].f = f8e4m3_bits_to_f32(static_cast<uint8_t>(base[offsets[l]]));
      });
      break;
    case DType::F8E5M2:
      for_active(n, active, [&](int l) {
        out[l].f = f8e5m2_bits_to_f32(static_cast<uint8_t>(base[offsets[l]]));
      });
      break;
    case DType::Bool:
      for_active(n, active, [&](int l) { out[l].i = static_cast<uint8_t>(base[offsets[l]]) != 0; });
      break;
    case DType::U8:
      for_active(n, active, [&](int l) { out[l].i = static_cast<uint8_t>(base[offsets[l]]); });
      break;
    case DType::I8:
      for_active(n, active, [&](int l) { out[l].i = static_cast<int8_t>(base[offsets[l]]); });
      break;
    case DType::I32: {
      const int32_t* p = reinterpret_cast<const int32_t*>(base);
      for_active(n, active, [&](int l) { out[l].i = p[offsets[l]]; });
      break;
    }
    case DType::I64: {
      const int64_t* p = reinterpret_cast<const int64_t*>(base);
      for_active(n, active, [&](int l) { out[l].i = p[offsets[l]]; });
      break;
    }
  }
}

void write_elements(const BufferView& view, const int64_t* offsets, int n, const Lane* active,
                    const Lane* values) {
  std::byte* base = view.base;
  // Values have the buffer's dtype (the verifier), or are a float the store
  // rounds to it (a store of a cast to the buffer's float dtype, compiled
  // without the cast): each float goes through f32 into the encoding, as
  // round_to rounds, so both give the same bits.
  switch (view.dtype) {
    case DType::F32: {
      float* p = reinterpret_cast<float*>(base);
      for_active(n, active, [&](int l) { p[offsets[l]] = static_cast<float>(values[l].f); });
      break;
    }
    case DType::F64: {
      double* p = reinterpret_cast<double*>(base);
      for_active(n, active, [&](int l) { p[offsets[l]] = values[l].f; });
      break;
    }
    case DType::F16:
      for_active(n, active, [&](int l) {
        write_raw(base + offsets[l] * 2, f32_to_f16_bits(static_cast<float>(values[l].f)));
      });
      break;
    case DType::BF16:
      for_active(n, active, [&](int l) {
        write_raw(base + offsets[l] * 2, f32_to_bf16_bits(static_cast<float>(values[l].f)));
      });
      break;
    case DType::F8E4M3:
      for_active(n, active, [&](int l) {
        base[offsets[l]] = std::byte{f32_to_f8e4m3_bits(static_cast<float>(values[l].f))};
      });
      break;
    case DType::F8E5M2:
      for_active(n, active, [&](int l) {
        base[offsets[l]] = std::byte{f32_to_f8e5m2_bits(static_cast<float>(values[l].f))};
      });
      break;
    case DType::Bool:
      for_active(n, active, [&](int l) {
        base[offsets[l]] = std::byte{static_cast<uint8_t>(values[l].i != 0)};
      });
      break;
    case DType::U8:
    case DType::I8:
      for_active(n, active,
                 [&](int l) { base[offsets[l]] = std::byte{static_cast<uint8_t>(values[l].i)}; });
      break;
    case DType::I32: {
      int32_t* p = reinterpret_cast<int32_t*>(base);
      for_active(n, active, [&](int l) { p[offsets[l]] = static_cast<int32_t>(values[l].i); });
      break;
    }
    case DType::I64: {
      int64_t* p = reinterpret_cast<int64_t*>(base);
      for_active(n, active, [&](int l) { p[offsets[l]] = values[l].i; });
      break;
    }
  }
}

// Evaluates `indices` for lanes where `on` holds into offsets (checked).
void offsets_of(Frame& f, const BufferView& view, const std::vector<ExprPtr>& indices, int n,
                const Lane* on, int64_t* offsets) {
  Lane idx[kMaxRank][kMaxLanes];
  const Lane* ptrs[kMaxRank];
  bool uniform[kMaxRank];
  for (size_t d = 0; d < indices.size(); ++d) {
    uniform[d] = indices[d]->eval_u(f, n, on, idx[d]);
    ptrs[d] = idx[d];
  }
  element_offsets(view, ptrs, uniform, n, on, offsets);
}

bool contiguous_offset(Frame& f, const BufferView& view, const std::vector<ExprPtr>& indices, int n,
                       int64_t* base) {
  int64_t off = 0;
  bool seen_affine = false;
  Lane v[kMaxLanes];
  for (size_t d = 0; d < indices.size(); ++d) {
    int64_t b;
    if (indices[d]->affine(f, n, &b)) {
      if (seen_affine || view.strides[d] != 1) return false;
      seen_affine = true;
      off += b;
    } else if (indices[d]->eval_u(f, n, nullptr, v)) {
      off += v[0].i * view.strides[d];
    } else {
      return false;
    }
  }
  if (!seen_affine && n > 1) return false;  // every lane at one address
  *base = off;
  return true;
}

void check_range(const BufferView& view, int64_t first, int64_t count) {
  if (count <= 0) return;
  if (first < view.lo || first >= view.hi) out_of_bounds(view, first);
  if (first + count - 1 >= view.hi) out_of_bounds(view, view.hi);
}

namespace {

template <class T>
void move_typed(std::byte* dst, const int64_t* doff, const std::byte* src, const int64_t* soff,
                int n, const Lane* on) {
  T* d = reinterpret_cast<T*>(dst);
  const T* s = reinterpret_cast<const T*>(src);
  if (on) {
    int count = 0;
    for (int l = 0; l < n; ++l) count += on[l].i != 0;
    if (count == n) on = nullptr;
  }
  if (!on) {
    // A row of a tile is usually contiguous on both sides: one memcpy.
    int l = 1;
    while (l < n && doff[l] == doff[0] + l && soff[l] == soff[0] + l) ++l;
    if (l == n) {
      std::memcpy(d + doff[0], s + soff[0], sizeof(T) * n);
      return;
    }
    for (int l = 0; l < n; ++l) d[doff[l]] = s[soff[l]];
    return;
  }
  // Masked-off lanes read a local zero instead of memory: branch-free and
  // no access to their (possibly out-of-range) addresses.
  const T zero{};
  for (int l = 0; l < n; ++l) {
    const T* p = on[l].i ? s + soff[l] : &zero;
    d[doff[l]] = *p;
  }
}

}  // namespace

void move_elements(const BufferView& dst, const int64_t* dst_offsets, const BufferView& src,
                   const int64_t* src_offsets, int n, const Lane* on) {
  switch (dtype_size(dst.dtype)) {
    case 1:
      move_typed<uint8_t>(dst.base, dst_offsets, src.base, src_offsets, n, on);
      break;
    case 2:
      move_typed<uint16_t>(dst.base, dst_offsets, src.base, src_offsets, n, on);
      break;
    case 4:
      move_typed<uint32_t>(dst.base, dst_offsets, src.base, src_offsets, n, on);
      break;
    default:
      move_typed<uint64_t>(dst.base, dst_offsets, src.base, src_offsets, n, on);
      break;
  }
}

}  // namespace tilefuse::runtime::cpu
