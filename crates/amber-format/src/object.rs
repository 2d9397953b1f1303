//! OBJECT shapes: a class named by module and qualified name, how its instances are built,
//! and its field names, written once per payload and then referred to by number.

use crate::ext::ExtCode;

/// Longest module, qualname or field name, in UTF-8 bytes.
pub const MAX_NAME_LEN: usize = 1024;
/// Most fields one shape may declare.
pub const MAX_FIELDS: usize = 65_535;

/// When the instance of an OBJECT exists, relative to its values (spec 5.17.3). It decides
/// when a tracked instance is recorded, and so which REFs to it are valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Creation {
    /// Created empty before any value is decoded; its values may refer to it.
    First,
    /// Made from its first value once that is complete; the other values may refer to it.
    FromFirstValue,
    /// Built from all its values once they are complete.
    After,
}

/// How an instance is built from its values.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjectKind {
    /// Created empty, then one value per field is set as an attribute.
    Attrs = 0,
    /// Created empty, then given one state value (`__setstate__`).
    State = 1,
    /// Built from one value per field, in order (a named tuple).
    TupleFields = 2,
    /// Built from one value: the enum member with that value.
    Enum = 3,
    /// Built from one value by a function the caller registered.
    Custom = 4,
    /// A subclass of a mutable builtin container: created empty, then filled from the
    /// builtin value and given the state.
    MutableSubclass = 5,
    /// A subclass of an immutable builtin type: made from the builtin value, then given the
    /// state.
    ValueSubclass = 6,
    /// The class or function itself, by name; no values.
    Global = 7,
    /// Made by calling the named callable with the arguments, then given the state, list
    /// items and dict items (what `__reduce__` returned).
    Reduce = 8,
    /// Made by the named class's `__new__` with the arguments, then as [`ObjectKind::Reduce`].
    NewObj = 9,
    /// An exception: made from its arguments, then given its state, cause, context and
    /// whether the context is suppressed.
    Exception = 10,
    /// As [`ObjectKind::Reduce`], the callable also taking keyword arguments.
    ReduceKw = 11,
    /// As [`ObjectKind::NewObj`], `__new__` also taking keyword arguments.
    NewObjKw = 12,
}

impl ObjectKind {
    /// Every kind, in code order.
    pub const ALL: [ObjectKind; 13] = [
        ObjectKind::Attrs,
        ObjectKind::State,
        ObjectKind::TupleFields,
        ObjectKind::Enum,
        ObjectKind::Custom,
        ObjectKind::MutableSubclass,
        ObjectKind::ValueSubclass,
        ObjectKind::Global,
        ObjectKind::Reduce,
        ObjectKind::NewObj,
        ObjectKind::Exception,
        ObjectKind::ReduceKw,
        ObjectKind::NewObjKw,
    ];

    /// The kind for a byte read from the wire.
    pub fn from_code(code: u8) -> Option<ObjectKind> {
        ObjectKind::ALL.get(usize::from(code)).copied()
    }

    /// Whether the shape definition lists field names.
    pub const fn has_fields(self) -> bool {
        matches!(self, ObjectKind::Attrs | ObjectKind::TupleFields)
    }

    /// When the instance exists relative to its values.
    pub const fn creation(self) -> Creation {
        match self {
            ObjectKind::Attrs | ObjectKind::State | ObjectKind::MutableSubclass => Creation::First,
            ObjectKind::ValueSubclass
            | ObjectKind::Reduce
            | ObjectKind::NewObj
            | ObjectKind::Exception
            | ObjectKind::ReduceKw
            | ObjectKind::NewObjKw => Creation::FromFirstValue,
            ObjectKind::TupleFields
            | ObjectKind::Enum
            | ObjectKind::Custom
            | ObjectKind::Global => Creation::After,
        }
    }

    /// Whether the instance exists (and may be referred to) before its values are decoded.
    pub const fn creates_first(self) -> bool {
        matches!(self.creation(), Creation::First)
    }

    /// How many values follow each instance of a shape with `fields` field names.
    pub const fn value_count(self, fields: usize) -> usize {
        match self {
            ObjectKind::Attrs | ObjectKind::TupleFields => fields,
            ObjectKind::State | ObjectKind::Enum | ObjectKind::Custom => 1,
            ObjectKind::MutableSubclass | ObjectKind::ValueSubclass => 2,
            ObjectKind::Global => 0,
            ObjectKind::Reduce
            | ObjectKind::NewObj
            | ObjectKind::ReduceKw
            | ObjectKind::NewObjKw => 4,
            ObjectKind::Exception => 5,
        }
    }

    /// The name used in `spec/format.md`, the vectors and `amber.Placeholder.kind`.
    pub const fn spec_name(self) -> &'static str {
        match self {
            ObjectKind::Attrs => "ATTRS",
            ObjectKind::State => "STATE",
            ObjectKind::TupleFields => "TUPLE_FIELDS",
            ObjectKind::Enum => "ENUM",
            ObjectKind::Custom => "CUSTOM",
            ObjectKind::MutableSubclass => "MUTABLE_SUBCLASS",
            ObjectKind::ValueSubclass => "VALUE_SUBCLASS",
            ObjectKind::Global => "GLOBAL",
            ObjectKind::Reduce => "REDUCE",
            ObjectKind::NewObj => "NEWOBJ",
            ObjectKind::Exception => "EXCEPTION",
            ObjectKind::ReduceKw => "REDUCE_KW",
            ObjectKind::NewObjKw => "NEWOBJ_KW",
        }
    }

    /// The kind with this spec name.
    pub fn from_spec_name(name: &str) -> Option<ObjectKind> {
        ObjectKind::ALL
            .iter()
            .copied()
            .find(|k| k.spec_name() == name)
    }
}

/// A decoded value as the value rules of the OBJECT kinds look at it (spec 5.17.3): its kind
/// on the wire, whatever form carried it (a REF to a list is a list).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueClass {
    /// `None`.
    None,
    /// `True` or `False`.
    Bool,
    /// An int (not a bool).
    Int,
    /// A float.
    Float,
    /// A complex.
    Complex,
    /// A str.
    Str,
    /// A bytes.
    Bytes,
    /// A bytearray.
    ByteArray,
    /// A list (in any of its forms).
    List,
    /// A tuple.
    Tuple,
    /// A dict.
    Dict,
    /// A set.
    Set,
    /// A frozenset.
    FrozenSet,
    /// An EXT value with this code.
    Ext(ExtCode),
    /// An OBJECT.
    Object,
}

impl ValueClass {
    fn describe(self) -> &'static str {
        match self {
            ValueClass::None => "None",
            ValueClass::Bool => "a bool",
            ValueClass::Int => "an int",
            ValueClass::Float => "a float",
            ValueClass::Complex => "a complex",
            ValueClass::Str => "a str",
            ValueClass::Bytes => "a bytes",
            ValueClass::ByteArray => "a bytearray",
            ValueClass::List => "a list",
            ValueClass::Tuple => "a tuple",
            ValueClass::Dict => "a dict",
            ValueClass::Set => "a set",
            ValueClass::FrozenSet => "a frozenset",
            ValueClass::Ext(code) => code.spec_name(),
            ValueClass::Object => "an OBJECT",
        }
    }
}

/// The builtin values a MUTABLE_SUBCLASS starts from.
pub fn is_mutable_builtin(class: ValueClass) -> bool {
    matches!(
        class,
        ValueClass::List
            | ValueClass::Dict
            | ValueClass::Set
            | ValueClass::ByteArray
            | ValueClass::Ext(
                ExtCode::Deque | ExtCode::OrderedDict | ExtCode::Counter | ExtCode::DefaultDict
            )
    )
}

/// The builtin values a VALUE_SUBCLASS is made from.
pub fn is_value_builtin(class: ValueClass) -> bool {
    matches!(
        class,
        ValueClass::Str
            | ValueClass::Bytes
            | ValueClass::Int
            | ValueClass::Float
            | ValueClass::Complex
            | ValueClass::Tuple
            | ValueClass::FrozenSet
            | ValueClass::Ext(
                ExtCode::Date
                    | ExtCode::Time
                    | ExtCode::DateTime
                    | ExtCode::TimeDelta
                    | ExtCode::Decimal
            )
    )
}

/// Checks value `index` of an instance of `kind` against the kind's value rules (spec
/// 5.17.3); the message says what was expected. Which builtin type a subclass's value must
/// have, and what the class makes of its values, only the host can tell.
pub fn check_value(kind: ObjectKind, index: usize, class: ValueClass) -> Result<(), String> {
    let (ok, expected) = match (kind, index) {
        (ObjectKind::MutableSubclass, 0) => (
            is_mutable_builtin(class),
            "a list, dict, set, bytearray, DEQUE, ORDERED_DICT, COUNTER or DEFAULTDICT",
        ),
        (ObjectKind::ValueSubclass, 0) => (
            is_value_builtin(class),
            "a str, bytes, int, float, complex, tuple, frozenset, DATE, TIME, DATETIME, \
             TIMEDELTA or DECIMAL",
        ),
        (ObjectKind::Reduce | ObjectKind::NewObj | ObjectKind::Exception, 0) => {
            (class == ValueClass::Tuple, "a tuple of arguments")
        }
        (ObjectKind::ReduceKw | ObjectKind::NewObjKw, 0) => (
            class == ValueClass::Tuple,
            "a tuple of the arguments and the keyword arguments",
        ),
        (
            ObjectKind::Reduce | ObjectKind::NewObj | ObjectKind::ReduceKw | ObjectKind::NewObjKw,
            2,
        ) => (
            matches!(class, ValueClass::None | ValueClass::List),
            "None or a list of items",
        ),
        (
            ObjectKind::Reduce | ObjectKind::NewObj | ObjectKind::ReduceKw | ObjectKind::NewObjKw,
            3,
        ) => (
            matches!(class, ValueClass::None | ValueClass::Dict),
            "None or a dict of items",
        ),
        (ObjectKind::Exception, 1) => (
            matches!(class, ValueClass::None | ValueClass::Dict),
            "None or a dict of attributes",
        ),
        (ObjectKind::Exception, 2 | 3) => (
            matches!(class, ValueClass::None | ValueClass::Object),
            "None or an exception",
        ),
        (ObjectKind::Exception, 4) => (class == ValueClass::Bool, "a bool"),
        _ => (true, ""),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{} value {index} must be {expected}, not {}",
            kind.spec_name(),
            class.describe()
        ))
    }
}

/// One shape definition as read from (or to be written to) a payload.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShapeDef {
    /// The class's module, e.g. `myapp.models`.
    pub module: String,
    /// The class's qualified name, e.g. `Employee` or `Outer.Inner`.
    pub qualname: String,
    /// How instances are built.
    pub kind: ObjectKind,
    /// Field names, for [`ObjectKind::Attrs`] and [`ObjectKind::TupleFields`]; empty otherwise.
    pub fields: Vec<String>,
}

/// Why a name was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameProblem {
    /// Zero bytes long.
    Empty,
    /// Longer than [`MAX_NAME_LEN`].
    TooLong,
    /// Not strict UTF-8.
    InvalidUtf8,
    /// A module or qualname that is not a dotted name.
    NotDotted,
}

impl NameProblem {
    /// A phrase for error messages.
    pub const fn describe(self) -> &'static str {
        match self {
            NameProblem::Empty => "is empty",
            NameProblem::TooLong => "is longer than 1024 bytes",
            NameProblem::InvalidUtf8 => "is not valid UTF-8",
            NameProblem::NotDotted => {
                "is not a dotted name (identifiers or '<locals>', joined by single dots)"
            }
        }
    }
}

/// Checks a field name: 1 to [`MAX_NAME_LEN`] bytes of strict UTF-8.
pub fn field_name(bytes: &[u8]) -> Result<&str, NameProblem> {
    if bytes.is_empty() {
        return Err(NameProblem::Empty);
    }
    if bytes.len() > MAX_NAME_LEN {
        return Err(NameProblem::TooLong);
    }
    std::str::from_utf8(bytes).map_err(|_| NameProblem::InvalidUtf8)
}

/// Checks a module or qualified name: a field name whose dot-separated segments are all
/// Python identifiers (Unicode XID, as PEP 3131 defines them) or `<locals>`.
pub fn dotted_name(bytes: &[u8]) -> Result<&str, NameProblem> {
    let name = field_name(bytes)?;
    let segment_ok = |s: &str| {
        if s == "<locals>" {
            return true;
        }
        // Python's identifier rule (PEP 3131): XID_Start or `_`, then XID_Continue.
        let mut chars = s.chars();
        match chars.next() {
            Some(c) if c == '_' || unicode_ident::is_xid_start(c) => {}
            _ => return false,
        }
        chars.all(unicode_ident::is_xid_continue)
    };
    if name.split('.').all(segment_ok) {
        Ok(name)
    } else {
        Err(NameProblem::NotDotted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_names() {
        for good in [
            "os",
            "a.b",
            "m.<locals>.C",
            "_x1.Y_2",
            "caf\u{e9}.Cl\u{e4}ss",
        ] {
            assert_eq!(dotted_name(good.as_bytes()), Ok(good), "{good}");
        }
        for (bad, why) in [
            ("", NameProblem::Empty),
            (".a", NameProblem::NotDotted),
            ("a.", NameProblem::NotDotted),
            ("a..b", NameProblem::NotDotted),
            ("a\0b", NameProblem::NotDotted),
            ("1a", NameProblem::NotDotted),
            ("a b", NameProblem::NotDotted),
            ("a/b", NameProblem::NotDotted),
            ("<lambda>", NameProblem::NotDotted),
        ] {
            assert_eq!(dotted_name(bad.as_bytes()), Err(why), "{bad:?}");
        }
        assert_eq!(dotted_name(&[0xFF]), Err(NameProblem::InvalidUtf8));
        assert_eq!(
            dotted_name("a".repeat(MAX_NAME_LEN + 1).as_bytes()),
            Err(NameProblem::TooLong)
        );
    }

    #[test]
    fn kinds_round_trip_their_codes() {
        for kind in ObjectKind::ALL {
            assert_eq!(ObjectKind::from_code(kind as u8), Some(kind));
            assert_eq!(ObjectKind::from_spec_name(kind.spec_name()), Some(kind));
        }
        assert_eq!(ObjectKind::from_code(13), None);
    }
}
