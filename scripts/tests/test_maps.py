#!/usr/bin/env python3
"""The maps a reader follows name what is there: every path in the first column of the top
README's "Repository layout" block exists, and every relative link of the Markdown files of the
tree points to a file or folder that exists (scripts/lib/kit.py's link check). In a starter kit,
what kits leave out may be missing from the layout block. The layout of step 7's kernels holds
(step07_benchmark/kernels/README.md): no file of the product library includes a file of the lab,
and neither kernel family includes the other's headers. Outside a kit, step 7's committed results
stay at most a quarter of the repository's bytes.

    python3 scripts/tests/test_maps.py            (from anywhere; exits 1 naming each miss)
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "lib"))
import kit  # noqa: E402  (the kit generator's file listing and link check)


def excused(rel: str) -> bool:
    """A name a starter kit leaves out, in a tree that is a starter kit (the kit holds neither
    INSTRUCTOR.md nor the list of what it leaves out, scripts/lib/instructor_only.txt)."""
    if not (ROOT / kit.MARKER_FILE).exists():
        return False
    return kit.is_instructor_only(rel, kit.instructor_only_patterns(ROOT, "full") or ["INSTRUCTOR.md"])


def layout_paths(readme: str) -> list[str]:
    """The first column of the code block under "## Repository layout"."""
    section = readme.split("## Repository layout", 1)[1]
    block = kit.MD_FENCE.search(section).group(0).splitlines()[1:-1]
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
    """Committed measurements may not crowd out the code: at most RESULTS_SHARE of the repository's
    bytes (a starter kit, which leaves files out, is not checked)."""
    if (ROOT / kit.MARKER_FILE).exists():
        return []
    sizes = {rel: (ROOT / rel).stat().st_size for rel in kit.repository_files(ROOT)}
    total = sum(sizes.values())
    results = sum(size for rel, size in sizes.items() if rel.startswith(RESULTS))
    if total and results > RESULTS_SHARE * total:
        return [f"{RESULTS}: {results} of {total} bytes ({results / total:.1%}), more than "
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
    # Every relative link of the tree's Markdown: the kit generator's own check (a kit's links were
    # checked when it was generated, and its files are its list).
    in_kit = (ROOT / kit.MARKER_FILE).exists()
    misses += kit.broken_links(ROOT, None if in_kit else kit.repository_files(ROOT))
    misses += layout_breaches()
    misses += results_share()
    for miss in misses:
        print("missing:", miss)
    print(f"{len(names)} layout paths, the Markdown links, the kernels' layout and the results' share "
          f"checked: {len(misses)} missing")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
