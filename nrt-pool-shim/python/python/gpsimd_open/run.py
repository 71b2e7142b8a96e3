"""``python -m gpsimd_open.run [--isa host|xtensa] [--cores N] SCRIPT [ARGS...]``: runs a
script written for torch_neuronx on the emulated Pool engine, unedited: the XLA device is
the CPU here, whether the script names it ``xm.xla_device()``, ``'xla'``, ``'xla:0'`` or
``torch.device('xla')`` (tensors and modules moved there, and tensors made there, land on
the CPU). Each op library the script loads is named once on stderr with the build that
serves its ops and its backend.

Inside the script ``import torch_neuronx``, ``from torch_neuronx.xla_impl import custom_op``
and ``import torch_xla.core.xla_model as xm`` resolve to stand-ins (said once on stderr):
``custom_op`` is :mod:`gpsimd_open.custom_op`; ``xm.xla_device()`` is the CPU;
``xm.mark_step()`` does nothing (each op already ran when it returned); ``xm.save`` is
``torch.save`` of the data moved to the CPU. A name the stand-ins lack raises an
AttributeError naming it.
"""
import argparse
import os
import runpy
import sys
import types

from . import _cores, custom_op

_BANNER = ("gpsimd_open.run: torch_neuronx, torch_neuronx.xla_impl.custom_op and torch_xla.core.xla_model are "
           "gpsimd_open's stand-ins: the XLA device is the CPU, custom ops run on the emulated Pool engine "
           "({isa} cores)")


def _module(name, doc, **attrs):
    m = types.ModuleType(name, doc)
    m.__dict__.update(attrs)
    offered = sorted(k for k in attrs if not k.startswith("_"))

    def missing(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise AttributeError(f"{name}.{attr} is not in gpsimd_open's stand-in (it offers: {', '.join(offered)})")

    m.__getattr__ = missing
    return m


def _torch():
    import torch

    return torch


def _xla_device(n=None, devkind=None):
    return _torch().device("cpu")


def _to_cpu(data):
    torch = _torch()
    if isinstance(data, torch.Tensor):
        return data.detach().cpu()
    if isinstance(data, dict):
        return type(data)((k, _to_cpu(v)) for k, v in data.items())
    if isinstance(data, (list, tuple)):
        return type(data)(_to_cpu(v) for v in data)
    return data


def _save(data, file_or_path, master_only=True, global_master=False):
    _torch().save(_to_cpu(data), file_or_path)


def _optimizer_step(optimizer, barrier=False, optimizer_args=None, groups=None, pin_layout=True):
    return optimizer.step(**(optimizer_args or {}))


def _noop(*args, **kwargs):
    return None


def _xla_is_cpu():
    """A torch function mode under which a device named ``xla`` (``'xla'``, ``'xla:N'``,
    ``torch.device('xla')``) is the CPU, in every torch call and tensor method (``.to``,
    factories' ``device=``; ``Module.to`` moves its tensors through ``Tensor.to``)."""
    torch = _torch()
    from torch.overrides import TorchFunctionMode

    def cpu(d):
        if isinstance(d, torch.device) and d.type == "xla":
            return torch.device("cpu")
        if isinstance(d, str) and (d == "xla" or d.startswith("xla:")):
            return "cpu"
        return d

    class XlaIsCpu(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if "device" in kwargs:
                kwargs = dict(kwargs, device=cpu(kwargs["device"]))
            return func(*(cpu(a) for a in args), **kwargs)

    return XlaIsCpu()


def install():
    """Puts the stand-in modules into ``sys.modules`` (replacing real ones, if imported)."""
    xla_model = _module(
        "torch_xla.core.xla_model",
        "gpsimd_open's stand-in for torch_xla.core.xla_model: the device is the CPU.",
        xla_device=_xla_device,
        mark_step=_noop,
        wait_device_ops=_noop,
        rendezvous=_noop,
        save=_save,
        optimizer_step=_optimizer_step,
        get_ordinal=lambda *a, **k: 0,
        get_local_ordinal=lambda *a, **k: 0,
        xrt_world_size=lambda *a, **k: 1,
        world_size=lambda *a, **k: 1,
        is_master_ordinal=lambda *a, **k: True,
        master_print=lambda *a, **k: print(*a),
    )
    core = _module("torch_xla.core", "gpsimd_open's stand-in for torch_xla.core.", xla_model=xla_model)
    torch_xla = _module("torch_xla", "gpsimd_open's stand-in for torch_xla.", core=core,
                        device=_xla_device, sync=_noop)
    xla_impl = _module("torch_neuronx.xla_impl", "gpsimd_open's stand-in for torch_neuronx.xla_impl.",
                       custom_op=custom_op)
    neuronx = _module("torch_neuronx", "gpsimd_open's stand-in for torch_neuronx.", xla_impl=xla_impl)
    for m in (xla_model, core, torch_xla, xla_impl, neuronx):
        m.__path__ = []  # a package, so that `import a.b.c` finds the parts in sys.modules
        sys.modules[m.__name__] = m
    sys.modules["torch_neuronx.xla_impl.custom_op"] = custom_op


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m gpsimd_open.run",
        description="Runs a torch_neuronx script on the emulated Pool engine.")
    ap.add_argument("--isa", choices=["host", "xtensa"], help="backend (default: GPSIMD_OPEN_ISA, else host)")
    ap.add_argument("--cores", type=int, help="core count of op calls that give none (1 to 8)")
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    if a.isa:
        os.environ[custom_op.ISA_VARIABLE] = a.isa
    isa = custom_op._isa(None) or "host"
    if a.cores is not None:
        try:
            _cores.set_cores(a.cores)
        except ValueError as e:
            ap.error(str(e))
    if not os.path.isfile(a.script):
        ap.error(f"{a.script}: no such script")
    install()
    custom_op._under_runner = True
    import importlib.util

    if importlib.util.find_spec("torch") is not None:
        # Entered for the script's whole run (never left: the process ends with it).
        _xla_is_cpu().__enter__()
    print(_BANNER.format(isa=isa), file=sys.stderr)
    sys.argv = [a.script] + a.args
    sys.path.insert(0, os.path.dirname(os.path.abspath(a.script)))
    runpy.run_path(a.script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
