"""Assembles spec/vectors/envelopes.json by hand from the layout of spec section 12.

Nothing here uses amber: the envelopes are put together field by field, the tags are
computed with Python's `hmac`, and the compressed data are hand-built zstd frames (raw and
RLE blocks, whose layout RFC 8878 fixes) and LZ4 blocks (literal and match sequences), so
the vectors check the implementation instead of repeating it. `test_envelope.py` checks that
the JSON file is exactly what this module builds; `python tests/_envelope_vectors.py`
rewrites it after a change here.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
import sys
from pathlib import Path
from typing import Any

VECTORS_FILE = Path(__file__).resolve().parent.parent / "spec" / "vectors" / "envelopes.json"

PLAIN = b"\xab\x41\x01"
SIGNED = b"\xab\x41\x21"
COMPRESSED = b"\xab\x41\x11"
SIGNED_COMPRESSED = b"\xab\x41\x31"
ZSTD, LZ4 = 1, 2

T0 = 1_700_000_000  # 2023-11-14T22:13:20Z

SECRET_1 = b"amber envelope test secret one!!"  # 32 bytes, id derived
SECRET_2 = bytes(range(0x40, 0x50))  # 16 bytes: the shortest allowed, id "k2"
SECRET_3 = b"a third secret, signing as k2 too"  # a second key under the id "k2"


def derived_id(secret: bytes) -> bytes:
    return hmac.new(secret, b"amber key id", hashlib.sha256).digest()[:8]


ID_1 = derived_id(SECRET_1)
ID_2 = b"k2"

KEY_1 = {"secret": SECRET_1.hex(), "id": ID_1.hex(), "derived_id": True}
KEY_2 = {"secret": SECRET_2.hex(), "id": ID_2.hex()}
KEY_3 = {"secret": SECRET_3.hex(), "id": ID_2.hex()}


def varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def signing_fields(key_id: bytes, timestamp: int | None) -> bytes:
    fields = bytes([len(key_id)]) + key_id
    if timestamp is None:
        return fields + b"\x00"
    return fields + b"\x01" + struct.pack("<Q", timestamp)


def sign(secret: bytes, unsigned: bytes) -> bytes:
    """`unsigned` (header, signing fields, content) followed by its HMAC-SHA256 tag."""
    return unsigned + hmac.new(secret, unsigned, hashlib.sha256).digest()


def section(algorithm: int, size: int, data: bytes) -> bytes:
    return bytes([algorithm]) + varint(size) + data


# Plain payloads (spec sections 3-5): None; {"a": 1}; bytes of 300 zeros.
NONE = PLAIN + b"\x90"
DICT = PLAIN + bytes.fromhex("61 41 61 01")
ZEROS_BODY = bytes.fromhex("6a ac 02") + bytes(300)
ZEROS = PLAIN + ZEROS_BODY


def zstd_block(kind: int, size: int, content: bytes, last: bool) -> bytes:
    """A zstd block: a 3-byte little-endian header (last flag, type, size), then its content."""
    header = size << 3 | kind << 1 | int(last)
    return header.to_bytes(3, "little") + content


RAW, RLE = 0, 1

# One frame: magic, a header whose 2-byte content size says 303 (single segment), a raw
# block with the first 3 body bytes, an RLE block of 300 zeros.
ZSTD_ZEROS = (
    bytes.fromhex("28 b5 2f fd")
    + bytes([0b0110_0000])
    + (303 - 256).to_bytes(2, "little")
    + zstd_block(RAW, 3, ZEROS_BODY[:3], last=False)
    + zstd_block(RLE, 300, b"\x00", last=True)
)
# The same blocks in a frame that records no content size: a window descriptor (1 KiB)
# instead, so only decompressing tells how much it makes.
ZSTD_ZEROS_UNSIZED = (
    bytes.fromhex("28 b5 2f fd")
    + bytes([0b0000_0000, 0x00])
    + zstd_block(RAW, 3, ZEROS_BODY[:3], last=False)
    + zstd_block(RLE, 300, b"\x00", last=True)
)
# A bomb: 64 RLE blocks of 128 KiB each (8 MiB) in a 263-byte frame with a 128 KiB window
# and no content size.
ZSTD_BOMB = (
    bytes.fromhex("28 b5 2f fd")
    + bytes([0b0000_0000, 7 << 3])
    + b"".join(zstd_block(RLE, 128 * 1024, b"\x00", last=i == 63) for i in range(64))
)
# A skippable frame (magic 0x184D2A50): a frame, but no zstd data frame.
ZSTD_SKIPPABLE = struct.pack("<II", 0x184D2A50, 4) + b"\x00\x00\x00\x00"

# LZ4 sequences: a token (literal count, match length - 4, 4 bits each, 15 meaning more
# bytes follow), the literals, a 2-byte little-endian offset, the extra match-length bytes.
# The block's last sequence holds the last 5 bytes as literals only.
# 303 bytes: 4 literals (6a ac 02 00), a match of 294 at offset 1, 5 literal zeros.
LZ4_ZEROS = bytes.fromhex("4f 6a ac 02 00 0100 ff 14") + bytes.fromhex("50") + bytes(5)
# The same with a match offset of 0, which the LZ4 block format does not allow.
LZ4_OFFSET_ZERO = bytes.fromhex("4f 6a ac 02 00 0000 ff 14") + bytes.fromhex("50") + bytes(5)


def signed_1(content: bytes, timestamp: int | None = None, flags: bytes = SIGNED) -> bytes:
    return sign(SECRET_1, flags + signing_fields(ID_1, timestamp) + content)


def flip_last(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 1])


def info(
    key_id: bytes | None = None,
    timestamp: int | None = None,
    compression: str | None = None,
    compressed_size: int | None = None,
    size: int = 0,
) -> dict[str, Any]:
    return {
        "signed": key_id is not None,
        "key_id": None if key_id is None else key_id.hex(),
        "timestamp": timestamp,
        "compression": compression,
        "compressed_size": compressed_size,
        "size": size,
    }


def vectors() -> list[dict[str, Any]]:
    v: list[dict[str, Any]] = []

    def ok(name: str, keys: list[Any], payload: bytes, envelope: bytes, **fields: Any) -> None:
        entry = {"name": name, "keys": keys, "payload": payload.hex(), "hex": envelope.hex()}
        entry.update(fields)
        v.append(entry)

    def err(
        name: str, keys: list[Any], envelope: bytes, kind: str, offset: int, **options: Any
    ) -> None:
        entry: dict[str, Any] = {"name": name, "keys": keys, "hex": envelope.hex()}
        if options:
            entry["options"] = options
        entry.update(error=kind, offset=offset)
        v.append(entry)

    # -- Sealing: the reference encoder produces exactly these bytes.
    ok(
        "signed None, derived key id",
        [KEY_1],
        NONE,
        signed_1(b"\x90"),
        seal={},
        info=info(ID_1, size=1),
    )
    ok(
        "signed dict with a timestamp",
        [KEY_1],
        DICT,
        signed_1(DICT[3:], T0),
        seal={"timestamp": T0},
        options={"now": T0 + 100, "max_age": 300},
        info=info(ID_1, T0, size=4),
    )
    ok(
        "signed with a text key id and the shortest secret",
        [KEY_2],
        DICT,
        sign(SECRET_2, SIGNED + signing_fields(ID_2, None) + DICT[3:]),
        seal={},
        info=info(ID_2, size=4),
    )
    ok(
        "key rotation: the second key of the list verifies",
        [KEY_2, KEY_1],
        NONE,
        signed_1(b"\x90"),
        info=info(ID_1, size=1),
    )
    ok(
        "two keys share an id: the second one's tag matches",
        [KEY_2, KEY_3],
        NONE,
        sign(SECRET_3, SIGNED + signing_fields(ID_2, None) + b"\x90"),
        info=info(ID_2, size=1),
    )
    ok(
        "timestamp exactly max_age old",
        [KEY_1],
        NONE,
        signed_1(b"\x90", T0),
        options={"now": T0 + 300, "max_age": 300},
        info=info(ID_1, T0, size=1),
    )
    ok(
        "timestamp 60 s ahead of the clock (the allowed skew)",
        [KEY_1],
        NONE,
        signed_1(b"\x90", T0),
        options={"now": T0 - 60, "max_age": 300},
        info=info(ID_1, T0, size=1),
    )
    ok(
        "timestamp without max_age: not judged",
        [KEY_1],
        NONE,
        signed_1(b"\x90", 0),
        info=info(ID_1, 0, size=1),
    )
    # -- Compressed: fixed data, decoded (compressors' output differs between versions).
    zstd_section = section(ZSTD, 303, ZSTD_ZEROS)
    lz4_section = section(LZ4, 303, LZ4_ZEROS)
    ok(
        "zstd: raw and RLE blocks",
        [],
        ZEROS,
        COMPRESSED + zstd_section,
        info=info(compression="zstd", compressed_size=len(ZSTD_ZEROS), size=303),
    )
    ok(
        "zstd: a frame without content size",
        [],
        ZEROS,
        COMPRESSED + section(ZSTD, 303, ZSTD_ZEROS_UNSIZED),
        info=info(compression="zstd", compressed_size=len(ZSTD_ZEROS_UNSIZED), size=303),
    )
    ok(
        "lz4: literals and an overlapping match",
        [],
        ZEROS,
        COMPRESSED + lz4_section,
        info=info(compression="lz4", compressed_size=len(LZ4_ZEROS), size=303),
    )
    ok(
        "signed and zstd, with a timestamp",
        [KEY_1],
        ZEROS,
        signed_1(zstd_section, T0, SIGNED_COMPRESSED),
        options={"now": T0, "max_age": 10},
        info=info(ID_1, T0, "zstd", len(ZSTD_ZEROS), 303),
    )
    ok(
        "signed and lz4",
        [KEY_2],
        ZEROS,
        sign(SECRET_2, SIGNED_COMPRESSED + signing_fields(ID_2, None) + lz4_section),
        info=info(ID_2, None, "lz4", len(LZ4_ZEROS), 303),
    )
    ok(
        "zstd: declared size exactly max_decompressed",
        [],
        ZEROS,
        COMPRESSED + zstd_section,
        options={"max_decompressed": 303},
        info=info(compression="zstd", compressed_size=len(ZSTD_ZEROS), size=303),
    )

    # -- Header and the key.
    err("signed, decoder without a key", [], signed_1(b"\x90"), "key_required", 2)
    err("plain, decoder with a key", [KEY_1], NONE, "signature_required", 2)
    err(
        "compressed only, decoder with a key",
        [KEY_1],
        COMPRESSED + zstd_section,
        "signature_required",
        2,
    )
    err(
        "string table flag with the envelope flags",
        [KEY_1],
        b"\xab\x41\x71\x90",
        "unsupported_feature",
        2,
    )
    err("unknown key id", [KEY_2], signed_1(b"\x90"), "unknown_key", 3)
    # -- The signing fields.
    err("signed, nothing after the header", [KEY_1], SIGNED, "truncated", 3)
    err("key id length 0", [KEY_1], SIGNED + b"\x00\x00\x90" + bytes(32), "bad_envelope", 3)
    err("key id length 65", [KEY_1], SIGNED + b"\x41" + bytes(100), "bad_envelope", 3)
    err("key id runs past the end", [KEY_1], SIGNED + b"\x08" + ID_1[:5], "truncated", 3)
    err("signature flags missing", [KEY_1], SIGNED + b"\x08" + ID_1, "truncated", 12)
    err(
        "reserved signature flag",
        [KEY_1],
        sign(SECRET_1, SIGNED + b"\x08" + ID_1 + b"\x02\x90"),
        "bad_envelope",
        12,
    )
    err(
        "timestamp runs past the end",
        [KEY_1],
        SIGNED + b"\x08" + ID_1 + b"\x01" + bytes(5),
        "truncated",
        13,
    )
    err("shorter than the tag", [KEY_1], signed_1(b"\x90")[:-2], "truncated", 13)
    err("only the tag after the signing fields", [KEY_1], signed_1(b"")[:-1], "truncated", 13)
    err(
        "unknown key is reported before a short tag",
        [KEY_2],
        SIGNED + b"\x08" + ID_1 + b"\x00",
        "unknown_key",
        3,
    )
    # -- The tag.
    good = signed_1(b"\x90")
    err("tag altered", [KEY_1], flip_last(good), "bad_signature", 14)
    err("body altered", [KEY_1], good[:13] + b"\x91" + good[14:], "bad_signature", 14)
    err(
        "compressed flag added to a signed payload",
        [KEY_1],
        b"\xab\x41\x31" + good[3:],
        "bad_signature",
        14,
    )
    err(
        "signed by another secret under the same id",
        [KEY_1],
        sign(SECRET_2, SIGNED + signing_fields(ID_1, None) + b"\x90"),
        "bad_signature",
        14,
    )
    # -- The timestamp: only after the tag.
    err("expired", [KEY_1], signed_1(b"\x90", T0), "expired", 13, now=T0 + 301, max_age=300)
    err(
        "timestamp more than 60 s ahead",
        [KEY_1],
        signed_1(b"\x90", T0),
        "timestamp_in_future",
        13,
        now=T0 - 61,
        max_age=300,
    )
    err(
        "max_age without a timestamp",
        [KEY_1],
        signed_1(b"\x90"),
        "timestamp_required",
        12,
        now=T0,
        max_age=300,
    )
    err(
        "expired and tampered: the tag is checked first",
        [KEY_1],
        flip_last(signed_1(b"\x90", T0)),
        "bad_signature",
        22,
        now=T0 + 1000,
        max_age=1,
    )
    # -- The body after the signature.
    err("signed, empty body", [KEY_1], signed_1(b""), "truncated", 13)
    err(
        "signed, trailing byte inside the signed body",
        [KEY_1],
        signed_1(b"\x90\x90"),
        "trailing_bytes",
        14,
    )
    # -- The compression fields.
    err("compressed flag, nothing after it", [], COMPRESSED, "truncated", 3)
    err("compression algorithm 0", [], COMPRESSED + b"\x00\x01\x00", "unknown_compression", 3)
    err("compression algorithm 3", [], COMPRESSED + b"\x03\x01\x00", "unknown_compression", 3)
    err("algorithm byte, no size", [], COMPRESSED + b"\x01", "truncated", 4)
    err("size varint runs past the end", [], COMPRESSED + b"\x01\x80", "truncated", 4)
    err(
        "size varint not minimal",
        [],
        COMPRESSED + b"\x01\x80\x00" + ZSTD_ZEROS,
        "overlong_varint",
        4,
    )
    err(
        "size varint above 2^64-1",
        [],
        COMPRESSED + b"\x01" + b"\xff" * 9 + b"\x02",
        "varint_overflow",
        4,
    )
    err("size 0", [], COMPRESSED + b"\x01\x00" + ZSTD_ZEROS, "bad_envelope", 4)
    err("no compressed data", [], COMPRESSED + b"\x01\xaf\x02", "truncated", 6)
    err(
        "signed and compressed, nothing after the signing fields",
        [KEY_1],
        signed_1(b"", flags=SIGNED_COMPRESSED),
        "truncated",
        13,
    )
    # -- Size caps: before anything is allocated.
    err(
        "declared size over max_decompressed",
        [],
        COMPRESSED + zstd_section,
        "decompressed_too_large",
        4,
        max_decompressed=302,
    )
    huge = COMPRESSED + section(ZSTD, 1 << 40, ZSTD_ZEROS)
    err("declared size over the default budget", [], huge, "decompressed_too_large", 4)
    err(
        "declared size over max_alloc",
        [],
        COMPRESSED + zstd_section,
        "decompressed_too_large",
        4,
        max_alloc=302,
    )
    # -- Decompression.
    err(
        "zstd: data is not a zstd frame",
        [],
        COMPRESSED + section(ZSTD, 303, LZ4_ZEROS),
        "bad_compression",
        6,
    )
    err(
        "zstd: a skippable frame",
        [],
        COMPRESSED + section(ZSTD, 303, ZSTD_SKIPPABLE),
        "bad_compression",
        6,
    )
    err(
        "zstd: two frames",
        [],
        COMPRESSED + section(ZSTD, 606, ZSTD_ZEROS * 2),
        "bad_compression",
        6,
    )
    err(
        "zstd: frame cut short",
        [],
        COMPRESSED + section(ZSTD, 303, ZSTD_ZEROS[:-1]),
        "bad_compression",
        6,
    )
    err(
        "zstd: frame header says another size",
        [],
        COMPRESSED + section(ZSTD, 302, ZSTD_ZEROS),
        "size_mismatch",
        4,
    )
    err(
        "zstd: unsized frame makes more than declared",
        [],
        COMPRESSED + section(ZSTD, 302, ZSTD_ZEROS_UNSIZED),
        "size_mismatch",
        4,
    )
    err(
        "zstd: unsized frame makes less than declared",
        [],
        COMPRESSED + section(ZSTD, 304, ZSTD_ZEROS_UNSIZED),
        "size_mismatch",
        4,
    )
    err(
        "zstd: 263-byte bomb of 8 MiB, 1000 bytes declared",
        [],
        COMPRESSED + section(ZSTD, 1000, ZSTD_BOMB),
        "size_mismatch",
        4,
    )
    err(
        "lz4: match offset 0",
        [],
        COMPRESSED + section(LZ4, 303, LZ4_OFFSET_ZERO),
        "bad_compression",
        6,
    )
    err(
        "lz4: makes more than declared",
        [],
        COMPRESSED + section(LZ4, 302, LZ4_ZEROS),
        "size_mismatch",
        4,
    )
    err(
        "lz4: makes less than declared",
        [],
        COMPRESSED + section(LZ4, 304, LZ4_ZEROS),
        "size_mismatch",
        4,
    )
    # -- The decompressed body: offsets count from its first byte.
    # The inner payload is a valid compressed payload of 21 bytes, stored as LZ4 literals
    # (token: 15 literals plus 6 more).
    inner = COMPRESSED + lz4_section
    nested = COMPRESSED + section(LZ4, len(inner), b"\xf0\x06" + inner)
    err(
        "a compressed payload inside a compressed body is not a value", [], nested, "unknown_tag", 0
    )
    err(
        "decompressed body with a trailing byte",
        [],
        COMPRESSED + section(LZ4, 2, bytes.fromhex("20 90 90")),
        "trailing_bytes",
        1,
    )
    return v


def document() -> str:
    """The JSON text: one vector per line, like the other vector files."""
    lines = [json.dumps(entry, ensure_ascii=False) for entry in vectors()]
    return '{\n  "format_version": 1,\n  "vectors": [\n    ' + ",\n    ".join(lines) + "\n  ]\n}\n"


if __name__ == "__main__":
    VECTORS_FILE.write_text(document(), encoding="utf-8")
    sys.stdout.write(f"wrote {len(vectors())} vectors to {VECTORS_FILE.name}\n")
