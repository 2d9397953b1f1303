//! Lists of instances of one class as OBJECT_ROWS (spec 5.17.9): the count, the shape and the
//! float columns once, then each instance's field values, with no OBJECT tag or shape number
//! per row, and a float column's values as raw binary64.
//!
//! The list is looked over first, without writing anything: every item of the first one's
//! exact type, held by the list alone, and that type written as ATTRS OBJECTs (a plain class
//! or a placeholder of one). Then the first instance's fields decide the shape and the float
//! columns, and the rows are written one by one, each instance's fields read as an OBJECT's
//! are (`PyEncoder::attrs_fields`, `PyEncoder::placeholder_fields`).
//!
//! An instance whose fields are not the first one's, or a float column value that is not an
//! unshared float, is found only while the rows are written, and what is written cannot be
//! taken back (the memo has recorded it). So the encode starts again, as for RECORDS
//! (`records.rs`), with the list marked to be written as a LIST (`plain_records`), or with
//! that column marked to be tagged (`tagged_columns`). Each mark is made once, so restarts
//! are bounded by the lists and fields of the payload; the common case, rows of one
//! dataclass, never restarts.

use amber_format::tag::OBJECT_ROWS_MIN;
use amber_format::{ObjectKind, Writer};
use pyo3_ffi as ffi;

use super::classes::{RowSource, ShapeUse};
use super::containers::{changed_size, list_item_now};
use super::{hold, EncodeFail, FailKind, PyEncoder, Segment};
use crate::object::PyObj;

/// What names the class of a row.
enum RowNames {
    /// An instance of a class: its type.
    Class,
    /// A placeholder: the module and qualified name it holds.
    Placeholder((String, String)),
    /// A placeholder of another kind than ATTRS: no row.
    Other,
}

/// What the first row of a list settles for all of them.
struct RowShape {
    source: RowSource,
    /// A placeholder's module and qualified name (empty for a class's instances, whose type
    /// says it).
    names: (String, String),
    /// The first row's field names, held (they are compared with each later row's).
    fields: Vec<PyObj>,
    /// Which fields are float columns.
    columns: Vec<bool>,
}

impl PyEncoder<'_> {
    /// Writes the exact list `list` of `n` items (at least [`OBJECT_ROWS_MIN`], the first of
    /// them an instance of a heap type) as an OBJECT_ROWS if its items qualify, and says
    /// whether it did; otherwise nothing is written. `holds` and `owner` are as for
    /// [`PyEncoder::records`]. The caller has entered the list's nesting level; the rows'
    /// level is entered here.
    #[inline(never)]
    pub(super) fn object_rows(
        &mut self,
        list: *mut ffi::PyObject,
        n: usize,
        holds: ffi::Py_ssize_t,
        owner: *mut ffi::PyObject,
    ) -> Result<bool, EncodeFail> {
        debug_assert!(n >= OBJECT_ROWS_MIN);
        // Canonical mode writes every list of instances as a LIST (spec 5.17.9, rule 4).
        if self.options.canonical {
            return Ok(false);
        }
        if !self.plain_records.is_empty() && self.plain_records.contains(&(owner as usize)) {
            return Ok(false);
        }
        let first = list_item_now(list, 0)?;
        // SAFETY: reading the type of a live object.
        let ty = unsafe { ffi::Py_TYPE(first) };
        // The plan may be made now, by Python code, which may change the list: it is read
        // again below.
        let Some(source) = self.row_source(ty)? else {
            return Ok(false);
        };
        if !self.rows_unshared(list, ty, holds) {
            return Ok(false);
        }
        let base = self.attr_names.len();
        let result = self.object_rows_from(list, source, owner, base);
        self.attr_names.truncate(base);
        self.attr_values.truncate(base);
        result
    }

    /// Whether `list` has at least [`OBJECT_ROWS_MIN`] items, all of the exact type `ty` and
    /// none with more references than `holds` allows (with refs off, any). Reads each item's
    /// own object only; no Python code runs.
    fn rows_unshared(
        &self,
        list: *mut ffi::PyObject,
        ty: *mut ffi::PyTypeObject,
        holds: ffi::Py_ssize_t,
    ) -> bool {
        // Instances keep their identity in every mode but canonical, which the caller
        // excludes: only refs=False lets an instance held twice be written twice.
        let limit = if self.memo.is_on() {
            holds
        } else {
            ffi::Py_ssize_t::MAX
        };
        // SAFETY: list is a live exact list; its length and items are read with no Python
        // code running in between.
        unsafe {
            let n = ffi::PyList_GET_SIZE(list) as usize;
            let items = (*list.cast::<ffi::PyListObject>()).ob_item;
            n >= OBJECT_ROWS_MIN
                && (0..n).all(|i| {
                    let item = *items.add(i);
                    ffi::Py_TYPE(item) == ty && ffi::Py_REFCNT(item) <= limit
                })
        }
    }

    /// [`PyEncoder::object_rows`] once the items qualify: the first row's fields settle the
    /// shape and the columns; `base` is where this list's entries start on the attribute
    /// stacks.
    fn object_rows_from(
        &mut self,
        list: *mut ffi::PyObject,
        source: RowSource,
        owner: *mut ffi::PyObject,
        base: usize,
    ) -> Result<bool, EncodeFail> {
        let first = hold(list_item_now(list, 0)?);
        let names = match self.row_fields(&source, first.as_ptr())? {
            RowNames::Class => (String::new(), String::new()),
            RowNames::Placeholder(names) => names,
            RowNames::Other => return Ok(false),
        };
        let width = self.attr_names.len() - base;
        if width == 0 {
            return Ok(false);
        }
        let columns: Vec<bool> = (0..width)
            .map(|field| {
                !self.tagged_columns.contains(&(owner as usize, field))
                    && self
                        .attr_values
                        .get(base + field)
                        .and_then(|v| self.column_float(v.as_ptr()))
                        .is_some_and(|v| !Writer::is_float32_exact(v))
            })
            .collect();
        let shape = RowShape {
            source,
            names,
            fields: self.attr_names.get(base..).unwrap_or_default().to_vec(),
            columns,
        };
        // SAFETY: list is a live list (held by the caller).
        let n = unsafe { ffi::PyList_GET_SIZE(list) } as usize;
        self.enter()?;
        self.writer.object_rows_header(n);
        self.rows_shape(first.as_ptr(), &shape)?;
        let indexes: Vec<usize> = (0..width).filter(|&f| shape.columns[f]).collect();
        self.writer.float_columns(&indexes);
        self.row_values(first.as_ptr(), &shape, owner, base)
            .map_err(|e| e.at(Segment::Index(0), owner))?;
        for i in 1..n {
            self.attr_names.truncate(base);
            self.attr_values.truncate(base);
            // Class code run while a value is written may change the list: the row is read
            // again, and held while its values are written.
            let row = list_item_now(list, i)?;
            // SAFETY: reading the types of two live objects.
            if unsafe { ffi::Py_TYPE(row) != ffi::Py_TYPE(first.as_ptr()) } {
                return Err(self.not_rows(owner));
            }
            let row = hold(row);
            let fits = match self.row_fields(&shape.source, row.as_ptr())? {
                // A class's instances are named by their type, checked above.
                RowNames::Class => true,
                RowNames::Placeholder(names) => names == shape.names,
                RowNames::Other => false,
            };
            if !fits || !self.same_fields(&shape.fields, base) {
                return Err(self.not_rows(owner));
            }
            self.row_values(row.as_ptr(), &shape, owner, base)
                .map_err(|e| e.at(Segment::Index(i), owner))?;
        }
        // SAFETY: list is a live list.
        if unsafe { ffi::PyList_GET_SIZE(list) } as usize != n {
            return Err(changed_size("list", list));
        }
        self.leave();
        Ok(true)
    }

    /// Pushes the fields of `row` on the attribute stacks and says what names it.
    fn row_fields(
        &mut self,
        source: &RowSource,
        row: *mut ffi::PyObject,
    ) -> Result<RowNames, EncodeFail> {
        Ok(match source {
            RowSource::Attrs(plan) => {
                self.attrs_fields(row, plan)?;
                RowNames::Class
            }
            RowSource::Placeholder => match self.placeholder_fields(row)? {
                Some(names) => RowNames::Placeholder(names),
                None => RowNames::Other,
            },
        })
    }

    /// Whether the names pushed from `base` on are `fields`: the same objects, or equal strs.
    fn same_fields(&self, fields: &[PyObj], base: usize) -> bool {
        let names = self.attr_names.get(base..).unwrap_or_default();
        names.len() == fields.len()
            && names.iter().zip(fields).all(|(a, b)| {
                a.as_ptr() == b.as_ptr()
                    // SAFETY: both are live exact strs (attribute names are checked to be,
                    // placeholder field names too); comparing them runs no Python code.
                    || unsafe { ffi::PyUnicode_Compare(a.as_ptr(), b.as_ptr()) == 0 }
            })
    }

    /// The shape of the rows, after their OBJECT_ROWS tag and count.
    fn rows_shape(
        &mut self,
        first: *mut ffi::PyObject,
        shape: &RowShape,
    ) -> Result<(), EncodeFail> {
        match &shape.source {
            RowSource::Attrs(plan) => {
                // SAFETY: reading the type of a live object.
                let ty = unsafe { ffi::Py_TYPE(first) };
                self.shape_as(ty, plan, &shape.fields, ShapeUse::Rows)
            }
            RowSource::Placeholder => {
                let mut texts = Vec::with_capacity(shape.fields.len());
                for name in &shape.fields {
                    texts.push(super::classes::name_text(self.py, name.as_ptr())?);
                }
                let (module, qualname) = &shape.names;
                self.shape_by_text_as(
                    0,
                    module,
                    qualname,
                    ObjectKind::Attrs,
                    texts,
                    ShapeUse::Rows,
                )
                .map(|_| ())
            }
        }
    }

    /// Writes the values pushed from `base` on, those of `row`: a float column's as its 8
    /// bytes, the others as an OBJECT's values are written.
    fn row_values(
        &mut self,
        row: *mut ffi::PyObject,
        shape: &RowShape,
        owner: *mut ffi::PyObject,
        base: usize,
    ) -> Result<(), EncodeFail> {
        for (field, &column) in shape.columns.iter().enumerate() {
            let Some(value) = self.attr_values.get(base + field).map(PyObj::as_ptr) else {
                break;
            };
            if column {
                match self.column_float(value) {
                    Some(v) => self.writer.column_float(v),
                    None => return Err(self.tagged_column(owner, field)),
                }
                continue;
            }
            self.nested_held_value(value).map_err(|e| {
                let name = self.attr_names.get(base + field).map(PyObj::as_ptr);
                let label = name.and_then(|n| super::classes::name_text(self.py, n).ok());
                e.at(Segment::Attr(label.unwrap_or_default()), row)
            })?;
        }
        Ok(())
    }

    /// The value of `value`, held on the attribute stack, if it may be a float column's: an
    /// exact float that nothing else holds (its field and the stack account for two
    /// references), or any exact float with refs off. A shared float is written once and
    /// then referred to, which a column cannot do.
    fn column_float(&self, value: *mut ffi::PyObject) -> Option<f64> {
        // SAFETY: value is a live object held on the attribute stack; an exact float's value
        // is read without any call.
        unsafe {
            (ffi::Py_TYPE(value) == self.types.float()
                && (!self.memo.is_on() || ffi::Py_REFCNT(value) <= 2))
                .then(|| ffi::PyFloat_AS_DOUBLE(value))
        }
    }
}

impl PyEncoder<'_> {
    /// A list being written as rows has an instance that does not fit: the list is marked
    /// to be written as a LIST, and the encode starts again.
    #[cold]
    fn not_rows(&mut self, owner: *mut ffi::PyObject) -> EncodeFail {
        self.plain_records.insert(owner as usize);
        EncodeFail::new(FailKind::Restart)
    }

    /// A float column of a list being written as rows has a value that is not an unshared
    /// float: the column is marked to be tagged, and the encode starts again.
    #[cold]
    fn tagged_column(&mut self, owner: *mut ffi::PyObject, field: usize) -> EncodeFail {
        self.tagged_columns.insert((owner as usize, field));
        EncodeFail::new(FailKind::Restart)
    }
}
