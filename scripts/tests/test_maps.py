#!/usr/bin/env python3
"""The maps a reader follows name what is there: every path in the first column of the top
README's "Repository layout" block exists, and every relative link of the Markdown files of the
tree points to a file or folder that exists. In a starter kit (.starter-kit), what kits leave out
(scripts/lib/instructor_only.txt; INSTRUCTOR.md in a kit, which lacks that list) may be missing. And the layout of
step 7's kernels holds (step07_benchmark/kernels/README.md): no file of the product library
includes a file of the lab, and neither kernel family includes the other's headers. In a git
checkout, step 7's committed results stay at most a quarter of the tracked bytes.

    python3 scripts/tests/test_maps.py            (from anywhere; exits 1 naming each miss)
"""

import fnmatch
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
SKIP_DIRS = {".git", "build", "node_modules", "__pycache__"}


def instructor_only() -> list[str]:
    listing = ROOT / "scripts/lib/instructor_only.txt"
    if not listing.exists():
        return []
    patterns = []
    for line in listing.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            patterns.append(line.split(": ", 1)[-1])
    return patterns


def excused(rel: str) -> bool:
    """A name a starter kit leaves out, in a tree that is a starter kit (the kit holds neither
    INSTRUCTOR.md nor the list of what it leaves out, scripts/lib/instructor_only.txt)."""
    if not (ROOT / ".starter-kit").exists():
        return False
    patterns = instructor_only() or ["INSTRUCTOR.md"]
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel.rstrip("/") + "/x", p) for p in patterns)


def layout_paths(readme: str) -> list[str]:
    """The first column of the code block under "## Repository layout"."""
    section = readme.split("## Repository layout", 1)[1]
    block = FENCE.search(section).group(0).splitlines()[1:-1]
    names = []
    for line in block:
        if not line or line[0].isspace():
            continue  # a continuation of the description column
        first = re.split(r"\s{2,}", line, maxsplit=1)[0]
        for token in re.split(r",\s*|\s+\.\.\.\s+", first):
            token = token.strip()
            if "/" in token or "." in token:
                names.append(token)
    return names


def markdown_files() -> list[Path]:
    out = []
    for path in ROOT.rglob("*.md"):
        if not SKIP_DIRS.intersection(path.relative_to(ROOT).parts):
            out.append(path)
    return sorted(out)


KERNELS = "step07_benchmark/kernels"
PRODUCT_FOLDERS = ("product", "sm80", "sm90", "device", "ptx", "instances")
INCLUDE = re.compile(r'^\s*#\s*include\s+"step07_benchmark/kernels/(?P<folder>[a-z0-9_]+)/', re.M)


def layout_breaches() -> list[str]:
    """Includes that break the kernels' layout: the product reaching into the lab, or one kernel
    family into the other's folder (what they share lives in device/ and ptx/)."""
    out = []
    for folder in PRODUCT_FOLDERS:
        for path in sorted((ROOT / KERNELS / folder).glob("*")):
            for m in INCLUDE.finditer(path.read_text(errors="replace")):
                other = m.group("folder")
                if other == "lab" or {folder, other} == {"sm80", "sm90"}:
                    line = path.read_text(errors="replace").count("\n", 0, m.start()) + 1
                    out.append(f"{path.relative_to(ROOT)}:{line}: includes {KERNELS}/{other}/ (layout)")
    return out


RESULTS = "step07_benchmark/results/"
RESULTS_SHARE = 0.25


def results_share() -> list[str]:
    """Committed measurements may not crowd out the code: at most RESULTS_SHARE of the bytes git
    tracks (a copy without git, such as a starter kit, is not checked)."""
    import subprocess
    try:
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    sizes = {}
    for rel in listed.decode().split("\0"):
        path = ROOT / rel
        if rel and path.is_file():
            sizes[rel] = path.stat().st_size
    total = sum(sizes.values())
    results = sum(size for rel, size in sizes.items() if rel.startswith(RESULTS))
    if total and results > RESULTS_SHARE * total:
        return [f"{RESULTS}: {results} of {total} tracked bytes ({results / total:.1%}), more than "
                f"{RESULTS_SHARE:.0%}: gzip raw logs or remove superseded runs (results/README.md)"]
    return []


def main() -> int:
    if any(arg in ("-h", "--help") for arg in sys.argv[1:]):
        print(__doc__.strip())
        return 0
    misses = []
    readme = (ROOT / "README.md").read_text()
    names = layout_paths(readme)
    if len(names) < 10:
        misses.append(f"README.md: the layout block names only {len(names)} paths; the parser lost it")
    for name in names:
        if not (ROOT / name).exists() and not excused(name):
            misses.append(f"README.md (Repository layout): {name}")
    links = 0
    for md in markdown_files():
        text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), md.read_text(errors="replace"))
        for m in LINK.finditer(text):
            target = m.group("target").split("#")[0]
            if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
                continue
            links += 1
            resolved = (md.parent / target).resolve()
            rel = str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(resolved)
            if not resolved.exists() and not excused(rel):
                line = text.count("\n", 0, m.start()) + 1
                misses.append(f"{md.relative_to(ROOT)}:{line}: {m.group('target')}")
    misses += layout_breaches()
    misses += results_share()
    for miss in misses:
        print("missing:", miss)
    print(f"{len(names)} layout paths and {links} Markdown links checked, {len(misses)} missing")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
