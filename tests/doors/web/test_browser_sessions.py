"""The session stack on the review page in a real headless Chromium: a person requests
changes on one proposal (the agent's next notice has it) and approves a whole session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitpatch import Workspace
from tests.doors.web.browser import chromium, running, serve_command, wait_for
from tests.doors.web.webkit import review_repo
from tests.gitkit import git

pytestmark = pytest.mark.slow  # a server or browser in a process of its own


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return review_repo(tmp_path / "repo")


@pytest.fixture
def page(repo: Path) -> Iterator[tuple[Any, str]]:
    with running(serve_command(repo)) as url, chromium() as driver:
        yield driver, url


def test_request_changes_then_approve_all_in_a_real_browser(
    repo: Path, page: tuple[Any, str]
) -> None:
    ws = Workspace.open(repo, mode="review", session="bot")
    one = ws.apply([{"old_string": "= 1", "new_string": "= 3"}], path="app.py")
    two = ws.apply([{"old_string": "A demo", "new_string": "The demo"}], path="README.md")
    driver, url = page
    driver.get(url)
    wait_for(driver, lambda d: d.find_elements("css selector", ".stack li"), "the stack")
    items = driver.find_elements("css selector", ".stack li")
    assert [li.get_attribute("data-id") for li in items] == [one.proposal_id, two.proposal_id]
    assert f"approving it also lands {one.proposal_id}" in items[1].text
    by = driver.find_element("id", "by")
    by.clear()
    by.send_keys("Ada")

    # request changes on the first proposal: typing "a" in the box approves nothing
    driver.find_element("css selector", f'.stack a.pid[href="/p/{one.proposal_id}"]').click()
    box = wait_for(driver, lambda d: d.find_element("id", "comment-text"), "the comment box")
    box.send_keys("name it MAX_TRIES, a")
    driver.find_element("id", "request-changes").click()
    wait_for(  # the page reloads with the comment (the page source survives the reload)
        driver,
        lambda d: 'class="comment request_changes"' in d.page_source,
        "the comment on the page",
    )
    assert "name it MAX_TRIES, a" in driver.find_element("id", "comments").text
    (line,) = ws.plumbing.notices()
    assert line.startswith(f"Ada requested changes on proposal {one.proposal_id}")

    # approve the whole session from the list
    driver.get(url.split("?")[0])
    wait_for(driver, lambda d: d.find_elements("css selector", ".session-approve"), "the button")
    driver.find_element("css selector", ".session-approve").click()
    wait_for(driver, lambda d: d.find_element("id", "confirm").get_attribute("open"), "dialog")
    driver.find_element("id", "confirm-ok").click()
    wait_for(
        driver,
        lambda d: "Approved session bot" in d.find_element("id", "result").text,
        "the approval",
    )
    assert "MAX_RETRIES = 3" in git(repo, "show", "feature:app.py")
    assert git(repo, "for-each-ref", "refs/heads/gitpatch/") == ""
