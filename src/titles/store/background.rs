//! The SQLite store's background writes (`finish_many`, the batches `titles::writer` gathers): on
//! a thread of their own, with a connection of their own, at a lower CPU priority (nice +10).
//!
//! Why: a process pinned to one core runs its async worker and the blocking pool on that core.
//! A batch transaction (and the WAL checkpoint a commit can trigger) took that core from requests
//! in flight for a millisecond or so; the bench showed it as the id-less turns' first-event p99.
//! At nice +10 the scheduler lets a woken request run first, and the batch takes the time left.
//! Claims, reads and every other store call stay on the store's main connection, at normal
//! priority: only work no request waits for runs here.
//!
//! Owns: the thread and its connection; the thread ends when the store is dropped. Must not: run
//! a call a request waits on (its priority would hold that request up).

use std::panic::AssertUnwindSafe;
use std::sync::mpsc;

use rusqlite::Connection;

use super::StoreError;

/// How much lower than the thread that opens the store the writer runs (nice values: 0 normal,
/// 19 lowest; a process started under `nice -n 10` gets a writer at 19, the lowest there is).
pub const NICE: i32 = 10;
/// The lowest priority a nice value can say.
const LOWEST: i32 = 19;
/// The writer thread's name (what `top -H` and `/proc/…/task/*/comm` show).
pub const THREAD_NAME: &str = "title-writer";

type Job = Box<dyn FnOnce(&Connection) + Send>;

pub struct Background {
    jobs: mpsc::Sender<Job>,
}

impl Background {
    /// Starts the writer's thread on `conn`, a connection of its own (the store opens it).
    pub fn start(conn: Connection) -> Result<Self, StoreError> {
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name(THREAD_NAME.to_owned())
            .spawn(move || {
                lower_priority();
                while let Ok(job) = queue.recv() {
                    // A panicking job must not take the writer (and every later batch) with it.
                    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| job(&conn)));
                }
            })
            .map_err(|e| StoreError::Backend(format!("cannot start the title writer: {e}")))?;
        Ok(Self { jobs })
    }

    /// Runs `work` on the writer's connection and waits (asynchronously) for its result.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let _ = answer.send(work(conn).map_err(|e| StoreError::Backend(e.to_string())));
        });
        self.jobs
            .send(job)
            .map_err(|_| StoreError::Backend("the title writer thread is gone".to_owned()))?;
        answered
            .await
            .map_err(|_| StoreError::Backend("the title writer dropped a write".to_owned()))?
    }
}

#[cfg(target_os = "linux")]
fn lower_priority() {
    // On Linux `getpriority`/`setpriority(PRIO_PROCESS, 0)` name the calling thread alone (each
    // thread has its own nice value, inherited from the thread that spawned it). `setpriority`
    // sets an absolute value: the writer's is its spawner's plus `NICE`, so a process already
    // running niced still has its writer below its requests.
    let inherited = rustix::process::getpriority_process(None).unwrap_or(0);
    if rustix::process::setpriority_process(None, (inherited + NICE).min(LOWEST)).is_err() {
        tracing::debug!("cannot lower the title writer's priority; it runs at the process's");
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority() {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The nice value of this process's thread named `name`, from `/proc/self/task/*/stat`.
    fn nice_of(name: &str) -> Option<i32> {
        for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim() != name {
                continue;
            }
            let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
            // Fields after the `(comm)`: state is field 3, nice field 19.
            let after = &stat[stat.rfind(')')? + 2..];
            return after.split(' ').nth(16)?.parse().ok();
        }
        None
    }

    #[tokio::test]
    async fn writes_run_on_a_thread_of_lower_priority_with_their_own_connection() {
        let dir = tempfile::tempdir().expect("dir");
        let conn = Connection::open(dir.path().join("w.db")).expect("open");
        let background = Background::start(conn).expect("start");
        let sum = background
            .run(|c| c.query_row("SELECT 40 + 2", [], |r| r.get::<_, i64>(0)))
            .await
            .expect("run");
        assert_eq!(sum, 42);
        // The writer was spawned by this test's thread: `NICE` below it, whatever `nice` the run
        // was started under (19 being the floor). The process's own value (its main thread's)
        // is not the measure: libtest's threads may differ from it.
        let own = std::fs::read_to_string("/proc/thread-self/stat").expect("stat");
        let own_nice: i32 = own[own.rfind(')').expect(")") + 2..]
            .split(' ')
            .nth(16)
            .and_then(|n| n.parse().ok())
            .expect("nice");
        assert_eq!(nice_of(THREAD_NAME), Some((own_nice + 10).min(19)));
        let failed = background
            .run(|c| c.execute_batch("NOT SQL"))
            .await
            .expect_err("a bad statement is an error");
        assert!(matches!(failed, StoreError::Backend(_)));
    }
}
