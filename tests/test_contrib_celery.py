"""amber as Celery's task and result serializer, against real worker processes and Redis.

Three workers run for this module, each in its own Redis database and each from its own app
module: ``_celery_plain_app`` (settings only, no import of amber: the entry point at work),
``_celery_app`` (allows ``Point`` and the ``Money`` custom type through ``register``) and
``_celery_signed_app`` (accepts only ``amber-signed``; a new key and an old one in rotation).
The test process imports the same app modules, so callers and workers share their settings.
"""

from __future__ import annotations

import datetime
import decimal
import pickle
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import _celery_app
import _celery_plain_app
import _celery_signed_app
import amber
import amber.contrib.kombu as amber_kombu
import celery.exceptions
import kombu.exceptions
import kombu.serialization
import pytest
import redis
from _celery_tasks import configure
from _celery_types import Money, Point, Secret, TaskFailed
from _celery_worker import TESTS_DIR, CeleryWorker
from amber.contrib import OptionsError
from celery import Celery

RESULT_TIMEOUT = 20.0
LOG_TIMEOUT = 20.0
READY_TIMEOUT = 60.0

# Redis databases of this module: one per worker configuration.
DATABASES = {"plain": 3, "types": 4, "signed": 5}
APPS = {"plain": _celery_plain_app, "types": _celery_app, "signed": _celery_signed_app}
# A redis-py client per database, for looking at side effects; set up with the workers.
CLIENTS: dict[str, redis.Redis] = {}


@pytest.fixture(scope="module")
def workers(redis_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    logdir = tmp_path_factory.mktemp("celery")
    started: dict[str, CeleryWorker] = {}
    try:
        for name, db in DATABASES.items():
            url = redis_server.url_for(db)
            client = CLIENTS[name] = redis.Redis.from_url(url)
            client.flushdb()
            app = APPS[name].app
            app.conf.broker_url = url
            app.conf.result_backend = url
            started[name] = CeleryWorker(APPS[name].__name__, url, logdir).start()
        for worker in started.values():
            worker.wait_ready(READY_TIMEOUT)
        yield started
    finally:
        for worker in started.values():
            worker.stop()
        for client in CLIENTS.values():
            client.close()
        CLIENTS.clear()
        for module in APPS.values():
            module.app.close()


def database(name: str) -> redis.Redis:
    return CLIENTS[name]


def get(result: Any, worker: CeleryWorker) -> Any:
    """The task's result, or a failure that carries the worker's log."""
    try:
        return result.get(timeout=RESULT_TIMEOUT)
    except celery.exceptions.TimeoutError:
        pytest.fail(f"no result for {result.id} in {RESULT_TIMEOUT:.0f} s\n{worker.report()}")


def rich_arguments() -> tuple[tuple[Any, ...], dict[str, Any]]:
    shared = [1, "two", 3.0]
    args = (
        (1, (2, 3)),
        {4, 5},
        frozenset({"a", "b"}),
        datetime.datetime(2026, 11, 24, 9, 30, 15, 123456, tzinfo=datetime.timezone.utc),
        datetime.date(2026, 12, 1),
        decimal.Decimal("-0.010"),
        uuid.UUID("12345678-1234-5678-1234-567812345678"),
        b"\x00\xff",
        {(1, 2): "tuple key", 3: None},
        shared,
    )
    kwargs = {
        "when": datetime.timedelta(days=2, microseconds=7),
        "tags": {"x", ("y", 1)},
        "again": shared,
        "big": 2**100,
    }
    return args, kwargs


def expected_echo(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """What the echo task returns: ``request.args`` is the decoded tuple, ``args`` the one
    Python built to bind ``*args``: equal, holding the same items, but two tuples."""
    return {"args": args, "kwargs": kwargs, "request_args": tuple(list(args))}


def assert_exact(expected: Any, actual: Any, graph_diff: Any) -> None:
    difference = graph_diff(expected, actual)
    assert difference is None, difference


# --- without a worker ----------------------------------------------------------------------


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    return out


def test_importing_the_module_imports_neither_kombu_nor_celery() -> None:
    code = (
        "import sys, amber, amber.contrib, amber.contrib.kombu\n"
        "print(sorted(m for m in ('kombu', 'celery') if m in sys.modules))"
    )
    out = run_python(code)
    assert out.stdout.strip() == "[]"


def test_importing_kombu_alone_registers_amber() -> None:
    # A fresh process, where nothing but kombu's own entry-point loader brings amber in.
    code = (
        "import kombu.serialization as s\n"
        "ct, ce, data = s.dumps(((1, 2), {'k': {3}}, {}), serializer='amber')\n"
        "back = s.loads(data, ct, ce, accept=[ct])\n"
        "print(ct, ce, type(back[0]).__name__, type(back[1]['k']).__name__)"
    )
    out = run_python(code)
    assert out.stdout.split() == ["application/x-amber", "binary", "tuple", "set"]


def test_the_settings_only_app_does_not_import_amber() -> None:
    # The plain worker's exactness below is owed to the entry point, not to app code.
    for name in ("_celery_plain_app.py", "_celery_tasks.py"):
        source = (TESTS_DIR / name).read_text()
        assert "import amber" not in source and "from amber" not in source, name


def test_signatures_round_trip_as_pickle_rebuilds_them() -> None:
    # Celery puts signatures (dict subclasses) in bodies for link=, chains and chords. They come
    # back as Celery's signature() rebuilds them, which is what pickle gives too (it turns a
    # chain's task tuple into a list), so pickle's copy is the reference.
    add = _celery_app.tasks["add"]
    linked = add.s(1, 2).set(link=add.s(5))
    chained = add.s(decimal.Decimal(1), 2) | add.s(3)
    body = ((linked,), {"then": chained}, {"callbacks": [linked], "chain": None})
    ct, ce, data = kombu.serialization.dumps(body, serializer="amber")
    back = kombu.serialization.loads(data, ct, ce, accept=[ct])
    reference = pickle.loads(pickle.dumps(body))
    assert type(back[0][0]) is type(reference[0][0]) is type(linked)
    assert back[0][0] == reference[0][0] == linked
    assert type(back[0][0].options["link"]) is type(linked.options["link"])
    assert type(back[1]["then"]) is type(reference[1]["then"]) is type(chained)
    assert back[1]["then"] == reference[1]["then"]
    assert type(back[1]["then"].tasks[0].args[0]) is decimal.Decimal
    assert back[2]["callbacks"][0] is back[0][0]


def test_register_refuses_bad_options_naming_the_serializer() -> None:
    with pytest.raises(OptionsError, match=r"kombu serializer 'amber'.*no_such_module"):
        amber_kombu.register(types=["no_such_module.Thing"])
    with pytest.raises(OptionsError, match=r"kombu serializer 'amber'.*unknown amber option"):
        amber_kombu.register(typos=[Point])
    with pytest.raises(OptionsError, match=r"key is for the signed variant.*register_signed"):
        amber_kombu.register(key=b"k" * 32)
    with pytest.raises(OptionsError, match=r"'amber-signed': key is required"):
        amber_kombu.register_signed(None)
    with pytest.raises(OptionsError, match=r"'amber-signed': key: .*16"):
        amber_kombu.register_signed(b"short")
    with pytest.raises(OptionsError, match=r"already registered as 'amber'"):
        amber_kombu.register(name="amber-copy", content_type=amber_kombu.CONTENT_TYPE)
    # None of the refused calls replaced what the app modules registered.
    assert kombu.serialization.registry.type_to_name[amber_kombu.CONTENT_TYPE] == "amber"
    assert "amber-copy" not in kombu.serialization.registry.name_to_type


def test_register_signed_passes_max_age_to_the_decoder() -> None:
    # A serializer of its own, so the app modules' registrations stay as they are.
    name, content_type = "amber-signed-max-age", "application/x-amber-signed-max-age"
    amber_kombu.register_signed(b"k" * 32, max_age=1, name=name, content_type=content_type)
    ct, ce, data = kombu.serialization.dumps(((1,), {}, {}), serializer=name)
    assert ct == content_type and amber.envelope_info(data)["timestamp"] is not None
    assert kombu.serialization.loads(data, ct, ce, accept=[ct]) == ((1,), {}, {})
    time.sleep(2.1)  # timestamps are whole seconds: 2 s old is older than max_age=1
    with pytest.raises(kombu.exceptions.DecodeError, match="more than max_age=1"):
        kombu.serialization.loads(data, ct, ce, accept=[ct])


def test_signed_placeholder_says_what_is_missing() -> None:
    dumps, loads, content_type, encoding = amber_kombu.signed_register_args
    assert (content_type, encoding) == ("application/x-amber-signed", "binary")
    with pytest.raises(OptionsError, match=r"register_signed\(key=\.\.\.\)"):
        loads(b"anything")
    with pytest.raises(OptionsError, match="has no key"):
        dumps(((), {}, {}))


# --- the settings-only worker ---------------------------------------------------------------


def test_settings_only_worker_round_trips_rich_arguments(workers: Any, graph_diff: Any) -> None:
    args, kwargs = rich_arguments()
    result = get(_celery_plain_app.tasks["echo"].delay(*args, **kwargs), workers["plain"])
    assert_exact(expected_echo(args, kwargs), result, graph_diff)
    # What graph_diff checked, spelled out for the types JSON would lose.
    assert type(result["request_args"]) is tuple
    assert type(result["args"][0]) is tuple and type(result["args"][0][1]) is tuple
    assert type(result["args"][1]) is set and type(result["args"][2]) is frozenset
    assert result["args"][3] == args[3] and result["args"][3].tzinfo == datetime.timezone.utc
    assert type(result["args"][5]) is decimal.Decimal and str(result["args"][5]) == "-0.010"
    assert type(result["args"][6]) is uuid.UUID
    assert type(result["kwargs"]["when"]) is datetime.timedelta
    # One list in the call, one list in the task (args[9] and kwargs["again"]), one in the result.
    assert result["args"][9] is result["kwargs"]["again"]


def test_shared_object_in_arguments_is_shared_in_the_task(workers: Any) -> None:
    shared = {"n": decimal.Decimal("2.50")}
    result = get(
        _celery_plain_app.tasks["identity"].delay(shared, shared, third=shared), workers["plain"]
    )
    assert result["first_is_second"] is True
    assert result["first_is_third"] is True
    assert result["request_args_type"] == "tuple"
    assert result["request_kwargs_type"] == "dict"
    assert result["value"] == shared and type(result["value"]["n"]) is decimal.Decimal


def test_list_arguments_stay_a_list(workers: Any) -> None:
    # Celery passes args on as given: a list stays a list, and the task still gets its values.
    result = get(_celery_plain_app.tasks["echo"].apply_async(args=[(1, 2), [3]]), workers["plain"])
    assert type(result["request_args"]) is list and result["request_args"] == [(1, 2), [3]]
    assert type(result["args"]) is tuple and type(result["args"][0]) is tuple


def test_chain_and_link_through_the_worker(workers: Any) -> None:
    add = _celery_plain_app.tasks["add"]
    chained = (add.s(decimal.Decimal("1.25"), decimal.Decimal(2)) | add.s(decimal.Decimal("0.5")))()
    total = get(chained, workers["plain"])
    assert type(total) is decimal.Decimal and total == decimal.Decimal("3.75")


# --- the worker that allows classes ---------------------------------------------------------


def test_allowed_class_and_custom_type_round_trip(workers: Any, graph_diff: Any) -> None:
    point = Point(3, decimal.Decimal("0.1"))
    money = Money(decimal.Decimal("9.99"), "EUR")
    result = get(_celery_app.tasks["echo"].delay(point, (point,), price=money), workers["types"])
    assert type(result["args"][0]) is Point and result["args"][0] == point
    assert result["args"][1][0] is result["args"][0]
    assert type(result["kwargs"]["price"]) is Money and result["kwargs"]["price"] == money
    assert_exact((point, (point,)), result["request_args"], graph_diff)


def test_disallowed_class_in_arguments_is_refused_by_the_worker(workers: Any) -> None:
    worker = workers["types"]
    since = len(worker.log())
    key = f"touched-{uuid.uuid4()}"
    result = _celery_app.tasks["touch"].delay(key, Secret("hunter2"))
    # The worker's consumer refuses the body before any task runs: a CRITICAL log line that
    # names the class and the message's task id; the message is acknowledged and dropped.
    log = worker.wait_for(
        lambda text: result.id in text and "Can't decode message body" in text,
        since=since,
        timeout=LOG_TIMEOUT,
    )
    assert "ClassNotAllowedError" in log
    assert "class _celery_types.Secret is not allowed" in log
    # Nothing comes back: the caller sees PENDING and its get() times out.
    with pytest.raises(celery.exceptions.TimeoutError):
        result.get(timeout=0.5)
    assert result.state == "PENDING"
    # A later task runs, so the worker went on; the refused one had no side effect.
    assert get(_celery_app.tasks["add"].delay(1, 2), worker) == 3
    assert database("types").exists(key) == 0


def test_disallowed_class_in_a_result_is_refused_by_the_caller(workers: Any) -> None:
    # The caller is an app of its own: Celery's Redis backend hears of a result both from the
    # stored key and from a pub/sub message, and a refused copy left in the consumer's buffer
    # surfaces at that app's next get(), whichever task it waits for.
    types_app = _celery_app.app
    caller = Celery("amber_types_caller", set_as_current=False)
    configure(caller, "amber")
    caller.conf.broker_url = types_app.conf.broker_url
    caller.conf.result_backend = types_app.conf.result_backend
    result = caller.send_task("amber_test.make_secret")
    try:
        with pytest.raises(kombu.exceptions.DecodeError) as info:
            result.get(timeout=RESULT_TIMEOUT)
        assert isinstance(info.value.__context__, amber.ClassNotAllowedError)
        assert "_celery_types.Secret is not allowed" in str(info.value)
    finally:
        # Unsubscribed now, while Redis runs: left to the garbage collector, the result would
        # try to unsubscribe after the server stopped, and retry for seconds.
        caller.backend.remove_pending_result(result)
        caller.close()


def test_unencodable_argument_fails_at_the_caller(workers: Any) -> None:
    with pytest.raises(kombu.exceptions.EncodeError, match=r"unsupported type .*function"):
        _celery_app.tasks["echo"].delay(lambda: None)


def test_unencodable_result_comes_back_as_an_encode_error(workers: Any) -> None:
    result = _celery_app.tasks["unencodable"].delay()
    with pytest.raises(kombu.exceptions.EncodeError, match=r"unsupported type"):
        result.get(timeout=RESULT_TIMEOUT)
    assert result.state == "FAILURE"


def test_task_exception_keeps_its_class_and_typed_arguments(workers: Any) -> None:
    result = _celery_app.tasks["fail"].delay("value")
    with pytest.raises(ValueError) as info:
        result.get(timeout=RESULT_TIMEOUT)
    assert type(info.value) is ValueError
    assert info.value.args == (decimal.Decimal("1.5"), (1, 2), {"three"})
    assert [type(a) for a in info.value.args] == [decimal.Decimal, tuple, set]
    assert "ValueError" in result.traceback


def test_task_exception_loses_attributes_other_than_args(workers: Any) -> None:
    # Celery stores a failure as {exc_type, exc_module, exc_message=args} for any serializer
    # but pickle and rebuilds it as cls(*args): the class comes back (its module is imported
    # here), the attributes its __init__ set from keywords do not.
    result = _celery_app.tasks["fail"].delay("custom")
    with pytest.raises(TaskFailed) as info:
        result.get(timeout=RESULT_TIMEOUT)
    assert info.value.args == ("no stock",)
    assert info.value.code == 0  # raised with code=409


# --- the signed worker ----------------------------------------------------------------------


def message_for(app: Any, task: str, *args: Any) -> tuple[str, dict[str, Any], Any]:
    """What Celery would send for ``task(*args)``: (task id, headers, body before encoding)."""
    task_id = str(uuid.uuid4())
    message = app.amqp.as_task_v2(task_id, task, args=args, kwargs={})
    return task_id, message.headers, message.body


def publish_raw(app: Any, headers: dict[str, Any], data: bytes, content_type: str) -> None:
    """Put already-encoded bytes on the worker's queue, as anyone with broker access could."""
    with app.connection_for_write() as connection:
        connection.Producer().publish(
            data,
            exchange="",
            routing_key=app.conf.task_default_queue,
            headers=headers,
            content_type=content_type,
            content_encoding="binary",
            correlation_id=headers["id"],
            retry=False,
        )


def refused(worker: CeleryWorker, task_id: str, since: int) -> str:
    return worker.wait_for(
        lambda text: task_id in text and "Can't decode message body" in text,
        since=since,
        timeout=LOG_TIMEOUT,
    )


def test_signed_worker_runs_signed_tasks(workers: Any, graph_diff: Any) -> None:
    args, kwargs = rich_arguments()
    point = Point(1, decimal.Decimal(2))
    kwargs["point"] = point
    result = get(_celery_signed_app.tasks["echo"].delay(*args, **kwargs), workers["signed"])
    assert_exact(expected_echo(args, kwargs), result, graph_diff)
    assert type(result["kwargs"]["point"]) is Point


def test_signed_result_is_stored_signed_with_the_new_key(workers: Any) -> None:
    result = _celery_signed_app.tasks["add"].delay((1,), (2,))
    assert get(result, workers["signed"]) == (1, 2)
    stored = database("signed").get(f"celery-task-meta-{result.id}")
    assert stored is not None
    info = amber.envelope_info(stored)
    assert info["signed"] is True and info["timestamp"] is not None
    assert info["key_id"] == amber.SigningKey(_celery_signed_app.NEW_KEY).id


def test_tampered_message_is_refused_and_the_task_does_not_run(workers: Any) -> None:
    app, worker = _celery_signed_app.app, workers["signed"]
    key = f"touched-{uuid.uuid4()}"
    task_id, headers, body = message_for(app, "amber_test.touch", key, "payload")
    _, _, data = kombu.serialization.dumps(body, serializer="amber-signed")
    tampered = bytearray(data)
    tampered[len(tampered) // 2] ^= 0x01
    since = len(worker.log())
    publish_raw(app, headers, bytes(tampered), amber_kombu.SIGNED_CONTENT_TYPE)
    log = refused(worker, task_id, since)
    assert "SignatureError" in log and "the signature does not match" in log
    # A message made the same way but left alone runs: the refusal was the flipped bit's doing.
    good_key = f"touched-{uuid.uuid4()}"
    good_id, good_headers, good_body = message_for(app, "amber_test.touch", good_key, "payload")
    _, _, good = kombu.serialization.dumps(good_body, serializer="amber-signed")
    publish_raw(app, good_headers, good, amber_kombu.SIGNED_CONTENT_TYPE)
    assert get(app.AsyncResult(good_id), worker) == good_key
    db = database("signed")
    assert db.get(good_key) == b"ran"
    assert db.exists(key) == 0
    assert app.AsyncResult(task_id).state == "PENDING"


def test_unsigned_amber_is_refused_under_either_content_type(workers: Any) -> None:
    app, worker = _celery_signed_app.app, workers["signed"]
    db = database("signed")

    # Labelled as signed but not signed: the decoder refuses it (kombu DecodeError).
    key1 = f"touched-{uuid.uuid4()}"
    id1, headers1, body1 = message_for(app, "amber_test.touch", key1)
    since = len(worker.log())
    publish_raw(app, headers1, amber.dumps(body1), amber_kombu.SIGNED_CONTENT_TYPE)
    log = refused(worker, id1, since)
    assert "SignatureError" in log and "the payload is not signed" in log

    # Plain amber's own content type: kombu's accept check refuses it before any decoder runs.
    key2 = f"touched-{uuid.uuid4()}"
    _, headers2, body2 = message_for(app, "amber_test.touch", key2)
    since = len(worker.log())
    publish_raw(app, headers2, amber.dumps(body2), amber_kombu.CONTENT_TYPE)
    # That log line names no task id: a task sent after it shows the worker has passed it.
    marker = _celery_signed_app.tasks["add"].delay(20, 22)
    assert get(marker, worker) == 42
    log = worker.wait_for(
        lambda text: "Refusing to deserialize untrusted content" in text,
        since=since,
        timeout=LOG_TIMEOUT,
    )
    assert "application/x-amber)" in log
    assert db.exists(key1) == 0 and db.exists(key2) == 0


def test_key_rotation_accepts_the_old_key_and_refuses_a_foreign_one(workers: Any) -> None:
    app, worker = _celery_signed_app.app, workers["signed"]
    db = database("signed")
    old = amber.SigningKey(_celery_signed_app.OLD_KEY)

    # A caller not yet given the new key: its messages still run during the rotation.
    old_key = f"touched-{uuid.uuid4()}"
    old_id, headers, body = message_for(app, "amber_test.touch", old_key, (1, {2}))
    data = amber.dumps(body, key=old, timestamp=True)
    publish_raw(app, headers, data, amber_kombu.SIGNED_CONTENT_TYPE)
    assert get(app.AsyncResult(old_id), worker) == old_key
    assert db.get(old_key) == b"ran"

    # A key the worker never had: refused like a forgery.
    foreign = amber.SigningKey(b"a secret nobody gave this worker")
    foreign_key = f"touched-{uuid.uuid4()}"
    foreign_id, headers, body = message_for(app, "amber_test.touch", foreign_key)
    since = len(worker.log())
    publish_raw(app, headers, amber.dumps(body, key=foreign), amber_kombu.SIGNED_CONTENT_TYPE)
    log = refused(worker, foreign_id, since)
    assert "SignatureError" in log and "which is not among" in log
    assert db.exists(foreign_key) == 0
