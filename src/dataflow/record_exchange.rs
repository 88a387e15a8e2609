//! Routing input records to the ledgers, a batch at a time.
//!
//! timely's `Exchange` gathers a worker's records into a container of 8 KiB
//! (204 records of 40 bytes) before it ships them, and ships the rest only
//! when the epoch's input ends. That suits small records. But most input
//! records are batches of 4,096 pages or links (`ingest::page_batch`), so a
//! container held up to 204 batches, nearly a million rows, and the ledger
//! saw a quarter of a snapshot's batches before its reading ended: the rest
//! waited in the exchange (memory the run held for nothing), and the batches
//! the ledger had gathered reached the reader's spares too late to be filled
//! again (`page_batch::recycle_links`): it took fresh memory, page fault by
//! page fault, for three batches in four.
//! [`RecordDistributor`] ships a worker's records as soon as a batch is
//! among them, and other records once they fill timely's container.

use timely::communication::Push;
use timely::container::buffer::default_capacity;
use timely::dataflow::channels::pact::DistributorPact;
use timely::dataflow::channels::pushers::exchange::Distributor;
use timely::dataflow::channels::Message;
use timely::progress::Stamp;

use crate::ingest::Record;

/// The pact that routes each record by `route` (taken modulo the workers).
pub type RecordPact<F> = DistributorPact<Box<dyn FnOnce(usize) -> RecordDistributor<F>>>;

/// A pact whose distributor is a [`RecordDistributor`] routing by `route`.
pub fn record_pact<F>(route: F) -> RecordPact<F>
where
    F: FnMut(&Record) -> u64 + 'static,
{
    DistributorPact(Box::new(move |peers| RecordDistributor::new(route, peers)))
}

/// Per worker the records bound for it; see the module docs.
pub struct RecordDistributor<F> {
    route: F,
    pending: Vec<Vec<Record>>,
}

impl<F> RecordDistributor<F> {
    fn new(route: F, peers: usize) -> Self {
        RecordDistributor {
            route,
            pending: (0..peers).map(|_| Vec::new()).collect(),
        }
    }
}

/// Records a container holds before it goes, whatever their rows: timely's
/// own size for them.
const SHIP_RECORDS: usize = default_capacity::<Record>();

impl<F: FnMut(&Record) -> u64> Distributor<Vec<Record>> for RecordDistributor<F> {
    fn partition<T: Clone, P: Push<Message<T, Vec<Record>>>>(
        &mut self,
        container: &mut Vec<Record>,
        stamp: &Stamp<T>,
        pushers: &mut [P],
    ) {
        let peers = pushers.len() as u64;
        for rec in container.drain(..) {
            let to = ((self.route)(&rec) % peers) as usize;
            let records = &mut self.pending[to];
            if records.capacity() == 0 {
                records.reserve_exact(SHIP_RECORDS);
            }
            let batch = rec.is_batch();
            records.push(rec);
            if batch || records.len() >= SHIP_RECORDS {
                Message::push_at(records, stamp.clone(), &mut pushers[to]);
                records.clear();
            }
        }
    }

    fn flush<T: Clone, P: Push<Message<T, Vec<Record>>>>(
        &mut self,
        stamp: &Stamp<T>,
        pushers: &mut [P],
    ) {
        for (records, pusher) in self.pending.iter_mut().zip(pushers) {
            if !records.is_empty() {
                Message::push_at(records, stamp.clone(), pusher);
                records.clear();
            }
        }
    }

    fn relax(&mut self) {
        for records in &mut self.pending {
            *records = Vec::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::page_batch::LinkBatch;
    use crate::ingest::LinkObs;
    use crate::model::{HostId, PageId};

    /// Collects the messages pushed to it.
    #[derive(Default)]
    struct Sink(Vec<Vec<Record>>);

    impl Push<Message<u64, Vec<Record>>> for Sink {
        fn push(&mut self, message: &mut Option<Message<u64, Vec<Record>>>) {
            if let Some(m) = message.take() {
                self.0.push(m.data);
            }
        }
    }

    fn link(host: u64) -> Record {
        Record::Link(LinkObs {
            src_host: HostId(host),
            src: PageId(host),
            dst: PageId(0),
            dst_host: HostId(0),
        })
    }

    fn batch(to: u32, links: usize) -> Record {
        Record::Links(Box::new(LinkBatch {
            to,
            links: vec![
                LinkObs {
                    src_host: HostId(0),
                    src: PageId(1),
                    dst: PageId(2),
                    dst_host: HostId(0),
                };
                links
            ],
        }))
    }

    /// A batch goes at once, with the records before it; other records
    /// wait until they fill a container or the flush; every record reaches
    /// the worker its route names, in the order it came.
    #[test]
    fn batches_go_at_once_and_small_records_in_containers() {
        let route = |r: &Record| match r {
            Record::Links(b) => u64::from(b.to),
            Record::Link(l) => l.src_host.0,
            _ => unreachable!(),
        };
        let mut d = RecordDistributor::new(route, 2);
        let mut pushers = vec![Sink::default(), Sink::default()];
        let stamp = Stamp::from_elem(0u64);
        let mut input = vec![batch(1, 4096), link(0), link(2)];
        d.partition(&mut input, &stamp, &mut pushers);
        assert_eq!(pushers[1].0.len(), 1, "the batch went");
        assert!(pushers[0].0.is_empty(), "two links wait");
        let mut input: Vec<Record> = (0..SHIP_RECORDS as u64).map(|i| link(2 * i)).collect();
        d.partition(&mut input, &stamp, &mut pushers);
        assert_eq!(pushers[0].0.len(), 1, "a container's worth went");
        assert_eq!(pushers[0].0[0].len(), SHIP_RECORDS);
        // A short batch goes at once too, with the two links left before
        // it; the link after it waits for the flush.
        let mut input = vec![batch(0, 10), link(4)];
        d.partition(&mut input, &stamp, &mut pushers);
        assert_eq!(pushers[0].0.len(), 2);
        d.flush(&stamp, &mut pushers);
        let sent: Vec<usize> = pushers[0].0.iter().map(Vec::len).collect();
        assert_eq!(sent, vec![SHIP_RECORDS, 3, 1]);
        let hosts: Vec<u64> = pushers[0]
            .0
            .iter()
            .flatten()
            .filter_map(|r| match r {
                Record::Link(l) => Some(l.src_host.0),
                _ => None,
            })
            .collect();
        let mut expected = vec![0, 2];
        expected.extend((0..SHIP_RECORDS as u64).map(|i| 2 * i));
        expected.push(4);
        assert_eq!(hosts, expected, "every link to worker 0, in order");
        assert_eq!(pushers[1].0.iter().map(Vec::len).sum::<usize>(), 1);
    }
}
