"""CUDA C++ micro-kernels that execute one declared NVIDIA MMA instruction once (mma.sync, wgmma, tcgen05.mma).

Every probe has one contract, so one harness runs them all::

    extern "C" __global__ void <name>(const unsigned* c_in, unsigned* d_out)   // one block of spec.threads

Each thread reads its ``spec.words`` 32-bit words of the accumulator C from ``c_in[t * words ...]`` and writes D to
``d_out`` in the same place. Every element of A and B holds the value 1 of its type (every block scale holds 1.0),
so each element of D is C + K, whatever the fragment layout: the check needs no layout table and still proves that
the instruction ran with the declared K and accumulator type (``spec.increment``; 0 for b1 .xor.popc).

- mma.sync: one warp, operands in registers.
- wgmma: one warpgroup; A and B in shared memory behind no-swizzle K-major descriptors; fence, commit, wait.
- tcgen05.mma: one warpgroup; tcgen05.alloc of TMEM, C stored to TMEM, one thread issues the MMA with its
  instruction descriptor, tcgen05.commit to an mbarrier, D loaded back, dealloc. These compile for sm_100a,
  sm_103a, sm_107a and sm_110a here; their numerics (sub-byte operand packing in shared memory, f16 accumulators
  in TMEM) are unverified until they run on a Blackwell part.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from humming.capabilities.model import MmaInstruction
from humming.core import dtypes
from humming.core.dtypes import DType
from humming.devices.nvidia.families import MMA_SYNC, TCGEN05, WGMMA
from humming.errors import InvalidInputError


@dataclass(frozen=True)
class ProbeSpec:
    """How to launch and check one probe kernel."""

    kernel: str  # extern "C" name
    instruction: MmaInstruction
    threads: int  # one block of this many threads
    words: int  # 32-bit words of C (in) and D (out) per thread
    increment: int  # every element of D equals C + increment
    n: int  # the N the probe uses (instruction.n for mma.sync)


# ---- the value 1 of each operand type, as bytes ------------------------------------------------------------------
_ONE_BYTE = {dtypes.e4m3: 0x38, dtypes.e5m2: 0x3C, dtypes.ue8m0: 0x7F, dtypes.ue4m3: 0x38, dtypes.s8: 0x01,
             dtypes.u8: 0x01, dtypes.s4: 0x11, dtypes.u4: 0x11, dtypes.b1: 0xFF}
# f8f6f4 kinds of mma.sync keep each element in a byte: e2m1 in the middle four bits, e3m2/e2m3 in the low six.
_ONE_IN_BYTE = {dtypes.e2m1: 0x08, dtypes.e3m2: 0x0C, dtypes.e2m3: 0x08, dtypes.e4m3: 0x38, dtypes.e5m2: 0x3C}
_ONE_HALF = {dtypes.f16: 0x3C00, dtypes.bf16: 0x3F80}


def _kind(i: MmaInstruction) -> str:
    marker = ".kind::"
    return i.ptx.split(marker, 1)[1].split(".", 1)[0].split(" ", 1)[0] if marker in i.ptx else ""


def _one_word(dtype: DType, kind: str) -> int:
    """A 32-bit register of packed operand elements, each equal to 1."""
    if dtype is dtypes.tf32:
        return 0x3F800000
    if dtype in _ONE_HALF:
        return _ONE_HALF[dtype] * 0x10001
    if dtype is dtypes.e2m1 and kind in ("mxf4", "mxf4nvf4"):
        return 0x22222222  # packed: two e2m1 per byte
    table = _ONE_IN_BYTE if kind in ("f8f6f4", "mxf8f6f4") else _ONE_BYTE
    if dtype not in table:
        raise InvalidInputError(f"probes: no encoding of 1 for {dtype} in kind {kind or '(none)'}")
    return table[dtype] * 0x01010101


def _smem_chunk(dtype: DType, kind: str) -> tuple[int, int, int, int]:
    """Four words that tile a tcgen05 operand in shared memory with ones (16-byte units).

    Sub-byte types of kind::f8f6f4 sit 16 to a 16-byte unit, packed, then padded (the layout TMA's
    16U4_ALIGN16B / 16U6_ALIGN16B formats produce): 8 bytes of e2m1 then 8 of padding, 12 bytes of e3m2/e2m3 then 4.
    """
    if kind == "f8f6f4" or kind == "mxf8f6f4":
        if dtype is dtypes.e2m1:
            return (0x22222222, 0x22222222, 0, 0)
        if dtype in (dtypes.e3m2, dtypes.e2m3):
            six = _ONE_IN_BYTE[dtype]
            bits = six | six << 6 | six << 12 | six << 18  # four 6-bit ones in three bytes
            data = bytes((bits >> (8 * j)) & 0xFF for j in range(3)) * 4 + bytes(4)
            w0, w1, w2, w3 = (int.from_bytes(data[4 * j:4 * j + 4], "little") for j in range(4))
            return (w0, w1, w2, w3)
    w = _one_word(dtype, kind)
    return (w, w, w, w)


# ---- accumulator handling ---------------------------------------------------------------------------------------
def _acc_regs(acc: DType, elements: int) -> tuple[str, str, int]:
    """(C++ type, asm constraint, registers) for ``elements`` accumulator elements per thread."""
    if acc is dtypes.f32:
        return "float", "f", elements
    if acc is dtypes.s32:
        return "unsigned", "r", elements
    if acc is dtypes.f16:
        return "unsigned", "r", elements // 2  # two f16 per register
    if acc is dtypes.f64:
        return "double", "d", elements
    raise InvalidInputError(f"probes: unsupported accumulator {acc}")


def _load_c(ctype: str, regs: int, words: int) -> str:
    if ctype == "double":
        return (f"double c[{regs}];\n  for (int i = 0; i < {regs}; ++i) c[i] = __hiloint2double("
                f"(int)c_in[t * {words} + 2 * i + 1], (int)c_in[t * {words} + 2 * i]);")
    conv = "__uint_as_float" if ctype == "float" else ""
    return f"{ctype} c[{regs}];\n  for (int i = 0; i < {regs}; ++i) c[i] = {conv}(c_in[t * {words} + i]);"


def _store_d(ctype: str, regs: int, words: int) -> str:
    if ctype == "double":
        return (f"for (int i = 0; i < {regs}; ++i) {{ d_out[t * {words} + 2 * i] = (unsigned)__double2loint(c[i]); "
                f"d_out[t * {words} + 2 * i + 1] = (unsigned)__double2hiint(c[i]); }}")
    conv = "__float_as_uint" if ctype == "float" else ""
    return f"for (int i = 0; i < {regs}; ++i) d_out[t * {words} + i] = {conv}(c[i]);"


def _list(start: int, count: int) -> str:
    return "{" + ", ".join(f"%{start + j}" for j in range(count)) + "}"


def _increment(i: MmaInstruction) -> int:
    return 0 if i.ptx.endswith(".xor.popc") else i.k


# ---- mma.sync ---------------------------------------------------------------------------------------------------
def _operand_bits(dtype: DType, kind: str) -> int:
    if dtype is dtypes.tf32:
        return 32
    if kind in ("f8f6f4", "mxf8f6f4"):
        return 8  # one element per byte
    return dtype.bits


def _render_mma_sync(i: MmaInstruction, name: str) -> tuple[str, ProbeSpec]:
    m, n, k = i.shape
    kind = _kind(i)
    wide = i.a is dtypes.f64
    a_regs = m * k * _operand_bits(i.a, kind) // 1024
    b_regs = k * n * _operand_bits(i.b, kind) // 1024
    ctype, con, c_regs = _acc_regs(i.acc, m * n // 32)
    words = c_regs * (2 if wide else 1)
    if wide:  # f64 operands: 64-bit registers
        a_regs, b_regs = a_regs // 2, b_regs // 2
        ab_decl = ("double a = 1.0, b = 1.0;", '"d"(a)', '"d"(b)')
    else:
        ab_decl = (f"const unsigned a = 0x{_one_word(i.a, kind):08X}u, b = 0x{_one_word(i.b, kind):08X}u;", '"r"(a)',
                   '"r"(b)')
    outs = ", ".join(f'"={con}"(d[{j}])' for j in range(c_regs))
    ins = ", ".join([ab_decl[1]] * a_regs + [ab_decl[2]] * b_regs + [f'"{con}"(c[{j}])' for j in range(c_regs)])
    args = [_list(0, c_regs), _list(c_regs, a_regs), _list(c_regs + a_regs, b_regs),
            _list(c_regs + a_regs + b_regs, c_regs)]
    scale_decl = ""
    if i.block_scale is not None:
        base = 2 * c_regs + a_regs + b_regs
        one = _one_word(i.block_scale.scale, "")
        scale_decl = f"const unsigned sf = 0x{one:08X}u; const unsigned short sel = 0;"
        ins += ', "r"(sf), "h"(sel), "h"(sel), "r"(sf), "h"(sel), "h"(sel)'
        args += [f"{{%{base}}}", f"{{%{base + 1}, %{base + 2}}}", f"{{%{base + 3}}}", f"{{%{base + 4}, %{base + 5}}}"]
    src = f"""
extern "C" __global__ void {name}(const unsigned* __restrict__ c_in, unsigned* __restrict__ d_out) {{
  // {i.describe()}
  const unsigned t = threadIdx.x;
  {ab_decl[0]} {scale_decl}
  {_load_c(ctype, c_regs, words)}
  {ctype} d[{c_regs}];
  asm volatile("{i.ptx} {', '.join(args)};" : {outs} : {ins});
  for (int i = 0; i < {c_regs}; ++i) c[i] = d[i];
  {_store_d(ctype, c_regs, words)}
}}
"""
    return src, ProbeSpec(name, i, 32, words, _increment(i), n)


# ---- wgmma ------------------------------------------------------------------------------------------------------
_WG_HELPERS = r"""
// No-swizzle K-major shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format" for wgmma): start address,
// leading byte offset (between core matrices along K) and stride byte offset (between 8-row groups), all >> 4.
static __device__ __forceinline__ unsigned long long humming_wgmma_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16)
       | ((unsigned long long)(sbo >> 4) << 32);
}
"""


def _render_wgmma(i: MmaInstruction, name: str, n: int) -> tuple[str, ProbeSpec]:
    ctype, con, c_regs = _acc_regs(i.acc, 64 * n // 128)
    # Every form has 32 bytes of K per row: two 8x16-byte core matrices, so LBO = 128 and SBO = 256 bytes.
    a_bytes, b_bytes = 64 * 32, n * 32
    a_words, total_words = a_bytes // 4, (a_bytes + b_bytes) // 4
    pred = c_regs + 2  # operands: c (in/out), da, db, then the scale-d flag
    if i.a.is_int or i.a is dtypes.b1:
        tail = "p"
    elif i.a in (dtypes.f16, dtypes.bf16):
        tail = "p, 1, 1, 0, 0"
    else:
        tail = "p, 1, 1"
    ptx = i.ptx.replace("nN", f"n{n}")
    outs = ", ".join(f'"+{con}"(c[{j}])' for j in range(c_regs))
    src = f"""
extern "C" __global__ void {name}(const unsigned* __restrict__ c_in, unsigned* __restrict__ d_out) {{
  // {i.describe()}, N={n}
  __shared__ alignas(128) unsigned smem[{total_words}];
  const unsigned t = threadIdx.x;
  for (unsigned w = t; w < {total_words}u; w += 128u)
    smem[w] = w < {a_words}u ? 0x{_one_word(i.a, ''):08X}u : 0x{_one_word(i.b, ''):08X}u;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic-proxy stores -> async proxy
  __syncthreads();
  const unsigned base = (unsigned)__cvta_generic_to_shared(smem);
  const unsigned long long da = humming_wgmma_desc(base, 128, 256);
  const unsigned long long db = humming_wgmma_desc(base + {a_bytes}u, 128, 256);
  {_load_c(ctype, c_regs, c_regs)}
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile("{{ .reg .pred p; setp.ne.b32 p, %{pred}, 0; "
               "{ptx} {_list(0, c_regs)}, %{c_regs}, %{c_regs + 1}, {tail}; }}"
               : {outs} : "l"(da), "l"(db), "r"(1) : "memory");
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  {_store_d(ctype, c_regs, c_regs)}
}}
"""
    return src, ProbeSpec(name, i, 128, c_regs, _increment(i), n)


# ---- tcgen05 ----------------------------------------------------------------------------------------------------
_TC_HELPERS = r"""
// No-swizzle K-major shared-memory descriptor for tcgen05 (PTX ISA "Shared Memory Descriptor"): start, LBO and SBO
// >> 4 at bits 0, 16 and 32, the fixed version field 0b001 at bit 46, swizzle mode 0 at bits 61-63.
static __device__ __forceinline__ unsigned long long humming_tc_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16)
       | ((unsigned long long)(sbo >> 4) << 32) | (1ull << 46);
}
"""
# Instruction-descriptor codes (PTX ISA "Instruction descriptor" tables of tcgen05.mma).
_TC_FORMAT = {("f16", dtypes.f16): 0, ("f16", dtypes.bf16): 1, ("tf32", dtypes.tf32): 2, ("i8", dtypes.u8): 0,
              ("i8", dtypes.s8): 1, ("mxf4", dtypes.e2m1): 1, ("mxf4nvf4", dtypes.e2m1): 1}
_F8F6F4_FORMAT = {dtypes.e4m3: 0, dtypes.e5m2: 1, dtypes.e2m3: 3, dtypes.e3m2: 4, dtypes.e2m1: 5}
_TC_ACC = {dtypes.f16: 0, dtypes.f32: 1, dtypes.s32: 2}


def instruction_descriptor(i: MmaInstruction, n: int) -> int:
    """The 32-bit tcgen05.mma instruction descriptor: dense, K-major A and B, no negation, cta_group::1."""
    kind = _kind(i)
    fmt = (lambda d: _F8F6F4_FORMAT[d]) if kind in ("f8f6f4", "mxf8f6f4") else (lambda d: _TC_FORMAT[(kind, d)])
    desc = fmt(i.a) << 7 | fmt(i.b) << 10 | (n >> 3) << 17 | (i.m >> 4) << 24
    if i.block_scale is None:
        return desc | _TC_ACC[i.acc] << 4
    return desc | (1 if i.block_scale.scale is dtypes.ue8m0 else 0) << 23  # scale ids 0, K 32/64 (bit 31 = 0)


def _render_tcgen05(i: MmaInstruction, name: str, n: int) -> tuple[str, ProbeSpec]:
    kind = _kind(i)
    a_bytes, b_bytes = i.m * 32, n * 32  # 32 bytes of K per row for every kind (see _smem_chunk)
    ca, cb = _smem_chunk(i.a, kind), _smem_chunk(i.b, kind)
    # TMEM columns (an allocation is a power of two from 32 to 512): D in 0..n-1, then the scale factors of A and B
    # (16 columns each) past D's power of two.
    d_cols = max(32, 1 << (n - 1).bit_length())
    sf_a = d_cols
    cols = 1 << (d_cols + 32 - 1).bit_length() if i.block_scale else d_cols
    idesc = instruction_descriptor(i, n)
    if i.block_scale:
        sf = _one_word(i.block_scale.scale, "")
        scales = (f'const unsigned sf = 0x{sf:08X}u;\n  asm volatile("tcgen05.st.sync.aligned.32x32b.x32.b32 [%0], '
                  f'{_list(1, 32)};" :: "r"(lane + {sf_a}u), ' + ", ".join(['"r"(sf)'] * 32) + ");")
        mma = (f'"{{ .reg .pred p; setp.ne.b32 p, %6, 0; {i.ptx} [%0], %1, %2, %3, [%4], [%5], p; }}" :: "r"(tmem), '
               f'"l"(da), "l"(db), "r"({idesc}u), "r"(tmem + {sf_a}u), "r"(tmem + {sf_a + 16}u), "r"(1)')
    else:
        scales = ""
        mma = (f'"{{ .reg .pred p; setp.ne.b32 p, %4, 0; {i.ptx} [%0], %1, %2, %3, p; }}" :: "r"(tmem), "l"(da), '
               f'"l"(db), "r"({idesc}u), "r"(1)')
    # tcgen05.st / ld move .x1 .. .x128 columns (powers of two): D in pieces, at their column offsets
    pieces, at = [], 0
    for bit in (128, 64, 32, 16, 8, 4, 2, 1):
        while n - at >= bit:
            pieces.append((at, bit))
            at += bit
    stores = "\n  ".join(
        f'asm volatile("tcgen05.st.sync.aligned.32x32b.x{k}.b32 [%0], {_list(1, k)};" :: "r"(lane + {o}u), '
        + ", ".join(f'"r"(c[{o + j}])' for j in range(k)) + ' : "memory");' for o, k in pieces)
    loads = "\n  ".join(
        f'asm volatile("tcgen05.ld.sync.aligned.32x32b.x{k}.b32 {_list(0, k)}, [%{k}];" : '
        + ", ".join(f'"=r"(c[{o + j}])' for j in range(k)) + f' : "r"(lane + {o}u) : "memory");' for o, k in pieces)
    src = f"""
extern "C" __global__ void {name}(const unsigned* __restrict__ c_in, unsigned* __restrict__ d_out) {{
  // {i.describe()}, N={n}; one f16 accumulator per 32-bit TMEM column, low half (unverified)
  __shared__ alignas(1024) unsigned smem[{(a_bytes + b_bytes) // 4}];
  __shared__ unsigned tmem_slot;
  __shared__ alignas(8) unsigned long long bar;
  const unsigned t = threadIdx.x, warp = t / 32u;
  const unsigned pa[4] = {{{', '.join(f'0x{w:08X}u' for w in ca)}}}, pb[4] = {{{', '.join(f'0x{w:08X}u' for w in cb)}}};
  for (unsigned w = t; w < {(a_bytes + b_bytes) // 4}u; w += 128u)
    smem[w] = w < {a_bytes // 4}u ? pa[w % 4u] : pb[w % 4u];
  const unsigned bar_addr = (unsigned)__cvta_generic_to_shared(&bar);
  if (warp == 0) {{
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], {cols};"
                 :: "r"((unsigned)__cvta_generic_to_shared(&tmem_slot)) : "memory");
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
  }}
  if (t == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_addr) : "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
  __syncthreads();
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
  const unsigned tmem = tmem_slot, lane = tmem + ((warp * 32u) << 16);  // warp w owns TMEM lanes 32w..32w+31
  unsigned c[{n}];
  for (int j = 0; j < {n}; ++j) c[j] = c_in[t * {n} + j];
  {stores}
  {scales}
  asm volatile("tcgen05.wait::st.sync.aligned;" ::: "memory");
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
  __syncthreads();
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
  if (t == 0) {{
    const unsigned base = (unsigned)__cvta_generic_to_shared(smem);
    const unsigned long long da = humming_tc_desc(base, 128, 256), db = humming_tc_desc(base + {a_bytes}u, 128, 256);
    asm volatile({mma} : "memory");
    asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];"
                 :: "r"(bar_addr) : "memory");
  }}
  asm volatile("{{ .reg .pred done; WAIT: mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0; @!done bra WAIT; }}"
               :: "r"(bar_addr) : "memory");
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
  {loads}
  asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
  for (int j = 0; j < {n}; ++j) d_out[t * {n} + j] = c[j];
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
  __syncthreads();
  if (warp == 0) asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, {cols};" :: "r"(tmem) : "memory");
}}
"""
    return src, ProbeSpec(name, i, 128, n, _increment(i), n)


# ---- public -----------------------------------------------------------------------------------------------------
def nvrtc_needed(i: MmaInstruction) -> tuple[int, int]:
    """The oldest NVRTC that emits ``i``: 13.0 (PTX ISA 9.0, humming's baseline) but for the PTX 9.1 form below.

    The table describes the hardware; an older NVRTC simply cannot emit the newer forms (callers skip them).
    """
    if i.block_scale is not None and i.block_scale.scale is dtypes.ue8m0 and i.block_scale.vector_size == 16:
        return (13, 1)  # mma.sync .kind::mxf4nvf4 .scale_vec::4X with .ue8m0: PTX ISA 9.1 (CUDA 13.1)
    return (13, 0)


def probe_n(i: MmaInstruction) -> int:
    """The N a probe uses: the instruction's own N, or the smallest allowed one (wgmma, tcgen05)."""
    return min(i.n_values) if i.n_values else i.n


def render(i: MmaInstruction, name: str = "humming_probe", n: int | None = None) -> tuple[str, ProbeSpec]:
    """The kernel body (no helpers) and the spec of one probe."""
    if i.family == MMA_SYNC:
        return _render_mma_sync(i, name)
    n = probe_n(i) if n is None else n
    if i.n_values and n not in i.n_values:
        raise InvalidInputError(f"probes: N={n} is not allowed for {i.describe()}; allowed: {list(i.n_values)}")
    if i.family == WGMMA:
        return _render_wgmma(i, name, n)
    if i.family == TCGEN05:
        return _render_tcgen05(i, name, n)
    raise InvalidInputError(f"probes: no probe for MMA family {i.family}")


def helpers(instructions: Sequence[MmaInstruction]) -> str:
    fams = {i.family for i in instructions}
    return (_WG_HELPERS if WGMMA in fams else "") + (_TC_HELPERS if TCGEN05 in fams else "")


def probe_source(i: MmaInstruction, name: str = "humming_probe", n: int | None = None) -> str:
    """One translation unit defining ``extern "C" __global__ void <name>(const unsigned*, unsigned*)``."""
    body, _ = render(i, name, n)
    return helpers([i]) + body


def batch(instructions: Sequence[MmaInstruction], prefix: str = "humming_probe_") -> tuple[str, list[ProbeSpec]]:
    """One translation unit with a probe per instruction (kernels ``<prefix>0``, ``<prefix>1`` ...)."""
    parts, specs = [helpers(instructions)], []
    for index, i in enumerate(instructions):
        body, spec = render(i, f"{prefix}{index}")
        parts.append(body)
        specs.append(spec)
    return "".join(parts), specs


#: One kernel per memory/execution feature, to pin MemoryFeatures to what the compiler accepts for a target.
FEATURE_PROBES: dict[str, str] = {
    "ldmatrix": 'unsigned x; __shared__ unsigned s[64]; asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, '
                '[%1];" : "=r"(x) : "r"((unsigned)__cvta_generic_to_shared(s))); o[0] = x;',
    "stmatrix": '__shared__ unsigned s[64]; asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" :: '
                '"r"((unsigned)__cvta_generic_to_shared(s)), "r"(o[1]));',
    "cp_async": '__shared__ unsigned s[64]; asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: '
                '"r"((unsigned)__cvta_generic_to_shared(s)), "l"(o));',
    "bulk_copy": '__shared__ alignas(128) unsigned s[64]; __shared__ unsigned long long bar; asm volatile('
                 '"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 16, [%2];" :: '
                 '"r"((unsigned)__cvta_generic_to_shared(s)), "l"(o), "r"((unsigned)__cvta_generic_to_shared(&bar)) '
                 ': "memory");',
    "bulk_tensor_copy": '__shared__ alignas(128) unsigned s[64]; __shared__ unsigned long long bar; asm volatile('
                        '"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, '
                        '%2}], [%3];" :: "r"((unsigned)__cvta_generic_to_shared(s)), "l"(o), "r"(0), '
                        '"r"((unsigned)__cvta_generic_to_shared(&bar)) : "memory");',
    "tma_multicast": '__shared__ alignas(128) unsigned s[64]; __shared__ unsigned long long bar; asm volatile('
                     '"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster '
                     '[%0], [%1, {%2, %2}], [%3], %4;" :: "r"((unsigned)__cvta_generic_to_shared(s)), "l"(o), "r"(0), '
                     '"r"((unsigned)__cvta_generic_to_shared(&bar)), "h"((unsigned short)3) : "memory");',
    "clusters": 'unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); o[0] = r;',
    # A lone setmaxnreg is dead code to ptxas (no USETMAXREG on any target); a dec/inc pair split by warpgroup in a
    # kernel of three warpgroups (__launch_bounds__ below) keeps USETMAXREG.TRY_ALLOC / .DEALLOC.
    "setmaxnreg": 'const unsigned w = threadIdx.x / 128u; if (w == 0u) asm volatile("setmaxnreg.dec.sync.aligned.u32 '
                  '40;"); else asm volatile("setmaxnreg.inc.sync.aligned.u32 232;"); o[threadIdx.x] = w;',
    "programmatic_launch": 'asm volatile("griddepcontrol.wait;" ::: "memory"); '
                           'asm volatile("griddepcontrol.launch_dependents;");',
    "tensor_memory": '__shared__ unsigned slot; asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 '
                     '[%0], 32;" :: "r"((unsigned)__cvta_generic_to_shared(&slot)));',
}


_FEATURE_BOUNDS = {"setmaxnreg": "__launch_bounds__(384, 1) "}

#: The SASS op (opcode class, then dotted flags it must carry) that shows a feature probe runs on the hardware.
#: Compiling is not enough: on sm_120a/121a ptxas accepts .multicast::cluster and emits only CALL.ABS.NOINC to the
#: driver's __cuda_syscall_cp_async_bulk_tensor_2d_tile_multicast (NVRTC 13.5 + nvdisasm 13.5, review 7).
FEATURE_SASS: dict[str, tuple[str, ...]] = {
    "bulk_copy": ("UBLKCP",), "bulk_tensor_copy": ("UTMALDG",), "tma_multicast": ("UTMALDG", "MULTICAST"),
    "setmaxnreg": ("USETMAXREG",),
}


def feature_source(feature: str) -> str:
    """A kernel that uses one MemoryFeatures flag (a key of FEATURE_PROBES)."""
    if feature not in FEATURE_PROBES:
        raise InvalidInputError(f"probes: no feature probe {feature!r}; known: {', '.join(FEATURE_PROBES)}")
    bounds = _FEATURE_BOUNDS.get(feature, "")
    return f'extern "C" __global__ void {bounds}humming_feature(unsigned* o) {{ {FEATURE_PROBES[feature]} }}\n'


def feature_in_sass(feature: str, opcodes: Iterable[str]) -> bool | None:
    """Whether a feature probe's SASS opcodes (conformance.sass.opcodes) hold its hardware op (FEATURE_SASS); None
    for a feature with no mapped op. False for a probe that compiled to a driver syscall only."""
    want = FEATURE_SASS.get(feature)
    if want is None:
        return None
    return any(op.split(".")[0] == want[0] and set(want[1:]) <= set(op.split(".")[1:]) for op in opcodes)
