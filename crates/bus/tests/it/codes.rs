//! One test per registered `FS05xx` code of this crate: each builds the situation and asserts the
//! code (the explain pages name these tests).

use std::time::Duration;

use flysim_bus::frame::FrameDecoder;
use flysim_bus::wire::Envelope;
use flysim_bus::{BusError, Client, store};
use serde_json::json;
use tokio::io::AsyncWriteExt;

use flysim_testkit::{Bus, Transport, runtime};

use crate::obj;

#[test]
fn a_zero_length_frame_is_refused() {
    let e = FrameDecoder::new().feed(&0u32.to_le_bytes()).unwrap_err();
    assert_eq!(BusError::from(e).code_str(), "FS0501");
}

#[test]
fn an_envelope_with_an_extra_field_is_refused() {
    let bytes = br#"{"protocol":"flybus","major":1,"minor":0,"id":"msg-1","replyTo":null,"kind":"command","op":"x","body":{},"attachments":[],"extra":1}"#;
    let e = Envelope::parse(bytes).unwrap_err();
    assert_eq!(BusError::from(e).code_str(), "FS0502");
}

#[test]
fn a_router_with_another_contract_digest_is_refused() {
    runtime().block_on(async {
        let (client_end, mut router_end) = tokio::io::duplex(64 * 1024);
        let fake = tokio::spawn(async move {
            let mut frames = flysim_bus::frame::FrameReader::new(&mut router_end);
            let flysim_bus::frame::ReadOutcome::Frame(hello) = frames.next().await else {
                panic!("no hello")
            };
            let hello = Envelope::parse(&hello).unwrap();
            let reply = json!({"protocol": "flybus", "major": 1, "minor": 0, "id": "bus-1",
                "replyTo": hello.id, "kind": "reply", "op": "reply", "attachments": [],
                "body": {"ok": true, "value": {"routerId": "router-0", "connectionId": "conn-1",
                    "selectedMajor": 1, "selectedMinor": 0, "contractDigest": "0".repeat(64), "limits": {}}}});
            let mut out = Vec::new();
            flysim_bus::frame::encode(&serde_json::to_vec(&reply).unwrap(), &mut out);
            router_end.write_all(&out).await.unwrap();
            router_end
        });
        let bus = Bus::start(Transport::Memory, 41);
        let e = Client::connect(client_end, bus.options("coord")).await.unwrap_err();
        assert_eq!(e.code_str(), "FS0503", "{e}");
        assert!(matches!(e, BusError::ContractMismatch { .. }));
        drop(fake.await.unwrap());
    });
}

#[test]
fn a_refused_call_reports_its_bus_code() {
    runtime().block_on(async {
        let bus = Bus::start(Transport::Memory, 42);
        let coord = bus.client("coord").await;
        let e = coord
            .call("agent.none", "m", obj(json!({})), &[], None, None)
            .await
            .unwrap_err();
        assert_eq!(e.code_str(), "FS0504");
        assert_eq!(e.bus_code(), Some(flysim_bus::ErrorCode::NoService));
    });
}

#[test]
fn a_lost_router_fails_every_handle() {
    runtime().block_on(async {
        let bus = Bus::start(Transport::Memory, 43);
        let coord = bus.client("coord").await;
        bus.router.shutdown();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let e = coord.declare_topic("t", false).await.unwrap_err();
        assert_eq!(e.code_str(), "FS0505", "{e}");
    });
}

#[test]
fn a_location_outside_the_store_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let e = store::resolve(root.path(), "../outside").unwrap_err();
    assert_eq!(e.code_str(), "FS0506");
}

#[test]
fn a_missing_store_file_is_a_store_failure() {
    let root = tempfile::tempdir().unwrap();
    let e = store::open_read(root.path(), "a-1").unwrap_err();
    assert_eq!(e.code_str(), "FS0507");
}

#[test]
fn a_passed_deadline_reports_dispatch_certainty() {
    runtime().block_on(async {
        let bus = Bus::start(Transport::Memory, 44);
        let worker = bus.client("worker").await;
        let coord = bus.client("coord").await;
        let _svc = worker.register("agent.slow", 4, 1).await.unwrap();
        let at = tokio::time::Instant::now() + Duration::from_millis(30);
        let e = coord
            .call("agent.slow", "m", obj(json!({})), &[], None, Some(at))
            .await
            .unwrap_err();
        assert_eq!(e.code_str(), "FS0508");
    });
}

#[test]
fn an_absent_socket_cannot_be_reached() {
    runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::start(Transport::Memory, 45);
        let e = Client::connect_unix(&dir.path().join("none.sock"), bus.options("coord"))
            .await
            .unwrap_err();
        assert_eq!(e.code_str(), "FS0509");
    });
}

#[test]
fn writing_past_the_allocation_is_refused() {
    runtime().block_on(async {
        let bus = Bus::start(Transport::Memory, 46);
        let coord = bus.client("coord").await;
        let mut w = coord.allocate(2, "text/plain").await.unwrap();
        let e = w.write(b"abc").unwrap_err();
        assert_eq!(e.code_str(), "FS0510");
    });
}

#[test]
fn an_unpromoted_in_memory_artifact_is_refused_on_the_bus() {
    runtime().block_on(async {
        let bus = Bus::start(Transport::Memory, 95);
        let client = bus.client("env").await;
        client.declare_topic("frames", false).await.unwrap();
        let local = client
            .local_artifact(vec![1, 2, 3], "text/plain", None)
            .unwrap();
        let e = client
            .publish("frames", obj(json!({})), &[("frame", &local)])
            .await
            .unwrap_err();
        assert_eq!(e.code_str(), "FS0511", "{e}");
        let sealed = local.promote(&client).await.unwrap();
        client
            .publish("frames", obj(json!({})), &[("frame", &sealed)])
            .await
            .unwrap();
    });
}
