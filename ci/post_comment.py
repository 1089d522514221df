#!/usr/bin/env python3
"""Post the scoreboard markdown on a pull request, as ONE comment that later runs update.

Usage (in a pull_request workflow):
    python ci/post_comment.py [reports/out/scoreboard.md] [--pr N] [--dry-run]

Reads GITHUB_TOKEN and GITHUB_REPOSITORY (and GITHUB_API_URL, for GitHub Enterprise)
from the environment; the PR number comes from --pr or from the event payload at
GITHUB_EVENT_PATH (``pull_request.number``). The comment is recognised by the hidden
marker ``<!-- warpboard-scoreboard -->`` on its first line: every page of the PR's
issue comments is listed (following the ``Link: rel="next"`` header); if one carries the
marker it is PATCHed, otherwise a new comment is POSTed.

Stdlib only, so it runs before (or without) the project's virtual environment. The
HTTP layer is one injectable function, ``send(method, url, headers, body) ->
(status, headers, body)``, so tests replay a recorded exchange without a network.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.request
from typing import Any, Callable

MARKER = "<!-- warpboard-scoreboard -->"
MAX_BODY = 65536                     # GitHub rejects issue comments longer than this
API_VERSION = "2022-11-28"

Send = Callable[[str, str, dict, bytes | None], tuple[int, dict, bytes]]


class GitHubError(RuntimeError):
    """A non-2xx answer from the GitHub API."""

    def __init__(self, status: int, method: str, url: str, body: bytes):
        self.status = status
        detail = body.decode("utf-8", "replace")[:300]
        super().__init__(f"{method} {url} -> HTTP {status}: {detail}")


def urllib_send(method: str, url: str, headers: dict, body: bytes | None) -> tuple[int, dict, bytes]:
    """The real transport: one HTTPS request with urllib; HTTP errors are returned, not raised."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers.items()), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers.items()), err.read()


def next_link(headers: dict) -> str | None:
    """The ``rel="next"`` URL of a GitHub ``Link`` header, if there is one."""
    link = next((v for k, v in headers.items() if k.lower() == "link"), "")
    for part in link.split(","):
        m = re.match(r'\s*<([^>]+)>\s*;\s*rel="([^"]+)"', part)
        if m and "next" in m.group(2).split():
            return m.group(1)
    return None


class Comments:
    """The issue comments of one pull request, through an injectable transport."""

    def __init__(self, token: str, repo: str, pr: int, send: Send = urllib_send,
                 api: str = "https://api.github.com", per_page: int = 100):
        self.token, self.repo, self.pr, self.send = token, repo, pr, send
        self.api, self.per_page = api.rstrip("/"), per_page

    def _call(self, method: str, url: str, payload: Any = None) -> tuple[dict, Any]:
        """One API request with JSON in and out; raises GitHubError unless 2xx."""
        headers = {"Accept": "application/vnd.github+json",
                   "Authorization": f"Bearer {self.token}",
                   "X-GitHub-Api-Version": API_VERSION,
                   "User-Agent": "warpboard-ci"}
        body = None
        if payload is not None:
            body = json.dumps(payload).encode("utf-8")
            headers["Content-Type"] = "application/json"
        status, resp_headers, resp_body = self.send(method, url, headers, body)
        if not 200 <= status < 300:
            raise GitHubError(status, method, url, resp_body)
        return resp_headers, json.loads(resp_body) if resp_body else None

    def list(self) -> list[dict]:
        """Every comment on the PR, following pagination."""
        url: str | None = (f"{self.api}/repos/{self.repo}/issues/{self.pr}/comments"
                           f"?per_page={self.per_page}")
        out: list[dict] = []
        while url:
            headers, page = self._call("GET", url)
            out.extend(page)
            url = next_link(headers)
        return out

    def find(self, marker: str = MARKER) -> dict | None:
        """The first (oldest) comment carrying the marker, or None."""
        return next((c for c in self.list() if marker in (c.get("body") or "")), None)

    def upsert(self, body: str, marker: str = MARKER) -> tuple[str, dict]:
        """Update the marked comment, or create it; return ("updated"|"created", comment)."""
        existing = self.find(marker)
        if existing is not None:
            url = f"{self.api}/repos/{self.repo}/issues/comments/{existing['id']}"
            return "updated", self._call("PATCH", url, {"body": body})[1]
        url = f"{self.api}/repos/{self.repo}/issues/{self.pr}/comments"
        return "created", self._call("POST", url, {"body": body})[1]


def comment_body(markdown: str, run_url: str | None = None) -> str:
    """The marker, the markdown, and a link to the run; cut to GitHub's size limit."""
    footer = f"\n\n[Full report and artifacts]({run_url})\n" if run_url else ""
    body = f"{MARKER}\n{markdown.rstrip()}\n{footer}"
    if len(body) > MAX_BODY:
        cut = "\n\n*(scoreboard truncated to fit a GitHub comment; see the artifact)*\n"
        body = body[: MAX_BODY - len(cut) - len(footer)] + cut + footer
    return body


def pr_number(arg: int | None, event_path: str | None) -> int | None:
    """The PR number from the argument, else from the workflow's event payload."""
    if arg is not None:
        return arg
    if event_path and os.path.exists(event_path):
        with open(event_path, encoding="utf-8") as fh:
            event = json.load(fh)
        number = (event.get("pull_request") or {}).get("number")
        return int(number) if number is not None else None
    return None


def run_url(env: dict) -> str | None:
    """The Actions run's web address, when running inside GitHub Actions."""
    if env.get("GITHUB_SERVER_URL") and env.get("GITHUB_REPOSITORY") and env.get("GITHUB_RUN_ID"):
        return (f"{env['GITHUB_SERVER_URL']}/{env['GITHUB_REPOSITORY']}"
                f"/actions/runs/{env['GITHUB_RUN_ID']}")
    return None


def main(argv: list[str] | None = None, env: dict | None = None, send: Send = urllib_send) -> int:
    """Post or update the scoreboard comment; return an exit code."""
    env = dict(os.environ if env is None else env)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("markdown", nargs="?", default="reports/out/scoreboard.md")
    p.add_argument("--pr", type=int, help="pull request number (default: from GITHUB_EVENT_PATH)")
    p.add_argument("--per-page", type=int, default=100, help="comments per listed page")
    p.add_argument("--dry-run", action="store_true", help="print the body, send nothing")
    args = p.parse_args(argv)

    with open(args.markdown, encoding="utf-8") as fh:
        body = comment_body(fh.read(), run_url(env))
    if args.dry_run:
        print(body)
        return 0
    number = pr_number(args.pr, env.get("GITHUB_EVENT_PATH"))
    missing = [k for k, v in (("GITHUB_TOKEN", env.get("GITHUB_TOKEN")),
                              ("GITHUB_REPOSITORY", env.get("GITHUB_REPOSITORY")),
                              ("PR number", number)) if not v]
    if missing:
        print(f"post_comment: missing {', '.join(missing)}", file=sys.stderr)
        return 2
    comments = Comments(env["GITHUB_TOKEN"], env["GITHUB_REPOSITORY"], number, send,
                        env.get("GITHUB_API_URL") or "https://api.github.com", args.per_page)
    try:
        action, comment = comments.upsert(body)
    except GitHubError as exc:
        if exc.status == 403:        # e.g. a PR from a fork: the token is read-only
            print(f"::warning::could not post the scoreboard comment: {exc}")
            return 0
        print(f"post_comment: {exc}", file=sys.stderr)
        return 1
    print(f"{action} comment {comment.get('html_url') or comment.get('id')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
