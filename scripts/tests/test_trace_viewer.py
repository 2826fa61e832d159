#!/usr/bin/env python3
"""The trace viewer (common/viewer/trace_viewer.html) in a real browser: headless Chromium, driven
through Selenium and Debian's chromium-driver, opens the page from file:// on shipped traces and
on traces the demos write in this run, steps to chosen events (arrows, buttons, slider, the event
list) and checks that what the page shows equals the trace: the tile, the mask, m_i, l_i, alpha.
The browser console must stay free of errors.

    /usr/bin/python3 scripts/tests/test_trace_viewer.py [--build build/cpu-only] [--work DIR]

Needs `apt-get install chromium chromium-driver python3-selenium` (Debian 12) and the demos of
steps 2, 3 and 5 built in --build. Prints one line per check ("viewer: PASS ...") and ends with a
summary line; exits 1 when a check fails, 2 when the browser or a demo is missing.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VIEWER = ROOT / "common" / "viewer" / "trace_viewer.html"
TRACES = ROOT / "common" / "viewer" / "traces"

if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):  # the usage, with or without selenium
    print(__doc__)
    sys.exit(0)

try:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    print("test_trace_viewer.py: selenium is missing: apt-get install python3-selenium, and run this with the "
          "system's /usr/bin/python3, which that package installs into", file=sys.stderr)
    sys.exit(2)


class CheckFailed(AssertionError):
    pass


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


# ---- what the page must show, computed from the trace itself ------------------------------------

def slice_text(name: str, offsets: list[int], block: list[int]) -> str:
    return name + "[" + ", ".join(f"{o}:{o + b}" for o, b in zip(offsets, block)) + "]"


def tile_text(e: dict) -> str:
    """#current-tile for an event (trace_viewer.js, tileText)."""
    if e["kind"] in ("load", "store"):
        return slice_text(e["tensor"], e["offsets"], e["block"])
    if e["kind"] == "key_tile":
        return f"S[{e['q_start']}:{e['q_start'] + e['rows']}, {e['k_start']}:{e['k_start'] + e['cols']}]"
    return f"rows {e['first_row']}:{e['first_row'] + len(e['m'])} after key tile {e['key_tile']}"


def same_value(shown: str, value) -> bool:
    """A displayed number equals the trace's when it reads back as the same double; "inf" and the
    like as the same word."""
    if isinstance(value, str):
        return shown == value
    try:
        return float(shown) == float(value)
    except ValueError:
        return False


def last_state_before(events: list[dict], index: int) -> dict | None:
    for e in reversed(events[:index + 1]):
        if e["kind"] == "state":
            return e
    return None


# ---- the browser -------------------------------------------------------------------------------

def start_browser() -> webdriver.Chrome:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    if chromium is None or not Path(driver).exists():
        print("test_trace_viewer.py: chromium or chromedriver is missing: apt-get install chromium chromium-driver",
              file=sys.stderr)
        sys.exit(2)
    options = Options()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,1000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


class Page:
    """The viewer in the browser, read through the ids and classes trace_viewer.html documents."""

    def __init__(self, browser: webdriver.Chrome):
        self.b = browser
        self.console: list[dict] = []

    def open(self, query: str = "") -> None:
        self.b.get(VIEWER.as_uri() + query)
        WebDriverWait(self.b, 10).until(lambda b: b.execute_script("return document.readyState") == "complete")

    def text(self, element_id: str) -> str:
        return self.b.find_element(By.ID, element_id).text

    def position(self) -> tuple[int, int]:
        words = self.text("position").split()  # "event 3 of 24"
        return int(words[1]), int(words[3])

    def column(self, element_id: str) -> list[str]:
        return [e.text for e in self.b.find_elements(By.CSS_SELECTOR, f"#{element_id} .v")]

    def press(self, key: str, times: int = 1) -> None:
        for _ in range(times):
            ActionChains(self.b).send_keys(key).perform()

    def click(self, element_id: str) -> None:
        self.b.find_element(By.ID, element_id).click()

    def go_to(self, index: int) -> None:
        """Event `index` (0-based), the way a reader gets there: Home, then the right arrow."""
        self.b.find_element(By.ID, "trace-title").click()  # focus the page, not a control
        self.press(Keys.HOME)
        self.press(Keys.ARROW_RIGHT, index)
        expect(self.position()[0] == index + 1, f"after Home and {index} right arrows the page shows event "
               f"{self.position()[0]}, not {index + 1}")

    def load_file(self, path: Path, title_part: str) -> None:
        self.b.find_element(By.ID, "trace-file").send_keys(str(path))
        WebDriverWait(self.b, 10).until(lambda b: title_part in b.find_element(By.ID, "trace-title").text or
                                        b.find_element(By.ID, "error").is_displayed())
        expect(not self.b.find_element(By.ID, "error").is_displayed(),
               f"loading {path.name} shows an error: {self.text('error')}")

    def drain_console(self) -> list[dict]:
        entries = self.b.get_log("browser")
        self.console.extend(entries)
        return entries


def check_event(page: Page, trace: dict, index: int, what: str) -> str:
    """The page at event `index` shows that event's tile, its mask, and the state it implies."""
    events = trace["events"]
    e = events[index]
    expect(page.position() == (index + 1, len(events)), f"{what}: position {page.position()}, expected "
           f"({index + 1}, {len(events)})")
    shown_tile = page.text("current-tile")
    expect(shown_tile == tile_text(e), f"{what}: #current-tile shows {shown_tile!r}, the trace says {tile_text(e)!r}")
    details = [shown_tile]
    masked = next((x for x in reversed(events[:index + 1]) if "mask" in x), None)
    if masked is not None:
        inside = sum(row.count("1") for row in masked["mask"])
        cells = page.b.find_elements(By.CSS_SELECTOR, "#mask .m")
        cells_in = page.b.find_elements(By.CSS_SELECTOR, "#mask .m.in")
        size = len(masked["mask"]) * len(masked["mask"][0])
        expect(len(cells) == size and len(cells_in) == inside,
               f"{what}: the mask shows {len(cells_in)} of {len(cells)} cells inside, the trace {inside} of {size}")
        details.append(f"mask {inside}/{size}")
    if trace["view"] == "attention":
        state = last_state_before(events, index)
        m, l, alpha = page.column("m-values"), page.column("l-values"), page.column("alpha-values")
        if state is None:
            expect(all(v == "-inf" for v in m) and all(v == "0" for v in l),
                   f"{what}: before the first key tile the rows must start at m = -inf, l = 0, shown {m[:3]}, {l[:3]}")
            details.append("start state")
        else:
            for name, shown, wanted in (("m_i", m, state["m"]), ("l_i", l, state["l"]), ("alpha", alpha, state["alpha"])):
                expect(len(shown) == len(wanted) and all(same_value(s, w) for s, w in zip(shown, wanted)),
                       f"{what}: {name} shows {shown[:4]}..., the trace's state after key tile {state['key_tile']} "
                       f"has {wanted[:4]}...")
            rows = [int(x.get_attribute("data-row")) for x in page.b.find_elements(By.CSS_SELECTOR, "#m-values .v")]
            expect(rows == list(range(state["first_row"], state["first_row"] + len(state["m"]))),
                   f"{what}: the state rows are {rows[:3]}..., the trace's start at {state['first_row']}")
            padded = len(page.b.find_elements(By.CSS_SELECTOR, "#m-values .v.padded"))
            wanted_padded = sum(1 for r in rows if r >= trace["problem"]["n_queries"])
            expect(padded == wanted_padded, f"{what}: {padded} rows marked padded, {wanted_padded} lie past N_q")
            details.append(f"m_i[0] {m[0]}, l_i[0] {l[0]} after key tile {state['key_tile']}")
        # The grid's outlined cell is the event's (query tile, key tile).
        now = page.b.find_elements(By.CSS_SELECTOR, "#grid rect.cell.now")
        if e["kind"] == "state":
            qt = e["first_row"] // trace["tiles"]["q_tile"]
            expect(len(now) == 1 and now[0].get_attribute("data-q-tile") == str(qt) and
                   now[0].get_attribute("data-k-tile") == str(e["key_tile"]),
                   f"{what}: the outlined grid cell is not ({qt}, {e['key_tile']})")
    else:
        outline = page.b.find_elements(By.CSS_SELECTOR, "#grid rect.in-tile")
        expect(len(outline) == e["block"][0] * e["block"][1],
               f"{what}: {len(outline)} tensor cells drawn inside the tile, the block has {e['block']}")
    return ", ".join(details)


# ---- the checks -------------------------------------------------------------------------------

def run_demo(build: Path, program: str, args: list[str], out: Path) -> None:
    exe = build / program
    if not exe.exists():
        print(f"test_trace_viewer.py: {exe} is not built (cmake --build {build} --target {exe.name})", file=sys.stderr)
        sys.exit(2)
    subprocess.run([str(exe), *args, f"--trace={out}"], check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=str(ROOT / "build" / "cpu-only"), help="a build with the demos")
    parser.add_argument("--work", default=None, help="where the demos write their traces (default: a temporary dir)")
    args = parser.parse_args()
    build = Path(args.build).resolve()
    work = Path(args.work or tempfile.mkdtemp(prefix="trace-viewer-")).resolve()
    work.mkdir(parents=True, exist_ok=True)

    # Traces written in this run by the demos (options other than the shipped ones).
    fresh = {
        "step05": (work / "step05_program_3_1_causal.json", "step05_fa2_kernel/step05_demo",
                   ["--host", "--trace-program=3,1", "--trace-causal"]),
        "step02": (work / "step02_causal.json", "step02_tiled_cpu/step02_demo", ["--trace-causal"]),
        "step03": (work / "step03_7x12.json", "step03_tile_pointer/step03_demo",
                   ["--rows=7", "--cols=12", "--tile-rows=4", "--tile-cols=8", "--program=1", "--step=1"]),
    }
    for path, program, demo_args in fresh.values():
        run_demo(build, program, demo_args, path)

    browser = start_browser()
    page = Page(browser)
    passed: list[str] = []
    failed: list[str] = []

    def check(name: str, body) -> None:
        problem = ""
        try:
            detail = body()
        except Exception as err:  # noqa: BLE001 - every failure is reported, then the next check runs
            problem = str(err)
            if not isinstance(err, CheckFailed):
                traceback.print_exc()
        errors = [e for e in page.drain_console() if e.get("level") == "SEVERE"]
        if errors:
            problem += ("; " if problem else "") + f"the browser console has errors: {errors}"
        if problem:
            failed.append(name)
            print(f"viewer: FAIL {name}: {problem}")
        else:
            passed.append(name)
            print(f"viewer: PASS {name}" + (f" ({detail})" if detail else ""))

    shipped = {p.name: json.loads(p.read_text()) for p in sorted(TRACES.glob("*.json"))}

    def shipped_step05_by_keys():
        trace = shipped["step05_noncausal.json"]
        page.open("?trace=step05_noncausal.json")
        expect(page.text("trace-title") == trace["title"], f"title {page.text('trace-title')!r}")
        events = trace["events"]
        states = [i for i, e in enumerate(events) if e["kind"] == "state"]
        last_k = max(i for i, e in enumerate(events) if e["kind"] == "load" and e["tensor"] == "K")
        shown = []
        for index in (0, states[0], states[3], last_k, states[-1], len(events) - 1):
            page.go_to(index)
            shown.append(check_event(page, trace, index, f"step05_noncausal event {index + 1}"))
        return f"{len(events)} events; " + "; ".join(shown[3:5])

    def shipped_buttons_and_slider():
        trace = shipped["step05_causal.json"]
        page.open("?trace=step05_causal.json&event=5")
        expect(page.position()[0] == 5, f"?event=5 opens event {page.position()[0]}")
        page.click("forward")
        page.click("forward")
        check_event(page, trace, 6, "after two clicks on forward")
        page.click("back")
        check_event(page, trace, 5, "after a click on back")
        slider = browser.find_element(By.ID, "slider")
        slider.send_keys(Keys.END)
        check_event(page, trace, len(trace["events"]) - 1, "slider moved to its end")
        browser.find_elements(By.CSS_SELECTOR, "#event-list li")[3].click()
        check_event(page, trace, 3, "a click on the 4th event of the list")
        expect(browser.find_element(By.ID, "back").is_enabled(), "back is disabled away from the first event")
        page.click("first")
        expect(not browser.find_element(By.ID, "back").is_enabled(), "back is enabled at the first event")
        return "forward, back, slider End, event list, first"

    def bug2_state_shows_the_padded_keys():
        # The same program of the fixed kernel and of bug 2, after the last key tile: l_i of every
        # real row is larger by 12 * exp(-m_i), the 12 zero keys that padded the last tile.
        shown = {}
        for name in ("step05_noncausal.json", "step06_bug2.json"):
            trace = shipped[name]
            page.open("?trace=" + name)
            last = max(i for i, e in enumerate(trace["events"]) if e["kind"] == "state")
            page.go_to(last)
            check_event(page, trace, last, name)
            shown[name] = ([float(v) for v in page.column("m-values")], [float(v) for v in page.column("l-values")])
        (m_ok, l_ok), (m_bug, l_bug) = shown["step05_noncausal.json"], shown["step06_bug2.json"]
        n_queries = shipped["step06_bug2.json"]["problem"]["n_queries"]
        first = shipped["step06_bug2.json"]["program"]["query_tile"] * 16
        for r in range(n_queries - first):
            extra = l_bug[r] - l_ok[r]
            wanted = 12 * math.exp(-m_bug[r])
            expect(m_bug[r] == m_ok[r], f"row {first + r}: m_i moved ({m_ok[r]} -> {m_bug[r]})")
            expect(abs(extra - wanted) <= 1e-4 * l_ok[r] + 1e-5,
                   f"row {first + r}: l_i grew by {extra:.6g}, 12 * exp(-m_i) is {wanted:.6g}")
        return f"row {first}: l_i {l_ok[0]} -> {l_bug[0]}, 12 * exp(-m_i) = {12 * math.exp(-m_bug[0]):.6g}"

    def demo_trace_step05():
        path = fresh["step05"][0]
        trace = json.loads(path.read_text())
        page.open()
        page.load_file(path, "program (3, 1)")
        expect("program (3, 1)" in page.text("trace-title") and "causal" in page.text("trace-title"),
               f"title {page.text('trace-title')!r}")
        events = trace["events"]
        states = [i for i, e in enumerate(events) if e["kind"] == "state"]
        expect(len(states) == trace["tiles"]["n_key_tiles"], f"{len(states)} states, one per key tile expected")
        details = []
        for index in (states[2], states[3] + 1, states[-1]):
            page.go_to(index)
            details.append(check_event(page, trace, index, f"{path.name} event {index + 1}"))
        # Causal, query tile 3 (rows 48..63): key tiles 4, 5, 6 lie wholly after every query of the row.
        grey = {c.get_attribute("data-k-tile") for c in browser.find_elements(
            By.CSS_SELECTOR, "#grid rect.cell.all-masked[data-q-tile='3']")}
        expect(grey == {"4", "5", "6"}, f"causal cells of query tile 3 drawn all-masked: {sorted(grey)}")
        return f"written by step05_demo now; {details[-1]}"

    def demo_trace_step02():
        path = fresh["step02"][0]
        trace = json.loads(path.read_text())
        page.open()
        page.load_file(path, "step 2")
        key_tiles = [i for i, e in enumerate(trace["events"]) if e["kind"] == "key_tile"]
        details = []
        for index in (key_tiles[0], key_tiles[-1], key_tiles[-1] + 1):
            page.go_to(index)
            details.append(check_event(page, trace, index, f"{path.name} event {index + 1}"))
        return "; ".join(details[1:])

    def demo_trace_step03():
        path = fresh["step03"][0]
        trace = json.loads(path.read_text())
        page.open()
        page.load_file(path, "step 3")
        details = []
        for index in range(len(trace["events"])):
            page.go_to(index)
            details.append(check_event(page, trace, index, f"{path.name} event {index + 1}"))
        # 7 x 12 with 4 x 8 tiles, program 1: rows 4..7, row 7 past the edge; columns 8..15, 12..15 past it.
        outside = browser.find_elements(By.CSS_SELECTOR, "#grid rect.tcell.outside")
        expect(len(outside) == 4 * 8 - 3 * 4, f"{len(outside)} tile cells drawn past the edge, 20 expected")
        return details[-1]

    def a_file_that_is_not_a_trace():
        bad = work / "not_a_trace.json"
        bad.write_text(json.dumps({"format": "something else", "events": []}))
        page.open()
        browser.find_element(By.ID, "trace-file").send_keys(str(bad))
        WebDriverWait(browser, 10).until(lambda b: b.find_element(By.ID, "error").is_displayed())
        expect("not an fa2-trace" in page.text("error"), f"the error says {page.text('error')!r}")
        return page.text("error")

    check("a shipped trace (step 5, non-causal) stepped with the keyboard shows each event's tile, mask and state",
          shipped_step05_by_keys)
    check("buttons, the slider and the event list move through a shipped trace (step 5, causal)",
          shipped_buttons_and_slider)
    check("bug 2's trace shows l_i larger by 12 * exp(-m_i) than the fixed kernel's: the padded keys",
          bug2_state_shows_the_padded_keys)
    check("a trace step05_demo wrote in this run (program (3, 1), causal), loaded through the file input",
          demo_trace_step05)
    check("a trace step02_demo wrote in this run (causal: short tiles, masked scores)", demo_trace_step02)
    check("a trace step03_demo wrote in this run (7 x 12, 4 x 8 tiles, the tile over the edge)", demo_trace_step03)
    check("a JSON file that is not a trace is refused on the page, not in the console", a_file_that_is_not_a_trace)

    version = browser.capabilities.get("browserVersion", "?")
    browser.quit()
    if failed:
        print(f"trace viewer: FAIL {len(failed)} of {len(passed) + len(failed)} checks failed in headless Chromium "
              f"{version}: {'; '.join(failed)}")
        return 1
    print(f"trace viewer: PASS {len(passed)} checks in headless Chromium {version}, console clean "
          f"({len(page.console)} messages, none an error)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except WebDriverException as err:
        print(f"test_trace_viewer.py: the browser failed: {err.msg}", file=sys.stderr)
        sys.exit(2)
