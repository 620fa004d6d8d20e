"""The kernel cache's review-5 defects, each held by a test: file modes another user can read, an unusable cache
that warns and keeps the kernel, entry= resolved per call, warm with no cache refused, header keys that follow
what the compiler reads (symlinks, pre-includes, headers that appear later), a clear that removes only what
humming wrote, and the repro tool's fidelity."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from humming import knobs
from humming.capabilities.model import Target
from humming.core import cache

TARGET = Target("nvidia", "sm_80")


@pytest.fixture
def umask():
    """Set the process umask for the test; restore it after."""
    saved = os.umask(0o022)
    os.umask(saved)
    yield lambda value: os.umask(value)
    os.umask(saved)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask, want", [(0o022, 0o644), (0o002, 0o664)])
def test_cache_files_take_the_umask_modes_so_another_user_can_read_them(fresh, umask, mask, want):
    umask(mask)
    key = "cd" * 16
    with cache.lock(key):
        cache.publish(key, b"\x7fELF binary", {"function": "k"}, source="// unit\n")
    for ext in ("cubin", "json", "cu"):
        assert _mode(cache.paths(key)[ext]) == want, ext
    saved = cache.save_failure("ef" * 16, "// unit\n", {"log": "x"})
    assert _mode(saved) == want and _mode(saved.with_name("meta.json")) == want


# ---- an unusable cache: warn, name the folder and the knobs, keep the kernel ------------------------------------
def _toy(**fields):
    from humming.kernels.toy_axpy import ToyAxpySpec

    return ToyAxpySpec(target=TARGET, **fields)


def test_a_cache_root_that_is_a_file_warns_and_returns_the_kernel_uncached(tmp_path):
    from humming.core.build import compile_spec

    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    cache.clear_memo()
    with knobs.scope(HUMMING_CACHE_DIR=str(afile)):
        with pytest.warns(cache.CacheWarning) as caught:
            kernel = compile_spec(_toy(vec=2))
    text = str(caught[0].message)
    assert str(afile) in text and "HUMMING_CACHE_DIR" in text and "HUMMING_DISABLE_CACHE" in text
    assert not kernel.from_cache and kernel.binary and kernel.resources.registers
    assert afile.read_text() == "not a folder\n"


def test_a_publish_that_fails_warns_and_keeps_the_compiled_kernel(fresh, monkeypatch):
    from humming.core.build import compile_spec

    def full(path, data):
        raise OSError(27, "File too large")

    monkeypatch.setattr(cache, "_atomic_write", full)
    with pytest.warns(cache.CacheWarning, match="File too large") as caught:
        kernel = compile_spec(_toy(vec=4))
    assert str(fresh) in str(caught[0].message)
    assert not kernel.from_cache and kernel.binary
    assert not list(fresh.rglob("*.json"))


def test_a_compile_error_in_an_unusable_cache_is_still_the_compile_error(tmp_path):
    from humming.core.build import compile_source
    from humming.errors import CompileError

    afile = tmp_path / "afile"
    afile.write_text("")
    cache.clear_memo()
    with knobs.scope(HUMMING_CACHE_DIR=str(afile)):
        with pytest.warns(cache.CacheWarning), pytest.raises(CompileError, match="undefined_name") as caught:
            compile_source('extern "C" __global__ void k(int* p) { p[0] = undefined_name; }\n', target=TARGET)
    saved = Path(caught.value.source_path)
    assert saved.is_file() and str(saved) in caught.value.repro  # kept in a temporary folder, named by path


def test_cache_info_says_when_the_root_is_not_a_folder(tmp_path, capsys):
    from humming.cli import main

    afile = tmp_path / "afile"
    afile.write_text("")
    with knobs.scope(HUMMING_CACHE_DIR=str(afile)):
        assert main(["cache", "info"]) == 0
        text = capsys.readouterr().out
        assert "not a folder" in text and "HUMMING_CACHE_DIR" in text
        assert main(["cache", "info", "--json"]) == 0
        assert "not a folder" in json.loads(capsys.readouterr().out)["problem"]


# ---- compile_source(entry=...) picks the kernel on every call, not only on the compile ------------------------
TWO_KERNELS = ('extern "C" __global__ void k_add(float* p) { p[0] += 1; }\n'
               'extern "C" __global__ void k_mul(float* p) { p[0] *= 2; }\n')


def test_entry_picks_the_kernel_on_memo_and_disk_hits(fresh):
    from humming.core.build import compile_source

    add = compile_source(TWO_KERNELS, target=TARGET, entry="k_add")
    mul = compile_source(TWO_KERNELS, target=TARGET, entry="k_mul")
    assert (add.function, mul.function) == ("k_add", "k_mul")
    assert add.key == mul.key  # one binary holds both: it is compiled and cached once
    assert compile_source(TWO_KERNELS, target=TARGET, entry="k_add") is add
    cache.clear_memo()  # a fresh process: both come from the disk
    again = compile_source(TWO_KERNELS, target=TARGET, entry="k_mul")
    assert again.from_cache and again.function == "k_mul"


def test_an_entry_the_unit_does_not_define_is_refused_naming_its_kernels(fresh):
    from humming.core.build import compile_source
    from humming.errors import InvalidInputError

    compile_source(TWO_KERNELS, target=TARGET, entry="k_add")
    with pytest.raises(InvalidInputError, match="k_sub.*k_add, k_mul"):
        compile_source(TWO_KERNELS, target=TARGET, entry="k_sub")


# ---- compile_spec(caps=...) checks the caps on a memo hit too -------------------------------------------------
def test_caps_are_checked_on_a_memo_hit_too(fresh):
    import dataclasses

    from humming.core.build import compile_spec
    from humming.devices.nvidia import archs
    from humming.errors import UnsupportedError

    spec = _toy(async_copy=True)
    caps = archs.capabilities("sm_80")
    no_cp_async = dataclasses.replace(caps, memory=dataclasses.replace(caps.memory, cp_async=False))
    compile_spec(spec)  # the catalog's caps: compiled and remembered
    with pytest.raises(UnsupportedError, match="async_copy=True"):
        compile_spec(spec, caps=no_cp_async)
    assert compile_spec(spec, caps=caps).spec == spec


# ---- cache warm / precompile(target=) refuse when nothing could be kept -------------------------------------------
WARM = ["cache", "warm", "--target", "sm_80", "--weights", "gptq_int4", "--shape", "256x256", "--max-m", "1"]


def test_cache_warm_and_precompile_for_a_target_refuse_with_the_cache_disabled(fresh, capsys):
    from humming.cli import main
    from humming.core import dtypes, presets
    from humming.errors import InvalidInputError
    from humming.warmup import LayerShape, precompile

    with knobs.scope(HUMMING_DISABLE_CACHE=True):
        assert main(WARM) == 2
        assert "HUMMING_DISABLE_CACHE" in capsys.readouterr().err
        shape = LayerShape(256, 256, presets.get("gptq_int4").weight, dtypes.bf16, dtypes.bf16)
        with pytest.raises(InvalidInputError, match="HUMMING_DISABLE_CACHE"):
            precompile(shape, target="sm_80", max_m=1)
    assert not fresh.exists()


def test_cache_warm_refuses_a_cache_folder_it_cannot_write(tmp_path, capsys):
    from humming.cli import main

    afile = tmp_path / "afile"
    afile.write_text("")
    with knobs.scope(HUMMING_CACHE_DIR=str(afile)):
        assert main(WARM) == 2
    err = capsys.readouterr().err
    assert str(afile) in err and "HUMMING_CACHE_DIR" in err


# ---- the key hashes the headers the compiler reads ------------------------------------------------------------------
EXPORT_VAL = ('extern "C" __constant__ const long long humming_export_v = VAL;\n'
              'extern "C" __global__ void k(long long* p) { p[0] = VAL; }\n')


def _hashed(unit: str, dirs, main_dir=None) -> set[str]:
    found, _ = cache.scan_headers(unit, main_dir=main_dir, include_dirs=dirs)
    return {p for p, _ in found}


def test_a_symlinked_headers_quoted_includes_are_looked_up_beside_the_link(fresh, tmp_path):
    from humming.core.build import compile_source

    inc, real = tmp_path / "sym" / "inc", tmp_path / "sym" / "real"
    inc.mkdir(parents=True)
    real.mkdir()
    (real / "top.h").write_text('#include "val.h"\n')
    (inc / "top.h").symlink_to("../real/top.h")
    (inc / "val.h").write_text("#define VAL 1\n")  # the one the compiler reads: beside the link it opened
    (real / "val.h").write_text("#define VAL 2\n")
    unit = "#include <top.h>\n" + EXPORT_VAL
    hashed = _hashed(unit, [inc])
    assert os.path.realpath(inc / "val.h") in hashed and os.path.realpath(real / "val.h") not in hashed
    first = compile_source(unit, target=TARGET, include_dirs=[inc])
    assert first.exports["v"] == 1
    (inc / "val.h").write_text("#define VAL 7\n")  # same process, no clear_memo
    again = compile_source(unit, target=TARGET, include_dirs=[inc])
    assert again.key != first.key and not again.from_cache and again.exports["v"] == 7


@pytest.mark.parametrize("option", [["--pre-include=cfg.h"], ["-include=cfg.h"], ["-include", "cfg.h"],
                                    ["--pre-include", "cfg.h"]])
def test_pre_included_headers_are_hashed_where_the_compiler_finds_them(fresh, tmp_path, monkeypatch, option):
    from humming.core.build import compile_source

    work, inc = tmp_path / "work", tmp_path / "inc"
    work.mkdir()
    inc.mkdir()
    monkeypatch.chdir(work)
    (inc / "cfg.h").write_text("#define VAL 5\n")
    first = compile_source(EXPORT_VAL, target=TARGET, include_dirs=[inc], extra_options=option)
    assert first.exports["v"] == 5
    (inc / "cfg.h").write_text("#define VAL 6\n")
    edited = compile_source(EXPORT_VAL, target=TARGET, include_dirs=[inc], extra_options=option)
    assert edited.key != first.key and edited.exports["v"] == 6
    (work / "cfg.h").write_text("#define VAL 3\n")  # NVRTC looks in the working folder first
    shadowed = compile_source(EXPORT_VAL, target=TARGET, include_dirs=[inc], extra_options=option)
    assert shadowed.key not in (first.key, edited.key) and shadowed.exports["v"] == 3


def test_a_header_that_appears_earlier_on_the_search_path_changes_the_key_in_the_same_process(tmp_path):
    early, late = tmp_path / "early", tmp_path / "late"
    early.mkdir()
    late.mkdir()
    (late / "cfg.h").write_text("#define V 1\n")
    unit = "#include <cfg.h>\n#include <later.h>\n"

    def key():
        return cache.unit_key(unit, target=TARGET, toolchain_version="t", options=(), include_dirs=[early, late],
                              main_dir=None)

    before = key()
    assert before.unresolved == ("later.h",)
    (early / "cfg.h").write_text("#define V 2\n")  # now the compiler finds this one first
    shadowed = key()
    assert shadowed.key != before.key and [Path(p).parent for p, _ in shadowed.headers] == [early.resolve()]
    (late / "later.h").write_text("#define L 1\n")  # a name that found nothing now finds a file
    resolved = key()
    assert resolved.key != shadowed.key and resolved.unresolved == ()


# ---- cache clear removes only what humming wrote, and says what it could not remove -----------------------------
def _project_cache(tmp_path: Path) -> Path:
    """A cache root that is also someone's project: user files beside and among humming's."""
    from humming.core.build import compile_spec

    root = tmp_path / "proj"
    for rel, text in (("failed/notes.txt", "mine"), ("v2/model.bin", "mine"), ("src/a.py", "mine"),
                      (f"{cache.LAYOUT}/notes.md", "mine")):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    with knobs.scope(HUMMING_CACHE_DIR=str(root)):
        compile_spec(_toy(vec=2, block=128))
        cache.save_failure("0f" * 16, "// unit\n", {"log": "x"})
    return root


def test_cache_clear_removes_only_files_humming_wrote(tmp_path, capsys):
    from humming.cli import main

    root = _project_cache(tmp_path)
    with knobs.scope(HUMMING_CACHE_DIR=str(root)):
        assert main(["cache", "clear"]) == 0
        out = capsys.readouterr().out
        assert cache.info().entries == 0 and cache.info().failed == 0
    left = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert left == sorted(["CACHEDIR.TAG", "failed/notes.txt", f"{cache.LAYOUT}/notes.md", "src/a.py", "v2/model.bin"])
    assert "kept" in out and "failed/notes.txt" in out and "v2/model.bin" in out


def test_cache_clear_reports_what_it_could_not_remove_and_fails(tmp_path, capsys, monkeypatch):
    from humming.cli import main

    root = _project_cache(tmp_path)
    unlink = Path.unlink

    def refuse_binaries(self, missing_ok=False):
        if self.suffix == ".cubin":
            raise PermissionError(13, "Permission denied", str(self))
        return unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", refuse_binaries)
    with knobs.scope(HUMMING_CACHE_DIR=str(root)):
        assert main(["cache", "clear"]) == 1
    captured = capsys.readouterr()
    assert "could not remove" in captured.err and ".cubin" in captured.err and "Permission denied" in captured.err
    assert list(root.rglob("*.cubin")) and not list((root / cache.LAYOUT).rglob("*.json"))


# ---- the repro tool: HUMMING_KEEP_SOURCE on a hit, the recorded program name, a meta.json that does not parse ------
def test_keep_source_on_a_cache_hit_keeps_the_source_the_repro_needs(fresh, capsys):
    from humming.core.build import compile_spec
    from humming.tools.compile import main

    spec = _toy(vec=8, block=128)
    key = compile_spec(spec).key
    assert not cache.paths(key)["cu"].exists()
    assert main([key]) == 2 and "HUMMING_KEEP_SOURCE=1" in capsys.readouterr().err
    cache.clear_memo()  # a new process, as the advice says
    with knobs.scope(HUMMING_KEEP_SOURCE=True):
        assert compile_spec(spec).from_cache
    assert cache.paths(key)["cu"].read_text().endswith(spec.render())
    assert main([key]) == 0


def test_the_repro_compiles_under_the_recorded_program_name(fresh, tmp_path, monkeypatch, capsys):
    from humming.core.build import compile_source
    from humming.errors import CompileError
    from humming.tools.compile import main

    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "local.h").write_text("#define X 1\n")  # found beside the unit only
    good = '#include "local.h"\nextern "C" __global__ void k(int* p) { p[0] = X; }\n'
    monkeypatch.chdir(tmp_path)
    with knobs.scope(HUMMING_KEEP_SOURCE=True):
        absolute = compile_source(good, target=TARGET, name=str(tmp_path / "q" / "kern.cu")).key
        relative = compile_source("// 2\n" + good, target=TARGET, name="q/kern.cu").key
    with pytest.raises(CompileError) as failed:
        compile_source(good.replace("X;", "X + undefined_name;"), target=TARGET, name="q/kern.cu")
    monkeypatch.chdir(tmp_path / "q")  # the repro runs from elsewhere
    assert main([absolute]) == 0 and main([relative]) == 0
    capsys.readouterr()
    assert main([failed.value.repro.split()[-1]]) == 1
    err = capsys.readouterr().err
    assert "undefined_name" in err and "cannot open source file" not in err


@pytest.mark.parametrize("where", ["failed unit", "cache entry", "beside a .cu"])
def test_a_metadata_file_that_does_not_parse_is_an_error_not_a_traceback(fresh, capsys, where):
    from humming.tools.compile import main

    key = "5a" * 16
    if where == "failed unit":
        unit = cache.save_failure(key, "// unit\n", {"log": "x"})
        broken, arg = unit.with_name("meta.json"), key
    elif where == "cache entry":
        with cache.lock(key):
            cache.publish(key, b"\x7fELF", {}, source="// unit\n")
        broken, arg = cache.paths(key)["json"], key
    else:
        unit = fresh / "loose" / "kernel.cu"
        unit.parent.mkdir(parents=True)
        unit.write_text("// unit\n")
        broken, arg = unit.with_name("meta.json"), str(unit)
    broken.write_text('{"target": ')
    assert main([arg]) == 2
    err = capsys.readouterr().err
    assert str(broken) in err and "does not parse" in err
    broken.write_text("[1, 2]")  # JSON, but not the record
    assert main([arg]) == 2 and "does not parse" in capsys.readouterr().err
    broken.write_text('{"target": "sm_80"}')  # an object, with a target that is not the record's
    assert main([arg]) == 2 and "names no vendor and arch" in capsys.readouterr().err
