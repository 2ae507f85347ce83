//! `flysim explain`: print the explain page of a diagnostic code, or list them all.

use crate::error::CliError;

/// Arguments of `flysim explain`.
#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
pub(crate) struct Args {
    /// The code, e.g. FS0101
    code: Option<String>,
    /// List every registered code with its summary
    #[arg(long)]
    list: bool,
}

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    if args.list {
        let mut out = String::new();
        for code in flysim_codes::ALL {
            let retired = if code.retired { " (retired)" } else { "" };
            out.push_str(&format!("{}  {}{retired}\n", code.code, code.summary()));
        }
        return Ok(out);
    }
    let wanted = args.code.clone().unwrap_or_default();
    let code = flysim_codes::lookup(&wanted).ok_or(CliError::UnknownCode { requested: wanted })?;
    let mut page = code.explain.to_owned();
    if !page.ends_with('\n') {
        page.push('\n');
    }
    Ok(page)
}
