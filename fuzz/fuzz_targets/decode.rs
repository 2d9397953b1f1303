//! Any bytes: decoding must return a value or an error, never panic (the EXT blob parsers and
//! composite rules of the format crate included, which the decoder runs), and whatever decodes
//! must encode again to bytes that decode to the same graph. A traced decode must end as the
//! plain one does.
#![no_main]

use amber_format::model::Graph;
use amber_format::trace::trace_graph;
use amber_format::Limits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_depth: 64,
        max_alloc: None,
    };
    let decoded = Graph::decode(data, &limits);
    let traced = trace_graph(data, &limits, usize::MAX);
    match (&decoded, &traced.result) {
        (Ok(_), Ok(_)) => {}
        (Err(a), Err(b)) if (a.kind, a.offset) == (b.kind, b.offset) => {}
        (plain, traced) => panic!("tracing changed the decode: {plain:?} vs {traced:?}"),
    }
    let Ok(graph) = decoded else {
        return;
    };
    let again = graph.encode(true).expect("a decoded graph encodes");
    let back = Graph::decode(&again, &Limits::default()).expect("re-encoded bytes decode");
    if let Err(difference) = graph.same_as(&back) {
        panic!("round trip changed the graph: {difference}");
    }
});
