//! Every function of amber's Python side that the extension calls, in one table.
//!
//! Class introspection (dataclass fields, attrs defaults, slots, enum and named-tuple
//! detection) is done in Python (`amber._classes`) once per class or shape and cached; only
//! per-instance work runs in Rust. Structured numpy dtypes go through `amber._dtypes`, and the
//! time of envelope timestamps through `amber._clock`. Naming them here, and nowhere else, lets
//! a test check that each exists (`tests/test_callbacks.py`, through `_callbacks()`), so a
//! rename on the Python side fails a test instead of a user's call.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;

/// A Python function the extension calls.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callback {
    /// `amber._classes.encoders(custom)`: the `custom=` table of an encode.
    Encoders,
    /// `amber._classes.registry(types, custom)`: the allowed classes of a decode.
    Registry,
    /// `amber._classes.encode_plan(cls)`: how instances of a class are written.
    EncodePlan,
    /// `amber._classes.default_state(obj)`: the state of an instance without a plan.
    DefaultState,
    /// `amber._classes.decode_plan(cls, kind, fields, unknown_error)`: how a shape is built.
    DecodePlan,
    /// `amber._classes.placeholder(module, qualname, kind, state)`.
    Placeholder,
    /// `amber._classes.apply_state(obj, state)`.
    ApplyState,
    /// `amber._classes.fill_defaults(obj, defaults)`.
    FillDefaults,
    /// `amber._classes.build_tuple(cls, plan, values)`: a named tuple.
    BuildTuple,
    /// `amber._classes.enum_member(cls, value)`.
    EnumMember,
    /// `amber._classes.instance_parts(obj)`: the kind, names and values of an instance
    /// written by its parts (subclasses of builtins, `__reduce__`, exceptions, references).
    InstanceParts,
    /// `amber._classes.builtin_named(key, kind)`: a builtin exception or type allowed by the
    /// spec's fixed tables, or None.
    BuiltinNamed,
    /// `amber._classes.parts_begin(cls, plan)`: an empty MUTABLE_SUBCLASS instance.
    PartsBegin,
    /// `amber._classes.parts_from_first(kind, target, plan, first)`: an instance made from
    /// its first value.
    PartsFromFirst,
    /// `amber._classes.parts_finish(kind, obj, plan, values)`: gives an instance its values.
    PartsFinish,
    /// `amber._dtypes.structured_dtype(text)`: a structured dtype from its JSON text.
    StructuredDtype,
    /// `amber._dtypes.structured_text(dtype)`: the JSON text of a structured dtype.
    StructuredText,
    /// `amber._clock.now()`: seconds since 1970, the clock used when a call passes none.
    ClockNow,
}

/// The Python modules the callbacks live in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Home {
    Classes,
    Dtypes,
    Clock,
}

impl Home {
    const fn module(self) -> &'static str {
        match self {
            Home::Classes => "amber._classes",
            Home::Dtypes => "amber._dtypes",
            Home::Clock => "amber._clock",
        }
    }

    /// The module, imported on first use and kept.
    fn get(self, py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
        static CLASSES: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
        static DTYPES: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
        static CLOCK: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
        let cell = match self {
            Home::Classes => &CLASSES,
            Home::Dtypes => &DTYPES,
            Home::Clock => &CLOCK,
        };
        let module = cell.get_or_try_init(py, || {
            PyModule::import(py, self.module()).map(Bound::unbind)
        })?;
        Ok(module.bind(py))
    }
}

impl Callback {
    /// Every callback.
    pub const ALL: [Callback; 18] = [
        Callback::Encoders,
        Callback::Registry,
        Callback::EncodePlan,
        Callback::DefaultState,
        Callback::DecodePlan,
        Callback::Placeholder,
        Callback::ApplyState,
        Callback::FillDefaults,
        Callback::BuildTuple,
        Callback::EnumMember,
        Callback::InstanceParts,
        Callback::BuiltinNamed,
        Callback::PartsBegin,
        Callback::PartsFromFirst,
        Callback::PartsFinish,
        Callback::StructuredDtype,
        Callback::StructuredText,
        Callback::ClockNow,
    ];

    const fn home(self) -> Home {
        match self {
            Callback::Encoders
            | Callback::Registry
            | Callback::EncodePlan
            | Callback::DefaultState
            | Callback::DecodePlan
            | Callback::Placeholder
            | Callback::ApplyState
            | Callback::FillDefaults
            | Callback::BuildTuple
            | Callback::EnumMember
            | Callback::InstanceParts
            | Callback::BuiltinNamed
            | Callback::PartsBegin
            | Callback::PartsFromFirst
            | Callback::PartsFinish => Home::Classes,
            Callback::StructuredDtype | Callback::StructuredText => Home::Dtypes,
            Callback::ClockNow => Home::Clock,
        }
    }

    /// The module the function is defined in.
    pub const fn module(self) -> &'static str {
        self.home().module()
    }

    /// The function's name in its module.
    pub const fn name(self) -> &'static str {
        match self {
            Callback::Encoders => "encoders",
            Callback::Registry => "registry",
            Callback::EncodePlan => "encode_plan",
            Callback::DefaultState => "default_state",
            Callback::DecodePlan => "decode_plan",
            Callback::Placeholder => "placeholder",
            Callback::ApplyState => "apply_state",
            Callback::FillDefaults => "fill_defaults",
            Callback::BuildTuple => "build_tuple",
            Callback::EnumMember => "enum_member",
            Callback::InstanceParts => "instance_parts",
            Callback::BuiltinNamed => "builtin_named",
            Callback::PartsBegin => "parts_begin",
            Callback::PartsFromFirst => "parts_from_first",
            Callback::PartsFinish => "parts_finish",
            Callback::StructuredDtype => "structured_dtype",
            Callback::StructuredText => "structured_text",
            Callback::ClockNow => "now",
        }
    }

    /// Calls the function with `args`. Its module is imported once; the function itself is
    /// looked up on each call, so that a test may replace it (the clock, in particular).
    pub fn call<'py>(
        self,
        py: Python<'py>,
        args: impl pyo3::call::PyCallArgs<'py>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.home().get(py)?.getattr(self.name())?.call1(args)
    }
}

// ALL lists every variant once, in order: a callback left out of it would escape the test.
const _: () = {
    let mut i = 0;
    while i < Callback::ALL.len() {
        assert!(Callback::ALL[i] as usize == i);
        i += 1;
    }
    assert!(Callback::ALL.len() == Callback::ClockNow as usize + 1);
};

/// _callbacks() -> list[tuple[str, str]]
///
/// The module and name of every Python function the extension calls, for the test that
/// checks each exists.
#[pyfunction]
#[pyo3(name = "_callbacks")]
pub fn callbacks() -> Vec<(&'static str, &'static str)> {
    Callback::ALL
        .iter()
        .map(|c| (c.module(), c.name()))
        .collect()
}
