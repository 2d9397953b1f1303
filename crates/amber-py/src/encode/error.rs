//! Why an encode failed and where: the path is collected while the error unwinds, so the
//! happy path pays nothing for it.

use pyo3::prelude::*;
use pyo3::types::PyType;
use pyo3_ffi as ffi;

/// One step from a container to a child.
#[derive(Clone, Debug)]
pub enum Segment {
    /// Item of a list or tuple.
    Index(usize),
    /// Value under a dict key, shown by the key's repr.
    Key(String),
    /// The i-th key of a dict itself.
    KeyOf(usize),
    /// The i-th element of a set or frozenset, in iteration order.
    Element(usize),
    /// An attribute (field) of a class instance.
    Attr(String),
}

/// What went wrong.
#[derive(Debug)]
pub enum FailKind {
    /// A value of a type amber does not encode; holds the type's qualified name.
    Unsupported(String),
    /// Nesting deeper than the limit.
    TooDeep(u32),
    /// Nesting deeper than the limit because a container contains itself and refs are off.
    Cycle,
    /// Python raised (e.g. MemoryError).
    Python(PyErr),
    /// Not a failure: the pass met a cycle through a tuple and must start over.
    Restart,
    /// The value cannot be written, for the reason given.
    Refused(String),
}

/// A failed encode: the kind, the path from the root (collected innermost first), and the
/// containers on that path (to tell a cycle from deep nesting).
///
/// Boxed so that `Result<(), EncodeFail>`, which every value's encoder returns, is one
/// pointer in a register rather than a struct written through memory.
#[derive(Debug)]
pub struct EncodeFail(Box<FailInner>);

#[derive(Debug)]
pub struct FailInner {
    pub kind: FailKind,
    path: Vec<Segment>,
    containers: Vec<usize>,
}

impl std::ops::Deref for EncodeFail {
    type Target = FailInner;
    fn deref(&self) -> &FailInner {
        &self.0
    }
}

impl std::ops::DerefMut for EncodeFail {
    fn deref_mut(&mut self) -> &mut FailInner {
        &mut self.0
    }
}

impl EncodeFail {
    #[cold]
    pub fn new(kind: FailKind) -> Self {
        EncodeFail(Box::new(FailInner {
            kind,
            path: Vec::new(),
            containers: Vec::new(),
        }))
    }

    /// The kind, taken out of the failure.
    pub fn into_kind(self) -> FailKind {
        self.0.kind
    }

    /// The error for a value of an unsupported type.
    #[cold]
    pub fn unsupported(py: Python<'_>, obj: *mut ffi::PyObject) -> Self {
        // SAFETY: obj is a live object; Py_TYPE returns its (borrowed, live) type.
        let ty = unsafe { ffi::Py_TYPE(obj) };
        // SAFETY: a type object is a Python object; borrowed for the duration of this call.
        let ty = unsafe { Bound::from_borrowed_ptr(py, ty.cast()) };
        let name = qualified_name(ty.cast::<PyType>().ok());
        EncodeFail::new(FailKind::Unsupported(name))
    }

    /// The error for a Python exception raised while encoding.
    #[cold]
    pub fn python(py: Python<'_>) -> Self {
        let err = PyErr::take(py).unwrap_or_else(|| {
            pyo3::exceptions::PySystemError::new_err("a C-API call failed without an exception")
        });
        EncodeFail::new(FailKind::Python(err))
    }

    /// Adds the step from `container` to the failing child, on the way out.
    #[cold]
    pub fn at(mut self, segment: Segment, container: *mut ffi::PyObject) -> Self {
        self.path.push(segment);
        self.containers.push(container as usize);
        self
    }

    /// Settles the kind once the whole path is known.
    #[cold]
    pub fn finish(mut self, refs: bool) -> Self {
        let this = &mut *self.0;
        if let (FailKind::TooDeep(_), false) = (&this.kind, refs) {
            // Outermost first: the first container met again closes the cycle; the path is
            // cut there, so it names where the cycle is rather than where the limit hit.
            let outer_first: Vec<usize> = this.containers.iter().rev().copied().collect();
            let mut seen = rustc_hash::FxHashSet::default();
            if let Some(repeat) = outer_first.iter().position(|c| !seen.insert(*c)) {
                this.kind = FailKind::Cycle;
                let keep = this.path.len() - repeat;
                this.path.drain(..keep);
                this.containers.drain(..keep);
            }
        }
        self
    }

    /// `root["users"][3]`; very long paths keep their two ends.
    pub fn path(&self) -> String {
        self.0.path_text()
    }
}

impl FailInner {
    fn path_text(&self) -> String {
        const KEEP: usize = 12;
        let steps: Vec<String> = self.path.iter().rev().map(render).collect();
        let mut out = String::from("root");
        if steps.len() > 2 * KEEP {
            out.extend(steps[..KEEP].iter().cloned());
            out.push_str(&format!("...({} more)...", steps.len() - 2 * KEEP));
            out.extend(steps[steps.len() - KEEP..].iter().cloned());
        } else {
            out.extend(steps);
        }
        out
    }
}

fn render(segment: &Segment) -> String {
    match segment {
        Segment::Index(i) => format!("[{i}]"),
        Segment::Key(key) => format!("[{key}]"),
        Segment::KeyOf(i) => format!("<key {i}>"),
        Segment::Element(i) => format!("{{{i}}}"),
        Segment::Attr(name) => format!(".{name}"),
    }
}

/// A dict key as shown in a path: str keys in double quotes, others by repr, cut short.
#[cold]
pub fn key_label(py: Python<'_>, key: *mut ffi::PyObject) -> String {
    const MAX: usize = 40;
    // SAFETY: key is a live object borrowed from the dict being encoded.
    let key = unsafe { Bound::from_borrowed_ptr(py, key) };
    let text = match key.extract::<String>() {
        Ok(s) => format!("{s:?}"),
        Err(_) => key
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| String::from("?")),
    };
    if text.chars().count() > MAX {
        let cut: String = text.chars().take(MAX - 3).collect();
        format!("{cut}...")
    } else {
        text
    }
}

fn qualified_name(ty: Option<&Bound<'_, PyType>>) -> String {
    let Some(ty) = ty else {
        return String::from("?");
    };
    let module = ty
        .getattr("__module__")
        .and_then(|m| m.extract::<String>())
        .unwrap_or_default();
    let name = ty
        .getattr("__qualname__")
        .and_then(|m| m.extract::<String>())
        .unwrap_or_else(|_| String::from("?"));
    if module.is_empty() || module == "builtins" {
        name
    } else {
        format!("{module}.{name}")
    }
}
