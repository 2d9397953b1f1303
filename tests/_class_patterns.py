"""A corpus of the class patterns real applications keep in caches, task queues, sessions and
data pipelines, to measure which ones pickle and amber copy exactly (issue 21).

Each ``Pattern`` has a name, a family, a builder that returns a fresh object graph (with the
sharing and cycles the pattern has in practice) and ``types``: what ``amber.loads`` must be
allowed to build or refer to. ``pickle_exact`` says whether pickle (protocol 5) copies it
exactly; ``amber_exact`` whether issue 21 promises amber does. Patterns pickle cannot copy
are here on purpose, so the counts show them.

The classes live at module level so pickle (and amber's allow-list) find them by module and
qualified name. ``exact_copy`` is the exactness check, amber's own ``graph_diff``.
"""

from __future__ import annotations

import collections
import copyreg
import dataclasses
import datetime
import decimal
import enum
import errno
import functools
import io
import os
import pickle
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import attrs
import msgspec
import pydantic
from amber._compare import graph_diff

__all__ = ["FAMILIES", "PATTERNS", "Pattern", "exact_copy"]


def pickle_copy(value: object) -> object:
    """pickle's copy of ``value`` as a plain process makes it: without the exception
    reducers that tblib puts into ``copyreg.dispatch_table`` when a Dask or Celery test in
    the same run installs it (they change what pickle keeps of exceptions)."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=5)
    pickler.dispatch_table = {
        cls: reducer
        for cls, reducer in copyreg.dispatch_table.items()
        if not (isinstance(cls, type) and issubclass(cls, BaseException))
    }
    pickler.dump(value)
    return pickle.loads(buffer.getvalue())


def exact_copy(expected: object, actual: object) -> str | None:
    """None when ``actual`` is an exact copy of ``expected``, else the first difference."""
    return graph_diff(expected, actual)


@dataclasses.dataclass(frozen=True)
class Pattern:
    name: str
    family: str
    build: Callable[[], object]
    types: tuple[Any, ...] = ()
    pickle_exact: bool = True
    amber_exact: bool = True


FAMILIES = (
    "builtin subclass",
    "namespace and singletons",
    "reference",
    "reduce",
    "msgspec",
    "pydantic",
    "exception",
    "ordinary",
    "live state",
)

PATTERNS: list[Pattern] = []


def pattern(
    family: str,
    *types: Any,
    pickle_exact: bool = True,
    amber_exact: bool | None = None,
) -> Callable[[Callable[[], object]], Callable[[], object]]:
    """Registers the decorated builder under its name (without the ``build_`` prefix)."""
    assert family in FAMILIES, family

    def register(build: Callable[[], object]) -> Callable[[], object]:
        PATTERNS.append(
            Pattern(
                name=build.__name__.removeprefix("build_"),
                family=family,
                build=build,
                types=types,
                pickle_exact=pickle_exact,
                amber_exact=pickle_exact if amber_exact is None else amber_exact,
            )
        )
        return build

    return register


# =========================================================================== builtin subclasses


class Headers(dict):  # type: ignore[type-arg]
    """A case-preserving header map, as web frameworks keep one per request."""


@pattern("builtin subclass", Headers)
def build_dict_subclass_holding_itself() -> object:
    headers = Headers({"content-type": "text/html", "x-request-id": "a1"})
    headers.frozen = False  # type: ignore[attr-defined]
    headers["self"] = headers
    return headers


class Page(list):  # type: ignore[type-arg]
    """A page of query results with the paging state beside the rows."""


@pattern("builtin subclass", Page)
def build_list_subclass_shared() -> object:
    page = Page([{"id": 1}, {"id": 2}])
    page.total = 57  # type: ignore[attr-defined]
    page.cursor = "c2"  # type: ignore[attr-defined]
    return {"current": page, "cached": page}


class Version(tuple):  # type: ignore[type-arg]
    """A version tuple that remembers how it was written."""


@pattern("builtin subclass", Version)
def build_tuple_subclass() -> object:
    version = Version((2, 14, 1))
    version.text = "v2.14.1"  # type: ignore[attr-defined]
    return [version, version]


class Permissions(set):  # type: ignore[type-arg]
    pass


@pattern("builtin subclass", Permissions)
def build_set_subclass() -> object:
    perms = Permissions({"read", "write"})
    perms.owner = "ann"  # type: ignore[attr-defined]
    return perms


class Roles(frozenset):  # type: ignore[type-arg]
    pass


@pattern("builtin subclass", Roles)
def build_frozenset_subclass() -> object:
    roles = Roles({"admin", "staff"})
    roles.source = "ldap"  # type: ignore[attr-defined]
    return {"ann": roles, "bob": roles}


class SafeText(str):
    """Text already escaped for HTML (the way template engines mark it), no state."""

    __slots__ = ()


class Localized(str):
    """A translated string that keeps its language."""


@pattern("builtin subclass", SafeText, Localized)
def build_str_subclasses() -> object:
    greeting = Localized("Hallo")
    greeting.lang = "de"  # type: ignore[attr-defined]
    return [SafeText("<b>hi</b>"), greeting, greeting]


class Blob(bytes):
    pass


@pattern("builtin subclass", Blob)
def build_bytes_subclass() -> object:
    blob = Blob(b"\x89PNG\r\n")
    blob.content_type = "image/png"  # type: ignore[attr-defined]
    return blob


class Frame(bytearray):
    pass


@pattern("builtin subclass", Frame)
def build_bytearray_subclass() -> object:
    frame = Frame(b"\x00\x01payload")
    frame.channel = 3  # type: ignore[attr-defined]
    return frame


class Cents(int):
    pass


class Celsius(float):
    pass


class Impedance(complex):
    pass


@pattern("builtin subclass", Cents, Celsius, Impedance)
def build_number_subclasses() -> object:
    price = Cents(1999)
    price.currency = "EUR"  # type: ignore[attr-defined]
    reading = Celsius(-0.0)
    reading.sensor = "t1"  # type: ignore[attr-defined]
    return {"price": price, "reading": reading, "load": Impedance(50, -3.5)}


class LRUCache(collections.OrderedDict):  # type: ignore[type-arg]
    pass


@pattern("builtin subclass", LRUCache)
def build_ordereddict_subclass() -> object:
    cache = LRUCache([("b", 2), ("a", 1)])
    cache.maxsize = 128  # type: ignore[attr-defined]
    cache.move_to_end("b")
    return cache


class Adjacency(collections.defaultdict):  # type: ignore[type-arg]
    pass


# defaultdict.__reduce__ drops the instance __dict__
@pattern("builtin subclass", Adjacency, pickle_exact=False, amber_exact=True)
def build_defaultdict_subclass() -> object:
    graph = Adjacency(list)
    graph["a"].append("b")
    graph["b"].append("a")
    graph.directed = False  # type: ignore[attr-defined]
    return graph


class EventLog(collections.deque):  # type: ignore[type-arg]
    pass


@pattern("builtin subclass", EventLog)
def build_deque_subclass() -> object:
    log = EventLog([{"event": "login"}, {"event": "view"}], maxlen=100)
    log.stream = "audit"  # type: ignore[attr-defined]
    return log


class WordCounts(collections.Counter):  # type: ignore[type-arg]
    pass


# Counter.__reduce__ drops the instance __dict__
@pattern("builtin subclass", WordCounts, pickle_exact=False, amber_exact=True)
def build_counter_subclass() -> object:
    counts = WordCounts("the cat and the hat".split())
    counts.corpus = "tiny"  # type: ignore[attr-defined]
    return counts


class FakeDatetime(datetime.datetime):
    """A datetime subclass without state, as time-freezing test helpers make."""


class FakeDate(datetime.date):
    pass


class OfficeTime(datetime.time):
    pass


@pattern("builtin subclass", FakeDatetime, FakeDate, OfficeTime)
def build_datetime_subclasses() -> object:
    tz = datetime.timezone(datetime.timedelta(hours=2), "CEST")
    return [
        FakeDatetime(2024, 5, 1, 12, 30, tzinfo=tz),
        FakeDate(2024, 5, 1),
        OfficeTime(9, 0, fold=1),
    ]


class Timeout(datetime.timedelta):
    pass


# timedelta.__reduce__ drops the instance __dict__
@pattern("builtin subclass", Timeout, pickle_exact=False, amber_exact=True)
def build_timedelta_subclass_with_attributes() -> object:
    timeout = Timeout(seconds=30)
    timeout.policy = "retry"  # type: ignore[attr-defined]
    return timeout


class Money(decimal.Decimal):
    pass


# Decimal.__reduce__ drops the instance __dict__
@pattern("builtin subclass", Money, pickle_exact=False, amber_exact=True)
def build_decimal_subclass_with_attributes() -> object:
    amount = Money("19.990")
    amount.currency = "EUR"  # type: ignore[attr-defined]
    return [amount, amount]


# =========================================================================== namespaces, singletons


@pattern("namespace and singletons")
def build_simple_namespace_tree() -> object:
    root = types.SimpleNamespace(name="app", debug=False)
    db = types.SimpleNamespace(host="db", port=5432, parent=root)
    root.db = db
    root.children = [db, db]
    return root


@pattern("namespace and singletons")
def build_ellipsis_in_index() -> object:
    return {"index": (slice(0, 2), ...), "rest": ...}


@pattern("namespace and singletons")
def build_notimplemented_sentinel() -> object:
    return {"missing": NotImplemented, "ops": [NotImplemented, None]}


# =========================================================================== references


@dataclasses.dataclass
class User:
    name: str


@dataclasses.dataclass
class Order:
    number: int


def send_email(to: str, subject: str) -> str:
    return f"{to}: {subject}"


def resize_image(path: str, width: int) -> str:
    return f"{path}@{width}"


class Status(enum.Enum):
    QUEUED = "queued"
    DONE = "done"


class Outer:
    class Inner:
        pass


@pattern("reference", User, Order)
def build_class_registry() -> object:
    return {"user": User, "order": Order, "again": User}


@pattern("reference", send_email, resize_image)
def build_task_registry() -> object:
    return {"email.send": send_email, "image.resize": resize_image, "aliases": [send_email]}


@pattern("reference", Status)
def build_enum_class_reference() -> object:
    return {"field": "status", "enum": Status}


@pattern("reference", Outer.Inner)
def build_nested_class_reference() -> object:
    return [Outer.Inner]


@pattern("reference")
def build_builtin_type_references() -> object:
    return {"int": int, "str": str, "dict": dict, "schema": [list, tuple, bytes, float]}


@pattern("reference")
def build_builtin_exception_class_references() -> object:
    # Celery's autoretry_for / tenacity's retry_if_exception_type
    return {"autoretry_for": (ConnectionError, TimeoutError, OSError), "fatal": KeyError}


def double(x: int) -> int:
    return 2 * x


on_error = lambda job: None  # noqa: E731 - a lambda bound to a name, as callbacks often are


# pickle finds functions by qualified name, and a lambda's is "<lambda>"
@pattern("reference", on_error, pickle_exact=False)
def build_lambda_reference() -> object:
    return {"callback": on_error}


# =========================================================================== reduce


class Session:
    """A server-side session: rebuilt empty, its state set by __setstate__."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (), self.state)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.state = state


@pattern("reduce", Session)
def build_reduce_with_setstate_cycle() -> object:
    session = Session()
    session.state = {"user": "ann", "cart": [1, 2]}
    session.state["session"] = session
    return [session, session]


class RateLimiter:
    """Keeps its window and counts; __reduce_ex__ rebuilds it from its arguments."""

    def __init__(self, limit: int, window: float) -> None:
        self.limit = limit
        self.window = window

    def __reduce_ex__(self, protocol: object) -> tuple[Any, ...]:
        return (type(self), (self.limit, self.window))


@pattern("reduce", RateLimiter)
def build_reduce_ex_constructor_args() -> object:
    return {"api": RateLimiter(100, 60.0), "login": RateLimiter(5, 300.0)}


class Temperature:
    def __init__(self, kelvin: float) -> None:
        self.kelvin = kelvin


def make_temperature(kelvin: float) -> Temperature:
    return Temperature(kelvin)


def reduce_temperature(value: Temperature) -> tuple[Any, ...]:
    return (make_temperature, (value.kelvin,))


copyreg.pickle(Temperature, reduce_temperature)


# a copyreg.dispatch_table entry names the factory: that is what must be allowed
@pattern("reduce", make_temperature)
def build_copyreg_dispatch_table() -> object:
    return [Temperature(273.15), Temperature(310.0)]


class Bag:
    """A multiset whose __reduce__ hands back its items as listitems."""

    def __init__(self) -> None:
        self.items: list[Any] = []

    def append(self, item: Any) -> None:
        self.items.append(item)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (), None, iter(list(self.items)))


@pattern("reduce", Bag)
def build_reduce_listitems() -> object:
    bag = Bag()
    for item in ("a", "b", "a"):
        bag.append(item)
    return bag


class Point:
    """An immutable value built through __new__ with keyword arguments."""

    __slots__ = ("x", "y")

    def __new__(cls, *, x: float, y: float) -> Point:
        self = super().__new__(cls)
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y)
        return self

    def __getnewargs_ex__(self) -> tuple[tuple[()], dict[str, float]]:
        return (), {"x": self.x, "y": self.y}

    def __getstate__(self) -> None:
        return None

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Point is immutable")


@pattern("reduce", Point)
def build_getnewargs_ex() -> object:
    return [Point(x=1.5, y=-2.0), Point(x=0.0, y=0.0)]


@pattern("reduce", time.struct_time)
def build_struct_time() -> object:
    return {"utc": time.gmtime(1_700_000_000), "local": time.localtime(1_700_000_000)}


@pattern("reduce", os.stat_result)
def build_stat_result() -> object:
    return os.stat(__file__)


@pattern("reduce", functools.partial, send_email)
def build_partial() -> object:
    alert = functools.partial(send_email, "ops@example.com", subject="disk full")
    alert.priority = "high"  # type: ignore[attr-defined]
    return {"on_disk_full": alert, "on_quota": alert}


# =========================================================================== msgspec


class Tag(msgspec.Struct):
    name: str


class Article(msgspec.Struct):
    title: str
    tags: list[Tag]
    score: float = 0.0


@pattern("msgspec", Article, Tag)
def build_msgspec_plain_nested_shared() -> object:
    python = Tag("python")
    return [Article("amber", [python, Tag("rust")], 4.5), Article("pickle", [python])]


class Coordinates(msgspec.Struct, frozen=True):
    lat: float
    lon: float


@pattern("msgspec", Coordinates)
def build_msgspec_frozen() -> object:
    oslo = Coordinates(59.91, 10.75)
    return {"oslo": oslo, "capital": oslo, "set": {Coordinates(0.0, -0.0)}}


class Tick(msgspec.Struct, array_like=True):
    symbol: str
    price: float
    volume: int


@pattern("msgspec", Tick)
def build_msgspec_array_like() -> object:
    return [Tick("ACME", 12.5, 100), Tick("INIT", 3.25, 7)]


class Settings(msgspec.Struct, omit_defaults=True):
    theme: str = "light"
    page_size: int = 20
    beta: bool = False


@pattern("msgspec", Settings)
def build_msgspec_omit_defaults() -> object:
    return [Settings(), Settings(page_size=50)]


class Created(msgspec.Struct, tag=True):
    id: int


class Deleted(msgspec.Struct, tag=True):
    id: int
    reason: str


@pattern("msgspec", Created, Deleted)
def build_msgspec_tagged_union() -> object:
    return [Created(1), Deleted(1, "spam"), Created(2)]


class Job(msgspec.Struct, kw_only=True):
    queue: str = "default"
    task: str
    attempts: int = 0


@pattern("msgspec", Job)
def build_msgspec_kw_only() -> object:
    return Job(task="report", attempts=2)


# =========================================================================== pydantic


class Item(pydantic.BaseModel):
    sku: str
    quantity: int = 1


class Cart(pydantic.BaseModel):
    owner: str
    items: list[Item]
    note: str | None = None


@pattern("pydantic", Cart, Item)
def build_pydantic_nested_shared() -> object:
    gift = Item(sku="GIFT")
    return Cart(owner="ann", items=[gift, Item(sku="BOOK", quantity=2), gift])


@pattern("pydantic", Item)
def build_pydantic_fields_set() -> object:
    # equal values, different model_fields_set
    return [Item(sku="A"), Item(sku="A", quantity=1)]


class Event(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")

    kind: str


@pattern("pydantic", Event)
def build_pydantic_extra_allow() -> object:
    return Event(kind="click", x=10, y=20, target={"id": "buy"})


class ApiClient(pydantic.BaseModel):
    base_url: str
    _token: str = pydantic.PrivateAttr(default="")
    _calls: int = pydantic.PrivateAttr(default=0)


@pattern("pydantic", ApiClient)
def build_pydantic_private_attributes() -> object:
    client = ApiClient(base_url="https://api.example.com")
    client._token = "secret"
    client._calls = 3
    return client


class Invoice(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True)

    number: int
    issued: datetime.date
    total: decimal.Decimal


@pattern("pydantic", Invoice)
def build_pydantic_frozen_rich_fields() -> object:
    return Invoice(number=7, issued=datetime.date(2024, 5, 1), total=decimal.Decimal("10.50"))


# =========================================================================== exceptions


@pattern("exception")
def build_builtin_exceptions_with_args() -> object:
    return [ValueError("bad", 3), KeyError("user:7"), TypeError()]


@pattern("exception")
def build_oserror_family() -> object:
    return [
        OSError(errno.EACCES, "Permission denied", "/etc/shadow"),
        FileNotFoundError(errno.ENOENT, "No such file or directory", "config.toml"),
        ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"),
    ]


@pattern("exception")
def build_import_error_name_path() -> object:
    return ImportError("No module named 'plugins.x'", name="plugins.x", path="plugins/x.py")


@pattern("exception")
def build_stop_iteration_and_exit() -> object:
    return [StopIteration({"rows": 3}), SystemExit(2)]


@pattern("exception")
def build_unicode_decode_error() -> object:
    try:
        b"ok \xff".decode("utf-8")
    except UnicodeDecodeError as error:
        return error
    raise AssertionError("decoding should have failed")


@pattern("exception")
def build_raised_exception_with_attributes() -> object:
    # raised, so it has a traceback, which no copy keeps
    try:
        raise RuntimeError("worker lost")
    except RuntimeError as error:
        error.worker = "w3"  # type: ignore[attr-defined]
        return error


class PaymentDeclined(Exception):
    """An application exception: its arguments pass straight to Exception."""


@pattern("exception", PaymentDeclined)
def build_application_exception() -> object:
    error = PaymentDeclined("card declined", 4002)
    error.order_id = 991  # type: ignore[attr-defined]
    return {"error": error, "same": error}


# pickle drops __cause__, __context__ and __suppress_context__
@pattern("exception", pickle_exact=False, amber_exact=True)
def build_exception_cause_chain() -> object:
    try:
        try:
            {}["token"]
        except KeyError as missing:
            raise ConnectionError("auth failed") from missing
    except ConnectionError as error:
        return error
    raise AssertionError("should have raised")


@pattern("exception", pickle_exact=False, amber_exact=True)
def build_exception_implicit_context() -> object:
    try:
        try:
            raise TimeoutError("upstream")
        except TimeoutError:
            raise ValueError("retry budget spent") from None
    except ValueError as error:
        return error
    raise AssertionError("should have raised")


# pickle rebuilds it as QuotaExceeded(message) and fails: __init__ wants other arguments
class QuotaExceeded(Exception):
    def __init__(self, user: str, limit: int) -> None:
        super().__init__(f"{user} is over the limit of {limit}")
        self.user = user
        self.limit = limit


@pattern("exception", QuotaExceeded, pickle_exact=False)
def build_exception_init_differs_from_args() -> object:
    return QuotaExceeded("ann", 100)


if sys.version_info >= (3, 11):

    @pattern("exception")
    def build_exception_notes() -> object:
        error = ValueError("row rejected")
        error.add_note("file: users.csv")
        error.add_note("line: 17")
        return error

    @pattern("exception")
    def build_exception_group() -> object:
        shared = ConnectionResetError(errno.ECONNRESET, "reset")
        group = ExceptionGroup(  # noqa: F821 - a builtin from 3.11
            "3 tasks failed",
            [shared, ValueError("bad input"), ExceptionGroup("nested", [shared])],  # noqa: F821
        )
        return group


# =========================================================================== ordinary


@dataclasses.dataclass
class Customer:
    id: int
    name: str
    tags: list[str] = dataclasses.field(default_factory=list)
    referrer: Customer | None = None


@pattern("ordinary", Customer)
def build_dataclass_cycle() -> object:
    ann = Customer(1, "Ann", ["vip"])
    bob = Customer(2, "Bob", referrer=ann)
    ann.referrer = bob
    return [ann, bob]


@dataclasses.dataclass(slots=True)
class Pixel:
    x: int
    y: int
    rgb: tuple[int, int, int]


@pattern("ordinary", Pixel)
def build_slots_dataclass() -> object:
    return [Pixel(0, 0, (255, 0, 0)), Pixel(1, 0, (0, 255, 0))]


@attrs.define
class CacheEntry:
    key: str
    value: Any
    expires: float | None = None


@pattern("ordinary", CacheEntry)
def build_attrs_class() -> object:
    shared = {"rows": [1, 2, 3]}
    return [CacheEntry("q1", shared, 1.7e9), CacheEntry("q2", shared)]


class Row(NamedTuple):
    id: int
    email: str
    score: float


@pattern("ordinary", Row)
def build_namedtuple() -> object:
    return [Row(1, "a@example.com", 0.5), Row(2, "b@example.com", float("nan"))]


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 9


class Perm(enum.Flag):
    READ = 1
    WRITE = 2


@pattern("ordinary", Color, Priority, Perm)
def build_enum_members() -> object:
    return {"color": Color.GREEN, "priority": Priority.HIGH, "perm": Perm.READ | Perm.WRITE}


if sys.version_info >= (3, 11):

    class Channel(enum.StrEnum):
        EMAIL = "email"
        SMS = "sms"

    @pattern("ordinary", Channel)
    def build_strenum_member() -> object:
        return [Channel.EMAIL, Channel.SMS, Channel.EMAIL]


class Account:
    """A plain class: everything in __dict__."""

    def __init__(self, owner: str, balance: decimal.Decimal) -> None:
        self.owner = owner
        self.balance = balance
        self.history: list[Any] = []


@pattern("ordinary", Account)
def build_plain_class() -> object:
    account = Account("ann", decimal.Decimal("12.50"))
    account.history.append(("deposit", decimal.Decimal("12.50"), account))
    return account


class Connection:
    """Drops its socket when pickled and reconnects lazily: __getstate__/__setstate__."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.socket: object = None

    def __getstate__(self) -> dict[str, Any]:
        return {"dsn": self.dsn}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.dsn = state["dsn"]
        self.socket = None


@pattern("ordinary", Connection)
def build_getstate_setstate() -> object:
    return [Connection("postgres://db/app"), Connection("redis://cache/0")]


# =========================================================================== live state


def numbers() -> Iterator[int]:
    yield from range(3)


@pattern("live state", pickle_exact=False, amber_exact=False)
def build_generator() -> object:
    return {"pending": numbers()}


@pattern("live state", pickle_exact=False, amber_exact=False)
def build_lock() -> object:
    return {"guard": threading.Lock(), "rows": []}
