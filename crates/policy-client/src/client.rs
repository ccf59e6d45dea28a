//! The policy client: one region's document with retries and timeouts, and the concurrent
//! fan-out over many regions with a hard deadline, results in the requested order.
//!
//! Every read ends in [`Inner::read_scrubbed`]: the body and any failure text pass through a
//! [`Redactor`] that knows the credentials sent, before a reason or a verdict is built from them.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use admission_core::{FetchStatus, RegionPolicy};
use serde_json::Value;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tracing::Instrument;

use crate::classify::{FetchError, StatusAction, classify_status, parse_body, retry_delay};
use crate::regions::{Auth, Region, RegionsConfig};
use crate::request::{build_policy_request, credentials_in_use, sensitive_header_values};
use crate::timing::instant_after;
use crate::transport::{ClientError, Transport, TrustRoots, trust_with_ca_file};
use redaction::Redactor;

/// Reads credentials by variable name (the process environment, or a map in tests).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Timeouts, deadline and retry policy of a read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchOptions {
    /// Bound on one attempt (connect, TLS, request, whole body).
    pub timeout: Duration,
    /// Bound on the whole read, retries included; in a fan-out every region still unfinished
    /// then is `unreachable` with reason `timed out after Ns`.
    pub deadline: Duration,
    /// Attempts for 429/502/503/504 (3 = two retries).
    pub attempts: u32,
    /// Backoff before retry `n` is `backoff_base * 2^(n-1)` (1 s, then 2 s) unless the server
    /// sent `Retry-After` in seconds, which is honoured when it fits before the deadline.
    pub backoff_base: Duration,
    /// How long a fan-out runs before the progress callback is first told what is pending.
    pub progress_after: Duration,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            timeout: Duration::from_secs(crate::regions::DEFAULT_TIMEOUT_SECONDS),
            deadline: Duration::from_secs(crate::regions::DEFAULT_DEADLINE_SECONDS),
            attempts: 3,
            backoff_base: Duration::from_secs(1),
            progress_after: Duration::from_secs(1),
        }
    }
}

impl FetchOptions {
    /// The regions file's `timeoutSeconds` / `deadlineSeconds` with the standard retry policy.
    pub fn from_config(config: &RegionsConfig) -> FetchOptions {
        FetchOptions {
            timeout: config.timeout,
            deadline: config.deadline,
            ..FetchOptions::default()
        }
    }
}

/// Reads deployed job-validation policies. Cheap to clone (shared connection pool).
#[derive(Clone)]
pub struct PolicyClient {
    inner: Arc<Inner>,
}

struct Inner {
    transport: Transport,
    auth: Auth,
    options: FetchOptions,
    env: EnvLookup,
}

impl std::fmt::Debug for PolicyClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyClient")
            .field("auth", &self.inner.auth.kind())
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

impl PolicyClient {
    /// A client for `config`: its auth mode and timeouts, the system roots plus its `caFile`,
    /// credentials from the process environment.
    pub fn new(config: &RegionsConfig) -> Result<PolicyClient, ClientError> {
        PolicyClient::with_trust(
            config.auth.clone(),
            FetchOptions::from_config(config),
            &trust_with_ca_file(config.ca_file.as_deref()),
        )
    }

    /// A client with explicit auth, options and trust roots (credentials from the process
    /// environment until [`PolicyClient::with_env`] replaces the lookup).
    pub fn with_trust(
        auth: Auth,
        options: FetchOptions,
        trust: &TrustRoots,
    ) -> Result<PolicyClient, ClientError> {
        Ok(PolicyClient {
            inner: Arc::new(Inner {
                transport: Transport::new(trust)?,
                auth,
                options,
                env: Arc::new(|name| std::env::var(name).ok()),
            }),
        })
    }

    /// The same client reading credentials through `env` instead of the process environment.
    pub fn with_env(&self, env: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        self.rebuild(|inner| inner.env = Arc::new(env))
    }

    /// The timeouts and retry policy in force.
    pub fn options(&self) -> &FetchOptions {
        &self.inner.options
    }

    fn rebuild(&self, change: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Inner {
            transport: self.inner.transport.clone(),
            auth: self.inner.auth.clone(),
            options: self.inner.options.clone(),
            env: Arc::clone(&self.inner.env),
        };
        change(&mut inner);
        PolicyClient {
            inner: Arc::new(inner),
        }
    }

    /// One region's full response body (`jobcheck policy -r REGION`), with retries, bounded by
    /// the per-request timeout and the deadline. Any JSON is returned as is.
    /// Credentials the server echoes are replaced by `[redacted]`.
    pub async fn fetch_policy_document(&self, region: &Region) -> Result<Value, FetchError> {
        let deadline = instant_after(Instant::now(), self.inner.options.deadline);
        let read = async { self.inner.read_scrubbed(region, deadline).await.0 };
        match tokio::time::timeout_at(deadline, read).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Deadline {
                after: self.inner.options.deadline,
            }),
        }
    }

    /// Every region's policy, read concurrently, in the order of `regions`.
    pub async fn fetch_region_policies(&self, regions: &[Region]) -> Vec<RegionPolicy> {
        self.fetch_region_policies_with_progress(regions, &mut |_| {})
            .await
    }

    /// [`PolicyClient::fetch_region_policies`], telling `progress` which regions are still
    /// pending: first once the fan-out has run for `progress_after`, then after each region
    /// finishes, and finally with an empty list (only if it was called before), so a caller can
    /// draw and then clear a status line. Never called for a fan-out that finishes quickly.
    pub async fn fetch_region_policies_with_progress(
        &self,
        regions: &[Region],
        progress: &mut (dyn FnMut(&[String]) + Send),
    ) -> Vec<RegionPolicy> {
        let started = Instant::now();
        let deadline = instant_after(started, self.inner.options.deadline);
        let mut slots: Vec<Option<RegionPolicy>> = vec![None; regions.len()];
        let mut tasks = JoinSet::new();
        let mut task_index = std::collections::HashMap::new();
        for (index, region) in regions.iter().enumerate() {
            let inner = Arc::clone(&self.inner);
            let region = region.clone();
            let span = tracing::info_span!("policy_read", region = %region.name);
            let handle = tasks.spawn(
                async move {
                    let (result, redactor) = inner.read_scrubbed(&region, deadline).await;
                    let mut policy = into_region_policy(&region.name, result);
                    // The reason was built from scrubbed text; scrub it once more, as every
                    // reason is, in case a conversion re-encoded something.
                    policy.reason = policy.reason.map(|r| redactor.redact(&r));
                    tracing::debug!(status = ?policy.status, "policy read finished");
                    (index, policy)
                }
                .instrument(span),
            );
            task_index.insert(handle.id(), index);
        }

        let pending = |slots: &[Option<RegionPolicy>]| -> Vec<String> {
            regions
                .iter()
                .zip(slots)
                .filter(|(_, slot)| slot.is_none())
                .map(|(region, _)| region.name.clone())
                .collect()
        };
        let mut reported = false;
        let progress_at = instant_after(started, self.inner.options.progress_after);
        let collect = async {
            loop {
                tokio::select! {
                    joined = tasks.join_next_with_id() => match joined {
                        None => break,
                        Some(Ok((_, (index, policy)))) => {
                            slots[index] = Some(policy);
                            if reported {
                                progress(&pending(&slots));
                            }
                        }
                        Some(Err(error)) => {
                            if let Some(&index) = task_index.get(&error.id()) {
                                slots[index] = Some(RegionPolicy::failed(
                                    &regions[index].name,
                                    FetchStatus::Error,
                                    "the policy read failed unexpectedly",
                                ));
                            }
                        }
                    },
                    () = tokio::time::sleep_until(progress_at), if !reported => {
                        reported = true;
                        progress(&pending(&slots));
                    }
                }
            }
        };
        // The deadline bounds the whole fan-out even if a task ignores it.
        let _ = tokio::time::timeout_at(deadline, collect).await;
        tasks.abort_all();
        if reported {
            progress(&[]);
        }

        let timed_out = FetchError::Deadline {
            after: self.inner.options.deadline,
        };
        regions
            .iter()
            .zip(slots)
            .map(|(region, slot)| {
                slot.unwrap_or_else(|| into_region_policy(&region.name, Err(timed_out.clone())))
            })
            .collect()
    }

    /// [`PolicyClient::fetch_region_policies_with_progress`] for synchronous callers: runs the
    /// fan-out on a private runtime.
    pub fn fetch_region_policies_blocking(
        &self,
        regions: &[Region],
        progress: &mut (dyn FnMut(&[String]) + Send),
    ) -> Result<Vec<RegionPolicy>, ClientError> {
        block_on(self.fetch_region_policies_with_progress(regions, progress))
    }

    /// [`PolicyClient::fetch_policy_document`] for synchronous callers.
    pub fn fetch_policy_document_blocking(
        &self,
        region: &Region,
    ) -> Result<Result<Value, FetchError>, ClientError> {
        block_on(self.fetch_policy_document(region))
    }
}

/// The region's outcome: a read document goes through
/// [`RegionPolicy::from_response_body`] (missing or unconvertible policy ⇒ `error` for this region
/// only); a failure keeps its status and reason.
pub fn into_region_policy(region: &str, result: Result<Value, FetchError>) -> RegionPolicy {
    match result {
        Ok(body) => RegionPolicy::from_response_body(region, &body),
        Err(error) => RegionPolicy::failed(region, error.status(), error.to_string()),
    }
}

fn block_on<F: Future>(future: F) -> Result<F::Output, ClientError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(ClientError::Runtime)?;
    Ok(runtime.block_on(future))
}

impl Inner {
    /// [`Inner::read_document`], with the body (every string, key and number) and any failure
    /// text scrubbed of the credentials in use and of every credential header sent; also returns
    /// that scrubber for the texts built from the result.
    async fn read_scrubbed(
        &self,
        region: &Region,
        deadline: Instant,
    ) -> (Result<Value, FetchError>, Redactor) {
        let mut sent = Vec::new();
        let result = self.read_document(region, deadline, &mut sent).await;
        let secrets = credentials_in_use(&self.auth, self.env.as_ref());
        let redactor = Redactor::for_credentials(secrets.into_iter().chain(sent));
        let result = match result {
            Ok(body) => Ok(redactor.redact_value(body)),
            Err(error) => Err(error.scrubbed(&redactor)),
        };
        (result, redactor)
    }

    /// Reads one document: attempts with retries, each bounded by the per-request timeout, all
    /// bounded by `deadline`. The credential headers of every request built are added to `sent`.
    async fn read_document(
        &self,
        region: &Region,
        deadline: Instant,
        sent: &mut Vec<String>,
    ) -> Result<Value, FetchError> {
        let options = &self.options;
        let mut attempt: u32 = 0;
        loop {
            attempt = attempt.saturating_add(1);
            let request =
                build_policy_request(region, &self.auth, self.env.as_ref(), SystemTime::now())?;
            sent.extend(sensitive_header_values(&request));
            let attempt_end = instant_after(Instant::now(), options.timeout).min(deadline);
            let answer =
                match tokio::time::timeout_at(attempt_end, self.transport.send(request)).await {
                    Ok(answer) => answer?,
                    Err(_) if attempt_end >= deadline => {
                        return Err(FetchError::Deadline {
                            after: options.deadline,
                        });
                    }
                    Err(_) => {
                        return Err(FetchError::Timeout {
                            after: options.timeout,
                        });
                    }
                };
            tracing::debug!(attempt, status = answer.status.as_u16(), "policy response");
            match classify_status(answer.status, &answer.headers, attempt) {
                StatusAction::ReadBody => return parse_body(&answer.body),
                StatusAction::Fail(error) => return Err(error),
                StatusAction::Retry(retry_after) => {
                    let wait = retry_delay(
                        answer.status,
                        retry_after,
                        attempt,
                        options.attempts,
                        options.backoff_base,
                        deadline.saturating_duration_since(Instant::now()),
                    )?;
                    tracing::debug!(attempt, wait_ms = wait.as_millis() as u64, "retrying");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
}
