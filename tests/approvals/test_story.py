"""The demo's bank story on the approval page, with passkeys and no identity
provider (demo/approval_story.py), as a test: every step it tells must give
the outcome it expects."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from page_bank import ROOT

sys.path.insert(0, str(ROOT / "demo"))

import approval_story  # noqa: E402


def test_the_bank_story_on_the_approval_page(tmp_path: Path) -> None:
    steps = anyio.run(approval_story.story, tmp_path)
    failed = [f"{step.title}: expected {step.expected}; got {step.got}" for step in steps if not step.ok]
    assert not failed, "\n".join(failed)
    assert len(steps) == 6
