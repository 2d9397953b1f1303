//! `dumps(obj)` and `loads(data)` called with one argument and no keywords, the commonest
//! calls by far, skip keyword parsing and option validation.
//!
//! pyo3's matching of twelve keyword options and the option structs cost about 300
//! instructions of every `dumps` and 250 of every `loads`: a tenth of a hundred-byte
//! payload's encode. The module therefore exports `dumps` and `loads` as METH_FASTCALL
//! functions of its own: one positional argument and no keywords go straight to the encoder
//! or decoder with the default options; any other call is passed on, unchanged, to the full
//! function pyo3 generates, which parses and checks everything as before.
//!
//! A call with keywords costs pyo3's keyword matching too: each name is compared as text
//! with each option's, about 70 ns of a 400 ns `dumps`. Services pass the same options on
//! every call (`loads(b, types=T)`, `dumps(x, canonical=True)`), so such calls are matched
//! here as well: CPython hands over interned names, and each is found among the options'
//! names, interned once, by address. A name not found that way, a second positional
//! argument, or a flag that is not exactly True or False goes to the full function, which
//! checks and reports it as before; either way the options are checked by the same
//! `EncodeConfig::new` / `DecodeConfig::new`, so only the matching is done twice over. The
//! checked options of a call repeated with the very same values are remembered
//! (`keyword_cache`), and the next such call skips both.
//!
//! Both enter through pyo3's own trampoline, the one every `#[pyfunction]` uses. It counts
//! the thread as attached for the call, so that a `Py` dropped inside is released at once
//! rather than queued in pyo3's deferred pool (a first version without it let that pool grow
//! with every call), and turns a panic into an exception. The trampoline is reached through
//! `get_trampoline_function!`, which is pyo3's code-generation API rather than its documented
//! one; `Cargo.lock` pins the version, and a change there fails to compile rather than
//! misbehaving.

use std::ffi::CStr;

use pyo3::impl_::trampoline::fastcall_cfunction_with_keywords::Func;

use crate::keyword_cache::{KeywordCache, Keywords};
use crate::options::{DecodeConfig, EncodeConfig};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCFunction};
use pyo3_ffi as ffi;

/// The keyword calls of `dumps` and `loads` remembered (see `keyword_cache`).
static DUMPS_CACHE: KeywordCache<Remembered<EncodeConfig>> = KeywordCache::new();
static LOADS_CACHE: KeywordCache<Remembered<DecodeConfig>> = KeywordCache::new();

/// The function the keyword caches' weak references call when an item of a remembered
/// `types=` or `custom=` list dies.
static ON_DEATH: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();

/// A remembered call: its checked options, and the fields (`cls`, `encode`, `decode`, by
/// address) each `custom=` item held when they were checked (`registry::custom_fields`); a
/// hit whose items hold others (fields set around `CustomType`'s refusal) is not served
/// from the options.
///
/// `dumps` options keep the custom encode table made from those fields: it holds each
/// item's class and encode function, which the item holds too, and the entry is forgotten
/// when an item dies, so the table keeps nothing alive that its item would not (but a class
/// that holds its own `CustomType` never lets that item die while the table holds the
/// class: such an entry stands until newer calls push it out). Without recorded fields the
/// options keep no table, and each call makes its own from its list. `loads` options hold
/// the allowed classes and decode functions weakly (`Allowed::hold_weakly`); a `loads`
/// whose `custom=` fields cannot be recorded is not remembered.
struct Remembered<C> {
    config: C,
    /// None without a `custom=` list of `CustomType` objects whose fields are all set.
    custom_fields: Option<Box<[[usize; 3]]>>,
    /// Where `custom=` is among the call's keywords (the same place in every hit's).
    custom_at: Option<usize>,
}

impl<C> Remembered<C> {
    /// Whether the call's `custom=` (`custom`, not None) holds the fields recorded.
    fn custom_unchanged(&self, custom: &Bound<'_, PyAny>) -> bool {
        self.custom_fields
            .as_deref()
            .is_some_and(|recorded| crate::registry::custom_fields_are(custom, recorded))
    }
}

/// Called by a keyword cache's weak reference, with itself, when its item dies: forgets the
/// entries that compare that item. Entered through pyo3's trampoline, as `dumps` and `loads`
/// are: it counts the thread as attached, so the references the forgotten entries release
/// are released at once rather than queued in pyo3's deferred pool, and it asks nothing of
/// the interpreter (weak references die during finalisation too, when `Python::attach`
/// would refuse).
///
/// # Safety
/// The arguments are those CPython passed to a METH_FASTCALL | METH_KEYWORDS function.
unsafe fn item_died(
    py: Python<'_>,
    _module: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    _kwnames: *mut ffi::PyObject,
) -> PyResult<*mut ffi::PyObject> {
    // SAFETY: CPython's count and arguments; a weak reference passes itself, first.
    unsafe {
        if ffi::PyVectorcall_NARGS(nargsf as usize) >= 1 {
            let weak = *args;
            DUMPS_CACHE.forget(py, weak);
            LOADS_CACHE.forget(py, weak);
        }
        let none = ffi::Py_None();
        ffi::Py_INCREF(none);
        Ok(none)
    }
}

/// Makes [`ON_DEATH`], once.
fn make_on_death(py: Python<'_>) -> PyResult<()> {
    const ITEM_DIED: Func = item_died;
    let entry = pyo3::get_trampoline_function!(fastcall_cfunction_with_keywords, ITEM_DIED);
    // Leaked once per process: CPython keeps a pointer to the definition in the function.
    let def = Box::leak(Box::new(ffi::PyMethodDef {
        ml_name: c"_keyword_cache_item_died".as_ptr(),
        ml_meth: ffi::PyMethodDefPointer {
            PyCFunctionFastWithKeywords: entry,
        },
        ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
        ml_doc: std::ptr::null(),
    }));
    // SAFETY: def is a valid method definition that lives forever; no self, no module.
    let function = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            ffi::PyCFunction_NewEx(def, std::ptr::null_mut(), std::ptr::null_mut()),
        )?
    };
    let _ = ON_DEATH.set(py, function.unbind());
    Ok(())
}

/// The full pyo3 functions, to which every other call goes.
static DUMPS_FULL: pyo3::sync::PyOnceLock<Py<PyCFunction>> = pyo3::sync::PyOnceLock::new();
static LOADS_FULL: pyo3::sync::PyOnceLock<Py<PyCFunction>> = pyo3::sync::PyOnceLock::new();

type CFunction = unsafe extern "C" fn(
    *mut ffi::PyObject,
    *const *mut ffi::PyObject,
    ffi::Py_ssize_t,
    *mut ffi::PyObject,
) -> *mut ffi::PyObject;

/// Adds `full` (a pyo3 function) to `module` under its own name, as a C function that
/// takes the one-argument call itself through `fast` and passes other calls on to `full`.
/// The new function shares `full`'s docstring, so its text signature and `help()` stay.
fn export(
    module: &Bound<'_, PyModule>,
    full: Bound<'_, PyCFunction>,
    name: &'static CStr,
    fast: CFunction,
    slot: &'static pyo3::sync::PyOnceLock<Py<PyCFunction>>,
) -> PyResult<()> {
    let py = module.py();
    // SAFETY: full is a live builtin function object; its method definition is static data
    // of pyo3's, valid for the life of the process.
    let doc = unsafe { (*(*full.as_ptr().cast::<ffi::PyCFunctionObject>()).m_ml).ml_doc };
    // Leaked once per process: CPython keeps a pointer to the definition in the function.
    let def = Box::leak(Box::new(ffi::PyMethodDef {
        ml_name: name.as_ptr(),
        ml_meth: ffi::PyMethodDefPointer {
            PyCFunctionFastWithKeywords: fast,
        },
        ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
        ml_doc: doc,
    }));
    let module_name = module.name()?;
    // SAFETY: def is a valid method definition that lives forever; the module is passed as
    // the function's self, as CPython does for module functions, and its name as __module__.
    let function = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            ffi::PyCFunction_NewEx(def, module.as_ptr(), module_name.as_ptr()),
        )?
    };
    let _ = slot.set(py, full.unbind());
    module.add(name.to_str().unwrap_or_default(), function)
}

/// Registers `dumps` and `loads`.
pub fn add_functions(
    module: &Bound<'_, PyModule>,
    dumps: Bound<'_, PyCFunction>,
    loads: Bound<'_, PyCFunction>,
) -> PyResult<()> {
    const DUMPS: Func = short_call::<false>;
    const LOADS: Func = short_call::<true>;
    let dumps_entry = pyo3::get_trampoline_function!(fastcall_cfunction_with_keywords, DUMPS);
    let loads_entry = pyo3::get_trampoline_function!(fastcall_cfunction_with_keywords, LOADS);
    make_on_death(module.py())?;
    export(module, dumps, c"dumps", dumps_entry, &DUMPS_FULL)?;
    export(module, loads, c"loads", loads_entry, &LOADS_FULL)?;
    // For the test that holds these tables to the signatures.
    let text = |names: &[&CStr]| -> Vec<String> {
        names
            .iter()
            .map(|n| n.to_string_lossy().into_owned())
            .collect()
    };
    module.add(
        "_DUMPS_KEYWORDS",
        pyo3::types::PyTuple::new(module.py(), text(&DUMPS_KEYWORDS))?,
    )?;
    module.add(
        "_LOADS_KEYWORDS",
        pyo3::types::PyTuple::new(module.py(), text(&LOADS_KEYWORDS))?,
    )
}

/// The keyword options of `dumps`, in the order of its signature.
pub const DUMPS_KEYWORDS: [&CStr; 12] = [
    c"refs",
    c"max_depth",
    c"types",
    c"custom",
    c"buffer_callback",
    c"key",
    c"timestamp",
    c"compress",
    c"level",
    c"canonical",
    c"sort_keys",
    c"clock",
];

/// Where `key` is among [`DUMPS_KEYWORDS`]: signing keys are never remembered by the
/// keyword cache.
const DUMPS_KEY: usize = keyword_index(&DUMPS_KEYWORDS, c"key");
/// Where the allow-lists are among [`DUMPS_KEYWORDS`]: the keyword cache compares their items.
const DUMPS_TYPES: usize = keyword_index(&DUMPS_KEYWORDS, c"types");
const DUMPS_CUSTOM: usize = keyword_index(&DUMPS_KEYWORDS, c"custom");
/// Where `key` and `buffers` (one call's own) are among [`LOADS_KEYWORDS`].
const LOADS_KEY: usize = keyword_index(&LOADS_KEYWORDS, c"key");
const LOADS_BUFFERS: usize = keyword_index(&LOADS_KEYWORDS, c"buffers");
/// Where the allow-lists are among [`LOADS_KEYWORDS`].
const LOADS_TYPES: usize = keyword_index(&LOADS_KEYWORDS, c"types");
const LOADS_CUSTOM: usize = keyword_index(&LOADS_KEYWORDS, c"custom");

/// The index of `name` in `names`, found when compiling.
const fn keyword_index<const N: usize>(names: &[&CStr; N], name: &CStr) -> usize {
    let wanted = name.to_bytes();
    let mut i = 0;
    while i < N {
        let have = names[i].to_bytes();
        if have.len() == wanted.len() {
            let mut j = 0;
            while j < have.len() && have[j] == wanted[j] {
                j += 1;
            }
            if j == have.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("not a keyword of the table")
}

/// The keyword options of `loads`, in the order of its signature.
pub const LOADS_KEYWORDS: [&CStr; 11] = [
    c"max_depth",
    c"max_alloc",
    c"types",
    c"custom",
    c"unknown_fields",
    c"placeholders",
    c"buffers",
    c"key",
    c"max_age",
    c"max_decompressed",
    c"clock",
];

/// `names`, interned, made once per process.
fn interned<const N: usize>(
    py: Python<'_>,
    cell: &'static pyo3::sync::PyOnceLock<[Py<PyAny>; N]>,
    names: &[&CStr; N],
) -> &'static [Py<PyAny>; N] {
    cell.get_or_init(py, || {
        names.map(|name| {
            // SAFETY: name is a NUL-terminated ASCII string; the call returns a new
            // reference to an interned str (interning an ASCII name cannot fail short of
            // memory, which panics here, at the first call, inside the trampoline).
            unsafe {
                Bound::from_owned_ptr(py, ffi::PyUnicode_InternFromString(name.as_ptr())).unbind()
            }
        })
    })
}

/// The values of a call's keywords, by option: `slots[k]` is the value given for option `k`
/// of `names`, or None. None for the whole call when a keyword is not one of `names` by
/// address (the full function reports an unknown one, or finds a known one by its text).
///
/// # Safety
/// `kwnames` is the non-NULL tuple of keyword names CPython passed, and `values` the
/// pointer to its values (the arguments after the positional ones).
unsafe fn keyword_slots<'py, const N: usize>(
    py: Python<'py>,
    names: &[Py<PyAny>; N],
    kwnames: *mut ffi::PyObject,
    values: *const *mut ffi::PyObject,
) -> Option<[Option<Borrowed<'py, 'py, PyAny>>; N]> {
    let mut slots = [None; N];
    // SAFETY: kwnames is a tuple (the caller's promise); its size is read once.
    let count = unsafe { ffi::PyTuple_GET_SIZE(kwnames) };
    for i in 0..count {
        // SAFETY: i < count; a borrowed item of the tuple, and its value at the same index.
        let (name, value) = unsafe { (ffi::PyTuple_GET_ITEM(kwnames, i), *values.offset(i)) };
        let k = names.iter().position(|n| n.as_ptr() == name)?;
        // SAFETY: a live argument of the call, borrowed for the call.
        slots[k] = Some(unsafe { Borrowed::from_ptr(py, value) });
    }
    Some(slots)
}

/// A flag option as pyo3 would take it, for exactly True or False; None for anything else.
fn flag(value: Option<Borrowed<'_, '_, PyAny>>, default: bool) -> Option<bool> {
    match value {
        None => Some(default),
        // SAFETY: comparisons with the two bool singletons.
        Some(v) if v.as_ptr() == unsafe { ffi::Py_True() } => Some(true),
        Some(v) if v.as_ptr() == unsafe { ffi::Py_False() } => Some(false),
        Some(_) => None,
    }
}

/// `dumps(obj, **options)`, matched here; None to leave the call to the full function.
///
/// # Safety
/// As [`keyword_slots`].
unsafe fn dumps_with_keywords(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    kwnames: *mut ffi::PyObject,
    values: *const *mut ffi::PyObject,
) -> Option<PyResult<Py<PyBytes>>> {
    static NAMES: pyo3::sync::PyOnceLock<[Py<PyAny>; 12]> = pyo3::sync::PyOnceLock::new();
    let names = interned(py, &NAMES, &DUMPS_KEYWORDS);
    let custom_name = names[DUMPS_CUSTOM].as_ptr();
    // Looked up before it is known to be cacheable: only cacheable calls are remembered,
    // and a call matching one by identity is as cacheable as it.
    // SAFETY: the caller's promise; the keywords are borrowed for this call only.
    let keywords = unsafe { Keywords::of(kwnames, values) };
    if let Some((keywords, remembered)) = keywords.and_then(|k| Some((k, DUMPS_CACHE.find(py, k)?)))
    {
        // SAFETY: a value of the call, borrowed for the call.
        let custom = (remembered.custom_at)
            .and_then(|at| keywords.value_at(at))
            .map(|v| unsafe { Borrowed::from_ptr(py, v) })
            .filter(|v| !v.is_none());
        let config = &remembered.config;
        match custom {
            None => return Some(config.dumps(py, obj)),
            // No table remembered: this call's own list gives it.
            Some(custom) if remembered.custom_fields.is_none() => {
                return Some(
                    crate::registry::encoders(py, &custom)
                        .and_then(|table| config.dumps_custom(py, obj, table.as_ref())),
                )
            }
            // The same items as when the table was made (the cache compared them), and
            // their fields unchanged: the remembered table is theirs.
            Some(custom) if remembered.custom_unchanged(&custom) => {
                return Some(config.dumps(py, obj))
            }
            Some(_) => {}
        }
    }
    // SAFETY: the caller's promise.
    let [refs, max_depth, types, custom, buffer_callback, key, timestamp, compress, level, canonical, sort_keys, clock] =
        unsafe { keyword_slots(py, names, kwnames, values) }?;
    // Read before the options are checked, which reads the same fields for the table, and
    // before anything that may run code (`types=` may call into `amber._classes`).
    let custom_fields = custom
        .as_deref()
        .filter(|c| !c.is_none())
        .and_then(crate::registry::custom_fields);
    let config = EncodeConfig::new(
        py,
        flag(refs, true)?,
        max_depth.as_deref(),
        types.as_deref(),
        custom.as_deref(),
        buffer_callback.as_deref(),
        key.as_deref(),
        flag(timestamp, false)?,
        compress.as_deref(),
        level.as_deref(),
        flag(canonical, false)?,
        flag(sort_keys, false)?,
        clock.as_deref(),
    );
    let mut config = match config {
        Ok(config) => config,
        Err(err) => return Some(Err(err)),
    };
    let Some((keywords, on_death)) = keywords
        .filter(|k| {
            k.cacheable(
                &[names[DUMPS_KEY].as_ptr()],
                &[names[DUMPS_TYPES].as_ptr(), custom_name],
            ) && DUMPS_CACHE.repeated(py, *k)
        })
        .zip(ON_DEATH.get(py))
    else {
        return Some(config.dumps(py, obj));
    };
    // A table made of recorded `CustomType` fields is kept (see `Remembered`); any other is
    // made by each call from its own list.
    let taken = match custom_fields {
        Some(_) => None,
        None => config.custom.take(),
    };
    let remembered = Remembered {
        config,
        custom_fields,
        custom_at: keywords.position(custom_name),
    };
    let dumps = |r: &Remembered<EncodeConfig>| {
        r.config
            .dumps_custom(py, obj, taken.as_deref().or(r.config.custom.as_deref()))
    };
    Some(
        match DUMPS_CACHE.remember(py, keywords, remembered, on_death.bind(py)) {
            Ok(shared) => dumps(&shared),
            Err(remembered) => dumps(&remembered),
        },
    )
}

/// `loads(data, **options)`, matched here; None to leave the call to the full function.
///
/// # Safety
/// As [`keyword_slots`].
unsafe fn loads_with_keywords(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    kwnames: *mut ffi::PyObject,
    values: *const *mut ffi::PyObject,
) -> Option<PyResult<Py<PyAny>>> {
    static NAMES: pyo3::sync::PyOnceLock<[Py<PyAny>; 11]> = pyo3::sync::PyOnceLock::new();
    let names = interned(py, &NAMES, &LOADS_KEYWORDS);
    let custom_name = names[LOADS_CUSTOM].as_ptr();
    // Looked up before it is known to be cacheable (see `dumps_with_keywords`).
    // SAFETY: the caller's promise; the keywords are borrowed for this call only.
    let keywords = unsafe { Keywords::of(kwnames, values) };
    if let Some((keywords, remembered)) = keywords.and_then(|k| Some((k, LOADS_CACHE.find(py, k)?)))
    {
        // The same items as when the options were made (the cache compared them); a
        // `custom=` list's items must still hold the decode functions they held then.
        let unchanged = remembered.custom_fields.is_none()
            || (remembered.custom_at)
                .and_then(|at| keywords.value_at(at))
                .is_some_and(|custom| {
                    // SAFETY: a value of the call, borrowed for the call.
                    remembered.custom_unchanged(unsafe { &Borrowed::from_ptr(py, custom) })
                });
        if unchanged {
            return Some(remembered.config.loads(py, data, None));
        }
    }
    // SAFETY: the caller's promise.
    let [max_depth, max_alloc, types, custom, unknown_fields, placeholders, buffers, key, max_age, max_decompressed, clock] =
        unsafe { keyword_slots(py, names, kwnames, values) }?;
    let unknown_fields = match unknown_fields {
        None => "ignore",
        // SAFETY: an exact str, an argument alive for the whole call. Its UTF-8 form is kept
        // in the object, so the text stays valid as long; NULL (lone surrogates) is cleared
        // and left to the full function.
        Some(v) if unsafe { ffi::PyUnicode_CheckExact(v.as_ptr()) } != 0 => unsafe {
            let mut size: ffi::Py_ssize_t = 0;
            let text = ffi::PyUnicode_AsUTF8AndSize(v.as_ptr(), &mut size);
            if text.is_null() {
                ffi::PyErr_Clear();
                return None;
            }
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(text.cast(), size as usize))
        },
        Some(_) => return None,
    };
    // Read before the options are checked (see `dumps_with_keywords`). A `custom=` whose
    // decode functions cannot be recorded is not remembered: a hit could not check them.
    let custom = custom.filter(|c| !c.is_none());
    let custom_fields = custom.as_deref().map(crate::registry::custom_fields);
    let config = DecodeConfig::new(
        py,
        max_depth.as_deref(),
        max_alloc.as_deref(),
        types.as_deref(),
        custom.as_deref(),
        unknown_fields,
        flag(placeholders, false)?,
        key.as_deref(),
        max_age.as_deref(),
        max_decompressed.as_deref(),
        clock.as_deref(),
    );
    let mut config = match config {
        Ok(config) => config,
        Err(err) => return Some(Err(err)),
    };
    let buffers = buffers.as_deref();
    let Some((keywords, on_death)) = keywords
        .filter(|k| {
            k.cacheable(
                &[names[LOADS_KEY].as_ptr(), names[LOADS_BUFFERS].as_ptr()],
                &[names[LOADS_TYPES].as_ptr(), custom_name],
            ) && LOADS_CACHE.repeated(py, *k)
        })
        .zip(ON_DEATH.get(py))
    else {
        return Some(config.loads(py, data, buffers));
    };
    let (Some(custom_fields), Some(objects)) = (
        custom_fields.map_or(Some(None), |fields| fields.map(Some)),
        config.classes.allowed.hold_weakly(py),
    ) else {
        return Some(config.loads(py, data, buffers));
    };
    // Remembered holding its classes weakly; this call holds them (see `hold_weakly`).
    let remembered = Remembered {
        config,
        custom_fields,
        custom_at: keywords.position(custom_name),
    };
    let loads = |r: &Remembered<DecodeConfig>| {
        let allowed = r.config.classes.allowed.with(objects);
        r.config.loads_allowing(py, data, buffers, allowed)
    };
    Some(
        match LOADS_CACHE.remember(py, keywords, remembered, on_death.bind(py)) {
            Ok(shared) => loads(&shared),
            Err(remembered) => loads(&remembered),
        },
    )
}

/// The call as CPython made it: `short` takes one positional argument without keywords,
/// `keywords` one positional argument with keywords (None: not matched), and the full
/// function in `slot` every other call. The result is a new reference; a NULL from the full
/// function comes with its exception set, which the trampoline passes on as it is.
///
/// # Safety
/// The arguments are those CPython passed to a METH_FASTCALL | METH_KEYWORDS function.
#[inline(always)]
unsafe fn dispatch<T>(
    py: Python<'_>,
    slot: &pyo3::sync::PyOnceLock<Py<PyCFunction>>,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
    short: impl FnOnce(Python<'_>, &Bound<'_, PyAny>) -> PyResult<Py<T>>,
    keywords: impl FnOnce(
        Python<'_>,
        &Bound<'_, PyAny>,
        *mut ffi::PyObject,
        *const *mut ffi::PyObject,
    ) -> Option<PyResult<Py<T>>>,
) -> PyResult<*mut ffi::PyObject> {
    // SAFETY: nargsf is CPython's count, possibly with the offset flag set.
    let nargs = unsafe { ffi::PyVectorcall_NARGS(nargsf as usize) };
    if nargs == 1 {
        // SAFETY: with one positional argument, args[0] is a live borrowed reference.
        let arg = unsafe { Bound::from_borrowed_ptr(py, *args) };
        if kwnames.is_null() {
            return short(py, &arg).map(Py::into_ptr);
        }
        // SAFETY: the keyword values follow the one positional argument.
        if let Some(result) = keywords(py, &arg, kwnames, unsafe { args.add(1) }) {
            return result.map(Py::into_ptr);
        }
    }
    let full = slot
        .get(py)
        .ok_or_else(|| pyo3::exceptions::PySystemError::new_err("amber is not initialised"))?;
    // SAFETY: the vector call is passed through as CPython gave it.
    Ok(unsafe { ffi::PyObject_Vectorcall(full.as_ptr(), args, nargsf as usize, kwnames) })
}

/// The body of `loads` (`LOADS`) or `dumps`, run inside pyo3's trampoline.
///
/// # Safety
/// As [`dispatch`].
unsafe fn short_call<const LOADS: bool>(
    py: Python<'_>,
    _module: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> PyResult<*mut ffi::PyObject> {
    // SAFETY: CPython's own arguments, passed through.
    unsafe {
        if LOADS {
            dispatch(
                py,
                &LOADS_FULL,
                args,
                nargsf,
                kwnames,
                crate::loads_default,
                |py, a, n, v| loads_with_keywords(py, a, n, v),
            )
        } else {
            dispatch(
                py,
                &DUMPS_FULL,
                args,
                nargsf,
                kwnames,
                crate::dumps_default,
                |py, a, n, v| dumps_with_keywords(py, a, n, v),
            )
        }
    }
}
