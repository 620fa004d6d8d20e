"""The kernel cache: keys follow content (never file times), entries publish atomically, a corrupt entry is compiled
again with a warning, and two processes compiling one spec at once leave one entry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import platformdirs
import pytest

from humming import knobs
from humming.capabilities.model import Target
from humming.cli import main as cli_main
from humming.core import cache
from humming.core.build import compile_spec
from humming.devices.nvidia.target import toolchain_for
from humming.kernels.toy_axpy import ToyAxpySpec

REPO = Path(__file__).resolve().parents[2]
TARGET = Target("nvidia", "sm_90a")


def key_of(source: str, include_dirs, **overrides) -> str:
    args = dict(target=TARGET, toolchain_version="nvrtc 13.5", options=("--gpu-architecture=sm_90a",),
                include_dirs=include_dirs, main_dir=None)
    args.update(overrides)
    return cache.unit_key(source, **args).key


def write_headers(root: Path, top: str = "top value") -> Path:
    (root / "lib" / "detail").mkdir(parents=True, exist_ok=True)
    (root / "lib" / "top.cuh").write_text(f'// {top}\n#include "detail/mid.cuh"\n')
    (root / "lib" / "detail" / "mid.cuh").write_text("  #  include <deep.cuh>\n")  # spaces are legal
    (root / "deep.cuh").write_text("#define DEEP 1\n")
    return root


def test_the_key_follows_every_header_the_unit_includes_transitively(tmp_path):
    root = write_headers(tmp_path / "a")
    unit = "#include <lib/top.cuh>\n"
    before = key_of(unit, [root])
    found, unresolved = cache.scan_headers(unit, main_dir=None, include_dirs=[root])
    assert [Path(p).name for p, _ in found] == ["deep.cuh", "mid.cuh", "top.cuh"]
    assert unresolved == ()
    (root / "deep.cuh").write_text("#define DEEP 2\n")  # three levels down, same size
    assert key_of(unit, [root]) != before


def test_the_key_is_content_not_file_times(tmp_path):
    root = write_headers(tmp_path / "a")
    unit = "#include <lib/top.cuh>\n"
    before = key_of(unit, [root])
    deep = root / "deep.cuh"
    os.utime(deep, (time.time() + 100, time.time() + 100))
    assert key_of(unit, [root]) == before  # touched, not changed
    stat = deep.stat()
    deep.write_text("#define DEEP 3\n")  # same size; restore the time so only the bytes differ
    os.utime(deep, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    cache.clear_memo()  # a new process: nothing remembered
    assert key_of(unit, [root]) != before


def test_the_same_headers_in_another_folder_give_the_same_key(tmp_path):
    unit = "#include <lib/top.cuh>\n"
    assert key_of(unit, [write_headers(tmp_path / "a")]) == key_of(unit, [write_headers(tmp_path / "b")])
    assert key_of(unit, [write_headers(tmp_path / "c", top="other")]) != key_of(unit, [tmp_path / "a"])


def test_the_key_changes_with_source_options_target_toolchain_and_name_expressions(tmp_path):
    root = write_headers(tmp_path / "a")
    unit = "#include <lib/top.cuh>\n"
    base = key_of(unit, [root])
    others = [
        key_of(unit + "// x\n", [root]),
        key_of(unit, [root], options=("--gpu-architecture=sm_90a", "-lineinfo")),
        key_of(unit, [root], target=Target("nvidia", "sm_80")),
        key_of(unit, [root], toolchain_version="nvrtc 13.0"),
        key_of(unit, [root], name_expressions=("k<1>",)),
    ]
    assert len({base, *others}) == 6
    # Include folders are not part of the key: the headers' bytes stand for them.
    assert key_of(unit, [root], options=("--gpu-architecture=sm_90a", f"-I{tmp_path}")) == base


def test_quoted_includes_look_beside_the_including_file_first(tmp_path):
    root = write_headers(tmp_path / "a")
    (root / "lib" / "deep.cuh").write_text("#define SHADOW 1\n")  # not found: mid.cuh uses <deep.cuh>
    (root / "lib" / "detail" / "near.cuh").write_text("#define NEAR 1\n")
    (root / "lib" / "detail" / "mid.cuh").write_text('#include <deep.cuh>\n#include "near.cuh"\n')
    found, _ = cache.scan_headers("#include <lib/top.cuh>\n", main_dir=None, include_dirs=[root])
    names = {str(Path(p).relative_to(root)) for p, _ in found}
    assert names == {"deep.cuh", "lib/top.cuh", "lib/detail/mid.cuh", "lib/detail/near.cuh"}


def test_read_verifies_the_binary_against_its_recorded_sha256(fresh):
    with cache.lock("ab" * 16):
        cache.publish("ab" * 16, b"\x7fELF binary", {"function": "k"})
    assert cache.read("ab" * 16).binary == b"\x7fELF binary"
    cache.paths("ab" * 16)["cubin"].write_bytes(b"\x7fELF binarz")
    with pytest.raises(cache.Corrupt, match="does not match the sha256"):
        cache.read("ab" * 16)
    assert not list(cache.paths("ab" * 16)["cubin"].parent.glob("*.tmp"))  # no temporary left behind


@pytest.mark.parametrize("damage", ["cubin", "json"])
def test_a_corrupt_entry_is_compiled_again_with_a_warning(fresh, damage):
    spec = ToyAxpySpec(target=TARGET, vec=2)
    chain = toolchain_for(TARGET)
    first = compile_spec(spec, toolchain=chain)
    p = cache.paths(first.key)
    if damage == "cubin":
        p["cubin"].write_bytes(first.binary[: len(first.binary) // 2])
    else:
        p["json"].write_text(p["json"].read_text()[:40])
    cache.clear_memo()
    with pytest.warns(cache.CacheWarning, match=f"entry {first.key} is corrupt"):
        again = compile_spec(spec, toolchain=chain)
    assert not again.from_cache and again.binary == first.binary
    cache.clear_memo()
    assert compile_spec(spec, toolchain=chain).from_cache  # repaired


def test_a_warm_hit_comes_from_disk_and_then_from_memory(fresh):
    spec = ToyAxpySpec(target=TARGET, vec=8)
    chain = toolchain_for(TARGET)
    assert not compile_spec(spec, toolchain=chain).from_cache
    cache.clear_memo()
    hit = compile_spec(spec, toolchain=chain)
    assert hit.from_cache and hit.resources.registers
    assert compile_spec(spec, toolchain=chain) is hit


def test_with_the_cache_disabled_nothing_is_written(fresh):
    with knobs.scope(HUMMING_DISABLE_CACHE=True):
        kernel = compile_spec(ToyAxpySpec(target=TARGET, vec=1), toolchain=toolchain_for(TARGET))
        assert not kernel.from_cache
        assert cache.info().disabled
    assert not (fresh / cache.LAYOUT).exists() or not list((fresh / cache.LAYOUT).rglob("*.json"))


def test_the_default_root_is_the_users_cache_directory():
    with knobs.scope(HUMMING_CACHE_DIR=None):
        assert cache.cache_root() == Path(platformdirs.user_cache_dir("humming", appauthor=False))


_RACER = textwrap.dedent("""
    import json, sys, time
    from humming.capabilities.model import Target
    from humming.core import build
    from humming.devices.nvidia.target import toolchain_for
    from humming.kernels.toy_axpy import ToyAxpySpec
    spec = ToyAxpySpec(target=Target("nvidia", "sm_100a"), vec=2, block=512)
    chain = toolchain_for(spec.target)
    chain.version(); spec.render()        # imports and NVRTC loaded before the start line
    time.sleep(max(0.0, float(sys.argv[1]) - time.time()))
    kernel = build.compile_spec(spec, toolchain=chain)
    print(json.dumps({"key": kernel.key, "compiled": not kernel.from_cache, "size": len(kernel.binary)}))
""")


def test_two_processes_compiling_the_same_spec_at_once_both_succeed_and_leave_one_entry(fresh):
    start = time.time() + 3.0  # both processes wait for the same instant, then compile
    env = dict(os.environ, HUMMING_CACHE_DIR=str(fresh), PYTHONPATH=str(REPO))
    procs = [subprocess.Popen([sys.executable, "-c", _RACER, str(start)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert results[0]["key"] == results[1]["key"] and results[0]["size"] == results[1]["size"]
    assert sorted(r["compiled"] for r in results) == [False, True]  # one compiled, the other waited and read it
    assert len(list((fresh / cache.LAYOUT).rglob("*.json"))) == 1
    assert len(list((fresh / cache.LAYOUT).rglob("*.cubin"))) == 1
    assert not list(fresh.rglob("*.tmp"))


def test_cache_info_and_clear_on_the_command_line(fresh, capsys):
    compile_spec(ToyAxpySpec(target=TARGET, block=64), toolchain=toolchain_for(TARGET))
    assert cli_main(["cache", "info"]) == 0
    text = capsys.readouterr().out
    assert str(fresh) in text and "entries: 1" in text
    assert cli_main(["cache", "info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entries"] == 1
    assert cli_main(["cache", "clear"]) == 0
    assert "removed" in capsys.readouterr().out and cache.info().entries == 0
    assert cli_main(["cache", "clear"]) == 0
    assert "nothing to remove" in capsys.readouterr().out


def test_the_key_hashes_the_header_the_compiler_actually_finds_first(fresh, tmp_path):
    from humming.core.build import compile_source
    from humming.core.compiler import NvrtcToolchain
    from humming.devices.nvidia.target import arch_options

    own, given = tmp_path / "toolchain", tmp_path / "given"
    for folder, value in ((own, 1), (given, 2)):
        folder.mkdir()
        (folder / "which.cuh").write_text(f"#define WHICH {value}\n")
    chain = NvrtcToolchain(arch_options, lambda t: (own,))
    unit = ('#include <which.cuh>\n__global__ void k(int* x) { x[0] = WHICH; }\n'
            'extern "C" __constant__ const long long humming_export_which = WHICH;\n')
    first = compile_source(unit, target=TARGET, include_dirs=[given], toolchain=chain)
    used = own if first.exports["which"] == 1 else given
    (used / "which.cuh").write_text("#define WHICH 30\n")
    again = compile_source(unit, target=TARGET, include_dirs=[given], toolchain=chain)
    assert again.key != first.key and not again.from_cache and again.exports["which"] == 30
