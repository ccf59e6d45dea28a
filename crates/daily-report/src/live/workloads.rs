//! The workloads of a run, given a page at a time so that the run never holds the cluster: from
//! the API by a task that lists pages ahead of the engine, or from a snapshot by the thread
//! `cluster_projection::open_snapshot` starts. Each page is saved to `--save-snapshot` on the way.

use redaction::error_text;

/// The workloads of a run, given a page at a time: listed from the cluster by a task that
/// keeps a few pages ahead of the engine (so reading and reviewing overlap), or read again from
/// a snapshot by a thread that does the same (`cluster_projection::open_snapshot`).
pub(super) struct Workloads {
    source: WorkloadSource,
    /// How many workloads were given so far.
    pub(super) given: usize,
}

/// A page of workloads, or the skipped run's reason.
type Page = Result<Vec<cluster_projection::Workload>, String>;

enum WorkloadSource {
    Live(tokio::sync::mpsc::Receiver<Page>),
    Snapshot(cluster_projection::SnapshotWorkloads),
}

/// How many list pages the reading task may be ahead of the engine.
const PAGES_AHEAD: usize = 2;

impl Workloads {
    /// Starts listing `pages` on `runtime`; `describe` turns a read error into the reason.
    pub(super) fn live(
        runtime: &tokio::runtime::Runtime,
        mut pages: cluster_projection::WorkloadPages,
        describe: impl Fn(&cluster_projection::ReadError) -> String + Send + 'static,
    ) -> Workloads {
        let (sender, receiver) = tokio::sync::mpsc::channel(PAGES_AHEAD);
        runtime.spawn(async move {
            loop {
                let page = match pages.next_page().await {
                    Ok(Some(page)) => Ok(page),
                    Ok(None) => break,
                    Err(error) => Err(describe(&error)),
                };
                let failed = page.is_err();
                // A closed channel: the run stopped reading (the engine failed); so do we.
                if sender.send(page).await.is_err() || failed {
                    break;
                }
            }
        });
        Workloads {
            source: WorkloadSource::Live(receiver),
            given: 0,
        }
    }

    pub(super) fn snapshot(pages: cluster_projection::SnapshotWorkloads) -> Workloads {
        Workloads {
            source: WorkloadSource::Snapshot(pages),
            given: 0,
        }
    }

    /// The next page (`None` when all were given), each workload saved to `snapshot` first; a
    /// failure is the skipped run's reason.
    pub(super) fn next_page(
        &mut self,
        runtime: &tokio::runtime::Runtime,
        snapshot: Option<&mut cluster_projection::SnapshotWriter>,
    ) -> Result<Option<Vec<cluster_projection::Workload>>, String> {
        let page = match &mut self.source {
            WorkloadSource::Live(receiver) => runtime.block_on(receiver.recv()).transpose()?,
            WorkloadSource::Snapshot(pages) => pages
                .next_page()
                .map_err(|e| format!("failed to read the snapshot: {}", error_text(&e)))?,
        };
        if let (Some(page), Some(writer)) = (&page, snapshot) {
            for workload in page {
                writer
                    .add(workload)
                    .map_err(|e| format!("failed to save the snapshot: {}", error_text(&e)))?;
            }
        }
        self.given += page.as_ref().map_or(0, Vec::len);
        Ok(page)
    }
}
