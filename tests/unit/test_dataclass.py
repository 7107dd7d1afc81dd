"""staticconsumer._dataclass behaves as dataclasses.dataclass for every option the package uses.

Each case declares the same class twice, once with the standard decorator and once with ours, and
compares what user code can observe: construction (positional, keyword, defaults, factories, errors),
repr, equality, hashing, immutability, slots, inheritance, pattern matching, dataclasses.fields /
replace / asdict, pickling and copying.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import time
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from staticconsumer import _dataclass

Decorator = Callable[..., Any]

BOTH = pytest.mark.parametrize("make", [dataclasses.dataclass, _dataclass.dataclass], ids=["stdlib", "ours"])


def _point(make: Decorator, **options: Any) -> type[Any]:
    @make(**options)
    class Point:
        """A point."""

        x: int
        y: int = 0
        tags: tuple[str, ...] = dataclasses.field(default_factory=tuple)
        origin: ClassVar[str] = "zero"

    return Point


def _observed(cls: type[Any]) -> dict[str, Any]:
    """What user code sees of a Point class, as comparable values."""
    p = cls(1)
    q = cls(1, 2, ("a",))
    r = cls(x=1, y=2, tags=("a",))
    seen: dict[str, Any] = {
        "repr": repr(q).split(".")[-1],
        "eq": (p == cls(1), q == r, p == q, p != q, p == (1, 0, ())),
        "fields": [(f.name, f.type, f.kw_only) for f in dataclasses.fields(cls)],
        "asdict": dataclasses.asdict(q),
        "replace": dataclasses.replace(q, y=5) == cls(1, 5, ("a",)),
        "match_args": cls.__match_args__,
        "is_dataclass": dataclasses.is_dataclass(cls) and dataclasses.is_dataclass(p),
        "classvar": cls.origin,
        "factory_fresh": cls(1).tags == (),
        "slotted": hasattr(cls, "__slots__"),
        "doc": cls.__doc__,
        "qualname": cls.__qualname__.split(".")[-1],
    }
    errors = []
    for args, kwargs in [((), {}), ((1, 2, (), 4), {}), ((1,), {"x": 2}), ((1,), {"z": 3})]:
        with pytest.raises(TypeError) as caught:
            cls(*args, **kwargs)
        errors.append(type(caught.value))
    seen["errors"] = errors
    return seen


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"frozen": True},
        {"frozen": True, "slots": True},
        {"slots": True},
        {"eq": False},
        {"frozen": True, "slots": True, "kw_only": True},
    ],
    ids=str,
)
def test_observably_the_same_as_dataclasses(options: dict[str, Any]) -> None:
    if options.get("kw_only"):
        theirs, ours = _keyword_point(dataclasses.dataclass), _keyword_point(_dataclass.dataclass)
        assert repr(theirs(x=1, z=2)).split(".")[-1] == repr(ours(x=1, z=2)).split(".")[-1]
        assert ours(x=1, z=2) == ours(z=2, x=1, y=0)
        assert hash(ours(x=1, z=2)) == hash(theirs(x=1, z=2))
        assert [(f.name, f.kw_only) for f in dataclasses.fields(theirs)] == [
            (f.name, f.kw_only) for f in dataclasses.fields(ours)
        ]
        assert theirs.__match_args__ == ours.__match_args__ == ()
        for cls in (theirs, ours):
            with pytest.raises(TypeError):
                cls(1)
            with pytest.raises(TypeError):
                cls()
        return
    theirs, ours = _point(dataclasses.dataclass, **options), _point(_dataclass.dataclass, **options)
    assert _observed(ours) == _observed(theirs)
    hashable = options.get("frozen", False) or not options.get("eq", True)
    for cls in (theirs, ours):
        assert (cls.__hash__ is not None) == hashable
    if options.get("frozen"):
        assert hash(ours(1, 2)) == hash(theirs(1, 2))


def _keyword_point(make: Decorator) -> type[Any]:
    @make(frozen=True, slots=True, kw_only=True)
    class Base:
        x: int

    @make(frozen=True, slots=True, kw_only=True)
    class Point(Base):
        y: int = 0
        z: int

    return Point


@BOTH
def test_frozen_refuses_assignment_and_deletion(make: Decorator) -> None:
    cls = _point(make, frozen=True, slots=True)
    p = cls(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.x
    with pytest.raises((AttributeError, TypeError)):
        p.other = 1


@BOTH
def test_slots_mean_no_instance_dict(make: Decorator) -> None:
    cls = _point(make, slots=True)
    p = cls(1)
    assert not hasattr(p, "__dict__")
    p.y = 3
    assert p.y == 3


@BOTH
def test_mutable_class_keeps_defaults_as_class_attributes(make: Decorator) -> None:
    cls = _point(make)
    assert cls.y == 0
    assert "tags" not in cls.__dict__  # a factory is not a class attribute


@BOTH
def test_inheritance_extends_fields_and_keeps_instances_apart(make: Decorator) -> None:
    @make(frozen=True, slots=True, kw_only=True)
    class Event:
        now: float

    @make(frozen=True, slots=True, kw_only=True)
    class Tick(Event):
        pass

    @make(frozen=True, slots=True, kw_only=True)
    class Start(Event):
        protocols: tuple[str, ...] = ()

    assert [f.name for f in dataclasses.fields(Start)] == ["now", "protocols"]
    assert Tick(now=1.0) != Event(now=1.0)
    assert Start(now=1.0) == Start(now=1.0, protocols=())
    assert isinstance(Start(now=1.0), Event)
    match Start(now=2.0, protocols=("range",)):
        case Tick():
            matched = "tick"
        case Start(protocols=("range",)):
            matched = "start"
        case _:
            matched = "other"
    assert matched == "start"


@BOTH
def test_post_init_runs(make: Decorator) -> None:
    @make(frozen=True)
    class Checked:
        value: int

        def __post_init__(self) -> None:
            if self.value < 0:
                raise ValueError("negative")

    assert Checked(1).value == 1
    with pytest.raises(ValueError, match="negative"):
        Checked(-1)


@BOTH
def test_pickle_and_copy_round_trip(make: Decorator) -> None:
    cls = _point(make, frozen=True, slots=True)
    globals()["Point"] = cls  # pickle finds classes by qualified name
    cls.__qualname__ = "Point"
    try:
        p = cls(3, 4, ("a",))
        assert pickle.loads(pickle.dumps(p)) == p
        assert copy.copy(p) == p
        assert copy.deepcopy(p) == p
    finally:
        del globals()["Point"]


@BOTH
def test_own_methods_are_kept(make: Decorator) -> None:
    @make(frozen=True, slots=True)
    class Named:
        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

    assert repr(Named("a")) == "<a>"


def test_unsupported_options_fall_back_to_dataclasses() -> None:
    @_dataclass.dataclass(frozen=True)
    class WithInitVar:
        a: int
        b: dataclasses.InitVar[int]

        def __post_init__(self, b: int) -> None:
            object.__setattr__(self, "a", self.a + b)

    assert WithInitVar(1, 2).a == 3

    @_dataclass.dataclass
    class WithMetadata:
        a: int = dataclasses.field(default=0, metadata={"unit": "ms"})
        b: int = dataclasses.field(default=0, compare=False)

    assert WithMetadata(1, 2) == WithMetadata(1, 3)
    assert dataclasses.fields(WithMetadata)[0].metadata["unit"] == "ms"


def test_mutable_default_is_refused_as_dataclasses_does() -> None:
    with pytest.raises(ValueError, match="mutable default"):

        @_dataclass.dataclass
        class Bad:
            items: list[int] = []  # noqa: RUF012


def test_default_before_required_is_refused() -> None:
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        @_dataclass.dataclass
        class Bad:
            a: int = 0
            b: int


def test_building_a_class_costs_a_fraction_of_dataclasses() -> None:
    def declare(make: Decorator) -> float:
        started = time.perf_counter()
        for _ in range(20):

            @make(frozen=True, slots=True, kw_only=True)
            class Response:
                now: float
                token: int
                error_code: int = 0
                generation: int = -1
                protocol_type: str | None = None
                protocol_name: str | None = None
                leader_id: str = ""
                member_id: str = ""

        return time.perf_counter() - started

    theirs = min(declare(dataclasses.dataclass) for _ in range(3))
    ours = min(declare(_dataclass.dataclass) for _ in range(3))
    assert ours < theirs / 4, (ours, theirs)
