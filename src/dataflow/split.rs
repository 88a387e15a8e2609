//! Splitting one stream into a fixed number of streams by the kind of each
//! datum, a container at a time.
//!
//! Timely's `partition` gathers every container of a timestamp into one vector
//! per part before it ships any: when an operator emits a whole snapshot's
//! output at one time (the ledger's deltas, PageRank's rows), that is a second
//! copy of all of it at once. Here each input container is routed as it comes
//! and each part is shipped whenever it fills a container, so the split holds
//! at most one container per part.

use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::operators::InputCapability;
use timely::dataflow::Stream;
use timely::progress::Timestamp;

/// Records per shipped container: timely's default capacity for a vector of
/// records a few dozen bytes long.
const CONTAINER: usize = 1024;

/// Splits `stream` into `N` streams by `kind` (`0..N`) of each datum, moving
/// every datum into exactly one of them, in the order it came.
///
/// Panics if `kind` returns `N` or more: the kinds are the caller's own enum.
pub fn split_by_kind<'s, T, D, const N: usize>(
    stream: Stream<'s, T, Vec<D>>,
    name: &str,
    kind: impl Fn(&D) -> usize + 'static,
) -> [Stream<'s, T, Vec<D>>; N]
where
    T: Timestamp,
    D: 'static,
{
    let mut builder = OperatorBuilder::new(name.to_owned(), stream.scope());
    let mut input = builder.new_input(stream, Pipeline);
    let (mut outputs, streams): (Vec<_>, Vec<_>) =
        (0..N).map(|_| builder.new_output::<Vec<D>>()).unzip();
    builder.build(move |_capabilities| {
        let mut parts: Vec<Vec<D>> = (0..N).map(|_| Vec::new()).collect();
        move |_frontiers| {
            let mut handles: Vec<_> = outputs.iter_mut().map(|o| o.activate()).collect();
            // The capability of the data in `parts`: a part is shipped when it
            // fills a container, or when the time changes, or at the end,
            // never a container per part per input container (most would be
            // nearly empty, each with a whole container's capacity).
            let mut held: Option<InputCapability<T>> = None;
            input.for_each(|cap, data| {
                if let Some(h) = held.as_ref().filter(|h| h.stamp() != cap.stamp()) {
                    for (part, handle) in parts.iter_mut().zip(&mut handles) {
                        handle.give(h, part);
                        part.clear();
                    }
                }
                let cap = held.insert(cap);
                for datum in data.drain(..) {
                    let k = kind(&datum);
                    let part = &mut parts[k];
                    if part.capacity() == 0 {
                        part.reserve_exact(CONTAINER);
                    }
                    part.push(datum);
                    if part.len() >= CONTAINER {
                        handles[k].give(&*cap, part);
                        part.clear();
                    }
                }
            });
            if let Some(h) = held {
                for (part, handle) in parts.iter_mut().zip(&mut handles) {
                    handle.give(&h, part);
                    part.clear();
                }
            }
        }
    });
    streams
        .try_into()
        .unwrap_or_else(|_| unreachable!("one stream per kind"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use timely::dataflow::operators::capture::Extract;
    use timely::dataflow::operators::{Capture, Input, Probe};
    use timely::dataflow::ProbeHandle;

    /// Every datum reaches the stream of its kind, once, with its time, over
    /// many containers and several times.
    #[test]
    fn every_datum_reaches_its_kind_once() {
        type Got = Vec<Vec<(u64, Vec<u64>)>>;
        let got: Arc<Mutex<Got>> = Arc::new(Mutex::new(Vec::new()));
        let sink = got.clone();
        timely::execute_directly(move |worker| {
            let probe = ProbeHandle::new();
            let (mut input, captures) = worker.dataflow::<u64, _, _>(|scope| {
                let (input, stream) = scope.new_input::<Vec<u64>>();
                let parts: [_; 3] = split_by_kind(stream, "Test", |x: &u64| (*x % 3) as usize);
                let captures: Vec<_> = parts
                    .into_iter()
                    .map(|s| s.probe_with(&probe).capture())
                    .collect();
                (input, captures)
            });
            for t in 0..3u64 {
                for x in 0..5_000u64 {
                    input.send(x * 10 + t);
                }
                input.advance_to(t + 1);
                worker.step_while(|| probe.less_than(input.time()));
            }
            drop(input);
            while worker.step() {}
            *sink.lock().unwrap() = captures.into_iter().map(|rx| rx.extract()).collect();
        });
        let got = got.lock().unwrap();
        assert_eq!(got.len(), 3);
        for (k, part) in got.iter().enumerate() {
            let want: Vec<(u64, Vec<u64>)> = (0..3u64)
                .map(|t| {
                    let mut xs: Vec<u64> = (0..5_000u64)
                        .map(|x| x * 10 + t)
                        .filter(|x| (*x % 3) as usize == k)
                        .collect();
                    xs.sort();
                    (t, xs)
                })
                .collect();
            assert_eq!(part, &want, "kind {k}");
        }
    }
}
