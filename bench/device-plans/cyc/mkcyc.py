#!/usr/bin/env python3
"""The block timeline in SM cycles instead of nanoseconds (session 42): an emitted kernel built with
`--cuda-option block_timeline=1`, its four timeline calls replaced by copies that read %clock64
(PTX ISA, "Special Registers") where the runtime's read %globaltimer. bench then prints each
phase's kilocycles where it says "us"; beside the same kernel's real timeline that gives the SM
clock, and the main loop's cycles against the tensor pipe's (4096 dense f16/bf16 FLOP a cycle an
SM on sm_90: a 128x256x64 k-tile is 1024 cycles).

    mkcyc.py EMITTED_WITH_TIMELINE.cu OUT.cu
"""
import sys

HELPER = r'''
// [cyc] tf::timeline_* of tf_status.cuh with %clock64 for %globaltimer.
__device__ __forceinline__ unsigned long long tfx_clock() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void tfx_timeline_begin(unsigned char* slot, int tid) {
  if (tid != 0) return;
  const unsigned long long zero = 0;
  asm volatile("st.shared.u64 [%0], %1;" ::"r"(tf::timeline_slot_word(slot, 0)), "l"(tfx_clock()));
  for (int w = 1; w < tf::kTimelineSlotBytes / 8; ++w)
    asm volatile("st.shared.u64 [%0], %1;" ::"r"(tf::timeline_slot_word(slot, w)), "l"(zero));
}
__device__ __forceinline__ void tfx_timeline_first_stage(unsigned char* slot, int tid) {
  if (tid != 0) return;
  const unsigned a = tf::timeline_slot_word(slot, 1);
  unsigned long long t;
  asm volatile("ld.shared.u64 %0, [%1];" : "=l"(t) : "r"(a));
  if (t == 0) asm volatile("st.shared.u64 [%0], %1;" ::"r"(a), "l"(tfx_clock()));
}
__device__ __forceinline__ void tfx_timeline_loop_end(unsigned char* slot, int tid) {
  if (tid != 0) return;
  for (int w = 2; w < 4; ++w) {
    const unsigned a = tf::timeline_slot_word(slot, w);
    unsigned long long t;
    asm volatile("ld.shared.u64 %0, [%1];" : "=l"(t) : "r"(a));
    if (t == 0) {
      asm volatile("st.shared.u64 [%0], %1;" ::"r"(a), "l"(tfx_clock()));
      return;
    }
  }
}
__device__ __forceinline__ void tfx_record_timeline(unsigned long long* timeline, int tid,
                                                    unsigned char* slot) {
  if (tid != 0 || blockIdx.x >= static_cast<unsigned>(tf::kTimelineBlocks)) return;
  const unsigned long long end = tfx_clock();
  unsigned long long* r = timeline + static_cast<unsigned long long>(tf::kTimelineWords) * blockIdx.x;
  for (int i = 0; i < tf::kTimelineSlotBytes / 8; ++i) {
    unsigned long long w;
    asm volatile("ld.shared.u64 %0, [%1];" : "=l"(w) : "r"(tf::timeline_slot_word(slot, i)));
    r[i] = w;
  }
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  r[tf::kTimelineSlotBytes / 8] = end;
  r[tf::kTimelineSlotBytes / 8 + 1] = sm;
}
'''


def main():
    src, out = sys.argv[1], sys.argv[2]
    s = open(src).read()
    names = ("timeline_begin(", "timeline_first_stage(", "timeline_loop_end(", "record_timeline(")
    for n in names:
        assert "tf::" + n in s, "no tf::" + n + " (emit with --cuda-option block_timeline=1)"
        s = s.replace("tf::" + n, "tfx_" + n)
    anchor = 'extern "C" __global__'
    assert anchor in s
    s = s.replace(anchor, HELPER + anchor, 1)
    open(out, "w").write(s)


if __name__ == "__main__":
    main()
