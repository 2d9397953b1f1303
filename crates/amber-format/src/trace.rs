//! A payload's structure, value by value, as the decoder checks it: for tools that show
//! what a payload holds (`amber inspect`, `amber stats`) without re-reading the format.
//!
//! A [`Tracer`] wraps any [`Builder`]: it passes every call on to it, so the values are
//! built and the keys checked exactly as without tracing, and it records one [`Event`] per
//! value from the decoder's tracing hooks. Since the decoder makes every check, a trace of
//! bad input ends where the decoder stops, with the same error.

use crate::decode::{decode_body, Builder, PairPlace};
use crate::envelope::{open, BodyOrigin, OpenOptions};
use crate::error::{BuildError, DecodeError};
use crate::ext::{BuildAfterCode, CreateFirstCode, ExtBlob, ExtCode};
use crate::limits::Limits;
use crate::model::{GraphBuilder, NodeId};
use crate::object::ShapeDef;
use crate::tag::Tag;

/// What a value is, beyond its tag byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Info {
    /// None, a bool, an int in a tag or INT, a float or a complex: nothing beyond the object.
    Scalar,
    /// A str, bytes, bytearray or BIGINT whose last `len` bytes are its data.
    Data {
        /// Bytes of data at the end of the value.
        len: usize,
    },
    /// A list, tuple, dict, set or frozenset of `len` items (pairs, for a dict).
    Container {
        /// Declared number of items or pairs.
        len: usize,
    },
    /// A PACKED_INT_LIST or PACKED_FLOAT_LIST of `len` items. Its items have no tags, so
    /// they are not values of their own: the event's value is the whole list.
    Packed {
        /// Declared number of items.
        len: usize,
    },
    /// A TUPLE_LIST of `rows` tuples of `arity` items. Its rows have no tags, so they are not
    /// values of their own: the events after it are the rows' items, row by row, two levels
    /// deeper (the list's level and the rows').
    TupleList {
        /// Declared number of rows.
        rows: usize,
        /// Declared number of items in each row.
        arity: usize,
    },
    /// A RECORDS of `rows` dicts of `width` keys. Its rows have no tags, so they are not
    /// values of their own: the events after it are the keys, then the rows' values, row by
    /// row, two levels deeper (the list's level and the rows').
    Records {
        /// Declared number of rows.
        rows: usize,
        /// Declared number of keys of each row.
        width: usize,
    },
    /// An OBJECT_ROWS of `rows` instances of shape number `shape` (defined in its head when
    /// `defines`), `columns` of whose fields are float columns. Its rows have no tags, so they
    /// are not values of their own: the events after it are the rows' values, row by row, two
    /// levels deeper (the list's level and the instances'), a float column's as a
    /// [`Info::ColumnFloat`].
    ObjectRows {
        /// Declared number of rows.
        rows: usize,
        /// The shape number (an index into [`Trace::shapes`]).
        shape: usize,
        /// Whether the OBJECT_ROWS holds the shape's definition.
        defines: bool,
        /// Its float columns: an index into [`Trace::float_columns`].
        columns: usize,
    },
    /// A float column's value in an OBJECT_ROWS row: 8 bytes of binary64 without a tag (the
    /// event's tag is FLOAT64's, whose payload it is), the value of field `field` of shape
    /// number `shape`.
    ColumnFloat {
        /// The rows' shape number (an index into [`Trace::shapes`]).
        shape: usize,
        /// The field the column holds.
        field: usize,
    },
    /// An EXT value; `blob` is the blob's length for a blob layout, `None` for a composite.
    Ext {
        /// The EXT code.
        code: ExtCode,
        /// The blob's length, once read.
        blob: Option<usize>,
    },
    /// An OBJECT of shape number `shape`; `defines` when the shape's definition is in it.
    Object {
        /// The shape number (an index into [`Trace::shapes`]).
        shape: usize,
        /// Whether this OBJECT holds the shape's definition.
        defines: bool,
    },
    /// A REF to the value whose tag is at absolute offset `target`, entry `index` of the
    /// identity table.
    Ref {
        /// Absolute offset of the target's tag.
        target: usize,
        /// The target's entry in the identity table.
        index: usize,
    },
    /// A SUPERSEDE: its first child is decoded and dropped, its second (a REF) is its value.
    Supersede,
    /// Not known yet: the decode stopped before the value said more.
    Unknown,
}

/// One value of a payload.
#[derive(Clone, Debug, PartialEq)]
pub struct Event<O> {
    /// Absolute offset of the value's tag.
    pub offset: usize,
    /// Absolute offset just past the value; `None` when the decode failed inside it.
    pub end: Option<usize>,
    /// Nesting levels open around the value: 0 for the root.
    pub depth: u32,
    /// The tag byte.
    pub tag: u8,
    /// Absolute offset where the value's tag and length fields end: where its first child
    /// starts, or where its data starts; `None` when the decode failed before that was known.
    pub head_end: Option<usize>,
    /// The value's entry in the identity table, when its tag is TRACKED.
    pub tracked: Option<usize>,
    /// What the value is.
    pub info: Info,
    /// What the value decoded to; `None` when the decode failed inside it.
    pub value: Option<O>,
}

/// The events of a decode and how it ended.
#[derive(Debug)]
pub struct Trace<O> {
    /// The first events, in the order of the values' tags (at most the number asked for).
    pub events: Vec<Event<O>>,
    /// How many values were started in all, recorded or not.
    pub values: usize,
    /// The shape definitions, by shape number.
    pub shapes: Vec<ShapeDef>,
    /// The float columns (field indexes) of each OBJECT_ROWS, in the order of their events.
    pub float_columns: Vec<Vec<usize>>,
    /// The root value, or the decoder's error.
    pub result: Result<O, DecodeError>,
    /// The decompressed body, when the payload was compressed: the values' offsets then count
    /// from its first byte, not from the start of the input.
    pub decompressed: Option<Vec<u8>>,
}

/// A [`Builder`] that records the decoder's tracing hooks and passes every build call on to
/// `inner`.
pub struct Tracer<B: Builder> {
    inner: B,
    events: Vec<Event<B::Obj>>,
    /// Index in `events` of each value still open, innermost last (`None` once past the
    /// number of events to record).
    open: Vec<Option<usize>>,
    max_events: usize,
    values: usize,
    shapes: Vec<ShapeDef>,
    float_columns: Vec<Vec<usize>>,
    /// Where the body starts in the input: the decoder counts from the body's first byte.
    base: usize,
}

impl<B: Builder> Tracer<B> {
    /// A tracer over `inner` that records the first `max_events` values (the rest are still
    /// decoded and checked, and counted).
    pub fn new(inner: B, max_events: usize) -> Self {
        Tracer {
            inner,
            events: Vec::new(),
            open: Vec::new(),
            max_events,
            values: 0,
            shapes: Vec::new(),
            float_columns: Vec::new(),
            base: 0,
        }
    }

    /// Decodes `data` (a plain or compressed payload; a signed one needs its key and fails
    /// here) and returns the trace with the inner builder.
    pub fn run(self, data: &[u8], limits: &Limits) -> (Trace<B::Obj>, B) {
        let options = OpenOptions::unsigned(limits.alloc_budget(data.len()));
        self.run_opening(data, &options, limits.max_depth)
    }

    /// [`Tracer::run`] with the envelope options of a decode given keys (`loads(key=...)`):
    /// a signed payload is verified before any value is traced.
    pub fn run_opening(
        mut self,
        data: &[u8],
        options: &OpenOptions<'_>,
        max_depth: u32,
    ) -> (Trace<B::Obj>, B) {
        let mut decompressed = None;
        let result = open(data, options).and_then(|opened| {
            let origin = opened.origin();
            if let BodyOrigin::Input(base) = origin {
                self.base = base;
            }
            let result = decode_body(opened.body(), origin, max_depth, opened.budget(), &mut self);
            if origin == BodyOrigin::Decompressed {
                // The decompressed body is ours already: hand it over rather than copy it.
                decompressed = Some(opened.into_body().into_owned());
            }
            result
        });
        let trace = Trace {
            events: self.events,
            values: self.values,
            shapes: self.shapes,
            float_columns: self.float_columns,
            result,
            decompressed,
        };
        (trace, self.inner)
    }

    /// The innermost open value, if it is recorded.
    fn current(&mut self) -> Option<&mut Event<B::Obj>> {
        let index = self.open.last().copied().flatten()?;
        self.events.get_mut(index)
    }

    fn annotate(&mut self, info: Info) {
        if let Some(event) = self.current() {
            event.info = info;
        }
    }

    /// [`Tracer::annotate`] for a value whose head (ending at body offset `head_end`) is not
    /// followed by a child that would mark its end: a packed list's items have no tags, and a
    /// TUPLE_LIST may have no rows.
    fn annotate_head(&mut self, info: Info, head_end: usize) {
        let head_end = head_end + self.base;
        if let Some(event) = self.current() {
            event.info = info;
            event.head_end = Some(head_end);
        }
    }
}

/// Traces `data` with the host-neutral builder of [`crate::model`] and its key rules,
/// recording at most `max_events` values; the values are node numbers of a graph that is not
/// kept.
pub fn trace_graph(data: &[u8], limits: &Limits, max_events: usize) -> Trace<NodeId> {
    Tracer::new(GraphBuilder::default(), max_events)
        .run(data, limits)
        .0
}

impl<B: Builder> Builder for Tracer<B> {
    type Obj = B::Obj;
    const TRACES: bool = true;

    fn trace_start(&mut self, at: usize, tag: u8, depth: u32) {
        let at = at + self.base;
        self.values = self.values.saturating_add(1);
        // The parent's head ends where its first child starts.
        if let Some(parent) = self.current() {
            if parent.head_end.is_none() {
                parent.head_end = Some(at);
            }
        }
        let recorded = (self.events.len() < self.max_events).then(|| {
            self.events.push(Event {
                offset: at,
                end: None,
                depth,
                tag,
                head_end: None,
                tracked: None,
                info: if tag == Tag::Supersede.code() {
                    Info::Supersede
                } else {
                    Info::Unknown
                },
                value: None,
            });
            self.events.len() - 1
        });
        self.open.push(recorded);
    }

    fn trace_end(&mut self, end: usize, obj: &B::Obj) {
        let end = end + self.base;
        if let Some(event) = self.current() {
            event.end = Some(end);
            if event.head_end.is_none() {
                let data = match event.info {
                    Info::Data { len }
                    | Info::Ext {
                        blob: Some(len), ..
                    } => len,
                    _ => 0,
                };
                event.head_end = Some(end.saturating_sub(data));
            }
            // Every other kind said what it is before its end.
            if event.info == Info::Unknown {
                event.info = Info::Scalar;
            }
            event.value = Some(obj.clone());
        }
        self.open.pop();
    }

    fn trace_tracked(&mut self, index: usize) {
        if let Some(event) = self.current() {
            event.tracked = Some(index);
        }
    }

    fn trace_reference(&mut self, target: usize, index: usize) {
        let target = target + self.base;
        self.annotate(Info::Ref { target, index });
    }

    fn trace_packed(&mut self, head_end: usize, len: usize) {
        self.annotate_head(Info::Packed { len }, head_end);
    }

    fn trace_tuple_list(&mut self, head_end: usize, rows: usize, arity: usize) {
        self.annotate_head(Info::TupleList { rows, arity }, head_end);
    }

    fn trace_records(&mut self, head_end: usize, rows: usize, width: usize) {
        self.annotate_head(Info::Records { rows, width }, head_end);
    }

    fn trace_object_rows(
        &mut self,
        head_end: usize,
        rows: usize,
        shape: usize,
        defines: bool,
        columns: &[usize],
    ) {
        let info = Info::ObjectRows {
            rows,
            shape,
            defines,
            columns: self.float_columns.len(),
        };
        self.float_columns.push(columns.to_vec());
        self.annotate_head(info, head_end);
    }

    fn trace_column_float(&mut self, shape: usize, field: usize) {
        self.annotate(Info::ColumnFloat { shape, field });
    }

    fn trace_ext(&mut self, code: ExtCode) {
        self.annotate(Info::Ext { code, blob: None });
    }

    fn trace_blob(&mut self, code: ExtCode, len: usize) {
        self.annotate(Info::Ext {
            code,
            blob: Some(len),
        });
    }

    fn trace_object(&mut self, shape: usize, defines: bool) {
        self.annotate(Info::Object { shape, defines });
    }

    fn none(&mut self) -> Result<B::Obj, BuildError> {
        self.inner.none()
    }
    fn bool(&mut self, v: bool) -> Result<B::Obj, BuildError> {
        self.inner.bool(v)
    }
    fn int(&mut self, v: i64) -> Result<B::Obj, BuildError> {
        self.inner.int(v)
    }
    fn bigint(&mut self, twos_le: &[u8]) -> Result<B::Obj, BuildError> {
        self.annotate(Info::Data { len: twos_le.len() });
        self.inner.bigint(twos_le)
    }
    fn float(&mut self, v: f64) -> Result<B::Obj, BuildError> {
        self.inner.float(v)
    }
    fn complex(&mut self, re: f64, im: f64) -> Result<B::Obj, BuildError> {
        self.inner.complex(re, im)
    }
    fn str(&mut self, utf8: &[u8]) -> Result<B::Obj, BuildError> {
        self.annotate(Info::Data { len: utf8.len() });
        self.inner.str(utf8)
    }
    fn str_surrogates(&mut self, bytes: &[u8]) -> Result<B::Obj, BuildError> {
        self.annotate(Info::Data { len: bytes.len() });
        self.inner.str_surrogates(bytes)
    }
    fn bytes(&mut self, b: &[u8]) -> Result<B::Obj, BuildError> {
        self.annotate(Info::Data { len: b.len() });
        self.inner.bytes(b)
    }
    fn bytearray(&mut self, b: &[u8]) -> Result<B::Obj, BuildError> {
        self.annotate(Info::Data { len: b.len() });
        self.inner.bytearray(b)
    }
    fn list(&mut self, len: usize) -> Result<B::Obj, BuildError> {
        self.annotate(Info::Container { len });
        self.inner.list(len)
    }
    fn list_set(&mut self, list: &B::Obj, index: usize, item: B::Obj) {
        self.inner.list_set(list, index, item);
    }
    fn packed_list(&mut self, len: usize) -> Result<B::Obj, BuildError> {
        self.inner.packed_list(len)
    }
    fn packed_int(&mut self, list: &B::Obj, index: usize, v: i64) -> Result<(), BuildError> {
        self.inner.packed_int(list, index, v)
    }
    fn packed_float(&mut self, list: &B::Obj, index: usize, v: f64) -> Result<(), BuildError> {
        self.inner.packed_float(list, index, v)
    }
    fn tuple_list(&mut self, rows: usize) -> Result<B::Obj, BuildError> {
        self.inner.tuple_list(rows)
    }
    fn row(&mut self, arity: usize) -> Result<B::Obj, BuildError> {
        self.inner.row(arity)
    }
    fn records(&mut self, rows: usize) -> Result<B::Obj, BuildError> {
        self.inner.records(rows)
    }
    fn object_rows(&mut self, rows: usize) -> Result<B::Obj, BuildError> {
        self.inner.object_rows(rows)
    }
    fn schema(&mut self, width: usize) -> Result<B::Obj, BuildError> {
        self.inner.schema(width)
    }
    fn schema_insert(
        &mut self,
        schema: &B::Obj,
        key: B::Obj,
        index: usize,
        width: usize,
    ) -> Result<(), BuildError> {
        self.inner.schema_insert(schema, key, index, width)
    }
    fn record(&mut self, schema: &B::Obj, width: usize) -> Result<B::Obj, BuildError> {
        self.inner.record(schema, width)
    }
    fn record_set(
        &mut self,
        row: &B::Obj,
        index: usize,
        width: usize,
        key: &B::Obj,
        value: B::Obj,
    ) -> Result<(), BuildError> {
        self.inner.record_set(row, index, width, key, value)
    }
    fn tuple(&mut self, len: usize) -> Result<B::Obj, BuildError> {
        self.annotate(Info::Container { len });
        self.inner.tuple(len)
    }
    fn tuple_set(&mut self, tuple: &B::Obj, index: usize, item: B::Obj) {
        self.inner.tuple_set(tuple, index, item);
    }
    fn dict(&mut self, len: usize) -> Result<B::Obj, BuildError> {
        self.annotate(Info::Container { len });
        self.inner.dict(len)
    }
    fn check_key(&mut self, container: &B::Obj, key: &B::Obj) -> Result<(), BuildError> {
        self.inner.check_key(container, key)
    }
    fn dict_insert(
        &mut self,
        dict: &B::Obj,
        key: B::Obj,
        value: B::Obj,
        place: PairPlace,
    ) -> Result<(), BuildError> {
        self.inner.dict_insert(dict, key, value, place)
    }
    fn set(&mut self, len: usize, frozen: bool) -> Result<B::Obj, BuildError> {
        self.annotate(Info::Container { len });
        self.inner.set(len, frozen)
    }
    fn set_add(&mut self, set: &B::Obj, item: B::Obj) -> Result<(), BuildError> {
        self.inner.set_add(set, item)
    }
    fn ext_blob(&mut self, blob: ExtBlob<'_>, raw: &[u8]) -> Result<B::Obj, BuildError> {
        self.inner.ext_blob(blob, raw)
    }
    fn ext_begin(&mut self, code: CreateFirstCode) -> Result<B::Obj, BuildError> {
        self.inner.ext_begin(code)
    }
    fn ext_finish(
        &mut self,
        code: CreateFirstCode,
        obj: &B::Obj,
        values: Vec<B::Obj>,
    ) -> Result<(), BuildError> {
        self.inner.ext_finish(code, obj, values)
    }
    fn ext_build(
        &mut self,
        code: BuildAfterCode,
        values: Vec<B::Obj>,
    ) -> Result<B::Obj, BuildError> {
        self.inner.ext_build(code, values)
    }
    fn define_shape(&mut self, index: usize, shape: ShapeDef) -> Result<(), BuildError> {
        self.shapes.push(shape.clone());
        self.inner.define_shape(index, shape)
    }
    fn object_begin(&mut self, shape: usize) -> Result<B::Obj, BuildError> {
        self.inner.object_begin(shape)
    }
    fn object_from_first(&mut self, shape: usize, first: B::Obj) -> Result<B::Obj, BuildError> {
        self.inner.object_from_first(shape, first)
    }
    fn object_set(
        &mut self,
        obj: &B::Obj,
        shape: usize,
        index: usize,
        value: B::Obj,
    ) -> Result<(), BuildError> {
        self.inner.object_set(obj, shape, index, value)
    }
    fn object_finish(&mut self, obj: &B::Obj, shape: usize) -> Result<(), BuildError> {
        self.inner.object_finish(obj, shape)
    }
    fn object_build(&mut self, shape: usize, values: Vec<B::Obj>) -> Result<B::Obj, BuildError> {
        self.inner.object_build(shape, values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::object::ObjectKind;

    fn payload(body: &[u8]) -> Vec<u8> {
        let mut data = vec![0xAB, 0x41, 0x01];
        data.extend_from_slice(body);
        data
    }

    /// (offset, end, depth, tag, head_end, tracked, info) of each event.
    type Row = (
        usize,
        Option<usize>,
        u32,
        u8,
        Option<usize>,
        Option<usize>,
        Info,
    );

    fn rows(trace: &Trace<NodeId>) -> Vec<Row> {
        trace
            .events
            .iter()
            .map(|e| {
                (
                    e.offset, e.end, e.depth, e.tag, e.head_end, e.tracked, e.info,
                )
            })
            .collect()
    }

    #[test]
    fn shared_list_spec_example() {
        // `l = []; [l, l]` from section 5.14: list of 2, tracked empty list, REF to it.
        let trace = trace_graph(&payload(&[0x5A, 0xD8, 0x93, 0x01]), &Limits::default(), 100);
        assert!(trace.result.is_ok());
        assert_eq!(
            rows(&trace),
            vec![
                (
                    3,
                    Some(7),
                    0,
                    0x5A,
                    Some(4),
                    None,
                    Info::Container { len: 2 }
                ),
                (
                    4,
                    Some(5),
                    1,
                    0xD8,
                    Some(5),
                    Some(0),
                    Info::Container { len: 0 }
                ),
                (
                    5,
                    Some(7),
                    1,
                    0x93,
                    Some(7),
                    None,
                    Info::Ref {
                        target: 4,
                        index: 0
                    }
                ),
            ]
        );
        assert_eq!(trace.values, 3);
    }

    #[test]
    fn supersede_spec_example() {
        // `t = ([],); t[0].append(t)` from section 6.5.
        let body = [0x94, 0x5D, 0xD9, 0xDD, 0x93, 0x02, 0x93, 0x03];
        let trace = trace_graph(&payload(&body), &Limits::default(), 100);
        assert!(trace.result.is_ok());
        let ref_to = |target, index| Info::Ref { target, index };
        assert_eq!(
            rows(&trace),
            vec![
                (3, Some(11), 0, 0x94, Some(4), None, Info::Supersede),
                (
                    4,
                    Some(9),
                    1,
                    0x5D,
                    Some(5),
                    None,
                    Info::Container { len: 1 }
                ),
                (
                    5,
                    Some(9),
                    2,
                    0xD9,
                    Some(6),
                    Some(0),
                    Info::Container { len: 1 }
                ),
                (
                    6,
                    Some(9),
                    3,
                    0xDD,
                    Some(7),
                    Some(1),
                    Info::Container { len: 1 }
                ),
                (7, Some(9), 4, 0x93, Some(9), None, ref_to(5, 0)),
                (9, Some(11), 1, 0x93, Some(11), None, ref_to(6, 1)),
            ]
        );
    }

    #[test]
    fn data_and_blobs_end_with_their_bytes() {
        // ["hello", date(2024, 5, 17), 2**63]
        let body = [
            0x5B, 0x45, b'h', b'e', b'l', b'l', b'o', 0x76, 0x01, 0x04, 0xE8, 0x0F, 0x05, 0x11,
            0x6D, 0x09, 0, 0, 0, 0, 0, 0, 0, 0x80, 0,
        ];
        let trace = trace_graph(&payload(&body), &Limits::default(), 100);
        assert!(trace.result.is_ok());
        let date = Info::Ext {
            code: ExtCode::Date,
            blob: Some(4),
        };
        assert_eq!(
            rows(&trace),
            vec![
                (
                    3,
                    Some(28),
                    0,
                    0x5B,
                    Some(4),
                    None,
                    Info::Container { len: 3 }
                ),
                (4, Some(10), 1, 0x45, Some(5), None, Info::Data { len: 5 }),
                (10, Some(17), 1, 0x76, Some(13), None, date),
                (17, Some(28), 1, 0x6D, Some(19), None, Info::Data { len: 9 }),
            ]
        );
    }

    #[test]
    fn objects_name_their_shape() {
        // [Point(1, 2), Point(3, 4)], section 5.17.8: shape 0 defined by the first OBJECT.
        let mut body = vec![0x5A, 0x77, 0x00, 0x0F];
        body.extend_from_slice(b"_vector_classes");
        body.extend_from_slice(&[0x05, b'P', b'o', b'i', b'n', b't', 0x00, 0x02]);
        body.extend_from_slice(&[0x01, b'x', 0x01, b'y', 0x01, 0x02, 0x77, 0x01, 0x03, 0x04]);
        let data = payload(&body);
        let trace = trace_graph(&data, &Limits::default(), 100);
        assert!(trace.result.is_ok());
        let objects: Vec<(usize, Option<usize>, Info)> = trace
            .events
            .iter()
            .filter(|e| e.tag == 0x77)
            .map(|e| (e.offset, e.head_end, e.info))
            .collect();
        // The first OBJECT's head is 30 bytes: tag, shape number 0, the module and qualname
        // with their lengths (16 + 6), kind, field count and two 2-byte field names.
        assert_eq!(
            objects,
            vec![
                (
                    4,
                    Some(34),
                    Info::Object {
                        shape: 0,
                        defines: true
                    }
                ),
                (
                    36,
                    Some(38),
                    Info::Object {
                        shape: 0,
                        defines: false
                    }
                ),
            ]
        );
        assert_eq!(trace.shapes.len(), 1);
        assert_eq!(trace.shapes[0].qualname, "Point");
        assert_eq!(trace.shapes[0].kind, ObjectKind::Attrs);
        assert_eq!(trace.shapes[0].fields, vec!["x", "y"]);
        assert_eq!(trace.events.last().and_then(|e| e.end), Some(data.len()));
    }

    #[test]
    fn a_failed_decode_keeps_the_values_before_the_error() {
        // A list of 2: the int 1, then a 2-byte str with 1 byte left.
        let trace = trace_graph(&payload(&[0x5A, 0x01, 0x42, 0x61]), &Limits::default(), 100);
        let err = trace.result.as_ref().expect_err("truncated");
        assert_eq!((err.kind, err.offset), (ErrorKind::Truncated, 5));
        assert_eq!(
            rows(&trace),
            vec![
                (3, None, 0, 0x5A, Some(4), None, Info::Container { len: 2 }),
                (4, Some(5), 1, 0x01, Some(5), None, Info::Scalar),
                (5, None, 1, 0x42, None, None, Info::Unknown),
            ]
        );
    }

    #[test]
    fn a_packed_list_is_one_value_whose_items_are_its_data() {
        // [[64, -1, 2**63 - 1], [0.5]]: a list of 2 holding a PACKED_INT_LIST of 3 and a
        // tracked PACKED_FLOAT_LIST of 1, and no events for their items.
        let mut body = vec![0x5A, 0x78, 0x03, 0x80, 0x01, 0x01];
        body.extend_from_slice(&[0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]);
        body.extend_from_slice(&[0xF9, 0x01, 0, 0, 0, 0, 0, 0, 0xE0, 0x3F]);
        let data = payload(&body);
        let trace = trace_graph(&data, &Limits::default(), 100);
        assert!(trace.result.is_ok());
        assert_eq!(
            rows(&trace),
            vec![
                (
                    3,
                    Some(29),
                    0,
                    0x5A,
                    Some(4),
                    None,
                    Info::Container { len: 2 }
                ),
                (4, Some(19), 1, 0x78, Some(6), None, Info::Packed { len: 3 }),
                (
                    19,
                    Some(29),
                    1,
                    0xF9,
                    Some(21),
                    Some(0),
                    Info::Packed { len: 1 }
                ),
            ]
        );
        assert_eq!(trace.values, 3);
        // Cut inside the third int: the list is known, its end is not.
        let trace = trace_graph(&data[..10], &Limits::default(), 100);
        let err = trace.result.as_ref().expect_err("truncated");
        assert_eq!((err.kind, err.offset), (ErrorKind::Truncated, 9));
        assert_eq!(trace.events[1].info, Info::Packed { len: 3 });
        assert_eq!(
            (trace.events[1].head_end, trace.events[1].end),
            (Some(6), None)
        );
    }

    #[test]
    fn a_tuple_list_has_no_row_events_and_its_items_are_two_levels_deeper() {
        // [(1, "a"), (2, [])] as a TUPLE_LIST of 2 rows of 2, whose last item is a tracked
        // TUPLE_LIST of no rows of arity 5.
        let body = [0x7C, 0x02, 0x02, 0x01, 0x41, b'a', 0x02, 0xFC, 0x00, 0x05];
        let data = payload(&body);
        let trace = trace_graph(&data, &Limits::default(), 100);
        assert!(trace.result.is_ok());
        let rows_of = |rows, arity| Info::TupleList { rows, arity };
        assert_eq!(
            rows(&trace),
            vec![
                (3, Some(13), 0, 0x7C, Some(6), None, rows_of(2, 2)),
                (6, Some(7), 2, 0x01, Some(7), None, Info::Scalar),
                (7, Some(9), 2, 0x41, Some(8), None, Info::Data { len: 1 }),
                (9, Some(10), 2, 0x02, Some(10), None, Info::Scalar),
                (10, Some(13), 2, 0xFC, Some(13), Some(0), rows_of(0, 5)),
            ]
        );
        assert_eq!(trace.values, 5);
        // Cut inside the second row: the list's head is known, its end is not.
        let trace = trace_graph(&data[..10], &Limits::default(), 100);
        let err = trace.result.as_ref().expect_err("truncated");
        assert_eq!((err.kind, err.offset), (ErrorKind::Truncated, 10));
        assert_eq!(trace.events[0].info, rows_of(2, 2));
        assert_eq!(
            (trace.events[0].head_end, trace.events[0].end),
            (Some(6), None)
        );
    }

    #[test]
    fn records_have_no_row_events_and_their_keys_and_values_are_two_levels_deeper() {
        // [{"a": 1, "b": []}, {"a": 2, "b": ...}] as a RECORDS of 2 rows of 2 keys, whose last
        // value is a tracked RECORDS of no rows of 1 key.
        let body = [
            0x7B, 0x02, 0x02, 0x41, b'a', 0x41, b'b', 0x01, 0x58, 0x02, 0xFB, 0x00, 0x01, 0x41,
            b'c',
        ];
        let data = payload(&body);
        let trace = trace_graph(&data, &Limits::default(), 100);
        assert!(trace.result.is_ok(), "{:?}", trace.result);
        let records_of = |rows, width| Info::Records { rows, width };
        assert_eq!(
            rows(&trace),
            vec![
                (3, Some(18), 0, 0x7B, Some(6), None, records_of(2, 2)),
                (6, Some(8), 2, 0x41, Some(7), None, Info::Data { len: 1 }),
                (8, Some(10), 2, 0x41, Some(9), None, Info::Data { len: 1 }),
                (10, Some(11), 2, 0x01, Some(11), None, Info::Scalar),
                (
                    11,
                    Some(12),
                    2,
                    0x58,
                    Some(12),
                    None,
                    Info::Container { len: 0 }
                ),
                (12, Some(13), 2, 0x02, Some(13), None, Info::Scalar),
                (13, Some(18), 2, 0xFB, Some(16), Some(0), records_of(0, 1)),
                (16, Some(18), 4, 0x41, Some(17), None, Info::Data { len: 1 }),
            ]
        );
        assert_eq!(trace.values, 8);
        // Cut inside the second row: the list's head is known, its end is not.
        let trace = trace_graph(&data[..13], &Limits::default(), 100);
        let err = trace.result.as_ref().expect_err("truncated");
        assert_eq!((err.kind, err.offset), (ErrorKind::Truncated, 13));
        assert_eq!(trace.events[0].info, records_of(2, 2));
        assert_eq!(
            (trace.events[0].head_end, trace.events[0].end),
            (Some(6), None)
        );
    }

    #[test]
    fn events_past_the_limit_are_counted_not_kept() {
        // [1, 2, 3, 4] as a LIST: five values, two kept.
        let data = payload(&[0x71, 0x04, 0x01, 0x02, 0x03, 0x04]);
        let trace = trace_graph(&data, &Limits::default(), 2);
        assert!(trace.result.is_ok());
        assert_eq!(trace.values, 5);
        assert_eq!(trace.events.len(), 2);
        assert_eq!(trace.events[0].end, Some(data.len()));
        assert_eq!(trace.events[0].head_end, Some(5));
    }
}
