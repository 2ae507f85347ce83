//! `flysim rom check`: load a Game Boy ROM in the pinned binjgb core and run it headless.

use std::path::PathBuf;

use flysim_binjgb::{Buttons, Emulator};

use super::read_input;
use crate::error::CliError;

/// Arguments of `flysim rom`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: RomCommand,
}

#[derive(Debug, clap::Subcommand)]
enum RomCommand {
    /// Load a ROM, run it for some frames with no button pressed, and print what it showed
    Check {
        /// The ROM file
        rom: PathBuf,
        /// Frames to run
        #[arg(long, default_value_t = 60)]
        frames: u32,
    },
}

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    let RomCommand::Check { rom, frames } = &args.command;
    let bytes = read_input(rom)?;
    let mut emu = Emulator::new(&bytes).map_err(|e| CliError::Backend(Box::new(e)))?;
    emu.set_buttons(Buttons::default());
    for _ in 0..*frames {
        emu.run_frame()
            .map_err(|e| CliError::Backend(Box::new(e)))?;
    }
    Ok(format!(
        "title    {}\nsha256   {}\nbytes    {}\nframes   {}\nscreen   sha256:{}\nstate    sha256:{}\n",
        flysim_binjgb::header_title(&bytes),
        emu.rom_digest(),
        bytes.len(),
        emu.frames(),
        flysim_types::digest::sha256(&emu.framebuffer()),
        emu.export_state().digest(),
    ))
}
