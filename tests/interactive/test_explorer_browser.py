"""The explorer in a real browser: ``flightcheck explorer`` driven by headless Chromium.

Selenium with Debian's chromium-driver: the driver is packaged with the browser at the same version, and
neither needs a download at run time (Playwright's client would fetch its own browser build, which this
machine cannot reach, or speak to Debian's Chromium through a protocol version it was not built for).
"""

from __future__ import annotations

import shutil
import subprocess
from urllib.parse import parse_qs, urlparse

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from flightcheck.checks.interactive.app import ExplorerApp
from flightcheck.checks.interactive.design import knobs
from flightcheck.checks.interactive.serve import ExplorerServer
from flightcheck.spec.properties import PROPERTIES
from flightcheck.spec.variants import VARIANTS

from tests.interactive.test_explorer_api import engine_log

WAIT = 20


@pytest.fixture(scope="module")
def browser():
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver, "Debian's chromium and chromium-driver are needed (scripts/setup.sh installs them)"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1800"):
        options.add_argument(arg)
    drv = webdriver.Chrome(service=Service(driver), options=options)
    yield drv
    drv.quit()


@pytest.fixture(scope="module")
def explorer_url():
    """The URL ``flightcheck explorer --variant early-release`` prints, with the command serving it."""
    exe = shutil.which("flightcheck")
    assert exe, "the flightcheck command is needed (pip install -e .)"
    proc = subprocess.Popen([exe, "explorer", "--variant", "early-release"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), (url, proc.stderr.read() if proc.poll() is not None else "")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def _wait_for(drv, at: int) -> None:
    """Until the page shows step ``at`` (the current breadcrumb) with no request in flight."""
    WebDriverWait(drv, WAIT).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, f"#crumbs .crumb.current[data-n='{at}']"))


def _script_errors(drv) -> list:
    """The console's errors since the last call, less the network's (a 4xx answer is logged as one)."""
    return [e for e in drv.get_log("browser") if e["level"] == "SEVERE" and e.get("source") != "network"]


def _property(drv, name: str) -> str:
    return drv.find_element(By.CSS_SELECTOR, f"tr[data-property='{name}'] td.value").text


def test_walk_away_from_a_variant_violation(browser, explorer_url):
    # The done-when of the explorer: open --variant early-release, see the violating step, step back two
    # actions, choose another action, and watch the property hold again.
    browser.get(explorer_url)
    _wait_for(browser, 6)
    marked = browser.find_element(By.CSS_SELECTOR, "#crumbs .crumb.marked")
    assert marked.text == "6. release(0)" and "current" in marked.get_attribute("class")
    assert _property(browser, "release_after_publication") == "VIOLATED"
    assert "release_after_publication breaks at step 6" in browser.find_element(By.ID, "note").text
    assert "violation" in browser.find_element(By.ID, "diagram").get_attribute("innerHTML")
    browser.find_element(By.ID, "back").click()
    _wait_for(browser, 5)
    browser.find_element(By.ID, "back").click()
    _wait_for(browser, 4)
    assert _property(browser, "release_after_publication") == "holds"
    assert browser.find_element(By.CSS_SELECTOR, "#crumbs .crumb[data-n='6']").get_attribute("class").count("after")
    # the disabled actions say why, in the spec's words
    why = browser.find_element(By.CSS_SELECTOR, "#disabled li[data-action='release(0)'] .why").text
    assert why == ("leader r0 is prefill with 0 of 2 shareable pages published (after-prefill release needs its "
                   "prefill complete and every shareable page published, or the leader terminated)")
    browser.find_element(By.CSS_SELECTOR, "button.action[data-action='arrive(1)']").click()
    _wait_for(browser, 5)
    assert [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#crumbs .crumb")][-1] == "5. arrive(1)"
    assert _property(browser, "release_after_publication") == "holds"
    changed = [c.get_attribute("data-slot") for c in browser.find_elements(By.CSS_SELECTOR, "#state .changed[data-slot]")]
    assert "requests.r1.phase" in changed
    # the URL is the state: a reload shows the same step
    query = parse_qs(urlparse(browser.current_url).query)
    assert query["at"] == ["5"] and query["path"][0].endswith("prefill(0),prefill(0),arrive(1)")
    browser.refresh()
    _wait_for(browser, 5)
    assert browser.find_element(By.CSS_SELECTOR, "#requests tr[data-request='r1'] td").text == "blocked"
    # the browser's own back button returns to the state before the click
    browser.back()
    _wait_for(browser, 4)


def test_load_counterexamples_logs_and_bad_urls(browser, tmp_path):
    with ExplorerServer(ExplorerApp()) as server:
        # a variant's counterexample from the menu and the button
        browser.get(server.url + "/?variant=stranded-followers")
        _wait_for(browser, 0)
        browser.find_element(By.ID, "cx-button").click()
        _wait_for(browser, 3)
        assert [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#crumbs .crumb")] == \
            ["start", "1. arrive(0)", "2. arrive(1)", "3. abort(0)"]
        assert "nothing is enabled" in browser.find_element(By.ID, "enabled").text
        # the other release point side by side
        browser.get(server.url + "/?path=arrive(0),arrive(1),admit(0),prefill(0),publish(0),prefill(0),publish(0),"
                                 "prefill(0),release(0)")
        _wait_for(browser, 9)
        browser.find_element(By.ID, "compare-release").click()
        WebDriverWait(browser, WAIT).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#compare tr.first"))
        first = browser.find_element(By.CSS_SELECTOR, "#compare tr.first").text
        assert first.startswith("9 release(0)") and "(not enabled)" in first
        # an engine event log, uploaded through the page
        log = tmp_path / "events.jsonl"
        log.write_text(engine_log())
        browser.find_element(By.ID, "load-file").send_keys(str(log))
        WebDriverWait(browser, WAIT).until(lambda d: "engine log" in d.find_element(By.ID, "title").text)
        assert "spec actions" in browser.find_element(By.ID, "note").text
        crumbs = browser.find_elements(By.CSS_SELECTOR, "#crumbs .crumb")
        assert crumbs[1].text == "1. arrive(0)" and "current" in crumbs[-1].get_attribute("class")
        # a URL naming an unknown scenario: a message in the page, and the app keeps serving
        browser.get(server.url + "/?scenario=burst9")
        WebDriverWait(browser, WAIT).until(lambda d: d.find_element(By.ID, "error").is_displayed())
        assert browser.find_element(By.ID, "error").text.startswith("unknown scenario 'burst9'; known: burst2")
        browser.get(server.url + "/?path=arrive(0),jump(0)")
        WebDriverWait(browser, WAIT).until(lambda d: "path step 2" in d.find_element(By.ID, "error").text)
        browser.get(server.url + "/")
        _wait_for(browser, 0)
        assert not browser.find_element(By.ID, "error").is_displayed()


_PRESS_WITHOUT_A_STATE = """
const done = arguments[arguments.length - 1];
(async () => {
  const errors = [];
  for (const id of ["back", "forward", "compare-release", "compare-publication"]) {
    try { await document.getElementById(id).onclick(); } catch (e) { errors.push(id + ": " + e); }
  }
  return errors;
})().then(done);
"""


def test_the_bare_url_opens_the_variant_and_an_error_page_disables_what_cannot_work(browser, explorer_url):
    # `explorer --variant early-release`, opened at its bare address: its violation, not burst2's start
    parts = urlparse(explorer_url)
    browser.get(f"{parts.scheme}://{parts.netloc}/")
    _wait_for(browser, 6)
    assert "variant early-release" in browser.find_element(By.ID, "title").text
    assert parse_qs(urlparse(browser.current_url).query)["property"] == ["release_after_publication"]
    # a bad URL: the message shows, the buttons that need a state are disabled, and pressing them anyway
    # (their handlers called directly) throws nothing and leaves the message in place
    browser.get(f"{parts.scheme}://{parts.netloc}/?scenario=burst9")
    WebDriverWait(browser, WAIT).until(lambda d: d.find_element(By.ID, "error").is_displayed())
    for id_ in ("back", "forward", "compare-release", "compare-publication"):
        assert not browser.find_element(By.ID, id_).is_enabled(), id_
    assert browser.execute_async_script(_PRESS_WITHOUT_A_STATE) == []
    assert browser.find_element(By.ID, "error").text.startswith("unknown scenario 'burst9'")
    assert browser.find_element(By.ID, "enabled").text == ""


def test_the_property_picker_and_the_list_of_violated_properties(browser):
    with ExplorerServer(ExplorerApp()) as server:
        # choosing a variant in its menu opens it on its own policy (early-release: on-completion publication)
        browser.get(server.url + "/")
        _wait_for(browser, 0)
        Select(browser.find_element(By.ID, "variant")).select_by_visible_text("early-release")
        WebDriverWait(browser, WAIT).until(lambda d: "variant early-release" in d.find_element(By.ID, "title").text)
        assert Select(browser.find_element(By.ID, "publication")).first_selected_option.text == "on-completion"
        # every violated property is listed, each a link to its shortest counterexample
        WebDriverWait(browser, WAIT).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#violations li[data-property] a"))
        listed = [li.get_attribute("data-property") for li in browser.find_elements(By.CSS_SELECTOR, "#violations li")]
        assert listed == ["single_prefill", "release_after_publication"]
        browser.find_element(By.CSS_SELECTOR, "#violations li[data-property='release_after_publication'] a").click()
        _wait_for(browser, 6)
        assert _property(browser, "release_after_publication") == "VIOLATED"
        # the picker names the property whose counterexample the button finds: the harm, a page prefilled twice
        Select(browser.find_element(By.ID, "property")).select_by_visible_text("single_prefill")
        browser.find_element(By.ID, "cx-button").click()
        _wait_for(browser, 9)
        assert _property(browser, "single_prefill") == "VIOLATED"
        note = browser.find_element(By.ID, "note").text
        assert "single_prefill breaks at step 9" in note
        # the harm where it happens: the step that computes a page a second time, and what the property asks
        assert "Step 9, prefill(1): r1: done=1; PAGE PREFILLED TWICE." in note
        assert "single_prefill: With single-flight, no shareable page is prefilled while a copy is cached" in note
        assert Select(browser.find_element(By.ID, "property")).first_selected_option.text == "single_prefill"


def test_a_disabled_action_names_the_false_conjunct_of_its_guard_and_a_reason_shows_once(browser):
    with ExplorerServer(ExplorerApp()) as server:
        # stranded-followers' counterexample: the one action the learner needs explained is release(0)
        browser.get(server.url + "/?variant=stranded-followers&path=arrive(0),arrive(1),abort(0)&at=3")
        _wait_for(browser, 3)
        text = browser.find_element(By.ID, "disabled").text
        assert "guard false" not in text
        release = browser.find_element(By.CSS_SELECTOR, "#disabled li[data-action='release(0)']")
        assert "reached is false" in release.text and "r0 is aborted" in release.text
        assert [c.text for c in release.find_elements(By.CSS_SELECTOR, ".guard code")] == ["release_guard: reached"]
        # the pending flight's reason is shown once, for every action it holds back, naming calm
        pending = [li for li in browser.find_elements(By.CSS_SELECTOR, "#disabled li")
                   if "the engine releases or hands on its flight" in li.text]
        assert len(pending) == 1 and text.count("the engine releases or hands on its flight") == 1
        assert len(pending[0].get_attribute("data-actions").split()) == 17
        assert [c.text for c in pending[0].find_elements(By.CSS_SELECTOR, ".guard code")] == ["self.calm(s)"]


_LAYOUT = """
const boxes = (sel) => [...document.querySelectorAll(sel)].map((e) => [e.id || e.tagName, e.getBoundingClientRect()]);
const overlaps = [];
for (const sel of ["header > *", "#tools > *", "#knobs > *", "nav > *", "main > section"]) {
  const b = boxes(sel);
  for (let i = 0; i < b.length; i++) for (let j = i + 1; j < b.length; j++) {
    const [p, q] = [b[i][1], b[j][1]];
    if (p.left < q.right - 1 && q.left < p.right - 1 && p.top < q.bottom - 1 && q.top < p.bottom - 1)
      overlaps.push(`${sel}: ${b[i][0]} / ${b[j][0]}`);
  }
}
const outside = [...document.querySelectorAll("header > *, #tools > *, #knobs > *, main > section, main table")]
  .filter((e) => e.getBoundingClientRect().right > innerWidth + 1).map((e) => e.id || e.tagName);
const clipped = [...document.querySelectorAll("main > section")].filter((e) => e.scrollWidth > e.clientWidth + 1)
  .map((e) => e.querySelector("h2") ? e.querySelector("h2").textContent : e.className);
return {scroll: document.documentElement.scrollWidth, inner: innerWidth, overlaps, outside, clipped};
"""


@pytest.mark.parametrize("width", [700, 1920])
def test_the_layout_holds_from_700_to_1920_pixels(browser, width, tmp_path):
    with ExplorerServer(ExplorerApp()) as server:
        browser.set_window_size(width, 1400)
        try:
            # a wide state: three requests with flights, pins and pages, a long path, every list filled
            browser.get(server.url + "/?scenario=doc3-abort&variant=waiter-pins-unpublished")
            WebDriverWait(browser, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#violations li[data-property] a"))
            browser.find_element(By.CSS_SELECTOR, "#violations li[data-property='in_use_never_evicted'] a").click()
            _wait_for(browser, 4)
            browser.find_element(By.ID, "compare-release").click()
            WebDriverWait(browser, WAIT).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#compare tr"))
            browser.save_screenshot(str(tmp_path / f"explorer-{width}.png"))
            layout = browser.execute_script(_LAYOUT)
            assert layout["inner"] <= width and layout["scroll"] <= layout["inner"], layout
            assert layout["overlaps"] == [] and layout["outside"] == [] and layout["clipped"] == [], layout
            assert "blocked" in browser.find_element(By.CSS_SELECTOR, "#legend dl[data-legend='phases']").text
        finally:
            browser.set_window_size(1400, 1800)


def test_every_variant_of_the_design_history_opens_with_its_counterexample(browser):
    # The done-when of issue 46, from the menus: each mistaken design's counterexample, its property named at
    # the marked step, no "guard false" anywhere, and no script error in the console.
    with ExplorerServer(ExplorerApp()) as server:
        browser.get(server.url + "/")
        _wait_for(browser, 0)
        browser.get_log("browser")  # drop what came before
        history = browser.find_elements(By.CSS_SELECTOR, "#variants li")
        assert [li.get_attribute("data-variant") for li in history] == list(VARIANTS)
        for name, variant in VARIANTS.items():
            if variant.expected_violation is None:
                continue
            browser.find_element(By.CSS_SELECTOR, f"#variants button.cx-variant[data-variant='{name}']").click()
            WebDriverWait(browser, 60).until(
                lambda d: f"variant {name}" in d.find_element(By.ID, "title").text
                and d.find_elements(By.CSS_SELECTOR, "#crumbs .crumb.marked"))
            note = browser.find_element(By.ID, "note").text
            assert f"{variant.expected_violation} breaks at step" in note, (name, note)
            assert "guard false" not in browser.find_element(By.TAG_NAME, "body").text, name
            assert not browser.find_element(By.ID, "error").is_displayed(), name
            # the properties table agrees with the note, for a property of whole runs too (no "about whole runs")
            kind = next(p.kind for p in PROPERTIES if p.name == variant.expected_violation)
            assert _property(browser, variant.expected_violation) == \
                ("VIOLATED" if kind == "always" else "VIOLATED by this run"), name
        # "open" starts a variant at its own initial state
        browser.find_element(By.CSS_SELECTOR, "#variants button.open-variant[data-variant='draining']").click()
        WebDriverWait(browser, WAIT).until(lambda d: "variant draining" in d.find_element(By.ID, "title").text)
        _wait_for(browser, 0)
        assert "scenario burst2-abort" in browser.find_element(By.ID, "title").text
        assert _script_errors(browser) == []


_TURN = """
const [name, kind] = arguments;
const el = document.getElementById("knob-" + name) || document.getElementById(name);
if (kind === "bool") el.checked = !el.checked;
else if (kind === "int") el.value = String(Number(el.value) + 1);
else el.selectedIndex = (el.selectedIndex + 1) % el.options.length;
el.dispatchEvent(new Event("change"));
return kind === "bool" ? (el.checked ? "1" : "0") : el.value;
"""


def test_every_knob_is_a_control_and_compare_takes_any_of_them(browser):
    with ExplorerServer(ExplorerApp()) as server:
        browser.get(server.url + "/?scenario=doc3-abort")
        _wait_for(browser, 0)
        browser.get_log("browser")
        opened = []
        for knob in knobs():
            before = browser.current_url
            value = browser.execute_script(_TURN, knob["name"], knob["kind"])
            WebDriverWait(browser, WAIT).until(lambda d: d.current_url != before)
            WebDriverWait(browser, WAIT).until(  # the page has drawn the new URL: its state, or its error
                lambda d: d.execute_script("return document.body.dataset.shown === location.search"))
            query = parse_qs(urlparse(browser.current_url).query)
            if browser.find_element(By.ID, "error").is_displayed():  # a combination the spec refuses, said so
                assert knob["name"] in browser.find_element(By.ID, "error").text or "not a" in browser.find_element(By.ID, "error").text
                browser.get(server.url + "/?scenario=doc3-abort")
                _wait_for(browser, 0)
                continue
            assert query[knob["name"]] == [value], (knob, query)
            opened.append(knob["name"])
            browser.get(server.url + "/?scenario=doc3-abort")
            _wait_for(browser, 0)
        # every knob but prefix caching (off needs coordination none) opens its design from its control
        assert opened == [k["name"] for k in knobs() if k["name"] != "prefix_caching"]
        # compare under any knob: capacity 2 against 3 on a path where the third request is admitted at once
        browser.get(server.url + "/?scenario=doc3-abort&path=arrive(0),arrive(1),arrive(2),admit(0)&at=4")
        _wait_for(browser, 4)
        Select(browser.find_element(By.ID, "compare-field")).select_by_visible_text("capacity")
        browser.find_element(By.ID, "compare-knob").click()
        WebDriverWait(browser, WAIT).until(lambda d: "capacity: this design 2, the other 3" in d.find_element(By.ID, "compare-words").text)
        assert _script_errors(browser) == []
