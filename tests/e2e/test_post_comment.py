"""Replay a recorded GitHub REST exchange through ci/post_comment.py; no network.

The fixture holds, per scenario, the exact requests the script should make (method,
URL, JSON body) and GitHub-shaped responses (status, headers incl. Link, JSON body).
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from support.paths import ROOT

FIXTURE = json.loads((ROOT / "tests/fixtures/github_comments_exchange.json").read_text())


def _load_script():
    spec = importlib.util.spec_from_file_location("post_comment", ROOT / "ci/post_comment.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pc = _load_script()


class Replay:
    """A fake transport: checks each request against the next recorded one and
    answers with the recorded response."""

    def __init__(self, exchange: list[dict]):
        self.pending = list(exchange)
        self.seen: list[tuple[str, str, object]] = []

    def __call__(self, method, url, headers, body):
        assert self.pending, f"unexpected extra request {method} {url}"
        rec = self.pending.pop(0)
        sent = json.loads(body) if body is not None else None
        self.seen.append((method, url, sent))
        assert (method, url, sent) == (rec["request"]["method"], rec["request"]["url"],
                                       rec["request"]["body"])
        assert headers["Authorization"] == f"Bearer {FIXTURE['token']}"
        assert headers["X-GitHub-Api-Version"] == "2022-11-28"
        resp = rec["response"]
        return resp["status"], dict(resp["headers"]), json.dumps(resp["body"]).encode()


def _run(tmp_path: Path, scenario: str) -> Replay:
    """Run main() as the workflow would: env, event payload, markdown file."""
    md = tmp_path / "scoreboard.md"
    md.write_text(FIXTURE["markdown"])
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "synchronize",
                                 "pull_request": {"number": FIXTURE["pull_request"]}}))
    env = {"GITHUB_TOKEN": FIXTURE["token"], "GITHUB_REPOSITORY": FIXTURE["repository"],
           "GITHUB_EVENT_PATH": str(event), "GITHUB_API_URL": "https://api.github.com"}
    sc = FIXTURE["scenarios"][scenario]
    replay = Replay(sc["exchange"])
    rc = pc.main([str(md), "--per-page", str(sc["per_page"])], env=env, send=replay)
    assert rc == 0
    assert replay.pending == [], "recorded requests were not made"
    return replay


def test_no_marker_comment_posts_a_new_one(tmp_path, capsys):
    replay = _run(tmp_path, "post_new")
    api = "https://api.github.com/repos/octo-org/warpboard"
    assert [(m, u) for m, u, _ in replay.seen] == [
        ("GET", f"{api}/issues/42/comments?per_page=100"),
        ("POST", f"{api}/issues/42/comments"),
    ]
    body = replay.seen[-1][2]["body"]
    assert body.startswith(pc.MARKER + "\n") and "| truth/a | PASS |" in body
    assert "created comment https://github.com/octo-org/warpboard/pull/42#issuecomment-2311000777" \
        in capsys.readouterr().out


def test_marker_comment_on_page_two_is_patched(tmp_path, capsys):
    replay = _run(tmp_path, "patch_page2")
    assert [(m, u) for m, u, _ in replay.seen] == [
        ("GET", "https://api.github.com/repos/octo-org/warpboard/issues/42/comments?per_page=2"),
        ("GET", "https://api.github.com/repositories/700000001/issues/42/comments"
                "?per_page=2&page=2"),
        ("PATCH", "https://api.github.com/repos/octo-org/warpboard/issues/comments/2311000555"),
    ]
    assert "updated comment" in capsys.readouterr().out


def test_link_header_and_forbidden_is_a_warning(tmp_path, capsys):
    assert pc.next_link({"link": '<https://x/2>; rel="next", <https://x/9>; rel="last"'}) \
        == "https://x/2"
    assert pc.next_link({"Link": '<https://x/1>; rel="prev"'}) is None
    md = tmp_path / "s.md"
    md.write_text("table")
    env = {"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": "o/r"}
    deny = lambda *a: (403, {}, b'{"message": "Resource not accessible by integration"}')
    assert pc.main([str(md), "--pr", "7"], env=env, send=deny) == 0
    assert "::warning::" in capsys.readouterr().out


def test_body_is_cut_to_githubs_limit():
    body = pc.comment_body("x" * 70000, "https://github.com/o/r/actions/runs/1")
    assert len(body) <= pc.MAX_BODY and body.startswith(pc.MARKER)
    assert body.rstrip().endswith("(https://github.com/o/r/actions/runs/1)")


def test_workflow_copy_is_identical():
    """GitHub reads .github/workflows/; ci/scoreboard.yml is the documented source."""
    assert (ROOT / ".github/workflows/scoreboard.yml").read_text() == \
        (ROOT / "ci/scoreboard.yml").read_text()
