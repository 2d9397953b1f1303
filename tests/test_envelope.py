"""Signed and compressed payloads (spec section 12): the vectors, round trips, key handling,
timestamps, and hostile envelopes (flipped bits, truncations, bombs, lying sizes)."""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import hmac
import itertools
import struct
from typing import Any

import _envelope_vectors as ev
import amber
import lz4.block
import pytest
import zstandard
from _common import LIMIT_KINDS, SIGNATURE_KINDS
from _notation import load_vectors
from _samples import sample_objects

VECTORS = load_vectors("envelopes.json")
OK_VECTORS = [v for v in VECTORS if "error" not in v]
ERROR_VECTORS = [v for v in VECTORS if "error" in v]

SECRET = b"test_envelope secret of 32 bytes"
KEY = amber.SigningKey(SECRET, id=b"current")
OLD_KEY = amber.SigningKey(b"the key we used last year, 2025", id=b"old")
T0 = 1_700_000_000

# Kinds of a malformed envelope (as opposed to a signature that does not check out).
MALFORMED_KINDS = {
    "bad_magic",
    "unsupported_version",
    "unsupported_feature",
    "truncated",
    "bad_envelope",
}


def _ids(vectors: list[dict[str, Any]]) -> list[str]:
    return [v["name"] for v in vectors]


@pytest.fixture
def clock(monkeypatch):
    """Sets what the extension takes as the current time: `clock(t)`."""
    import amber._clock

    def set_now(seconds: int) -> None:
        monkeypatch.setattr(amber._clock, "now", lambda: seconds)

    set_now(T0)
    return set_now


# --------------------------------------------------------------------------- vectors


def _vector_keys(vec: dict[str, Any]) -> list[amber.SigningKey]:
    keys = []
    for spec in vec["keys"]:
        secret, key_id = bytes.fromhex(spec["secret"]), bytes.fromhex(spec["id"])
        key = (
            amber.SigningKey(secret)
            if spec.get("derived_id")
            else amber.SigningKey(secret, id=key_id)
        )
        assert key.id == key_id
        keys.append(key)
    return keys


def _vector_options(vec: dict[str, Any]) -> dict[str, Any]:
    keys = _vector_keys(vec)
    options = {k: v for k, v in vec.get("options", {}).items() if k != "now"}
    if keys:
        options["key"] = keys
    return options


def _info(vec: dict[str, Any]) -> dict[str, Any]:
    info = dict(vec["info"])
    info["key_id"] = None if info["key_id"] is None else bytes.fromhex(info["key_id"])
    return info


def test_vector_file_is_the_hand_assembly():
    """envelopes.json is what tests/_envelope_vectors.py puts together from the spec."""
    assert ev.VECTORS_FILE.read_text(encoding="utf-8") == ev.document()


def test_hand_built_compressed_data_is_what_the_reference_libraries_read():
    """The zstd frames and LZ4 blocks of the vectors, decompressed by zstandard and lz4."""
    reader = zstandard.ZstdDecompressor()
    assert reader.decompress(ev.ZSTD_ZEROS) == ev.ZEROS_BODY
    assert reader.decompress(ev.ZSTD_ZEROS_UNSIZED, max_output_size=1000) == ev.ZEROS_BODY
    assert len(reader.decompress(ev.ZSTD_BOMB, max_output_size=1 << 24)) == 8 << 20
    assert lz4.block.decompress(ev.LZ4_ZEROS, uncompressed_size=303) == ev.ZEROS_BODY


@pytest.mark.parametrize("vec", OK_VECTORS, ids=_ids(OK_VECTORS))
def test_vector_opens(vec, clock, graph_diff):
    clock(vec.get("options", {}).get("now", T0))
    data = bytes.fromhex(vec["hex"])
    options = _vector_options(vec)
    expected = amber.loads(bytes.fromhex(vec["payload"]))
    assert graph_diff(expected, amber.loads(data, **options)) is None
    assert graph_diff(expected, amber.Decoder(**options).decode(bytearray(data))) is None
    assert amber.envelope_info(data) == _info(vec)
    if "key" in options:
        assert amber.verify(data, key=options["key"], max_age=options.get("max_age")) == _info(vec)


SEAL_VECTORS = [v for v in OK_VECTORS if "seal" in v]


@pytest.mark.parametrize("vec", SEAL_VECTORS, ids=_ids(SEAL_VECTORS))
def test_vector_seals_exactly(vec, clock):
    payload = bytes.fromhex(vec["payload"])
    value = amber.loads(payload)
    assert amber.dumps(value) == payload
    timestamp = vec["seal"].get("timestamp")
    if timestamp is not None:
        clock(timestamp)
    key = _vector_keys(vec)[0]
    sealed = amber.dumps(value, key=key, timestamp=timestamp is not None)
    assert sealed.hex(" ") == bytes.fromhex(vec["hex"]).hex(" ")
    encoder = amber.Encoder(key=key, timestamp=timestamp is not None)
    assert encoder.encode(value) == sealed


@pytest.mark.parametrize("vec", ERROR_VECTORS, ids=_ids(ERROR_VECTORS))
def test_vector_fails(vec, clock):
    clock(vec.get("options", {}).get("now", T0))
    data = bytes.fromhex(vec["hex"])
    options = _vector_options(vec)
    for decode in (
        lambda: amber.loads(data, **options),
        lambda: amber.Decoder(**options).decode(data),
    ):
        with pytest.raises(amber.DecodeError) as info:
            decode()
        err = info.value
        assert (err.kind, err.offset) == (vec["error"], vec["offset"]), str(err)
        assert isinstance(err, amber.SignatureError) == (err.kind in SIGNATURE_KINDS)
        assert isinstance(err, amber.DecodeLimitError) == (err.kind in LIMIT_KINDS)
        assert f"at byte {err.offset}," in str(err)


# --------------------------------------------------------------------------- round trips


def _roundtrip_values() -> list[Any]:
    records = [
        {"id": i, "name": f"user{i}", "tags": ("a", "b"), "score": i / 7} for i in range(300)
    ]
    return [*sample_objects(), records, "compressible " * 500, list(range(2000))]


COMBINATIONS = [
    (signed, compress, timestamp)
    for signed, compress, timestamp in itertools.product(
        (False, True), (None, "zstd", "lz4"), (False, True)
    )
    if signed or not timestamp
]


@pytest.mark.parametrize(
    ("signed", "compress", "timestamp"),
    COMBINATIONS,
    ids=[f"signed={s}-{c}-timestamp={t}" for s, c, t in COMBINATIONS],
)
def test_round_trip_under_every_combination(signed, compress, timestamp, clock, graph_diff):
    key = KEY if signed else None
    for value in _roundtrip_values():
        plain = amber.dumps(value)
        data = amber.dumps(value, key=key, timestamp=timestamp, compress=compress)
        flags = data[2] & 0xF0
        assert bool(flags & 0x20) == signed
        if compress is None:
            assert not flags & 0x10
        info = amber.envelope_info(data)
        if flags & 0x10:
            assert info["compressed_size"] + 1 + len(ev.varint(info["size"])) < info["size"]
        assert info["signed"] == signed
        assert info["timestamp"] == (T0 if timestamp else None)
        assert info["compression"] == (compress if flags & 0x10 else None)
        assert info["size"] == len(plain) - 3
        back = amber.loads(data, key=key, max_age=60 if timestamp else None)
        assert graph_diff(value, back) is None


def test_compressed_size_field_and_interop_with_the_reference_libraries():
    value = {"text": "amber " * 1000, "numbers": list(range(500))}
    body = amber.dumps(value)[3:]
    for compress in ("zstd", "lz4"):
        data = amber.dumps(value, compress=compress)
        assert data[:3] == b"\xab\x41\x11"
        assert data[3] == {"zstd": 1, "lz4": 2}[compress]
        size_len = len(ev.varint(len(body)))
        assert data[4 : 4 + size_len] == ev.varint(len(body))
        compressed = data[4 + size_len :]
        assert amber.envelope_info(data)["compressed_size"] == len(compressed)
        if compress == "zstd":
            assert zstandard.ZstdDecompressor().decompress(compressed) == body
        else:
            assert lz4.block.decompress(compressed, uncompressed_size=len(body)) == body
    # And the other way round: data the reference libraries made loads.
    for algorithm, compressed in (
        (1, zstandard.ZstdCompressor(level=9).compress(body)),
        (2, lz4.block.compress(body, store_size=False)),
    ):
        data = b"\xab\x41\x11" + bytes([algorithm]) + ev.varint(len(body)) + compressed
        assert amber.loads(data) == value


def test_zstd_levels_change_the_output_not_the_value():
    value = [f"row {i % 50}" for i in range(5000)]
    fast = amber.dumps(value, compress="zstd", level=1)
    best = amber.dumps(value, compress="zstd", level=19)
    assert amber.dumps(value, compress="zstd") == amber.dumps(value, compress="zstd", level=3)
    assert len(best) <= len(fast)
    assert amber.loads(fast) == amber.loads(best) == value


def test_compression_is_skipped_when_it_does_not_shrink():
    for value in (None, 1, "short", [1, 2, 3], b"\x8f\x12\x77\xa0"):
        plain = amber.dumps(value)
        for compress in ("zstd", "lz4"):
            assert amber.dumps(value, compress=compress) == plain
            signed = amber.dumps(value, compress=compress, key=KEY)
            assert signed[2] == 0x21, "signed, not compressed"
            assert amber.loads(signed, key=KEY) == value


def test_encoder_holds_the_envelope_options():
    encoder = amber.Encoder(key=[KEY, OLD_KEY], compress="zstd", level=7)
    value = {"a": "b" * 400}
    assert encoder.encode(value) == amber.dumps(value, key=KEY, compress="zstd", level=7)
    assert (encoder.key_id, encoder.compress, encoder.level, encoder.timestamp) == (
        b"current",
        "zstd",
        7,
        False,
    )
    assert amber.Encoder(compress="lz4").level is None
    assert amber.Encoder().key_id is None
    assert repr(amber.Encoder(key=KEY, compress="lz4")) == (
        "Encoder(refs=True, max_depth=1000, key_id=b'current', timestamp=False, compress='lz4')"
    )


def test_out_of_band_buffers_combine_with_signing_and_compression():
    big = bytes(range(256)) * (amber.OOB_THRESHOLD // 256)
    value = {"blob": big, "text": "x" * 2000}
    buffers: list[memoryview] = []
    data = amber.dumps(value, key=KEY, compress="zstd", buffer_callback=buffers.append)
    assert len(buffers) == 1 and len(data) < 200
    assert data[2] == 0x31
    assert amber.loads(data, key=KEY, buffers=buffers) == value
    with pytest.raises(amber.SignatureError):
        amber.loads(data, buffers=buffers)
    # Only the payload is signed, as documented: the buffers travel beside it unchecked.
    changed = bytearray(big)
    changed[0] ^= 1
    assert amber.loads(data, key=KEY, buffers=[changed])["blob"] == changed


def test_dump_and_load_files_with_an_envelope(tmp_path):
    path = tmp_path / "signed.amb"
    value = {"x": "abc" * 100}
    amber.dump(value, path, key=KEY, compress="lz4")
    assert path.read_bytes()[2] == 0x31
    assert amber.load(path, key=KEY) == value
    with pytest.raises(amber.SignatureError):
        amber.load(path, key=OLD_KEY)


# --------------------------------------------------------------------------- keys


def test_signing_key_secret_lengths():
    assert amber.MIN_KEY_LENGTH == 16
    for short in (b"", b"x" * 15, "fifteen chars!!", bytearray(15)):
        with pytest.raises(ValueError, match="at least 16 bytes"):
            amber.SigningKey(short)
        with pytest.raises(ValueError, match=r"^key: .*at least 16 bytes"):
            amber.dumps(1, key=short)
        with pytest.raises(ValueError, match=r"^key: .*at least 16 bytes"):
            amber.loads(amber.dumps(1), key=short)
    with pytest.raises(ValueError, match=r"^key\[1\]: "):
        amber.Decoder(key=[KEY, b"short"])
    assert amber.SigningKey(b"x" * 16).id == amber.SigningKey(memoryview(b"x" * 16)).id


def test_derived_key_id_is_an_hmac_of_a_fixed_message():
    secret = b"an example secret, 30 bytes ok"
    expected = hmac.new(secret, b"amber key id", hashlib.sha256).digest()[:8]
    assert amber.SigningKey(secret).id == expected
    # A str secret is its UTF-8 bytes.
    assert (
        amber.SigningKey("sécret de seize octets").id
        == amber.SigningKey("sécret de seize octets".encode()).id
    )
    data = amber.dumps(None, key=secret)
    assert data[3:12] == b"\x08" + expected


def test_signing_key_ids_and_repr_never_show_the_secret():
    key = amber.SigningKey(b"super secret value 123", id="deploy-7")
    assert key.id == b"deploy-7"
    assert repr(key) == "SigningKey(id=b'deploy-7')"
    for text in (repr(key), repr(amber.Decoder(key=key)), repr(amber.Encoder(key=key))):
        assert "super secret" not in text
    assert amber.Decoder(key=[key, KEY]).key_ids == (b"deploy-7", b"current")
    for bad_id in (b"", b"x" * 65):
        with pytest.raises(ValueError, match="key id needs 1 to 64 bytes"):
            amber.SigningKey(b"0123456789abcdef", id=bad_id)
    assert amber.SigningKey(b"0123456789abcdef", id=b"x" * 64).id == b"x" * 64
    with pytest.raises(TypeError, match="secret must be bytes"):
        amber.SigningKey(12345)  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        key.id = b"other"  # type: ignore[misc]


def test_key_rotation():
    value = {"config": [1, 2, 3]}
    old = amber.dumps(value, key=OLD_KEY)
    new = amber.dumps(value, key=[KEY, OLD_KEY])  # the first key signs
    assert amber.envelope_info(new)["key_id"] == b"current"
    rotated = amber.Decoder(key=[KEY, OLD_KEY])
    assert rotated.decode(old) == rotated.decode(new) == value
    with pytest.raises(amber.SignatureError) as info:
        amber.loads(new, key=[OLD_KEY])
    assert info.value.kind == "unknown_key"
    assert "'current'" in str(info.value) or '"current"' in str(info.value)
    assert "1 key given" in str(info.value)


def test_wrong_keys():
    data = amber.dumps("payload", key=KEY)
    impostor = amber.SigningKey(b"not the right secret at all", id=b"current")
    with pytest.raises(amber.SignatureError) as info:
        amber.loads(data, key=impostor)
    assert (info.value.kind, info.value.offset) == ("bad_signature", len(data) - 32)
    with pytest.raises(amber.SignatureError) as info:
        amber.loads(data, key=[OLD_KEY, b"a raw secret, derived id"])
    assert info.value.kind == "unknown_key"
    assert "2 keys given" in str(info.value)
    binary_id = amber.SigningKey(SECRET, id=b"\x00\xff")
    with pytest.raises(amber.SignatureError, match="0x00ff"):
        amber.loads(amber.dumps(1, key=binary_id), key=KEY)
    # Same id, two secrets: each is tried.
    assert amber.loads(data, key=[impostor, KEY]) == "payload"


def test_signed_and_unsigned_never_mix():
    signed = amber.dumps([1, 2], key=KEY)
    with pytest.raises(amber.SignatureError) as info:
        amber.loads(signed)
    assert info.value.kind == "key_required" and info.value.offset == 2
    assert "signed" in str(info.value) and "key=" in str(info.value)
    for unsigned in (amber.dumps([1, 2]), amber.dumps(list(range(500)), compress="zstd")):
        with pytest.raises(amber.SignatureError) as info:
            amber.loads(unsigned, key=KEY)
        assert (info.value.kind, info.value.offset) == ("signature_required", 2)
        with pytest.raises(amber.SignatureError):
            amber.verify(unsigned, key=KEY)


# --------------------------------------------------------------------------- timestamps


def test_timestamps(clock):
    clock(T0)
    data = amber.dumps("fresh", key=KEY, timestamp=True)
    assert struct.unpack("<Q", data[3 + 1 + 7 + 1 :][:8])[0] == T0
    assert amber.envelope_info(data)["timestamp"] == T0
    for now, max_age in ((T0 + 300, 300), (T0 - 60, 0), (T0 + 10, 10.9)):
        clock(now)
        assert amber.loads(data, key=KEY, max_age=max_age) == "fresh"
    clock(T0 + 301)
    with pytest.raises(amber.SignatureError) as info:
        amber.loads(data, key=KEY, max_age=300)
    assert (info.value.kind, info.value.offset) == ("expired", 12)
    assert "301 s ago" in str(info.value)
    with pytest.raises(amber.SignatureError, match="expired"):
        amber.loads(data, key=KEY, max_age=datetime.timedelta(minutes=5))
    assert amber.loads(data, key=KEY, max_age=datetime.timedelta(minutes=6)) == "fresh"
    assert amber.loads(data, key=KEY) == "fresh", "no max_age: the age is not judged"
    clock(T0 - 61)
    with pytest.raises(amber.SignatureError) as info:
        amber.loads(data, key=KEY, max_age=10**9)
    assert (info.value.kind, info.value.offset) == ("timestamp_in_future", 12)
    untimed = amber.dumps("old", key=KEY)
    with pytest.raises(amber.SignatureError) as info:
        amber.verify(untimed, key=KEY, max_age=5)
    assert (info.value.kind, info.value.offset) == ("timestamp_required", 11)


def test_timestamp_options_are_checked():
    with pytest.raises(ValueError, match="timestamp=True needs key="):
        amber.dumps(1, timestamp=True)
    with pytest.raises(ValueError, match="max_age needs key="):
        amber.loads(amber.dumps(1), max_age=5)
    for bad in (-1, -0.5, float("nan")):
        with pytest.raises(ValueError, match="max_age must be 0 or more"):
            amber.Decoder(key=KEY, max_age=bad)
    with pytest.raises(TypeError, match="max_age must be a number"):
        amber.Decoder(key=KEY, max_age="60")  # type: ignore[arg-type]
    assert amber.Decoder(key=KEY, max_age=datetime.timedelta(hours=1)).max_age == 3600


# --------------------------------------------------------------------------- options


def test_option_errors_name_the_option():
    cases: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"compress": "gzip"}, ValueError, "compress must be"),
        ({"compress": 1}, TypeError, "compress must be"),
        ({"level": 3}, ValueError, "level needs compress="),
        ({"compress": "lz4", "level": 1}, ValueError, "level is not supported"),
        ({"compress": "zstd", "level": 0}, ValueError, "level must be between 1 and 22"),
        ({"compress": "zstd", "level": 23}, ValueError, "level must be between 1 and 22"),
        ({"compress": "zstd", "level": 2.5}, TypeError, "level must be an int"),
        ({"key": []}, ValueError, "key must not be an empty list"),
        ({"key": 1234}, TypeError, "key must be bytes"),
    ]
    for options, error, text in cases:
        with pytest.raises(error, match=text):
            amber.dumps(1, **options)
        with pytest.raises(error, match=text):
            amber.Encoder(**options)
    with pytest.raises(ValueError, match="max_decompressed must be between 1"):
        amber.loads(amber.dumps(1), max_decompressed=0)
    with pytest.raises(ValueError, match="verify\\(\\) needs key="):
        amber.verify(amber.dumps(1, key=KEY), key=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="envelope_info\\(\\) needs bytes"):
        amber.envelope_info("text")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- verify, info


def test_verify_checks_without_decompressing_or_decoding():
    # A signature over compressed data that is corrupt: verify does not decompress it.
    section = b"\x01" + ev.varint(303) + b"\x28\xb5\x2f\xfd garbage"
    unsigned = b"\xab\x41\x31" + b"\x07current\x00" + section
    data = unsigned + hmac.new(SECRET, unsigned, hashlib.sha256).digest()
    info = amber.verify(data, key=KEY)
    assert info == {
        "signed": True,
        "key_id": b"current",
        "timestamp": None,
        "compression": "zstd",
        "compressed_size": len(section) - 3,
        "size": 303,
    }
    with pytest.raises(amber.DecodeError) as err:
        amber.loads(data, key=KEY)
    assert err.value.kind == "bad_compression"


def test_envelope_info_reads_without_a_key():
    plain = amber.dumps([1, 2, 3])
    assert amber.envelope_info(plain) == {
        "signed": False,
        "key_id": None,
        "timestamp": None,
        "compression": None,
        "compressed_size": None,
        "size": len(plain) - 3,
    }
    signed = amber.dumps([1, 2, 3], key=KEY)
    tampered = signed[:-1] + bytes([signed[-1] ^ 1])
    assert amber.envelope_info(tampered)["key_id"] == b"current", "unverified, as documented"
    for bad in (b"", b"\xab\x41\x21\x00", b"\xab\x41\x11\x07\x01\x00"):
        with pytest.raises(amber.DecodeError):
            amber.envelope_info(bad)


# --------------------------------------------------------------------------- hostile


@dataclasses.dataclass
class Token:
    """A class whose every construction by the decoder is counted."""

    value: int


BUILT: list[Token] = []


def _token_decode(state: int) -> Token:
    token = Token(state)
    BUILT.append(token)
    return token


TOKEN = amber.CustomType(Token, lambda t: t.value, _token_decode)


def _hostile_payloads() -> list[tuple[str, bytes]]:
    value = {"token": Token(7), "text": "repeated text " * 8}
    return [
        ("signed", amber.dumps(value, custom=[TOKEN], key=KEY, timestamp=True)),
        (
            "signed+zstd",
            amber.dumps(value, custom=[TOKEN], key=KEY, timestamp=True, compress="zstd"),
        ),
        ("signed+lz4", amber.dumps(value, custom=[TOKEN], key=KEY, timestamp=True, compress="lz4")),
    ]


HOSTILE = _hostile_payloads()


@pytest.mark.parametrize(("name", "data"), HOSTILE, ids=[name for name, _ in HOSTILE])
def test_every_flipped_bit_is_refused_before_anything_is_built(name, data):
    if "+" in name:
        assert data[2] == 0x31, "the payload must really be compressed"
    decoder = amber.Decoder(key=[OLD_KEY, KEY], custom=[TOKEN], max_age=10**10)
    BUILT.clear()
    for bit in range(len(data) * 8):
        bad = bytearray(data)
        bad[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(amber.DecodeError) as info:
            decoder.decode(bad)
        err = info.value
        assert isinstance(err, amber.SignatureError) or err.kind in MALFORMED_KINDS, (bit, str(err))
        assert BUILT == [], f"bit {bit} built an object"
    # The counter works: the intact payload builds the one token.
    assert decoder.decode(data)["token"] == Token(7)
    assert len(BUILT) == 1


@pytest.mark.parametrize(("name", "data"), HOSTILE, ids=[name for name, _ in HOSTILE])
def test_every_truncation_is_refused(name, data):
    BUILT.clear()
    for end in range(len(data)):
        with pytest.raises(amber.DecodeError):
            amber.loads(data[:end], key=KEY, custom=[TOKEN])
    assert BUILT == []


@pytest.mark.parametrize("compress", ["zstd", "lz4"])
def test_every_truncation_of_a_compressed_payload_is_refused(compress):
    data = amber.dumps({"token": Token(1), "text": "abc" * 100}, custom=[TOKEN], compress=compress)
    assert data[2] == 0x11
    BUILT.clear()
    for end in range(len(data)):
        with pytest.raises(amber.DecodeError):
            amber.loads(data[:end], custom=[TOKEN])
    assert BUILT == []


def _compressed(algorithm: int, size: int, data: bytes) -> bytes:
    return b"\xab\x41\x11" + bytes([algorithm]) + ev.varint(size) + data


def test_decompression_bombs():
    # 263 bytes that zstd expands to 8 MiB, declared as 1000: stops when the buffer is full.
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(_compressed(1, 1000, ev.ZSTD_BOMB))
    assert (info.value.kind, info.value.offset) == ("size_mismatch", 4)
    # Declared truthfully, 8 MiB is more than the default budget of a 270-byte input.
    honest = _compressed(1, 8 << 20, ev.ZSTD_BOMB)
    with pytest.raises(amber.DecodeLimitError) as info:
        amber.loads(honest)
    assert info.value.kind == "decompressed_too_large"
    assert "max_alloc" in str(info.value)
    with pytest.raises(amber.DecodeLimitError, match="max_decompressed=1048576"):
        amber.loads(honest, max_alloc=1 << 30, max_decompressed=1 << 20)
    # Allowed explicitly, it decompresses, and the zeros then fail as a value (0, then more).
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(honest, max_alloc=1 << 30)
    assert (info.value.kind, info.value.offset) == ("trailing_bytes", 1)
    assert "decompressed body" in str(info.value)
    # A declared size no machine could allocate is refused before anything is allocated.
    for size in (1 << 40, (1 << 64) - 1):
        with pytest.raises(amber.DecodeLimitError, match="more than the allocation budget"):
            amber.loads(_compressed(1, size, ev.ZSTD_ZEROS))
        with pytest.raises(amber.DecodeLimitError, match="max_decompressed"):
            amber.loads(_compressed(2, size, ev.LZ4_ZEROS), max_alloc=1 << 62, max_decompressed=1)


def test_lying_sizes():
    for algorithm, data in ((1, ev.ZSTD_ZEROS), (1, ev.ZSTD_ZEROS_UNSIZED), (2, ev.LZ4_ZEROS)):
        assert amber.loads(_compressed(algorithm, 303, data)) == bytes(300)
        for size in (1, 302, 304, 10_000):
            with pytest.raises(amber.DecodeError) as info:
                amber.loads(_compressed(algorithm, size, data))
            assert (info.value.kind, info.value.offset) == ("size_mismatch", 4), size


def test_corrupt_compressed_data_and_unknown_algorithms():
    value = {"rows": [[i, str(i)] for i in range(300)]}
    for compress in ("zstd", "lz4"):
        data = amber.dumps(value, compress=compress)
        for at in range(4, len(data), 7):
            bad = bytearray(data)
            bad[at] ^= 0x5A
            try:
                amber.loads(bad)
            except amber.DecodeError:
                continue  # whatever it is, it is a DecodeError and never a crash
        with pytest.raises(amber.DecodeError) as info:
            amber.loads(data[:-3])
        assert info.value.kind in {"bad_compression", "size_mismatch"}
    for algorithm in (0, 3, 0xFF):
        with pytest.raises(amber.DecodeError) as info:
            amber.loads(_compressed(algorithm, 303, ev.ZSTD_ZEROS))
        assert (info.value.kind, info.value.offset) == ("unknown_compression", 3)
        assert str(algorithm) in str(info.value)
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(b"\xab\x41\x11")
    assert (info.value.kind, info.value.offset) == ("truncated", 3)


def test_a_compressed_payload_is_never_decompressed_twice():
    inner = amber.dumps("again " * 200, compress="zstd")
    assert inner[2] == 0x11
    outer = _compressed(2, len(inner), lz4.block.compress(inner, store_size=False))
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(outer)
    assert (info.value.kind, info.value.offset) == ("unknown_tag", 0)
    assert "decompressed body" in str(info.value)


def test_one_budget_covers_decompression_and_values():
    value = [0] * 200_000
    data = amber.dumps(value, compress="zstd")
    assert len(data) < 100
    # The default budget of a tiny input holds the 200 kB body but not the list made from it.
    with pytest.raises(amber.DecodeLimitError) as info:
        amber.loads(data)
    assert info.value.kind == "alloc_limit"
    assert amber.loads(data, max_alloc=4 << 20) == value
    assert amber.loads(amber.dumps(value)) == value
