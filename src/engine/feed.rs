//! What the engine publishes, as it publishes it: the log position readers now see, on a watch
//! channel any task can wait on (the monitor's change streams do, see `watch`).

use std::sync::Arc;

use tokio::sync::watch;

use super::World;

/// The publications of one engine.
#[derive(Debug)]
pub(crate) struct Published {
    position: watch::Sender<u64>,
}

impl Default for Published {
    fn default() -> Self {
        Self {
            position: watch::Sender::new(0),
        }
    }
}

impl Published {
    /// Records `world` as published (called in publication order, under the state's lock).
    pub(crate) fn record(&self, world: &Arc<World>) {
        self.position.send_replace(world.seq);
    }

    /// The log position readers see, changing with every publication.
    pub(crate) fn position(&self) -> watch::Receiver<u64> {
        self.position.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_publication_wakes_whoever_waits_with_its_position() {
        let published = Published::default();
        let mut position = published.position();
        assert!(!position.has_changed().unwrap_or(true));
        let mut world = World::default();
        world.seq = 7;
        published.record(&Arc::new(world));
        assert!(position.has_changed().unwrap_or(false));
        assert_eq!(*position.borrow_and_update(), 7);
    }
}
