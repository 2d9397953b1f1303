//! Streams (spec section 11): many payloads in one sequence of bytes, each in a frame that
//! states its length. This module holds every rule of the framing, for all the readers and
//! writers built on it: the stream header, the frame length and what it may be, the end
//! marker, the reader's options (11.4), and which error each fault is, at which stream offset
//! and for which message (11.3, 11.5). It never looks inside a payload.
//!
//! Reading is incremental, over whatever bytes are at hand: an [`Unframer`] is told the bytes
//! from its position on and whether the input ends with them, and says what they hold (a
//! frame, the end of the stream, or that it needs more). On top of it, [`payloads`] splits a
//! whole stream held in memory, and a [`Gatherer`] takes a stream in chunks of any size, as
//! they arrive.

use std::fmt;

use crate::error::{DecodeError, ErrorKind};
use crate::header;
use crate::varint::{read_varint, VarintError, MAX_VARINT_LEN};

/// The stream version this crate reads and writes (byte 2 of the stream).
pub const VERSION: u8 = 1;

/// The first three bytes of every stream: `ab`, ASCII `S`, the stream version.
pub const MAGIC: [u8; 3] = [0xAB, 0x53, VERSION];

/// The end marker: a frame length of zero.
pub const END_MARKER: u8 = 0x00;

/// The largest frame (payload length in bytes) a reader accepts unless told otherwise: 2 GiB.
pub const DEFAULT_MAX_MESSAGE: u64 = 1 << 31;

/// What a reader accepts (spec section 11.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// A stream that ends at a frame boundary without its end marker is `truncated` when
    /// true; with false it ends validly there (a stream its writer is still appending to).
    pub require_end: bool,
    /// The largest accepted frame length; a larger one is `message_limit`.
    pub max_message: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            require_end: true,
            max_message: DEFAULT_MAX_MESSAGE,
        }
    }
}

/// The length varint that opens a frame, written without allocating.
#[derive(Clone, Copy, Debug)]
pub struct FrameHead {
    bytes: [u8; MAX_VARINT_LEN],
    len: u8,
}

impl FrameHead {
    /// The head of a frame holding a payload of `payload_len` bytes: its minimal varint.
    ///
    /// # Panics
    /// If `payload_len` is 0: that frame length is the end marker, and a payload is never
    /// empty.
    pub fn new(payload_len: u64) -> FrameHead {
        assert!(
            payload_len > 0,
            "a frame holds a payload of at least one byte"
        );
        let mut bytes = [0u8; MAX_VARINT_LEN];
        let mut value = payload_len;
        let mut len = 0;
        while value >= 0x80 {
            bytes[len] = (value as u8) | 0x80;
            value >>= 7;
            len += 1;
        }
        bytes[len] = value as u8;
        FrameHead {
            bytes,
            len: len as u8 + 1,
        }
    }

    /// The varint's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// Appends one frame (its length, then `payload`) to `out`.
///
/// # Panics
/// If `payload` is empty (see [`FrameHead::new`]).
pub fn write_frame(out: &mut Vec<u8>, payload: &[u8]) {
    out.extend_from_slice(FrameHead::new(payload.len() as u64).as_bytes());
    out.extend_from_slice(payload);
}

/// A stream that fails to read: a decode error whose offset counts from the stream's first
/// byte, and the index of the message concerned (the number of frames before it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamError {
    /// What was wrong, and where in the stream.
    pub error: DecodeError,
    /// The index of the message concerned.
    pub message_index: u64,
}

impl StreamError {
    #[cold]
    fn new(kind: ErrorKind, offset: u64, message_index: u64, detail: impl Into<String>) -> Self {
        StreamError {
            error: DecodeError::new(kind, offset as usize, detail),
            message_index,
        }
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (message {}, at stream byte {}, {})",
            self.error.detail,
            self.message_index,
            self.error.offset,
            self.error.kind.name()
        )
    }
}

impl std::error::Error for StreamError {}

/// One frame, as found in a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The stream offset of its first byte (the first byte of its length varint).
    pub offset: u64,
    /// Its message's index: the number of frames before it.
    pub index: u64,
    /// The size of its length varint.
    pub head: usize,
    /// The length of its payload.
    pub len: u64,
}

impl Frame {
    /// The stream offset of its payload's first byte.
    pub fn payload_offset(&self) -> u64 {
        self.offset + self.head as u64
    }

    /// The stream offset just after it. (A declared length may reach past any real stream,
    /// and past 2^64 - 1: that is where it stops.)
    pub fn end(&self) -> u64 {
        self.payload_offset().saturating_add(self.len)
    }

    /// The error for a stream that ends inside this frame's payload, of which `have` bytes
    /// came (or, from a source that knows its size, are left): `truncated` at the frame.
    #[cold]
    pub fn cut(&self, have: u64) -> StreamError {
        StreamError::new(
            ErrorKind::Truncated,
            self.offset,
            self.index,
            format!(
                "the stream ends inside a frame: {have} of its {} payload bytes are there",
                self.len
            ),
        )
    }

    /// An error of the payload decoder, whose offset counts from the payload's first byte, as
    /// an error of the stream: same kind, offset moved into the stream, this frame's index.
    pub fn payload_error(&self, mut error: DecodeError) -> StreamError {
        error.offset += self.payload_offset() as usize;
        StreamError {
            error,
            message_index: self.index,
        }
    }
}

/// What an [`Unframer`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// The bytes at hand end before anything can be said: more are needed (never when the
    /// input ends).
    More,
    /// A frame: its length has been read, and its payload is due (see [`Unframer::next`]).
    Frame(Frame),
    /// The stream is complete: the input ends after the end marker or, when the end marker is
    /// not required, at a frame boundary.
    Finished,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Header,
    Frames,
    Payload(Frame),
    Done,
}

/// Reads the framing of one stream, from its first byte on, incrementally: each call to
/// [`Unframer::next`] gets the stream's bytes from [`Unframer::offset`] on (as many as are at
/// hand) and says whether the input ends with them.
///
/// It is a small `Copy` value: a reader can try a step on a copy and keep it only if it likes
/// what it finds.
#[derive(Clone, Copy, Debug)]
pub struct Unframer {
    options: ReadOptions,
    phase: Phase,
    /// Stream offset of the next byte to read.
    offset: u64,
    /// Frames whose payload has been taken.
    index: u64,
    /// The end marker has been read.
    ended: bool,
}

impl Unframer {
    /// An unframer at the start of a stream.
    pub fn new(options: ReadOptions) -> Unframer {
        Unframer {
            options,
            phase: Phase::Header,
            offset: 0,
            index: 0,
            ended: false,
        }
    }

    /// The options it reads with.
    pub fn options(&self) -> ReadOptions {
        self.options
    }

    /// The stream offset of the next byte it reads: while a payload is due, that payload's
    /// first byte.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The number of messages taken so far (frames whose payload was read or passed over).
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Whether the end marker has been read.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The frame whose payload is due, if one is.
    pub fn payload_due(&self) -> Option<Frame> {
        match self.phase {
            Phase::Payload(frame) => Some(frame),
            _ => None,
        }
    }

    /// Reads on from `input`, the stream's bytes from [`Unframer::offset`] on that are at
    /// hand; `ends` says that the input ends with them. The header and the end marker are
    /// read on the way; `offset` moves past whatever was read.
    ///
    /// After [`Next::Frame`], the frame's payload is due: its `len` bytes follow its length
    /// (at the new `offset`), and are the caller's to get, decode or pass over. The frame
    /// checks what it can before the payload is there: its length is within `max_message`,
    /// and, when the input ends, within the input. Once the caller has the payload (or has
    /// passed over it), [`Unframer::payload_read`] moves on; until then `next` returns the
    /// same frame again, whatever it is given. A caller that finds the input ending inside
    /// the payload reports [`Frame::cut`].
    ///
    /// Errors are final: after one, the unframer is of no further use.
    pub fn next(&mut self, input: &[u8], ends: bool) -> Result<Next, StreamError> {
        let mut rest = input;
        loop {
            match self.phase {
                Phase::Header => {
                    check_header(rest, ends)?;
                    if rest.len() < MAGIC.len() {
                        return Ok(Next::More);
                    }
                    rest = &rest[MAGIC.len()..];
                    self.offset = MAGIC.len() as u64;
                    self.phase = Phase::Frames;
                }
                Phase::Frames => match self.frame(rest, ends)? {
                    Some(frame) if frame.len == 0 => {
                        rest = &rest[1..];
                        self.offset += 1;
                        self.ended = true;
                        self.phase = Phase::Done;
                    }
                    Some(frame) => {
                        self.offset = frame.payload_offset();
                        self.phase = Phase::Payload(frame);
                        return Ok(Next::Frame(frame));
                    }
                    None if rest.is_empty() && ends => {
                        // A stream that may end at a frame boundary (see `frame`) does so here.
                        self.phase = Phase::Done;
                        return Ok(Next::Finished);
                    }
                    None => return Ok(Next::More),
                },
                Phase::Payload(frame) => return Ok(Next::Frame(frame)),
                Phase::Done => {
                    if !rest.is_empty() {
                        return Err(StreamError::new(
                            ErrorKind::TrailingBytes,
                            self.offset,
                            self.index,
                            "bytes follow the stream's end marker",
                        ));
                    }
                    return Ok(if ends { Next::Finished } else { Next::More });
                }
            }
        }
    }

    /// The frame at the start of `input` (one with `len` 0 is the end marker), or None if
    /// more input is needed, or if the input ends here and may (`require_end` false).
    fn frame(&self, input: &[u8], ends: bool) -> Result<Option<Frame>, StreamError> {
        let at = self.offset;
        let error = |kind, detail: String| Err(StreamError::new(kind, at, self.index, detail));
        let (len, head) = match read_varint(input) {
            Ok(read) => read,
            Err(VarintError::Truncated) if !ends => return Ok(None),
            Err(VarintError::Truncated) if !input.is_empty() => {
                return error(
                    ErrorKind::Truncated,
                    "the stream ends inside a frame length".into(),
                )
            }
            Err(VarintError::Truncated) if !self.options.require_end => return Ok(None),
            Err(VarintError::Truncated) => {
                return error(
                    ErrorKind::Truncated,
                    format!(
                        "the stream ends after {} messages without its end marker 00 (its \
                         writer did not close it); set require_end to false to read a stream \
                         that is still being written",
                        self.index
                    ),
                )
            }
            Err(VarintError::Overlong) => {
                return error(
                    ErrorKind::OverlongVarint,
                    "frame length varint is not minimal (it ends with a 00 byte)".into(),
                )
            }
            Err(VarintError::Overflow) => {
                return error(
                    ErrorKind::VarintOverflow,
                    "frame length varint is longer than 10 bytes or above 2^64 - 1".into(),
                )
            }
        };
        let frame = Frame {
            offset: at,
            index: self.index,
            head,
            len,
        };
        if len > self.options.max_message {
            return error(
                ErrorKind::MessageLimit,
                format!(
                    "frame of {len} bytes is larger than max_message={}",
                    self.options.max_message
                ),
            );
        }
        // After the limit: the same bytes fail the same way whether or not the reader knows
        // where its input ends.
        let left = (input.len() - head) as u64;
        if ends && len > left {
            return error(
                ErrorKind::Truncated,
                format!("frame declares a payload of {len} bytes but only {left} bytes are left"),
            );
        }
        Ok(Some(frame))
    }

    /// Moves past the payload that is due (see [`Unframer::next`]): the caller has it, or has
    /// passed over it. Does nothing if no payload is due.
    pub fn payload_read(&mut self) {
        if let Phase::Payload(frame) = self.phase {
            self.offset = frame.end();
            self.index += 1;
            self.phase = Phase::Frames;
        }
    }
}

/// Checks the stream header given the stream's first bytes (all of them, when `ends`): as
/// many of its three bytes as are there, so that a wrong one is reported as soon as it comes.
fn check_header(input: &[u8], ends: bool) -> Result<(), StreamError> {
    let got = &input[..input.len().min(MAGIC.len())];
    let magic = &got[..got.len().min(2)];
    if magic != &MAGIC[..magic.len()] {
        let detail = if magic == header::MAGIC {
            "this is a single amber payload (magic ab 41), not a stream (magic ab 53): decode \
             it on its own"
                .to_owned()
        } else {
            format!(
                "the input does not start with the stream magic ab 53 (got {})",
                spaced_hex(got)
            )
        };
        return Err(StreamError::new(ErrorKind::BadMagic, 0, 0, detail));
    }
    if let Some(&version) = got.get(2) {
        if version != VERSION {
            return Err(StreamError::new(
                ErrorKind::UnsupportedVersion,
                2,
                0,
                format!(
                    "stream version {version} is not supported (this reader reads version \
                     {VERSION})"
                ),
            ));
        }
    } else if ends {
        return Err(StreamError::new(
            ErrorKind::Truncated,
            got.len() as u64,
            0,
            format!(
                "the stream ends inside its 3-byte header ({} bytes)",
                got.len()
            ),
        ));
    }
    Ok(())
}

fn spaced_hex(bytes: &[u8]) -> String {
    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    hex.join(" ")
}

/// The payloads of a whole stream held in `data`, in order, each with its frame; after the
/// last, the stream's framing error if it has one (then nothing more).
pub fn payloads(data: &[u8], options: ReadOptions) -> Payloads<'_> {
    Payloads {
        data,
        unframer: Unframer::new(options),
        over: false,
    }
}

/// The iterator of [`payloads`].
#[derive(Clone, Debug)]
pub struct Payloads<'a> {
    data: &'a [u8],
    unframer: Unframer,
    over: bool,
}

impl<'a> Iterator for Payloads<'a> {
    type Item = Result<(Frame, &'a [u8]), StreamError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.over {
            return None;
        }
        let rest = &self.data[self.unframer.offset() as usize..];
        match self.unframer.next(rest, true) {
            Ok(Next::Frame(frame)) => {
                self.unframer.payload_read();
                // The input ends with `rest`, so `next` has checked that the payload is there.
                let start = frame.payload_offset() as usize;
                Some(Ok((frame, &self.data[start..start + frame.len as usize])))
            }
            Ok(_) => {
                self.over = true;
                None
            }
            Err(err) => {
                self.over = true;
                Some(Err(err))
            }
        }
    }
}

/// Where a payload handed out by a [`Gatherer`] lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// In the chunk being fed, which holds all of it.
    Chunk,
    /// In the gatherer's own buffer: it came in more than one chunk.
    Gathered,
}

/// Why [`Gatherer::feed`] stopped: the stream's framing, or the caller's handling of a
/// payload.
#[derive(Debug)]
pub enum FeedError<E> {
    /// The framing is wrong.
    Stream(StreamError),
    /// The caller's function failed on a payload.
    Payload(E),
}

impl<E> From<StreamError> for FeedError<E> {
    fn from(err: StreamError) -> Self {
        FeedError::Stream(err)
    }
}

/// Bytes of one header or frame length that came split across chunks: at most this many.
const MAX_CARRY: usize = MAX_VARINT_LEN;

/// Reads a stream given in chunks of any size, as they arrive, and hands out each payload
/// once all its bytes have come. A payload that lies within one chunk is handed out from the
/// chunk itself; only one split across chunks is gathered, in a buffer that grows as its bytes
/// arrive (a declared length is never allocated up front).
#[derive(Clone, Debug)]
pub struct Gatherer {
    unframer: Unframer,
    /// The bytes of a header or frame length that the chunks so far end inside.
    carry: Vec<u8>,
    /// The bytes so far of the payload that is due.
    pending: Vec<u8>,
}

impl Gatherer {
    /// A gatherer at the start of a stream.
    pub fn new(options: ReadOptions) -> Gatherer {
        Gatherer {
            unframer: Unframer::new(options),
            carry: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// The number of payloads handed out so far.
    pub fn index(&self) -> u64 {
        self.unframer.index()
    }

    /// Whether the end marker has been fed.
    pub fn ended(&self) -> bool {
        self.unframer.ended()
    }

    /// Takes the next bytes of the stream and calls `each` on every payload they complete, in
    /// order, with its frame. The first error stops it: of the framing (all payloads before the
    /// fault were handed out), or of `each`. Errors are final, as for [`Unframer::next`].
    pub fn feed<E>(
        &mut self,
        chunk: &[u8],
        mut each: impl FnMut(&Frame, &[u8], Source) -> Result<(), E>,
    ) -> Result<(), FeedError<E>> {
        let mut rest = chunk;
        if self.unframer.payload_due().is_some() {
            rest = self.payload(rest, &mut each)?;
        }
        if !self.carry.is_empty() && self.unframer.payload_due().is_none() {
            // Enough bytes to finish the header or frame length; those the unframer does not
            // use are taken again from the chunk itself.
            let old = self.carry.len();
            let take = rest.len().min(MAX_CARRY - old);
            self.carry.extend_from_slice(&rest[..take]);
            let start = self.unframer.offset();
            self.unframer.next(&self.carry, false)?;
            let used = (self.unframer.offset() - start) as usize;
            if used == 0 {
                // Still undecided, so the carry has room left: all of the chunk is in it.
                return Ok(());
            }
            self.carry.clear();
            rest = &rest[used - old..];
            if self.unframer.payload_due().is_some() {
                rest = self.payload(rest, &mut each)?;
            }
        }
        while self.unframer.payload_due().is_none() {
            let start = self.unframer.offset();
            let next = self.unframer.next(rest, false)?;
            rest = &rest[(self.unframer.offset() - start) as usize..];
            match next {
                Next::Frame(_) => rest = self.payload(rest, &mut each)?,
                Next::More | Next::Finished => {
                    self.carry.extend_from_slice(rest);
                    break;
                }
            }
        }
        Ok(())
    }

    /// Takes the bytes of the payload that is due from the start of `rest`; hands it out if
    /// it is complete. Returns the rest of `rest`.
    fn payload<'c, E>(
        &mut self,
        rest: &'c [u8],
        each: &mut impl FnMut(&Frame, &[u8], Source) -> Result<(), E>,
    ) -> Result<&'c [u8], FeedError<E>> {
        let Some(frame) = self.unframer.payload_due() else {
            return Ok(rest);
        };
        let missing = frame.len - self.pending.len() as u64;
        if self.pending.is_empty() && missing <= rest.len() as u64 {
            let (payload, after) = rest.split_at(missing as usize);
            self.unframer.payload_read();
            each(&frame, payload, Source::Chunk).map_err(FeedError::Payload)?;
            return Ok(after);
        }
        let take = missing.min(rest.len() as u64) as usize;
        self.pending.extend_from_slice(&rest[..take]);
        if take as u64 == missing {
            self.unframer.payload_read();
            let payload = std::mem::take(&mut self.pending);
            each(&frame, &payload, Source::Gathered).map_err(FeedError::Payload)?;
        }
        Ok(&rest[take..])
    }

    /// Says that no more input will come: an error if the stream stopped inside its header or
    /// a frame, or (when the end marker is required) without its end marker.
    pub fn close(&mut self) -> Result<(), StreamError> {
        if let Some(frame) = self.unframer.payload_due() {
            return Err(frame.cut(self.pending.len() as u64));
        }
        match self.unframer.next(&self.carry, true)? {
            Next::Frame(frame) => Err(frame.cut(0)),
            Next::More | Next::Finished => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: [u8; 4] = [0xAB, 0x41, 0x01, 0x90];

    fn stream(payloads: &[&[u8]], end: bool) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        for p in payloads {
            write_frame(&mut out, p);
        }
        if end {
            out.push(END_MARKER);
        }
        out
    }

    fn split(data: &[u8], options: ReadOptions) -> (Vec<Vec<u8>>, Option<StreamError>) {
        let mut found = Vec::new();
        for item in payloads(data, options) {
            match item {
                Ok((_, p)) => found.push(p.to_vec()),
                Err(err) => return (found, Some(err)),
            }
        }
        (found, None)
    }

    fn fed(data: &[u8], step: usize, options: ReadOptions) -> (Vec<Vec<u8>>, Option<StreamError>) {
        let mut g = Gatherer::new(options);
        let mut found = Vec::new();
        for chunk in data.chunks(step.max(1)) {
            let result = g.feed(chunk, |_, p, _| {
                found.push(p.to_vec());
                Ok::<(), ()>(())
            });
            match result {
                Ok(()) => {}
                Err(FeedError::Stream(err)) => return (found, Some(err)),
                Err(FeedError::Payload(())) => unreachable!(),
            }
        }
        let closed = g.close().err();
        (found, closed)
    }

    #[test]
    fn frame_heads_are_minimal_varints() {
        assert_eq!(FrameHead::new(1).as_bytes(), [0x01]);
        assert_eq!(FrameHead::new(127).as_bytes(), [0x7F]);
        assert_eq!(FrameHead::new(128).as_bytes(), [0x80, 0x01]);
        assert_eq!(FrameHead::new(u64::MAX).as_bytes().len(), MAX_VARINT_LEN);
        for len in [1, 127, 128, 300, 16384, 1 << 31, u64::MAX] {
            let head = FrameHead::new(len);
            assert_eq!(
                read_varint(head.as_bytes()),
                Ok((len, head.as_bytes().len()))
            );
        }
    }

    #[test]
    #[should_panic(expected = "at least one byte")]
    fn no_frame_of_nothing() {
        FrameHead::new(0);
    }

    #[test]
    fn every_split_of_a_stream_reads_the_same() {
        let big = vec![0x42; 300];
        let data = stream(&[&NONE, &big, &NONE], true);
        let whole = split(&data, ReadOptions::default());
        assert_eq!(
            whole,
            (vec![NONE.to_vec(), big.clone(), NONE.to_vec()], None)
        );
        for step in 1..data.len() + 1 {
            assert_eq!(
                fed(&data, step, ReadOptions::default()),
                whole,
                "chunks of {step}"
            );
        }
    }

    #[test]
    fn every_cut_fails_at_its_frame() {
        let data = stream(&[&NONE, &[0x42; 200]], true);
        let starts = [3u64, 8, 8 + 2 + 200];
        for cut in 0..data.len() {
            let (_, err) = split(&data[..cut], ReadOptions::default());
            let err = err.expect("a cut stream fails");
            assert_eq!(err.error.kind, ErrorKind::Truncated, "cut {cut}");
            let (offset, index) = if cut < 3 {
                (cut as u64, 0)
            } else {
                let i = starts.iter().rposition(|&s| s <= cut as u64).unwrap();
                (starts[i], i as u64)
            };
            assert_eq!(
                (err.error.offset as u64, err.message_index),
                (offset, index)
            );
            for step in [1, 2, 7] {
                let fed = fed(&data[..cut], step, ReadOptions::default())
                    .1
                    .expect("fails");
                let key = |e: &StreamError| (e.error.kind, e.error.offset, e.message_index);
                assert_eq!(key(&fed), key(&err), "cut {cut}, chunks of {step}");
            }
        }
    }

    #[test]
    fn damaged_streams_read_the_same_whole_and_in_chunks() {
        let key = |(found, err): (Vec<Vec<u8>>, Option<StreamError>)| {
            (
                found,
                err.map(|e| (e.error.kind, e.error.offset, e.message_index)),
            )
        };
        let good = stream(&[&NONE, &[0x42; 130], &NONE, &[7]], true);
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut random = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..2000 {
            let mut data = good.clone();
            for _ in 0..1 + random() % 3 {
                let at = (random() as usize) % data.len();
                match random() % 3 {
                    0 => data[at] = random() as u8,
                    1 => data.truncate(at),
                    _ => data.insert(at, random() as u8),
                }
                if data.is_empty() {
                    break;
                }
            }
            let options = ReadOptions {
                require_end: round % 2 == 0,
                max_message: 1 + random() % 200,
            };
            let whole = key(split(&data, options));
            for step in [1, 3, 64] {
                assert_eq!(
                    key(fed(&data, step, options)),
                    whole,
                    "{data:02x?} by {step}"
                );
            }
        }
    }

    #[test]
    fn require_end_false_stops_only_at_a_frame_boundary() {
        let options = ReadOptions {
            require_end: false,
            ..ReadOptions::default()
        };
        let data = stream(&[&NONE], false);
        assert_eq!(split(&data, options), (vec![NONE.to_vec()], None));
        assert_eq!(fed(&data, 1, options), (vec![NONE.to_vec()], None));
        let (_, err) = split(&data[..data.len() - 1], options);
        assert_eq!(err.map(|e| e.error.offset), Some(3));
    }

    #[test]
    fn a_due_payload_is_returned_again_until_read() {
        let data = stream(&[&NONE], true);
        let mut u = Unframer::new(ReadOptions::default());
        let Ok(Next::Frame(frame)) = u.next(&data[..5], false) else {
            panic!("a frame")
        };
        assert_eq!(
            (frame.offset, frame.head, frame.len, u.offset()),
            (3, 1, 4, 4)
        );
        assert_eq!(u.next(&[], true), Ok(Next::Frame(frame)));
        assert_eq!(u.index(), 0);
        u.payload_read();
        assert_eq!((u.offset(), u.index()), (8, 1));
        assert_eq!(u.next(&data[8..], false), Ok(Next::More));
        assert!(u.ended());
        assert_eq!(u.next(&[], true), Ok(Next::Finished));
    }

    #[test]
    fn header_errors_come_as_soon_as_their_byte() {
        let mut u = Unframer::new(ReadOptions::default());
        assert_eq!(u.next(&[0xAB], false), Ok(Next::More));
        let err = u.next(&[0xAB, 0x41], false).unwrap_err();
        assert_eq!(err.error.kind, ErrorKind::BadMagic);
        assert!(err.to_string().contains("single amber payload"), "{err}");
        let err = Unframer::new(ReadOptions::default())
            .next(&[0xAB, 0x53, 0x02], false)
            .unwrap_err();
        assert_eq!(
            (err.error.kind, err.error.offset),
            (ErrorKind::UnsupportedVersion, 2)
        );
    }

    #[test]
    fn payload_errors_move_into_the_stream() {
        let frame = Frame {
            offset: 8,
            index: 1,
            head: 2,
            len: 300,
        };
        let err = frame.payload_error(DecodeError::new(ErrorKind::UnknownTag, 3, "x"));
        assert_eq!((err.error.offset, err.message_index), (13, 1));
        assert_eq!(
            err.to_string(),
            "x (message 1, at stream byte 13, unknown_tag)"
        );
    }
}
