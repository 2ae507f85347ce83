//! Bounded inputs and hostile text: special files, oversized files, deep nesting, long lines,
//! many problems, and control characters from the input are refused or escaped, never hang,
//! crash or reach the terminal.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{Run, flysim, root};

/// Runs `flysim` in `cwd` with `stdin`, killing it and failing the test after `limit`.
fn flysim_within(limit: Duration, cwd: &Path, args: &[&str], stdin: &[u8]) -> Run {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_flysim"))
        .args(args)
        .env_clear()
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let bytes = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&bytes);
    });
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("flysim {args:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    writer.join().unwrap();
    let out = child.wait_with_output().unwrap();
    Run {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {path:?}");
}

/// The digest-mismatch fixture with its content at `content` (a path relative to it).
fn composition_with_content(content: &str) -> String {
    let text =
        std::fs::read_to_string(root().join("fixtures/compositions/err/digest-mismatch.kdl"))
            .unwrap();
    text.replace("parts/content.bin", content)
}

#[test]
fn a_fifo_or_a_device_is_refused_without_being_read() {
    let tmp = tempfile::tempdir().unwrap();
    mkfifo(&tmp.path().join("pipe"));
    mkfifo(&tmp.path().join("pipe.kdl"));
    std::fs::write(
        tmp.path().join("fifo-asset.kdl"),
        composition_with_content("pipe"),
    )
    .unwrap();
    let limit = Duration::from_secs(30);
    let asset = flysim_within(limit, tmp.path(), &["validate", "fifo-asset.kdl"], b"");
    assert_eq!(asset.status, 1, "{}", asset.stderr);
    assert!(asset.stderr.contains("FS0228"), "{}", asset.stderr);
    assert!(asset.stderr.contains("it is a FIFO"), "{}", asset.stderr);
    let input = flysim_within(limit, tmp.path(), &["validate", "pipe.kdl"], b"");
    assert_eq!(input.status, 3, "{}", input.stderr);
    assert!(input.stderr.contains("FS0906"), "{}", input.stderr);
    let devices: [&[&str]; 3] = [
        &["canon", "/dev/zero"],
        &["validate", "/dev/zero"],
        &["checkpoint", "verify", "/dev/zero"],
    ];
    for args in devices {
        let run = flysim_within(limit, tmp.path(), args, b"");
        assert_eq!(run.status, 3, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("FS0906"), "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("it is a device"),
            "{args:?}: {}",
            run.stderr
        );
    }
    let dir = flysim_within(limit, tmp.path(), &["canon", "."], b"");
    assert!(dir.stderr.contains("it is a directory"), "{}", dir.stderr);
}

#[test]
fn an_oversized_input_is_refused_before_it_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    // A sparse file: its length is over the limit, its blocks are never written.
    let big = std::fs::File::create(tmp.path().join("big.kdl")).unwrap();
    big.set_len((16 << 20) + 1).unwrap();
    let run = flysim_within(
        Duration::from_secs(30),
        tmp.path(),
        &["validate", "big.kdl"],
        b"",
    );
    assert_eq!(run.status, 3, "{}", run.stderr);
    assert!(run.stderr.contains("FS0907"), "{}", run.stderr);
    assert!(run.stderr.contains("16777216 bytes"), "{}", run.stderr);
}

#[test]
fn deep_nesting_is_refused_not_a_stack_overflow() {
    let blocks = format!(
        "flysim-composition 1\n{}{}",
        "a {".repeat(5000),
        "}".repeat(5000)
    );
    let comments = format!(
        "flysim-composition 1\n{}{}",
        "/*".repeat(3000),
        "*/".repeat(3000)
    );
    for text in [blocks, comments] {
        let run = flysim(&["validate", "-"], text.as_bytes());
        assert_eq!(run.status, 1, "{}", run.stderr);
        assert!(run.stderr.contains("FS0230"), "{}", run.stderr);
        assert!(
            run.stderr.contains("nest more than 64 deep"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn a_diagnostic_past_column_65535_is_rendered() {
    let line = format!("flysim-composition 1\nname \"x\" {}=\n", "k".repeat(70_000));
    let run = flysim(&["validate", "-"], line.as_bytes());
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert!(run.stderr.contains("FS0201"), "{}", run.stderr);
    let json = format!("{{\"a\":\"{}\",\"b\":}}", "x".repeat(70_000));
    let run = flysim(&["canon", "-"], json.as_bytes());
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert!(run.stderr.contains("FS01"), "{}", run.stderr);
}

/// A composition with `n` unknown top-level nodes.
fn bad_nodes(n: usize) -> String {
    let mut text = String::from("flysim-composition 1\n");
    for i in 0..n {
        text.push_str(&format!("bogus-{i} 1\n"));
    }
    text
}

#[test]
fn many_problems_take_linear_time() {
    let time = |n: usize| {
        let text = bad_nodes(n);
        let started = Instant::now();
        let run = flysim(&["validate", "-"], text.as_bytes());
        let took = started.elapsed();
        assert_eq!(run.status, 1);
        assert!(run.stderr.contains("FS0202"), "{}", &run.stderr[..200]);
        took
    };
    let small = time(3_000);
    let large = time(30_000);
    // Linear is a ratio of about 10; quadratic would be about 100.
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(0.001);
    assert!(
        ratio < 30.0,
        "3k problems took {small:?}, 30k took {large:?}"
    );
}

#[test]
fn control_characters_from_the_input_are_escaped() {
    let text = "flysim-composition 1\n\"\\u{1b}[2J\\u{202e}\" 1\n";
    let run = flysim(&["validate", "-"], text.as_bytes());
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert!(!run.stderr.contains('\u{1b}'), "{:?}", run.stderr);
    assert!(!run.stderr.contains('\u{202e}'), "{:?}", run.stderr);
    assert!(run.stderr.contains("\\u{1b}[2J\\u{202e}"), "{}", run.stderr);
}

#[test]
fn a_bidi_override_in_a_comment_is_refused() {
    for comment in ["// a \u{202e}b\n", "/* \u{1b}[2J */\n"] {
        let text = format!("flysim-composition 1\n{comment}");
        let run = flysim(&["validate", "-"], text.as_bytes());
        assert_eq!(run.status, 1, "{}", run.stderr);
        assert!(run.stderr.contains("FS0231"), "{}", run.stderr);
        assert!(
            !run.stderr.contains(['\u{1b}', '\u{202e}']),
            "{:?}",
            run.stderr
        );
    }
}

#[test]
fn ticks_refuses_a_step_count_it_cannot_hold() {
    let run = flysim(&["ticks", "--step", "1/1", "--steps", "100000000"], b"");
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert!(run.stderr.contains("FS0910"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
}

/// The counter arena's composition with `agents` agents, as many as fit in `limit` bytes, and
/// the line of the agent holding node `node`.
fn composition_of_agents(limit: usize, node: usize) -> (String, usize, usize) {
    let header = "flysim-composition 1\nname \"many\"\nseed-derivation \"seed-derivation-v1\"\n\
        master-seed \"42\"\nprofile p {\n    model \"synthetic\"\n}\n\
        environment arena backend=arena {\n    world counter-v1\n    port p1 {\n        \
        controller counter-pad version=1\n        buttons press\n    }\n}\n\
        task counter-v1\nexecutor direct-v1\nrun {\n    steps 1\n}\n";
    // 15 nodes above, then 3 per agent (the agent, its profile, its port) on one line each.
    let header_nodes = 15;
    let header_lines = header.lines().count();
    let mut text = String::from(header);
    let mut agents = 0;
    loop {
        let line = format!("agent a{agents}{{profile p;port p1}}\n");
        if text.len() + line.len() > limit {
            break;
        }
        text.push_str(&line);
        agents += 1;
    }
    let agent_of_node = (node - header_nodes - 1) / 3;
    (text, agents, header_lines + agent_of_node + 1)
}

#[test]
fn a_composition_of_too_many_agents_is_refused_before_it_is_built() {
    // As many agents as the input limit (16 MiB) allows: over half a million.
    let (text, agents, line) = composition_of_agents(16 << 20, 65_537);
    assert!(agents > 500_000, "{agents}");
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("many.kdl"), &text).unwrap();
    // The parser alone took gigabytes for this: under a cap of 512 MiB of address space the
    // command must refuse it, not be killed, and soon.
    let cap = format!("--as={}", 512u64 << 20);
    let bin = env!("CARGO_BIN_EXE_flysim");
    let run = {
        let mut child = Command::new("prlimit")
            .args([cap.as_str(), "--", bin, "validate", "many.kdl"])
            .env_clear()
            .current_dir(tmp.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("prlimit (util-linux) caps the child's memory");
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(60) {
                child.kill().unwrap();
                let _ = child.wait();
                panic!("validate of {agents} agents did not finish within 60 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        child.wait_with_output().unwrap()
    };
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{:?}: {stderr}", run.status);
    assert_eq!(crate::codes_in(&stderr), ["FS0244"], "{stderr}");
    assert!(stderr.contains("more than 65536 nodes"), "{stderr}");
    // The span is the node past the limit: the agent line that holds node 65537.
    assert!(
        stderr.contains(&format!("many.kdl:{line}:")),
        "line {line}: {stderr}"
    );
}
