//! A host-neutral object graph: what the vectors describe, what the fuzzer decodes into, and
//! a second encoder that checks the spec's encoding rules without Python.
//!
//! Nodes live in an arena; a [`NodeId`] used in two places is one shared object.

use crate::decode::{decode, decode_body, Builder, PairPlace, STACK_RED_ZONE, STACK_SEGMENT};
use crate::encode::{ImmutableStart, RefTracker, Writer};
use crate::envelope::Opened;
use crate::error::{BuildError, DecodeError, ErrorKind};
use crate::ext::composite::{self, Int, Part};
use crate::ext::{BuildAfterCode, CompositeCode, CreateFirstCode, ExtBlob, ExtCode, ExtLayout};
use crate::limits::{Limits, DEFAULT_MAX_DEPTH};
use crate::object::{self, Creation, ObjectKind, ShapeDef, ValueClass};
use crate::tag;
use rustc_hash::{FxHashMap, FxHasher};
use std::hash::{Hash, Hasher};

/// Index of a node in a [`Graph`].
pub type NodeId = usize;

/// One object.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// An int in the i64 range.
    Int(i64),
    /// An int outside the i64 range: minimal two's complement little-endian.
    BigInt(Vec<u8>),
    /// A float, by bit pattern.
    Float(u64),
    /// A complex number, by the bit patterns of its parts.
    Complex(u64, u64),
    /// A str without surrogates.
    Str(String),
    /// A str with surrogates, as code points.
    StrSurrogates(Vec<u32>),
    /// bytes.
    Bytes(Vec<u8>),
    /// bytearray.
    ByteArray(Vec<u8>),
    /// list.
    List(Vec<NodeId>),
    /// tuple.
    Tuple(Vec<NodeId>),
    /// dict, in insertion order.
    Dict(Vec<(NodeId, NodeId)>),
    /// set, in written order.
    Set(Vec<NodeId>),
    /// frozenset, in written order.
    FrozenSet(Vec<NodeId>),
    /// An EXT atom: its code and blob bytes (whose layout the decoder checked).
    Ext(ExtCode, Vec<u8>),
    /// A composite EXT value: its code and values.
    ExtValues(ExtCode, Vec<NodeId>),
    /// A class instance: its shape and values.
    Object(ShapeDef, Vec<NodeId>),
}

/// An object graph with a root.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    /// The arena.
    pub nodes: Vec<Node>,
    /// The root object.
    pub root: NodeId,
}

impl Graph {
    /// Adds a node and returns its id.
    pub fn add(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// Decodes a payload into a graph.
    pub fn decode(data: &[u8], limits: &Limits) -> Result<Graph, DecodeError> {
        let mut builder = GraphBuilder::default();
        let root = decode(data, limits, &mut builder)?;
        Ok(Graph {
            nodes: builder.nodes,
            root,
        })
    }

    /// Decodes the body of an opened envelope into a graph.
    pub fn decode_opened(opened: &Opened<'_>, max_depth: u32) -> Result<Graph, DecodeError> {
        let mut builder = GraphBuilder::default();
        let root = decode_body(
            opened.body(),
            opened.origin(),
            max_depth,
            opened.budget(),
            &mut builder,
        )?;
        Ok(Graph {
            nodes: builder.nodes,
            root,
        })
    }

    /// Encodes the graph as the reference encoder does; `refs` false writes shared nodes
    /// every time (a cycle then fails with the path's length as the error).
    ///
    /// A list of numbers is packed when none of its items is shared (spec 5.10.1). The graph
    /// has no reference counts, but it knows exactly where each node is held: an item that
    /// one place of the graph holds is met once, so it is never written as a `REF`.
    pub fn encode(&self, refs: bool) -> Result<Vec<u8>, String> {
        let mut tracker = RefTracker::new();
        let mut writer = Writer::default();
        let holders = if refs { self.holders() } else { Vec::new() };
        loop {
            let mut pass = GraphEncoder {
                graph: self,
                writer: &mut writer,
                tracker: refs.then_some(&mut tracker),
                depth: 0,
                shapes: FxHashMap::default(),
                holders: &holders,
            };
            match pass.node(self.root) {
                Err(Pass::Restart) => {}
                Err(Pass::Failed(message)) => return Err(message),
                Ok(()) if !tracker.needs_rerun() => return Ok(writer.into_bytes()),
                Ok(()) => {}
            }
            tracker.reset(true);
            writer.reset();
        }
    }

    /// How many places of the graph reachable from the root hold each node, the root itself
    /// counting as one: every slot of every container, EXT composite and object, each of
    /// them counted once however often it is met.
    fn holders(&self) -> Vec<u32> {
        let mut held = vec![0u32; self.nodes.len()];
        let mut seen = vec![false; self.nodes.len()];
        let mut stack = vec![self.root];
        if let Some(count) = held.get_mut(self.root) {
            *count += 1;
        }
        while let Some(id) = stack.pop() {
            match seen.get_mut(id) {
                Some(visited) if !*visited => *visited = true,
                _ => continue,
            }
            let children: Vec<NodeId> = match &self.nodes[id] {
                Node::List(items)
                | Node::Tuple(items)
                | Node::Set(items)
                | Node::FrozenSet(items)
                | Node::ExtValues(_, items)
                | Node::Object(_, items) => items.clone(),
                Node::Dict(pairs) => pairs.iter().flat_map(|&(k, v)| [k, v]).collect(),
                _ => Vec::new(),
            };
            for child in children {
                if let Some(count) = held.get_mut(child) {
                    *count = count.saturating_add(1);
                    stack.push(child);
                }
            }
        }
        held
    }

    fn node(&self, id: NodeId) -> Result<&Node, String> {
        self.nodes
            .get(id)
            .ok_or_else(|| format!("node {id} does not exist"))
    }

    /// Checks that `other` is the same graph: same kinds and values at every node, same
    /// sharing (a bijection between the two graphs' trackable nodes).
    pub fn same_as(&self, other: &Graph) -> Result<(), String> {
        let mut forward: Vec<Option<NodeId>> = vec![None; self.nodes.len()];
        let mut backward: Vec<Option<NodeId>> = vec![None; other.nodes.len()];
        let mut stack = vec![(self.root, other.root, String::from("root"))];
        while let Some((a, b, path)) = stack.pop() {
            let (na, nb) = (self.node(a)?, other.node(b)?);
            if is_identity_bearing(na) {
                match (
                    forward.get(a).copied().flatten(),
                    backward.get(b).copied().flatten(),
                ) {
                    (Some(fa), _) if fa == b => continue,
                    (None, None) => {
                        forward[a] = Some(b);
                        backward[b] = Some(a);
                    }
                    _ => return Err(format!("{path}: sharing differs")),
                }
            }
            let pairs: Vec<(NodeId, NodeId, String)> = match (na, nb) {
                (Node::ExtValues(c1, x), Node::ExtValues(c2, y)) if c1 == c2 => {
                    children(&path, x, y)?
                }
                (Node::Object(s1, x), Node::Object(s2, y)) if s1 == s2 => children(&path, x, y)?,
                (Node::List(x), Node::List(y))
                | (Node::Tuple(x), Node::Tuple(y))
                | (Node::Set(x), Node::Set(y))
                | (Node::FrozenSet(x), Node::FrozenSet(y)) => {
                    if x.len() != y.len() {
                        return Err(format!("{path}: length {} != {}", x.len(), y.len()));
                    }
                    x.iter()
                        .zip(y)
                        .enumerate()
                        .map(|(i, (&p, &q))| (p, q, format!("{path}[{i}]")))
                        .collect()
                }
                (Node::Dict(x), Node::Dict(y)) => {
                    if x.len() != y.len() {
                        return Err(format!("{path}: length {} != {}", x.len(), y.len()));
                    }
                    x.iter()
                        .zip(y)
                        .enumerate()
                        .flat_map(|(i, (&(k1, v1), &(k2, v2)))| {
                            [
                                (k1, k2, format!("{path}<key {i}>")),
                                (v1, v2, format!("{path}[value {i}]")),
                            ]
                        })
                        .collect()
                }
                _ if na == nb => Vec::new(),
                _ => return Err(format!("{path}: {na:?} != {nb:?}")),
            };
            stack.extend(pairs);
        }
        Ok(())
    }
}

/// Pairs of children at the same positions, after checking the counts match.
fn children(
    path: &str,
    x: &[NodeId],
    y: &[NodeId],
) -> Result<Vec<(NodeId, NodeId, String)>, String> {
    if x.len() != y.len() {
        return Err(format!("{path}: {} values != {}", x.len(), y.len()));
    }
    Ok(x.iter()
        .zip(y)
        .enumerate()
        .map(|(i, (&p, &q))| (p, q, format!("{path}.{i}")))
        .collect())
}

/// Whether two occurrences of the node must stay one object after a round trip.
fn is_identity_bearing(node: &Node) -> bool {
    match node {
        Node::List(_) | Node::Dict(_) | Node::Set(_) | Node::ByteArray(_) => true,
        Node::ExtValues(..) | Node::Object(..) => true,
        Node::Tuple(items) | Node::FrozenSet(items) => !items.is_empty(),
        _ => false,
    }
}

/// Builds a [`Graph`] (with the host-neutral key rules of the spec), for [`Graph::decode`] and
/// [`crate::trace::trace_graph`].
#[derive(Default)]
pub(crate) struct GraphBuilder {
    nodes: Vec<Node>,
    /// Shapes defined so far in this payload.
    shapes: Vec<ShapeDef>,
    /// Memo of hashability for tuples, by node.
    hashable: Vec<Option<bool>>,
    /// Memo of [`GraphBuilder::key_hash`], by node.
    key_hashes: FxHashMap<NodeId, u64>,
    /// Keys already in each dict or set, bucketed by [`GraphBuilder::key_hash`].
    keys_seen: FxHashMap<NodeId, FxHashMap<u64, Vec<NodeId>>>,
}

impl GraphBuilder {
    fn add(&mut self, node: Node) -> Result<NodeId, BuildError> {
        self.nodes.push(node);
        self.hashable.push(None);
        Ok(self.nodes.len() - 1)
    }

    fn push_child(&mut self, parent: NodeId, child: NodeId) {
        match self.nodes.get_mut(parent) {
            Some(
                Node::List(v)
                | Node::Tuple(v)
                | Node::Set(v)
                | Node::FrozenSet(v)
                | Node::ExtValues(_, v)
                | Node::Object(_, v),
            ) => v.push(child),
            _ => debug_assert!(false, "push_child on a non-sequence"),
        }
    }

    /// A hash consistent with [`GraphBuilder::same_key`]; NaN hashes by identity.
    fn key_hash(&mut self, id: NodeId) -> u64 {
        if let Some(&h) = self.key_hashes.get(&id) {
            return h;
        }
        let mut hasher = FxHasher::default();
        let float_bits = |bits: u64| {
            let v = f64::from_bits(bits);
            if v.is_nan() {
                (u64::MAX, id)
            } else {
                ((v + 0.0).to_bits(), 0)
            }
        };
        let children: Vec<NodeId> = match self.nodes.get(id) {
            Some(Node::Tuple(items) | Node::FrozenSet(items)) => items.clone(),
            _ => Vec::new(),
        };
        match self.nodes.get(id) {
            Some(Node::Tuple(_)) => {
                1u8.hash(&mut hasher);
                for child in children {
                    self.key_hash(child).hash(&mut hasher);
                }
            }
            Some(Node::FrozenSet(_)) => {
                let sum = children
                    .into_iter()
                    .fold(0u64, |acc, c| acc.wrapping_add(self.key_hash(c)));
                (2u8, sum).hash(&mut hasher);
            }
            Some(Node::Float(bits)) => (3u8, float_bits(*bits)).hash(&mut hasher),
            Some(Node::Complex(re, im)) => {
                (4u8, float_bits(*re), float_bits(*im)).hash(&mut hasher)
            }
            Some(other) => format!("{other:?}").hash(&mut hasher),
            None => {}
        }
        let h = hasher.finish();
        self.key_hashes.insert(id, h);
        h
    }

    /// Python's equality of two hashable nodes, without its cross-kind rules (1 == 1.0 ==
    /// True), which a host-neutral decoder need not apply (see the spec on duplicates).
    fn same_key(&self, a: NodeId, b: NodeId) -> bool {
        if a == b {
            return true;
        }
        let float_eq = |x: &u64, y: &u64| f64::from_bits(*x) == f64::from_bits(*y);
        match (self.nodes.get(a), self.nodes.get(b)) {
            (Some(Node::Float(x)), Some(Node::Float(y))) => float_eq(x, y),
            (Some(Node::Complex(x1, x2)), Some(Node::Complex(y1, y2))) => {
                float_eq(x1, y1) && float_eq(x2, y2)
            }
            (Some(Node::Tuple(x)), Some(Node::Tuple(y))) => {
                x.len() == y.len() && x.iter().zip(y).all(|(&p, &q)| self.same_key(p, q))
            }
            (Some(Node::FrozenSet(x)), Some(Node::FrozenSet(y))) => {
                x.len() == y.len() && x.iter().all(|&p| y.iter().any(|&q| self.same_key(p, q)))
            }
            (Some(x), Some(y)) => x == y,
            _ => false,
        }
    }

    /// Records `key` in `container`; false if an equal key is already there.
    fn insert_key(&mut self, container: NodeId, key: NodeId) -> bool {
        let h = self.key_hash(key);
        let bucket = self
            .keys_seen
            .entry(container)
            .or_default()
            .get(&h)
            .cloned()
            .unwrap_or_default();
        if bucket.iter().any(|&other| self.same_key(other, key)) {
            return false;
        }
        self.keys_seen
            .entry(container)
            .or_default()
            .entry(h)
            .or_default()
            .push(key);
        true
    }

    /// Python's hashability, by kind: tuples are hashable when all their items are.
    fn is_hashable(&mut self, id: NodeId) -> bool {
        let mut pending = vec![id];
        while let Some(&top) = pending.last() {
            if let Some(Some(known)) = self.hashable.get(top) {
                let _ = known;
                pending.pop();
                continue;
            }
            let verdict = match self.nodes.get(top) {
                Some(Node::List(_) | Node::Dict(_) | Node::Set(_) | Node::ByteArray(_)) | None => {
                    Some(false)
                }
                Some(Node::Tuple(items)) => {
                    let unknown: Vec<NodeId> = items
                        .iter()
                        .copied()
                        .filter(|&i| matches!(self.hashable.get(i), Some(None)))
                        .collect();
                    if unknown.is_empty() {
                        Some(
                            items
                                .iter()
                                .all(|&i| self.hashable.get(i) == Some(&Some(true))),
                        )
                    } else {
                        pending.extend(unknown);
                        None
                    }
                }
                Some(_) => Some(true),
            };
            if let Some(v) = verdict {
                if let Some(slot) = self.hashable.get_mut(top) {
                    *slot = Some(v);
                }
                pending.pop();
            }
        }
        self.hashable.get(id) == Some(&Some(true))
    }
}

impl GraphBuilder {
    /// A node as the composite rules see it.
    fn part(&self, id: NodeId) -> Part<'_> {
        match self.nodes.get(id) {
            Some(Node::None) => Part::None,
            Some(Node::Int(v)) => Part::Int(Int::Small(*v)),
            Some(Node::BigInt(digits)) => Part::Int(Int::big_from_twos_le(digits)),
            Some(Node::Str(s)) => Part::Str(s),
            Some(Node::List(_)) => Part::List,
            Some(Node::Dict(pairs)) => {
                let str_key = |&(k, _): &(NodeId, NodeId)| {
                    matches!(
                        self.nodes.get(k),
                        Some(Node::Str(_) | Node::StrSurrogates(_))
                    )
                };
                if pairs.iter().all(str_key) {
                    Part::StrKeyDict
                } else {
                    Part::Dict
                }
            }
            _ => Part::Other,
        }
    }

    /// The value rules of spec 5.17.3 for value `index` of an OBJECT of `kind`.
    fn check_object_value(
        &self,
        kind: ObjectKind,
        index: usize,
        value: NodeId,
    ) -> Result<(), BuildError> {
        let class = match self.nodes.get(value).ok_or(BuildError::Host)? {
            Node::None => ValueClass::None,
            Node::Bool(_) => ValueClass::Bool,
            Node::Int(_) | Node::BigInt(_) => ValueClass::Int,
            Node::Float(_) => ValueClass::Float,
            Node::Complex(..) => ValueClass::Complex,
            Node::Str(_) | Node::StrSurrogates(_) => ValueClass::Str,
            Node::Bytes(_) => ValueClass::Bytes,
            Node::ByteArray(_) => ValueClass::ByteArray,
            Node::List(_) => ValueClass::List,
            Node::Tuple(_) => ValueClass::Tuple,
            Node::Dict(_) => ValueClass::Dict,
            Node::Set(_) => ValueClass::Set,
            Node::FrozenSet(_) => ValueClass::FrozenSet,
            Node::Ext(code, _) | Node::ExtValues(code, _) => ValueClass::Ext(*code),
            Node::Object(..) => ValueClass::Object,
        };
        object::check_value(kind, index, class)
            .map_err(|message| BuildError::Rejected(ErrorKind::BadState, message))
    }

    /// The rules of spec 5.16.4 for the values of a composite.
    fn check_composite(&self, code: CompositeCode, values: &[NodeId]) -> Result<(), BuildError> {
        let parts: Vec<Part<'_>> = values.iter().map(|&v| self.part(v)).collect();
        composite::check(code, &parts)?;
        Ok(())
    }
}

impl Builder for GraphBuilder {
    type Obj = NodeId;

    fn none(&mut self) -> Result<NodeId, BuildError> {
        self.add(Node::None)
    }
    fn bool(&mut self, v: bool) -> Result<NodeId, BuildError> {
        self.add(Node::Bool(v))
    }
    fn int(&mut self, v: i64) -> Result<NodeId, BuildError> {
        self.add(Node::Int(v))
    }
    fn bigint(&mut self, twos_le: &[u8]) -> Result<NodeId, BuildError> {
        self.add(Node::BigInt(twos_le.to_vec()))
    }
    fn float(&mut self, v: f64) -> Result<NodeId, BuildError> {
        self.add(Node::Float(v.to_bits()))
    }
    fn complex(&mut self, re: f64, im: f64) -> Result<NodeId, BuildError> {
        self.add(Node::Complex(re.to_bits(), im.to_bits()))
    }
    fn str(&mut self, utf8: &[u8]) -> Result<NodeId, BuildError> {
        let s = std::str::from_utf8(utf8).map_err(|_| BuildError::InvalidUtf8)?;
        self.add(Node::Str(s.to_owned()))
    }
    fn str_surrogates(&mut self, bytes: &[u8]) -> Result<NodeId, BuildError> {
        let points = decode_utf8_with_surrogates(bytes).ok_or(BuildError::InvalidUtf8)?;
        self.add(Node::StrSurrogates(points))
    }
    fn bytes(&mut self, b: &[u8]) -> Result<NodeId, BuildError> {
        self.add(Node::Bytes(b.to_vec()))
    }
    fn bytearray(&mut self, b: &[u8]) -> Result<NodeId, BuildError> {
        self.add(Node::ByteArray(b.to_vec()))
    }
    fn list(&mut self, len: usize) -> Result<NodeId, BuildError> {
        self.add(Node::List(Vec::with_capacity(len)))
    }
    fn list_set(&mut self, list: &NodeId, _index: usize, item: NodeId) {
        self.push_child(*list, item);
    }
    fn tuple(&mut self, len: usize) -> Result<NodeId, BuildError> {
        self.add(Node::Tuple(Vec::with_capacity(len)))
    }
    fn tuple_set(&mut self, tuple: &NodeId, _index: usize, item: NodeId) {
        self.push_child(*tuple, item);
    }
    fn dict(&mut self, len: usize) -> Result<NodeId, BuildError> {
        self.add(Node::Dict(Vec::with_capacity(len)))
    }
    fn check_key(&mut self, _container: &NodeId, key: &NodeId) -> Result<(), BuildError> {
        if self.is_hashable(*key) {
            Ok(())
        } else {
            Err(BuildError::Unhashable)
        }
    }
    fn dict_insert(
        &mut self,
        dict: &NodeId,
        key: NodeId,
        value: NodeId,
        _place: PairPlace,
    ) -> Result<(), BuildError> {
        if !self.insert_key(*dict, key) {
            return Err(BuildError::Duplicate);
        }
        if let Some(Node::Dict(pairs)) = self.nodes.get_mut(*dict) {
            pairs.push((key, value));
        }
        Ok(())
    }
    fn set(&mut self, len: usize, frozen: bool) -> Result<NodeId, BuildError> {
        let items = Vec::with_capacity(len);
        self.add(if frozen {
            Node::FrozenSet(items)
        } else {
            Node::Set(items)
        })
    }
    fn set_add(&mut self, set: &NodeId, item: NodeId) -> Result<(), BuildError> {
        if !self.insert_key(*set, item) {
            return Err(BuildError::Duplicate);
        }
        self.push_child(*set, item);
        Ok(())
    }
    fn ext_blob(&mut self, blob: ExtBlob<'_>, raw: &[u8]) -> Result<NodeId, BuildError> {
        // The graph keeps the bytes: it has no host checks to make, and writing them back
        // as they came is what the value vectors' encoding check needs.
        self.add(Node::Ext(blob.code(), raw.to_vec()))
    }
    fn ext_begin(&mut self, code: CreateFirstCode) -> Result<NodeId, BuildError> {
        self.add(Node::ExtValues(code.code(), Vec::new()))
    }
    fn ext_finish(
        &mut self,
        code: CreateFirstCode,
        obj: &NodeId,
        values: Vec<NodeId>,
    ) -> Result<(), BuildError> {
        self.check_composite(code.composite(), &values)?;
        for v in values {
            self.push_child(*obj, v);
        }
        Ok(())
    }
    fn ext_build(
        &mut self,
        code: BuildAfterCode,
        values: Vec<NodeId>,
    ) -> Result<NodeId, BuildError> {
        self.check_composite(code.composite(), &values)?;
        self.add(Node::ExtValues(code.code(), values))
    }
    fn define_shape(&mut self, index: usize, shape: ShapeDef) -> Result<(), BuildError> {
        debug_assert_eq!(index, self.shapes.len());
        self.shapes.push(shape);
        Ok(())
    }
    fn object_begin(&mut self, shape: usize) -> Result<NodeId, BuildError> {
        let def = self.shapes.get(shape).cloned().ok_or(BuildError::Host)?;
        self.add(Node::Object(def, Vec::new()))
    }
    fn object_from_first(&mut self, shape: usize, first: NodeId) -> Result<NodeId, BuildError> {
        let def = self.shapes.get(shape).cloned().ok_or(BuildError::Host)?;
        self.check_object_value(def.kind, 0, first)?;
        self.add(Node::Object(def, vec![first]))
    }
    fn object_set(
        &mut self,
        obj: &NodeId,
        shape: usize,
        index: usize,
        value: NodeId,
    ) -> Result<(), BuildError> {
        let kind = self.shapes.get(shape).ok_or(BuildError::Host)?.kind;
        self.check_object_value(kind, index, value)?;
        self.push_child(*obj, value);
        Ok(())
    }
    fn object_finish(&mut self, _obj: &NodeId, _shape: usize) -> Result<(), BuildError> {
        Ok(())
    }
    fn object_build(&mut self, shape: usize, values: Vec<NodeId>) -> Result<NodeId, BuildError> {
        let def = self.shapes.get(shape).cloned().ok_or(BuildError::Host)?;
        for (index, &value) in values.iter().enumerate() {
            self.check_object_value(def.kind, index, value)?;
        }
        self.add(Node::Object(def, values))
    }
}

/// Decodes UTF-8 in which surrogate code points (U+D800-U+DFFF) may also appear as 3-byte
/// sequences, as Python's `surrogatepass` does. `None` if the bytes are not of that form.
pub fn decode_utf8_with_surrogates(bytes: &[u8]) -> Option<Vec<u32>> {
    let mut out = Vec::with_capacity(bytes.len());
    crate::utf8::walk_with_surrogates(bytes, |point| out.push(point)).then_some(out)
}

/// Encodes code points (surrogates allowed) the way `decode_utf8_with_surrogates` reads them.
pub fn encode_utf8_with_surrogates(points: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(points.len());
    for &cp in points {
        match cp {
            0..=0x7F => out.push(cp as u8),
            0x80..=0x7FF => out.extend([0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]),
            0x800..=0xFFFF => out.extend([
                0xE0 | (cp >> 12) as u8,
                0x80 | ((cp >> 6) & 0x3F) as u8,
                0x80 | (cp & 0x3F) as u8,
            ]),
            _ => out.extend([
                0xF0 | (cp >> 18) as u8,
                0x80 | ((cp >> 12) & 0x3F) as u8,
                0x80 | ((cp >> 6) & 0x3F) as u8,
                0x80 | (cp & 0x3F) as u8,
            ]),
        }
    }
    out
}

/// Why an encoding pass stopped early.
enum Pass {
    /// A cycle through an immutable was found: encode again.
    Restart,
    /// The graph cannot be encoded.
    Failed(String),
}

impl From<String> for Pass {
    fn from(message: String) -> Self {
        Pass::Failed(message)
    }
}

struct GraphEncoder<'g, 'w> {
    graph: &'g Graph,
    writer: &'w mut Writer,
    tracker: Option<&'w mut RefTracker>,
    depth: u32,
    /// Shapes written so far in this pass, with their numbers.
    shapes: FxHashMap<&'g ShapeDef, usize>,
    /// [`Graph::holders`], when refs are on.
    holders: &'w [u32],
}

/// The packed form a list takes.
enum Packing {
    Ints,
    Floats,
}

impl GraphEncoder<'_, '_> {
    fn node(&mut self, id: NodeId) -> Result<(), Pass> {
        let graph = self.graph;
        let node = graph.node(id)?;
        let trackable = match node {
            Node::None | Node::Bool(_) => false,
            Node::Int(v) => !Writer::is_small_int(*v) && !(-5..=256).contains(v),
            Node::Str(s) => !s.is_empty(),
            Node::Bytes(b) => !b.is_empty(),
            Node::Tuple(items) => !items.is_empty(),
            _ => true,
        };
        let immutable_container = match node {
            Node::Tuple(_) | Node::FrozenSet(_) => true,
            Node::ExtValues(code, _) => matches!(code.layout(), ExtLayout::BuildAfter(_)),
            Node::Object(shape, _) => !shape.kind.creates_first(),
            _ => false,
        };
        let mut token = None;
        if let (true, Some(tracker)) = (trackable, self.tracker.as_deref_mut()) {
            if immutable_container {
                match tracker.begin_immutable(id, self.writer) {
                    ImmutableStart::Ref(offset) => {
                        self.writer.reference(offset);
                        return Ok(());
                    }
                    ImmutableStart::Write(t) => token = Some(t),
                    ImmutableStart::Restart => return Err(Pass::Restart),
                }
            } else if let Some(offset) = tracker.seen_or_record(id, self.writer.body_pos()) {
                self.writer.reference(offset);
                return Ok(());
            }
        }
        match node {
            Node::None => self.writer.none(),
            Node::Bool(v) => self.writer.bool(*v),
            Node::Int(v) => self.writer.int(*v),
            Node::BigInt(digits) => self.writer.bigint(digits),
            Node::Float(bits) => self.writer.float(f64::from_bits(*bits)),
            Node::Complex(re, im) => self
                .writer
                .complex(f64::from_bits(*re), f64::from_bits(*im)),
            Node::Str(s) => self.writer.str(s.as_bytes()),
            Node::StrSurrogates(points) => self
                .writer
                .str_surrogates(&encode_utf8_with_surrogates(points)),
            Node::Bytes(b) => self.writer.bytes(b),
            Node::ByteArray(b) => self.writer.bytearray(b),
            Node::List(items) if self.packing(items).is_some() => {
                self.enter()?;
                self.packed(items);
                self.depth -= 1;
            }
            Node::List(items) if self.row_arity(items).is_some() => self.rows(items)?,
            Node::List(items) if self.records_width(items).is_some() => self.records(items)?,
            Node::List(items) if self.rows_shape(items).is_some() => self.object_rows(items)?,
            Node::List(items) | Node::Tuple(items) | Node::Set(items) | Node::FrozenSet(items) => {
                self.enter()?;
                match node {
                    Node::List(_) => self.writer.list_header(items.len()),
                    Node::Tuple(_) => self.writer.tuple_header(items.len()),
                    Node::Set(_) => self.writer.set_header(items.len(), false),
                    _ => self.writer.set_header(items.len(), true),
                }
                for &item in items {
                    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || self.node(item))?;
                }
                self.depth -= 1;
            }
            Node::Ext(code, blob) => self.writer.ext_blob(*code, blob),
            Node::ExtValues(code, values) => {
                let expected = code.layout().values();
                if values.len() != expected {
                    return Err(Pass::Failed(format!(
                        "{} needs {expected} values, not {}",
                        code.spec_name(),
                        values.len()
                    )));
                }
                self.enter()?;
                self.writer.ext_header(*code);
                self.children(values)?;
                self.depth -= 1;
            }
            Node::Object(shape, values) => {
                if values.len() != shape.kind.value_count(shape.fields.len()) {
                    return Err(Pass::Failed(format!(
                        "{}.{} has {} values for its shape",
                        shape.module,
                        shape.qualname,
                        values.len()
                    )));
                }
                self.enter()?;
                match self.shapes.get(shape) {
                    Some(&number) => self.writer.object_of_shape(number),
                    None => {
                        let number = self.shapes.len();
                        self.shapes.insert(shape, number);
                        self.writer.object_defining(shape);
                    }
                }
                match (shape.kind.creation(), &token, values.split_first()) {
                    (Creation::FromFirstValue, Some(t), Some((&first, rest))) => {
                        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || self.node(first))?;
                        if let Some(tracker) = self.tracker.as_deref_mut() {
                            tracker.first_value_complete(id, t);
                        }
                        self.children(rest)?;
                    }
                    _ => self.children(values)?,
                }
                self.depth -= 1;
            }
            Node::Dict(pairs) => {
                self.enter()?;
                self.writer.dict_header(pairs.len());
                for &(k, v) in pairs {
                    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
                        self.node(k)?;
                        self.node(v)
                    })?;
                }
                self.depth -= 1;
            }
        }
        if let (Some(t), Some(tracker)) = (token, self.tracker.as_deref_mut()) {
            tracker.end_immutable(id, t, self.writer);
        }
        Ok(())
    }

    /// Whether the items of a list qualify for a packed form (spec 5.10.1), and which: at
    /// least [`tag::PACKED_MIN`] of them, all ints or all floats (few of them float32-exact),
    /// none of them shared.
    fn packing(&self, items: &[NodeId]) -> Option<Packing> {
        if items.len() < tag::PACKED_MIN {
            return None;
        }
        let nodes = &self.graph.nodes;
        let unshared = |id: NodeId| self.unshared(id);
        match nodes.get(*items.first()?)? {
            Node::Int(_) => items
                .iter()
                .all(|&id| match nodes.get(id) {
                    Some(Node::Int(v)) => Writer::is_inline_int(*v) || unshared(id),
                    _ => false,
                })
                .then_some(Packing::Ints),
            Node::Float(_) => {
                let mut exact = 0;
                for &id in items {
                    match nodes.get(id) {
                        Some(Node::Float(bits)) if unshared(id) => {
                            exact += usize::from(Writer::is_float32_exact(f64::from_bits(*bits)));
                        }
                        _ => return None,
                    }
                }
                Writer::packs_floats(items.len(), exact).then_some(Packing::Floats)
            }
            _ => None,
        }
    }

    /// Whether the memo can never write `id` as a REF (spec 5.10.1, rule 3): refs are off
    /// (nothing is memoized), or one place of the graph holds it, so it is met once.
    fn unshared(&self, id: NodeId) -> bool {
        self.tracker.is_none() || self.holders.get(id).copied() == Some(1)
    }

    /// The arity of a list written as TUPLE_LIST (spec 5.11.1): at least
    /// [`tag::TUPLE_LIST_MIN`] items, all tuples of one length of at least 1, none of them
    /// shared. (A packed list's items are numbers, so the two rules never both apply.)
    fn row_arity(&self, items: &[NodeId]) -> Option<usize> {
        if items.len() < tag::TUPLE_LIST_MIN {
            return None;
        }
        let nodes = &self.graph.nodes;
        let arity = match nodes.get(*items.first()?)? {
            Node::Tuple(first) if !first.is_empty() => first.len(),
            _ => return None,
        };
        items
            .iter()
            .all(|&id| {
                matches!(nodes.get(id), Some(Node::Tuple(row)) if row.len() == arity)
                    && self.unshared(id)
            })
            .then_some(arity)
    }

    /// Writes a list that [`GraphEncoder::row_arity`] accepted: its level and its rows'
    /// level, the header, then each row's items as ordinary values. The rows themselves
    /// never enter the memo: each is met once, here.
    fn rows(&mut self, items: &[NodeId]) -> Result<(), Pass> {
        let graph = self.graph;
        let Some(arity) = self.row_arity(items) else {
            return Ok(());
        };
        self.enter()?;
        self.enter()?;
        self.writer.tuple_list_header(items.len(), arity);
        for &row in items {
            if let Ok(Node::Tuple(values)) = graph.node(row) {
                self.children(values)?;
            }
        }
        self.depth -= 2;
        Ok(())
    }

    /// The width of a list written as RECORDS (spec 5.12.1): at least [`tag::RECORDS_MIN`]
    /// items, all dicts of one length of at least [`tag::RECORDS_MIN_WIDTH`] whose keys are
    /// the same str nodes in the same order, none of the dicts shared.
    fn records_width(&self, items: &[NodeId]) -> Option<usize> {
        if items.len() < tag::RECORDS_MIN {
            return None;
        }
        let nodes = &self.graph.nodes;
        let Node::Dict(first) = nodes.get(*items.first()?)? else {
            return None;
        };
        let str_keys = first
            .iter()
            .all(|&(key, _)| matches!(nodes.get(key), Some(Node::Str(_) | Node::StrSurrogates(_))));
        if first.len() < tag::RECORDS_MIN_WIDTH || !str_keys {
            return None;
        }
        let same_keys = |pairs: &[(NodeId, NodeId)]| {
            pairs.len() == first.len() && pairs.iter().zip(first).all(|(a, b)| a.0 == b.0)
        };
        items
            .iter()
            .all(|&id| {
                matches!(nodes.get(id), Some(Node::Dict(pairs)) if same_keys(pairs))
                    && self.unshared(id)
            })
            .then_some(first.len())
    }

    /// Writes a list that [`GraphEncoder::records_width`] accepted: its level and its rows'
    /// level, the header, the first dict's keys, then each dict's values as ordinary values.
    /// The dicts themselves never enter the memo: each is met once, here.
    fn records(&mut self, items: &[NodeId]) -> Result<(), Pass> {
        let graph = self.graph;
        let Some(width) = self.records_width(items) else {
            return Ok(());
        };
        self.enter()?;
        self.enter()?;
        self.writer.records_header(items.len(), width);
        if let Some(Ok(Node::Dict(first))) = items.first().map(|&id| graph.node(id)) {
            let keys: Vec<NodeId> = first.iter().map(|&(key, _)| key).collect();
            self.children(&keys)?;
        }
        for &row in items {
            if let Ok(Node::Dict(pairs)) = graph.node(row) {
                let values: Vec<NodeId> = pairs.iter().map(|&(_, value)| value).collect();
                self.children(&values)?;
            }
        }
        self.depth -= 2;
        Ok(())
    }

    /// The shape of a list written as OBJECT_ROWS (spec 5.17.9): at least
    /// [`tag::OBJECT_ROWS_MIN`] items, all OBJECTs of one ATTRS shape with at least one field,
    /// none of them shared.
    fn rows_shape(&self, items: &[NodeId]) -> Option<&'_ ShapeDef> {
        if items.len() < tag::OBJECT_ROWS_MIN {
            return None;
        }
        let nodes = &self.graph.nodes;
        let Node::Object(first, _) = nodes.get(*items.first()?)? else {
            return None;
        };
        if first.kind != ObjectKind::Attrs || first.fields.is_empty() {
            return None;
        }
        items
            .iter()
            .all(|&id| {
                matches!(nodes.get(id), Some(Node::Object(shape, _)) if shape == first)
                    && self.unshared(id)
            })
            .then_some(first)
    }

    /// The float columns of rows that [`GraphEncoder::rows_shape`] accepted: the fields whose
    /// first value is a float FLOAT32 cannot hold, and every value an unshared float.
    fn float_columns(&self, items: &[NodeId], width: usize) -> Vec<usize> {
        let nodes = &self.graph.nodes;
        let float_at = |row: NodeId, field: usize| {
            let Some(Node::Object(_, values)) = nodes.get(row) else {
                return None;
            };
            let id = *values.get(field)?;
            match nodes.get(id) {
                Some(Node::Float(bits)) if self.unshared(id) => Some(f64::from_bits(*bits)),
                _ => None,
            }
        };
        (0..width)
            .filter(|&field| {
                let first = items.first().and_then(|&row| float_at(row, field));
                first.is_some_and(|v| !Writer::is_float32_exact(v))
                    && items.iter().all(|&row| float_at(row, field).is_some())
            })
            .collect()
    }

    /// Writes a list that [`GraphEncoder::rows_shape`] accepted: its level and its rows'
    /// level, the header, the shape (defined here if it is new), the float columns, then each
    /// instance's values, a float column's as its 8 bytes. The instances never enter the
    /// memo: each is met once, here.
    fn object_rows(&mut self, items: &[NodeId]) -> Result<(), Pass> {
        let graph = self.graph;
        if self.rows_shape(items).is_none() {
            return Ok(());
        }
        let Some(Ok(Node::Object(shape, _))) = items.first().map(|&id| graph.node(id)) else {
            return Ok(());
        };
        let width = shape.fields.len();
        let columns = self.float_columns(items, width);
        self.enter()?;
        self.enter()?;
        self.writer.object_rows_header(items.len());
        match self.shapes.get(shape) {
            Some(&number) => self.writer.shape_reference(number),
            None => {
                let number = self.shapes.len();
                self.shapes.insert(shape, number);
                self.writer.shape_definition(shape);
            }
        }
        self.writer.float_columns(&columns);
        for &row in items {
            let Ok(Node::Object(_, values)) = graph.node(row) else {
                continue;
            };
            if values.len() != width {
                return Err(Pass::Failed(format!(
                    "{}.{} has {} values for its shape",
                    shape.module,
                    shape.qualname,
                    values.len()
                )));
            }
            for (field, &value) in values.iter().enumerate() {
                match graph.node(value) {
                    Ok(Node::Float(bits)) if columns.contains(&field) => {
                        self.writer.column_float(f64::from_bits(*bits));
                    }
                    _ => self.children(&[value])?,
                }
            }
        }
        self.depth -= 2;
        Ok(())
    }

    /// Writes a list that [`GraphEncoder::packing`] accepted (and writes nothing otherwise).
    fn packed(&mut self, items: &[NodeId]) {
        let nodes = &self.graph.nodes;
        match self.packing(items) {
            Some(Packing::Ints) => {
                self.writer.packed_int_list_header(items.len());
                for &id in items {
                    if let Some(Node::Int(v)) = nodes.get(id) {
                        self.writer.packed_int(*v);
                    }
                }
            }
            Some(Packing::Floats) => {
                self.writer.packed_float_list_header(items.len());
                for &id in items {
                    if let Some(Node::Float(bits)) = nodes.get(id) {
                        self.writer.packed_float(f64::from_bits(*bits));
                    }
                }
            }
            None => {}
        }
    }

    fn children(&mut self, values: &[NodeId]) -> Result<(), Pass> {
        for &value in values {
            stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || self.node(value))?;
        }
        Ok(())
    }

    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > DEFAULT_MAX_DEPTH {
            return Err(format!(
                "nesting deeper than {DEFAULT_MAX_DEPTH} (or a cycle with refs off)"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tag::Tag;

    #[test]
    fn tuple_cycle_is_wrapped_in_supersede() {
        // t = ([],); t[0].append(t)
        let mut g = Graph::default();
        let list = g.add(Node::List(Vec::new()));
        let tuple = g.add(Node::Tuple(vec![list]));
        g.nodes[list] = Node::List(vec![tuple]);
        g.root = tuple;
        let bytes = g.encode(true).unwrap();
        assert_eq!(
            bytes,
            [0xAB, 0x41, 0x01, 0x94, 0x5D, 0xD9, 0xDD, 0x93, 0x02, 0x93, 0x03]
        );
        let back = Graph::decode(&bytes, &Limits::default()).unwrap();
        g.same_as(&back).unwrap();
    }

    #[test]
    fn doubly_reentered_tuple_round_trips() {
        // x = (m0, m1) with m0 = [x], m1 = [x]: x is re-entered at two levels.
        let mut g = Graph::default();
        let m0 = g.add(Node::List(Vec::new()));
        let m1 = g.add(Node::List(Vec::new()));
        let x = g.add(Node::Tuple(vec![m0, m1]));
        g.nodes[m0] = Node::List(vec![x]);
        g.nodes[m1] = Node::List(vec![x]);
        g.root = x;
        let bytes = g.encode(true).unwrap();
        let back = Graph::decode(&bytes, &Limits::default()).unwrap();
        g.same_as(&back).unwrap();
        assert_eq!(back.encode(true).unwrap(), bytes);
    }

    fn shape(kind: crate::object::ObjectKind, fields: &[&str]) -> ShapeDef {
        ShapeDef {
            module: "app.models".into(),
            qualname: "Node".into(),
            kind,
            fields: fields.iter().map(|f| f.to_string()).collect(),
        }
    }

    #[test]
    fn objects_share_one_shape_and_may_contain_themselves() {
        use crate::object::ObjectKind;
        let mut g = Graph::default();
        let date = g.add(Node::Ext(ExtCode::Date, vec![0xE8, 0x0F, 1, 31]));
        let a = g.add(Node::Object(
            shape(ObjectKind::Attrs, &["me", "day"]),
            vec![],
        ));
        let b = g.add(Node::Object(
            shape(ObjectKind::Attrs, &["me", "day"]),
            vec![a, date],
        ));
        g.nodes[a] = Node::Object(shape(ObjectKind::Attrs, &["me", "day"]), vec![a, date]);
        let list = g.add(Node::List(vec![a, b]));
        g.root = list;
        let bytes = g.encode(true).unwrap();
        // The shape is defined once: one module name in the output.
        let module = b"app.models";
        let count = bytes.windows(module.len()).filter(|w| w == module).count();
        assert_eq!(count, 1);
        let back = Graph::decode(&bytes, &Limits::default()).unwrap();
        g.same_as(&back).unwrap();
        assert_eq!(back.encode(true).unwrap(), bytes);
    }

    #[test]
    fn build_after_values_in_a_cycle_use_supersede() {
        use crate::object::ObjectKind;
        // A custom-type instance whose state list contains the instance itself.
        let mut g = Graph::default();
        let list = g.add(Node::List(Vec::new()));
        let obj = g.add(Node::Object(shape(ObjectKind::Custom, &[]), vec![list]));
        g.nodes[list] = Node::List(vec![obj]);
        g.root = obj;
        let bytes = g.encode(true).unwrap();
        assert_eq!(bytes[3], Tag::Supersede.code());
        let back = Graph::decode(&bytes, &Limits::default()).unwrap();
        g.same_as(&back).unwrap();
        let slice = g.add(Node::ExtValues(ExtCode::Slice, vec![list, list, list]));
        g.root = slice;
        let back = Graph::decode(&g.encode(true).unwrap(), &Limits::default()).unwrap();
        g.same_as(&back).unwrap();
    }

    #[test]
    fn numbers_held_once_are_packed() {
        let mut g = Graph::default();
        let items: Vec<NodeId> = [0.1f64, 0.2, 0.3, 0.4]
            .iter()
            .map(|v| g.add(Node::Float(v.to_bits())))
            .collect();
        let list = g.add(Node::List(items.clone()));
        g.root = g.add(Node::List(vec![list]));
        let packed = g.encode(true).unwrap();
        assert_eq!(packed[4], Tag::PackedFloatList.code());
        // A holder outside the graph reachable from the root does not count.
        g.add(Node::List(vec![items[0]]));
        assert_eq!(g.encode(true).unwrap(), packed);
        // A second holder in the graph does: the item is written once, then as a REF.
        g.root = g.add(Node::List(vec![list, items[0]]));
        let unpacked = g.encode(true).unwrap();
        assert_eq!(unpacked[4], Tag::List.code());
        g.same_as(&Graph::decode(&unpacked, &Limits::default()).unwrap())
            .unwrap();
        // Without refs nothing is shared.
        assert_eq!(g.encode(false).unwrap()[4], Tag::PackedFloatList.code());
    }

    #[test]
    fn lists_of_tuples_held_once_are_written_as_rows() {
        let mut g = Graph::default();
        let word = g.add(Node::Str("shared".into()));
        let rows: Vec<NodeId> = (0..4)
            .map(|i| {
                let n = g.add(Node::Int(i));
                g.add(Node::Tuple(vec![word, n]))
            })
            .collect();
        let list = g.add(Node::List(rows.clone()));
        g.root = list;
        let bytes = g.encode(true).unwrap();
        assert_eq!(bytes[3..6], [Tag::TupleList.code(), 4, 2]);
        // The rows' items go through the memo: the str is tracked, then referred to.
        assert_eq!(bytes[6], (Tag::ShortStr.code() + 6) | crate::tag::TRACKED);
        assert_eq!(bytes[14..17], [Tag::Ref.code(), 3, 1]);
        g.same_as(&Graph::decode(&bytes, &Limits::default()).unwrap())
            .unwrap();
        // A row held twice in the graph keeps the list a LIST of tuples.
        g.root = g.add(Node::List(vec![list, rows[2]]));
        let plain = g.encode(true).unwrap();
        assert_eq!(plain[4], Tag::List.code());
        g.same_as(&Graph::decode(&plain, &Limits::default()).unwrap())
            .unwrap();
        // Without refs nothing is shared.
        assert_eq!(g.encode(false).unwrap()[4], Tag::TupleList.code());
        // Three rows, rows of two lengths, and empty rows stay a LIST.
        let empty = g.add(Node::Tuple(Vec::new()));
        let short = g.add(Node::Tuple(vec![word]));
        for items in [
            rows[..3].to_vec(),
            vec![rows[0], rows[1], short, rows[3]],
            vec![empty, empty, empty, empty],
        ] {
            g.root = g.add(Node::List(items));
            let tag = g.encode(true).unwrap()[3];
            assert!(tag == Tag::List.code() || tag == Tag::ShortList.code() + 3);
        }
    }

    #[test]
    fn refs_off_reports_a_cycle() {
        let mut g = Graph::default();
        let list = g.add(Node::List(Vec::new()));
        g.nodes[list] = Node::List(vec![list]);
        assert!(g.encode(false).is_err());
        assert!(g.encode(true).is_ok());
    }

    #[test]
    fn surrogate_utf8_round_trips() {
        let points = vec![0x61, 0xD800, 0x62, 0xDFFF, 0x1F600];
        let bytes = encode_utf8_with_surrogates(&points);
        assert_eq!(decode_utf8_with_surrogates(&bytes), Some(points));
        assert_eq!(decode_utf8_with_surrogates(&[0xC0, 0x80]), None);
        assert_eq!(decode_utf8_with_surrogates(&[0xF4, 0x90, 0x80, 0x80]), None);
    }
}
