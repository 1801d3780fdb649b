"""``embodia view STORE --out FILE.rrd``: look at a trajectory store's episodes in Rerun.

The store is exported to an ``.rrd`` recording (:func:`embodia.runner.rerun_view.export_store`: images,
depth, state and actions as time series, episode notes, navigation maps and paths). ``--spawn`` then opens
Rerun's native viewer on it where a display exists; ``--serve`` serves Rerun's web viewer for a headless
machine (a gRPC server holding the recording, bound to this machine unless ``--bind`` says otherwise, and
the viewer's page) and prints the one URL to open, until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from embodia.core.cli_args import positive_int


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("view", help="export a trajectory store to a Rerun recording (and open or serve it)")
    p.add_argument("store", help="STORE.zarr")
    p.add_argument("--episode", type=int, action="append", help="episode index (repeatable; default all)")
    p.add_argument("--out", required=True, metavar="FILE.rrd", help="the Rerun recording to write")
    p.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    p.add_argument(
        "--no-map", action="store_true", help="navigation stores: skip the top-down maps (no scene rebuild)"
    )
    show = p.add_mutually_exclusive_group()
    show.add_argument("--spawn", action="store_true", help="open the native Rerun viewer (needs a display)")
    show.add_argument(
        "--serve", action="store_true", help="serve the web viewer (headless machines); stop with Ctrl-C"
    )
    p.add_argument("--web-port", type=positive_int, default=9090, help="--serve: the web viewer's port")
    p.add_argument("--grpc-port", type=positive_int, default=9876, help="--serve: the recording's gRPC port")
    p.add_argument(
        "--bind",
        default="127.0.0.1",
        help="--serve: the address the recording's gRPC server listens on (default 127.0.0.1: this machine "
        "only; forward the ports over SSH, or 0.0.0.0 to serve a trusted network)",
    )
    p.add_argument("--json", action="store_true", help="print the export summary as JSON")
    p.set_defaults(func=cmd_view)


def cmd_view(args: argparse.Namespace) -> int:
    from embodia.core.errors import EmbodiaError
    from embodia.runner.rerun_view import export_store

    if args.spawn and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise EmbodiaError(
            "--spawn needs a display ($DISPLAY / $WAYLAND_DISPLAY are unset): use --serve and open the URL, "
            "or copy the .rrd to a machine with a display"
        )
    summary = export_store(
        args.store, args.out, args.episode or None, overwrite=args.overwrite, nav_maps=not args.no_map
    )
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        timing = f" at {summary['fps']:g} steps/s (timeline episode_time)" if summary["fps"] else ""
        print(
            f"{summary['out']}: {len(summary['episodes'])} episodes, {summary['steps']} steps{timing}, "
            f"{summary['bytes'] / 1e6:.1f} MB"
        )
    if args.spawn:
        subprocess.Popen(
            [sys.executable, "-m", "rerun", str(summary["out"])],
            start_new_session=True,  # the viewer outlives this command
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        print("opened the Rerun viewer")
    elif args.serve:
        return _serve(Path(summary["out"]), args.web_port, args.grpc_port, args.bind)
    return 0


def _serve(recording_file: Path, web_port: int, grpc_port: int, bind: str) -> int:
    """Serve ``recording_file`` to Rerun's web viewer until Ctrl-C.

    The recording goes to a gRPC server sink bound to ``bind`` (default 127.0.0.1: the data never leaves
    this machine unless the user says so; forward the ports over SSH), and Rerun's web server serves the
    viewer's page (HTML, JS and wasm, no data). Both run in this process; idle, they use ~5 % of a core.
    (Rerun's own ``rerun --serve-web FILE`` took a whole core while idle here, so it is not used.)
    """
    import socket
    from urllib.parse import quote

    import rerun as rr
    from rerun.chunk import RrdReader

    from embodia.core.errors import EmbodiaError
    from embodia.runner.rerun_view import APPLICATION_ID, default_blueprint, entity_kinds

    for host, port in ((bind, grpc_port), ("0.0.0.0", web_port)):
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            try:
                probe.bind((host, port))
            except OSError as error:
                raise EmbodiaError(
                    f"cannot serve the viewer on port {port}: {error.strerror}; choose free ports with "
                    "--web-port / --grpc-port"
                ) from None
    recording = rr.RecordingStream(APPLICATION_ID)
    try:
        sink = rr.GrpcServerSink(bind_ip=bind, port=grpc_port, server_memory_limit="50%")
        recording.set_sinks(sink)
        kinds: dict[str, str] = {}
        recording.send_chunks(entity_kinds(RrdReader(recording_file).stream(), kinds))
        recording.send_blueprint(default_blueprint(kinds))
        rr.serve_web_viewer(web_port=web_port, open_browser=False, connect_to=sink.uri)
    except (RuntimeError, ValueError) as error:
        raise EmbodiaError(
            f"cannot serve the viewer (bind {bind}, ports {web_port} / {grpc_port}): {error}"
        ) from None
    host = "localhost" if bind in ("127.0.0.1", "0.0.0.0") else bind
    grpc_url = f"rerun+http://{host}:{grpc_port}/proxy"
    print(f"open http://{host}:{web_port}/?url={quote(grpc_url, safe='')}  (Ctrl-C stops)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("stopped serving", flush=True)
    finally:
        recording.disconnect()
    return 0
