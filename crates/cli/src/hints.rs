//! What the command line can do about a diagnostic: a hint line per code, naming the `flysim`
//! subcommand or flag that helps. Libraries never name them; the binary adds them here, after
//! the diagnostic's own help.

/// The hint for diagnostic code `code`, if the command line has one.
pub(crate) fn for_code(code: &str) -> Option<&'static str> {
    Some(match code {
        "FS0121" => "`flysim schema <name>` prints a contract type's JSON Schema",
        "FS0252" => "`flysim assets add FILE` adds a file to the asset registry",
        "FS0253" => {
            "`flysim assets remove ID` removes a damaged entry; then `flysim assets add FILE --id ID` adds the file again"
        }
        "FS0254" => "`flysim assets add FILE --id ID` adds it under another id",
        "FS0256" => "`flysim assets list` lists the registry's ids",
        "FS0304" => "`--worker-threads N` sets the threads of every agent worker",
        "FS0305" => {
            "`flysim backends` lists the backends of this build; `flysim explain FS0305` lists the components it links"
        }
        "FS0311" => "`--transport unix`, or `--mode in-process` or `--mode thread`",
        "FS0313" => "`flysim resume RUN_DIR` starts again from the newest durable checkpoint",
        "FS0401" => "`--state-dir DIR` chooses another state directory",
        "FS0402" => "`flysim run FILE.kdl` writes a run directory",
        "FS0403" => {
            "`flysim diff RUN_DIR INTACT_RUN_DIR` against an intact run of the same plan names the altered row"
        }
        "FS0404" => {
            "`flysim diff RUN_DIR OTHER_RUN_DIR` names the first row where two runs differ and its differing fields"
        }
        "FS0405" => {
            "`flysim checkpoints RUN_DIR` lists the generations; `flysim resume RUN_DIR --generation N` resumes from one"
        }
        "FS0406" => "`flysim checkpoints RUN_DIR` lists what a run holds",
        "FS0408" => "wait for that process to end (or stop it), then `flysim resume RUN_DIR`",
        "FS0932" => {
            "`flysim replay RUN_DIR` re-executes the whole run and says whether this build reproduces its digest"
        }
        "FS0601" => "`flysim backends` says whether this build has the Game Boy backend",
        "FS0701" | "FS0702" | "FS0704" => {
            "`flysim brain import` makes a connectome file from its tables"
        }
        "FS0710" => "`flysim explain FS0710` lists the columns each importer reads",
        "FS0811" => {
            "flysim looks in /usr/games, /usr/local/bin, /usr/bin, /bin and PATH, or takes FLYSIM_DOLPHIN and FLYSIM_XVFB; `flysim backends` says what it found"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    /// Every code in the table, in the order written.
    const HINTED: &[&str] = &[
        "FS0121", "FS0252", "FS0253", "FS0254", "FS0256", "FS0304", "FS0305", "FS0311", "FS0313",
        "FS0401", "FS0402", "FS0403", "FS0404", "FS0405", "FS0406", "FS0408", "FS0601", "FS0701",
        "FS0702", "FS0704", "FS0710", "FS0811", "FS0932",
    ];

    #[test]
    fn every_hinted_code_is_registered_and_has_its_hint() {
        for code in HINTED {
            assert!(
                flysim_codes::lookup(code).is_some(),
                "{code} is not registered"
            );
            assert!(super::for_code(code).is_some(), "{code} has no hint");
        }
        assert_eq!(super::for_code("FS0101"), None);
    }
}
