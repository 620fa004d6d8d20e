"""humming's conformance suite: what works on a device or target, what does not, and what its plugin claims wrongly.

Run it as ``humming conformance`` (humming.cli.conformance), ``python -m conformance`` or ``pytest conformance/``.
Modules: ``cases`` (the case list), ``runner`` (statuses, the Suite, running levels), ``levels/`` (declare, compile,
numeric, perf), ``probes`` (instruction probes, batched), ``sass`` (disassembly and the MMA opcode map),
``gemm_api`` (how a case reaches humming's GEMM), ``worker`` (device cases in a child process), ``report``
(JSON and markdown). The vendor guide is docs/plugins.md, section 9.
"""
