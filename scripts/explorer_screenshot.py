"""The picture of the explorer in docs/explore.md: ``flightcheck explorer --variant early-release`` in headless
Chromium (Debian's, through its chromium-driver), on the step where the variant's property breaks.

    python scripts/explorer_screenshot.py [docs/explorer.png]
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from flightcheck.checks.interactive.app import ExplorerApp
from flightcheck.checks.interactive.design import design_from_query
from flightcheck.checks.interactive.loading import counterexample
from flightcheck.checks.interactive.serve import ExplorerServer


def main(out: Path) -> None:
    design = design_from_query({"variant": "early-release"}, {})
    found = counterexample(design)
    query = "&".join(f"{k}={v}" for k, v in {**design.query(), "path": ",".join(found["path"]),
                                            "at": found["mark"], "mark": found["mark"],
                                            "property": found["property"]}.items())
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1150", "--hide-scrollbars"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        with ExplorerServer(ExplorerApp()) as server:
            driver.get(f"{server.url}/?{query}")
            WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#crumbs .crumb.current.marked"))
            WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#violations li[data-property] a"))
            driver.save_screenshot(str(out))
    finally:
        driver.quit()
    print(f"wrote {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/explorer.png"))
