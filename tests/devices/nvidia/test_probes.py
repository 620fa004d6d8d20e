"""Every declared instruction's probe compiles with NVRTC for its target, and what is not declared does not.

The compiler (ptxas inside NVRTC) is the referee of the tables: a row that names a form the target lacks fails
to compile here, and the negative pins show that a form the target lacks is refused. tcgen05 operand dtypes live
in the runtime instruction descriptor, not in the mnemonic, so the fast test compiles one tcgen05 probe per
mnemonic and checks the descriptor encoding in Python; the slow test compiles every one.
"""

from __future__ import annotations

import re

import pytest
from cuda.bindings import nvrtc

import humming.devices.nvidia as nvidia_plugin
from humming.capabilities.model import BlockScale, MmaInstruction, Target
from humming.core import dtypes as dt
from humming.devices.manager import DeviceManager
from humming.devices.nvidia import archs, probes
from humming.devices.nvidia.families import MMA_SYNC, TCGEN05, WGMMA
from humming.core.compiler import nvrtc_version, supported_archs
from humming.devices.nvidia.target import parse_arch, toolchain_for
from humming.errors import CompileError, InvalidInputError

T = archs.BY_ARCH


def buildable(arch: str) -> str:
    """``arch`` as a test parameter, skipped where the loaded NVRTC cannot build it (NVRTC 13.0 has no sm_107)."""
    ok = parse_arch(arch)[0] in supported_archs()
    return pytest.param(arch, marks=pytest.mark.skipif(not ok, reason=f"this NVRTC cannot build {arch}"))


def emittable(instructions):
    """The forms the loaded NVRTC can emit (a newer PTX ISA form needs a newer NVRTC)."""
    return [i for i in instructions if probes.nvrtc_needed(i) <= nvrtc_version()]


def compile_for(arch: str, source: str, name: str = "probes.cu") -> bytes:
    caps = T[arch]
    return toolchain_for(caps.target).compile(source, target=caps.target, name=name).binary


def one_per_mnemonic(instructions):
    """mma.sync and wgmma forms all (dtypes are in the mnemonic); tcgen05 one per mnemonic (dtypes are runtime)."""
    seen, out = set(), []
    for i in instructions:
        if i.family == TCGEN05:
            if i.ptx in seen:
                continue
            seen.add(i.ptx)
        out.append(i)
    return out


@pytest.mark.parametrize("arch", [buildable(a) for a in T])
def test_every_declared_probe_compiles_for_its_target(arch):
    chosen = one_per_mnemonic(emittable(T[arch].mma))
    source, specs = probes.batch(chosen)
    cubin = compile_for(arch, source, f"probes_{arch}.cu")
    assert cubin[:4] == b"\x7fELF"
    for spec in specs:
        assert spec.kernel.encode() + b"\0" in cubin, spec.kernel  # every probe kernel is in the binary
        assert spec.threads in (32, 128) and spec.words > 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", [buildable(a) for a in T if T[a].instructions(family=TCGEN05)])
def test_every_tcgen05_probe_compiles(arch):
    source, specs = probes.batch(T[arch].instructions(family=TCGEN05))
    cubin = compile_for(arch, source)
    assert all(s.kernel.encode() + b"\0" in cubin for s in specs)


def form(arch: str, family, a, b, acc, k=None, scale=None) -> MmaInstruction:
    found = [i for i in T[arch].mma if i.family == family and i.a is a and i.b is b and i.acc is acc
             and (k is None or i.k == k) and i.block_scale == scale]
    assert found, f"{arch} declares no {family} {a}x{b}->{acc}"
    return found[0]


def buildable_case(case):
    return pytest.param(*case, marks=buildable(case[0]).marks)


NEGATIVE = [  # (target that lacks it, where it is declared, the form, what ptxas says)
    ("sm_75", form("sm_80", MMA_SYNC, dt.bf16, dt.bf16, dt.f32, 16), "'.bf16' requires .target sm_80 or higher"),
    ("sm_75", form("sm_80", MMA_SYNC, dt.tf32, dt.tf32, dt.f32, 8), "'.tf32' requires .target sm_80 or higher"),
    ("sm_80", form("sm_89", MMA_SYNC, dt.e4m3, dt.e4m3, dt.f32, 32), "FP8 floating point type' requires .target sm_89"),
    ("sm_89", form("sm_90a", MMA_SYNC, dt.f64, dt.f64, dt.f64, 16), "double types' requires .target sm_90 or higher"),
    ("sm_89", form("sm_90a", WGMMA, dt.f16, dt.f16, dt.f32), "sm_89"),
    ("sm_100a", form("sm_90a", WGMMA, dt.bf16, dt.bf16, dt.f32), "sm_100a"),
    ("sm_120a", form("sm_90a", WGMMA, dt.e4m3, dt.e4m3, dt.f32), "sm_120a"),
    ("sm_103a", form("sm_100a", TCGEN05, dt.s8, dt.s8, dt.s32), "'.kind::i8' not supported on .target 'sm_103a'"),
    ("sm_107a", form("sm_110a", TCGEN05, dt.u8, dt.u8, dt.s32), "sm_107a"),
    ("sm_120a", form("sm_100a", TCGEN05, dt.f16, dt.f16, dt.f32), "sm_120a"),
    ("sm_90a", form("sm_120a", MMA_SYNC, dt.e2m1, dt.e2m1, dt.f32, 64, BlockScale(dt.ue8m0, 32)), "sm_90a"),
    ("sm_100a", form("sm_120a", MMA_SYNC, dt.e2m1, dt.e3m2, dt.f32, 32), "sm_100a"),
]


@pytest.mark.parametrize("arch, instruction, message", [buildable_case(n) for n in NEGATIVE],
                         ids=[f"{n[0]}-lacks-{n[1].describe().replace(' ', '_')}" for n in NEGATIVE])
def test_a_form_the_target_lacks_is_refused_by_the_compiler(arch, instruction, message):
    assert instruction not in T[arch].mma
    with pytest.raises(CompileError) as err:
        compile_for(arch, probes.probe_source(instruction))
    assert message in err.value.log


def ptx_of(arch: str, source: str) -> str:
    """NVRTC's PTX for ``arch`` without ptxas (compute_XX), so that ptxas's error lines can be mapped to kernels."""
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"probes.cu", 0, [], [])
    options = [f"--gpu-architecture={arch.replace('sm_', 'compute_')}".encode(), b"--std=c++17"]
    try:
        assert int(nvrtc.nvrtcCompileProgram(prog, len(options), options)[0]) == 0
        _, size = nvrtc.nvrtcGetPTXSize(prog)
        buf = b" " * size
        nvrtc.nvrtcGetPTX(prog, buf)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return buf.decode().rstrip("\0")


@pytest.mark.parametrize("arch", [buildable(a) for a in T])
def test_no_form_declared_elsewhere_compiles_where_it_is_not_declared(arch):
    """Every form of every other target that this one lacks is refused by ptxas: one error at least per probe."""
    # Compared by mnemonic: the same form may be native on one target and marked emulated on another.
    declared = {i.ptx for i in T[arch].mma}
    others = list({i.ptx: i for c in archs.ALL for i in c.mma if i.ptx not in declared}.values())
    source, specs = probes.batch(others)
    ptx = ptx_of(arch, source)
    entries = [(n, m.group(1)) for n, line in enumerate(ptx.splitlines(), 1)
               for m in [re.search(r"\.entry (\w+)\(", line)] if m]
    with pytest.raises(CompileError) as err:
        compile_for(arch, source)
    refused = set()
    for line in (int(x) for x in re.findall(r"line (\d+); error", err.value.log)):
        owner = [name for start, name in entries if start <= line]
        assert owner, f"ptxas error on line {line}, before any kernel"
        refused.add(owner[-1])
    accepted = [s.instruction.describe() for s in specs if s.kernel not in refused]
    assert accepted == [], f"{arch} accepts forms its table lacks: {accepted}"


# ---- memory features ---------------------------------------------------------------------------------------------
FLAGS = ("ldmatrix", "stmatrix", "cp_async", "bulk_copy", "bulk_tensor_copy", "tma_multicast", "clusters",
         "setmaxnreg", "tensor_memory", "programmatic_launch")


def kernel_opcodes(cubin: bytes) -> dict[str, list[str]]:
    """{kernel: its SASS opcodes}; skips the test where nvdisasm is missing."""
    sass = pytest.importorskip("conformance.sass")
    try:
        text = sass.disassemble(cubin)
    except sass.SassUnavailable as exc:
        pytest.skip(str(exc))
    return {name: list(sass.opcodes(code)) for name, code in sass.split_functions(text).items()}


@pytest.mark.parametrize("arch", [buildable(a) for a in T])
def test_memory_features_match_what_the_compiler_accepts_and_emits(arch):
    """A claimed feature compiles to its hardware op (probes.FEATURE_SASS); one claimed absent is refused by ptxas
    or compiles only to something else (sm_120a's TMA multicast: a CALL to a driver syscall)."""
    mem = T[arch].memory
    present = [f for f in FLAGS if getattr(mem, f)]
    units = "".join(probes.feature_source(f).replace("humming_feature", f"feature_{f}") for f in present)
    ops = kernel_opcodes(compile_for(arch, units))  # every claimed feature at once
    for f in present:
        assert probes.feature_in_sass(f, ops[f"feature_{f}"]) in (True, None), (f, ops[f"feature_{f}"])
    for f in FLAGS:
        if getattr(mem, f) is False:
            try:
                cubin = compile_for(arch, probes.feature_source(f))
            except CompileError:
                continue
            assert probes.feature_in_sass(f, kernel_opcodes(cubin)["humming_feature"]) is False, f


# ---- the tcgen05 instruction descriptor -----------------------------------------------------------------------
def test_instruction_descriptor_bits_for_bf16_to_f32_m128_n16():
    i = form("sm_100a", TCGEN05, dt.bf16, dt.bf16, dt.f32)
    # f32 D at bits 4-5, bf16 (1) at 7-9 and 10-12, K-major, N>>3 at 17-22, M>>4 at 24-28.
    assert probes.instruction_descriptor(i, 16) == (1 << 4) | (1 << 7) | (1 << 10) | (2 << 17) | (8 << 24)


def test_instruction_descriptor_encodes_every_declared_tcgen05_operand_pair():
    codes = {dt.e4m3: 0, dt.e5m2: 1, dt.e2m3: 3, dt.e3m2: 4, dt.e2m1: 5}
    for i in T["sm_100a"].instructions(family=TCGEN05):
        n = 16 * (1 + (hash(i.describe()) % 16))
        d = probes.instruction_descriptor(i, n)
        assert (d >> 17) & 0x3F == n >> 3 and (d >> 24) & 0x1F == 128 >> 4
        if ".kind::f8f6f4" in i.ptx or ".kind::mxf8f6f4" in i.ptx:
            assert ((d >> 7) & 7, (d >> 10) & 7) == (codes[i.a], codes[i.b])
        if i.block_scale is not None:
            assert (d >> 23) & 1 == (i.block_scale.scale is dt.ue8m0)
        else:
            assert (d >> 4) & 3 == {dt.f16: 0, dt.f32: 1, dt.s32: 2}[i.acc]


def test_a_probe_n_outside_the_allowed_set_is_refused():
    i = form("sm_90a", WGMMA, dt.s8, dt.s8, dt.s32)
    with pytest.raises(InvalidInputError, match="N=40"):
        probes.render(i, n=40)
    source, spec = probes.render(i, n=256)
    assert "m64n256k32" in source and spec.words == 128


def test_the_largest_wgmma_n_compiles():
    i = form("sm_90a", WGMMA, dt.bf16, dt.bf16, dt.f32)
    compile_for("sm_90a", probes.probe_source(i, n=256))


# ---- the hook ---------------------------------------------------------------------------------------------------
def test_the_hook_renders_declared_forms_refuses_others_and_ignores_other_vendors():
    i = form("sm_90a", WGMMA, dt.e4m3, dt.e5m2, dt.f32)
    probe = nvidia_plugin.humming_instruction_probe(instruction=i, target=T["sm_90a"].target)
    assert 'extern "C" __global__ void humming_probe(' in probe.source
    assert probe.threads == 128 and probe.increment == i.k and probe.words > 0  # one warpgroup; D = C + K
    compile_for("sm_90a", probe.source)
    assert nvidia_plugin.humming_instruction_probe(instruction=i, target=Target("thead", "ppu-810e")) is None
    with pytest.raises(InvalidInputError, match="not declared for sm_100a"):
        nvidia_plugin.humming_instruction_probe(instruction=i, target=T["sm_100a"].target)


def test_the_manager_hands_out_probes_and_the_toolchain():
    m = DeviceManager(autoload=False, plugins=[("nvidia", nvidia_plugin)], raw_devices=[], strict=True)
    caps = m.capabilities("sm_120a")
    i = emittable(caps.instructions(a=dt.e2m1, b=dt.e2m1, block_scaled=True))[0]
    probe = m.instruction_probe(i, caps.target)
    cubin = m.toolchain(caps.target).compile(probe.source, target=caps.target).binary
    assert b"humming_probe\0" in cubin


@pytest.mark.parametrize("block_scaled", [False, True])
@pytest.mark.parametrize("n", [8, 24, 136, 256])
def test_a_tcgen05_probe_compiles_at_any_allowed_n_with_tmem_for_d_and_the_scales(n: int, block_scaled: bool) -> None:
    # tcgen05.st / ld take .x1 .. .x128 (powers of two): a probe at N = 24 or 256 moves D in pieces, and its TMEM
    # allocation holds all N columns of D and, past them, the scale factors (the GPU test runs the largest N).
    caps = archs.capabilities("sm_100a")
    forms = caps.instructions(family=TCGEN05, a=dt.e4m3, acc=dt.f32, block_scaled=block_scaled)
    i = next(f for f in forms if n in f.n_values)
    source = probes.probe_source(i, n=n)
    cols = int(re.search(r"tcgen05\.alloc\.cta_group::1\.sync\.aligned\.shared::cta\.b32 \[%0\], (\d+);", source)[1])
    assert cols >= n and cols & (cols - 1) == 0 and 32 <= cols <= 512
    if block_scaled:  # the scale factors' columns, after D's
        offsets = [int(x) for x in re.findall(r'"r"\(tmem \+ (\d+)u\)', source)]
        assert offsets and min(offsets) >= n and max(offsets) + 16 <= cols
    compile_for("sm_100a", source)
