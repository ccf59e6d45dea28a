//! `admission-webhook`: serves a Kubernetes validating admission webhook over HTTPS that judges
//! every object against one saved GCO region policy (see the crate docs and the README).
//!
//! ```text
//! admission-webhook --policy-file POLICY.json --tls-cert tls.crt --tls-key tls.key [--listen ADDR]
//! ```
//!
//! Prints `listening on https://ADDR` once it serves; exits 2 when a file cannot be used.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use admission_webhook::{config, server};
use anyhow::Context;
use clap::Parser;

/// Command-line interface.
#[derive(Debug, Parser)]
#[command(name = "admission-webhook", version, about)]
struct Args {
    /// A saved `GET /api/v1/policy` response body (JSON): the policy every object is judged by.
    #[arg(long, value_name = "FILE")]
    policy_file: PathBuf,
    /// The server certificate chain (PEM).
    #[arg(long, value_name = "FILE")]
    tls_cert: PathBuf,
    /// The server's private key (PEM).
    #[arg(long, value_name = "FILE")]
    tls_key: PathBuf,
    /// Address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8443")]
    listen: SocketAddr,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("admission-webhook: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let policy = config::load_policy(&args.policy_file)?;
    let tls = config::load_tls(&args.tls_cert, &args.tls_key)?;
    let limits = server::Limits::default();
    // Judging is the only blocking work: one thread per review judged at once, so that freed
    // memory is kept by no more threads' allocator arenas than reviews run at once.
    // Two workers serve every connection of a webhook sized for 128Mi, on any node's cores.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(limits.max_reviews_at_once.max(1))
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let address = listener
            .local_addr()
            .context("cannot read the bound address")?;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on https://{address}")?;
        stdout.flush()?;
        drop(stdout);
        server::serve(listener, tls, Arc::new(policy), limits).await;
        Ok(())
    })
}
