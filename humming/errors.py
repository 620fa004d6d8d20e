"""The HummingError tree: every error a user can see, each saying the value, the rule and the way out."""

from __future__ import annotations

from typing import Sequence


class HummingError(Exception):
    """Base of every error humming raises on purpose."""

    #: True for errors that mean humming itself is wrong (a bug to report), not the caller.
    internal: bool = False

    def __reduce__(self) -> tuple[object, ...]:
        # Rebuilt without __init__, whose arguments some subclasses format into the text (PluginError's plugin and
        # reason, InternalError's suffix): the same type, text and fields across a process (compile workers).
        return (_rebuild, (type(self), self.args, dict(vars(self))))


def _rebuild(cls: type[HummingError], args: tuple[object, ...], fields: dict[str, object]) -> HummingError:
    exc = cls.__new__(cls)
    exc.args = args
    vars(exc).update(fields)
    return exc


class InvalidInputError(HummingError, ValueError):
    """The caller passed a value that breaks a documented rule (dtype, shape, layout, field)."""


class UnsupportedError(HummingError):
    """The request is valid, but the device lacks a capability it needs.

    ``missing`` names the capabilities that are absent; ``alternatives`` says what would work instead.
    """

    def __init__(self, message: str, *, missing: Sequence[str] = (), alternatives: Sequence[str] = ()) -> None:
        self.missing = tuple(missing)
        self.alternatives = tuple(alternatives)
        text = message
        if self.missing:
            text += "\n  missing: " + "; ".join(self.missing)
        if self.alternatives:
            text += "\n  would work instead: " + "; ".join(self.alternatives)
        super().__init__(text)


class CompileError(HummingError):
    """A kernel failed to compile. Carries the compiler log, the saved source path, a repro line and the spec."""

    def __init__(self, message: str, *, log: str = "", source_path: str | None = None, repro: str | None = None,
                 spec: object | None = None) -> None:
        self.log = log
        self.source_path = source_path
        self.repro = repro
        self.spec = spec  # the KernelSpec whose unit failed, when the unit came from one
        text = message
        if source_path:
            text += f"\n  source: {source_path}"
        if repro:
            text += f"\n  repro: {repro}"
        if log:
            text += "\n  compiler log:\n" + "\n".join("    " + line for line in log.strip().splitlines())
        super().__init__(text)


class LaunchError(HummingError):
    """A kernel could not be loaded or launched on the device."""


class PluginError(HummingError):
    """A device plugin is broken: it failed to import, a hook raised, or what it declared is invalid."""

    def __init__(self, plugin: str, reason: str) -> None:
        self.plugin = plugin
        self.reason = reason
        super().__init__(f"device plugin {plugin!r}: {reason}")


class InternalError(HummingError):
    """A humming bug: an invariant the code relies on did not hold."""

    internal = True

    def __init__(self, message: str) -> None:
        super().__init__(f"{message} (this is a humming bug, please report it)")
