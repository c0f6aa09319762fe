"""Render deploy/nginx.conf.template for N vitviz replicas.

Examples::

    # the http-level part, for Debian's nginx (/etc/nginx/conf.d/ is included inside its http block)
    python deploy/render.py --replicas 127.0.0.1:7861 127.0.0.1:7862 --listen 80 > /etc/nginx/conf.d/vitviz.conf
    # a whole configuration that runs as any user from one folder (what tests/deploy does)
    python deploy/render.py --replicas 127.0.0.1:7861 127.0.0.1:7862 --listen 127.0.0.1:7860 \
        --standalone /tmp/vitviz-nginx > /tmp/vitviz-nginx/nginx.conf
    nginx -p /tmp/vitviz-nginx -c /tmp/vitviz-nginx/nginx.conf   # as root: its workers run as nobody, who must
    # reach PREFIX (mode 755)

The standard library only: it runs where nginx runs, without vitviz's dependencies.
"""

from __future__ import annotations

import argparse
import re
import string
import sys
from pathlib import Path

TEMPLATE = Path(__file__).with_name("nginx.conf.template")
_ADDRESS = re.compile(r"^(unix:/[\w./-]+|[\w.-]+:\d{1,5}|\[[0-9a-fA-F:]+\]:\d{1,5})$")
_SIZE = re.compile(r"^\d+[kKmMgG]?$")


def render(replicas: list[str], listen: str, max_body: str = "25m", cookie: str = "vitviz_replica",
           cache_dir: str = "/var/cache/nginx/vitviz", max_fails: int = 1, fail_timeout: int = 10,
           secure_cookie: bool = False, expose_upstream: bool = False, rate: str = "20r/s", burst: int = 60,
           connections: int = 64) -> str:
    """The http-level configuration (a ``map``, the ``upstream``, the static cache and the ``server``).

    Args:
        replicas: ``host:port`` (or ``unix:/path``) of each app replica.
        listen: nginx's ``listen`` value (``80``, ``127.0.0.1:7860``).
        max_body: ``client_max_body_size`` (nginx size: ``25m``).
        cookie: name of the route cookie that keeps a browser on one replica.
        cache_dir: folder of the static-file cache.
        max_fails, fail_timeout: passive health check: failed connections within ``fail_timeout`` seconds
            that mark a replica down for ``fail_timeout`` seconds.
        secure_cookie: mark the route cookie ``Secure`` (when nginx or a proxy in front serves HTTPS).
        expose_upstream: answer with an ``X-Vitviz-Upstream`` header naming the replica (tests only: it
            tells visitors the internal addresses).
        rate, burst: uploads and queue joins one client address may send over all replicas (nginx's
            ``limit_req``: ``20r/s`` or ``600r/m``), and how many more at once (``nodelay``); more get HTTP 429.
        connections: connections one client address may hold open at once over all replicas (``limit_conn``;
            a browser holds a few, a class behind one NAT many).

    Raises:
        ValueError: no replicas, or a value nginx would misread.
    """
    if not replicas:
        raise ValueError("give at least one replica (host:port)")
    for r in replicas:
        if not _ADDRESS.match(r):
            raise ValueError(f"replica {r!r}: expected host:port, [ipv6]:port or unix:/path")
    if not _SIZE.match(max_body):
        raise ValueError(f"max body {max_body!r}: expected an nginx size such as 25m")
    if not re.match(r"^[A-Za-z0-9_]+$", cookie):
        raise ValueError(f"cookie {cookie!r}: letters, digits and _ only")
    if not re.match(r"^[\w.:\[\]]+$", listen):
        raise ValueError(f"listen {listen!r}: expected a port or address:port")
    if not re.match(r"^\d+r/[sm]$", rate) or burst < 0 or connections < 1:
        raise ValueError(f"rate {rate!r}, burst {burst}, connections {connections}: expected 20r/s (or r/m), "
                         "a burst of 0 or more and at least one connection")
    servers = "\n".join(f"    server {r} max_fails={max_fails} fail_timeout={fail_timeout}s;" for r in replicas)
    extra = "        add_header X-Vitviz-Upstream $upstream_addr always;" if expose_upstream else ""
    return string.Template(TEMPLATE.read_text()).substitute(
        servers=servers, listen=listen, max_body=max_body, cookie=cookie, cache_dir=cache_dir,
        secure="; Secure" if secure_cookie else "", extra_headers=extra, rate=rate, burst=burst,
        connections=connections)


def standalone(http: str, prefix: Path) -> str:
    """``http`` wrapped into a whole nginx configuration whose pid, logs and temporary files live in
    ``prefix`` (nginx runs in the foreground as the current user: ``nginx -p PREFIX -c PREFIX/nginx.conf``)."""
    p = prefix.resolve()
    temps = "\n".join(f"    {k}_temp_path {p}/tmp/{k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return (f"daemon off;\nworker_processes 1;\npid {p}/nginx.pid;\nerror_log {p}/error.log warn;\n"
            f"events {{ worker_connections 1024; }}\nhttp {{\n    access_log {p}/access.log;\n{temps}\n"
            + "\n".join("    " + line if line else line for line in http.splitlines()) + "\n}\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Render vitviz's nginx configuration for N replicas.")
    ap.add_argument("--replicas", nargs="+", required=True, help="host:port of each replica")
    ap.add_argument("--listen", default="80", help="nginx listen value (default 80)")
    ap.add_argument("--max-body", default="25m", help="client_max_body_size (default 25m)")
    ap.add_argument("--cookie", default="vitviz_replica", help="route cookie's name")
    ap.add_argument("--cache-dir", default=None, help="static cache folder (default /var/cache/nginx/vitviz, "
                                                      "or PREFIX/cache with --standalone)")
    ap.add_argument("--max-fails", type=int, default=1)
    ap.add_argument("--fail-timeout", type=int, default=10, help="seconds")
    ap.add_argument("--secure-cookie", action="store_true", help="mark the route cookie Secure (HTTPS)")
    ap.add_argument("--rate", default="20r/s", help="uploads and queue joins per address over all replicas "
                                                     "(nginx limit_req: 20r/s, or 600r/m)")
    ap.add_argument("--burst", type=int, default=60, help="how many of those at once beyond the rate")
    ap.add_argument("--connections", type=int, default=64, help="open connections per address (limit_conn)")
    ap.add_argument("--expose-upstream", action="store_true", help="X-Vitviz-Upstream header (tests only)")
    ap.add_argument("--standalone", type=Path, metavar="PREFIX",
                    help="a whole configuration with its pid, logs and temporary files in PREFIX (created)")
    a = ap.parse_args(argv)
    cache = a.cache_dir or (str(a.standalone.resolve() / "cache") if a.standalone else "/var/cache/nginx/vitviz")
    try:
        http = render(a.replicas, a.listen, a.max_body, a.cookie, cache, a.max_fails, a.fail_timeout,
                      a.secure_cookie, a.expose_upstream, a.rate, a.burst, a.connections)
    except ValueError as e:
        print(f"render.py: {e}", file=sys.stderr)
        return 2
    if a.standalone:
        for sub in ("tmp", "cache"):
            (a.standalone / sub).mkdir(parents=True, exist_ok=True)
        http = standalone(http, a.standalone)
    sys.stdout.write(http)
    return 0


if __name__ == "__main__":
    sys.exit(main())
