//! What an encode keeps about class instances: the shapes written, the plans of the classes
//! met, the temporaries made from instances.
//!
//! Most payloads hold no instance at all, and for a small one, making these tables and
//! dropping them again cost about 70 of the 1,030 instructions of a `dumps([1])`
//! (callgrind). So the encoder holds them boxed, made the first time an instance needs them
//! ([`PyEncoder::class_work`]); a payload of plain data never allocates, moves or drops
//! them. The attribute stacks, read for every field of every instance, stay in the encoder
//! itself: behind the box they cost lists of instances about 2%, and two empty `Vec`s cost
//! almost nothing to make or drop.

use std::sync::Arc;

use super::classes::{ClassPlan, ShapeTable};
use super::PyEncoder;
use crate::object::PyObj;

/// The class state of one encode (see the module documentation).
#[derive(Default)]
pub(super) struct ClassWork {
    /// Shapes of class instances written so far in this pass.
    pub(super) shapes: ShapeTable,
    /// Objects made during the encode (states, temporary lists), alive until it ends.
    pub(super) temporaries: Vec<PyObj>,
    /// The class plan used last, by type: instances of one class tend to come in runs.
    pub(super) last_plan: Option<(usize, Arc<ClassPlan>)>,
    /// Plans of the caller's custom types met so far, by type.
    pub(super) custom_plans: rustc_hash::FxHashMap<usize, Arc<ClassPlan>>,
}

impl ClassWork {
    /// Forgets the shapes for a new pass over the same payload; the plans and temporaries
    /// stay (see `ShapeTable::clear`).
    pub(super) fn restart(&mut self) {
        self.shapes.clear();
    }
}

impl PyEncoder<'_> {
    /// The class state, made on first use.
    #[inline(always)]
    pub(super) fn class_work(&mut self) -> &mut ClassWork {
        self.class_work.get_or_insert_with(new_class_work)
    }
}

/// Out of line, so that [`PyEncoder::class_work`] stays a test and a load where it inlines.
#[cold]
#[inline(never)]
fn new_class_work() -> Box<ClassWork> {
    Box::default()
}
