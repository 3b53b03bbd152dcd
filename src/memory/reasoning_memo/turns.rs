//! Where a remembered reasoning goes in a client's turns: before each assistant turn with calls
//! but no reasoning, or onto an echoed reasoning that lacks the server's signature.

use std::sync::Arc;

use super::Thought;
use crate::conversation::{Item, Role};

/// What to do with a turn that echoes its reasoning's text but not the server's signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Echoed {
    /// Add the signature the memo kept (a Messages upstream refuses unsigned thinking).
    Sign,
    /// Leave it as echoed, and ask the memo nothing for it (a Chat upstream has no signatures).
    #[default]
    Leave,
}

/// For each assistant turn with calls but no reasoning, asks `find` about its first call's id
/// and puts what it gives as a reasoning item where the client would have put one (before the
/// turn's assistant text, else before its first call); a turn with echoed reasoning, as `echoed`
/// says.
pub(super) fn fill_bare_turns(
    items: &mut Vec<Item>,
    echoed_turns: Echoed,
    mut find: impl FnMut(&str) -> Option<Arc<Thought>>,
) {
    let mut i = 0;
    while i < items.len() {
        let starts_calls = matches!(items[i], Item::ToolCall(_))
            && (i == 0 || !matches!(items[i - 1], Item::ToolCall(_)));
        if !starts_calls {
            i += 1;
            continue;
        }
        let mut start = i;
        if start > 0
            && let Item::Message(message) = &items[start - 1]
            && message.role == Role::Assistant
        {
            start -= 1;
        }
        let echoed = start.checked_sub(1).filter(|&r| {
            matches!(&items[r], Item::Reasoning(r) if !r.text.is_empty() || !r.redacted.is_empty())
        });
        let Item::ToolCall(call) = &items[i] else {
            unreachable!("checked above");
        };
        let id = call.id.clone();
        match echoed {
            None => {
                if let Some(thought) = id.as_deref().and_then(&mut find) {
                    items.insert(start, Item::Reasoning(thought.to_reasoning()));
                    i += 1;
                }
            }
            Some(r) if echoed_turns == Echoed::Sign => {
                sign_echoed(&mut items[r], id.as_deref(), &mut find);
            }
            Some(_) => {}
        }
        i += 1;
    }
}

/// A client that echoes the reasoning's text but not the server's signature (pi and other Chat
/// clients send `reasoning_content` back): a Messages server refuses the thinking block unsigned,
/// so the signature and redacted thinking the memo kept for that answer are added, but only when
/// the echoed text is the text the server signed (anything else would carry a signature that no
/// longer matches). A turn that carries its own signature or redacted thinking is left alone.
fn sign_echoed(
    item: &mut Item,
    call_id: Option<&str>,
    find: &mut impl FnMut(&str) -> Option<Arc<Thought>>,
) {
    let Item::Reasoning(reasoning) = item else {
        return;
    };
    if reasoning.signature.is_some() || reasoning.sealed.is_some() || !reasoning.redacted.is_empty()
    {
        return;
    }
    let Some(thought) = call_id.and_then(find) else {
        return;
    };
    if thought.text == reasoning.text && thought.signature.is_some() {
        reasoning.signature.clone_from(&thought.signature);
        reasoning.redacted.clone_from(&thought.redacted);
    }
}
