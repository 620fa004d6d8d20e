"""NVIDIA product facts per part (SkuFacts): SM count, memory, bandwidth, L2, peak dense tensor rates, driver names.

Rules of this table:
- A part is matched by the exact name the CUDA driver reports (``cuDeviceGetName``: "NVIDIA H200", "Tesla T4"),
  never by a substring: "NVIDIA H20" and "NVIDIA H200" are different parts. Which *target* a device is comes from
  its compute capability (detect.py), never from its name; the name only selects the SKU within that target.
- Memory capacity is in binary units (HBM stacks and GDDR chips come in 2**30-byte sizes; a datasheet's
  "80 GB" is 80 GiB, and the driver reports a little less). Bandwidth is decimal (TB/s = 1e12 B/s).
- Peak rates are dense (no 2:4 sparsity) tensor-core TFLOPS (TOPS for integers), keyed by operand dtype. NVIDIA
  datasheets print the sparse figure with a footnote "one-half lower without sparsity"; those are halved here.
  GeForce parts run f16/bf16/e4m3 at half rate with f32 accumulation: the f32-accumulation figure is given.
- A fact that is not public is None (a rate that is not public is absent). Each part cites its sources.
"""

from __future__ import annotations

from typing import Mapping

from humming.capabilities.model import Provenance, SkuFacts, Source
from humming.core import dtypes
from humming.core.dtypes import DType

GiB = 1 << 30
MiB = 1 << 20
KiB = 1 << 10
TBps = 1e12  # bytes per second
GBps = 1e9

D, R, V = Provenance.DOCUMENTED, Provenance.REPORTED, Provenance.VENDOR_DECLARED


def _sku(name: str, *, sms: int | None, mem_gib: float | None, bw: float | None, l2: int | None,
         peaks: Mapping[DType, float], names: tuple[str, ...], provenance: Provenance, cite: str) -> SkuFacts:
    return SkuFacts(name=name, sm_count=sms, memory_bytes=None if mem_gib is None else int(mem_gib * GiB),
                    memory_bandwidth=bw, l2_bytes=l2, peak_dense_tflops=dict(peaks), match_names=names,
                    source=Source(provenance, cite))


def _same(value: float, *types: DType) -> dict[DType, float]:
    return {t: value for t in types}


f16, bf16, tf32, f64 = dtypes.f16, dtypes.bf16, dtypes.tf32, dtypes.f64
e4m3, e5m2, e3m2, e2m3, e2m1 = dtypes.e4m3, dtypes.e5m2, dtypes.e3m2, dtypes.e2m3, dtypes.e2m1
s8, s4 = dtypes.s8, dtypes.s4
FP8 = (e4m3, e5m2)
FP8_FP6 = (e4m3, e5m2, e3m2, e2m3)

# ---- sm_75: Turing ---------------------------------------------------------------------------------
T4 = _sku("T4", sms=40, mem_gib=16, bw=320 * GBps, l2=4 * MiB, names=("Tesla T4",),
          peaks={f16: 65.0, s8: 130.0, s4: 260.0}, provenance=D,
          cite="NVIDIA T4 Tensor Core GPU datasheet (mixed-precision FP16/FP32 65 TFLOPS, INT8 130, INT4 260); "
               "NVIDIA Turing GPU Architecture whitepaper (T4: 40 SMs, 4 MB L2)")
RTX_2080_TI = _sku("GeForce RTX 2080 Ti", sms=68, mem_gib=11, bw=616 * GBps, l2=5632 * KiB,
                   names=("NVIDIA GeForce RTX 2080 Ti", "GeForce RTX 2080 Ti"),
                   peaks={f16: 53.8, s8: 215.2, s4: 430.3}, provenance=D,
                   cite="NVIDIA Turing GPU Architecture whitepaper, table 1, reference board (68 SMs, 5632 KB L2, "
                        "616 GB/s; FP16 tensor with FP32 accumulate 53.8 TFLOPS, INT8 215.2, INT4 430.3 TOPS)")

# ---- sm_80 / sm_86 / sm_87: Ampere ---------------------------------------------------------------------
_A100_PEAKS = {f64: 19.5, tf32: 156.0, f16: 312.0, bf16: 312.0, s8: 624.0, s4: 1248.0}
_A100_CITE = ("NVIDIA A100 Tensor Core GPU datasheet (dense: FP64 tensor 19.5, TF32 156, BF16/FP16 312 TFLOPS, "
              "INT8 624 TOPS); NVIDIA A100 Tensor Core GPU Architecture whitepaper (108 SMs, 40 MB L2, INT4 1248)")
A100_40GB = _sku("A100 40GB", sms=108, mem_gib=40, bw=1555 * GBps, l2=40 * MiB,
                 names=("NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB"), peaks=_A100_PEAKS, provenance=D,
                 cite=_A100_CITE + "; 40GB HBM2 at 1,555 GB/s")
A100_80GB_SXM = _sku("A100 80GB SXM", sms=108, mem_gib=80, bw=2039 * GBps, l2=40 * MiB,
                     names=("NVIDIA A100-SXM4-80GB",), peaks=_A100_PEAKS, provenance=D,
                     cite=_A100_CITE + "; 80GB HBM2e at 2,039 GB/s (SXM)")
A100_80GB_PCIE = _sku("A100 80GB PCIe", sms=108, mem_gib=80, bw=1935 * GBps, l2=40 * MiB,
                      names=("NVIDIA A100 80GB PCIe",), peaks=_A100_PEAKS, provenance=D,
                      cite=_A100_CITE + "; 80GB HBM2e at 1,935 GB/s (PCIe)")
A10 = _sku("A10", sms=72, mem_gib=24, bw=600 * GBps, l2=6 * MiB, names=("NVIDIA A10",),
           peaks={tf32: 62.5, f16: 125.0, bf16: 125.0, s8: 250.0, s4: 500.0}, provenance=D,
           cite="NVIDIA A10 Tensor Core GPU datasheet (24 GB GDDR6, 600 GB/s; dense TF32 62.5, BF16/FP16 125 "
                "TFLOPS, INT8 250, INT4 500 TOPS); NVIDIA Ampere GA102 GPU Architecture whitepaper (72 SMs, 6 MB L2)")
RTX_3090 = _sku("GeForce RTX 3090", sms=82, mem_gib=24, bw=936 * GBps, l2=6 * MiB,
                names=("NVIDIA GeForce RTX 3090",),
                peaks={tf32: 35.6, f16: 71.0, bf16: 71.0, s8: 284.0, s4: 568.0}, provenance=D,
                cite="NVIDIA Ampere GA102 GPU Architecture whitepaper, appendix (82 SMs, 6 MB L2, 936 GB/s; dense "
                     "FP16/BF16 tensor with FP32 accumulate 71 TFLOPS, TF32 35.6, INT8 284, INT4 568 TOPS)")
# Every Jetson Orin module's GPU reports the name "Orin", so the part the driver names holds only what all modules
# share: their SM count, memory and bandwidth differ (the driver's own SM count and memory are read at run time).
ORIN = _sku("Jetson Orin (module not identified)", sms=None, mem_gib=None, bw=None, l2=None, names=("Orin",),
            peaks={}, provenance=D,
            cite="NVIDIA Jetson AGX Orin Series technical brief, Jetson Orin NX Series and Jetson Orin Nano Series "
                 "datasheets: every module reports 'Orin', with 16 SMs, 64 GB at 204.8 GB/s (AGX Orin 64GB); 14 "
                 "SMs, 32 GB at 204.8 GB/s (AGX Orin 32GB); 8 SMs, 8-16 GB at 102.4 GB/s (Orin NX); 8 SMs, 8 GB at "
                 "68 GB/s (Orin Nano 8GB) or 4 SMs, 4 GB at 34 GB/s (Orin Nano 4GB; 'Super' modes raise Nano "
                 "bandwidth); per-dtype dense GPU rates are not published")
#: The largest Orin module, matched by no driver name (it reports "Orin" too): the part a plan for sm_87 assumes.
AGX_ORIN_64GB = _sku("Jetson AGX Orin 64GB", sms=16, mem_gib=64, bw=204.8 * GBps, l2=None, names=(),
                     peaks={}, provenance=D,
                     cite="NVIDIA Jetson AGX Orin Series technical brief (2048 CUDA cores and 64 tensor cores in "
                          "16 SMs; 64 GB LPDDR5 at 204.8 GB/s); per-dtype dense GPU rates are not published")

# ---- sm_89: Ada ------------------------------------------------------------------------------------------
L40S = _sku("L40S", sms=142, mem_gib=48, bw=864 * GBps, l2=96 * MiB, names=("NVIDIA L40S",),
            peaks={tf32: 183.0, f16: 362.05, bf16: 362.05, **_same(733.0, *FP8), s8: 733.0, s4: 733.0},
            provenance=D,
            cite="NVIDIA L40S datasheet (48 GB GDDR6, 864 GB/s; dense TF32 183, BF16/FP16 362.05, FP8 733 TFLOPS, "
                 "INT8 733, INT4 733 TOPS); NVIDIA Ada GPU Architecture whitepaper (142 SMs, 96 MB L2)")
L20 = _sku("L20", sms=92, mem_gib=48, bw=864 * GBps, l2=96 * MiB, names=("NVIDIA L20",),
           peaks={tf32: 59.8, f16: 119.5, bf16: 119.5, **_same(239.0, *FP8), s8: 239.0}, provenance=R,
           cite="NVIDIA L20 product brief as quoted by resellers and deviceQuery reports (92 SMs, 48 GB GDDR6, "
                "864 GB/s; dense BF16/FP16 119.5, FP8 239 TFLOPS, INT8 239 TOPS); not on nvidia.com")
RTX_4090 = _sku("GeForce RTX 4090", sms=128, mem_gib=24, bw=1008 * GBps, l2=72 * MiB,
                names=("NVIDIA GeForce RTX 4090",),
                peaks={tf32: 82.6, f16: 165.2, bf16: 165.2, **_same(330.3, *FP8), s8: 660.6, s4: 1321.2},
                provenance=D,
                cite="NVIDIA Ada GPU Architecture whitepaper, appendix table (128 SMs, 72 MB L2, 1008 GB/s; dense "
                     "with FP32 accumulate: FP16/BF16 165.2, TF32 82.6, FP8 330.3 TFLOPS; INT8 660.6, INT4 1321.2)")

# ---- sm_90a: Hopper --------------------------------------------------------------------------------------
_H100_SXM_PEAKS = {f64: 67.0, tf32: 494.5, f16: 989.5, bf16: 989.5, **_same(1979.0, *FP8), s8: 1979.0}
_H100_SXM_CITE = ("NVIDIA H100 Tensor Core GPU datasheet, SXM column (FP64 tensor 67; with sparsity TF32 989, "
                  "BF16/FP16 1,979, FP8 3,958 TFLOPS, INT8 3,958 TOPS: halved here); NVIDIA H100 Tensor Core "
                  "GPU Architecture whitepaper (132 SMs on H100 SXM5, 50 MB L2)")
H100_SXM = _sku("H100 SXM", sms=132, mem_gib=80, bw=3.35 * TBps, l2=50 * MiB, names=("NVIDIA H100 80GB HBM3",),
                peaks=_H100_SXM_PEAKS, provenance=D, cite=_H100_SXM_CITE + "; 80 GB HBM3 at 3.35 TB/s")
H100_PCIE = _sku("H100 PCIe", sms=114, mem_gib=80, bw=2.0 * TBps, l2=50 * MiB, names=("NVIDIA H100 PCIe",),
                 peaks={f64: 51.0, tf32: 378.0, f16: 756.5, bf16: 756.5, **_same(1513.0, *FP8), s8: 1513.0},
                 provenance=D,
                 cite="NVIDIA H100 Tensor Core GPU datasheet, PCIe column (80 GB HBM2e at 2 TB/s; FP64 tensor 51; "
                      "with sparsity TF32 756, BF16/FP16 1,513, FP8 3,026, INT8 3,026: halved here); H100 "
                      "whitepaper (114 SMs on H100 PCIe, 50 MB L2)")
H200_SXM = _sku("H200 SXM", sms=132, mem_gib=141, bw=4.8 * TBps, l2=60 * MiB, names=("NVIDIA H200",),
                peaks=_H100_SXM_PEAKS, provenance=D,
                cite="NVIDIA H200 Tensor Core GPU datasheet, SXM column (141 GB HBM3e at 4.8 TB/s; tensor rates "
                     "identical to H100 SXM, halved here from the sparse figures); 132 SMs and a 60 MiB L2 "
                     "(not H100's 50) measured through the CUDA driver on an H200 SXM, 2026-12-02")
H20 = _sku("H20", sms=78, mem_gib=96, bw=4.0 * TBps, l2=60 * MiB, names=("NVIDIA H20",),
           peaks={tf32: 74.0, f16: 148.0, bf16: 148.0, **_same(296.0, *FP8), s8: 296.0}, provenance=R,
           cite="NVIDIA H20 spec sheet as quoted by press and resellers (96 GB HBM3 at 4.0 TB/s; dense BF16/FP16 "
                "148, FP8 296 TFLOPS, INT8 296 TOPS); 78 SMs and 60 MB L2 from several deviceQuery reports")
H800 = _sku("H800 SXM", sms=132, mem_gib=80, bw=3.35 * TBps, l2=50 * MiB, names=("NVIDIA H800",),
            peaks={k: v for k, v in _H100_SXM_PEAKS.items() if k is not f64}, provenance=R,
            cite="H800 SXM as reported by press and its owners: the H100 SXM configuration with NVLink cut to "
                 "400 GB/s and FP64 cut (not public, so absent); tensor rates as H100 SXM")

# ---- sm_100a / sm_103a: Blackwell datacenter -------------------------------------------------------------
B200 = _sku("B200", sms=148, mem_gib=180, bw=8.0 * TBps, l2=None, names=("NVIDIA B200",),
            peaks={f64: 37.0, tf32: 1125.0, f16: 2250.0, bf16: 2250.0, **_same(4500.0, *FP8_FP6), s8: 4500.0,
                   e2m1: 9000.0},
            provenance=D,
            cite="NVIDIA HGX B200 datasheet, per GPU = 8-GPU figure / 8 (180 GB HBM3e, 8 TB/s; with sparsity FP4 "
                 "18, FP8/FP6 9, INT8 9, FP16/BF16 4.5, TF32 2.25 PFLOPS: halved here; FP64 37 TFLOPS); 148 SMs "
                 "from deviceQuery reports")
GB200 = _sku("GB200 (per GPU)", sms=None, mem_gib=186, bw=8.0 * TBps, l2=None, names=("NVIDIA GB200",),
             peaks={f64: 40.0, tf32: 1250.0, f16: 2500.0, bf16: 2500.0, **_same(5000.0, *FP8_FP6), s8: 5000.0,
                    e2m1: 10000.0},
             provenance=D,
             cite="NVIDIA GB200 NVL72 datasheet, per GPU = 72-GPU figure / 72 (13.4 TB HBM3e, 576 TB/s; with "
                  "sparsity FP4 1,440, FP8/FP6 720, INT8 720, FP16/BF16 360, TF32 180 PFLOPS: halved here; FP64 "
                  "2,880 TFLOPS); the SM count is not published")
B300 = _sku("B300", sms=148, mem_gib=288, bw=8.0 * TBps, l2=None, names=("NVIDIA B300 SXM6 AC",),
            peaks={f64: 1.25, tf32: 1125.0, f16: 2250.0, bf16: 2250.0, **_same(4500.0, *FP8_FP6), e2m1: 13500.0},
            provenance=D,
            cite="NVIDIA HGX B300 datasheet, per GPU = 8-GPU figure / 8 (2.3 TB HBM3e; dense FP4 108 PFLOPS; with "
                 "sparsity FP8/FP6 72, FP16/BF16 36, TF32 18 PFLOPS: halved here; FP64 10 TFLOPS); INT8 is cut on "
                 "B300 and its rate is left out; 148 enabled SMs from measured reports (160 on the full die); "
                 "driver name from PyTorch users' reports")
GB300 = _sku("GB300 (per GPU)", sms=None, mem_gib=288, bw=8.0 * TBps, l2=None, names=("NVIDIA GB300",),
             peaks={tf32: 1250.0, f16: 2500.0, bf16: 2500.0, **_same(5000.0, *FP8_FP6), e2m1: 15000.0},
             provenance=D,
             cite="NVIDIA GB300 NVL72 datasheet, per GPU = 72-GPU figure / 72 (up to 21 TB HBM3e, 576 TB/s; dense "
                  "FP4 1,080 PFLOPS; with sparsity FP8/FP6 720, FP16/BF16 360, TF32 180: halved here); INT8 and "
                  "the SM count are left out (not stated per GPU)")

# ---- sm_110a: Thor --------------------------------------------------------------------------------------
# REPORTED as a whole: one SkuFacts has one source, and the SM count and L2 come from a user's driver query.
THOR_DRIVER_DUMP = ("https://forums.developer.nvidia.com/t/clarification-on-cuda-core-and-tensor-core-counts-for-"
                    "jetson-agx-thor/356355")
THOR = _sku("Jetson AGX Thor T5000", sms=20, mem_gib=128, bw=273 * GBps, l2=32 * MiB, names=("NVIDIA Thor",),
            peaks={e2m1: 1035.0, **_same(517.0, *FP8), f16: 258.5, bf16: 258.5}, provenance=R,
            cite="CUDA driver API on a Jetson AGX Thor developer kit, as posted on the NVIDIA developer forum "
                 f"({THOR_DRIVER_DUMP}): name 'NVIDIA Thor', SM count 20, L2 32 MiB, 228 KiB shared memory per SM "
                 "(20 SMs x 128 = the 2560 CUDA cores NVIDIA states; the TRM's full die has 24); NVIDIA technical "
                 "blog 'Introducing NVIDIA Jetson Thor' (2560 CUDA cores, 96 fifth-generation tensor cores, 128 GB "
                 "LPDDR5X at 273 GB/s; dense FP4 1,035, dense FP8 517 TFLOPS, FP16 = half of FP8); the 32 MB L2 also "
                 "in Apache TVM's Thor target tag")

# ---- sm_120a / sm_121a: Blackwell client --------------------------------------------------------------------
RTX_5090 = _sku("GeForce RTX 5090", sms=170, mem_gib=32, bw=1792 * GBps, l2=96 * MiB,
                names=("NVIDIA GeForce RTX 5090",),
                peaks={f16: 209.5, bf16: 209.5, **_same(419.0, *FP8), e2m1: 1676.0}, provenance=D,
                cite="NVIDIA RTX Blackwell GPU Architecture whitepaper (170 SMs, 96 MB L2, 32 GB GDDR7 at 1792 GB/s; "
                     "dense with FP32 accumulate: FP16/BF16 209.5, FP8 419, FP4 1676 TFLOPS), as also tabled by "
                     "torchao's roofline_utils")
RTX_PRO_6000 = _sku("RTX PRO 6000 Blackwell", sms=188, mem_gib=96, bw=1792 * GBps, l2=128 * MiB,
                    names=("NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
                           "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                           "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"),
                    peaks={e2m1: 2000.0}, provenance=V,
                    cite="NVIDIA RTX PRO 6000 Blackwell datasheet (24,064 CUDA cores = 188 SMs, 96 GB GDDR7 ECC at "
                         "1792 GB/s, 4000 AI TOPS = FP4 with sparsity, halved here); 128 MB L2 from deviceQuery "
                         "reports; other dense rates are not stated")
GB10 = _sku("DGX Spark (GB10)", sms=48, mem_gib=128, bw=273 * GBps, l2=None, names=("NVIDIA GB10",),
            peaks={e2m1: 500.0}, provenance=V,
            cite="NVIDIA DGX Spark product page (128 GB LPDDR5x unified memory at 273 GB/s, 1 PFLOP FP4 with "
                 "sparsity, halved here); 48 SMs (6144 CUDA cores) from deviceQuery reports")

#: Parts per target arch. A target without parts (Rubin) has an empty tuple.
BY_ARCH: dict[str, tuple[SkuFacts, ...]] = {
    "sm_75": (T4, RTX_2080_TI),
    "sm_80": (A100_40GB, A100_80GB_SXM, A100_80GB_PCIE),
    "sm_86": (A10, RTX_3090),
    "sm_87": (ORIN, AGX_ORIN_64GB),
    "sm_89": (L40S, L20, RTX_4090),
    "sm_90a": (H100_SXM, H100_PCIE, H200_SXM, H20, H800),
    "sm_100a": (B200, GB200),
    "sm_103a": (B300, GB300),
    "sm_107a": (),
    "sm_110a": (THOR,),
    "sm_120a": (RTX_5090, RTX_PRO_6000),
    "sm_121a": (GB10,),
}


def all_skus() -> tuple[SkuFacts, ...]:
    return tuple(s for parts in BY_ARCH.values() for s in parts)
