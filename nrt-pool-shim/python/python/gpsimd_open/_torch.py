"""A loaded library's ops as torch 2 custom ops (``torch.library``), imported only where
torch is installed.

Each op ``NS::OP`` is defined once per process with its schema, and gets:

- a CPU kernel that runs it on the emulated engine of the newest library loaded for the
  namespace (tensors cross as NumPy views: one copy into device memory, none back);
- a fake kernel (``torch.library.register_fake``, so also meta tensors) whose output's
  dtype and shape are the op's own C++ shape function's answer, run where a call runs it
  (a core process, never this one) and kept per input signature, so a trace pays for it
  once. Sizes torch traces symbolically are made concrete (``int()`` of a ``SymInt``): the
  trace specializes on them and torch records that as a guard (docs/decisions.md, D107).

:func:`register_autograd` pairs a forward op with its backward op(s) the torch 2 way.
"""
import warnings

import numpy as np
import torch

from ._arrays import from_engine

_SCHEMA_KIND = {"torch::Tensor": "Tensor", "torch::Scalar": "Scalar", "double": "float", "int64_t": "int"}

# torch dtypes the Pool engine's tensors have (the descriptor's dtype codes), by the engine's
# names. torch's uint16/32/64 exist from torch 2.3 on.
_DEVICE_DTYPES = {
    "f32": torch.float32,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "i8": torch.int8,
    "u8": torch.uint8,
    "i16": torch.int16,
    "i32": torch.int32,
    "i64": torch.int64,
}
for _name, _attr in (("u16", "uint16"), ("u32", "uint32"), ("u64", "uint64")):
    if hasattr(torch, _attr):
        _DEVICE_DTYPES[_name] = getattr(torch, _attr)
_ENGINE_NAMES = {t: n for n, t in _DEVICE_DTYPES.items()}
_RULE = ("a Pool engine tensor is float32, float16, bfloat16, int8/16/32/64 or uint8/16/32/64 "
         "(the dtypes of AWS's custom op API)")

# torch.ops.NS.OP -> the gpsimd_open Op that serves it: the newest library loaded for the
# namespace. torch allows one kernel of each kind per op, so each op is defined and
# implemented once and its kernels look the Op up here.
_SERVING = {}
# The torch.library.Library fragment of each namespace (kept alive: its registrations last
# as long as it does).
_FRAGMENTS = {}


def register(lib):
    """Registers `lib`'s ops as ``torch.ops.NS.OP``; a later load of the namespace serves
    the same torch ops."""
    for name, op in lib.ops.items():
        qualified = f"{lib.namespace}::{name}"
        served = _SERVING.get(qualified)
        if served is not None and served.kinds != op.kinds:
            # torch keeps an op's schema for the life of the process.
            warnings.warn(f"torch.ops.{lib.namespace}.{name} takes ({', '.join(served.kinds)}) in this process; "
                          f"{lib.path} has it take ({', '.join(op.kinds)}), so torch.ops keeps serving the earlier "
                          f"library (custom_op.ops.{lib.namespace}.{name} serves the new one; restart Python "
                          "for torch.ops)", stacklevel=3)
            continue
        _SERVING[qualified] = op
        if served is not None:
            continue
        fragment = _FRAGMENTS.get(lib.namespace)
        if fragment is None:
            fragment = _FRAGMENTS[lib.namespace] = torch.library.Library(lib.namespace, "FRAGMENT")
        args = ", ".join(f"{_SCHEMA_KIND[k]} a{i}" for i, k in enumerate(op.kinds))
        try:
            fragment.define(f"{name}({args}) -> Tensor")
        except RuntimeError:
            continue  # defined outside this package (another loader in the process): left as is
        fragment.impl(name, _cpu_kernel(qualified), "CPU")
        torch.library.register_fake(qualified, _fake_kernel(qualified), lib=fragment)


def _engine_tensor(qualified, i, t):
    """A CPU tensor argument as the engine takes it: a NumPy view of its bytes (a copy only
    where torch's layout is not C-contiguous), bfloat16 as ("bf16", bits)."""
    name = _engine_dtype(qualified, i, t)
    if t.device.type != "cpu":
        raise RuntimeError(f"{qualified}: argument {i} is on {t.device}; the emulated Pool engine "
                           "takes CPU tensors (move it with .cpu())")
    t = t.detach()
    if t.dim() == 0:
        # A descriptor's rank counts at least one dimension (D49: NumPy's 0-d arrays alike).
        t = t.reshape(1)
    t = t.resolve_conj().resolve_neg().contiguous()
    if name == "bf16":
        return ("bf16", t.view(torch.int16).numpy().view(np.uint16))
    return t.numpy()


def _engine_dtype(qualified, i, t):
    name = _ENGINE_NAMES.get(t.dtype)
    if name is None:
        raise TypeError(f"{qualified}: argument {i} is a {t.dtype} tensor; {_RULE}")
    return name


def _cpu_kernel(qualified):
    def cpu(*args):
        op = _SERVING[qualified]
        engine_args = [_engine_tensor(qualified, i, a) if isinstance(a, torch.Tensor) else a
                       for i, a in enumerate(args)]
        (data, dtype, shape), _ = op._launch(engine_args)
        # The engine's output array owns its bytes: torch shares them (no copy back).
        out = torch.from_numpy(from_engine((data, "i16" if dtype == "bf16" else dtype, shape)))
        return out.view(torch.bfloat16) if dtype == "bf16" else out

    cpu.__name__ = f"{qualified.replace('::', '_')}_cpu"
    return cpu


# "NS::OP" -> a fake kernel the user gave (register_fake), used instead of the shape function.
_USER_FAKES = {}
# Ops whose trace was said to specialize (once a process each).
_SPECIALIZED = set()


def register_fake(op, fake):
    """Gives op `op` a fake kernel of the user's (``fake(*args) -> Tensor``, as for
    ``torch.library.register_fake``) in place of its C++ shape function: for sizes that
    must stay symbolic. ``None`` goes back to the shape function."""
    qualified = _qualified(op, "op")
    if fake is None:
        _USER_FAKES.pop(qualified, None)
    elif callable(fake):
        _USER_FAKES[qualified] = fake
    else:
        raise TypeError(f"register_fake: {fake!r} is not a function")


def _concrete(value):
    """A size or number made concrete: a symbolic one specializes the trace (a guard)."""
    if isinstance(value, torch.SymFloat):
        return float(value)
    if isinstance(value, torch.SymInt):
        return int(value)
    if isinstance(value, torch.SymBool):
        return bool(value)
    return value


def _fake_kernel(qualified):
    def fake(*args):
        given = _USER_FAKES.get(qualified)
        if given is not None:
            return given(*args)
        op = _SERVING[qualified]
        # One pass over the arguments: the signature the shape function is asked for, and
        # whether any size or number is symbolic (the trace then specializes on it).
        device = None
        signature = []
        symbolic = False
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                device = device or a.device
                symbolic = symbolic or any(isinstance(d, torch.SymInt) for d in a.shape)
                # 0-d as [1], as the CPU kernel passes it.
                shape = [_concrete(d) for d in a.shape] or [1]
                signature.append((_engine_dtype(qualified, i, a), tuple(shape)))
            else:
                symbolic = symbolic or isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool))
                signature.append(_concrete(a))
        if symbolic and qualified not in _SPECIALIZED:
            _SPECIALIZED.add(qualified)
            warnings.warn(f"{qualified}: its C++ shape function takes concrete sizes, so this trace "
                          "specializes on its arguments' sizes (a guard on each; a new size recompiles); "
                          "gpsimd_open.custom_op.register_fake gives it a symbolic fake kernel instead",
                          stacklevel=2)
        dtype, shape = op._output_spec(tuple(signature))
        return torch.empty(shape, dtype=_DEVICE_DTYPES[dtype], device=device or "cpu")

    fake.__name__ = f"{qualified.replace('::', '_')}_fake"
    return fake


def _qualified(op, what):
    """`op` (``torch.ops.NS.OP``, its ``.default``, ``"NS::OP"`` or a gpsimd_open op) as
    ``"NS::OP"``, checked to be an op this package registered."""
    if isinstance(op, str):
        name = op
    elif isinstance(op, (torch._ops.OpOverloadPacket, torch._ops.OpOverload)):
        name = op._qualified_op_name if isinstance(op, torch._ops.OpOverloadPacket) else op._schema.name
    elif hasattr(op, "_lib") and hasattr(op, "kinds"):
        name = f"{op._lib.namespace}::{op.__name__}"
    else:
        raise TypeError(f"register_autograd: {what} {op!r} is not an op (torch.ops.NS.OP or 'NS::OP')")
    if name not in _SERVING:
        loaded = ", ".join(sorted(_SERVING)) or "none"
        raise ValueError(f"register_autograd: {what} {name} is not an op gpsimd_open loaded (loaded: {loaded})")
    return name


_SAVED = ("inputs", "output", "inputs_and_output")


def register_autograd(forward, backward, *, saved="inputs", grad_of=None):
    """Gives op `forward` a gradient computed by op(s) `backward`, the torch 2 way
    (``torch.library.register_autograd``, which ``opcheck``, ``torch.compile`` and
    ``torch.export`` understand).

    Args:
        forward: the forward op: ``torch.ops.NS.OP``, ``"NS::OP"`` or a gpsimd_open op.
        backward: the backward op, or a list of them (one per input that has a gradient).
            Each is called as ``backward(grad_output, *saved)`` and returns the gradient of
            one of `forward`'s tensor arguments.
        saved: what the backward ops take after the output's gradient: ``"inputs"`` (the
            forward's arguments, as AWS's ``relu_backward(grad, x)``), ``"output"``,
            ``"inputs_and_output"``, or a function ``(inputs, output) -> tuple``.
        grad_of: which argument of `forward` each backward op gives the gradient of (an
            index, or a list as long as `backward`); default: its tensor arguments in order.
            The other arguments get no gradient.

    Raises:
        ValueError / TypeError: an op that gpsimd_open did not load, a `grad_of` that is not
            a tensor argument, or a `saved` it does not know.
    """
    fwd = _qualified(forward, "forward")
    backs = list(backward) if isinstance(backward, (list, tuple)) else [backward]
    backs = [_qualified(b, "backward") for b in backs]
    kinds = _SERVING[fwd].kinds
    tensor_args = [i for i, k in enumerate(kinds) if k == "torch::Tensor"]
    if grad_of is None:
        grad_of = tensor_args[: len(backs)]
    elif isinstance(grad_of, int):
        grad_of = [grad_of]
    grad_of = list(grad_of)
    if len(grad_of) != len(backs):
        raise ValueError(f"register_autograd: {len(backs)} backward op(s) for {len(grad_of)} argument(s) in grad_of")
    for i in grad_of:
        if i not in tensor_args:
            raise ValueError(f"register_autograd: argument {i} of {fwd} is not a tensor "
                             f"(its tensor arguments: {tensor_args})")
    if not (saved in _SAVED or callable(saved)):
        raise ValueError(f"register_autograd: saved={saved!r}: one of {', '.join(_SAVED)}, or a function")
    first = fwd not in _AUTOGRAD
    _AUTOGRAD[fwd] = _Gradient([_torch_op(b) for b in backs], grad_of, saved, len(kinds))
    if first:
        torch.library.register_autograd(fwd, _backward(), setup_context=_setup_context(fwd),
                                        lib=_FRAGMENTS[fwd.split("::")[0]])
        _forget_dispatch(fwd)


def _forget_dispatch(qualified):
    """Drops what torch's Python dispatcher remembered of the op's kernels: an op traced
    before its autograd kernel was registered would otherwise keep tracing without it (a
    compiled graph whose output does not require grad). torch keeps this table per
    overload (``_dispatch_cache``, private): where a torch has none, nothing was kept."""
    ns, name = qualified.split("::")
    packet = getattr(getattr(torch.ops, ns), name)
    for overload in packet.overloads():
        cache = getattr(getattr(packet, overload), "_dispatch_cache", None)
        if cache is not None:
            cache.clear()


# "NS::OP" -> how its gradient is computed: set by register_autograd, read by the functions
# registered with torch (once per op: a later register_autograd of the op replaces this).
_AUTOGRAD = {}


class _Gradient:
    """A forward op's backward ops, the argument each gives the gradient of, and what they
    take after the output's gradient."""

    def __init__(self, ops, grad_of, saved, arity):
        self.ops, self.grad_of, self.saved, self.arity = ops, grad_of, saved, arity

    def saved_values(self, inputs, output):
        if callable(self.saved):
            return tuple(self.saved(tuple(inputs), output))
        return {"inputs": tuple(inputs), "output": (output,), "inputs_and_output": (*inputs, output)}[self.saved]


def _setup_context(fwd):
    def setup_context(ctx, inputs, output):
        g = ctx.gpsimd_gradient = _AUTOGRAD[fwd]
        values = g.saved_values(inputs, output)
        ctx.save_for_backward(*[v for v in values if isinstance(v, torch.Tensor)])
        # Numbers travel beside the saved tensors, in their places.
        ctx.gpsimd_slots = [None if isinstance(v, torch.Tensor) else (v,) for v in values]

    return setup_context


def _backward():
    def backward(ctx, grad):
        g = ctx.gpsimd_gradient
        tensors = iter(ctx.saved_tensors)
        values = [next(tensors) if slot is None else slot[0] for slot in ctx.gpsimd_slots]
        grads = [None] * g.arity
        for op, i in zip(g.ops, g.grad_of):
            if ctx.needs_input_grad[i]:
                grads[i] = op(grad, *values)
        return tuple(grads)

    return backward


def _torch_op(qualified):
    ns, name = qualified.split("::")
    return getattr(getattr(torch.ops, ns), name).default
