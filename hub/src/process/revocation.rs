//! The clusters' certificate revocation list, as the hub task keeps it: written again when a
//! certificate was revoked (deny, a new key) before the change's messages go out, and every 30
//! days when nothing changed (a broker holds the list it read last; it must never lapse); the
//! evictor ([`crate::registration::evict`]) hears what it holds.

use chrono::Utc;

use super::commit::HubLoop;
use crate::registration::certificates::RevokedCertificate;

impl HubLoop {
    /// Rewrites the cluster CA's revocation list when a certificate was revoked (deny, a new
    /// key). Written before the change's messages go out; a broker reads it when reloaded.
    pub(super) fn write_crl_if_changed(&mut self) {
        let now = Utc::now();
        let listed = self.core.revoked_certificates(now);
        if !listed.iter().map(|(_, r)| r).eq(self.written_crl.iter()) {
            self.write_crl(listed, now);
        }
    }

    /// Writes the cluster CA's revocation list of `listed` (the core's revoked certificates
    /// with their clusters) and tells the evictor what it holds.
    pub(super) fn write_crl(
        &mut self,
        listed: Vec<(String, RevokedCertificate)>,
        now: chrono::DateTime<Utc>,
    ) {
        let revoked: Vec<RevokedCertificate> = listed.iter().map(|(_, r)| r.clone()).collect();
        match self.cluster_ca.write_crl(&revoked, now) {
            Ok(()) => {
                tracing::info!(
                    file = %self.cluster_ca.crl_file().display(),
                    revoked = revoked.len(),
                    "wrote the clusters' certificate revocation list (reload a broker that reads it: Mosquitto's crlfile)"
                );
                let gained = revoked
                    .iter()
                    .any(|r| !self.written_crl.iter().any(|w| w.serial == r.serial));
                self.written_crl = revoked;
                self.crl_written_at = now;
                match &self.evictor {
                    Some(evictor) => {
                        let _ =
                            evictor.send(crate::registration::evict::Revoked::from_listed(listed));
                    }
                    None if self.external_broker && gained => tracing::warn!(
                        "a broker that takes certificates as identities (Mosquitto's certificate \
                         listener) keeps a revoked cluster's live session until it disconnects: \
                         give the hub --broker-mtls URL of that listener to have it dropped"
                    ),
                    None => {}
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot write the clusters' certificate revocation list")
            }
        }
    }
}

/// How often the hub writes the revocation list again when nothing changed.
const CRL_REFRESH: chrono::Duration = chrono::Duration::days(30);

/// Whether the revocation list written at `written_at` is to be written again at `now`.
pub(super) fn crl_refresh_due(
    written_at: chrono::DateTime<Utc>,
    now: chrono::DateTime<Utc>,
) -> bool {
    now - written_at >= CRL_REFRESH
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_revocation_list_is_written_again_every_30_days_long_before_its_end() {
        let written = Utc::now();
        assert!(!crl_refresh_due(
            written,
            written + chrono::Duration::days(29)
        ));
        assert!(crl_refresh_due(
            written,
            written + chrono::Duration::days(30)
        ));
        // A broker that read it just before the refresh still has years left on it.
        assert!(CRL_REFRESH * 12 < crate::registration::cluster_ca::CRL_VALIDITY);
    }
}
