"""Measured: time and peak memory of attention on this machine.

:func:`measure_attention_scaling` times global (fused and plain) and windowed attention
as the token grid grows, with a memory tracker for CPU tensors, and stops by itself at
a token, time or memory budget. It keeps no state between calls.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from .formulas import global_attention_flops, windowed_attention_flops

#: Methods timed by :func:`measure_attention_scaling`.
METHODS: tuple[str, ...] = ("global_sdpa", "global_plain", "windowed")
METHOD_LABELS: dict[str, str] = {
    "global_sdpa": "global, fused scaled_dot_product_attention",
    "global_plain": "global, plain softmax(QK^T)V",
    "windowed": "windowed 7x7, plain softmax(QK^T)V",
}


def _plain_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``softmax(Q K^T / sqrt(d)) V`` with the score matrix formed: ``(..., N, d)`` -> ``(..., N, d)``."""
    attn = (q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1)
    return attn.softmax(dim=-1) @ v


def _windowed_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, side: int, window: int) -> torch.Tensor:
    """Attention inside ``window x window`` windows of a ``side x side`` token grid.

    Args:
        q, k, v: ``(B, h, side*side, d)`` in row-major token order.

    Returns:
        ``(B, h, side*side, d)``; partition and reverse copies are part of the cost, as in Swin.
    """
    b, h, _, d = q.shape
    nw = side // window

    def part(x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(b, h, nw, window, nw, window, d).permute(0, 2, 4, 1, 3, 5, 6)
        return x.reshape(b * nw * nw, h, window * window, d)

    out = _plain_attention(part(q), part(k), part(v))
    out = out.reshape(b, nw, nw, h, window, window, d).permute(0, 3, 1, 4, 2, 5, 6)
    return out.reshape(b, h, side * side, d)


class TensorMemoryTracker(TorchDispatchMode):
    """Peak bytes of tensor storages created while active.

    CPU tensors have no allocator statistics, so every operator's outputs are watched
    (weak references to their storages); storages of ``exclude`` tensors (the inputs)
    do not count. Fused kernels' internal scratch is invisible; for CPU flash
    attention it is a few small per-thread blocks.
    """

    def __init__(self, exclude: Sequence[torch.Tensor] = ()) -> None:
        super().__init__()
        from torch.multiprocessing.reductions import StorageWeakRef

        self._ref = StorageWeakRef
        self._exclude = {t.untyped_storage().data_ptr() for t in exclude}
        self._live: dict[int, tuple[object, int]] = {}
        self.current = 0
        self.peak = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        out = func(*args, **(kwargs or {}))
        for key, (ref, nbytes) in list(self._live.items()):
            if ref.expired():
                del self._live[key]
                self.current -= nbytes
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                st = t.untyped_storage()
                key = st.data_ptr()
                if key and key not in self._exclude and key not in self._live:
                    self._live[key] = (self._ref(st), st.nbytes())
                    self.current += st.nbytes()
        self.peak = max(self.peak, self.current)
        return out


def predicted_attention_bytes(method: str, tokens: int, dim: int, num_heads: int, window: int,
                              element_size: int = 4) -> int:
    """Closed-form peak of the tensors one attention call allocates (inputs excluded).

    * ``global_plain``: the score matrix and its softmax (``2 h N^2``, alive together)
      and the output (``N C``; the scaled ``Q`` is freed before the softmax). The
      ``h N^2`` terms are what run out.
    * ``global_sdpa``: the output and a ``h N`` log-sum-exp; the fused kernel never
      stores the ``N x N`` matrix.
    * ``windowed``: copies of ``Q, K, V`` in window order (``3 N C``), per-window
      scores and softmax (``2 h N M^2``) and the output (``N C``); the reverse copy
      comes after the scores are freed.

    Returns:
        Bytes (``element_size`` bytes per element; float32 = 4).
    """
    n, c, h, a = tokens, dim, num_heads, window * window
    if method == "global_plain":
        elems = 2 * h * n * n + n * c
    elif method == "global_sdpa":
        elems = n * c + h * n
    elif method == "windowed":
        elems = 2 * h * n * a + 4 * n * c
    else:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    return elems * element_size


def method_products_flops(method: str, tokens: int, dim: int, window: int) -> int:
    """Closed-form ``QK^T`` + ``AV`` FLOPs of a timed method (square grid of ``tokens``)."""
    if method in ("global_sdpa", "global_plain"):
        return global_attention_flops(tokens, dim)
    if method == "windowed":
        side = math.isqrt(tokens)
        return windowed_attention_flops(side, dim, window)
    raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")


@dataclass(frozen=True)
class TimingRow:
    """One measurement.

    Attributes:
        method: one of :data:`METHODS`.
        tokens: ``N`` (a square grid of ``side x side``).
        side: grid side.
        seconds: best wall time of one call over ``repeats`` calls.
        peak_bytes: measured peak of tensors allocated by the call.
        predicted_bytes: :func:`predicted_attention_bytes`.
        flops: :func:`method_products_flops`.
        repeats: timed calls.
    """

    method: str
    tokens: int
    side: int
    seconds: float
    peak_bytes: int
    predicted_bytes: int
    flops: int
    repeats: int

    @property
    def flops_per_second(self) -> float:
        """Achieved rate on the counted products."""
        return self.flops / self.seconds if self.seconds > 0 else float("nan")


@dataclass(frozen=True)
class TimingSweep:
    """Result of :func:`measure_attention_scaling`.

    Attributes:
        rows: measurements in order.
        stop_reason: ``"size"`` (every size up to ``max_tokens`` done), ``"time"``
            (time budget spent) or ``"memory"`` (every method's next size predicted
            over the memory budget).
        elapsed_s: wall time of the sweep.
        threads: ``torch.get_num_threads()`` during the sweep.
        device, dtype, dim, num_heads, window: the setup.
        retired: method -> why it stopped early (``"time"`` or ``"memory"``).
    """

    rows: tuple[TimingRow, ...]
    stop_reason: str
    elapsed_s: float
    threads: int
    device: str
    dtype: str
    dim: int
    num_heads: int
    window: int
    retired: dict[str, str] = field(default_factory=dict)

    def by_method(self, method: str) -> list[TimingRow]:
        """Rows of one method, by token count."""
        return sorted((r for r in self.rows if r.method == method), key=lambda r: r.tokens)

    def crossover(self, global_method: str = "global_sdpa", windowed_method: str = "windowed") -> int | None:
        """Smallest measured token count from which windowed is faster at every larger size.

        Only sizes where both methods were measured count. ``None`` if windowed is not
        faster at the largest common size.
        """
        g = {r.tokens: r.seconds for r in self.by_method(global_method)}
        w = {r.tokens: r.seconds for r in self.by_method(windowed_method)}
        common = sorted(set(g) & set(w))
        best = None
        for n in reversed(common):
            if w[n] < g[n]:
                best = n
            else:
                break
        return best

    def best_flops_per_second(self) -> float:
        """Highest achieved rate over all rows (used to draw the analytic time curves)."""
        rates = [r.flops_per_second for r in self.rows if r.seconds > 0]
        return max(rates) if rates else float("nan")


def default_sides(window: int = 7) -> list[int]:
    """Grid sides for the timing sweep: ``window * k`` for k = 1, 2, 3, 4, 6, 8, 12, 16, 24, 32."""
    return [window * k for k in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)]


def measure_attention_scaling(
    dim: int = 96,
    num_heads: int = 3,
    window: int = 7,
    sides: Sequence[int] | None = None,
    max_tokens: int = 12544,
    time_budget_s: float = 20.0,
    memory_budget_bytes: int = 1 << 30,
    methods: Sequence[str] = METHODS,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
    min_timing_s: float = 0.05,
    max_repeats: int = 10,
    progress: Callable[[float, str], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> TimingSweep:
    """Time global vs windowed attention (products + softmax only) as the grid grows.

    For each square grid of ``side x side`` tokens (``side`` a multiple of ``window``,
    ascending) and each method, random ``Q, K, V`` of shape ``(1, h, N, C/h)`` (from a
    generator seeded with ``seed``) are fed to the method once under a memory tracker
    (the peak; also a warm-up), then timed ``1..max_repeats`` times until about
    ``min_timing_s`` is spent; the best time is kept.

    It stops by itself:

    * **size**: grids with more than ``max_tokens`` tokens are not measured;
    * **time**: no new size starts once ``time_budget_s`` has elapsed, and a method
      whose next call is predicted (from its last time, scaled by the FLOP ratio) to
      overrun the remaining budget is retired;
    * **memory**: a method whose predicted peak (:func:`predicted_attention_bytes`,
      plus the inputs) exceeds ``memory_budget_bytes`` is retired before it runs, so
      the plain ``N x N`` path never runs the machine out of memory.

    Args:
        dim, num_heads, window: attention width, heads and window side (Swin-T stage 1:
            96, 3, 7).
        sides: grid sides (multiples of ``window``); default :func:`default_sides`.
        progress: optional ``callback(fraction_done, message)``.
        clock: a monotonic clock in seconds (injectable for tests).

    Returns:
        A :class:`TimingSweep`; no global state is changed (thread count is read only).
    """
    if dim % num_heads:
        raise ValueError(f"dim {dim} is not divisible by {num_heads} heads")
    if time_budget_s <= 0 or memory_budget_bytes <= 0 or max_tokens < 1:
        raise ValueError("time budget, memory budget and max tokens must be positive")
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"unknown methods {unknown}; choose from {', '.join(METHODS)}")
    sides = sorted(set(default_sides(window) if sides is None else sides))
    if any(s < 1 or s % window for s in sides):
        raise ValueError(f"grid sides must be positive multiples of the window {window}, got {list(sides)}")
    device = torch.device(device)
    elt = torch.empty((), dtype=dtype).element_size()
    gen = torch.Generator(device="cpu").manual_seed(seed)
    d = dim // num_heads
    on_cuda = device.type == "cuda"

    def sync() -> None:
        if on_cuda:
            torch.cuda.synchronize(device)

    def call(method: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, side: int) -> torch.Tensor:
        if method == "global_sdpa":
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)
        if method == "global_plain":
            return _plain_attention(q, k, v)
        return _windowed_attention(q, k, v, side, window)

    rows: list[TimingRow] = []
    retired: dict[str, str] = {}
    last: dict[str, TimingRow] = {}
    start = clock()
    sizes = [s for s in sides if s * s <= max_tokens]
    stop_reason = "size"
    with torch.inference_mode():
        for i, side in enumerate(sizes):
            n = side * side
            if clock() - start >= time_budget_s:
                stop_reason = "time"
                break
            inputs_bytes = 3 * n * dim * elt
            for m in methods:
                if m in retired:
                    continue
                pred = predicted_attention_bytes(m, n, dim, num_heads, window, elt)
                if pred + inputs_bytes > memory_budget_bytes:
                    retired[m] = "memory"
                elif m in last:
                    prev = last[m]
                    guess = prev.seconds * method_products_flops(m, n, dim, window) / max(prev.flops, 1)
                    if clock() - start + guess > time_budget_s:
                        retired[m] = "time"
            active = [m for m in methods if m not in retired]
            if not active:
                stop_reason = "memory" if "memory" in retired.values() else "time"
                break
            q, k, v = (torch.randn(1, num_heads, n, d, generator=gen, dtype=dtype).to(device) for _ in range(3))
            for j, m in enumerate(active):
                if progress is not None:
                    progress((i + j / len(active)) / max(len(sizes), 1), f"{n} tokens: {METHOD_LABELS[m]}")
                # The call's output is dropped at once: both peaks count it when it is made, and freeing it is
                # timed like the call's other tensors.
                if on_cuda:
                    torch.cuda.reset_peak_memory_stats(device)
                    base = torch.cuda.memory_allocated(device)
                    call(m, q, k, v, side)
                    sync()
                    peak = torch.cuda.max_memory_allocated(device) - base
                else:
                    with TensorMemoryTracker(exclude=(q, k, v)) as tracker:
                        call(m, q, k, v, side)
                    peak = tracker.peak
                times: list[float] = []
                while True:
                    t0 = clock()
                    call(m, q, k, v, side)
                    sync()
                    times.append(clock() - t0)
                    if (sum(times) >= min_timing_s or len(times) >= max_repeats
                            or clock() - start >= time_budget_s):
                        break
                row = TimingRow(m, n, side, min(times), int(peak),
                                predicted_attention_bytes(m, n, dim, num_heads, window, elt),
                                method_products_flops(m, n, dim, window), len(times))
                rows.append(row)
                last[m] = row
            del q, k, v
    if progress is not None:
        progress(1.0, "done")
    return TimingSweep(
        rows=tuple(rows),
        stop_reason=stop_reason,
        elapsed_s=clock() - start,
        threads=torch.get_num_threads(),
        device=str(device),
        dtype=str(dtype).replace("torch.", ""),
        dim=dim,
        num_heads=num_heads,
        window=window,
        retired=dict(retired),
    )


def timing_rows(sweep: TimingSweep) -> list[dict]:
    """A sweep as plain dicts (for CSV): one per measurement, with the setup repeated."""
    return [
        {
            "method": r.method,
            "tokens": r.tokens,
            "grid_side": r.side,
            "seconds": r.seconds,
            "peak_bytes": r.peak_bytes,
            "predicted_bytes": r.predicted_bytes,
            "products_flops": r.flops,
            "gflops_per_s": r.flops_per_second / 1e9,
            "repeats": r.repeats,
            "threads": sweep.threads,
            "device": sweep.device,
            "dtype": sweep.dtype,
            "dim": sweep.dim,
            "heads": sweep.num_heads,
            "window": sweep.window,
        }
        for r in sweep.rows
    ]
