"""Classes of the class-instance payloads.

They live in their own module so that codecs which name a class by module and
qualified name (amber, pickle, pyfory) find it again on decode: run as a script,
``bench/run.py`` imports this module as ``classes``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class QueueJob:
    """phpser's DTO benchmark: one queued job, as a Laravel queue stores it."""

    uuid: str
    display_name: str
    job: str
    max_tries: int
    timeout: int
    backoff: list[int]
    flag: bool
    data: dict[str, object]


@dataclass
class Point:
    """cl-binary-store's struct benchmark: a two-slot struct (a: float, b: str)."""

    a: float
    b: str


class Employee:
    """Sereal's employee record as a plain class (attributes in ``__dict__``)."""

    def __init__(self, id: int, name: str, age: int) -> None:
        self.id = id
        self.name = name
        self.age = age

    def info(self) -> str:
        return f"ID: {self.id}, Name: {self.name}, Age: {self.age}"


class Reading:
    """A sensor reading as a slotted class, the shape of an application's value objects:
    ``mixed_objects`` puts these in a list next to dicts that hold them, so they are
    written one by one, not in the rows form a list of one class gets."""

    __slots__ = ("labels", "sensor", "value")

    def __init__(self, sensor: str, value: float, labels: dict[str, str]) -> None:
        self.sensor = sensor
        self.value = value
        self.labels = labels
