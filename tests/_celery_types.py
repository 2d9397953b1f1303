"""Classes the Celery test apps send: one allowed, one custom type, one never allowed."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import amber


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: Decimal


@dataclasses.dataclass
class Secret:
    # Never in any app's allow-list: the worker must refuse to build it.
    value: str


class Money:
    def __init__(self, amount: Decimal, currency: str) -> None:
        self.amount = amount
        self.currency = currency

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Money) and (self.amount, self.currency) == (
            other.amount,
            other.currency,
        )

    def __hash__(self) -> int:
        return hash((self.amount, self.currency))


MONEY = amber.CustomType(Money, encode=lambda m: (m.amount, m.currency), decode=lambda s: Money(*s))


class TaskFailed(Exception):
    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code
