"""Bootstrap draws over clusters as multiplicity matrices (draws x clusters: how many times each cluster
is drawn), the one source of :func:`metrics.core.intervals.stratified_cluster_draws`'s resamples.

A matrix is a pure function of (seed, draws, strata sizes): the small ones are kept per process, and
inside a :func:`shared_draws` scope (one per report) the large ones asked for twice are too (issue 23).
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

__all__ = ["SHARED_DRAWS_BYTES", "draw_blocks", "multiplicities", "shared_draws"]

_BLOCK_CELLS = 4_000_000  # (draws x clusters) cells per block: bounds memory

#: Per stratum, the blocks of a (draws x clusters) multiplicity matrix.
Multiplicities = list[list[NDArray[np.integer]]]


def draw_blocks(n_boot: int, n_clusters: int, cells: int = _BLOCK_CELLS) -> Iterator[int]:
    """Sizes of the blocks of draws that keep each block's (draws x clusters) under `cells`."""
    step = max(1, cells // max(1, n_clusters))
    done = 0
    while done < n_boot:
        m = min(step, n_boot - done)
        yield m
        done += m


_CACHED_CELLS = 4_000_000  # multiplicity matrices up to this size are kept (uint8/16: <= 8 MB each)


def multiplicities(seed: int | None, n_boot: int, sizes: tuple[int, ...]) -> Multiplicities:
    """Per stratum, the blocks of draw x cluster multiplicities of
    :func:`metrics.core.intervals.stratified_cluster_draws`
    (a pure function of the seed, the number of draws and the strata sizes). A report draws the same
    images many times (every interval of a PST setting resamples its 800 images with the report's
    seed): the small ones are computed once per process (issue 23), the values unchanged."""
    if seed is not None and n_boot * sum(sizes) <= _CACHED_CELLS:
        return _multiplicities_cached(int(seed), n_boot, sizes)
    scope = _SHARED.get()
    if seed is None or scope is None:
        return _multiplicities_drawn(seed, n_boot, sizes)
    return scope.get(int(seed), n_boot, sizes)


class _SharedDraws:
    """The large multiplicity matrices drawn inside one :func:`shared_draws` scope. Most draws are made once
    (an interval over images no other interval resamples), so a matrix is kept from its second request on
    (the first only notes its key), and only while the kept ones fit in `max_bytes`, least recently used
    dropped first; a matrix larger than `max_bytes` is never kept."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.kept: OrderedDict[tuple[int, int, tuple[int, ...]], Multiplicities] = OrderedDict()
        self.seen: set[tuple[int, int, tuple[int, ...]]] = set()
        self.drawn = 0  # matrices drawn (misses), for tests and benchmarks
        self.reused = 0

    def get(self, seed: int, n_boot: int, sizes: tuple[int, ...]) -> Multiplicities:
        key = (seed, n_boot, sizes)
        hit = self.kept.get(key)
        if hit is not None:
            self.kept.move_to_end(key)
            self.reused += 1
            return hit
        self.drawn += 1
        out = _multiplicities_drawn(seed, n_boot, sizes)
        size = _nbytes(out)
        if key not in self.seen or size > self.max_bytes:
            self.seen.add(key)
            return out
        _freeze(out)
        while self.kept and sum(_nbytes(v) for v in self.kept.values()) + size > self.max_bytes:
            self.kept.popitem(last=False)
        self.kept[key] = out
        return out


def _nbytes(m: Multiplicities) -> int:
    return sum(b.nbytes for blocks in m for b in blocks)


_SHARED: ContextVar[_SharedDraws | None] = ContextVar("shared_draws", default=None)

#: What one scope keeps: at 10M answers one matrix of 1,000 draws over 222k images is 222 MB (uint8), the
#: report's GEP draws that every annotator group reuses; the 10M report's peak stays under 4 GB with it.
SHARED_DRAWS_BYTES = 256 * 2 ** 20


@contextmanager
def shared_draws(max_bytes: int = SHARED_DRAWS_BYTES) -> Iterator[_SharedDraws]:
    """Inside this scope, bootstrap draws over the same strata sizes with the same seed and number of draws
    are drawn once, however large (outside it only the small ones are, :data:`_CACHED_CELLS`). A report
    resamples the same images many times: its GEP score and every annotator group's GEP score resample
    the setting's images (a group's missing labels count nowhere, the images stay), so one matrix serves
    them all. The draws are a pure function of (seed, draws, sizes): every figure is the one drawn
    without the scope (tested). Memory: at most `max_bytes` kept (:class:`_SharedDraws`)."""
    outer = _SHARED.get()
    if outer is not None:  # nested: the outer scope keeps serving
        yield outer
        return
    scope = _SharedDraws(max_bytes)
    token = _SHARED.set(scope)
    try:
        yield scope
    finally:
        _SHARED.reset(token)


# From this many clusters on, a block's draws are counted one draw at a time: one bincount over the whole
# (draws x clusters) block scatters into m * n counters, far out of cache (1,000 draws over 22,208 images:
# 0.17 -> 0.13 s; over 222,080: 1.65 -> 1.10 s); below it the one bincount is faster (the loop's overhead).
_ROW_BINCOUNT = 2048


#: A draw's counts go straight into uint8 rows while every count stays at most this (the usual case: a
#: cluster drawn 256 times out of n >= 2,048 draws does not happen); past it the block is counted again
#: the wide way. A name so that a test can lower it.
_NARROW_MAX = 255


def _multiplicities_drawn(seed: int | None, n_boot: int, sizes: tuple[int, ...]) -> Multiplicities:
    rng = np.random.default_rng(seed)
    out: Multiplicities = []
    for n in sizes:
        blocks: list[NDArray[np.integer]] = []
        for m in (draw_blocks(n_boot, n) if n else ()):
            # int32 draws are the int64 ones (numpy draws a range under 2**32 by the same 32-bit Lemire
            # steps whatever the output type; tested), at half the memory.
            idx = rng.integers(0, n, size=(m, n), dtype=np.int32 if n < 2 ** 31 else np.int64)
            if n < _ROW_BINCOUNT:
                flat = idx.astype(np.int64) + (np.arange(m, dtype=np.int64) * n)[:, None]
                blocks.append(_narrowest(np.bincount(flat.ravel(), minlength=m * n).reshape(m, n)))
            else:  # the same counts, one draw at a time: its counters stay in cache (bench/README.md section 4)
                blocks.append(_counted_by_row(idx, n))
        out.append(blocks)
    return out


def _narrowest(mult: NDArray[np.int64]) -> NDArray[np.integer]:
    top = int(mult.max(initial=0))
    return mult.astype(np.uint8 if top < 256 else np.uint16 if top < 65536 else np.int64, copy=False)


def _counted_by_row(idx: NDArray[np.integer], n: int) -> NDArray[np.integer]:
    """Each draw's counts of the block ``idx`` (draws x n), written straight into uint8 rows (no int64
    matrix to allocate and narrow); the wide way when a count passes :data:`_NARROW_MAX`."""
    narrow = np.empty(idx.shape, dtype=np.uint8)
    for i in range(idx.shape[0]):
        row = np.bincount(idx[i], minlength=n)
        if int(row.max(initial=0)) > _NARROW_MAX:
            wide = np.empty(idx.shape, dtype=np.int64)
            for j in range(idx.shape[0]):
                wide[j] = np.bincount(idx[j], minlength=n)
            return _narrowest(wide)
        narrow[i] = row
    return narrow


def _freeze(m: Multiplicities) -> Multiplicities:
    """Read-only blocks: a kept matrix is shared by every interval that asks for it."""
    for blocks in m:
        for b in blocks:
            b.flags.writeable = False
    return m


@lru_cache(maxsize=16)
def _multiplicities_cached(seed: int, n_boot: int, sizes: tuple[int, ...]) -> Multiplicities:
    return _freeze(_multiplicities_drawn(seed, n_boot, sizes))
