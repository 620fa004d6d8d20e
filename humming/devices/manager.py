"""The plugin manager: loads device plugins (entry-point group ``humming.devices``), validates them, and answers.

Each plugin is loaded and called on its own, so a broken one (import error, a hook that raises, a capability
that fails validation, a contract-version mismatch) is recorded as a PluginStatus with the reason and never
breaks listing. ``HUMMING_STRICT_PLUGINS=1`` (or ``strict=True``) makes any such problem raise PluginError.

Device claims are decided by explicit specificity, never by load order: every plugin may claim each RawDevice;
the highest specificity wins, and a tie at the top is a PluginError naming both plugins.
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import pluggy

from humming import knobs
from humming.capabilities.model import DeviceCapabilities, MmaInstruction, Target, check_capabilities
from humming.devices import hookspecs
from humming.devices.device import Device, DeviceMatch, RawDevice
from humming.devices.toolchain import Toolchain
from humming.errors import InvalidInputError, PluginError, UnsupportedError

if TYPE_CHECKING:  # for annotations only: importing the kernel layer here would load it with the manager
    from humming.core.plan import GemmTuner


@dataclass
class PluginStatus:
    """What happened when humming loaded one plugin."""

    name: str
    ok: bool = True
    reason: str = ""  # one line: why it is broken (empty when ok)
    detail: str = ""  # the traceback or the list of validation problems
    origin: str = ""  # "entry point humming.devices:nvidia = humming.devices.nvidia" or "registered in code"
    api_version: int | None = None
    targets: list[str] = field(default_factory=list)  # arch names it declared (valid ones)
    problems: list[str] = field(default_factory=list)  # every problem found, in order

    def fail(self, reason: str, detail: str = "") -> None:
        self.problems.append(reason)
        if self.ok:
            self.ok, self.reason, self.detail = False, reason, detail
        elif detail:
            self.detail += "\n" + detail

    def to_json(self) -> dict:
        return {"name": self.name, "ok": self.ok, "reason": self.reason, "origin": self.origin,
                "api_version": self.api_version, "targets": self.targets, "problems": self.problems}


@dataclass(frozen=True)
class _Declared:
    plugin: str
    capabilities: DeviceCapabilities


class DeviceManager:
    """Loads plugins once and answers catalog, device, toolchain and probe questions.

    :param autoload: load the entry points of group ``humming.devices`` (subject to HUMMING_PLUGINS and
        HUMMING_DISABLE_PLUGIN_AUTOLOAD).
    :param plugins: extra ``(name, module_or_object)`` pairs to register, as a vendor's test would.
    :param raw_devices: simulated driver answers; when given, no plugin's enumerate hook is called.
    :param env: the environment plugins see in ``humming_probe_device`` (default: os.environ).
    :param strict: raise PluginError on any plugin problem (default: HUMMING_STRICT_PLUGINS).
    """

    def __init__(self, *, autoload: bool = True, plugins: Sequence[tuple[str, object]] = (),
                 raw_devices: Sequence[RawDevice] | None = None, env: Mapping[str, str] | None = None,
                 strict: bool | None = None) -> None:
        self._strict = knobs.strict_plugins.get() if strict is None else strict
        self._env = dict(os.environ if env is None else env)
        self._raw_override = None if raw_devices is None else tuple(raw_devices)
        self._pm = pluggy.PluginManager(hookspecs.PROJECT)
        self._pm.add_hookspecs(hookspecs)
        if knobs.trace_plugins.get():
            self._pm.trace.root.setwriter(lambda text: print(f"[humming plugins] {text}", end=""))
            self._pm.enable_tracing()
        self._status: dict[str, PluginStatus] = {}
        self._lock = threading.RLock()
        self._declared: dict[tuple[str, str], _Declared] | None = None
        self._devices: list[Device] | None = None
        self.unclaimed: list[RawDevice] = []
        allow = knobs.plugins.get()
        if autoload and not knobs.disable_plugin_autoload.get():
            self._load_entry_points(allow)
        for name, plugin in plugins:
            if allow and name not in allow:
                continue
            self._register(name, plugin, "registered in code")

    # ---- loading ----------------------------------------------------------------------------------
    def _problem(self, status: PluginStatus, reason: str, detail: str = "") -> None:
        status.fail(reason, detail)
        if self._strict:
            raise PluginError(status.name, reason + (f"\n{detail}" if detail else ""))

    def _load_entry_points(self, allow: tuple[str, ...]) -> None:
        for ep in sorted(importlib.metadata.entry_points(group=hookspecs.ENTRY_POINT_GROUP), key=lambda e: e.name):
            if allow and ep.name not in allow:
                continue
            if ep.name in self._status:
                continue  # the same distribution seen twice on sys.path
            origin = f"entry point {hookspecs.ENTRY_POINT_GROUP}:{ep.name} = {ep.value}"
            try:
                plugin = ep.load()
            except Exception as exc:  # a vendor's import error must not break listing
                status = PluginStatus(ep.name, origin=origin)
                self._status[ep.name] = status
                self._problem(status, f"import failed: {type(exc).__name__}: {exc}", traceback.format_exc())
                continue
            self._register(ep.name, plugin, origin)

    def _register(self, name: str, plugin: object, origin: str) -> None:
        status = PluginStatus(name, origin=origin)
        self._status[name] = status
        try:
            self._pm.register(plugin, name=name)
        except Exception as exc:
            self._problem(status, f"registration failed: {exc}", traceback.format_exc())
            return
        # pluggy's check_pending is global; check this plugin alone so the report names it.
        known = set(iter_hook_names())
        names = [n for n in dir(plugin) if n.startswith("humming_")]
        unknown = [n for n in names if n not in known]
        if unknown:
            self._problem(status, f"implements unknown hooks {unknown}; known: {sorted(known)}")
        unmarked = [n for n in names if n in known and not self._impls(n, name)]
        if unmarked:
            self._problem(status, f"{unmarked} are not marked with @hookimpl (humming.devices.hookspecs.hookimpl), "
                                  "so pluggy ignores them")
        versions = self._call_one(name, "humming_api_version", {})
        version = versions[0] if versions else None
        status.api_version = version
        if version is None and status.ok:
            self._problem(status, "does not implement humming_api_version")
        elif version is not None and version != hookspecs.API_VERSION:
            self._problem(status, f"written for plugin API {version}; this humming implements {hookspecs.API_VERSION}")

    def _impls(self, hook: str, plugin_name: str | None = None) -> list[pluggy.HookImpl]:
        caller = getattr(self._pm.hook, hook)
        impls = [i for i in caller.get_hookimpls() if plugin_name is None or i.plugin_name == plugin_name]
        return sorted(impls, key=lambda i: i.plugin_name)

    def _call_one(self, plugin_name: str, hook: str, kwargs: dict[str, Any]) -> list[Any]:
        """Call one plugin's implementation of a hook; a raise is recorded against that plugin."""
        results = []
        for impl in self._impls(hook, plugin_name):
            status = self._status[impl.plugin_name]
            try:
                results.append(impl.function(**{k: kwargs[k] for k in impl.argnames}))
            except PluginError:
                raise
            except Exception as exc:
                self._problem(status, f"hook {hook} raised {type(exc).__name__}: {exc}", traceback.format_exc())
        return results

    def _call_each(self, hook: str, kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
        out = []
        for impl in self._impls(hook):
            if not self._status[impl.plugin_name].ok:
                continue  # a plugin already found broken is not asked again
            for value in self._call_one(impl.plugin_name, hook, kwargs):
                out.append((impl.plugin_name, value))
        return out

    # ---- the catalog ------------------------------------------------------------------------------
    def _catalog(self) -> dict[tuple[str, str], _Declared]:
        with self._lock:
            if self._declared is not None:
                return self._declared
            declared: dict[tuple[str, str], _Declared] = {}
            for impl in self._impls("humming_declare_targets"):
                name = impl.plugin_name
                status = self._status[name]
                if not status.ok:
                    continue
                got: list[DeviceCapabilities] = []
                self._call_one(name, "humming_declare_targets", {"register": got.append})
                for caps in got:
                    if not isinstance(caps, DeviceCapabilities):
                        self._problem(status, f"humming_declare_targets registered a {type(caps).__name__}, "
                                              "expected DeviceCapabilities")
                        continue
                    problems = check_capabilities(caps)
                    if problems:
                        self._problem(status, f"target {caps.target.arch}: capability fails validation: "
                                              f"{problems[0]}", "\n".join(problems))
                        continue
                    key = (caps.target.vendor, caps.target.arch)
                    if key in declared:
                        self._problem(status, f"target {caps.target} is already declared by plugin "
                                              f"{declared[key].plugin!r}")
                        continue
                    declared[key] = _Declared(name, caps)
                    status.targets.append(caps.target.arch)
            self._declared = declared
            return declared

    def catalog(self) -> list[DeviceCapabilities]:
        """Every valid target of every loaded plugin, in plugin then declaration order."""
        return [d.capabilities for d in self._catalog().values()]

    def capabilities(self, arch: str, vendor: str | None = None) -> DeviceCapabilities:
        """The catalog entry for ``arch`` (and ``vendor`` when several vendors use the same name)."""
        found = [d.capabilities for (v, a), d in self._catalog().items() if a == arch and vendor in (None, v)]
        if len(found) == 1:
            return found[0]
        if not found:
            known = ", ".join(a for (_, a) in self._catalog())
            raise InvalidInputError(f"unknown target {arch!r}; declared targets: {known or '(none: no plugin loaded)'}")
        raise InvalidInputError(f"target {arch!r} is declared by several vendors "
                                f"({', '.join(c.target.vendor for c in found)}); pass vendor=")

    def plugin_of(self, target: Target) -> str:
        declared = self._catalog().get((target.vendor, target.arch))
        if declared is None:
            raise InvalidInputError(f"target {target} is not declared by any loaded plugin")
        return declared.plugin

    # ---- devices ----------------------------------------------------------------------------------
    def raw_devices(self) -> list[RawDevice]:
        if self._raw_override is not None:
            return list(self._raw_override)
        seen: list[RawDevice] = []
        for impl in self._impls("humming_enumerate_devices"):
            if self._status[impl.plugin_name].ok:
                self._call_one(impl.plugin_name, "humming_enumerate_devices", {"register": seen.append})
        return seen

    def devices(self) -> list[Device]:
        """The present devices, each claimed by the most specific plugin. Empty without a GPU."""
        with self._lock:
            if self._devices is not None:
                return list(self._devices)
            catalog = self._catalog()
            devices: list[Device] = []
            self.unclaimed = []
            for raw in self.raw_devices():
                claims: list[tuple[str, DeviceMatch]] = []
                for plugin, match in self._call_each("humming_probe_device", {"raw": raw, "env": self._env}):
                    if match is None:
                        continue
                    if not isinstance(match, DeviceMatch):
                        self._problem(self._status[plugin], f"humming_probe_device returned a {type(match).__name__}, "
                                                            "expected DeviceMatch or None")
                        continue
                    key = (match.capabilities.target.vendor, match.capabilities.target.arch)
                    if key not in catalog:
                        self._problem(self._status[plugin], f"claimed device {raw.name!r} as {match.capabilities.target}, "
                                                            "a target it did not declare")
                        continue
                    claims.append((plugin, match))
                if not claims:
                    self.unclaimed.append(raw)
                    continue
                claims.sort(key=lambda c: -c[1].specificity)
                if len(claims) > 1 and claims[0][1].specificity == claims[1][1].specificity:
                    (p1, m1), (p2, m2) = claims[0], claims[1]
                    raise PluginError(f"{p1}, {p2}", f"both claim device {raw.index} ({raw.name!r}) with "
                                      f"specificity {m1.specificity} ({m1.evidence or 'no evidence given'} / "
                                      f"{m2.evidence or 'no evidence given'}); one of them must be more specific")
                plugin, match = claims[0]
                notes = match.notes
                if len(claims) > 1:
                    others = ", ".join(f"{p} ({m.specificity})" for p, m in claims[1:])
                    notes = notes + (f"claimed by {plugin} at specificity {match.specificity} over {others}",)
                devices.append(Device(index=raw.index, name=raw.name, vendor=match.capabilities.target.vendor,
                                      plugin=plugin, capabilities=match.capabilities, raw=raw, sku=match.sku,
                                      evidence=match.evidence, notes=notes))
            self._devices = devices
            return list(devices)

    def device(self, index: int) -> Device:
        for d in self.devices():
            if d.index == index:
                return d
        present = ", ".join(str(d.index) for d in self.devices()) or "none"
        raise InvalidInputError(f"no device with index {index}; present: {present}")

    def current_device(self) -> Device:
        import torch

        if not torch.cuda.is_available():
            raise UnsupportedError("no CUDA device is visible to torch", missing=["a CUDA device"])
        return self.device(torch.cuda.current_device())

    # ---- what plugins supply ----------------------------------------------------------------------
    def _supplied(self, hook: str, target: Target, **kwargs: Any) -> Any:
        plugin = self.plugin_of(target)
        results = [r for r in self._call_one(plugin, hook, {"target": target, **kwargs}) if r is not None]
        return results[0] if results else None

    def toolchain(self, target: Target) -> Toolchain:
        """The compiler the declaring plugin supplies for ``target``."""
        chain = self._supplied("humming_toolchain", target)
        if chain is None:
            raise UnsupportedError(f"plugin {self.plugin_of(target)!r} supplies no compiler for {target}",
                                   missing=[f"a toolchain for {target}"])
        return chain

    def tuner(self, target: Target) -> GemmTuner | None:
        return self._supplied("humming_tuner", target)

    def instruction_probe(self, instruction: MmaInstruction, target: Target) -> str | None:
        return self._supplied("humming_instruction_probe", target, instruction=instruction)

    def statuses(self) -> list[PluginStatus]:
        self._catalog()
        return [self._status[n] for n in sorted(self._status)]


_default: DeviceManager | None = None
_default_lock = threading.Lock()


def get_manager() -> DeviceManager:
    """The process-wide manager, created on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = DeviceManager()
        return _default


def reset_manager() -> None:
    """Forget the process-wide manager (tests; after installing a plugin)."""
    global _default
    with _default_lock:
        _default = None


def iter_hook_names() -> Iterable[str]:
    return sorted(n for n in dir(hookspecs) if n.startswith("humming_"))

