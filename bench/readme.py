"""The repository README's "Benchmark results" section, rewritten by the run.

Only the text between ``START`` and ``END`` is the run's; everything else in the
README is left byte for byte as it was. The new file is written next to the old
one and renamed over it, so an interrupted run never leaves a half-written
README. Links to the charts are relative to the README's own directory, so the
file carries no machine-specific path.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from report import SUMMARY_TITLE, Report
from serializers import SUBJECT
from targets import TargetsSection

START = "<!-- bench-results:start -->"
END = "<!-- bench-results:end -->"
# The section goes before a license section when the markers are not there yet.
LICENSE_HEADING = re.compile(r"^#{1,6}\s*licen[cs]e\b", re.IGNORECASE | re.MULTILINE)


def relative_link(target: Path, readme: Path) -> str:
    """``target`` as a POSIX path relative to the README's directory."""
    return Path(os.path.relpath(target.resolve(), readme.resolve().parent)).as_posix()


def splice(text: str, block: str) -> str:
    """``text`` with the markers' contents replaced by ``block`` (markers added if absent)."""
    section = f"{START}\n{block.strip()}\n{END}"
    start, end = text.find(START), text.find(END)
    if start != -1 and end > start:
        return text[:start] + section + text[end + len(END) :]
    license_heading = LICENSE_HEADING.search(text)
    if license_heading is not None:
        at = license_heading.start()
        return text[:at] + section + "\n\n" + text[at:]
    return text.rstrip("\n") + "\n\n" + section + "\n"


def update_readme(path: Path, block: str) -> bool:
    """Rewrite the results section of ``path`` atomically; False if nothing changed."""
    old = path.read_text(encoding="utf-8")
    new = splice(old, block)
    if new == old:
        return False
    write_atomically(path, new)
    return True


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` through a temporary file in its directory (a failed run
    never leaves a half-written report), with the old file's mode or else the umask's."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        if path.exists():
            mode = path.stat().st_mode & 0o777
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def render_block(
    report: Report,
    targets: TargetsSection,
    machine: dict[str, str],
    readme: Path,
    out_dir: Path,
) -> str:
    """The section's markdown: machine and versions, targets, summary, charts."""

    def link(name: str) -> str:
        return relative_link(out_dir / name, readme)

    codecs = ", ".join(f"{codec.name} {codec.version}" for codec in report.codecs)
    settings = "; ".join(f"{key} {value}" for key, value in report.settings.items())
    lines = [
        "## Benchmark results",
        "",
        "Written by `make bench` (`bench/run.py`) from its last full run; do not edit "
        "between the `bench-results` markers, the next run replaces it. Every table, "
        f"per payload and per codec: [{link('results.md')}]({link('results.md')}).",
        "",
        *(f"- {key}: {value}" for key, value in machine.items()),
        f"- codecs: {codecs}",
        f"- run: {settings}",
        "",
        "### Targets",
        "",
        *targets.lines(chart=link("targets.png")),
        "",
    ]
    if report.results and report.has_subject:
        lines += [
            f"### {SUMMARY_TITLE}",
            "",
            "Each cell is encode / decode / size: the peer's time over "
            f"{SUBJECT}'s (>1: {SUBJECT} is faster), and {SUBJECT}'s size over the "
            f"peer's (<1: {SUBJECT} is smaller).",
            "",
            *report.summary_table(),
            "",
            f"![encode and decode time relative to pickle]({link('results.png')})",
        ]
    return "\n".join(lines)
