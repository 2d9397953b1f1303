"""amber.contrib.dask on real Dask clusters: worker processes on 127.0.0.1, never mocks.

One ``LocalCluster`` (two worker processes, one thread each) serves the module; the multi-node
test starts ``dask scheduler`` and two ``dask worker`` processes from the command line, as a
cluster of several machines runs them. The classes and functions below are imported by name on
the workers (cloudpickle sends module functions by reference, and the workers' allow-list names
``Point`` by dotted path), which works because the workers see the tests directory on sys.path.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import amber
import amber.contrib.dask as amber_dask
import dask
import numpy as np
import pytest
from _services import ServiceError, free_port, wait_for_port
from distributed import Client, LocalCluster, get_worker, wait
from distributed.protocol.serialize import (
    Serialize,
    deserialize,
    deserialize_bytes,
    serialize,
    serialize_bytes,
)

TESTS_DIR = Path(__file__).resolve().parent
TIMEOUT = 30  # seconds for any one cluster operation
# What the LocalCluster's workers ask each other for, set through the Dask configuration.
FAMILIES = ["amber", "pickle"]


@dataclasses.dataclass
class Point:
    """An application class the workers allow by name.

    pickle writes it through ``__getstate__``, which marks the state it hands over; amber
    writes a dataclass by its fields and never calls ``__getstate__`` (spec 5.17.7). So
    ``rebuilt_by`` tells which family carried it.
    """

    x: int
    y: int
    rebuilt_by: str = "constructor"
    owner: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "rebuilt_by": "pickle"}


class Secret:
    """An application class nobody allowed."""

    def __init__(self, value: int) -> None:
        self.value = value


POINT_PATH = f"{Point.__module__}.{Point.__qualname__}"
SECRET_PATH = f"{Secret.__module__}.{Secret.__qualname__}"
WHEN = datetime.datetime(2026, 11, 24, 9, 30, tzinfo=datetime.timezone.utc)
N_RECORDS = 40


def local_cluster(**options: Any) -> LocalCluster:
    """Worker processes on 127.0.0.1, one thread each, no dashboard."""
    return LocalCluster(
        processes=True,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=None,
        # The scheduler's HTTP server (health, metrics) runs even without a dashboard.
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        **options,
    )


def make_graph() -> dict[str, Any]:
    """Records sharing one set and one Point, an index of them, and two cycles."""
    tags = {"red", "blue"}
    origin = Point(3, 4)
    records = [
        {
            "id": i,
            "tags": tags,
            "at": origin,
            "when": WHEN + datetime.timedelta(hours=i),
            "price": decimal.Decimal(f"{i}.25"),
            "pair": (i, str(i)),
        }
        for i in range(N_RECORDS)
    ]
    graph: dict[str, Any] = {
        "records": records,
        "index": {record["id"]: record for record in records},
        "origin": origin,
        "frozen": frozenset({1, 2, 3}),
        "uid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    }
    graph["self"] = graph
    origin.owner = graph
    return graph


def graph_problems(graph: Any) -> list[str]:
    """What differs from ``make_graph()``: values, exact types, sharing, cycles. Empty if none.

    Runs on workers as well as here, so it returns findings instead of asserting.
    """
    expected = make_graph()
    problems: list[str] = []
    if type(graph) is not dict:
        return [f"root is {type(graph).__name__}"]
    if graph.get("self") is not graph:
        problems.append("graph['self'] is not the graph (cycle through the root)")
    origin = graph.get("origin")
    if type(origin) is not Point:
        return [*problems, f"origin is {type(origin).__name__}, not Point"]
    if (origin.x, origin.y) != (3, 4):
        problems.append(f"origin is ({origin.x}, {origin.y})")
    if origin.rebuilt_by != "constructor":
        problems.append(f"origin was rebuilt by {origin.rebuilt_by}")
    if origin.owner is not graph:
        problems.append("origin.owner is not the graph (cycle through a class)")
    records = graph.get("records")
    if type(records) is not list or len(records) != N_RECORDS:
        return [*problems, "records is not a list of the right length"]
    tags = records[0]["tags"]
    if type(tags) is not set or tags != expected["records"][0]["tags"]:
        problems.append(f"tags are {tags!r}")
    for record, want in zip(records, expected["records"], strict=True):
        if record["tags"] is not tags:
            problems.append(f"record {record['id']}: tags not shared")
        if record["at"] is not origin:
            problems.append(f"record {record['id']}: at is not the origin")
        for field in ("id", "when", "price", "pair"):
            if type(record[field]) is not type(want[field]) or record[field] != want[field]:
                problems.append(f"record {want['id']}: {field} is {record[field]!r}")
        if graph["index"].get(want["id"]) is not record:
            problems.append(f"index[{want['id']}] is not the record")
    for field in ("frozen", "uid"):
        value = graph.get(field)
        if type(value) is not type(expected[field]) or value != expected[field]:
            problems.append(f"{field} is {value!r}")
    return problems


def check_here(value: Any) -> tuple[str, list[str], list[str] | None]:
    """On a worker: its address, what ``graph_problems`` finds, and its transfer families."""
    worker = get_worker()
    serializers = worker.rpc.serializers
    return worker.address, graph_problems(value), None if serializers is None else serializers


def describe_arrays(value: dict[str, Any]) -> dict[str, Any]:
    array = value["array"]
    return {
        "address": get_worker().address,
        "type": type(array).__name__,
        "dtype": str(array.dtype),
        "shape": array.shape,
        "sum": float(array.sum()),
        "writeable": bool(array.flags.writeable),
        "same": value["same"] is array,
        "raw_type": type(value["raw"]).__name__,
        "raw_sha": hashlib.sha256(value["raw"]).hexdigest(),
    }


def make_array(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.float64) * 0.5


def make_secret(value: int) -> Secret:
    return Secret(value)


def read_secret(secret: Secret) -> int:
    return secret.value


# -------------------------------------------------------------------------------------------
# The family on its own, through Dask's protocol functions (no cluster)


def test_dumps_frames_are_views_of_the_original_memory() -> None:
    array = np.arange(300_000, dtype=np.float64)  # 2.4 MB
    raw = bytes(range(256)) * 8192  # 2 MiB
    small = np.arange(10, dtype=np.int32)
    value = {"array": array, "raw": raw, "small": small, "again": array}
    assert array.nbytes >= amber.OOB_THRESHOLD and len(raw) >= amber.OOB_THRESHOLD

    header, frames = amber_dask.dumps(value)

    # The payload, then one frame per large buffer: the shared array is one buffer.
    assert len(frames) == 3
    assert isinstance(frames[0], bytes) and len(frames[0]) < 1000
    array_frame = next(f for f in frames[1:] if f.nbytes == array.nbytes)
    raw_frame = next(f for f in frames[1:] if f.nbytes == len(raw))
    assert np.shares_memory(np.frombuffer(array_frame, dtype=np.uint8), array)
    assert raw_frame.obj is raw
    # The writeable flags follow the originals: the array was writeable, bytes never are.
    flags = dict(zip((id(f) for f in frames[1:]), header["writeable"], strict=True))
    assert flags[id(array_frame)] is True and flags[id(raw_frame)] is False

    back = amber_dask.loads(header, frames)
    assert back["again"] is back["array"]
    assert back["array"].dtype == np.float64 and np.array_equal(back["array"], array)
    assert type(back["raw"]) is bytes and back["raw"] == raw
    assert np.array_equal(back["small"], small) and back["small"].dtype == np.int32
    # Handed back the sender's own read-only views (as an in-process comm does), the writeable
    # array is copied, as Dask's pickle family does: the receiver never writes into the
    # sender's memory, nor gets a read-only array where the sender had a writeable one.
    assert back["array"].flags.writeable
    assert not np.shares_memory(back["array"], array)


def test_loads_builds_arrays_on_the_received_frames() -> None:
    array = np.arange(200_000, dtype=np.float64)
    frozen = np.arange(200_000, dtype=np.int64)
    frozen.flags.writeable = False
    header, frames = amber_dask.dumps([array, frozen])
    assert header["writeable"] == (True, False)
    # What a TCP comm hands over: frames in fresh writeable memory.
    received = [frames[0], *(bytearray(f) for f in frames[1:])]

    back = amber_dask.loads(header, received)

    assert np.array_equal(back[0], array) and np.array_equal(back[1], frozen)
    assert np.shares_memory(back[0], np.frombuffer(received[1], dtype=np.uint8))
    assert np.shares_memory(back[1], np.frombuffer(received[2], dtype=np.uint8))
    assert back[0].flags.writeable and not back[1].flags.writeable


def test_loads_refuses_frames_that_do_not_match_the_header() -> None:
    header, frames = amber_dask.dumps(np.arange(200_000, dtype=np.float64))
    with pytest.raises(amber.DecodeError, match="1 buffer frames but 0 writeable flags"):
        amber_dask.loads({"writeable": ()}, frames)
    with pytest.raises(amber.DecodeError, match="no payload frame"):
        amber_dask.loads(header, [])


def test_dask_splits_containers_for_pickle_but_hands_them_whole_to_amber() -> None:
    shared = {"x": [1, 2]}
    graph: dict[str, Any] = {"a": shared, "b": shared}
    graph["self"] = graph

    # What Dask does with its own families: the top-level items go one by one.
    header, frames = serialize(Serialize(graph), serializers=["dask", "pickle"])
    assert header.get("is-collection") is True
    plain = deserialize(header, frames)
    assert plain["a"] is not plain["b"] and plain["self"] is not plain

    header, frames = serialize(Serialize(graph), serializers=list(amber_dask.SERIALIZERS))
    assert header["serializer"] == "amber"
    back = deserialize(header, frames, deserializers=list(amber_dask.SERIALIZERS))
    assert back["a"] is back["b"] and back["self"] is back
    assert back["a"] == shared and type(back["a"]["x"]) is list


def test_what_amber_cannot_encode_falls_back_to_the_next_family() -> None:
    shared = [1, 2, 3]
    value = {"f": len, "data": shared, "again": shared}  # amber has no form for a function

    header, frames = serialize(Serialize(value), serializers=["amber", "pickle"])

    # Whole, amber refused it; Dask's item-by-item path then gave each item its family.
    assert header.get("is-collection") is True
    by_key = {sub["key"]: sub["serializer"] for sub in header["sub-headers"]}
    assert by_key == {"f": "pickle", "data": "amber", "again": "amber"}
    back = deserialize(header, frames)
    assert back["f"] is len and back["data"] == shared


def test_the_error_family_says_why_amber_refused() -> None:
    header, frames = serialize(Serialize({"f": len}), serializers=["amber"])
    assert header["sub-headers"][0]["serializer"] == "error"
    with pytest.raises(TypeError) as caught:
        deserialize(header, frames)
    text = str(caught.value)
    assert "Could not serialize object of type builtin_function_or_method" in text
    # strict_dumps: amber refuses at the sender what the workers' allow-list would refuse
    assert "amber cannot encode it" in text and "builtins.len is not in types=[...]" in text

    with pytest.raises(TypeError, match="amber cannot encode it") as raised:
        serialize(Serialize(len), serializers=["amber"], on_error="raise")
    assert str(raised.value).count("amber cannot encode it") == 1


def test_frames_survive_dask_framing_compression_and_splitting(point_allowed: None) -> None:
    graph = make_graph()
    array = np.zeros(3_000_000, dtype=np.float64)  # compressible, and 24 MB
    value = {"graph": graph, "array": array}
    with dask.config.set({"distributed.comm.shard": "4MiB"}):
        data = serialize_bytes(value, serializers=["amber"], compression="lz4")
    back = deserialize_bytes(data)
    assert len(data) < array.nbytes // 10  # lz4 ran on the zero-filled buffer frame
    assert graph_problems(back["graph"]) == []
    assert np.array_equal(back["array"], array) and back["array"].flags.writeable


def test_register_rejects_bad_options_with_their_place() -> None:
    with pytest.raises(amber.contrib.OptionsError, match=r"register\(\).*unknown amber option"):
        amber_dask.register(typs=[Point])
    with pytest.raises(amber.contrib.OptionsError, match="'msgpak' is not a registered"):
        amber_dask.register(serializers=["amber", "msgpak"])
    with pytest.raises(amber.contrib.OptionsError, match="can only decode"):
        amber_dask.register(serializers=["amber", "error"])
    with pytest.raises(amber.contrib.OptionsError, match="a Codec or options, not both"):
        amber_dask.register(amber.contrib.Codec(), types=[Point])


def run_python(code: str, env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_options_come_from_the_dask_configuration(tmp_path: Path) -> None:
    # A YAML file as an operator would write it, hyphens and all.
    (tmp_path / "amber.yaml").write_text(
        "amber:\n  options:\n    max-depth: 3\n  serializers: [amber, pickle]\n"
    )
    code = """
import amber.contrib.dask as m
m.dask_setup(None)  # what a preload runs; a scheduler or client needs nothing more
try:
    m.dumps([[[["deep"]]]])
except NotImplementedError as exc:
    print(exc)
"""
    out = run_python(code, {"DASK_CONFIG": str(tmp_path)})
    assert out == "amber cannot encode it: nesting deeper than max_depth=3 at root[0][0][0]"


def test_a_misspelt_option_in_the_configuration_is_named() -> None:
    code = """
import amber.contrib.dask as m
try:
    m.dask_setup(None)
except ValueError as exc:
    print(type(exc).__name__, exc)
"""
    out = run_python(code, {"DASK_AMBER__OPTIONS__MAX_DEPHT": "3"})
    assert out.startswith(
        "OptionsError Dask config 'amber.options': unknown amber option 'max_depht'"
    )


def test_importing_amber_does_not_import_dask() -> None:
    code = "import sys, amber, amber.contrib; print('distributed' in sys.modules)"
    assert run_python(code, {}) == "False"


# -------------------------------------------------------------------------------------------
# A LocalCluster with two worker processes


@pytest.fixture(scope="module")
def point_allowed() -> Iterator[None]:
    """This process allows Point, as the workers do: every process needs the same options."""
    amber_dask.register(types=[Point])
    yield
    amber_dask.register()


@pytest.fixture(scope="module")
def client(point_allowed: None) -> Iterator[Client]:
    # The nannies hand this configuration to the worker processes they start.
    with (
        dask.config.set({"amber.options": {"types": [POINT_PATH]}, "amber.serializers": FAMILIES}),
        local_cluster(n_workers=2, memory_limit="2GiB", preload=["amber.contrib.dask"]) as cluster,
        Client(
            cluster,
            serializers=list(amber_dask.SERIALIZERS),
            deserializers=list(amber_dask.SERIALIZERS),
            timeout=TIMEOUT,
        ) as dask_client,
    ):
        dask_client.wait_for_workers(2, timeout=TIMEOUT)
        yield dask_client


def two_workers(client: Client) -> tuple[str, str]:
    first, second = sorted(client.scheduler_info()["workers"])
    return first, second


def run_on(client: Client, worker: str, func: Any, *args: Any) -> Any:
    future = client.submit(func, *args, workers=[worker], allow_other_workers=False, pure=False)
    return future.result(timeout=TIMEOUT)


def graph_round_trip(client: Client, families: list[str]) -> None:
    """Scatter a graph to one worker, check it there and on the other one, gather it back."""
    first, second = two_workers(client)
    [future] = client.scatter([make_graph()], workers=[first], timeout=TIMEOUT)

    address, problems, serializers = run_on(client, first, check_here, future)
    assert address == first and problems == []
    # The second worker fetches the graph from the first: a worker-to-worker transfer, in the
    # family the preload chose (pickle would have rebuilt the Point through __reduce__).
    address, problems, serializers = run_on(client, second, check_here, future)
    assert address == second and problems == []
    assert serializers == families
    assert second in client.who_has(future)[future.key]

    assert graph_problems(future.result(timeout=TIMEOUT)) == []


def test_graph_keeps_sharing_and_cycles_on_workers_and_back(client: Client) -> None:
    graph_round_trip(client, FAMILIES)


def test_array_and_bytes_travel_out_of_band_between_workers(client: Client) -> None:
    first, second = two_workers(client)
    array = make_array(2_000_000)  # 16 MB
    raw = os.urandom(3 * 1024 * 1024)
    [future] = client.scatter([{"array": array, "raw": raw, "same": array}], workers=[first])

    seen = run_on(client, second, describe_arrays, future)

    expected = {
        "address": second,
        "type": "ndarray",
        "dtype": "float64",
        "shape": array.shape,
        "sum": float(array.sum()),
        "writeable": True,
        "same": True,
        "raw_type": "bytes",
        "raw_sha": hashlib.sha256(raw).hexdigest(),
    }
    assert seen == expected
    back = future.result(timeout=TIMEOUT)
    assert back["same"] is back["array"] and back["array"].flags.writeable
    assert back["array"].dtype == np.float64 and np.array_equal(back["array"], array)
    assert type(back["raw"]) is bytes and back["raw"] == raw


def test_task_result_moves_to_the_worker_that_needs_it(client: Client) -> None:
    first, second = two_workers(client)
    made = client.submit(make_array, 1_000_000, workers=[first], allow_other_workers=False)
    wait(made, timeout=TIMEOUT)
    assert set(client.who_has(made)[made.key]) == {first}

    total = run_on(client, second, np.sum, made)

    assert total == make_array(1_000_000).sum()
    assert second in client.who_has(made)[made.key]


def test_allowed_class_is_rebuilt_by_amber_everywhere(client: Client) -> None:
    first, second = two_workers(client)
    [future] = client.scatter([Point(5, 6)], workers=[first])
    assert run_on(client, second, vars, future) == {
        "x": 5,
        "y": 6,
        "rebuilt_by": "constructor",
        "owner": None,
    }
    back = future.result(timeout=TIMEOUT)
    assert type(back) is Point and (back.x, back.y, back.rebuilt_by) == (5, 6, "constructor")


def test_a_class_nobody_allowed_goes_to_the_next_family(client: Client) -> None:
    # strict_dumps: amber refuses at the sender what the workers' allow-list would refuse, so
    # Dask hands the value to its next family (pickle) instead of failing where it is decoded.
    first, second = two_workers(client)
    [scattered] = client.scatter([Secret(1)], workers=[first], timeout=TIMEOUT)
    assert client.submit(read_secret, scattered, workers=[second]).result(timeout=TIMEOUT) == 1

    # Made by a task on a worker, gathered by the client, and needed by a task on the other
    # worker: each hop goes through pickle, so the dependent finishes. (Refused at the
    # receiver, the fetch used to deadlock the dependent: distributed issue 6705.)
    made = client.submit(make_secret, 7, workers=[first], allow_other_workers=False, pure=False)
    assert made.result(timeout=TIMEOUT).value == 7
    read = client.submit(read_secret, made, workers=[second], allow_other_workers=False)
    assert read.result(timeout=TIMEOUT) == 7

    # With amber as the only family, the sender says which class and where.
    with pytest.raises(TypeError, match=rf"class {SECRET_PATH} is not in types=\[\.\.\.\]"):
        serialize(Serialize({"s": Secret(2)}), serializers=["amber"], on_error="raise")


def test_a_worker_without_the_preload_cannot_take_amber_frames(point_allowed: None) -> None:
    with (
        local_cluster(n_workers=1, memory_limit="1GiB") as cluster,
        Client(
            cluster,
            serializers=list(amber_dask.SERIALIZERS),
            deserializers=list(amber_dask.SERIALIZERS),
            timeout=TIMEOUT,
        ) as bare,
    ):
        # The worker process never imported amber.contrib.dask: Dask has no "amber" family.
        with pytest.raises(Exception, match=r"KeyError\('amber'\)"):
            bare.scatter([{"a": (1, 2)}], timeout=TIMEOUT)


# -------------------------------------------------------------------------------------------
# The same code on a cluster started from the command line, as on many machines


class CommandLineCluster:
    """``dask scheduler`` and two ``dask worker`` processes, each in its own process group."""

    def __init__(self, workdir: str) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []
        dask_cli = Path(sys.executable).parent / "dask"
        if not dask_cli.is_file():
            raise ServiceError(f"no dask command next to {sys.executable}: install distributed")
        self.dask_cli = str(dask_cli)
        self.env = {
            **os.environ,
            # What every machine of a real cluster would have: the application's code...
            "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]),
            # ...and the same amber options, from the environment.
            "DASK_AMBER__OPTIONS__TYPES": repr([POINT_PATH]),
        }

    def _start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = Path(self.workdir) / f"{name}.log"
        self.logs.append(log)
        with log.open("wb") as out:
            process = subprocess.Popen(
                [self.dask_cli, *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=self.workdir,
                start_new_session=True,
            )
        self.processes.append(process)
        return process

    def start(self) -> None:
        scheduler = self._start(
            "scheduler",
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--no-dashboard",
            # The HTTP server (health, metrics) runs even without a dashboard, by default on
            # every interface.
            "--dashboard-address",
            "127.0.0.1:0",
        )
        try:
            wait_for_port(self.port, timeout=TIMEOUT, process=scheduler)
        except ServiceError as exc:
            raise ServiceError(f"dask scheduler did not start: {exc}\n{self.log_tail()}") from None
        for i in range(2):
            self._start(
                f"worker{i}",
                "worker",
                self.address,
                "--host",
                "127.0.0.1",
                "--nthreads",
                "1",
                "--memory-limit",
                "2GiB",
                "--no-dashboard",
                "--dashboard-address",
                "127.0.0.1:0",
                "--local-directory",
                self.workdir,
                "--preload",
                "amber.contrib.dask",
            )

    def log_tail(self) -> str:
        return "\n".join(
            f"--- {log.name}\n{log.read_text(errors='replace')[-1500:]}"
            for log in self.logs
            if log.exists()
        )

    def stop(self) -> None:
        # Workers first, so that they do not wait for a scheduler that is gone.
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in reversed(self.processes):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
            # A nanny's worker process is in its group too: leave nothing behind.
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def command_line_client(point_allowed: None) -> Iterator[Client]:
    with tempfile.TemporaryDirectory(prefix="amber-dask-") as workdir:
        cluster = CommandLineCluster(workdir)
        try:
            cluster.start()
            with Client(
                cluster.address,
                serializers=list(amber_dask.SERIALIZERS),
                deserializers=list(amber_dask.SERIALIZERS),
                timeout=TIMEOUT,
            ) as dask_client:
                try:
                    dask_client.wait_for_workers(2, timeout=TIMEOUT)
                except TimeoutError:
                    raise ServiceError(
                        f"two dask workers did not join {cluster.address}\n{cluster.log_tail()}"
                    ) from None
                yield dask_client
        finally:
            cluster.stop()


def test_command_line_cluster_runs_the_same_graph_test(command_line_client: Client) -> None:
    # The workers allow Point through DASK_AMBER__OPTIONS__TYPES, this process by register().
    graph_round_trip(command_line_client, list(amber_dask.SERIALIZERS))
    first, second = two_workers(command_line_client)
    made = command_line_client.submit(
        make_array, 500_000, workers=[first], allow_other_workers=False
    )
    total = run_on(command_line_client, second, np.sum, made)
    assert total == make_array(500_000).sum()
