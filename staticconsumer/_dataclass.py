"""``dataclass`` for value classes, built without compiling code: what ``import staticconsumer`` can afford.

``dataclasses.dataclass`` writes the source of ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__`` and ``__delattr__`` for every class and compiles each with ``exec``: about 0.6 ms per
class. The membership vocabulary alone has 59 of them, on the import path of every consumer, so every
restart of a static member paid ~40 ms for them before it could join (issue 18). This decorator builds
the same methods as closures over the field list instead (about 30 microseconds per class) and leaves
a class that the standard library treats as a dataclass: ``dataclasses.fields``, ``replace``,
``asdict``, ``is_dataclass``, pattern matching, pickling and ``copy`` all work, and a type checker
reads it as ``dataclasses.dataclass`` (``dataclass_transform``).

It is a drop-in for the options this package uses (``frozen``, ``slots``, ``kw_only``, ``eq``) and
fields with a default or a ``field(default=..., default_factory=...)``; anything else (``order``,
``init=False`` fields, ``InitVar``, a class that defines its own ``__eq__``, ...) is handed to
``dataclasses.dataclass`` unchanged, so a class never behaves differently from a real dataclass.
The generated ``__init__`` binds its arguments in Python rather than in compiled code (about 1-2 us
per instance): meant for events, actions and settings, not for per-record objects.
"""

from __future__ import annotations

import dataclasses
import itertools
import typing
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

_T = TypeVar("_T")

_MISSING: Any = dataclasses.MISSING
_FIELD: Any = getattr(dataclasses, "_FIELD", None)
_PARAMS: Any = getattr(dataclasses, "_DataclassParams", None)
_SUPPORTED = _FIELD is not None and _PARAMS is not None and hasattr(dataclasses.Field, "kw_only")
"""The standard library internals this relies on (stable since 3.10); without them: real dataclasses."""

_MUTABLE_DEFAULTS = (list, dict, set)


@overload
def dataclass(cls: type[_T], /) -> type[_T]: ...


@overload
def dataclass(
    *, frozen: bool = False, slots: bool = False, kw_only: bool = False, eq: bool = True
) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(
    cls: type[_T] | None = None,
    /,
    *,
    frozen: bool = False,
    slots: bool = False,
    kw_only: bool = False,
    eq: bool = True,
) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """``dataclasses.dataclass(cls, frozen=, slots=, kw_only=, eq=)``, without compiling code."""

    def wrap(cls: type[_T]) -> type[_T]:
        built = _build(cls, frozen=frozen, slots=slots, kw_only=kw_only, eq=eq) if _SUPPORTED else None
        if built is None:
            return dataclasses.dataclass(cls, frozen=frozen, slots=slots, kw_only=kw_only, eq=eq)
        return built

    return wrap if cls is None else wrap(cls)


def _annotation_kind(annotation: Any) -> str:
    """How dataclasses reads an annotation (strings included): "classvar", "initvar" or "field"."""
    if isinstance(annotation, str):
        head = annotation.strip().split("[", 1)[0].strip()
        if head in ("ClassVar", "typing.ClassVar"):
            return "classvar"
        if head in ("InitVar", "dataclasses.InitVar"):
            return "initvar"
        return "field"
    if annotation is typing.ClassVar or typing.get_origin(annotation) is typing.ClassVar:
        return "classvar"
    if annotation is dataclasses.InitVar or isinstance(annotation, dataclasses.InitVar):
        return "initvar"
    return "field"


def _plain(f: dataclasses.Field[Any]) -> bool:
    """A field this module can build: init, repr and compare on, no hash override, no metadata."""
    return f.init and f.repr and f.compare and f.hash is None and not f.metadata


def _build(cls: type[_T], *, frozen: bool, slots: bool, kw_only: bool, eq: bool) -> type[_T] | None:
    namespace = cls.__dict__
    if "__eq__" in namespace and eq:  # its own equality: dataclasses decides what __hash__ becomes
        return None
    fields: dict[str, dataclasses.Field[Any]] = {}
    any_frozen_base = False
    any_dataclass_base = False
    for base in cls.__mro__[-1:0:-1]:
        base_fields = base.__dict__.get("__dataclass_fields__")
        if base_fields is None:
            continue
        any_dataclass_base = True
        any_frozen_base = any_frozen_base or base.__dict__["__dataclass_params__"].frozen
        for f in base_fields.values():
            if f._field_type is _FIELD:
                fields[f.name] = f
    if any_dataclass_base and any_frozen_base != frozen:
        return None  # dataclasses raises the right TypeError
    own: list[str] = []
    for name, annotation in namespace.get("__annotations__", {}).items():
        kind = _annotation_kind(annotation)
        if kind == "classvar":
            continue
        if kind == "initvar":
            return None
        default = namespace.get(name, _MISSING)
        if isinstance(default, dataclasses.Field):
            f = default
            if f.kw_only is _MISSING:
                f.kw_only = kw_only
        else:
            if isinstance(default, _MUTABLE_DEFAULTS):
                return None  # dataclasses raises ValueError: use default_factory
            f = dataclasses.field(default=default, kw_only=kw_only)
        if not _plain(f):
            return None
        f.name = name
        f.type = annotation
        f._field_type = _FIELD
        fields[name] = f
        own.append(name)
    for name, value in namespace.items():
        if isinstance(value, dataclasses.Field) and name not in own:
            return None  # a field() without an annotation: dataclasses raises TypeError

    ordered = list(fields.values())
    positional = [f for f in ordered if not f.kw_only]
    keyword = [f for f in ordered if f.kw_only]
    seen_default = False
    for f in positional:
        has_default = f.default is not _MISSING or f.default_factory is not _MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
        seen_default = seen_default or has_default

    names = tuple(f.name for f in ordered)
    values = _getter(names)

    cell: list[type[Any]] = []
    methods: dict[str, Any] = {}
    methods["__init__"] = _make_init(cls.__qualname__, positional, keyword, hasattr(cls, "__post_init__"))
    methods["__repr__"] = _make_repr(names)
    if eq:

        def __eq__(self: Any, other: Any) -> Any:
            if other.__class__ is self.__class__:
                return values(self) == values(other)
            return NotImplemented

        methods["__eq__"] = __eq__
    hash_method: Any = _MISSING
    if eq and "__hash__" not in namespace:
        if frozen:

            def __hash__(self: Any) -> int:
                return hash(values(self))

            hash_method = __hash__
        else:
            hash_method = None
    if frozen:
        field_names = frozenset(names)

        def __setattr__(self: Any, name: str, value: Any) -> None:
            if type(self) is cell[0] or name in field_names:
                raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
            super(cell[0], self).__setattr__(name, value)

        def __delattr__(self: Any, name: str) -> None:
            if type(self) is cell[0] or name in field_names:
                raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
            super(cell[0], self).__delattr__(name)

        methods["__setattr__"] = __setattr__
        methods["__delattr__"] = __delattr__
        if "__setattr__" in namespace or "__delattr__" in namespace:
            return None  # dataclasses raises TypeError
    params = {
        "init": True,
        "repr": True,
        "eq": eq,
        "order": False,
        "unsafe_hash": False,
        "frozen": frozen,
        "match_args": True,
        "kw_only": kw_only,
        "slots": slots,
        "weakref_slot": False,
    }
    extras: dict[str, Any] = {
        "__dataclass_fields__": fields,
        "__dataclass_params__": _PARAMS(**{k: params[k] for k in _PARAMS.__slots__}),
    }
    if "__match_args__" not in namespace:
        extras["__match_args__"] = tuple(f.name for f in positional)

    if slots:
        if "__slots__" in namespace:
            raise TypeError(f"{cls.__name__} already specifies __slots__")
        body = {k: v for k, v in namespace.items() if k not in own and k not in ("__dict__", "__weakref__")}
        inherited = set(itertools.chain.from_iterable(_slots_of(b) for b in cls.__mro__[1:-1]))
        body["__slots__"] = tuple(n for n in names if n not in inherited)
        if frozen:
            body["__getstate__"] = _getstate
            body["__setstate__"] = _setstate
        for name, method in methods.items():
            if name not in namespace:
                body[name] = method
        if hash_method is not _MISSING:
            body["__hash__"] = hash_method
        body.update(extras)
        metaclass: Any = type(cls)
        built: type[Any] = metaclass(cls.__name__, cls.__bases__, body)
        built.__qualname__ = cls.__qualname__
    else:
        built = cls
        for name in own:  # as dataclasses: a default stays a class attribute, a factory does not
            f = fields[name]
            if f.default is not _MISSING:
                setattr(built, name, f.default)
            elif name in namespace:
                delattr(built, name)
        for name, method in methods.items():
            if name not in namespace:
                setattr(built, name, method)
        if hash_method is not _MISSING:
            built.__hash__ = hash_method  # type: ignore[method-assign]
        for name, value in extras.items():
            setattr(built, name, value)
    for method in methods.values():
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
    cell.append(built)
    return built


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    if len(names) > 1:
        return attrgetter(*names)
    if len(names) == 1:
        name = names[0]
        return lambda self: (getattr(self, name),)
    return lambda self: ()


def _slots_of(cls: type[Any]) -> tuple[str, ...]:
    slots = cls.__dict__.get("__slots__", ())
    return (slots,) if isinstance(slots, str) else tuple(slots)


def _make_init(
    qualname: str,
    positional: list[dataclasses.Field[Any]],
    keyword: list[dataclasses.Field[Any]],
    post_init: bool,
) -> Callable[..., None]:
    positional_names = tuple(f.name for f in positional)
    rest = tuple(positional + keyword)
    defaults = {f.name: f.default for f in rest if f.default is not _MISSING}
    factories: dict[str, Callable[[], Any]] = {
        f.name: f.default_factory  # type: ignore[misc]
        for f in rest
        if f.default_factory is not _MISSING
    }
    known = frozenset(f.name for f in rest)
    count = len(positional_names)
    set_field = object.__setattr__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > count:
            raise TypeError(
                f"{qualname}.__init__() takes {count + 1} positional arguments but {len(args) + 1} were given"
            )
        for name, value in zip(positional_names, args, strict=False):
            if name in kwargs:
                raise TypeError(f"{qualname}.__init__() got multiple values for argument {name!r}")
            set_field(self, name, value)
        missing = []
        for f in rest[len(args) :]:
            name = f.name
            if name in kwargs:
                set_field(self, name, kwargs[name])
            elif name in defaults:
                set_field(self, name, defaults[name])
            elif name in factories:
                set_field(self, name, factories[name]())
            else:
                missing.append(name)
        if not known.issuperset(kwargs):
            unexpected = sorted(set(kwargs) - known)[0]
            raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument {unexpected!r}")
        if missing:
            named = ", ".join(map(repr, missing))
            raise TypeError(f"{qualname}.__init__() missing required arguments: {named}")
        if post_init:
            self.__post_init__()

    return __init__


def _make_repr(names: tuple[str, ...]) -> Callable[[Any], str]:
    def __repr__(self: Any) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({shown})"

    return __repr__


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(dataclasses.fields(self), state, strict=False):
        object.__setattr__(self, f.name, value)


__all__ = ["dataclass"]
