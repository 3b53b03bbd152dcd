//! `titles.max_in_flight`: a burst of first turns starts no more title requests than there are
//! slots; a title past them waits for one, and its main request does not wait for it.

use crate::support::sse::{DONE, read_all};
use crate::support::{TestApp, test_config};
use crate::titles::{chat, first_turn, held_title, settled, titles_of, upstream_with_title};

#[tokio::test]
async fn a_title_past_the_slots_waits_for_one_and_its_answer_does_not() {
    let (title, release) = held_title(&["Slow"], &[" title"]);
    let upstream = upstream_with_title(title).await;
    let mut config = test_config(&upstream.base_url());
    config.titles.max_in_flight = 1;
    let app = TestApp::start(config).await;

    // The first conversation's title takes the one slot and is held upstream.
    let first = chat(&app, &first_turn("Explain the cache"), "conv-a", "k").await;
    assert!(read_all(first).await.ends_with(DONE));
    upstream.wait_for_requests(2).await;
    assert_eq!(titles_of(&upstream).len(), 1);

    // The second's whole answer arrives while its title waits for the slot, not yet sent.
    let second = chat(&app, &first_turn("Fix the login bug"), "conv-b", "k").await;
    assert!(read_all(second).await.ends_with(DONE));
    assert_eq!(titles_of(&upstream).len(), 1, "the second title waits");
    assert_eq!(
        app.get_json("/titles/conv-b", "k").await["status"],
        "pending"
    );

    // The slot freed, the second title goes; both end titled.
    release.notify_one();
    assert_eq!(settled(&app, "conv-a", "k").await["title"], "Slow title");
    release.notify_one();
    assert_eq!(settled(&app, "conv-b", "k").await["title"], "Slow title");
    assert_eq!(titles_of(&upstream).len(), 2);
}
