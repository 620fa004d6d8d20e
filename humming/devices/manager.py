"""The plugin manager: loads device plugins (entry-point group ``humming.devices``), validates them, and answers.

Each plugin is loaded and called on its own, so a broken one (import error, a hook that raises, a capability
that fails validation, a contract-version mismatch) is recorded as a PluginStatus with the reason and never
breaks listing. ``HUMMING_STRICT_PLUGINS=1`` (or ``strict=True``) makes any such problem raise PluginError.

Device claims are decided by explicit specificity, never by load order: every plugin may claim each RawDevice;
the highest specificity wins. A tie at the top leaves the device unclaimed, with the tie as its reason (strict
mode: a PluginError naming both plugins). A plugin may decline a device with a reason (DeviceDecline).

One name, one plugin: a second entry point (or registration in code) under a name already loaded is reported and
not loaded; humming's own entry points keep their names (``nvidia``, ``thead_ppu``) whatever sys.path order says.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import itertools
import os
import threading
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import pluggy

from humming import knobs
from humming.capabilities.model import DeviceCapabilities, MmaInstruction, Target, check_capabilities
from humming.devices import hookspecs
from humming.devices.claims import Declared, claim_problem, decide
from humming.devices.device import Device, DeviceDecline, DeviceMatch, RawDevice
from humming.devices.toolchain import Toolchain
from humming.errors import HummingError, InvalidInputError, PluginError, UnsupportedError

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
        self._declared: dict[tuple[str, str], Declared] | None = None
        self._devices: list[Device] | None = None
        self.unclaimed: list[RawDevice] = []
        self._unclaimed_why: dict[tuple[str, int], str] = {}  # (api, index) -> why no plugin has the device
        allow = knobs.plugins.get()
        if autoload and not knobs.disable_plugin_autoload.get():
            self._load_entry_points(allow)
        for name, plugin in plugins:
            if allow and name not in allow:
                continue
            self._register(name, plugin, "registered in code")
        for name in allow:  # a typo there would otherwise read as "no GPU visible"
            if name not in self._status:
                installed = sorted({ep.name for ep in importlib.metadata.entry_points(group=hookspecs.ENTRY_POINT_GROUP)}
                                   | {n for n, _ in plugins})
                status = self._status[name] = PluginStatus(name, origin="HUMMING_PLUGINS")
                self._problem(status, f"HUMMING_PLUGINS names {name!r}, but no plugin has that name (installed: "
                                      f"{', '.join(installed) or 'none'})")

    # ---- loading ----------------------------------------------------------------------------------
    def _problem(self, status: PluginStatus, reason: str, detail: str = "") -> None:
        status.fail(reason, detail)
        if self._strict:
            raise PluginError(status.name, reason + (f"\n{detail}" if detail else ""))

    def _load_entry_points(self, allow: tuple[str, ...]) -> None:
        def order(ep: importlib.metadata.EntryPoint) -> tuple[str, bool]:
            # humming's own entry point first under its name, so that a package reusing "nvidia" cannot replace the
            # built-in by coming earlier on sys.path; otherwise (the sort is stable) sys.path order.
            return ep.name, getattr(ep.dist, "name", None) != "humming"

        for ep in sorted(importlib.metadata.entry_points(group=hookspecs.ENTRY_POINT_GROUP), key=order):
            if allow and ep.name not in allow:
                continue
            origin = f"entry point {hookspecs.ENTRY_POINT_GROUP}:{ep.name} = {ep.value}"
            if ep.name in self._status:
                if self._status[ep.name].origin != origin:
                    self._name_taken(ep.name, origin)
                continue  # the same entry point again: the same distribution seen twice on sys.path
            try:
                plugin = ep.load()
            except Exception as exc:  # a vendor's import error must not break listing
                status = PluginStatus(ep.name, origin=origin)
                self._status[ep.name] = status
                self._problem(status, f"import failed: {type(exc).__name__}: {exc}", traceback.format_exc())
                continue
            self._register(ep.name, plugin, origin)

    def _name_taken(self, name: str, origin: str) -> None:
        """Report a plugin whose name is already used, under a name of its own; the first keeps name and status."""
        first = self._status[name].origin
        key = next(f"{name}#{n}" for n in itertools.count(2) if f"{name}#{n}" not in self._status)
        status = self._status[key] = PluginStatus(key, origin=origin)
        by = first if first.startswith("entry point") else f"the plugin {first}"
        self._problem(status, f"name {name!r} is already used by {by}, so this plugin was not loaded; "
                              "give it a name of its own")

    def _register(self, name: str, plugin: object, origin: str) -> None:
        if name in self._status:
            self._name_taken(name, origin)
            return
        status = PluginStatus(name, origin=origin)
        self._status[name] = status
        try:
            self._pm.register(plugin, name=name)
        except Exception as exc:
            self._problem(status, f"registration failed: {exc}", traceback.format_exc())
            return
        # pluggy's check_pending is global; check this plugin alone so the report names it.
        known = set(iter_hook_names())
        # Only functions can be hooks: `import humming_acme.tables` binds a module named humming_acme, and a vendor
        # may keep a humming_... constant; neither is a misspelt hook.
        names = [n for n in dir(plugin) if n.startswith("humming_") and _function_like(getattr(plugin, n, None))]
        unknown = [n for n in names if n not in known]
        if unknown:
            self._problem(status, f"implements unknown hooks {unknown}; known: {sorted(known)}")
        unmarked = [n for n in names if n in known and not self._impls(n, name)]
        if unmarked:
            self._problem(status, f"{unmarked} are not marked with @hookimpl (humming.devices.hookspecs.hookimpl), "
                                  "so pluggy ignores them")
        implemented = bool(self._impls("humming_api_version", name))
        versions = self._call_one(name, "humming_api_version", {})
        if not implemented:
            if status.ok:  # an unmarked humming_api_version is reported above already
                self._problem(status, "does not implement humming_api_version; add one that returns "
                                      f"humming.devices.hookspecs.API_VERSION ({hookspecs.API_VERSION})")
            return
        if not versions:
            return  # the hook raised: reported by _call_one
        version, ours = versions[0], hookspecs.API_VERSION
        # type(...) is int: True == 1 and would pass, as would 1.0; '1' would print as 1 without the repr.
        if type(version) is not int:
            got = "None" if version is None else f"{version!r} (a {type(version).__name__})"
            self._problem(status, f"humming_api_version returned {got}; it must return an int, the plugin API "
                                  f"version the plugin was written for; this humming implements {ours}")
            return
        status.api_version = version
        if version != ours:
            self._problem(status, f"written for plugin API {version!r}; this humming implements {ours}")

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
    def _catalog(self) -> dict[tuple[str, str], Declared]:
        with self._lock:
            if self._declared is not None:
                return self._declared
            declared: dict[tuple[str, str], Declared] = {}
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
                    try:
                        problems = check_capabilities(caps)
                    except Exception as exc:  # a table odd enough to defeat the checks still breaks only its plugin
                        problems = [f"validation raised {type(exc).__name__}: {exc}"]
                    if problems:
                        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
                        self._problem(status, f"target {_arch_of(caps)}: capability fails validation: "
                                              f"{problems[0]}{more}", "\n".join(problems))
                        continue
                    key = (caps.target.vendor, caps.target.arch)
                    if key in declared:
                        self._problem(status, f"target {caps.target} is already declared by plugin "
                                              f"{declared[key].plugin!r}")
                        continue
                    declared[key] = Declared(name, caps)
                    status.targets.append(caps.target.arch)
            self._declared = declared
            return declared

    def catalog(self) -> list[DeviceCapabilities]:
        """Every valid target of every loaded plugin, in plugin then declaration order."""
        return [d.capabilities for d in self._catalog().values()]

    def capabilities(self, arch: str, vendor: str | None = None) -> DeviceCapabilities:
        """The catalog entry for ``arch`` (and ``vendor`` when several vendors use the same name)."""
        catalog = self._catalog()
        found = [d.capabilities for (v, a), d in catalog.items() if a == arch and vendor in (None, v)]
        if len(found) == 1:
            return found[0]
        if found:
            vendors = [c.target.vendor for c in found]
            raise InvalidInputError(f"target {arch!r} is declared by several vendors ({', '.join(vendors)}); pick "
                                    f"one: vendor={vendors[0]!r} in Python, --vendor {vendors[0]} on the command line")
        vendors = sorted({v for v, _ in catalog})
        if vendor is not None and vendor not in vendors:
            raise InvalidInputError(f"no loaded plugin declares targets of vendor {vendor!r}; vendors: "
                                    f"{', '.join(vendors) or '(none: no plugin loaded)'}")
        if vendor is not None:
            others = [v for v, a in catalog if a == arch]
            by = f" (it is declared by vendor {', '.join(map(repr, others))})" if others else ""
            raise InvalidInputError(f"vendor {vendor!r} declares no target {arch!r}{by}; {vendor}'s targets: "
                                    f"{', '.join(a for v, a in catalog if v == vendor)}")
        known = ", ".join(dict.fromkeys(a for _, a in catalog))  # each name once, though several vendors use it
        raise InvalidInputError(f"unknown target {arch!r}; declared targets: {known or '(none: no plugin loaded)'}")

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
            devices: list[Device] = []
            self.unclaimed, self._unclaimed_why = [], {}
            for raw in self.raw_devices():
                claims, declines = self._claims(raw)
                # asked after the claims: a plugin whose claim was refused is no longer ok
                asked = [i.plugin_name for i in self._impls("humming_probe_device") if self._status[i.plugin_name].ok]
                decided = decide(raw, claims, declines, asked, self._strict)
                if isinstance(decided, Device):
                    devices.append(decided)
                else:
                    self._unclaim(raw, decided)
            self._devices = devices
            return list(devices)

    def _claims(self, raw: RawDevice) -> tuple[list[tuple[str, DeviceMatch]], list[str]]:
        """Every valid claim on ``raw``, and the plugins' reasons for not claiming it (declines, refused claims)."""
        catalog = self._catalog()
        claims: list[tuple[str, DeviceMatch]] = []
        reasons: list[str] = []
        for plugin, match in self._call_each("humming_probe_device", {"raw": raw, "env": self._env}):
            if match is None:
                continue
            if isinstance(match, DeviceDecline):
                reasons.append(f"{plugin}: {match.reason}")
                continue
            problem = claim_problem(plugin, raw, match, catalog)
            if problem:
                self._problem(self._status[plugin], problem)
                reasons.append(f"{plugin}: {problem}")
                continue
            claims.append((plugin, match))
        return claims, reasons

    def _unclaim(self, raw: RawDevice, reason: str) -> None:
        self.unclaimed.append(raw)
        self._unclaimed_why[(raw.api, raw.index)] = reason

    def unclaimed_reason(self, raw: RawDevice) -> str:
        """Why ``raw`` (an entry of ``unclaimed``) has no plugin: the plugins' declines, refused claims, or a tie."""
        self.devices()
        reason = self._unclaimed_why.get((raw.api, raw.index))
        if reason is None:
            raise InvalidInputError(f"device {raw.index} ({raw.name!r}) is not among the unclaimed devices "
                                    f"({', '.join(str(r.index) for r in self.unclaimed) or 'none'})")
        return reason

    def device(self, index: int) -> Device:
        for d in self.devices():
            if d.index == index:
                return d
        for raw in self.unclaimed:
            if raw.index == index:
                raise InvalidInputError(f"device {index} ({raw.name!r}) is present but unclaimed: "
                                        f"{self.unclaimed_reason(raw)}")
        present = ", ".join(str(d.index) for d in self.devices()) or "none"
        raise InvalidInputError(f"no device with index {index}; present: {present}")

    def current_device(self) -> Device:
        import torch

        if not torch.cuda.is_available():
            raise UnsupportedError("no CUDA device is visible to torch", missing=["a CUDA device"])
        return self.device(torch.cuda.current_device())

    # ---- what plugins supply ----------------------------------------------------------------------
    def _supplied(self, hook: str, target: Target, **kwargs: Any) -> Any:
        """The declaring plugin's answer to a supply hook (toolchain, tuner, probe), or None.

        A HummingError from the hook reaches the caller as it is (InvalidInputError for the caller's instruction);
        any other exception is raised as a PluginError chained to it. Neither marks the plugin broken: the hook
        failed for one question, and the plugin's devices and other targets stay usable.
        """
        plugin = self.plugin_of(target)
        kwargs = {"target": target, **kwargs}
        for impl in self._impls(hook, plugin):
            try:
                answer = impl.function(**{k: kwargs[k] for k in impl.argnames})
            except HummingError:
                raise
            except Exception as exc:
                reason = f"hook {hook} raised {type(exc).__name__}: {exc} (asked for {target})"
                raise PluginError(plugin, reason) from exc
            if answer is not None:
                return answer
        return None

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


def _function_like(value: object) -> bool:
    """A value that could be a hook implementation: callable, and no class (modules are not callable)."""
    return callable(value) and not inspect.isclass(value)


def _arch_of(caps: DeviceCapabilities) -> str:
    """The arch name for messages about a capability that may be malformed (its target not a Target)."""
    arch = getattr(caps.target, "arch", None)
    return arch if isinstance(arch, str) else repr(caps.target)


def iter_hook_names() -> Iterable[str]:
    return sorted(n for n in dir(hookspecs) if n.startswith("humming_"))

