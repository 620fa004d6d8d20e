"""From spec to CompiledKernel: compile_spec (memo -> disk cache -> compiler) and compile_many on a thread pool.

``compile_spec(spec)`` renders the unit, keys it (humming.core.cache), and returns the CompiledKernel from the
in-process memo, else from the disk cache, else by compiling it under the key's file lock and publishing it.
Two processes that miss at once both succeed: the second waits on the lock, then finds the entry.

``compile_many(specs)`` does the same for many specs at once (a layer's whole M range, a conformance run) on
``HUMMING_COMPILE_WORKERS`` threads (0: one per core); NVRTC releases the GIL, so threads scale without the
start-up cost of processes (``processes=True`` starts worker processes instead, humming.core.compile_workers:
for a toolchain that would serialise threads, or to keep a compiler that crashes away from the caller). A progress
bar appears on a terminal once the batch has taken more than a second.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, Sequence

from humming import knobs
from humming.capabilities.model import DeviceCapabilities, Target
from humming.core import cache, compile_workers
from humming.core.codegen import KernelSpec
from humming.core.launcher import CompiledKernel
from humming.devices.toolchain import Toolchain
from humming.errors import CompileError, HummingError, InvalidInputError, UnsupportedError

#: A batch must take this long before its progress is shown.
PROGRESS_DELAY_S = 1.0

_toolchains: dict[Target, Toolchain] = {}
_toolchains_lock = threading.Lock()


def toolchain_for(target: Target) -> Toolchain:
    """The compiler the target's plugin supplies (humming.devices.manager), looked up once per target."""
    chain = _toolchains.get(target)
    if chain is None:
        from humming.devices.manager import get_manager

        chain = get_manager().toolchain(target)
        with _toolchains_lock:
            _toolchains[target] = chain
    ok, reason = chain.availability()
    if not ok:
        raise UnsupportedError(f"cannot compile for {target}: {reason}", missing=[f"the {chain.name} toolchain"])
    return chain


def _capabilities(target: Target) -> DeviceCapabilities | None:
    """The catalog's capabilities for ``target``, or None when no loaded plugin declares it."""
    try:
        from humming.devices.manager import get_manager

        caps = get_manager().capabilities(target.arch, target.vendor)
    except (ImportError, HummingError):
        return None
    return caps if (caps.target.vendor, caps.target.arch) == (target.vendor, target.arch) else None


def compile_source(source: str, *, target: Target, name: str = "kernel.cu", include_dirs: Sequence[Path] = (),
                   extra_options: Sequence[str] = (), name_expressions: Sequence[str] = (), entry: str | None = None,
                   toolchain: Toolchain | None = None, spec: KernelSpec | None = None) -> CompiledKernel:
    """Compile one unit through the cache. ``entry`` picks the kernel (default: the lowered first name
    expression, or the binary's only kernel); it is not part of the key: one binary serves every entry of a unit.

    :raises CompileError: with the compiler log, the saved .cu path and a repro command.
    :raises InvalidInputError: ``entry`` names no kernel of the unit.
    """
    chain = toolchain if toolchain is not None else toolchain_for(target)
    includes = tuple(f"-I{d}" for d in include_dirs)
    # The search order the toolchains use: their own folders first, then the -I options they are given.
    search = chain.include_dirs(target) + tuple(Path(d) for d in include_dirs)
    options = chain.options(target) + tuple(extra_options)
    main_dir = (Path.cwd() / name).parent
    uk = cache.unit_key(source, target=target, toolchain_version=chain.version(), options=options,
                        include_dirs=search, main_dir=main_dir, name_expressions=name_expressions)
    hit = cache.memo_get((uk.key, entry))
    if hit is not None:
        return hit
    meta: dict[str, Any] = {
        "target": {"vendor": target.vendor, "arch": target.arch, "family": target.family},
        "toolchain": chain.version(), "options": list(options), "extra_options": list(extra_options),
        "include_dirs": [str(d) for d in include_dirs], "name": name, "main_dir": str(main_dir),
        "name_expressions": list(name_expressions),
        "entry": entry, "spec": None if spec is None else spec.describe(),
        "headers": [p for p, _ in uk.headers],
    }
    kernel = _from_disk(uk.key, spec, name_expressions, entry) if cache.enabled() else None
    if kernel is None:
        # A cache folder that cannot be written (read-only, a file, full) gives no lock: compile, keep in memory.
        held = cache.try_lock(uk.key) if cache.enabled() else None
        try:
            if held is not None:
                kernel = _from_disk(uk.key, spec, name_expressions, entry, warn=True)  # published meanwhile?
            if kernel is None:
                kernel = _compile(source, chain, target, name, includes + tuple(extra_options), name_expressions,
                                  uk.key, meta, spec, published=held is not None)
        finally:
            if held is not None:
                held.release()
    if kernel.from_cache and knobs.keep_source.get():  # a hit keeps the unit too: the repro tool needs it
        cache.keep_source(uk.key, source)
    cache.memo_put((uk.key, entry), kernel)
    return kernel


def _from_disk(key: str, spec: KernelSpec | None, name_expressions: Sequence[str], entry: str | None, *,
               warn: bool = False) -> CompiledKernel | None:
    try:
        found = cache.read(key)
    except cache.Corrupt as exc:
        if warn:  # only under the lock: without it a writer may be mid-publish
            cache.warn_corrupt(key, str(exc))
        return None
    if found is None:
        return None
    m = found.meta
    t = m["target"]
    function = _entry_symbol(found.binary, m.get("lowered_names") or {}, name_expressions, entry)
    return CompiledKernel(key=key, binary=found.binary, target=Target(t["vendor"], t["arch"], t.get("family", "")),
                          function=function, log=m.get("log", ""), options=tuple(m.get("options", ())),
                          toolchain=m.get("toolchain", ""), spec=spec, from_cache=True,
                          compile_seconds=m.get("compile_seconds"))


def _compile(source: str, chain: Toolchain, target: Target, name: str, extra: tuple[str, ...],
             name_expressions: Sequence[str], key: str, meta: dict[str, Any], spec: KernelSpec | None,
             *, published: bool) -> CompiledKernel:
    start = time.perf_counter()
    try:
        out = chain.compile(source, target=target, name=name, extra_options=extra, name_expressions=name_expressions)
    except CompileError as exc:
        saved = cache.save_failure(key, source, dict(meta, log=exc.log))
        first = str(exc).splitlines()[0]
        # By key when the failure is kept in the cache; by path when it is not (a temporary folder).
        unit = key if saved.parent == cache.cache_root() / "failed" / key else str(saved)
        raise CompileError(f"{spec.describe()} did not compile: {first}" if spec is not None else first,
                           log=exc.log, source_path=str(saved), repro=f"python -m humming.tools.compile {unit}",
                           spec=spec) from None
    seconds = time.perf_counter() - start
    meta = dict(meta, log=out.log, lowered_names=out.lowered_names,
                compile_seconds=round(seconds, 4), options=list(out.options))
    if published:
        keep = source if knobs.keep_source.get() else None
        try:
            cache.publish(key, out.binary, meta, keep)
        except OSError as exc:  # a full disk, a quota: the kernel compiled, so return it unkept
            cache.warn_unusable(exc)
    # After the publish: the binary is the unit's whatever entry this call asked for (entry is not in the key).
    function = _entry_symbol(out.binary, out.lowered_names, name_expressions, meta.get("entry"))
    return CompiledKernel(key=key, binary=out.binary, target=target, function=function, log=out.log,
                          options=tuple(out.options), toolchain=out.toolchain, spec=spec, from_cache=False,
                          compile_seconds=seconds)


def _entry_symbol(binary: bytes, lowered: dict[str, str], name_expressions: Sequence[str], entry: str | None) -> str:
    from humming.core.resources import entry_functions, parse_elf

    if entry is not None and entry in lowered:
        return lowered[entry]
    if entry is None and name_expressions and name_expressions[0] in lowered:
        return lowered[name_expressions[0]]
    kernels = entry_functions(parse_elf(binary))
    if entry is not None:
        if entry not in kernels:
            raise InvalidInputError(f"entry={entry!r}: the unit defines no such kernel; pass one of its kernels "
                                    f"({', '.join(sorted(kernels)) or 'none'}) or one of its name expressions")
        return entry
    if len(kernels) == 1:
        return kernels[0]
    raise CompileError(f"the unit defines {len(kernels)} kernels ({', '.join(kernels) or 'none'}); "
                       "pass entry= to say which one to launch")


def define_lines(items: Sequence[str], origin: str = "HUMMING_KERNEL_DEFINES") -> str:
    """``#define NAME VALUE`` lines for ``NAME=VALUE`` items; a malformed item (named after ``origin``) is refused
    before any compile."""
    lines = []
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_]\w*", name) or not re.fullmatch(r"[\w.+-]+", value):
            raise InvalidInputError(f"{origin} item {item!r}: expected NAME=VALUE (a C identifier and a plain token, "
                                    "e.g. HM_ABLATE=5)")
        lines.append(f"#define {name} {value}\n")
    return "".join(lines)


def kernel_defines() -> str:
    """The ``#define`` lines HUMMING_KERNEL_DEFINES puts before every rendered kernel (empty by default). They
    are part of the source, so of every cache key."""
    return define_lines(knobs.kernel_defines.get())


def compile_spec(spec: KernelSpec, *, toolchain: Toolchain | None = None,
                 caps: DeviceCapabilities | None = None) -> CompiledKernel:
    """The compiled kernel for ``spec``: memo, else disk cache, else NVRTC (or the target's toolchain).

    ``caps`` (default: the catalog's entry for ``spec.target``, when a plugin declares it) is checked first, so
    a spec the target cannot run fails with UnsupportedError rather than with an assembler message.
    """
    defines = kernel_defines()
    if caps is not None:  # before the memo: a kernel compiled for other caps must not pass for these
        spec.check_supported(caps)
    memo_key = ("spec", id(toolchain) if toolchain is not None else None, spec, defines)
    hit = cache.memo_get(memo_key)
    if hit is not None:
        return hit
    if caps is None:  # the catalog's caps, checked once: a memo hit was checked against the same
        found = _capabilities(spec.target)
        if found is not None:
            spec.check_supported(found)
    kernel = compile_source(defines + spec.render(), target=spec.target, name=spec.unit_name(),
                            include_dirs=spec.include_dirs(), name_expressions=(spec.name_expression(),),
                            toolchain=toolchain, spec=spec)
    spec.check_compiled(kernel)  # once per spec and process: every later call is a memo hit
    cache.memo_put(memo_key, kernel)
    return kernel


# ---- many at once ------------------------------------------------------------------------------------------
class Progress:
    """A one-line progress bar on ``stream``, shown only after ``delay`` seconds (and only on a terminal)."""

    def __init__(self, total: int, *, what: str = "kernels", stream: IO[str] | None = None,
                 enabled: bool | None = None, delay: float = PROGRESS_DELAY_S, clock: Any = time.monotonic,
                 doing: str = "compiling") -> None:
        self.total, self.what, self.delay, self.clock, self.doing = total, what, delay, clock, doing
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = knobs.progress.get() and bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled
        self.start = clock()
        self.done = 0
        self.shown = False

    def step(self, n: int = 1) -> None:
        self.done += n
        elapsed = self.clock() - self.start
        if not self.enabled or elapsed < self.delay:
            return
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "." * (width - filled)
        self.stream.write(f"\rhumming: {self.doing} {self.what} [{bar}] {self.done}/{self.total} {elapsed:.1f} s")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def workers() -> int:
    """Workers compile_many uses: HUMMING_COMPILE_WORKERS, or when it is 0 one per CPU core this process may run on
    (its affinity mask: a container's or a ``taskset``'s share, not the host's core count)."""
    n = knobs.compile_workers.get()
    if n < 0:
        raise InvalidInputError(f"HUMMING_COMPILE_WORKERS={n}: expected 0 (one per core) or a positive count")
    if n:
        return n
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no affinity call on this platform
        return os.cpu_count() or 1


def compile_many(specs: Sequence[KernelSpec], *, toolchain: Toolchain | None = None,
                 max_workers: int | None = None, progress: Progress | None = None,
                 processes: bool = False) -> list[CompiledKernel]:
    """Compile every spec (duplicates once), in parallel; the result is in the order of ``specs``.

    ``processes=True`` compiles in worker processes (fresh interpreters that import humming only: safe beside CUDA,
    and they never re-run the caller's script; humming.core.compile_workers) that publish to the disk cache, from
    which this process then reads each kernel; it needs the cache and the plugins' toolchains. A worker that dies
    (a compiler crash) fails only its spec, where in a thread it would take the caller down.
    Threads are the default: with the driver's compute cache off, a W4A16 layer's 5 kernels compiled cold
    in 3.93 s in 5 threads against 4.54 s in 5 worker processes on a 16-core H100 host, and 5.83 s against 5.74 s
    on 2 cores; six formats' 27 kernels on 16 cores in 5.97-6.99 s against 7.75-7.87 s (benchmarks/RESULTS.md,
    2026-12-06, compile_scaling): sets wait on their slowest kernel, and processes add their start.
    (The 2026-12-02 figure that had made processes the default was served by that cache.)

    :raises CompileError: after every spec has been tried, for the first that failed (the message says how many).
    """
    unique = list(dict.fromkeys(specs))
    n = min(max_workers or workers(), max(len(unique), 1))
    bar = progress if progress is not None else Progress(len(unique))
    results: dict[KernelSpec, CompiledKernel] = {}
    failures: list[tuple[KernelSpec, BaseException]] = []
    if processes:  # workers hand kernels over through the cache, and load each spec's class by its module
        if toolchain is not None or not cache.writable():
            raise InvalidInputError("compile_many(processes=True) needs a disk cache it can write and the plugins' "
                                    "toolchains (no toolchain=); use threads instead")
        foreign = next((s for s in unique if not compile_workers.importable(s)), None)
        if foreign is not None:
            raise InvalidInputError(f"compile_many(processes=True): {type(foreign).__qualname__} is defined in the "
                                    "caller's script or a function, which a worker process cannot import; define it "
                                    "in a module, or use threads (processes=False)")
    try:
        if n <= 1:
            for s in unique:
                try:
                    results[s] = compile_spec(s, toolchain=toolchain)
                except HummingError as exc:
                    failures.append((s, exc))
                bar.step()
        elif processes:
            def done(s: KernelSpec, answer: compile_workers.Answer) -> None:
                if answer is None:
                    results[s] = compile_spec(s)  # published by the worker: a disk hit
                elif answer[0] == "fail":
                    message, log, path, repro = answer[1:]
                    failures.append((s, CompileError(message, log=log, source_path=path, repro=repro, spec=s)))
                elif isinstance(answer[1], HummingError):
                    failures.append((s, answer[1]))
                else:
                    raise answer[1]
                bar.step()

            compile_workers.compile_in_workers(unique, n, done)
        else:
            with concurrent.futures.ThreadPoolExecutor(n, thread_name_prefix="humming-compile") as pool:
                jobs = {pool.submit(compile_spec, s, toolchain=toolchain): s for s in unique}
                for job in concurrent.futures.as_completed(jobs):
                    try:
                        results[jobs[job]] = job.result()
                    except HummingError as exc:
                        failures.append((jobs[job], exc))
                    bar.step()
    finally:
        bar.close()
    if failures:
        spec, first = failures[0]
        if len(failures) == 1:
            raise first
        log = getattr(first, "log", "")
        raise CompileError(f"{len(failures)} of {len(unique)} kernels failed; the first, {spec.describe()}: "
                           f"{str(first).splitlines()[0]}", log=log, source_path=getattr(first, "source_path", None),
                           repro=getattr(first, "repro", None), spec=spec) from first
    return [results[s] for s in specs]
