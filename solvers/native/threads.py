"""Threads around native kernels: one shared pool and a helper that runs a kernel's query over slices of its elements.

A ``ctypes.CDLL`` function releases the GIL while it runs, so plain Python threads that each call a C kernel run in
parallel on several cores; the C side stays single-threaded (no threads, no global state), and each thread passes
its own output buffers. Used by ``self_kernels.SelfPairQuery`` for the Verlet lists' builds.

``thread_count()``: how many threads a call may use: ``min(machine_cores(), DEFAULT_LIMIT)``, lowered to the
limit ``set_limit`` was given (the add-on passes the scene's Render > Performance > Threads, which is ``blender -t N``'s
N on a render farm), or the environment variable ``SOFTSIM_THREADS`` (a positive integer, above both; 1 runs
everything on the caller's thread, no pool). It is read on every call, so a change takes effect at the next call.

``run_parts(functions)``: runs each function once, the caller's thread taking the first and the shared pool the others.

``run_ranges(function, count, parts)``: splits the elements [0, count) into ``parts`` interleaved slices of blocks of
up to ``block`` elements (part k takes blocks k, k + parts, k + 2 parts, ...: a crumpled region, whose elements have
many pairs, is spread over every part rather than left to one) and runs ``function`` once per part, the caller's thread
taking part 0 and the shared pool the others. With one part (or ``count`` below ``minimum``) it is a plain call.

The pool is created on first use and reused by every call in the process (its worker threads stay idle between
calls; they are not daemons, and Python joins them at exit once their work is done).
"""
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

ENVIRONMENT_VARIABLE = "SOFTSIM_THREADS"
DEFAULT_LIMIT = 8
"""At most this many threads by default (a build's serial prepare step and the memory bandwidth its queries share
leave little to gain beyond)."""
BLOCK = 256
"""Elements per block of an interleaved slice (at most: see ``slices``)."""
BLOCKS_PER_PART = 4
"""Each part gets at least this many blocks (``slices``)."""

POOL_LIMIT = 63
"""Worker threads the shared pool may start (it starts them one by one as calls need them; parts beyond that wait
for a free worker)."""

_pool = None
_pool_lock = threading.Lock()
_limit = None


def set_limit(count) -> None:
    """At most ``count`` threads a call from now on (a positive integer), or None: no limit but the machine's
    (``thread_count``). ValueError for anything else."""
    global _limit
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise ValueError(f"thread limit: a positive integer or None, not {count!r}")
    _limit = count


@functools.lru_cache(maxsize=1)
def machine_cores() -> int:
    """The machine's cores (``os.cpu_count``; 1 when it cannot tell), read once: a call costs ~40 us, and the
    self-collision lists' builds ask for the thread count several times a frame."""
    return os.cpu_count() or 1


def thread_count() -> int:
    """Threads a kernel call may use: ``SOFTSIM_THREADS`` when set (a positive integer, else ValueError naming the
    variable), else the machine's cores up to DEFAULT_LIMIT and the limit of ``set_limit``."""
    value = os.environ.get(ENVIRONMENT_VARIABLE)
    if value is None or value.strip() == "":
        return max(1, min(machine_cores(), DEFAULT_LIMIT, _limit or DEFAULT_LIMIT))
    try:
        count = int(value.strip())
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"{ENVIRONMENT_VARIABLE} must be a positive integer (a thread count), not {value!r}")
    return count


def executor() -> ThreadPoolExecutor:
    """The process's shared pool, created on first use and never replaced (a ThreadPoolExecutor starts a worker only
    when no idle one is left, so its size is what the busiest call needed, at most POOL_LIMIT)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=POOL_LIMIT, thread_name_prefix="softsim")
        return _pool


def slices(count: int, parts: int, block: int = BLOCK):
    """The slices of [0, count) ``run_ranges`` gives its parts: a list of (first, last, block, stride), part k taking
    the blocks of ``block`` elements that start at first, first + stride, ... below last. Blocks shrink so that every
    part has at least BLOCKS_PER_PART of them (a dense region still spread over the parts); fewer parts than asked
    when there are fewer elements; one part: the whole range as one block."""
    if count < 0 or parts < 1 or block < 1:
        raise ValueError(f"slices: count >= 0, parts >= 1 and block >= 1 needed, got {count}, {parts}, {block}")
    parts = min(parts, count)
    if parts <= 1:
        return [(0, count, max(count, 1), max(count, 1))]
    block = max(1, min(block, count // (BLOCKS_PER_PART * parts)))
    parts = min(parts, -(-count // block))
    stride = parts * block
    return [(k * block, count, block, stride) for k in range(parts)]


def run_parts(functions):
    """Run each of ``functions`` (callables without arguments) once, the caller's thread running the first and the
    shared pool the others; returns their results in order. An exception in any is raised here, after every one has
    finished."""
    if len(functions) == 1:
        return [functions[0]()]
    pool = executor()
    futures = [pool.submit(function) for function in functions[1:]]
    try:
        first = functions[0]()
    finally:
        # Every part finishes before the caller goes on (they write the caller's buffers).
        for future in futures:
            future.exception()
    return [first] + [future.result() for future in futures]


def run_ranges(function, count: int, parts: int, block: int = BLOCK, minimum: int = 0):
    """Run ``function(part, first, last, block, stride)`` for each slice of ``slices(count, parts, block)`` (one part
    when count < minimum), the caller's thread running part 0 and the shared pool the others; returns their results in
    part order. An exception in any part is raised here, after every part has finished."""
    ranges = slices(count, parts if count >= minimum else 1, block)
    return run_parts([lambda k=k: function(k, *ranges[k]) for k in range(len(ranges))])
