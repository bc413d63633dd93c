#!/usr/bin/env python3
"""Producer L2 prefetch of register_a's gathered rows, as a hand-written variant of an
emitted persistent register_a kernel (session 33; not in the compiler yet).

    mkpf.py EMITTED.cu OUT.cu D

The MMA warps load A's fragments straight from global memory, three k-tiles ahead, but ptxas
copies each 128-bit load into the wgmma operand registers about 1.5 k-steps after it is issued
(bench/RESULTS.md, sessions 32-33), so a DRAM miss is not hidden. Here the producer warpgroup,
which only issues B's TMA boxes, prefetches each gathered row into L2 (prefetch.global.L2, one
128-byte k-tile of one row a producer thread) D k-tiles past the stage it issues, and the next
tile's rows across the tile boundary. It reads the rows from shared memory: the tile's 128
indices come by one bulk copy (cp.async.bulk, two buffers, one tile ahead), because a global load
of the index in the producer makes ptxas issue the consumers' fragment loads one k-tile ahead
instead of three (SASS, session 33). Prefetches change no value: the result is the kernel's.
The variant stages 2 KiB more shared memory (`// tilefuse-override: dynamic_shared_bytes=N`).
"""
import re
import sys


def main():
    src_path, out_path, d = sys.argv[1], sys.argv[2], int(sys.argv[3])
    s = open(src_path).read()
    kt = int(re.search(r"for \(int tf_it0 = 0; tf_it0 < (\d+); \+\+tf_it0\)", s).group(1))
    nt = int(re.search(r"for \(int tf_tile = static_cast<int>\(blockIdx\.x\); tf_tile < (\d+);", s).group(1))
    m = re.search(r"tf_rap\[tf_h\] = reinterpret_cast<const char\*>\(tf_ok \? &x\[\(\(idx\[(.*?)\] < 0ll\) \? "
                  r"\(idx\[.*?\] \+ (\d+)ll\) : idx\[.*?\]\) \* (\d+)ll", s)
    rows, stride = int(m.group(2)), int(m.group(3))
    m = re.search(r"tf_smem \+ (\d+) \+ \(tf_tid / 32\) \* (\d+);  // this warp's buffers", s)
    ix_off = int(m.group(1)) + 8 * int(m.group(2))
    assert "tf_smem + 131072);" in s and "tf_empty = tf_full + 4;" in s and m.group(1) == "132096", \
        "the layout this script knows: 4 stages of B, the barriers at 131072, epilogue at 132096"
    assert kt > d > 0
    # the tile -> pid_m lines of the producer's loop
    pm = re.search(r"(      const int pid = tf_tile;\n(?:      const int .*\n)*?      const int cse = \(pid_m \* 128\);\n)", s)
    pid_lines = pm.group(1)

    helpers = '''
// [mkpf] a bulk copy of `bytes` from global to shared memory, completing on `bar`
__device__ __forceinline__ void tfx_bulk_load(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\\n" ::
               "r"(tf::smem_addr(dst)), "l"(src), "r"(bytes), "r"(tf::smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void tfx_prefetch_l2(const char* p) {
  asm volatile("prefetch.global.L2 [%0];" :: "l"(p));
}
'''
    s = s.replace('extern "C" __global__', helpers + 'extern "C" __global__', 1)
    s = s.replace("      tf::mbar_init(&tf_empty[tf_s], kMmaThreads);\n    }",
                  "      tf::mbar_init(&tf_empty[tf_s], kMmaThreads);\n    }\n"
                  "    tf::mbar_init(tf_empty + 4, 1);  // [mkpf] the index buffers\n"
                  "    tf::mbar_init(tf_empty + 5, 1);", 1)
    head = f'''    // [mkpf] the producer's L2 prefetch of the gathered rows, {d} k-tiles past its stage
    unsigned long long* tf_ixbar = tf_empty + 4;
    const long long* tf_ixs = reinterpret_cast<const long long*>(tf_smem + {ix_off});
    auto tf_ix_copy = [&](int tf_t, int tf_b) {{
      const int tf_tile = tf_t;
{pid_lines}      tf::mbar_arrive_expect_tx(&tf_ixbar[tf_b], 1024);
      tfx_bulk_load(tf_smem + {ix_off} + tf_b * 1024, idx + pid_m * 128, 1024, &tf_ixbar[tf_b]);
    }};
    auto tf_row = [&](int tf_b) -> const char* {{
      const long long tf_r = tf_ixs[tf_b * 128 + tf_ptid];
      return (tf_r >= -{rows}ll && tf_r < {rows}ll) ? reinterpret_cast<const char*>(&x[((tf_r < 0ll) ? (tf_r + {rows}ll) : tf_r) * {stride}ll]) : nullptr;
    }};
    if (tf_ptid == 0 && static_cast<int>(blockIdx.x) < {nt}) tf_ix_copy(static_cast<int>(blockIdx.x), 0);
    int tf_n = 0;  // this block's tiles before
    const char* tf_cur = nullptr;
'''
    loop_head = f"    for (int tf_tile = static_cast<int>(blockIdx.x); tf_tile < {nt}; tf_tile += static_cast<int>(gridDim.x)) {{\n"
    i = s.index("    int tf_git = 0;  // the ring iterations of the tiles before\n" + loop_head)
    s = s[:i] + head + s[i:]
    tile_start = f'''      const int tf_buf = tf_n % 2;
      asm volatile("bar.sync 1, 128;" ::: "memory");  // [mkpf] every producer thread has read buffer tf_buf ^ 1
      const bool tf_has_next = tf_tile + static_cast<int>(gridDim.x) < {nt};
      if (tf_ptid == 0 && tf_has_next) tf_ix_copy(tf_tile + static_cast<int>(gridDim.x), tf_buf ^ 1);
      if (tf_n == 0) {{
        tf::mbar_wait(&tf_ixbar[0], 0);
        tf_cur = tf_row(0);
        if (tf_cur) {{
          #pragma unroll
          for (int tf_k = 0; tf_k < {d}; ++tf_k) tfx_prefetch_l2(tf_cur + tf_k * 128);
        }}
      }}
      const char* tf_nxt = nullptr;
'''
    j = s.index(loop_head) + len(loop_head)
    j = s.index("      auto tf_issue", j)
    s = s[:j] + tile_start + s[j:]
    old_issue = "        tf_issue(0 + tf_it0, tf_stage);\n      }\n      tf_git += %d;\n" % kt
    assert s.count(old_issue) == 1
    new_issue = f'''        tf_issue(0 + tf_it0, tf_stage);
        const int tf_kp = tf_it0 + {d};
        if (tf_kp < {kt}) {{
          if (tf_cur) tfx_prefetch_l2(tf_cur + tf_kp * 128);
        }} else if (tf_has_next) {{
          if (tf_kp == {kt}) {{
            tf::mbar_wait(&tf_ixbar[tf_buf ^ 1], ((tf_n + 1) / 2) & 1);
            tf_nxt = tf_row(tf_buf ^ 1);
          }}
          if (tf_nxt) tfx_prefetch_l2(tf_nxt + (tf_kp - {kt}) * 128);
        }}
      }}
      tf_git += {kt};
      tf_cur = tf_nxt;
      ++tf_n;
'''
    s = s.replace(old_issue, new_issue)
    s = f"// tilefuse-override: dynamic_shared_bytes={ix_off + 2048}\n" + s
    open(out_path, "w").write(s)


if __name__ == "__main__":
    main()
