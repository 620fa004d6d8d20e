"""KernelPlan: the chosen kernel twin, its parameter values and the launch (grid, block, smem, workspace).

A plugin's tuner returns one for a GemmProblem (``tuner.plan(problem, caps, sm_count)``); the op launches it, and
``humming explain`` prints ``plan.explain()``: which kernel, which tile, the grid, and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from humming.capabilities.model import DeviceCapabilities
from humming.core.codegen import KernelSpec
from humming.core.problem import GemmProblem


@dataclass(frozen=True)
class KernelPlan:
    """What to launch for one problem on one target."""

    problem: GemmProblem
    spec: KernelSpec
    grid: int  # CTAs (1-D)
    block: int  # threads per CTA
    smem: int  # dynamic shared memory bytes
    workspace_floats: int = 0  # f32 scratch the launch needs (split-tile partials; all-ones words if `sentinel`)
    counters: int = 0  # int32 counters the launch needs, zero on entry and on exit
    schedule: str = "data-parallel"  # "data-parallel" | "split-k" | "stream-k"
    reasons: tuple[str, ...] = field(default=())  # why this choice, one line each
    cooperative: bool = False  # every CTA resident at once: CTAs wait for others' partial tiles
    sentinel: bool = False  # the partial slots hold the all-ones "not written" word between launches (decode tiles)

    @property
    def cluster(self) -> int:
        """CTAs a thread-block cluster (consecutive CTAs of the 1-D grid) the launch takes: the kernel's; 1: none."""
        return self.spec.cluster_n

    def explain(self) -> str:
        lines = [self.problem.describe(), f"kernel: {self.spec.describe()}",
                 f"launch: {self.grid} CTAs x {self.block} threads, {self.smem} bytes of shared memory, {self.schedule}"
                 + (" (cooperative)" if self.cooperative else "")
                 + (f", clusters of {self.cluster} CTAs" if self.cluster > 1 else "")]
        needs = [r.what for r in self.spec.requirements()]
        if needs:  # the instruction it is built on first: what the kernel needs of the target
            lines.append("needs: " + "; ".join(needs))
        if self.workspace_floats or self.counters:
            lines.append(f"workspace: {self.workspace_floats * 4} bytes of partial sums, {self.counters} tile counters")
        lines += [f"why: {r}" for r in self.reasons]
        return "\n".join(lines)


class GemmTuner(Protocol):
    """What a plugin's ``humming_tuner`` hook returns: the tuning rules of one target."""

    def plan(self, problem: GemmProblem, caps: DeviceCapabilities, sm_count: int) -> KernelPlan:
        """The kernel and launch for ``problem`` on a device of ``caps`` with ``sm_count`` SMs."""
        ...

    def grid_sizes(self, plan: KernelPlan) -> tuple[int, int, int]:
        """(m_tiles, n_tiles, k_pad) the launch passes to the kernel (humming.ops.launch calls it)."""
        ...
