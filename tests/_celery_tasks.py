"""Tasks shared by the Celery test apps; imports no amber, so an app using only these shows
that the entry point alone makes ``task_serializer = "amber"`` work."""

from __future__ import annotations

from decimal import Decimal
from typing import Any


def install(app: Any) -> dict[str, Any]:
    """Define the test tasks on ``app`` under fixed names, and return them by short name."""

    @app.task(bind=True, name="amber_test.echo")
    def echo(self: Any, *args: Any, **kwargs: Any) -> Any:
        # request.args is the container the worker decoded, before Python binds parameters.
        return {"args": args, "kwargs": kwargs, "request_args": self.request.args}

    @app.task(bind=True, name="amber_test.identity")
    def identity(self: Any, first: Any, second: Any, *, third: Any) -> Any:
        return {
            "first_is_second": first is second,
            "first_is_third": first is third,
            "request_args_type": type(self.request.args).__name__,
            "request_kwargs_type": type(self.request.kwargs).__name__,
            "value": first,
        }

    @app.task(bind=True, name="amber_test.touch")
    def touch(self: Any, key: str, *payload: Any) -> str:
        # The side effect the refused-message tests look for: it happens only if the task runs.
        self.backend.client.set(key, b"ran")
        return key

    @app.task(name="amber_test.add")
    def add(a: Any, b: Any) -> Any:
        return a + b

    @app.task(name="amber_test.fail")
    def fail(kind: str) -> Any:
        if kind == "value":
            raise ValueError(Decimal("1.5"), (1, 2), {"three"})
        if kind == "custom":
            from _celery_types import TaskFailed

            raise TaskFailed("no stock", code=409)
        raise AssertionError(kind)

    @app.task(name="amber_test.unencodable")
    def unencodable() -> Any:
        return {"callback": lambda: None}

    @app.task(name="amber_test.make_secret")
    def make_secret() -> Any:
        from _celery_types import Secret

        return Secret("hunter2")

    return {
        "echo": echo,
        "identity": identity,
        "touch": touch,
        "add": add,
        "fail": fail,
        "unencodable": unencodable,
        "make_secret": make_secret,
    }


def configure(app: Any, serializer: str) -> None:
    """The settings every test app shares: one serializer for tasks and results, nothing else."""
    app.conf.update(
        task_serializer=serializer,
        result_serializer=serializer,
        accept_content=[serializer],
        result_accept_content=[serializer],
        broker_connection_retry_on_startup=True,
        result_expires=600,
        worker_hijack_root_logger=True,
        enable_utc=True,
    )
