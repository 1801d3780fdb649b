"""Write ``embodia/envs/catalog.json``: every registered environment built once, its spaces recorded.

Run after adding an environment or changing its spaces (``tests/envs/test_registry.py`` fails while an
entry is stale). ``--check`` compares instead of writing and exits 1 on a difference.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from embodia.envs import env_ids, inspect_env
from embodia.envs.catalog import CATALOG_FILE

PATH = Path(__file__).resolve().parents[1] / "embodia" / "envs" / CATALOG_FILE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    args = parser.parse_args(argv)
    catalog = {}
    for env_id in env_ids():
        print(f"building {env_id}", file=sys.stderr)
        catalog[env_id] = inspect_env(env_id)
    text = json.dumps(catalog, indent=1, sort_keys=False) + "\n"
    if args.check:
        same = PATH.is_file() and PATH.read_text() == text
        print(
            "catalog is up to date" if same else f"{PATH} is stale: run python scripts/update_env_catalog.py"
        )
        return 0 if same else 1
    PATH.write_text(text)
    print(f"wrote {PATH} ({len(catalog)} environments)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
