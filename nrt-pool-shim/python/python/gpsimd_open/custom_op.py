"""Build, load and call custom C++ operators, as ``torch_neuronx.xla_impl.custom_op`` does,
on the emulated Pool engine."""
import os
import pathlib
import tempfile

import sys

from . import _check, _cores, _native
from ._arrays import dtype_name, from_engine, to_engine

__all__ = ["load", "load_library", "ops", "register_autograd", "register_fake", "Library", "DeviceArray"]


def _installed(part):
    """Where a part of the installation is ("include", "host-archive", ...): the build tree
    GPSIMD_OPEN_HOME names, else beside the package, else the build tree it was built in."""
    return pathlib.Path(_native.installed(part))


# The environment's variables are read by the native part (nrt-pool-open), never here:
# ``_native.environment()`` gives their values, checked, each error naming its variable.
ISA_VARIABLE = "GPSIMD_OPEN_ISA"
_ISAS = ("host", "xtensa")
DATA_MODEL_VARIABLE = "GPSIMD_OPEN_DATA_MODEL"
_DATA_MODELS = ("device", "host")
# Set by python -m gpsimd_open.run for the script it runs (in this process).
_under_runner = False


def _data_model(model):
    """The data model host cores run a new build in: the argument, else
    GPSIMD_OPEN_DATA_MODEL, else "device" (D97)."""
    if model is None:
        return _native.environment()["data_model"] or "device"
    if model not in _DATA_MODELS:
        raise ValueError(f"data_model={model!r}: 'device' or 'host'")
    return model


def _isa(isa):
    """The backend asked for: the argument, else GPSIMD_OPEN_ISA, else None (no choice made)."""
    if isa is None:
        return _native.environment()["isa"]
    if isa not in _ISAS:
        raise ValueError(f"isa={isa!r}: 'host' or 'xtensa'")
    return isa


def load(name, compute_srcs, shape_srcs, build_directory=None, multicore=False, verbose=False, isa=None,
         extra_cflags=None, extra_include_paths=None, check=None, all_cores_stdio=None, debug=None,
         data_model=None, suppress=None):
    """Builds a custom op library and loads it.

    Args:
        name: the library's name; the file is ``lib{name}.so``.
        compute_srcs: C++ sources of the kernel functions (``<torch/torch.h>``).
        shape_srcs: C++ sources of the shape functions and their ``NEURON_LIBRARY``
            registration.
        build_directory: where ``lib{name}.so`` is written (default: a cache directory).
            Nothing is written there unless the whole build succeeds. Loads into one folder
            build one at a time (a lock there, released if its holder dies); a load whose
            sources, the headers they include, flags and tools are unchanged since the
            folder's last build, and whose outputs are intact, takes that build as it is
            (as ``torch.utils.cpp_extension`` does: every rank of a ``torchrun`` job may load).
        multicore: run the library's ops on all 8 cores by default.
        verbose: print what is built.
        extra_cflags: compiler flags added to every compile, host and device, after the
            build's own (the guide's ``['-DSTACK_SIZE=20000']``); recorded in the library.
        extra_include_paths: folders searched for headers before the op headers (as
            ``torch.utils.cpp_extension.load`` has it).
        isa: where the ops run: ``"host"`` (the host build in emulated cores) or
            ``"xtensa"`` (also builds the Pool image ``lib{name}.pool`` and runs it on
            emulated Xtensa cores under QEMU; an extension of this package). Default:
            the ``GPSIMD_OPEN_ISA`` environment variable, else ``"host"``.
        check: check every call of the library's ops (see :func:`load_library`). A check
            list with ``parity`` (or ``all``; also from ``GPSIMD_OPEN_CHECK``) builds the
            Pool image ``lib{name}.pool`` beside a host build too, where the Xtensa compiler
            is installed, so that the parity check has the device build to compare with.
        all_cores_stdio: show printf from every core (see :func:`load_library`).
        debug: a core every launch stops for a debugger (see :func:`load_library`).
        suppress: a suppression file for the checks' findings (see :func:`load_library`).
        data_model: the C data model host cores run the library in: ``"device"`` (32-bit
            ``long``, ``size_t`` and pointers, unsigned ``char``, the device's C and C++
            libraries: what the device computes; needs g++-multilib) or ``"host"`` (the
            host's x86-64 model and libraries; results can differ from the device's).
            Default: the ``GPSIMD_OPEN_DATA_MODEL`` environment variable, else ``"device"``.

    Returns:
        The loaded :class:`Library`; its ops are also at ``custom_op.ops.NS.OP`` (and at
        ``torch.ops.NS.OP`` when torch is installed).

    Raises:
        RuntimeError: a source does not compile (the compiler's message is included), or a
            kernel does not match its shape registration.
    """
    isa = _isa(isa) or "host"
    if build_directory is None:
        build_directory = _native.default_build_directory(name)
    model = _data_model(data_model)
    include = _installed("include")
    archive = _installed("device-model-archive" if model == "device" else "host-archive")
    if not archive.exists():
        raise RuntimeError(f"the host runtime archive is missing: {archive} (run `make customop-archives`)")
    if verbose:
        print(f"gpsimd_open: building lib{name}.so in {build_directory} from {list(compute_srcs)} + {list(shape_srcs)}")
    flags = _string_list("extra_cflags", extra_cflags)
    includes = [os.fspath(p) for p in _string_list("extra_include_paths", extra_include_paths, paths=True)]
    # The parity check compares with the other build: asked for here, the native build
    # builds it too (where the Xtensa compiler is installed).
    checks, _ = _check.resolve(check)
    path, kept = _native.build(
        name,
        [str(s) for s in compute_srcs],
        [str(s) for s in shape_srcs],
        str(build_directory),
        bool(multicore),
        str(include),
        str(archive),
        str(isa),
        flags,
        includes,
        model,
        checks,
    )
    if verbose:
        print(f"gpsimd_open: {path} is up to date" if kept else f"gpsimd_open: built {path}")
    return load_library(path, check=check, all_cores_stdio=all_cores_stdio, debug=debug, suppress=suppress)


_TOLD = set()


def _told_once(key):
    """Whether the note about `key` was printed before (and from now on it was)."""
    told = key in _TOLD
    _TOLD.add(key)
    return told


def _string_list(what, value, paths=False):
    """A list argument of strings (or paths): None is empty; a lone string is refused, as
    it would otherwise be split into characters."""
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or (paths and isinstance(value, os.PathLike)):
        raise TypeError(f"{what} takes a list, e.g. {what}=[{value!r}]")
    out = list(value)
    for v in out:
        if not (isinstance(v, str) or (paths and isinstance(v, os.PathLike))):
            raise TypeError(f"{what}: {v!r} is not a string")
    return out


ALL_CORES_STDIO_VARIABLE = "GPSIMD_OPEN_ALL_CORES_STDIO"


def _all_cores_stdio(value):
    """The all_cores_stdio= value, or the environment's default when None."""
    if value is None:
        return _native.environment()["all_cores_stdio"]
    if not isinstance(value, bool):
        raise TypeError(f"all_cores_stdio={value!r}: True or False")
    return value


GDB_VARIABLE = "GPSIMD_OPEN_GDB"


def _debug_core(value, from_environment=False):
    """A debug= core (0-7) or None; with from_environment, GPSIMD_OPEN_GDB's when None."""
    if value is None:
        return _native.environment()["debug"] if from_environment else None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 7:
        raise ValueError(f"debug={value!r}: a core number from 0 to 7")
    return value


def load_library(path, isa=None, check=None, all_cores_stdio=None, debug=None, suppress=None):
    """Loads a built custom op library (``lib{name}.so``) on its own emulated engine and
    registers its ops at ``custom_op.ops.NS.OP`` (and ``torch.ops.NS.OP`` with torch).
    The library's static constructors run in the emulated cores, never in this process.
    A Pool image (``lib{name}.pool``, from ``load(..., isa="xtensa")``) runs on emulated
    Xtensa cores under QEMU, its shape functions in the host build beside it.

    Args:
        path: ``lib{name}.so`` or ``lib{name}.pool``.
        isa: ``"host"`` or ``"xtensa"``: run the build of that backend, the file beside
            ``path`` with the other suffix when ``path`` is the other's. Default: the
            ``GPSIMD_OPEN_ISA`` environment variable, else the file's own backend.
        check: check every call of the library's ops (a call's own ``check=`` wins):
            ``True`` (init, race, memory, rules), a list such as ``"init,race"`` or
            ``"all"`` (adds ``cores``: the call again on another core count, and
            ``parity``: the call again on the other build beside the library, its Pool
            image on Xtensa cores for a host build, outputs, stdout and faults compared),
            ``"warn"``
            or ``"warn:LIST"`` to warn instead of raising :class:`CheckError`. Default:
            the ``GPSIMD_OPEN_CHECK`` environment variable, else no checks.
        all_cores_stdio: an emulator aid: printf from every core reaches stdout and
            stderr, each line prefixed with its core (``[core 3] ...``); hardware shows
            core 0's alone, the default (also ``GPSIMD_OPEN_ALL_CORES_STDIO=1``).
            ``Library.all_cores_stdio`` changes it later.
        debug: a core (0-7) every launch stops for a debugger: the call prints how to
            attach (``nrt-pool gdb LIB CORE``, which starts gdb at the kernel) and waits
            without a timeout until the kernel returns; also ``GPSIMD_OPEN_GDB=CORE``.
            ``Library.debug`` changes it; a call's ``debug=`` applies to that call.
        suppress: a suppression file: the checks' findings an entry matches are kept out
            of :class:`CheckError` (one entry per line: a check or ``*``, then any of
            ``op=``, ``kernel=``, ``tensor=``, ``elements=A..B``, ``at=FILE:LINE``, as
            ``nrt-pool run --suppress`` reads it). ``Library.suppressions()`` says what each
            entry matched; a malformed line is a ValueError naming it.

    Raises:
        RuntimeError: the file is missing or is not an op library, or the backend asked
            for has no build beside it (the message says how to build one).
        ValueError: ``isa`` (or GPSIMD_OPEN_ISA) is neither "host" nor "xtensa".
        DeviceFault: its static constructors or start code fault.
    """
    asked = _isa(isa)  # a bad value fails here, naming the argument or the variable
    _check.resolve(check)  # a bad value fails here, not at the first call
    all_cores = _all_cores_stdio(all_cores_stdio)
    debug = _debug_core(debug, from_environment=True)
    # The native library picks the build for the backend asked for (the argument, else
    # GPSIMD_OPEN_ISA, else the file's own), and says why when it is missing.
    native = _native.Library(os.fspath(path), isa=isa)
    path = pathlib.Path(native.path)
    if native.sibling and path.suffix == ".so" and asked is None and not _told_once(str(path)):
        print(f"gpsimd_open: {path.name} runs on host cores; {pathlib.Path(native.sibling).name} beside it "
              f"runs on Xtensa cores with {ISA_VARIABLE}=xtensa or load_library(..., isa='xtensa')",
              file=sys.stderr)
    if suppress is not None:
        native.set_suppressions(os.fspath(suppress))
    lib = Library(native)
    lib.all_cores_stdio = all_cores
    lib.debug = debug
    lib.check = check
    if lib.namespace is None:
        raise RuntimeError(f"{path}: no NEURON_LIBRARY ops (build it with custom_op.load)")
    if _under_runner and not _told_once("serves:" + str(path)):
        # Under python -m gpsimd_open.run: which build serves the script's ops.
        backend = "xtensa" if path.suffix == ".pool" else "host"
        cores = "8 cores" if lib.multicore else "1 core"
        print(f"gpsimd_open.run: {lib.namespace}'s ops run {path} on {backend} cores ({cores} a call "
              f"unless the call says)", file=sys.stderr)
    ops._add(lib)
    _register_torch(lib)
    return lib


class DeviceArray:
    """A tensor in the engine's device memory: pass it to ops of its library (and as
    ``out=``) to chain them without copies through the host."""

    def __init__(self, native):
        self._native = native

    @property
    def shape(self):
        return tuple(self._native.shape)

    @property
    def dtype(self):
        return self._native.dtype

    def numpy(self):
        """The contents, copied to a NumPy array."""
        return from_engine(self._native.download())

    def __repr__(self):
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype})"


# Output specs an op keeps (one per input signature a trace met); past this the
# table starts again, so a long-running process with ever new shapes stays bounded.
_SPECS_KEPT = 4096


class Op:
    """One op of a loaded library: call it with NumPy arrays, Python numbers or device
    arrays; ``cores=N`` overrides the library's default core count (as does
    :func:`gpsimd_open.set_cores` for calls without it), ``out=`` writes a device array
    instead of returning a NumPy array, ``check=`` checks the call (as
    :func:`load_library`'s, which it overrides), ``debug=CORE`` stops that core for a
    debugger (as :func:`load_library`'s), ``profile=True`` returns ``(result, profile)``:
    on Xtensa cores the instructions each core executed by function, on host cores each
    core's wall time and instruction count (a dict: ``isa``, ``kernel``, ``cores``, each
    with ``core``, ``wall_s``, ``instructions`` and ``functions``; ``functions``, over all
    cores, as (name, instructions, share) most first; ``folded``, folded stacks for
    flame-graph tools). ``trace="launch.json"`` profiles the launch and writes its trace
    there in the Trace Event format (Perfetto, chrome://tracing, speedscope: a track per
    core, the kernel and its functions, the tensor copies, findings and a fault at their
    source lines)."""

    def __init__(self, library, name, kinds):
        self._lib = library
        self.__name__ = name
        self.kinds = tuple(kinds)
        self._specs = {}
        self.__doc__ = f"{library.namespace}::{name}({', '.join(kinds)}) -> torch::Tensor"

    def __call__(self, *args, cores=None, out=None, check=None, debug=None, profile=False, trace=None):
        r, measured = self._launch(args, cores, out, check, debug, profile, trace)
        result = out if r is None else from_engine(r)
        return (result, measured) if profile else result

    def _launch(self, args, cores=None, out=None, check=None, debug=None, profile=False, trace=None):
        """One launch: ((bytes, dtype name, shape) or None with ``out=``, profile or None),
        after the checks' findings were raised or warned about."""
        native_args = tuple(a._native if isinstance(a, DeviceArray) else to_engine(a) for a in args)
        if cores is None:
            cores = _cores.current()
        elif not (isinstance(cores, int) and not isinstance(cores, bool) and 1 <= cores <= 8):
            raise ValueError(f"cores={cores!r}: 1 to 8")
        checks, warn = _check.resolve(self._lib.check if check is None else check)
        native_out = out._native if out is not None else None
        debug = _debug_core(debug)
        if not isinstance(profile, bool):
            raise TypeError(f"profile={profile!r}: True or False")
        if trace is not None:
            trace = os.fspath(trace)
        r = self._lib._native.call(self.__name__, native_args, cores, native_out, checks, debug, profile,
                                   trace)
        measured = None
        if profile:
            r, measured = r
        if checks is not None:
            r, findings, notes = r
            r = _check.report(findings, notes, r, warn, lambda raw: out if raw is None else from_engine(raw))
        return r, measured

    def _output_spec(self, signature):
        """(dtype name, shape) of the output for arguments of this signature (a tensor as
        (dtype name, shape), a number as itself), from the op's shape function; kept, so
        a signature's shape function runs once (torch's traces ask it many times)."""
        spec = self._specs.get(signature)
        if spec is None:
            spec = self._lib._native.output_spec(self.__name__, signature)
            if len(self._specs) >= _SPECS_KEPT:
                self._specs.clear()
            self._specs[signature] = spec
        return spec

    def __repr__(self):
        return f"<op {self.__doc__}>"


class Library:
    """A loaded custom op library and its engine (its cores live as long as it does)."""

    def __init__(self, native):
        self._native = native
        self.ops = {name: Op(self, name, kinds) for name, kinds in native.ops}
        #: The checks every call makes unless it says (``check=`` of :func:`load_library`).
        self.check = None

    @property
    def path(self):
        return self._native.path

    @property
    def namespace(self):
        return self._native.namespace

    @property
    def multicore(self):
        return self._native.multicore

    @property
    def cflags(self):
        """The compiler flags the library was built with beyond the build's own:
        ``extra_include_paths`` as ``-IDIR``, then ``extra_cflags``."""
        return list(self._native.cflags)

    def suppressions(self):
        """The suppression file's entries (``suppress=``), each a dict of file, line, text
        and matched: how many findings it kept out so far (0: it never matched)."""
        return list(self._native.suppressions())

    @property
    def debug(self):
        """The core every launch stops for a debugger (None: none)."""
        return self._native.debug

    @debug.setter
    def debug(self, core):
        self._native.debug = _debug_core(core)

    @property
    def all_cores_stdio(self):
        """Whether printf from every core is shown, each line prefixed with its core
        (an emulator aid; hardware shows core 0's alone)."""
        return self._native.all_cores_stdio

    @all_cores_stdio.setter
    def all_cores_stdio(self, all_cores):
        if not isinstance(all_cores, bool):
            raise TypeError(f"all_cores_stdio={all_cores!r}: True or False")
        self._native.all_cores_stdio = all_cores

    @property
    def timeout(self):
        """Seconds a launch may run before its cores are stopped (a DeviceFault)."""
        return self._native.timeout

    @timeout.setter
    def timeout(self, seconds):
        self._native.timeout = seconds

    def device_array(self, shape, dtype="f32"):
        """A zeroed device array of ``shape`` and ``dtype``: the device's names ("f32",
        "f16", "bf16", "i32", ...), a NumPy dtype of one of them (``np.float32``,
        ``"float32"``) or ``gpsimd_open.bfloat16``."""
        return DeviceArray(self._native.device_array(list(shape), dtype_name(dtype)))

    def to_device(self, array):
        """A device array holding a copy of ``array``."""
        return DeviceArray(self._native.upload(to_engine(array)))

    def __getattr__(self, name):
        try:
            return self.__dict__["ops"][name]
        except KeyError:
            raise AttributeError(f"library {self.namespace!r} has no op {name!r}") from None

    def __repr__(self):
        return f"<gpsimd_open library {self.namespace} from {self.path}>"


class _Namespace:
    def __init__(self, name):
        self._name = name
        self._ops = {}

    def __getattr__(self, op):
        try:
            return self.__dict__["_ops"][op]
        except KeyError:
            known = ", ".join(sorted(self.__dict__["_ops"])) or "none"
            raise AttributeError(f"no op {self._name}.{op} is loaded (loaded: {known})") from None

    def __dir__(self):
        return sorted(self._ops)


class _Ops:
    """``custom_op.ops.NS.OP``: the loaded libraries' ops by namespace."""

    def __init__(self):
        self._namespaces = {}

    def _add(self, lib):
        ns = self._namespaces.setdefault(lib.namespace, _Namespace(lib.namespace))
        ns._ops.update(lib.ops)

    def __getattr__(self, name):
        try:
            return self.__dict__["_namespaces"][name]
        except KeyError:
            raise AttributeError(f"no custom op library with namespace {name!r} is loaded") from None

    def __dir__(self):
        return sorted(self._namespaces)


ops = _Ops()


def register_autograd(forward, backward, *, saved="inputs", grad_of=None):
    """Gives op `forward` its gradient from op(s) `backward`, the torch 2 way
    (``torch.library.register_autograd``: ``opcheck``, ``torch.compile`` and
    ``torch.export`` understand it); needs torch. For AWS's ReLU pair::

        custom_op.register_autograd(torch.ops.my_ops.relu_forward, torch.ops.my_ops.relu_backward)
        y = torch.ops.my_ops.relu_forward(x)   # y.backward(g) calls relu_backward(g, x)

    Args:
        forward: the forward op (``torch.ops.NS.OP``, ``"NS::OP"`` or ``custom_op.ops.NS.OP``).
        backward: the backward op, or a list of them, one per argument with a gradient;
            each is called as ``backward(grad_output, *saved)``.
        saved: what follows the gradient: ``"inputs"`` (the forward's arguments, the
            default), ``"output"``, ``"inputs_and_output"``, or ``f(inputs, output) -> tuple``.
        grad_of: the argument (index) each backward op's result is the gradient of; default:
            the forward's tensor arguments in order. Others get no gradient.

    A later call for the same forward op replaces its backward ops.
    """
    from . import _torch

    _torch.register_autograd(forward, backward, saved=saved, grad_of=grad_of)


def register_fake(op, fake):
    """Gives op `op` (``torch.ops.NS.OP`` or ``"NS::OP"``) a fake kernel of your own,
    ``fake(*args) -> Tensor`` as ``torch.library.register_fake`` takes it, in place of the
    op's C++ shape function; ``None`` goes back to the shape function. The shape function
    is run on concrete sizes, so a trace with symbolic sizes (``dynamic=True``,
    ``mark_dynamic``) specializes on them; a fake kernel written with torch operations keeps
    them symbolic. Needs torch."""
    from . import _torch

    _torch.register_fake(op, fake)


def _register_torch(lib):
    """Registers the ops as torch 2 custom ops, ``torch.ops.NS.OP`` (``_torch``), when
    torch is installed."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    from . import _torch

    _torch.register(lib)
