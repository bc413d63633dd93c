#!/usr/bin/env python3
"""How far ahead of its wgmma a register_a kernel's A loads run, from its SASS
(scripts/sass.sh). The source loads k-tile i + 3's fragments at k-step i; ptxas
may move them down (bench/RESULTS.md, session 26: one k-tile ahead under an
inline report in the tile loop). Four HGMMAs make a k-step (eight where each
k16 step is two m64n128 chains: --per-ktile 8); a fragment load is an
LDG at [row + 0x80 * k] (a 64-element bf16/f16 k-tile is 128 bytes). For each
k-tile loaded in the main loop, prints k-tile - the k-step it is loaded in.

    scripts/sass_lookahead.py KERNEL.sass [--tiles FIRST LAST] [--per-ktile N]   (default 3 15, 4)
"""
import re
import sys


def instructions(path):
    out = []
    for line in open(path):
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s*(.*?);", line)
        if m:
            out.append(m.group(2).strip())
    return out


def lookahead(ins, first, last, per_ktile=4):
    hgmma = [i for i, s in enumerate(ins) if "HGMMA" in s]
    if not hgmma:
        return {}
    loaded = {}
    for i, s in enumerate(ins[: hgmma[-1]]):
        if "LDG" not in s or i <= hgmma[0]:
            continue
        m = re.search(r"\[R\d+\.64\+0x([0-9a-f]+)\]", s)
        if not m:
            continue
        tile = int(m.group(1), 16) // 128
        step = sum(1 for h in hgmma if h < i) // per_ktile
        if first <= tile <= last:
            loaded.setdefault(tile, step)
    return {t: t - s for t, s in sorted(loaded.items())}


def main(argv):
    args = argv[2:]
    first, last, per_ktile = 3, 15, 4
    try:
        while args:
            if args[0] == "--tiles":
                first, last, args = int(args[1]), int(args[2]), args[3:]
            elif args[0] == "--per-ktile":
                per_ktile, args = int(args[1]), args[2:]
            else:
                raise ValueError(args[0])
    except (IndexError, ValueError):
        sys.exit(__doc__)
    if len(argv) < 2:
        sys.exit(__doc__)
    ahead = lookahead(instructions(argv[1]), first, last, per_ktile)
    if not ahead:
        sys.exit("sass_lookahead.py: no HGMMA or no fragment loads in " + argv[1])
    print(" ".join(f"{t}:{a}" for t, a in ahead.items()))
    print(f"min {min(ahead.values())} max {max(ahead.values())} k-tiles ahead")


if __name__ == "__main__":
    main(sys.argv)
