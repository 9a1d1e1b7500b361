//! The behaviour every [`SecretRows`] store must have, run against each real store by its tests.

use std::sync::Arc;

use super::holder::Holder;
use super::key::SecretsKey;
use super::rows::{SealedSecret, SecretRows};
use super::value::Secret;
use super::vault::{Vault, VaultError};

/// A key for tests, different for each `seed`.
pub(crate) fn key(seed: u8) -> SecretsKey {
    let mut bytes = [0u8; 32];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = seed.wrapping_mul(31).wrapping_add(i as u8);
    }
    SecretsKey::from_bytes(&bytes)
}

/// Runs every check on `rows`, an empty store; `raw` returns every byte the store's database
/// holds (its file, or a dump of its rows), to search for values.
pub(crate) async fn run(rows: Arc<dyn SecretRows>, raw: impl AsyncFn() -> Vec<u8>) {
    let (ada, bob): (Holder, Holder) = ("token:ada".parse().unwrap(), "user:https://id.example bob".parse().unwrap());
    let value = |text: &str| Secret::new(text.as_bytes()).unwrap();
    let vault = Vault::open(Arc::new(key(1)), rows.clone()).await.unwrap();
    assert_eq!(vault.get(&ada, "tracker", "TOKEN").await.unwrap(), None);

    vault.set(&ada, "tracker", "TOKEN", &value("ada-secret-value-1")).await.unwrap();
    vault.set(&bob, "tracker", "TOKEN", &value("bob-secret-value-1")).await.unwrap();
    vault.set(&ada, "chat", "SLACK", &value("ada-secret-value-2")).await.unwrap();
    assert_eq!(vault.get(&ada, "tracker", "TOKEN").await.unwrap(), Some(value("ada-secret-value-1")));
    assert_eq!(vault.get(&bob, "tracker", "TOKEN").await.unwrap(), Some(value("bob-secret-value-1")));
    assert_eq!(vault.get(&bob, "chat", "SLACK").await.unwrap(), None, "each holder's own");

    let before = vault.list(Some(&ada)).await.unwrap();
    let names: Vec<(&str, &str, &str)> = before.iter().map(|l| (l.holder.as_str(), l.plugin.as_str(), l.name.as_str())).collect();
    assert_eq!(names, vec![("token:ada", "chat", "SLACK"), ("token:ada", "tracker", "TOKEN")]);
    assert_eq!(vault.list(None).await.unwrap().len(), 3);

    // Replacing keeps when it was first set.
    vault.set(&ada, "tracker", "TOKEN", &value("ada-secret-value-3")).await.unwrap();
    assert_eq!(vault.get(&ada, "tracker", "TOKEN").await.unwrap(), Some(value("ada-secret-value-3")));
    let after = vault.list(Some(&ada)).await.unwrap();
    assert_eq!(after[1].created_at, before[1].created_at);
    assert!(after[1].updated_at >= before[1].updated_at);

    let bytes = raw().await;
    for v in ["ada-secret-value-1", "ada-secret-value-2", "ada-secret-value-3", "bob-secret-value-1"] {
        assert!(!bytes.windows(v.len()).any(|w| w == v.as_bytes()), "{v} is stored in the clear");
    }

    // Another key: refused at open, naming both ids.
    let other = key(2);
    match Vault::open(Arc::new(key(2)), rows.clone()).await.err() {
        Some(VaultError::WrongKey { ours, found }) => {
            assert_eq!((ours.as_str(), found), (other.id(), vec![(key(1).id().to_owned(), 3)]));
        }
        other => panic!("expected WrongKey, got {other:?}"),
    }

    // Rotation: every row readable under the new key only, and the old key refused.
    let rotated = vault.rotate(&key(2)).await.unwrap();
    assert_eq!((rotated.rows, rotated.from.as_str(), rotated.to.as_str()), (3, key(1).id(), key(2).id()));
    assert!(matches!(vault.get(&ada, "chat", "SLACK").await, Err(VaultError::OtherKey { .. })), "the old key no longer reads them");
    assert!(matches!(Vault::open(Arc::new(key(1)), rows.clone()).await, Err(VaultError::WrongKey { .. })));
    let vault = Vault::open(Arc::new(key(2)), rows.clone()).await.unwrap();
    assert_eq!(vault.get(&ada, "tracker", "TOKEN").await.unwrap(), Some(value("ada-secret-value-3")));
    assert_eq!(vault.get(&ada, "chat", "SLACK").await.unwrap(), Some(value("ada-secret-value-2")));
    assert_eq!(vault.get(&bob, "tracker", "TOKEN").await.unwrap(), Some(value("bob-secret-value-1")));
    assert_eq!(vault.list(Some(&ada)).await.unwrap()[1].created_at, before[1].created_at, "a rotation keeps the dates");

    // A reseal that finds a row changed since it was read writes nothing.
    let mut stale = rows.secrets_sealed_under(key(2).id()).await.unwrap();
    let first = stale.remove(0);
    vault.set(&Holder::from_stored(&first.holder), &first.plugin, &first.name, &value("changed-meanwhile")).await.unwrap();
    let second = stale.remove(0);
    let e = rows
        .reseal_secrets(vec![(second.nonce.clone(), SealedSecret { nonce: vec![7; 24], ..second.clone() }), (first.nonce.clone(), first.clone())])
        .await
        .unwrap_err();
    assert!(e.0.contains("changed"), "{e}");
    assert_eq!(rows.get_secret(&second.holder, &second.plugin, &second.name).await.unwrap(), Some(second), "rolled back");

    // A row moved to another holder does not open.
    let mut moved = rows.get_secret("token:ada", "chat", "SLACK").await.unwrap().unwrap();
    moved.holder = "token:eve".into();
    rows.put_secret(moved).await.unwrap();
    let eve: Holder = "token:eve".parse().unwrap();
    assert!(matches!(vault.get(&eve, "chat", "SLACK").await, Err(VaultError::Unopenable { .. })));

    assert!(vault.delete(&ada, "chat", "SLACK").await.unwrap());
    assert!(!vault.delete(&ada, "chat", "SLACK").await.unwrap());
    assert_eq!(vault.get(&ada, "chat", "SLACK").await.unwrap(), None);
}
