//! A small two-pass assembler for the SM83, the Game Boy's CPU, that builds flysim's own ROMs.
//!
//! It exists so the project's test cartridges are source in the repository, not opaque binaries:
//! `roms/fly-arena/arena.asm` assembles to `fixtures/roms/fly-arena.gb` byte for byte, and a test
//! proves it. The dialect is deliberately small:
//!
//! - one statement per line; `;` starts a comment; `name:` defines a label and `.name:` a local
//!   label scoped to the last global one (referenced as `.name`); symbols ignore letter case;
//! - `NAME equ EXPR` defines a constant (before use); expressions are numbers (`123`, `$7f`,
//!   `%1010`, `'A'`), symbols, `+`, `-`, `*`, and `high(EXPR)` / `low(EXPR)`;
//! - directives `org ADDR` (move forward, padding with `$ff`), `db` / `dw` lists (strings allowed
//!   in `db`), `ds COUNT[, FILL]`;
//! - memory operands use parentheses: `(hl)`, `(hl+)`, `(hl-)`, `(bc)`, `(de)`, `(c)`, `(EXPR)`;
//!   `ldh` spells the `$ff00+n` forms.
//!
//! [`assemble`] returns a 32 KiB ROM-only image; [`fix_header`] writes the header and global
//! checksums. **Invariant:** the assembler knows the instruction set and the cartridge header,
//! nothing about flysim's sessions, and it reads no file itself.

use std::collections::BTreeMap;

use thiserror::Error;

/// Size of a ROM-only (no mapper) cartridge image.
pub const ROM_SIZE: usize = 0x8000;
/// The byte unused ROM space is filled with (`rst $38`).
pub const PAD: u8 = 0xff;

/// An assembly error, with the 1-based source line.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}: {message}")]
pub struct AsmError {
    /// The source line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, AsmError> {
    Err(AsmError {
        line,
        message: message.into(),
    })
}

/// Assembles `source` into a 32 KiB ROM image (checksums not yet fixed: see [`fix_header`]).
///
/// # Errors
///
/// The first error, with its line.
pub fn assemble(source: &str) -> Result<Vec<u8>, AsmError> {
    let lines = parse(source)?;
    // Pass 1 places every label; pass 2 emits with all symbols known.
    let mut symbols = BTreeMap::new();
    emit(&lines, &mut symbols, Pass::Layout)?;
    emit(&lines, &mut symbols, Pass::Final)
}

/// The header checksum the boot ROM verifies: `x = x - byte - 1` over `$0134`-`$014c`.
#[must_use]
pub fn header_checksum(rom: &[u8]) -> u8 {
    rom[0x134..=0x14c]
        .iter()
        .fold(0u8, |x, b| x.wrapping_sub(*b).wrapping_sub(1))
}

/// The global checksum: the 16-bit sum of every byte but the checksum's own two.
#[must_use]
pub fn global_checksum(rom: &[u8]) -> u16 {
    rom.iter()
        .enumerate()
        .filter(|(i, _)| *i != 0x14e && *i != 0x14f)
        .fold(0u16, |sum, (_, b)| sum.wrapping_add(u16::from(*b)))
}

/// Writes the cartridge header checksum (`$014d`) and the global checksum (`$014e`-`$014f`).
pub fn fix_header(rom: &mut [u8]) {
    rom[0x14d] = header_checksum(rom);
    let global = global_checksum(rom);
    rom[0x14e..0x150].copy_from_slice(&global.to_be_bytes());
}

/// Assembles and fixes the header: the bytes of the cartridge file.
///
/// # Errors
///
/// As [`assemble`].
pub fn build(source: &str) -> Result<Vec<u8>, AsmError> {
    let mut rom = assemble(source)?;
    fix_header(&mut rom);
    Ok(rom)
}

#[derive(Debug)]
struct Line {
    number: usize,
    label: Option<String>,
    op: Option<String>,
    args: Vec<String>,
}

fn parse(source: &str) -> Result<Vec<Line>, AsmError> {
    let mut out = Vec::new();
    for (i, raw) in source.lines().enumerate() {
        let number = i + 1;
        let text = strip_comment(raw).trim();
        if text.is_empty() {
            continue;
        }
        let words: Vec<&str> = text.split_whitespace().collect();
        if words.len() >= 3 && words[1].eq_ignore_ascii_case("equ") && is_symbol(words[0]) {
            let value = text[text.to_ascii_lowercase().find(" equ ").map_or(0, |i| i + 5)..].trim();
            out.push(Line {
                number,
                label: Some(words[0].to_owned()),
                op: Some("equ".to_owned()),
                args: vec![value.to_owned()],
            });
            continue;
        }
        let (label, rest) = match text.split_once(':') {
            Some((l, r)) if is_symbol(l.trim()) && !l.contains(char::is_whitespace) => {
                (Some(l.trim().to_owned()), r.trim())
            }
            _ => (None, text),
        };
        let (op, args) = match rest.split_once(char::is_whitespace) {
            Some((op, args)) => (
                Some(op.to_ascii_lowercase()),
                split_args(args.trim(), number)?,
            ),
            None if rest.is_empty() => (None, Vec::new()),
            None => (Some(rest.to_ascii_lowercase()), Vec::new()),
        };
        out.push(Line {
            number,
            label,
            op,
            args,
        });
    }
    Ok(out)
}

fn strip_comment(line: &str) -> &str {
    let mut in_string = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => in_string = !in_string,
            ';' if !in_string => return &line[..i],
            _ => {}
        }
    }
    line
}

fn split_args(args: &str, line: usize) -> Result<Vec<String>, AsmError> {
    let mut out = Vec::new();
    let (mut depth, mut in_string, mut start) = (0i32, false, 0);
    for (i, c) in args.char_indices() {
        match c {
            '"' => in_string = !in_string,
            '(' if !in_string => depth += 1,
            ')' if !in_string => depth -= 1,
            ',' if !in_string && depth == 0 => {
                out.push(args[start..i].trim().to_owned());
                start = i + 1;
            }
            _ => {}
        }
    }
    if in_string || depth != 0 {
        return err(line, "unbalanced quotes or parentheses");
    }
    out.push(args[start..].trim().to_owned());
    Ok(out)
}

fn is_symbol(s: &str) -> bool {
    let s = s.strip_prefix('.').unwrap_or(s);
    s.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    Layout,
    Final,
}

/// The assembler's state while emitting one pass.
struct Emitter<'a> {
    rom: Vec<u8>,
    pc: usize,
    scope: String,
    symbols: &'a mut BTreeMap<String, i64>,
    pass: Pass,
    line: usize,
}

fn emit(
    lines: &[Line],
    symbols: &mut BTreeMap<String, i64>,
    pass: Pass,
) -> Result<Vec<u8>, AsmError> {
    let mut e = Emitter {
        rom: vec![PAD; ROM_SIZE],
        pc: 0,
        scope: String::new(),
        symbols,
        pass,
        line: 0,
    };
    for line in lines {
        e.line = line.number;
        if let Some(label) = &line.label {
            let name = e.qualify(label);
            if !label.starts_with('.') {
                e.scope = label.to_ascii_lowercase();
            }
            if line.op.as_deref() != Some("equ") {
                let pc = i64::try_from(e.pc).unwrap_or(i64::MAX);
                if pass == Pass::Layout && e.symbols.insert(name.clone(), pc).is_some() {
                    return err(line.number, format!("`{name}` is defined twice"));
                }
            }
        }
        let Some(op) = &line.op else { continue };
        e.statement(line, op)?;
    }
    Ok(e.rom)
}

const R8: [&str; 8] = ["b", "c", "d", "e", "h", "l", "(hl)", "a"];
const COND: [&str; 4] = ["nz", "z", "nc", "c"];
const ALU: [&str; 8] = ["add", "adc", "sub", "sbc", "and", "xor", "or", "cp"];
const CB_SHIFTS: [&str; 8] = ["rlc", "rrc", "rl", "rr", "sla", "sra", "swap", "srl"];

fn r8(s: &str) -> Option<u8> {
    R8.iter()
        .position(|r| *r == s)
        .and_then(|p| u8::try_from(p).ok())
}

fn cond(s: &str) -> Option<u8> {
    COND.iter()
        .position(|r| *r == s)
        .and_then(|p| u8::try_from(p).ok())
}

/// `bc de hl sp` (or `af` for push/pop, in place of `sp`) -> 0..3.
fn r16(s: &str, af: bool) -> Option<u8> {
    match s {
        "bc" => Some(0),
        "de" => Some(1),
        "hl" => Some(2),
        "sp" if !af => Some(3),
        "af" if af => Some(3),
        _ => None,
    }
}

/// The inside of a `( ... )` memory operand.
fn mem(s: &str) -> Option<&str> {
    s.strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .map(str::trim)
}

impl Emitter<'_> {
    /// The symbol-table key of a name: symbols are case-insensitive, locals prefixed by their scope.
    fn qualify(&self, name: &str) -> String {
        let name = name.to_ascii_lowercase();
        if name.starts_with('.') {
            format!("{}{name}", self.scope)
        } else {
            name
        }
    }

    fn byte(&mut self, b: u8) -> Result<(), AsmError> {
        if self.pc >= ROM_SIZE {
            return err(self.line, "code runs past the end of the 32 KiB ROM");
        }
        self.rom[self.pc] = b;
        self.pc += 1;
        Ok(())
    }

    fn bytes(&mut self, bs: &[u8]) -> Result<(), AsmError> {
        bs.iter().try_for_each(|b| self.byte(*b))
    }

    /// Evaluates an expression; in the layout pass unknown symbols read as 0.
    fn eval(&self, text: &str) -> Result<i64, AsmError> {
        let text = text.trim();
        if text.is_empty() {
            return err(self.line, "missing value");
        }
        // Lowest precedence: + and - (left to right), outside parentheses and quotes.
        let mut depth = 0;
        let mut split = None;
        let bytes = text.as_bytes();
        for (i, c) in text.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                '+' | '-'
                    if depth == 0
                        && i > 0
                        && !matches!(bytes[i - 1], b'+' | b'-' | b'*' | b'\'') =>
                {
                    split = Some(i)
                }
                _ => {}
            }
        }
        if let Some(i) = split {
            let (l, r) = (self.eval(&text[..i])?, self.eval(&text[i + 1..])?);
            return Ok(if bytes[i] == b'+' { l + r } else { l - r });
        }
        if let Some(i) = text.rfind('*').filter(|_| !text.starts_with('\'')) {
            return Ok(self.eval(&text[..i])? * self.eval(&text[i + 1..])?);
        }
        if let Some(rest) = text.strip_prefix('-') {
            return Ok(-self.eval(rest)?);
        }
        for (name, f) in [("high(", 8u32), ("low(", 0)] {
            if let Some(inner) = text.strip_prefix(name).and_then(|r| r.strip_suffix(')')) {
                return Ok((self.eval(inner)? >> f) & 0xff);
            }
        }
        let number = if let Some(hex) = text.strip_prefix('$') {
            i64::from_str_radix(hex, 16).ok()
        } else if let Some(bin) = text.strip_prefix('%') {
            i64::from_str_radix(bin, 2).ok()
        } else if text.len() == 3 && text.starts_with('\'') && text.ends_with('\'') {
            text.chars().nth(1).map(|c| i64::from(u32::from(c)))
        } else if text.starts_with(|c: char| c.is_ascii_digit()) {
            text.parse().ok()
        } else {
            None
        };
        if let Some(n) = number {
            return Ok(n);
        }
        if !is_symbol(text) {
            return err(self.line, format!("cannot read `{text}` as a value"));
        }
        match self.symbols.get(&self.qualify(text)) {
            Some(v) => Ok(*v),
            None if self.pass == Pass::Layout => Ok(0),
            None => err(self.line, format!("`{text}` is not defined")),
        }
    }

    fn imm8(&self, text: &str) -> Result<u8, AsmError> {
        let v = self.eval(text)?;
        if (-128..=255).contains(&v) {
            Ok((v & 0xff) as u8)
        } else {
            err(self.line, format!("{v} does not fit in a byte"))
        }
    }

    fn imm16(&self, text: &str) -> Result<[u8; 2], AsmError> {
        let v = self.eval(text)?;
        if (-32768..=65535).contains(&v) {
            Ok(((v & 0xffff) as u16).to_le_bytes())
        } else {
            err(self.line, format!("{v} does not fit in a word"))
        }
    }

    fn relative(&self, target: &str) -> Result<u8, AsmError> {
        let to = self.eval(target)?;
        let from = i64::try_from(self.pc).unwrap_or(0) + 2;
        let offset = to - from;
        if self.pass == Pass::Layout {
            return Ok(0);
        }
        i8::try_from(offset)
            .map(|o| o.to_le_bytes()[0])
            .or_else(|_| {
                err(
                    self.line,
                    format!("jr target is {offset} bytes away (range -128..127)"),
                )
            })
    }

    fn statement(&mut self, line: &Line, op: &str) -> Result<(), AsmError> {
        let args: Vec<String> = line.args.iter().map(|a| a.to_ascii_lowercase()).collect();
        let raw = &line.args;
        let n = args.len();
        let a0 = args.first().map_or("", String::as_str);
        let a1 = args.get(1).map_or("", String::as_str);
        match (op, n) {
            ("equ", 1) => {
                let name = line.label.clone().map(|l| self.qualify(&l));
                let Some(name) = name else {
                    return err(line.number, "`equ` needs a name: `NAME equ VALUE`");
                };
                let v = self.eval(&raw[0])?;
                if self.pass == Pass::Layout && self.symbols.insert(name.clone(), v).is_some() {
                    return err(line.number, format!("`{name}` is defined twice"));
                }
                Ok(())
            }
            ("org", 1) => {
                let to = usize::try_from(self.eval(a0)?).unwrap_or(usize::MAX);
                if to < self.pc || to > ROM_SIZE {
                    return err(
                        line.number,
                        format!("org ${to:04x} moves backwards or out of the ROM"),
                    );
                }
                self.pc = to;
                Ok(())
            }
            ("db", _) => {
                for arg in raw {
                    if let Some(s) = arg.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
                        self.bytes(s.as_bytes())?;
                    } else {
                        let b = self.imm8(arg)?;
                        self.byte(b)?;
                    }
                }
                Ok(())
            }
            ("dw", _) => raw.iter().try_for_each(|arg| {
                let w = self.imm16(arg)?;
                self.bytes(&w)
            }),
            ("ds", 1 | 2) => {
                let count = usize::try_from(self.eval(a0)?).unwrap_or(usize::MAX);
                let fill = if n == 2 { self.imm8(a1)? } else { 0 };
                (0..count).try_for_each(|_| self.byte(fill))
            }
            _ => self.instruction(op, &args),
        }
    }

    #[expect(
        clippy::too_many_lines,
        reason = "one match arm per instruction form reads best as one table"
    )]
    fn instruction(&mut self, op: &str, args: &[String]) -> Result<(), AsmError> {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let fixed: Option<&[u8]> = match (op, a.as_slice()) {
            ("nop", []) => Some(&[0x00]),
            ("halt", []) => Some(&[0x76, 0x00]), // halt + nop: the DMG halt bug cannot eat the next opcode
            ("stop", []) => Some(&[0x10, 0x00]),
            ("di", []) => Some(&[0xf3]),
            ("ei", []) => Some(&[0xfb]),
            ("ret", []) => Some(&[0xc9]),
            ("reti", []) => Some(&[0xd9]),
            ("cpl", []) => Some(&[0x2f]),
            ("scf", []) => Some(&[0x37]),
            ("ccf", []) => Some(&[0x3f]),
            ("daa", []) => Some(&[0x27]),
            ("rlca", []) => Some(&[0x07]),
            ("rla", []) => Some(&[0x17]),
            ("rrca", []) => Some(&[0x0f]),
            ("rra", []) => Some(&[0x1f]),
            ("jp", ["(hl)"]) => Some(&[0xe9]),
            ("ld", ["sp", "hl"]) => Some(&[0xf9]),
            ("ld", ["(bc)", "a"]) => Some(&[0x02]),
            ("ld", ["(de)", "a"]) => Some(&[0x12]),
            ("ld", ["(hl+)", "a"]) => Some(&[0x22]),
            ("ld", ["(hl-)", "a"]) => Some(&[0x32]),
            ("ld", ["a", "(bc)"]) => Some(&[0x0a]),
            ("ld", ["a", "(de)"]) => Some(&[0x1a]),
            ("ld", ["a", "(hl+)"]) => Some(&[0x2a]),
            ("ld", ["a", "(hl-)"]) => Some(&[0x3a]),
            ("ld", ["(c)", "a"]) | ("ldh", ["(c)", "a"]) => Some(&[0xe2]),
            ("ld", ["a", "(c)"]) | ("ldh", ["a", "(c)"]) => Some(&[0xf2]),
            _ => None,
        };
        if let Some(bytes) = fixed {
            return self.bytes(bytes);
        }
        let bad = |e: &Self| {
            err(
                e.line,
                format!(
                    "`{op} {}` is not an SM83 instruction this assembler knows",
                    args.join(", ")
                ),
            )
        };
        match (op, a.as_slice()) {
            ("ld", [dst, src]) => {
                if let (Some(d), Some(s)) = (r8(dst), r8(src)) {
                    if d == 6 && s == 6 {
                        return bad(self);
                    }
                    return self.byte(0x40 | d << 3 | s);
                }
                if let Some(d) = r8(dst) {
                    if let Some(addr) = mem(src).filter(|_| d == 7) {
                        let w = self.imm16(addr)?;
                        return self.bytes(&[0xfa, w[0], w[1]]);
                    }
                    let v = self.imm8(src)?;
                    return self.bytes(&[0x06 | d << 3, v]);
                }
                if let Some(rr) = r16(dst, false) {
                    let w = self.imm16(src)?;
                    return self.bytes(&[0x01 | rr << 4, w[0], w[1]]);
                }
                if let Some(addr) = mem(dst) {
                    if *src == "a" {
                        let w = self.imm16(addr)?;
                        return self.bytes(&[0xea, w[0], w[1]]);
                    }
                    if *src == "sp" {
                        let w = self.imm16(addr)?;
                        return self.bytes(&[0x08, w[0], w[1]]);
                    }
                }
                bad(self)
            }
            ("ldh", [dst, "a"]) if mem(dst).is_some() => {
                let v = self.imm8(mem(dst).unwrap_or_default())?;
                self.bytes(&[0xe0, v])
            }
            ("ldh", ["a", src]) if mem(src).is_some() => {
                let v = self.imm8(mem(src).unwrap_or_default())?;
                self.bytes(&[0xf0, v])
            }
            ("inc" | "dec", [x]) => {
                let dec = u8::from(op == "dec");
                if let Some(r) = r8(x) {
                    self.byte(0x04 | r << 3 | dec)
                } else if let Some(rr) = r16(x, false) {
                    self.byte(0x03 | rr << 4 | dec << 3)
                } else {
                    bad(self)
                }
            }
            ("add", ["hl", rr]) if r16(rr, false).is_some() => {
                self.byte(0x09 | r16(rr, false).unwrap_or(0) << 4)
            }
            (alu, rest) if ALU.contains(&alu) => {
                // `add a, x` and `add x` are the same instruction.
                let x = match rest {
                    ["a", x] => *x,
                    [x] => *x,
                    _ => return bad(self),
                };
                let k = u8::try_from(ALU.iter().position(|o| *o == alu).unwrap_or(0)).unwrap_or(0);
                if let Some(r) = r8(x) {
                    self.byte(0x80 | k << 3 | r)
                } else {
                    let v = self.imm8(x)?;
                    self.bytes(&[0xc6 | k << 3, v])
                }
            }
            ("push" | "pop", [rr]) => match r16(rr, true) {
                Some(rr) => self.byte(if op == "push" { 0xc5 } else { 0xc1 } | rr << 4),
                None => bad(self),
            },
            ("jp" | "call", [target]) => {
                let w = self.imm16(target)?;
                self.bytes(&[if op == "jp" { 0xc3 } else { 0xcd }, w[0], w[1]])
            }
            ("jp" | "call", [cc, target]) => match cond(cc) {
                Some(c) => {
                    let w = self.imm16(target)?;
                    self.bytes(&[if op == "jp" { 0xc2 } else { 0xc4 } | c << 3, w[0], w[1]])
                }
                None => bad(self),
            },
            ("jr", [target]) => {
                let o = self.relative(target)?;
                self.bytes(&[0x18, o])
            }
            ("jr", [cc, target]) => match cond(cc) {
                Some(c) => {
                    let o = self.relative(target)?;
                    self.bytes(&[0x20 | c << 3, o])
                }
                None => bad(self),
            },
            ("ret", [cc]) => match cond(cc) {
                Some(c) => self.byte(0xc0 | c << 3),
                None => bad(self),
            },
            ("rst", [v]) => {
                let v = self.imm8(v)?;
                if v % 8 != 0 || v > 0x38 {
                    return err(self.line, "rst takes $00, $08, ..., $38");
                }
                self.byte(0xc7 | v)
            }
            (shift, [x]) if CB_SHIFTS.contains(&shift) => match r8(x) {
                Some(r) => self.bytes(&[
                    0xcb,
                    u8::try_from(CB_SHIFTS.iter().position(|s| *s == shift).unwrap_or(0))
                        .unwrap_or(0)
                        << 3
                        | r,
                ]),
                None => bad(self),
            },
            ("bit" | "res" | "set", [b, x]) => {
                let bit = self.imm8(b)?;
                match r8(x) {
                    Some(r) if bit < 8 => {
                        let base = match op {
                            "bit" => 0x40,
                            "res" => 0x80,
                            _ => 0xc0,
                        };
                        self.bytes(&[0xcb, base | bit << 3 | r])
                    }
                    _ => bad(self),
                }
            }
            _ => bad(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first `len` bytes `src` assembles to.
    fn code(src: &str, len: usize) -> Vec<u8> {
        assemble(src).unwrap()[..len].to_vec()
    }

    #[test]
    fn encodes_the_instruction_forms() {
        let cases: &[(&str, &[u8])] = &[
            ("ld b, c", &[0x41]),
            ("ld a, (hl)", &[0x7e]),
            ("ld (hl), a", &[0x77]),
            ("ld (hl), $12", &[0x36, 0x12]),
            ("ld a, $3c", &[0x3e, 0x3c]),
            ("ld hl, $c000", &[0x21, 0x00, 0xc0]),
            ("ld sp, $dfff", &[0x31, 0xff, 0xdf]),
            ("ld a, ($c001)", &[0xfa, 0x01, 0xc0]),
            ("ld ($c001), a", &[0xea, 0x01, 0xc0]),
            ("ldh ($40), a", &[0xe0, 0x40]),
            ("ldh a, ($44)", &[0xf0, 0x44]),
            ("ld (hl+), a", &[0x22]),
            ("ld a, (hl-)", &[0x3a]),
            ("inc a", &[0x3c]),
            ("dec (hl)", &[0x35]),
            ("inc de", &[0x13]),
            ("dec bc", &[0x0b]),
            ("add hl, de", &[0x19]),
            ("add a, b", &[0x80]),
            ("sub 3", &[0xd6, 0x03]),
            ("and $0f", &[0xe6, 0x0f]),
            ("xor a", &[0xaf]),
            ("cp (hl)", &[0xbe]),
            ("cp 160", &[0xfe, 0xa0]),
            ("push af", &[0xf5]),
            ("pop hl", &[0xe1]),
            ("jp $0150", &[0xc3, 0x50, 0x01]),
            ("jp nz, $0150", &[0xc2, 0x50, 0x01]),
            ("call c, $1234", &[0xdc, 0x34, 0x12]),
            ("ret z", &[0xc8]),
            ("rst $38", &[0xff]),
            ("swap a", &[0xcb, 0x37]),
            ("srl b", &[0xcb, 0x38]),
            ("bit 7, h", &[0xcb, 0x7c]),
            ("res 0, (hl)", &[0xcb, 0x86]),
            ("set 3, a", &[0xcb, 0xdf]),
            ("halt", &[0x76, 0x00]),
        ];
        for (src, want) in cases {
            assert_eq!(code(src, want.len()), *want, "{src}");
        }
    }

    #[test]
    fn labels_locals_constants_and_relative_jumps() {
        let src = "
            ONE equ 1
            start:
              ld a, ONE + 2        ; 3e 03
            .loop:
              dec a                ; 3d
              jr nz, .loop         ; 20 fd
              jp later             ; c3 0b 00
              db low(later), high(later), \"A\"
            later:
              dw start, ONE * 4
        ";
        assert_eq!(
            code(src, 15),
            [
                0x3e, 0x03, 0x3d, 0x20, 0xfd, 0xc3, 0x0b, 0x00, 0x0b, 0x00, b'A', 0x00, 0x00, 0x04,
                0x00
            ]
        );
    }

    #[test]
    fn refusals_name_their_line() {
        let e = assemble("nop\nld (hl), (hl)").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            assemble("jr far\nds 200\nfar:")
                .unwrap_err()
                .message
                .contains("range")
        );
        assert!(
            assemble("jp nowhere")
                .unwrap_err()
                .message
                .contains("not defined")
        );
        assert!(assemble("x:\nx:").unwrap_err().message.contains("twice"));
        assert!(assemble("org $10\norg $08").is_err());
        assert!(assemble("ld a, 300").unwrap_err().message.contains("byte"));
    }

    #[test]
    fn header_checksums_follow_the_boot_rom_rule() {
        let mut rom = vec![0u8; ROM_SIZE];
        rom[0x134..0x13f].copy_from_slice(b"FLY ARENA\0\0");
        fix_header(&mut rom);
        let mut x = 0u8;
        for b in &rom[0x134..=0x14c] {
            x = x.wrapping_sub(*b).wrapping_sub(1);
        }
        assert_eq!(rom[0x14d], x);
        let sum: u32 = rom
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != 0x14e && *i != 0x14f)
            .map(|(_, b)| u32::from(*b))
            .sum();
        assert_eq!(
            u16::from_be_bytes([rom[0x14e], rom[0x14f]]),
            (sum & 0xffff) as u16
        );
    }
}
