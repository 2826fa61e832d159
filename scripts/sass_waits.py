#!/usr/bin/env python3
"""What runs between a kernel's two wgmma waits: reads `cuobjdump -sass` output and, for every
`WARPGROUP.DEPBAR.LE gsb0, 0x1` (all but the newest group of wgmma done) of each kernel, counts the
exponentials (`MUFU.EX2`) and shuffles (`SHFL`) before the next `WARPGROUP.DEPBAR.LE gsb0, 0x0`
(every group done). An overlapped loop written as "wait<1>, softmax, wait<0>" runs its softmax
beside the newest product only if those counts are the softmax's; `ptxas` may move the second
wait up above it (step 7's APPENDIX, D.12).

    cuobjdump -sass build/sm90/step07_benchmark/step07_bench | python3 scripts/sass_waits.py
    python3 scripts/sass_waits.py FILE.sass [--match SUBSTRING]

One line per kernel with such a wait: the (exponentials, shuffles) of each, then the demangled
name (c++filt when it is installed).
"""

import argparse
import re
import shutil
import subprocess
import sys
from typing import Iterable, TextIO

FUNCTION = re.compile(r"\s+Function : (\S+)")
INSTRUCTION = re.compile(r"\s+/\*[0-9a-f]{4,}\*/\s+(.*?);")


def waits_per_kernel(lines: Iterable[str]) -> list[tuple[str, list[tuple[int, int]]]]:
    """(mangled name, [(exponentials, shuffles) between each wait<1> and the next wait<0>])."""
    out: list[tuple[str, list[tuple[int, int]]]] = []
    name, counts, open_wait = None, [], None

    def close() -> None:
        if name is not None and counts:
            out.append((name, counts))

    for line in lines:
        m = FUNCTION.match(line)
        if m or line.startswith("Fatbin"):
            close()
            name, counts, open_wait = (m.group(1) if m else None), [], None
            continue
        m = INSTRUCTION.match(line)
        if name is None or not m:
            continue
        text = m.group(1)
        if "WARPGROUP.DEPBAR.LE gsb0, 0x1" in text:
            open_wait = [0, 0]
        elif "WARPGROUP.DEPBAR.LE gsb0, 0x0" in text:
            if open_wait is not None:
                counts.append((open_wait[0], open_wait[1]))
            open_wait = None
        elif open_wait is not None:
            opcode = re.sub(r"^@!?U?P\w+\s+", "", text).split()[0]
            if opcode.startswith("MUFU.EX2"):
                open_wait[0] += 1
            elif opcode.startswith("SHFL"):
                open_wait[1] += 1
    close()
    return out


def demangle(names: list[str]) -> list[str]:
    if not names or shutil.which("c++filt") is None:
        return names
    done = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sass", nargs="?", help="cuobjdump -sass output (default: standard input)")
    parser.add_argument("--match", default="", help="only kernels whose demangled name contains this")
    args = parser.parse_args()
    source: TextIO = open(args.sass) if args.sass else sys.stdin
    kernels = waits_per_kernel(source)
    names = demangle([k for k, _ in kernels])
    for (_, counts), name in zip(kernels, names):
        if args.match in name:
            print(" ".join(f"{e},{s}" for e, s in counts), name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
