//! A session's temporal data (guide operations §6): plain and encrypted entries, the index report
//! and bounded-staleness reads.

use super::*;

#[async_trait]
impl Data for EngineSession {
    async fn store_data(&self, req: StoreDataRequest) -> ServiceResult<DataEntryInfo> {
        self.write(|world, ctx| {
            let (op, entry) = crate::engine::data::store(world, ctx, &req)?;
            Ok((vec![op], DataEntryInfo::from(&entry)))
        })
        .await
    }

    async fn retrieve_data(&self, req: RetrieveDataQuery) -> ServiceResult<RetrievedData> {
        self.counted(
            "retrieve_data",
            Some(req.timeline_id.clone()),
            self.read(Inline, |world, _| {
                crate::engine::data::retrieve(world, &req)
            }),
        )
        .await
    }

    async fn encrypt_data(&self, req: EncryptDataRequest) -> ServiceResult<DataEntryInfo> {
        crate::engine::data::check_key(&req.encryption_key)?;
        let data = crate::engine::data::object("data", &req.data)?;
        // Where and when are decided first: the ciphertext is bound to them (and to the id).
        let placed = self
            .read(Inline, |world, ctx| {
                crate::engine::data::placement(world, ctx, &req.timeline_id, req.timestamp)
            })
            .await;
        let timestamp = self.refusal_noted("encrypt_data", Some(&req.timeline_id), placed)?;
        let data_id = crate::model::DataId::from_ulid(self.engine.mint());
        let aad = crate::engine::data::associated_data(&data_id, &req.timeline_id, timestamp);
        let plaintext = zeroize::Zeroizing::new(
            serde_json::to_vec(&data)
                .map_err(|e| ServiceError::Internal(format!("encoding the data: {e}")))?,
        );
        let key = req.encryption_key;
        let sealed = crate::engine::data::off_the_runtime(move || {
            crate::engine::data::seal(&key, &plaintext, &aad)
        })
        .await?;
        let timeline = req.timeline_id;
        self.write(|world, ctx| {
            let (op, entry) = crate::engine::data::entry(
                world,
                ctx,
                data_id.clone(),
                &timeline,
                timestamp,
                DataPayload::Encrypted(sealed.clone()),
            )?;
            Ok((vec![op], DataEntryInfo::from(&entry)))
        })
        .await
    }

    async fn decrypt_data(&self, req: DecryptDataRequest) -> ServiceResult<DecryptedData> {
        crate::engine::data::check_key(&req.encryption_key)?;
        let found = self
            .read(Inline, |world, _| {
                crate::engine::data::find(world, &req.data_id).cloned()
            })
            .await;
        let entry = self.refusal_noted("decrypt_data", None, found)?;
        let timeline = entry.timeline_id.clone();
        let answer: ServiceResult<_> = async {
            let answer = |status, data| DecryptedData {
                status,
                data,
                data_id: entry.data_id.clone(),
                timeline_id: entry.timeline_id.clone(),
                timestamp: entry.timestamp,
            };
            let sealed = match &entry.payload {
                DataPayload::Plain { data } => {
                    return Ok(answer(DecryptStatus::NotEncrypted, data.clone()));
                }
                DataPayload::Encrypted(sealed) => sealed.clone(),
            };
            let aad = crate::engine::data::associated_data(
                &entry.data_id,
                &entry.timeline_id,
                entry.timestamp,
            );
            let key = req.encryption_key;
            let opened = crate::engine::data::off_the_runtime(move || {
                crate::engine::data::open(&key, &sealed, &aad)
            })
            .await?;
            let Some(plaintext) = opened else {
                return Err(ServiceError::DecryptionFailed {
                    data_id: entry.data_id.to_string(),
                });
            };
            let data: DataObject = serde_json::from_slice(&plaintext).map_err(|e| {
                ServiceError::Internal(format!("a decrypted entry is not a JSON object: {e}"))
            })?;
            Ok(answer(DecryptStatus::Decrypted, data))
        }
        .await;
        self.noted("decrypt_data", Some(&timeline), answer)
    }

    async fn report_index(&self, req: IndexRequest) -> ServiceResult<IndexReport> {
        self.counted(
            "create_index",
            Some(req.timeline_id.clone()),
            self.read(Inline, |world, _| crate::engine::data::index(world, &req)),
        )
        .await
    }

    async fn enable_caching(&self, req: CachingRequest) -> ServiceResult<CachingSetting> {
        let single = self.engine.single_process();
        self.write(|_, ctx| {
            let (op, answer) = crate::engine::data::caching(ctx, &req, single)?;
            Ok((vec![op], answer))
        })
        .await
    }

    async fn disable_caching(&self, id: &crate::model::CacheId) -> ServiceResult<()> {
        self.write(|world, ctx| {
            let op = crate::engine::navigation::withdraw_caching(world, ctx, id)?;
            Ok((vec![op], ()))
        })
        .await
    }
}
