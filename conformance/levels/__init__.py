"""The four conformance levels, one module each, every one exposing ``run(suite) -> list[CaseResult]``.

- ``declare``: the capability table is self-consistent, and every declared MMA instruction compiles as a probe
  for its target (and, for PTX families, the SASS holds it natively);
- ``compile``: every kernel the selector would choose over the case list compiles, fits the limits, and its
  SASS holds the MMA family the capability promised;
- ``numeric`` (a device): each case against the CPU reference; every instruction probe run on the device;
- ``perf`` (a device): memory bandwidth, MMA throughput per dtype, and the GEMM table against that roofline.
"""
