"""`types=` and `custom=` lists are remembered between calls, and a remembered list never
answers for a different one.

amber keeps the names it made for the last few lists (crates/amber-py/src/registry.rs), so
that a service passing the same list on every call does not rebuild them. Each test here
changes what a list holds, or what a name refers to, between two calls and checks that the
second call sees the change.
"""

from __future__ import annotations

import dataclasses
import gc
import threading
import weakref
from typing import Any

import amber
import pytest


def _dataclass(name: str, field: str = "a") -> Any:
    return dataclasses.make_dataclass(name, [(field, int)])


def test_a_list_emptied_between_calls_allows_nothing() -> None:
    cls = _dataclass("Emptied")
    data = amber.dumps(cls(1))
    allowed = [cls]
    assert amber.loads(data, types=allowed) == cls(1)
    allowed.clear()
    with pytest.raises(amber.ClassNotAllowedError):
        amber.loads(data, types=allowed)
    with pytest.raises(amber.EncodeError, match="not in types"):
        amber.dumps(cls(1), types=allowed)


def test_a_list_whose_item_is_replaced_allows_the_new_item() -> None:
    first, second = _dataclass("Replaced"), _dataclass("Replaced", "a")
    data = amber.dumps(first(3))
    allowed = [first]
    assert type(amber.loads(data, types=allowed)) is first
    allowed[0] = second
    assert type(amber.loads(data, types=allowed)) is second


def test_a_new_list_with_the_same_classes_in_another_order_keeps_the_later_one() -> None:
    # Two classes with one name: the later entry wins, in any list.
    first, second = _dataclass("Twin"), _dataclass("Twin")
    data = amber.dumps(first(5))
    assert type(amber.loads(data, types=[first, second])) is second
    assert type(amber.loads(data, types=[second, first])) is first
    assert type(amber.loads(data, types=(first, second))) is second


def test_an_alias_renamed_between_calls_takes_the_new_name() -> None:
    cls = _dataclass("Aliased")
    data = amber.dumps(cls(2))
    moved = data.replace(b"Aliased", b"Renamed")
    module = cls.__module__
    allowed: list[Any] = [(f"{module}:Aliased", cls)]
    assert amber.loads(data, types=allowed) == cls(2)
    allowed[0] = (f"{module}:Renamed", cls)
    assert amber.loads(moved, types=allowed) == cls(2)
    with pytest.raises(amber.ClassNotAllowedError):
        amber.loads(data, types=allowed)


def test_a_custom_type_replaced_between_calls_decodes_with_the_new_function() -> None:
    cls = _dataclass("Customised")
    data = amber.dumps(cls(4), custom=[amber.CustomType(cls, lambda o: o.a, lambda s: cls(s))])
    custom = [amber.CustomType(cls, lambda o: o.a, lambda s: cls(s + 1))]
    assert amber.loads(data, custom=custom) == cls(5)
    custom[0] = amber.CustomType(cls, lambda o: o.a, lambda s: cls(s + 100))
    assert amber.loads(data, custom=custom) == cls(104)


def test_more_lists_than_the_cache_holds_are_each_answered_for_themselves() -> None:
    classes = [_dataclass(f"Many{i}") for i in range(20)]
    payloads = [amber.dumps(cls(i)) for i, cls in enumerate(classes)]
    for _ in range(3):
        for i, cls in enumerate(classes):
            assert type(amber.loads(payloads[i], types=[cls])) is cls
            other = classes[(i + 1) % len(classes)]
            with pytest.raises(amber.ClassNotAllowedError):
                amber.loads(payloads[i], types=[other])


def test_entries_that_are_not_weakly_referenceable_are_still_allowed() -> None:
    """A callable instance without __weakref__ cannot be remembered; it works all the same."""

    class Factory:
        __slots__ = ()

        def __call__(self, *args: Any) -> Any:
            return dict(args)

    cls = _dataclass("ByFactory")
    data = amber.dumps(cls(9))
    alias = (f"{cls.__module__}:ByFactory", cls)
    assert amber.loads(data, types=[alias, ("x:y", Factory())]) == cls(9)
    assert amber.loads(data, types=[alias, ("x:y", Factory())]) == cls(9)


def test_a_mapping_is_read_on_every_call() -> None:
    cls = _dataclass("Mapped")
    data = amber.dumps(cls(6))
    allowed = {f"{cls.__module__}:Mapped": cls}
    assert amber.loads(data, types=allowed) == cls(6)
    allowed.clear()
    with pytest.raises(amber.ClassNotAllowedError):
        amber.loads(data, types=allowed)


def test_bad_entries_fail_on_every_call() -> None:
    for _ in range(2):
        with pytest.raises(TypeError, match="types entries must be classes"):
            amber.loads(amber.dumps(1), types=[42])
        with pytest.raises(TypeError, match=r"custom entries must be amber\.CustomType"):
            amber.loads(amber.dumps(1), custom=[42])


def test_remembered_lists_hold_no_class_or_function_alive() -> None:
    cls = _dataclass("Forgotten")
    custom_cls = _dataclass("ForgottenCustom")

    def decode(state: Any) -> Any:
        return ("decoded", state)

    custom = amber.CustomType(custom_cls, lambda o: o.a, decode)
    data = amber.dumps([cls(1), custom_cls(2)], custom=[custom])
    for _ in range(3):
        back = amber.loads(data, types=[(f"{cls.__module__}:Forgotten", cls)], custom=[custom])
        assert back == [cls(1), ("decoded", 2)]
        amber.dumps(cls(1), types=[cls])
    refs = [weakref.ref(cls), weakref.ref(custom_cls), weakref.ref(decode), weakref.ref(custom)]
    del cls, custom_cls, decode, custom, back
    gc.collect()
    assert [ref() for ref in refs] == [None] * 4


def test_custom_encoders_from_a_list_match_those_from_any_iterable() -> None:
    # A list or tuple of CustomType is read without calling Python; any other iterable
    # goes through amber._classes.encoders. Both give the same table, the later entry
    # for a class winning.
    cls = _dataclass("Encoded")
    first = amber.CustomType(cls, lambda o: ["first", o.a], lambda s: cls(s[1]))
    second = amber.CustomType(cls, lambda o: ["second", o.a], lambda s: cls(s[1]))
    obj = [cls(7), cls(8)]
    by_list = amber.dumps(obj, custom=[first, second])
    assert by_list == amber.dumps(obj, custom=(first, second))
    assert by_list == amber.dumps(obj, custom=iter([first, second]))
    assert b"second" in by_list and b"first" not in by_list
    assert amber.loads(by_list, custom=[second]) == obj
    assert amber.dumps(obj, custom=[]) == amber.dumps(obj)
    with pytest.raises(TypeError, match="custom entries must be"):
        amber.dumps(obj, custom=[first, 42])

    class Subclassed(amber.CustomType):  # type: ignore[type-arg]
        pass

    sub = Subclassed(cls, lambda o: ["sub", o.a], lambda s: cls(s[1]))
    assert b"sub" in amber.dumps(obj, custom=[sub])


@pytest.mark.parametrize("count", [1, 3, 4, 5, 9, 20])
def test_custom_tables_of_any_size_find_every_class_and_keep_the_later_entry(count: int) -> None:
    # Up to four entries are kept inline, more in a sorted table searched by address (past
    # eight entries, by binary search): every size finds each of its classes, classes
    # outside it are written as plain instances, and a class listed twice takes its later
    # entry, as a dict would.
    classes = [_dataclass(f"Sized{count}_{i}") for i in range(count)]

    def custom_type(cls: Any, mark: str) -> amber.CustomType[Any]:
        return amber.CustomType(cls, lambda o: [mark, o.a], lambda s: cls(s[1]))

    entries = [custom_type(cls, f"early{i}") for i, cls in enumerate(classes)]
    # The first class again, last: it replaces the first entry.
    entries.append(custom_type(classes[0], "late0"))
    outsider = _dataclass(f"Outsider{count}")
    values = [cls(i) for i, cls in enumerate(classes)]
    data = amber.dumps([*values, outsider(99)], custom=entries, types=[outsider])
    for i in range(count):
        assert (f"early{i}".encode() in data) == (i != 0)
    assert b"late0" in data
    decoders = [custom_type(cls, "") for cls in classes]
    assert amber.loads(data, custom=decoders, types=[outsider]) == [*values, outsider(99)]
    assert data == amber.dumps([*values, outsider(99)], custom=iter(entries), types=[outsider])


def test_a_custom_type_made_without_init_is_refused_on_every_path() -> None:
    # Its fields are empty slots: the table cannot take them, and getattr reports which.
    empty = object.__new__(amber.CustomType)
    cls = _dataclass("NeverInit")
    for custom in ([empty], (empty,), iter([empty])):
        with pytest.raises(AttributeError, match="has no attribute"):
            amber.dumps(cls(1), custom=custom)
    data = amber.dumps(cls(1), types=[cls])
    with pytest.raises(AttributeError, match="has no attribute 'decode'"):
        amber.loads(data, custom=[empty])


# A keyword call repeated with the very same option objects is remembered whole, `types=` and
# `custom=` lists included (crates/amber-py/src/keyword_cache.rs): from its third repeat on,
# a call skips the option checks, its lists compared item by item. The tests below repeat each
# call past that point before they change a list, and use one call site for every call.
_REPEATS = 4


def test_a_remembered_keyword_call_sees_its_list_changed_in_place() -> None:
    first, second = _dataclass("KwFirst"), _dataclass("KwSecond")
    data_first, data_second = amber.dumps(first(1)), amber.dumps(second(2))
    types: list[Any] = [first]

    def load(data: bytes) -> Any:
        return amber.loads(data, types=types, max_depth=40)

    for _ in range(_REPEATS):
        assert load(data_first) == first(1)
    types[0] = second
    assert load(data_second) == second(2)
    with pytest.raises(amber.ClassNotAllowedError):
        load(data_first)
    types.append(first)
    for _ in range(_REPEATS):
        assert load(data_first) == first(1)
    types.clear()
    with pytest.raises(amber.ClassNotAllowedError):
        load(data_second)


def test_a_remembered_keyword_call_gets_the_class_of_its_own_list() -> None:
    # Two classes with one name, each passed in a new list from one call site: the names
    # remembered are the same, the class built is the one this call's list holds.
    twins = [_dataclass("KwTwin"), _dataclass("KwTwin")]
    data = amber.dumps(twins[0](7))
    for _ in range(3):
        for cls in twins:
            for _ in range(_REPEATS):
                assert type(amber.loads(data, types=[cls])) is cls
                assert amber.dumps(cls(7), types=(cls,)) == data


def test_a_remembered_encode_refuses_a_class_its_list_no_longer_holds() -> None:
    kept, dropped = _dataclass("KwKept"), _dataclass("KwDropped")
    types: list[Any] = [kept, dropped]
    for _ in range(_REPEATS):
        amber.dumps([kept(1), dropped(2)], types=types)
    types.remove(dropped)
    with pytest.raises(amber.EncodeError, match="not in types"):
        amber.dumps([kept(1), dropped(2)], types=types)


def test_a_remembered_custom_list_uses_the_functions_of_its_current_items() -> None:
    cls = _dataclass("KwCustom")
    custom = [amber.CustomType(cls, lambda o: o.a, lambda s: cls(s))]
    for _ in range(_REPEATS):
        data = amber.dumps(cls(3), custom=custom)
        assert amber.loads(data, custom=custom) == cls(3)
    custom[0] = amber.CustomType(cls, lambda o: o.a * 10, lambda s: cls(s + 1))
    data = amber.dumps(cls(3), custom=custom)
    raw = [amber.CustomType(cls, lambda o: 0, lambda s: ("raw", s))]
    assert amber.loads(data, custom=raw) == ("raw", 30)
    assert amber.loads(data, custom=custom) == cls(31)
    custom.clear()
    assert amber.dumps(cls(3), custom=custom) == amber.dumps(cls(3))


def test_a_remembered_call_with_aliases_sees_a_renamed_alias() -> None:
    # Alias tuples take no weak reference: such calls are checked every time.
    cls = _dataclass("KwAliased")
    data = amber.dumps(cls(2))
    allowed: list[Any] = [(f"{cls.__module__}:KwAliased", cls)]
    for _ in range(_REPEATS):
        assert amber.loads(data, types=allowed) == cls(2)
    allowed[0] = (f"{cls.__module__}:KwRenamed", cls)
    with pytest.raises(amber.ClassNotAllowedError):
        amber.loads(data, types=allowed)


def test_remembered_keyword_calls_hold_no_class_or_function_alive() -> None:
    cls, custom_cls = _dataclass("KwForgotten"), _dataclass("KwForgottenCustom")

    def encode(obj: Any) -> Any:
        return obj.a

    def decode(state: Any) -> Any:
        return ("decoded", state)

    custom = amber.CustomType(custom_cls, encode, decode)
    data = amber.dumps([cls(1), custom_cls(2)], custom=[custom])
    for _ in range(_REPEATS):
        assert amber.loads(data, types=[cls], custom=[custom]) == [cls(1), ("decoded", 2)]
        assert amber.dumps([cls(1), custom_cls(2)], custom=[custom], types=[cls]) == data
    refs = [weakref.ref(o) for o in (cls, custom_cls, encode, decode, custom)]
    del cls, custom_cls, encode, decode, custom
    gc.collect()
    assert [ref() for ref in refs] == [None] * 5


def test_a_remembered_custom_table_follows_fields_set_around_the_refusal() -> None:
    # A remembered dumps keeps the table made from its CustomType items; an item whose
    # field is set anyway (object.__setattr__ goes around CustomType's refusal) is not
    # served from that table.
    cls = _dataclass("KwBypassed")
    item = amber.CustomType(cls, lambda o: o.a, lambda s: cls(s))
    custom = [item]
    for _ in range(_REPEATS):
        assert amber.dumps(cls(4), custom=custom) == amber.dumps(cls(4), custom=[item])
    state_of = [amber.CustomType(cls, lambda o: 0, lambda s: ("state", s))]
    assert amber.loads(amber.dumps(cls(4), custom=custom), custom=state_of) == ("state", 4)
    object.__setattr__(item, "encode", lambda o: o.a * 100)
    for _ in range(_REPEATS):
        data = amber.dumps(cls(4), custom=custom)
        assert amber.loads(data, custom=state_of) == ("state", 400)


def test_custom_types_made_and_dropped_call_after_call_all_die() -> None:
    # Each remembered entry is forgotten when its CustomType dies (a weak reference calls
    # back), and the class and function its table held die with it.
    refs = []
    for i in range(40):
        cls = _dataclass(f"KwChurn{i}")

        def encode(obj: Any) -> Any:
            return obj.a

        custom = [amber.CustomType(cls, encode, lambda s: s)]
        for _ in range(_REPEATS):
            amber.dumps(cls(i), custom=custom)
            amber.loads(amber.dumps(cls(i)), types=[cls])
        refs += [weakref.ref(cls), weakref.ref(encode)]
        del cls, encode, custom
    gc.collect()
    assert [ref() for ref in refs] == [None] * len(refs)


def test_a_remembered_decode_follows_a_decode_function_set_around_the_refusal() -> None:
    cls = _dataclass("KwBypassedDecode")
    item = amber.CustomType(cls, lambda o: o.a, lambda s: ("first", s))
    custom = [item]
    data = amber.dumps(cls(5), custom=custom)
    for _ in range(_REPEATS):
        assert amber.loads(data, custom=custom) == ("first", 5)
    object.__setattr__(item, "decode", lambda s: ("second", s))
    for _ in range(_REPEATS):
        assert amber.loads(data, custom=custom) == ("second", 5)


def test_threads_remembering_and_dropping_lists_each_get_their_own_classes() -> None:
    # Entries are made, matched and forgotten (items dying) by several threads at once; each
    # call must still decode with its own classes, and every class must die in the end.
    failures: list[str] = []
    refs: list[Any] = []

    def run(worker: int) -> None:
        for i in range(30):
            cls = _dataclass(f"KwThread{worker}_{i}")
            custom = [amber.CustomType(cls, lambda o: o.a, lambda s, c=cls: c(s + 1))]
            types = [cls]
            data = amber.dumps(cls(i))
            for _ in range(_REPEATS):
                if amber.loads(data, types=types) != cls(i):
                    failures.append(f"{worker}/{i}: types=")
                encoded = amber.dumps(cls(i), custom=custom)
                if amber.loads(encoded, custom=custom) != cls(i + 1):
                    failures.append(f"{worker}/{i}: custom=")
            refs.append(weakref.ref(cls))
            del cls, custom, types

    threads = [threading.Thread(target=run, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures, failures[:5]
    gc.collect()
    assert len(refs) == 120 and all(ref() is None for ref in refs)


def test_a_class_released_by_a_decoder_during_a_remembered_decode_is_refused() -> None:
    # A remembered loads holds its classes weakly (the call's list holds them). A custom
    # decoder that takes a class out of that list and drops its last reference mid-decode
    # leaves it not allowed for the rest of the decode: a clear error, at the byte of the
    # class's first instance, never a freed class.
    first, gone, holder = _dataclass("KwKept2"), _dataclass("KwGone"), _dataclass("KwHolder")
    types: list[Any] = [first, gone]
    pending: list[Any] = []

    def decode(state: Any) -> Any:
        if pending:
            types.remove(pending.pop())
            gc.collect()
        return ("held", state)

    custom = [amber.CustomType(holder, lambda o: o.a, decode)]
    data = amber.dumps([first(1), holder(0), gone(2)], custom=custom)
    for _ in range(_REPEATS):
        assert amber.loads(data, types=types, custom=custom) == [first(1), ("held", 0), gone(2)]
    released = weakref.ref(gone)
    pending.append(gone)
    del gone
    with pytest.raises(amber.ClassNotAllowedError, match="KwGone is not allowed"):
        amber.loads(data, types=types, custom=custom)
    assert released() is None


def test_remembered_calls_match_by_names_from_any_call_site_and_in_any_place() -> None:
    # A remembered call is found by its call site's own tuple of names, or else name by
    # name (`**options` makes a new tuple each call). `custom=` is read from the place it
    # had in the remembered call; a subclass of CustomType is not recorded, so every hit
    # makes its table from the call's own list, which must be the one found there. A call
    # is remembered on its second miss in a row, so each form is repeated in a row, and
    # then all are called again, served from the cache (it holds four calls a function).
    cls = _dataclass("KwPlaced")

    class Subclassed(amber.CustomType):  # type: ignore[type-arg]
        pass

    custom = [Subclassed(cls, lambda o: ["sub", o.a], lambda s: ("sub", s[1]))]
    plain = [amber.CustomType(cls, lambda o: ["plain", o.a], lambda s: ("plain", s[1]))]
    by_sub = amber.dumps(cls(5), custom=custom)
    by_plain = amber.dumps(cls(5), custom=plain)
    assert by_sub != by_plain

    def dumps_sub() -> bytes:
        return amber.dumps(cls(5), refs=True, custom=custom)

    def dumps_plain() -> bytes:
        return amber.dumps(cls(5), **{"refs": True, "custom": plain})

    def loads_sub() -> Any:
        return amber.loads(by_sub, max_depth=50, custom=custom)

    def loads_plain() -> Any:
        return amber.loads(by_sub, **{"max_depth": 50, "custom": plain})

    calls = [(dumps_sub, by_sub), (dumps_plain, by_plain)]
    calls += [(loads_sub, ("sub", 5)), (loads_plain, ("plain", 5))]
    for call, expected in calls + calls[::-1]:
        for _ in range(_REPEATS):
            assert call() == expected
    # The same names from another call site, and in the other order.
    for _ in range(_REPEATS):
        assert amber.dumps(cls(5), refs=True, custom=custom) == by_sub
        assert amber.dumps(cls(5), custom=plain, refs=True) == by_plain
    deep = amber.dumps([[[[1]]]])
    for limit in (3, 9, 3):
        for _ in range(_REPEATS):
            if limit == 3:
                with pytest.raises(amber.DecodeLimitError):
                    amber.loads(deep, max_alloc=10**6, max_depth=limit)
                with pytest.raises(amber.DecodeLimitError):
                    amber.loads(deep, **{"max_depth": limit, "max_alloc": 10**6})
            else:
                assert amber.loads(deep, max_alloc=10**6, max_depth=limit) == [[[[1]]]]
                assert amber.loads(deep, **{"max_depth": limit, "max_alloc": 10**6}) == [[[[1]]]]
