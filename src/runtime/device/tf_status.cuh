// tilefuse device helpers: the status word device-side checks report into
// (PTX ISA 9.7.13.5, atom.cas).
#pragma once

namespace tf {

// ---- the status word ---------------------------------------------------------
// The first failing check of a launch wins: it claims `code` with a CAS
// (0 -> -1), writes its arguments, then publishes its code. The word may
// live in mapped host memory, read by the host while kernels run, so the
// arguments are made visible system-wide before the code. The kernel goes
// on (accesses a check guards are masked), so the context stays usable.
// Room for kStatusArgs arguments: a gather's bounds check reports the
// index's value, its coordinates in the index tensor (up to 8 dims) and the
// value again (lower/expr_lowering.cpp); most checks report four or fewer.
constexpr int kStatusArgs = 10;  // codegen::kStatusArgs (codegen/cuda/emit.h)
struct Status {
  int code;
  int pad;
  long long args[kStatusArgs];
};

// (In two steps for a reporter that writes more than publish_report's four
// arguments: claim_report, then what else it writes (report's overload for
// five or more, below: args[4 ..); tf_index_check.cuh: the index tensor's
// shape, past the status words), then publish_report, whose fence makes
// that visible before the code too.)
__device__ __forceinline__ bool claim_report(Status* s) {
  return atomicCAS(&s->code, 0, -1) == 0;
}
__device__ __forceinline__ void publish_report(Status* s, int code, long long a0, long long a1,
                                               long long a2, long long a3) {
  s->args[0] = a0;
  s->args[1] = a1;
  s->args[2] = a2;
  s->args[3] = a3;
  __threadfence_system();
  atomicExch(&s->code, code);
}
__device__ __forceinline__ void report(Status* s, int code, long long a0 = 0, long long a1 = 0,
                                       long long a2 = 0, long long a3 = 0) {
  if (claim_report(s)) publish_report(s, code, a0, a1, a2, a3);
}

// report, out of line: for a check in a hot loop's body whose error path,
// inlined, changes how ptxas schedules the loop. The register_a row checks
// at each later tile's start of a persistent kernel use it: with report
// inline there (its atomics and fence), ptxas of CUDA 13.0 issued the MMA
// warps' A fragment loads one k-tile ahead of their wgmma instead of three,
// in every persistent register_a kernel of the bench programs; out of line,
// three, with no spills (SASS, bench/RESULTS.md, session 26). (Not static:
// NVRTC warns of an unreferenced static function in every kernel that does
// not call it; a whole-program compile emits no unreferenced function.)
__device__ __noinline__ void report_cold(Status* s, int code, long long a0 = 0, long long a1 = 0,
                                        long long a2 = 0, long long a3 = 0) {
  report(s, code, a0, a1, a2, a3);
}

// report and report_cold with more than four arguments (a gather's check
// over an index tensor of 3 dims or more): args[4 ..) are written under
// the claim, before publish_report's fence. (Overloads, so a check of four
// or fewer compiles to the code above.)
template <class... More>
__device__ __forceinline__ void report(Status* s, int code, long long a0, long long a1,
                                       long long a2, long long a3, long long a4, More... more) {
  static_assert(5 + static_cast<int>(sizeof...(More)) <= kStatusArgs,
                "a report of more than kStatusArgs args");
  if (!claim_report(s)) return;
  const long long rest[] = {a4, static_cast<long long>(more)...};
  for (int i = 0; i < 1 + static_cast<int>(sizeof...(More)); ++i) s->args[4 + i] = rest[i];
  publish_report(s, code, a0, a1, a2, a3);
}
template <class... More>
__device__ __noinline__ void report_cold(Status* s, int code, long long a0, long long a1,
                                         long long a2, long long a3, long long a4, More... more) {
  report(s, code, a0, a1, a2, a3, a4, more...);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// ---- thread-block clusters (sm_90; PTX ISA 9.7.13.3 barrier.cluster, 9.7.9.21
// mapa, 9.7.9.8 ld .shared::cluster) ---------------------------------------------
// Every non-exited thread of every block of the cluster arrives (release)
// and waits (acquire): after it, what each block wrote to its shared memory
// before (its mbarrier inits, made visible by fence_mbarrier_init; split-K's
// partial tiles) is visible to the others. Every thread of a warp executes
// it (.aligned); threads that exited count as arrived.
__device__ __forceinline__ void cluster_sync() {
  asm volatile(
      "barrier.cluster.arrive.release.aligned;\n"
      "barrier.cluster.wait.acquire.aligned;\n" ::
          : "memory");
}
// The shared::cluster address of the byte at shared::cta address `addr` in
// the shared memory of the cluster's block `rank` (mapa).
__device__ __forceinline__ unsigned mapa_shared(unsigned addr, unsigned rank) {
  unsigned r;
  asm("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
// A load from another block's shared memory at a shared::cluster address
// (split-K's partials, LaunchPlan::split_k_cluster). volatile: it stays after
// the cluster_sync that published what it reads.
template <typename T>
__device__ __forceinline__ T ld_shared_cluster(unsigned addr);
template <>
__device__ __forceinline__ float ld_shared_cluster<float>(unsigned addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(addr));
  return v;
}
template <>
__device__ __forceinline__ double ld_shared_cluster<double>(unsigned addr) {
  double v;
  asm volatile("ld.shared::cluster.f64 %0, [%1];\n" : "=d"(v) : "r"(addr));
  return v;
}
template <>
__device__ __forceinline__ int ld_shared_cluster<int>(unsigned addr) {
  int v;
  asm volatile("ld.shared::cluster.s32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}
#endif

// ---- the block timeline (LaunchPlan::timeline_slot, a measuring aid) --------
// Records of at most kTimelineBlocks blocks, kTimelineWords words each:
// block b's thread 0 writes, each a %globaltimer in ns, its start, when its
// first main-loop stage had landed (a warp-specialized loop's first `full`
// wait; 0 elsewhere), the end of its first and of its second main loop (0:
// none; a persistent kernel's first two tiles) and its end, then its %smid
// (PTX ISA, "Special Registers"), to timeline[kTimelineWords * b ...]. The kernel's source defines
// the module global `tf_timeline`; the runtime zeroes it before the launch it reads
// (driver/cuda_program.h). Until the end, thread 0 keeps the first four times in a slot of
// kTimelineSlotBytes (8-byte aligned) of the block's shared memory, through
// volatile ld/st.shared only: times held in registers lived across
// register_a's unrolled loop and made ptxas spill and reschedule it (session
// 38), and a global store before the loop cost its fragment loads their
// lead.
constexpr int kTimelineBlocks = 16384;
constexpr int kTimelineWords = 6;
constexpr int kTimelineSlotBytes = 32;

__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned timeline_slot_word(unsigned char* slot, int word) {
  return static_cast<unsigned>(__cvta_generic_to_shared(slot)) + 8u * static_cast<unsigned>(word);
}

// The block's start (thread 0): the slot's words are start, 0, 0, 0.
__device__ __forceinline__ void timeline_begin(unsigned char* slot, int tid) {
  if (tid != 0) return;
  const unsigned long long zero = 0;
  asm volatile("st.shared.u64 [%0], %1;" ::"r"(timeline_slot_word(slot, 0)), "l"(globaltimer()));
  for (int w = 1; w < kTimelineSlotBytes / 8; ++w)
    asm volatile("st.shared.u64 [%0], %1;" ::"r"(timeline_slot_word(slot, w)), "l"(zero));
}

// The first stage landed (word 1): %globaltimer the first time thread 0
// gets here.
__device__ __forceinline__ void timeline_first_stage(unsigned char* slot, int tid) {
  if (tid != 0) return;
  const unsigned a = timeline_slot_word(slot, 1);
  unsigned long long t;
  asm volatile("ld.shared.u64 %0, [%1];" : "=l"(t) : "r"(a));
  if (t == 0) asm volatile("st.shared.u64 [%0], %1;" ::"r"(a), "l"(globaltimer()));
}

// A main loop's end: %globaltimer into word 2 the first time thread 0 gets
// here, into word 3 the second time, then nothing.
__device__ __forceinline__ void timeline_loop_end(unsigned char* slot, int tid) {
  if (tid != 0) return;
  for (int w = 2; w < 4; ++w) {
    const unsigned a = timeline_slot_word(slot, w);
    unsigned long long t;
    asm volatile("ld.shared.u64 %0, [%1];" : "=l"(t) : "r"(a));
    if (t == 0) {
      asm volatile("st.shared.u64 [%0], %1;" ::"r"(a), "l"(globaltimer()));
      return;
    }
  }
}

// The block's end (thread 0): the slot's four times, the end and the SM
// into the block's record.
__device__ __forceinline__ void record_timeline(unsigned long long* timeline, int tid,
                                                unsigned char* slot) {
  if (tid != 0 || blockIdx.x >= static_cast<unsigned>(kTimelineBlocks)) return;
  const unsigned long long end = globaltimer();
  unsigned long long* r = timeline + static_cast<unsigned long long>(kTimelineWords) * blockIdx.x;
  for (int i = 0; i < kTimelineSlotBytes / 8; ++i) {
    unsigned long long w;
    asm volatile("ld.shared.u64 %0, [%1];" : "=l"(w) : "r"(timeline_slot_word(slot, i)));
    r[i] = w;
  }
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  r[kTimelineSlotBytes / 8] = end;
  r[kTimelineSlotBytes / 8 + 1] = sm;
}

// ---- if_last_arrival (split-K's election of a tile's last block) -------------
// Arrives once for the block at *counter; true in every thread of the block
// whose arrival is the count-th (which resets the counter to 0 for the next
// launch or graph replay), false elsewhere. THREADS: the threads running
// this code, the first THREADS of the block over named barrier 1 (the MMA
// warpgroups after a warp-specialized loop), or 0 for the whole block.
// Release: each thread fences its earlier global stores (membar.gl, PTX ISA
// 9.7.13.4) and the threads meet before thread 0's atomicAdd; acquire: the
// answer is shared by bar.red.or (9.7.13.1) and the last block fences
// again before it reads what the others stored. No float atomics.
// COUNT (uniform over the threads) of 1: the only arrival, true without the
// counter; 0 or below: no arrival, false (stream-K's pieces, tir/ir.h).
template <int THREADS>
__device__ __forceinline__ bool last_arrival(int* counter, int count, int tid) {
  if (count <= 1) return count == 1;
  __threadfence();
  if (THREADS == 0)
    __syncthreads();
  else
    asm volatile("bar.sync 1, %0;\n" ::"n"(THREADS) : "memory");
  int last = 0;
  if (tid == 0) {
    last = atomicAdd(counter, 1) == count - 1;
    if (last) atomicExch(counter, 0);
  }
  if (THREADS == 0) {
    last = __syncthreads_or(last);
  } else {
    asm volatile(
        "{\n .reg .pred p, q;\n setp.ne.s32 q, %1, 0;\n bar.red.or.pred p, 1, %2, q;\n"
        " selp.s32 %0, 1, 0, p;\n}\n"
        : "=r"(last)
        : "r"(last), "n"(THREADS)
        : "memory");
  }
  if (last) __threadfence();
  // (a warp vote: the compiler then knows the answer is the warp's, so a
  // branch on it keeps the control flow uniform and a persistent loop's
  // ring counters in uniform registers; with the asm's answer, stream-K's
  // main loop addressed its mbarriers from per-thread registers, session 22)
  return __all_sync(0xffffffffu, last != 0);
}

// ---- split-K partials, 16 bytes a thread at a time ----------------------------
// The groups of 16-byte vectors a fix-up keeps in flight for LOADS partials
// (print_stmt.cpp): 64 registers' worth, or what ACC_REGS accumulator
// registers leave of 160 where that is less; at least 1, at most GROUPS.
__host__ __device__ constexpr int fixup_groups(int acc_regs, int loads, int groups) {
  const int room = 160 - acc_regs < 64 ? 160 - acc_regs : 64;
  const int d = room / (4 * loads) > 1 ? room / (4 * loads) : 1;
  return d < groups ? d : groups;
}

// (LaunchPlan::workspace_vector: element e of MMA thread t of a partial tile
// at ((e / V) * threads + t) * V + e % V, V = 16 / sizeof(T).)
template <class T>
struct Vec16;
template <>
struct Vec16<float> {
  using type = float4;
};
template <>
struct Vec16<double> {
  using type = double2;
};
template <>
struct Vec16<int> {
  using type = int4;
};
// Stores v[0 .. V) at p (16-byte aligned) by one 16-byte access.
template <class T>
__device__ __forceinline__ void st_vec16(T* p, const T (&v)[16 / sizeof(T)]) {
  union {
    typename Vec16<T>::type w;
    T e[16 / sizeof(T)];
  } u;
#pragma unroll
  for (int q = 0; q < 16 / static_cast<int>(sizeof(T)); ++q) u.e[q] = v[q];
  *reinterpret_cast<typename Vec16<T>::type*>(p) = u.w;
}
// The 16-byte vector at p (16-byte aligned) where `pred`, else zeros: one
// predicated ld.global.v4 / .v2 (PTX ISA 9.7.9.8), no branch, so that a
// fix-up's loads of every peer's vectors issue back to back (a branch
// around each, as the compiler emits for `pred ? *p : 0`, measured 3 us
// slower on fewtiles' 4-split fix-up, bench/RESULTS.md session 21).
// volatile: it stays after the last_arrival that published what it reads.
template <class T>
__device__ __forceinline__ typename Vec16<T>::type ld_vec16_if(const T* p, bool pred) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "ld_vec16_if: 4- or 8-byte elements");
  union {
    typename Vec16<T>::type v;
    unsigned long long d[2];
    unsigned w[4];
  } u;
  if constexpr (sizeof(T) == 4) {
    asm volatile(
        "{\n.reg .pred tf_p;\nsetp.ne.b32 tf_p, %5, 0;\n"
        "mov.b32 %0, 0;\nmov.b32 %1, 0;\nmov.b32 %2, 0;\nmov.b32 %3, 0;\n"
        "@tf_p ld.global.v4.b32 {%0, %1, %2, %3}, [%4];\n}\n"
        : "=r"(u.w[0]), "=r"(u.w[1]), "=r"(u.w[2]), "=r"(u.w[3])
        : "l"(p), "r"(static_cast<int>(pred)));
  } else {
    asm volatile(
        "{\n.reg .pred tf_p;\nsetp.ne.b32 tf_p, %3, 0;\n"
        "mov.b64 %0, 0;\nmov.b64 %1, 0;\n"
        "@tf_p ld.global.v2.b64 {%0, %1}, [%2];\n}\n"
        : "=l"(u.d[0]), "=l"(u.d[1])
        : "l"(p), "r"(static_cast<int>(pred)));
  }
  return u.v;
}
// Element `lane` (0 .. V - 1) of a vector ld_vec16_if loaded.
template <class W>
__device__ __forceinline__ auto vec16_lane(const W& w, int lane) {
  union {
    W w;
    decltype(w.x) e[sizeof(W) / sizeof(w.x)];
  } u;
  u.w = w;
  return u.e[lane];
}

}  // namespace tf
