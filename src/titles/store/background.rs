//! The SQLite store's background writes (`insert_fresh`, `set_text`, `finish_many`): on a thread
//! of their own, with a connection of their own, at the lowest CPU priority there is (Linux's
//! `SCHED_IDLE`, else nice +10), and the writes queued together committed as one transaction.
//!
//! Why: a process pinned to one core runs its async worker and the blocking pool on that core.
//! A batch transaction (and the WAL checkpoint a commit can trigger) took that core from requests
//! in flight for a millisecond or so; the bench showed it as the id-less turns' first-event p99.
//! At nice +10 a woken request still waited for the writer's slice to end (the first event's
//! p99 of id-less streams 0.96–1.17 ms); a `SCHED_IDLE` thread is preempted by any woken
//! request at once (0.64 ms), and runs in the time the requests leave. The price: on a core
//! that is never idle the writer runs very slowly, holding SQLite's write lock meanwhile, so a
//! claim on the main connection may wait for it (a claim is bounded by `CLAIM_TIMEOUT`, and
//! `MAX_BATCH` keeps the transaction short).
//! A burst of id-less first turns queues hundreds of pending records at once: one commit each
//! wrote the same few B-tree pages to the WAL hundreds of times (and checkpointed them), so the
//! writer takes every job already queued (up to `MAX_BATCH`) into one transaction, each job in a
//! savepoint of its own, so a failing job undoes only its own writes. A job's answer is sent
//! after the commit, so nobody hears "written" of a write the commit then lost.
//! Claims, reads and every other store call stay on the store's main connection, at normal
//! priority: only work no request waits for runs here.
//!
//! Owns: the thread and its connection; the thread ends when the store is dropped. Must not: run
//! a call a request waits on (its priority would hold that request up), or open a transaction in
//! a job (it already runs in one).

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

/// Jobs committed together at most: a bound on how long one transaction holds SQLite's write
/// lock (other processes sharing the file wait for it) and on the answers held until it commits.
pub const MAX_BATCH: usize = 64;

/// A job runs its writes and hands back how to answer once the batch's fate is known: `Ok` holds
/// the answer for a job whose writes stand (sent with the commit's outcome), `Err` a job that
/// failed (its savepoint rolled back; it has answered already).
type Job = Box<dyn FnOnce(&Connection) -> Result<Answer, ()> + Send>;
/// Sends a job's result, given the commit's error if the commit failed.
type Answer = Box<dyn FnOnce(Option<&str>) + Send>;

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
                let mut batch = Vec::with_capacity(MAX_BATCH);
                while let Ok(job) = queue.recv() {
                    batch.push(job);
                    while batch.len() < MAX_BATCH {
                        match queue.try_recv() {
                            Ok(job) => batch.push(job),
                            Err(_) => break,
                        }
                    }
                    commit_together(&conn, batch.drain(..));
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
        let job: Job = Box::new(move |conn| match work(conn) {
            Ok(value) => Ok(Box::new(move |commit_failed: Option<&str>| {
                let _ = answer.send(match commit_failed {
                    None => Ok(value),
                    Some(why) => Err(StoreError::Backend(why.to_owned())),
                });
            })),
            Err(e) => {
                let _ = answer.send(Err(StoreError::Backend(e.to_string())));
                Err(())
            }
        });
        self.jobs
            .send(job)
            .map_err(|_| StoreError::Backend("the title writer thread is gone".to_owned()))?;
        answered
            .await
            .map_err(|_| StoreError::Backend("the title writer dropped a write".to_owned()))?
    }
}

/// Runs `jobs` in one transaction, each in a savepoint of its own, and answers them after the
/// commit. A job that fails or panics undoes its own writes only; a commit that fails (or a
/// transaction that cannot begin) is every standing job's error.
fn commit_together(conn: &Connection, jobs: impl Iterator<Item = Job>) {
    // Prepared once per connection (the writer runs these for every job).
    let run = |sql: &str| {
        conn.prepare_cached(sql)
            .and_then(|mut s| s.execute([]))
            .map(|_| ())
    };
    let begun = run("BEGIN IMMEDIATE");
    if let Err(e) = &begun {
        // No transaction: each job as SQLite would run it alone (its statements autocommit).
        tracing::debug!("the title writer could not begin a batch ({e}); writing one by one");
    }
    let mut answers: Vec<Answer> = Vec::new();
    for job in jobs {
        let savepoint = begun.is_ok() && run("SAVEPOINT job").is_ok();
        // A panicking job must not take the writer (and every later batch) with it.
        match std::panic::catch_unwind(AssertUnwindSafe(|| job(conn))) {
            Ok(Ok(answer)) => {
                if savepoint {
                    let _ = run("RELEASE job");
                }
                answers.push(answer);
            }
            _ => {
                if savepoint {
                    let _ = run("ROLLBACK TO job").and_then(|()| run("RELEASE job"));
                }
            }
        }
    }
    let committed = match begun {
        Ok(()) => run("COMMIT").map_err(|e| {
            let _ = run("ROLLBACK");
            format!("the title writer's commit failed: {e}")
        }),
        Err(_) => Ok(()),
    };
    let failed = committed.err();
    for answer in answers {
        answer(failed.as_deref());
    }
}

#[cfg(target_os = "linux")]
fn lower_priority() {
    use thread_priority::{
        NormalThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy,
        set_thread_priority_and_policy, thread_native_id,
    };
    // On Linux `getpriority`/`setpriority(PRIO_PROCESS, 0)` name the calling thread alone (each
    // thread has its own nice value, inherited from the thread that spawned it). `setpriority`
    // sets an absolute value: the writer's is its spawner's plus `NICE`, so a process already
    // running niced still has its writer below its requests. Read before the policy changes:
    // setting `SCHED_IDLE` resets the nice value where it may.
    let inherited = rustix::process::getpriority_process(None).unwrap_or(0);
    let idle = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle);
    // Any thread may move itself to `SCHED_IDLE`; the crate then tries nice 0, which a niced
    // process may not take (EACCES after the policy is set): the policy is what counts.
    let _ = set_thread_priority_and_policy(thread_native_id(), ThreadPriority::Min, idle);
    if !runs_idle() {
        tracing::debug!("the title writer cannot run as SCHED_IDLE; it runs at nice +{NICE}");
    }
    // Under SCHED_IDLE the nice value has no effect; without it, it is the fallback.
    if rustix::process::setpriority_process(None, (inherited + NICE).min(LOWEST)).is_err() {
        tracing::debug!("cannot lower the title writer's priority; it runs at the process's");
    }
}

/// Whether the calling thread runs under `SCHED_IDLE` (the `policy` field of its stat).
#[cfg(target_os = "linux")]
fn runs_idle() -> bool {
    std::fs::read_to_string("/proc/thread-self/stat")
        .ok()
        .and_then(|stat| policy_of(&stat))
        == Some(SCHED_IDLE)
}

/// Linux's number for the `SCHED_IDLE` policy.
#[cfg(target_os = "linux")]
const SCHED_IDLE: u32 = 5;

/// The scheduling policy in a `/proc/…/stat` line: field 41, the 39th after `(comm)`.
#[cfg(target_os = "linux")]
fn policy_of(stat: &str) -> Option<u32> {
    let after = stat.get(stat.rfind(')')? + 2..)?;
    after.split(' ').nth(38)?.parse().ok()
}

#[cfg(not(target_os = "linux"))]
fn lower_priority() {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The `/proc/self/task/*/stat` line of this process's thread named `name`.
    fn stat_of(name: &str) -> Option<String> {
        std::fs::read_dir("/proc/self/task")
            .ok()?
            .flatten()
            .find(|task| {
                std::fs::read_to_string(task.path().join("comm"))
                    .is_ok_and(|comm| comm.trim() == name)
            })
            .and_then(|task| std::fs::read_to_string(task.path().join("stat")).ok())
    }

    /// The scheduling policy of this process's thread named `name`.
    fn policy_of_thread(name: &str) -> Option<u32> {
        policy_of(&stat_of(name)?)
    }

    /// The nice value of this process's thread named `name`.
    fn nice_of(name: &str) -> Option<i32> {
        let stat = stat_of(name)?;
        // Fields after the `(comm)`: state is field 3, nice field 19.
        let after = stat.get(stat.rfind(')')? + 2..)?;
        after.split(' ').nth(16)?.parse().ok()
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
        assert_eq!(
            policy_of_thread(THREAD_NAME),
            Some(SCHED_IDLE),
            "the writer runs under SCHED_IDLE"
        );
        let failed = background
            .run(|c| c.execute_batch("NOT SQL"))
            .await
            .expect_err("a bad statement is an error");
        assert!(matches!(failed, StoreError::Backend(_)));
    }

    /// A job as `Background::run` makes it, answering on `tx`.
    fn job(sql: &'static str, tx: tokio::sync::oneshot::Sender<Result<(), StoreError>>) -> Job {
        Box::new(move |c: &Connection| match c.execute_batch(sql) {
            Ok(()) => Ok(Box::new(move |failed: Option<&str>| {
                let _ = tx.send(failed.map_or(Ok(()), |w| Err(StoreError::Backend(w.into()))));
            }) as Answer),
            Err(e) => {
                let _ = tx.send(Err(StoreError::Backend(e.to_string())));
                Err(())
            }
        })
    }

    #[test]
    fn jobs_committed_together_lose_only_the_failing_jobs_writes() {
        let dir = tempfile::tempdir().expect("dir");
        let conn = Connection::open(dir.path().join("b.db")).expect("open");
        conn.execute_batch("CREATE TABLE t (v INTEGER)")
            .expect("schema");
        let (a, mut a_rx) = tokio::sync::oneshot::channel();
        let (b, mut b_rx) = tokio::sync::oneshot::channel();
        let (c, mut c_rx) = tokio::sync::oneshot::channel();
        let panicking: Job = Box::new(|c: &Connection| {
            c.execute_batch("INSERT INTO t VALUES (4)").expect("insert");
            panic!("a job that panics after writing");
        });
        let jobs = vec![
            job("INSERT INTO t VALUES (1)", a),
            // Writes, then fails: its first insert must be undone with it.
            job(
                "INSERT INTO t VALUES (2); INSERT INTO nowhere VALUES (2)",
                b,
            ),
            panicking,
            job("INSERT INTO t VALUES (3)", c),
        ];
        commit_together(&conn, jobs.into_iter());
        assert!(a_rx.try_recv().expect("answered").is_ok());
        assert!(b_rx.try_recv().expect("answered").is_err());
        assert!(c_rx.try_recv().expect("answered").is_ok());
        let kept: Vec<i64> = conn
            .prepare("SELECT v FROM t ORDER BY v")
            .expect("prepare")
            .query_map([], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        assert_eq!(kept, vec![1, 3]);
        assert!(conn.is_autocommit(), "the batch's transaction is closed");
    }

    #[test]
    fn a_batch_that_cannot_begin_runs_each_job_alone() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("c.db");
        let conn = Connection::open(&path).expect("open");
        conn.execute_batch("CREATE TABLE t (v INTEGER)")
            .expect("schema");
        // Another connection holds the write lock: BEGIN IMMEDIATE cannot take it, so each job
        // runs alone and fails on its own (this connection does not wait for the lock).
        conn.busy_timeout(std::time::Duration::ZERO)
            .expect("no wait");
        let other = Connection::open(&path).expect("other");
        other.execute_batch("BEGIN IMMEDIATE").expect("lock");
        let (a, mut a_rx) = tokio::sync::oneshot::channel();
        commit_together(&conn, vec![job("INSERT INTO t VALUES (1)", a)].into_iter());
        assert!(a_rx.try_recv().expect("answered").is_err());
        other.execute_batch("ROLLBACK").expect("unlock");
        let (b, mut b_rx) = tokio::sync::oneshot::channel();
        commit_together(&conn, vec![job("INSERT INTO t VALUES (2)", b)].into_iter());
        assert!(b_rx.try_recv().expect("answered").is_ok());
    }
}
