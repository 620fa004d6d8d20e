"""conformance.sass.mma_loop on hand-written SASS: the smallest loop holding the most MMAs."""

from __future__ import annotations

from conformance.sass import mma_loop


def _sass(body: list[str]) -> str:
    rows, addr = [], 0
    for item in body:
        if item.endswith(":"):
            rows.append(item)
        else:
            rows.append(f"        /*{addr:04x}*/                   {item} ;")
            addr += 16
    return "\n".join(rows)


def test_the_inner_loop_with_the_mmas_is_chosen_over_the_outer_one_and_an_mma_free_loop() -> None:
    sass = _sass([
        "MOV R1, c[0x0][0x28]",
        ".L_x_1:",  # outer loop
        "IADD3 R2, R2, 0x1, RZ",
        ".L_x_2:",  # the k-loop
        "LDS.128 R4, [R3]",
        "R2UR UR4, R6",
        "HGMMA.64x64x16.F32.BF16 R24, R4, gdesc[UR4], R24",
        "HGMMA.64x64x16.F32.BF16 R40, R4, gdesc[UR4], R40",
        "@P0 BRA `(.L_x_2)",
        ".L_x_3:",  # a loop without MMAs
        "STG.E [R8], R24",
        "@P1 BRA `(.L_x_3)",
        "@P2 BRA `(.L_x_1)",
        "EXIT",
    ])
    loop = mma_loop(sass)
    assert [t.split()[0] for t in loop] == ["LDS.128", "R2UR", "HGMMA.64x64x16.F32.BF16", "HGMMA.64x64x16.F32.BF16",
                                           "BRA"]


def test_no_loop_around_an_mma_gives_nothing() -> None:
    assert mma_loop(_sass(["HMMA.16816.F32 R4, R8, R12, R4", ".L_x_5:", "NOP", "@P0 BRA `(.L_x_5)"])) == []


def test_local_memory_is_counted_inside_the_mma_loop_only() -> None:
    from conformance.sass import _summarize_text, loop_spill_accesses

    sass = _sass([
        "STL [R1], R20",  # a spill before the loop: once per kernel
        ".L_x_1:",
        "LDL.64 R8, [R1+0x8]",
        "HMMA.16816.F32.BF16 R24, R4, R8, R24",
        "STL.128 [R1+0x10], R24",
        "@P0 BRA `(.L_x_1)",
        "LDL R2, [R1]",
        "EXIT",
    ])
    assert loop_spill_accesses(sass) == 2
    assert _summarize_text(sass)["loop_local"] == 2
