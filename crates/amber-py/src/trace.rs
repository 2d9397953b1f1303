//! `_trace`: where each value of a payload sits, for `amber inspect` and `amber stats`.

use amber_format::Limits;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::with_input;
use crate::envelope::OpenConfig;
use crate::errors::decode_error;
use crate::options::{check_alloc, check_depth, class_options, int_option};
use crate::{decode, object};

/// One traced value as a Python tuple: `(offset, end, depth, tag, name, head_end, tracked,
/// info, value)`; `info` is a tuple whose first item says what the value is.
fn trace_event<'py>(
    py: Python<'py>,
    event: &amber_format::trace::Event<object::PyObj>,
    trace: &amber_format::trace::Trace<object::PyObj>,
    shapes: &[Bound<'py, PyAny>],
) -> PyResult<Bound<'py, PyAny>> {
    let field_name = |shape: usize, field: usize| {
        trace
            .shapes
            .get(shape)
            .and_then(|s| s.fields.get(field))
            .map_or("", String::as_str)
    };
    use amber_format::trace::Info;
    let kind = |name: &str| pyo3::types::PyString::intern(py, name);
    let info = match event.info {
        Info::Scalar => (kind("scalar"),).into_pyobject(py)?.into_any(),
        Info::Unknown => (kind("unknown"),).into_pyobject(py)?.into_any(),
        Info::Supersede => (kind("supersede"),).into_pyobject(py)?.into_any(),
        Info::Data { len } => (kind("data"), len).into_pyobject(py)?.into_any(),
        Info::Container { len } => (kind("container"), len).into_pyobject(py)?.into_any(),
        Info::Packed { len } => (kind("packed"), len).into_pyobject(py)?.into_any(),
        Info::TupleList { rows, arity } => (kind("tuple_list"), rows, arity)
            .into_pyobject(py)?
            .into_any(),
        Info::Records { rows, width } => {
            (kind("records"), rows, width).into_pyobject(py)?.into_any()
        }
        Info::Ext { code, blob } => (kind("ext"), kind(code.spec_name()), blob)
            .into_pyobject(py)?
            .into_any(),
        Info::ObjectRows {
            rows,
            shape,
            defines,
            columns,
        } => {
            let def = shapes.get(shape).cloned();
            let names = trace
                .float_columns
                .get(columns)
                .map(|c| c.iter().map(|&f| field_name(shape, f)).collect::<Vec<_>>())
                .unwrap_or_default();
            let names = pyo3::types::PyTuple::new(py, names)?;
            (kind("object_rows"), rows, shape, defines, def, names)
                .into_pyobject(py)?
                .into_any()
        }
        Info::ColumnFloat { shape, field } => (kind("column_float"), field_name(shape, field))
            .into_pyobject(py)?
            .into_any(),
        Info::Object { shape, defines } => {
            let def = shapes.get(shape).cloned();
            (kind("object"), shape, defines, def)
                .into_pyobject(py)?
                .into_any()
        }
        Info::Ref { target, index } => (kind("ref"), target, index).into_pyobject(py)?.into_any(),
    };
    let name = match event.info {
        // It has no tag: its event carries FLOAT64's, whose payload it is.
        Info::ColumnFloat { .. } => "column",
        _ => amber_format::Tag::of_byte(event.tag).map_or("RESERVED", |t| t.spec_name()),
    };
    let value = match &event.value {
        // SAFETY: the trace holds a strong reference; the Bound takes its own.
        Some(obj) => unsafe { Bound::from_borrowed_ptr(py, obj.as_ptr()) },
        None => py.None().into_bound(py),
    };
    let row = (
        event.offset,
        event.end,
        event.depth,
        event.tag,
        kind(name),
        event.head_end,
        event.tracked,
        info,
        value,
    );
    Ok(row.into_pyobject(py)?.into_any())
}

/// _trace(data, *, max_depth=1000, max_alloc=None, max_events=None, key=None)
///     -> (events, values, error, body)
///
/// Decodes `data` as `loads(data, placeholders=True, key=key)` does and reports where each
/// value sits in it, for `amber inspect` and `amber stats`. `events` lists the first
/// `max_events` values (all by default) in the order of their tags, each as `(offset, end,
/// depth, tag, name, head_end, tracked, info, value)`; `values` counts all of them. `error`
/// is the `DecodeError` that ended the decode (not raised), or None. `body` is the
/// decompressed body of a compressed payload (whose offsets then count from its first byte,
/// not from the start of `data`), or None.
#[pyfunction]
#[pyo3(
    name = "_trace",
    signature = (data, *, max_depth = None, max_alloc = None, max_events = None, key = None),
    text_signature = "(data, *, max_depth=1000, max_alloc=None, max_events=None, key=None)"
)]
pub(crate) fn trace<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    max_depth: Option<&Bound<'py, PyAny>>,
    max_alloc: Option<&Bound<'py, PyAny>>,
    max_events: Option<&Bound<'py, PyAny>>,
    key: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let limits = Limits {
        max_depth: check_depth(max_depth)?,
        max_alloc: check_alloc(max_alloc)?,
    };
    let max_events = match max_events.filter(|v| !v.is_none()) {
        None => usize::MAX,
        Some(v) => {
            usize::try_from(int_option("max_events", v, 0..=u64::MAX)?).unwrap_or(usize::MAX)
        }
    };
    let envelope = OpenConfig::new(key, None, None, None)?;
    let classes = class_options(py, None, None, "ignore", true)?;
    with_input(py, data, "_trace()", |slice| {
        let (trace, failure) =
            decode::trace_bytes(py, slice, &limits, &envelope, 0, &classes, max_events);
        let error = match failure {
            None => py.None().into_bound(py),
            Some(decode::DecodeFailure::Python(err)) => return Err(err),
            Some(failure) => decode_error(py, failure)
                .into_value(py)
                .into_bound(py)
                .into_any(),
        };
        let shapes = trace
            .shapes
            .iter()
            .map(|s| {
                let fields = pyo3::types::PyTuple::new(py, &s.fields)?;
                (
                    s.module.as_str(),
                    s.qualname.as_str(),
                    s.kind.spec_name(),
                    fields,
                )
                    .into_pyobject(py)
                    .map(Bound::into_any)
            })
            .collect::<PyResult<Vec<_>>>()?;
        let events = pyo3::types::PyList::empty(py);
        for event in &trace.events {
            events.append(trace_event(py, event, &trace, &shapes)?)?;
        }
        let body = trace.decompressed.as_deref().map(|b| PyBytes::new(py, b));
        Ok((events, trace.values, error, body)
            .into_pyobject(py)?
            .into_any())
    })
}
