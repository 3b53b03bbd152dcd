//! What a turn's answer needs done besides rendering it: a text-protocol harness's rules
//! (`routes::actions`: the answer read whole and turned into the client's), else the corrections
//! of calls the client cannot run (`routes::correct`), as the turn's response plan says.
//!
//! Owns: choosing between them and wrapping the answer's body. Must not: read the answer itself.

use crate::protocols::chat::ResponsePlan;
use crate::routes::answer::Bounds;
use crate::state::AppState;
use crate::upstream::{Outbound, UpstreamResponse};

pub(crate) enum Answering {
    Act(crate::routes::actions::Acting),
    Correct(crate::routes::correct::Corrector),
    Neither,
}

impl Answering {
    pub(crate) fn of(
        state: &AppState,
        plan: &ResponsePlan,
        outbound: &Outbound,
        bounds: Bounds,
    ) -> Self {
        let ResponsePlan::Reshape(reshape) = plan else {
            return Self::Neither;
        };
        let Some(mapper) = reshape.calls.clone() else {
            return Self::Neither;
        };
        let outbound = crate::routes::correct::Resend::of(outbound);
        match reshape.actions.clone() {
            Some(reader) => Self::Act(crate::routes::actions::Acting {
                upstream: state.upstream.clone(),
                outbound,
                reader,
                mapper,
                slots: state.large_rewrites.clone(),
                bounds,
                heartbeat: false,
            }),
            None => Self::Correct(crate::routes::correct::Corrector {
                upstream: state.upstream.clone(),
                outbound,
                mapper,
                slots: state.large_rewrites.clone(),
                max_event: bounds.max_event,
                max_answer: bounds.max_answer,
            }),
        }
    }

    /// A text-protocol harness's answer, read whole and turned into the client's.
    pub fn act(&mut self, upstream: &mut UpstreamResponse, heartbeat: bool) {
        if !upstream.status.is_success() {
            return;
        }
        if let Self::Act(_) = self
            && let Self::Act(mut acting) = std::mem::replace(self, Self::Neither)
        {
            acting.heartbeat = heartbeat;
            crate::routes::actions::acting(upstream, acting);
        }
    }

    /// Calls the client cannot run are answered upstream before any reaches it.
    pub fn correct(self, upstream: &mut UpstreamResponse) {
        if let Self::Correct(corrector) = self
            && upstream.status.is_success()
            && crate::upstream::is_event_stream(&upstream.headers)
        {
            let body =
                std::mem::replace(&mut upstream.body, Box::pin(futures_util::stream::empty()));
            upstream.body = crate::routes::correct::correcting(body, corrector);
        }
    }
}
