"""The fenced code blocks of a Markdown document, and the marker before each (tests/docs/test_docs.py runs them)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

#: The repository's root.
ROOT = Path(__file__).resolve().parents[1]

_FENCE = re.compile(r"^(`{3,})(.*)$")
_MARKER = re.compile(r"^<!--\s*([a-z-]+)(?::\s*(.*?))?\s*-->$")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language tag ('' if none), its body, and the marker before it."""

    path: Path
    line: int  # 1-based line of the opening fence
    language: str
    body: str
    marker: str | None  # "not-run", "test-command", another name, or None
    marker_reason: str | None
    follows_block: bool  # only blank lines separate it from the previous block's closing fence

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}:{self.language or 'untagged'}"


def parse_blocks(path: Path, text: str | None = None) -> list[Block]:
    """The fenced blocks of a Markdown file, in order. Raises ``ValueError`` for an unclosed fence."""
    lines = (path.read_text() if text is None else text).splitlines()
    blocks: list[Block] = []
    index = 0
    last_close = -2
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        fence, info = opening.group(1), opening.group(2).strip()
        end = next((j for j in range(index + 1, len(lines)) if lines[j].strip() == fence), None)
        if end is None:
            raise ValueError(f"{path}:{index + 1}: unclosed code fence")
        before = next((lines[j].strip() for j in range(index - 1, -1, -1) if lines[j].strip()), "")
        marker = _MARKER.match(before)
        between = lines[last_close + 1 : index] if last_close >= 0 else ["x"]
        blocks.append(Block(
            path=path,
            line=index + 1,
            language=info.split()[0] if info else "",
            body="\n".join(lines[index + 1 : end]) + "\n",
            marker=marker.group(1) if marker else None,
            marker_reason=(marker.group(2) or "").strip() if marker else None,
            follows_block=all(not line.strip() for line in between),
        ))
        last_close = end
        index = end + 1
    return blocks
