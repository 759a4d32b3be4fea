"""Fixtures of the approval page's browser tests; the parts they are made
of are in page_bank.py (the demo uses them too)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from page_bank import BIN, CHROMEDRIVER, CHROMIUM, NODE, TEST_GUESTS, Bank, Browser, bank_server


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = [p for p in (BIN, TEST_GUESTS / "create_transfer.wasm", NODE, CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.exit(f"missing {', '.join(map(str, missing))}: run `make test-approvals`", returncode=2)


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bank]:
    with bank_server(tmp_path_factory.mktemp("bank")) as bank:
        yield bank


@pytest.fixture
def browsers() -> Iterator[Any]:
    opened: list[Browser] = []

    def new() -> Browser:
        browser = Browser()
        opened.append(browser)
        return browser

    yield new
    for browser in opened:
        browser.quit()
