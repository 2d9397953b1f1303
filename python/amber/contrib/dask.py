"""amber as a serialization family of Dask ``distributed``.

Importing this module registers the family ``"amber"`` with ``distributed``: a value becomes one
amber payload frame plus one frame per large buffer (numpy arrays, ``bytes``, ``bytearray``,
``array.array`` of ``amber.OOB_THRESHOLD`` bytes or more), and those buffer frames are views of
the objects' own memory, so Dask writes them to the socket without a copy. A client selects the
family with ``Client(serializers=SERIALIZERS, deserializers=SERIALIZERS)``; workers learn it from
a preload (``dask worker --preload amber.contrib.dask``), which also makes the transfers they
start between themselves use it.

Options (allowed ``types``, ``custom`` types, a signing ``key``...) are those of
``amber.contrib.Codec``. They come from the Dask configuration, ``amber.options`` (a YAML file or
``DASK_AMBER__OPTIONS__TYPES='["app.models.Order"]'``), which reaches every worker of a cluster
in the same way; or from ``register(...)`` in the application's own preload module. Every
process must use the same options, since the sender writes what the receiver's allow-list
decides on.

Dask itself hands a top-level ``list``, ``tuple``, ``set`` or ``dict`` to the family item by
item, so shared objects and cycles across those items would be lost with any family (pickle
too). When ``"amber"`` is the first family in the list, this module has ``distributed`` offer
the whole value to amber first, and only falls back to Dask's item-by-item path if amber cannot
encode it; that is what keeps a scattered graph one graph.
"""

from __future__ import annotations

import contextvars
import importlib
import inspect
import os
import socket
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import dask.config
from distributed.utils import ensure_memoryview

from .. import ClassNotAllowedError, DecodeError, EncodeError
from ._config import Codec, OptionsError

# The module, not the function that distributed.protocol re-exports under the same name.
_protocol: Any = importlib.import_module("distributed.protocol.serialize")

__all__ = [
    "CONFIG_OPTIONS",
    "CONFIG_SERIALIZERS",
    "FAMILY",
    "SERIALIZERS",
    "current_codec",
    "dask_setup",
    "dask_teardown",
    "dumps",
    "loads",
    "register",
]

# The name clients and workers list in ``serializers=`` / ``deserializers=``.
FAMILY = "amber"

# amber first; Dask's own families for what amber cannot encode (its per-type "dask"
# serializers, then pickle), as Dask's default is ("dask", "pickle").
SERIALIZERS: tuple[str, ...] = (FAMILY, "dask", "pickle")

# The Dask configuration keys this module reads.
CONFIG_OPTIONS = "amber.options"
CONFIG_SERIALIZERS = "amber.serializers"

_Header = dict[str, Any]
_Frames = list[Any]

# The reason amber gave for refusing the value being serialized, so that Dask's terse
# "Could not serialize object of type X" can say where the unsupported object sits.
_refusal: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "amber_dask_refusal", default=None
)


class _State:
    """What this process uses: written by ``register``, read once per call by the family."""

    # Built from the Dask configuration at first use, not at import: an application module
    # that imports this one may itself be named in the options' types.
    codec: Codec | None = None
    serializers: tuple[str, ...] = SERIALIZERS
    # True once the application called register(); a preload then leaves its choice alone.
    explicit: bool = False
    # The workers this process runs, named in decode errors so that a refusal on a cluster of
    # many machines says where it happened.
    workers: tuple[str, ...] = ()


def _where() -> str:
    if len(_State.workers) == 1:
        return f"worker {_State.workers[0]}"
    process = f"process {os.getpid()} on {socket.gethostname()}"
    if _State.workers:
        return f"{process} (workers {', '.join(_State.workers)})"
    return process


def current_codec() -> Codec:
    """The ``amber.contrib.Codec`` this process's ``"amber"`` family encodes and decodes with."""
    codec = _State.codec
    if codec is None:
        _configure_from_dask_config()
        codec = _State.codec
        assert codec is not None
    return codec


def _buffer_writeable(view: memoryview) -> bool:
    """Whether the object behind an out-of-band view could be written to.

    amber hands every buffer over read-only, but a receiver should get back a writeable numpy
    array where the sender had one, as Dask's pickle family does; the owner tells which.
    """
    owner = view.obj
    if owner is None:
        return False
    try:
        with memoryview(owner) as probe:
            return not probe.readonly
    except TypeError:
        return False


def dumps(x: object) -> tuple[_Header, _Frames]:
    """The family's encoder: ``({"writeable": flags}, [payload, buffer, ...])``.

    Buffers of ``amber.OOB_THRESHOLD`` bytes or more are frames of their own, read-only views
    of the original objects' memory. A value amber cannot encode raises ``NotImplementedError``,
    which is how ``distributed`` is told to try the next family in the list.
    """
    buffers: list[memoryview] = []
    try:
        payload = current_codec().dumps(x, buffer_callback=buffers.append)
    except EncodeError as exc:
        reason = f"amber cannot encode it: {exc}"
        _refusal.set(reason)
        raise NotImplementedError(reason) from exc
    writeable = tuple(_buffer_writeable(view) for view in buffers)
    return {"writeable": writeable}, [payload, *buffers]


def _with_flag(frame: Any, writeable: bool) -> memoryview:
    view = ensure_memoryview(frame)
    if writeable and view.readonly:
        # A frame Dask received read-only (decompressed, or in-process): the receiver must not
        # share memory it may not write, nor get a read-only array where the sender had not.
        return memoryview(bytearray(view))
    if not writeable and not view.readonly:
        return view.toreadonly()
    return view


def _decode_error(exc: DecodeError) -> DecodeError:
    """The same error, with a message that says which process refused and what to do."""
    message = f"dask serialization family {FAMILY!r} on {_where()}: {exc}"
    if isinstance(exc, ClassNotAllowedError):
        message += (
            f"; every worker and the client must allow {exc.module}.{exc.qualname}: put it in "
            f"the {CONFIG_OPTIONS!r} config's types, or call "
            "amber.contrib.dask.register(types=[...]) in a preload module"
        )
    clearer = type(exc)(message)
    clearer.__dict__.update(exc.__dict__)
    return clearer


def loads(header: Mapping[str, Any], frames: Sequence[Any]) -> Any:
    """The family's decoder: the payload frame first, then the out-of-band buffer frames."""
    if not frames:
        raise DecodeError(f"dask serialization family {FAMILY!r}: no payload frame")
    payload, *rest = frames
    flags = tuple(header.get("writeable", ()))
    if len(flags) != len(rest):
        raise DecodeError(
            f"dask serialization family {FAMILY!r}: {len(rest)} buffer frames but "
            f"{len(flags)} writeable flags in the header"
        )
    buffers = [_with_flag(frame, bool(flag)) for frame, flag in zip(rest, flags, strict=True)]
    try:
        return current_codec().loads(payload, buffers=buffers)
    except DecodeError as exc:
        raise _decode_error(exc) from None


# ---------------------------------------------------------------------------------------------
# Whole values instead of Dask's item-by-item path


_SPLIT_TYPES = (list, tuple, set, dict)
_Serialize = Callable[..., tuple[_Header, _Frames]]


def _whole_first(original: _Serialize) -> _Serialize:
    """``distributed``'s ``serialize`` that offers a whole container to amber when it leads.

    ``serialize`` splits a top-level list, tuple, set or dict (and, for a value wrapped for
    sending, always) into items before any family sees it, and rebuilds the container on the
    other side: objects shared between items, and cycles through the container, come back as
    copies. With ``"amber"`` first the container is offered whole; if amber refuses it, Dask's
    path runs unchanged, so objects only another family handles still travel.
    """

    def serialize(
        x: Any,
        serializers: Sequence[str] | None = None,
        on_error: str = "message",
        context: Any = None,
        iterate_collection: bool | None = None,
    ) -> tuple[_Header, _Frames]:
        if not serializers or FAMILY not in serializers:
            return original(x, serializers, on_error, context, iterate_collection)
        if type(x) is _protocol.Serialize:
            # What Serialize means to Dask: the wrapped value, its items sent one by one.
            x, iterate_collection = x.data, True
        token = _refusal.set(None)
        try:
            if serializers[0] == FAMILY and iterate_collection is not False:
                if type(x) in _SPLIT_TYPES:
                    try:
                        header, frames = dumps(x)
                    except NotImplementedError:
                        pass
                    else:
                        header["serializer"] = FAMILY
                        return header, frames
            try:
                header, frames = original(x, serializers, on_error, context, iterate_collection)
            except TypeError as exc:
                reason = _refusal.get()
                if reason is None or not exc.args or hasattr(exc, "amber_reason"):
                    raise
                explained = TypeError(f"{exc.args[0]} ({reason})", *exc.args[1:])
                # An item's refusal, explained where it happened, is not repeated by its parent.
                explained.amber_reason = reason  # type: ignore[attr-defined]
                raise explained from exc
            reason = _refusal.get()
            if reason is not None and header.get("serializer") == "error":
                # The "error" family's loads raises a TypeError with the frames' text.
                frames = [*frames, reason.encode()]
            return header, frames
        finally:
            _refusal.reset(token)

    serialize.__doc__ = original.__doc__
    serialize._amber_original = original  # type: ignore[attr-defined]
    return serialize


_EXPECTED_PARAMETERS = ["x", "serializers", "on_error", "context", "iterate_collection"]


def _install_whole_first() -> None:
    current = _protocol.serialize
    if hasattr(current, "_amber_original"):
        return
    parameters = list(inspect.signature(current).parameters)
    if parameters != _EXPECTED_PARAMETERS:
        warnings.warn(
            "amber.contrib.dask: distributed.protocol.serialize.serialize takes "
            f"{parameters}, not {_EXPECTED_PARAMETERS}; top-level lists, tuples, sets and dicts "
            "go to the amber family item by item, so sharing between their items is lost",
            RuntimeWarning,
            stacklevel=3,
        )
        return
    # serialize_and_split, which every comm uses, looks the name up in this module at each call.
    _protocol.serialize = _whole_first(current)


# ---------------------------------------------------------------------------------------------
# Registration and the preload hooks


def _check_serializers(serializers: Any, where: str) -> tuple[str, ...]:
    if isinstance(serializers, (str, bytes)) or not isinstance(serializers, Sequence):
        raise OptionsError(
            f"{where}: serializers must be a list of family names like {list(SERIALIZERS)}, "
            f"not {serializers!r}"
        )
    names = tuple(serializers)
    if not names:
        raise OptionsError(f"{where}: serializers is empty: list at least {FAMILY!r}")
    for name in names:
        if not isinstance(name, str) or name not in _protocol.families:
            known = ", ".join(repr(n) for n in sorted(_protocol.families))
            raise OptionsError(
                f"{where}: serializers entry {name!r} is not a registered Dask serialization "
                f"family (registered: {known})"
            )
        if _protocol.families[name][0] is None:
            raise OptionsError(f"{where}: serializers entry {name!r} can only decode, not encode")
    return names


def register(
    codec: Codec | None = None,
    /,
    *,
    serializers: Sequence[str] | None = None,
    **options: Any,
) -> Codec:
    """Register the ``"amber"`` family in this process with these options; returns its codec.

    ``options`` are ``amber.contrib.Codec``'s (``types``, ``custom``, ``key``, ...; classes may
    be dotted paths), or pass a ready ``Codec``. ``serializers`` are the families a worker
    running this module's ``dask_setup`` asks its peers for when it fetches data from them
    (default ``SERIALIZERS``). Call it in the application's preload module so that workers
    decode with the same allow-list the client encodes for; once called, the Dask configuration
    (``amber.options``) no longer applies in this process.
    """
    where = "amber.contrib.dask.register()"
    if codec is not None and options:
        raise OptionsError(f"{where}: pass a Codec or options, not both")
    if codec is not None and not isinstance(codec, Codec):
        raise OptionsError(f"{where}: expected an amber.contrib.Codec, not {codec!r}")
    chosen = codec if codec is not None else Codec.from_options(_strict(options), where=where)
    families = _check_serializers(
        SERIALIZERS if serializers is None else serializers, f"{where}: serializers"
    )
    _State.codec = chosen
    _State.serializers = families
    _State.explicit = True
    return chosen


def _strict(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options with ``strict_dumps`` on unless set: amber must refuse at the sender what
    the workers would refuse, so that Dask gives that value to its next family (pickle)."""
    chosen = dict(options or {})
    if not any(str(name).lower() == "strict_dumps" for name in chosen):
        chosen["strict_dumps"] = True
    return chosen


def _configure_from_dask_config() -> None:
    """The options of the Dask configuration, unless the application chose its own."""
    if _State.explicit:
        return
    raw = dask.config.get(CONFIG_OPTIONS, default=None)
    where = f"Dask config {CONFIG_OPTIONS!r}"
    if raw is not None and not isinstance(raw, Mapping):
        raise OptionsError(f"{where}: expected a mapping of amber options, not {raw!r}")
    # YAML files tend to spell options with hyphens (max-age); Codec's names use underscores.
    options = None if raw is None else {str(k).replace("-", "_"): v for k, v in raw.items()}
    codec = Codec.from_options(_strict(options), where=where)
    chosen = dask.config.get(CONFIG_SERIALIZERS, default=None)
    families = (
        SERIALIZERS
        if chosen is None
        else _check_serializers(chosen, f"Dask config {CONFIG_SERIALIZERS!r}")
    )
    _State.codec = codec
    _State.serializers = families


def dask_setup(server: Any) -> None:
    """Preload hook: ``dask worker --preload amber.contrib.dask`` (or ``preload=[...]``).

    Importing the module already registered the family; on a worker this also makes the
    transfers it starts to other workers ask for ``amber.serializers`` (by default
    ``SERIALIZERS``), since a worker otherwise fetches with Dask's default families whatever
    its client chose. On a scheduler or nanny there is nothing to do: the scheduler passes
    frames on without decoding them.
    """
    from distributed import Worker

    _configure_from_dask_config()
    if isinstance(server, Worker):
        _State.workers = (*_State.workers, server.address)
        server.rpc.serializers = list(_State.serializers)
        server.rpc.deserializers = list(_State.serializers)


def dask_teardown(server: Any) -> None:
    """Preload hook: a closing worker is no longer named in this process's decode errors."""
    address = getattr(server, "address_safe", None)
    _State.workers = tuple(w for w in _State.workers if w != address)


_protocol.register_serialization_family(FAMILY, dumps, loads)
_install_whole_first()
