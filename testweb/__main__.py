"""``python -m testweb``: run the local test web until Ctrl-C / SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from .server import TestWebServer
from .site import SiteSpec


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m testweb", description=__doc__)
    p.add_argument("--port", type=int, default=8000, help="port shared by all servers (0 = any free)")
    p.add_argument("--servers", type=int, default=5, help="number of normal servers")
    p.add_argument("--pages", type=int, default=30, help="pages per server")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--first-octet", type=int, default=10, help="servers live on 127.0.0.<first-octet + i>")
    p.add_argument("--log", metavar="PATH", help="append an access log to this file")
    p.add_argument("--no-silent", action="store_true", help="no server that accepts and never answers")
    p.add_argument("--no-slow", action="store_true", help="no slow server")
    return p


def main(argv: list[str] | None = None, *, stop_event: threading.Event | None = None) -> int:
    """Serve until interrupted.  ``stop_event`` lets a caller (or a test) end it."""
    args = _parser().parse_args(argv)
    spec = SiteSpec(
        n_servers=args.servers,
        pages_per_server=args.pages,
        seed=args.seed,
        first_octet=args.first_octet,
        silent_server=not args.no_silent,
        slow_server=not args.no_slow,
    )
    stop = stop_event or threading.Event()
    previous = None
    if threading.current_thread() is threading.main_thread():
        # SIGTERM becomes the same clean stop as Ctrl-C.
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        with TestWebServer(spec, port=args.port, log_path=args.log) as tw:
            seeds = tw.seeds()
            for url in seeds:
                print(url)
            print("crawl with: CRAWL_ALLOW_PRIVATE=127.0.0.0/8 python manage.py crawl " + " ".join(seeds))
            sys.stdout.flush()
            try:
                # wait() with a timeout keeps the main thread responsive to Ctrl-C.
                while not stop.wait(0.5):
                    pass
            except KeyboardInterrupt:
                pass
    except OSError as exc:
        print(f"testweb: {exc}", file=sys.stderr)
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return 0


if __name__ == "__main__":
    sys.exit(main())
