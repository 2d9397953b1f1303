//! Library types written as EXT values: the datetime family, Decimal, UUID, Fraction, the
//! collections types, range, slice, array.array, pathlib paths and ipaddress objects.
//!
//! Each value is read into the format crate's typed value (`amber_format::ext`), which
//! writes the blob; the layouts are the format crate's alone.
//!
//! Only exact types are ours (a subclass falls through to class handling). Nothing is
//! imported here: a type can only be `decimal.Decimal` if `decimal` is already loaded, so
//! each type is looked up in its module's namespace once the module is in `sys.modules`,
//! and kept. An unrelated type is turned away by its `tp_name` before any lookup.

use std::ffi::CStr;

use amber_format::ext::composite::Factory;
use amber_format::ext::{
    valid_zone_key, Array, ArrayTypecode, BufferKind, CompositeCode, Date, DateTime, Decimal,
    DecimalValue, ExtBlob, IpAddr, IpAddress, IpPrefixed, Path, PathFlavour, SafeUuid, Singleton,
    Time, TimeDelta, Tz, Uuid,
};
use amber_format::ExtCode;
use pyo3::prelude::*;
use pyo3_ffi as ffi;

use super::packed::Compact;
use super::{EncodeFail, FailKind, PyEncoder, Segment};
use crate::object::{Cached, PyObj};

/// An interned str for an attribute name, made on first use and kept (NULL, with an
/// exception set, only if that fails).
macro_rules! interned {
    ($name:literal) => {{
        static NAME: Cached = Cached::new();
        // SAFETY: interning a NUL-terminated ASCII literal with the GIL held.
        NAME.get_or_init(|| unsafe { ffi::PyUnicode_InternFromString($name.as_ptr()) })
    }};
}

/// What an exact type is, for the types handled here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Known {
    /// A type written as an EXT composite.
    Composite(CompositeCode),
    /// A type written as an EXT blob.
    Blob(BlobType),
}

/// The types written as EXT blobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlobType {
    Date,
    Time,
    DateTime,
    TimeDelta,
    /// `datetime.timezone` or `zoneinfo.ZoneInfo` on its own.
    TzInfo,
    Decimal,
    Uuid,
    Array,
    Path(PathFlavour),
    /// IPv6 when true.
    IpAddress(bool),
    IpNetwork(bool),
    IpInterface(bool),
}

static ZONEINFO: Cached = Cached::new();
static DECIMAL: Cached = Cached::new();
static UUID: Cached = Cached::new();
static SAFE_UUID: Cached = Cached::new();
static SAFE_UUID_SAFE: Cached = Cached::new();
static SAFE_UUID_UNSAFE: Cached = Cached::new();
static SAFE_UUID_UNKNOWN: Cached = Cached::new();
static FRACTION: Cached = Cached::new();
static DEQUE: Cached = Cached::new();
static ORDERED_DICT: Cached = Cached::new();
static COUNTER: Cached = Cached::new();
static DEFAULTDICT: Cached = Cached::new();
static ARRAY: Cached = Cached::new();
static PURE_POSIX_PATH: Cached = Cached::new();
static PURE_WINDOWS_PATH: Cached = Cached::new();
static POSIX_PATH: Cached = Cached::new();
static WINDOWS_PATH: Cached = Cached::new();
static IPV4_ADDRESS: Cached = Cached::new();
static IPV6_ADDRESS: Cached = Cached::new();
static IPV4_NETWORK: Cached = Cached::new();
static IPV6_NETWORK: Cached = Cached::new();
static IPV4_INTERFACE: Cached = Cached::new();
static IPV6_INTERFACE: Cached = Cached::new();
static SIMPLE_NAMESPACE: Cached = Cached::new();

/// The datetime C-API once `datetime` is loaded; never imports it.
fn datetime_api(load: bool) -> Option<&'static ffi::PyDateTime_CAPI> {
    // SAFETY: reading the atomic pointer pyo3-ffi keeps; NULL until PyDateTime_IMPORT.
    let mut api = unsafe { ffi::PyDateTimeAPI() };
    if api.is_null() && load {
        // Import the capsule only if `datetime` is already in sys.modules, so that this
        // is a lookup and never a real import.
        static DATETIME_MODULE: Cached = Cached::new();
        if !DATETIME_MODULE
            .loaded_attr(c"datetime", c"datetime_CAPI")
            .is_null()
        {
            // SAFETY: GIL held; the module is loaded, so this only fetches its capsule.
            unsafe {
                ffi::PyDateTime_IMPORT();
                ffi::PyErr_Clear();
                api = ffi::PyDateTimeAPI();
            }
        }
    }
    // SAFETY: a non-NULL API pointer refers to the capsule's static struct, which lives as
    // long as the interpreter.
    unsafe { api.as_ref() }
}

/// The `datetime` type `ty` is, if any.
#[inline]
fn datetime_kind(ty: *mut ffi::PyTypeObject, load: bool) -> Option<Known> {
    let api = datetime_api(load)?;
    let blob = if ty == api.DateTimeType {
        BlobType::DateTime
    } else if ty == api.DateType {
        BlobType::Date
    } else if ty == api.TimeType {
        BlobType::Time
    } else if ty == api.DeltaType {
        BlobType::TimeDelta
    } else if ty == timezone_type(api) {
        BlobType::TzInfo
    } else {
        return None;
    };
    Some(Known::Blob(blob))
}

/// `datetime.timezone`, the type of `timezone.utc`.
fn timezone_type(api: &ffi::PyDateTime_CAPI) -> *mut ffi::PyTypeObject {
    // SAFETY: TimeZone_UTC is a live static object of the datetime module.
    unsafe { ffi::Py_TYPE(api.TimeZone_UTC) }
}

/// Whether the loaded `module.attr` is `ty`.
#[inline]
fn is_loaded(slot: &Cached, module: &CStr, attr: &CStr, ty: *mut ffi::PyTypeObject) -> bool {
    slot.loaded_attr(module, attr) == ty.cast()
}

/// Classifies an exact type; cheap for unrelated types (pointer compares and a match on
/// the type's name).
fn classify(ty: *mut ffi::PyTypeObject) -> Option<Known> {
    if ty == &raw mut ffi::PyRange_Type {
        return Some(Known::Composite(CompositeCode::Range));
    }
    if ty == &raw mut ffi::PySlice_Type {
        return Some(Known::Composite(CompositeCode::Slice));
    }
    if let Some(kind) = datetime_kind(ty, false) {
        return Some(kind);
    }
    // SAFETY: ty is a live type object; tp_name is a NUL-terminated string it owns.
    let name = unsafe { CStr::from_ptr((*ty).tp_name) }.to_bytes();
    let (slot, module, attr, kind): (&Cached, &CStr, &CStr, Known) = match name {
        b"datetime.date"
        | b"datetime.datetime"
        | b"datetime.time"
        | b"datetime.timedelta"
        | b"datetime.timezone" => return datetime_kind(ty, true),
        b"zoneinfo.ZoneInfo" => (
            &ZONEINFO,
            c"zoneinfo",
            c"ZoneInfo",
            Known::Blob(BlobType::TzInfo),
        ),
        b"decimal.Decimal" => (
            &DECIMAL,
            c"decimal",
            c"Decimal",
            Known::Blob(BlobType::Decimal),
        ),
        b"UUID" => (&UUID, c"uuid", c"UUID", Known::Blob(BlobType::Uuid)),
        b"Fraction" => (
            &FRACTION,
            c"fractions",
            c"Fraction",
            Known::Composite(CompositeCode::Fraction),
        ),
        b"collections.deque" => (
            &DEQUE,
            c"collections",
            c"deque",
            Known::Composite(CompositeCode::Deque),
        ),
        b"collections.OrderedDict" => (
            &ORDERED_DICT,
            c"collections",
            c"OrderedDict",
            Known::Composite(CompositeCode::OrderedDict),
        ),
        b"Counter" => (
            &COUNTER,
            c"collections",
            c"Counter",
            Known::Composite(CompositeCode::Counter),
        ),
        b"collections.defaultdict" => (
            &DEFAULTDICT,
            c"collections",
            c"defaultdict",
            Known::Composite(CompositeCode::DefaultDict),
        ),
        b"array.array" => (&ARRAY, c"array", c"array", Known::Blob(BlobType::Array)),
        b"types.SimpleNamespace" => (
            &SIMPLE_NAMESPACE,
            c"types",
            c"SimpleNamespace",
            Known::Composite(CompositeCode::Namespace),
        ),
        b"PurePosixPath" => (
            &PURE_POSIX_PATH,
            c"pathlib",
            c"PurePosixPath",
            Known::Blob(BlobType::Path(PathFlavour::PurePosix)),
        ),
        b"PureWindowsPath" => (
            &PURE_WINDOWS_PATH,
            c"pathlib",
            c"PureWindowsPath",
            Known::Blob(BlobType::Path(PathFlavour::PureWindows)),
        ),
        b"PosixPath" => (
            &POSIX_PATH,
            c"pathlib",
            c"PosixPath",
            Known::Blob(BlobType::Path(PathFlavour::Posix)),
        ),
        b"WindowsPath" => (
            &WINDOWS_PATH,
            c"pathlib",
            c"WindowsPath",
            Known::Blob(BlobType::Path(PathFlavour::Windows)),
        ),
        b"IPv4Address" => (
            &IPV4_ADDRESS,
            c"ipaddress",
            c"IPv4Address",
            Known::Blob(BlobType::IpAddress(false)),
        ),
        b"IPv6Address" => (
            &IPV6_ADDRESS,
            c"ipaddress",
            c"IPv6Address",
            Known::Blob(BlobType::IpAddress(true)),
        ),
        b"IPv4Network" => (
            &IPV4_NETWORK,
            c"ipaddress",
            c"IPv4Network",
            Known::Blob(BlobType::IpNetwork(false)),
        ),
        b"IPv6Network" => (
            &IPV6_NETWORK,
            c"ipaddress",
            c"IPv6Network",
            Known::Blob(BlobType::IpNetwork(true)),
        ),
        b"IPv4Interface" => (
            &IPV4_INTERFACE,
            c"ipaddress",
            c"IPv4Interface",
            Known::Blob(BlobType::IpInterface(false)),
        ),
        b"IPv6Interface" => (
            &IPV6_INTERFACE,
            c"ipaddress",
            c"IPv6Interface",
            Known::Blob(BlobType::IpInterface(true)),
        ),
        _ => return None,
    };
    is_loaded(slot, module, attr, ty).then_some(kind)
}

/// The EXT code the encoder writes `obj` as, when its exact type is a library type or it is
/// one of the SINGLETON constants; what the decoder's value rules see (spec 5.17.3).
pub(crate) fn ext_code_of(obj: *mut ffi::PyObject, ty: *mut ffi::PyTypeObject) -> Option<ExtCode> {
    // SAFETY: comparing with the interpreter's two singletons.
    if unsafe { obj == ffi::Py_Ellipsis() || obj == ffi::Py_NotImplemented() } {
        return Some(ExtCode::Singleton);
    }
    if let Some(kind) = super::numpy::numpy_kind(ty) {
        return Some(match kind {
            super::numpy::NumpyKind::Array => ExtCode::NdArray,
            super::numpy::NumpyKind::Scalar => ExtCode::NumpyScalar,
        });
    }
    Some(match classify(ty)? {
        Known::Composite(code) => code.code(),
        Known::Blob(blob) => match blob {
            BlobType::Date => ExtCode::Date,
            BlobType::Time => ExtCode::Time,
            BlobType::DateTime => ExtCode::DateTime,
            BlobType::TimeDelta => ExtCode::TimeDelta,
            BlobType::TzInfo => ExtCode::TzInfo,
            BlobType::Decimal => ExtCode::Decimal,
            BlobType::Uuid => ExtCode::Uuid,
            BlobType::Array => ExtCode::Array,
            BlobType::Path(_) => ExtCode::Path,
            BlobType::IpAddress(_) => ExtCode::IpAddress,
            BlobType::IpNetwork(_) => ExtCode::IpNetwork,
            BlobType::IpInterface(_) => ExtCode::IpInterface,
        },
    })
}

/// A `tz` field read from a tzinfo, owning the strings it copied out of Python.
enum TzText {
    Naive,
    Utc,
    Fixed { offset: i64, name: Option<String> },
    Zone(String),
}

impl TzText {
    fn as_tz(&self) -> Tz<'_> {
        match self {
            TzText::Naive => Tz::Naive,
            TzText::Utc => Tz::Utc,
            TzText::Fixed { offset, name } => Tz::Fixed {
                offset: *offset,
                name: name.as_deref(),
            },
            TzText::Zone(key) => Tz::Zone(key),
        }
    }
}

/// A Decimal read from Python, owning its digits.
struct DecimalText {
    negative: bool,
    kind: DecimalKind,
    /// The coefficient of a finite value, the payload of a NaN.
    digits: String,
}

enum DecimalKind {
    Finite(i64),
    Infinity,
    NaN { signaling: bool },
}

impl DecimalText {
    fn as_decimal(&self) -> Decimal<'_> {
        let value = match self.kind {
            DecimalKind::Finite(exponent) => DecimalValue::Finite {
                exponent,
                coefficient: &self.digits,
            },
            DecimalKind::Infinity => DecimalValue::Infinity,
            DecimalKind::NaN { signaling } => DecimalValue::NaN {
                signaling,
                payload: &self.digits,
            },
        };
        Decimal {
            negative: self.negative,
            value,
        }
    }
}

/// The builtin types a defaultdict factory may be, with the factory each is.
fn builtin_factories() -> [(Factory, *mut ffi::PyTypeObject); 12] {
    // Addresses of the interpreter's static type objects; nothing is read through them.
    Factory::ALL.map(|factory| {
        let ty: *mut ffi::PyTypeObject = match factory {
            Factory::List => &raw mut ffi::PyList_Type,
            Factory::Dict => &raw mut ffi::PyDict_Type,
            Factory::Set => &raw mut ffi::PySet_Type,
            Factory::Int => &raw mut ffi::PyLong_Type,
            Factory::Float => &raw mut ffi::PyFloat_Type,
            Factory::Str => &raw mut ffi::PyUnicode_Type,
            Factory::Bytes => &raw mut ffi::PyBytes_Type,
            Factory::Tuple => &raw mut ffi::PyTuple_Type,
            Factory::FrozenSet => &raw mut ffi::PyFrozenSet_Type,
            Factory::Bool => &raw mut ffi::PyBool_Type,
            Factory::Complex => &raw mut ffi::PyComplex_Type,
            Factory::ByteArray => &raw mut ffi::PyByteArray_Type,
        };
        (factory, ty)
    })
}

/// A refusal with a sentence for people.
#[cold]
fn refuse(reason: String) -> EncodeFail {
    EncodeFail::new(FailKind::Refused(reason))
}

impl PyEncoder<'_> {
    /// Writes `obj` if its exact type is one of the known library types; `None` otherwise.
    pub(super) fn known_value(
        &mut self,
        obj: *mut ffi::PyObject,
        ty: *mut ffi::PyTypeObject,
    ) -> Option<Result<(), EncodeFail>> {
        let kind = classify(ty)?;
        Some(self.known(obj, kind))
    }

    fn known(&mut self, obj: *mut ffi::PyObject, kind: Known) -> Result<(), EncodeFail> {
        match kind {
            Known::Composite(CompositeCode::Fraction) => self.fraction(obj),
            Known::Composite(code @ (CompositeCode::Range | CompositeCode::Slice)) => {
                let names = [
                    (interned!(c"start"), "start"),
                    (interned!(c"stop"), "stop"),
                    (interned!(c"step"), "step"),
                ];
                self.build_after(obj, code.code(), &names)
            }
            Known::Composite(CompositeCode::Deque) => self.deque(obj),
            Known::Composite(
                code @ (CompositeCode::OrderedDict
                | CompositeCode::Counter
                | CompositeCode::DefaultDict),
            ) => self.dict_like(obj, code.code()),
            Known::Composite(CompositeCode::Namespace) => self.namespace(obj),
            Known::Blob(blob) => self.known_blob(obj, blob),
        }
    }

    fn known_blob(&mut self, obj: *mut ffi::PyObject, kind: BlobType) -> Result<(), EncodeFail> {
        // Blobs are atoms: written once, then referred to. All but arrays are immutable.
        let seen = if kind == BlobType::Array {
            self.write_ref_if_seen(obj)
        } else {
            self.write_value_ref_if_seen(obj)
        };
        if seen {
            return Ok(());
        }
        match kind {
            BlobType::Date => {
                self.date(obj);
                Ok(())
            }
            BlobType::Time => self.time(obj),
            BlobType::DateTime => self.datetime(obj),
            BlobType::TimeDelta => {
                self.timedelta(obj);
                Ok(())
            }
            BlobType::TzInfo => {
                let tz = self.tz(obj)?;
                self.writer.ext(&ExtBlob::TzInfo(tz.as_tz()));
                Ok(())
            }
            BlobType::Decimal => self.decimal(obj),
            BlobType::Uuid => self.uuid(obj),
            BlobType::Array => self.array(obj),
            BlobType::Path(flavour) => self.path(obj, flavour),
            BlobType::IpAddress(v6) => self.ip(obj, v6, None),
            BlobType::IpNetwork(v6) => self.ip(obj, v6, Some(false)),
            BlobType::IpInterface(v6) => self.ip(obj, v6, Some(true)),
        }
    }

    /// `obj.name` for an interned name (see `interned!`), a new reference.
    fn attr(&self, obj: *mut ffi::PyObject, name: *mut ffi::PyObject) -> Result<PyObj, EncodeFail> {
        if name.is_null() {
            return Err(EncodeFail::python(self.py));
        }
        // SAFETY: obj and name are live; NULL means an exception is set.
        PyObj::from_owned(unsafe { ffi::PyObject_GetAttr(obj, name) })
            .ok_or_else(|| EncodeFail::python(self.py))
    }

    /// `obj.name()` for an interned name, a new reference.
    fn call_method0(
        &self,
        obj: *mut ffi::PyObject,
        name: *mut ffi::PyObject,
    ) -> Result<PyObj, EncodeFail> {
        let method = self.attr(obj, name)?;
        // SAFETY: method is a live callable we own; NULL means an exception is set.
        PyObj::from_owned(unsafe { ffi::PyObject_CallNoArgs(method.as_ptr()) })
            .ok_or_else(|| EncodeFail::python(self.py))
    }

    /// A str, copied; refuses a non-str or a str with surrogates.
    fn utf8(&self, s: *mut ffi::PyObject, what: &str) -> Result<String, EncodeFail> {
        // SAFETY: type check on a live object.
        if unsafe { ffi::PyUnicode_Check(s) } == 0 {
            return Err(refuse(format!("{what} is not a str")));
        }
        let mut size: ffi::Py_ssize_t = 0;
        // SAFETY: s is a str; on success the bytes stay valid while s lives (we copy them
        // before returning).
        let data = unsafe { ffi::PyUnicode_AsUTF8AndSize(s, &mut size) };
        if data.is_null() {
            // SAFETY: discarding the UnicodeEncodeError just raised.
            unsafe { ffi::PyErr_Clear() };
            return Err(refuse(format!(
                "{what} holds lone surrogates, which cannot be written as UTF-8"
            )));
        }
        // SAFETY: data points to size bytes owned by s.
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size as usize) };
        // CPython's UTF-8 form of a str is valid UTF-8.
        Ok(String::from_utf8_lossy(bytes).into_owned())
    }

    /// An int that must fit an i64 (exponents, offsets).
    fn small_int(&self, v: *mut ffi::PyObject, what: &str) -> Result<i64, EncodeFail> {
        // SAFETY: type check on a live object.
        if unsafe { ffi::PyLong_Check(v) } == 0 {
            return Err(refuse(format!("{what} is not an int")));
        }
        let mut overflow = 0;
        // SAFETY: v is an int; overflow is reported, not raised.
        let n = unsafe { ffi::PyLong_AsLongLongAndOverflow(v, &mut overflow) };
        if overflow != 0 {
            return Err(refuse(format!("{what} does not fit in 64 bits")));
        }
        Ok(n)
    }

    fn date(&mut self, obj: *mut ffi::PyObject) {
        // SAFETY: obj is an exact datetime.date.
        let date = unsafe { date_of(obj) };
        self.writer.ext(&ExtBlob::Date(date));
    }

    fn time(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        // SAFETY: obj is an exact datetime.time; the tzinfo is borrowed from it (which is
        // immutable and alive) and held as a new reference by `tz_of` if Python code runs.
        let (fields, tzinfo) = unsafe {
            (
                [
                    ffi::PyDateTime_TIME_GET_HOUR(obj),
                    ffi::PyDateTime_TIME_GET_MINUTE(obj),
                    ffi::PyDateTime_TIME_GET_SECOND(obj),
                    ffi::PyDateTime_TIME_GET_MICROSECOND(obj),
                    i32::from(ffi::PyDateTime_TIME_GET_FOLD(obj)),
                ],
                ffi::PyDateTime_TIME_GET_TZINFO(obj),
            )
        };
        let tz = self.tz_of(tzinfo)?;
        self.writer.ext(&ExtBlob::Time(time_of(fields, tz.as_tz())));
        Ok(())
    }

    fn datetime(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        // SAFETY: obj is an exact datetime.datetime (a date too); the tzinfo is borrowed
        // from it (which is immutable and alive) and held as a new reference by `tz_of` if
        // Python code runs.
        let (date, fields, tzinfo) = unsafe {
            (
                date_of(obj),
                [
                    ffi::PyDateTime_DATE_GET_HOUR(obj),
                    ffi::PyDateTime_DATE_GET_MINUTE(obj),
                    ffi::PyDateTime_DATE_GET_SECOND(obj),
                    ffi::PyDateTime_DATE_GET_MICROSECOND(obj),
                    i32::from(ffi::PyDateTime_DATE_GET_FOLD(obj)),
                ],
                ffi::PyDateTime_DATE_GET_TZINFO(obj),
            )
        };
        let tz = self.tz_of(tzinfo)?;
        let time = time_of(fields, tz.as_tz());
        self.writer.ext(&ExtBlob::DateTime(DateTime { date, time }));
        Ok(())
    }

    fn timedelta(&mut self, obj: *mut ffi::PyObject) {
        // SAFETY: obj is an exact datetime.timedelta.
        let delta = unsafe {
            TimeDelta {
                days: ffi::PyDateTime_DELTA_GET_DAYS(obj),
                seconds: ffi::PyDateTime_DELTA_GET_SECONDS(obj) as u32,
                microseconds: ffi::PyDateTime_DELTA_GET_MICROSECONDS(obj) as u32,
            }
        };
        self.writer.ext(&ExtBlob::TimeDelta(delta));
    }

    /// The `tz` field for the tzinfo borrowed from a time or datetime (None when naive):
    /// naive and UTC values without a detour; others hold the tzinfo while Python runs.
    #[inline]
    fn tz_of(&self, tzinfo: *mut ffi::PyObject) -> Result<TzText, EncodeFail> {
        // SAFETY: comparing with the None singleton.
        if tzinfo.is_null() || tzinfo == unsafe { ffi::Py_None() } {
            return Ok(TzText::Naive);
        }
        if datetime_api(false).is_some_and(|api| tzinfo == api.TimeZone_UTC) {
            return Ok(TzText::Utc);
        }
        // SAFETY: tzinfo is a live object borrowed from the (live) time or datetime.
        let held = unsafe { owned_borrow(tzinfo) };
        self.tz(held.as_ptr())
    }

    /// The `tz` field for a tzinfo (None for naive values).
    fn tz(&self, tzinfo: *mut ffi::PyObject) -> Result<TzText, EncodeFail> {
        // SAFETY: comparing with the None singleton.
        if tzinfo == unsafe { ffi::Py_None() } {
            return Ok(TzText::Naive);
        }
        let Some(api) = datetime_api(true) else {
            return Err(refuse(String::from("datetime is not loaded")));
        };
        if tzinfo == api.TimeZone_UTC {
            return Ok(TzText::Utc);
        }
        // SAFETY: tzinfo is a live object.
        let ty = unsafe { ffi::Py_TYPE(tzinfo) };
        if ty == timezone_type(api) {
            // (offset,) or (offset, name): tells an explicit name from the default one.
            let args = self.call_method0(tzinfo, interned!(c"__getinitargs__"))?;
            let args = args.as_ptr();
            // SAFETY: type check on a live object.
            let n = if unsafe { ffi::PyTuple_Check(args) } != 0 {
                // SAFETY: args is a tuple.
                unsafe { ffi::PyTuple_GET_SIZE(args) }
            } else {
                0
            };
            if !(1..=2).contains(&n) {
                return Err(refuse(String::from(
                    "timezone.__getinitargs__() did not return (offset[, name])",
                )));
            }
            // SAFETY: 0 < n = len(args); items are borrowed from the tuple we hold.
            let offset = unsafe { ffi::PyTuple_GET_ITEM(args, 0) };
            // SAFETY: type check on a live object.
            if unsafe { ffi::Py_TYPE(offset) } != api.DeltaType {
                return Err(refuse(String::from("timezone offset is not a timedelta")));
            }
            // SAFETY: offset is an exact timedelta; the sum cannot overflow an i64 for the
            // field ranges CPython enforces.
            let micros = unsafe {
                i64::from(ffi::PyDateTime_DELTA_GET_DAYS(offset)) * 86_400_000_000
                    + i64::from(ffi::PyDateTime_DELTA_GET_SECONDS(offset)) * 1_000_000
                    + i64::from(ffi::PyDateTime_DELTA_GET_MICROSECONDS(offset))
            };
            // An explicitly empty name is Some(""): the format gives it a kind of its own,
            // as a name length of 0 means "no name".
            let name = if n == 2 {
                // SAFETY: 1 < n = len(args).
                let name = unsafe { ffi::PyTuple_GET_ITEM(args, 1) };
                Some(self.utf8(name, "timezone name")?)
            } else {
                None
            };
            return Ok(TzText::Fixed {
                offset: micros,
                name,
            });
        }
        if is_loaded(&ZONEINFO, c"zoneinfo", c"ZoneInfo", ty) {
            let key = self.attr(tzinfo, interned!(c"key"))?;
            // SAFETY: comparing with the None singleton.
            if key.as_ptr() == unsafe { ffi::Py_None() } {
                return Err(refuse(String::from(
                    "a zoneinfo.ZoneInfo without a key (made by ZoneInfo.from_file) cannot be written",
                )));
            }
            let key = self.utf8(key.as_ptr(), "ZoneInfo key")?;
            if !valid_zone_key(key.as_bytes()) {
                return Err(refuse(format!(
                    "ZoneInfo key {key:?} cannot be written: keys are 1..255 characters from A-Za-z0-9_+-/ with no empty segment"
                )));
            }
            return Ok(TzText::Zone(key));
        }
        Err(refuse(format!(
            "tzinfo of type {} cannot be written; amber writes datetime.timezone and zoneinfo.ZoneInfo",
            type_name(self.py, tzinfo)
        )))
    }

    fn decimal(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        // str(d) is exact and about six times faster than d.as_tuple(); anything it gives
        // that the parser does not expect goes the as_tuple way.
        // SAFETY: str() of a live Decimal; NULL means an exception is set.
        let text = PyObj::from_owned(unsafe { ffi::PyObject_Str(obj) })
            .ok_or_else(|| EncodeFail::python(self.py))?;
        let mut size: ffi::Py_ssize_t = 0;
        // SAFETY: text is a str we hold; its UTF-8 form stays valid while it lives.
        let data = unsafe { ffi::PyUnicode_AsUTF8AndSize(text.as_ptr(), &mut size) };
        if !data.is_null() {
            // SAFETY: data points to size bytes owned by `text`.
            let text = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size as usize) };
            if let Some(decimal) = decimal_text(text) {
                self.writer.ext(&ExtBlob::Decimal(decimal.as_decimal()));
                return Ok(());
            }
        }
        // SAFETY: clears a possible encoding error before the fallback.
        unsafe { ffi::PyErr_Clear() };
        self.decimal_from_tuple(obj)
    }

    fn decimal_from_tuple(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        let parts = self.call_method0(obj, interned!(c"as_tuple"))?;
        let item = |i| {
            // SAFETY: parts is a live object we hold; GetItem checks the type and index and
            // returns a borrowed item (or NULL with an exception).
            let p = unsafe { ffi::PyTuple_GetItem(parts.as_ptr(), i) };
            if p.is_null() {
                Err(EncodeFail::python(self.py))
            } else {
                Ok(p)
            }
        };
        let (sign, digits, exponent) = (item(0)?, item(1)?, item(2)?);
        let negative = match self.small_int(sign, "Decimal sign")? {
            0 => false,
            1 => true,
            other => return Err(refuse(format!("Decimal sign {other} is not 0 or 1"))),
        };
        // SAFETY: type check on a live object.
        let kind = if unsafe { ffi::PyUnicode_Check(exponent) } != 0 {
            match self.utf8(exponent, "Decimal exponent")?.as_str() {
                "F" => DecimalKind::Infinity,
                "n" => DecimalKind::NaN { signaling: false },
                "N" => DecimalKind::NaN { signaling: true },
                _ => {
                    return Err(refuse(String::from(
                        "Decimal exponent is not an int or F/n/N",
                    )))
                }
            }
        } else {
            DecimalKind::Finite(self.small_int(exponent, "Decimal exponent")?)
        };
        let mut text = DecimalText {
            negative,
            kind,
            digits: String::new(),
        };
        if !matches!(text.kind, DecimalKind::Infinity) {
            // SAFETY: type check on a live object (held by `parts`).
            if unsafe { ffi::PyTuple_Check(digits) } == 0 {
                return Err(refuse(String::from("Decimal digits are not a tuple")));
            }
            // SAFETY: digits is a tuple kept alive by `parts`.
            let n = unsafe { ffi::PyTuple_GET_SIZE(digits) };
            text.digits.reserve(n as usize);
            for i in 0..n {
                // SAFETY: 0 <= i < len(digits); borrowed from the tuple.
                let d = unsafe { ffi::PyTuple_GET_ITEM(digits, i) };
                match self.small_int(d, "Decimal digit")? {
                    d @ 0..=9 => text.digits.push(char::from(b'0' + d as u8)),
                    other => return Err(refuse(format!("Decimal digit {other} is not 0..9"))),
                }
            }
        }
        self.writer.ext(&ExtBlob::Decimal(text.as_decimal()));
        Ok(())
    }

    fn uuid(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        let py = self.py;
        let int = self.attr(obj, interned!(c"int"))?;
        // SAFETY: int is a live object we hold for the duration of this borrow.
        let value: u128 = unsafe { Bound::from_borrowed_ptr(py, int.as_ptr()) }
            .extract()
            .map_err(|_| refuse(String::from("UUID.int is not an int in 0..2**128")))?;
        let is_safe = self.attr(obj, interned!(c"is_safe"))?;
        let member = |slot: &'static Cached, name: &'static CStr| {
            slot.get_or_init(|| {
                let enum_type = SAFE_UUID.loaded_attr(c"uuid", c"SafeUUID");
                if enum_type.is_null() {
                    return enum_type;
                }
                // SAFETY: enum_type is a live class; the name is NUL-terminated.
                let m = unsafe { ffi::PyObject_GetAttrString(enum_type, name.as_ptr()) };
                if m.is_null() {
                    // SAFETY: the lookup failed; nothing to keep.
                    unsafe { ffi::PyErr_Clear() };
                }
                m
            })
        };
        let is_safe = is_safe.as_ptr();
        let is_safe = if is_safe == member(&SAFE_UUID_UNKNOWN, c"unknown") {
            SafeUuid::Unknown
        } else if is_safe == member(&SAFE_UUID_SAFE, c"safe") {
            SafeUuid::Safe
        } else if is_safe == member(&SAFE_UUID_UNSAFE, c"unsafe") {
            SafeUuid::Unsafe
        } else {
            return Err(refuse(String::from(
                "UUID.is_safe is not a uuid.SafeUUID member",
            )));
        };
        self.writer.ext(&ExtBlob::Uuid(Uuid {
            bytes: value.to_be_bytes(),
            is_safe,
        }));
        Ok(())
    }

    /// A build-after value from attributes of `obj` (range, slice), written like a tuple.
    fn build_after(
        &mut self,
        obj: *mut ffi::PyObject,
        code: ExtCode,
        names: &[(*mut ffi::PyObject, &'static str)],
    ) -> Result<(), EncodeFail> {
        let Some(token) = self.begin_value(obj, true)? else {
            return Ok(());
        };
        self.writer.ext_header(code);
        for &(name, shown) in names {
            let value = self.attr(obj, name)?;
            self.nested_value(value.as_ptr())
                .map_err(|e| e.at(Segment::Attr(String::from(shown)), obj))?;
        }
        self.end_immutable(obj, token);
        Ok(())
    }

    fn fraction(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        let names = [
            (interned!(c"numerator"), "numerator"),
            (interned!(c"denominator"), "denominator"),
        ];
        for (name, _) in names {
            let v = self.attr(obj, name)?;
            // SAFETY: type check on a live object.
            if unsafe { ffi::PyLong_CheckExact(v.as_ptr()) } == 0 {
                return Err(refuse(String::from(
                    "Fraction numerator and denominator must be ints",
                )));
            }
        }
        self.build_after(obj, ExtCode::Fraction, &names)
    }

    fn deque(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        if self.write_ref_if_seen(obj) {
            return Ok(());
        }
        self.enter()?;
        self.writer.ext_header(ExtCode::Deque);
        let maxlen = self.attr(obj, interned!(c"maxlen"))?;
        self.nested_value(maxlen.as_ptr())
            .map_err(|e| e.at(Segment::Attr(String::from("maxlen")), obj))?;
        // A private copy of the items: encoding them may run Python code that changes
        // the deque.
        // SAFETY: obj is a deque; NULL means an exception is set.
        let items = PyObj::from_owned(unsafe { ffi::PySequence_List(obj) })
            .ok_or_else(|| EncodeFail::python(self.py))?;
        self.enter()?;
        // The copy and the deque hold each item once: two references for an item met here
        // alone.
        let written = match self.compact_list(items.as_ptr(), 2) {
            Compact::Written => true,
            Compact::Rows(n) => self.rows(items.as_ptr(), n, 2, obj)?,
            Compact::Records(n) => self.records(items.as_ptr(), n, 2, obj)?,
            Compact::Objects(n) => self.object_rows(items.as_ptr(), n, 2, obj)?,
            Compact::Plain => false,
        };
        if written {
            self.leave();
            self.leave();
            return Ok(());
        }
        // SAFETY: items is a list only we hold, so nothing can change it.
        let n = unsafe { ffi::PyList_GET_SIZE(items.as_ptr()) };
        self.writer.list_header(n as usize);
        for i in 0..n {
            // SAFETY: 0 <= i < len(items); borrowed from the list we hold.
            let item = unsafe { ffi::PyList_GET_ITEM(items.as_ptr(), i) };
            self.nested_value(item)
                .map_err(|e| e.at(Segment::Index(i as usize), obj))?;
        }
        self.leave();
        self.leave();
        Ok(())
    }

    /// OrderedDict, Counter, defaultdict: (factory,) then a dict of the items in order.
    fn dict_like(&mut self, obj: *mut ffi::PyObject, code: ExtCode) -> Result<(), EncodeFail> {
        if self.write_ref_if_seen(obj) {
            return Ok(());
        }
        self.enter()?;
        self.writer.ext_header(code);
        if code == ExtCode::DefaultDict {
            let factory = self.attr(obj, interned!(c"default_factory"))?;
            self.factory(factory.as_ptr())?;
        }
        // A private exact dict of the items in iteration order (dict(obj)): encoding them
        // may run Python code that changes the original.
        // SAFETY: plain constructor, then a merge that iterates obj in its own order (an
        // OrderedDict through its keys, other dicts directly).
        let items = PyObj::from_owned(unsafe { ffi::PyDict_New() })
            .ok_or_else(|| EncodeFail::python(self.py))?;
        // SAFETY: items is a fresh dict; obj is a live mapping.
        if unsafe { ffi::PyDict_Merge(items.as_ptr(), obj, 1) } < 0 {
            return Err(EncodeFail::python(self.py));
        }
        self.private_dict(&items, obj, false)?;
        self.leave();
        Ok(())
    }

    /// Writes `items`, a dict made for the occasion that nothing else can reach, as the
    /// DICT value of `obj`; error paths name its pairs by key, or by attribute for `attrs`.
    fn private_dict(
        &mut self,
        items: &PyObj,
        obj: *mut ffi::PyObject,
        attrs: bool,
    ) -> Result<(), EncodeFail> {
        self.enter()?;
        // SAFETY: items is a dict only we hold.
        let n = unsafe { ffi::PyDict_Size(items.as_ptr()) };
        self.writer.dict_header(n as usize);
        let mut pos: ffi::Py_ssize_t = 0;
        let mut key: *mut ffi::PyObject = std::ptr::null_mut();
        let mut value: *mut ffi::PyObject = std::ptr::null_mut();
        let mut index = 0;
        // SAFETY: iterating a dict nothing else can reach; key and value are borrowed
        // from it.
        while unsafe { ffi::PyDict_Next(items.as_ptr(), &mut pos, &mut key, &mut value) } != 0 {
            let label = super::error::key_label(self.py, key);
            let (key_at, value_at) = if attrs {
                (Segment::Attr(label.clone()), Segment::Attr(label))
            } else {
                (Segment::KeyOf(index), Segment::Key(label))
            };
            self.nested_value(key).map_err(|e| e.at(key_at, obj))?;
            self.nested_value(value).map_err(|e| e.at(value_at, obj))?;
            index += 1;
        }
        self.leave();
        Ok(())
    }

    /// `types.SimpleNamespace`: a new dict of its attributes, in order.
    fn namespace(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        if self.write_ref_if_seen(obj) {
            return Ok(());
        }
        // SAFETY: obj is a live SimpleNamespace, whose instances have a __dict__; a new
        // reference or NULL with an exception.
        let attrs =
            PyObj::from_owned(unsafe { ffi::PyObject_GenericGetDict(obj, std::ptr::null_mut()) })
                .ok_or_else(|| EncodeFail::python(self.py))?;
        // A private copy: encoding the values may run code that changes the namespace.
        // SAFETY: attrs is a live dict; PyDict_Copy returns a new exact dict or NULL.
        let items = PyObj::from_owned(unsafe { ffi::PyDict_Copy(attrs.as_ptr()) })
            .ok_or_else(|| EncodeFail::python(self.py))?;
        let mut pos: ffi::Py_ssize_t = 0;
        let mut key: *mut ffi::PyObject = std::ptr::null_mut();
        let mut value: *mut ffi::PyObject = std::ptr::null_mut();
        // SAFETY: iterating a dict nothing else can reach; the key is borrowed for a type
        // check only.
        while unsafe { ffi::PyDict_Next(items.as_ptr(), &mut pos, &mut key, &mut value) } != 0 {
            // SAFETY: a type check of a live key.
            if unsafe { ffi::PyUnicode_CheckExact(key) } == 0 {
                return Err(refuse(String::from(
                    "a SimpleNamespace has an attribute name that is not a str",
                )));
            }
        }
        self.enter()?;
        self.writer.ext_header(ExtCode::Namespace);
        self.private_dict(&items, obj, true)?;
        self.leave();
        Ok(())
    }

    /// `Ellipsis` and `NotImplemented`: one object each per process, written in full every
    /// time, never memoized (spec 6.4).
    pub(super) fn singleton(&mut self, obj: *mut ffi::PyObject) -> bool {
        // SAFETY: comparing with the interpreter's two singletons.
        let constant = unsafe {
            if obj == ffi::Py_Ellipsis() {
                Singleton::Ellipsis
            } else if obj == ffi::Py_NotImplemented() {
                Singleton::NotImplemented
            } else {
                return false;
            }
        };
        self.writer.ext(&ExtBlob::Singleton(constant));
        true
    }

    /// A defaultdict's factory: None or the name of a builtin type.
    fn factory(&mut self, factory: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        // SAFETY: comparing with the None singleton.
        if factory == unsafe { ffi::Py_None() } {
            self.writer.none();
            return Ok(());
        }
        let builtins = builtin_factories();
        match builtins.iter().find(|(_, ty)| factory == ty.cast()) {
            Some((known, _)) => {
                self.writer.str(known.name().as_bytes());
                Ok(())
            }
            None => Err(refuse(format!(
                "defaultdict factory {} is not a builtin type; amber can only write None, {}",
                callable_name(self.py, factory),
                Factory::names()
            ))),
        }
    }

    fn array(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        let typecode = self.attr(obj, interned!(c"typecode"))?;
        let typecode = self.utf8(typecode.as_ptr(), "array typecode")?;
        let code = match typecode.as_bytes() {
            [c] => ArrayTypecode::from_byte(*c),
            _ => None,
        };
        let Some(code) = code else {
            return Err(refuse(format!(
                "array typecode {typecode:?} cannot be written"
            )));
        };
        let wire = code.wire_size();
        // SAFETY: a zeroed Py_buffer is the documented initial state for GetBuffer.
        let mut view = crate::buffer::BufferView(unsafe { std::mem::zeroed() });
        // SAFETY: obj exports a contiguous buffer; NULL/-1 means an exception is set.
        if unsafe { ffi::PyObject_GetBuffer(obj, &mut view.0, ffi::PyBUF_SIMPLE) } < 0 {
            return Err(EncodeFail::python(self.py));
        }
        if view.0.itemsize != 0 && view.0.itemsize as usize != wire && view.0.len != 0 {
            return Err(refuse(format!(
                "array typecode '{}' has {}-byte items on this platform, but the format has {wire}-byte items",
                code.byte() as char, view.0.itemsize
            )));
        }
        let len = view.0.len.max(0) as usize;
        // Out of band the items stay in the array's memory, which is little-endian only on a
        // little-endian host; a big-endian one swaps them into the payload instead.
        if cfg!(target_endian = "little") && self.goes_out_of_band(len) {
            drop(view);
            return self.out_of_band_object(obj, BufferKind::Array(code), len);
        }
        let data: &[u8] = if len == 0 || view.0.buf.is_null() {
            &[]
        } else {
            // SAFETY: the view exports len contiguous bytes and stays valid (the array
            // cannot be resized while exported) until `view` drops; no Python code runs.
            unsafe { std::slice::from_raw_parts(view.0.buf.cast::<u8>(), len) }
        };
        if cfg!(target_endian = "big") && wire > 1 {
            let mut swapped = data.to_vec();
            for item in swapped.chunks_exact_mut(wire) {
                item.reverse();
            }
            self.writer.ext(&ExtBlob::Array(Array {
                typecode: code,
                data: &swapped,
            }));
        } else {
            self.writer.ext(&ExtBlob::Array(Array {
                typecode: code,
                data,
            }));
        }
        drop(view);
        Ok(())
    }

    fn path(&mut self, obj: *mut ffi::PyObject, flavour: PathFlavour) -> Result<(), EncodeFail> {
        // SAFETY: str() of a live object; NULL means an exception is set.
        let text = PyObj::from_owned(unsafe { ffi::PyObject_Str(obj) })
            .ok_or_else(|| EncodeFail::python(self.py))?;
        // SAFETY: text is a str (str() returns one); surrogatepass encodes any str.
        let encoded = PyObj::from_owned(unsafe {
            ffi::PyUnicode_AsEncodedString(
                text.as_ptr(),
                c"utf-8".as_ptr(),
                c"surrogatepass".as_ptr(),
            )
        })
        .ok_or_else(|| EncodeFail::python(self.py))?;
        // SAFETY: encoded is a bytes object we hold until the end of this function.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                ffi::PyBytes_AS_STRING(encoded.as_ptr()).cast::<u8>(),
                ffi::Py_SIZE(encoded.as_ptr()) as usize,
            )
        };
        self.writer.ext(&ExtBlob::Path(Path {
            flavour,
            text: bytes,
        }));
        Ok(())
    }

    /// The packed address and IPv6 scope of an address object.
    fn packed_address(
        &self,
        addr: *mut ffi::PyObject,
        v6: bool,
    ) -> Result<(Vec<u8>, Option<String>), EncodeFail> {
        let packed = self.attr(addr, interned!(c"packed"))?;
        let p = packed.as_ptr();
        // SAFETY: type check on a live object.
        if unsafe { ffi::PyBytes_Check(p) } == 0 {
            return Err(refuse(String::from("ip address .packed is not bytes")));
        }
        // SAFETY: p is a bytes object we hold while copying.
        let out = unsafe {
            std::slice::from_raw_parts(
                ffi::PyBytes_AS_STRING(p).cast::<u8>(),
                ffi::Py_SIZE(p) as usize,
            )
        }
        .to_vec();
        if out.len() != if v6 { 16 } else { 4 } {
            return Err(refuse(String::from(
                "ip address .packed has the wrong length",
            )));
        }
        let mut scope = None;
        if v6 {
            let scope_id = self.attr(addr, interned!(c"scope_id"))?;
            // SAFETY: comparing with the None singleton.
            if scope_id.as_ptr() != unsafe { ffi::Py_None() } {
                let text = self.utf8(scope_id.as_ptr(), "IPv6 scope id")?;
                if text.is_empty() || text.contains(['%', '/']) {
                    return Err(refuse(String::from(
                        "IPv6 scope id is empty or holds '%' or '/'",
                    )));
                }
                scope = Some(text);
            }
        }
        Ok((out, scope))
    }

    /// IP_ADDRESS (`prefixed` None), IP_NETWORK (Some(false)), IP_INTERFACE (Some(true)).
    fn ip(
        &mut self,
        obj: *mut ffi::PyObject,
        v6: bool,
        prefixed: Option<bool>,
    ) -> Result<(), EncodeFail> {
        let Some(interface) = prefixed else {
            let (packed, scope) = self.packed_address(obj, v6)?;
            let address = ip_addr(&packed, scope.as_deref());
            self.writer.ext(&ExtBlob::IpAddress(IpAddress(address)));
            return Ok(());
        };
        let ((packed, scope), network) = if interface {
            (
                self.packed_address(obj, v6)?,
                self.attr(obj, interned!(c"network"))?,
            )
        } else {
            let address = self.attr(obj, interned!(c"network_address"))?;
            // SAFETY: obj is live; a new reference to it (a network is its own network).
            let network = unsafe { owned_borrow(obj) };
            (self.packed_address(address.as_ptr(), v6)?, network)
        };
        let prefix = self.attr(network.as_ptr(), interned!(c"prefixlen"))?;
        let prefix = self.small_int(prefix.as_ptr(), "prefix length")?;
        let max = if v6 { 128 } else { 32 };
        if !(0..=max).contains(&prefix) {
            return Err(refuse(format!(
                "prefix length {prefix} is out of range 0..{max}"
            )));
        }
        let value = IpPrefixed {
            prefix: prefix as u8,
            address: ip_addr(&packed, scope.as_deref()),
        };
        self.writer.ext(&if interface {
            ExtBlob::IpInterface(value)
        } else {
            ExtBlob::IpNetwork(value)
        });
        Ok(())
    }
}

/// The address of 4 (IPv4) or 16 (IPv6) packed bytes, which `packed_address` checked.
fn ip_addr<'a>(packed: &[u8], scope: Option<&'a str>) -> IpAddr<'a> {
    match <[u8; 4]>::try_from(packed) {
        Ok(octets) => IpAddr::V4(octets),
        Err(_) => IpAddr::V6 {
            octets: <[u8; 16]>::try_from(packed).unwrap_or([0; 16]),
            scope,
        },
    }
}

/// A datetime.date's fields.
///
/// # Safety
/// `obj` must be a live `datetime.date` (or `datetime.datetime`) and the GIL held.
unsafe fn date_of(obj: *mut ffi::PyObject) -> Date {
    // SAFETY: per the function contract.
    unsafe {
        Date {
            year: ffi::PyDateTime_GET_YEAR(obj) as u16,
            month: ffi::PyDateTime_GET_MONTH(obj) as u8,
            day: ffi::PyDateTime_GET_DAY(obj) as u8,
        }
    }
}

/// A TIME from hour, minute, second, microsecond and fold, as CPython holds them.
fn time_of(fields: [std::os::raw::c_int; 5], tz: Tz<'_>) -> Time<'_> {
    let [hour, minute, second, microsecond, fold] = fields;
    Time {
        hour: hour as u8,
        minute: minute as u8,
        second: second as u8,
        microsecond: microsecond as u32,
        fold: fold & 1 != 0,
        tz,
    }
}

/// The Decimal for the text `str(Decimal)` gives (`-1.250E+7`, `0.00`, `-Infinity`,
/// `sNaN12`), or `None` for any text of another shape.
fn decimal_text(text: &[u8]) -> Option<DecimalText> {
    let (negative, rest) = match text {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, text),
    };
    let digits_only = |d: &[u8]| d.iter().all(u8::is_ascii_digit);
    let special = |signaling: bool, payload: &[u8]| {
        let ok = digits_only(payload) && payload.first() != Some(&b'0');
        ok.then(|| DecimalText {
            negative,
            kind: DecimalKind::NaN { signaling },
            digits: String::from_utf8_lossy(payload).into_owned(),
        })
    };
    match rest {
        b"Infinity" => {
            return Some(DecimalText {
                negative,
                kind: DecimalKind::Infinity,
                digits: String::new(),
            })
        }
        [b'N', b'a', b'N', payload @ ..] => return special(false, payload),
        [b's', b'N', b'a', b'N', payload @ ..] => return special(true, payload),
        _ => {}
    }
    let (mantissa, exponent) = match rest.iter().position(|&c| c == b'E' || c == b'e') {
        Some(at) => {
            let exp = std::str::from_utf8(rest.get(at + 1..)?).ok()?;
            let exp = exp.strip_prefix('+').unwrap_or(exp);
            (rest.get(..at)?, exp.parse::<i64>().ok()?)
        }
        None => (rest, 0),
    };
    let (int_part, frac_part) = match mantissa.iter().position(|&c| c == b'.') {
        Some(at) => (mantissa.get(..at)?, mantissa.get(at + 1..)?),
        None => (mantissa, &[][..]),
    };
    if int_part.is_empty() || !digits_only(int_part) || !digits_only(frac_part) {
        return None;
    }
    let exponent = exponent.checked_sub(i64::try_from(frac_part.len()).ok()?)?;
    // Leading zeros of the coefficient are not written ("0.05" is 5E-2).
    let mut digits: String = int_part
        .iter()
        .chain(frac_part)
        .skip_while(|&&d| d == b'0')
        .map(|&d| char::from(d))
        .collect();
    if digits.is_empty() {
        digits.push('0');
    }
    Some(DecimalText {
        negative,
        kind: DecimalKind::Finite(exponent),
        digits,
    })
}

/// A new reference to a borrowed, non-NULL object.
///
/// # Safety
/// `ptr` must be a live object and the GIL held.
unsafe fn owned_borrow(ptr: *mut ffi::PyObject) -> PyObj {
    match std::ptr::NonNull::new(ptr) {
        // SAFETY: per the function contract.
        Some(p) => unsafe { PyObj::from_borrowed(p) },
        // SAFETY: None is always live.
        None => unsafe { PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(ffi::Py_None())) },
    }
}

/// `module.qualname` of an object's type, for messages.
fn type_name(py: Python<'_>, obj: *mut ffi::PyObject) -> String {
    // SAFETY: obj is live; its type is a live object borrowed for this call.
    let ty = unsafe { Bound::from_borrowed_ptr(py, ffi::Py_TYPE(obj).cast()) };
    callable_name(py, ty.as_ptr())
}

/// `module.qualname` of a class or function, for messages; its repr otherwise.
fn callable_name(py: Python<'_>, obj: *mut ffi::PyObject) -> String {
    // SAFETY: obj is a live object borrowed for this call.
    let obj = unsafe { Bound::from_borrowed_ptr(py, obj) };
    let get = |name: &str| obj.getattr(name).and_then(|v| v.extract::<String>()).ok();
    match (get("__module__"), get("__qualname__")) {
        (Some(module), Some(name)) if module != "builtins" => format!("{module}.{name}"),
        (_, Some(name)) => name,
        _ => obj
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| String::from("?")),
    }
}
