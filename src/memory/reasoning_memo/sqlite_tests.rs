use super::*;
use crate::memory::reasoning_memo::{SHARED_TTL, STORE_BOUNDS};

fn keys(names: &[&str]) -> Vec<String> {
    names.iter().map(hex::encode).collect()
}

#[tokio::test]
async fn satisfies_the_memo_contract() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.db");
    let measured = Arc::new(SqliteMemo::open(&path, STORE_BOUNDS).expect("open"));
    let footprint: super::super::contract::Footprint = Box::new(move || {
        let store = measured.clone();
        Box::pin(async move { store.used_bytes() })
    });
    super::super::contract::run(
        |bounds| {
            let store = SqliteMemo::open(&path, bounds).expect("open");
            Some(Arc::new(store) as Arc<dyn SharedMemo>)
        },
        Some(footprint),
    )
    .await;
    // Another connection to the file (another process) reads the same tables.
    let other = SqliteMemo::open(&path, STORE_BOUNDS).expect("reopen");
    let (owner, key, text) = super::super::contract::last_written();
    let seen = other.get(owner, &[key]).await;
    assert_eq!(seen.expect("get"), [Some(Thought::from(text))]);
}

fn entry<'a>(owner: &'a str, calls: &'a [String], thought: &'a Thought) -> Entry<'a> {
    Entry {
        owner,
        calls,
        thought,
    }
}

fn count(c: &Connection, table: &str) -> i64 {
    c.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .expect("count")
}

#[test]
fn expired_answers_are_not_read_and_take_their_references_along() {
    let dir = tempfile::tempdir().expect("tempdir");
    let memo = SqliteMemo::open(&dir.path().join("t.db"), STORE_BOUNDS).expect("open");
    let conn = memo.file.connection();
    let mut c = conn.lock().expect("lock");
    let (old, new) = (keys(&["old", "old2"]), keys(&["new"]));
    let (a, b) = (Thought::from("aaaa"), Thought::from("bbbb"));
    put_at(&mut c, entry("a", &old, &a), 0, 100, STORE_BOUNDS).expect("put");
    put_at(&mut c, entry("a", &new, &b), 0, 300, STORE_BOUNDS).expect("put");
    let read = |c: &Connection, now| get_at(c, &keys(&["old", "new"]), now).expect("get");
    assert_eq!(read(&c, 50), [Some("aaaa".into()), Some("bbbb".into())]);
    assert_eq!(read(&c, 150), [None, Some("bbbb".into())]);
    assert_eq!(prune_at(&mut c, 150, STORE_BOUNDS).expect("prune"), 1);
    assert_eq!(
        count(&c, "reasoning_memo_call"),
        1,
        "its references went too"
    );
    assert_eq!(
        usage(&c, TOTAL).expect("usage"),
        Usage::of_answer(4, 1),
        "the usage follows"
    );
}

/// The layout before issue 30 (a row per call id, each with the reasoning) goes at open.
#[test]
fn the_old_table_is_dropped_at_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.db");
    let c = Connection::open(&path).expect("open");
    c.execute_batch(
        "CREATE TABLE reasoning_memo (key TEXT PRIMARY KEY, text TEXT NOT NULL, \
         expires_at INTEGER NOT NULL); INSERT INTO reasoning_memo VALUES ('k', 't', 1);",
    )
    .expect("old layout");
    drop(c);
    let memo = SqliteMemo::open(&path, STORE_BOUNDS).expect("open");
    let conn = memo.file.connection();
    let c = conn.lock().expect("lock");
    let old: i64 = c
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'reasoning_memo'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(old, 0);
}

/// The answer table as issue 30 made it, before the signature and the redacted thinking.
const ISSUE_30_ANSWERS: &str = "
CREATE TABLE reasoning_memo_answer (
    id INTEGER PRIMARY KEY, owner TEXT NOT NULL, bytes INTEGER NOT NULL,
    rows INTEGER NOT NULL, expires_at INTEGER NOT NULL, text TEXT NOT NULL);
CREATE TABLE reasoning_memo_call (key BLOB PRIMARY KEY, answer INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO reasoning_memo_answer VALUES (1, 'a', 68, 2, 9000000000000, 'kept from before');
INSERT INTO reasoning_memo_call VALUES (X'6f6c64', 1);
";

/// A file made before issue 34 gets the two columns at open (once, however often it is opened):
/// its answers still read back, without a signature, and new ones keep theirs.
#[tokio::test]
async fn a_file_made_before_the_signature_gets_its_columns_at_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.db");
    let c = Connection::open(&path).expect("open");
    c.execute_batch(ISSUE_30_ANSWERS).expect("old layout");
    drop(c);
    let memo = SqliteMemo::open(&path, STORE_BOUNDS).expect("open migrates");
    let again = SqliteMemo::open(&path, STORE_BOUNDS).expect("a second open finds them there");
    assert_eq!(
        memo.get("a", &keys(&["old"])).await.expect("get"),
        [Some(Thought::from("kept from before"))]
    );
    let signed = Thought {
        text: "new".into(),
        signature: Some("EqQBsig".into()),
        redacted: vec!["EnCrYpTeD".into()],
    };
    let calls = keys(&["new"]);
    memo.put(entry("a", &calls, &signed), SHARED_TTL)
        .await
        .expect("put");
    assert_eq!(
        again.get("a", &calls).await.expect("get"),
        [Some(signed.clone())]
    );
    let conn = memo.file.connection();
    let c = conn.lock().expect("lock");
    let bytes: i64 = c
        .query_row(
            "SELECT bytes FROM reasoning_memo_answer WHERE text = 'new'",
            [],
            |r| r.get(0),
        )
        .expect("bytes");
    assert_eq!(
        u64::try_from(bytes).expect("positive"),
        Usage::of_answer(signed.bytes(), 1).bytes,
        "the signature and the redacted thinking count against the bounds"
    );
}
