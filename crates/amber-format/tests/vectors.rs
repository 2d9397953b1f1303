//! The shared test vectors (spec/vectors/*.json), checked against the Rust reference
//! encoder and decoder; the Python tests read the same files.

use std::collections::HashMap;
use std::path::PathBuf;

use amber_format::model::{Graph, Node, NodeId};
use amber_format::stream::{self, FeedError, Gatherer, ReadOptions, StreamError};
use amber_format::trace::{Event, Info};
use amber_format::{ExtCode, Limits, ObjectKind, ShapeDef, Tag};
use serde_json::{Map, Value};

fn spec_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../spec")
}

fn load(name: &str) -> Vec<Value> {
    let path = spec_dir().join("vectors").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let doc: Value = serde_json::from_str(&text).expect("vector file is JSON");
    doc["vectors"].as_array().expect("a vectors array").clone()
}

fn hex(v: &Value) -> Vec<u8> {
    unhex(v["hex"].as_str().expect("hex string"))
}

fn unhex(text: &str) -> Vec<u8> {
    let digits: String = text.split_whitespace().collect();
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).expect("hex digits"))
        .collect()
}

/// Minimal two's complement little-endian digits of a decimal integer.
fn twos_complement(decimal: &str) -> Vec<u8> {
    let (negative, digits) = match decimal.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, decimal),
    };
    let mut magnitude: Vec<u8> = vec![0];
    for d in digits.bytes() {
        let mut carry = u32::from(d - b'0');
        for byte in magnitude.iter_mut() {
            let v = u32::from(*byte) * 10 + carry;
            *byte = v as u8;
            carry = v >> 8;
        }
        while carry > 0 {
            magnitude.push(carry as u8);
            carry >>= 8;
        }
    }
    magnitude.push(0); // room for the sign bit
    if negative {
        let mut carry = 1u16;
        for byte in magnitude.iter_mut() {
            let v = u16::from(!*byte) + carry;
            *byte = v as u8;
            carry = v >> 8;
        }
    }
    while magnitude.len() > 1 {
        let last = magnitude[magnitude.len() - 1];
        let next = magnitude[magnitude.len() - 2];
        if (last == 0 && next & 0x80 == 0) || (last == 0xFF && next & 0x80 != 0) {
            magnitude.pop();
        } else {
            break;
        }
    }
    magnitude
}

struct GraphFromNotation {
    graph: Graph,
    anchors: HashMap<String, NodeId>,
}

impl GraphFromNotation {
    fn node(&mut self, v: &Value) -> NodeId {
        let node = match v {
            Value::Null => Node::None,
            Value::Bool(b) => Node::Bool(*b),
            Value::Object(map) => {
                if let Some(name) = map.get("ref") {
                    return self.anchors[name.as_str().expect("ref name")];
                }
                if let Some(name) = map.get("anchor") {
                    let id = self.graph.add(Node::None);
                    self.anchors
                        .insert(name.as_str().expect("anchor name").to_owned(), id);
                    let built = self.node(&map["value"]);
                    self.graph.nodes[id] = self.graph.nodes[built].clone();
                    return id;
                }
                if map.contains_key("ext") {
                    self.ext(map)
                } else if map.contains_key("object") {
                    self.object(map)
                } else {
                    let (kind, body) = map.iter().next().expect("one key");
                    self.typed(kind, body)
                }
            }
            other => panic!("not a value in the notation: {other}"),
        };
        self.graph.add(node)
    }

    /// `{"ext": NAME, "blob": HEX, "python": ...}` or `{"ext": NAME, "values": [...]}`.
    fn ext(&mut self, map: &Map<String, Value>) -> Node {
        let name = map["ext"].as_str().expect("EXT code name");
        let code =
            ExtCode::from_spec_name(name).unwrap_or_else(|| panic!("unknown EXT code name {name}"));
        match (map.get("blob"), map.get("values")) {
            (Some(blob), None) => Node::Ext(code, unhex(blob.as_str().expect("blob hex"))),
            (None, Some(values)) => Node::ExtValues(code, self.children(values)),
            _ => panic!("EXT {name} needs exactly one of \"blob\" and \"values\""),
        }
    }

    /// `{"object": {"module", "qualname", "kind", "fields"?}, "values": [...]}`.
    fn object(&mut self, map: &Map<String, Value>) -> Node {
        let shape = &map["object"];
        let text = |key: &str| {
            shape[key]
                .as_str()
                .unwrap_or_else(|| panic!("object shape needs a {key} string"))
                .to_owned()
        };
        let kind_name = text("kind");
        let kind = ObjectKind::from_spec_name(&kind_name)
            .unwrap_or_else(|| panic!("unknown object kind {kind_name}"));
        let fields = match shape.get("fields") {
            Some(names) => names
                .as_array()
                .expect("field names")
                .iter()
                .map(|f| f.as_str().expect("field name").to_owned())
                .collect(),
            None => Vec::new(),
        };
        let def = ShapeDef {
            module: text("module"),
            qualname: text("qualname"),
            kind,
            fields,
        };
        Node::Object(def, self.children(&map["values"]))
    }

    fn children(&mut self, items: &Value) -> Vec<NodeId> {
        items
            .as_array()
            .expect("array")
            .iter()
            .map(|item| self.node(item))
            .collect()
    }

    fn typed(&mut self, kind: &str, body: &Value) -> Node {
        let bits = |v: &Value| u64::from_str_radix(v.as_str().expect("bits"), 16).expect("hex");
        let raw = |v: &Value| {
            let s = v.as_str().expect("hex");
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
                .collect::<Vec<u8>>()
        };
        match kind {
            "int" => {
                let text = body.as_str().expect("decimal");
                match text.parse::<i64>() {
                    Ok(v) => Node::Int(v),
                    Err(_) => Node::BigInt(twos_complement(text)),
                }
            }
            "float" => Node::Float(bits(body)),
            "complex" => Node::Complex(bits(&body[0]), bits(&body[1])),
            "str" => Node::Str(body.as_str().expect("str").to_owned()),
            "str_cp" => {
                let points: Vec<u32> = body
                    .as_array()
                    .expect("code points")
                    .iter()
                    .map(|p| p.as_u64().expect("code point") as u32)
                    .collect();
                if points.iter().any(|p| (0xD800..=0xDFFF).contains(p)) {
                    Node::StrSurrogates(points)
                } else {
                    Node::Str(
                        points
                            .iter()
                            .map(|&p| char::from_u32(p).expect("char"))
                            .collect(),
                    )
                }
            }
            "bytes" => Node::Bytes(raw(body)),
            "bytearray" => Node::ByteArray(raw(body)),
            "list" => Node::List(self.children(body)),
            "tuple" => Node::Tuple(self.children(body)),
            "set" => Node::Set(self.children(body)),
            "frozenset" => Node::FrozenSet(self.children(body)),
            "dict" => Node::Dict(
                body.as_array()
                    .expect("pairs")
                    .iter()
                    .map(|pair| (self.node(&pair[0]), self.node(&pair[1])))
                    .collect(),
            ),
            other => panic!("unknown notation kind {other}"),
        }
    }
}

fn graph_of(value: &Value) -> Graph {
    let mut builder = GraphFromNotation {
        graph: Graph::default(),
        anchors: HashMap::new(),
    };
    let root = builder.node(value);
    builder.graph.root = root;
    builder.graph
}

#[test]
fn value_vectors_encode_and_decode_exactly() {
    let vectors = load("values.json");
    assert!(vectors.len() > 50, "too few value vectors");
    let mut failures = Vec::new();
    for v in &vectors {
        let name = v["name"].as_str().unwrap_or("?");
        let expected = hex(v);
        let graph = graph_of(&v["value"]);
        let refs = v["options"]["refs"].as_bool().unwrap_or(true);
        // A decode-only vector holds a valid form the reference encoder does not write.
        let decode_only = v["decode_only"].as_bool() == Some(true);
        match graph.encode(refs) {
            Ok(bytes) if decode_only => {
                if bytes == expected {
                    failures.push(format!("{name}: marked decode-only, but encodes exactly"));
                }
            }
            Ok(bytes) if bytes == expected => {}
            Ok(bytes) => failures.push(format!(
                "{name}: encodes to {}, vector says {}",
                to_hex(&bytes),
                to_hex(&expected)
            )),
            Err(e) => failures.push(format!("{name}: encode failed: {e}")),
        }
        match Graph::decode(&expected, &Limits::default()) {
            // Without refs the bytes drop the value's sharing: what decodes is unshared and
            // so encodes to the same bytes with or without refs.
            Ok(decoded) if !refs => {
                if decoded.encode(true).as_deref() != Ok(&expected[..]) {
                    failures.push(format!("{name}: decoded copy does not re-encode the same"));
                }
            }
            Ok(decoded) => {
                if let Err(diff) = graph.same_as(&decoded) {
                    failures.push(format!("{name}: decodes differently: {diff}"));
                }
            }
            Err(e) => failures.push(format!("{name}: decode failed: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn error_vectors_fail_with_the_right_kind_and_offset() {
    let vectors = load("errors.json");
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut ext_checked = 0;
    let mut buffer_skipped = 0;
    for v in &vectors {
        if v["python_only"].as_bool() == Some(true) {
            continue;
        }
        let name = v["name"].as_str().unwrap_or("?");
        let mut limits = Limits::default();
        if let Some(depth) = v["options"]["max_depth"].as_u64() {
            limits.max_depth = depth as u32;
        }
        if let Some(alloc) = v["options"]["max_alloc"].as_u64() {
            limits.max_alloc = Some(alloc);
        }
        let want_kind = v["error"].as_str().expect("error kind");
        let want_offset = v["offset"].as_u64().expect("offset") as usize;
        let decoded = Graph::decode(&hex(v), &limits);
        // The graph has no buffers to look up (spec 5.16.6), so a vector that fails only
        // there decodes; one that fails earlier must still fail as the vector says.
        let buffer_kind = matches!(want_kind, "missing_buffer" | "buffer_mismatch");
        if buffer_kind && decoded.is_ok() {
            buffer_skipped += 1;
            continue;
        }
        checked += 1;
        if want_kind == "invalid_ext" {
            ext_checked += 1;
        }
        match decoded {
            Ok(_) => failures.push(format!("{name}: decoded, expected {want_kind}")),
            Err(e) if e.kind.name() == want_kind && e.offset == want_offset => {}
            Err(e) => failures.push(format!(
                "{name}: got {} at {} ({}), expected {want_kind} at {want_offset}",
                e.kind.name(),
                e.offset,
                e.detail
            )),
        }
    }
    let ext_vectors = vectors
        .iter()
        .filter(|v| v["error"] == "invalid_ext" && v["python_only"].as_bool() != Some(true))
        .count();
    let buffer_vectors = vectors
        .iter()
        .filter(|v| {
            matches!(
                v["error"].as_str(),
                Some("missing_buffer" | "buffer_mismatch")
            )
        })
        .count();
    eprintln!(
        "{checked} error vectors checked ({ext_checked} invalid_ext); {buffer_skipped} of \
         {buffer_vectors} buffer vectors decode without buffers"
    );
    assert!(checked > 50, "too few error vectors checked");
    // Every blob layout and composite rule is the format crate's: none may be skipped.
    assert_eq!(
        ext_checked, ext_vectors,
        "an invalid_ext vector was skipped"
    );
    assert!(ext_checked > 80, "too few invalid_ext vectors checked");
    assert!(buffer_skipped <= buffer_vectors);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The limits a vector's options ask for.
fn vector_limits(v: &Value) -> Limits {
    let mut limits = Limits::default();
    if let Some(depth) = v["options"]["max_depth"].as_u64() {
        limits.max_depth = depth as u32;
    }
    if let Some(alloc) = v["options"]["max_alloc"].as_u64() {
        limits.max_alloc = Some(alloc);
    }
    limits
}

/// Checks that the events from `index` on describe one complete value whose tag is at
/// `start`, `depth` levels deep: its children, one level deeper (two for the items of a
/// TUPLE_LIST, whose rows have no events, and then exactly rows times arity of them), follow
/// its head without gaps and end where it ends (a str, bytes or blob ends with its data
/// instead). Returns the index of the event after the value's last descendant.
fn check_tiling(
    events: &[Event<NodeId>],
    shape_widths: &[usize],
    index: usize,
    start: usize,
    depth: u32,
) -> Result<usize, String> {
    let e = events
        .get(index)
        .ok_or(format!("no event for the value at {start}"))?;
    if (e.offset, e.depth) != (start, depth) {
        return Err(format!(
            "event {index} is at {} depth {}, expected at {start} depth {depth}",
            e.offset, e.depth
        ));
    }
    let (Some(end), Some(head_end)) = (e.end, e.head_end) else {
        return Err(format!("the value at {start} is incomplete"));
    };
    if !(start < head_end && head_end <= end) {
        return Err(format!(
            "the value at {start} has its head end at {head_end}, past {end}"
        ));
    }
    let mut next = index + 1;
    if matches!(
        e.info,
        Info::Data { .. }
            | Info::Packed { .. }
            | Info::ColumnFloat { .. }
            | Info::Ext { blob: Some(_), .. }
    ) {
        return Ok(next);
    }
    let (child_depth, expected) = match e.info {
        Info::TupleList { rows, arity } => (depth + 2, Some(rows * arity)),
        Info::Records { rows, width } => (depth + 2, Some((rows + 1) * width)),
        Info::ObjectRows { rows, shape, .. } => {
            let width = shape_widths.get(shape).ok_or("an undefined shape")?;
            (depth + 2, Some(rows * width))
        }
        _ => (depth + 1, None),
    };
    let mut at = head_end;
    let mut children = 0;
    while at < end {
        let child = next;
        next = check_tiling(events, shape_widths, child, at, child_depth)?;
        at = events[child].end.unwrap_or(end);
        children += 1;
    }
    if at != end {
        return Err(format!(
            "the value at {start} ends at {end}, its children at {at}"
        ));
    }
    if expected.is_some_and(|n| n != children) {
        return Err(format!(
            "the tuple list at {start} has {children} items, not {expected:?}"
        ));
    }
    Ok(next)
}

#[test]
fn traces_decode_like_the_decoder_and_tile_the_payload() {
    let mut failures = Vec::new();
    for file in ["values.json", "errors.json"] {
        for v in &load(file) {
            let name = v["name"].as_str().unwrap_or("?");
            let data = hex(v);
            let limits = vector_limits(v);
            let trace = amber_format::trace::trace_graph(&data, &limits, usize::MAX);
            match (Graph::decode(&data, &limits), &trace.result) {
                (Ok(_), Ok(_)) => {
                    let widths: Vec<usize> = trace.shapes.iter().map(|s| s.fields.len()).collect();
                    let tiled = check_tiling(&trace.events, &widths, 0, 3, 0).and_then(|next| {
                        let root_end = trace.events[0].end;
                        if next != trace.events.len() || trace.values != next {
                            Err(format!("{} events after the root", trace.values - next))
                        } else if root_end != Some(data.len()) {
                            Err(format!(
                                "root ends at {root_end:?}, payload at {}",
                                data.len()
                            ))
                        } else {
                            Ok(())
                        }
                    });
                    if let Err(problem) = tiled {
                        failures.push(format!("{file} {name}: {problem}"));
                    }
                }
                (Err(a), Err(b)) if (a.kind, a.offset) == (b.kind, b.offset) => {}
                (plain, traced) => failures.push(format!(
                    "{file} {name}: decodes to {:?}, traced to {:?}",
                    plain.map(|_| ()),
                    traced.as_ref().map(|_| ())
                )),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The rows of the markdown tables in one section of spec/format.md whose first cell is a
/// code (`0x76`, `0x00-0x3F`, or a decimal number when `decimal` is set): (first, last, name).
fn spec_rows(heading: &str, decimal: bool) -> Vec<(u8, u8, String)> {
    let spec = std::fs::read_to_string(spec_dir().join("format.md")).expect("spec/format.md");
    let level = heading.split(' ').next().expect("a markdown heading");
    let mut inside = false;
    let mut rows = Vec::new();
    for line in spec.lines() {
        if line.starts_with('#') {
            let this_level = line.split(' ').next().unwrap_or("");
            if line.starts_with(heading) {
                inside = true;
                continue;
            }
            if inside && this_level.len() <= level.len() {
                break;
            }
        }
        if !inside {
            continue;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(code), Some(name)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        let code = code.trim_matches('`');
        let parsed = if decimal {
            code.parse::<u8>().ok().map(|c| (c, c))
        } else {
            code.strip_prefix("0x").and_then(|range| {
                let (first, last) = range.split_once("-0x").unwrap_or((range, range));
                Some((
                    u8::from_str_radix(first, 16).ok()?,
                    u8::from_str_radix(last, 16).ok()?,
                ))
            })
        };
        if let Some((first, last)) = parsed {
            rows.push((first, last, name.trim_matches('`').to_owned()));
        }
    }
    assert!(
        !rows.is_empty(),
        "no table rows under {heading:?} in spec/format.md"
    );
    rows
}

/// The EXT code table of spec section 5.16 and [`ExtCode::ALL`] list the same codes and names.
#[test]
fn spec_ext_code_table_matches_the_ext_code_enum() {
    let rows = spec_rows("### 5.16 ", false);
    let listed: Vec<(u8, &str)> = rows.iter().map(|(c, _, n)| (*c, n.as_str())).collect();
    let enumerated: Vec<(u8, &str)> = ExtCode::ALL
        .iter()
        .map(|c| (c.code(), c.spec_name()))
        .collect();
    assert_eq!(listed, enumerated);
    for (first, last, name) in &rows {
        assert_eq!(first, last, "EXT code row {name} is a range");
    }
}

/// The OBJECT kind table of spec section 5.17 and [`ObjectKind::ALL`] agree.
#[test]
fn spec_object_kind_table_matches_the_object_kind_enum() {
    let rows = spec_rows("### 5.17 ", true);
    let listed: Vec<(u8, &str)> = rows.iter().map(|(c, _, n)| (*c, n.as_str())).collect();
    let enumerated: Vec<(u8, &str)> = ObjectKind::ALL
        .iter()
        .map(|k| (*k as u8, k.spec_name()))
        .collect();
    assert_eq!(listed, enumerated);
}

/// The spec's tag table (section 4) and [`Tag::ALL`] describe the same codes with the same
/// names.
#[test]
fn spec_tag_table_matches_the_tag_enum() {
    let rows = spec_rows("## 4. ", false);
    for tag in Tag::ALL {
        assert!(
            rows.iter()
                .any(|(f, l, n)| *f == tag.code() && *l == tag.last() && n == tag.spec_name()),
            "spec has no row 0x{:02X}-0x{:02X} {}",
            tag.code(),
            tag.last(),
            tag.spec_name()
        );
    }
    for (first, last, name) in &rows {
        if name == "RESERVED" {
            for code in *first..=*last {
                assert_eq!(
                    Tag::of_byte(code),
                    None,
                    "spec reserves 0x{code:02X}, code uses it"
                );
            }
        } else {
            assert!(
                Tag::ALL.iter().any(|t| t.spec_name() == name),
                "spec row {name} has no Tag"
            );
        }
    }
}

/// What a stream reader reports for a vector of `streams.json`: the payloads it finds and the
/// error it ends with, as (kind, offset, message index).
type StreamOutcome = (Vec<Vec<u8>>, Option<(String, u64, u64)>);

fn stream_outcome(err: Option<StreamError>) -> Option<(String, u64, u64)> {
    err.map(|e| {
        let kind = e.error.kind.name().to_owned();
        (kind, e.error.offset as u64, e.message_index)
    })
}

/// The whole stream at once, as a reader that knows where its input ends.
fn stream_split(data: &[u8], options: ReadOptions) -> StreamOutcome {
    let mut found = Vec::new();
    for item in stream::payloads(data, options) {
        match item {
            Ok((_, payload)) => found.push(payload.to_vec()),
            Err(err) => return (found, stream_outcome(Some(err))),
        }
    }
    (found, None)
}

/// The stream in chunks of `step` bytes, as a reader that gets it piece by piece.
fn stream_fed(data: &[u8], step: usize, options: ReadOptions) -> StreamOutcome {
    let mut gatherer = Gatherer::new(options);
    let mut found = Vec::new();
    for chunk in data.chunks(step) {
        let fed = gatherer.feed(chunk, |_, payload, _| {
            found.push(payload.to_vec());
            Ok::<(), ()>(())
        });
        if let Err(FeedError::Stream(err)) = fed {
            return (found, stream_outcome(Some(err)));
        }
    }
    let closed = gatherer.close().err();
    (found, stream_outcome(closed))
}

#[test]
fn stream_vectors_frame_and_fail_exactly() {
    let mut failures = Vec::new();
    for v in load("streams.json") {
        let name = v["name"].as_str().expect("name");
        let data = hex(&v);
        let options = ReadOptions {
            require_end: v["options"]["require_end"].as_bool().unwrap_or(true),
            max_message: v["options"]["max_message"]
                .as_u64()
                .unwrap_or(stream::DEFAULT_MAX_MESSAGE),
        };
        let payloads: Vec<Vec<u8>> = v["payloads"]
            .as_array()
            .expect("payloads")
            .iter()
            .map(|p| unhex(p.as_str().expect("payload hex")))
            .collect();
        let payload_error = v["payload_error"].as_bool() == Some(true);
        let error = v["error"].as_str().map(|kind| {
            let number = |key: &str| v[key].as_u64().expect("offset and message_index");
            (kind.to_owned(), number("offset"), number("message_index"))
        });
        // A reader that does not decode payloads finds them all, and no payload error.
        let framing = (payloads.clone(), error.clone().filter(|_| !payload_error));
        let whole = stream_split(&data, options);
        if whole != framing {
            failures.push(format!("{name}: whole, {whole:?}, expected {framing:?}"));
        }
        for step in [1, 2, data.len().max(1)] {
            let fed = stream_fed(&data, step, options);
            if fed != framing {
                failures.push(format!("{name}: chunks of {step}, {fed:?}"));
            }
        }
        if v["framing_only"].as_bool() == Some(true) {
            continue;
        }
        // A decoding reader stops at the first payload that does not decode.
        let decoded = stream::payloads(&data, options)
            .filter_map(Result::ok)
            .find_map(|(frame, payload)| {
                Graph::decode(payload, &Limits::default())
                    .err()
                    .map(|e| frame.payload_error(e))
            });
        let got = stream_outcome(decoded);
        let want = error.filter(|_| payload_error);
        if got != want {
            failures.push(format!("{name}: decoding, {got:?}, expected {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
