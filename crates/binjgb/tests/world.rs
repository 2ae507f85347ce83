//! The Game Boy as a session world, with the fly arena task: driven through the controller, the
//! fly reaches food and the score and the reward change. Without the core, each test says so.

use flysim_binjgb::arena_task::{ArenaScoreTask, ArenaState};
use flysim_binjgb::world::{GameBoyWorld, MEMORY, VIEW};
use flysim_binjgb::{Availability, availability};
use flysim_component::MemoryView;
use flysim_component::backend::{EnvironmentBackend, EnvironmentSetup};
use flysim_component::task::{Task, Transition};
use flysim_types::plan::LaunchPlan;
use flysim_types::workers::{ButtonState, PortBinding, PortControl};
use flysim_types::{Id, TypedValue};

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn plan() -> LaunchPlan {
    let path = root().join("compositions/gameboy.kdl");
    let bytes = std::fs::read(&path).unwrap();
    let dir = path.parent().unwrap();
    flysim_compose::plan(
        flysim_compose::Input {
            name: "gameboy.kdl",
            bytes: &bytes,
            dir,
        },
        None,
        &[flysim_binjgb::SPEC],
    )
    .unwrap()
}

/// A world at boundary 0, or `None` (after saying why) without the core.
fn world() -> Option<(GameBoyWorld, LaunchPlan)> {
    let plan = plan();
    let rom = std::fs::read(root().join("fixtures/roms/fly-arena.gb")).unwrap();
    let result = GameBoyWorld::new(&plan.environment, plan.plan_digest, rom);
    if let Availability::Absent { reason } = availability() {
        assert!(
            result.is_err(),
            "without the core the world cannot be built"
        );
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!("skipped: the binjgb core is absent from this build: {reason}");
        }
        return None;
    }
    let mut world = result.unwrap();
    let setup = EnvironmentSetup {
        episode_id: Id::parse("ep-0").unwrap(),
        port_bindings: bindings(&plan),
    };
    world.initialize(&setup).unwrap();
    Some((world, plan))
}

fn bindings(plan: &LaunchPlan) -> Vec<PortBinding> {
    plan.agents
        .iter()
        .map(|a| PortBinding {
            port_id: a.port.clone(),
            agent_id: a.agent_id.clone(),
        })
        .collect()
}

fn control(plan: &LaunchPlan, pressed: &[&str]) -> PortControl {
    let port = &plan.environment.ports[0];
    PortControl {
        port_id: port.port_id.clone(),
        buttons: port
            .controls
            .buttons
            .iter()
            .map(|b| ButtonState {
                id: b.clone(),
                down: pressed.contains(&b.as_str()),
            })
            .collect(),
        axes: Vec::new(),
    }
}

#[test]
fn the_descriptor_is_one_frame_one_port_one_view() {
    let Some((mut world, _)) = world() else {
        return;
    };
    let d = world.descriptor();
    assert_eq!(d.step_duration.to_string(), "8572265625/512");
    assert_eq!(d.ports.len(), 1);
    assert_eq!(d.ports[0].controls.buttons.len(), 8);
    assert_eq!(
        (
            d.views[0].view_id.as_str(),
            d.views[0].width,
            d.views[0].height,
            d.views[0].row_stride
        ),
        (VIEW, 160, 144, 640)
    );
    assert_eq!(world.frames()[0].bytes.len(), 92_160);
    let artifacts = world.inspection_artifacts();
    // One span (start 0, length 65536, little-endian) and the whole image after it.
    assert_eq!(
        (artifacts[0].name.as_str(), artifacts[0].bytes.len()),
        (MEMORY, 8 + 65_536)
    );
    assert_eq!(&artifacts[0].bytes[..8], &[0, 0, 0, 0, 0, 0, 1, 0]);
}

/// The memory image of each boundary is the emulator's image then, and stays so while it is
/// held: the world refills a buffer only once no artifact holds it, and then reuses it.
#[test]
fn held_memory_images_keep_their_boundary_and_released_buffers_are_reused() {
    let Some((mut world, plan)) = world() else {
        return;
    };
    let mut held = Vec::new();
    for step in 0..12 {
        let pressed: &[&str] = if step % 4 < 2 { &["right"] } else { &["down"] };
        world.advance(&[control(&plan, pressed)]).unwrap();
        let [image] = <[_; 1]>::try_from(world.inspection_artifacts()).unwrap();
        assert_eq!(
            image.bytes[8..],
            world.emulator().memory_image(),
            "step {step}"
        );
        // Every third image is kept to the end, the others dropped at once.
        if step % 3 == 0 {
            held.push((step, world.emulator().memory_image(), image));
        }
    }
    for (i, (step, then, image)) in held.iter().enumerate() {
        assert_eq!(&image.bytes[8..], then, "the image of step {step} changed");
        assert!(
            held[..i]
                .iter()
                .all(|(_, _, other)| !std::sync::Arc::ptr_eq(&other.bytes, &image.bytes)),
            "held images share no buffer"
        );
    }
    // Four held at once, and one more while they were: five buffers.
    assert_eq!(world.image_buffers_made(), 5);
    // Released, the buffers are refilled: the next images, held at once, need no new one.
    drop(held);
    let mut next = Vec::new();
    for _ in 0..4 {
        world.advance(&[control(&plan, &[])]).unwrap();
        let image = world.inspection_artifacts().remove(0);
        assert_eq!(image.bytes[8..], world.emulator().memory_image());
        next.push(image);
    }
    assert_eq!(
        world.image_buffers_made(),
        5,
        "released buffers are refilled rather than new ones made"
    );
}

#[test]
fn driving_the_fly_to_food_raises_the_score_and_pays_a_reward() {
    let Some((mut world, plan)) = world() else {
        return;
    };
    let bindings = bindings(&plan);
    let episode = Id::parse("ep-0").unwrap();
    let mut task = ArenaScoreTask::default();
    assert!(
        task.reads_memory(),
        "the task reads the game's state from memory"
    );
    let memory = |w: &mut GameBoyWorld| w.inspection_artifacts().remove(0).bytes;
    let mut old: TypedValue = world.inspection().unwrap();
    let mut old_memory = memory(&mut world);
    // Without memory the task cannot read the game.
    assert!(task.bootstrap(&episode, &old, &bindings, None).is_err());
    let boot = task
        .bootstrap(&episode, &old, &bindings, Some(view(&old_memory)))
        .unwrap();
    assert_eq!(boot.progress["score"], 0);
    let mut rewards = Vec::new();
    for step in 0..600u64 {
        let s = ArenaState::read(Some(view(&old_memory))).unwrap();
        let mut pressed = Vec::new();
        if s.food.0 > s.fly.0 {
            pressed.push("right")
        } else if s.food.0 < s.fly.0 {
            pressed.push("left")
        }
        if s.food.1 > s.fly.1 {
            pressed.push("down")
        } else if s.food.1 < s.fly.1 {
            pressed.push("up")
        }
        let controls = [control(&plan, &pressed)];
        world.advance(&controls).unwrap();
        let new = world.inspection().unwrap();
        let new_memory = memory(&mut world);
        let transition = Transition {
            step,
            episode: &episode,
            old: &old,
            new: &new,
            controls: &controls,
            bindings: &bindings,
            old_memory: Some(view(&old_memory)),
            new_memory: Some(view(&new_memory)),
        };
        let evaluation = task.evaluate_transition(&transition).unwrap();
        for outcome in evaluation.outcomes.values() {
            rewards.extend(outcome.rewards.iter().cloned());
        }
        old = new;
        old_memory = new_memory;
        if rewards.len() >= 2 {
            break;
        }
    }
    let state = ArenaState::read(Some(view(&old_memory))).unwrap();
    assert!(
        state.score >= 2,
        "the fly reached food twice: score {}",
        state.score
    );
    assert_eq!(
        rewards.len(),
        usize::from(state.score),
        "one reward per food"
    );
    assert!(
        rewards
            .iter()
            .all(|r| r.value == 1.0 && r.rule_id.as_str() == "food")
    );
    assert!(
        rewards[0].event_id.as_str().starts_with("ep-0.s"),
        "{}",
        rewards[0].event_id
    );
    // The world publishes no audio, so it keeps none: the sound of every frame is dropped
    // rather than piling up for the length of the run.
    assert!(world.emulator().audio_dropped() > 0);
}

#[test]
fn capture_and_restore_continue_exactly() {
    let Some((mut world, plan)) = world() else {
        return;
    };
    let script = |i: u64| match (i / 9) % 4 {
        0 => vec!["right"],
        1 => vec!["down"],
        2 => vec!["left", "up"],
        _ => vec![],
    };
    for i in 0..120 {
        world.advance(&[control(&plan, &script(i))]).unwrap();
    }
    let payload = world.capture().unwrap();
    let at_capture = (world.frames(), world.inspection().unwrap());
    let mut continued = Vec::new();
    for i in 120..180 {
        world.advance(&[control(&plan, &script(i))]).unwrap();
        continued.push((world.frames()[0].bytes.clone(), world.inspection().unwrap()));
    }
    let (mut other, _) = self::world().unwrap();
    other.stage_restore(&payload).unwrap();
    other.activate_restore().unwrap();
    assert_eq!(
        other.frames(),
        at_capture.0,
        "the restored boundary shows its archived frame"
    );
    assert_eq!(
        other.inspection().unwrap(),
        at_capture.1,
        "the restored inspection, frame counter included"
    );
    for (i, expected) in (120..180).zip(&continued) {
        other.advance(&[control(&plan, &script(i))]).unwrap();
        let got = (other.frames()[0].bytes.clone(), other.inspection().unwrap());
        assert_eq!(got.0, expected.0, "frame at step {i}");
        assert_eq!(got.1, expected.1, "inspection at step {i}");
    }
    assert!(
        other.stage_restore(&payload[..100]).is_err(),
        "a damaged capture is refused"
    );
}

#[test]
fn a_crafted_state_is_refused_at_staging_as_incompatible_with_its_code() {
    let Some((mut world, _)) = world() else {
        return;
    };
    let payload = world.capture().unwrap();
    let before = world.capture().unwrap();
    // The capture is the frame counter, the state's length, the state, the frame.
    let offsets = flysim_binjgb::Emulator::state_offsets();
    let mut crafted = payload.clone();
    let at = 16 + usize::try_from(offsets.rom_base[0]).unwrap();
    crafted[at..at + 4].copy_from_slice(&0x4000_0000u32.to_ne_bytes());
    let err = world.stage_restore(&crafted).unwrap_err();
    assert!(
        matches!(&err, flysim_component::backend::BackendError::Incompatible(m) if m.ends_with("(FS0604)")),
        "{err:?}"
    );
    // Nothing was staged: activation has nothing to install, and the world is as it was.
    assert!(world.activate_restore().is_err());
    assert_eq!(world.capture().unwrap(), before);
    world.stage_restore(&payload).unwrap();
}

/// A memory artifact's bytes as a task reads them.
fn view(bytes: &[u8]) -> MemoryView<'_> {
    MemoryView::encoded(bytes).unwrap()
}

/// Every step's published frame is the core's frame on screen (checked against a bare emulator
/// given the same buttons), and a frame that did not change is the same buffer as the step
/// before: the world copies a picture only when it changed.
#[test]
fn an_unchanged_screen_is_the_same_buffer_and_every_frame_is_the_cores() {
    let Some((mut world, plan)) = world() else {
        return;
    };
    let rom = std::fs::read(root().join("fixtures/roms/fly-arena.gb")).unwrap();
    let mut reference = flysim_binjgb::Emulator::new(&rom).unwrap();
    // The world's setup frame: no button.
    reference.run_frame().unwrap();
    let mut previous = world.frames().remove(0).bytes;
    assert_eq!(*previous, reference.framebuffer());
    let (mut same, mut changed) = (0, 0);
    for step in 0..240 {
        let pressed: &[&str] = match step % 60 {
            0..20 => &["right"],
            20..40 => &["down"],
            _ => &[],
        };
        world.advance(&[control(&plan, pressed)]).unwrap();
        let buttons = pressed
            .iter()
            .fold(flysim_binjgb::Buttons::default(), |b, name| b.with(name));
        reference.set_buttons(buttons);
        reference.run_frame().unwrap();
        let frame = world.frames().remove(0).bytes;
        assert_eq!(*frame, reference.framebuffer(), "step {step}");
        if *frame == *previous {
            assert!(
                std::sync::Arc::ptr_eq(&frame, &previous),
                "step {step}: copied again"
            );
            same += 1;
        } else {
            changed += 1;
        }
        previous = frame;
    }
    // Both cases happened: the fly moved, and it stood still.
    assert!(
        same > 0 && changed > 0,
        "{same} unchanged, {changed} changed"
    );
}

/// A new picture is drawn into a screen buffer nobody holds any more, never into one a holder
/// still has: frames kept by a reader (here the last four, and every tenth to the end) keep
/// their pictures, every published frame is the core's, and
/// once readers let go the world stops allocating.
#[test]
fn held_screens_keep_their_picture_and_released_ones_are_redrawn() {
    let Some((mut world, plan)) = world() else {
        return;
    };
    let mut recent: Vec<std::sync::Arc<Vec<u8>>> = Vec::new();
    let mut kept = Vec::new();
    for step in 0..200 {
        let pressed: &[&str] = match step % 40 {
            0..15 => &["right"],
            15..30 => &["up"],
            _ => &["left", "down"],
        };
        world.advance(&[control(&plan, pressed)]).unwrap();
        let frame = world.frames().remove(0).bytes;
        assert_eq!(*frame, world.emulator().framebuffer(), "step {step}");
        if step % 10 == 0 {
            kept.push(((*frame).clone(), std::sync::Arc::clone(&frame)));
        }
        if !recent.iter().any(|r| std::sync::Arc::ptr_eq(r, &frame)) {
            recent.insert(0, frame);
            recent.truncate(4);
        }
    }
    for (i, (picture, frame)) in kept.iter().enumerate() {
        assert_eq!(**frame, *picture, "kept frame {i} was drawn over");
    }
    let made = world.screen_buffers_made();
    // Twenty kept to the end, four recent: the rest were redrawn, not made.
    assert!(made <= 30, "{made} screen buffers for 200 steps");
    drop(kept);
    for step in 0..100 {
        let pressed: &[&str] = if step % 20 < 10 {
            &["right"]
        } else {
            &["left"]
        };
        world.advance(&[control(&plan, pressed)]).unwrap();
        assert_eq!(
            *world.frames().remove(0).bytes,
            world.emulator().framebuffer()
        );
    }
    assert_eq!(
        world.screen_buffers_made(),
        made,
        "released screens are redrawn rather than new ones made"
    );
}

/// A session that falls behind hashing holds every changed picture of a few dozen steps, then
/// lets them all go at once. The world keeps those buffers: the next backlog of the same size
/// is drawn into them, and no screen buffer is made for it.
#[test]
fn a_backlog_let_go_at_once_is_drawn_into_again() {
    let Some((mut world, plan)) = world() else {
        return;
    };
    /// Distinct pictures a backlog holds: 48, well inside the 64 steps a session holds.
    const BACKLOG: usize = 48;
    let mut step = 0u32;
    let mut backlog = |world: &mut GameBoyWorld| {
        // Each picture held, with a copy of what it showed when it was published.
        let mut held: Vec<(std::sync::Arc<Vec<u8>>, Vec<u8>)> = Vec::new();
        while held.len() < BACKLOG {
            assert!(step < 5_000, "fly-arena stopped changing its screen");
            let pressed: &[&str] = match step % 24 {
                0..8 => &["right"],
                8..16 => &["down"],
                _ => &["left", "up"],
            };
            step += 1;
            world.advance(&[control(&plan, pressed)]).unwrap();
            let frame = world.frames().remove(0).bytes;
            assert_eq!(*frame, world.emulator().framebuffer(), "step {step}");
            if !held.iter().any(|(h, _)| std::sync::Arc::ptr_eq(h, &frame)) {
                let picture = (*frame).clone();
                held.push((frame, picture));
            }
        }
        held
    };
    let first = backlog(&mut world);
    let made = world.screen_buffers_made();
    // Every picture held needed a buffer of its own (the first may be the one the world
    // started with).
    assert!(
        made + 1 >= BACKLOG as u64,
        "{made} screen buffers for {BACKLOG} pictures held at once"
    );
    drop(first);
    let second = backlog(&mut world);
    assert_eq!(
        world.screen_buffers_made(),
        made,
        "the second backlog's pictures went into the first one's buffers"
    );
    for (i, (frame, picture)) in second.iter().enumerate() {
        assert_eq!(**frame, *picture, "held picture {i} was drawn over");
    }
}
