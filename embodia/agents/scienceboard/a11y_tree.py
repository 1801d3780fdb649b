"""Print the AT-SPI accessibility tree of the programs on this display as indented text.

Run by Debian's Python (``/usr/bin/python3``, which has ``pyatspi`` from ``python3-pyatspi``) inside a
sandbox's environment (``DISPLAY``, ``DBUS_SESSION_BUS_ADDRESS``): embodia's own interpreter has no
``gi``. One node per line: ``[role] name | text | (x,y wxh)``, children indented by two spaces; nodes with
neither a name nor text are shown only near the root, and the output stops after ``--max-lines`` lines.
With ``--showing-only 1`` nodes that are not on screen (closed menus, hidden tab pages) are left out with
everything below them, and nodes on screen are shown even without a name or text (an empty entry field):
what set-of-marks observations mark.
This is the "a11y tree" observation ScienceBoard gives agents, and how checkers read GUI-only state
(KAlgebra's variable table).
"""

from __future__ import annotations

import sys


def describe(node, depth: int, keep_unnamed: bool = False) -> str | None:  # type: ignore[no-untyped-def]
    try:
        name = node.name or ""
        role = node.getRoleName()
    except Exception:
        return None
    text = ""
    try:
        text_iface = node.queryText()
        text = text_iface.getText(0, min(text_iface.characterCount, 200))
    except Exception:
        pass
    box = ""
    try:
        import pyatspi

        extents = node.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
        if extents.width > 0 and extents.height > 0:
            box = f" ({extents.x},{extents.y} {extents.width}x{extents.height})"
    except Exception:
        pass
    if not name and not text and depth > 3 and not (keep_unnamed and box):
        return ""
    parts = [f"[{role}]"]
    if name:
        parts.append(name.replace("\n", " ")[:200])
    if text and text != name:
        parts.append("| " + text.replace("\n", "\\n"))
    return "  " * depth + " ".join(parts) + box


def main() -> int:
    options = dict(zip(sys.argv[1::2], sys.argv[2::2]))  # --application NAME --max-lines N --showing-only 1
    only = options.get("--application")
    max_lines = int(options.get("--max-lines", "300"))
    showing_only = options.get("--showing-only") == "1"
    import pyatspi

    lines: list[str] = []

    def walk(node, depth: int) -> None:  # type: ignore[no-untyped-def]
        if len(lines) >= max_lines or depth > 40:
            return
        if showing_only and depth > 0:
            try:
                if not node.getState().contains(pyatspi.STATE_SHOWING):
                    return
            except Exception:
                return
        line = describe(node, depth, keep_unnamed=showing_only)
        if line is None:
            return
        if line:
            lines.append(line)
        try:
            count = node.childCount
        except Exception:
            return
        for index in range(min(count, 500)):
            try:
                child = node.getChildAtIndex(index)
            except Exception:
                continue
            if child is not None:
                walk(child, depth + 1)

    desktop = pyatspi.Registry.getDesktop(0)
    for index in range(desktop.childCount):
        application = desktop.getChildAtIndex(index)
        if application is None:
            continue
        if only and (application.name or "").lower() != only.lower():
            continue
        walk(application, 0)
    sys.stdout.write("\n".join(lines[:max_lines]) + ("\n" if lines else ""))
    if len(lines) >= max_lines:
        sys.stdout.write(f"... (cut at {max_lines} lines)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
