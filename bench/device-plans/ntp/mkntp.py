#!/usr/bin/env python3
"""The next tile's gathered rows prefetched into L2, as hand-written variants of an emitted
persistent register_a kernel (session 40). Measured on an H100 (call28, call29; bench/RESULTS.md,
session 40): every variant is slower, 13-17% for whole rows and 1-4% for prodk4. The compiler
form (the row_prefetch pass, 9a155f8) was reverted on those numbers.

    mkntp.py EMITTED.cu OUT.cu VARIANT

Session 39's block timeline put register_a's excess at gather_heavy in the first two tiles (the
blocks start together, all their rows cold), not in the steady state. Here each tile's rows are
asked of L2 about one tile before the MMA warps load them, whole rows by
cp.async.bulk.prefetch.L2 (PTX ISA 9.7.9.25.4.4), not session 35's per-k-tile prefetch:

  mma    the MMA threads, which already load the next tile's index at the tile's start (tf_rav),
         prefetch its rows after the tile's first wgmma: each of a row's four quad threads one
         quarter of the row (a row is held by the 4 threads of a quad).
  mma1   mma, and at the kernel's entry the first tile's rows past the k-tiles the prologue loads.
  prod   the producer warpgroup: the next tile's 128 indices by one cp.async.bulk into shared
         memory (two buffers; a global index load in the producer moves ptxas's consumer schedule,
         session 33), then one whole-row prefetch a producer thread, after the tile's fifth stage
         is issued; a named barrier of the producer threads at each tile's start orders the
         buffers' reuse.
  prod1  prod, and the first tile's rows past the bytes the prologue's loads fetch (3 k-tiles by
         .L2::256B: 512 bytes), after the first four stages are issued (a third index buffer).

  prodca prod, but each producer thread copies its own row's index into its own 8-byte slot by
         cp.async (zero-fill where the row is masked) and reads it back after cp.async.wait_all:
         no mbarrier, no named barrier, and any index layout or tail (what the compiler would
         build if its SASS keeps the consumers' 3 k-tiles of lead).

  prodl2 prod, but each row by prefetch.global.L2 of each of its 128-byte lines (the LSU path)
         instead of one bulk prefetch (the TMA unit, which also serves B's boxes).
  prodk4 prod, but one bulk prefetch of the row's first 512 bytes (its first 4 k-tiles, which
         the MMA warps load across the tile boundary) instead of the whole row.

Prefetches change no value. `prod` stages 2 KiB more shared memory, `prod1` 3 KiB.
"""
import re
import sys

HELPER = '''
// [ntp] PTX ISA 9.7.9.25.4.4: cp.async.bulk.prefetch.L2 (size a multiple of 16, address 16-aligned)
__device__ __forceinline__ void tfx_prefetch_bulk(const void* p, unsigned bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(p), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tfx_bulk_load(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
               "r"(tf::smem_addr(dst)), "l"(src), "r"(bytes), "r"(tf::smem_addr(bar)) : "memory");
}
'''


def main():
    src_path, out_path, var = sys.argv[1], sys.argv[2], sys.argv[3]
    s = open(src_path).read()
    kt = int(re.search(r"for \(int tf_it0 = 0; tf_it0 < (\d+); tf_it0 \+= 4\)", s).group(1))
    nt = int(re.search(r"for \(int tf_tile = static_cast<int>\(blockIdx\.x\); tf_tile < (\d+);", s).group(1))
    m = re.search(r"tf_rap\[tf_h\] = reinterpret_cast<const char\*>\(tf_ok \? &x\[\(\(idx\[(.*?)\] < 0ll\) \? "
                  r"\(idx\[.*?\] \+ (\d+)ll\) : idx\[.*?\]\) \* (\d+)ll", s)
    rows, stride = int(m.group(2)), int(m.group(3))
    elem = 2
    row_bytes = kt * 64 * elem
    quarter = row_bytes // 4
    assert quarter % 16 == 0
    s = s.replace('extern "C" __global__', HELPER + 'extern "C" __global__', 1)
    if var in ("mma", "mma1"):
        old = "        if (tf_i > 0) tf::mbar_arrive(&tf_empty[((tf_git + tf_i) + 3) % 4]);\n"
        assert s.count(old) == 1
        new = old + f'''        if (tf_i == 1 && tf_tile + static_cast<int>(gridDim.x) < {nt}) {{  // [ntp] the next tile's rows into L2
          #pragma unroll
          for (int tf_h = 0; tf_h < 2; ++tf_h) {{
            const long long tf_v = tf_rav[tf_h];
            if (tf_v >= -{rows}ll && tf_v < {rows}ll)
              tfx_prefetch_bulk(reinterpret_cast<const char*>(&x[((tf_v < 0ll) ? (tf_v + {rows}ll) : tf_v) * {stride}ll]) + (tf_tid % 4) * {quarter}, {quarter});
          }}
        }}
'''
        s = s.replace(old, new)
    if var == "mma1":
        old = "    // the index checks of this thread's rows (CopyPlan::row_checks)\n"
        assert s.count(old) == 1
        # the prologue loads k-tiles 0..2 (3 x 128 bytes); prefetch the rest of each row, split by the quad
        rest = row_bytes - 3 * 128
        part = (rest // 4) // 16 * 16
        new = f'''    // [ntp] the first tile's rows past the prologue's k-tiles into L2
    #pragma unroll
    for (int tf_h = 0; tf_h < 2; ++tf_h) {{
      if (tf_rao[tf_h]) tfx_prefetch_bulk(tf_rap[tf_h] - C_f.fragment_chunk_bytes() + 384 + (tf_tid % 4) * {part}, (tf_tid % 4) == 3 ? {rest - 3 * part} : {part});
    }}
''' + old
        s = s.replace(old, new)
    if var in ("prod", "prod1", "prodl2", "prodk4"):
        m = re.search(r"tf_smem \+ (\d+) \+ \(tf_tid / 32\) \* (\d+);  // this warp's buffers", s)
        ix_off = int(m.group(1)) + 8 * int(m.group(2))
        assert "tf_empty = tf_full + 4;" in s
        s = s.replace("      tf::mbar_init(&tf_empty[tf_s], kMmaThreads);\n    }",
                      "      tf::mbar_init(&tf_empty[tf_s], kMmaThreads);\n    }\n"
                      "    tf::mbar_init(tf_empty + 4, 1);  // [ntp] the index buffers\n"
                      "    tf::mbar_init(tf_empty + 5, 1);\n"
                      "    tf::mbar_init(tf_empty + 6, 1);", 1)
        pm = re.search(r"(      const int pid = tf_tile;\n(?:      const int .*\n)*?      const int cse = \(pid_m \* 128\);\n)", s)
        pid_lines = pm.group(1)
        head = f'''    // [ntp] the next tile's rows into L2, its index staged by a bulk copy
    unsigned long long* tf_ixbar = tf_empty + 4;
    const long long* tf_ixs = reinterpret_cast<const long long*>(tf_smem + {ix_off});
    auto tf_ix_copy = [&](int tf_t, int tf_b) {{
      const int tf_tile = tf_t;
{pid_lines}      tf::mbar_arrive_expect_tx(&tf_ixbar[tf_b], 1024);
      tfx_bulk_load(tf_smem + {ix_off} + tf_b * 1024, idx + pid_m * 128, 1024, &tf_ixbar[tf_b]);
    }};
    int tf_n = 0;  // this block's tiles before
'''
        if var == "prod1":
            head += f'''    if (tf_ptid == 0 && static_cast<int>(blockIdx.x) < {nt}) tf_ix_copy(static_cast<int>(blockIdx.x), 2);
'''
        loop_head = f"    for (int tf_tile = static_cast<int>(blockIdx.x); tf_tile < {nt}; tf_tile += static_cast<int>(gridDim.x)) {{\n"
        i = s.index("    int tf_git = 0;  // the ring iterations of the tiles before\n" + loop_head)
        s = s[:i] + head + s[i:]
        tile_start = f'''      const int tf_buf = tf_n % 2;
      asm volatile("bar.sync 1, 128;" ::: "memory");  // [ntp] every producer thread has read buffer tf_buf (two tiles ago)
      const bool tf_has_next = tf_tile + static_cast<int>(gridDim.x) < {nt};
      if (tf_ptid == 0 && tf_has_next) tf_ix_copy(tf_tile + static_cast<int>(gridDim.x), tf_buf);
'''
        j = s.index(loop_head) + len(loop_head)
        j = s.index("      auto tf_issue", j)
        s = s[:j] + tile_start + s[j:]
        old_issue = "        tf_issue(0 + tf_it0, tf_stage);\n      }\n      tf_git += %d;\n" % kt
        assert s.count(old_issue) == 1
        first = ""
        if var == "prod1":
            first = f'''        if (tf_it0 == 3 && tf_n == 0) {{  // [ntp] the first tile's rows past the prologue's bytes
          tf::mbar_wait(&tf_ixbar[2], 0);
          const long long tf_r = tf_ixs[2 * 128 + tf_ptid];
          if (tf_r >= -{rows}ll && tf_r < {rows}ll)
            tfx_prefetch_bulk(reinterpret_cast<const char*>(&x[((tf_r < 0ll) ? (tf_r + {rows}ll) : tf_r) * {stride}ll]) + 512, {row_bytes - 512});
        }}
'''
        addr = f"&x[((tf_r < 0ll) ? (tf_r + {rows}ll) : tf_r) * {stride}ll]"
        pf = {"prodl2": f"for (int tf_q = 0; tf_q < {row_bytes // 128}; ++tf_q) asm volatile(\"prefetch.global.L2 [%0];\" :: \"l\"(reinterpret_cast<const char*>({addr}) + tf_q * 128));",
              "prodk4": f"tfx_prefetch_bulk({addr}, 512);"}.get(var, f"tfx_prefetch_bulk({addr}, {row_bytes});")
        new_issue = f'''        tf_issue(0 + tf_it0, tf_stage);
{first}        if (tf_it0 == 4 && tf_has_next) {{  // [ntp] one whole row a producer thread
          tf::mbar_wait(&tf_ixbar[tf_buf], (tf_n / 2) & 1);
          const long long tf_r = tf_ixs[tf_buf * 128 + tf_ptid];
          if (tf_r >= -{rows}ll && tf_r < {rows}ll)
            {pf}
        }}
      }}
      tf_git += {kt};
      ++tf_n;
'''
        s = s.replace(old_issue, new_issue)
        # the buffer tf_buf is rewritten two tiles later: every producer thread has read it by then,
        # as each waits on the `empty` ring of the tile between (it reads at k-tile 4 of its tile,
        # and thread 0 rewrites it at the start of the tile after next).
        s = f"// tilefuse-override: dynamic_shared_bytes={ix_off + (3072 if var == 'prod1' else 2048)}\n" + s
    if var == "prodca":
        m = re.search(r"tf_smem \+ (\d+) \+ \(tf_tid / 32\) \* (\d+);  // this warp's buffers", s)
        ix_off = int(m.group(1)) + 8 * int(m.group(2))
        pm = re.search(r"(      const int pid = tf_tile;\n(?:      const int .*\n)*?      const int cse = \(pid_m \* 128\);\n)", s)
        pid_lines = pm.group(1)
        loop_head = f"    for (int tf_tile = static_cast<int>(blockIdx.x); tf_tile < {nt}; tf_tile += static_cast<int>(gridDim.x)) {{\n"
        head = f'''    // [ntp] the next tile's rows into L2; each producer thread's index slot
    long long* tf_ixs = reinterpret_cast<long long*>(tf_smem + {ix_off}) + tf_ptid;
'''
        i = s.index("    int tf_git = 0;  // the ring iterations of the tiles before\n" + loop_head)
        s = s[:i] + head + s[i:]
        tile_start = f'''      const bool tf_has_next = tf_tile + static_cast<int>(gridDim.x) < {nt};
      if (tf_has_next) {{
        const int tf_tile = tf_tile + static_cast<int>(gridDim.x);
{pid_lines}        const bool tf_in = pid_m * 128 + tf_ptid < {rows};
        tf::cp_async_sized<8, true>(tf::smem_addr(tf_ixs), &idx[tf_in ? pid_m * 128 + tf_ptid : 0], tf_in ? 8u : 0u);
        tf::cp_async_commit();
      }}
'''.replace("const int tf_tile = tf_tile +", "const int tf_next_tile = tf_tile +").replace("const int pid = tf_tile;", "const int pid = tf_next_tile;")
        j = s.index(loop_head) + len(loop_head)
        j = s.index("      auto tf_issue", j)
        s = s[:j] + tile_start + s[j:]
        old_issue = "        tf_issue(0 + tf_it0, tf_stage);\n      }\n      tf_git += %d;\n" % kt
        assert s.count(old_issue) == 1
        new_issue = f'''        tf_issue(0 + tf_it0, tf_stage);
        if (tf_it0 == 4 && tf_has_next) {{  // [ntp] one whole row a producer thread
          tf::cp_async_wait_all();
          const long long tf_r = *static_cast<volatile long long*>(tf_ixs);
          if (tf_r >= -{rows}ll && tf_r < {rows}ll)
            tfx_prefetch_bulk(&x[((tf_r < 0ll) ? (tf_r + {rows}ll) : tf_r) * {stride}ll], {row_bytes});
        }}
      }}
      tf_git += {kt};
'''
        s = s.replace(old_issue, new_issue)
        s = f"// tilefuse-override: dynamic_shared_bytes={ix_off + 1024}\n" + s
    open(out_path, "w").write(s)


if __name__ == "__main__":
    main()
