"""Tracked text carries no work history: no numbered work sessions, issue numbers or numbered seed documents, which
mean nothing outside the team. Sources are cited by their public names; history belongs in commit messages."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATTERN = r"\bsession [0-9]|issue [0-9]+|seed 0[0-9]{2}"


def _git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def test_tracked_files_name_no_sessions_issues_or_seeds():
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    top = _git("rev-parse", "--show-toplevel")
    if top.returncode != 0 or os.path.realpath(top.stdout.strip()) != os.path.realpath(ROOT):
        pytest.skip("not a git checkout of this repository")
    result = _git("grep", "-niE", PATTERN)
    # git grep: exit 0 = hits, 1 = no hit, anything else = an error (which must not pass as "no hit").
    assert result.returncode in (0, 1), result.stderr
    hits = result.stdout.splitlines()
    assert not hits, f"{len(hits)} tracked lines name work history (git grep -niE '{PATTERN}'):\n" + "\n".join(hits)
