#!/usr/bin/env python3
"""A digest of the product library's device code, to show that a change of layout, names or host
code left every kernel the same. Re-runs the compile command of each CUDA unit of the library
fa2::flash_attention (from BUILD_DIR/compile_commands.json; configure with
-DCMAKE_EXPORT_COMPILE_COMMANDS=ON, as the presets do) with nvcc --keep, and writes OUT/index.txt:
one line per PTX .entry and .func, the hash of its body and its demangled name, with the name of
the fa2 namespace it lives in replaced (a renamed namespace changes mangled names and nothing else).
Two builds whose index.txt hold the same hashes compiled the same device code; the same PTX
through the same ptxas gives the same SASS.

    scripts/device_code_digest.py BUILD_DIR OUT
    diff <(cut -d' ' -f1 BEFORE/index.txt | sort) <(cut -d' ' -f1 AFTER/index.txt | sort)
"""

import glob
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys

MANGLED_NAMESPACE = re.compile(r"(_ZN3fa2)\d+[a-z_0-9]+?(E|\d)")


def units(build: str) -> list[tuple[list[str], str, str, str]]:
    """(command, directory, source, tag) of every CUDA unit of the product library."""
    out = []
    for c in json.load(open(os.path.join(build, "compile_commands.json"))):
        args, keep, skip = shlex.split(c["command"]), [], False
        # CMake writes "output" from 3.26 on; before, it is the argument of -o.
        output = c.get("output") or next((b for a, b in zip(args, args[1:]) if a == "-o"), "")
        if not c["file"].endswith(".cu") or "fa2_flash_attention" not in output or "_lab" in output:
            continue
        for a in args:
            if skip:
                skip = False
            elif a in ("-o", "-MF", "-MT"):
                skip = True
            elif a not in ("-c", "-MD", "-MMD"):
                keep.append(a)
        if keep[0].endswith("ccache"):
            keep = keep[1:]
        tag = os.path.basename(os.path.dirname(output)) + "_" + os.path.basename(c["file"])[: -len(".cu")]
        out.append((keep, c["directory"], c["file"], tag))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    build, out = argv
    os.makedirs(out, exist_ok=True)
    for cmd, directory, source, tag in units(build):
        keep_dir = os.path.join(out, tag)
        os.makedirs(keep_dir, exist_ok=True)
        cmd = cmd + ["-c", "-o", os.path.join(keep_dir, "unit.o"), "--keep", "--keep-dir", keep_dir]
        done = subprocess.run(cmd, cwd=directory, capture_output=True, text=True)
        if done.returncode:
            print(f"device_code_digest.py: {source} did not compile:\n{done.stderr[-3000:]}", file=sys.stderr)
            return 1
    entries = set()
    for ptx in sorted(glob.glob(os.path.join(out, "*", "*.ptx"))):
        text = open(ptx).read()
        for m in re.finditer(r"^\.(?:visible|weak)?\s*\.?(entry|func)\s+(\S+?)\s*\(.*?^\}", text, re.S | re.M):
            name = m.group(2)
            body = MANGLED_NAMESPACE.sub(r"\1X\2", m.group(0).replace(name, "NAME"))
            demangled = subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()
            entries.add((re.sub(r"fa2::\w+::", "fa2::X::", demangled), hashlib.sha256(body.encode()).hexdigest()[:16]))
    with open(os.path.join(out, "index.txt"), "w") as handle:
        for name, digest in sorted(entries):
            handle.write(f"{digest} {name}\n")
    print(f"{len(entries)} device functions, {len({d for _, d in entries})} distinct bodies: {out}/index.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
