"""Benchmark payloads, taken from the seed projects' own benchmarks, and three JSON
documents of the kinds services exchange (a REST API page, a product feed, GeoJSON).

Every payload is built on demand from a fixed seed, so two runs (and two machines)
time the same objects. ``scale`` multiplies the large payloads; scale 10 gives the
seeds' original sizes (1M employees, 1M-element lists).
"""

from __future__ import annotations

import datetime
import json
import math
import random
import string
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from classes import Employee, Point, QueueJob, Reading

SEED = 2024
# The seeds' sizes for these two; they do not grow with --scale.
KEYWORD_COUNT = 100_000
KEYWORD_POOL = 25_000
ALPHA_COUNT = 100_000


@dataclass(frozen=True)
class Payload:
    """A named payload; ``build`` makes a fresh copy of the object graph.

    ``types`` lists the classes whose instances the payload holds, for codecs that
    must be told them to decode (amber's ``loads(types=...)``) or that register them
    (pyfory). ``schema`` is the payload's whole static type, e.g. ``list[QueueJob]``,
    for schema-driven decoders (msgspec); None when no such type exists.
    """

    name: str
    origin: str
    description: str
    build: Callable[[], object]
    types: tuple[type, ...] = ()
    schema: object = None


def _rng(name: str) -> random.Random:
    # One generator per payload, so selecting a subset does not change the others.
    return random.Random(SEED ^ zlib.crc32(name.encode()))


def _scaled(count: int, scale: float) -> int:
    return max(1, round(count * scale))


def quickle_small() -> object:
    return {
        "fruit": ["apple", "banana", "cherry", "durian"],
        "vegetables": ["asparagus", "broccoli", "cabbage"],
        "numbers": [1, 2, 3, 4, 5],
    }


def quickle_strings() -> object:
    rng = _rng("quickle_strings")
    return ["".join(rng.choices(string.ascii_letters, k=15)) for _ in range(100)]


def sereal_mixed() -> object:
    return {
        "array": list(range(1, 1001)),
        "hash": {str(n): n * 2 for n in range(1, 101)},
        "nested": {letter: [letter * 5] for letter in string.ascii_lowercase},
    }


def job_hash() -> object:
    return {
        "priority": 2,
        "clientref": "A huge long string " + "a" * 67,
        "jobid": "366107",
        "name": "XXXXXXXXXX",
        "args": {
            "yyyyy": {},
            "user_id": "1000",
            "zzzzzzz": {"3146": {"aaaaa": "5.04", "bbbbbb": "2"}},
            "account_id": "4",
        },
        "type": "aaaaaaa",
        "sessionid": "758477502DC65F69E040007F01000850",
        "jobflags": 0,
    }


def packed_1k() -> object:
    return list(range(1000))


def rowset_1000() -> object:
    rng = _rng("rowset_1000")
    tag_pool = ["admin", "beta", "billing", "ops", "sales", "support", "trial", "vip"]
    rows = []
    for row_id in range(1, 1001):
        first = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 9)))
        rows.append(
            {
                "id": row_id,
                "name": f"{first.title()} {rng.choice(string.ascii_uppercase)}.",
                "email": f"{first}{row_id}@example.com",
                "created_at": (
                    f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
                    f"T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
                    f"{rng.randint(0, 59):02d}Z"
                ),
                "score": round(rng.uniform(0, 100), 2),
                "active": rng.random() < 0.8,
                "tags": rng.sample(tag_pool, rng.randint(0, 3)),
                "manager_id": rng.randint(1, row_id) if rng.random() < 0.7 else None,
            }
        )
    return rows


JOB_CLASSES = (
    "App\\Jobs\\SendInvoice",
    "App\\Jobs\\SendWelcomeEmail",
    "App\\Jobs\\ProcessPodcast",
    "App\\Jobs\\GenerateReport",
    "App\\Jobs\\SyncInventory",
)


def dto_1000() -> object:
    """phpser's DTO payload: 1000 queue jobs as dataclass instances."""
    rng = _rng("dto_1000")
    jobs = []
    for _ in range(1000):
        display_name = rng.choice(JOB_CLASSES)
        user = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 10)))
        jobs.append(
            QueueJob(
                uuid=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                display_name=display_name,
                job="Illuminate\\Queue\\CallQueuedHandler@call",
                max_tries=3,
                timeout=rng.choice((60, 120)),
                backoff=[10, 30, 60],
                flag=rng.random() < 0.5,
                data={
                    "commandName": display_name,
                    "invoiceId": rng.randint(1, 10_000_000),
                    "customerEmail": f"{user}@example.com",
                },
            )
        )
    return jobs


def mixed_objects() -> object:
    """2,000 events: a slotted instance holding a dict of labels, then a dict holding an
    instance, in turn. No two neighbours share a class, so no rows form applies and
    each instance is written on its own, through the memo and its class's shape."""
    rng = _rng("mixed_objects")
    sites = ("north", "south", "east", "west")
    events: list[object] = []
    for i in range(1000):
        sensor = f"sensor-{rng.randrange(64)}"
        labels = {"site": rng.choice(sites), "unit": "C"}
        events.append(Reading(sensor, round(rng.uniform(-10, 40), 2), labels))
        events.append(
            {
                "seq": i,
                "kind": "sample",
                "reading": Reading(sensor, round(rng.uniform(0, 100), 1), {"unit": "%"}),
            }
        )
    return events


def employees(count: int) -> Callable[[], object]:
    def build() -> object:
        return [{"id": i, "name": f"Employee_{i}", "age": 20 + i % 45} for i in range(count)]

    return build


def employee_objects(count: int) -> Callable[[], object]:
    def build() -> object:
        return [Employee(i, f"Employee_{i}", 20 + i % 45) for i in range(count)]

    return build


def structs_tuples(count: int) -> Callable[[], object]:
    def build() -> object:
        rng = _rng("structs_tuples")
        return [(rng.random(), f"struct-{i}") for i in range(count)]

    return build


def structs_dataclass(count: int) -> Callable[[], object]:
    """cl-binary-store's struct benchmark: dataclass instances (a: float, b: str)."""

    def build() -> object:
        rng = _rng("structs_100k")
        return [Point(rng.random(), f"struct-{i}") for i in range(count)]

    return build


def complex_list(count: int) -> Callable[[], object]:
    """cl-binary-store's long-complex-list: the strings and the empty tuple are shared."""

    def build() -> object:
        rng = _rng("complex_list")
        pi, hi, hello, empty = 3.1415, "hi", "hello", ()
        items: list[object] = []
        for _ in range(count):
            if rng.random() < 0.5:
                items.append(pi)
            elif rng.random() < 0.5:
                items.append(hi)
            elif rng.random() < 0.5:
                items.append((rng.randrange(30), 2))
            else:
                items.append(hello if rng.random() < 0.5 else empty)
        return items

    return build


def repeated_int(count: int) -> Callable[[], object]:
    def build() -> object:
        value = 2**60 + _rng("repeated_int").randrange(2**60)  # a 61-bit int
        return [value] * count

    return build


def keywords(count: int, distinct: int) -> Callable[[], object]:
    """Strings drawn from a pool; a repeat is the very same str object."""

    def build() -> object:
        rng = _rng("keywords")
        pool = [f"keyword-{n}" for n in range(distinct)]
        return [pool[rng.randrange(distinct)] for _ in range(count)]

    return build


def alpha_strings(count: int) -> Callable[[], object]:
    def build() -> object:
        return [f"string {i} \N{GREEK SMALL LETTER ALPHA}" for i in range(count)]

    return build


def float_array_list(count: int) -> Callable[[], object]:
    def build() -> object:
        rng = _rng("float_array_list")
        return [rng.random() for _ in range(count)]

    return build


# ---------------------------------------------------------------- JSON documents
#
# Three documents of the kinds services pass around as JSON: a page of a REST API, a
# product feed and a GeoJSON layer. Each is generated from its seed, then passed once
# through the standard json module, so it is what a JSON decoder hands over: fresh
# dicts, lists and strings with nothing shared but the keys json's decoder reuses
# within one document. amber decodes them with plain ``loads``.

JSON_WORDS = (
    "add allow api async auth batch bug build cache call check client close config "
    "crash data debug default deploy docs error event fail field fix flag handle header "
    "index input issue job key leak limit list load lock log loop memory merge method "
    "migrate mode module null option order output page parse patch path queue race read "
    "release request retry return route run schema server session setting slow socket "
    "sort state stream string sync table test thread timeout token type update upload "
    "user value version view warn when window worker write wrong"
).split()
# A few titles and bodies carry non-ASCII text, as real ones do: accents, a dash, CJK
# and an emoji (which makes a str four bytes a character in CPython).
JSON_NON_ASCII = ("café", "naïve", "—", "größer", "日本語の説明", "🚀", "✅ done", "Ünïcödé")
# Records per document at scale 1: about 0.8, 0.9 and 1.1 MB of compact JSON.
JSON_ISSUES = 200
JSON_PRODUCTS = 1_000
JSON_FEATURES = 700
JSON_EPOCH = datetime.datetime(2023, 1, 1, tzinfo=datetime.timezone.utc)


def _as_json(document: object) -> Any:
    """The document as json.loads returns it (and a check that JSON can hold it)."""
    return json.loads(json.dumps(document, ensure_ascii=False, allow_nan=False))


def _timestamp(rng: random.Random, days: int = 700) -> str:
    moment = JSON_EPOCH + datetime.timedelta(seconds=rng.randrange(days * 86_400))
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _words(rng: random.Random, low: int, high: int) -> str:
    words = rng.choices(JSON_WORDS, k=rng.randint(low, high))
    if rng.random() < 0.08:
        words.insert(rng.randrange(len(words) + 1), rng.choice(JSON_NON_ASCII))
    return " ".join(words)


def _node_id(rng: random.Random, prefix: str) -> str:
    return prefix + "".join(rng.choices(string.ascii_letters + string.digits, k=16))


GITHUB_API = "https://api.github.com"
GITHUB_REPO = "example-org/widget-service"


def _github_user(login: str, user_id: int, node_id: str, kind: str) -> dict[str, object]:
    url = f"{GITHUB_API}/users/{login}"
    return {
        "login": login,
        "id": user_id,
        "node_id": node_id,
        "avatar_url": f"https://avatars.githubusercontent.com/u/{user_id}?v=4",
        "gravatar_id": "",
        "url": url,
        "html_url": f"https://github.com/{login}",
        "followers_url": f"{url}/followers",
        "following_url": f"{url}/following{{/other_user}}",
        "gists_url": f"{url}/gists{{/gist_id}}",
        "starred_url": f"{url}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{url}/subscriptions",
        "organizations_url": f"{url}/orgs",
        "repos_url": f"{url}/repos",
        "events_url": f"{url}/events{{/privacy}}",
        "received_events_url": f"{url}/received_events",
        "type": kind,
        "user_view_type": "public",
        "site_admin": False,
    }


def github_issues(count: int) -> Callable[[], object]:
    """A GitHub-style "list repository issues" response: a JSON array of issue records."""

    def build() -> object:
        rng = _rng("github_issues")
        people = []
        for _ in range(40):
            login = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 12)))
            if rng.random() < 0.3:
                login += f"-{rng.randint(1, 99)}"
            kind = "Bot" if rng.random() < 0.05 else "User"
            people.append((login, rng.randint(1_000, 150_000_000), _node_id(rng, "U_kgDO"), kind))
        label_names = (
            "bug",
            "enhancement",
            "documentation",
            "good first issue",
            "help wanted",
            "performance",
            "needs triage",
            "question",
            "wontfix",
            "dependencies",
        )
        repo_url = f"{GITHUB_API}/repos/{GITHUB_REPO}"
        # The repository's labels; an issue lists some of them (copies, after _as_json).
        labels = [
            {
                "id": rng.randint(10**8, 8 * 10**9),
                "node_id": _node_id(rng, "LA_kwDO"),
                "url": f"{repo_url}/labels/{name.replace(' ', '%20')}",
                "name": name,
                "color": f"{rng.randrange(16**6):06x}",
                "default": index < 4,
                "description": None if rng.random() < 0.3 else _words(rng, 3, 8),
            }
            for index, name in enumerate(label_names)
        ]
        issues = []
        number = 5_000
        for _ in range(count):
            number -= rng.randint(1, 3)
            url = f"{repo_url}/issues/{number}"
            closed = rng.random() < 0.35
            created = _timestamp(rng)
            assignees = [_github_user(*rng.choice(people)) for _ in range(rng.choice((0, 0, 1, 2)))]
            reactions = {
                name: (rng.randint(0, 12) if rng.random() < 0.25 else 0)
                for name in ("+1", "-1", "laugh", "hooray", "confused", "heart", "rocket", "eyes")
            }
            issues.append(
                {
                    "url": url,
                    "repository_url": repo_url,
                    "labels_url": f"{url}/labels{{/name}}",
                    "comments_url": f"{url}/comments",
                    "events_url": f"{url}/events",
                    "html_url": f"https://github.com/{GITHUB_REPO}/issues/{number}",
                    "id": rng.randint(10**9, 3 * 10**9),
                    "node_id": _node_id(rng, "I_kwDO"),
                    "number": number,
                    "title": _words(rng, 3, 12).capitalize(),
                    "user": _github_user(*rng.choice(people)),
                    "labels": rng.sample(labels, rng.randint(0, 3)),
                    "state": "closed" if closed else "open",
                    "locked": rng.random() < 0.02,
                    "assignee": assignees[0] if assignees else None,
                    "assignees": assignees,
                    "milestone": None,
                    "comments": rng.choice((0, 0, 1, 2, 3, 5, 8, 13, 40)),
                    "created_at": created,
                    "updated_at": max(created, _timestamp(rng)),
                    "closed_at": max(created, _timestamp(rng)) if closed else None,
                    "author_association": rng.choice(
                        ("NONE", "CONTRIBUTOR", "MEMBER", "OWNER", "COLLABORATOR")
                    ),
                    "type": None,
                    "active_lock_reason": None,
                    "sub_issues_summary": {"total": 0, "completed": 0, "percent_completed": 0},
                    "body": None
                    if rng.random() < 0.1
                    else "\n\n".join(_words(rng, 8, 60) for _ in range(rng.randint(1, 5))),
                    "closed_by": _github_user(*rng.choice(people)) if closed else None,
                    "reactions": {
                        "url": f"{url}/reactions",
                        "total_count": sum(reactions.values()),
                        **reactions,
                    },
                    "timeline_url": f"{url}/timeline",
                    "performed_via_github_app": None,
                    "state_reason": ("completed" if rng.random() < 0.8 else "not_planned")
                    if closed
                    else None,
                }
            )
        return _as_json(issues)

    return build


CATALOG_BRANDS = (
    "Acme",
    "Globex",
    "Initech",
    "Umbrella",
    "Hooli",
    "Stark",
    "Wayne",
    "Wonka",
    "Soylent",
    "Cyberdyne",
    "Tyrell",
    "Aperture",
    "Gringotts",
    "Oscorp",
    "Vandelay",
    "Nakatomi",
    "Monarch",
    "Massive Dynamic",
    "Pied Piper",
    "Dunder Mifflin",
)
CATALOG_CATEGORIES = (
    ("Electronics", "Audio", "Headphones"),
    ("Electronics", "Audio", "Speakers"),
    ("Electronics", "Computers", "Laptops"),
    ("Electronics", "Computers", "Accessories"),
    ("Electronics", "Phones", "Cases"),
    ("Home", "Kitchen", "Cookware"),
    ("Home", "Kitchen", "Small Appliances"),
    ("Home", "Furniture", "Chairs"),
    ("Home", "Lighting", "Lamps"),
    ("Sports", "Outdoor", "Tents"),
    ("Sports", "Fitness", "Weights"),
    ("Clothing", "Men", "Jackets"),
    ("Clothing", "Women", "Shoes"),
    ("Toys", "Building", "Blocks"),
    ("Books", "Computing", "Programming"),
)
CATALOG_COLORS = ("black", "white", "silver", "red", "blue", "green", "grey", "navy", "beige")
CATALOG_MATERIALS = ("plastic", "aluminium", "steel", "cotton", "polyester", "wood", "glass")
CATALOG_SIZES = ("XS", "S", "M", "L", "XL", "one size")
CATALOG_CURRENCIES = ("EUR", "EUR", "EUR", "USD", "GBP")
CATALOG_WAREHOUSES = ("AMS-1", "FRA-2", "DUB-1", "WAW-3")


def product_catalog(count: int) -> Callable[[], object]:
    """A product feed: one page of products with few distinct brands, categories,
    currencies and colours repeated across many records."""

    def build() -> object:
        rng = _rng("product_catalog")
        products = []
        for product_id in range(100_001, 100_001 + count):
            brand = rng.choice(CATALOG_BRANDS)
            path = rng.choice(CATALOG_CATEGORIES)
            currency = rng.choice(CATALOG_CURRENCIES)
            base_price = round(rng.lognormvariate(3.5, 1.0), 2)
            sku = f"{brand[:3].upper()}-{product_id:07d}"
            slug = f"{brand.lower().replace(' ', '-')}-{path[-1].lower().replace(' ', '-')}"
            has_rating = rng.random() < 0.75
            products.append(
                {
                    "id": product_id,
                    "sku": sku,
                    "name": f"{brand} {_words(rng, 1, 3).title()} {path[-1].rstrip('s')}",
                    "brand": brand,
                    "category": {"id": CATALOG_CATEGORIES.index(path) + 1, "path": list(path)},
                    "price": {
                        "amount": base_price,
                        "currency": currency,
                        "discount": rng.choice((None, None, None, 0.1, 0.15, 0.25)),
                        "tax_included": currency != "USD",
                    },
                    "availability": {
                        "in_stock": rng.random() < 0.85,
                        "quantity": rng.randint(0, 500),
                        "warehouse": rng.choice(CATALOG_WAREHOUSES),
                    },
                    "rating": {
                        "average": round(rng.uniform(2.5, 5.0), 1),
                        "count": rng.randint(1, 4_000),
                    }
                    if has_rating
                    else None,
                    "tags": rng.sample(
                        ("new", "sale", "eco", "bestseller", "limited", "gift"), rng.randint(0, 3)
                    ),
                    "attributes": {
                        "color": rng.choice(CATALOG_COLORS),
                        "material": rng.choice(CATALOG_MATERIALS),
                        "weight_g": rng.randint(50, 20_000),
                    },
                    "variants": [
                        {
                            "sku": f"{sku}-{index}",
                            "color": rng.choice(CATALOG_COLORS),
                            "size": rng.choice(CATALOG_SIZES),
                            "price": round(base_price * rng.choice((1.0, 1.0, 1.1, 1.2)), 2),
                            "available": rng.random() < 0.8,
                        }
                        for index in range(rng.choice((0, 0, 1, 2, 3, 4)))
                    ],
                    "images": [
                        f"https://cdn.example.com/img/{slug}/{product_id}-{index}.jpg"
                        for index in range(rng.randint(1, 4))
                    ],
                    "url": f"https://shop.example.com/p/{slug}-{product_id}",
                    "created_at": _timestamp(rng),
                    "updated_at": _timestamp(rng),
                }
            )
        return _as_json(
            {
                "page": 1,
                "per_page": count,
                "total": count * 37,
                "currency_default": "EUR",
                "generated_at": "2024-11-05T08:00:00Z",
                "products": products,
            }
        )

    return build


def geojson_features(count: int) -> Callable[[], object]:
    """A GeoJSON FeatureCollection (RFC 7946) of a city's map layer: road LineStrings,
    building and land-use Polygons (some with a hole), and POI Points, coordinates as
    [longitude, latitude] floats with 7 decimals, as OpenStreetMap exports them."""

    def walk(rng: random.Random, lon: float, lat: float, points: int) -> list[list[float]]:
        line = []
        heading = rng.uniform(0, 6.283)
        for _ in range(points):
            line.append([round(lon, 7), round(lat, 7)])
            heading += rng.gauss(0, 0.35)
            step = rng.uniform(0.00005, 0.0004)
            lon += step * 1.6 * math.cos(heading)
            lat += step * math.sin(heading)
        return line

    def ring(
        rng: random.Random, lon: float, lat: float, radius: float, points: int
    ) -> list[list[float]]:
        angles = sorted(rng.uniform(0, 2 * math.pi) for _ in range(points))
        coords = [
            [
                round(lon + 1.6 * radius * rng.uniform(0.7, 1.0) * math.cos(angle), 7),
                round(lat + radius * rng.uniform(0.7, 1.0) * math.sin(angle), 7),
            ]
            for angle in angles
        ]
        return [*coords, list(coords[0])]  # closed: the last position repeats the first

    def build() -> object:
        rng = _rng("geojson_features")
        center_lon, center_lat = 13.4050, 52.5200
        streets = [
            _words(rng, 1, 2).title() + rng.choice((" Street", " Road", " Allee", "weg"))
            for _ in range(60)
        ]
        features = []
        for feature_id in range(count):
            lon = center_lon + rng.uniform(-0.15, 0.15)
            lat = center_lat + rng.uniform(-0.09, 0.09)
            kind = rng.random()
            if kind < 0.4:
                geometry = {
                    "type": "LineString",
                    "coordinates": walk(rng, lon, lat, rng.randint(8, 160)),
                }
                properties: dict[str, object] = {
                    "highway": rng.choice(
                        (
                            "residential",
                            "primary",
                            "secondary",
                            "tertiary",
                            "footway",
                            "cycleway",
                            "service",
                        )
                    ),
                    "name": rng.choice(streets) if rng.random() < 0.8 else None,
                    "oneway": rng.random() < 0.25,
                    "maxspeed": rng.choice((None, 30, 50, 50, 60)),
                    "lanes": rng.choice((None, 1, 2, 2, 4)),
                    "surface": rng.choice(("asphalt", "asphalt", "paving_stones", "sett", None)),
                    "lit": rng.random() < 0.6,
                }
            elif kind < 0.8:
                radius = rng.uniform(0.0001, 0.002)
                rings = [ring(rng, lon, lat, radius, rng.randint(4, 48))]
                if rng.random() < 0.15:
                    rings.append(ring(rng, lon, lat, radius * 0.3, rng.randint(4, 12)))
                geometry = {"type": "Polygon", "coordinates": rings}
                building = rng.random() < 0.7
                properties = {
                    "building": rng.choice(("yes", "residential", "commercial", "school"))
                    if building
                    else None,
                    "landuse": None if building else rng.choice(("grass", "forest", "retail")),
                    "name": _words(rng, 1, 3).title() if rng.random() < 0.2 else None,
                    "levels": rng.randint(1, 12) if building else None,
                    "height": round(rng.uniform(3.0, 40.0), 1) if building else None,
                    "area_m2": round(radius * radius * 3.1416 * 7.4e9, 1),
                }
            else:
                geometry = {"type": "Point", "coordinates": [round(lon, 7), round(lat, 7)]}
                properties = {
                    "amenity": rng.choice(
                        (
                            "cafe",
                            "restaurant",
                            "bench",
                            "pharmacy",
                            "bicycle_parking",
                            "post_box",
                            "atm",
                        )
                    ),
                    "name": _words(rng, 1, 3).title() if rng.random() < 0.6 else None,
                    "opening_hours": rng.choice((None, "Mo-Fr 08:00-18:00", "24/7")),
                    "wheelchair": rng.choice((None, "yes", "no", "limited")),
                }
            properties["osm_id"] = rng.randint(10**7, 10**10)
            properties["updated"] = _timestamp(rng)
            features.append(
                {
                    "type": "Feature",
                    "id": feature_id,
                    "geometry": geometry,
                    "properties": properties,
                }
            )
        return _as_json({"type": "FeatureCollection", "name": "city_layer", "features": features})

    return build


def all_payloads(scale: float) -> list[Payload]:
    """Every payload; ``scale`` 1 makes the big ones 100k elements, 10 the seeds' 1M."""
    big = _scaled(100_000, scale)
    issues, products, features = (
        _scaled(n, scale) for n in (JSON_ISSUES, JSON_PRODUCTS, JSON_FEATURES)
    )
    return [
        Payload("quickle_small", "quickle", "3-key dict of short lists", quickle_small),
        Payload("quickle_strings", "quickle", "100 random 15-letter str", quickle_strings),
        Payload(
            "sereal_mixed",
            "Sereal",
            "1k-int list, 100-key dict, 26 lists",
            sereal_mixed,
        ),
        Payload("job_hash", "seed 004", "job-queue hash, nested dicts", job_hash),
        Payload("packed_1k", "phpser", "list(range(1000))", packed_1k),
        Payload(
            "github_issues",
            "JSON document",
            f"REST API page: {issues} issue records, nested users and labels",
            github_issues(issues),
        ),
        Payload(
            "product_catalog",
            "JSON document",
            f"product feed: {products} products, repeated brands and categories",
            product_catalog(products),
        ),
        Payload(
            "geojson_features",
            "JSON document",
            f"GeoJSON: {features} roads, buildings and POIs, float coordinates",
            geojson_features(features),
        ),
        Payload("rowset_1000", "phpser", "1000 mixed database rows", rowset_1000),
        Payload(
            "dto_1000",
            "phpser",
            "1000 QueueJob dataclass instances",
            dto_1000,
            types=(QueueJob,),
            schema=list[QueueJob],
        ),
        Payload(
            "mixed_objects",
            "amber",
            "2000 events: slotted instances holding dicts, dicts holding instances",
            mixed_objects,
            types=(Reading,),
        ),
        Payload("employees", "Sereal", f"{big} 3-key dicts", employees(big)),
        Payload(
            "employee_objects",
            "Sereal",
            f"{big} Employee objects (plain class)",
            employee_objects(big),
            types=(Employee,),
            schema=list[Employee],
        ),
        Payload(
            "structs_tuples",
            "cl-binary-store",
            f"{big} (float, str)",
            structs_tuples(big),
        ),
        Payload(
            "structs_100k",
            "cl-binary-store",
            f"{big} Point(a: float, b: str) dataclass instances",
            structs_dataclass(big),
            types=(Point,),
            schema=list[Point],
        ),
        Payload(
            "complex_list",
            "cl-binary-store",
            f"{big} mixed items, shared refs",
            complex_list(big),
        ),
        Payload(
            "repeated_int",
            "cl-binary-store",
            f"{big} x one 61-bit int",
            repeated_int(big),
        ),
        Payload(
            "keywords",
            "cl-binary-store",
            f"{KEYWORD_COUNT} str drawn from {KEYWORD_POOL} objects",
            keywords(KEYWORD_COUNT, KEYWORD_POOL),
        ),
        Payload(
            "alpha_strings",
            "cl-binary-store",
            f"{ALPHA_COUNT} distinct str ending in \N{GREEK SMALL LETTER ALPHA}",
            alpha_strings(ALPHA_COUNT),
        ),
        Payload(
            "float_array_list",
            "cl-binary-store",
            f"{big} floats in a list",
            float_array_list(big),
        ),
    ]
