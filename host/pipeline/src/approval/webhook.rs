//! Telling a named approver that an approval waits for them: a `POST` of
//! the card as JSON to the operator's endpoint (`[approvals] webhook_url`),
//! signed with HMAC-SHA256 under the secret in `webhook_secret_file`
//! (`X-Airlock-Signature: sha256=<hex>` over the body), retried with
//! backoff, never on the call's path: deliveries wait in a bounded queue
//! ([`MAX_QUEUED`]) that one task empties; when it is full a delivery is
//! dropped with a warning (the approver can still list it with `airlock
//! approvals list`).
//!
//! Trusts nothing the endpoint answers beyond its status.

use super::Approval;
use crate::outbound::Outbound;
use ring::hmac;
use serde_json::json;
use std::time::Duration;
use tokio::sync::mpsc;

/// Deliveries waiting at most.
pub const MAX_QUEUED: usize = 1024;
/// How long one attempt may take.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// The first pause between attempts; each next one is twice as long.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest pause between attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// The most bytes of an endpoint's answer read.
const MAX_ANSWER_BYTES: usize = 4096;

/// Where and how deliveries go.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSettings {
    /// `[approvals] webhook_url`.
    pub url: String,
    /// The secret of `webhook_secret_file`.
    pub secret: Vec<u8>,
    /// `[approvals] webhook_max_attempts`.
    pub max_attempts: u32,
}

impl std::fmt::Debug for WebhookSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSettings").field("url", &self.url).field("max_attempts", &self.max_attempts).finish()
    }
}

/// The queue of deliveries.
#[derive(Debug)]
pub struct Webhook {
    queue: mpsc::Sender<(String, u64)>,
}

/// The signature header's value for `body`.
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, secret), body);
    format!("sha256={}", hex::encode(tag.as_ref()))
}

/// What is posted for `approval`, whose page is at `link`.
pub fn payload(approval: &Approval, link: &str) -> String {
    json!({
        "event": "approval.waiting",
        "id": approval.id,
        "principal": approval.principal,
        "tool": approval.tool,
        "revision": approval.revision,
        "card": approval.card,
        "reason": approval.reason,
        "approver": approval.approver.describe(&approval.principal),
        "link": link,
        "expires_ms": approval.expires_ms,
    })
    .to_string()
}

impl Webhook {
    /// Start the delivering task (on the current runtime).
    pub fn start(settings: WebhookSettings) -> Webhook {
        let (queue, mut deliveries) = mpsc::channel::<(String, u64)>(MAX_QUEUED);
        tokio::spawn(async move {
            while let Some((body, expires_ms)) = deliveries.recv().await {
                deliver(&settings, &body, expires_ms).await;
            }
        });
        Webhook { queue }
    }

    /// Queue a delivery of `body`, worth trying until `expires_ms`.
    pub fn notify(&self, body: String, expires_ms: u64) {
        if self.queue.try_send((body, expires_ms)).is_err() {
            tracing::warn!(
                "an approval webhook was dropped: {MAX_QUEUED} deliveries are already waiting (is [approvals] \
                 webhook_url answering?)"
            );
        }
    }
}

/// Try one delivery until it is accepted (a 2xx), `max_attempts` are made,
/// or the approval lapses.
async fn deliver(settings: &WebhookSettings, body: &str, expires_ms: u64) {
    let mut pause = FIRST_BACKOFF;
    for attempt in 1..=settings.max_attempts {
        let request = Outbound {
            method: http::Method::POST,
            url: &settings.url,
            headers: vec![("x-airlock-signature", signature(&settings.secret, body.as_bytes()))],
            body: Some(("application/json", body.as_bytes().to_vec())),
            max_bytes: MAX_ANSWER_BYTES,
            timeout: ATTEMPT_TIMEOUT,
        };
        match request.send().await {
            Ok(response) if response.status.is_success() => return,
            Ok(response) => {
                tracing::warn!(attempt, status = %response.status, "the approval webhook refused a delivery")
            }
            Err(err) => tracing::warn!(attempt, "the approval webhook could not be reached: {err}"),
        }
        if attempt == settings.max_attempts || super::now_ms().saturating_add(duration_ms(pause)) >= expires_ms {
            break;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_BACKOFF);
    }
    tracing::warn!("an approval webhook delivery was given up; the approver can list it with `airlock approvals list`");
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_of_the_body_in_hex() {
        // RFC 4231, test case 2.
        assert_eq!(
            signature(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
