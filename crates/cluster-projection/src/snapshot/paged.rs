//! A snapshot read as a run reads a cluster: the policy side (templates, Constraints,
//! ExpansionTemplates, mutators, Namespaces) whole, the workloads a page at a time, so a run from
//! a snapshot holds no more of the cluster than a run from the API does.
//!
//! A snapshot may hold its objects in any order (a directory of hand-written files, a tarball of
//! them), and the engine needs the whole policy side before it reviews a workload, so the
//! snapshot is read twice: [`open_snapshot`] reads it once for the policy side, checking every
//! object (workloads too, and their duplicates) but keeping no workload; then a thread reads it
//! again and hands the selected workloads out in pages through a bounded channel
//! ([`SnapshotWorkloads`]), in the order they are in the snapshot. Parsing twice costs little
//! next to reviewing; holding every workload costs a few KiB each.

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use super::{ObjectSink, SnapshotError, SnapshotLimits, read_into};
use crate::model::{ClusterState, Item, ReadSpec, Workload, WorkloadKind, duplicate};

/// How many workloads a page holds.
const PAGE: usize = 500;

/// How many pages the reading thread may be ahead of the run.
const PAGES_AHEAD: usize = 2;

/// Reads the policy side of the snapshot at `path` within the default [`SnapshotLimits`],
/// restricted to what `spec` selects, and starts reading its workloads of `spec`'s kinds a page
/// at a time.
pub fn open_snapshot(
    path: &Path,
    spec: &ReadSpec,
) -> Result<(ClusterState, SnapshotWorkloads), SnapshotError> {
    open_snapshot_with(path, &SnapshotLimits::default(), spec)
}

/// [`open_snapshot`] within `limits`.
pub fn open_snapshot_with(
    path: &Path,
    limits: &SnapshotLimits,
    spec: &ReadSpec,
) -> Result<(ClusterState, SnapshotWorkloads), SnapshotError> {
    let state_error = |source| SnapshotError::State {
        path: path.to_path_buf(),
        source,
    };
    let mut policy = PolicySide::default();
    read_into(&mut policy, path, limits)?;
    if let Some((kind, namespace, name)) = policy.duplicate {
        return Err(state_error(duplicate(kind.kind(), &namespace, &name)));
    }
    let mut state = policy.state;
    state.finish().map_err(state_error)?;
    let state = state.restrict_to(spec).map_err(state_error)?;
    let workloads = SnapshotWorkloads::start(path, limits, &spec.workload_kinds);
    Ok((state, workloads))
}

/// The first reading: every object but the workloads kept, the workloads checked for duplicates.
#[derive(Default)]
struct PolicySide {
    state: ClusterState,
    workloads: BTreeSet<(String, WorkloadKind, String)>,
    /// The first workload met twice: (kind, namespace, name).
    duplicate: Option<(WorkloadKind, String, String)>,
}

impl ObjectSink for PolicySide {
    fn add(&mut self, item: Item) -> Result<(), SnapshotError> {
        let Item::Workload(workload) = item else {
            self.state.push(item);
            return Ok(());
        };
        let Workload {
            kind,
            namespace,
            name,
            ..
        } = workload;
        let first = self
            .workloads
            .insert((namespace.clone(), kind, name.clone()));
        if !first && self.duplicate.is_none() {
            self.duplicate = Some((kind, namespace, name));
        }
        Ok(())
    }
}

/// What the reading thread sends: a page, the end, or the error that ended the read.
#[derive(Debug)]
enum Message {
    Page(Vec<Workload>),
    Done,
    Failed(SnapshotError),
}

/// The workloads of a snapshot, read again by a thread and given a page at a time.
#[derive(Debug)]
pub struct SnapshotWorkloads {
    messages: Receiver<Message>,
    path: PathBuf,
    done: bool,
}

impl SnapshotWorkloads {
    fn start(path: &Path, limits: &SnapshotLimits, kinds: &[WorkloadKind]) -> SnapshotWorkloads {
        let (sender, messages) = sync_channel(PAGES_AHEAD);
        let (thread_path, limits, kinds) = (path.to_path_buf(), *limits, kinds.to_vec());
        std::thread::spawn(move || read_pages(&thread_path, &limits, kinds, sender));
        SnapshotWorkloads {
            messages,
            path: path.to_path_buf(),
            done: false,
        }
    }

    /// The next page of workloads (`None` when all were given).
    pub fn next_page(&mut self) -> Result<Option<Vec<Workload>>, SnapshotError> {
        if self.done {
            return Ok(None);
        }
        match self.messages.recv() {
            Ok(Message::Page(page)) => Ok(Some(page)),
            Ok(Message::Done) => {
                self.done = true;
                Ok(None)
            }
            Ok(Message::Failed(error)) => Err(error),
            // The thread ended without saying it was done: a failure, never the end.
            Err(_) => Err(SnapshotError::Interrupted {
                path: self.path.clone(),
            }),
        }
    }
}

/// The thread's work: reads the snapshot again and sends the workloads of `kinds` in pages, then
/// [`Message::Done`], or the error that ended the read.
fn read_pages(
    path: &Path,
    limits: &SnapshotLimits,
    kinds: Vec<WorkloadKind>,
    sender: SyncSender<Message>,
) {
    let mut pages = PageSender {
        kinds,
        page: Vec::with_capacity(PAGE),
        sender,
        path: path.to_path_buf(),
    };
    let read = catch_unwind(AssertUnwindSafe(|| read_into(&mut pages, path, limits)));
    let ended = match read {
        Ok(Ok(())) => pages.send_page().map(|()| Message::Done),
        Ok(Err(error)) => Ok(Message::Failed(error)),
        Err(_) => Ok(Message::Failed(SnapshotError::Interrupted {
            path: path.to_path_buf(),
        })),
    };
    // A closed channel: the run stopped taking pages, nobody to tell.
    if let Ok(message) = ended {
        let _ = pages.sender.send(message);
    }
}

/// The second reading: the workloads of the selected kinds, sent a page at a time.
struct PageSender {
    kinds: Vec<WorkloadKind>,
    page: Vec<Workload>,
    sender: SyncSender<Message>,
    path: PathBuf,
}

/// The run stopped taking pages.
struct Closed;

impl PageSender {
    /// Sends the page collected so far, if any.
    fn send_page(&mut self) -> Result<(), Closed> {
        if self.page.is_empty() {
            return Ok(());
        }
        let page = std::mem::replace(&mut self.page, Vec::with_capacity(PAGE));
        self.sender.send(Message::Page(page)).map_err(|_| Closed)
    }
}

impl ObjectSink for PageSender {
    fn add(&mut self, item: Item) -> Result<(), SnapshotError> {
        let Item::Workload(workload) = item else {
            return Ok(());
        };
        if !self.kinds.contains(&workload.kind) {
            return Ok(());
        }
        self.page.push(workload);
        if self.page.len() < PAGE {
            return Ok(());
        }
        // When the run stops reading (its engine failed), so does this thread: the error ends
        // the read and is never shown.
        self.send_page()
            .map_err(|Closed| SnapshotError::Interrupted {
                path: self.path.clone(),
            })
    }
}
