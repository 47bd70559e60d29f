//! What the engine publishes, as it publishes it: the log position readers now see (a watch
//! channel any task can wait on) and the last few published worlds, so that a change stream
//! resumed from a recent position can be told exactly what changed since (see
//! `EngineSession::watch_monitor`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::World;

/// How many published worlds are kept. Worlds share their maps, so each costs only what
/// changed; a stream resumed from further back than this is sent the whole state again.
const RECENT: usize = 256;

/// The publications of one engine.
#[derive(Debug)]
pub(crate) struct Published {
    recent: Mutex<VecDeque<Arc<World>>>,
    position: watch::Sender<u64>,
}

impl Default for Published {
    fn default() -> Self {
        Self {
            recent: Mutex::new(VecDeque::with_capacity(RECENT)),
            position: watch::Sender::new(0),
        }
    }
}

impl Published {
    /// Records `world` as published (called in publication order, under the state's lock).
    pub(crate) fn record(&self, world: &Arc<World>) {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if recent.len() == RECENT {
            recent.pop_front();
        }
        recent.push_back(Arc::clone(world));
        drop(recent);
        self.position.send_replace(world.seq);
    }

    /// The log position readers see, changing with every publication.
    pub(crate) fn position(&self) -> watch::Receiver<u64> {
        self.position.subscribe()
    }

    /// The world exactly as it was published at log position `seq`, if it is still kept. A
    /// position this engine never published (one inside a batch, or another replica's) is not
    /// answered: the state there was never seen whole here.
    pub(crate) fn at(&self, seq: u64) -> Option<Arc<World>> {
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        recent.iter().rev().find(|w| w.seq == seq).map(Arc::clone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world(seq: u64) -> Arc<World> {
        let mut world = World::default();
        world.seq = seq;
        Arc::new(world)
    }

    #[test]
    fn only_positions_published_and_still_kept_are_answered() {
        let published = Published::default();
        let mut position = published.position();
        published.record(&world(3));
        published.record(&world(7));
        assert!(position.has_changed().unwrap_or(false));
        assert_eq!(*position.borrow_and_update(), 7);
        assert_eq!(published.at(3).map(|w| w.seq), Some(3));
        assert_eq!(published.at(7).map(|w| w.seq), Some(7));
        assert!(published.at(5).is_none(), "5 was inside a batch");
        for seq in 8..8 + RECENT as u64 {
            published.record(&world(seq));
        }
        assert!(published.at(7).is_none(), "7 was pushed out");
        assert!(published.at(8).is_some());
    }
}
