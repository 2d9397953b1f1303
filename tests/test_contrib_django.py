"""amber.contrib.django against a real Redis, through Django's RedisCache and django-redis.

Settings are configured once for this module; every cache talks to the session's real
redis-server (databases 1 and 2, which belong to these tests) and raw values are read and
altered with redis-py, as an attacker or another program would.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import hashlib
import hmac
import os
import struct
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import django
import pytest
import redis
from django.conf import settings

if not settings.configured:
    settings.configure(
        SECRET_KEY="amber-tests-module-secret-0123456789abcdef",
        USE_TZ=True,
        INSTALLED_APPS=[],
        CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}},
    )
    django.setup()

import amber
from amber.contrib.django import (
    DjangoRedisSerializer,
    Serializer,
    SignedSerializer,
)
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings
from django_redis.cache import RedisCache as DjangoRedisCache

SECRET = "amber-tests-secret-key-for-the-cache-0123456789"
OLD_SECRET = "amber-tests-old-secret-key-being-rotated-out-42"
EXPLICIT_KEY = b"explicit amber cache key, 32 b!!"
OTHER_KEY = b"another explicit amber key, 32b!"
DB_DJANGO = 1
DB_DJANGO_REDIS = 2
PREFIX = "t"


@dataclasses.dataclass
class Point:
    x: int
    y: float


@dataclasses.dataclass
class Secret:
    """A class no cache allows: reading it back must be refused."""

    token: str


class Color(enum.IntEnum):
    RED = 1
    GREEN = 2


class Count(int):
    """An int subclass: Django's RedisCache must not store it as a plain int."""


@dataclasses.dataclass(frozen=True)
class Money:
    cents: int
    currency: str


MONEY = amber.CustomType(Money, encode=lambda m: (m.cents, m.currency), decode=lambda s: Money(*s))

AMBER_OPTIONS: dict[str, Any] = {
    # A dotted path, as a settings file names a class, and a class object.
    "types": [f"{__name__}.Point", Color],
    "custom": [MONEY],
}

UNPICKLED: list[str] = []


def _record_unpickling(marker: str) -> str:
    UNPICKLED.append(marker)
    return marker


class Booby:
    """Unpickling this runs _record_unpickling: proof of whether a reader unpickled it."""

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (_record_unpickling, ("unpickled",))


def caches_config(server: Any) -> dict[str, Any]:
    django_url = server.url_for(DB_DJANGO)
    dr_url = server.url_for(DB_DJANGO_REDIS)

    def builtin(serializer: str | None) -> dict[str, Any]:
        options = {} if serializer is None else {"serializer": serializer}
        return {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": django_url,
            "KEY_PREFIX": PREFIX,
            "OPTIONS": options,
        }

    def django_redis(serializer: str | None, amber_options: Any = None) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if serializer is not None:
            options["SERIALIZER"] = serializer
        if amber_options is not None:
            options["AMBER"] = amber_options
        return {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": dr_url,
            "KEY_PREFIX": PREFIX,
            "OPTIONS": options,
        }

    return {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "amber": builtin("amber.contrib.django.Serializer"),
        "amber_signed": builtin("amber.contrib.django.SignedSerializer"),
        "pickle": builtin(None),
        "dr_amber": django_redis("amber.contrib.django.DjangoRedisSerializer", AMBER_OPTIONS),
        "dr_signed": django_redis(
            "amber.contrib.django.SignedDjangoRedisSerializer", AMBER_OPTIONS
        ),
        "dr_pickle": django_redis(None),
    }


AMBER_CACHES = ["amber", "amber_signed", "dr_amber", "dr_signed"]
SIGNED_CACHES = ["amber_signed", "dr_signed"]
PICKLE_OF = {"amber": "pickle", "amber_signed": "pickle", "dr_amber": "dr_pickle"}
PICKLE_OF["dr_signed"] = "dr_pickle"
DB_OF = {"amber": 1, "amber_signed": 1, "pickle": 1, "dr_amber": 2, "dr_signed": 2}
DB_OF["dr_pickle"] = 2


@pytest.fixture(scope="module")
def server(redis_server: Any) -> Iterator[Any]:
    with override_settings(
        SECRET_KEY=SECRET,
        SECRET_KEY_FALLBACKS=[],
        AMBER_CACHE=AMBER_OPTIONS,
        CACHES=caches_config(redis_server),
    ):
        yield redis_server


@pytest.fixture(scope="module")
def raw_clients(server: Any) -> Iterator[dict[int, redis.Redis]]:
    clients = {db: redis.Redis.from_url(server.url_for(db)) for db in (1, 2)}
    yield clients
    for client in clients.values():
        client.flushdb()
        client.close()


@pytest.fixture(autouse=True)
def _clean(raw_clients: dict[int, redis.Redis]) -> None:
    for client in raw_clients.values():
        client.flushdb()
    UNPICKLED.clear()


def raw_key(alias: str, key: str) -> str:
    return str(caches[alias].make_key(key))


def raw_get(raw_clients: dict[int, redis.Redis], alias: str, key: str) -> bytes:
    value = raw_clients[DB_OF[alias]].get(raw_key(alias, key))
    assert isinstance(value, bytes), f"{alias}:{key} holds {value!r}"
    return value


def raw_set(raw_clients: dict[int, redis.Redis], alias: str, key: str, value: bytes) -> None:
    raw_clients[DB_OF[alias]].set(raw_key(alias, key), value)


def rich_value() -> dict[str, Any]:
    shared = ["shared", 1]
    cycle: list[Any] = []
    cycle.append(cycle)
    ist = datetime.timezone(datetime.timedelta(hours=5, minutes=30), "IST")
    return {
        "tuple": (1, "two", None, 3.5),
        "set": {1, 2, 3},
        "frozenset": frozenset({"a", "b"}),
        "when": datetime.datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=ist),
        "utc": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc),
        "price": decimal.Decimal("12.340"),
        "id": uuid.UUID("0f5b6a2e-8a55-4d6b-9d2c-3f0c7b1e2a99"),
        "first": shared,
        "second": shared,
        "cycle": cycle,
        "point": Point(3, -1.25),
        "money": Money(1999, "EUR"),
        "color": Color.GREEN,
        "flag": True,
        "bytes": b"\x00\xffraw",
    }


def assert_rich(back: Any, original: dict[str, Any], graph_diff: Any) -> None:
    assert graph_diff(original, back) is None
    assert type(back["tuple"]) is tuple and back["tuple"] == original["tuple"]
    assert type(back["set"]) is set and type(back["frozenset"]) is frozenset
    assert back["when"] == original["when"]
    assert back["when"].utcoffset() == datetime.timedelta(hours=5, minutes=30)
    assert back["when"].tzname() == "IST"
    assert str(back["price"]) == "12.340"
    assert type(back["id"]) is uuid.UUID and back["id"] == original["id"]
    assert back["first"] is back["second"]
    assert back["cycle"][0] is back["cycle"]
    assert type(back["point"]) is Point and back["point"] == original["point"]
    assert back["money"] == original["money"]
    assert back["color"] is Color.GREEN
    assert back["flag"] is True


# Round trips -------------------------------------------------------------------------------


@pytest.mark.parametrize("alias", AMBER_CACHES)
def test_set_get_round_trips_rich_values(
    alias: str, server: Any, raw_clients: Any, graph_diff: Any
) -> None:
    cache = caches[alias]
    original = rich_value()
    cache.set("rich", original, timeout=60)
    stored = raw_get(raw_clients, alias, "rich")
    assert stored[:2] == b"\xabA", "the value in Redis is an amber payload"
    assert_rich(cache.get("rich"), original, graph_diff)
    assert cache.get("missing", "fallback") == "fallback"


@pytest.mark.parametrize("alias", AMBER_CACHES)
def test_many_add_get_or_set_touch_delete(
    alias: str, server: Any, raw_clients: Any, graph_diff: Any
) -> None:
    cache = caches[alias]
    first, second = rich_value(), {"only": (Point(1, 2.0), frozenset({3}))}
    cache.set_many({"a": first, "b": second}, timeout=60)
    many = cache.get_many(["a", "b", "absent"])
    assert set(many) == {"a", "b"}
    assert_rich(many["a"], first, graph_diff)
    assert graph_diff(second, many["b"]) is None

    assert cache.add("a", "not stored") is False
    assert_rich(cache.get("a"), first, graph_diff)
    assert cache.add("c", {"new": {1, 2}}) is True
    assert cache.get("c") == {"new": {1, 2}}

    made = cache.get_or_set("d", lambda: (decimal.Decimal("1.50"), Color.RED), timeout=60)
    assert made == (decimal.Decimal("1.50"), Color.RED) and type(made) is tuple
    again = cache.get_or_set("d", lambda: "never used")
    assert again == made and type(again) is tuple and again[1] is Color.RED

    client = raw_clients[DB_OF[alias]]
    assert 0 < client.ttl(raw_key(alias, "a")) <= 60
    assert cache.touch("a", timeout=500) is True
    assert 60 < client.ttl(raw_key(alias, "a")) <= 500
    assert cache.touch("absent", timeout=5) is False

    assert cache.delete("a") is True
    assert cache.get("a", "gone") == "gone"
    assert cache.delete("a") is False


@pytest.mark.parametrize("alias", AMBER_CACHES)
def test_ints_stay_plain_so_incr_and_decr_run_in_redis(
    alias: str, server: Any, raw_clients: Any
) -> None:
    cache = caches[alias]
    cache.set("n", 41)
    assert raw_get(raw_clients, alias, "n") == b"41", "Redis holds the int itself"
    assert cache.incr("n") == 42
    assert cache.decr("n", 5) == 37
    back = cache.get("n")
    assert back == 37 and type(back) is int
    cache.set("neg", -(2**63))
    assert raw_get(raw_clients, alias, "neg") == b"-9223372036854775808"
    assert cache.get_many(["n", "neg"]) == {"n": 37, "neg": -(2**63)}
    cache.set("small", -1000)
    assert cache.incr("small", 3) == -997
    with pytest.raises(ValueError):
        cache.incr("never_set")


@pytest.mark.parametrize("alias", AMBER_CACHES)
def test_bools_enums_and_big_ints_are_not_plain(alias: str, server: Any, raw_clients: Any) -> None:
    cache = caches[alias]
    cache.set_many({"yes": True, "no": False, "color": Color.RED})
    for key in ("yes", "no", "color"):
        assert raw_get(raw_clients, alias, key)[:2] == b"\xabA", key
    assert cache.get("yes") is True
    assert cache.get("no") is False
    assert cache.get("color") is Color.RED
    huge = 2**100 + 7
    cache.set("huge", huge)
    back = cache.get("huge")
    assert back == huge and type(back) is int


def test_builtin_cache_refuses_int_subclasses_not_in_types(server: Any, raw_clients: Any) -> None:
    # Stored as an OBJECT naming the subclass, which these settings do not allow on load.
    cache = caches["amber"]
    cache.set("count", Count(3))
    assert raw_clients[DB_DJANGO].get(raw_key("amber", "count")) is not None
    with pytest.raises(amber.ClassNotAllowedError, match="Count"):
        cache.get("count")


def test_django_redis_stores_int_subclasses_itself(server: Any, raw_clients: Any) -> None:
    # The documented limit: django-redis's client, not the serializer, picks ints out.
    cache = caches["dr_amber"]
    cache.set("count", Count(3))
    assert raw_get(raw_clients, "dr_amber", "count") == b"3"
    back = cache.get("count")
    assert back == 3 and type(back) is int


# What is refused ---------------------------------------------------------------------------


@pytest.mark.parametrize("alias", AMBER_CACHES)
def test_class_outside_types_is_refused(alias: str, server: Any) -> None:
    cache = caches[alias]
    cache.set("secret", [Secret("s3")])
    with pytest.raises(amber.ClassNotAllowedError) as caught:
        cache.get("secret")
    assert caught.value.qualname == "Secret"
    assert caught.value.kind == "class_not_allowed"
    message = str(caught.value)
    assert "Secret is not allowed" in message
    assert "Serializer" in message and "AMBER" in message, message


@pytest.mark.parametrize("alias", SIGNED_CACHES)
def test_signed_value_altered_in_redis_is_refused(
    alias: str, server: Any, raw_clients: Any
) -> None:
    cache = caches[alias]
    cache.set("v", {"total": decimal.Decimal("10.00")})
    stored = raw_get(raw_clients, alias, "v")
    # 10.00 -> 10.01 in the body, the byte before the 32-byte tag: a plausible forgery.
    position = len(stored) - 33
    altered = stored[:position] + bytes([stored[position] ^ 0x01]) + stored[position + 1 :]
    raw_set(raw_clients, alias, "v", altered)
    with pytest.raises(amber.SignatureError) as caught:
        cache.get("v")
    assert caught.value.kind == "bad_signature"
    assert "Signed" in str(caught.value) and "cached value refused" in str(caught.value)
    with pytest.raises(amber.SignatureError):
        cache.get_many(["v"])


@pytest.mark.parametrize("alias", AMBER_CACHES)
def test_truncated_value_is_refused(alias: str, server: Any, raw_clients: Any) -> None:
    cache = caches[alias]
    cache.set("v", rich_value())
    stored = raw_get(raw_clients, alias, "v")
    signed = alias in SIGNED_CACHES
    for cut in (len(stored) - 1, len(stored) // 2, 2):
        raw_set(raw_clients, alias, "v", stored[:cut])
        with pytest.raises(amber.DecodeError) as caught:
            cache.get("v")
        assert "cached value refused" in str(caught.value)
        if signed and cut > 3:
            # Cut anywhere after the header, the last 32 bytes are no longer the tag.
            assert isinstance(caught.value, amber.SignatureError), caught.value
        else:
            assert caught.value.kind == "truncated"


@pytest.mark.parametrize("alias", AMBER_CACHES)
def test_pickle_from_the_default_serializer_is_never_unpickled(
    alias: str, server: Any, raw_clients: Any
) -> None:
    writer = caches[PICKLE_OF[alias]]
    writer.set("old", {"payload": Booby()})
    assert raw_get(raw_clients, alias, "old")[:1] == b"\x80"
    # The pickle is live: its own serializer runs the code in it.
    assert writer.get("old") == {"payload": "unpickled"}
    assert UNPICKLED == ["unpickled"]
    UNPICKLED.clear()

    with pytest.raises(amber.DecodeError) as caught:
        caches[alias].get("old")
    assert caught.value.kind == "bad_magic" and caught.value.offset == 0
    assert "pickle" in str(caught.value) and "never unpickles" in str(caught.value)
    assert UNPICKLED == []


def test_signed_and_unsigned_values_do_not_mix(server: Any, raw_clients: Any) -> None:
    caches["amber"].set("plain", {"a": 1})
    with pytest.raises(amber.SignatureError) as caught:
        caches["amber_signed"].get("plain")
    assert caught.value.kind == "signature_required" and "written unsigned" in str(caught.value)
    caches["amber_signed"].set("signed", {"a": 1})
    with pytest.raises(amber.SignatureError) as caught:
        caches["amber"].get("signed")
    assert caught.value.kind == "key_required"


# Signing keys ------------------------------------------------------------------------------


def django_derived_key(secret: str, salt: str = "amber.contrib.django.cache") -> bytes:
    """Django's salted_hmac key derivation, written out from its documented algorithm."""
    key = hashlib.sha256(salt.encode() + secret.encode()).digest()
    return hmac.new(key, b"amber cache signing key", hashlib.sha256).digest()


@pytest.mark.parametrize("alias", SIGNED_CACHES)
def test_signed_key_is_derived_from_secret_key_never_the_raw_one(
    alias: str, server: Any, raw_clients: Any
) -> None:
    caches[alias].set("v", [1, 2, 3])
    stored = raw_get(raw_clients, alias, "v")
    info = amber.verify(stored, key=django_derived_key(SECRET))
    assert info["signed"] is True
    with pytest.raises(amber.SignatureError):
        amber.verify(stored, key=SECRET)
    with pytest.raises(amber.SignatureError):
        amber.verify(stored, key=django_derived_key(SECRET, salt="another salt"))


def builtin_signed_cache(server: Any, options: Any = None) -> RedisCache:
    serializer: Any = "amber.contrib.django.SignedSerializer"
    if options is not None:
        serializer = SignedSerializer(options)
    return RedisCache(
        server.url_for(DB_DJANGO), {"KEY_PREFIX": "rot", "OPTIONS": {"serializer": serializer}}
    )


def test_rotation_through_secret_key_fallbacks(server: Any, raw_clients: Any) -> None:
    with override_settings(SECRET_KEY=OLD_SECRET, SECRET_KEY_FALLBACKS=[]):
        builtin_signed_cache(server).set("v", {"written": "under the old key"})
    # A fresh cache (a new process, after the deploy) reads the settings of its time.
    with override_settings(SECRET_KEY=SECRET, SECRET_KEY_FALLBACKS=[OLD_SECRET]):
        rotating = builtin_signed_cache(server)
        assert rotating.get("v") == {"written": "under the old key"}
        rotating.set("w", "under the new key")
    stored = raw_clients[DB_DJANGO].get("rot:1:w")
    amber.verify(stored, key=django_derived_key(SECRET))
    with pytest.raises(amber.SignatureError):
        amber.verify(stored, key=django_derived_key(OLD_SECRET))
    with override_settings(SECRET_KEY=SECRET, SECRET_KEY_FALLBACKS=[]):
        rotated = builtin_signed_cache(server)
        assert rotated.get("w") == "under the new key"
        with pytest.raises(amber.SignatureError) as caught:
            rotated.get("v")
        assert caught.value.kind == "unknown_key"
        assert "rotated out" in str(caught.value)


def django_redis_cache(server: Any, amber_options: Any, *, signed: bool = True) -> Any:
    name = "SignedDjangoRedisSerializer" if signed else "DjangoRedisSerializer"
    return DjangoRedisCache(
        server.url_for(DB_DJANGO_REDIS),
        {
            "KEY_PREFIX": "rot",
            "OPTIONS": {"SERIALIZER": f"amber.contrib.django.{name}", "AMBER": amber_options},
        },
    )


def test_rotation_with_explicit_keys(server: Any) -> None:
    django_redis_cache(server, {"key": EXPLICIT_KEY}).set("v", (1, "old"))
    rotating = django_redis_cache(server, {"key": OTHER_KEY, "fallback_keys": [EXPLICIT_KEY]})
    assert rotating.get("v") == (1, "old")
    with pytest.raises(amber.SignatureError) as caught:
        django_redis_cache(server, {"key": OTHER_KEY}).get("v")
    assert caught.value.kind == "unknown_key"
    # The same key id under another secret: the tag, not the id, decides.
    same_id = amber.SigningKey(OTHER_KEY, id=amber.SigningKey(EXPLICIT_KEY).id)
    with pytest.raises(amber.SignatureError) as caught:
        django_redis_cache(server, {"key": same_id}).get("v")
    assert caught.value.kind == "bad_signature"
    # The unsigned serializer signs too once it is given a key.
    unsigned_class = django_redis_cache(server, {"KEY": EXPLICIT_KEY}, signed=False)
    assert unsigned_class.get("v") == (1, "old")


def resign(stored: bytes, secret: bytes, timestamp: int) -> bytes:
    """The payload with another timestamp and a valid tag, following spec/format.md 12.1."""
    assert stored[2] & 0x20, "signed"
    flags_at = 4 + stored[3]
    assert stored[flags_at] & 0x01, "timestamped"
    at = flags_at + 1
    signed_part = stored[:at] + struct.pack("<Q", timestamp) + stored[at + 8 : -32]
    return signed_part + hmac.new(secret, signed_part, hashlib.sha256).digest()


@pytest.mark.parametrize("backend", ["django", "django-redis"])
def test_max_age_refuses_old_values(backend: str, server: Any, raw_clients: Any) -> None:
    options = {"key": EXPLICIT_KEY, "max_age": 60}
    if backend == "django":
        cache: Any = builtin_signed_cache(server, options)
        client = raw_clients[DB_DJANGO]
    else:
        cache = django_redis_cache(server, options)
        client = raw_clients[DB_DJANGO_REDIS]
    cache.set("v", {"fresh": True})
    assert cache.get("v") == {"fresh": True}
    stored = client.get("rot:1:v")
    written = struct.unpack_from("<Q", stored, 4 + stored[3] + 1)[0]
    assert abs(written - time.time()) < 60
    assert resign(stored, EXPLICIT_KEY, written) == stored, "the forger follows the spec"

    client.set("rot:1:v", resign(stored, EXPLICIT_KEY, written - 30))
    assert cache.get("v") == {"fresh": True}
    client.set("rot:1:v", resign(stored, EXPLICIT_KEY, written - 3600))
    with pytest.raises(amber.SignatureError) as caught:
        cache.get("v")
    assert caught.value.kind == "expired"


def test_plain_ints_off_signs_ints_too(server: Any, raw_clients: Any) -> None:
    cache = builtin_signed_cache(server, {"key": EXPLICIT_KEY, "plain_ints": False})
    cache.set("n", 5)
    stored = raw_clients[DB_DJANGO].get("rot:1:n")
    assert stored[:2] == b"\xabA"
    back = cache.get("n")
    assert back == 5 and type(back) is int
    # Redis cannot increment a signed value, and a plain int put there is refused.
    with pytest.raises(redis.ResponseError):
        cache.incr("n")
    raw_clients[DB_DJANGO].set("rot:1:n", b"6")
    with pytest.raises(amber.DecodeError) as caught:
        cache.get("n")
    assert caught.value.kind == "bad_magic"


def test_serializer_instance_with_its_own_options(server: Any, graph_diff: Any) -> None:
    cache = RedisCache(
        server.url_for(DB_DJANGO),
        {"KEY_PREFIX": "own", "OPTIONS": {"serializer": Serializer({"types": [Secret]})}},
    )
    cache.set("s", [Secret("allowed here"), Secret("and here")])
    assert graph_diff([Secret("allowed here"), Secret("and here")], cache.get("s")) is None
    cache.set("p", Point(1, 2.0))
    with pytest.raises(amber.ClassNotAllowedError, match=r"Serializer\(options\)"):
        cache.get("p")


# Settings errors ---------------------------------------------------------------------------

BAD_OPTIONS = [
    ({"types": ["no_such_module_xyz.Thing"]}, ["types", "no_such_module_xyz"]),
    ({"types": "app.Point"}, ["types must be a list"]),
    ({"types": 3}, ["types must be a list, not int"]),
    ({"tpyes": []}, ["unknown amber option 'tpyes'"]),
    ({"custom": [Point]}, ["custom entry", "CustomType"]),
    ({"max_age": 60}, ["max_age needs a key"]),
    ({"key": b"short"}, ["key"]),
    ({"signed": "yes"}, ["signed must be True or False"]),
    ({"plain_ints": 0}, ["plain_ints must be True or False"]),
    ({"salt": "s"}, ["salt is given, but values are not signed"]),
    ({"signed": True, "salt": ""}, ["salt must be a non-empty str"]),
    ({"signed": True, "fallback_keys": [OTHER_KEY]}, ["fallback_keys given without key"]),
    ({"key": EXPLICIT_KEY, "salt": "s"}, ["salt only applies"]),
    ({"key": SECRET}, ["SECRET_KEY", "itself"]),
    ({"key": EXPLICIT_KEY, "fallback_keys": SECRET}, ["SECRET_KEY", "itself"]),
    ({"signed": False, "key": EXPLICIT_KEY}, ["signed is False, but a key"]),
    ({"types": [], "TYPES": []}, ["given twice"]),
    (["types"], ["expected a mapping"]),
]


@pytest.mark.parametrize(("options", "expected"), BAD_OPTIONS)
def test_bad_settings_name_the_setting_and_option(
    options: Any, expected: list[str], server: Any
) -> None:
    with override_settings(AMBER_CACHE=options):
        # Django builds the serializer at the cache's first use.
        cache = RedisCache(
            server.url_for(DB_DJANGO),
            {"OPTIONS": {"serializer": "amber.contrib.django.Serializer"}},
        )
        with pytest.raises(ImproperlyConfigured) as caught:
            cache.get("x")
    message = str(caught.value)
    assert message.startswith("settings.AMBER_CACHE"), message
    for part in expected:
        assert part in message, message

    bad_caches = caches_config(server)
    bad_caches["dr_bad"] = {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": server.url_for(DB_DJANGO_REDIS),
        "OPTIONS": {"SERIALIZER": "amber.contrib.django.DjangoRedisSerializer", "AMBER": options},
    }
    with override_settings(CACHES=bad_caches), pytest.raises(ImproperlyConfigured) as caught:
        caches["dr_bad"].get("x")
    message = str(caught.value)
    assert message.startswith("CACHES['dr_bad']['OPTIONS']['AMBER']"), message
    for part in expected:
        assert part in message, message


def test_more_settings_errors(server: Any) -> None:
    with pytest.raises(ImproperlyConfigured, match="always signs"):
        SignedSerializer({"signed": False})
    with pytest.raises(ImproperlyConfigured, match=r"plain_ints cannot be turned off"):
        DjangoRedisSerializer({"AMBER": {"plain_ints": False}})
    with pytest.raises(ImproperlyConfigured, match=r"^the cache's\['OPTIONS'\]\['AMBER'\]"):
        DjangoRedisSerializer({"AMBER": {"types": 3}})
    with (
        override_settings(SECRET_KEY=""),
        pytest.raises(ImproperlyConfigured, match="derived from SECRET_KEY"),
    ):
        SignedSerializer()


# In a Django project of its own ------------------------------------------------------------


def run_python(code: str, *, cwd: Path, env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_settings_module_with_a_serializer_instance(server: Any, tmp_path: Path) -> None:
    # The instance is made while the settings module itself is being imported, so it must not
    # touch settings until the cache is used.
    (tmp_path / "project_settings.py").write_text(
        textwrap.dedent(
            f"""
            import datetime
            from amber.contrib.django import SignedSerializer

            SECRET_KEY = "a project secret key that is long enough 0123"
            CACHES = {{
                "default": {{
                    "BACKEND": "django.core.cache.backends.redis.RedisCache",
                    "LOCATION": {server.url_for(DB_DJANGO)!r},
                    "KEY_PREFIX": "project",
                    "OPTIONS": {{"serializer": SignedSerializer({{"max_age": 3600}})}},
                }},
            }}
            """
        )
    )
    code = textwrap.dedent(
        """
        import datetime
        from django.core.cache import cache
        value = {"when": datetime.date(2026, 5, 1), "ids": (1, 2)}
        cache.set("k", value)
        back = cache.get("k")
        assert back == value and type(back["ids"]) is tuple, back
        print("ok", type(cache._cache._serializer).__name__)
        """
    )
    out = run_python(
        code,
        cwd=tmp_path,
        env={"DJANGO_SETTINGS_MODULE": "project_settings", "PYTHONPATH": str(tmp_path)},
    )
    assert out.split() == ["ok", "SignedSerializer"]
    stored = redis.Redis.from_url(server.url_for(DB_DJANGO)).get("project:1:k")
    derived = django_derived_key("a project secret key that is long enough 0123")
    assert amber.verify(stored, key=derived)["timestamp"] is not None


def test_importing_amber_contrib_does_not_import_django(tmp_path: Path) -> None:
    out = run_python(
        "import sys, amber, amber.contrib; print(sorted("
        "m for m in ('django', 'django_redis', 'redis') if m in sys.modules))",
        cwd=tmp_path,
        env={},
    )
    assert out.strip() == "[]"
