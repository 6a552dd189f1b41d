//! The live feed: `GET /api/events`, every event as Server-Sent Events for as long as the
//! device stays live.

use std::convert::Infallible;

use axum::extract::State;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::Stream;
use iris_core::ports::DeviceStore;
use iris_core::wire::{ErrorBody, Event};
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::StreamExt;

use super::Authed;
use crate::state::AppState;

/// `GET /api/events` (any device): Server-Sent Events; each event's name is `event` and its data
/// the JSON `data` of [`iris_core::wire::Event`].
#[utoipa::path(
    get,
    path = "/api/events",
    tag = "events",
    responses(
        (status = 200, description = "An endless stream: approval.requested, approval.responded, approval.lapsed, run.message.", content_type = "text/event-stream", body = Event),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 500, description = "Storage failed; nothing was decided.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn events(
    State(state): State<AppState>,
    authed: Authed,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let listener = BroadcastStream::new(state.store.subscribe());
    // Before each event the device is checked again: revoking it (or a storage failure: fail
    // closed) ends its stream, so a revoked device stops seeing cards at once.
    let stream = futures::stream::unfold(
        (listener, state.store.clone(), authed.token_hash),
        |(mut listener, store, token_hash)| async move {
            loop {
                let Ok(event) = listener.next().await? else {
                    // Lagged: this listener missed events; the app refetches on the next one.
                    continue;
                };
                if !matches!(store.is_live(&token_hash).await, Ok(true)) {
                    return None;
                }
                let Some(data) = serde_json::to_value(&event)
                    .ok()
                    .and_then(|v| v.get("data").cloned())
                else {
                    continue;
                };
                let sse = SseEvent::default()
                    .event(event.name())
                    .data(data.to_string());
                return Some((Ok(sse), (listener, store, token_hash)));
            }
        },
    );
    // A stop ends every stream, so the server's graceful shutdown is not held open by them
    // (the browser's EventSource reconnects to the next server).
    let stream = futures::StreamExt::take_until(stream, state.shutdown.clone().cancelled_owned());
    Sse::new(stream).keep_alive(KeepAlive::default())
}
