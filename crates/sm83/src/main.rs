//! `flysim-sm83 SOURCE.asm -o OUT.gb`: assemble a ROM and fix its header checksums.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (source, out) = match args.as_slice() {
        [source, flag, out] if flag == "-o" => (source, out),
        _ => {
            #[expect(clippy::print_stderr, reason = "a dev tool's usage line")]
            {
                eprintln!("usage: flysim-sm83 SOURCE.asm -o OUT.gb");
            }
            return ExitCode::from(2);
        }
    };
    let result = std::fs::read_to_string(source)
        .map_err(|e| format!("cannot read {source}: {e}"))
        .and_then(|text| flysim_sm83::build(&text).map_err(|e| format!("{source}: {e}")))
        .and_then(|rom| std::fs::write(out, rom).map_err(|e| format!("cannot write {out}: {e}")));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            #[expect(clippy::print_stderr, reason = "a dev tool reports its one error")]
            {
                eprintln!("error: {message}");
            }
            ExitCode::from(1)
        }
    }
}
