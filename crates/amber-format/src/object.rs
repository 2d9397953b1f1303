//! OBJECT shapes: a class named by module and qualified name, how its instances are built,
//! and its field names, written once per payload and then referred to by number.

/// Longest module, qualname or field name, in UTF-8 bytes.
pub const MAX_NAME_LEN: usize = 1024;
/// Most fields one shape may declare.
pub const MAX_FIELDS: usize = 65_535;

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
}

impl ObjectKind {
    /// Every kind, in code order.
    pub const ALL: [ObjectKind; 5] = [
        ObjectKind::Attrs,
        ObjectKind::State,
        ObjectKind::TupleFields,
        ObjectKind::Enum,
        ObjectKind::Custom,
    ];

    /// The kind for a byte read from the wire.
    pub fn from_code(code: u8) -> Option<ObjectKind> {
        ObjectKind::ALL.get(usize::from(code)).copied()
    }

    /// Whether the shape definition lists field names.
    pub const fn has_fields(self) -> bool {
        matches!(self, ObjectKind::Attrs | ObjectKind::TupleFields)
    }

    /// Whether the instance exists (and may be referred to) before its values are decoded.
    pub const fn creates_first(self) -> bool {
        matches!(self, ObjectKind::Attrs | ObjectKind::State)
    }

    /// How many values follow each instance of a shape with `fields` field names.
    pub const fn value_count(self, fields: usize) -> usize {
        if self.has_fields() {
            fields
        } else {
            1
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
        assert_eq!(ObjectKind::from_code(5), None);
    }
}
