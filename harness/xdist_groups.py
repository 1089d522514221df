"""``--dist loadgroup`` for pytest 9.2 and later: an item's ``xdist_group`` mark, carried to the
scheduler again.

pytest-xdist tells its controller an item's group by appending ``@GROUP`` to the item's node
id on the worker (``item._nodeid``); pytest 9.2 keeps node ids in a structured ``item._id``,
so that write is lost and every item is scheduled on its own, silently
(pytest-dev/pytest-xdist#1386). :func:`keep_groups` makes the same write where pytest now
keeps the id; where the id already ends with its group (an older pytest, or a fixed xdist),
it changes nothing. Without xdist, or with another ``--dist``, it does nothing at all.
"""
from __future__ import annotations


def group_of(item) -> str | None:
    """The item's group as xdist names it: its ``xdist_group`` marks' names, sorted, joined
    with ``_`` (None without a mark)."""
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    return "_".join(sorted(names)) or None


def keep_groups(config, items) -> None:
    """Give each grouped item of an xdist worker run with ``--dist loadgroup`` the node id
    ``ID@GROUP`` that xdist's scheduler reads."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        group = group_of(item)
        if group is None or item.nodeid.endswith(f"@{group}"):
            continue
        new = f"{item.nodeid}@{group}"
        if hasattr(item, "_id"):
            item._id = type(item._id).parse(new)
        else:
            item._nodeid = new
