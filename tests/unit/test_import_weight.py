"""A restarting consumer pays its imports before it can own a partition: what a consumer does not need
at start stays out of ``import staticconsumer`` and ``StaticConsumer(...)`` (issue 18)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

NEVER_AT_START = (
    "pyspark",
    "matplotlib",
    "numpy",
    "pandas",
    "opentelemetry",
    "importlib.metadata",
    "anyio",
    "staticconsumer.admin",
    "staticconsumer.analytics",
    "staticconsumer.eventlog",
    "staticconsumer.testing",
    "staticconsumer.cli",
    "staticconsumer._groupless",
    "staticconsumer.sync",
)
"""Heavy or tool-only modules: analytics and admin tools, test helpers, the event log (only when
configured), OpenTelemetry (only once the process uses it), ``importlib.metadata`` (the package
version is ``staticconsumer.__version__``), and anyio (the membership loop uses the standard library's
task groups: anyio's asyncio backend cost ~15 ms of CPU at every start; only the synchronous consumer,
``staticconsumer.sync``, uses it, for its blocking portal); the consumer without a group
(``group_id=None``) loads only when one is built."""


NOT_AT_IMPORT = (
    "staticconsumer.membership.classic",
    "staticconsumer.membership.consumer_group",
    "staticconsumer.broker_support",
    "assignors.model",
    "assignors.range",
    "assignors.roundrobin",
    "assignors.sticky",
    "assignors.userdata",
    "staticconsumer.protocol.consumer_group",
    "staticconsumer.protocol.metadata",
    "staticconsumer.protocol.admin",
    "staticconsumer.protocol.kafka_json",
    "staticconsumer._errors_rare",
    *(
        AFTER_THE_PROBE := (
            "staticconsumer.membership.actions",
            "staticconsumer.membership.events",
            "staticconsumer.membership.rules",
            "staticconsumer.membership.observe",
            "staticconsumer.membership.reconcile",
            "staticconsumer.membership.machine",
            "staticconsumer.membership.backoff",
            "staticconsumer.protocol.group",
            "staticconsumer.protocol.offsets",
            "staticconsumer.connection.access",
            "staticconsumer.connection.topics",
            "staticconsumer.runtime.topics",
            "staticconsumer.runtime.offsets",
            "staticconsumer.runtime.instance_lock",
            "staticconsumer.runtime.loop",
            "staticconsumer.runtime.assignment",
            "staticconsumer.protocol.consumer",
        )
    ),
    *(
        PROBE := (
            "staticconsumer.runtime.thread",
            "staticconsumer.connection.bootstrapping",
            "staticconsumer.protocol.coordinator",
        )
    ),
)
"""Loaded by the member that runs them, not by ``import staticconsumer`` (issue 26): each protocol's
membership machine (a restart runs one of the two), and the assignors' code (a consumer creates its
assignors when it is built; KIP-848's consumer protocol never runs one), and the check that a broker
speaks KIP-848 (``broker_support``); the wire messages of KIP-848 (``consumer_group``, and ``metadata``,
which resolves its topic ids), of the admin tools and the JSON form of the golden vectors; the rarer
error classes (``staticconsumer._errors_rare``: broker codes a start does not raise, analytics errors).
``AFTER_THE_PROBE``: what a start needs only once its bootstrap probe has answered (the machine's events,
actions and rules, the group messages, the access check, the topic watch, the membership loop), loaded
while the probe waits on the network; ``PROBE``: the membership thread and the probe, loaded by
``start()``."""

KIP_848_ONLY = (
    "staticconsumer.membership.consumer_group",
    "staticconsumer.broker_support",
    "staticconsumer.protocol.consumer_group",
    "staticconsumer.protocol.metadata",
)
"""What only a consumer-protocol (KIP-848) member needs: its machine, the check that the broker
speaks that protocol, and its messages. A classic member's restart never loads them."""


def _loaded_after(
    code: str, environ: dict[str, str] | None = None, watched: tuple[str, ...] = NEVER_AT_START
) -> list[str]:
    """Which of ``watched`` a fresh interpreter has imported after running ``code``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(environ or {})
    report = f"print(json.dumps([m for m in {list(watched)!r} if m in sys.modules]))"
    script = f"import json, sys\n{code}\n{report}"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env)
    loaded: list[str] = json.loads(run.stdout)
    return loaded


def _printed(script: str) -> Any:
    """What ``script``, run in a fresh interpreter, printed as JSON."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env)
    return json.loads(run.stdout)


CONSTRUCT = (
    "import staticconsumer\n"
    "staticconsumer.StaticConsumer('t', bootstrap_servers='localhost:9092', group_id='g', "
    "group_instance_id='g-0')"
)

CLASSIC_START = (
    CONSTRUCT + "\nimport staticconsumer.runtime.loop, staticconsumer.runtime.requests, "
    "staticconsumer.runtime.thread, staticconsumer.membership.classic"
)
"""Import, construct, then what the membership thread loads for a classic member before its first record
(its loop, with the request table, and the classic machine)."""


def test_import_and_construct_load_nothing_heavy() -> None:
    assert _loaded_after(CONSTRUCT) == []


AT_IMPORT = (
    "assignors",
    "staticconsumer",
    "staticconsumer._aiokafka",
    "staticconsumer._inputs",
    "staticconsumer._partitions",
    "staticconsumer.connection",
    "staticconsumer.connection.monitor",
    "staticconsumer.connection.reconnect",
    "staticconsumer.consumer",
    "staticconsumer.errors",
    "staticconsumer.listener",
    "staticconsumer.membership",
    "staticconsumer.membership.types",
    "staticconsumer.protocol",
    "staticconsumer.protocol._base",
    "staticconsumer.protocol.api_keys",
    "staticconsumer.runtime",
    "staticconsumer.settings",
    "staticconsumer.telemetry",
)
"""Every module of ours ``import staticconsumer`` loads (issue 26: each costs ~0.1 ms to find and load
besides what it runs). The assignor registry is the ``assignors`` package's own, not a module apart: the
settings read it at every import. A module added here should be one a restart needs before its first
record anyway."""


def test_import_loads_these_modules_of_ours_and_no_other() -> None:
    ours = "sorted(m for m in sys.modules if m.split('.')[0] in ('staticconsumer', 'assignors'))"
    assert _printed(f"import json, sys\nimport staticconsumer\nprint(json.dumps({ours}))") == list(AT_IMPORT)


def test_import_loads_no_machine_and_no_assignor() -> None:
    assert _loaded_after("import staticconsumer", watched=NOT_AT_IMPORT) == []


@pytest.mark.parametrize(
    ("group_protocol", "machine"),
    [
        ("classic", "staticconsumer.membership.classic"),
        ("consumer", "staticconsumer.membership.consumer_group"),
    ],
)
def test_a_member_loads_only_its_protocols_machine(group_protocol: str, machine: str) -> None:
    code = (
        "from staticconsumer.membership import MembershipConfig, new_machine\n"
        "config = MembershipConfig(group_id='g', decode_assignment=lambda data: [], "
        "group_instance_id='g-0')\n"
        f"new_machine(config, group_protocol={group_protocol!r}, member_id='m')"
    )
    machines = NOT_AT_IMPORT[:2]
    assert _loaded_after(code, watched=machines) == [machine]


def test_a_classic_members_restart_path_loads_nothing_of_kip_848() -> None:
    """Import, construct, then what the membership thread loads for a classic member (its loop, with the
    request table, and the classic machine): no module of the consumer protocol's own."""
    assert _loaded_after(CLASSIC_START, watched=KIP_848_ONLY) == []


def test_a_classic_members_restart_path_builds_no_rare_error_class() -> None:
    """The errors a classic start can raise before its first record are in ``staticconsumer.errors``
    itself; the loop, the request table and the classic machine name none of the rarer ones."""
    assert _loaded_after(CLASSIC_START, watched=("staticconsumer._errors_rare",)) == []


def test_the_rare_errors_are_the_same_public_classes_on_first_use() -> None:
    """``staticconsumer.errors.X``, ``from staticconsumer.errors import X``, ``error_class_for`` and
    pickle give the one class, named as in ``staticconsumer.errors``; the list of rare names is whole."""
    code = (
        "import pickle, aiokafka.errors as aio, staticconsumer.errors as e\n"
        "from staticconsumer.errors import UnknownMemberIdError, SparkMasterError, InvalidTopicError\n"
        "import staticconsumer._errors_rare as rare\n"
        "defined = {n for n, v in vars(rare).items() if isinstance(v, type)\n"
        "           and v.__module__ == 'staticconsumer.errors'}\n"
        "defined -= {'BrokerError', 'ErrorCode', 'ProtocolError', 'StaticConsumerError'}  # what it imports\n"
        "assert defined == set(e._RARE), defined ^ set(e._RARE)\n"
        "assert e.UnknownMemberIdError is UnknownMemberIdError is rare.UnknownMemberIdError\n"
        "assert e.error_class_for(25) is UnknownMemberIdError and UnknownMemberIdError.message == "
        "'UNKNOWN_MEMBER_ID'\n"
        "assert issubclass(UnknownMemberIdError, aio.UnknownMemberIdError)\n"
        "assert issubclass(SparkMasterError, e.StaticConsumerError)\n"
        "assert SparkMasterError.__module__ == e.__name__\n"
        "error = pickle.loads(pickle.dumps(e.broker_error(25, 'gone')))\n"
        "assert type(error) is UnknownMemberIdError and str(error) == 'UNKNOWN_MEMBER_ID (25): gone'\n"
        "assert e.error_class_for(17) is InvalidTopicError\n"
        "assert e.error_class_for(9999) is e.UnknownServerError\n"
        "from staticconsumer.errors import BrokerUnreachableError, ConnectionAttempt\n"
        "attempt = ConnectionAttempt('h:1', 'refused', 'nothing listening')\n"
        "assert ConnectionAttempt.__module__ == e.__name__\n"
        "assert pickle.loads(pickle.dumps(attempt)) == attempt\n"
        "error = pickle.loads(pickle.dumps(BrokerUnreachableError('cannot reach h:1', [attempt])))\n"
        "assert type(error) is BrokerUnreachableError and error.attempts == (attempt,)\n"
        "assert isinstance(error, (e.StaticConsumerError, aio.KafkaConnectionError, ConnectionError))\n"
        "try:\n"
        "    e.NoSuchError\n"
        "except AttributeError as error:\n"
        "    assert 'NoSuchError' in str(error)\n"
        "else:\n"
        "    raise AssertionError('a missing name resolved')"
    )
    assert _loaded_after(code) == []


def test_the_consumer_protocol_check_loads_on_first_use() -> None:
    """The request table's KIP-848 check still reaches broker_support: loaded, and refusing a broker
    that does not advertise ConsumerGroupHeartbeat."""
    code = (
        "from staticconsumer.runtime.requests import REQUESTS\n"
        "from staticconsumer.membership import actions\n"
        "from staticconsumer.errors import ConsumerProtocolUnsupportedError\n"
        "check = REQUESTS[actions.SendConsumerGroupHeartbeat].check\n"
        "try:\n"
        "    check({}, 1)\n"
        "except ConsumerProtocolUnsupportedError:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('a broker without ConsumerGroupHeartbeat passed the check')"
    )
    assert _loaded_after(code, watched=KIP_848_ONLY) == [
        "staticconsumer.broker_support",
        "staticconsumer.protocol.consumer_group",
        "staticconsumer.protocol.metadata",
    ]


@pytest.mark.parametrize(
    ("group_protocol", "machine"),
    [
        ("classic", "staticconsumer.membership.classic"),
        ("consumer", "staticconsumer.membership.consumer_group"),
    ],
)
def test_start_loads_the_membership_loop_and_its_machine_while_the_thread_bootstraps(
    group_protocol: str, machine: str
) -> None:
    """start() loads what follows the probe while the membership thread's probe waits for its answers:
    here a server that never answers keeps the probe waiting until request.timeout.ms, so the start
    never reaches the steps that use them, and they are loaded all the same (this protocol's machine
    only, and KIP-848's broker check with a consumer-protocol member only)."""
    code = (
        "import asyncio, socket\n"
        "import staticconsumer\n"
        "silent = socket.socket(); silent.bind(('127.0.0.1', 0)); silent.listen(8)\n"
        "port = silent.getsockname()[1]\n"
        "c = staticconsumer.StaticConsumer('t', bootstrap_servers=f'127.0.0.1:{port}', group_id='g', "
        f"group_instance_id='g-0', group_protocol={group_protocol!r}, request_timeout_ms=1500)\n"
        "try:\n"
        "    asyncio.run(c.start())\n"
        "except staticconsumer.errors.BrokerConnectionError:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('started against a silent server')"
    )
    watched = (*AFTER_THE_PROBE, *NOT_AT_IMPORT[:3])
    loaded = _loaded_after(code, watched=watched)
    assert [m for m in loaded if m in NOT_AT_IMPORT[:2]] == [machine]
    from staticconsumer.runtime.thread import AFTER_THE_PROBE as preloaded

    assert set(preloaded) <= set(loaded)
    assert ("staticconsumer.broker_support" in loaded) == (group_protocol == "consumer")


def test_the_thread_brings_the_probes_modules_and_nothing_it_does_not_need() -> None:
    """What ``start()`` loads before the membership thread sends its bootstrap probe (the thread's module)
    brings all the probe needs, so that thread imports none of our modules while the preload runs, and
    nothing that only the steps after the probe need: those load while it waits."""
    code = CONSTRUCT + "\nimport staticconsumer.runtime.thread"
    watched = (*PROBE, *AFTER_THE_PROBE, *NOT_AT_IMPORT[:3])
    assert _loaded_after(code, watched=watched) == list(PROBE)


def test_the_lazy_names_of_membership_and_connection_are_their_modules_objects() -> None:
    """Every public name of the two packages made lazy still resolves, to its module's object;
    ``RebalanceProtocol`` (now defined with the value types) is the one class under both names and
    pickles by reference."""
    code = (
        "import pickle, importlib\n"
        "import staticconsumer.membership as m, staticconsumer.connection as c\n"
        "from staticconsumer.membership import Backoff, MembershipConfig, events, new_machine\n"
        "from staticconsumer.connection import check_access, ConnectionMonitor\n"
        "import staticconsumer.membership.backoff, staticconsumer.membership.types\n"
        "import staticconsumer.membership.machine, staticconsumer.membership.reconcile as r\n"
        "import staticconsumer.connection.access, staticconsumer.connection.monitor\n"
        "assert Backoff is staticconsumer.membership.backoff.Backoff\n"
        "assert MembershipConfig is staticconsumer.membership.types.MembershipConfig\n"
        "assert events is importlib.import_module('staticconsumer.membership.events')\n"
        "assert new_machine is staticconsumer.membership.machine.new_machine\n"
        "assert check_access is staticconsumer.connection.access.check_access\n"
        "assert ConnectionMonitor is staticconsumer.connection.monitor.ConnectionMonitor\n"
        "for module in (m, c):\n"
        "    for name in module.__all__:\n"
        "        getattr(module, name)\n"
        "    try:\n"
        "        module.NoSuchName\n"
        "    except AttributeError as e:\n"
        "        assert 'NoSuchName' in str(e)\n"
        "    else:\n"
        "        raise AssertionError(module)\n"
        "assert m.RebalanceProtocol is r.RebalanceProtocol\n"
        "cooperative = m.RebalanceProtocol.COOPERATIVE\n"
        "assert pickle.loads(pickle.dumps(cooperative)) is r.RebalanceProtocol.COOPERATIVE"
    )
    assert _loaded_after(code) == []


def test_the_lazy_names_are_the_same_objects() -> None:
    code = (
        "import assignors, staticconsumer.membership as m, staticconsumer.protocol as p\n"
        "from assignors.sticky import CooperativeStickyAssignor\n"
        "from assignors.userdata import encode_sticky_user_data\n"
        "from staticconsumer.membership.classic import ClassicMachine\n"
        "from staticconsumer.membership.consumer_group import ConsumerGroupMachine, InstanceEvidence\n"
        "assert assignors.CooperativeStickyAssignor is CooperativeStickyAssignor\n"
        "assert type(assignors.create('cooperative-sticky')) is CooperativeStickyAssignor\n"
        "assert assignors.names() == ['cooperative-sticky', 'range', 'roundrobin', 'sticky']\n"
        "assert p.encode_sticky_user_data is encode_sticky_user_data\n"
        "assert m.ClassicMachine is ClassicMachine and m.MembershipMachine is ClassicMachine\n"
        "assert m.ConsumerGroupMachine is ConsumerGroupMachine and m.InstanceEvidence is InstanceEvidence\n"
        "assert m.AnyMachine == ClassicMachine | ConsumerGroupMachine\n"
        "for module in (assignors, m, p):\n"
        "    try:\n"
        "        module.NoSuchName\n"
        "    except AttributeError as e:\n"
        "        assert 'NoSuchName' in str(e)\n"
        "    else:\n"
        "        raise AssertionError(module)"
    )
    assert _loaded_after(code) == []


def test_the_protocol_tables_load_their_messages_on_first_use() -> None:
    """Every public name of ``staticconsumer.protocol`` still resolves, to its module's object; the API
    tables, built on first read, list what they always did; naming one API loads its module only."""
    code = (
        "import staticconsumer.protocol as p, sys\n"
        "from staticconsumer.protocol.api_keys import API_NAMES, spec_for_key\n"
        "spec = spec_for_key(11)\n"
        "assert spec is not None and spec.request is p.JoinGroupRequest and spec.name == API_NAMES[11]\n"
        "assert 'staticconsumer.protocol.consumer_group' not in sys.modules\n"
        "assert spec_for_key(1) is None and spec_for_key(999) is None\n"
        "import staticconsumer.protocol.group as g, staticconsumer.protocol.consumer_group as cg\n"
        "assert p.ConsumerGroupHeartbeatRequest is cg.ConsumerGroupHeartbeatRequest\n"
        "assert p.AUTHORIZED_OPERATIONS_OMITTED == g.AUTHORIZED_OPERATIONS_OMITTED == -(2**31)\n"
        "for name in p.__all__:\n"
        "    getattr(p, name)\n"
        "assert list(p.APIS) == ['JoinGroup', 'SyncGroup', 'Heartbeat', 'LeaveGroup', 'OffsetCommit', "
        "'OffsetFetch', 'DescribeGroups', 'FindCoordinator', 'ConsumerGroupHeartbeat', "
        "'ConsumerGroupDescribe', 'Metadata']\n"
        "assert list(p.ADMIN_APIS) == ['ListGroups', 'CreateAcls']\n"
        "assert p.APIS_BY_KEY == {s.key: s for s in (*p.APIS.values(), *p.ADMIN_APIS.values())}\n"
        "assert all(spec_for_key(k) is s for k, s in p.APIS_BY_KEY.items())\n"
        "assert all(API_NAMES[k] == s.name for k, s in p.APIS_BY_KEY.items())"
    )
    assert _loaded_after(code) == []


def test_tools_load_on_first_use() -> None:
    code = "import staticconsumer\nstaticconsumer.GroupAdmin\nfrom staticconsumer import GroupAdmin"
    assert "staticconsumer.admin" in _loaded_after(code)


def test_opentelemetry_configured_by_the_environment_loads_with_the_consumer() -> None:
    assert "opentelemetry" in _loaded_after(CONSTRUCT, {"OTEL_SERVICE_NAME": "billing"})


@pytest.mark.parametrize(
    ("code", "environ"),
    [
        ("import opentelemetry.trace\n" + CONSTRUCT, {}),
        (CONSTRUCT, {"OTEL_SERVICE_NAME": "billing"}),
    ],
    ids=["imported", "configured"],
)
def test_telemetry_is_built_at_once_when_the_process_uses_opentelemetry(
    code: str, environ: dict[str, str]
) -> None:
    script = (
        code + "\nc = staticconsumer.StaticConsumer('t', bootstrap_servers='localhost:9092', group_id='g')\n"
        "from staticconsumer.telemetry import RecordTracer, TelemetryObserver\n"
        "assert any(isinstance(o, TelemetryObserver) for o in c._observers), c._observers\n"
        "assert isinstance(c._records, RecordTracer), c._records"
    )
    _loaded_after(script, environ)


def test_telemetry_waits_for_opentelemetry_when_nobody_uses_it() -> None:
    script = (
        CONSTRUCT
        + "\nc = staticconsumer.StaticConsumer('t', bootstrap_servers='localhost:9092', group_id='g')\n"
        "from staticconsumer.telemetry import DeferredRecordTracer, DeferredTelemetryObserver\n"
        "assert any(isinstance(o, DeferredTelemetryObserver) for o in c._observers), c._observers\n"
        "assert isinstance(c._records, DeferredRecordTracer), c._records"
    )
    assert _loaded_after(script) == []


def test_an_event_log_loads_when_configured(tmp_path: Path) -> None:
    path = str(tmp_path / "events.jsonl")
    code = CONSTRUCT.replace("'g-0'", f"'g-0', event_log_path={path!r}")
    assert "staticconsumer.eventlog" in _loaded_after(code)


def test_anyio_comes_with_the_sync_consumer_only() -> None:
    """The check above names anyio rightly: the sync consumer's module does load it."""
    assert {"anyio", "staticconsumer.sync"} <= set(_loaded_after("import staticconsumer.sync"))


def test_import_and_construct_build_no_dataclass_resolve_no_annotation_and_compile_no_regex() -> None:
    """What a static restart's import and construction used to spend CPU on without needing it (issue 26):
    standard dataclasses (the assignors' value classes, ~0.6 ms each to generate; msgspec Structs now),
    resolving every Settings annotation (``msgspec.structs.fields``: 53 forward references compiled and
    evaluated), and regexes: those of rare paths were compiled at import, and the group.instance.id
    check's (~0.1 ms, every static consumer's construction) is a set of characters now."""
    script = (
        "import dataclasses, json, re, sys\n"
        "import msgspec.structs\n"
        "seen = {'dataclass': [], 'fields': [], 'regex': []}\n"
        "def ours(depth):\n"
        "    name = sys._getframe(depth).f_globals.get('__name__', '')\n"
        "    return name.split('.')[0] in ('staticconsumer', 'assignors')\n"
        "real_dataclass, real_fields = dataclasses.dataclass, msgspec.structs.fields\n"
        "real_compile = re.compile\n"
        "def dataclass(*args, **kwargs):\n"
        "    if ours(2):\n"
        "        seen['dataclass'].append(sys._getframe(1).f_globals['__name__'])\n"
        "    return real_dataclass(*args, **kwargs)\n"
        "def fields(*args, **kwargs):\n"
        "    if ours(2):\n"
        "        seen['fields'].append(sys._getframe(1).f_globals['__name__'])\n"
        "    return real_fields(*args, **kwargs)\n"
        "def compile(pattern, flags=0):\n"
        "    if ours(2):\n"
        "        seen['regex'].append(str(pattern))\n"
        "    return real_compile(pattern, flags)\n"
        "dataclasses.dataclass, msgspec.structs.fields, re.compile = dataclass, fields, compile\n"
        f"{CONSTRUCT}\n"
        "print(json.dumps(seen))"
    )
    assert _printed(script) == {"dataclass": [], "fields": [], "regex": []}


ASSIGNOR_ALGORITHMS = ("assignors.range", "assignors.roundrobin", "assignors.sticky", "assignors.userdata")


def test_a_member_builds_and_joins_with_its_assignors_without_their_algorithms() -> None:
    """Every member builds its assignors and sends their names and user data in JoinGroup; only the
    leader runs ``assign``, which loads its algorithm on first call (issue 26)."""
    join = (
        f"{CONSTRUCT}\n"
        "import assignors\n"
        "for name in ('range', 'cooperative-sticky', 'roundrobin'):\n"
        "    a = assignors.create(name)\n"
        "    a.subscription_user_data({'t'})\n"
        "    a.on_assignment(assignors.MemberAssignment([('t', 0)]), 3)\n"
        "    a.subscription_user_data({'t'})"
    )
    assert _loaded_after(join, watched=ASSIGNOR_ALGORITHMS) == []
    lead = (
        "import assignors\n"
        "members = [assignors.Member('m1', frozenset({'t'}))]\n"
        "assert assignors.create('cooperative-sticky').assign(members, {'t': assignors.TopicInfo(2)})"
        " == {'m1': assignors.MemberAssignment([('t', 0), ('t', 1)])}\n"
        "assert assignors.create('range').assign(members, {'t': assignors.TopicInfo(1)})"
        " == {'m1': assignors.MemberAssignment([('t', 0)])}"
    )
    assert _loaded_after(lead, watched=ASSIGNOR_ALGORITHMS) == [
        "assignors.range",
        "assignors.sticky",
        "assignors.userdata",
    ]


def test_cooperative_sticky_user_data_has_one_encoder_the_codec_module_re_exports() -> None:
    from assignors import CooperativeStickyAssignor, MemberAssignment, _builtin, userdata

    assert userdata.encode_cooperative_user_data is _builtin.encode_cooperative_user_data
    assignor = CooperativeStickyAssignor()
    for generation in (-1, 7, 2**31 - 1, -(2**31)):
        assignor.on_assignment(MemberAssignment([]), generation)
        assert userdata.decode_cooperative_user_data(assignor.subscription_user_data(())) == generation


AFTER_THE_FIRST_RECORD = (
    "staticconsumer.leader",
    "staticconsumer.membership.commits",
    "staticconsumer.runtime.assignment",
)
"""What a restarting member first needs once its first records are in (issue 26): the leader's decisions
(``staticconsumer.leader``: the metadata watch and the ownership audit, whose first round waits for the
first fetch; a follower's join never reads them), the commit bookkeeping (the first commit comes
after the first records, or never with auto-commit off), and the leader's assignment step
(``runtime.assignment``: a follower, and a static leader told SkipAssignment, compute nothing)."""


def test_a_classic_start_path_loads_neither_the_leaders_decisions_nor_the_commit_bookkeeping() -> None:
    assert _loaded_after(CLASSIC_START, watched=AFTER_THE_FIRST_RECORD) == []


def test_the_leaders_assignment_step_loads_when_a_leader_computes() -> None:
    """Every member decodes its own assignment with the loop's decoder; the leader's step loads with a
    leader's first computation."""
    code = (
        CONSTRUCT + "\nimport staticconsumer.runtime.loop as loop\n"
        "assert loop.decode_assignment(b'') == []\n"
        "assert 'staticconsumer.runtime.assignment' not in sys.modules\n"
        "import assignors\n"
        "assert loop.compute_assignment(assignors.RangeAssignor(), [], {}) == {}"
    )
    assert _loaded_after(code, watched=AFTER_THE_FIRST_RECORD) == ["staticconsumer.runtime.assignment"]


MEMBERSHIP_HARNESS = Path(__file__).parent / "membership"


def test_a_machine_loads_its_commit_bookkeeping_at_its_first_commit() -> None:
    """A classic static member joined, synced and handed its partitions has no commit book yet (and
    reports no committed offset); the first commit makes it, and its answer is kept as before."""
    code = (
        "import staticconsumer.membership.machine as front\n"
        "from staticconsumer.membership.classic import ClassicMachine\n"
        "front.MembershipMachine = ClassicMachine  # the harness machine, not KIP-848 (which commits too)\n"
        f"sys.path.insert(0, {str(MEMBERSHIP_HARNESS)!r})\n"
        "from membership_harness import Harness, one, tp\n"
        "from staticconsumer.membership import actions as act\n"
        "h = Harness()\n"
        "h.become_stable(generation=3)\n"
        "assert h.m.committed_offsets == {}\n"
        "assert 'staticconsumer.membership.commits' not in sys.modules, 'loaded before any commit'\n"
        "send = one(h.commit(7, t0=5), act.SendOffsetCommit)\n"
        "done = one(h.commit_answer(send), act.CommitCompleted)\n"
        "assert (done.commit_id, done.error) == (7, None)\n"
        "assert h.m.committed_offsets == {tp('t', 0): 5}"
    )
    assert _loaded_after(code, watched=AFTER_THE_FIRST_RECORD) == ["staticconsumer.membership.commits"]


def test_the_leader_duties_load_their_decisions_when_a_round_reads_the_watch() -> None:
    """Told of a generation (assigned, or elected with SkipAssignment), the duties keep what to watch
    without loading ``staticconsumer.leader``; the watch a round reads is the same as before, and a new
    generation or a lost membership replaces or drops it."""
    code = (
        "import asyncio\n"
        "from staticconsumer.runtime.duties import LeaderDuties\n"
        "async def never(*args):\n"
        "    raise AssertionError('no I/O here')\n"
        "async def main():\n"
        "    d = LeaderDuties(own_topics=lambda: frozenset({'a'}), refresh_interval=60.0,\n"
        "                     partition_counts=never, describe=never, rejoin=lambda reason: None)\n"
        "    d.assigned(3, leading=False)\n"
        "    d.assigned(3, leading=False)\n"
        "    d.leader_elected(4, frozenset({'b'}), None)\n"
        "    assert d.led == {'a', 'b'}\n"
        "    assert 'staticconsumer.leader' not in sys.modules, 'loaded before a round'\n"
        "    from staticconsumer.leader import MetadataWatch\n"
        "    assert d.watch == MetadataWatch(4, frozenset({'a', 'b'}), {}, leader=True)\n"
        "    assert d.watch is d.watch\n"
        "    d.assigned(5, leading=False)\n"
        "    assert d.watch == MetadataWatch(5, frozenset({'a'}), {}, leader=False)\n"
        "    assert d.led == frozenset()\n"
        "    d.membership_lost()\n"
        "    assert d.watch is None\n"
        "asyncio.run(main())"
    )
    assert _loaded_after(code, watched=AFTER_THE_FIRST_RECORD) == ["staticconsumer.leader"]


def test_import_and_construct_build_no_named_tuple_and_one_type_variable() -> None:
    """What the import and the construction used to build although a cheaper way does the same (issue
    26): NamedTuple classes (~0.1-0.2 ms each; ``TopicPartition`` is aiokafka's own, KIP-848's
    ``IdPartitions`` a Struct), and type variables and ``Literal`` aliases that only annotations read
    (~0.02-0.05 ms each, now under ``TYPE_CHECKING``). The one type variable left is the telemetry's
    ``RecordLoop``'s, a generic class; the Literals left are the settings' (the ``Settings`` struct's
    annotations name them, which ``msgspec.structs.fields`` resolves) and ``assignors.RebalanceProtocol``
    (public)."""
    script = (
        "import collections, json, sys, typing\n"
        "seen = {'namedtuple': [], 'typevar': [], 'literal': []}\n"
        "def ours(module):\n"
        "    return (module or '').split('.')[0] in ('staticconsumer', 'assignors')\n"
        "real_namedtuple = collections.namedtuple\n"
        "real_typevar_init, real_literal = typing.TypeVar.__init__, typing._LiteralSpecialForm.__getitem__\n"
        "def namedtuple(typename, field_names, *, module=None, **kwargs):\n"
        "    if ours(module or sys._getframe(1).f_globals.get('__name__')):\n"
        "        seen['namedtuple'].append(typename)\n"
        "    return real_namedtuple(typename, field_names, module=module, **kwargs)\n"
        "def typevar_init(self, name, *args, **kwargs):\n"
        "    module = sys._getframe(1).f_globals.get('__name__')\n"
        "    if ours(module):\n"
        "        seen['typevar'].append(f'{module}.{name}')\n"
        "    real_typevar_init(self, name, *args, **kwargs)\n"
        "def literal(self, parameters):\n"
        "    module = sys._getframe(1).f_globals.get('__name__')\n"
        "    if ours(module):\n"
        "        seen['literal'].append(module)\n"
        "    return real_literal(self, parameters)\n"
        "collections.namedtuple = namedtuple\n"
        "typing.TypeVar.__init__, typing._LiteralSpecialForm.__getitem__ = typevar_init, literal\n"
        f"{CONSTRUCT}\n"
        "print(json.dumps(seen))"
    )
    seen = _printed(script)
    assert seen["namedtuple"] == []
    assert seen["typevar"] == ["staticconsumer.telemetry.T"]
    assert set(seen["literal"]) == {"staticconsumer.settings", "assignors.model"}


def test_topic_partition_is_aiokafkas_class() -> None:
    """One class, not two equal ones (issue 26: ours cost ~0.2 ms to build at every import)."""
    import aiokafka.structs

    import staticconsumer
    from staticconsumer.membership import TopicPartition

    assert staticconsumer.TopicPartition is TopicPartition is aiokafka.structs.TopicPartition
    tp = TopicPartition("orders", 3)
    assert tp == ("orders", 3)
    assert tp.topic == "orders"
    assert tp.partition == 3
    assert repr(tp) == "TopicPartition(topic='orders', partition=3)"
