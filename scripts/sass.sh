#!/usr/bin/env bash
# The SASS of a generated kernel, on the development machine (no GPU needed):
# nvcc (CUDA 13.0, /usr/local/cuda) builds the sm_90a cubin, and the
# `nvdisasm` of Debian's non-free nvidia-cuda-toolkit (CUDA 11.8) prints it
# once the cubin's ELF header is set back to the form it reads (ABI version
# 7, e_flags 0x5a055a; CUDA 13 writes ABI version 8 and a new e_flags
# layout). 11.8's disassembler decodes sm_90's HGMMA, SYNCS, UTMALDG, ... .
# The .deb is fetched once into $TF_TOOLS (default ~/.cache/tilefuse-tools)
# with a private apt list: nothing is installed and /etc/apt is not touched.
# A development aid only: CI does not use it (docs/device-notes.md, session
# 26).
#
#   scripts/sass.sh KERNEL.cu [OUT.sass]    # KERNEL.cu: one `emit --stage cuda` kernel
#   scripts/sass.sh --cubin K.cubin [OUT.sass]
#   scripts/sass_lookahead.py OUT.sass      # register_a: how far ahead A's loads run
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TOOLS="${TF_TOOLS:-$HOME/.cache/tilefuse-tools}"
NVDISASM="$TOOLS/usr/bin/nvdisasm"

fetch_nvdisasm() {
  [[ -x "$NVDISASM" ]] && return 0
  local apt="$TOOLS/apt"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
  echo "deb http://deb.debian.org/debian bookworm non-free" > "$apt/sources.list"
  local opts=(-q -o "Dir::Etc::sourcelist=$apt/sources.list" -o "Dir::Etc::sourceparts=-"
              -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache")
  apt-get "${opts[@]}" update >&2
  (cd "$apt" && apt-get "${opts[@]}" download nvidia-cuda-toolkit >&2)
  dpkg -x "$apt"/nvidia-cuda-toolkit_*.deb "$TOOLS"
  rm -f "$apt"/nvidia-cuda-toolkit_*.deb
  [[ -x "$NVDISASM" ]] || { echo "sass.sh: no nvdisasm in the package" >&2; exit 1; }
}

if [[ "${1:-}" == "--cubin" ]]; then
  cubin="$2"; out="${3:-/dev/stdout}"
else
  src="${1:?usage: scripts/sass.sh KERNEL.cu [OUT.sass]}"; out="${2:-/dev/stdout}"
  cubin="$(mktemp --suffix=.cubin)"
  trap 'rm -f "$cubin" "$cubin.old"' EXIT
  # -Xptxas -v: registers and spills on stderr.
  "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" -arch=sm_90a -cubin -o "$cubin" -Xptxas -v \
    -diag-suppress 177,550,549 -I "$ROOT/src/runtime/device" -x cu "$src" 2>&1 |
    grep -E "spill|Used|C75[0-9][0-9]" >&2 || true
fi
fetch_nvdisasm
python3 - "$cubin" "$cubin.old" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
if b[:4] != b"\x7fELF":
    sys.exit("sass.sh: not an ELF cubin: " + sys.argv[1])
b[7], b[8] = 0x33, 7                        # OS/ABI CUDA, ABI version 7
struct.pack_into("<I", b, 0x30, 0x5a055a)  # e_flags: sm_90, virtual sm_90, 64-bit
open(sys.argv[2], "wb").write(b)
EOF
"$NVDISASM" -c "$cubin.old" > "$out"
rm -f "$cubin.old"
