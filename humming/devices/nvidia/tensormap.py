"""Tensor maps for TMA (cp.async.bulk.tensor), encoded on the host by the driver (cuTensorMapEncodeTiled through
``cuda.bindings.driver``) and passed to a kernel as a 128-byte ``__grid_constant__`` parameter.

A map names one tensor at one address, so it is encoded per call; encodings are cached by everything they
depend on (address, shape, row stride, dtype, box), which makes a repeated call (a layer run again, a CUDA-graph
capture) cost a dictionary lookup. The driver checks the map against the device's rules (16-byte aligned
address, row strides a multiple of 16 bytes, boxes of at most 256 elements a side) and refuses what breaks them.
"""

from __future__ import annotations

import functools

import torch

from humming.errors import InvalidInputError, LaunchError

#: Elements along K a box of 16-bit activations spans: one 128-byte swizzle span (the wgmma tile's row).
ACTIVATION_BOX_K = 64


def activation_map(x2: torch.Tensor, box_rows: int) -> bytes:
    """The map of activations ``x2`` [M, K] (f16 or bf16, unit column stride) for boxes of 64 x ``box_rows``
    elements, 128-byte swizzled (the wgmma kernels' activation tile), reading zeros outside [M, K]."""
    if x2.dtype not in (torch.float16, torch.bfloat16) or x2.dim() != 2 or (x2.shape[1] > 1 and x2.stride(1) != 1):
        raise InvalidInputError(f"a tensor copy of activations takes a 2-D f16/bf16 tensor with unit column stride, "
                                f"not {x2.dtype} of shape {tuple(x2.shape)} and strides {x2.stride()}")
    m, k = x2.shape
    if not 1 <= box_rows <= 256:
        raise InvalidInputError(f"box_rows={box_rows}: a tensor copy's box has 1..256 rows")
    row_stride = x2.stride(0) if m > 1 else -(-k // 8) * 8  # one row: no second row to step to
    return _encode(x2.data_ptr(), m, k, row_stride, x2.dtype == torch.bfloat16, box_rows)


@functools.lru_cache(maxsize=1024)
def _encode(address: int, m: int, k: int, row_stride: int, bf16: bool, box_rows: int) -> bytes:
    from cuda.bindings import driver as drv

    dtype = (drv.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 if bf16
             else drv.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16)
    u64, u32 = drv.cuuint64_t, drv.cuuint32_t
    err, tmap = drv.cuTensorMapEncodeTiled(
        dtype, 2, address, [u64(k), u64(m)], [u64(row_stride * 2)], [u32(ACTIVATION_BOX_K), u32(box_rows)],
        [u32(1), u32(1)],
        drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)  # NONE: zeros outside the tensor
    if err != drv.CUresult.CUDA_SUCCESS:
        raise LaunchError(f"cuTensorMapEncodeTiled refused the activations (address {address:#x}, {m} x {k}, row "
                          f"stride {row_stride} elements, box 64 x {box_rows}): {err}")
    return b"".join(int(word).to_bytes(8, "little") for word in tmap.opaque)
