"""Member order, the registry, the userData codecs, and Java's documented range/roundrobin examples."""

from __future__ import annotations

import struct

import pytest
from assignor_support import run
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors import (
    Assignor,
    CooperativeStickyAssignor,
    GroupAssignment,
    Member,
    MemberAssignment,
    StickyAssignor,
    StickyMemberData,
    TopicInfo,
    create,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    java_key,
    names,
    register,
    sorted_members,
)

# ---- member order ------------------------------------------------------------------------------------


def test_java_key_orders_by_utf16_code_units() -> None:
    bmp_high, astral = "\ue000", "\U0001f600"
    assert bmp_high < astral  # Python: by code point
    assert java_key(astral) < java_key(bmp_high)  # Java: surrogate D83D sorts before E000
    assert sorted(["b", "a", "B", "ab"], key=java_key) == ["B", "a", "ab", "b"]


def test_static_members_first_by_instance_id_then_dynamic_by_member_id() -> None:
    members = [
        Member("a-dynamic", []),
        Member("z", [], group_instance_id="i2"),
        Member("y", [], group_instance_id="i1"),
        Member("0-dynamic", []),
    ]
    assert [m.member_id for m in sorted_members(members)] == ["y", "z", "0-dynamic", "a-dynamic"]


def test_topic_info_validates() -> None:
    with pytest.raises(ValueError, match="negative"):
        TopicInfo(-1)
    with pytest.raises(ValueError, match="one entry per partition"):
        TopicInfo(2, (frozenset({"a"}),))
    assert TopicInfo.with_racks([["a"], []]).racks_of(0) == {"a"}
    assert TopicInfo(3).racks_of(2) == frozenset()


# ---- registry ----------------------------------------------------------------------------------------


def test_registry_has_javas_names_and_fresh_instances() -> None:
    assert names() == ["cooperative-sticky", "range", "roundrobin", "sticky"]
    first, second = create("sticky"), create("sticky")
    assert isinstance(first, StickyAssignor)
    assert first is not second
    assert create("cooperative-sticky").rebalance_protocols == ("cooperative", "eager")
    assert create("range").rebalance_protocols == ("eager",)
    with pytest.raises(KeyError, match="unknown assignor 'nope'"):
        create("nope")


def test_register_custom_assignor_and_refuse_name_clash() -> None:
    class Everything(Assignor):
        name = "test-everything-to-first"

        def assign(self, members, topics):  # type: ignore[no-untyped-def]
            ordered = sorted_members(members)
            out: GroupAssignment = {m.member_id: MemberAssignment() for m in ordered}
            out[ordered[0].member_id].partitions = [
                (t, p) for t, i in topics.items() for p in range(i.partitions)
            ]
            return out

    register(Everything)
    got = create("test-everything-to-first").assign(
        [Member("b", ["t"]), Member("a", ["t"])], {"t": TopicInfo(2)}
    )
    assert got["a"].partitions == [("t", 0), ("t", 1)]

    class Clash(Everything):
        name = "range"

    with pytest.raises(ValueError, match="already registered"):
        register(Clash)


# ---- userData codecs ---------------------------------------------------------------------------------


def test_sticky_user_data_v1_layout() -> None:
    data = encode_sticky_user_data([("t", 0), ("t", 2)], 5)
    assert data == struct.pack(">ih1si", 1, 1, b"t", 2) + struct.pack(">ii", 0, 2) + struct.pack(">i", 5)
    assert decode_sticky_user_data(data) == StickyMemberData((("t", 0), ("t", 2)), 5)


def test_sticky_user_data_v0_has_no_generation() -> None:
    data = encode_sticky_user_data([("t", 1)], None)
    assert decode_sticky_user_data(data) == StickyMemberData((("t", 1),), None)


@pytest.mark.parametrize(
    "blob", [b"\x00", b"\x00\x00\x00\x05", b"\x00\x00\x00\x01\xff\xff", b"\xff\xff\xff\xff"]
)
def test_sticky_user_data_garbage_is_ignored_like_java(blob: bytes) -> None:
    assert decode_sticky_user_data(blob) == StickyMemberData((), -1)


def test_sticky_user_data_entry_without_partitions_at_the_end() -> None:
    # A topic with an empty partition list as the last bytes (V0) or just before the generation (V1).
    entry = struct.pack(">ih1si", 1, 1, b"t", 0)
    assert decode_sticky_user_data(entry) == StickyMemberData((), None)
    assert decode_sticky_user_data(entry + struct.pack(">i", 4)) == StickyMemberData((), 4)
    # One partition announced but only its count present: truncated, ignored like Java.
    assert decode_sticky_user_data(struct.pack(">ih1si", 1, 1, b"t", 1)) == StickyMemberData((), -1)


def test_sticky_user_data_topic_name_cache_is_shared() -> None:
    cache: dict[bytes, str] = {}
    data = encode_sticky_user_data([("orders", 1), ("orders", 2)], 3)
    assert decode_sticky_user_data(data, cache) == decode_sticky_user_data(data)
    assert cache == {b"orders": "orders"}


def test_sticky_user_data_absent() -> None:
    assert decode_sticky_user_data(None) == StickyMemberData((), None)
    assert decode_sticky_user_data(b"") == StickyMemberData((), None)


def test_sticky_user_data_invalid_utf8_is_replaced_not_fatal() -> None:
    data = struct.pack(">ih", 1, 1) + b"\xff" + struct.pack(">ii", 1, 3) + struct.pack(">i", 2)
    assert decode_sticky_user_data(data) == StickyMemberData((("\ufffd", 3),), 2)


@settings(max_examples=80, deadline=None)
@given(
    parts=st.lists(st.tuples(st.text(min_size=1, max_size=5), st.integers(0, 2**31 - 1)), max_size=20),
    generation=st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
)
def test_sticky_user_data_round_trip(parts: list[tuple[str, int]], generation: int | None) -> None:
    decoded = decode_sticky_user_data(encode_sticky_user_data(parts, generation))
    assert sorted(decoded.partitions) == sorted(parts)
    assert decoded.generation == generation


def test_cooperative_user_data() -> None:
    assert encode_cooperative_user_data(7) == b"\x00\x00\x00\x07"
    assert decode_cooperative_user_data(b"\x00\x00\x00\x07") == 7
    assert decode_cooperative_user_data(b"\x01") == -1
    assert decode_cooperative_user_data(None) is None


def test_assignor_hooks_carry_state_between_generations() -> None:
    sticky = StickyAssignor()
    assert sticky.subscription_user_data(["t"]) is None  # never assigned: Java sends null
    sticky.on_assignment(MemberAssignment([("t", 1)]), 4)
    assert decode_sticky_user_data(sticky.subscription_user_data(["t"])) == StickyMemberData((("t", 1),), 4)
    coop = CooperativeStickyAssignor()
    assert coop.subscription_user_data(["t"]) == encode_cooperative_user_data(-1)
    coop.on_assignment(MemberAssignment([("t", 1)]), 9)
    assert coop.subscription_user_data(["t"]) == encode_cooperative_user_data(9)


def test_cooperative_reads_generation_from_user_data_for_old_subscriptions() -> None:
    # Subscription v0/v1 carry no generation: Java falls back to the int32 in userData.
    members = [
        Member("c1", ["t"], owned_partitions=[("t", 0)], user_data=encode_cooperative_user_data(3)),
        Member("c2", ["t"], owned_partitions=[("t", 0)], user_data=encode_cooperative_user_data(2)),
    ]
    got = run("cooperative-sticky", members, {"t": TopicInfo(2)})
    assert got == {"c1": [("t", 0)], "c2": [("t", 1)]}


# ---- Java's documented examples ----------------------------------------------------------------------


def test_range_javadoc_example() -> None:
    members = [Member("C0", ["t0", "t1"]), Member("C1", ["t0", "t1"])]
    got = run("range", members, {"t0": TopicInfo(3), "t1": TopicInfo(3)})
    assert got == {"C0": [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)], "C1": [("t0", 2), ("t1", 2)]}


def test_range_static_members_keep_ranges_across_member_id_changes() -> None:
    topics = {"t0": TopicInfo(3), "t1": TopicInfo(3)}
    before = run("range", [Member("C0", ["t0", "t1"], "I0"), Member("C1", ["t0", "t1"], "I1")], topics)
    after = run("range", [Member("C3", ["t0", "t1"], "I0"), Member("C2", ["t0", "t1"], "I1")], topics)
    assert after["C3"] == before["C0"]
    assert after["C2"] == before["C1"]


def test_roundrobin_javadoc_unequal_subscriptions() -> None:
    members = [Member("C0", ["t0"]), Member("C1", ["t0", "t1"]), Member("C2", ["t0", "t1", "t2"])]
    got = run("roundrobin", members, {"t0": TopicInfo(1), "t1": TopicInfo(2), "t2": TopicInfo(3)})
    assert got == {
        "C0": [("t0", 0)],
        "C1": [("t1", 0)],
        "C2": [("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)],
    }


def test_range_rack_aware_prefers_replica_racks() -> None:
    # Three consumers on racks a, b, c; partition p lives on rack p mod 3.
    topics = {"t": TopicInfo.with_racks([["abc"[p % 3]] for p in range(6)])}
    members = [Member(f"c{i}", ["t"], rack="abc"[i]) for i in range(3)]
    got = run("range", members, topics)
    assert got == {"c0": [("t", 0), ("t", 3)], "c1": [("t", 1), ("t", 4)], "c2": [("t", 2), ("t", 5)]}


def test_range_co_partitioned_topics_stay_aligned_with_racks() -> None:
    topics = {name: TopicInfo.with_racks([["abc"[p % 3]] for p in range(6)]) for name in ("t1", "t2")}
    members = [Member(f"c{i}", ["t1", "t2"], rack="abc"[i]) for i in range(3)]
    got = run("range", members, topics)
    for member, tps in got.items():
        assert {p for t, p in tps if t == "t1"} == {p for t, p in tps if t == "t2"}, member


def test_value_classes_keep_what_a_custom_assignor_relies_on() -> None:
    """The value classes are msgspec Structs (issue 26: the dataclasses they were cost ~2.8 ms of every
    consumer's construction): equality and hashing by fields and class, any iterable for a member's
    topics and owned partitions, repr, frozenness, pickling, positional patterns, validation."""
    import pickle

    member = Member("m", ["t"], "i", [("t", 0)], 3, "r", b"u")
    assert member.topics == frozenset({"t"})
    assert member.owned_partitions == (("t", 0),)
    assert member == Member("m", {"t"}, "i", (("t", 0),), 3, "r", b"u")
    assert hash(member) == hash(Member("m", ("t",), "i", [("t", 0)], 3, "r", b"u"))
    assert member != Member("m", ["t"], "i", [("t", 0)], 4, "r", b"u")
    assert member != ("m", frozenset({"t"}), "i", (("t", 0),), 3, "r", b"u")
    assert repr(TopicInfo(2)) == "TopicInfo(partitions=2, replica_racks=())"
    with pytest.raises(AttributeError):
        member.rack = "x"  # type: ignore[misc]
    with pytest.raises(ValueError, match="negative"):
        TopicInfo(-1)
    with pytest.raises(ValueError, match="one entry per partition"):
        TopicInfo(2, (frozenset({"a"}),))
    for value in (member, TopicInfo.with_racks([["a"], ["b"]]), MemberAssignment([("t", 1)], b"x")):
        assert pickle.loads(pickle.dumps(value)) == value
    assignment = MemberAssignment()
    assignment.partitions.append(("t", 0))
    assert assignment == MemberAssignment([("t", 0)])
    assert MemberAssignment().partitions == []
    with pytest.raises(TypeError):
        hash(assignment)
    match TopicInfo(3):
        case TopicInfo(partitions, racks):
            assert (partitions, racks) == (3, ())
    assert StickyMemberData((("t", 0),), 1) == StickyMemberData((("t", 0),), 1) != StickyMemberData((), 1)
