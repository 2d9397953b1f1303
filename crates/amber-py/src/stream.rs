//! Streams for `amber._stream` (spec section 11): `StreamWriter`, `StreamReader` and
//! `StreamDecoder` keep the files, locks and buffers in Python and come here for the framing,
//! whose rules are all `amber_format::stream`'s, and for the encoding or decoding of each
//! message around it, so that a small message costs one call from Python:
//!
//! - [`FrameWriter`] encodes an object as `dumps` would and frames it;
//! - [`FrameReader`] follows a `StreamReader` through its buffer: it reads the next frame
//!   there and decodes its payload as `loads` would, or says that Python must fetch bytes;
//! - [`FrameGatherer`] takes a `StreamDecoder`'s chunks and decodes what they complete.
//!
//! Errors come out as Python raised them before: a framing error as a `DecodeError` (or
//! `DecodeLimitError`) at its stream offset, and an error of a payload as `loads` raised it,
//! its offset moved into the stream; both with `message_index`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

use amber_format::stream::{
    self, FeedError, Frame, FrameHead, Gatherer, Next, ReadOptions, Source, StreamError, Unframer,
};
use pyo3::exceptions::{PyRuntimeError, PySystemError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyList, PyTuple};

use crate::buffer::frozen_input;
use crate::decode::{self, DecodeFailure};
use crate::errors::decode_error;
use crate::options::check_buffers;

/// A payload shorter than this is framed into one `bytes` (its length and a copy of it), for
/// one write call; a longer one comes back as its length and itself, written one after the
/// other, so that a large payload is never copied.
const JOIN_FRAME_BELOW: usize = 4096;

/// What [`FrameReader::next_message`] returns when the next message needs Python: a distinct
/// object, since any other value may be a message.
static MORE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn more(py: Python<'_>) -> PyResult<&Py<PyAny>> {
    MORE.get_or_try_init(py, || Ok(py.get_type::<PyAny>().call0()?.unbind()))
}

/// Adds the stream framing to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add("_STREAM_MAGIC", PyBytes::new(py, &stream::MAGIC))?;
    module.add("_STREAM_END", PyBytes::new(py, &[stream::END_MARKER]))?;
    module.add("_DEFAULT_MAX_MESSAGE", stream::DEFAULT_MAX_MESSAGE)?;
    module.add("_MORE", more(py)?)?;
    module.add_class::<FrameWriter>()?;
    module.add_class::<FrameReader>()?;
    module.add_class::<FrameGatherer>()?;
    module.add_function(wrap_pyfunction!(frame_payload, module)?)?;
    module.add_function(wrap_pyfunction!(stream_payloads, module)?)?;
    Ok(())
}

/// A framing error as Python sees it: the `DecodeError` class of its kind, with `kind`,
/// `offset` (in the stream) and `message_index`.
fn stream_error(py: Python<'_>, err: StreamError) -> PyErr {
    let message = err.to_string();
    let index = err.message_index;
    let raised = decode_error(py, DecodeFailure::Format(err.error, None));
    let value = raised.value(py);
    let _ = value.setattr(intern!(py, "message_index"), index);
    let _ = value.setattr(intern!(py, "args"), (message,));
    raised
}

/// An error raised decoding `frame`'s payload, pointed at the stream as
/// [`Frame::payload_error`] does: a `DecodeError` gets its message index and its offset moved
/// into the stream, and says so; its class and other attributes stay. A `DecodeError` from
/// a class's own code is treated alike (with no offset, it keeps none); other exceptions
/// pass as they are.
fn payload_error(py: Python<'_>, err: PyErr, frame: &Frame) -> PyErr {
    if err.is_instance_of::<crate::DecodeError>(py) {
        let _ = point_at_stream(py, err.value(py).as_any(), frame);
    }
    err
}

fn point_at_stream(py: Python<'_>, value: &Bound<'_, PyAny>, frame: &Frame) -> PyResult<()> {
    let args = value.getattr(intern!(py, "args"))?;
    let original = match args.cast::<PyTuple>() {
        Ok(args) if !args.is_empty() => args.get_item(0)?.str()?,
        _ => value.str()?,
    };
    let start = frame.payload_offset();
    let mut place = format!(
        "in message {}, whose payload starts at stream byte {start}",
        frame.index
    );
    let inner = value.getattr(intern!(py, "offset")).ok();
    if let Some(inner) = inner.filter(|o| o.is_instance_of::<PyInt>()) {
        let moved = inner.add(start)?;
        place += &format!(" (error at stream byte {moved})");
        value.setattr(intern!(py, "offset"), moved)?;
    }
    value.setattr(intern!(py, "message_index"), frame.index)?;
    value.setattr(intern!(py, "args"), (format!("{original}, {place}"),))
}

/// `max_message=`: None for the default, else any int from 1 up (those past 2^64 - 1 limit
/// nothing more than 2^64 - 1 does).
fn check_max_message(value: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(stream::DEFAULT_MAX_MESSAGE);
    };
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "max_message must be an int or None, not {}",
            value.get_type().name()?
        )));
    }
    if value.lt(1)? {
        return Err(PyValueError::new_err(format!(
            "max_message must be at least 1, got {value}"
        )));
    }
    Ok(value.extract::<u64>().unwrap_or(u64::MAX))
}

/// What both readers are made of: their arguments, checked.
fn reading(
    py: Python<'_>,
    require_end: bool,
    max_message: Option<&Bound<'_, PyAny>>,
    loads_options: Option<&Bound<'_, PyDict>>,
) -> PyResult<(ReadOptions, Loads)> {
    let options = ReadOptions {
        require_end,
        max_message: check_max_message(max_message)?,
    };
    Ok((options, Loads::new(py, loads_options)?))
}

/// `loads` as a reader calls it on each payload, with the options the reader was given. They
/// are checked on the first payload decoded, as `loads` would check them then (a reader that
/// only passes payloads on never does), and kept from then on.
struct Loads {
    /// The options but `buffers`, for an `amber.Decoder`.
    options: Py<PyDict>,
    /// `buffers=`, checked on each call as `loads` checks it.
    buffers: Option<Py<PyAny>>,
    decoder: PyOnceLock<Py<crate::reusable::Decoder>>,
}

impl Loads {
    fn new(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Loads> {
        let options = match options {
            Some(given) => given.copy()?,
            None => PyDict::new(py),
        };
        let buffers = options.get_item(intern!(py, "buffers"))?.map(Bound::unbind);
        if buffers.is_some() {
            options.del_item(intern!(py, "buffers"))?;
        }
        Ok(Loads {
            options: options.unbind(),
            buffers,
            decoder: PyOnceLock::new(),
        })
    }

    /// Decodes `frame`'s payload; its errors point at the stream.
    fn decode(
        &self,
        py: Python<'_>,
        payload: &[u8],
        frozen: bool,
        frame: &Frame,
    ) -> PyResult<Py<PyAny>> {
        self.decode_payload(py, payload, frozen)
            .map_err(|err| payload_error(py, err, frame))
    }

    fn decode_payload(&self, py: Python<'_>, payload: &[u8], frozen: bool) -> PyResult<Py<PyAny>> {
        let decoder = self.decoder.get_or_try_init(py, || {
            let options = self.options.bind(py);
            let made = py
                .get_type::<crate::reusable::Decoder>()
                .call((), Some(options))?;
            Ok::<_, PyErr>(made.cast_into::<crate::reusable::Decoder>()?.unbind())
        })?;
        let config = decoder.get().config();
        let buffers = check_buffers(self.buffers.as_ref().map(|b| b.bind(py)))?;
        let now = config.envelope.now(py)?;
        decode::decode_bytes(
            py,
            payload,
            frozen,
            &config.limits,
            &config.envelope,
            now,
            &config.classes,
            buffers.as_deref(),
        )
        .map_err(|failure| decode_error(py, failure))
    }
}

/// `payload` framed: one `bytes`, or for a large payload `(length, payload)`.
fn framed<'py>(
    py: Python<'py>,
    payload: &Bound<'py, PyAny>,
    bytes: &[u8],
) -> PyResult<Bound<'py, PyAny>> {
    if bytes.is_empty() {
        return Err(PyValueError::new_err(
            "a frame holds a payload of at least one byte",
        ));
    }
    let head = FrameHead::new(bytes.len() as u64);
    let head = head.as_bytes();
    if bytes.len() < JOIN_FRAME_BELOW {
        let frame = PyBytes::new_with(py, head.len() + bytes.len(), |out| {
            out[..head.len()].copy_from_slice(head);
            out[head.len()..].copy_from_slice(bytes);
            Ok(())
        })?;
        return Ok(frame.into_any());
    }
    Ok((PyBytes::new(py, head), payload)
        .into_pyobject(py)?
        .into_any())
}

/// _FrameWriter(dumps_options)
///
/// `frame(obj)` encodes `obj` as `dumps(obj, **dumps_options)` does and returns its frame:
/// one `bytes`, or `(length, payload)` for a payload of 4 KiB or more. The options are checked
/// on the first call, as `dumps` would check them.
#[pyclass(module = "amber._amber", name = "_FrameWriter", frozen)]
struct FrameWriter {
    /// None for no options: `dumps`'s short path.
    options: Option<Py<PyDict>>,
    encoder: PyOnceLock<Py<crate::reusable::Encoder>>,
}

#[pymethods]
impl FrameWriter {
    #[new]
    fn new(options: &Bound<'_, PyDict>) -> PyResult<Self> {
        Ok(FrameWriter {
            options: if options.is_empty() {
                None
            } else {
                Some(options.copy()?.unbind())
            },
            encoder: PyOnceLock::new(),
        })
    }

    fn frame<'py>(&self, py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let payload = match &self.options {
            None => crate::dumps_default(py, obj)?,
            Some(options) => {
                let encoder = self.encoder.get_or_try_init(py, || {
                    let made = py
                        .get_type::<crate::reusable::Encoder>()
                        .call((), Some(options.bind(py)))?;
                    Ok::<_, PyErr>(made.cast_into::<crate::reusable::Encoder>()?.unbind())
                })?;
                encoder.get().config().dumps(py, obj)?
            }
        };
        let payload = payload.into_bound(py);
        framed(py, payload.as_any(), payload.as_bytes())
    }
}

/// _frame_payload(payload) -> bytes | tuple[bytes, payload]
///
/// The frame of an encoded payload (any non-empty buffer), as `_FrameWriter.frame` returns it.
#[pyfunction]
#[pyo3(name = "_frame_payload")]
fn frame_payload<'py>(py: Python<'py>, payload: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    crate::buffer::with_input(py, payload, "_frame_payload()", |bytes| {
        framed(py, payload, bytes)
    })
}

/// _stream_payloads(data) -> list[tuple[int, int]]
///
/// Where the payloads of the whole stream `data` are: `(stream offset, length)` of each, or
/// the stream's framing error (read with the default options).
#[pyfunction]
#[pyo3(name = "_stream_payloads")]
fn stream_payloads<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    crate::buffer::with_input(py, data, "_stream_payloads()", |bytes| {
        let found = PyList::empty(py);
        for item in stream::payloads(bytes, ReadOptions::default()) {
            let (frame, _) = item.map_err(|err| stream_error(py, err))?;
            found.append((frame.payload_offset(), frame.len))?;
        }
        Ok(found)
    })
}

/// Takes a lock whose holder never runs Python code, so it never waits long; a panic while
/// it was held left a whole `Copy` value behind, still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The bytes of `data` (whose first byte is at stream offset `base`) from stream offset
/// `offset` on.
fn from_offset(data: &[u8], base: u64, offset: u64) -> PyResult<&[u8]> {
    offset
        .checked_sub(base)
        .and_then(|pos| data.get(usize::try_from(pos).ok()?..))
        .ok_or_else(|| {
            PySystemError::new_err(format!(
                "the stream reader's buffer (stream bytes {base} to {}) does not hold its \
                 position {offset}",
                base + data.len() as u64
            ))
        })
}

/// The payload of `frame`, if `data` (from stream offset `base`) holds all of it.
fn payload_in(data: &[u8], base: u64, frame: &Frame) -> Option<std::ops::Range<usize>> {
    let start = usize::try_from(frame.payload_offset().checked_sub(base)?).ok()?;
    let end = usize::try_from(frame.end() - base).ok()?;
    (end <= data.len()).then_some(start..end)
}

/// _FrameReader(require_end, max_message, loads_options)
///
/// The framing of a `StreamReader`'s stream, which it follows through the reader's buffer.
/// Each call gets the buffer and `base`, the stream offset of its first byte, and reads from
/// `offset` on: the next frame, or while a frame's payload is due, that payload.
#[pyclass(module = "amber._amber", name = "_FrameReader", frozen)]
struct FrameReader {
    unframer: Mutex<Unframer>,
    /// `next_message` leaves frames from this stream offset on to Python.
    fast_until: AtomicU64,
    loads: Loads,
}

#[pymethods]
impl FrameReader {
    #[new]
    #[pyo3(signature = (require_end, max_message, loads_options))]
    fn new(
        py: Python<'_>,
        require_end: bool,
        max_message: Option<&Bound<'_, PyAny>>,
        loads_options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let (options, loads) = reading(py, require_end, max_message, loads_options)?;
        Ok(FrameReader {
            unframer: Mutex::new(Unframer::new(options)),
            fast_until: AtomicU64::new(u64::MAX),
            loads,
        })
    }

    /// The stream offset of the next byte to read: of the next frame, or of the payload
    /// that is due.
    #[getter]
    fn offset(&self) -> u64 {
        lock(&self.unframer).offset()
    }

    /// The number of messages taken so far.
    #[getter]
    fn index(&self) -> u64 {
        lock(&self.unframer).index()
    }

    /// Leaves every frame from stream offset `offset` on to Python's side of the reader.
    fn set_fast_until(&self, offset: u64) {
        self.fast_until.store(offset, Ordering::Relaxed);
    }

    /// The next message, decoded, if `data` holds all of its frame (and it starts before
    /// `fast_until`); else `_MORE`, with nothing read. Raises a framing error found on the
    /// way.
    fn next_message(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        base: u64,
    ) -> PyResult<Py<PyAny>> {
        crate::buffer::with_input(py, data, "_FrameReader.next_message()", |bytes| {
            let found = {
                let mut unframer = lock(&self.unframer);
                if unframer.offset() >= self.fast_until.load(Ordering::Relaxed) {
                    return Ok(more(py)?.clone_ref(py));
                }
                // Tried on a copy: a frame whose payload is not all there stays unread.
                let mut trial = *unframer;
                let input = from_offset(bytes, base, trial.offset())?;
                match trial.next(input, false) {
                    Ok(Next::Frame(frame)) => payload_in(bytes, base, &frame).map(|range| {
                        trial.payload_read();
                        *unframer = trial;
                        (frame, range)
                    }),
                    Ok(_) => None,
                    Err(err) => return Err(stream_error(py, err)),
                }
            };
            // Decoded without the lock: a class's own decode code may read on from here.
            match found {
                Some((frame, range)) => {
                    let frozen = frozen_input(data, range.len());
                    self.loads.decode(py, &bytes[range], frozen, &frame)
                }
                None => Ok(more(py)?.clone_ref(py)),
            }
        })
    }

    /// Reads on from `data`, as far as the next payload: its length, with `offset` then at its
    /// first byte; 0 once the stream is complete; None if more bytes are needed (never when
    /// `ends`: `data` holds all the stream has left).
    fn step(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        base: u64,
        ends: bool,
    ) -> PyResult<Option<u64>> {
        crate::buffer::with_input(py, data, "_FrameReader.step()", |bytes| {
            let mut unframer = lock(&self.unframer);
            let input = from_offset(bytes, base, unframer.offset())?;
            match unframer.next(input, ends) {
                Ok(Next::More) => Ok(None),
                Ok(Next::Finished) => Ok(Some(0)),
                Ok(Next::Frame(frame)) => Ok(Some(frame.len)),
                Err(err) => Err(stream_error(py, err)),
            }
        })
    }

    /// Decodes the payload that is due, which `data` must hold, and moves past it.
    fn decode_payload(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        base: u64,
    ) -> PyResult<Py<PyAny>> {
        crate::buffer::with_input(py, data, "_FrameReader.decode_payload()", |bytes| {
            let (frame, range) = {
                let mut unframer = lock(&self.unframer);
                let frame = due(&unframer)?;
                let range = payload_in(bytes, base, &frame).ok_or_else(|| {
                    PySystemError::new_err("the stream reader's buffer lacks the payload")
                })?;
                unframer.payload_read();
                (frame, range)
            };
            let frozen = frozen_input(data, range.len());
            self.loads.decode(py, &bytes[range], frozen, &frame)
        })
    }

    /// Moves past the payload that is due: the reader has taken it or passed over it.
    fn payload_read(&self) {
        lock(&self.unframer).payload_read();
    }

    /// The error (not raised) for a stream that ends inside the payload that is due, of which
    /// `have` bytes are there.
    fn cut(&self, py: Python<'_>, have: u64) -> PyResult<Py<PyAny>> {
        let frame = due(&lock(&self.unframer))?;
        Ok(stream_error(py, frame.cut(have)).into_value(py).into_any())
    }
}

fn due(unframer: &Unframer) -> PyResult<Frame> {
    unframer
        .payload_due()
        .ok_or_else(|| PySystemError::new_err("the stream reader has no payload due"))
}

/// _FrameGatherer(require_end, max_message, loads_options)
///
/// A `StreamDecoder`'s stream: `feed(chunk, out)` appends to `out` the messages `chunk`
/// completes, decoded as `loads` would, and raises the first error after them; `close()`
/// raises if the stream is incomplete.
#[pyclass(module = "amber._amber", name = "_FrameGatherer", frozen)]
struct FrameGatherer {
    /// Held for all of a `feed`, decoding included.
    gatherer: Mutex<Gatherer>,
    /// The gatherer's index and end, kept here too: they are read while a `feed` holds it.
    index: AtomicU64,
    ended: AtomicBool,
    loads: Loads,
}

impl FrameGatherer {
    fn gatherer(&self) -> PyResult<MutexGuard<'_, Gatherer>> {
        match self.gatherer.try_lock() {
            Ok(gatherer) => Ok(gatherer),
            Err(TryLockError::Poisoned(poisoned)) => Ok(poisoned.into_inner()),
            // Not a wait: the holder may be this very thread, in a class's decode code.
            Err(TryLockError::WouldBlock) => Err(PyRuntimeError::new_err(
                "a StreamDecoder was fed while it was decoding (from its own decoding, or from \
                 another thread without the decoder's lock)",
            )),
        }
    }
}

#[pymethods]
impl FrameGatherer {
    #[new]
    #[pyo3(signature = (require_end, max_message, loads_options))]
    fn new(
        py: Python<'_>,
        require_end: bool,
        max_message: Option<&Bound<'_, PyAny>>,
        loads_options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let (options, loads) = reading(py, require_end, max_message, loads_options)?;
        Ok(FrameGatherer {
            gatherer: Mutex::new(Gatherer::new(options)),
            index: AtomicU64::new(0),
            ended: AtomicBool::new(false),
            loads,
        })
    }

    /// The number of messages taken so far.
    #[getter]
    fn index(&self) -> u64 {
        self.index.load(Ordering::Relaxed)
    }

    /// Whether the end marker has been fed.
    #[getter]
    fn ended(&self) -> bool {
        self.ended.load(Ordering::Relaxed)
    }

    fn feed(
        &self,
        py: Python<'_>,
        chunk: &Bound<'_, PyAny>,
        out: &Bound<'_, PyList>,
    ) -> PyResult<()> {
        let mut gatherer = self.gatherer()?;
        let fed = crate::buffer::with_input(py, chunk, "StreamDecoder.feed()", |bytes| {
            let chunk_frozen = frozen_input(chunk, bytes.len());
            gatherer
                .feed(bytes, |frame, payload, source| {
                    self.index.store(frame.index + 1, Ordering::Relaxed);
                    // A gathered payload is the gatherer's own, out of anyone else's reach.
                    let frozen = chunk_frozen || source == Source::Gathered;
                    out.append(self.loads.decode(py, payload, frozen, frame)?)
                })
                .map_err(|err| match err {
                    FeedError::Stream(err) => stream_error(py, err),
                    FeedError::Payload(err) => err,
                })
        });
        self.index.store(gatherer.index(), Ordering::Relaxed);
        self.ended.store(gatherer.ended(), Ordering::Relaxed);
        fed
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.gatherer()?
            .close()
            .map_err(|err| stream_error(py, err))
    }
}
