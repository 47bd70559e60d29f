//! The remote face's server: the real router in front of an engine, on 127.0.0.1:0.

use std::sync::Arc;

use chronoscope::engine::Engine;

/// A running test server.
pub struct Server {
    /// Its root URL.
    pub base_url: String,
}

impl Server {
    /// Starts the server in front of `engine`.
    pub async fn start(_engine: Arc<Engine>) -> Self {
        unimplemented!("the server branch has not landed yet")
    }

    /// A token for `traveller`.
    pub fn token_for(&self, _traveller: &str) -> String {
        unimplemented!("the server branch has not landed yet")
    }
}
