//! `jobcheck policy -r REGION`: one region's full `GET /api/v1/policy` response (or, with
//! `--policy-file REGION=FILE`, a saved one), as the reference's table or unchanged as JSON / YAML. Exit 1 with `Failed to get job validation policy: <reason>` when it
//! cannot be read.

use std::io::Write;
use std::process::ExitCode;

use policy_client::policy_table;

use crate::check::{self, CheckError};
use crate::live::{self, RegionsFileChoice};
use crate::{PolicyArgs, PolicyFormat};

/// Runs `jobcheck policy`.
pub(crate) fn run(args: &PolicyArgs) -> ExitCode {
    match render(args) {
        Ok(Ok(output)) => {
            let mut stdout = std::io::stdout().lock();
            if stdout.write_all(output.as_bytes()).is_err() || stdout.flush().is_err() {
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        Ok(Err(reason)) => {
            eprintln!("Failed to get job validation policy: {reason}");
            ExitCode::from(1)
        }
        Err(error) => {
            eprintln!("{}", error.one_line());
            ExitCode::from(error.exit_code())
        }
    }
}

/// The rendered response, or the read's reason; `Err` for usage problems.
fn render(args: &PolicyArgs) -> Result<Result<String, String>, CheckError> {
    let (region, body) = match &args.policy_file {
        // A saved body is read and checked as `check --policy-file` reads it.
        Some(flag) => {
            let mut sources = check::parse_policy_flags(std::slice::from_ref(flag))?;
            let (region, file) = sources.remove(0);
            (region, check::read_saved_body(&file)?)
        }
        None => {
            let config = RegionsFileChoice::new(args.regions_file.clone()).load()?;
            let requested = args.region.clone().unwrap_or_default();
            let regions = live::select(&config, std::slice::from_ref(&requested))?;
            let client = live::client(&config)?;
            let region = &regions[0];
            match client.fetch_policy_document_blocking(region) {
                Ok(Ok(body)) => (region.name.clone(), body),
                Ok(Err(reason)) => return Ok(Err(reason.to_string())),
                Err(error) => return Ok(Err(live::chain(error))),
            }
        }
    };
    let output = match args.output {
        PolicyFormat::Table => policy_table(&region, &body),
        PolicyFormat::Json => {
            let mut text = serde_json::to_string_pretty(&body)
                .map_err(|e| CheckError::Failed(anyhow::anyhow!("cannot render JSON: {e}")))?;
            text.push('\n');
            text
        }
        PolicyFormat::Yaml => serde_yaml::to_string(&body)
            .map_err(|e| CheckError::Failed(anyhow::anyhow!("cannot render YAML: {e}")))?,
    };
    Ok(Ok(output))
}
