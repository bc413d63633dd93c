#!/usr/bin/env python3
"""How far ahead of its wgmma a register_a kernel's A loads run, from its SASS
(scripts/sass.sh). The source loads k-tile i + 3's fragments at k-step i; ptxas
may move them down (bench/RESULTS.md, session 26: one k-tile ahead under an
inline report in the tile loop). Four HGMMAs make a k-step (eight where each
k16 step is two m64n128 chains: --per-ktile 8); a fragment load is an
LDG at [row + 0x80 * k] (a 64-element bf16/f16 k-tile is 128 bytes). For each
k-tile loaded in the main loop, prints k-tile - the k-step it is loaded in.

The lead that hides latency is the first read of the loaded registers, not the
load: ptxas copies a 16-byte load's words into wgmma's register order
(IMAD.MOV) and may place the copies a k-tile after the load (bench/RESULTS.md,
session 46), where the copy waits on the load's scoreboard. So the second line
gives, per k-tile, the fewest k-steps between any of its loads and the first
instruction that reads that load's registers (an HGMMA's A operand is 4
registers); a load whose registers are never read counts as its consumer's
k-step being the tile's own. An instruction's k-step is the number of HGMMAs
before it over N, so a load issued after k-step i's HGMMAs counts as k-step
i + 1: a load the source issues at k-step i for k-tile i + 3 reads 2 here, and
a first read 2 k-steps after its load is what the 32-bit form gives.

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


WIDTH = {"128": 4, "64": 2}


def opcode(s):
    """An instruction's opcode with its modifiers (after any @P guard)."""
    return s.split()[1 if s.startswith("@") else 0]


def dest_registers(s):
    """The registers an LDG writes: R<n> and its width (.64, .128)."""
    m = re.search(r"LDG\S*\s+R(\d+),", s)
    if not m:
        return set()
    width = 1
    for w, n in WIDTH.items():
        if f".{w}" in opcode(s):
            width = n
    base = int(m.group(1))
    return set(range(base, base + width))


def read_registers(s):
    """The registers an instruction reads (its operands after the first; an
    HGMMA's register A operand covers 4)."""
    body = re.sub(r"^@!?P\w+\s+", "", s)
    op, _, rest = body.partition(" ")
    operands = [o.strip() for o in rest.split(",")]
    regs = set()
    sources = operands[1:] if not op.startswith(("ST", "HGMMA")) else operands
    if op.startswith("HGMMA"):
        m = re.fullmatch(r"R(\d+)", operands[1]) if len(operands) > 1 else None
        if m:
            regs |= set(range(int(m.group(1)), int(m.group(1)) + 4))
        return regs
    for o in sources:
        for r in re.findall(r"\bR(\d+)\b", o):
            regs.add(int(r))
    return regs


def fragment_loads(ins, prologue_tiles=3):
    """(instruction index, k-tile) of each fragment load (an LDG other than the
    index's 64-bit loads). The 16-byte form addresses k-tile t at
    [row + 0x80 * t + chunk]; the 32-bit form (fragment_word_loads) steps its
    base register instead, so there the k-tile comes from the load's place in
    program order: the loads before the first HGMMA are the first
    `prologue_tiles` k-tiles."""
    hgmma = [i for i, s in enumerate(ins) if "HGMMA" in s]
    loads = []
    for i, s in enumerate(ins):
        if "LDG" not in s or ".64." in opcode(s) + ".":
            continue
        m = re.search(r"\[R\d+\.64(?:\+0x([0-9a-f]+))?\]", s)
        if m:
            loads.append((i, int(m.group(1) or "0", 16)))
    if not loads or not hgmma:
        return []
    if max(off for _, off in loads) >= 128:
        return [(i, off // 128) for i, off in loads]
    per_tile = max(1, sum(1 for i, _ in loads if i < hgmma[0]) // prologue_tiles)
    return [(i, n // per_tile) for n, (i, _) in enumerate(loads)]


def use_lead(ins, first, last, per_ktile=4):
    """Per k-tile in [first, last]: the fewest k-steps from one of its main-loop
    fragment loads to the first read of that load's registers."""
    hgmma = [i for i, s in enumerate(ins) if "HGMMA" in s]
    if not hgmma:
        return {}
    step_of = []
    n = 0
    for i, s in enumerate(ins):
        step_of.append(n // per_ktile)
        if "HGMMA" in s:
            n += 1
    lead = {}
    for i, tile in fragment_loads(ins):
        if i <= hgmma[0] or i >= hgmma[-1] or not first <= tile <= last:
            continue
        dest = dest_registers(ins[i])
        use = None
        for j in range(i + 1, len(ins)):
            if read_registers(ins[j]) & dest:
                use = j
                break
        used_step = step_of[use] if use is not None else tile
        d = used_step - step_of[i]
        lead[tile] = min(lead.get(tile, d), d)
    return dict(sorted(lead.items()))


def lookahead(ins, first, last, per_ktile=4):
    hgmma = [i for i, s in enumerate(ins) if "HGMMA" in s]
    if not hgmma:
        return {}
    loaded = {}
    for i, tile in fragment_loads(ins):
        if i <= hgmma[0] or i >= hgmma[-1]:
            continue
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
    used = use_lead(instructions(argv[1]), first, last, per_ktile)
    print("first read: " + " ".join(f"{t}:{a}" for t, a in used.items()))
    print(f"min {min(used.values())} max {max(used.values())} k-steps from a load to its first read")


if __name__ == "__main__":
    main(sys.argv)
