"""The review page served for real (a ``serve`` subprocess) and a headless Chromium driving it.

Chromium comes from Debian (``chromium`` + ``chromium-driver``); nothing is downloaded. Without
them the browser tests skip with the command that installs them, unless
``GITPATCH_REQUIRE_BROWSER=1`` (set by ``.ci/run`` once it installed them) makes that a failure.
Waits are explicit conditions with generous bounds, never sleeps.
"""

from __future__ import annotations

import os
import selectors
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

#: Upper bound for any wait on the page or the server; conditions usually hold in milliseconds.
WAIT = 60.0

_SERVE = "import sys; from gitpatch.doors.web import serve; serve(sys.argv[1], open_browser=False)"


def browser_paths() -> tuple[str, str]:
    """The Chromium and chromedriver binaries, or a skip (a failure when required)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium and driver:
        return chromium, driver
    message = (
        "headless Chromium is not installed, so the browser tests cannot run: "
        "apt-get install -y chromium chromium-driver (.ci/run does this)"
    )
    if os.environ.get("GITPATCH_REQUIRE_BROWSER") == "1":
        pytest.fail(message)
    pytest.skip(message)


def first_line(proc: subprocess.Popen[str], timeout: float = WAIT) -> str:
    """The first stdout line of ``proc``, waiting at most ``timeout`` seconds for it."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise AssertionError(f"no address printed within {timeout} s")
    return proc.stdout.readline().strip()


@contextmanager
def running(
    command: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> Iterator[str]:
    """Run a server command; yield the first line it prints (the page's URL); stop it."""
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = first_line(proc)
        if not line:
            raise AssertionError(
                f"the server printed nothing: {proc.stderr and proc.stderr.read()}"
            )
        yield line
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=WAIT)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def serve_command(repo: Path) -> list[str]:
    """``serve(repo)`` in a fresh interpreter, without opening a browser."""
    return [sys.executable, "-c", _SERVE, str(repo)]


@contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A headless Chromium under Selenium, quit afterwards."""
    binary, driver_path = browser_paths()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver: Any, condition: Callable[[Any], Any], what: str) -> Any:
    """Wait (bounded) until ``condition(driver)`` is truthy; fail saying ``what`` never came."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT, poll_frequency=0.1).until(condition, message=what)
