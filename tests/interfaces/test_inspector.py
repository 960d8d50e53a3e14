"""The web inspector, end to end in headless Chromium (Debian's chromium and chromedriver, driven
by Selenium; nothing downloads a browser): log in, search and read why a memory matched, open
a memory (history, links, entities, provenance, the entity graph), correct it, browse with a
filter, restore from the archive, preview maintenance, forget with confirmation. A screenshot
of every page is kept under ``test-artifacts/inspector/`` (``CLAWMEM_ARTIFACTS`` moves it).

In CI (``CI`` set) a browser that cannot run fails the test; elsewhere it is skipped with the
reason. The pages' guarantees that need no browser are tested over plain HTTP below."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from clawmemory import Memory, Settings
from clawmemory.auth import Keys, key_store_for
from rest_server import serving

ROOT = Path(__file__).resolve().parents[2]
# Read at import: the suite's fixtures clear CLAWMEM_* variables before each test.
ARTIFACTS = Path(os.environ.get("CLAWMEM_ARTIFACTS") or ROOT / "test-artifacts") / "inspector"
REFRESH_DOCS = bool(os.environ.get("CLAWMEM_DOCS_SCREENSHOTS"))  # copy into docs/images
CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromedriver")
# The flags the machines here need: no sandbox as root, and no background network traffic
# (the network is closed; Chromium would retry its update and sync hosts forever).
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1280,1000", "--hide-scrollbars")


@pytest.fixture
def browser() -> Iterator[Any]:
    missing = [p for p in CHROMIUM if not Path(p).exists()]
    try:
        if missing:
            raise RuntimeError(f"{', '.join(missing)} not installed (scripts/setup.sh installs"
                               " chromium and chromium-driver)")
        os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not download
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM[0]
        profile = tempfile.mkdtemp(prefix="clawmem-chromium-")
        for flag in (*FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(CHROMIUM[1]), options=options)
    except Exception as exc:
        if os.environ.get("CI"):
            pytest.fail(f"the browser cannot run: {exc}")
        pytest.skip(f"the browser cannot run here: {exc}")
    driver.implicitly_wait(5)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _shot(driver: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(max(int(height) + 140, 600), 2400))  # the whole page
    driver.save_screenshot(str(path))
    driver.set_window_size(1280, 1000)
    assert path.stat().st_size > 10_000  # a rendered page, not a blank one
    return path


def _seed(mem: Memory) -> dict[str, str]:
    ids = {
        "move": mem.store("Caroline moved from Sweden to Lisbon in May 2023", key="move",
                          kind="event", tags=["family"], session_id="s-1",
                          narrative_id="arc-lisbon", task_id=12),
        "dog": mem.store("Caroline adopted a rescue dog named Biscuit", tags=["family"]),
        "tea": mem.store("Melanie prefers green tea to coffee", kind="preference"),
        "old": mem.store("The office plant needs water on Fridays", kind="conversation"),
    }
    mem.link(ids["move"], ids["dog"])
    ids["summary"] = mem.store("Caroline settled in Lisbon with her dog", kind="summary",
                               source_ids=[ids["move"], ids["dog"]])
    mem.store_backend.archive(mem.namespace, [ids["old"]], at=mem.clock())
    mem.maintain("decay")
    return ids


def _login(browser: Any, url: str, key: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{url}/browse")
    assert browser.current_url == f"{url}/login?next=/browse"
    _shot(browser, "login")
    browser.find_element(By.ID, "key").send_keys(key)
    browser.find_element(By.ID, "login-button").click()
    WebDriverWait(browser, 10).until(lambda d: d.current_url == f"{url}/browse")


def _search_and_open(browser: Any, url: str, ids: dict[str, str]) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{url}/")
    browser.find_element(By.ID, "q").send_keys("Caroline moved from Sweden")
    browser.find_element(By.ID, "search-button").click()
    hits = browser.find_elements(By.CSS_SELECTOR, "li.hit")
    assert len(hits) >= 2
    assert ids["move"] in hits[0].text
    hits[0].find_element(By.TAG_NAME, "summary").click()
    why = hits[0].find_element(By.CSS_SELECTOR, "table.explain").text
    assert "matched terms" in why and "keyword list" in why and "final" in why
    _shot(browser, "search")
    # a memory's page: history, links, entities, provenance, the graph
    hits[0].find_element(By.CSS_SELECTOR, "a.mid").click()
    assert browser.find_element(By.ID, "memory-id").text == ids["move"]
    assert ids["dog"] in browser.find_element(By.ID, "links").text
    assert ids["summary"] in browser.find_element(By.ID, "derived").text
    assert "Lisbon" in browser.find_element(By.ID, "entities").text
    assert browser.find_elements(By.CSS_SELECTOR, "#graph .node.entity")
    _shot(browser, "memory")


def _correct(browser: Any, mem: Memory, ids: dict[str, str]) -> None:
    from selenium.webdriver.common.by import By

    area = browser.find_element(By.ID, "correct-content")
    area.clear()
    area.send_keys("Caroline moved from Sweden to Lisbon in June 2023")
    browser.find_element(By.ID, "correct-reason").send_keys("it was June")
    browser.find_element(By.ID, "correct-button").click()
    assert browser.find_element(By.ID, "notice").text == "corrected"
    assert browser.find_element(By.ID, "memory-id").text != ids["move"]
    history = browser.find_element(By.ID, "history").text
    assert ids["move"] in history and "reason: it was June" in history
    assert mem.get("move").content.endswith("June 2023")
    _shot(browser, "corrected")


def _browse_archive_maintenance(browser: Any, url: str, mem: Memory, ids: dict[str, str]
                                ) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{url}/browse?kind=preference")
    rows = browser.find_elements(By.CSS_SELECTOR, "table.memories tbody tr")
    assert [ids["tea"] in r.text for r in rows] == [True]
    browser.get(f"{url}/browse")
    _shot(browser, "browse")
    browser.get(f"{url}/archive")
    _shot(browser, "archive")
    browser.find_element(By.CSS_SELECTOR, "#archive button").click()
    assert browser.find_element(By.ID, "notice").text == "restored"
    assert mem.get(ids["old"]).content.startswith("The office plant")
    browser.get(f"{url}/maintenance")
    assert "decay" in browser.find_element(By.ID, "runs").text
    browser.find_element(By.ID, "preview-button").click()
    assert browser.find_element(By.ID, "preview").text == "Preview"
    _shot(browser, "maintenance")


def _forget(browser: Any, url: str, mem: Memory, ids: dict[str, str]) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{url}/memory/{ids['tea']}")
    button = browser.find_element(By.ID, "forget-button")
    assert not button.is_enabled()  # until the box is ticked
    browser.find_element(By.ID, "forget-confirm").click()
    assert button.is_enabled()
    button.click()
    assert browser.find_element(By.ID, "notice").text == f"forgot {ids['tea']}"
    assert mem.count(kind="preference") == 0
    browser.get(f"{url}/memory/{ids['tea']}")
    assert "no memory with id or key" in browser.find_element(By.ID, "error-detail").text


def test_the_inspector_in_a_real_browser(browser: Any, tmp_path: Path) -> None:
    with Memory.open(tmp_path / "i.db", settings=Settings(embedder={"provider": "none"})) as mem:
        ids = _seed(mem)
        _, key = Keys(key_store_for(mem.store_backend)).create(["default"], "admin")
        with serving(mem) as url:
            _login(browser, url, key)
            _search_and_open(browser, url, ids)
            _correct(browser, mem, ids)
            _browse_archive_maintenance(browser, url, mem, ids)
            _forget(browser, url, mem, ids)
    if REFRESH_DOCS:  # the pictures in docs/inspector.md
        for name in ("search", "memory", "browse", "maintenance"):
            shutil.copy(ARTIFACTS / f"{name}.png", ROOT / "docs" / "images"
                        / f"inspector-{name}.png")


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[tuple[str, dict[str, str], dict[str, str]]]:
    with Memory.open(tmp_path / "i.db", settings=Settings(embedder={"provider": "none"})) as mem:
        ids = _seed(mem)
        keys = Keys(key_store_for(mem.store_backend))
        _, reader = keys.create(["default"], "read")
        _, writer = keys.create(["default"], "write")
        with serving(mem) as url:
            yield url, ids, {"read": reader, "write": writer}


def test_the_memory_page_shows_narrative_and_task(
        keyed: tuple[str, dict[str, str], dict[str, str]]) -> None:
    url, ids, keys = keyed
    with httpx.Client(base_url=url, cookies={"clawmem_key": keys["read"]}) as reader:
        move = reader.get(f"/memory/{ids['move']}").text
        tea = reader.get(f"/memory/{ids['tea']}").text
    assert "<th>narrative</th><td>arc-lisbon</td><th>task</th><td>12</td>" in move
    assert "<th>narrative</th><td>-</td><th>task</th><td>-</td>" in tea


def test_pages_refuse_what_a_browser_must_not_do(
        keyed: tuple[str, dict[str, str], dict[str, str]]) -> None:
    url, ids, keys = keyed
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    with httpx.Client(base_url=url, cookies={"clawmem_key": keys["write"]}) as writer:
        page = writer.get(f"/memory/{ids['tea']}")
        assert page.status_code == 200 and 'id="forget-form"' in page.text
        # A page on another site cannot post a form here (Origin check), logged in or not.
        evil = writer.post(f"/memory/{ids['tea']}/forget", content=f"confirm={ids['tea']}",
                           headers={**form, "Origin": "http://evil.example"})
        assert evil.status_code == 403
        unconfirmed = writer.post(f"/memory/{ids['tea']}/forget", content="confirm=",
                                  headers=form)
        assert unconfirmed.status_code == 422
        assert "confirm by ticking the box" in unconfirmed.text
        assert writer.get(f"/memory/{ids['tea']}").status_code == 200
        maintenance = writer.post("/maintenance", content="job=decay", headers=form)
        assert maintenance.status_code == 403  # an admin's job
    with httpx.Client(base_url=url, cookies={"clawmem_key": keys["read"]}) as reader:
        page = reader.get(f"/memory/{ids['tea']}")
        assert page.status_code == 200 and 'id="forget-form"' not in page.text
        refused = reader.post(f"/memory/{ids['tea']}/forget", content=f"confirm={ids['tea']}",
                              headers=form)
        assert refused.status_code == 403
        assert "needs a key with the write role" in refused.text
    bad = httpx.post(f"{url}/login", content="key=cmk_000000000000_nope&next=//evil.example",
                     headers=form)
    assert bad.status_code == 401 and "unknown, malformed or revoked" in bad.text
    good = httpx.post(f"{url}/login", content=f"key={keys['read']}&next=//evil.example",
                      headers=form)
    assert (good.status_code, good.headers["location"]) == (303, "/")  # never off-site
    cookie = good.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
