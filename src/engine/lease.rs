//! The writer's lease: on a store several processes append to (PostgreSQL replicas), one
//! process at a time writes.
//!
//! Without it every replica decides writes on what it knows and races the others for the next
//! log position; the loser decides again (see `commit`), and two busy replicas lost over half
//! their appends that way. With it, a process decides only while it holds the lease, after
//! folding in everything appended before it got it, so its appends find their position free
//! and every write is decided once.
//!
//! The lease goes where the writes are instead of the writes going to the lease: the holder
//! keeps it while nobody else asks (one replica, or one busy and the others reading, pays
//! nothing), and when another process asks, gives it up once it has held it for [`MIN_HOLD`]
//! and every write it let in is durable. The writes that queue meanwhile on the other process
//! go into its first batches together, so passing the lease costs a few round trips per
//! [`MIN_HOLD`], not per write. A process that cannot get the lease within the store's
//! patience (a holder that stopped answering) writes without it for [`REST`]: the lease saves
//! work but never guards correctness, which stays with the log's sequence numbers.
//!
//! Better still, the writes go to the lease: a process that takes writes over HTTP names its
//! address with the lease ([`Engine::advertise_writer`]), and the others' HTTP layers send the
//! writes they receive to the holder ([`Engine::forward_writes_to`], `server::forward`), so one
//! process decides every write, in batches as large as one replica's, while nobody waits for
//! the lease to come round. The lease then stays put, and moves only for a write a process
//! makes itself (a job that fell due, an access-log summary) or after the holder is gone.
//!
//! A write holds a share of the lease (a read guard of [`Lease::slot`]) from before it decides
//! until it is durable; giving the lease up takes the whole slot (the write guard), which waits
//! for the writes in flight and holds new ones back (tokio's lock queues fairly), so nothing
//! this process decided can still be appended once another process holds the lease.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock, watch};
use tokio::time::Instant;

use super::Engine;
use crate::error::ServiceError;
use crate::store::{HeldLease, LeaseHolder, LogKey, WriterLease};

/// How long the lease is held at least once taken, however soon another process asks for it:
/// passing it costs a few round trips and a catch-up, which this spreads over many writes.
/// Also about the longest a write waits for it while another process is busy writing.
pub(super) const MIN_HOLD: Duration = Duration::from_millis(20);
/// How long writes go without the lease after it could not be had.
const REST: Duration = Duration::from_secs(10);
/// How long what the store said about the lease's holder is used before it is asked again.
const HOLDER_FRESH: Duration = Duration::from_secs(1);

/// The lease while held, and which taking of it this is (so that a request to give up one
/// taking never ends a later one early).
type Slot = Option<(u64, Box<dyn HeldLease>)>;

/// One write's share of the lease (kept by the write, and by the batch it joined).
pub(super) struct Share {
    _held: OwnedRwLockReadGuard<Slot>,
}

impl std::fmt::Debug for Share {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Share")
    }
}

/// This process's side of the store's writer lease.
pub(super) struct Lease {
    store: Arc<dyn WriterLease>,
    slot: Arc<RwLock<Slot>>,
    /// How many times it was taken.
    taken: AtomicU64,
    /// Until when writes go without the lease, after it could not be had.
    resting_until: Mutex<Option<Instant>>,
    /// Where the lease's holder takes forwarded writes, as last asked.
    holder: Mutex<Holder>,
    /// Held while the store is asked who holds the lease, so that one write asks at a time.
    asking: tokio::sync::Mutex<()>,
    /// Where this process takes forwarded writes (see [`Engine::advertise_writer`]).
    advertised: Mutex<Option<Arc<str>>>,
}

/// What is known of the lease's holder.
#[derive(Default)]
struct Holder {
    /// Its address, when it is another process that gave one.
    url: Option<Arc<str>>,
    /// When the store was last asked; `None` once what it said no longer holds.
    asked: Option<Instant>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease").finish_non_exhaustive()
    }
}

impl Lease {
    /// The lease of `store`, whose requests for it are signed with a key derived from `key`.
    pub(super) fn new(store: Arc<dyn WriterLease>, key: &LogKey) -> Self {
        store.sign_requests_with(key);
        Self {
            store,
            slot: Arc::new(RwLock::new(None)),
            taken: AtomicU64::new(0),
            resting_until: Mutex::new(None),
            holder: Mutex::default(),
            asking: tokio::sync::Mutex::new(()),
            advertised: Mutex::new(None),
        }
    }

    fn holder(&self) -> std::sync::MutexGuard<'_, Holder> {
        self.holder.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What the store said about the holder, while it may still be trusted. That no other
    /// process holds it is not kept: another may take it any moment, and asking again costs
    /// less than taking the lease from it (the write asking would take it next).
    fn known_holder(&self) -> Option<Option<Arc<str>>> {
        let holder = self.holder();
        let fresh = holder
            .asked
            .is_some_and(|asked| asked.elapsed() < HOLDER_FRESH);
        holder.url.clone().filter(|_| fresh).map(Some)
    }

    /// Forgets what the store said about the holder: the lease moved.
    fn forget_holder(&self) {
        self.holder().asked = None;
    }

    fn resting(&self) -> bool {
        let until = self.resting_until.lock().unwrap_or_else(|e| e.into_inner());
        until.is_some_and(|until| Instant::now() < until)
    }

    fn rest(&self) {
        *self.resting_until.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now() + REST);
    }
}

impl Engine {
    /// Whether a write must take the lease first (or wait while this process takes it or
    /// gives it up): `false` while it holds it, and when there is none or it is not used now.
    pub(super) fn lease_elsewhere(&self) -> bool {
        self.lease.as_ref().is_some_and(|lease| {
            !lease.resting() && lease.slot.try_read().map_or(true, |slot| slot.is_none())
        })
    }

    /// A share of the writer's lease for one write, taking the lease first (and folding in
    /// what was appended before it was ours) when this process does not hold it. `None` when
    /// the store has no lease, or it could not be had: the write then goes without it.
    pub(super) async fn lease_share(&self) -> Result<Option<Share>, ServiceError> {
        let Some(lease) = &self.lease else {
            return Ok(None);
        };
        let share = Arc::clone(&lease.slot).read_owned().await;
        if share.is_some() {
            return Ok(Some(Share { _held: share }));
        }
        drop(share);
        if lease.resting() {
            return Ok(None);
        }
        let mut slot = Arc::clone(&lease.slot).write_owned().await;
        // Another write may have taken it while this one queued for the slot.
        if slot.is_none() {
            let mut wanted = lease.store.wanted();
            match lease.store.acquire().await {
                Ok(Some(held)) => {
                    // Asked for before it was ours: by whoever held it, or by a process that
                    // asks again while it waits.
                    wanted.borrow_and_update();
                    let since = Instant::now();
                    if let Err(e) = self.catch_up().await {
                        held.release().await;
                        return Err(e);
                    }
                    let taking = lease.taken.fetch_add(1, Ordering::Relaxed) + 1;
                    *slot = Some((taking, held));
                    metrics::counter!(crate::metrics::WRITER_LEASE_TAKEN).increment(1);
                    metrics::gauge!(crate::metrics::WRITER_LEASE_HELD).set(1.0);
                    self.give_lease_up_when_wanted(taking, wanted, since);
                }
                Ok(None) => {
                    tracing::warn!(
                        rest_s = REST.as_secs(),
                        "the writer's lease was not given up in time; writing without it"
                    );
                    lease.rest();
                    return Ok(None);
                }
                Err(e) => {
                    tracing::warn!(%e, rest_s = REST.as_secs(), "cannot take the writer's lease; writing without it");
                    lease.rest();
                    return Ok(None);
                }
            }
        }
        Ok(Some(Share {
            _held: OwnedRwLockWriteGuard::downgrade(slot),
        }))
    }

    /// Gives the lease up (its `taking`) once another process asks for it and it was held since
    /// `since` for [`MIN_HOLD`].
    fn give_lease_up_when_wanted(
        &self,
        taking: u64,
        mut wanted: watch::Receiver<u64>,
        since: Instant,
    ) {
        let engine = self.me.clone();
        tokio::spawn(async move {
            // An error: the store is gone, and the lease's connection with it.
            if wanted.changed().await.is_err() {
                return;
            }
            tokio::time::sleep_until(since + MIN_HOLD).await;
            if let Some(engine) = engine.upgrade() {
                engine.give_lease_up(Some(taking)).await;
            }
        });
    }

    /// Gives the lease up (only its `taking`, if named) once the writes holding shares of it
    /// are durable.
    async fn give_lease_up(&self, taking: Option<u64>) {
        let Some(lease) = &self.lease else {
            return;
        };
        let mut slot = lease.slot.write().await;
        if slot
            .as_ref()
            .is_some_and(|(held, _)| taking.is_none_or(|taking| taking == *held))
            && let Some((_, held)) = slot.take()
        {
            held.release().await;
            metrics::gauge!(crate::metrics::WRITER_LEASE_HELD).set(0.0);
            // Another process holds it now, or soon: the next write asks who.
            lease.forget_holder();
        }
    }

    /// Gives the writer's lease up, if this process holds it, once its writes in flight are
    /// durable: at an orderly stop, so that another replica need not wait for this process to
    /// end. A later write takes it again.
    pub async fn release_writer_lease(&self) {
        self.give_lease_up(None).await;
    }

    /// Names where this process takes writes forwarded by the others while it holds the lease
    /// (its HTTP address); taken with the lease from now on. `Err` says why the store cannot
    /// keep this address.
    pub async fn advertise_writer(&self, url: &str) -> Result<(), String> {
        let Some(lease) = &self.lease else {
            return Ok(());
        };
        lease.store.advertise(url)?;
        *lease.advertised.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::from(url));
        // Taken again, under the new name, by the next write.
        self.give_lease_up(None).await;
        Ok(())
    }

    /// Where this process takes writes forwarded by the others (see
    /// [`Engine::advertise_writer`]); `None` when it has no writer's lease or gave no address.
    /// A forwarded write names the address it was sent to, and is refused anywhere else.
    pub fn advertised_writer(&self) -> Option<Arc<str>> {
        let lease = self.lease.as_ref()?;
        lease
            .advertised
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A key for what the replicas of this deployment prove to each other over `label`
    /// (forwarded writes and their answers, see `server::forward`), derived from the log key:
    /// the one secret every replica is sure to share.
    pub fn replica_key(&self, label: &str) -> [u8; 32] {
        self.config.log_key.derive(label)
    }

    /// Where a write received over HTTP should go instead of being made here: the address of
    /// the process holding the writer's lease, when that is another process that gave one.
    /// What the store said about the holder is used for [`HOLDER_FRESH`]; after that, or once
    /// this process gave the lease up, the first write asks again (one query) and the writes
    /// arriving meanwhile wait for its answer.
    pub async fn forward_writes_to(&self) -> Option<Arc<str>> {
        let lease = self.lease.as_ref()?;
        if lease.slot.try_read().is_ok_and(|slot| slot.is_some()) {
            return None;
        }
        if let Some(known) = lease.known_holder() {
            return known;
        }
        let _asking = lease.asking.lock().await;
        // Asked while this write waited its turn.
        if let Some(known) = lease.known_holder() {
            return known;
        }
        let url = match lease.store.holder().await {
            Ok(Some(LeaseHolder {
                mine: false,
                url: Some(url),
            })) => Some(Arc::from(url)),
            Ok(_) => None,
            Err(e) => {
                tracing::debug!(%e, "cannot ask who holds the writer's lease");
                None
            }
        };
        let mut holder = lease.holder();
        holder.url = url.clone();
        holder.asked = Some(Instant::now());
        url
    }

    /// Asks the store in the background who holds the writer's lease, so that the first
    /// writes received over HTTP go to it without waiting to ask.
    pub fn learn_lease_holder(&self) {
        if self.lease.is_none() {
            return;
        }
        let engine = self.me.clone();
        tokio::spawn(async move {
            if let Some(engine) = engine.upgrade() {
                engine.forward_writes_to().await;
            }
        });
    }

    /// A write forwarded to `url` found nobody there: writes are made here (taking the lease)
    /// until the store is asked again who holds it.
    pub fn forward_failed(&self, url: &str) {
        let Some(lease) = &self.lease else {
            return;
        };
        let mut holder = lease.holder();
        if holder.url.as_deref() == Some(url) {
            holder.url = None;
            holder.asked = Some(Instant::now());
        }
    }

    /// After an append found its position taken although this process holds the lease: the
    /// lease is not what it seems (its connection ended and another process took it), so give
    /// it up and take it again for the next writes.
    pub(super) fn doubt_lease(&self) {
        if self.lease.is_none() {
            return;
        }
        let engine = self.me.clone();
        tokio::spawn(async move {
            if let Some(engine) = engine.upgrade() {
                engine.give_lease_up(None).await;
            }
        });
    }
}
