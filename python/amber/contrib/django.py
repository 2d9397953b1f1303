"""amber as the serializer of Django's Redis caches: Django's own ``RedisCache`` and django-redis.

Django's ``RedisCache`` takes a serializer from ``CACHES[alias]["OPTIONS"]["serializer"]`` and
calls it with no arguments, so :class:`Serializer` and :class:`SignedSerializer` read their
options from the ``AMBER_CACHE`` setting (or from the mapping an instance is given).
django-redis builds its ``SERIALIZER`` with the cache's ``OPTIONS``, so
:class:`DjangoRedisSerializer` and :class:`SignedDjangoRedisSerializer` read
``OPTIONS["AMBER"]`` of their own cache.

The options are those of :class:`amber.contrib.Codec` (``types``, ``custom``, ``key``,
``fallback_keys``, ``max_age``, ``compress``, limits...) plus three of this module:

- ``signed``: sign every value. Without an explicit ``key`` the key is derived from
  ``SECRET_KEY`` with a salt, and ``SECRET_KEY_FALLBACKS`` give the keys still accepted, as
  ``django.core.signing`` does; the raw ``SECRET_KEY`` never signs anything.
- ``salt``: the salt of that derivation (default ``"amber.contrib.django.cache"``), so two
  caches that must not accept each other's values can be told apart.
- ``plain_ints``: store an ``int`` (exactly ``int``, not ``bool`` or a subclass, and within
  Redis's signed 64-bit range) as Redis's own decimal form, as Django's serializer does, so
  ``incr`` and ``decr`` run in Redis. On by default; Django's ``RedisCache`` can turn it off so
  that a signed cache accepts only signed values (its ``incr`` then fails in Redis).

A value the codec refuses (altered, cut short, signed with a key no longer accepted, expired,
a class outside ``types``, or written by another serializer such as pickle) raises the
``amber.DecodeError`` subclass that amber raised, with the same ``kind`` and ``offset``, and a
message that names the serializer and the setting it was configured from. A pickle is never
unpickled: it is refused at its first byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.crypto import salted_hmac

from .. import DecodeError, SigningKey
from ._config import Codec, OptionsError

try:
    from django_redis.serializers.base import BaseSerializer as _DjangoRedisBase
except ImportError:  # django-redis is optional; only its two serializers would use it.
    _DjangoRedisBase = object

__all__ = [
    "DEFAULT_SALT",
    "SETTING",
    "DjangoRedisSerializer",
    "Serializer",
    "SignedDjangoRedisSerializer",
    "SignedSerializer",
]

# The setting Django's RedisCache serializers read their options from.
SETTING = "AMBER_CACHE"
# What a key derived from SECRET_KEY is salted with unless the options say otherwise.
DEFAULT_SALT = "amber.contrib.django.cache"

_OWN_OPTIONS = frozenset({"signed", "salt", "plain_ints"})
# The ints Redis's INCRBY accepts; a larger int stored plain could not be incremented, and one
# of more than 4300 digits could not even be read back with int().
_INT_MIN = -(2**63)
_INT_MAX = 2**63 - 1
# How Redis (and redis-py, which writes an int as its repr) store those ints; nothing else is
# read as a plain int, so an amber payload (first byte 0xAB) can never be mistaken for one.
_PLAIN_INT = re.compile(rb"-?[0-9]{1,19}")


def _derived_key(secret: str | bytes, salt: str) -> bytes:
    """A 32-byte amber secret from a Django secret, the way ``django.core.signing`` keys HMACs.

    A separate derivation (and salt) means a value signed for the cache can never pass as a
    signed cookie or token, and the cache never handles the raw ``SECRET_KEY``.
    """
    digest: bytes = salted_hmac(
        salt, b"amber cache signing key", secret=secret, algorithm="sha256"
    ).digest()
    return digest


def _as_bytes(secret: Any) -> bytes | None:
    if isinstance(secret, str):
        return secret.encode()
    if isinstance(secret, (bytes, bytearray, memoryview)):
        return bytes(secret)
    return None


def _django_secrets() -> list[bytes]:
    """SECRET_KEY and its fallbacks, or none when SECRET_KEY is not set."""
    try:
        secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", ())]
    except ImproperlyConfigured:
        return []
    return [b for b in map(_as_bytes, secrets) if b]


def _split_options(options: Any, where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """This module's options and amber's, names folded to lower case, each given once."""
    if options is None:
        return {}, {}
    if not isinstance(options, Mapping):
        raise ImproperlyConfigured(f"{where}: expected a mapping of amber options, not {options!r}")
    own: dict[str, Any] = {}
    amber_options: dict[str, Any] = {}
    spelled: dict[str, Any] = {}
    for name, value in options.items():
        option = str(name).lower()
        if option in spelled:
            raise ImproperlyConfigured(
                f"{where}: option {name!r} is given twice (also as {spelled[option]!r})"
            )
        spelled[option] = name
        (own if option in _OWN_OPTIONS else amber_options)[option] = value
    for option in ("types", "custom", "fallback_keys"):
        value = amber_options.get(option)
        if value is not None and not isinstance(value, (str, bytes, SigningKey, Iterable)):
            raise ImproperlyConfigured(
                f"{where}: {option} must be a list, not {type(value).__name__} {value!r}"
            )
    return own, amber_options


def _flag(own: dict[str, Any], name: str, default: bool, where: str) -> bool:
    value = own.get(name, default)
    if not isinstance(value, bool):
        raise ImproperlyConfigured(f"{where}: {name} must be True or False, not {value!r}")
    return value


def _build(
    options: Any, *, where: str, signed_by_default: bool, plain_ints_optional: bool
) -> tuple[Codec, bool]:
    """The codec and the plain-int switch for one serializer; every setting error is raised here.

    ``where`` names the setting in the messages, since a cache's serializer is built at its
    first use, far from the settings file that holds the mistake.
    """
    own, amber_options = _split_options(options, where)
    signed = _flag(own, "signed", signed_by_default, where)
    if signed_by_default and not signed:
        raise ImproperlyConfigured(
            f"{where}: signed is False, but this serializer always signs; "
            "use the unsigned serializer instead"
        )
    plain_ints = _flag(own, "plain_ints", True, where)
    if not plain_ints and not plain_ints_optional:
        raise ImproperlyConfigured(
            f"{where}: plain_ints cannot be turned off with django-redis: its client stores "
            "ints itself, before the serializer sees them"
        )
    salt = own.get("salt")
    if salt is not None and (not isinstance(salt, str) or not salt):
        raise ImproperlyConfigured(f"{where}: salt must be a non-empty str, not {salt!r}")

    explicit_key = amber_options.get("key") is not None
    if explicit_key and own.get("signed") is False:
        raise ImproperlyConfigured(f"{where}: signed is False, but a key to sign with is given")
    if explicit_key:
        if salt is not None:
            raise ImproperlyConfigured(
                f"{where}: salt only applies to keys derived from SECRET_KEY, and a key is given"
            )
        raw = _django_secrets()
        given = [amber_options["key"], *_listed(amber_options.get("fallback_keys"))]
        for secret in given:
            as_bytes = _as_bytes(secret)
            if as_bytes is not None and as_bytes in raw:
                raise ImproperlyConfigured(
                    f"{where}: key or fallback_keys holds SECRET_KEY (or one of "
                    "SECRET_KEY_FALLBACKS) itself; leave key out to sign with a key derived "
                    "from it, or give a secret of its own"
                )
    elif signed:
        if amber_options.get("fallback_keys"):
            raise ImproperlyConfigured(
                f"{where}: fallback_keys given without key: keys derived from SECRET_KEY "
                "rotate through SECRET_KEY_FALLBACKS"
            )
        try:
            secret_key = settings.SECRET_KEY
        except ImproperlyConfigured as exc:
            raise ImproperlyConfigured(
                f"{where}: signed without a key, so the key is derived from SECRET_KEY: {exc}"
            ) from exc
        fallbacks = getattr(settings, "SECRET_KEY_FALLBACKS", ())
        salt = salt or DEFAULT_SALT
        amber_options["key"] = _derived_key(secret_key, salt)
        amber_options["fallback_keys"] = [_derived_key(old, salt) for old in fallbacks]
    elif salt is not None:
        raise ImproperlyConfigured(f"{where}: salt is given, but values are not signed")
    try:
        codec = Codec.from_options(amber_options, where=where)
    except OptionsError as exc:
        raise ImproperlyConfigured(str(exc)) from exc
    return codec, plain_ints


def _listed(keys: Any) -> list[Any]:
    if keys is None:
        return []
    if isinstance(keys, (str, bytes, bytearray, memoryview, SigningKey)):
        return [keys]
    try:
        return list(keys)
    except TypeError:
        return [keys]


def _refused(exc: DecodeError, data: Any, label: str) -> DecodeError:
    """amber's error again, same class, ``kind`` and ``offset``, saying which cache refused it."""
    hint = ""
    if exc.kind == "bad_magic":
        head = bytes(data[:8])
        if head[:1] == b"\x80":
            hint = (
                "; it starts with 0x80 as a pickle does (Django's default RedisSerializer and "
                "django-redis's PickleSerializer write those), and amber never unpickles: "
                "delete the key, or clear the cache after switching serializers"
            )
        else:
            hint = f"; it starts with {head!r}: was it written by another serializer?"
    elif exc.kind == "signature_required":
        hint = "; it was written unsigned, by a serializer without a key"
    elif exc.kind == "key_required":
        hint = "; it was written signed, by a serializer with a key"
    elif exc.kind == "unknown_key":
        hint = (
            "; its key is not (or no longer) accepted: a key rotated out of "
            "fallback_keys or SECRET_KEY_FALLBACKS, or another salt"
        )
    error = type(exc)(f"{label}: cached value refused: {exc}{hint}")
    error.__dict__.update(exc.__dict__)
    return error


class Serializer:
    """The serializer for Django's ``RedisCache`` (``OPTIONS={"serializer": ...}``).

    Given as a dotted path or a class, Django builds it with no arguments and it reads the
    ``AMBER_CACHE`` setting (``setting_name`` in a subclass, for a cache of its own). An
    instance made with ``options`` uses them instead; one made in the settings file builds its
    codec at its first use, once the settings it may derive a key from are loaded.
    """

    setting_name: ClassVar[str] = SETTING
    signed_by_default: ClassVar[bool] = False
    plain_ints_optional: ClassVar[bool] = True

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        # None: read the setting, but only in _setup, since settings may not be loaded yet.
        self._options = options
        self._from_settings = options is None
        self.where = (
            f"settings.{self.setting_name}"
            if options is None
            else f"{type(self).__name__}(options)"
        )
        self._codec: Codec | None = None
        self._plain_ints = True
        self._label = f"{type(self).__module__}.{type(self).__qualname__} ({self.where})"
        if settings.configured:
            self._setup()

    def _setup(self) -> Codec:
        options = (
            getattr(settings, self.setting_name, None) if self._from_settings else self._options
        )
        codec, self._plain_ints = _build(
            options,
            where=self.where,
            signed_by_default=self.signed_by_default,
            plain_ints_optional=self.plain_ints_optional,
        )
        self._codec = codec
        return codec

    @property
    def codec(self) -> Codec:
        """The codec every call uses, built once from the options."""
        return self._codec or self._setup()

    def dumps(self, obj: Any) -> bytes | int:
        codec = self._codec or self._setup()
        # Exactly int: bool and int subclasses (IntEnum...) must come back as what they were.
        if type(obj) is int and self._plain_ints and _INT_MIN <= obj <= _INT_MAX:
            return obj
        return codec.dumps(obj)

    def loads(self, data: Any) -> Any:
        codec = self._codec or self._setup()
        try:
            return codec.loads(data)
        except DecodeError as exc:
            # A plain int (written by dumps above, or by Redis's INCR) is no amber payload.
            if exc.kind == "bad_magic" and self._plain_ints and _PLAIN_INT.fullmatch(data):
                return int(data)
            raise _refused(exc, data, self._label) from None


class SignedSerializer(Serializer):
    """:class:`Serializer` that signs every value, by default with a key derived from SECRET_KEY.

    Reading refuses what this cache did not write (a value altered in Redis, a pickle, an
    unsigned amber value) before anything is built. Plain ints are the exception unless
    ``plain_ints`` is False: Redis increments them, so nothing can sign them.
    """

    signed_by_default: ClassVar[bool] = True


def _alias_of(options: Any) -> str | None:
    """The alias whose ``OPTIONS`` is this very mapping (django-redis passes it unchanged)."""
    caches = getattr(settings, "CACHES", {})
    for alias, config in caches.items():
        if isinstance(config, Mapping) and config.get("OPTIONS") is options:
            return str(alias)
    return None


class DjangoRedisSerializer(_DjangoRedisBase):  # type: ignore[misc]
    """The serializer for django-redis (``OPTIONS={"SERIALIZER": ...}``), options from
    ``OPTIONS["AMBER"]``.

    django-redis keeps ints (but not bools or enums) out of the serializer and reads back
    anything ``int()`` accepts as an int, so ``incr`` works; every other value goes through
    amber.
    """

    signed_by_default: ClassVar[bool] = False

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__(options=options)
        alias = _alias_of(options)
        cache = f"CACHES[{alias!r}]" if alias is not None else "the cache's"
        self.where = f"{cache}['OPTIONS']['AMBER']"
        self.codec, _ = _build(
            options.get("AMBER"),
            where=self.where,
            signed_by_default=self.signed_by_default,
            plain_ints_optional=False,
        )
        self._label = f"{type(self).__module__}.{type(self).__qualname__} ({self.where})"

    def dumps(self, value: Any) -> bytes:
        return self.codec.dumps(value)

    def loads(self, value: bytes) -> Any:
        try:
            return self.codec.loads(value)
        except DecodeError as exc:
            raise _refused(exc, value, self._label) from None


class SignedDjangoRedisSerializer(DjangoRedisSerializer):
    """:class:`DjangoRedisSerializer` that signs every value, as :class:`SignedSerializer`."""

    signed_by_default: ClassVar[bool] = True
