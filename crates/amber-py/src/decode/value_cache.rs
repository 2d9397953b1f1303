//! Short str values made by earlier decodes, reused by later ones while that pays.
//!
//! Why: the values of a service's messages repeat as their keys do (a status, a type name, a
//! currency, a small count written as text), and making each anew costs a str allocation and
//! a copy, and later its deallocation. The keys' table (`key_cache`) already turns that into a
//! hash of at most 24 bytes and a compare; this is the same table for an untracked SHORT_STR
//! read as a container's item or a dict's value. Strs are immutable and an untracked str has
//! no identity on the wire (spec section 6.1), so handing out one object for equal texts
//! changes nothing a caller can rely on.
//!
//! Unlike keys, values are often new every time (ids, names, timestamps), and a lookup that
//! misses costs about 65 instructions a str on top of making it (callgrind, 100 new 15-letter
//! strs a message: 27% more for the whole decode). So the table is consulted only while it
//! pays: a hit earns [`HIT_CREDIT`], a miss spends one. With no credit left the table rests:
//! a decode that starts then does not consult it (one flag checked per str), except every
//! [`REST_DECODES`]th, which tries it again with [`PROBE_CREDIT`] lookups: that is how values
//! that start repeating earn the table back. Measured (callgrind, whole `loads`): the
//! quickle_small message decoded again and again takes 11% fewer instructions, the job hash
//! 7% fewer; messages of new values each time take what they took before (100 new strs:
//! within 0.1%; job hashes whose ids and names are new, 5 of 7 values: 0.9% more).

use std::cell::UnsafeCell;

use pyo3_ffi as ffi;

use super::key_cache::{self, Table};

/// The values' table.
static VALUES: Table = Table::new();

/// Credit a hit earns. A hit saves about 85 instructions (making the str, and freeing it
/// later), a miss costs about 65: the table pays while at least about a third of its lookups
/// hit.
const HIT_CREDIT: u32 = 2;
/// The most credit kept, so a run of hits long ago does not pay for a long run of misses now.
const MAX_CREDIT: u32 = 256;
/// Decodes that start while the table rests and leave it alone, before one tries it again.
const REST_DECODES: u32 = 64;
/// The credit a decode tries the resting table again with: that many misses in a row.
const PROBE_CREDIT: u32 = 16;

/// Whether the table is paying its way (see the module documentation).
struct Admission {
    credit: u32,
    /// Decodes started since the table ran out of credit.
    rested: u32,
}

/// [`Admission`] shared by every decode.
struct Shared(UnsafeCell<Admission>);

// SAFETY: read and written only by `Session::begin` and `find`, with the GIL held (the module
// does not declare itself free-threading safe); the GIL serialises every access.
unsafe impl Sync for Shared {}

static ADMISSION: Shared = Shared(UnsafeCell::new(Admission {
    credit: MAX_CREDIT,
    rested: 0,
}));

/// Whether one decode consults the table (see the module documentation).
pub(super) struct Session {
    on: bool,
}

impl Session {
    /// The session of a decode that starts now.
    ///
    /// # Safety
    /// The GIL must be held.
    #[inline]
    pub(super) unsafe fn begin() -> Session {
        // SAFETY: the GIL is held (caller), so nothing else touches the admission state.
        let admission = unsafe { &mut *ADMISSION.0.get() };
        if admission.credit > 0 {
            return Session { on: true };
        }
        admission.rested += 1;
        if admission.rested < REST_DECODES {
            return Session { on: false };
        }
        admission.rested = 0;
        admission.credit = PROBE_CREDIT;
        Session { on: true }
    }

    /// Whether this decode consults the table.
    #[inline(always)]
    pub(super) fn is_on(&self) -> bool {
        self.on
    }
}

/// What [`find`] found for a text.
pub(super) enum Found {
    /// A new reference to the str made before for this text.
    Str(*mut ffi::PyObject),
    /// Not there; the text is ASCII, and the str made for it goes into this slot
    /// ([`remember`]).
    Missed(usize),
    /// Not looked up: the text has a character above U+007F.
    NotAscii,
    /// Not looked up: the text is longer than the table's strs.
    TooLong,
}

/// Looks `utf8`, an untracked str value, up in the table, for a decode whose session
/// [`Session::is_on`]; a miss that spends the last credit turns the session off.
///
/// # Safety
/// The GIL must be held.
#[inline(always)]
pub(super) unsafe fn find(session: &mut Session, utf8: &[u8]) -> Found {
    let Some(short) = key_cache::short_key(utf8) else {
        return if utf8.len() > key_cache::SHORT_KEY_MAX {
            Found::TooLong
        } else {
            Found::NotAscii
        };
    };
    // SAFETY: the GIL is held (caller), so nothing else touches the table or the admission
    // state.
    let (cached, admission) = unsafe { (VALUES.lookup(&short), &mut *ADMISSION.0.get()) };
    if cached.is_null() {
        admission.credit = admission.credit.saturating_sub(1);
        if admission.credit == 0 {
            session.on = false;
            admission.rested = 0;
        }
        Found::Missed(short.slot)
    } else {
        admission.credit = (admission.credit + HIT_CREDIT).min(MAX_CREDIT);
        Found::Str(cached)
    }
}

/// Puts `text`, made after [`find`] answered [`Found::Missed`] with `slot`, into the table.
///
/// # Safety
/// The GIL must be held and `text` must be a live exact str of ASCII characters.
#[inline(always)]
pub(super) unsafe fn remember(slot: usize, text: *mut ffi::PyObject) {
    // SAFETY: as the caller promises.
    unsafe { VALUES.put(slot, text) };
}
