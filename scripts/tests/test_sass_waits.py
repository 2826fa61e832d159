#!/usr/bin/env python3
"""scripts/sass_waits.py on made-up SASS: it counts the exponentials and shuffles between each
`wait<1>` and the next `wait<0>` of a kernel, per kernel, and nothing outside those spans.

    python3 scripts/tests/test_sass_waits.py      (exits 1 naming the first failure)
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sass_waits import waits_per_kernel  # noqa: E402

SASS = """
Fatbin elf code:
================
        Function : _Z6lifted
        /*0000*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;   /* 0x0 */
        /*0010*/                   FMNMX R2, R3, R4, !PT ;           /* 0x0 */
        /*0020*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;   /* 0x0 */
        /*0030*/                   SHFL.BFLY PT, R5, R2, 0x1, 0x1f ; /* 0x0 */
        /*0040*/                   MUFU.EX2 R6, R6 ;                 /* 0x0 */
        Function : _Z4held
        /*0000*/                   MUFU.EX2 R6, R6 ;                 /* 0x0 */
        /*0010*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;   /* 0x0 */
        /*0020*/                   SHFL.BFLY PT, R5, R2, 0x1, 0x1f ; /* 0x0 */
        /*0030*/                   MUFU.EX2 R6, R6 ;                 /* 0x0 */
        /*0040*/              @!P0 MUFU.EX2 R7, R7 ;                 /* 0x0 */
        /*0050*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;   /* 0x0 */
        /*0060*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;   /* 0x0 */
        /*0070*/                   MUFU.EX2 R6, R6 ;                 /* 0x0 */
        /*0080*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;   /* 0x0 */
        Function : _Z7nowaits
        /*0000*/                   MUFU.EX2 R6, R6 ;                 /* 0x0 */
"""


def main() -> int:
    got = waits_per_kernel(SASS.splitlines(keepends=True))
    want = [("_Z6lifted", [(0, 0)]), ("_Z4held", [(2, 1), (1, 0)])]
    if got != want:
        print(f"sass_waits: got {got}, want {want}")
        return 1
    print("sass_waits: 2 kernels, 3 spans between waits, counted as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
