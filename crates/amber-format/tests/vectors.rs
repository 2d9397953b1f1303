//! The shared test vectors (spec/vectors/*.json), checked against the Rust reference
//! encoder and decoder; the Python tests read the same files.

use std::collections::HashMap;
use std::path::PathBuf;

use amber_format::model::{Graph, Node, NodeId};
use amber_format::{Limits, Tag};
use serde_json::Value;

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
    let digits: String = v["hex"]
        .as_str()
        .expect("hex string")
        .split_whitespace()
        .collect();
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
                let (kind, body) = map.iter().next().expect("one key");
                self.typed(kind, body)
            }
            other => panic!("not a value in the notation: {other}"),
        };
        self.graph.add(node)
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
        match graph.encode(refs) {
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
    for v in &vectors {
        if v["python_only"].as_bool() == Some(true) {
            continue;
        }
        checked += 1;
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
        match Graph::decode(&hex(v), &limits) {
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
    assert!(checked > 50, "too few error vectors checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The spec's tag table and [`Tag::ALL`] describe the same codes with the same names.
#[test]
fn spec_tag_table_matches_the_tag_enum() {
    let spec = std::fs::read_to_string(spec_dir().join("format.md")).expect("spec/format.md");
    let mut rows: Vec<(u8, u8, String)> = Vec::new();
    for line in spec.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(code), Some(name)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        let code = code.trim_matches('`');
        let Some(range) = code.strip_prefix("0x") else {
            continue;
        };
        let (first, last) = match range.split_once("-0x") {
            Some((a, b)) => (a, b),
            None => (range, range),
        };
        let (Ok(first), Ok(last)) = (u8::from_str_radix(first, 16), u8::from_str_radix(last, 16))
        else {
            continue;
        };
        rows.push((first, last, name.trim_matches('`').to_owned()));
    }
    assert!(
        !rows.is_empty(),
        "no tag table rows found in spec/format.md"
    );
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

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
