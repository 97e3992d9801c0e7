"""Issue 27's done-when through the page in a real headless Chromium: a person approves hunk 1,
rejects hunk 2 with a reason, edits hunk 3 in place and approves it, comments on a line; the
branch holds exactly hunk 1 and the person's hunk 3, the agent is told all of it, its revision
of hunk 2 lands by the page's Approve; the person's work stays theirs. And the page at 390 px.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitpatch.core.model import Proposal, Replace, UpdateFile
from gitpatch.porcelain.workspace import Workspace
from tests.doors.web.browser import chromium, running, serve_command, wait_for
from tests.gitkit import git, make_repo, status_porcelain
from tests.safety.proofkit import fsck_problems

pytestmark = pytest.mark.slow  # a real browser and a server in processes of their own

LINES = "".join(f"value_{i} = {i}\n" for i in range(1, 41))


def three() -> Proposal:
    edits = (
        Replace("value_2 = 2\n", "value_2 = 'two'\n"),
        Replace("value_20 = 20\n", "value_20 = 'twenty'\n"),
        Replace("value_38 = 38\n", "value_38 = 'thirty-eight'\n"),
    )
    return Proposal((UpdateFile("values.py", edits),), "patch_resource", tool="patch")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "r", {"values.py": LINES, "notes.txt": "mine\n"}, "main")
    (repo / "notes.txt").write_text("mine, uncommitted\n")
    (repo / "todo.txt").write_text("untracked\n")
    return repo


@pytest.fixture
def page(repo: Path) -> Iterator[tuple[Any, str]]:
    with running(serve_command(repo)) as url, chromium() as driver:
        yield driver, url


def _visit(driver: Any, url: str, pid: str) -> None:
    """The proposal page, after the printed address (its token) let this browser in."""
    driver.get(url)
    wait_for(driver, lambda d: d.find_elements("css selector", "main"), "the list")
    driver.get(url.split("/?")[0] + f"/p/{pid}")


def _phone(driver: Any, height: int) -> None:
    metrics = {"width": 390, "height": height, "deviceScaleFactor": 1, "mobile": True}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)


def _bar(driver: Any, hunk: str) -> Any:
    where = f'.hunk-bar[data-hunk="{hunk}"]'
    return wait_for(
        driver, lambda d: next(iter(d.find_elements("css selector", where)), None), hunk
    )


def _click(driver: Any, element: Any) -> None:
    """Bring ``element`` to the middle of the window (at once, not smoothly), then click it."""
    driver.execute_script(
        "arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", element
    )
    element.click()


def _confirm(driver: Any, reason: str | None = None) -> None:
    wait_for(driver, lambda d: d.find_element("id", "confirm").get_attribute("open"), "the dialog")
    if reason is not None:
        driver.find_element("id", "confirm-reason").send_keys(reason)
    driver.find_element("id", "confirm-ok").click()


def _reloaded(driver: Any, check: Any, what: str) -> None:
    wait_for(driver, check, what)


def _status(driver: Any) -> str | None:
    """The proposal's status as the page shows it, read in one script: the page may be
    reloading, and an element found before the reload would be stale."""
    found = driver.execute_script(
        "const p = document.getElementById('proposal'); return p && p.dataset.status;"
    )
    return str(found) if found else None


def _decided(hunk: str) -> Any:
    return lambda d: d.find_elements("css selector", f'.decided-hunk[data-hunk="{hunk}"]')


def test_hunks_are_decided_edited_and_commented_on_the_page(
    repo: Path, page: tuple[Any, str]
) -> None:
    driver, url = page
    agent = Workspace.open(repo, mode="review", session="bot")
    pid = agent.propose(three()).proposal_id
    mine = (status_porcelain(repo), (repo / "notes.txt").read_text())
    _visit(driver, url, pid)
    bars = wait_for(driver, lambda d: d.find_elements("css selector", ".hunk-bar"), "hunks")
    assert [b.get_attribute("data-hunk") for b in bars] == [
        "values.py:1",
        "values.py:2",
        "values.py:3",
    ]

    _click(driver, _bar(driver, "values.py:1").find_element("css selector", ".hunk-approve"))
    _confirm(driver)
    _reloaded(driver, _decided("values.py:1"), "hunk 1 listed as decided")
    assert git(repo, "show", "main:values.py") == LINES.replace("value_2 = 2", "value_2 = 'two'")

    _click(driver, _bar(driver, "values.py:2").find_element("css selector", ".hunk-reject"))
    _confirm(driver, "keep twenty a number")
    _reloaded(driver, _decided("values.py:2"), "hunk 2 listed as decided")
    where = '.decided-hunk[data-hunk="values.py:2"] .hunk-reason'
    reason = driver.find_element("css selector", where)
    assert reason.text == "keep twenty a number"

    bar = _bar(driver, "values.py:3")
    _click(driver, bar.find_element("css selector", ".hunk-edit"))
    box = bar.find_element("css selector", ".hunk-text")
    text = box.get_attribute("value").replace("'thirty-eight'", "38  # kept by a person")
    box.clear()
    box.send_keys(text)
    _click(driver, bar.find_element("css selector", ".hunk-save"))
    _reloaded(
        driver, lambda d: d.find_elements("css selector", "#amendments .amendment"), "the edit"
    )
    # a line comment: click the new side's line number, write, send
    _click(driver, driver.find_element("css selector", 'td.ln-new[data-at="values.py:38"]'))
    assert driver.find_element("id", "comment-at").get_attribute("value") == "values.py:38"
    driver.find_element("id", "comment-text").send_keys("why keep it?")
    _click(driver, driver.find_element("id", "comment"))
    _reloaded(driver, lambda d: d.find_elements("css selector", ".comment-at"), "the comment")

    _click(driver, _bar(driver, "values.py:3").find_element("css selector", ".hunk-approve"))
    _confirm(driver)
    wait_for(driver, lambda d: _status(d) == "approved", "the proposal approved")
    want = LINES.replace("value_2 = 2", "value_2 = 'two'").replace(
        "value_38 = 38", "value_38 = 38  # kept by a person"
    )
    assert git(repo, "show", "main:values.py") == want
    assert (repo / "values.py").read_text() == want
    assert (status_porcelain(repo), (repo / "notes.txt").read_text()) == mine

    told = "\n".join(agent.plumbing.notices())
    assert "Hunk 2 (values.py:2)" in told and "keep twenty a number" in told
    assert "+value_38 = 38  # kept by a person" in told and "-value_38 = 'thirty-eight'" in told
    assert "values.py line 38" in told and "why keep it?" in told

    revision = agent.propose(
        Proposal(
            (UpdateFile("values.py", (Replace("value_20 = 20\n", "value_20 = 20  # 20\n"),)),),
            "patch_resource",
            tool="patch",
        ),
        revises=pid,
    ).proposal_id
    driver.get(url.split("/?")[0] + f"/p/{revision}")
    _click(driver, wait_for(driver, lambda d: d.find_element("id", "approve"), "Approve"))
    _confirm(driver)
    wait_for(driver, lambda d: _status(d) == "approved", "the revision approved")
    final = want.replace("value_20 = 20\n", "value_20 = 20  # 20\n")
    assert git(repo, "show", "main:values.py") == final
    assert (status_porcelain(repo), (repo / "notes.txt").read_text()) == mine
    assert fsck_problems(repo) == ""


def test_hunk_review_reads_at_phone_width(repo: Path, tmp_path: Path) -> None:
    pid = Workspace.open(repo, mode="review", session="bot").propose(three()).proposal_id
    Workspace.open(repo, mode="review").comment(pid, "Pat", "hm", at="values.py:20")
    with running(serve_command(repo)) as url, chromium(390, 844) as driver:
        # headless Chromium keeps windows at least 500 px wide: emulate the phone's viewport
        _phone(driver, 844)
        _visit(driver, url, pid)
        assert driver.execute_script("return window.innerWidth") == 390
        bar = _bar(driver, "values.py:2")
        width = driver.execute_script("return document.documentElement.scrollWidth")
        assert width <= driver.execute_script("return window.innerWidth")  # no sideways page
        for name in ("hunk-approve", "hunk-reject", "hunk-edit"):
            button = bar.find_element("css selector", f".{name}")
            assert button.is_displayed() and button.size["width"] > 80
            assert button.location["x"] + button.size["width"] <= 390
        _click(driver, bar.find_element("css selector", ".hunk-edit"))
        box = bar.find_element("css selector", ".hunk-text")
        assert box.is_displayed() and box.size["width"] > 300
        target = Path(os.environ.get("GITPATCH_HUNKS_SCREENSHOT") or tmp_path / "hunks-390.png")
        _phone(driver, min(int(driver.execute_script("return document.body.scrollHeight")), 4000))
        assert driver.save_screenshot(str(target))
