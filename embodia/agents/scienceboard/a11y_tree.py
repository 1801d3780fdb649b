"""Print the AT-SPI accessibility tree of the programs on this display as indented text.

Run by Debian's Python (``/usr/bin/python3``, which has ``pyatspi`` from ``python3-pyatspi``) inside a
sandbox's environment (``DISPLAY``, ``DBUS_SESSION_BUS_ADDRESS``): embodia's own interpreter has no
``gi``. One node per line: ``[role] name | text | (x,y wxh)``, children indented by two spaces; nodes with
neither a name nor text are shown only near the root, and the output stops after ``--max-lines`` lines.
This is the "a11y tree" observation ScienceBoard gives agents, and how checkers read GUI-only state
(KAlgebra's variable table).
"""

from __future__ import annotations

import sys


def describe(node, depth: int) -> str | None:  # type: ignore[no-untyped-def]
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
    if not name and not text and depth > 3:
        return ""
    parts = [f"[{role}]"]
    if name:
        parts.append(name.replace("\n", " ")[:200])
    if text and text != name:
        parts.append("| " + text.replace("\n", "\\n"))
    return "  " * depth + " ".join(parts) + box


def main() -> int:
    options = dict(zip(sys.argv[1::2], sys.argv[2::2]))  # --application NAME --max-lines N
    only = options.get("--application")
    max_lines = int(options.get("--max-lines", "300"))
    import pyatspi

    lines: list[str] = []

    def walk(node, depth: int) -> None:  # type: ignore[no-untyped-def]
        if len(lines) >= max_lines or depth > 40:
            return
        line = describe(node, depth)
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
