//! EXT values of the known library types (all codes but NDARRAY and NUMPY_SCALAR), made from
//! the typed values the format crate parsed and checked (`amber_format::ext`).
//!
//! What is left here are the host's checks: a Python exception while building (a zoneinfo
//! key that the database lacks, a decimal exponent out of range, a path class the platform
//! cannot instantiate) is `invalid_ext`. The stdlib modules are imported lazily, on first
//! need, and nothing a payload names is ever imported.

use std::ffi::CStr;

use amber_format::ext::composite::{self, Checked, Factory, Int, Part};
use amber_format::ext::{
    Array, ArrayTypecode, Date, DateTime, Decimal, DecimalValue, ExtBlob, IpAddr, Path, SafeUuid,
    Singleton, Time, Tz, Uuid,
};
use amber_format::{
    BuildAfterCode, BuildError, CompositeCode, CreateFirstCode, ErrorKind, ExtCode,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3_ffi as ffi;

use super::PyBuilder;
use crate::object::{Cached, PyObj};

static ZONEINFO: Cached = Cached::new();
static DECIMAL: Cached = Cached::new();
static DECIMAL_CONTEXT: Cached = Cached::new();
static UUID: Cached = Cached::new();
static SAFE_UUID: Cached = Cached::new();
static SAFE_UUID_MEMBERS: [Cached; 3] = [Cached::new(), Cached::new(), Cached::new()];
static NAME_INT: Cached = Cached::new();
static NAME_IS_SAFE: Cached = Cached::new();
static FRACTION: Cached = Cached::new();
static DEQUE: Cached = Cached::new();
static ORDERED_DICT: Cached = Cached::new();
static COUNTER: Cached = Cached::new();
static DEFAULTDICT: Cached = Cached::new();
static SIMPLE_NAMESPACE: Cached = Cached::new();
static ARRAY: Cached = Cached::new();
static PATHS: [Cached; 4] = [Cached::new(), Cached::new(), Cached::new(), Cached::new()];
static PATH_NAMES: [&CStr; 4] = [
    c"PurePosixPath",
    c"PureWindowsPath",
    c"PosixPath",
    c"WindowsPath",
];
/// IP_ADDRESS, IP_NETWORK, IP_INTERFACE: the order of the two tables below.
const IP_CODES: [ExtCode; 3] = [ExtCode::IpAddress, ExtCode::IpNetwork, ExtCode::IpInterface];
/// IPv4 then IPv6 class of each of IP_ADDRESS, IP_NETWORK, IP_INTERFACE.
static IP_CLASSES: [[Cached; 2]; 3] = [
    [Cached::new(), Cached::new()],
    [Cached::new(), Cached::new()],
    [Cached::new(), Cached::new()],
];
static IP_NAMES: [[&CStr; 2]; 3] = [
    [c"IPv4Address", c"IPv6Address"],
    [c"IPv4Network", c"IPv6Network"],
    [c"IPv4Interface", c"IPv6Interface"],
];

/// An `invalid_ext` error with a sentence for people.
#[cold]
pub(super) fn invalid(detail: String) -> BuildError {
    BuildError::Rejected(ErrorKind::InvalidExt, detail)
}

impl PyBuilder<'_, '_> {
    /// The exception just raised while building an EXT value: `invalid_ext` with its text,
    /// except for MemoryError and non-Exception errors (KeyboardInterrupt), which propagate.
    #[cold]
    pub(super) fn python_rejected(&mut self, what: &str) -> BuildError {
        let py = self.py;
        let Some(err) = PyErr::take(py) else {
            return invalid(format!("{what} could not be built"));
        };
        if err.is_instance_of::<pyo3::exceptions::PyException>(py)
            && !err.is_instance_of::<pyo3::exceptions::PyMemoryError>(py)
        {
            let ty = err
                .get_type(py)
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default();
            invalid(format!("{what}: {ty}: {}", err.value(py)))
        } else {
            err.restore(py);
            self.host_failure()
        }
    }

    /// Owns a C-API result; NULL becomes [`PyBuilder::python_rejected`].
    pub(super) fn made(
        &mut self,
        ptr: *mut ffi::PyObject,
        what: &str,
    ) -> Result<PyObj, BuildError> {
        PyObj::from_owned(ptr).ok_or_else(|| self.python_rejected(what))
    }

    /// `module.attr`, importing the module on first need (borrowed, kept forever).
    pub(super) fn lib(
        &mut self,
        slot: &'static Cached,
        module: &CStr,
        attr: &CStr,
    ) -> Result<*mut ffi::PyObject, BuildError> {
        let ptr = slot.imported_attr(module, attr);
        if ptr.is_null() {
            return Err(self.python_rejected(&format!(
                "importing {}.{}",
                module.to_string_lossy(),
                attr.to_string_lossy()
            )));
        }
        Ok(ptr)
    }

    /// `callable(*args)`.
    pub(super) fn call(
        &mut self,
        callable: *mut ffi::PyObject,
        args: &[*mut ffi::PyObject],
        what: &str,
    ) -> Result<PyObj, BuildError> {
        // SAFETY: callable and every arg are live objects the caller holds; vectorcall
        // borrows them for the call.
        let ptr = unsafe {
            ffi::PyObject_Vectorcall(callable, args.as_ptr(), args.len(), std::ptr::null_mut())
        };
        self.made(ptr, what)
    }

    /// `obj.name(*args)`.
    fn call_method(
        &mut self,
        obj: *mut ffi::PyObject,
        name: &CStr,
        args: &[*mut ffi::PyObject],
        what: &str,
    ) -> Result<PyObj, BuildError> {
        // SAFETY: obj is live; the name is NUL-terminated.
        let method = unsafe { ffi::PyObject_GetAttrString(obj, name.as_ptr()) };
        let method = self.made(method, what)?;
        self.call(method.as_ptr(), args, what)
    }

    /// A str from strict UTF-8 (`invalid_ext` otherwise).
    fn text(&mut self, utf8: &[u8], what: &str, errors: &CStr) -> Result<PyObj, BuildError> {
        // SAFETY: decodes a valid slice; CPython checks the bytes and copies them.
        let ptr = unsafe {
            ffi::PyUnicode_DecodeUTF8(
                utf8.as_ptr().cast(),
                utf8.len() as ffi::Py_ssize_t,
                errors.as_ptr(),
            )
        };
        if ptr.is_null() {
            // SAFETY: discarding the UnicodeDecodeError (or MemoryError, rare) just raised.
            unsafe { ffi::PyErr_Clear() };
            return Err(invalid(format!("{what} is not valid UTF-8")));
        }
        self.made(ptr, what)
    }

    fn bytes_obj(&mut self, b: &[u8], what: &str) -> Result<PyObj, BuildError> {
        // SAFETY: copies b.len() bytes from a valid slice.
        let ptr = unsafe {
            ffi::PyBytes_FromStringAndSize(b.as_ptr().cast(), b.len() as ffi::Py_ssize_t)
        };
        self.made(ptr, what)
    }

    fn int_obj(&mut self, v: i64, what: &str) -> Result<PyObj, BuildError> {
        // SAFETY: plain constructor.
        let ptr = unsafe { ffi::PyLong_FromLongLong(v) };
        self.made(ptr, what)
    }

    /// The datetime C-API, importing `datetime` on first need.
    fn datetime_api(&mut self) -> Result<&'static ffi::PyDateTime_CAPI, BuildError> {
        // SAFETY: reads (and on first use fills) pyo3-ffi's pointer to the capsule's static
        // struct, which lives as long as the interpreter; GIL held.
        let api = unsafe {
            if ffi::PyDateTimeAPI().is_null() {
                ffi::PyDateTime_IMPORT();
            }
            ffi::PyDateTimeAPI().as_ref()
        };
        match api {
            Some(api) => Ok(api),
            None => Err(self.python_rejected("importing datetime")),
        }
    }

    pub(super) fn known_blob(&mut self, blob: ExtBlob<'_>) -> Result<PyObj, BuildError> {
        match blob {
            ExtBlob::Date(date) => self.date(date),
            ExtBlob::Time(time) => self.clock(None, time),
            ExtBlob::DateTime(DateTime { date, time }) => self.clock(Some(date), time),
            ExtBlob::TimeDelta(delta) => self.delta(
                delta.days,
                delta.seconds as i32,
                delta.microseconds as i32,
                "TIMEDELTA",
            ),
            ExtBlob::TzInfo(tz) => self.tz("TZINFO", tz)?.ok_or_else(|| {
                invalid(String::from("TZINFO tzkind 0 (naive) is not allowed here"))
            }),
            ExtBlob::Decimal(decimal) => self.decimal(decimal),
            ExtBlob::Uuid(uuid) => self.uuid(uuid),
            ExtBlob::Array(array) => self.array(array),
            ExtBlob::Path(path) => self.path(path),
            ExtBlob::IpAddress(address) => self.ip(0, None, address.0),
            ExtBlob::IpNetwork(net) => self.ip(1, Some(net.prefix), net.address),
            ExtBlob::IpInterface(iface) => self.ip(2, Some(iface.prefix), iface.address),
            ExtBlob::NdArray(array) => self.ndarray(array),
            ExtBlob::NumpyScalar(scalar) => self.numpy_scalar(scalar),
            ExtBlob::OutOfBand(oob) => self.out_of_band(oob),
            ExtBlob::Singleton(constant) => {
                // SAFETY: the interpreter's own singletons; PyObj takes a new reference.
                let ptr = unsafe {
                    match constant {
                        Singleton::Ellipsis => ffi::Py_Ellipsis(),
                        Singleton::NotImplemented => ffi::Py_NotImplemented(),
                    }
                };
                // SAFETY: a live, non-NULL singleton.
                Ok(unsafe { PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(ptr)) })
            }
        }
    }

    fn date(&mut self, date: Date) -> Result<PyObj, BuildError> {
        let api = self.datetime_api()?;
        // SAFETY: the C-API constructor with checked fields; NULL means an exception.
        let ptr = unsafe {
            (api.Date_FromDate)(
                i32::from(date.year),
                i32::from(date.month),
                i32::from(date.day),
                api.DateType,
            )
        };
        self.made(ptr, "DATE")
    }

    /// A TIME, or with `date` a DATETIME.
    fn clock(&mut self, date: Option<Date>, time: Time<'_>) -> Result<PyObj, BuildError> {
        let what = if date.is_some() { "DATETIME" } else { "TIME" };
        let tz = self.tz(what, time.tz)?;
        let api = self.datetime_api()?;
        // SAFETY: None is always live.
        let tz_ptr = tz.as_ref().map_or(unsafe { ffi::Py_None() }, PyObj::as_ptr);
        let [hour, minute, second] = [time.hour, time.minute, time.second].map(i32::from);
        let (micro, fold) = (time.microsecond as i32, i32::from(time.fold));
        // SAFETY: the C-API constructors with checked fields and a live tzinfo (or None);
        // NULL means an exception.
        let ptr = unsafe {
            match date {
                Some(date) => (api.DateTime_FromDateAndTimeAndFold)(
                    i32::from(date.year),
                    i32::from(date.month),
                    i32::from(date.day),
                    hour,
                    minute,
                    second,
                    micro,
                    tz_ptr,
                    fold,
                    api.DateTimeType,
                ),
                None => (api.Time_FromTimeAndFold)(
                    hour,
                    minute,
                    second,
                    micro,
                    tz_ptr,
                    fold,
                    api.TimeType,
                ),
            }
        };
        self.made(ptr, what)
    }

    fn delta(
        &mut self,
        days: i32,
        seconds: i32,
        micros: i32,
        what: &str,
    ) -> Result<PyObj, BuildError> {
        let api = self.datetime_api()?;
        // SAFETY: the C-API constructor with in-range fields; NULL means an exception.
        let ptr = unsafe { (api.Delta_FromDelta)(days, seconds, micros, 1, api.DeltaType) };
        self.made(ptr, what)
    }

    /// The time zone of a `tz` field: `None` for a naive value. `what` is the code's name.
    fn tz(&mut self, what: &str, tz: Tz<'_>) -> Result<Option<PyObj>, BuildError> {
        match tz {
            Tz::Naive => Ok(None),
            Tz::Utc => {
                let api = self.datetime_api()?;
                // SAFETY: timezone.utc is a live static object of the datetime module.
                Ok(Some(unsafe {
                    PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(api.TimeZone_UTC))
                }))
            }
            Tz::Fixed { offset, name } => {
                const DAY: i64 = 86_400_000_000;
                let name = match name {
                    Some(name) => Some(self.text(
                        name.as_bytes(),
                        &format!("{what} timezone name"),
                        c"strict",
                    )?),
                    None => None,
                };
                let days = offset.div_euclid(DAY);
                let rest = offset.rem_euclid(DAY);
                let delta = self.delta(
                    days as i32,
                    (rest / 1_000_000) as i32,
                    (rest % 1_000_000) as i32,
                    what,
                )?;
                let api = self.datetime_api()?;
                let name_ptr = name.as_ref().map_or(std::ptr::null_mut(), PyObj::as_ptr);
                // SAFETY: the C-API constructor with a live timedelta and a live str (or
                // NULL for no name); NULL means an exception.
                let ptr = unsafe { (api.TimeZone_FromTimeZone)(delta.as_ptr(), name_ptr) };
                self.made(ptr, &format!("{what} timezone")).map(Some)
            }
            Tz::Zone(key) => {
                // Whether the database has the key is the host's check: ZoneInfo raises.
                let key = self.text(key.as_bytes(), "zoneinfo key", c"strict")?;
                let zoneinfo = self.lib(&ZONEINFO, c"zoneinfo", c"ZoneInfo")?;
                self.call(zoneinfo, &[key.as_ptr()], &format!("{what} zoneinfo key"))
                    .map(Some)
            }
        }
    }

    fn decimal(&mut self, decimal: Decimal<'_>) -> Result<PyObj, BuildError> {
        let sign = if decimal.negative { "-" } else { "" };
        let text = match decimal.value {
            DecimalValue::Finite {
                exponent,
                coefficient,
            } => format!("{sign}{coefficient}E{exponent}"),
            DecimalValue::Infinity => format!("{sign}Infinity"),
            DecimalValue::NaN { signaling, payload } => {
                let nan = if signaling { "sNaN" } else { "NaN" };
                format!("{sign}{nan}{payload}")
            }
        };
        let decimal = self.lib(&DECIMAL, c"decimal", c"Decimal")?;
        let py = self.py;
        // A private context that traps InvalidOperation: an exponent out of Decimal's range
        // raises instead of quietly giving NaN.
        let context = DECIMAL_CONTEXT.get_or_init(|| {
            let made = (|| -> PyResult<Py<PyAny>> {
                let module = py.import("decimal")?;
                let kwargs = PyDict::new(py);
                kwargs.set_item(
                    "traps",
                    PyList::new(py, [module.getattr("InvalidOperation")?])?,
                )?;
                Ok(module.getattr("Context")?.call((), Some(&kwargs))?.unbind())
            })();
            match made {
                Ok(context) => context.into_ptr(),
                Err(e) => {
                    e.restore(py);
                    std::ptr::null_mut()
                }
            }
        });
        if context.is_null() {
            return Err(self.python_rejected("making a decimal context"));
        }
        let text = self.text(text.as_bytes(), "DECIMAL", c"strict")?;
        self.call(decimal, &[text.as_ptr(), context], "DECIMAL")
    }

    fn uuid(&mut self, uuid: Uuid) -> Result<PyObj, BuildError> {
        let member = match uuid.is_safe {
            SafeUuid::Safe => 0,
            SafeUuid::Unsafe => 1,
            SafeUuid::Unknown => 2,
        };
        let value = u128::from_be_bytes(uuid.bytes);
        let uuid_type = self.lib(&UUID, c"uuid", c"UUID")?;
        let names = [c"safe", c"unsafe", c"unknown"];
        let slot = SAFE_UUID_MEMBERS
            .get(member)
            .unwrap_or(&SAFE_UUID_MEMBERS[2]);
        let is_safe = slot.get_or_init(|| {
            let safe_uuid = SAFE_UUID.imported_attr(c"uuid", c"SafeUUID");
            if safe_uuid.is_null() {
                return safe_uuid;
            }
            let name = names.get(member).copied().unwrap_or(c"unknown");
            // SAFETY: safe_uuid is a live class; the name is NUL-terminated.
            unsafe { ffi::PyObject_GetAttrString(safe_uuid, name.as_ptr()) }
        });
        if is_safe.is_null() {
            return Err(self.python_rejected("UUID is_safe"));
        }
        let py = self.py;
        let int = match value.into_pyobject(py) {
            Ok(int) => int,
            Err(never) => match never {},
        };
        // SAFETY: a new reference moves from the Bound into the PyObj.
        let int = unsafe { PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(int.as_ptr())) };
        let names = [(&NAME_INT, c"int"), (&NAME_IS_SAFE, c"is_safe")];
        let mut interned = [std::ptr::null_mut(); 2];
        for ((slot, name), out) in names.iter().zip(interned.iter_mut()) {
            // SAFETY: interning a NUL-terminated ASCII name; NULL means an exception.
            *out = slot.get_or_init(|| unsafe { ffi::PyUnicode_InternFromString(name.as_ptr()) });
            if out.is_null() {
                return Err(self.python_rejected("UUID"));
            }
        }
        // `object.__new__(UUID)` then the two slots, as UUID.__setstate__ does: UUID's own
        // __init__ and __setattr__ (which refuses) are skipped.
        // SAFETY: PyBaseObject_Type is the interpreter's static `object` type.
        let object_new = unsafe { ffi::PyBaseObject_Type.tp_new };
        let Some(object_new) = object_new else {
            return Err(invalid(String::from("object has no tp_new")));
        };
        // SAFETY: plain constructor.
        let empty = unsafe { ffi::PyTuple_New(0) };
        let empty = self.made(empty, "UUID")?;
        // SAFETY: uuid_type is a live class whose instances object.__new__ can make (a
        // plain class with __slots__); the args tuple is empty; NULL means an exception.
        let obj = unsafe { object_new(uuid_type.cast(), empty.as_ptr(), std::ptr::null_mut()) };
        let obj = self.made(obj, "UUID")?;
        for (name, value) in interned.iter().zip([int.as_ptr(), is_safe]) {
            // SAFETY: obj is a fresh UUID; the slot descriptors take their own references.
            if unsafe { ffi::PyObject_GenericSetAttr(obj.as_ptr(), *name, value) } < 0 {
                return Err(self.python_rejected("UUID"));
            }
        }
        Ok(obj)
    }

    fn array(&mut self, array: Array<'_>) -> Result<PyObj, BuildError> {
        let Array { typecode, data } = array;
        let shell = self.empty_array("ARRAY", typecode)?;
        if !data.is_empty() {
            let bytes = self.bytes_obj(data, "ARRAY")?;
            self.call_method(shell.as_ptr(), c"frombytes", &[bytes.as_ptr()], "ARRAY")?;
            if cfg!(target_endian = "big") && typecode.wire_size() > 1 {
                self.call_method(shell.as_ptr(), c"byteswap", &[], "ARRAY")?;
            }
        }
        Ok(shell)
    }

    /// An empty `array.array` of a typecode the format defines, if the host's items have the
    /// wire size (`invalid_ext` otherwise); `what` names the value in messages.
    pub(super) fn empty_array(
        &mut self,
        what: &str,
        typecode: ArrayTypecode,
    ) -> Result<PyObj, BuildError> {
        let wire = typecode.wire_size();
        let array_type = self.lib(&ARRAY, c"array", c"array")?;
        let code = self.text(&[typecode.byte()], "ARRAY typecode", c"strict")?;
        let array = self.call(array_type, &[code.as_ptr()], what)?;
        // SAFETY: array is a live array.array; NULL means an exception.
        let size = unsafe { ffi::PyObject_GetAttrString(array.as_ptr(), c"itemsize".as_ptr()) };
        let size = self.made(size, what)?;
        // SAFETY: itemsize is an int; -1 with an error on overflow.
        let size = unsafe { ffi::PyLong_AsSsize_t(size.as_ptr()) };
        if size != wire as ffi::Py_ssize_t {
            // SAFETY: clears a possible conversion error.
            unsafe { ffi::PyErr_Clear() };
            return Err(invalid(format!(
                "{what} typecode '{}' has {size}-byte items on this platform, not {wire}",
                typecode.byte() as char
            )));
        }
        Ok(array)
    }

    /// Appends the little-endian items held by `buffer` (a buffer-protocol object) to an
    /// array made by [`PyBuilder::empty_array`]: one copy.
    pub(super) fn fill_array(
        &mut self,
        array: &PyObj,
        buffer: &PyObj,
        typecode: ArrayTypecode,
    ) -> Result<(), BuildError> {
        const WHAT: &str = "OUT_OF_BAND array";
        self.call_method(array.as_ptr(), c"frombytes", &[buffer.as_ptr()], WHAT)?;
        if cfg!(target_endian = "big") && typecode.wire_size() > 1 {
            self.call_method(array.as_ptr(), c"byteswap", &[], WHAT)?;
        }
        Ok(())
    }

    fn path(&mut self, path: Path<'_>) -> Result<PyObj, BuildError> {
        let flavour = usize::from(path.flavour.byte());
        let (Some(slot), Some(name)) = (PATHS.get(flavour), PATH_NAMES.get(flavour)) else {
            return Err(invalid(format!(
                "PATH flavour {flavour} is not defined (0..3)"
            )));
        };
        let text = self.text(path.text, "PATH string", c"surrogatepass")?;
        // Which concrete classes the platform can instantiate is the host's check: pathlib
        // raises for the other one.
        let class = self.lib(slot, c"pathlib", name)?;
        self.call(
            class,
            &[text.as_ptr()],
            &format!("PATH {}", name.to_string_lossy()),
        )
    }

    /// IP_ADDRESS (`which` 0, no prefix), IP_NETWORK (1) or IP_INTERFACE (2).
    fn ip(
        &mut self,
        which: usize,
        prefix: Option<u8>,
        address: IpAddr<'_>,
    ) -> Result<PyObj, BuildError> {
        let what = IP_CODES.get(which).map_or("IP", |code| code.spec_name());
        let v6 = address.is_v6();
        let packed = address.packed();
        let scope = match address {
            IpAddr::V6 { scope, .. } => scope,
            IpAddr::V4(_) => None,
        };
        let (Some(slot), Some(name)) = (
            IP_CLASSES.get(which).and_then(|c| c.get(usize::from(v6))),
            IP_NAMES.get(which).and_then(|c| c.get(usize::from(v6))),
        ) else {
            return Err(invalid(format!("{what} is not an ipaddress code")));
        };
        let class = self.lib(slot, c"ipaddress", name)?;
        let bytes = self.bytes_obj(packed, what)?;
        let Some(scope) = scope else {
            let arg = match prefix {
                None => bytes,
                Some(prefix) => {
                    let prefix = self.int_obj(i64::from(prefix), what)?;
                    // SAFETY: packs two live objects into a new tuple (own references).
                    let pair = unsafe { ffi::PyTuple_Pack(2, bytes.as_ptr(), prefix.as_ptr()) };
                    self.made(pair, what)?
                }
            };
            return self.call(class, &[arg.as_ptr()], what);
        };
        // The scope can only be given in text: "addr%scope[/prefix]".
        let addr_class = self.lib(&IP_CLASSES[0][1], c"ipaddress", c"IPv6Address")?;
        let plain = self.call(addr_class, &[bytes.as_ptr()], what)?;
        // SAFETY: str() of a live object; NULL means an exception.
        let plain = unsafe { ffi::PyObject_Str(plain.as_ptr()) };
        let plain = self.made(plain, what)?;
        let py = self.py;
        // SAFETY: plain is a str we hold for this borrow.
        let plain: String = unsafe { Bound::from_borrowed_ptr(py, plain.as_ptr()) }
            .extract()
            .unwrap_or_default();
        let text = match prefix {
            None => format!("{plain}%{scope}"),
            Some(prefix) => format!("{plain}%{scope}/{prefix}"),
        };
        let text = self.text(text.as_bytes(), what, c"strict")?;
        self.call(class, &[text.as_ptr()], what)
    }

    pub(super) fn known_begin(&mut self, code: CreateFirstCode) -> Result<PyObj, BuildError> {
        let class = match code {
            CreateFirstCode::Deque => self.lib(&DEQUE, c"collections", c"deque")?,
            CreateFirstCode::OrderedDict => {
                self.lib(&ORDERED_DICT, c"collections", c"OrderedDict")?
            }
            CreateFirstCode::Counter => self.lib(&COUNTER, c"collections", c"Counter")?,
            CreateFirstCode::DefaultDict => {
                self.lib(&DEFAULTDICT, c"collections", c"defaultdict")?
            }
            CreateFirstCode::Namespace => {
                self.lib(&SIMPLE_NAMESPACE, c"types", c"SimpleNamespace")?
            }
        };
        self.call(class, &[], code.code().spec_name())
    }

    /// The values of a composite as the format's rules see them (spec 5.16.4), checked
    /// there; the builder learns a DEFAULTDICT's factory from the check.
    fn check_composite(
        &mut self,
        code: CompositeCode,
        values: &[PyObj],
    ) -> Result<Checked, BuildError> {
        let mut parts = [Part::Other; 3];
        let Some(slots) = parts.get_mut(..values.len()) else {
            return Err(invalid(format!(
                "{} got {} values",
                code.code().spec_name(),
                values.len()
            )));
        };
        for (slot, value) in slots.iter_mut().zip(values) {
            *slot = self.part(value)?;
        }
        Ok(composite::check(
            code,
            parts.get(..values.len()).unwrap_or(&[]),
        )?)
    }

    /// What kind of value `v` is, for the composite rules: exact types only, so a bool or an
    /// int subclass is not an int.
    fn part<'v>(&mut self, v: &'v PyObj) -> Result<Part<'v>, BuildError> {
        let ptr = v.as_ptr();
        // SAFETY: comparing with the None singleton, then type checks on a live object.
        let (none, int, text, list, dict) = unsafe {
            (
                ptr == ffi::Py_None(),
                ffi::PyLong_CheckExact(ptr) != 0,
                ffi::PyUnicode_CheckExact(ptr) != 0,
                ffi::PyList_CheckExact(ptr) != 0,
                ffi::PyDict_CheckExact(ptr) != 0,
            )
        };
        Ok(if none {
            Part::None
        } else if int {
            Part::Int(self.int_part(v)?)
        } else if text {
            let mut size: ffi::Py_ssize_t = 0;
            // SAFETY: ptr is an exact str; on success its UTF-8 form is cached in it and
            // lives as long as `v` does.
            let data = unsafe { ffi::PyUnicode_AsUTF8AndSize(ptr, &mut size) };
            if data.is_null() {
                // SAFETY: discarding the UnicodeEncodeError of a str with surrogates, which
                // names no factory.
                unsafe { ffi::PyErr_Clear() };
                Part::Other
            } else {
                // SAFETY: data points to size bytes of UTF-8 owned by the str `v` holds.
                let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size as usize) };
                std::str::from_utf8(bytes).map_or(Part::Other, Part::Str)
            }
        } else if list {
            Part::List
        } else if dict {
            let mut pos: ffi::Py_ssize_t = 0;
            let mut key: *mut ffi::PyObject = std::ptr::null_mut();
            let mut value: *mut ffi::PyObject = std::ptr::null_mut();
            let mut str_keys = true;
            // SAFETY: iterating a live exact dict without running Python code; the key is
            // borrowed for a type check only.
            while unsafe { ffi::PyDict_Next(ptr, &mut pos, &mut key, &mut value) } != 0 {
                // SAFETY: a type check of a live key.
                if unsafe { ffi::PyUnicode_CheckExact(key) } == 0 {
                    str_keys = false;
                    break;
                }
            }
            if str_keys {
                Part::StrKeyDict
            } else {
                Part::Dict
            }
        } else {
            Part::Other
        })
    }

    /// An exact int: its value when it fits an i64, else its sign and bit length.
    fn int_part(&mut self, v: &PyObj) -> Result<Int, BuildError> {
        let mut overflow = 0;
        // SAFETY: v is an exact int; overflow is reported, not raised.
        let small = unsafe { ffi::PyLong_AsLongLongAndOverflow(v.as_ptr(), &mut overflow) };
        if overflow == 0 {
            return Ok(Int::Small(small));
        }
        let bits = self.call_method(v.as_ptr(), c"bit_length", &[], "int")?;
        // SAFETY: bit_length returns an int; -1 with an error only on absurd sizes.
        let bits = unsafe { ffi::PyLong_AsUnsignedLongLong(bits.as_ptr()) };
        // SAFETY: clears a possible OverflowError (treated as too many bits).
        unsafe { ffi::PyErr_Clear() };
        Ok(Int::Big {
            negative: overflow < 0,
            bits,
        })
    }

    pub(super) fn known_finish(
        &mut self,
        code: CreateFirstCode,
        obj: &PyObj,
        values: Vec<PyObj>,
    ) -> Result<(), BuildError> {
        let what = code.code().spec_name();
        // The check holds the values to their number, so each pattern below matches.
        let checked = self.check_composite(code.composite(), &values)?;
        match code {
            CreateFirstCode::Deque => {
                let [maxlen, items] = values.as_slice() else {
                    return Err(wrong_count(what, values.len()));
                };
                // deque.__init__(iterable, maxlen) sets maxlen and fills the deque that may
                // already be referred to (keeping the last maxlen items, as extend does).
                self.call_method(
                    obj.as_ptr(),
                    c"__init__",
                    &[items.as_ptr(), maxlen.as_ptr()],
                    what,
                )?;
                Ok(())
            }
            CreateFirstCode::OrderedDict => {
                let [items] = values.as_slice() else {
                    return Err(wrong_count(what, values.len()));
                };
                // OrderedDict.update keeps its own order bookkeeping (a dict-level merge
                // would bypass it).
                self.call_method(obj.as_ptr(), c"update", &[items.as_ptr()], what)?;
                Ok(())
            }
            CreateFirstCode::Counter => {
                let [items] = values.as_slice() else {
                    return Err(wrong_count(what, values.len()));
                };
                self.merge(obj, items, what)
            }
            CreateFirstCode::DefaultDict => {
                let ([_, items], Checked::Factory(factory)) = (values.as_slice(), checked) else {
                    return Err(wrong_count(what, values.len()));
                };
                let factory = factory_type(factory);
                // SAFETY: obj is a defaultdict; the attribute takes its own reference.
                if unsafe {
                    ffi::PyObject_SetAttrString(obj.as_ptr(), c"default_factory".as_ptr(), factory)
                } < 0
                {
                    return Err(self.python_rejected(what));
                }
                self.merge(obj, items, what)
            }
            CreateFirstCode::Namespace => {
                let [attrs] = values.as_slice() else {
                    return Err(wrong_count(what, values.len()));
                };
                // The namespace's own __dict__, updated in place: the attribute names are
                // checked to be str above.
                // SAFETY: obj is a SimpleNamespace (instances have a __dict__); a new
                // reference or NULL with an exception.
                let dict = PyObj::from_owned(unsafe {
                    ffi::PyObject_GenericGetDict(obj.as_ptr(), std::ptr::null_mut())
                })
                .ok_or_else(|| self.python_rejected(what))?;
                self.merge(&dict, attrs, what)
            }
        }
    }

    /// `dict.update(obj, items)` for the dict subclasses that keep nothing beside the dict.
    fn merge(&mut self, obj: &PyObj, items: &PyObj, what: &str) -> Result<(), BuildError> {
        // SAFETY: obj is a dict subclass instance and items an exact dict, both live.
        if unsafe { ffi::PyDict_Merge(obj.as_ptr(), items.as_ptr(), 1) } < 0 {
            return Err(self.python_rejected(what));
        }
        Ok(())
    }

    pub(super) fn known_build(
        &mut self,
        code: BuildAfterCode,
        values: Vec<PyObj>,
    ) -> Result<PyObj, BuildError> {
        let what = code.code().spec_name();
        // The check holds the values to their number, so each pattern below matches.
        self.check_composite(code.composite(), &values)?;
        match code {
            BuildAfterCode::Fraction => {
                let [n, d] = values.as_slice() else {
                    return Err(wrong_count(what, values.len()));
                };
                let fraction = self.lib(&FRACTION, c"fractions", c"Fraction")?;
                self.call(fraction, &[n.as_ptr(), d.as_ptr()], what)
            }
            BuildAfterCode::Range => {
                let [start, stop, step] = values.as_slice() else {
                    return Err(wrong_count(what, values.len()));
                };
                let range = (&raw mut ffi::PyRange_Type).cast::<ffi::PyObject>();
                self.call(range, &[start.as_ptr(), stop.as_ptr(), step.as_ptr()], what)
            }
            BuildAfterCode::Slice => {
                let [start, stop, step] = values.as_slice() else {
                    return Err(wrong_count(what, values.len()));
                };
                // SAFETY: PySlice_New takes its own references to three live objects.
                let ptr = unsafe { ffi::PySlice_New(start.as_ptr(), stop.as_ptr(), step.as_ptr()) };
                self.made(ptr, what)
            }
        }
    }
}

/// A composite given another number of values than its code has (which `composite::check`
/// refuses first).
#[cold]
fn wrong_count(what: &str, count: usize) -> BuildError {
    invalid(format!("{what} got {count} values"))
}

/// The builtin type a DEFAULTDICT factory names (borrowed), or None.
fn factory_type(factory: Option<Factory>) -> *mut ffi::PyObject {
    let ty: *mut ffi::PyTypeObject = match factory {
        // SAFETY: the None singleton is always live.
        None => return unsafe { ffi::Py_None() },
        Some(Factory::List) => &raw mut ffi::PyList_Type,
        Some(Factory::Dict) => &raw mut ffi::PyDict_Type,
        Some(Factory::Set) => &raw mut ffi::PySet_Type,
        Some(Factory::Int) => &raw mut ffi::PyLong_Type,
        Some(Factory::Float) => &raw mut ffi::PyFloat_Type,
        Some(Factory::Str) => &raw mut ffi::PyUnicode_Type,
        Some(Factory::Bytes) => &raw mut ffi::PyBytes_Type,
        Some(Factory::Tuple) => &raw mut ffi::PyTuple_Type,
        Some(Factory::FrozenSet) => &raw mut ffi::PyFrozenSet_Type,
        Some(Factory::Bool) => &raw mut ffi::PyBool_Type,
        Some(Factory::Complex) => &raw mut ffi::PyComplex_Type,
        Some(Factory::ByteArray) => &raw mut ffi::PyByteArray_Type,
    };
    ty.cast()
}
