//! The canonical backend configuration `dolphin-backend-config-v1` and everything generated from
//! it: the user directory with `Dolphin.ini`, `GCPadNew.ini`, `Hotkeys.ini` and the
//! MemoryWatcher's `Locations.txt`.
//!
//! The generated text is a pure function of the configuration, byte for byte. The configuration
//! digest covers its identity only (version, content digest, ports, watches, readiness, mode):
//! paths are local facts and never reach a digest.

use std::fmt;
use std::path::{Path, PathBuf};

use flysim_types::{Digest, Id};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::json;

use crate::canonical;
use crate::error::DolphinError;

/// The format tag of a backend configuration.
pub const CONFIG_FORMAT: &str = "dolphin-backend-config-v1";
/// The `--version` line of the Dolphin build this backend was verified on (Debian's
/// `dolphin-emu` 5.0-17995).
pub const PINNED_VERSION: &str = "Dolphin 5.0-17995-g8bad821019";
/// The release a composition pins (`version "5.0-17995"`): the release part of
/// [`PINNED_VERSION`].
pub const PINNED_RELEASE: &str = "5.0-17995";
/// Most watched locations in one configuration.
pub const MAX_WATCHES: usize = 64;
/// The pipe that carries the hotkeys (pause, frame advance, save and load state).
pub const HOTKEY_PIPE: &str = "hotkeys";
/// The latest field a configuration may start at (one hour of NTSC fields).
pub const MAX_START_FIELD: u64 = 215_784;
/// The emulated real-time clock at power-on, in seconds since 1970 (2000-01-01 00:00:00 UTC):
/// pinned, so nothing the console reads depends on the host's clock.
pub const RTC_SECONDS: u32 = 946_684_800;

/// A 32-bit GameCube address, written as eight lowercase hex digits without `0x`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Address(pub u32);

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:08x}", self.0)
    }
}

impl Serialize for Address {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Address {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        if text.len() != 8 || !text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(serde::de::Error::custom(format!(
                "{text:?} is not an address: eight lowercase hex digits"
            )));
        }
        u32::from_str_radix(&text, 16)
            .map(Address)
            .map_err(serde::de::Error::custom)
    }
}

/// How Dolphin runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The Qt frontend in batch mode under a private Xvfb: lockstep stepping and save states
    /// through hotkeys (`recovery: exact-checkpoint`).
    Qt,
    /// `dolphin-emu-nogui`, headless: free-running, no hotkeys (`recovery: episode-restart`,
    /// `determinism: unverified`). A fallback for smoke tests only.
    Nogui,
}

impl Mode {
    /// The mode's name in the configuration.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Qt => "qt",
            Self::Nogui => "nogui",
        }
    }
}

/// The content Dolphin boots: a disc image or an ELF/DOL, by path and pinned SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Content {
    /// Absolute path of the file (never copied).
    pub path: PathBuf,
    /// SHA-256 of its bytes.
    pub sha256: Digest,
}

/// One watched 32-bit value: an address, or a pointer chain `*(address) + offset ...`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Watch {
    /// The value's name in the inspection.
    pub name: Id,
    /// The address (the first link of a pointer chain).
    pub address: Address,
    /// Offsets added after each dereference; empty for a plain address.
    pub offsets: Vec<Address>,
}

impl Watch {
    /// Its line in `Locations.txt`, which is also the key the MemoryWatcher reports it under.
    #[must_use]
    pub fn location(&self) -> String {
        let mut line = self.address.to_string();
        for offset in &self.offsets {
            line.push(' ');
            line.push_str(&format!("{:x}", offset.0));
        }
        line
    }
}

/// The condition that means the content has booted: a watched value reaching a value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Ready {
    /// A declared watch.
    pub watch: Id,
    /// The value it must hold.
    pub value: Address,
}

/// The canonical backend configuration, `dolphin-backend-config-v1`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BackendConfig {
    /// Always [`CONFIG_FORMAT`].
    pub format: String,
    /// Absolute path of the Dolphin binary: `dolphin-emu` in Qt mode, `dolphin-emu-nogui` in
    /// nogui mode.
    pub binary: PathBuf,
    /// The exact first line its `--version` must print.
    pub version: String,
    /// Absolute path of `Xvfb`; required in Qt mode, null in nogui mode.
    pub xvfb: Option<PathBuf>,
    /// What to boot.
    pub content: Content,
    /// The controller ports in use, 1 to 4, ascending.
    pub ports: Vec<u8>,
    /// The watched values, in inspection order.
    pub watches: Vec<Watch>,
    /// What must hold at boundary 0. With `startField` null, what to wait for before pausing
    /// (null: pause after the first field).
    pub ready: Option<Ready>,
    /// The field whose end is boundary 0, counted from power-on (Qt mode only), or null to stop
    /// wherever the first pause lands. With a start field, boundary 0 is the same emulated state
    /// in every run: the world pauses as early as it can and advances field by field, with every
    /// port neutral, to exactly this field.
    pub start_field: Option<u64>,
    /// How Dolphin runs.
    pub mode: Mode,
}

fn absolute(path: &Path, field: &str) -> Result<(), DolphinError> {
    if path.is_absolute() {
        Ok(())
    } else {
        Err(DolphinError::config(
            field,
            format!("{} is not an absolute path", path.display()),
        ))
    }
}

impl BackendConfig {
    /// Parses a configuration from JSON and checks every rule.
    ///
    /// # Errors
    ///
    /// [`DolphinError::ConfigInvalid`].
    pub fn from_json(bytes: &[u8]) -> Result<Self, DolphinError> {
        let value = flysim_types::json::parse_document(bytes)
            .map_err(|e| DolphinError::config("", e.to_string()))?;
        let config: Self =
            serde_json::from_value(value).map_err(|e| DolphinError::config("", e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every rule of the format.
    ///
    /// # Errors
    ///
    /// [`DolphinError::ConfigInvalid`] naming the first offending field.
    pub fn validate(&self) -> Result<(), DolphinError> {
        if self.format != CONFIG_FORMAT {
            return Err(DolphinError::config(
                "format",
                format!("must be {CONFIG_FORMAT:?}, found {:?}", self.format),
            ));
        }
        absolute(&self.binary, "binary")?;
        absolute(&self.content.path, "content.path")?;
        if self.version.is_empty() || self.version.contains(['\n', '\r']) {
            return Err(DolphinError::config(
                "version",
                "the pinned version is one non-empty line",
            ));
        }
        match (self.mode, &self.xvfb) {
            (Mode::Qt, Some(xvfb)) => absolute(xvfb, "xvfb")?,
            (Mode::Qt, None) => {
                return Err(DolphinError::config(
                    "xvfb",
                    "Qt mode runs under a private Xvfb: give its absolute path",
                ));
            }
            (Mode::Nogui, Some(_)) => {
                return Err(DolphinError::config("xvfb", "nogui mode uses no X server"));
            }
            (Mode::Nogui, None) => {}
        }
        if self.ports.is_empty() || self.ports.len() > 4 {
            return Err(DolphinError::config("ports", "between 1 and 4 ports"));
        }
        for (i, port) in self.ports.iter().enumerate() {
            if !(1..=4).contains(port) {
                return Err(DolphinError::config(
                    format!("ports[{i}]"),
                    format!("a GameCube port is 1 to 4, found {port}"),
                ));
            }
            if i > 0 && self.ports[i - 1] >= *port {
                return Err(DolphinError::config(
                    format!("ports[{i}]"),
                    "ports are unique and ascending",
                ));
            }
        }
        if self.watches.is_empty() || self.watches.len() > MAX_WATCHES {
            return Err(DolphinError::config(
                "watches",
                format!("between 1 and {MAX_WATCHES} watched values"),
            ));
        }
        for (i, watch) in self.watches.iter().enumerate() {
            if watch.address.0 % 4 != 0 {
                return Err(DolphinError::config(
                    format!("watches[{i}].address"),
                    format!("a watched word is 4-byte aligned, found {}", watch.address),
                ));
            }
            if watch.offsets.len() > 8 {
                return Err(DolphinError::config(
                    format!("watches[{i}].offsets"),
                    "at most 8 pointer offsets",
                ));
            }
            let earlier = &self.watches[..i];
            if earlier.iter().any(|w| w.name == watch.name) {
                return Err(DolphinError::config(
                    format!("watches[{i}].name"),
                    format!("watch names are unique: `{}` repeats", watch.name),
                ));
            }
            if earlier.iter().any(|w| w.location() == watch.location()) {
                return Err(DolphinError::config(
                    format!("watches[{i}]"),
                    format!("location {} is watched twice", watch.location()),
                ));
            }
        }
        match (self.mode, self.start_field) {
            (Mode::Qt, Some(n)) if !(1..=MAX_START_FIELD).contains(&n) => {
                return Err(DolphinError::config(
                    "startField",
                    format!("a start field is 1 to {MAX_START_FIELD}, found {n}"),
                ));
            }
            (Mode::Nogui, Some(_)) => {
                return Err(DolphinError::config(
                    "startField",
                    "nogui mode free-runs and cannot stop at a field",
                ));
            }
            _ => {}
        }
        if let Some(ready) = &self.ready
            && !self.watches.iter().any(|w| w.name == ready.watch)
        {
            return Err(DolphinError::config(
                "ready.watch",
                format!("`{}` is not a declared watch", ready.watch),
            ));
        }
        Ok(())
    }

    /// The canonical JSON of the whole configuration (paths included).
    #[must_use]
    pub fn to_canonical(&self) -> String {
        canonical::text(&self.to_json())
    }

    /// The whole configuration as JSON, built member by member (the members [`from_json`]
    /// reads): paths as text (a path that is not UTF-8 is written lossily), ports, addresses and
    /// offsets as the numbers and strings their own serialisation writes.
    ///
    /// [`from_json`]: Self::from_json
    fn to_json(&self) -> serde_json::Value {
        let path = |p: &Path| serde_json::Value::from(p.to_string_lossy().into_owned());
        json!({
            "format": self.format,
            "binary": path(&self.binary),
            "version": self.version,
            "xvfb": self.xvfb.as_deref().map(path),
            "content": {"path": path(&self.content.path), "sha256": self.content.sha256},
            "ports": self.ports,
            "watches": self.watches,
            "ready": self.ready,
            "startField": self.start_field,
            "mode": self.mode,
        })
    }

    /// What identifies the configured world, without local paths: the version, the content
    /// digest, the ports, the watches, the readiness condition, the start field and the mode.
    #[must_use]
    pub fn identity(&self) -> serde_json::Value {
        json!({
            "format": self.format,
            "version": self.version,
            "content": self.content.sha256,
            "ports": self.ports,
            "watches": self.watches,
            "ready": self.ready,
            "startField": self.start_field,
            "mode": self.mode,
        })
    }

    /// The configuration digest: SHA-256 of the canonical [`identity`](Self::identity).
    #[must_use]
    pub fn digest(&self) -> Digest {
        canonical::digest(&self.identity())
    }

    /// `Config/Dolphin.ini`: single core, Null video, no audio, background input, hotkeys
    /// without focus, unthrottled, the real-time clock pinned to [`RTC_SECONDS`], a standard
    /// controller on every configured port.
    #[must_use]
    pub fn dolphin_ini(&self) -> String {
        let mut si = String::new();
        for port in 1..=4u8 {
            let device = if self.ports.contains(&port) { 6 } else { 0 };
            si.push_str(&format!("SIDevice{} = {device}\n", port - 1));
        }
        format!(
            "[General]\n\
             HotkeysRequireFocus = False\n\
             [Interface]\n\
             ConfirmStop = False\n\
             UsePanicHandlers = False\n\
             PauseOnFocusLost = False\n\
             OnScreenDisplayMessages = False\n\
             [Core]\n\
             CPUThread = False\n\
             GFXBackend = Null\n\
             EmulationSpeed = 0\n\
             EnableCustomRTC = True\n\
             CustomRTCValue = {RTC_SECONDS}\n\
             {si}\
             [DSP]\n\
             Backend = No Audio Output\n\
             [Input]\n\
             BackgroundInput = True\n\
             [Analytics]\n\
             PermissionAsked = True\n\
             Enabled = False\n\
             [AutoUpdate]\n\
             UpdateTrack = \n"
        )
    }

    /// `Config/GCPadNew.ini`: every configured port reads the pipe `Pipes/padN`.
    #[must_use]
    pub fn gcpad_ini(&self) -> String {
        let mut text = String::new();
        for port in &self.ports {
            text.push_str(&format!("[GCPad{port}]\nDevice = Pipe/0/pad{port}\n"));
            for (key, token) in [
                ("Buttons/A", "A"),
                ("Buttons/B", "B"),
                ("Buttons/X", "X"),
                ("Buttons/Y", "Y"),
                ("Buttons/Z", "Z"),
                ("Buttons/Start", "START"),
                ("D-Pad/Up", "D_UP"),
                ("D-Pad/Down", "D_DOWN"),
                ("D-Pad/Left", "D_LEFT"),
                ("D-Pad/Right", "D_RIGHT"),
                ("Triggers/L", "L"),
                ("Triggers/R", "R"),
            ] {
                text.push_str(&format!("{key} = `Button {token}`\n"));
            }
            text.push_str("Triggers/L-Analog = `Axis L -+`\nTriggers/R-Analog = `Axis R -+`\n");
            for (stick, token) in [("Main Stick", "MAIN"), ("C-Stick", "C")] {
                text.push_str(&format!(
                    "{stick}/Up = `Axis {token} Y +`\n\
                     {stick}/Down = `Axis {token} Y -`\n\
                     {stick}/Left = `Axis {token} X -`\n\
                     {stick}/Right = `Axis {token} X +`\n"
                ));
            }
        }
        text
    }

    /// `Config/Hotkeys.ini`: pause, frame advance, save and load state slot 1 on the buttons of
    /// the pipe [`HOTKEY_PIPE`].
    #[must_use]
    pub fn hotkeys_ini(&self) -> String {
        format!(
            "[Hotkeys]\n\
             Device = Pipe/0/{HOTKEY_PIPE}\n\
             General/Toggle Pause = `Button {}`\n\
             Frame Advance/Frame Advance = `Button {}`\n\
             Save State/Save State Slot 1 = `Button {}`\n\
             Load State/Load State Slot 1 = `Button {}`\n",
            Hotkey::TogglePause.button(),
            Hotkey::FrameAdvance.button(),
            Hotkey::SaveSlot1.button(),
            Hotkey::LoadSlot1.button(),
        )
    }

    /// `MemoryWatcher/Locations.txt`: one line per watch, in watch order.
    #[must_use]
    pub fn locations_txt(&self) -> String {
        self.watches
            .iter()
            .map(|w| format!("{}\n", w.location()))
            .collect()
    }

    /// Every generated file, as (path relative to the user directory, text).
    #[must_use]
    pub fn user_files(&self) -> Vec<(&'static str, String)> {
        vec![
            ("Config/Dolphin.ini", self.dolphin_ini()),
            ("Config/GCPadNew.ini", self.gcpad_ini()),
            ("Config/Hotkeys.ini", self.hotkeys_ini()),
            ("MemoryWatcher/Locations.txt", self.locations_txt()),
        ]
    }
}

/// The hotkeys the backend drives, each bound to one button of the hotkey pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hotkey {
    /// `General/Toggle Pause`.
    TogglePause,
    /// `Frame Advance/Frame Advance`.
    FrameAdvance,
    /// `Save State/Save State Slot 1`.
    SaveSlot1,
    /// `Load State/Load State Slot 1`.
    LoadSlot1,
}

impl Hotkey {
    /// A pipe button no hotkey is bound to: its release is a line that changes nothing.
    pub const UNBOUND: &'static str = "B";

    /// The pipe button it is bound to.
    #[must_use]
    pub fn button(self) -> &'static str {
        match self {
            Self::TogglePause => "START",
            Self::FrameAdvance => "A",
            Self::SaveSlot1 => "X",
            Self::LoadSlot1 => "Y",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> BackendConfig {
        BackendConfig {
            format: CONFIG_FORMAT.to_owned(),
            binary: "/usr/games/dolphin-emu".into(),
            version: PINNED_VERSION.to_owned(),
            xvfb: Some("/usr/bin/Xvfb".into()),
            content: Content {
                path: "/data/fieldcount.elf".into(),
                sha256: flysim_types::digest::sha256(b"content"),
            },
            ports: vec![1, 3],
            watches: vec![
                Watch {
                    name: Id::parse("magic").unwrap(),
                    address: Address(0x8000_1800),
                    offsets: vec![],
                },
                Watch {
                    name: Id::parse("chain").unwrap(),
                    address: Address(0x804d_7420),
                    offsets: vec![Address(0x10), Address(0x4)],
                },
            ],
            ready: Some(Ready {
                watch: Id::parse("magic").unwrap(),
                value: Address(0x4653_4743),
            }),
            start_field: Some(60),
            mode: Mode::Qt,
        }
    }

    #[test]
    fn dolphin_ini_pins_single_core_background_input_and_focusless_hotkeys() {
        assert_eq!(
            sample().dolphin_ini(),
            "[General]\nHotkeysRequireFocus = False\n\
             [Interface]\nConfirmStop = False\nUsePanicHandlers = False\nPauseOnFocusLost = False\nOnScreenDisplayMessages = False\n\
             [Core]\nCPUThread = False\nGFXBackend = Null\nEmulationSpeed = 0\n\
             EnableCustomRTC = True\nCustomRTCValue = 946684800\n\
             SIDevice0 = 6\nSIDevice1 = 0\nSIDevice2 = 6\nSIDevice3 = 0\n\
             [DSP]\nBackend = No Audio Output\n\
             [Input]\nBackgroundInput = True\n\
             [Analytics]\nPermissionAsked = True\nEnabled = False\n\
             [AutoUpdate]\nUpdateTrack = \n"
        );
    }

    #[test]
    fn gcpad_ini_maps_every_control_of_each_port_to_its_pipe() {
        let text = sample().gcpad_ini();
        let port1: Vec<&str> = text.split("[GCPad3]").next().unwrap().lines().collect();
        assert_eq!(
            port1,
            [
                "[GCPad1]",
                "Device = Pipe/0/pad1",
                "Buttons/A = `Button A`",
                "Buttons/B = `Button B`",
                "Buttons/X = `Button X`",
                "Buttons/Y = `Button Y`",
                "Buttons/Z = `Button Z`",
                "Buttons/Start = `Button START`",
                "D-Pad/Up = `Button D_UP`",
                "D-Pad/Down = `Button D_DOWN`",
                "D-Pad/Left = `Button D_LEFT`",
                "D-Pad/Right = `Button D_RIGHT`",
                "Triggers/L = `Button L`",
                "Triggers/R = `Button R`",
                "Triggers/L-Analog = `Axis L -+`",
                "Triggers/R-Analog = `Axis R -+`",
                "Main Stick/Up = `Axis MAIN Y +`",
                "Main Stick/Down = `Axis MAIN Y -`",
                "Main Stick/Left = `Axis MAIN X -`",
                "Main Stick/Right = `Axis MAIN X +`",
                "C-Stick/Up = `Axis C Y +`",
                "C-Stick/Down = `Axis C Y -`",
                "C-Stick/Left = `Axis C X -`",
                "C-Stick/Right = `Axis C X +`",
            ]
        );
        assert!(text.contains("[GCPad3]\nDevice = Pipe/0/pad3\n"));
        assert!(!text.contains("[GCPad2]") && !text.contains("[GCPad4]"));
    }

    #[test]
    fn hotkeys_and_locations_are_generated_exactly() {
        let config = sample();
        assert_eq!(
            config.hotkeys_ini(),
            "[Hotkeys]\nDevice = Pipe/0/hotkeys\n\
             General/Toggle Pause = `Button START`\n\
             Frame Advance/Frame Advance = `Button A`\n\
             Save State/Save State Slot 1 = `Button X`\n\
             Load State/Load State Slot 1 = `Button Y`\n"
        );
        assert_eq!(config.locations_txt(), "80001800\n804d7420 10 4\n");
        // The settling line's button is bound to no hotkey.
        assert!(
            !config
                .hotkeys_ini()
                .contains(&format!("`Button {}`", Hotkey::UNBOUND))
        );
    }

    #[test]
    fn the_digest_ignores_paths_and_follows_the_identity() {
        let a = sample();
        let mut moved = sample();
        moved.binary = "/nix/store/x/bin/dolphin-emu".into();
        moved.content.path = "/elsewhere/fieldcount.elf".into();
        moved.xvfb = Some("/opt/Xvfb".into());
        assert_eq!(a.digest(), moved.digest());
        let mut other = sample();
        other.ports = vec![1];
        assert_ne!(a.digest(), other.digest());
        let mut later = sample();
        later.start_field = Some(61);
        assert_ne!(a.digest(), later.digest());
    }

    #[test]
    fn the_json_form_round_trips() {
        let config = sample();
        let text = config.to_canonical();
        assert_eq!(BackendConfig::from_json(text.as_bytes()).unwrap(), config);
        assert!(text.contains(r#""address":"804d7420""#), "{text}");
    }

    #[test]
    fn the_json_form_is_the_derived_serialisation_and_the_digest_the_value_digest() {
        let mut bare = sample();
        bare.mode = Mode::Nogui;
        bare.xvfb = None;
        bare.ready = None;
        bare.start_field = None;
        for config in [sample(), bare] {
            let derived = serde_json::to_value(&config).unwrap();
            assert_eq!(config.to_json(), derived);
            assert_eq!(
                config.to_canonical(),
                flysim_types::json::to_canonical(&derived).unwrap()
            );
            assert_eq!(
                config.digest(),
                flysim_types::digest::value_digest(&config.identity()).unwrap()
            );
        }
    }

    /// Every refusal of a configuration, with the field it names.
    #[test]
    fn invalid_configurations_are_refused_with_fs0804() {
        type Edit = fn(&mut BackendConfig);
        let cases: [(&str, Edit); 14] = [
            ("format", |c| c.format = "dolphin-backend-config-v0".into()),
            ("binary", |c| c.binary = "dolphin-emu".into()),
            ("version", |c| c.version = String::new()),
            ("xvfb", |c| c.xvfb = None),
            ("ports", |c| c.ports = vec![]),
            ("ports[0]", |c| c.ports = vec![5]),
            ("ports[1]", |c| c.ports = vec![2, 2]),
            ("watches[0].address", |c| {
                c.watches[0].address = Address(0x8000_1802)
            }),
            ("watches[1].name", |c| {
                c.watches[1].name = c.watches[0].name.clone()
            }),
            ("ready.watch", |c| {
                c.ready.as_mut().unwrap().watch = Id::parse("nothing").unwrap();
            }),
            ("xvfb", |c| c.mode = Mode::Nogui),
            ("startField", |c| c.start_field = Some(0)),
            ("startField", |c| c.start_field = Some(MAX_START_FIELD + 1)),
            ("startField", |c| {
                c.mode = Mode::Nogui;
                c.xvfb = None;
            }),
        ];
        for (field, edit) in cases {
            let mut config = sample();
            edit(&mut config);
            let err = config.validate().unwrap_err();
            assert_eq!(err.code_str(), "FS0804", "{field}: {err}");
            assert!(
                matches!(&err, DolphinError::ConfigInvalid { field: f, .. } if f == field),
                "{field}: {err}"
            );
        }
        let unknown = sample()
            .to_canonical()
            .replace(r#""mode":"qt""#, r#""mode":"qt","extra":1"#);
        assert_eq!(
            BackendConfig::from_json(unknown.as_bytes())
                .unwrap_err()
                .code_str(),
            "FS0804"
        );
    }
}
