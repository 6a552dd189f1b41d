//! The channel router (DESIGN §2): fans notices out to every listening surface. Today the web
//! app's Server-Sent Events stream (`GET /api/events`); Telegram and the phone banner subscribe
//! to the same channel.

use iris_core::ports::Notifier;
use iris_core::wire::Event;
use tokio::sync::broadcast;

/// A broadcast channel of [`Event`]s. Slow listeners lose old events (they refetch on the next
/// one), the sender never blocks.
#[derive(Clone)]
pub struct ChannelRouter {
    sender: broadcast::Sender<Event>,
}

impl ChannelRouter {
    /// A router keeping up to 256 undelivered events per listener.
    pub fn new() -> Self {
        let (sender, _) = broadcast::channel(256);
        ChannelRouter { sender }
    }

    /// A new listener.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.sender.subscribe()
    }
}

impl Default for ChannelRouter {
    fn default() -> Self {
        Self::new()
    }
}

impl Notifier for ChannelRouter {
    fn notify(&self, event: Event) {
        // No listener is not an error: the row is durable, surfaces refetch when they connect.
        let _ = self.sender.send(event);
    }
}
